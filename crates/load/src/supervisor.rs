//! Supervision: the small supervisor that leads a load's process group and takes it
//! down when audiolat dies (even by SIGKILL), and the hurry switch of a second Ctrl-C.

use crate::SUPERVISOR_PARENT_ENV;
use std::io::Write as _;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn signal_set(signals: &[i32]) -> libc::sigset_t {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

pub(crate) static HURRY: AtomicBool = AtomicBool::new(false);

/// Makes every stop from now on skip the loads' grace period: their groups are killed
/// at once (a second Ctrl-C). Async-signal-safe: one atomic store.
pub fn hurry() {
    HURRY.store(true, Ordering::Relaxed);
}

/// Whether [`hurry`] was called.
pub fn hurried() -> bool {
    HURRY.load(Ordering::Relaxed)
}

/// Kills every other process of the calling process's group and reaps what it can,
/// repeating until the group is empty (a process may fork during a pass) or a second
/// has passed.
fn kill_rest_of_group() {
    // SAFETY: plain queries.
    let (me, pgid) = unsafe { (libc::getpid(), libc::getpgrp()) };
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let mut found = false;
        if let Ok(dir) = std::fs::read_dir("/proc") {
            for pid in dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()) {
                // SAFETY: plain query; signalling members of our own group.
                if pid != me && unsafe { libc::getpgid(pid) } == pgid {
                    let stat =
                        std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                    let zombie = stat
                        .rsplit(')')
                        .next()
                        .and_then(|s| s.split_whitespace().next())
                        == Some("Z");
                    if !zombie {
                        found = true;
                        // SAFETY: as above.
                        unsafe { libc::kill(pid, libc::SIGKILL) };
                    }
                }
            }
        }
        // As a subreaper, orphaned members are our children: reap them.
        // SAFETY: valid out pointer; WNOHANG never blocks.
        while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
        if !found || Instant::now() > deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// How the tool ended, to be passed on as the supervisor's own ending.
enum ToolEnd {
    Exit(i32),
    Signal(i32),
}

impl ToolEnd {
    fn from_status(status: i32) -> ToolEnd {
        if libc::WIFSIGNALED(status) {
            ToolEnd::Signal(libc::WTERMSIG(status))
        } else {
            ToolEnd::Exit(libc::WEXITSTATUS(status))
        }
    }

    /// Exit code for an exit; for a signal, dies of the same signal (so audiolat sees
    /// `signal N`, not an exit code that only looks like one).
    fn pass_on(self) -> i32 {
        match self {
            ToolEnd::Exit(code) => code,
            ToolEnd::Signal(sig) => {
                // SAFETY: restoring the default action and raising the signal on
                // ourselves; nothing runs after it for a fatal signal.
                unsafe {
                    libc::signal(sig, libc::SIG_DFL);
                    let set = signal_set(&[sig]);
                    libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
                    libc::raise(sig);
                }
                128 + sig
            }
        }
    }
}

/// Runs `program` as a load under supervision and returns the exit code to leave
/// with. Meant to be the whole of a short-lived process that audiolat starts as the
/// leader of a load's process group (`<exe> __supervise -- <program> <args>`):
///
/// - it asks the kernel for SIGTERM when audiolat dies (`PR_SET_PDEATHSIG`), and exits
///   at once if audiolat is already gone; it is a child subreaper, so workers the tool
///   leaves behind stay its children;
/// - on SIGTERM, SIGINT or SIGHUP it passes SIGTERM to the group, gives the tool two
///   seconds, then SIGKILLs every process left in the group, forked workers included;
/// - when the tool ends on its own, whatever it left in the group is killed too, and
///   the supervisor ends as the tool did (same exit code, or same signal).
pub fn supervise(program: &Path, args: &[String]) -> i32 {
    let watched = signal_set(&[libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGCHLD]);
    // SAFETY: blocking signals in this (single) thread so sigwaitinfo receives them;
    // plain prctls.
    unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, &watched, std::ptr::null_mut());
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
    }
    let expected: Option<i32> = std::env::var(SUPERVISOR_PARENT_ENV)
        .ok()
        .and_then(|v| v.parse().ok());
    // SAFETY: plain query.
    if expected.is_some_and(|p| p != unsafe { libc::getppid() }) {
        return 1; // audiolat died before the death signal was armed
    }
    let mut command = Command::new(program);
    command.args(args);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.pre_exec(|| {
            let all = signal_set(&[libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGCHLD]);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &all, std::ptr::null_mut());
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 0);
            Ok(())
        });
    }
    let child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "audiolat: cannot start {}: {e}",
                program.display()
            );
            return 127;
        }
    };
    let child_pid = child.id() as i32;
    let reap = || {
        let mut status = 0;
        // SAFETY: valid out pointer; WNOHANG never blocks.
        (unsafe { libc::waitpid(child_pid, &mut status, libc::WNOHANG) } == child_pid)
            .then(|| ToolEnd::from_status(status))
    };
    loop {
        // SAFETY: valid set; a null info pointer is allowed.
        let sig = unsafe { libc::sigwaitinfo(&watched, std::ptr::null_mut()) };
        if sig == libc::SIGCHLD {
            if let Some(end) = reap() {
                kill_rest_of_group();
                return end.pass_on();
            }
            // Another child (an orphaned worker) ended: reap it.
            // SAFETY: as above.
            while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
            if let Some(end) = reap() {
                kill_rest_of_group();
                return end.pass_on();
            }
            continue;
        }
        if sig < 0 {
            continue;
        }
        // Asked to stop, or audiolat died: the whole group goes.
        // SAFETY: signalling our own process group (we block SIGTERM ourselves).
        unsafe { libc::kill(0, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut end = None;
        while Instant::now() < deadline {
            if let Some(e) = reap() {
                end = Some(e);
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // SAFETY: the tool may still be there if it ignored SIGTERM.
        unsafe { libc::kill(child_pid, libc::SIGKILL) };
        kill_rest_of_group();
        let end = end.or_else(reap).unwrap_or(ToolEnd::Signal(libc::SIGKILL));
        // Stopped as asked: end the way the tool did.
        return end.pass_on();
    }
}
