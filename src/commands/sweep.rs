//! What the sweeps and the other groups of runs (suite, experiment) share on the
//! binary's side: a sweep's refusals in the words of the flags, a group opened (closed
//! on every path by `runner::group::Group`) and a warning when it cannot be closed, and
//! the exit code of a group. The sweep itself is `runner::sweep`.

use crate::cli::{SweepRequest, UsageError};
use crate::context::Context;
use crate::process::{EXIT_FAILED, EXIT_INTERRUPTED};
use crate::run_errors::run_error;
use crate::stdio;
use anyhow::Result;
use results::{RunStatus, Store};
use runner::group::Group;
use runner::sweep::{CellRefusal, Sweep, SweepCell, SweepOutcome, SweepRefused};
use runner::RunError;
use serde_json::Value;
use std::process::ExitCode;

/// Opens a sweep's first set-up (`runner::sweep::Sweep::open`) and checks its cells on
/// its stream (`Sweep::check_cells`), then the store: a refusal is a usage error, before
/// the database is opened.
pub(crate) fn open_sweep<'r, C: SweepCell>(
    ctx: &Context,
    req: &'r SweepRequest<C>,
) -> Result<(Sweep<'r>, Store)> {
    let sweep = Sweep::open(&req.spec, req.periods.clone())
        .and_then(|s| s.check_cells(&req.cells).map(|()| s))
        .map(|s| {
            s.worded_by(crate::audio::audio_message)
                .refusals_worded_by(refusal_message)
        })
        .map_err(|e| match e {
            SweepRefused::Setup(e) => UsageError(crate::audio::audio_message(&e)),
            SweepRefused::Cell(e) => UsageError(refusal_message(&e)),
            SweepRefused::ExternalServer { server } => UsageError(format!(
                "--period with several values needs a private server (each period is a new jackd -d dummy), but `{server}` is an external server: use --server dummy, or one --period"
            )),
            other => UsageError(other.to_string()),
        })?;
    Ok((sweep, ctx.open_store()?))
}

/// A cell's refusal of a stream (`runner::sweep::SweepCell::check`) in the words of the
/// flags that set it.
fn refusal_message(e: &CellRefusal) -> String {
    if let Some(e) = e.downcast_ref::<probes::roundtrip::RoundtripError>() {
        return e.message(crate::cli::roundtrip_flag);
    }
    if let Some(e) = e.downcast_ref::<probes::event::EventError>() {
        return crate::cli::event_message(e);
    }
    e.to_string()
}

/// Opens a group of `kind` in `store` for this command line: closed `failed` if it is
/// dropped before [`close_group`] (an error mid-group).
pub(crate) fn open_group<'s>(
    ctx: &Context,
    store: &'s Store,
    kind: &str,
    detail: &Value,
) -> Result<Group<'s>> {
    // The store's own error, for the exit code of a database that refuses it.
    let id = store.create_group(kind, &ctx.command_line, detail)?;
    Ok(Group::adopt(store, id))
}

/// What a sweep returned: its error, or its outcome (with a warning when its group
/// could not be closed).
pub(crate) fn swept<R>(
    store: &Store,
    group: &Group<'_>,
    out: Result<SweepOutcome<R>, RunError>,
) -> Result<SweepOutcome<R>> {
    let out = out.map_err(run_error)?;
    if let Some(e) = &out.group_not_closed {
        warn_not_closed(store, group.id(), e);
    }
    Ok(out)
}

/// Closes a group after its runs, with the reserve a full disk leaves for closing writes;
/// when even that fails, says so and goes on to print what was measured (the next
/// audiolat command closes the group).
pub(crate) fn close_group(store: &Store, group: &Group<'_>, status: RunStatus) {
    if let Err(e) = group.close(status) {
        warn_not_closed(store, group.id(), &e);
    }
}

fn warn_not_closed(store: &Store, group: results::GroupId, e: &dyn std::fmt::Display) {
    stdio::say(format_args!(
        "audiolat: warning: group {group} could not be closed in {} ({e}); the next audiolat command closes it",
        store.path().display()
    ));
}

pub(crate) fn sweep_exit(
    ctx: &Context,
    failure: Option<String>,
    status: RunStatus,
) -> Result<ExitCode> {
    if let Some(f) = failure {
        stdio::say(format_args!("audiolat: error: {f}"));
        return Ok(ExitCode::from(EXIT_FAILED));
    }
    Ok(status_exit(ctx, status))
}

/// The exit code of a run or a group that ended with `status`: 130 when a signal
/// interrupted it, 1 when it failed or was interrupted otherwise (its audio server went
/// away: a run or a plan's cell stored `interrupted`).
pub(crate) fn status_exit(ctx: &Context, status: RunStatus) -> ExitCode {
    match status {
        RunStatus::Complete => ExitCode::SUCCESS,
        RunStatus::Interrupted if ctx.stopped() => ExitCode::from(EXIT_INTERRUPTED),
        _ => ExitCode::from(EXIT_FAILED),
    }
}
