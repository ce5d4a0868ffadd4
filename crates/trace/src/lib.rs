//! # trace: why a deadline was missed, from the kernel's own trace
//!
//! A [`Session`] records kernel tracepoints while a probe measures: scheduler
//! switches and wake-ups, hard IRQs, softirqs, interrupt vectors, idle exits, page
//! faults, the task clock (for the host's steal), in a tracefs instance of audiolat's
//! own (`instances/audiolat-PID`, trace clock CLOCK_MONOTONIC), on the CPUs the
//! audio threads run on. A thread of its own, never a real-time one, reads the
//! per-CPU binary ring buffers (`per_cpu/cpuN/trace_pipe_raw`), decodes them with the
//! formats the kernel publishes (through `tracepoint_decode`), and keeps only a
//! bounded window of recent events per CPU. A probe hands each [`Miss`] (when its
//! thread should have run, when it ran or finished, its TID) through a wait-free ring
//! that a real-time thread may push to ([`MissSender::send`] allocates nothing,
//! takes no lock and makes no system call); the session breaks each one down
//! ([`explain`]) into IRQs, softirqs, other threads, the thread's own time, time
//! blocked, idle exit, steal and an `unaccounted` rest that add up to the lateness.
//!
//! ```no_run
//! use trace::{Miss, MissKind, Session, SessionConfig};
//! let session = Session::start(SessionConfig::default()).expect("tracefs");
//! let mut misses = session.sender(); // moved to the measuring thread
//! // on the measuring thread, for a wake-up 2 ms late:
//! misses.send(Miss { t_ns: 1_000, end_ns: 2_001_000, tid: 1234, kind: MissKind::Wakeup });
//! let why = session.finish();
//! for m in &why.misses {
//!     println!("{} ns late: {:?}", m.miss.late_ns(), m.causes[0]);
//! }
//! ```
//!
//! This crate depends on no other audiolat crate: probes start a session and store
//! what it found as `results` records.
#![deny(missing_docs)]

pub mod attribute;
pub mod event;
pub mod page;
pub mod session;
pub mod state;
pub mod tracefs;

pub use attribute::{explain, Cause, CauseKind, Explained, Miss, MissKind};
pub use session::{check, Culprit, MissSender, Session, SessionConfig, TopCulprit, Why};
pub use tracefs::Unavailable;
