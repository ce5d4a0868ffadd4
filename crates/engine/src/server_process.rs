//! A private audio server's processes, started, watched and stopped one way for JACK
//! (`jackd`) and PipeWire (the session bus, the daemon and WirePlumber).
//!
//! Each process runs in its server's own process group (a new one, led by the first
//! process started), marked as audiolat's ([`PRIVATE_SERVER_ENV`]), told to end when
//! audiolat dies (`PR_SET_PDEATHSIG`), and never started once audiolat has gone; the last
//! 40 lines it prints are kept for the error that says why it did not start; it is reaped
//! once, and how it ended is kept. A stop signals first and waits a grace before it
//! kills, and leaves a process unreaped until then, so that its pid (and its group's) stay
//! ours while they are signalled.
//!
//! A leaf: `jack` and `pipewire` start their servers through it; it uses neither.

use std::collections::VecDeque;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::servers::{process_running, PRIVATE_SERVER_ENV};

/// The last lines a private server's process printed, newest last.
pub(crate) type OutputTail = Arc<Mutex<VecDeque<String>>>;

/// Lines of a process's output kept.
const KEPT_LINES: usize = 40;

/// One process of a private server.
pub(crate) struct ServerProcess {
    child: Child,
    /// How it ended, once reaped.
    status: Option<String>,
    output: OutputTail,
    /// The threads reading its output, until its streams end.
    readers: Vec<JoinHandle<()>>,
}

