//! Sweeps: the cells of a probe run once on every period of a backend, one stored run a
//! cell, all in one group.
//!
//! [`Sweep::open`] opens the first period's set-up (its server started or connected to)
//! before anything is stored, so that what the backend refuses is refused first;
//! [`Sweep::run`] then measures every cell on a fresh stream of each period's set-up
//! (each later period is a new set-up: the last one's private server goes first, the
//! next takes its name) and closes the group with the sweep's status on every path.
//!
//! The sweep stops at the first of: a raised stop flag (before the next cell), a period
//! whose set-up or stream cannot be opened, a run that ended with an error to report (a
//! server that exited, a stream that went away), a run the lifecycle could not finish
//! ([`RunError`]: the group is closed `failed`), and, for a search
//! ([`crate::min_buffer`]), a run that answers its question. Nothing is printed: each
//! run's live status goes to the [`Observer`] a [`SweepObserver`] gives for it.

mod cells;

use std::path::Path;

use engine::audio::{AudioError, Backend, StreamInfo};
use engine::backend::{BackendSpec, Setup, SweepStep};
use results::records::stream::AlsaGrantedRecord;
use results::{GroupId, RunSink, RunStatus, SinkError};

use crate::group::{Group, GroupEnd};

use crate::{Context, Observer, RunError, Watch};

pub use cells::{
    event_cells, event_label, roundtrip_cells, EventCell, EventRun, RoundtripCell, RoundtripRun,
};

/// Most repeats of each configuration of a sweep (`--repeat`), as of each cell of a
/// plan (its `repeats`).
pub const MAX_REPEATS: u32 = 1000;

/// Most runs a sweep makes (its periods times its cells), as many as a plan's cells
/// ([`crate::plan::MAX_CELLS`]).
pub const MAX_RUNS: u64 = crate::plan::MAX_CELLS;

/// What a sweep is over, each list's length: its runs are their product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SweepShape {
    /// Periods.
    pub periods: usize,
    /// Note policies (event sweeps; 1 otherwise).
    pub policies: usize,
    /// Workloads (event sweeps; 1 otherwise).
    pub workloads: usize,
    /// Loads.
    pub loads: usize,
    /// Repeats of each configuration.
    pub repeats: u32,
}

/// A sweep too large to make, refused before its cells are made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SweepSizeError {
    /// Repeats outside 1 to [`MAX_REPEATS`].
    #[error("{0} repeats is out of range: use 1 to {MAX_REPEATS}")]
    Repeats(u32),
    /// More runs than [`MAX_RUNS`] (`runs` is `None`: more than a number holds).
    #[error("the sweep makes {} runs ({shape}), more than the {MAX_RUNS} a sweep may make: sweep fewer values or repeats", runs.map_or_else(|| "too many".to_string(), |n| n.to_string()))]
    TooManyRuns {
        /// The runs it would make.
        runs: Option<u64>,
        /// Its lists' lengths and repeats.
        shape: String,
    },
}

impl SweepShape {
    /// The number of runs, checked before any cell is made.
    pub fn check(&self) -> Result<u64, SweepSizeError> {
        if !(1..=MAX_REPEATS).contains(&self.repeats) {
            return Err(SweepSizeError::Repeats(self.repeats));
        }
        let counts = [self.periods, self.policies, self.workloads, self.loads];
        let runs = counts
            .iter()
            .try_fold(u64::from(self.repeats), |n, c| n.checked_mul(*c as u64));
        match runs {
            Some(n) if n <= MAX_RUNS => Ok(n),
            _ => Err(SweepSizeError::TooManyRuns {
                runs,
                shape: format!(
                    "{} periods x {} policies x {} workloads x {} loads x {} repeats",
                    self.periods, self.policies, self.workloads, self.loads, self.repeats
                ),
            }),
        }
    }
}

/// Where a run of a sweep is stored: the sink, the group, the scratch directory.
#[derive(Clone, Copy)]
pub struct Target<'a> {
    /// Where the run is written.
    pub sink: &'a dyn RunSink,
    /// The group (sweep, suite) the run is filed under.
    pub group: Option<GroupId>,
    /// Where the disk load writes.
    pub scratch: &'a Path,
}

