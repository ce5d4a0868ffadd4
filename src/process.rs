//! The process's edges: exit codes, clap's errors on one line, a database that cannot
//! be used, the signal handlers (a stop flag, never an exit), the command line as typed.

use clap::error::ErrorKind;
use results::{Remedy, StoreError};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub(crate) const EXIT_FAILED: u8 = 1;

pub(crate) const EXIT_USAGE: u8 = 2;

pub(crate) const EXIT_GATES: u8 = 3;

pub(crate) const EXIT_INTERRUPTED: u8 = 130;

/// clap's errors, on one line with the way out; help and version as clap prints them.
pub(crate) fn clap_error(e: clap::Error) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::from(EXIT_USAGE)
        }
        _ => {
            let rendered = e.render().to_string();
            let first = clap_line(&e);
            let tip = rendered
                .lines()
                .find_map(|l| l.trim().strip_prefix("tip: "))
                .map(|t| format!(" ({t})"))
                .unwrap_or_default();
            let cli = <crate::cli::Cli as clap::CommandFactory>::command();
            let sub = std::env::args()
                .skip(1)
                .find(|a| {
                    cli.get_subcommands()
                        .any(|c| !c.is_hide_set() && c.get_name() == a)
                })
                .map(|s| format!(" {s}"))
                .unwrap_or_default();
            eprintln!("audiolat: error: {first}{tip}; see 'audiolat{sub} --help'");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// clap's error on one line: its first paragraph (clap continues lists on indented
/// lines), without clap's `error: `.
pub(crate) fn clap_line(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let first = rendered
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    first.trim_start_matches("error: ").to_string()
}

/// Why the database cannot be used, with the fix, when a store error found after the
/// open says so (a damaged page a query found, a disk full before any run was made): the
/// same line as the open's own refusal.
pub(crate) fn database_unusable(e: &anyhow::Error) -> Option<String> {
    let store = e.chain().find_map(|c| c.downcast_ref::<StoreError>())?;
    if store.is_damaged() {
        Some(format!(
            "it is damaged (a corrupt page or a truncated file); {}",
            remedy_text(&Remedy::RestoreOrNewFile)
        ))
    } else if store.is_disk_full() {
        // A run that filled the disk closes itself with the reason (see runner's
        // Closing); reaching here, nothing was measured yet (a run or group being made).
        Some(format!(
            "its filesystem is full; {}",
            remedy_text(&Remedy::FreeSpace)
        ))
    } else {
        None
    }
}

/// An error and its causes on one line, as anyhow's `{:#}` says them, with the results
/// store's refusals in [`store_message`]'s words.
pub(crate) fn error_text(e: &anyhow::Error) -> String {
    e.chain()
        .map(|c| match c.downcast_ref::<StoreError>() {
            Some(store) => store_message(store),
            None => c.to_string(),
        })
        .collect::<Vec<_>>()
        .join(": ")
}

/// A results store error in the words of `--db`, the flag that chose the database.
pub(crate) fn store_message(e: &StoreError) -> String {
    match e {
        StoreError::Open { path, reason, fix } => format!(
            "cannot use results database {}: {reason}; {}",
            path.display(),
            remedy_text(fix)
        ),
        StoreError::Missing(path) => format!(
            "no results database at {}: run a probe first (e.g. `audiolat jitter`) or point --db at one",
            path.display()
        ),
        other => other.to_string(),
    }
}

/// What to do about a database that cannot be used, with the `--db` that picks another.
pub(crate) fn remedy_text(fix: &Remedy) -> String {
    match fix {
        Remedy::ResultsOrNewFile { not_ours } => format!(
            "pass --db with an audiolat results database or a new file name{}",
            if *not_ours {
                " (audiolat never changes a database it did not make)"
            } else {
                ""
            }
        ),
        Remedy::NewFile => "pass --db with a new file name".into(),
        Remedy::RestoreOrNewFile => "restore it from a backup (`sqlite3 FILE .recover` may save its runs), or pass --db with a new file name".into(),
        Remedy::FreeSpace => "free space there, or pass --db with a path on another filesystem".into(),
        Remedy::WaitForWriter => "wait for it to finish (another audiolat?), or pass --db with another file".into(),
        Remedy::FixPermissions { writing } => format!(
            "fix their permissions, run as their owner, or pass --db with a path you can {}",
            if *writing { "write" } else { "read" }
        ),
        Remedy::RunAsOwner => "run as the user who owns it, fix its permissions, or pass --db with another file".into(),
        Remedy::WritableFile => "pass --db with a path you can write, or fix its permissions".into(),
        Remedy::FilePath { directory: true } => "give a file path, e.g. --db ./audiolat.db".into(),
        Remedy::FilePath { directory: false } => "give a path to a file, e.g. --db ./audiolat.db".into(),
        Remedy::ExistingDirectory => "create it or pass --db with a path in an existing directory".into(),
        Remedy::LocalFilesystem => "pass --db with a path on a local filesystem".into(),
        Remedy::RecordFirst => "record a run into it first (e.g. `audiolat jitter --db FILE`), or point --db at a results database".into(),
        Remedy::UpgradeByRecording { first } => format!(
            "a command that records runs into it upgrades it{} (e.g. `audiolat jitter -D 1 --db FILE`)",
            if *first { " first" } else { "" }
        ),
        Remedy::ReachServer => "check that the server runs and that --db (or AUDIOLAT_DB) names a database this user may create tables in: postgres://USER@HOST[:PORT]/DBNAME".into(),
    }
}

/// A SIGINT/SIGTERM raises the stop flag: the run ends at its next check, what it
/// measured is printed and stored `interrupted`, loads are stopped, the machine is
/// restored, and the exit code is 130. A second signal only hastens that ([`load::hurry`]:
/// loads are killed without their grace period); no signal exits the process at once,
/// so none can cut short the storing of results or the undoing of system state.
/// SIGKILL stays the user's last resort, and the next run recovers from it.
pub(crate) fn install_signal_handlers() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let flag = Arc::clone(&stop);
        // SAFETY: the action is async-signal-safe: atomic operations only.
        let _ = unsafe {
            signal_hook::low_level::register(sig, move || {
                if flag.swap(true, std::sync::atomic::Ordering::SeqCst) {
                    load::hurry();
                }
            })
        };
    }
    stop
}

pub(crate) fn command_line() -> String {
    std::env::args()
        .enumerate()
        .map(|(i, a)| {
            if i == 0 {
                "audiolat".to_string()
            } else {
                // A store URL's password is not stored with the runs.
                load::shell_quote(&results::store::redacted(&a))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_refusal_is_worded_with_db() {
        let open = StoreError::Open {
            path: "/tmp/x".into(),
            reason: "it is a directory".into(),
            fix: Remedy::FilePath { directory: true },
        };
        assert_eq!(
            store_message(&open),
            "cannot use results database /tmp/x: it is a directory; give a file path, e.g. --db ./audiolat.db"
        );
        assert!(!open.to_string().contains("--"), "{open}");
        let missing = StoreError::Missing("a.db".into());
        assert!(store_message(&missing).ends_with("or point --db at one"));
        assert_eq!(
            remedy_text(&Remedy::UpgradeByRecording { first: true }),
            "a command that records runs into it upgrades it first (e.g. `audiolat jitter -D 1 --db FILE`)"
        );
        let e = anyhow::Error::new(missing).context("reading");
        assert_eq!(
            error_text(&e),
            "reading: no results database at a.db: run a probe first (e.g. `audiolat jitter`) or point --db at one"
        );
    }
}
