//! The jitter probe: periodic wake-up latency, as latencytest (1999) and cyclictest
//! measure it, and latencytest's audio-fragment deadline model.
//!
//! A real-time thread wakes on absolute CLOCK_MONOTONIC deadlines
//! `start + k · period` and records, for every cycle, the wake-up latency
//! (`now − deadline`) and the interval since the previous wake-up, into fixed-bound
//! histograms. Three wake-up mechanisms are offered:
//!
//! - `nanosleep`: `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`, cyclictest's
//!   default. A cycle that ends after the next deadline skips the deadlines already past
//!   (counted as skipped), as cyclictest does.
//! - `timerfd`: a periodic `timerfd` armed on the absolute start time; `read` returns the
//!   expirations since the last read, and all but the first are counted as skipped.
//! - `signal`: a periodic POSIX timer delivering a real-time signal to this thread,
//!   received with `sigwaitinfo`; overruns come from `timer_getoverrun`. This is the
//!   modern form of latencytest's RTC + SIGIO.
//!
//! With `busy_percent`, every cycle also performs a calibrated amount of computation
//! ([`crate::busy`]). With a [`FragmentModel`] (N fragments of F frames at R Hz) the
//! period is F/R and the loop is latencytest's audio model: a cycle whose work ends later
//! than (N − 1) periods after its deadline would have under-run the sound card; it is
//! counted with its time, and the loop re-synchronises to the next period boundary as a
//! driver restarting after an xrun would. In this mode no deadline is skipped: a late
//! cycle makes the next ones late too, as it would a real buffer.
//!
//! The loop itself ([`JitterLoop::run`]) only reads the clock, does arithmetic and writes
//! to memory allocated beforehand: no allocation, lock, print or system call other than
//! the wake-up and the clock. A debug-build test proves it with `assert_no_alloc`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use engine::clock::monotonic_ns;
use engine::rt::{Policy, ProcessRt, ThreadRt};
use results::{Event, LatencyHistogram, Measurement, Series};
use serde_json::{json, Value};

use crate::busy::BusyWork;
use crate::steal::{StealSampler, StealTimeline};

/// How the thread is woken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeMode {
    /// clock_nanosleep(TIMER_ABSTIME).
    Nanosleep,
    /// A periodic timerfd.
    Timerfd,
    /// A periodic POSIX timer delivering a signal, received with sigwaitinfo.
    Signal,
}

impl WakeMode {
    /// Name on the command line.
    pub fn name(&self) -> &'static str {
        match self {
            WakeMode::Nanosleep => "nanosleep",
            WakeMode::Timerfd => "timerfd",
            WakeMode::Signal => "signal",
        }
    }

    /// How the wake-up is obtained, for the measurement's method.
    pub fn mechanism(&self) -> &'static str {
        match self {
            WakeMode::Nanosleep => "clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)",
            WakeMode::Timerfd => "periodic timerfd (CLOCK_MONOTONIC, absolute start), read()",
            WakeMode::Signal => {
                "periodic POSIX timer (CLOCK_MONOTONIC) signalling the thread (SIGEV_THREAD_ID), sigwaitinfo()"
            }
        }
    }
}

impl std::str::FromStr for WakeMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "nanosleep" => Ok(WakeMode::Nanosleep),
            "timerfd" => Ok(WakeMode::Timerfd),
            "signal" => Ok(WakeMode::Signal),
            other => Err(format!(
                "unknown wake-up mode '{other}': use nanosleep, timerfd or signal"
            )),
        }
    }
}

/// latencytest's audio model: `fragments` buffers of `frames` frames at `sample_rate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragmentModel {
    /// Fragments in the buffer (N ≥ 2).
    pub fragments: u32,
    /// Frames per fragment.
    pub frames: u32,
    /// Sample rate (Hz).
    pub sample_rate: u32,
}

impl FragmentModel {
    /// One fragment's duration, rounded to the nanosecond.
    pub fn period_ns(&self) -> u64 {
        ((self.frames as u128 * 1_000_000_000 + self.sample_rate as u128 / 2)
            / self.sample_rate as u128) as u64
    }

    /// Time a cycle may take after its deadline before the buffer runs dry:
    /// (N − 1) periods.
    pub fn headroom_ns(&self) -> u64 {
        (self.fragments as u64 - 1) * self.period_ns()
    }
}

/// How long to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunLength {
    /// For this long.
    Duration(Duration),
    /// For this many cycles.
    Loops(u64),
}

/// Everything the jitter probe needs to know.
#[derive(Debug, Clone, PartialEq)]
pub struct JitterConfig {
    /// Wake-up mechanism.
    pub mode: WakeMode,
    /// Period (ns). With a fragment model, the fragment's duration.
    pub period_ns: u64,
    /// latencytest's audio model, when asked for.
    pub fragments: Option<FragmentModel>,
    /// Share of each period spent computing (0..100).
    pub busy_percent: f64,
    /// Scheduling policy of the measuring thread.
    pub policy: Policy,
    /// CPUs to pin the measuring thread to.
    pub cpus: Option<Vec<usize>>,
    /// How long to run.
    pub length: RunLength,
    /// Histogram bound (ns); larger values are overflows.
    pub hist_bound_ns: u64,
    /// Lock memory (mlockall).
    pub lock_memory: bool,
    /// Hold /dev/cpu_dma_latency at 0 µs.
    pub dma_latency: bool,
    /// Length of one point of the latency-against-time series (ns).
    pub block_ns: u64,
    /// How often the run's histograms so far are offered for storing (ns).
    pub checkpoint_ns: u64,
}

/// Smallest period accepted (20 µs, 50 kHz).
pub const MIN_PERIOD_NS: u64 = 20_000;
/// Largest period accepted (10 s).
pub const MAX_PERIOD_NS: u64 = 10_000_000_000;
/// Overflows and under-runs kept with their cycle numbers (all are counted).
pub const MAX_RECORDS: usize = 4096;
/// Largest wake-ups kept with their cycle numbers.
pub const TOP_OUTLIERS: usize = 32;
/// Points kept in the latency-against-time series.
pub const MAX_BLOCKS: usize = 1_000_000;
/// How often host steal is sampled. Reading `/proc/stat` costs tens of microseconds of
/// kernel time that a non-preemptible kernel will not interrupt for a waking real-time
/// thread on the same CPU; at 20 Hz that costs under 0.1 % of cycles, while the
/// counters' own resolution is a 10 ms tick anyway.
pub const STEAL_SAMPLE_INTERVAL: Duration = Duration::from_millis(50);

/// Why a jitter run could not be made. Messages name the fix.
#[derive(Debug, thiserror::Error)]
pub enum JitterError {
    /// The configuration is impossible.
    #[error("{0}")]
    Invalid(String),
    /// A timer could not be set up.
    #[error("{what}: {source}")]
    Timer {
        /// What failed.
        what: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// The measuring thread panicked.
    #[error("the measuring thread panicked: {0}")]
    Panicked(String),
}

impl JitterConfig {
    /// A configuration with latencytest's defaults: 2048 Hz, nanosleep, SCHED_FIFO 80.
    pub fn new(period_ns: u64, length: RunLength) -> JitterConfig {
        JitterConfig {
            mode: WakeMode::Nanosleep,
            period_ns,
            fragments: None,
            busy_percent: 0.0,
            policy: Policy::Fifo { priority: 80 },
            cpus: None,
            length,
            hist_bound_ns: 100_000_000,
            lock_memory: true,
            dma_latency: true,
            block_ns: 100_000_000,
            checkpoint_ns: 5_000_000_000,
        }
    }

