//! Running a plan: every cell as a child `audiolat` process (the binary of the cell's
//! build profile) whose one run is filed under the cell, in an order that starts one
//! private JACK server per buffer setting, Ctrl-C that stops the current cell and keeps
//! what is stored, and a resume that runs only the cells not yet stored complete.
//!
//! A caller takes two steps: [`order`] (the cells checked, in run order; a dry run stops
//! there), then [`execute`] (`flow`: the plan run opened or reopened, its cells and a
//! doctor run stored, the binaries built, the cells run, the plan run closed). Here are
//! the steps `execute` takes. Nothing is printed: the start, progress and news go to a
//! [`PlanObserver`]; the caller prints the summary [`execute`] returns.
//!
//! Beside this file: `flow` ([`execute`]), `order` (run order and the private server each cell needs),
//! `binaries` (the binary of each build profile), `server` (the plan's JACK server),
//! `cell` (one cell's process), `progress` (cells done and the time left) and `resume`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use results::{GroupId, NewPlanCell, PlanCell, RunStatus, SinkError, Store, StoreError};
use serde_json::json;

use super::{CellChecker, Plan};
use crate::group::Group;
use crate::Context;

mod binaries;
mod cell;
mod flow;
mod order;
mod progress;
mod resume;
mod server;
#[cfg(test)]
mod tests;

pub use binaries::binary_for;
pub use flow::{execute, PlanRun, PlanRunEnd, PlanRunSummary, PlanStarted};
pub use order::{order, server_settings, Planned, ServerKey};
pub use progress::PlanProgress;
pub use resume::Resume;
pub use server::private_server;

use cell::run_cell;
use resume::reopen;
use server::PlanServer;

