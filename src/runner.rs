//! Runs probes as stored runs through the `runner` crate's lifecycle (record the run,
//! start its load, measure, stop the load on every path, store what was measured with
//! its validity flags, close the run); here: the binary's side of it (opening the store,
//! the live status line, errors as exit codes) and the network runs.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use ::runner::{Cell, Failure, RunError};
use anyhow::Result;
use load::{LoadContext, LoadSpec};
use probes::jitter::{JitterConfig, JitterOutcome};
use probes::probe::{JitterProbe, LiveStatus, NetProbe};
use results::{Measurement, RunStatus, SinkError, Store, ToolInfo};
use serde_json::Value;

use crate::cli::UsageError;

/// What every run shares: the database path, and the lifecycle's context (the tool,
/// the command line, the stop flag, the plan cell), reached through `Deref`.
pub struct Context {
    /// Database path (for messages and the io load's default directory).
    pub db_path: PathBuf,
    /// What the lifecycle needs.
    pub run: ::runner::Context,
}

impl std::ops::Deref for Context {
    type Target = ::runner::Context;

    fn deref(&self) -> &::runner::Context {
        &self.run
    }
}

impl Context {
    /// Opens the results database for writing runs; in a plan's cell, every run it
    /// begins is filed under the cell. Every measuring command opens it so, after its
    /// input is checked and before it measures: first, what an audiolat killed outright
    /// left changed on the machine is undone ([`undo_leftovers`]).
    pub fn open_store(&self) -> anyhow::Result<Store> {
        undo_leftovers()?;
        let store = Store::open_recovering(&self.db_path, &summarise_abandoned)?;
        say_journal_once(&store);
        if let Some((group, cell)) = self.plan_cell {
            store.file_runs_under(group, cell)?;
        }
        Ok(store)
    }

    /// Opens an existing results database read-only, for commands that only read: it
    /// is never created, migrated or switched, and a read-only file or mount will do.
    /// Runs, groups and plan cells dead processes left `running` are first closed (and
    /// summarised) when the database can be written; otherwise they are shown as stored.
    pub fn open_existing_store(&self) -> anyhow::Result<Store> {
        let store = match Store::open_read_only(&self.db_path) {
            Err(results::StoreError::UnsharedLog(_)) => {
                // A log only a writer can fold in (9p): folded in once and said once, as
                // a recording command would (the one case where reading writes), with
                // nothing migrated, recovered or reserved.
                let writer = Store::fold_log(&self.db_path)?;
                say_journal_once(&writer);
                drop(writer);
                Store::open_read_only(&self.db_path)?
            }
            other => other?,
        };
        let abandoned =
            !store.abandoned_runs()?.is_empty() || !store.abandoned_groups()?.is_empty();
        if abandoned && Store::close_abandoned(&self.db_path, &summarise_abandoned).is_ok() {
            return Ok(Store::open_read_only(&self.db_path)?);
        }
        Ok(store)
    }

    /// Where the io load writes unless told otherwise: beside the database.
    pub fn default_scratch(&self) -> PathBuf {
        match self.db_path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        }
    }
}

/// Undoes what audiolats killed outright left (cpusets, load balancing, confined tasks,
/// namespaces, qdiscs, state files) and says so in one line; refuses (exit 2) when it
/// cannot, naming what is left. A running audiolat's state is not touched.
pub fn undo_leftovers() -> anyhow::Result<()> {
    match probes::leftovers::undo() {
        Ok(Some(line)) => {
            eprintln!("audiolat: {line}");
            Ok(())
        }
        Ok(None) => Ok(()),
        Err(refusal) => Err(UsageError(refusal).into()),
    }
}

/// Tells the user, the one time the database turns to a rollback journal (later opens
/// find it so and say nothing), that it could not have its write-ahead log and what that
/// changes.
pub fn say_journal_once(store: &Store) {
    if let results::Journal::Rollback {
        reason: why,
        switched: true,
    } = store.journal()
    {
        eprintln!(
            "audiolat: {} is on a filesystem that cannot share SQLite's write-ahead log ({why}): using a rollback journal, so readers wait while a probe writes (a local path avoids this)",
            store.path().display()
        );
    }
}

