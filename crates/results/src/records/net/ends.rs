//! One end of a two-machine network run: its configuration, by its role.

use serde::{Deserialize, Serialize};

use crate::records::record::Record;

/// One end's configuration as stored, its `role` the tag: `respond` (a host) or
/// `emulate` (a controller). A run of both ends has no role and is no end's.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(tag = "role")]
pub enum NetEndConfig {
    /// `net respond`.
    #[serde(rename = "respond")]
    Respond(RespondConfig),
    /// `net emulate`.
    #[serde(rename = "emulate")]
    Emulate(EmulateConfig),
}

impl Record for NetEndConfig {}

impl NetEndConfig {
    /// The role, as stored and said (`respond`, `emulate`).
    pub fn role(&self) -> &'static str {
        match self {
            NetEndConfig::Respond(_) => "respond",
            NetEndConfig::Emulate(_) => "emulate",
        }
    }
}

/// A host answering a controller.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct RespondConfig {
    /// The address it listened on.
    pub bind: String,
    /// The controller it answers (`null`: the first to complete a block).
    pub peer: Option<String>,
    /// Answers with the Migrator synth (else silence).
    pub synth: bool,
    /// Synth workers beside the network thread.
    pub workers: usize,
    /// How its network thread waits.
    pub poll: String,
    /// CPUs of its threads.
    pub cpus: Option<Vec<usize>>,
    /// Warm-up, seconds.
    pub warmup_s: f64,
    /// How long it served, seconds (`null`: until stopped).
    pub duration_s: Option<f64>,
    /// A block's deadline, ns.
    pub deadline_ns: u64,
}

/// A controller streaming to a host.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct EmulateConfig {
    /// The host's address and port.
    pub host: String,
    /// The address it sent from.
    pub bind: String,
    /// Pads pressed.
    pub pads: usize,
    /// The pressed pads' x (stored from an `f32`).
    pub x: f32,
    /// Their y.
    pub y: f32,
    /// Their pressure.
    pub pressure: f32,
    /// CPUs of its threads.
    pub cpus: Option<Vec<usize>>,
    /// Measured time, seconds.
    pub duration_s: f64,
    /// Warm-up, seconds.
    pub warmup_s: f64,
    /// A block's deadline, ns.
    pub deadline_ns: u64,
}