/// Why a plan run could not go on.
#[derive(Debug, thiserror::Error)]
pub enum PlanRunError {
    /// Refused as asked, the user's to change: a resume that does not fit the plan, a
    /// build profile that cannot be built.
    #[error("{0}")]
    Refused(String),
    /// The results database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The results database failed, written to as a run sink (the doctor run, the
    /// plan run's close).
    #[error(transparent)]
    Sink(#[from] SinkError),
    /// audiolat's own binary is not to be found.
    #[error("finding audiolat's own binary")]
    OwnBinary(#[source] std::io::Error),
    /// A cell's log file could not be made (made as every file audiolat writes is:
    /// `results::output`, never over the database or a file that exists).
    #[error("creating the cell's log")]
    CellLog(#[source] results::output::OutputError),
    /// A stored cell that the plan does not have.
    #[error("plan cell {0} is not in the plan")]
    NotInPlan(String),
    /// Waiting for a cell's process failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// What a plan run tells as it goes; the caller shows it (a progress line, a log).
pub trait PlanObserver {
    /// The plan run is open, its cells stored; its binaries are built next.
    fn started(&mut self, start: &PlanStarted<'_>) {
        let _ = start;
    }

    /// A line of news: a private server started, a cell failed, a binary is built.
    fn note(&mut self, text: &str);

    /// A warning, which a caller shows even when it shows no news (by default, a note).
    fn warning(&mut self, text: &str) {
        self.note(text);
    }

    /// Cell `key` starts (`elapsed` `None`), or still runs after `elapsed` (told about
    /// once a second).
    fn cell_running(&mut self, key: &str, elapsed: Option<Duration>) {
        let _ = (key, elapsed);
    }

    /// A cell ended: its process took `took` (`None`: it did not start), and it
    /// `counts` among the cells done (not one interrupted by the plan's stop).
    fn cell_ended(&mut self, took: Option<Duration>, counts: bool) {
        let _ = (took, counts);
    }
}

/// The binary of each build profile, or the profile whose build Ctrl-C stopped.
#[derive(Debug)]
enum Binaries {
    /// Profile -> binary, for every profile the cells to run use.
    Ready(BTreeMap<String, PathBuf>),
    /// Ctrl-C stopped the build of this profile: the plan run is closed interrupted,
    /// kept for a resume.
    Stopped {
        /// The profile being built.
        profile: String,
    },
}

/// A new plan run (group) for `plan`: its detail is the plan as JSON, its cell count
/// and the runner's process and host.
fn create_group(
    command_line: &str,
    store: &Store,
    plan: &Plan,
    planned: &[Planned],
) -> Result<GroupId, StoreError> {
    let mut detail = plan.to_json();
    detail["cells"] = json!(planned.len());
    // With the host, how the next open knows the plan run was left by a dead process.
    results::owner::Owner::this_process().write_runner(&mut detail);
    detail["runner_host"] = json!(results::store::hostname());
    store.create_group("plan", command_line, &detail)
}

/// Stores the plan's cells under the plan run, in run order (cells already stored, on
/// a resume, are kept as they are).
fn store_cells(store: &Store, group: GroupId, planned: &[Planned]) -> Result<(), StoreError> {
    let new_cells: Vec<NewPlanCell> = planned
        .iter()
        .enumerate()
        .map(|(i, p)| NewPlanCell {
            seq: i as i64,
            key: p.cell.key.clone(),
            axes: p.cell.axes_json(),
            argv: p.cell.command.argv(),
            profile: p.cell.profile.clone(),
        })
        .collect();
    store.add_plan_cells(group, &new_cells)
}

/// The stored cells not yet complete, in run order, each with the index of its planned
/// cell (same key).
fn cells_to_run<'a>(
    planned: &[Planned],
    stored: &'a [PlanCell],
) -> Result<Vec<(usize, &'a PlanCell)>, PlanRunError> {
    let by_key: BTreeMap<&str, usize> = planned
        .iter()
        .enumerate()
        .map(|(i, p)| (p.cell.key.as_str(), i))
        .collect();
    stored
        .iter()
        .filter(|c| c.status != Some(RunStatus::Complete))
        .map(|c| {
            let i = by_key
                .get(c.key.as_str())
                .copied()
                .ok_or_else(|| PlanRunError::NotInPlan(c.key.clone()))?;
            Ok((i, c))
        })
        .collect()
}

/// The binary of every profile the cells to run use, before any cell runs, so a build
/// that fails fails first (`quiet`: cargo's output is not shown). On a failure the plan
/// run is closed failed (the error returned); [`Binaries::Stopped`] when Ctrl-C stopped
/// a build: the plan run is closed interrupted, kept for a resume.
fn build_binaries(
    ctx: &Context,
    group: &Group<'_>,
    to_run: &[(usize, &PlanCell)],
    quiet: bool,
    observer: &mut dyn PlanObserver,
) -> Result<Binaries, PlanRunError> {
    let mut binaries: BTreeMap<String, PathBuf> = BTreeMap::new();
    for (_, c) in to_run {
        if !binaries.contains_key(&c.profile) {
            let b = match binary_for(&c.profile, quiet, observer) {
                Ok(b) => b,
                Err(_) if ctx.stopped() => {
                    group.close(RunStatus::Interrupted)?;
                    return Ok(Binaries::Stopped {
                        profile: c.profile.clone(),
                    });
                }
                Err(e) => {
                    group.close(RunStatus::Failed)?;
                    return Err(e);
                }
            };
            binaries.insert(c.profile.clone(), b);
        }
    }
    Ok(Binaries::Ready(binaries))
}

/// How the cells went: the ones that failed, and what stopped the plan run, if anything
/// did (a server that did not start, a cell that could not be run).
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Cells that ran and failed (an interrupted cell is not counted: its server went
    /// away, or the plan run was stopped).
    pub failed: usize,
    /// Why the plan run could not go on.
    pub plan_error: Option<String>,
}

/// Runs the cells in order, each on its private server when it needs one, until all ran,
/// Ctrl-C stopped the plan, or the plan run cannot go on. Each cell's process writes to
/// the database at `db_path`; `checker` says whether the probe takes `--quiet`.
#[allow(clippy::too_many_arguments)]
fn run_cells(
    ctx: &Context,
    db_path: &Path,
    store: &Store,
    plan: &Plan,
    group: GroupId,
    planned: &[Planned],
    to_run: &[(usize, &PlanCell)],
    binaries: &BTreeMap<String, PathBuf>,
    checker: &dyn CellChecker,
    progress: &mut dyn PlanObserver,
) -> Tally {
    let quiet_flag = checker.takes_quiet(&plan.probe);
    let mut server = PlanServer::default();
    let mut tally = Tally {
        failed: 0,
        plan_error: None,
    };
    for (index, cell) in to_run {
        engine::phase::reached(engine::phase::Phase::PlanCell);
        if ctx.stopped() {
            break;
        }
        let server_name = match server.serve(planned[*index].server, progress) {
            Ok(name) => name,
            Err(e) => {
                tally.plan_error = Some(e);
                break;
            }
        };
        // The cell on the plan's server instead of one of its own, with no status line.
        let mut command = planned[*index].cell.command.clone();
        if let Some(name) = server_name {
            command = command.on_server(name);
        }
        if quiet_flag {
            command = command.quiet();
        }
        progress.cell_running(&cell.key, None);
        let outcome = match run_cell(
            ctx,
            db_path,
            store,
            group,
            cell,
            &binaries[&cell.profile],
            &command,
            progress,
        ) {
            Ok(o) => o,
            Err(e) => {
                let e = chain(&e);
                let _ = store.finish_plan_cell(cell.id, RunStatus::Failed, Some(&e));
                tally.plan_error = Some(format!("running cell {}: {e}", cell.key));
                break;
            }
        };
        match outcome.status {
            RunStatus::Complete => progress.cell_ended(outcome.took, true),
            RunStatus::Interrupted if ctx.stopped() => progress.cell_ended(outcome.took, false),
            s => {
                // A cell whose server went away is interrupted, not failed.
                tally.failed += usize::from(s != RunStatus::Interrupted);
                progress.cell_ended(outcome.took, true);
                progress.note(&format!(
                    "audiolat run: cell {} {s}: {} ({})",
                    cell.key,
                    outcome.error.as_deref().unwrap_or("no reason given"),
                    plan.location(&planned[*index].cell)
                ));
            }
        }
    }
    server.stop();
    tally
}

/// A plan run, closed: its status and its cells.
#[derive(Debug, Clone)]
pub struct Closed {
    /// As every group's ([`plan_status`]): complete when every cell is; failed when the
    /// plan run could not go on; else interrupted when stopped, or a cell was not run or
    /// was interrupted; else failed.
    pub status: RunStatus,
    /// Its cells.
    pub cells: usize,
    /// Its cells stored complete.
    pub complete: usize,
}

/// Closes the plan run `group` with its status, as its cells and `tally` say.
fn close(store: &Store, group: &Group<'_>, tally: &Tally) -> Result<Closed, PlanRunError> {
    let cells = store.plan_cells(group.id())?;
    let complete = cells
        .iter()
        .filter(|c| c.status == Some(RunStatus::Complete))
        .count();
    let statuses: Vec<_> = cells.iter().map(|c| c.status).collect();
    let status = plan_status(&statuses, tally.plan_error.is_some());
    // Closing writes may use the reserve a full disk leaves (see Store::closing).
    group.close(status)?;
    Ok(Closed {
        status,
        cells: cells.len(),
        complete,
    })
}

/// A plan run's status from its cells' (`None`: not run), as every group's
/// ([`crate::group::status`]): complete when every cell is; failed when the plan run
/// could not go on (`plan_error`); else interrupted when a cell was not run (a stop kept
/// it from running) or was interrupted (stopped, or its server went away); else failed.
/// A stop after the last cell ran stopped nothing.
fn plan_status(cells: &[Option<RunStatus>], plan_error: bool) -> RunStatus {
    if cells.iter().all(|c| *c == Some(RunStatus::Complete)) {
        return RunStatus::Complete;
    }
    let mut end = crate::group::GroupEnd {
        stopped_by_error: plan_error,
        interrupted: false,
        run_failed: false,
    };
    for cell in cells {
        match cell {
            None | Some(RunStatus::Interrupted) => end.interrupted = true,
            Some(RunStatus::Complete) => {}
            // Failed, or left running by a cell's process that is gone.
            Some(_) => end.run_failed = true,
        }
    }
    crate::group::status(end)
}

/// An error and its causes, as one line (`error: cause: cause`).
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
