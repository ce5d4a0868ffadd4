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
    check().map(|_| ()).map_err(|e| e.to_string())
}

/// Whether `--why` can trace here, tried for real (an instance made and removed;
/// tracefs mounted for it, and unmounted after, when it was not): the optional
/// tracepoints this kernel lacks (`snd_pcm:xrun`, `osnoise:*`), whose time a trace
/// leaves unaccounted, or why nothing can be traced.
///
/// One check at a time in a process: two at once would both mount tracefs, or one
/// would find it busy when it unmounts the mount it made, and leave it mounted.
pub fn check() -> Result<Vec<String>, Unavailable> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _only = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    trace::check()
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

/// An audio stream's misses, read from its cycle records off the audio thread (the
/// thread that drains the records calls [`CycleTap::see`]): a callback that started more
/// than `above_ns` after its cycle's checked start is a late wake-up; one that finished
/// after the cycle's period ended is an overrun (its own running time is part of it).
/// Cycles whose start is not known, or is the callback's own, are not judged.
pub struct CycleTap {
    sender: MissSender,
    top: trace::TopCulprit,
    above_ns: u64,
}

impl CycleTap {
    /// A tap sending to `session`, with the threshold of `config`.
    pub fn new(session: &Session, config: WhyConfig) -> CycleTap {
        CycleTap {
            sender: session.sender(),
            top: session.top(),
            above_ns: config.above_ns,
        }
    }

    /// The largest culprit so far, for a live line.
    pub fn culprit(&self) -> Option<results::LiveCulprit> {
        live_culprit(&self.top)
    }

    /// Judges one cycle of the audio thread `tid` (`None`: not known yet, nothing sent).
    pub fn see(&mut self, record: &engine::audio::CycleRecord, tid: Option<i32>) {
        let Some(tid) = tid else { return };
        if let Some(miss) = cycle_miss(record, tid, self.above_ns) {
            // A full ring is counted by the session (`misses_dropped`).
            self.sender.send(miss);
        }
    }
}

/// The largest culprit so far of a session, for a live line.
pub fn live_culprit(top: &trace::TopCulprit) -> Option<results::LiveCulprit> {
    top.get()
        .map(|(kind, name, ns_total, misses)| results::LiveCulprit {
            kind: kind.name().to_string(),
            name,
            ns_total,
            misses,
        })
}

/// The miss one cycle of thread `tid` makes, if any (see [`CycleTap`]).
pub fn cycle_miss(record: &engine::audio::CycleRecord, tid: i32, above_ns: u64) -> Option<Miss> {
    let c = &record.cycle;
    let start = c
        .checked
        .filter(|s| s.source != engine::audio::TimingSource::OwnCallback)?;
    let finished = c.callback_ns + record.dsp_ns;
    if finished as f64 > start.ns as f64 + start.period_ns {
        return Some(Miss {
            t_ns: start.ns,
            end_ns: finished,
            tid,
            kind: MissKind::Overrun,
        });
    }
    (c.callback_ns.saturating_sub(start.ns) > above_ns).then_some(Miss {
        t_ns: start.ns,
        end_ns: c.callback_ns,
        tid,
        kind: MissKind::Wakeup,
    })
}

/// An audio server's driver thread on this machine, found in `/proc`: the running
/// `jackd`'s (or `jackdbus`'s) or PipeWire's thread with the highest real-time priority
/// (JACK's driver thread, PipeWire's `data-loop.0`), or, none being real-time, the one
/// that switched most often (it wakes every period). `(role, tid)`.
pub fn server_threads() -> Vec<(String, i32)> {
    /// Audio servers' process names (`comm`), and the role of their driver thread.
    const SERVER_PROCESSES: [(&str, &str); 3] = [
        ("jackd", "jackd driver"),
        ("jackdbus", "jackd driver"),
        ("pipewire", "pipewire data loop"),
    ];
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let Some((_, role)) = SERVER_PROCESSES.iter().find(|(c, _)| *c == comm.trim()) else {
            continue;
        };
        if let Some(tid) = driver_thread(pid) {
            found.push((format!("{role} (pid {pid})"), tid));
        }
    }
    found
}

/// The thread of process `pid` most likely to drive its audio: see [`server_threads`].
fn driver_thread(pid: i32) -> Option<i32> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut best: Option<((i64, u64), i32)> = None;
    for t in tasks.flatten() {
        let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let stat =
            std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).unwrap_or_default();
        // Fields after the `(comm)`: rt_priority is field 40, the 38th after it.
        let rt_priority = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(37))
            .and_then(|s| s.parse::<i64>().ok())
            .unwrap_or(0);
        let switches = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status"))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        let key = (rt_priority, switches);
        if best.is_none_or(|(k, _)| key > k) {
            best = Some((key, tid));
        }
    }
    best.map(|(_, tid)| tid)
}
