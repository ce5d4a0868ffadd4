//! The [`Probe`] trait: what every probe offers a run's lifecycle.
//!
//! A probe value holds its typed configuration (and the stream it measures, for the
//! audio probes). The lifecycle (the `runner` crate) asks it to [`Probe::describe`]
//! itself (stored with the run before anything is measured), then to
//! [`Probe::measure`], handing it a [`Progress`] through which the probe passes on, as
//! it goes, what is to be stored (trigger rows, events, checkpoint measurements) and a
//! live status, and through which it learns that it must stop (the audio server behind
//! its stream exited). The [`Outcome`] is what the lifecycle stores when it closes the
//! run; the probe keeps its own typed outcome for the caller's tables
//! ([`JitterProbe::take_outcome`] and the like).
//!
//! Adding a probe: implement [`Probe`] for a value holding its configuration, and give
//! it to `runner::run` in a `runner::Cell`. Probes never print and never touch the
//! store: they only hand things to [`Progress`].

mod event;
mod jitter;
mod net;
mod pipewire_graph;
mod recovered;
mod roundtrip;

use std::sync::atomic::AtomicBool;

use results::{Event, Measurement, Series};
use serde_json::Value;

pub use crate::probe::event::EventProbe;
pub use crate::probe::jitter::JitterProbe;
pub use crate::probe::net::NetProbe;
pub use crate::probe::recovered::recovered;
pub use crate::probe::roundtrip::RoundtripProbe;

pub use results::model::TriggerRow;

/// Where a running run's result holds what recovery needs (replaced when it closes).
pub const RECOVERY_KEY: &str = "recovery";

/// What a probe says about itself before it measures: stored with the run.
#[derive(Clone, Debug, PartialEq)]
pub struct Description {
    /// The probe (its kind, declared in the results model).
    pub probe: &'static results::ProbeKind,
    /// Its configuration as stored (the lifecycle adds the load and the repeat).
    pub config: Value,
    /// The QoS it asks for (policies, priorities, memory locking).
    pub qos_requested: Value,
    /// The run's result while it runs: what summarising it needs if its process dies
    /// (kept under [`RECOVERY_KEY`]). `None`: nothing.
    pub result_while_running: Option<Value>,
}

/// How a probe's measurement ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// It measured what it was asked to.
    Complete,
    /// The stop flag was raised (Ctrl-C, SIGTERM, a hang-up, SIGQUIT).
    Interrupted,
    /// The stream went away mid-run (its audio server exited): the reason.
    StreamGone(String),
    /// The audio callback panicked: the panic's message.
    Panicked(String),
    /// The stop flag was raised, and the probe words what was kept: the stored end
    /// reason, as it is.
    InterruptedSaying(String),
    /// The probe's own work failed after it had measured (its outcome holds what was,
    /// and shows the reason): the run is stored `failed` with this reason, which is not
    /// reported again as the run's error.
    Failed(String),
}

/// How much a probe measured, for end reasons: `count` `noun` ("12 triggers").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tally {
    /// How many.
    pub count: usize,
    /// Of what, plural (`triggers`, `windows`).
    pub noun: &'static str,
}

/// What a probe measured, as the lifecycle stores it when it closes the run.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The run's measurements (replacing every checkpoint's).
    pub measurements: Vec<Measurement>,
    /// Events not already handed over as they came (the lifecycle adds the load's).
    pub events: Vec<Event>,
    /// Series (per-block or per-window rows), where the probe has them.
    pub series: Vec<Series>,
    /// The QoS granted.
    pub qos_granted: Value,
    /// Validity flags (the lifecycle adds the load's and the machine's).
    pub flags: Value,
    /// The result (counters, grants), replacing the one kept while it ran.
    pub result: Value,
    /// How it ended.
    pub end: End,
    /// How much it measured; `None` for a stretch of time (jitter: "the measured part").
    pub measured: Option<Tally>,
}

/// A live status line's content, for the binary to show (the results model's).
pub use results::live::LiveStatus;

/// What a probe hands over while it measures, on the thread that called
/// [`Probe::measure`] (never the real-time one). Handing over never fails: the
/// lifecycle keeps a write that could not be stored for the run's end reason.
pub trait Progress {
    /// Trigger rows completed since the last call, to store now.
    fn triggers(&mut self, rows: &[TriggerRow]);
    /// Events since the last call, to store now.
    fn events(&mut self, events: &[Event]);
    /// The measurements so far, replacing the last checkpoint's.
    fn checkpoint(&mut self, measurements: &[Measurement]);
    /// A live status.
    fn status(&mut self, status: &LiveStatus);
    /// Called about ten times a second or more: the lifecycle polls what it watches
    /// (load exits, the audio server). `Err(reason)`: the stream is gone, end the run
    /// (a probe without a stream, such as jitter, measures on).
    fn tick(&mut self) -> Result<(), String>;
}

/// A probe could not measure: set-up, configuration or the measuring thread failed.
#[derive(Debug)]
pub struct ProbeError {
    error: Box<dyn std::error::Error + Send + Sync + 'static>,
    reason: String,
}

impl ProbeError {
    /// The error; its message is the stored end reason.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> ProbeError {
        let reason = error.to_string();
        ProbeError {
            error: Box::new(error),
            reason,
        }
    }

    /// The error; the stored end reason is its message followed by its causes'.
    pub fn with_causes(error: impl std::error::Error + Send + Sync + 'static) -> ProbeError {
        let reason = with_causes(&error);
        ProbeError {
            error: Box::new(error),
            reason,
        }
    }

    /// The end reason stored with the failed run.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// The probe's own error.
    pub fn into_inner(self) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        self.error
    }
}

impl std::fmt::Display for ProbeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for ProbeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

/// An error's message followed by its causes', joined by `: ` (as `anyhow`'s `{:#}`).
pub fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// A probe that keeps its typed outcome after it measured: what a command prints beyond
/// the run's view (a histogram file, a round trip's windows, the suite's notes).
pub trait KeepsOutcome {
    /// The probe's own outcome.
    type Outcome;
    /// The last measurement's outcome (taken once; `None` before it measured).
    fn take_outcome(&mut self) -> Option<Self::Outcome>;
}

/// A probe: a typed configuration in, an [`Outcome`] out, progress on the way.
pub trait Probe {
    /// Its name, configuration and requested QoS, stored before it measures.
    fn describe(&self) -> Description;
    /// Measures until done or `stop` is raised, handing over progress as it goes.
    fn measure(
        &mut self,
        stop: &AtomicBool,
        progress: &mut dyn Progress,
    ) -> Result<Outcome, ProbeError>;

    /// The threads it runs in its host cell, for admission control, when the run has
    /// cells (`None`: it puts none there).
    fn host_threads(&self) -> Option<qos::HostThreads> {
        None
    }

    /// The link's shaped capacity (Mbit/s), for admission control, when it shapes one.
    fn link_mbps(&self) -> Option<f64> {
        None
    }

    /// The CPUs its threads are pinned to outside any cell (checked before the run, as
    /// a cell's are: another audiolat's exclusive cell may hold them).
    fn pinned_cpus(&self) -> Vec<usize> {
        Vec::new()
    }

    /// The run's cells are made (before its load starts and it measures): `cells` as
    /// placed, of `plan`, with its load `load` (which places its items in them).
    fn enter_cells(
        &mut self,
        _cells: &[qos::partition::PlacedCell],
        _plan: &qos::CellPlan,
        _load: &load::LoadSpec,
    ) {
    }
}
