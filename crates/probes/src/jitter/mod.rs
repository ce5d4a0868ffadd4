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
use results::records::jitter::{FragmentsRecord, JitterConfigRecord};
use results::records::Record;
use results::{Event, LatencyHistogram, Measurement, Series};
use serde_json::Value;

use crate::busy::BusyWork;
use crate::steal::{StealSampler, StealTimeline};

mod measuring;
mod outcome;
mod waiter;

pub use measuring::*;
pub use outcome::*;
pub use waiter::*;

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

/// The sample rates a [`FragmentModel`] may run at, in Hz.
pub const FRAGMENT_RATE_RANGE_HZ: std::ops::RangeInclusive<u32> = 1_000..=768_000;

/// A fragment model's rate that is not a sample rate.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error(
    "{0} Hz is not a sample rate: use a whole number of Hz from {min} to {max}",
    min = FRAGMENT_RATE_RANGE_HZ.start(),
    max = FRAGMENT_RATE_RANGE_HZ.end()
)]
pub struct NotASampleRate(pub f64);

impl FragmentModel {
    /// `fragments` buffers of `frames` frames at `rate_hz`, which must be a whole number
    /// of Hz in [`FRAGMENT_RATE_RANGE_HZ`].
    pub fn at_rate(fragments: u32, frames: u32, rate_hz: f64) -> Result<Self, NotASampleRate> {
        let range = *FRAGMENT_RATE_RANGE_HZ.start() as f64..=*FRAGMENT_RATE_RANGE_HZ.end() as f64;
        if rate_hz.fract() != 0.0 || !range.contains(&rate_hz) {
            return Err(NotASampleRate(rate_hz));
        }
        Ok(FragmentModel {
            fragments,
            frames,
            sample_rate: rate_hz as u32,
        })
    }

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
    /// Causes asked for (`--why`): the kernel traced on the thread's CPUs and each
    /// wake-up later than the threshold (with the fragment model, each under-run)
    /// broken down.
    pub why: Option<crate::why::WhyConfig>,
}

/// Smallest period accepted (20 µs, 50 kHz).
pub const MIN_PERIOD_NS: u64 = 20_000;
/// Largest period accepted (10 s).
pub const MAX_PERIOD_NS: u64 = 10_000_000_000;
/// Most fragments in a fragment model's buffer (ALSA's own limit on periods in a buffer
/// is of this order; latencytest used 3).
pub const MAX_FRAGMENTS: u32 = 1024;
/// The histogram bounds accepted, ns (1 µs to 60 s).
pub const HIST_BOUND_RANGE_NS: std::ops::RangeInclusive<u64> = 1_000..=60_000_000_000;
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

/// A setting [`JitterConfig::validate`] refuses by name: a front end words it with
/// what sets it ([`JitterError::message`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JitterSetting {
    /// The busy share of each period.
    Busy,
    /// The fragments per buffer of the fragment mode.
    Fragments,
    /// The frames per fragment.
    Frames,
    /// The CPUs the thread is pinned to.
    Cpus,
    /// The run's duration.
    Duration,
    /// The run's number of loops.
    Loops,
    /// The period (a rate, an interval, or a fragment's frames at its rate).
    Period,
    /// The histogram bound.
    HistBound,
}

impl JitterSetting {
    /// The setting's name in the library's own words.
    pub fn name(self) -> &'static str {
        match self {
            JitterSetting::Busy => "the busy share",
            JitterSetting::Fragments => "the fragment count",
            JitterSetting::Frames => "the frames per fragment",
            JitterSetting::Cpus => "the CPU list",
            JitterSetting::Duration => "the duration",
            JitterSetting::Loops => "the loop count",
            JitterSetting::Period => "the wake-up rate",
            JitterSetting::HistBound => "the histogram bound",
        }
    }
}

