//! The sweeps' cells: an event cell and a round-trip cell, each measured on an opened
//! stream as a stored run through the lifecycle ([`crate::run`]), and the cells of one
//! period of a sweep built from the lists a sweep is over ([`event_cells`],
//! [`roundtrip_cells`]).

use dsp::WorkloadKind;
use engine::audio::{Backend, StreamInfo};
use engine::backend::Setup;
use load::LoadSpec;
use probes::event::{EventConfig, EventError, NotePolicy};
use probes::probe::{EventProbe, Probe, RoundtripProbe};
use probes::roundtrip::RoundtripConfig;
use results::records::stream::AlsaGrantedRecord;
use results::RunStatus;

use super::{CellRefusal, SweepCell, Target};
use crate::{Cell, Context, Observer, ProbeRun, Run, RunError, Watch};

/// One event-probe configuration of a sweep.
#[derive(Debug, Clone)]
pub struct EventCell {
    /// Probe configuration.
    pub config: probes::event::EventConfig,
    /// Background load.
    pub load: LoadSpec,
    /// Repetition number, from 1.
    pub repeat: u32,
    /// What an ALSA device granted (stored with the run), when the stream is ALSA's.
    pub granted: Option<AlsaGrantedRecord>,
}

/// The event cells of one period, in sweep order: every policy, then every workload,
/// every load and every repeat (from 1) of `base`. Repeat `r`'s trigger times are seeded
/// with `base`'s seed xor `r`. Each configuration is validated: the first refused is the
/// error.
pub fn event_cells(
    base: &EventConfig,
    policies: &[NotePolicy],
    workloads: &[WorkloadKind],
    loads: &[LoadSpec],
    repeats: u32,
) -> Result<Vec<EventCell>, EventError> {
    let mut cells = Vec::new();
    for &policy in policies {
        for &workload in workloads {
            for load in loads {
                for repeat in 1..=repeats {
                    let config = EventConfig {
                        policy,
                        workload,
                        seed: base.seed ^ repeat as u64,
                        ..base.clone()
                    };
                    config.validate()?;
                    cells.push(EventCell {
                        config,
                        load: load.clone(),
                        repeat,
                        granted: None,
                    });
                }
            }
        }
    }
    Ok(cells)
}

/// The round-trip cells of one period, in sweep order: every load, then every repeat
/// (from 1) of `config`. The loop's description and what a device granted are the
/// set-up's and the stream's: the sweep fills them in.
pub fn roundtrip_cells(
    config: &RoundtripConfig,
    loads: &[LoadSpec],
    repeats: u32,
) -> Vec<RoundtripCell> {
    loads
        .iter()
        .flat_map(|load| {
            (1..=repeats).map(|repeat| RoundtripCell {
                config: config.clone(),
                load: load.clone(),
                repeat,
                loop_description: String::new(),
                granted: None,
            })
        })
        .collect()
}

/// The live label of an event run: workload, load, period and note policy.
pub fn event_label(
    config: &probes::event::EventConfig,
    load: &LoadSpec,
    period_frames: u32,
) -> String {
    format!(
        "event {} {load} period {period_frames} {}",
        config.workload, config.policy
    )
}

/// An event run, stored, with the probe's outcome.
pub type EventRun = ProbeRun<probes::event::EventOutcome>;

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
    pub granted: Option<AlsaGrantedRecord>,
}

/// A round-trip run, stored, with the probe's outcome.
pub type RoundtripRun = ProbeRun<probes::roundtrip::RoundtripOutcome>;

/// Measures `probe` under `load` as repetition `repeat` of a sweep, a stored run in
/// `target`; the probe is handed back with its outcome.
fn run_in<P: Probe>(
    ctx: &Context,
    target: Target<'_>,
    probe: P,
    (load, repeat): (&LoadSpec, u32),
    watch: Option<&mut dyn Watch>,
    observer: &dyn Observer,
) -> Result<(Run, P), RunError> {
    let mut cell = Cell {
        group: target.group,
        repeat: Some(repeat),
        ..Cell::new(probe, load.clone(), target.scratch.to_path_buf())
    };
    let run = crate::run(ctx, target.sink, &mut cell, watch, observer)?;
    Ok((run, cell.probe))
}

impl SweepCell for EventCell {
    type Run = EventRun;

    fn on_stream(&self, _setup: &Setup, granted: Option<AlsaGrantedRecord>) -> EventCell {
        EventCell {
            granted,
            ..self.clone()
        }
    }

    fn check(&self, stream: &StreamInfo) -> Result<(), CellRefusal> {
        Ok(self.config.check_against(stream)?)
    }

    fn run(
        &self,
        ctx: &Context,
        target: Target<'_>,
        stream: &mut dyn Backend,
        watch: Option<&mut dyn Watch>,
        observer: &dyn Observer,
    ) -> Result<EventRun, RunError> {
        let probe = EventProbe::new(stream, self.config.clone(), self.granted.clone());
        let (run, mut probe) = run_in(
            ctx,
            target,
            probe,
            (&self.load, self.repeat),
            watch,
            observer,
        )?;
        Ok(crate::with_outcome(run, &mut probe))
    }

    fn ended(run: &EventRun) -> (RunStatus, Option<&str>) {
        (run.run.status, run.run.error.as_deref())
    }
}

impl SweepCell for RoundtripCell {
    type Run = RoundtripRun;

    fn on_stream(&self, setup: &Setup, granted: Option<AlsaGrantedRecord>) -> RoundtripCell {
        RoundtripCell {
            loop_description: setup.loop_description().to_string(),
            granted,
            ..self.clone()
        }
    }

    fn check(&self, stream: &StreamInfo) -> Result<(), CellRefusal> {
        Ok(self.config.check_against(stream)?)
    }

    fn run(
        &self,
        ctx: &Context,
        target: Target<'_>,
        stream: &mut dyn Backend,
        watch: Option<&mut dyn Watch>,
        observer: &dyn Observer,
    ) -> Result<RoundtripRun, RunError> {
        let probe = RoundtripProbe::new(
            stream,
            self.config.clone(),
            self.loop_description.clone(),
            self.granted.clone(),
        );
        let (run, mut probe) = run_in(
            ctx,
            target,
            probe,
            (&self.load, self.repeat),
            watch,
            observer,
        )?;
        Ok(crate::with_outcome(run, &mut probe))
    }

    fn ended(run: &RoundtripRun) -> (RunStatus, Option<&str>) {
        (run.run.status, run.run.error.as_deref())
    }
}