    /// Checks the configuration before anything is started.
    pub fn validate(&self) -> Result<(), JitterError> {
        let bad = |m: String| Err(JitterError::Invalid(m));
        if self.period_ns < MIN_PERIOD_NS || self.period_ns > MAX_PERIOD_NS {
            return bad(format!(
                "period {} ns is out of range: use a rate of 0.1..50000 Hz (an interval of 20us..10s)",
                self.period_ns
            ));
        }
        if !(0.0..100.0).contains(&self.busy_percent) {
            return bad(format!(
                "--busy {} is out of range: use 0 up to, not including, 100 (percent of each period)",
                self.busy_percent
            ));
        }
        if let Some(f) = &self.fragments {
            if f.fragments < 2 {
                return bad(format!(
                    "--fragments {} leaves no headroom: use 2 or more (latencytest used 3)",
                    f.fragments
                ));
            }
            if f.frames == 0 {
                return bad("--frames must be at least 1".into());
            }
            if !(1_000..=768_000).contains(&f.sample_rate) {
                return bad(format!(
                    "sample rate {} Hz is out of range: use 1000..768000",
                    f.sample_rate
                ));
            }
        }
        if self.hist_bound_ns < 1_000 || self.hist_bound_ns > 60_000_000_000 {
            return bad(format!(
                "histogram bound {} ns is out of range: use 1us..60s",
                self.hist_bound_ns
            ));
        }
        self.policy
            .validate()
            .map_err(|e| JitterError::Invalid(e.to_string()))?;
        if matches!(self.policy, Policy::Deadline { .. }) && self.cpus.is_some() {
            return bad(
                "SCHED_DEADLINE cannot be combined with --cpu: the kernel requires a deadline \
                 thread's affinity to span its whole root domain; drop --cpu"
                    .into(),
            );
        }
        if let Some(cpus) = &self.cpus {
            let online = engine::rt::online_cpus();
            if let Some(c) = cpus.iter().find(|c| !online.contains(c)) {
                return bad(format!(
                    "CPU {c} is not online (online CPUs: {}); pick one of those",
                    engine::rt::format_cpu_list(&online)
                ));
            }
            if cpus.is_empty() {
                return bad("--cpu needs at least one CPU".into());
            }
        }
        match self.length {
            RunLength::Duration(d) if d.is_zero() => bad("--duration must be positive".into()),
            RunLength::Loops(0) => bad("--loops must be positive".into()),
            _ => Ok(()),
        }
    }

    /// Cycles the run is planned for.
    pub fn planned_cycles(&self) -> u64 {
        match self.length {
            RunLength::Loops(n) => n,
            RunLength::Duration(d) => (d.as_nanos() as u64).div_ceil(self.period_ns),
        }
    }

    /// The configuration as stored with the run.
    pub fn to_json(&self) -> Value {
        json!({
            "mode": self.mode.name(),
            "period_ns": self.period_ns,
            "rate_hz": 1e9 / self.period_ns as f64,
            "fragments": self.fragments.map(|f| json!({
                "fragments": f.fragments, "frames": f.frames, "sample_rate": f.sample_rate,
                "period_ns": f.period_ns(), "headroom_ns": f.headroom_ns(),
            })),
            "busy_percent": self.busy_percent,
            "policy": self.policy.to_string(),
            "cpus": self.cpus.as_ref().map(|c| engine::rt::format_cpu_list(c)),
            "duration_s": match self.length { RunLength::Duration(d) => Some(d.as_secs_f64()), _ => None },
            "loops": match self.length { RunLength::Loops(n) => Some(n), _ => None },
            "histogram_bound_ns": self.hist_bound_ns,
            "lock_memory": self.lock_memory,
            "dma_latency": self.dma_latency,
        })
    }
}

/// One remarkable cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CycleRecord {
    /// Cycle number (0-based, counting processed cycles).
    pub cycle: u64,
    /// The cycle's intended deadline, CLOCK_MONOTONIC ns.
    pub deadline_ns: u64,
    /// The value: wake-up latency, or completion time for under-runs (ns).
    pub value_ns: u64,
    /// CPU the thread was on.
    pub cpu: u32,
}

/// Latency statistics of one block of cycles (a point of the latency-against-time
/// series).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Block {
    /// Deadline of the block's first cycle, relative to the start (ns).
    pub offset_ns: u64,
    /// Cycles in the block.
    pub cycles: u32,
    /// Smallest wake-up latency.
    pub min_ns: u64,
    /// Sum of wake-up latencies.
    pub sum_ns: u64,
    /// Largest wake-up latency.
    pub max_ns: u64,
    /// Largest completion time (fragment model), else 0.
    pub completion_max_ns: u64,
}

/// Counters the measuring thread publishes for a live status line.
#[derive(Debug, Default)]
pub struct Live {
    /// Cycles done.
    pub cycles: AtomicU64,
    /// Last wake-up latency (ns).
    pub last_ns: AtomicU64,
    /// Largest wake-up latency so far (ns).
    pub max_ns: AtomicU64,
    /// Overflows so far.
    pub overflows: AtomicU64,
    /// Would-be under-runs so far.
    pub underruns: AtomicU64,
    /// Deadlines skipped so far.
    pub skipped: AtomicU64,
}

/// A copy of [`Live`] at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LiveSnapshot {
    /// Cycles done.
    pub cycles: u64,
    /// Cycles planned.
    pub planned: u64,
    /// Last wake-up latency (ns).
    pub last_ns: u64,
    /// Largest wake-up latency so far (ns).
    pub max_ns: u64,
    /// Overflows so far.
    pub overflows: u64,
    /// Would-be under-runs so far.
    pub underruns: u64,
    /// Deadlines skipped so far.
    pub skipped: u64,
}

enum Waiter {
    Nanosleep,
    Timerfd {
        fd: i32,
    },
    Signal {
        timer: libc::timer_t,
        set: libc::sigset_t,
    },
}

fn timer_signal() -> i32 {
    libc::SIGRTMIN() + 1
}

fn itimerspec(start_ns: u64, period_ns: u64) -> libc::itimerspec {
    libc::itimerspec {
        it_interval: engine::clock::timespec_from_ns(period_ns),
        it_value: engine::clock::timespec_from_ns(start_ns),
    }
}

impl Waiter {
    fn new(mode: WakeMode) -> Result<Waiter, JitterError> {
        match mode {
            WakeMode::Nanosleep => Ok(Waiter::Nanosleep),
            WakeMode::Timerfd => {
                // SAFETY: plain syscall.
                let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
                if fd < 0 {
                    return Err(JitterError::Timer {
                        what: "timerfd_create",
                        source: std::io::Error::last_os_error(),
                    });
                }
                Ok(Waiter::Timerfd { fd })
            }
            WakeMode::Signal => {
                // SAFETY: sigset_t is plain data; the calls initialise and fill it.
                let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
                // SAFETY: valid set pointer; blocking the timer's signal in this thread
                // so that sigwaitinfo receives it instead of a handler.
                unsafe {
                    libc::sigemptyset(&mut set);
                    libc::sigaddset(&mut set, timer_signal());
                    libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
                }
                // SAFETY: sigevent is plain data.
                let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
                sev.sigev_notify = libc::SIGEV_THREAD_ID;
                sev.sigev_signo = timer_signal();
                // SAFETY: gettid has no preconditions.
                sev.sigev_notify_thread_id = unsafe { libc::gettid() };
                let mut timer: libc::timer_t = std::ptr::null_mut();
                // SAFETY: valid sigevent and out pointer.
                let rc = unsafe { libc::timer_create(libc::CLOCK_MONOTONIC, &mut sev, &mut timer) };
                if rc != 0 {
                    return Err(JitterError::Timer {
                        what: "timer_create",
                        source: std::io::Error::last_os_error(),
                    });
                }
                Ok(Waiter::Signal { timer, set })
            }
        }
    }

