//! `audiolat net`'s configuration: both ends in one process.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::records::record::Record;

/// A run of both ends' configuration as stored (`probes::net`'s description, with what
/// the run's lifecycle adds: `load`, `repeat`, `cells`, `host_cell`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct NetConfigRecord {
    /// The transport in words: loopback, or a veth pair between two namespaces.
    pub transport: String,
    /// Measured time of the synth phase, seconds.
    pub duration_s: f64,
    /// Measured time of the reference phase, seconds (0: none).
    pub reference_duration_s: f64,
    /// Warm-up before each phase's counted blocks, seconds.
    pub warmup_s: f64,
    /// The pads pressed, by index.
    pub pads_pressed: Vec<usize>,
    /// The first pressed pad (`null` when none is pressed).
    pub pad: Option<PadRecord>,
    /// Synth workers on the host (0: its network thread runs the synth).
    pub workers: usize,
    /// How the host's network thread waits (`block`, `spin`, `periodic`).
    pub poll: String,
    /// CPUs of the host's threads.
    pub host_cpus: Option<Vec<usize>>,
    /// CPUs of the controller's threads.
    pub controller_cpus: Option<Vec<usize>>,
    /// A block's deadline, ns.
    pub deadline_ns: u64,
    /// The controller's time between packets, ns.
    pub packet_interval_ns: u64,
    /// The time between blocks, ns.
    pub block_period_ns: u64,
    /// The shaped controller-to-host link (`null`: not shaped; absent before links were).
    #[serde(default)]
    pub link: Option<LinkRecord>,
    /// The abusive stream (`null`: none; absent before streams were).
    #[serde(default)]
    pub stream: Option<StreamSettingRecord>,
    /// The load as given (added by the run's lifecycle; absent from a description).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<String>,
    /// The repetition of a plan's cell (added by the lifecycle, only when repeated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// The run's cells as qos describes them (added by the lifecycle with cells); every
    /// probe's configuration carries them, so they stay qos's JSON here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cells: Option<Value>,
    /// The cell the host's runtime ran in (added with `cells`; `null` inside: none).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub host_cell: Option<Option<String>>,
}

impl Record for NetConfigRecord {}

impl NetConfigRecord {
    /// The two ends ran in two network namespaces joined by a veth pair (else loopback).
    pub fn over_netns(&self) -> bool {
        self.transport.starts_with("UDP over a veth")
    }

    /// The measured time and the warm-up, ns (the run's length without a reference).
    pub fn run_ns(&self) -> f64 {
        1e9 * (self.duration_s + self.warmup_s)
    }
}

/// A pressed pad: where and how hard (stored from `f32`s).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct PadRecord {
    /// x, 0 to 1.
    pub x: f32,
    /// y, 0 to 1.
    pub y: f32,
    /// Pressure, 0 to 1.
    pub pressure: f32,
}

/// The controller-to-host direction, shaped.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct LinkRecord {
    /// Capacity, Mbit/s.
    pub mbps: f64,
    /// Guaranteed to the audio flow, Mbit/s (`null`: no guarantee).
    pub reserve_mbps: Option<f64>,
    /// Who shapes and reserves.
    pub by: LinkBy,
}

/// Who shapes the link and reserves its bandwidth.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkBy {
    /// The kernel's `tc` HTB on the controller's veth.
    #[serde(rename = "tc")]
    Tc,
    /// audiolat's user-level network service (mClock with a reservation).
    #[serde(rename = "mclock")]
    Service,
}

/// The abusive stream as asked for.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct StreamSettingRecord {
    /// Offered rate, Mbit/s (`null`: more than the link takes).
    pub mbps: Option<u32>,
}

/// Reads a key that may be absent, `null` or a value apart: absent is `None`, `null` is
/// `Some(None)` (with `#[serde(default, skip_serializing_if = "Option::is_none")]`, so
/// an absent key stays absent and a `null` stays `null`).
fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    serde::Deserialize::deserialize(deserializer).map(Some)
}
