//! What the answer is made of, as data: a verdict's mark and line, each backend's
//! smallest buffer, each wake-up and deadline, the buffers themselves. A leaf: it imports
//! no other module of the summary.

use results::RunId;

/// How a verdict reads: the class it gets in the HTML (`ok`, `warn`, `fail`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// It held: no under-run, no deadline missed.
    Ok,
    /// It held, with something to know (a maximum past a period, a late block).
    Warn,
    /// It did not hold, or the run did not measure.
    Fail,
}

impl Mark {
    /// The HTML class: `ok`, `warn`, `fail`.
    pub fn class(self) -> &'static str {
        match self {
            Mark::Ok => "ok",
            Mark::Warn => "warn",
            Mark::Fail => "fail",
        }
    }
}

/// A verdict, in words: one run's, or the same verdict of several runs at the same
/// setting (a plan's repeats and variants) said once.
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictLine {
    /// The runs it is about.
    pub run_ids: Vec<RunId>,
    /// Held, held with a caveat, or did not.
    pub mark: Mark,
    /// The sentence, e.g. `holds 64-frame periods at 48 kHz under cpu load: 2.90 ms round
    /// trip`.
    pub text: String,
}

/// What one audio backend under one load came to.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendAnswer {
    /// The subject its runs came from in a report of several (`run 3`, `group 2`, `host
    /// a`), `None` in a one-subject report.
    pub source: Option<String>,
    /// The backend in words, e.g. `JACK (jackd -d dummy)`.
    pub backend: String,
    /// The load, e.g. `idle`, `under cpu load`.
    pub load: String,
    /// The shortest buffer in time that held (a complete run with no under-run), if
    /// one did; of two as short, the one that gave the lower latency.
    pub smallest_held: Option<Buffer>,
    /// The longest buffer shorter than `smallest_held` (or any, when none held) whose
    /// complete runs did not hold, with the most under-runs one of them counted.
    pub failed_below: Option<FailedBuffer>,
    /// Of the complete runs at `smallest_held`, how many held and how many there were
    /// (a noisy machine can hold a setting in one run and not in the next).
    pub runs_held_at_smallest: (usize, usize),
    /// The event latency at `smallest_held` (median of the runs' medians), ns.
    pub event_latency_ns: Option<f64>,
    /// Whether a median in `event_latency_ns` is a histogram's bound ("at least").
    pub event_latency_clamped: bool,
    /// The round trip at `smallest_held` (median of the runs' medians), ns.
    pub roundtrip_ns: Option<f64>,
    /// Whether a median in `roundtrip_ns` is a histogram's bound ("at least").
    pub roundtrip_clamped: bool,
    /// Settings whose runs were stopped before their end: they judge nothing.
    pub not_finished: Vec<Buffer>,
    /// Settings whose runs failed (refused, the server gone): they judge nothing.
    pub failed_runs: Vec<Buffer>,
    /// The settings tried, shortest buffer first.
    pub tried: Vec<Buffer>,
}

/// The wake-up latency of one jitter run.
#[derive(Debug, Clone, PartialEq)]
pub struct WakeupAnswer {
    /// The run.
    pub run_id: RunId,
    /// The condition, e.g. `idle`, `under cpu load, 80 % busy`.
    pub condition: String,
    /// Its timer period, ns.
    pub period_ns: Option<f64>,
    /// Wake-ups measured.
    pub count: u64,
    /// 99th percentile, ns.
    pub p99_ns: f64,
    /// 99.9th percentile, ns.
    pub p999_ns: f64,
    /// The largest, ns.
    pub max_ns: f64,
    /// When a percentile fell among the histogram's overflows, its bound: a percentile
    /// at it means "at least".
    pub clamped_at: Option<f64>,
}

impl WakeupAnswer {
    /// Whether a percentile of this run is only a bound ("at least").
    pub fn clamped(&self) -> bool {
        self.clamped_at
            .is_some_and(|b| self.p99_ns >= b || self.p999_ns >= b)
    }
}

