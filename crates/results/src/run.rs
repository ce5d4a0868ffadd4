//! A run's own record: what is known when it starts ([`RunInfo`]) and the run as stored
//! ([`RunRecord`]). Both name their probe by its kind.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::id::{GroupId, RunId};
use crate::model::{Machine, RunStatus, ToolInfo};
use crate::probe_kind::ProbeKind;

/// What is known about a run when it starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// The probe (stored as its name: `jitter`, `doctor`, ...).
    pub probe: &'static ProbeKind,
    /// The group (e.g. one `audiolat suite`) this run belongs to.
    pub group_id: Option<GroupId>,
    /// Where.
    pub machine: Machine,
    /// With what.
    pub tool: ToolInfo,
    /// The command line as typed.
    pub command_line: String,
    /// The probe's configuration.
    pub config: Value,
    /// The load scenario: spec, commands, tool versions.
    pub load: Value,
    /// Real-time settings asked for.
    pub qos_requested: Value,
    /// CLOCK_MONOTONIC ns when the run began, as its maker read it (the same instant its
    /// view of the run gives); `None`: the store reads its clock as it begins the run.
    #[serde(default)]
    pub started_mono_ns: Option<u64>,
}

/// A run as stored.
#[derive(Debug, Clone, Serialize)]
pub struct RunRecord {
    /// Run id.
    pub id: RunId,
    /// Group id.
    pub group_id: Option<GroupId>,
    /// Probe.
    pub probe: &'static ProbeKind,
    /// Status.
    pub status: RunStatus,
    /// Start, RFC 3339 UTC.
    pub started_at: String,
    /// End, RFC 3339 UTC.
    pub ended_at: Option<String>,
    /// Duration in seconds (monotonic).
    pub duration_s: Option<f64>,
    /// CLOCK_MONOTONIC at the start (events' times are on this clock).
    pub started_mono_ns: u64,
    /// Process id that made the run.
    pub pid: i64,
    /// Machine.
    pub machine: Machine,
    /// Tool.
    pub tool: ToolInfo,
    /// Command line.
    pub command_line: String,
    /// Probe configuration.
    pub config: Value,
    /// Load scenario.
    pub load: Value,
    /// Real-time settings asked for.
    pub qos_requested: Value,
    /// Real-time settings granted.
    pub qos_granted: Value,
    /// Validity flags.
    pub flags: Value,
    /// Probe-specific results.
    pub result: Value,
    /// Why it failed or was interrupted.
    pub error: Option<String>,
}

impl RunRecord {
    /// The stored validity flags as their record (none when nothing was stored).
    pub fn flags_record(&self) -> crate::records::flags::Flags {
        crate::records::flags::Flags::of(&self.flags)
    }

    /// The real-time settings asked for, as their record (none when nothing was stored).
    pub fn qos_requested_record(&self) -> crate::records::qos::QosRequested {
        crate::records::qos::QosRequested::of(&self.qos_requested)
    }

    /// The real-time settings granted, as their record (none when nothing was stored).
    pub fn qos_granted_record(&self) -> crate::records::qos::QosGranted {
        crate::records::qos::QosGranted::of(&self.qos_granted)
    }

    /// The load as run, as its record (`None`: nothing stored).
    pub fn load_record(&self) -> Option<crate::records::load::Load> {
        crate::records::Record::from_json(&self.load)
    }
}