    /// Arms the periodic timer with its first expiry at `start_ns`.
    fn arm(&mut self, start_ns: u64, period_ns: u64) -> Result<(), JitterError> {
        let spec = itimerspec(start_ns, period_ns);
        match self {
            Waiter::Nanosleep => Ok(()),
            Waiter::Timerfd { fd } => {
                // SAFETY: valid fd and itimerspec.
                let rc = unsafe {
                    libc::timerfd_settime(*fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut())
                };
                if rc != 0 {
                    return Err(JitterError::Timer {
                        what: "timerfd_settime",
                        source: std::io::Error::last_os_error(),
                    });
                }
                Ok(())
            }
            Waiter::Signal { timer, set } => {
                // SAFETY: valid timer and itimerspec.
                let rc = unsafe {
                    libc::timer_settime(*timer, libc::TIMER_ABSTIME, &spec, std::ptr::null_mut())
                };
                if rc != 0 {
                    return Err(JitterError::Timer {
                        what: "timer_settime",
                        source: std::io::Error::last_os_error(),
                    });
                }
                // Discard a signal left pending by an earlier arming.
                let zero = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                // SAFETY: valid set and timeout; a null info pointer is allowed.
                while unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &zero) } > 0 {}
                Ok(())
            }
        }
    }

    /// Waits for the deadline; returns how many timer expirations were consumed (≥ 1),
    /// or `None` when [`wake_signal`] interrupted the wait.
    #[inline]
    fn wait(&mut self, deadline_ns: u64) -> Option<u64> {
        match self {
            Waiter::Nanosleep => {
                engine::clock::sleep_until_ns_interruptible(deadline_ns).then_some(1)
            }
            Waiter::Timerfd { fd } => {
                let mut expirations: u64 = 0;
                // SAFETY: reading 8 bytes into a u64 from a timerfd.
                let n = unsafe {
                    libc::read(
                        *fd,
                        (&mut expirations as *mut u64).cast(),
                        std::mem::size_of::<u64>(),
                    )
                };
                if n == 8 {
                    Some(expirations.max(1))
                } else {
                    // EINTR: the wake signal (a valid armed timerfd has no other error).
                    None
                }
            }
            Waiter::Signal { timer, set } => {
                // SAFETY: valid set; a null info pointer is allowed.
                let sig = unsafe { libc::sigwaitinfo(set, std::ptr::null_mut()) };
                if sig == timer_signal() {
                    // SAFETY: valid timer id.
                    let overrun = unsafe { libc::timer_getoverrun(*timer) }.max(0) as u64;
                    Some(1 + overrun)
                } else {
                    None
                }
            }
        }
    }
}

/// The signal a controlling thread sends to interrupt the measuring thread's wait when
/// the run is stopped, so that Ctrl-C takes effect at once even with a long period.
pub fn wake_signal() -> i32 {
    libc::SIGRTMIN() + 2
}

extern "C" fn on_wake_signal(_: libc::c_int) {}

/// Installs a do-nothing handler for [`wake_signal`] without SA_RESTART, so the signal
/// makes the measuring thread's sleep return EINTR.
fn install_wake_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: sigaction is plain data; the handler is async-signal-safe (it does
        // nothing).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_wake_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = 0;
            libc::sigaction(wake_signal(), &sa, std::ptr::null_mut());
        }
    });
}

impl Drop for Waiter {
    fn drop(&mut self) {
        match self {
            Waiter::Nanosleep => {}
            // SAFETY: closing our own fd.
            Waiter::Timerfd { fd } => unsafe {
                libc::close(*fd);
            },
            // SAFETY: deleting our own timer.
            Waiter::Signal { timer, .. } => unsafe {
                libc::timer_delete(*timer);
            },
        }
    }
}

/// The histograms of one stretch of a run. The measuring thread fills one set while the
/// controlling thread merges the sets it was handed into the run's totals and stores
/// them as a checkpoint, so a run is written as it goes (HdrHistogram's interval
/// recorder pattern, over pre-sized lock-free rings).
#[derive(Debug, Clone)]
pub struct IntervalHistograms {
    /// Wake-up latency.
    pub latency: LatencyHistogram,
    /// Interval between wake-ups.
    pub interval: LatencyHistogram,
    /// Completion time (fragment model).
    pub completion: Option<LatencyHistogram>,
    /// Cycles in the interval.
    pub cycles: u64,
    /// Deadlines skipped in the interval.
    pub skipped: u64,
    /// Would-be under-runs in the interval.
    pub underruns: u64,
}

impl IntervalHistograms {
    /// Empty histograms sized for `config`. Allocates.
    pub fn new(config: &JitterConfig) -> Result<IntervalHistograms, JitterError> {
        let hist =
            |b: u64| LatencyHistogram::new(b).map_err(|e| JitterError::Invalid(e.to_string()));
        let wide = config.hist_bound_ns + config.period_ns;
        Ok(IntervalHistograms {
            latency: hist(config.hist_bound_ns)?,
            interval: hist(wide)?,
            completion: match config.fragments {
                Some(_) => Some(hist(wide)?),
                None => None,
            },
            cycles: 0,
            skipped: 0,
            underruns: 0,
        })
    }

    /// Adds another set's samples to this one.
    pub fn add(&mut self, other: &IntervalHistograms) {
        self.latency.add(&other.latency);
        self.interval.add(&other.interval);
        if let (Some(a), Some(b)) = (&mut self.completion, &other.completion) {
            a.add(b);
        }
        self.cycles += other.cycles;
        self.skipped += other.skipped;
        self.underruns += other.underruns;
    }

    /// Empties every histogram, keeping its memory.
    pub fn reset(&mut self) {
        self.latency.reset();
        self.interval.reset();
        if let Some(c) = &mut self.completion {
            c.reset();
        }
        self.cycles = 0;
        self.skipped = 0;
        self.underruns = 0;
    }
}

/// Sets of interval histograms in circulation between the two threads: one being
/// filled, the rest empty or waiting to be merged. The rings hold them all, so a hand-off
/// never fails and never allocates.
const HANDOFF_POOL: usize = 4;

/// The measuring thread's ends of the hand-off rings.
pub struct Handoff {
    /// Empty sets, from the controlling thread.
    pub spare: rtrb::Consumer<IntervalHistograms>,
    /// Filled sets, to the controlling thread.
    pub full: rtrb::Producer<IntervalHistograms>,
    /// Cycles per interval.
    pub cycles_per_interval: u64,
}

/// The measuring loop with everything it writes to, allocated beforehand.
pub struct JitterLoop {
    mode: WakeMode,
    period_ns: u64,
    fragments: Option<FragmentModel>,
    waiter: Waiter,
    busy: Option<BusyWork>,
    busy_iterations: u64,
    current: IntervalHistograms,
    handoff: Option<Handoff>,
    cycles_in_interval: u64,
    /// (cycles, skipped, under-runs) when the current interval began.
    interval_mark: (u64, u64, u64),
    overflows: Vec<CycleRecord>,
    underruns: Vec<CycleRecord>,
    underrun_count: u64,
    outliers: [CycleRecord; TOP_OUTLIERS],
    outlier_len: usize,
    outlier_min: u64,
    blocks: Vec<Block>,
    blocks_dropped: u64,
    block_cycles: u32,
    skipped: u64,
    cycles: u64,
    live: Arc<Live>,
}

/// Keeps a remarkable cycle, with the CPU it ran on, while there is room (the vector
/// was sized to [`MAX_RECORDS`] beforehand, so this never allocates).
#[inline]
fn keep_record(records: &mut Vec<CycleRecord>, cycle: u64, deadline_ns: u64, value_ns: u64) {
    if records.len() < MAX_RECORDS {
        records.push(CycleRecord {
            cycle,
            deadline_ns,
            value_ns,
            cpu: engine::rt::current_cpu().unwrap_or(0) as u32,
        });
    }
}

/// How the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopEnd {
    /// It ran its planned length.
    Complete,
    /// The stop flag was raised.
    Interrupted,
}

impl JitterLoop {
    /// Allocates everything the loop will write to and creates its timer. Call on the
    /// measuring thread (the signal mode directs its timer at the calling thread).
    /// With a `handoff`, filled interval histograms are passed to the controlling
    /// thread as the run goes; without one, everything stays in one set.
    pub fn prepare(
        config: &JitterConfig,
        busy: Option<BusyWork>,
        live: Arc<Live>,
        handoff: Option<Handoff>,
    ) -> Result<JitterLoop, JitterError> {
        config.validate()?;
        let block_cycles = (config.block_ns / config.period_ns).clamp(1, u32::MAX as u64) as u32;
        let blocks_planned =
            (config.planned_cycles() / block_cycles as u64 + 2).min(MAX_BLOCKS as u64);
        let busy_iterations = busy.map_or(0, |b| {
            b.iterations_for_ns((config.period_ns as f64 * config.busy_percent / 100.0) as u64)
        });
        Ok(JitterLoop {
            mode: config.mode,
            period_ns: config.period_ns,
            fragments: config.fragments,
            waiter: Waiter::new(config.mode)?,
            busy,
            busy_iterations,
            current: IntervalHistograms::new(config)?,
            handoff,
            cycles_in_interval: 0,
            interval_mark: (0, 0, 0),
            overflows: Vec::with_capacity(MAX_RECORDS),
            underruns: Vec::with_capacity(MAX_RECORDS),
            underrun_count: 0,
            outliers: [CycleRecord::default(); TOP_OUTLIERS],
            outlier_len: 0,
            outlier_min: 0,
            blocks: Vec::with_capacity(blocks_planned as usize),
            blocks_dropped: 0,
            block_cycles,
            skipped: 0,
            cycles: 0,
            live,
        })
    }

