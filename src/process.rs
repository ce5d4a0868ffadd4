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

/// A stop signal came before the command measured anything: nothing was stored (no
/// run, no group). Exit 130, in one line.
#[derive(Debug, thiserror::Error)]
#[error("interrupted before anything was measured: nothing was stored")]
pub(crate) struct NothingMeasured;

/// clap's errors, on one line with the way out; help and version as clap prints them
/// (exit 1 with one line when standard output cannot take them).
pub(crate) fn clap_error(e: clap::Error) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => match e.print() {
            Ok(()) => ExitCode::SUCCESS,
            Err(why) => {
                crate::stdio::say(format_args!(
                    "audiolat: error: cannot write to standard output: {why}"
                ));
                ExitCode::from(EXIT_FAILED)
            }
        },
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
            crate::stdio::say(format_args!(
                "audiolat: error: {first}{tip}; see 'audiolat{sub} --help'"
            ));
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
    } else if store.is_locked() {
        // A run's closing writes wait it out or keep the run elsewhere; reaching here,
        // nothing was measured yet (an open, a run or group being made) or it was read.
        Some(format!(
            "another process held it locked for longer than audiolat waits ({} s); {}",
            results::store::LOCK_WAIT.as_secs(),
            remedy_text(&Remedy::WaitForWriter)
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
        Remedy::PlainPath => "give --db a file's path, e.g. --db ./audiolat.db (a file really so named: --db ./NAME)".into(),
        Remedy::ReachServer => "check that the server runs and that --db (or AUDIOLAT_DB) names a database this user may create tables in: postgres://USER@HOST[:PORT]/DBNAME".into(),
    }
}

/// The signals that stop a run: Ctrl-C, `kill`, a terminal hung up (closed, an ssh
/// session dropped) and Ctrl-\.
pub(crate) const STOP_SIGNALS: [i32; 4] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
    signal_hook::consts::SIGQUIT,
];

/// A stop signal ([`STOP_SIGNALS`]) raises the stop flag: the run ends at its next
/// check, what it measured is printed (where there is still somewhere to print it) and
/// stored `interrupted`, loads are stopped, the machine is restored, and the exit code is
/// 130. A second signal only hastens that ([`load::hurry`]: loads are killed without
/// their grace period); no signal exits the process at once, so none can cut short the
/// storing of results or the undoing of system state. SIGKILL stays the user's last
/// resort, and the next run recovers from it.
pub(crate) fn install_signal_handlers() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in STOP_SIGNALS {
        let flag = Arc::clone(&stop);
        // SAFETY: the action is async-signal-safe: atomic operations, and for a hang-up
        // `quiet_hung_up_terminal`'s system calls.
        let _ = unsafe {
            signal_hook::low_level::register(sig, move || {
                if sig == signal_hook::consts::SIGHUP {
                    quiet_hung_up_terminal();
                }
                if flag.swap(true, std::sync::atomic::Ordering::SeqCst) {
                    load::hurry();
                }
            })
        };
    }
    stop
}

/// Points the standard streams that are on a terminal that hung up at `/dev/null`, as
/// `nohup` would have. The kernel hangs a terminal up (every write to it fails with
/// EIO from then on) before it sends the SIGHUP, so what a stopped run prints at its end
/// would fail for want of a terminal; now it goes nowhere, and the run ends as any
/// stopped run does. A SIGHUP sent by hand (`kill -HUP`) leaves a working terminal, a
/// file or a pipe as it is. Async-signal-safe: `ioctl`, `open`, `dup2` and `close` only
/// (signal-hook keeps `errno` as it was).
fn quiet_hung_up_terminal() {
    for fd in 0..=2 {
        let mut termios = std::mem::MaybeUninit::<libc::termios>::uninit();
        // SAFETY: TCGETS writes a termios into the buffer given, which is one.
        if unsafe { libc::ioctl(fd, libc::TCGETS, termios.as_mut_ptr()) } == 0 {
            continue; // a terminal that works
        }
        // A hung-up terminal answers EIO; anything else (ENOTTY, EBADF) is no terminal.
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EIO) {
            continue;
        }
        // SAFETY: opening a path given as a C string, and putting the new descriptor in
        // place of `fd`, which is open.
        unsafe {
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
            if null >= 0 && null != fd {
                libc::dup2(null, fd);
                libc::close(null);
            }
        }
    }
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