/// One configuration a sweep runs on every period: a probe's configuration, its load
/// and its repetition number.
pub trait SweepCell: Clone {
    /// One stored run of the cell.
    type Run;

    /// The cell as run on a fresh stream of `setup` (what an ALSA device `granted`, the
    /// loop the set-up closes).
    fn on_stream(&self, setup: &Setup, granted: Option<AlsaGrantedRecord>) -> Self;

    /// Refuses the cell on a stream that cannot run it (a setting out of the range the
    /// stream allows), before its run begins: nothing is stored for a refused cell.
    fn check(&self, _stream: &StreamInfo) -> Result<(), CellRefusal> {
        Ok(())
    }

    /// Measures the cell on `stream` as a stored run in `target`; `watch` (the private
    /// JACK server behind the stream) can end it.
    fn run(
        &self,
        ctx: &Context,
        target: Target<'_>,
        stream: &mut dyn Backend,
        watch: Option<&mut dyn Watch>,
        observer: &dyn Observer,
    ) -> Result<Self::Run, RunError>;

    /// How a run ended: its status, and its error to report (the sweep stops on one).
    fn ended(run: &Self::Run) -> (RunStatus, Option<&str>);
}

/// Gives each run of a sweep its observer (the binary's status line, labelled with the
/// cell and the stream).
pub trait SweepObserver<C> {
    /// The observer of the run of `cell` on a stream described by `stream`.
    fn run(&self, cell: &C, stream: &StreamInfo) -> Box<dyn Observer + '_>;
}

/// Every run of a sweep goes unobserved.
impl<C> SweepObserver<C> for crate::Unobserved {
    fn run(&self, _cell: &C, _stream: &StreamInfo) -> Box<dyn Observer + '_> {
        Box::new(crate::Unobserved)
    }
}

/// A cell's refusal of a stream: the probe's own error, which the caller words.
pub type CellRefusal = Box<dyn std::error::Error + Send + Sync>;

/// Why a sweep was refused before anything was stored.
#[derive(Debug, thiserror::Error)]
pub enum SweepRefused {
    /// A sweep needs at least one period.
    #[error("a sweep needs at least one period")]
    NoPeriods,
    /// The first period's set-up could not be opened.
    #[error(transparent)]
    Setup(AudioError),
    /// A cell refused the first period's stream ([`SweepCell::check`]).
    #[error(transparent)]
    Cell(CellRefusal),
    /// Several periods on a JACK server audiolat did not start: each period is a new
    /// private server, which an external one cannot be.
    #[error("several periods need private servers (each period is a new jackd -d dummy), but `{server}` is an external server")]
    ExternalServer {
        /// The external server's name.
        server: String,
    },
}

/// What a sweep measured.
#[derive(Debug)]
pub struct SweepOutcome<R> {
    /// The runs, in sweep order.
    pub runs: Vec<R>,
    /// Why the sweep stopped early with an error to report (a period or stream that
    /// could not be opened, a run's error).
    pub failure: Option<String>,
    /// The group's status ([`crate::group::status`]): `failed` on a failure, else
    /// `interrupted` when stopped or a run was, else `complete`.
    pub status: RunStatus,
    /// Set when the group could not be closed (the next open of the store closes it).
    pub group_not_closed: Option<SinkError>,
    /// A stop came before any run measured: no run and no group was stored (the group
    /// was removed).
    pub nothing_stored: bool,
}

/// A sweep over the periods of one backend, its first set-up open.
pub struct Sweep<'s> {
    spec: &'s BackendSpec,
    periods: Vec<Option<u32>>,
    first: Setup,
    word: fn(&AudioError) -> String,
    word_refusal: fn(&CellRefusal) -> String,
}

/// Whether a sweep goes on after a period or a cell.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Next {
    Go,
    Stop,
}

