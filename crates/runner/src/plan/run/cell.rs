//! Running one cell: its process, its log, and what it stored.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command as Process, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use results::{GroupId, PlanCell, RunStatus, Store, StoreError};

use super::{PlanObserver, PlanRunError};
use crate::plan::{CellCommand, PlanCellRef};
use crate::Context;

/// What happened to one cell.
pub(super) struct CellOutcome {
    pub(super) status: RunStatus,
    pub(super) error: Option<String>,
    /// How long its process ran (`None`: it did not start).
    pub(super) took: Option<Duration>,
}

/// Runs one cell's process to its end (SIGINT to it when the plan is stopped), writing
/// to the database at `db_path`.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_cell(
    ctx: &Context,
    db_path: &Path,
    store: &Store,
    group: GroupId,
    stored: &PlanCell,
    binary: &Path,
    command: &CellCommand,
    progress: &mut dyn PlanObserver,
) -> Result<CellOutcome, PlanRunError> {
    store.start_plan_cell(stored.id)?;
    let log = CellLog(engine::temp::dir().join(format!(
        "{}-group-{group}-cell-{}.log",
        engine::temp::name("plan"),
        stored.id
    )));
    let log_file = results::output::create_new(&log.0, db_path).map_err(PlanRunError::CellLog)?;
    let mut child = match cell_process(db_path, group, stored, binary, command, log_file).spawn() {
        Ok(c) => c,
        Err(e) => {
            let error = format!("cannot start {}: {e}", binary.display());
            store.closing(|| store.finish_plan_cell(stored.id, RunStatus::Failed, Some(&error)))?;
            return Ok(CellOutcome {
                status: RunStatus::Failed,
                error: Some(error),
                took: None,
            });
        }
    };
    let started = Instant::now();
    let (exit, signalled) = wait_for(ctx, &mut child, &stored.key, started, progress)?;
    let stderr = std::fs::read_to_string(&log.0).unwrap_or_default();
    drop(log);
    let mut outcome = outcome_of(store, group, stored, exit, signalled, &stderr)?;
    store
        .closing(|| store.finish_plan_cell(stored.id, outcome.status, outcome.error.as_deref()))?;
    outcome.took = Some(started.elapsed());
    Ok(outcome)
}

/// A cell's stderr, kept in a temporary file (named for [`engine::temp`]) until its
/// last line is read, and removed on every path (an error returned too).
struct CellLog(std::path::PathBuf);

impl Drop for CellLog {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The cell's process, not yet started: the binary with the cell's command, filed under
/// the cell (by the environment variable [`PlanCellRef::ENV`]), its stderr to `log`, in its own
/// process group, told to stop if the runner dies.
fn cell_process(
    db_path: &Path,
    group: GroupId,
    stored: &PlanCell,
    binary: &Path,
    command: &CellCommand,
    log: std::fs::File,
) -> Process {
    let mut cmd = Process::new(binary);
    let cell = PlanCellRef {
        group,
        cell: stored.id,
    };
    cmd.args(command.process_args(db_path))
        .env(PlanCellRef::ENV, cell.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        // Its own process group: a terminal's Ctrl-C reaches the runner only, which
        // passes a SIGINT on (and a second one when the runner got two, to hasten the
        // cell's stop; the cell keeps what it measured either way).
        .process_group(0);
    // If the runner dies, the cell is told to stop.
    // SAFETY: only async-signal-safe calls (prctl, getppid) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
            if libc::getppid() == 1 {
                return Err(std::io::Error::other("the plan runner already exited"));
            }
            Ok(())
        });
    }
    cmd
}

/// Waits for the cell's process to end, passing a stop of the plan on to it as SIGINT
/// (a second one when the runner was hurried), and telling `progress` every second that
/// it still runs. Returns how it exited and whether it was signalled.
fn wait_for(
    ctx: &Context,
    child: &mut std::process::Child,
    key: &str,
    started: Instant,
    progress: &mut dyn PlanObserver,
) -> Result<(ExitStatus, bool), std::io::Error> {
    let mut signalled = false;
    let mut hurried = false;
    let mut last_shown = Instant::now();
    let exit = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if ctx.stopped() && !signalled {
            // SAFETY: signalling our own child by its pid.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            signalled = true;
        }
        if signalled && !hurried && load::hurried() {
            // SAFETY: as above.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            hurried = true;
        }
        // Told every second (a terminal's progress line is redrawn so).
        if last_shown.elapsed() >= Duration::from_secs(1) {
            progress.cell_running(key, Some(started.elapsed()));
            last_shown = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Ok((exit, signalled))
}

/// What the cell came to: the status of the run its process stored (a run it left
/// open is closed, interrupted when the plan was stopped, else failed), or, with no
/// run, failed (interrupted when signalled) with the last error line of its stderr.
fn outcome_of(
    store: &Store,
    group: GroupId,
    stored: &PlanCell,
    exit: ExitStatus,
    signalled: bool,
    stderr: &str,
) -> Result<CellOutcome, StoreError> {
    let cell = store
        .plan_cells(group)?
        .into_iter()
        .find(|c| c.id == stored.id)
        .expect("the cell is stored");
    // The run this attempt made (a new attempt starts with none).
    let run = match cell.run_id {
        Some(id) => Some(store.run(id)?),
        None => None,
    };
    let last_error = stderr
        .lines()
        .rev()
        .find(|l| l.contains("error"))
        .or_else(|| stderr.lines().rev().find(|l| !l.trim().is_empty()))
        .map(|l| l.trim().to_string());
    let outcome = match run {
        Some(r) if r.status == RunStatus::Running => {
            // The process ended without closing its run: stopped (we signalled it) or
            // it crashed. What the run stored is kept.
            let (status, why) = if signalled {
                (
                    RunStatus::Interrupted,
                    format!("the plan was stopped and the cell's process ended ({exit})"),
                )
            } else {
                (
                    RunStatus::Failed,
                    format!(
                        "the cell's process ended ({exit}) without closing its run{}",
                        last_error
                            .as_ref()
                            .map(|e| format!(": {e}"))
                            .unwrap_or_default()
                    ),
                )
            };
            store.closing(|| store.close_abandoned_run(r.id, status, &why))?;
            CellOutcome {
                status,
                error: Some(why),
                took: None,
            }
        }
        Some(r) => CellOutcome {
            status: r.status,
            // A run that failed a gate is measured and stored all the same.
            error: r.error.or(
                if exit.success() || exit.code() == Some(crate::gates::EXIT_FAILED_GATE) {
                    None
                } else {
                    last_error
                },
            ),
            took: None,
        },
        None => CellOutcome {
            status: if signalled {
                RunStatus::Interrupted
            } else {
                RunStatus::Failed
            },
            error: Some(
                last_error
                    .unwrap_or_else(|| format!("the cell's process ended ({exit}) without a run")),
            ),
            took: None,
        },
    };
    Ok(outcome)
}