/// Summarises a run a dead process left `running` from what it stored, with the probe's
/// own code: an event run's trigger rows become its trigger measurements, as the live
/// run would have made them. A jitter run's checkpoints are its measurements already;
/// the other probes store theirs only at the end, so there is nothing to summarise.
pub fn summarise_abandoned(
    store: &Store,
    run: &results::model::RunRecord,
) -> std::result::Result<Vec<Measurement>, String> {
    if run.probe != "event" {
        return Ok(Vec::new());
    }
    let Some(summary) = probes::event::TriggerSummary::from_json(
        &run.result[probes::probe::RECOVERY_KEY]["event_triggers"],
    ) else {
        return Ok(Vec::new());
    };
    let rows = store.triggers(run.id).map_err(|e| e.to_string())?;
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    Ok(summary.measurements(&rows))
}

/// The tool's own description, from the build.
pub fn tool_info() -> ToolInfo {
    ToolInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: env!("AUDIOLAT_GIT_COMMIT").to_string(),
        build_profile: env!("AUDIOLAT_BUILD_PROFILE").to_string(),
    }
}

/// The load context for a run.
pub fn load_context(scratch: &Path) -> LoadContext {
    ::runner::load_context(std::env::current_exe().ok(), scratch)
}

/// A run error from the lifecycle, for the user: a refusal is a usage error (exit 2);
/// a store's error keeps its type (an unusable database is exit 2 too); a failed run
/// says its id.
pub fn run_error(e: RunError) -> anyhow::Error {
    fn sink(e: SinkError) -> anyhow::Error {
        match e {
            SinkError::Store(e) => e.into(),
            other => other.into(),
        }
    }
    match e {
        RunError::Refused(why) => UsageError(why).into(),
        RunError::CellsRefused(e) => cells_refusal(e).into(),
        RunError::Begin(e) => sink(e),
        RunError::Failed { run_id, failure } => match failure {
            Failure::Probe(e) => anyhow::Error::from_boxed(e.into_inner()),
            Failure::Load(e) => anyhow::Error::new(e).context("starting the load"),
            Failure::Storage(e) => sink(e),
        }
        .context(format!("run {run_id} failed")),
    }
}

/// Checks that a load can start here (every tool installed, scratch directory usable)
/// without starting it. A problem is a usage error: nothing has been written yet.
pub fn check_load(spec: &LoadSpec, scratch: &Path) -> Result<()> {
    if spec.has_net_items() {
        return Err(UsageError(
            "--load flood and stream are UDP streams aimed at the network probe's host: use them with audiolat net".into(),
        )
        .into());
    }
    if spec.cells.iter().any(Option::is_some) {
        return Err(UsageError(
            "cells (load@cell) are for audiolat net so far: leave out the @cell".into(),
        )
        .into());
    }
    check_net_load(spec, scratch)
}

/// [`check_load`] for the network probe, which runs a `flood` itself.
pub fn check_net_load(spec: &LoadSpec, scratch: &Path) -> Result<()> {
    load::plan(spec, &load_context(scratch)).map_err(|e| UsageError(e.to_string()))?;
    Ok(())
}

/// A jitter run, stored.
pub struct JitterRun {
    /// Run id.
    pub run_id: i64,
    /// How it ended.
    pub status: RunStatus,
    /// What was measured.
    pub outcome: JitterOutcome,
    /// The stored measurements.
    pub measurements: Vec<Measurement>,
    /// The load as run, with exits.
    pub load: Value,
    /// Validity flags as stored.
    pub flags: Value,
    /// Set when the run could not be stored whole (status `failed`): the reason, for the
    /// user.
    pub error: Option<String>,
}

