//! What the attribution tests share: clocks and sleeps to absolute deadlines, threads
//! pinned with the policy a test asks, a spinning thread that records when it held
//! its CPU (the truth a test compares the trace with), and the plain wake-up probe.
#![allow(dead_code)] // each test binary uses its own part of this

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use trace::{Miss, MissKind, MissSender};

/// CLOCK_MONOTONIC, ns: the trace's clock.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The calling thread's CPU time, ns (its task clock, as `sched_stat_runtime` counts).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps to the absolute CLOCK_MONOTONIC time `t_ns`.
pub fn sleep_until(t_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (t_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (t_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: a valid timespec; EINTR just wakes early.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
}

/// The calling thread's id.
pub fn tid() -> i32 {
    // SAFETY: no preconditions.
    unsafe { libc::gettid() }
}

/// The CPU the tests measure on: the second, when there is one (the first takes the
/// machine's housekeeping).
pub fn probe_cpu() -> usize {
    1.min(std::thread::available_parallelism().unwrap().get() - 1)
}

/// The CPU for a test's other side (a lock's holder, a sender): the first, which is
/// [`probe_cpu`] itself on a machine of one CPU.
pub fn other_cpu() -> usize {
    0
}

/// A scheduling policy for a test's thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// SCHED_FIFO at this priority (needs root).
    Fifo(i32),
    /// SCHED_OTHER, nice 0: what a probe refused real-time priority runs as.
    Other,
    /// SCHED_OTHER at this nice (a negative one needs root).
    Nice(i32),
}

/// Pins the calling thread to `cpu` and gives it `policy`.
pub fn pin(cpu: usize, policy: Policy) {
    // SAFETY: plain structs for the current thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set),
            0
        );
        let (kind, priority) = match policy {
            Policy::Fifo(p) => (libc::SCHED_FIFO, p),
            Policy::Other | Policy::Nice(_) => (libc::SCHED_OTHER, 0),
        };
        let p = libc::sched_param {
            sched_priority: priority,
        };
        assert_eq!(
            libc::sched_setscheduler(0, kind, &p),
            0,
            "sched_setscheduler({policy:?}) needs root"
        );
        if let Policy::Nice(nice) = policy {
            assert_eq!(
                libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, nice),
                0,
                "setpriority({nice}) needs root"
            );
        }
    }
}

/// A gap in a spinning thread's clock longer than this is time it did not hold its
/// CPU (preempted, a long interrupt, the host's steal); shorter ones are the clock's.
pub const GAP_NS: u64 = 5_000;

/// How a [`Spinner`] spins.
#[derive(Debug, Clone)]
pub struct SpinConfig {
    /// Its thread's name (what the trace must name).
    pub name: &'static str,
    /// The CPU it is pinned to.
    pub cpu: usize,
    /// Its policy.
    pub policy: Policy,
    /// Each spin's length, wall-clock ns (`u64::MAX`: spins until stopped).
    pub spin_ns: u64,
    /// From one spin's start to the next, ns.
    pub every_ns: u64,
}

/// What a spinning thread saw of itself.
#[derive(Debug, Clone, Default)]
pub struct Spins {
    /// Each spin: its start and end, CLOCK_MONOTONIC ns.
    pub spins: Vec<(u64, u64)>,
    /// The stretches it held its CPU in (its clock advancing with no gap over
    /// [`GAP_NS`]): the truth of its running time.
    pub runs: Vec<(u64, u64)>,
}

impl Spins {
    /// Its running time inside `[a, b)`, ns.
    pub fn ran_within(&self, a: u64, b: u64) -> u64 {
        self.runs
            .iter()
            .map(|&(s, e)| e.min(b).saturating_sub(s.max(a)))
            .sum()
    }

    /// The spin that overlaps `[a, b)`, if any: its time inside it, ns.
    pub fn spin_within(&self, a: u64, b: u64) -> Option<u64> {
        self.spins
            .iter()
            .map(|&(s, e)| e.min(b).saturating_sub(s.max(a)))
            .find(|&o| o > 0)
    }
}