    #[inline]
    fn note_outlier(&mut self, rec: CycleRecord) {
        if self.outlier_len == TOP_OUTLIERS && rec.value_ns <= self.outlier_min {
            return;
        }
        if self.outlier_len < TOP_OUTLIERS {
            self.outliers[self.outlier_len] = rec;
            self.outlier_len += 1;
        } else {
            // Replace the smallest.
            let mut idx = 0;
            for i in 1..TOP_OUTLIERS {
                if self.outliers[i].value_ns < self.outliers[idx].value_ns {
                    idx = i;
                }
            }
            self.outliers[idx] = rec;
        }
        if self.outlier_len == TOP_OUTLIERS {
            self.outlier_min = self.outliers.iter().map(|o| o.value_ns).min().unwrap_or(0);
        }
    }

    #[inline]
    fn push_block(&mut self, block: Block) {
        if block.cycles == 0 {
            return;
        }
        if self.blocks.len() < self.blocks.capacity() {
            self.blocks.push(block);
        } else {
            self.blocks_dropped += 1;
        }
    }

    /// Runs cycles from deadline `start_ns` until `length` is done or `stop` is raised.
    /// Real-time safe: allocates nothing, takes no lock, prints nothing.
    pub fn run(
        &mut self,
        start_ns: u64,
        length: RunLength,
        stop: &AtomicBool,
    ) -> Result<LoopEnd, JitterError> {
        self.waiter.arm(start_ns, self.period_ns)?;
        let period = self.period_ns;
        let end_ns = match length {
            RunLength::Duration(d) => Some(start_ns + d.as_nanos() as u64),
            RunLength::Loops(_) => None,
        };
        let max_cycles = match length {
            RunLength::Loops(n) => n,
            RunLength::Duration(_) => u64::MAX,
        };
        let headroom = self.fragments.map(|f| f.headroom_ns());
        let mut k: u64 = 0; // index of the next deadline
        let mut backlog: u64 = 0; // expirations consumed but not yet processed
        let mut prev_wake: Option<u64> = None;
        let mut block = Block::default();
        let live = Arc::clone(&self.live);
        loop {
            if stop.load(Ordering::Relaxed) {
                self.push_block(block);
                return Ok(LoopEnd::Interrupted);
            }
            let deadline = start_ns + k * period;
            if self.cycles >= max_cycles || end_ns.is_some_and(|e| deadline >= e) {
                self.push_block(block);
                return Ok(LoopEnd::Complete);
            }
            let consumed = if backlog > 0 {
                backlog -= 1;
                1
            } else {
                match self.waiter.wait(deadline) {
                    Some(n) => n,
                    // Interrupted by the wake signal: nothing woke on time, so nothing
                    // is recorded; the top of the loop sees the stop flag.
                    None => continue,
                }
            };
            let now = monotonic_ns();
            let latency = now.saturating_sub(deadline);
            let cycle = self.cycles;
            self.cycles += 1;

            let in_bound = self.current.latency.record(latency);
            if !in_bound {
                keep_record(&mut self.overflows, cycle, deadline, latency);
                live.overflows.fetch_add(1, Ordering::Relaxed);
            }
            if self.outlier_len < TOP_OUTLIERS || latency > self.outlier_min {
                self.note_outlier(CycleRecord {
                    cycle,
                    deadline_ns: deadline,
                    value_ns: latency,
                    cpu: engine::rt::current_cpu().unwrap_or(0) as u32,
                });
            }
            if let Some(prev) = prev_wake {
                self.current.interval.record(now.saturating_sub(prev));
            }
            prev_wake = Some(now);

            if let Some(busy) = &mut self.busy {
                busy.run(self.busy_iterations);
            }

            // Series block.
            if block.cycles == 0 {
                block = Block {
                    offset_ns: deadline - start_ns,
                    min_ns: latency,
                    ..Block::default()
                };
            }
            block.cycles += 1;
            block.min_ns = block.min_ns.min(latency);
            block.max_ns = block.max_ns.max(latency);
            block.sum_ns += latency;

            live.cycles.store(self.cycles, Ordering::Relaxed);
            live.skipped.store(self.skipped, Ordering::Relaxed);
            live.last_ns.store(latency, Ordering::Relaxed);
            live.max_ns.fetch_max(latency, Ordering::Relaxed);

            match headroom {
                Some(headroom) => {
                    let done = monotonic_ns();
                    let completion = done.saturating_sub(deadline);
                    if let Some(h) = &mut self.current.completion {
                        h.record(completion);
                    }
                    block.completion_max_ns = block.completion_max_ns.max(completion);
                    if completion > headroom {
                        self.underrun_count += 1;
                        keep_record(&mut self.underruns, cycle, deadline, completion);
                        live.underruns.fetch_add(1, Ordering::Relaxed);
                        // Re-synchronise to the next boundary, as a driver restarting
                        // after an xrun would.
                        let next = (done - start_ns).div_ceil(period);
                        self.skipped += next.saturating_sub(k + 1);
                        k = next;
                        backlog = 0;
                        if !matches!(self.waiter, Waiter::Nanosleep) {
                            self.waiter.arm(start_ns + k * period, period)?;
                        }
                    } else {
                        // Every fragment must be produced: catch up, skip nothing.
                        k += 1;
                        backlog += consumed - 1;
                    }
                }
                None => {
                    if matches!(self.mode, WakeMode::Nanosleep) {
                        k += 1;
                        let after = monotonic_ns();
                        while start_ns + k * period < after {
                            k += 1;
                            self.skipped += 1;
                        }
                    } else {
                        self.skipped += consumed - 1;
                        k += consumed;
                    }
                }
            }

            if block.cycles >= self.block_cycles {
                self.push_block(block);
                block = Block::default();
            }
            self.hand_off();
        }
    }

    /// At the end of an interval, swaps the filled histograms for empty ones from the
    /// controlling thread. Real-time safe: two wait-free ring operations and a swap.
    /// When no empty set is waiting (the controller is starved), recording continues in
    /// the current set: nothing is lost, the interval is just longer.
    #[inline]
    fn hand_off(&mut self) {
        self.cycles_in_interval += 1;
        let Some(mut h) = self.handoff.take() else {
            return;
        };
        if self.cycles_in_interval >= h.cycles_per_interval {
            if let Ok(fresh) = h.spare.pop() {
                self.close_interval();
                let filled = std::mem::replace(&mut self.current, fresh);
                // Cannot fail: the ring has room for every set in circulation.
                let pushed = h.full.push(filled);
                debug_assert!(pushed.is_ok(), "hand-off ring sized below the pool");
                self.cycles_in_interval = 0;
            }
        }
        self.handoff = Some(h);
    }
}

/// What a finished loop recorded, without its timer (which belongs to the measuring
/// thread).
#[derive(Debug)]
pub struct LoopResults {
    /// Cycles processed.
    pub cycles: u64,
    /// Deadlines skipped.
    pub skipped: u64,
    /// Wake-up latency, interval and completion histograms (the run's totals once
    /// [`run`] has merged the intervals).
    pub histograms: IntervalHistograms,
    /// Overflows with cycle numbers.
    pub overflows: Vec<CycleRecord>,
    /// Would-be under-runs with cycle numbers.
    pub underruns: Vec<CycleRecord>,
    /// All would-be under-runs.
    pub underrun_count: u64,
    /// Largest wake-ups, largest first.
    pub outliers: Vec<CycleRecord>,
    /// Latency against time.
    pub blocks: Vec<Block>,
    /// Blocks not kept.
    pub blocks_dropped: u64,
    /// Busy iterations per cycle.
    pub busy_iterations: u64,
}

