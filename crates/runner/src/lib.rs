//! # runner: a probe measured as a stored run
//!
//! The run lifecycle, written once for every probe ([`run`]): the run's cells, if it
//! has any, are admitted and made (before anything is stored: a refusal stores
//! nothing), the run is begun in a
//! [`RunSink`] (its row before anything is measured), its load is started (its items
//! placed in the cells), the
//! [`Probe`] measures while what it hands over is stored as it comes (trigger rows,
//! events, checkpoints), the load's exits are polled and an optional [`Watch`] (the
//! private JACK server behind the stream) can end the run, the load is stopped on every
//! path (a guard: errors and panics too), then the cells are undone (a guard too: the
//! load's processes are in them until it stops), and the run is closed with its end
//! reason (a probe that failed or panicked: `failed`, its panic's message the reason,
//! what its load and cells did stored all the same). The
//! closing writes may spend the sink's reserve; a run whose summary could not be stored
//! (a full disk) ends `failed` and still returns what was measured.
//!
//! Promises:
//!
//! - Nothing is printed: a live status goes to an [`Observer`] the caller implements.
//! - A stop before the probe measured anything stores nothing ([`RunError::Stopped`]:
//!   a run already begun is removed from the sink), so no run says "0 cycles" of a
//!   measurement that never started; a stop once it has measured keeps what it measured.
//! - A refusal before anything was stored ([`RunError::Refused`]: a load that cannot
//!   start here) is told apart from a run that failed ([`RunError::Failed`], stored as
//!   `failed` with its reason).
//! - A load never outlives the run: it is stopped before the outcome is looked at.
//! - Cells never outlive the run either, and never their load: undone after it stops.
//! - The ends of a two-machine network run ([`end_run`], measuring by [`net_ends`]) are
//!   a run without a load, closed the same way.
//! - A group of runs (a sweep, a suite, an experiment) is a [`group::Group`]: closed on
//!   every path (`failed` when dropped open by an error), its status by one rule
//!   ([`group::status`]) that plan runs follow too.
//! - A plan ([`plan`]) is parsed, expanded into cells and run, each cell a process of
//!   its own, without a command-line parser: the caller's [`plan::CellChecker`] says
//!   what a cell's command line may be, and its [`plan::PlanObserver`] shows progress.
//!   The studies' plans ship with it ([`presets`]).
//! - A run just made has the same [`results::RunView`] a stored one has ([`Run::view`],
//!   built by the lifecycle from what it stored), for the same renderers.
//! - A command's single runs ([`jitter`]; [`net`], its cells admitted first by
//!   [`admit_net`]) return the probe's typed outcome beside what was stored; a load is
//!   checked before anything is opened ([`check_load`]), a refusal a typed
//!   [`LoadRefusal`] that names the problem (the caller words it with its flags).
//! - What a live line says before the probe reports (a run's label, the prompt a key or
//!   MIDI trigger needs) is [`live`]'s; its text while measuring is `report`'s.
//! - Threshold gates ([`gates`]) are judged on a run as stored, after it, and stored
//!   with it.
//! - A run a dead process left `running` is summarised by its probe's own code
//!   ([`summarise_abandoned`], the store's recovery hook).
//!
//! Adding a probe: implement [`probes::probe::Probe`] and give it to [`run`] in a
//! [`Cell`]. The unit tests hold a test probe that does exactly that.
//!
//! ```no_run
//! use std::sync::{atomic::AtomicBool, Arc};
//! use probes::jitter::{JitterConfig, RunLength};
//! use probes::probe::JitterProbe;
//! let ctx = runner::Context {
//!     tool: results::ToolInfo { version: "0".into(), git_commit: "-".into(), build_profile: "dev".into() },
//!     command_line: "audiolat jitter".into(),
//!     stop: Arc::new(AtomicBool::new(false)),
//!     plan_cell: None,
//!     load_exe: std::env::current_exe().ok(),
//! };
//! let config = JitterConfig::new(1_000_000, RunLength::Loops(1000));
//! let mut cell = runner::Cell::new(JitterProbe::new(config), load::LoadSpec::none(), ".".into());
//! let store = results::Store::open(std::path::Path::new("audiolat.db")).unwrap();
//! let run = runner::run(&ctx, &store, &mut cell, None, &runner::Unobserved).unwrap();
//! println!("run {} {}", run.run_id, run.status);
//! ```
#![deny(missing_docs)]
// A library says nothing on the standard streams (the binary does): `print!` and
// `eprint!` panic when the stream fails.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod cells;
mod end_run;
pub mod experiment;
pub mod gates;
pub mod group;
mod lifecycle;
pub mod live;
mod load_run;
pub mod min_buffer;
pub mod net_ends;
pub mod plan;
pub mod presets;
mod recovery;
mod runs;
pub mod suite;
pub mod sweep;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use load::LoadSpec;
use probes::probe::{LiveStatus, ProbeError};
use results::{GroupId, Measurement, PlanCellId, RunId, RunStatus, RunView, SinkError, ToolInfo};
use serde_json::Value;