/// A named thread that spins on a CPU at known moments and records when it ran.
pub struct Spinner {
    stop: Arc<AtomicBool>,
    tid: Arc<AtomicI32>,
    handle: JoinHandle<Spins>,
}

impl Spinner {
    /// Starts it; it spins first 20 ms from now.
    pub fn start(config: SpinConfig) -> Spinner {
        let stop = Arc::new(AtomicBool::new(false));
        let tid_cell = Arc::new(AtomicI32::new(0));
        let handle = {
            let (stop, tid_cell) = (Arc::clone(&stop), Arc::clone(&tid_cell));
            std::thread::Builder::new()
                .name(config.name.into())
                .spawn(move || {
                    pin(config.cpu, config.policy);
                    tid_cell.store(tid(), Ordering::Release);
                    let mut seen = Spins {
                        spins: Vec::with_capacity(4096),
                        runs: Vec::with_capacity(1 << 16),
                    };
                    let mut next = now_ns() + 20_000_000;
                    while !stop.load(Ordering::Relaxed) {
                        sleep_until(next);
                        let start = now_ns();
                        let (mut run_start, mut last) = (start, start);
                        while last < start.saturating_add(config.spin_ns)
                            && !stop.load(Ordering::Relaxed)
                        {
                            let now = now_ns();
                            if now - last > GAP_NS {
                                seen.runs.push((run_start, last));
                                run_start = now;
                            }
                            last = now;
                        }
                        seen.runs.push((run_start, last));
                        seen.spins.push((start, last));
                        next += config.every_ns;
                    }
                    seen
                })
                .unwrap()
        };
        Spinner {
            stop,
            tid: tid_cell,
            handle,
        }
    }

    /// Its thread id, once it has started.
    pub fn tid(&self) -> i32 {
        loop {
            let t = self.tid.load(Ordering::Acquire);
            if t != 0 {
                return t;
            }
            std::thread::yield_now();
        }
    }

    /// Stops it and returns what it saw.
    pub fn stop(self) -> Spins {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap()
    }
}

/// A probe that sleeps to absolute deadlines every `period_ns` on `cpu` and hands
/// every wake-up later than `above_ns` to the session, until stopped.
pub struct WakeupProbe {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<Miss>>,
}

impl WakeupProbe {
    /// Starts its thread, named `why-probe`.
    pub fn start(
        cpu: usize,
        policy: Policy,
        period_ns: u64,
        above_ns: u64,
        mut sender: MissSender,
    ) -> WakeupProbe {
        let stop = Arc::new(AtomicBool::new(false));
        let handle = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("why-probe".into())
                .spawn(move || -> Vec<Miss> {
                    pin(cpu, policy);
                    let me = tid();
                    let mut misses = Vec::with_capacity(1 << 14);
                    let mut deadline = now_ns() + 10_000_000;
                    while !stop.load(Ordering::Relaxed) {
                        sleep_until(deadline);
                        let woke = now_ns();
                        if woke - deadline > above_ns {
                            let m = Miss {
                                t_ns: deadline,
                                end_ns: woke,
                                tid: me,
                                kind: MissKind::Wakeup,
                            };
                            sender.send(m);
                            misses.push(m);
                        }
                        while deadline <= now_ns() {
                            deadline += period_ns;
                        }
                    }
                    misses
                })
                .unwrap()
        };
        WakeupProbe { stop, handle }
    }

    /// Stops it and returns the misses it sent.
    pub fn stop(self) -> Vec<Miss> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap()
    }
}

/// The median of `values` (0 for none).
pub fn median(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or(0)
}

/// Whether `measured` is within 10 % (or 50 µs) of `expected`.
pub fn close(measured: u64, expected: u64) -> bool {
    measured.abs_diff(expected) <= (expected / 10).max(50_000)
}

/// Shared so tests in one binary do not run over each other (each session is the
/// process's own tracefs instance, and they all load the same CPU).
pub static EXCLUSIVE: Mutex<()> = Mutex::new(());

/// Takes [`EXCLUSIVE`] (a failed test before does not poison the rest).
pub fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    EXCLUSIVE.lock().unwrap_or_else(|p| p.into_inner())
}