impl JitterLoop {
    /// Writes the counts of the interval that ends now into its histogram set.
    #[inline]
    fn close_interval(&mut self) {
        let (cycles, skipped, underruns) = self.interval_mark;
        self.current.cycles = self.cycles - cycles;
        self.current.skipped = self.skipped - skipped;
        self.current.underruns = self.underrun_count - underruns;
        self.interval_mark = (self.cycles, self.skipped, self.underrun_count);
    }

    /// Ends the loop: deletes its timer and hands over what it recorded.
    pub fn into_results(mut self) -> LoopResults {
        self.close_interval();
        let mut outliers: Vec<CycleRecord> = self.outliers[..self.outlier_len].to_vec();
        outliers.sort_by_key(|o| std::cmp::Reverse(o.value_ns));
        LoopResults {
            cycles: self.cycles,
            skipped: self.skipped,
            histograms: self.current,
            overflows: self.overflows,
            underruns: self.underruns,
            underrun_count: self.underrun_count,
            outliers,
            blocks: self.blocks,
            blocks_dropped: self.blocks_dropped,
            busy_iterations: self.busy_iterations,
        }
    }
}

/// Everything a jitter run measured.
#[derive(Debug)]
pub struct JitterOutcome {
    /// The configuration.
    pub config: JitterConfig,
    /// How it ended.
    pub end: LoopEnd,
    /// Deadline of cycle 0 (CLOCK_MONOTONIC ns).
    pub start_ns: u64,
    /// When the loop returned.
    pub end_ns: u64,
    /// What the loop recorded: histograms, remarkable cycles, the series.
    pub recorded: LoopResults,
    /// The busy kernel's calibration, when there was work.
    pub busy: Option<BusyWork>,
    /// What the measuring thread got.
    pub thread: ThreadRt,
    /// Memory lock granted.
    pub memory: engine::rt::MemoryLockGrant,
    /// /dev/cpu_dma_latency granted: (held, value read back, refusal).
    pub dma_latency: Option<(bool, Option<i32>, Option<String>)>,
    /// Host steal through the run.
    pub steal: StealTimeline,
}

/// What the controlling thread reports about ten times a second.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// Counters for a status line.
    pub live: LiveSnapshot,
    /// Every [`JitterConfig::checkpoint_ns`], the run's histograms and counts so far
    /// (every interval handed over), for storing while the run goes on.
    pub checkpoint: Option<&'a IntervalHistograms>,
}

/// Runs the jitter probe: sets up the process and a measuring thread, samples host
/// steal beside it, and calls `progress` about ten times a second on the calling thread
/// with a live snapshot and, every [`JitterConfig::checkpoint_ns`], a checkpoint of the
/// histograms so far (so the caller can store the run as it goes). Raising `stop` ends
/// the run early; what was measured is returned with [`LoopEnd::Interrupted`].
pub fn run(
    config: &JitterConfig,
    stop: &AtomicBool,
    mut progress: impl FnMut(Progress<'_>),
) -> Result<JitterOutcome, JitterError> {
    config.validate()?;
    let process = ProcessRt::setup(config.lock_memory, config.dma_latency.then_some(0));
    let steal = StealSampler::start(STEAL_SAMPLE_INTERVAL, config.cpus.as_deref());
    let live = Arc::new(Live::default());
    let planned = config.planned_cycles();
    const PREFAULT: usize = 256 * 1024;

    // Interval histograms circulate between the threads through two rings that can
    // hold every set, so neither side ever waits, allocates or fails to hand over.
    let (mut spare_tx, spare_rx) = rtrb::RingBuffer::new(HANDOFF_POOL);
    let (full_tx, mut full_rx) = rtrb::RingBuffer::<IntervalHistograms>::new(HANDOFF_POOL);
    for _ in 0..HANDOFF_POOL - 1 {
        let _ = spare_tx.push(IntervalHistograms::new(config)?);
    }
    let mut total = IntervalHistograms::new(config)?;
    let interval_ns = (config.checkpoint_ns / 2).clamp(1, 1_000_000_000);
    let handoff = Handoff {
        spare: spare_rx,
        full: full_tx,
        cycles_per_interval: (interval_ns / config.period_ns).max(1),
    };

    install_wake_handler();
    let rt_pthread = Arc::new(AtomicU64::new(0));
    let outcome = std::thread::scope(|s| {
        let cfg = config.clone();
        let thread_live = Arc::clone(&live);
        let thread_id = Arc::clone(&rt_pthread);
        let handle = std::thread::Builder::new()
            .name("audiolat-jitter".into())
            .stack_size(PREFAULT + (1 << 20))
            .spawn_scoped(s, move || -> Result<_, JitterError> {
                // SAFETY: pthread_self has no preconditions.
                thread_id.store(unsafe { libc::pthread_self() } as u64, Ordering::Release);
                block_termination_signals();
                let thread = ThreadRt::apply(&cfg.policy, cfg.cpus.as_deref(), PREFAULT);
                let busy = (cfg.busy_percent > 0.0).then(|| BusyWork::calibrate(20_000, 25));
                let mut lp = JitterLoop::prepare(&cfg, busy, thread_live, Some(handoff))?;
                // First deadline a little ahead, so set-up cannot make cycle 0 late.
                let start_ns = monotonic_ns() + 10_000_000;
                let end = lp.run(start_ns, cfg.length, stop)?;
                let end_ns = monotonic_ns();
                Ok((lp.into_results(), thread, start_ns, end_ns, end, busy))
            })
            .map_err(|e| JitterError::Timer {
                what: "spawning the measuring thread",
                source: e,
            })?;
        let mut last_checkpoint = std::time::Instant::now();
        while !handle.is_finished() {
            std::thread::sleep(Duration::from_millis(100));
            if stop.load(Ordering::Relaxed) {
                // Repeated until the thread ends: a signal that lands between its stop
                // check and its wait would otherwise be lost for a whole period.
                let id = rt_pthread.load(Ordering::Acquire);
                if id != 0 && !handle.is_finished() {
                    // SAFETY: the thread has not been joined, so its id is valid; the
                    // signal only interrupts its wait.
                    unsafe { libc::pthread_kill(id as libc::pthread_t, wake_signal()) };
                }
            }
            let mut merged = false;
            while let Ok(mut filled) = full_rx.pop() {
                total.add(&filled);
                filled.reset();
                let _ = spare_tx.push(filled);
                merged = true;
            }
            let due =
                merged && last_checkpoint.elapsed() >= Duration::from_nanos(config.checkpoint_ns);
            if due {
                last_checkpoint = std::time::Instant::now();
            }
            let snapshot = LiveSnapshot {
                cycles: live.cycles.load(Ordering::Relaxed),
                planned,
                last_ns: live.last_ns.load(Ordering::Relaxed),
                max_ns: live.max_ns.load(Ordering::Relaxed),
                overflows: live.overflows.load(Ordering::Relaxed),
                underruns: live.underruns.load(Ordering::Relaxed),
                skipped: live.skipped.load(Ordering::Relaxed),
            };
            progress(Progress {
                live: snapshot,
                checkpoint: due.then_some(&total),
            });
        }
        handle.join().map_err(|p| {
            JitterError::Panicked(
                p.downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into()),
            )
        })?
    });
    let steal = steal.finish();
    let (mut recorded, thread, start_ns, end_ns, end, busy) = outcome?;
    // The run's totals: every interval handed over, and the one in progress at the end.
    while let Ok(filled) = full_rx.pop() {
        total.add(&filled);
    }
    total.add(&recorded.histograms);
    recorded.histograms = total;
    Ok(JitterOutcome {
        config: config.clone(),
        end,
        start_ns,
        end_ns,
        recorded,
        busy,
        thread,
        memory: process.memory.clone(),
        dma_latency: process
            .dma_latency
            .as_ref()
            .map(|d| (d.is_held(), d.granted_us, d.refusal.clone())),
        steal,
    })
}

