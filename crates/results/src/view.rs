//! One run as its renderers see it: the stored record's parts a report reads, with its
//! measurements and events.
//!
//! A [`RunView`] is built the same way for a run just made (from the values the runner
//! stored, kept in memory so that a run whose storing failed still shows what it
//! measured) and for a stored one (from [`RunRecord`] and the store's rows), so that
//! `audiolat <probe>` and `audiolat show <run>` print one run through one renderer.

use serde_json::Value;

use crate::model::{Event, Machine, MeasurementRecord, RunStatus, TriggerRow};
use crate::probe_kind::ProbeKind;
use crate::records::Record;
use crate::run::RunRecord;
use crate::{Measurement, RunId};

/// One run, as rendered: what was configured, granted, flagged and found, with its
/// measurements and events. Every JSON part is the value stored with the run (`{}` or
/// `null` when nothing was stored).
#[derive(Debug, Clone)]
pub struct RunView {
    /// Run id.
    pub id: RunId,
    /// The probe that made it (`jitter`, `event`, `roundtrip`, `net`, ...).
    pub probe: &'static ProbeKind,
    /// How it ended.
    pub status: RunStatus,
    /// The machine it ran on.
    pub machine: Machine,
    /// The probe's configuration as stored.
    pub config: Value,
    /// The load as run (spec, processes, exits).
    pub load: Value,
    /// The real-time settings asked for (`null` in a fresh run's view when its renderer
    /// does not read them).
    pub qos_requested: Value,
    /// The real-time settings granted.
    pub qos_granted: Value,
    /// Validity flags.
    pub flags: Value,
    /// The probe's own results.
    pub result: Value,
    /// Why it failed or was interrupted.
    pub error: Option<String>,
    /// CLOCK_MONOTONIC at the run's start as stored (events' times are on this clock).
    pub started_mono_ns: u64,
    /// The measurements, in stored order.
    pub measurements: Vec<Measurement>,
    /// The events, in time order.
    pub events: Vec<Event>,
    /// The event probe's triggers, one row each (empty for other probes).
    pub triggers: Vec<TriggerRow>,
}

impl RunView {
    /// The view of a stored run: its record, its measurements, its events and its
    /// triggers.
    pub fn from_stored(
        run: &RunRecord,
        measurements: &[MeasurementRecord],
        events: Vec<Event>,
        triggers: Vec<TriggerRow>,
    ) -> RunView {
        RunView {
            id: run.id,
            probe: run.probe,
            status: run.status,
            machine: run.machine.clone(),
            config: run.config.clone(),
            load: run.load.clone(),
            qos_requested: run.qos_requested.clone(),
            qos_granted: run.qos_granted.clone(),
            flags: run.flags.clone(),
            result: run.result.clone(),
            error: run.error.clone(),
            started_mono_ns: run.started_mono_ns,
            measurements: measurements.iter().map(|m| m.measurement.clone()).collect(),
            events,
            triggers,
        }
    }

    /// The stored configuration as the probe's record ([`Record::from_json`]).
    pub fn config_as<R: Record>(&self) -> Option<R> {
        R::from_json(&self.config)
    }

    /// The lifecycle's part of the stored configuration (the load, the repeat).
    pub fn run_config(&self) -> crate::records::RunConfig {
        crate::records::RunConfig::of(&self.config)
    }

    /// Why its misses were late (`result.why`), when causes were asked for.
    pub fn why(&self) -> Option<crate::records::why::WhyRecord> {
        self.result_as::<crate::records::why::WhyPart>()
            .and_then(|p| p.why)
    }

    /// The stored result as the probe's record ([`Record::from_json`]).
    pub fn result_as<R: Record>(&self) -> Option<R> {
        R::from_json(&self.result)
    }

    /// The stored validity flags as their record ([`records::flags::Flags::of`]: none
    /// when nothing was stored).
    ///
    /// [`records::flags::Flags::of`]: crate::records::flags::Flags::of
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
        crate::records::load::Load::from_json(&self.load)
    }

    /// The measurement named `metric`, if the run has it.
    pub fn measurement(&self, metric: &str) -> Option<&Measurement> {
        self.measurements.iter().find(|m| m.metric == metric)
    }

    /// The run's dropouts ([`crate::counts::Dropouts`]).
    pub fn dropouts(&self) -> crate::counts::Dropouts {
        self.probe
            .dropouts(&self.config, &self.result, &self.measurements)
    }

    /// An event run's notes ([`crate::counts::Notes`]).
    pub fn notes(&self) -> crate::counts::Notes {
        crate::counts::Notes::of(&self.triggers)
    }

    /// The measurement the run is summarised by ([`ProbeKind::headline`]).
    pub fn headline(&self) -> Option<&Measurement> {
        self.probe.headline(&self.config, &self.measurements)
    }
}
