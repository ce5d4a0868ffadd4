//! The binary's side of the `runner` crate's runs: opening the store with the binary's
//! messages, the runner's errors as exit codes (a refusal is a usage error, in the
//! words of the flags), and the live status line written to the terminal.

use std::io::IsTerminal;
use std::path::PathBuf;

use ::runner::{Failure, LoadRefusal, RunError};
use anyhow::Result;
use load::{LoadError, LoadSpec};
use probes::probe::LiveStatus;
use results::{SinkError, Store, ToolInfo};

use crate::cli::UsageError;
use crate::stdio;

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
        engine::phase::reached(engine::phase::Phase::StoreOpen);
        if self.stopped() {
            // Stopped before anything was begun: no database is made or changed.
            return Err(crate::process::NothingMeasured.into());
        }
        undo_leftovers(false)?;
        let store = Store::open_recovering(&self.db_path, &::runner::summarise_abandoned)?;
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
        let summarise = &::runner::summarise_abandoned;
        Ok(Store::open_reading(
            &self.db_path,
            summarise,
            &say_journal_once,
        )?)
    }

    /// Where the io load writes unless told otherwise: beside the database (a
    /// PostgreSQL store's: the working directory).
    pub fn default_scratch(&self) -> PathBuf {
        match self.db_path.parent() {
            _ if results::store::postgres_url(&self.db_path).is_some() => PathBuf::from("."),
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        }
    }
}

/// Undoes what audiolats killed outright left (cpusets, load balancing, confined tasks,
/// namespaces, qdiscs, state files) and says so in one line; refuses (exit 2) when it
/// cannot, naming what is left. A running audiolat's state is not touched. The temporary
/// files they left are removed too, said only when `tell_files` (`doctor --fix`).
pub fn undo_leftovers(tell_files: bool) -> anyhow::Result<()> {
    let (removed, problems) = probes::leftovers::remove_temporary();
    if tell_files {
        for line in removed.into_iter().chain(problems) {
            stdio::say(format_args!("audiolat: {line}"));
        }
    }
    match probes::leftovers::undo() {
        Ok(Some(line)) => {
            stdio::say(format_args!("audiolat: {line}"));
            Ok(())
        }
        Ok(None) => Ok(()),
        Err(left) => Err(UsageError(format!(
            "{left}{}",
            if left.root {
                " and run `audiolat doctor`"
            } else {
                ": run `sudo audiolat doctor --fix`"
            }
        ))
        .into()),
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
        stdio::say(format_args!(
            "audiolat: {} is on a filesystem that cannot share SQLite's write-ahead log ({why}): using a rollback journal, so readers wait while a probe writes (a local path avoids this)",
            store.path().display()
        ));
    }
}

/// The tool's own description, from the build.
pub fn tool_info() -> ToolInfo {
    ToolInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: env!("AUDIOLAT_GIT_COMMIT").to_string(),
        build_profile: env!("AUDIOLAT_BUILD_PROFILE").to_string(),
    }
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
        RunError::Stopped => crate::process::NothingMeasured.into(),
        RunError::Failed { run_id, failure } => match failure {
            Failure::Probe(e) => anyhow::Error::from_boxed(e.into_inner()),
            Failure::Load(e) => load_error(e).context("starting the load"),
            Failure::Storage(e) => sink(e),
            failure @ Failure::Panicked(_) => failure.into(),
        }
        .context(format!("run {run_id} failed")),
    }
}

/// Checks that a load can start here (every tool installed, scratch directory usable)
/// without starting it. A problem is a usage error: nothing has been written yet.
pub fn check_load(spec: &LoadSpec, scratch: &std::path::Path) -> Result<()> {
    ::runner::check_load(spec, scratch).map_err(|e| load_refusal(e).into())
}

/// [`check_load`] for the network probe, which runs a `flood` itself.
pub fn check_net_load(spec: &LoadSpec, scratch: &std::path::Path) -> Result<()> {
    ::runner::check_net_load(spec, scratch).map_err(|e| load_refusal(e).into())
}

/// A load that cannot run here, in the words of `--load`.
fn load_refusal(e: LoadRefusal) -> UsageError {
    UsageError(match e {
        LoadRefusal::NetItems => "--load flood and stream are UDP streams aimed at the network probe's host: use them with audiolat net".into(),
        LoadRefusal::Cells => "cells (load@cell) are for audiolat net so far: leave out the @cell".into(),
        LoadRefusal::Plan(e) => load_message(&e),
    })
}

/// A load error for the user: [`load_message`]'s words where they differ from the
/// library's, else the error itself (with its causes).
fn load_error(e: LoadError) -> anyhow::Error {
    match e {
        LoadError::BadScratch(_)
        | LoadError::UnknownCell { .. }
        | LoadError::ForkInDeadlineCell { .. } => anyhow::anyhow!(load_message(&e)),
        other => anyhow::Error::new(other),
    }
}

/// A load error in the words of the flags that asked for the load.
pub fn load_message(e: &LoadError) -> String {
    match e {
        LoadError::BadScratch(dir) => format!(
            "disk load scratch directory {} is not a writable directory: pass one with --scratch-dir",
            dir.display()
        ),
        LoadError::UnknownCell { item, cell } => format!(
            "load '{item}' is placed in cell '{cell}', which no --cell or --cells defines"
        ),
        // "load X@cell: ..." is what `--load X@cell` asked for.
        LoadError::ForkInDeadlineCell { .. } => format!("--{e}"),
        other => other.to_string(),
    }
}

/// A one-line live status on stderr, when stderr is a terminal (its text is
/// `report::view::live`'s); and a prompt said when measuring starts (press a key, play
/// MIDI notes), whether or not it is a terminal.
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

    fn write(&self, line: &str) {
        if self.enabled {
            stdio::progress(format_args!("\r\x1b[K{line}"));
        }
    }
}

impl ::runner::Observer for LiveLine {
    fn started(&self, _run_id: results::RunId) {
        if let Some(prompt) = &self.prompt {
            stdio::progress(format_args!("{prompt}\n"));
        }
    }

    fn status(&self, status: &LiveStatus) {
        if self.enabled {
            self.write(&report::view::live::line(
                &self.label,
                self.period_ns,
                status,
            ));
        }
    }

    fn finished(&self) {
        self.write("");
    }
}

/// A sweep's runs each shown on a live line (unless `quiet`).
pub struct SweepLive {
    /// Show nothing.
    pub quiet: bool,
}

impl ::runner::live::LabelledRuns for SweepLive {
    fn labelled(&self, label: &str, prompt: Option<String>) -> Box<dyn ::runner::Observer + '_> {
        let line = LiveLine::new(label, self.quiet, 0);
        Box::new(LiveLine { prompt, ..line })
    }
}

/// A refusal of a run's cells, in the words of the flags that placed the loads.
pub fn cells_refusal(e: qos::PlanError) -> UsageError {
    match e {
        qos::PlanError::NoSuchCell { load, cell } => UsageError(format!(
            "--load {load}@{cell}: no such cell; define it with --cell {cell}=KIND:... or in --cells"
        )),
        qos::PlanError::ForksInDeadlineCell { load, cell, kind } => UsageError(format!(
            "--load {load}@{cell}: {cell} is a SCHED_DEADLINE cell ({kind}), whose tasks may not fork: only the built-in loads (video, ep) can run there; place the others in dedicated or best-effort cells"
        )),
        qos::PlanError::NoShapedLink { reserved } => UsageError(format!(
            "admission: cells reserve bandwidth ({reserved}) but the run has no shaped link; use --link"
        )),
        qos::PlanError::Refused(why) => UsageError(why),
    }
}