/// The measurements of a jitter run from its histograms and counts. `partial` marks a
/// checkpoint taken while the run goes on; overflowed values not passed in are carried
/// uncorrected by the coordinated-omission correction.
pub fn measurements(
    config: &JitterConfig,
    h: &IntervalHistograms,
    overflow_values: &[u64],
    partial: bool,
) -> Vec<Measurement> {
    let (skipped, underruns) = (h.skipped, h.underruns);
    let mode = config.mode;
    let mut out = Vec::new();
    let mut lat = Measurement::from_histogram(
        "jitter",
        "wakeup_latency",
        &format!(
            "{}: CLOCK_MONOTONIC time on waking minus the absolute deadline start + k*period \
             (cyclictest's method); deadlines already past are skipped{}",
            mode.mechanism(),
            if config.fragments.is_some() {
                " only after an under-run"
            } else {
                ""
            }
        ),
        h.latency.clone(),
    );
    lat.detail = json!({"skipped_deadlines": skipped, "period_ns": config.period_ns});
    out.push(lat);
    let mut co = Measurement::from_histogram(
        "jitter",
        "wakeup_latency_co_corrected",
        "wakeup_latency corrected for coordinated omission off the real-time thread: a wake-up \
         late by L also stands for the skipped deadlines, at L - period, L - 2*period, ...",
        h.latency
            .corrected_for_omission(config.period_ns, overflow_values),
    );
    co.detail = json!({"expected_interval_ns": config.period_ns});
    out.push(co);
    let mut iv = Measurement::from_histogram(
        "jitter",
        "wakeup_interval",
        "CLOCK_MONOTONIC time between consecutive wake-ups (nominally one period)",
        h.interval.clone(),
    );
    iv.detail = json!({"nominal_ns": config.period_ns});
    out.push(iv);
    if let (Some(c), Some(f)) = (&h.completion, &config.fragments) {
        let mut m = Measurement::from_histogram(
            "jitter",
            "fragment_completion",
            &format!(
                "fragment model {}x{} frames at {} Hz: time from a fragment's deadline to the \
                 end of its work; above (fragments-1)*period the card would have under-run",
                f.fragments, f.frames, f.sample_rate
            ),
            c.clone(),
        );
        m.deadline = Some(f.headroom_ns() as f64);
        m.misses = Some(underruns);
        out.push(m);
    }
    if partial {
        for m in &mut out {
            m.detail["partial"] = json!(true);
            m.detail["cycles_so_far"] = json!(h.cycles);
        }
    }
    out
}

/// Keeps SIGINT and SIGTERM away from the measuring thread, so the handler runs on
/// another thread and the loop only sees the stop flag.
fn block_termination_signals() {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// An outlier with the host steal around it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttributedOutlier {
    /// The cycle.
    pub record: CycleRecord,
    /// Steal on the thread's CPU in the window around it (ns).
    pub steal_ns: u64,
    /// Length of that window (ns): the steal samples place steal no more precisely.
    pub window_ns: u64,
}

impl JitterOutcome {
    /// True when the thread ran at a real-time policy.
    pub fn realtime(&self) -> bool {
        self.thread.is_realtime()
    }

    /// Steal around a cycle, on the CPU it ran on, from its deadline to its deadline plus
    /// its value, as the steal samples can place it: (steal ns, window ns).
    pub fn steal_around(&self, rec: &CycleRecord) -> (u64, u64) {
        self.steal.steal_window(
            Some(&[rec.cpu as usize]),
            rec.deadline_ns,
            rec.deadline_ns + rec.value_ns,
        )
    }

    /// The largest wake-ups with the steal around each.
    pub fn attributed_outliers(&self) -> Vec<AttributedOutlier> {
        self.recorded
            .outliers
            .iter()
            .map(|r| {
                let (steal_ns, window_ns) = self.steal_around(r);
                AttributedOutlier {
                    record: *r,
                    steal_ns,
                    window_ns,
                }
            })
            .collect()
    }

    /// The share of windows placed evenly through the run, each as wide as one of the
    /// outliers' windows and on its CPU, that saw host steal: what "had steal around it"
    /// means by chance alone. Compare the outliers' share with it. `None` without
    /// outliers (no windows to place).
    pub fn steal_baseline_fraction(&self) -> Option<f64> {
        const POSITIONS: u64 = 64;
        let (start, end) = (self.start_ns, self.end_ns.max(self.start_ns + 1));
        let mut hits = 0u64;
        let mut total = 0u64;
        for o in &self.recorded.outliers {
            let width = o.value_ns.min(end - start);
            for i in 0..POSITIONS {
                let t = start + (end - start - width) * i / (POSITIONS - 1);
                total += 1;
                if self
                    .steal
                    .steal_ns_in(Some(&[o.cpu as usize]), t, t + width)
                    > 0
                {
                    hits += 1;
                }
            }
        }
        (total > 0).then(|| hits as f64 / total as f64)
    }

    /// CPUs the thread could run on.
    fn cpus(&self) -> Vec<usize> {
        self.thread.cpus_granted.clone()
    }

    /// The measurements to store.
    pub fn measurements(&self) -> Vec<Measurement> {
        let overflow_values: Vec<u64> =
            self.recorded.overflows.iter().map(|o| o.value_ns).collect();
        measurements(
            &self.config,
            &self.recorded.histograms,
            &overflow_values,
            false,
        )
    }

    /// Overflows, would-be under-runs and steal spikes, as events.
    pub fn events(&self) -> Vec<Event> {
        let mut out = Vec::new();
        for o in &self.recorded.overflows {
            out.push(Event {
                mono_ns: o.deadline_ns,
                kind: "overflow".into(),
                detail: json!({"cycle": o.cycle, "latency_ns": o.value_ns, "cpu": o.cpu,
                               "steal_ns_around": self.steal_around(o).0,
                               "steal_window_ns": self.steal_around(o).1}),
            });
        }
        for u in &self.recorded.underruns {
            out.push(Event {
                mono_ns: u.deadline_ns,
                kind: "underrun".into(),
                detail: json!({"cycle": u.cycle, "completion_ns": u.value_ns, "cpu": u.cpu,
                               "headroom_ns": self.config.fragments.map(|f| f.headroom_ns()),
                               "steal_ns_around": self.steal_around(u).0,
                               "steal_window_ns": self.steal_around(u).1}),
            });
        }
        let cpus = self.cpus();
        for (t, ns) in self.steal.spikes(Some(&cpus)) {
            out.push(Event {
                mono_ns: t,
                kind: "steal".into(),
                detail: json!({"steal_ns": ns, "cpus": engine::rt::format_cpu_list(&cpus)}),
            });
        }
        out.sort_by_key(|e| e.mono_ns);
        out
    }

    /// Latency against time, one row per block.
    pub fn series(&self) -> Series {
        let frag = self.config.fragments.is_some();
        let mut columns = vec!["t_s", "cycles", "min_ns", "mean_ns", "max_ns"];
        if frag {
            columns.push("completion_max_ns");
        }
        Series {
            name: "wakeup_latency_by_block".into(),
            unit: "ns".into(),
            columns: columns.into_iter().map(String::from).collect(),
            rows: self
                .recorded
                .blocks
                .iter()
                .map(|b| {
                    let mut row = vec![
                        b.offset_ns as f64 / 1e9,
                        b.cycles as f64,
                        b.min_ns as f64,
                        b.sum_ns as f64 / b.cycles.max(1) as f64,
                        b.max_ns as f64,
                    ];
                    if frag {
                        row.push(b.completion_max_ns as f64);
                    }
                    row
                })
                .collect(),
        }
    }

    /// Host steal during the run on the thread's CPUs: (ns, percent of the run).
    pub fn steal_summary(&self) -> (u64, Option<f64>) {
        let cpus = self.cpus();
        let ns = self.steal.total_ns(Some(&cpus));
        (ns, self.steal.percent_of_span(ns, cpus.len()))
    }