impl<'s> Sweep<'s> {
    /// Opens the first period's set-up of a sweep of `spec` over `periods` (`None`: the
    /// backend's default period), in order. Several periods need the server to be a
    /// private one.
    pub fn open(
        spec: &'s BackendSpec,
        periods: Vec<Option<u32>>,
    ) -> Result<Sweep<'s>, SweepRefused> {
        let first_period = *periods.first().ok_or(SweepRefused::NoPeriods)?;
        let first = engine::backend::open(spec, first_period, SweepStep::First)
            .map_err(SweepRefused::Setup)?;
        if let Some(server) = first.server() {
            if periods.len() > 1 && !server.info().private && server.running_pipewire().is_none() {
                return Err(SweepRefused::ExternalServer {
                    server: server.name().to_string(),
                });
            }
        }
        Ok(Sweep {
            spec,
            periods,
            first,
            word: |e| e.to_string(),
            word_refusal: |e| e.to_string(),
        })
    }

    /// Checks `cells` on a stream of the first period's set-up, before anything is
    /// stored ([`SweepCell::check`]): the first refusal is the error. Later periods'
    /// streams are checked as they open; a cell refused there ends the sweep with the
    /// refusal as its failure, its run not begun.
    pub fn check_cells<C: SweepCell>(&self, cells: &[C]) -> Result<(), SweepRefused> {
        let (stream, granted) = open_stream(&self.first).map_err(SweepRefused::Setup)?;
        for cell in cells {
            cell.on_stream(&self.first, granted.clone())
                .check(stream.info())
                .map_err(SweepRefused::Cell)?;
        }
        Ok(())
    }

    /// How a cell's refusal met mid-sweep (a later period's stream) is worded for the
    /// user; its own text unless told.
    pub fn refusals_worded_by(self, word_refusal: fn(&CellRefusal) -> String) -> Sweep<'s> {
        Sweep {
            word_refusal,
            ..self
        }
    }

    /// How an engine error met mid-sweep (a later period's set-up, a stream that would
    /// not open) is worded for the user: the engine names the problem, the caller may add
    /// the flags that set it. The engine's own text unless told.
    pub fn worded_by(self, word: fn(&AudioError) -> String) -> Sweep<'s> {
        Sweep { word, ..self }
    }

    /// The periods, in order.
    pub fn periods(&self) -> &[Option<u32>] {
        &self.periods
    }

    /// Runs every cell on every period, in order, and closes the group. A run the
    /// lifecycle could not finish ends the sweep with its error, the group closed
    /// `failed`.
    pub fn run<C: SweepCell>(
        self,
        ctx: &Context,
        sink: &dyn RunSink,
        group: &Group<'_>,
        cells: &[C],
        scratch: &Path,
        observer: &dyn SweepObserver<C>,
    ) -> Result<SweepOutcome<C::Run>, RunError> {
        self.run_until(ctx, sink, group, cells, scratch, observer, &|_| false)
    }

    /// [`Sweep::run`], stopping after the first run for which `stop_after` is true.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run_until<C: SweepCell>(
        self,
        ctx: &Context,
        sink: &dyn RunSink,
        group: &Group<'_>,
        cells: &[C],
        scratch: &Path,
        observer: &dyn SweepObserver<C>,
        stop_after: &dyn Fn(&C::Run) -> bool,
    ) -> Result<SweepOutcome<C::Run>, RunError> {
        let mut sweeping = Sweeping {
            ctx,
            target: Target {
                sink,
                group: Some(group.id()),
                scratch,
            },
            cells,
            observer,
            stop_after,
            runs: Vec::new(),
            failure: None,
            cut_short: false,
            word: |e| e.to_string(),
            word_refusal: |e| e.to_string(),
        };
        if let Err(e) = sweeping.periods(self) {
            let _ = group.close(RunStatus::Failed);
            return Err(e);
        }
        let cut_short = sweeping.cut_short;
        let Sweeping { runs, failure, .. } = sweeping;
        if runs.is_empty() && failure.is_none() && cut_short && group.discard() {
            return Ok(SweepOutcome {
                runs,
                failure,
                status: RunStatus::Interrupted,
                group_not_closed: None,
                nothing_stored: true,
            });
        }
        let statuses: Vec<RunStatus> = runs.iter().map(|r| C::ended(r).0).collect();
        let status = crate::group::status(GroupEnd {
            stopped_by_error: failure.is_some(),
            interrupted: cut_short || statuses.contains(&RunStatus::Interrupted),
            run_failed: statuses.contains(&RunStatus::Failed),
        });
        let group_not_closed = group.close(status).err();
        Ok(SweepOutcome {
            runs,
            failure,
            status,
            group_not_closed,
            nothing_stored: false,
        })
    }
}