impl JitterRun {
    /// The run's view, for the renderers `audiolat show` uses.
    pub fn view(&self) -> results::RunView {
        let closed = ::runner::view::Closed {
            run_id: self.run_id,
            status: self.status,
            flags: &self.flags,
            error: self.error.as_ref(),
        };
        ::runner::view::jitter(closed, &self.outcome, &self.measurements, &self.load)
    }
}

/// A one-line live status on stderr, when stderr is a terminal; and a prompt said when
/// measuring starts (press a key, play MIDI notes), whether or not it is a terminal.
pub struct LiveLine {
    enabled: bool,
    label: String,
    period_ns: u64,
    prompt: Option<String>,
}

impl LiveLine {
    /// A status line for `label`, shown only on a terminal and unless `quiet`;
    /// `period_ns` turns the jitter probe's cycles into seconds.
    pub fn new(label: &str, quiet: bool, period_ns: u64) -> LiveLine {
        LiveLine {
            enabled: !quiet && std::io::stderr().is_terminal(),
            label: label.to_string(),
            period_ns,
            prompt: None,
        }
    }

    /// Says `prompt` when measuring starts.
    fn with_prompt(self, prompt: Option<String>) -> LiveLine {
        LiveLine { prompt, ..self }
    }

    fn show(&self, status: &LiveStatus) {
        if !self.enabled {
            return;
        }
        let label = &self.label;
        let line = match status {
            LiveStatus::Jitter(s) => {
                let secs = s.cycles as f64 * self.period_ns as f64 / 1e9;
                let total = s.planned as f64 * self.period_ns as f64 / 1e9;
                format!(
                    "{label}  {secs:.1}/{total:.1} s  cycles {}  last {}  max {}  overflows {}  underruns {}",
                    s.cycles,
                    report::terminal::fmt_ns(s.last_ns as f64),
                    report::terminal::fmt_ns(s.max_ns as f64),
                    s.overflows,
                    s.underruns
                )
            }
            LiveStatus::Event {
                measured,
                wanted,
                cycles,
                underruns,
            } => format!(
                "{label}  triggers {measured}/{wanted}  cycles {cycles}  under-runs {underruns}"
            ),
            LiveStatus::Roundtrip {
                windows,
                last_delay_frames,
                cycles,
                underruns,
            } => format!(
                "{label}  windows {windows}  last {}  cycles {cycles}  under-runs {underruns}",
                last_delay_frames.map_or("-".to_string(), |f| format!("{f:.3} frames")),
            ),
            LiveStatus::Text(text) => format!("{label}  {text}"),
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K{line}");
        let _ = err.flush();
    }

    fn clear(&self) {
        if self.enabled {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
    }
}

impl ::runner::Observer for LiveLine {
    fn started(&self, _run_id: i64) {
        if let Some(prompt) = &self.prompt {
            eprintln!("{prompt}");
        }
    }

    fn status(&self, status: &LiveStatus) {
        self.show(status);
    }

    fn finished(&self) {
        self.clear();
    }
}

/// Runs the jitter probe as a stored run. `group` ties it to a suite.
pub fn jitter_run(
    ctx: &Context,
    store: &Store,
    group: Option<i64>,
    config: &JitterConfig,
    load_spec: &LoadSpec,
    scratch: &Path,
    live: &LiveLine,
) -> Result<JitterRun> {
    let mut cell = Cell {
        group,
        ..Cell::new(
            JitterProbe::new(config.clone()),
            load_spec.clone(),
            scratch.to_path_buf(),
        )
    };
    let run = ::runner::run(ctx, store, &mut cell, None, live).map_err(run_error)?;
    Ok(JitterRun {
        run_id: run.run_id,
        status: run.status,
        outcome: measured(cell.probe.take_outcome())?,
        measurements: run.measurements,
        load: run.load,
        flags: run.flags,
        error: run.error,
    })
}

/// The probe's typed outcome after a run that measured.
fn measured<T>(outcome: Option<T>) -> Result<T> {
    outcome.ok_or_else(|| anyhow::anyhow!("the probe measured but kept no outcome (a bug)"))
}

/// Stores a doctor report as a run of probe `doctor`.
pub fn doctor_run(
    ctx: &Context,
    store: &Store,
    group: Option<i64>,
    report: &probes::doctor::DoctorReport,
) -> Result<i64> {
    Ok(::runner::suite::store_doctor(ctx, store, group, report)?)
}

pub use ::runner::sweep::{EventCell, RoundtripCell};

/// The live line of an event run of `cell` on a stream described by `sinfo`: its label,
/// and the prompt a key or MIDI trigger needs.
fn event_live(cell: &EventCell, sinfo: &engine::audio::StreamInfo, quiet: bool) -> LiveLine {
    let label = ::runner::sweep::event_label(&cell.config, &cell.load, sinfo.period_frames);
    let prompt = match cell.config.source {
        probes::event::TriggerSource::Key => Some(format!(
            "{label}: press a key for each trigger ({} wanted); q ends",
            cell.config.triggers
        )),
        probes::event::TriggerSource::Midi => Some(format!(
            "{label}: waiting for {} MIDI note-ons on {}:midi_in{}",
            cell.config.triggers,
            sinfo.client_name,
            match &sinfo.midi_port {
                Some(p) if !p.is_empty() => format!(" (connected to {p})"),
                _ => " (connect a MIDI source to it, e.g. with jack_connect)".into(),
            }
        )),
        probes::event::TriggerSource::Timer => None,
    };
    LiveLine::new(&label, quiet, 0).with_prompt(prompt)
}

/// The live line of a round-trip run of `cell` on a stream described by `sinfo`.
fn roundtrip_live(
    cell: &RoundtripCell,
    sinfo: &engine::audio::StreamInfo,
    quiet: bool,
) -> LiveLine {
    let label = format!(
        "roundtrip {} period {} {}",
        sinfo.backend, sinfo.period_frames, cell.load
    );
    LiveLine::new(&label, quiet, 0)
}

/// A sweep's runs each shown on a live line (unless `quiet`).
pub struct SweepLive {
    /// Show nothing.
    pub quiet: bool,
}

impl ::runner::sweep::SweepObserver<EventCell> for SweepLive {
    fn run(
        &self,
        cell: &EventCell,
        stream: &engine::audio::StreamInfo,
    ) -> Box<dyn ::runner::Observer + '_> {
        Box::new(event_live(cell, stream, self.quiet))
    }
}

impl ::runner::sweep::SweepObserver<RoundtripCell> for SweepLive {
    fn run(
        &self,
        cell: &RoundtripCell,
        stream: &engine::audio::StreamInfo,
    ) -> Box<dyn ::runner::Observer + '_> {
        Box::new(roundtrip_live(cell, stream, self.quiet))
    }
}