    /// The real-time settings granted, as stored with the run.
    pub fn qos_granted(&self) -> Value {
        let t = &self.thread;
        json!({
            "policy": t.sched.granted.to_string(),
            "policy_refusal": t.sched.refusal,
            "cpus": engine::rt::format_cpu_list(&t.cpus_granted),
            "affinity_refusal": t.affinity_refusal,
            "memory_locked": {"current": self.memory.current, "future": self.memory.future,
                              "refusal": self.memory.refusal},
            "cpu_dma_latency": self.dma_latency.as_ref().map(|(held, us, refusal)| json!({
                "held": held, "value_us": us, "refusal": refusal})),
            "stack_prefaulted_bytes": t.stack_prefaulted,
            "tid": t.tid,
        })
    }

    /// Validity flags: what a reader must know before trusting the numbers.
    pub fn flags(&self) -> Value {
        let (steal_ns, steal_pct) = self.steal_summary();
        let attributed = self.attributed_outliers();
        let with_steal = attributed.iter().filter(|a| a.steal_ns > 0).count();
        json!({
            "realtime": self.realtime(),
            "policy_as_requested": self.thread.sched.is_exact(),
            "affinity_as_requested": self.thread.affinity_refusal.is_none(),
            "memory_locked": self.memory.current,
            "cpu_dma_latency_held": self.dma_latency.as_ref().is_some_and(|d| d.0),
            "interrupted": self.end == LoopEnd::Interrupted,
            "host_steal_ns": steal_ns,
            "host_steal_percent": steal_pct,
            "outliers_with_host_steal": with_steal,
            "outliers_examined": attributed.len(),
            "random_windows_with_host_steal_percent": self.steal_baseline_fraction().map(|f| 100.0 * f),
            "histogram_overflows": self.recorded.histograms.latency.overflows(),
            "percentiles_clamped": self.recorded.histograms.latency.summary().is_some_and(|s| s.clamped_at.is_some()),
        })
    }