/// Why a jitter run could not be made. Messages name the fix.
#[derive(Debug, thiserror::Error)]
pub enum JitterError {
    /// The configuration is impossible (a setting no flag names by itself: the period,
    /// the rate, the histogram bound, an offline CPU, the policy).
    #[error("{0}")]
    Invalid(String),
    /// A named setting is out of its range; `value` is what was asked, where said.
    #[error("{}", out_of_range(*.setting, .value.as_deref(), JitterSetting::name(*.setting)))]
    OutOfRange {
        /// The setting.
        setting: JitterSetting,
        /// Its value, as asked.
        value: Option<String>,
    },
    /// More loops than fit in [`LONGEST_RUN`](engine::clock::LONGEST_RUN) at the period.
    #[error("{}", too_many_loops(*.loops, *.most, JitterSetting::Loops.name()))]
    TooManyLoops {
        /// The loops asked for.
        loops: u64,
        /// The most that fit.
        most: u64,
    },
    /// SCHED_DEADLINE with pinned CPUs, which the kernel refuses.
    #[error("{}", deadline_with_cpus(JitterSetting::Cpus.name()))]
    DeadlineWithCpus,
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

/// A setting out of range, the setting called `name`.
fn out_of_range(setting: JitterSetting, value: Option<&str>, name: &str) -> String {
    let rule = match setting {
        JitterSetting::Busy => {
            "is out of range: use 0 up to, not including, 100 (percent of each period)"
        }
        JitterSetting::Fragments => {
            "is out of range: use 2 to 1024 (1 leaves no headroom; latencytest used 3)"
        }
        JitterSetting::Frames => "must be at least 1",
        JitterSetting::Cpus => "needs at least one CPU",
        JitterSetting::Duration => "is out of range: use more than 0 and at most 7 days (168h)",
        JitterSetting::Loops => "must be positive",
        JitterSetting::Period => {
            return format!(
                "{name}: a period of {} is out of range: use a rate of 0.1..50000 Hz (an interval of 20us..10s)",
                value.unwrap_or("this")
            )
        }
        JitterSetting::HistBound => "is out of range: use 1us..60s",
    };
    let value = value.map(|v| format!(" {v}")).unwrap_or_default();
    format!("{name}{value} {rule}")
}

/// More loops than a run may have, the loop count called `name`.
fn too_many_loops(loops: u64, most: u64, name: &str) -> String {
    format!(
        "{name} {loops} is out of range: at this period, use 1 to {most} (a run is at most {})",
        engine::clock::LONGEST_RUN_WORDS
    )
}

/// SCHED_DEADLINE refused with pinned CPUs, set by what is called `cpus`.
fn deadline_with_cpus(cpus: &str) -> String {
    format!(
        "SCHED_DEADLINE cannot be combined with {cpus}: the kernel requires a deadline \
         thread's affinity to span its whole root domain; drop {cpus}"
    )
}

impl JitterError {
    /// The message with each named setting called `name(setting)` (a front end's
    /// flag); other errors as they are.
    pub fn message(&self, name: impl Fn(JitterSetting) -> &'static str) -> String {
        match self {
            JitterError::OutOfRange { setting, value } => {
                out_of_range(*setting, value.as_deref(), name(*setting))
            }
            JitterError::DeadlineWithCpus => deadline_with_cpus(name(JitterSetting::Cpus)),
            JitterError::TooManyLoops { loops, most } => {
                too_many_loops(*loops, *most, name(JitterSetting::Loops))
            }
            other => other.to_string(),
        }
    }
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
            why: None,
        }
    }

    /// Checks the configuration before anything is started.
    pub fn validate(&self) -> Result<(), JitterError> {
        let bad = |m: String| Err(JitterError::Invalid(m));
        let out_of_range =
            |setting, value: Option<String>| Err(JitterError::OutOfRange { setting, value });
        if self.period_ns < MIN_PERIOD_NS || self.period_ns > MAX_PERIOD_NS {
            let period = Duration::from_nanos(self.period_ns);
            return out_of_range(JitterSetting::Period, Some(format!("{period:?}")));
        }
        if !(0.0..100.0).contains(&self.busy_percent) {
            return out_of_range(JitterSetting::Busy, Some(self.busy_percent.to_string()));
        }
        if let Some(f) = &self.fragments {
            if !(2..=MAX_FRAGMENTS).contains(&f.fragments) {
                return out_of_range(JitterSetting::Fragments, Some(f.fragments.to_string()));
            }
            if f.frames == 0 {
                return out_of_range(JitterSetting::Frames, None);
            }
            if !(1_000..=768_000).contains(&f.sample_rate) {
                return bad(format!(
                    "sample rate {} Hz is out of range: use 1000..768000",
                    f.sample_rate
                ));
            }
        }
        if !HIST_BOUND_RANGE_NS.contains(&self.hist_bound_ns) {
            let bound = Duration::from_nanos(self.hist_bound_ns);
            return out_of_range(JitterSetting::HistBound, Some(format!("{bound:?}")));
        }
        self.policy
            .validate()
            .map_err(|e| JitterError::Invalid(e.to_string()))?;
        if matches!(self.policy, Policy::Deadline { .. }) && self.cpus.is_some() {
            return Err(JitterError::DeadlineWithCpus);
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
                return out_of_range(JitterSetting::Cpus, None);
            }
        }
        let longest = engine::clock::LONGEST_RUN;
        match self.length {
            RunLength::Duration(d) if d.is_zero() || d > longest => {
                out_of_range(JitterSetting::Duration, Some(format!("{d:?}")))
            }
            RunLength::Loops(0) => out_of_range(JitterSetting::Loops, None),
            RunLength::Loops(loops) => {
                let most = (longest.as_nanos() / u128::from(self.period_ns)) as u64;
                if loops > most {
                    return Err(JitterError::TooManyLoops { loops, most });
                }
                Ok(())
            }
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
        self.record().to_json()
    }

    /// The configuration as its record ([`JitterConfigRecord`]).
    pub fn record(&self) -> JitterConfigRecord {
        JitterConfigRecord {
            mode: Some(self.mode.name().to_string()),
            period_ns: Some(self.period_ns),
            rate_hz: Some(1e9 / self.period_ns as f64),
            fragments: self.fragments.map(|f| FragmentsRecord {
                fragments: Some(u64::from(f.fragments)),
                frames: Some(u64::from(f.frames)),
                sample_rate: Some(u64::from(f.sample_rate)),
                period_ns: Some(f.period_ns()),
                headroom_ns: Some(f.headroom_ns()),
            }),
            busy_percent: Some(self.busy_percent),
            policy: Some(self.policy.to_string()),
            cpus: self.cpus.as_ref().map(|c| engine::rt::format_cpu_list(c)),
            duration_s: match self.length {
                RunLength::Duration(d) => Some(d.as_secs_f64()),
                _ => None,
            },
            loops: match self.length {
                RunLength::Loops(n) => Some(n),
                _ => None,
            },
            histogram_bound_ns: Some(self.hist_bound_ns),
            lock_memory: Some(self.lock_memory),
            dma_latency: Some(self.dma_latency),
            why_above_ns: self.why.map(|w| w.above_ns),
        }
    }
}