/// A network-audio run, stored.
pub struct NetRun {
    /// Run id.
    pub run_id: i64,
    /// How it ended.
    pub status: RunStatus,
    /// What was measured.
    pub outcome: probes::net::NetOutcome,
    /// The configuration.
    pub config: probes::net::NetConfig,
    /// Background load.
    pub load: LoadSpec,
    /// Validity flags as stored.
    pub flags: Value,
    /// The cells as granted, if the run had any.
    pub cells: Option<Value>,
    /// Every cell was undone at the end.
    pub cells_undone: bool,
    /// Set when the run could not be stored whole (status `failed`): the reason, for the
    /// user.
    pub storage_error: Option<String>,
}

impl NetRun {
    /// The run's view, for the renderers `audiolat show` uses.
    pub fn view(&self) -> results::RunView {
        let closed = ::runner::view::Closed {
            run_id: self.run_id,
            status: self.status,
            flags: &self.flags,
            error: self.storage_error.as_ref(),
        };
        let cells = ::runner::view::CellsGranted {
            granted: self.cells.as_ref(),
            undone: self.cells_undone,
        };
        ::runner::view::net(closed, &self.outcome, &self.config, &self.load, cells)
    }
}

pub use qos::CellPlan;

/// A refusal of a run's cells, in the words of the flags that placed the loads.
fn cells_refusal(e: qos::PlanError) -> UsageError {
    match e {
        qos::PlanError::NoSuchCell { load, cell } => UsageError(format!(
            "--load {load}@{cell}: no such cell; define it with --cell {cell}=KIND:... or in --cells"
        )),
        qos::PlanError::ForksInDeadlineCell { load, cell, kind } => UsageError(format!(
            "--load {load}@{cell}: {cell} is a {kind} cell (SCHED_DEADLINE), whose tasks may not fork: only the built-in loads (video, ep) can run there; place the others in dedicated or best-effort cells"
        )),
        qos::PlanError::NoShapedLink { reserved } => UsageError(format!(
            "admission: cells reserve bandwidth ({reserved}) but the run has no shaped link; use --link"
        )),
        qos::PlanError::Refused(why) => UsageError(why),
    }
}