/// A sweep's state while it runs.
struct Sweeping<'a, C: SweepCell> {
    ctx: &'a Context,
    target: Target<'a>,
    cells: &'a [C],
    observer: &'a dyn SweepObserver<C>,
    stop_after: &'a dyn Fn(&C::Run) -> bool,
    runs: Vec<C::Run>,
    failure: Option<String>,
    /// A stop kept a run from starting (or from measuring anything): the sweep did not
    /// run to its end. A stop after its last run stopped nothing.
    cut_short: bool,
    word: fn(&AudioError) -> String,
    word_refusal: fn(&CellRefusal) -> String,
}

impl<C: SweepCell> Sweeping<'_, C> {
    /// Every period in turn, each a new set-up once the last one is dropped.
    fn periods(&mut self, sweep: Sweep<'_>) -> Result<(), RunError> {
        let Sweep {
            spec,
            periods,
            first,
            word,
            word_refusal,
        } = sweep;
        self.word = word;
        self.word_refusal = word_refusal;
        let mut setup = Some(first);
        for (i, period) in periods.iter().enumerate() {
            if i > 0 && self.ctx.stopped() {
                // Stopped before the next period: its server is not started.
                self.cut_short = true;
                break;
            }
            if i > 0 {
                // The last period's server goes first: the next takes its name.
                drop(setup.take());
                match engine::backend::open(spec, *period, SweepStep::Later) {
                    Ok(s) => setup = Some(s),
                    Err(e) => {
                        self.failure = Some((self.word)(&e));
                        break;
                    }
                }
            }
            let Some(setup) = setup.as_mut() else { break };
            if self.period(setup)? == Next::Stop {
                break;
            }
        }
        Ok(())
    }

    /// Every cell on a fresh stream of one period's set-up.
    fn period(&mut self, setup: &mut Setup) -> Result<Next, RunError> {
        let cells = self.cells;
        for cell in cells {
            if self.ctx.stopped() {
                self.cut_short = true;
                return Ok(Next::Stop);
            }
            let (mut stream, granted) = match open_stream(setup) {
                Ok(s) => s,
                Err(e) => {
                    self.failure = Some((self.word)(&e));
                    return Ok(Next::Stop);
                }
            };
            let cell = cell.on_stream(setup, granted);
            if let Err(refusal) = cell.check(stream.info()) {
                self.failure = Some((self.word_refusal)(&refusal));
                return Ok(Next::Stop);
            }
            let observer = self.observer.run(&cell, stream.info());
            let watch = setup.server_mut().map(|s| s as &mut dyn Watch);
            let result = cell.run(self.ctx, self.target, stream.as_mut(), watch, &*observer);
            drop(observer);
            drop(stream);
            let run = match result {
                // A stop before the run measured anything: nothing of it was stored.
                Err(RunError::Stopped) => {
                    self.cut_short = true;
                    return Ok(Next::Stop);
                }
                other => other?,
            };
            let error = C::ended(&run).1.map(str::to_string);
            let stop = error.is_some() || (self.stop_after)(&run);
            if error.is_some() {
                self.failure = error;
            }
            self.runs.push(run);
            if stop {
                return Ok(Next::Stop);
            }
        }
        Ok(Next::Go)
    }
}

/// A fresh stream of a set-up, and what an ALSA device granted (as its record).
pub fn open_stream(
    setup: &Setup,
) -> Result<(Box<dyn Backend>, Option<AlsaGrantedRecord>), AudioError> {
    let (stream, granted) = setup.open_stream()?;
    let granted = granted.and_then(|g| serde_json::from_str(&g.to_json_string()).ok());
    Ok((stream, granted))
}
