//! `--why` for the probes: a trace session started around a measurement (or the one
//! line saying why the kernel cannot be traced here), and what it found as the run's
//! [`WhyRecord`].

use results::records::why::{CauseRecord, CulpritRecord, MissRecord, ThreadRecord, WhyRecord};
pub use trace::{Miss, MissKind, MissSender, Session, Unavailable};

/// Causes asked for: what counts as a miss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WhyConfig {
    /// Wake-ups later than this are explained, ns (a probe with deadlines of its own,
    /// such as the fragment model's under-runs, explains those instead when this is 0).
    pub above_ns: u64,
}

/// The default threshold: wake-ups later than 100 µs.
pub const DEFAULT_ABOVE_NS: u64 = 100_000;

/// Whether `--why` can trace here: `Err` says what is missing, in one line.
pub fn available() -> Result<(), String> {
    trace::check().map(|_| ()).map_err(|e| e.to_string())
}

/// A session on `cpus` (all when `None`), or why there is none.
pub fn start(cpus: Option<&[usize]>) -> Result<Session, Unavailable> {
    Session::start(trace::SessionConfig {
        cpus: cpus.map(<[usize]>::to_vec),
        ..trace::SessionConfig::default()
    })
}

/// What a run's trace found, or why there was none: the run's `why`.
#[derive(Debug, Clone, PartialEq)]
pub enum WhyOutcome {
    /// The trace ran.
    Traced(trace::Why),
    /// The kernel could not be traced: what is missing, in one line.
    Unavailable(String),
}

impl WhyOutcome {
    /// The session's end, or the reason it never began.
    pub fn of(session: Result<Session, Unavailable>) -> WhyOutcome {
        match session {
            Ok(s) => WhyOutcome::Traced(s.finish()),
            Err(e) => WhyOutcome::Unavailable(e.to_string()),
        }
    }

    /// The record stored as `result.why`.
    pub fn record(&self, above_ns: Option<u64>) -> WhyRecord {
        match self {
            WhyOutcome::Unavailable(why) => WhyRecord {
                unavailable: Some(why.clone()),
                above_ns,
                ..WhyRecord::default()
            },
            WhyOutcome::Traced(w) => WhyRecord {
                unavailable: None,
                above_ns,
                misses: w.misses.iter().map(miss_record).collect(),
                misses_explained: w.misses_explained,
                misses_dropped: w.misses_dropped,
                culprits: w
                    .culprits
                    .iter()
                    .map(|c| CulpritRecord {
                        kind: c.kind.name().to_string(),
                        name: c.name.clone(),
                        ns_total: c.ns_total,
                        misses: c.misses,
                    })
                    .collect(),
                events_lost: w.events_lost,
                events_read: w.events_read,
                missing_events: w.missing.clone(),
                cpus: w.cpus.iter().map(|&c| c as u64).collect(),
                threads: w
                    .threads
                    .iter()
                    .map(|(role, tid)| ThreadRecord {
                        role: role.clone(),
                        tid: i64::from(*tid),
                    })
                    .collect(),
            },
        }
    }
}

fn miss_record(m: &trace::Explained) -> MissRecord {
    MissRecord {
        t_ns: m.miss.t_ns,
        late_ns: m.miss.late_ns(),
        kind_of_miss: m.miss.kind.name().to_string(),
        tid: Some(i64::from(m.miss.tid)),
        causes: m
            .causes
            .iter()
            .map(|c| CauseRecord {
                kind: c.kind.name().to_string(),
                name: c.name.clone(),
                pid: c.pid.map(i64::from),
                cpu: c.cpu.map(u64::from),
                ns: c.ns,
                number: c.number,
                policy: c.policy.clone(),
                priority: c.priority.map(i64::from),
                at_wakeup: c.at_wakeup,
                state: c.state.clone(),
            })
            .collect(),
        events_lost: m.events_lost,
        window_short: m.window_short,
        page_faults: u64::from(m.page_faults),
    }
}

/// The calling thread's id.
pub fn gettid() -> i32 {
    // SAFETY: no preconditions.
    unsafe { libc::gettid() }
}
