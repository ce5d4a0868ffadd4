//! The body of a built-in load's process (`audiolat __load KIND`): the EP benchmark or
//! the video players, run until stopped, each thread in its deadline share when it has
//! one. This is a whole process's work: a share the kernel refuses ends the process.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64};

use crate::DeadlineShare;

/// Why a built-in load cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkerError {
    /// A load kind with no built-in worker.
    #[error("unknown built-in load '{0}': ep or video")]
    Unknown(String),
    /// Threads outside [`THREADS_RANGE`](crate::spec::THREADS_RANGE).
    #[error("{0} is out of range: use {min} to {max} threads", min = crate::spec::THREADS_RANGE.start(), max = crate::spec::THREADS_RANGE.end())]
    Threads(usize),
}

/// Refuses a load kind with no built-in worker, or threads outside
/// [`THREADS_RANGE`](crate::spec::THREADS_RANGE), before anything runs.
pub fn check(kind: &str, threads: usize) -> Result<(), WorkerError> {
    if !matches!(kind, "ep" | "video") {
        return Err(WorkerError::Unknown(kind.to_string()));
    }
    if !crate::spec::THREADS_RANGE.contains(&threads) {
        return Err(WorkerError::Threads(threads));
    }
    Ok(())
}

/// Runs the built-in load `kind` (`ep` or `video`) on `threads` threads until `stop`.
///
/// In a deadline cell each thread takes its reservation `share` as it starts (a
/// deadline task may not create threads), and video players in a time-triggered share
/// pace by yielding to their period instead of a timer. The kernel's admission refusing
/// a share means audiolat's own admission was wrong: the process then ends with status
/// 3 and the kernel's reason on stderr rather than run outside its cell.
pub fn run(
    kind: &str,
    threads: usize,
    share: Option<DeadlineShare>,
    stop: &AtomicBool,
) -> Result<(), WorkerError> {
    check(kind, threads)?;
    let thread_start = || {
        if let Some(share) = share {
            take_share(kind, &share);
        }
    };
    match kind {
        "ep" => {
            let passes = AtomicU64::new(0);
            let failures = AtomicU64::new(0);
            crate::ep::run_until(threads, stop, &passes, &failures, &thread_start);
            Ok(())
        }
        "video" => {
            let frames = AtomicU64::new(0);
            let pace = if share.is_some_and(|d| d.time_triggered) {
                crate::video::Pace::YieldToPeriod
            } else {
                crate::video::Pace::Timer
            };
            crate::video::run_until(threads, stop, &frames, pace, &thread_start);
            Ok(())
        }
        other => Err(WorkerError::Unknown(other.to_string())),
    }
}

/// Puts the calling thread under SCHED_DEADLINE with `share`, or ends the process
/// (status 3) with the kernel's reason.
fn take_share(kind: &str, share: &DeadlineShare) {
    let policy = engine::rt::Policy::Deadline {
        runtime_ns: share.runtime_ns,
        deadline_ns: share.deadline_ns,
        period_ns: share.period_ns,
    };
    let grant = engine::rt::ThreadRt::apply(&policy, None, 0);
    if !grant.sched.is_exact() {
        let _ = writeln!(
            std::io::stderr(),
            "audiolat: {kind} load thread: SCHED_DEADLINE {}: {}",
            share.to_arg(),
            grant
                .sched
                .refusal
                .unwrap_or_else(|| format!("got {}", grant.sched.granted))
        );
        std::process::exit(3);
    }
}