impl ServerProcess {
    /// Starts `cmd` in process group `group` (`None`: a new group, which it leads), its
    /// standard input closed and its output kept (read by threads named `thread`). Fails
    /// when the program cannot be started, or audiolat's parent process is gone by the
    /// time it would run.
    pub(crate) fn spawn(
        cmd: &mut Command,
        group: Option<libc::pid_t>,
        thread: &str,
    ) -> std::io::Result<ServerProcess> {
        cmd.env(PRIVATE_SERVER_ENV, std::process::id().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let group = group.unwrap_or(0);
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: only async-signal-safe calls (setpgid, prctl, getppid, errno) between
        // fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setpgid(0, group) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
                // Reparented already (to init or a subreaper): the parent is gone.
                if libc::getppid() != parent {
                    return Err(std::io::Error::other("parent already exited"));
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn()?;
        match keep_output_tail(&mut child, thread) {
            Ok((output, readers)) => Ok(ServerProcess {
                child,
                status: None,
                output,
                readers,
            }),
            Err(e) => {
                // Nobody holds it yet: stopped here, so nothing is left behind.
                let _ = child.kill();
                let _ = child.wait();
                Err(e)
            }
        }
    }

    /// Its pid (its group's, when it leads it).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// How it ended, reaping it if it has; `None` while it runs.
    pub(crate) fn status(&mut self) -> Option<&str> {
        if self.status.is_none() {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.status = Some(describe_status(status));
            }
        }
        self.status.as_deref()
    }

    /// Whether it has been reaped.
    pub(crate) fn reaped(&self) -> bool {
        self.status.is_some()
    }

    /// Waits until it no longer runs (it may be left a zombie), at most `grace`; whether
    /// it ended.
    pub(crate) fn ends_within(&self, grace: Duration) -> bool {
        if self.status.is_some() {
            return true;
        }
        let pid = self.child.id() as libc::pid_t;
        let deadline = Instant::now() + grace;
        while process_running(pid) {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    /// SIGTERM to it, then up to `grace` for it to end (left unreaped, so that its pid,
    /// and its group's when it leads it, stays ours).
    pub(crate) fn terminate(&mut self, grace: Duration) {
        if self.status.is_some() {
            return;
        }
        // SAFETY: signalling our own child, not yet reaped (its pid cannot be reused).
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        self.ends_within(grace);
    }

    /// Waits for it to end and reaps it (once).
    pub(crate) fn reap(&mut self) {
        if self.status.is_none() {
            if let Ok(status) = self.child.wait() {
                self.status = Some(describe_status(status));
            }
        }
    }

    /// Waits (at most `within`) until its output's readers reached the end of its
    /// streams, so its last lines are in its tail.
    pub(crate) fn await_output(&self, within: Duration) {
        let deadline = Instant::now() + within;
        while !self.readers.iter().all(|r| r.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The last four non-empty lines it printed that `keep` accepts (trimmed), joined
    /// with " | "; "(nothing)" when there are none.
    pub(crate) fn output_tail(&self, keep: impl Fn(&str) -> bool) -> String {
        let lines = self.output.lock().map(|o| o.clone()).unwrap_or_default();
        let useful: Vec<&str> = lines
            .iter()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty() && keep(l))
            .collect();
        let tail = &useful[useful.len().saturating_sub(4)..];
        if tail.is_empty() {
            "(nothing)".into()
        } else {
            tail.join(" | ")
        }
    }
}

/// Sends `signal` to every process of the group `group` (one a [`ServerProcess`] leads);
/// a group already gone is no error.
pub(crate) fn signal_group(group: libc::pid_t, signal: libc::c_int) {
    if group > 0 {
        // SAFETY: signalling a process group audiolat created; ESRCH when it is gone.
        unsafe { libc::kill(-group, signal) };
    }
}

/// Keeps the last [`KEPT_LINES`] lines `child` prints (stdout and stderr), read by a thread
/// per stream (named `thread`); the readers' handles are returned (a reader ends at its
/// stream's end).
fn keep_output_tail(
    child: &mut Child,
    thread: &str,
) -> std::io::Result<(OutputTail, Vec<JoinHandle<()>>)> {
    use std::io::{BufRead, BufReader, Read};
    let output: OutputTail = OutputTail::default();
    let streams = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ];
    let mut readers = Vec::new();
    for stream in streams.into_iter().flatten() {
        let output = output.clone();
        readers.push(
            std::thread::Builder::new()
                .name(thread.into())
                .spawn(move || {
                    for line in BufReader::new(stream).lines().map_while(Result::ok) {
                        if let Ok(mut o) = output.lock() {
                            if o.len() == KEPT_LINES {
                                o.pop_front();
                            }
                            o.push_back(line);
                        }
                    }
                })?,
        );
    }
    Ok((output, readers))
}

/// How a process ended, in words (`exit status 3`, `signal 9`).
pub(crate) fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(sig)) => format!("signal {sig}"),
        _ => "an unknown status".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process started in its own group prints, is stopped by the group's signal, and is
    /// reaped once with how it ended; its output's tail keeps its last lines.
    #[test]
    fn a_process_is_started_in_its_group_watched_and_stopped() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo one; echo two >&2; echo; exec sleep 30"]);
        let mut p = ServerProcess::spawn(&mut cmd, None, "test-output").unwrap();
        let group = p.pid() as libc::pid_t;
        // SAFETY: getpgid has no preconditions.
        assert_eq!(unsafe { libc::getpgid(group) }, group, "it leads its group");
        assert_eq!(p.status(), None);
        let deadline = Instant::now() + Duration::from_secs(10);
        while p.output_tail(|_| true).matches(" | ").count() < 1 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let tail = p.output_tail(|_| true);
        assert!(tail.contains("one") && tail.contains("two"), "{tail}");
        assert_eq!(p.output_tail(|l| l != "one"), "two");
        signal_group(group, libc::SIGTERM);
        assert!(p.ends_within(Duration::from_secs(10)));
        assert!(!p.reaped(), "left a zombie until reaped");
        p.reap();
        assert_eq!(p.status(), Some("signal 15"));
        p.await_output(Duration::from_secs(1));
    }

    #[test]
    fn a_missing_program_is_an_error_and_leaves_nothing() {
        let mut cmd = Command::new("/nonexistent/audiolat-no-such-server");
        assert!(ServerProcess::spawn(&mut cmd, None, "x").is_err());
    }
}