/// A deadline the runs judged their values against, and how many missed it: one per
/// kind of deadline and condition, over every run that judged it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadlineAnswer {
    /// The runs.
    pub run_ids: Vec<RunId>,
    /// What missing it means, e.g. `fragment under-runs (3x32 frames, under cpu load)`.
    pub what: String,
    /// The shortest deadline of those runs, ns.
    pub deadline_min_ns: f64,
    /// The longest deadline of those runs, ns (the same as the shortest when one).
    pub deadline_max_ns: f64,
    /// Values that missed it, over the runs.
    pub misses: u64,
    /// Values judged, over the runs.
    pub count: u64,
}

/// Why one run's deadlines were missed, from the kernel's trace (a run that asked for
/// causes: `audiolat jitter --why`).
#[derive(Debug, Clone, PartialEq)]
pub struct WhyAnswer {
    /// The run.
    pub run_id: RunId,
    /// Its condition, e.g. `idle`, `under cpu load`.
    pub condition: String,
    /// What the trace came to, in one line (not traced and why, nothing to explain, or
    /// how many misses it explained).
    pub line: String,
    /// The largest culprit in a sentence (`9 of 12 late wake-ups: kworker/1:2 ran 9.80
    /// ms`), when the trace explained a miss.
    pub sentence: Option<String>,
    /// The culprits shown, largest first, each as a row: name, kind, time over the run,
    /// misses (`9 of 12`).
    pub culprits: Vec<[String; 4]>,
    /// Culprits not shown.
    pub more: usize,
}

/// Everything the summary says, computed from the stored runs only.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Answer {
    /// The machines in words, each distinct one once, in run order (none without runs).
    pub machines: Vec<String>,
    /// Doctor's tally (`22 ok, 5 warn, 1 fail`), when the report has its findings.
    pub doctor: Option<String>,
    /// Per audio backend and load, in the order first run.
    pub backends: Vec<BackendAnswer>,
    /// Per jitter run.
    pub wakeups: Vec<WakeupAnswer>,
    /// Per judged deadline.
    pub deadlines: Vec<DeadlineAnswer>,
    /// Per run that asked why its deadlines were missed.
    pub whys: Vec<WhyAnswer>,
    /// One per run of a measuring probe, in run order.
    pub verdicts: Vec<VerdictLine>,
    /// The caveats that apply, each once, in words.
    pub caveats: Vec<String>,
    /// Cells that made no run, with why (`cell: why`).
    pub not_run: Vec<String>,
}

impl Answer {
    /// Whether any run measured anything the summary reports.
    pub fn measured_anything(&self) -> bool {
        !(self.backends.is_empty()
            && self.wakeups.is_empty()
            && self.deadlines.is_empty()
            && self.verdicts.is_empty())
    }
}

/// An audio buffer as a backend ran it: its period, its whole buffer when stored, at
/// its rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Buffer {
    /// Frames per period.
    pub period_frames: u64,
    /// Frames in the whole buffer (what an ALSA device granted, the playback latency a
    /// server's ports report), when the run stored it.
    pub buffer_frames: Option<u64>,
    /// Sample rate, Hz.
    pub rate_hz: f64,
}

impl Buffer {
    /// The period's duration, ns.
    pub fn period_ns(&self) -> f64 {
        self.period_frames as f64 * 1e9 / self.rate_hz
    }

    /// The whole buffer's duration, ns: one period's when the buffer was not stored.
    pub fn buffer_ns(&self) -> f64 {
        self.buffer_frames.unwrap_or(self.period_frames) as f64 * 1e9 / self.rate_hz
    }

    /// `64/128` (period/buffer), or `64` when the buffer was not stored.
    pub fn frames_words(&self) -> String {
        match self.buffer_frames {
            Some(b) => format!("{}/{b}", self.period_frames),
            None => self.period_frames.to_string(),
        }
    }
}

/// A buffer that did not hold, with the most under-runs and skipped cycles one of its
/// complete runs counted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FailedBuffer {
    /// The setting.
    pub buffer: Buffer,
    /// The most under-runs a run at it counted, when counted.
    pub underruns: Option<u64>,
    /// The most skipped cycles a run at it counted, when counted.
    pub skipped_cycles: Option<u64>,
}