    /// Probe-specific results: counts, calibration, outliers with steal.
    pub fn result_json(&self) -> Value {
        let (steal_ns, steal_pct) = self.steal_summary();
        json!({
            "cycles": self.recorded.cycles,
            "planned_cycles": self.config.planned_cycles(),
            "skipped_deadlines": self.recorded.skipped,
            "overflows": self.recorded.histograms.latency.overflows(),
            "overflow_cycles": self.recorded.overflows.iter().map(|o| o.cycle).collect::<Vec<_>>(),
            "underruns": self.recorded.underrun_count,
            "underrun_cycles": self.recorded.underruns.iter().map(|o| o.cycle).collect::<Vec<_>>(),
            "run_ns": self.end_ns.saturating_sub(self.start_ns),
            "start_ns": self.start_ns,
            "busy": self.busy.map(|b| {
                let iters = self.recorded.busy_iterations;
                json!({
                    "percent": self.config.busy_percent,
                    "ns_per_iteration": b.ns_per_iteration,
                    "iterations_per_cycle": iters,
                    "calibrated_ns_per_cycle": b.ns_per_iteration * iters as f64,
                })
            }),
            "steal": {"ns": steal_ns, "percent": steal_pct, "samples": self.steal.samples.len(),
                      "tick_ns": self.steal.tick_ns},
            "outliers": self.attributed_outliers().iter().map(|a| json!({
                "cycle": a.record.cycle, "latency_ns": a.record.value_ns, "cpu": a.record.cpu,
                "t_s": a.record.deadline_ns.saturating_sub(self.start_ns) as f64 / 1e9,
                "steal_ns_around": a.steal_ns,
                "steal_window_ns": a.window_ns,
            })).collect::<Vec<_>>(),
            "series_blocks_dropped": self.recorded.blocks_dropped,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(mode: WakeMode, period_ns: u64, loops: u64) -> JitterConfig {
        JitterConfig {
            mode,
            policy: Policy::Other { nice: 0 },
            lock_memory: false,
            dma_latency: false,
            ..JitterConfig::new(period_ns, RunLength::Loops(loops))
        }
    }

    #[test]
    fn fragment_model_arithmetic() {
        // latencytest's "3x128" were bytes of 16-bit stereo: 32 frames, 0.73 ms.
        let f = FragmentModel {
            fragments: 3,
            frames: 32,
            sample_rate: 44_100,
        };
        assert_eq!(f.period_ns(), 725_624);
        assert_eq!(f.headroom_ns(), 2 * 725_624);
    }

    #[test]
    fn validation_names_the_fix() {
        let mut c = cfg(WakeMode::Nanosleep, 1_000, 10);
        assert!(c.validate().unwrap_err().to_string().contains("rate"));
        c.period_ns = 1_000_000;
        c.busy_percent = 100.0;
        assert!(c.validate().unwrap_err().to_string().contains("--busy"));
        c.busy_percent = 10.0;
        c.policy = Policy::Fifo { priority: 200 };
        assert!(c.validate().unwrap_err().to_string().contains("1..99"));
        c.policy = Policy::Deadline {
            runtime_ns: 100_000,
            deadline_ns: 1_000_000,
            period_ns: 1_000_000,
        };
        c.cpus = Some(vec![0]);
        assert!(c.validate().unwrap_err().to_string().contains("--cpu"));
        c.cpus = None;
        c.fragments = Some(FragmentModel {
            fragments: 1,
            frames: 32,
            sample_rate: 44_100,
        });
        assert!(c.validate().unwrap_err().to_string().contains("headroom"));
    }

    #[test]
    fn every_mode_measures_plausible_latencies() {
        for mode in [WakeMode::Nanosleep, WakeMode::Timerfd, WakeMode::Signal] {
            let stop = AtomicBool::new(false);
            let out = run(&cfg(mode, 1_000_000, 200), &stop, |_| {}).unwrap();
            assert_eq!(out.end, LoopEnd::Complete, "{mode:?}");
            assert_eq!(out.recorded.cycles, 200, "{mode:?}");
            let s = out.recorded.histograms.latency.summary().unwrap();
            assert_eq!(s.count, 200);
            // A wake-up is never early, and its median is far below a period.
            assert!(s.min >= 0.0 && s.p50 < 1_000_000.0, "{mode:?}: {s:?}");
            // Intervals centre on the period.
            let iv = out.recorded.histograms.interval.summary().unwrap();
            assert!((iv.p50 - 1_000_000.0).abs() < 200_000.0, "{mode:?}: {iv:?}");
            assert!(!out.recorded.blocks.is_empty());
        }
    }

    #[test]
    fn stop_flag_interrupts_and_keeps_samples() {
        let stop = AtomicBool::new(false);
        let c = JitterConfig {
            length: RunLength::Duration(Duration::from_secs(30)),
            ..cfg(WakeMode::Nanosleep, 1_000_000, 1)
        };
        let mut ticks = 0;
        let out = run(&c, &stop, |p| {
            ticks += 1;
            if p.live.cycles > 50 {
                stop.store(true, Ordering::Relaxed);
            }
        })
        .unwrap();
        assert_eq!(out.end, LoopEnd::Interrupted);
        assert!(out.recorded.cycles > 50 && out.recorded.cycles < 30_000);
        assert_eq!(out.recorded.histograms.latency.count(), out.recorded.cycles);
        assert!(ticks > 0);
    }

    #[test]
    fn stopping_interrupts_a_long_wait_in_every_mode() {
        for mode in [WakeMode::Nanosleep, WakeMode::Timerfd, WakeMode::Signal] {
            let stop = AtomicBool::new(false);
            let c = JitterConfig {
                length: RunLength::Duration(Duration::from_secs(60)),
                ..cfg(mode, 5_000_000_000, 1)
            };
            let mut ticks = 0;
            let out = run(&c, &stop, |_| {
                ticks += 1;
                if ticks == 5 {
                    stop.store(true, Ordering::Relaxed);
                }
            })
            .unwrap();
            assert_eq!(out.end, LoopEnd::Interrupted, "{mode:?}");
            // Cycle 0 (10 ms after start) was measured; the stop came long before the
            // next deadline and ended the wait for it without recording anything.
            assert_eq!(out.recorded.cycles, 1, "{mode:?}");
            assert!(out.end_ns < out.start_ns + 5_000_000_000, "{mode:?}");
        }
    }

    #[test]
    fn an_impossible_fragment_budget_counts_underruns() {
        // 90 % busy with 2 fragments of 0.5 ms: any wake-up later than ~50 µs plus
        // calibration error under-runs; make it certain with a 60 µs period and 2
        // fragments, where the work alone (54 µs) nearly fills the headroom, and a
        // histogram bound of 1 µs so overflows are recorded too.
        let c = JitterConfig {
            fragments: Some(FragmentModel {
                fragments: 2,
                frames: 3,
                sample_rate: 48_000,
            }),
            busy_percent: 99.0,
            hist_bound_ns: 1_000,
            ..cfg(WakeMode::Nanosleep, 62_500, 400)
        };
        let stop = AtomicBool::new(false);
        let out = run(&c, &stop, |_| {}).unwrap();
        assert_eq!(out.recorded.cycles, 400);
        let completion = out.recorded.histograms.completion.as_ref().unwrap();
        assert_eq!(completion.count(), 400);
        // Completion is at least the work's calibrated time in the median.
        assert!(completion.summary().unwrap().p50 >= 0.5 * 62_500.0);
        assert_eq!(
            out.recorded.underruns.len() as u64,
            out.recorded.underrun_count.min(MAX_RECORDS as u64)
        );
        assert!(out.recorded.histograms.latency.overflows() > 0);
        assert!(!out.recorded.overflows.is_empty());
        let m = out.measurements();
        assert_eq!(m.last().unwrap().metric, "fragment_completion");
        assert_eq!(m.last().unwrap().misses, Some(out.recorded.underrun_count));
    }

    #[test]
    fn checkpoints_grow_and_the_totals_count_every_cycle() {
        let c = JitterConfig {
            checkpoint_ns: 300_000_000,
            ..cfg(WakeMode::Nanosleep, 1_000_000, 1_500)
        };
        let stop = AtomicBool::new(false);
        let mut seen: Vec<u64> = Vec::new();
        let out = run(&c, &stop, |p| {
            if let Some(cp) = p.checkpoint {
                seen.push(cp.latency.count());
                assert_eq!(
                    cp.cycles,
                    cp.latency.count(),
                    "counts from the same intervals"
                );
                let ms = measurements(&c, cp, &[], true);
                assert_eq!(ms[0].detail["partial"], json!(true));
                assert_eq!(ms[0].detail["cycles_so_far"], json!(cp.cycles));
            }
        })
        .unwrap();
        assert!(seen.len() >= 2, "checkpoints: {seen:?}");
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
        assert!(*seen.last().unwrap() <= 1_500);
        let h = &out.recorded.histograms;
        assert_eq!(h.cycles, 1_500);
        assert_eq!(h.skipped, out.recorded.skipped);
        assert_eq!(h.latency.count(), 1_500);
        assert_eq!(h.interval.count(), 1_499);
        assert_eq!(out.measurements()[0].count(), 1_500);
    }

    #[test]
    fn outliers_are_the_largest_wakeups() {
        let stop = AtomicBool::new(false);
        let out = run(&cfg(WakeMode::Nanosleep, 500_000, 300), &stop, |_| {}).unwrap();
        assert_eq!(out.recorded.outliers.len(), TOP_OUTLIERS);
        assert_eq!(
            out.recorded.outliers[0].value_ns,
            out.recorded.histograms.latency.max()
        );
        assert!(out
            .recorded
            .outliers
            .windows(2)
            .all(|w| w[0].value_ns >= w[1].value_ns));
        let p50 = out.recorded.histograms.latency.percentile(50.0).0;
        assert!(out.recorded.outliers.last().unwrap().value_ns >= p50);
    }
}

/// The loop, run under `assert_no_alloc`: every allocation or deallocation on the
/// measuring path is counted by the guard allocator, and the tests assert the count is
/// zero. Only in debug builds, where the guard is armed; a control test proves it is.
#[cfg(all(test, debug_assertions))]
mod no_alloc {
    use super::*;
    use assert_no_alloc::{assert_no_alloc, reset_violation_count, violation_count};

    /// Runs the loop under the guard with hand-off rings, so the hand-off path runs
    /// too (three hand-offs, then a starved controller). Returns the loop and the count
    /// of samples that were handed over.
    fn run_guarded(config: JitterConfig) -> (JitterLoop, u64) {
        let busy = (config.busy_percent > 0.0).then(|| BusyWork::calibrate(10_000, 3));
        let (mut spare_tx, spare_rx) = rtrb::RingBuffer::new(HANDOFF_POOL);
        let (full_tx, mut full_rx) = rtrb::RingBuffer::new(HANDOFF_POOL);
        for _ in 0..HANDOFF_POOL - 1 {
            spare_tx
                .push(IntervalHistograms::new(&config).unwrap())
                .unwrap();
        }
        let handoff = Handoff {
            spare: spare_rx,
            full: full_tx,
            cycles_per_interval: 50,
        };
        let mut lp =
            JitterLoop::prepare(&config, busy, Arc::new(Live::default()), Some(handoff)).unwrap();
        let stop = AtomicBool::new(false);
        let start = monotonic_ns() + 1_000_000;
        reset_violation_count();
        let end = assert_no_alloc(|| lp.run(start, config.length, &stop));
        assert_eq!(violation_count(), 0, "the jitter loop allocated");
        assert_eq!(end.unwrap(), LoopEnd::Complete);
        let mut handed = 0;
        let mut sets = 0;
        while let Ok(h) = full_rx.pop() {
            handed += h.latency.count();
            sets += 1;
        }
        assert_eq!(sets, HANDOFF_POOL - 1, "every spare set was used");
        assert_eq!(handed, 50 * (HANDOFF_POOL as u64 - 1));
        (lp, handed)
    }

    #[test]
    fn the_guard_is_armed() {
        reset_violation_count();
        assert_no_alloc(|| {
            let v = std::hint::black_box(vec![1u8; 64]);
            drop(v);
        });
        assert!(
            violation_count() > 0,
            "assert_no_alloc did not see an allocation"
        );
        reset_violation_count();
    }

    fn base(mode: WakeMode) -> JitterConfig {
        JitterConfig {
            mode,
            policy: Policy::Other { nice: 0 },
            lock_memory: false,
            dma_latency: false,
            // A 2 µs bound makes most samples overflow, so the overflow path runs too;
            // small blocks make the series path run many times.
            hist_bound_ns: 2_000,
            block_ns: 1_000_000,
            ..JitterConfig::new(250_000, RunLength::Loops(400))
        }
    }

    #[test]
    fn the_jitter_loop_does_not_allocate_in_any_mode() {
        for mode in [WakeMode::Nanosleep, WakeMode::Timerfd, WakeMode::Signal] {
            let (lp, handed) = run_guarded(base(mode));
            assert_eq!(lp.cycles, 400);
            assert_eq!(
                handed + lp.current.latency.count(),
                400,
                "{mode:?}: samples lost"
            );
            assert!(
                handed > 0 && lp.current.latency.overflows() > 0,
                "{mode:?}: the overflow path must be exercised"
            );
            assert!(lp.blocks.len() > 10);
        }
    }

    #[test]
    fn the_fragment_loop_does_not_allocate_even_when_it_underruns() {
        for mode in [WakeMode::Nanosleep, WakeMode::Timerfd, WakeMode::Signal] {
            let config = JitterConfig {
                fragments: Some(FragmentModel {
                    fragments: 2,
                    frames: 3,
                    sample_rate: 48_000,
                }),
                busy_percent: 99.0,
                ..base(mode)
            };
            let config = JitterConfig {
                period_ns: config.fragments.unwrap().period_ns(),
                ..config
            };
            let (lp, handed) = run_guarded(config);
            assert_eq!(lp.cycles, 400);
            assert_eq!(
                handed + lp.current.completion.as_ref().unwrap().count(),
                400
            );
            // Work of 99 % of a period plus any wake-up latency exceeds one period of
            // headroom: the under-run and re-synchronisation path must be exercised.
            assert!(lp.underrun_count > 0, "{mode:?}");
        }
    }
}