pub use cells::{make_partition, CellsRecord, MadeCells, MakeCells};
pub use end_run::{end_run, stop_after, EndRun, EndRunInfo};
pub use lifecycle::{run, storage_failure, Closing};
pub use load_run::{check_load, check_net_load, load_context, LoadRefusal, RunLoad};
pub use probes::probe::{KeepsOutcome, Probe};
pub use recovery::summarise_abandoned;
pub use results::{Kept, RunSink};
pub use runs::{admit_net, jitter, net, JitterRun, NetRun};

/// What every run shares: the tool, the command line, the stop flag.
#[derive(Debug, Clone)]
pub struct Context {
    /// audiolat's version and build.
    pub tool: ToolInfo,
    /// The command line as typed.
    pub command_line: String,
    /// Raised by SIGINT / SIGTERM: the probe stops and the run is `interrupted`.
    pub stop: Arc<AtomicBool>,
    /// Set when this process is a cell of a plan run: the plan run (group) and the cell
    /// its run is filed under (the store files the runs it begins so).
    pub plan_cell: Option<(GroupId, PlanCellId)>,
    /// The program that runs the built-in loads (`<exe> __load ep ...`) and supervises
    /// the others (`<exe> __supervise ...`): audiolat itself. `None`: built-in loads are
    /// refused and tools run unsupervised.
    pub load_exe: Option<PathBuf>,
}

impl Context {
    /// True once Ctrl-C (or SIGTERM) was received.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// How a group of runs that goes on past a failed run (a suite, an experiment)
    /// ends, by [`group::status`]: its runs' `end` (see [`group::GroupEnd::add_run`]),
    /// interrupted when a stop kept one of its runs from running (the group sets
    /// `end.interrupted` then). A stop that came after its last run stopped nothing.
    pub fn group_status(&self, end: group::GroupEnd) -> RunStatus {
        group::status(end)
    }
}

/// One configuration to measure as one run.
#[derive(Debug)]
pub struct Cell<P> {
    /// The probe, holding its typed configuration (and stream); after the run, its
    /// typed outcome.
    pub probe: P,
    /// The background load.
    pub load: LoadSpec,
    /// Where the disk load writes.
    pub scratch: PathBuf,
    /// The group (sweep, suite) the run belongs to.
    pub group: Option<GroupId>,
    /// Repetition number in a sweep, from 1 (stored in the configuration when set).
    pub repeat: Option<u32>,
    /// The run's cells and the probe's host cell, for a run that has them (stored with
    /// its configuration even when empty). The load's items are placed in them.
    pub cells: Option<qos::CellPlan>,
    /// How the admitted cells are made ([`make_partition`]; a test's fake).
    pub make_cells: MakeCells,
}

impl<P> Cell<P> {
    /// A cell of `probe` under `load`, in no group, not repeated.
    pub fn new(probe: P, load: LoadSpec, scratch: PathBuf) -> Cell<P> {
        Cell {
            probe,
            load,
            scratch,
            group: None,
            repeat: None,
            cells: None,
            make_cells: make_partition,
        }
    }
}

