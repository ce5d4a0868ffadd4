//! The sweeps' cells: an event cell and a round-trip cell, each measured on an opened
//! stream as a stored run through the lifecycle ([`crate::run`]).

use engine::audio::Backend;
use engine::backend::Setup;
use load::LoadSpec;
use probes::probe::{EventProbe, RoundtripProbe};
use results::RunStatus;
use serde_json::Value;

use super::{SweepCell, Target};
use crate::{Cell, Context, Observer, RunError, Watch};

/// One event-probe configuration of a sweep.
#[derive(Debug, Clone)]
pub struct EventCell {
    /// Probe configuration.
    pub config: probes::event::EventConfig,
    /// Background load.
    pub load: LoadSpec,
    /// Repetition number, from 1.
    pub repeat: u32,
    /// How a JACK stream is opened (ports).
    pub jack: engine::jack_backend::JackConfig,
    /// What an ALSA device granted (stored with the run), when the stream is ALSA's.
    pub granted: Option<Value>,
}

/// An event run, stored.
#[derive(Debug)]
pub struct EventRun {
    /// Run id.
    pub run_id: i64,
    /// How it ended.
    pub status: RunStatus,
    /// What was measured.
    pub outcome: probes::event::EventOutcome,
    /// The load's label.
    pub load: String,
    /// Validity flags as stored.
    pub flags: Value,
    /// What an ALSA device granted, when the stream is ALSA's.
    pub granted: Option<Value>,
    /// Set when the run could not finish: the reason, for the user.
    pub error: Option<String>,
}

/// One round-trip configuration.
#[derive(Debug, Clone)]
pub struct RoundtripCell {
    /// Probe configuration.
    pub config: probes::roundtrip::RoundtripConfig,
    /// Background load.
    pub load: LoadSpec,
    /// Repetition number, from 1.
    pub repeat: u32,
    /// How the loop is closed, for people ("software loop in the JACK server", "cable
    /// system:playback_1 -> system:capture_1", "virtual cable of 12.5 frames").
    pub loop_description: String,
    /// What an ALSA device granted (stored with the run), when the stream is ALSA's.
    pub granted: Option<Value>,
}

/// A round-trip run, stored.
#[derive(Debug)]
pub struct RoundtripRun {
    /// Run id.
    pub run_id: i64,
    /// How it ended.
    pub status: RunStatus,
    /// What was measured.
    pub outcome: probes::roundtrip::RoundtripOutcome,
    /// The cell.
    pub cell: RoundtripCell,
    /// Validity flags as stored.
    pub flags: Value,
    /// Set when the run could not finish: the reason, for the user.
    pub error: Option<String>,
}

/// The probe's typed outcome after a run that measured: the lifecycle returns a run only
/// when the probe measured, and a probe that measured keeps its outcome.
fn measured<T>(outcome: Option<T>) -> T {
    outcome.expect("a probe that measured keeps its outcome")
}

/// Runs one event cell on an opened stream as a stored run in `target`. `watch` is the
/// JACK server behind the stream, when there is one (its exit ends the run).
pub fn event_run(
    ctx: &Context,
    target: Target<'_>,
    stream: &mut dyn Backend,
    watch: Option<&mut dyn Watch>,
    cell: &EventCell,
    observer: &dyn Observer,
) -> Result<EventRun, RunError> {
    let probe = EventProbe::new(stream, cell.config.clone(), cell.granted.clone());
    let mut run_cell = Cell {
        group: target.group,
        repeat: Some(cell.repeat),
        ..Cell::new(probe, cell.load.clone(), target.scratch.to_path_buf())
    };
    let run = crate::run(ctx, target.sink, &mut run_cell, watch, observer)?;
    Ok(EventRun {
        run_id: run.run_id,
        status: run.status,
        outcome: measured(run_cell.probe.take_outcome()),
        load: cell.load.to_string(),
        flags: run.flags,
        granted: cell.granted.clone(),
        error: run.error,
    })
}

/// Runs one round-trip cell on an opened stream as a stored run in `target`. `watch` is
/// the JACK server behind the stream, when there is one (its exit ends the run).
pub fn roundtrip_run(
    ctx: &Context,
    target: Target<'_>,
    stream: &mut dyn Backend,
    watch: Option<&mut dyn Watch>,
    cell: &RoundtripCell,
    observer: &dyn Observer,
) -> Result<RoundtripRun, RunError> {
    let probe = RoundtripProbe::new(
        stream,
        cell.config.clone(),
        cell.loop_description.clone(),
        cell.granted.clone(),
    );
    let mut run_cell = Cell {
        group: target.group,
        repeat: Some(cell.repeat),
        ..Cell::new(probe, cell.load.clone(), target.scratch.to_path_buf())
    };
    let run = crate::run(ctx, target.sink, &mut run_cell, watch, observer)?;
    Ok(RoundtripRun {
        run_id: run.run_id,
        status: run.status,
        outcome: measured(run_cell.probe.take_outcome()),
        cell: cell.clone(),
        flags: run.flags,
        error: run.error,
    })
}

impl SweepCell for EventCell {
    type Run = EventRun;

    fn on_stream(&self, _setup: &Setup, granted: Option<Value>) -> EventCell {
        EventCell {
            granted,
            ..self.clone()
        }
    }

    fn run(
        &self,
        ctx: &Context,
        target: Target<'_>,
        stream: &mut dyn Backend,
        watch: Option<&mut dyn Watch>,
        observer: &dyn Observer,
    ) -> Result<EventRun, RunError> {
        event_run(ctx, target, stream, watch, self, observer)
    }

    fn ended(run: &EventRun) -> (RunStatus, Option<&str>) {
        (run.status, run.error.as_deref())
    }
}

impl SweepCell for RoundtripCell {
    type Run = RoundtripRun;

    fn on_stream(&self, setup: &Setup, granted: Option<Value>) -> RoundtripCell {
        RoundtripCell {
            loop_description: setup.loop_description().to_string(),
            granted,
            ..self.clone()
        }
    }

    fn run(
        &self,
        ctx: &Context,
        target: Target<'_>,
        stream: &mut dyn Backend,
        watch: Option<&mut dyn Watch>,
        observer: &dyn Observer,
    ) -> Result<RoundtripRun, RunError> {
        roundtrip_run(ctx, target, stream, watch, self, observer)
    }

    fn ended(run: &RoundtripRun) -> (RunStatus, Option<&str>) {
        (run.status, run.error.as_deref())
    }
}
