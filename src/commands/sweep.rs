//! What the event and round-trip sweeps share on the binary's side: a sweep's refusals
//! in the words of the flags, its group closed (and a warning when it cannot be), and
//! the exit code of a sweep. The sweep itself is `runner::sweep`.

use crate::cli::UsageError;
use crate::process::{EXIT_FAILED, EXIT_INTERRUPTED};
use crate::runner::run_error;
use ::runner::sweep::{Group, Sweep, SweepOutcome, SweepRefused};
use ::runner::RunError;
use anyhow::Result;
use results::{RunStatus, SinkError, Store};
use std::process::ExitCode;

/// Opens a sweep's first set-up (`runner::sweep::Sweep::open`); a refusal is a usage
/// error, before the database is opened.
pub(crate) fn open_sweep(
    spec: &engine::backend::BackendSpec,
    periods: Vec<Option<u32>>,
) -> Result<Sweep<'_>> {
    Sweep::open(spec, periods)
        .map(|s| s.worded_by(crate::audio::audio_message))
        .map_err(|e| {
        match e {
            SweepRefused::Setup(e) => UsageError(crate::audio::audio_message(&e)),
            SweepRefused::ExternalServer { server } => UsageError(format!(
                "--period with several values needs a private server (each period is a new jackd -d dummy), but `{server}` is an external server: use --server dummy, or one --period"
            )),
            other => UsageError(other.to_string()),
        }
        .into()
    })
}

/// Runs a sweep `plan` filed under `group` of `store`, which it closes with the reserve
/// a full disk leaves for closing writes; when even that fails, says so and goes on (the
/// next audiolat command closes the group).
pub(crate) fn run_sweep<R>(
    store: &Store,
    group: i64,
    plan: impl FnOnce(&Group<'_>) -> Result<SweepOutcome<R>, RunError>,
) -> Result<SweepOutcome<R>> {
    let close = |status| {
        store
            .closing(|| store.finish_group(group, status))
            .map_err(SinkError::from)
    };
    let out = plan(&Group {
        id: group,
        close: &close,
    })
    .map_err(run_error)?;
    if let Some(e) = &out.group_not_closed {
        warn_not_closed(store, group, e);
    }
    Ok(out)
}

/// Closes a group after its runs, with the reserve a full disk leaves for closing writes;
/// when even that fails, says so and goes on to print what was measured (the next
/// audiolat command closes the group).
pub(crate) fn finish_group(store: &Store, group: i64, status: RunStatus) {
    if let Err(e) = store.closing(|| store.finish_group(group, status)) {
        warn_not_closed(store, group, &e);
    }
}

fn warn_not_closed(store: &Store, group: i64, e: &dyn std::fmt::Display) {
    eprintln!(
        "audiolat: warning: group {group} could not be closed in {} ({e}); the next audiolat command closes it",
        store.path().display()
    );
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