/// What the controlling thread reports about ten times a second.
#[derive(Debug, Clone)]
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
    // The trace starts before the thread, so its first wake-ups are covered.
    let session = config
        .why
        .map(|_| crate::why::start(config.cpus.as_deref()));
    let sender = match &session {
        Some(Ok(s)) => Some(s.sender()),
        _ => None,
    };
    let thread_tid = Arc::new(std::sync::atomic::AtomicI32::new(0));
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
        let tid_out = Arc::clone(&thread_tid);
        let why = config.why.zip(sender);
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
                let tid = crate::why::gettid();
                tid_out.store(tid, Ordering::Release);
                if let Some((w, sender)) = why {
                    lp.trace_misses(WhyTap {
                        sender,
                        above_ns: w.above_ns,
                        tid,
                    });
                }
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
            let mut snapshot = live_snapshot(&live, planned);
            if let Some(Ok(s)) = &session {
                snapshot.culprit = crate::why::live_culprit(&s.top());
            }
            progress(Progress {
                live: snapshot,
                checkpoint: due.then_some(&total),
            });
        }
        handle
            .join()
            .map_err(|p| JitterError::Panicked(engine::panic_message(p.as_ref())))?
    });
    let steal = steal.finish();
    let why = session.map(|s| {
        if let Ok(s) = &s {
            s.name_thread("jitter thread", thread_tid.load(Ordering::Acquire));
        }
        crate::why::WhyOutcome::of(s)
    });
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
        why,
    })
}

/// The measuring thread's counters, read for a status line.
fn live_snapshot(live: &Live, planned: u64) -> LiveSnapshot {
    LiveSnapshot {
        cycles: live.cycles.load(Ordering::Relaxed),
        planned,
        last_ns: live.last_ns.load(Ordering::Relaxed),
        max_ns: live.max_ns.load(Ordering::Relaxed),
        overflows: live.overflows.load(Ordering::Relaxed),
        underruns: live.underruns.load(Ordering::Relaxed),
        skipped: live.skipped.load(Ordering::Relaxed),
        culprit: None,
    }
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

#[cfg(test)]
mod tests;

/// The loop, run under `assert_no_alloc`: every allocation or deallocation on the
/// measuring path is counted by the guard allocator, and the tests assert the count is
/// zero. Only in debug builds, where the guard is armed; a control test proves it is.
#[cfg(all(test, debug_assertions))]
mod no_alloc;