/// Admission control for a network run (`qos::CellPlan::admit` with the host's threads
/// and link of `config`); a refusal is a usage error, before anything starts, in the
/// words of the flags that placed the loads.
pub fn admit_net(
    plan: &CellPlan,
    config: &probes::net::NetConfig,
    load_spec: &LoadSpec,
) -> Result<Option<qos::Admission>, UsageError> {
    plan.admit(
        load_spec,
        Some(config.host_threads()),
        config.link.map(|l| l.mbps),
    )
    .map_err(cells_refusal)
}

/// Runs `audiolat net` (reference phase, then synth phase, over loopback) as a stored
/// run, its loads placed in `cells`.
pub fn net_run(
    ctx: &Context,
    store: &Store,
    group: Option<i64>,
    config: &probes::net::NetConfig,
    load_spec: &LoadSpec,
    cells: &CellPlan,
    scratch: &Path,
) -> Result<NetRun> {
    let mut cell = Cell {
        group,
        cells: Some(cells.clone()),
        ..Cell::new(
            NetProbe::new(config.clone()),
            load_spec.clone(),
            scratch.to_path_buf(),
        )
    };
    let run =
        ::runner::run(ctx, store, &mut cell, None, &::runner::Unobserved).map_err(run_error)?;
    let outcome = measured(cell.probe.take_outcome())?;
    Ok(net_run_of(
        run,
        outcome,
        cell.probe.config().clone(),
        load_spec.clone(),
    ))
}

/// A network run as the binary shows it, from the lifecycle's run and the probe's outcome.
pub fn net_run_of(
    run: ::runner::Run,
    outcome: probes::net::NetOutcome,
    config: probes::net::NetConfig,
    load: LoadSpec,
) -> NetRun {
    NetRun {
        run_id: run.run_id,
        status: run.status,
        outcome,
        config,
        load,
        flags: run.flags,
        cells: run.cells.as_ref().map(|c| c.granted.clone()),
        cells_undone: run.cells.as_ref().is_none_or(|c| c.undone()),
        storage_error: run.error,
    }
}

/// One end of `audiolat net` run on its own (`respond` or `emulate`), stored.
pub use ::runner::EndRun as NetEndRun;

pub use ::runner::stop_after;

/// Runs one end of the network probe as a stored run (`::runner::end_run`). `measure`
/// does the work and returns (measurements, flags, result, error); a signal ends it
/// `interrupted`.
pub fn net_end_run(
    ctx: &Context,
    store: &Store,
    role: &'static str,
    config: Value,
    qos: Value,
    measure: impl FnOnce() -> (Vec<Measurement>, Value, Value, Option<String>),
) -> Result<NetEndRun> {
    let info = ::runner::EndRunInfo {
        role,
        config,
        qos_requested: qos,
    };
    ::runner::end_run(ctx, store, info, measure).map_err(run_error)
}
