//! The standard streams, written so that nothing panics: what a command prints on
//! standard output ([`print`]) fails as an error (exit 1, one line on stderr); messages
//! on stderr ([`say`]) are lost, not fatal, when stderr cannot be written; a progress
//! line ([`progress`]) whose pipe closed or whose terminal hung up stops the run as
//! Ctrl-C does (what was measured is kept as `interrupted`). `print!` and `eprint!` are
//! denied in the binary (see `main.rs`): they panic when the stream fails.
//!
//! SIGPIPE stays ignored (Rust's own set-up), so a closed pipe is an `EPIPE` error here,
//! not a death in the middle of a run; children get SIGPIPE's default back when they are
//! started (`std::process::Command` resets it). A standard stream that was closed when
//! audiolat started (`>&-`) is `/dev/null` (Rust's start-up opens it there, so that no
//! file audiolat opens takes its descriptor and receives what is printed).

use std::fmt::Display;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// The stop flag a broken progress pipe raises: the one the signal handlers raise.
static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Printing on standard output failed: a full disk (`/dev/full`), a reader gone (a
/// broken pipe).
#[derive(Debug, thiserror::Error)]
#[error("cannot write to standard output: {0}")]
pub(crate) struct StdoutError(std::io::Error);

/// Makes a progress line that cannot be written (a closed pipe, a hung-up terminal)
/// raise `stop`, the flag the signal handlers raise.
pub(crate) fn stop_on_broken_progress(stop: Arc<AtomicBool>) {
    let _ = STOP.set(stop);
}

/// Refuses a standard output that is the results database `db` or another SQLite file
/// (`>> audiolat.db`): nothing is appended to one. The refusal's line.
pub(crate) fn check_stdout(db: &std::path::Path) -> Result<(), String> {
    use results::output::OutputError;
    let what = std::path::Path::new("/dev/stdout");
    match results::output::check_stream(&std::io::stdout(), what, db) {
        Err(OutputError::Database { part, .. }) => Err(format!(
            "standard output is {part} ({}), which audiolat never writes into; redirect it to another file",
            db.display()
        )),
        Err(OutputError::Sqlite { .. }) => Err(
            "standard output is an SQLite database, which audiolat never writes into; redirect it to another file".into(),
        ),
        _ => Ok(()),
    }
}

/// Writes `text` on standard output, flushed.
pub(crate) fn print(text: impl Display) -> Result<(), StdoutError> {
    let mut out = std::io::stdout().lock();
    write!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(StdoutError)
}

/// Writes `line` and a newline on stderr: an error, a warning or a note. A stderr that
/// cannot be written loses it (there is nowhere left to say so).
pub(crate) fn say(line: impl Display) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// Writes `text` (as it is: a redrawn line ends in no newline) on stderr while a run
/// goes on. A closed pipe or a hung-up terminal stops the run, as Ctrl-C does.
pub(crate) fn progress(text: impl Display) {
    let mut err = std::io::stderr().lock();
    let written = write!(err, "{text}").and_then(|()| err.flush());
    if let Err(e) = written {
        if matches!(e.raw_os_error(), Some(libc::EPIPE) | Some(libc::EIO)) {
            if let Some(stop) = STOP.get() {
                stop.store(true, Ordering::SeqCst);
            }
        }
    }
}

/// [`progress`] with a newline: a line said while a run goes on (its start, a case of an
/// experiment).
pub(crate) fn progress_line(line: impl Display) {
    progress(format_args!("{line}\n"));
}
