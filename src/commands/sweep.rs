//! What the event and round-trip sweeps share: the server a sweep's periods run on, the
//! group's status and the exit code of a sweep.

use crate::cli::UsageError;
use crate::process::{EXIT_FAILED, EXIT_INTERRUPTED};
use crate::runner::Context;
use anyhow::Result;
use results::{RunStatus, Store};
use std::process::ExitCode;

/// Several periods need private servers (each period is a new `jackd -d dummy`).
pub(crate) fn check_sweep_server(
    first: &engine::backend::Setup,
    periods: &[Option<u32>],
) -> Result<()> {
    if let Some(server) = first.server() {
        if periods.len() > 1 && !server.info().private {
            return Err(UsageError(format!(
                "--period with several values needs a private server (each period is a new jackd -d dummy), but `{}` is an external server: use --server dummy, or one --period",
                server.name()
            ))
            .into());
        }
    }
    Ok(())
}

/// Closes a group after its runs, with the reserve a full disk leaves for closing writes;
/// when even that fails, says so and goes on to print what was measured (the next
/// audiolat command closes the group).
pub(crate) fn finish_group(store: &Store, group: i64, status: RunStatus) {
    if let Err(e) = store.closing(|| store.finish_group(group, status)) {
        eprintln!(
            "audiolat: warning: group {group} could not be closed in {} ({e}); the next audiolat command closes it",
            store.path().display()
        );
    }
}

/// A sweep's status from its runs.
pub(crate) fn sweep_status(
    ctx: &Context,
    failure: &Option<String>,
    statuses: impl Iterator<Item = RunStatus>,
) -> RunStatus {
    let statuses: Vec<RunStatus> = statuses.collect();
    if failure.is_some() {
        RunStatus::Failed
    } else if ctx.stopped() || statuses.contains(&RunStatus::Interrupted) {
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    }
}

pub(crate) fn sweep_exit(failure: Option<String>, status: RunStatus) -> Result<ExitCode> {
    if let Some(f) = failure {
        eprintln!("audiolat: error: {f}");
        return Ok(ExitCode::from(EXIT_FAILED));
    }
    Ok(match status {
        RunStatus::Interrupted => ExitCode::from(EXIT_INTERRUPTED),
        _ => ExitCode::SUCCESS,
    })
}