/// A run, stored.
#[derive(Debug, Clone)]
pub struct Run {
    /// Run id.
    pub run_id: RunId,
    /// How it ended.
    pub status: RunStatus,
    /// The measurements stored.
    pub measurements: Vec<Measurement>,
    /// The load as run, with its exits.
    pub load: Value,
    /// Validity flags as stored.
    pub flags: Value,
    /// Set when the run ended with an error to report (its stream failed, or it could
    /// not be stored whole): the reason, for the user. An interrupted run has none.
    pub error: Option<String>,
    /// The cells as granted and undone, when the run had any.
    pub cells: Option<CellsRecord>,
    /// Where the run is kept: its database, or a local file its database could not take
    /// it from.
    pub kept: Kept,
    /// The run as stored, for the renderers `audiolat show` uses: built from what the
    /// lifecycle stored (so a run whose storing failed still shows what it measured).
    pub view: RunView,
}

/// A run with its probe's typed outcome: the run as stored (with its view, the one
/// `show` reads back) and what the probe measured, typed, for what a command prints
/// beyond the view.
#[derive(Debug)]
pub struct ProbeRun<O> {
    /// The run as stored.
    pub run: Run,
    /// What the probe measured.
    pub outcome: O,
}

/// `run` of `probe`, with the probe's outcome: the lifecycle returns a run only when the
/// probe measured, and a probe that measured keeps its outcome ([`KeepsOutcome`]).
pub fn with_outcome<P: KeepsOutcome>(run: Run, probe: &mut P) -> ProbeRun<P::Outcome> {
    ProbeRun {
        run,
        outcome: probe
            .take_outcome()
            .expect("a probe that measured keeps its outcome"),
    }
}

/// Watches the run's live status (the binary's status line). Called on the thread that
/// runs the lifecycle.
pub trait Observer {
    /// The run is begun and its load started: measuring starts now (a prompt goes here).
    fn started(&self, _run_id: RunId) {}
    /// The probe's live status.
    fn status(&self, _status: &LiveStatus) {}
    /// Measuring is over (the status line is cleared here).
    fn finished(&self) {}
}

/// An [`Observer`] that shows nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unobserved;

impl Observer for Unobserved {}

/// Something whose end ends the run (the private JACK server behind the stream).
pub trait Watch {
    /// Why the run must end, once it must.
    fn ended(&mut self) -> Option<String>;
}

impl Watch for engine::jack::server::JackServer {
    fn ended(&mut self) -> Option<String> {
        let how = self.exited()?;
        let what = if self.is_pipewire() {
            "PipeWire"
        } else {
            "JACK server"
        };
        Some(format!(
            "the private {what} `{}` exited ({how})",
            self.name()
        ))
    }
}

/// Why a run that was begun failed.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The probe could not measure.
    #[error(transparent)]
    Probe(ProbeError),
    /// The load could not start.
    #[error("starting the load: {0}")]
    Load(load::LoadError),
    /// The run could not be stored.
    #[error(transparent)]
    Storage(SinkError),
    /// The probe panicked (a bug): its message.
    #[error("the probe panicked: {0}")]
    Panicked(String),
}

impl Failure {
    /// The end reason stored with the failed run.
    pub fn reason(&self) -> String {
        match self {
            Failure::Probe(e) => e.reason().to_string(),
            Failure::Load(e) => format!("starting the load: {}", probes::probe::with_causes(e)),
            Failure::Storage(e) => probes::probe::with_causes(e),
            Failure::Panicked(_) => self.to_string(),
        }
    }
}

/// A run that did not end with a stored outcome.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Refused before anything was stored (a load that cannot run here): the input or
    /// the machine must change.
    #[error("{0}")]
    Refused(String),
    /// Admission control refused the run's cells (nothing was stored).
    #[error(transparent)]
    CellsRefused(qos::PlanError),
    /// The run could not be begun in the sink (nothing was measured).
    #[error(transparent)]
    Begin(SinkError),
    /// A stop (Ctrl-C, SIGTERM, a hang-up, SIGQUIT) came before the run measured
    /// anything: nothing of it is stored (a run already begun is removed), and its load
    /// and cells are gone.
    #[error("interrupted before anything was measured: nothing was stored")]
    Stopped,
    /// The run was begun and failed: it is stored `failed` with the reason (when the
    /// sink could still take it).
    #[error("run {run_id} failed: {failure}")]
    Failed {
        /// The run.
        run_id: RunId,
        /// Why.
        failure: Failure,
    },
}
