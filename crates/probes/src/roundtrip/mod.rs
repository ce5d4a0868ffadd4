//! The round-trip probe: full-duplex input-to-output latency, as the desktop OS study
//! (MacMillan, Droettboom and Fujinaga, 2001) measured it, on any
//! [`engine::audio::Backend`] whose input hears its output (a cable on hardware, a
//! software loop on JACK, the `virtual` card's loopback).
//!
//! A run sends, on one stream position clock:
//!
//! 1. `impulses` clicks, one every tone period `M`, each found again by its onset
//!    ([`dsp::loopdelay::impulse_onset`]): the study's count of frames between the sent
//!    and the returned onset, in whole frames;
//! 2. then the multi-tone ([`dsp::loopdelay::MultiTone`]) for the rest of the run, read
//!    back in a window of one tone period every `every_periods` periods: a sub-frame
//!    estimate with its error, gain, SNR, polarity and clipping, so the result is a
//!    distribution over the whole run (under load) rather than one instant.
//!
//! Positions are the stream's: an output frame and an input frame at the same position
//! are what the backend calls the same cycle offset. The round trip is the difference of
//! positions, so it includes the playback latency, the capture latency and whatever the
//! loop adds; the backend's reported latencies are stored beside it, and the rest is the
//! loop's `extra`. `insert_delay_frames` delays what audiolat sends by that many whole
//! frames, a delay element in the loop that lets the method prove itself: the figure must
//! grow by exactly that.
//!
//! The audio thread only copies: the signal from a table, the captured frames into a
//! pre-sized ring. The analysis runs on the calling thread.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dsp::loopdelay::{
    impulse_onset, period_for, ImpulseOnset, MultiTone, PhaseEstimate, Verdict, MAX_LOOP_FRAMES,
};
use engine::audio::{AudioError, Backend, Cycle, Io, Processor, StreamInfo};
use engine::clock::monotonic_ns;
use results::{Event, LatencyHistogram, Measurement, Series};
use serde_json::{json, Value};

use crate::stats::{dsp_load_percent, Stats};
use crate::steal::{StealSampler, StealTimeline};

mod analyser;
mod outcome;
mod processor;

use analyser::*;
pub use outcome::*;
use processor::*;

/// What to measure.
#[derive(Clone, Debug, PartialEq)]
pub struct RoundtripConfig {
    /// Time to measure with the multi-tone, after the clicks, in ms.
    pub duration_ms: f64,
    /// Periods between two multi-tone estimates; `None`: one per tone period (windows
    /// side by side).
    pub every_periods: Option<u32>,
    /// Clicks sent first (the study's method).
    pub impulses: u32,
    /// Whole frames audiolat delays its own output by (a delay element in the loop).
    pub insert_delay_frames: u32,
    /// Peak of the test signals (full scale is 1.0).
    pub peak: f32,
    /// The longest loop expected, in frames; `None`: the stream's reported latencies,
    /// [`loop_hint_frames`](Self::loop_hint_frames) and a margin. Sets the tone period
    /// (twice this, at least): a longer loop cannot be told from a shorter one, and is
    /// reported as ambiguous when it reads below the reported latency.
    pub max_delay_frames: Option<f64>,
    /// What the loop itself is known to add, in frames (a virtual card's cable), so the
    /// default tone period covers it.
    pub loop_hint_frames: f64,
    /// Time the stream runs before the first click, in ms.
    pub warmup_ms: f64,
    /// End early when the first clicks and tone windows all find nothing.
    pub give_up_without_signal: bool,
    /// Lock the process's memory (`mlockall`) and hold `/dev/cpu_dma_latency` at 0 for
    /// the run, as a real-time audio program does: a page fault on the audio path (code
    /// first run, a buffer first touched) can cost a period.
    pub lock_memory: bool,
    /// Time between two checkpoints handed to the caller (see
    /// [`RoundtripProgress::checkpoint`]), in ms.
    pub checkpoint_ms: f64,
    /// Causes asked for (`--why`): the kernel traced and each late callback (and each
    /// overrun) of the audio thread explained.
    pub why: Option<crate::why::WhyConfig>,
}

impl Default for RoundtripConfig {
    /// 10 s of multi-tone after 4 clicks, windows side by side, peak 0.5, no inserted
    /// delay, 200 ms of warm-up.
    fn default() -> Self {
        RoundtripConfig {
            duration_ms: 10_000.0,
            every_periods: None,
            impulses: 4,
            insert_delay_frames: 0,
            peak: 0.5,
            max_delay_frames: None,
            loop_hint_frames: 0.0,
            warmup_ms: 200.0,
            give_up_without_signal: true,
            lock_memory: true,
            checkpoint_ms: 5_000.0,
            why: None,
        }
    }
}

/// Most clicks a run sends first (each waits one tone period).
pub const MAX_IMPULSES: u32 = 1000;
/// Most periods between two multi-tone estimates.
pub const MAX_EVERY_PERIODS: u32 = 65_536;
/// Frames the default expected loop adds to the stream's latencies and two periods.
const LOOP_MARGIN_FRAMES: f64 = 2048.0;

impl RoundtripConfig {
    /// Checks the settings; every error says what to use.
    pub fn validate(&self) -> Result<(), RoundtripError> {
        let out_of_range =
            |setting, value: Option<String>| Err(RoundtripError::OutOfRange { setting, value });
        let longest_ms = engine::clock::LONGEST_RUN.as_secs_f64() * 1e3;
        if !(self.duration_ms.is_finite() && (0.0..=longest_ms).contains(&self.duration_ms)) {
            return out_of_range(
                RoundtripSetting::Duration,
                Some(format!("{} s", self.duration_ms / 1e3)),
            );
        }
        if let Some(every) = self.every_periods {
            if !(1..=MAX_EVERY_PERIODS).contains(&every) {
                return out_of_range(RoundtripSetting::Every, Some(every.to_string()));
            }
        }
        if self.impulses > MAX_IMPULSES {
            return out_of_range(RoundtripSetting::Impulses, Some(self.impulses.to_string()));
        }
        if !(self.peak > 0.0 && self.peak <= 1.0) {
            return out_of_range(RoundtripSetting::Level, Some(self.peak.to_string()));
        }
        let most = f64::from(MAX_LOOP_FRAMES);
        if self.insert_delay_frames > MAX_LOOP_FRAMES {
            return out_of_range(
                RoundtripSetting::InsertDelay,
                Some(self.insert_delay_frames.to_string()),
            );
        }
        if let Some(m) = self.max_delay_frames {
            if !(m.is_finite() && (1.0..=most).contains(&m)) {
                return out_of_range(RoundtripSetting::MaxDelay, Some(m.to_string()));
            }
        }
        if !(self.loop_hint_frames.is_finite() && (0.0..=most).contains(&self.loop_hint_frames)) {
            return out_of_range(
                RoundtripSetting::LoopHint,
                Some(self.loop_hint_frames.to_string()),
            );
        }
        // The loop expected before the stream is known: what the stream adds comes on
        // top (see check_against).
        let known = self
            .max_delay_frames
            .unwrap_or(self.loop_hint_frames + LOOP_MARGIN_FRAMES)
            + f64::from(self.insert_delay_frames);
        if known > most {
            return Err(RoundtripError::LoopTooLong {
                frames: known,
                max_delay_given: self.max_delay_frames.is_some(),
            });
        }
        if !(self.warmup_ms.is_finite() && (0.0..=60_000.0).contains(&self.warmup_ms)) {
            return out_of_range(RoundtripSetting::Warmup, None);
        }
        Ok(())
    }

    /// Checks the settings against the opened stream, before anything is started: the
    /// stream must have an input to hear the loop with, the longest expected delay
    /// cannot be shorter than the latency the stream reports (which every loop includes),
    /// and the loop expected with the stream's latencies is at most
    /// [`MAX_LOOP_FRAMES`].
    pub fn check_against(&self, info: &StreamInfo) -> Result<(), RoundtripError> {
        if info.capture_port.is_none() {
            return Err(RoundtripError::NoInput(info.backend.name()));
        }
        let reported = info.playback_latency_frames + info.capture_latency_frames.unwrap_or(0);
        if let Some(max) = self.max_delay_frames {
            if max < f64::from(reported) {
                return Err(RoundtripError::MaxDelayBelowReported { max, reported });
            }
        }
        let expected = self.expected_loop(info);
        if expected > f64::from(MAX_LOOP_FRAMES) {
            return Err(RoundtripError::LoopTooLong {
                frames: expected,
                max_delay_given: self.max_delay_frames.is_some(),
            });
        }
        Ok(())
    }

    /// The longest loop expected on a stream, in frames: `max_delay_frames`, else the
    /// stream's latencies, two periods, a margin and the loop's known delay; plus the
    /// inserted delay.
    fn expected_loop(&self, info: &StreamInfo) -> f64 {
        self.max_delay_frames.unwrap_or_else(|| {
            f64::from(
                info.playback_latency_frames
                    + info.capture_latency_frames.unwrap_or(0)
                    + 2 * info.period_frames,
            ) + LOOP_MARGIN_FRAMES
                + self.loop_hint_frames.max(0.0)
        }) + f64::from(self.insert_delay_frames)
    }

    /// The tone period for a stream: twice the longest expected loop, a power of two.
    /// Both estimators read loops from 0 to one tone period.
    pub fn tone_period(&self, info: &StreamInfo) -> usize {
        period_for(self.expected_loop(info))
    }
}

/// A setting [`RoundtripConfig`] refuses by name: a front end words it with what sets
/// it ([`RoundtripError::message`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundtripSetting {
    /// How long to measure.
    Duration,
    /// The impulse spacing, in periods.
    Every,
    /// The test signal's peak.
    Level,
    /// The delay inserted into the loop.
    InsertDelay,
    /// The longest delay expected.
    MaxDelay,
    /// The clicks sent first.
    Impulses,
    /// What the loop itself is known to add (a virtual card's cable).
    LoopHint,
    /// The warm-up (no user setting: a caller's).
    Warmup,
}

impl RoundtripSetting {
    /// The setting's name in the library's own words.
    pub fn name(self) -> &'static str {
        match self {
            RoundtripSetting::Duration => "the duration",
            RoundtripSetting::Every => "the impulse spacing",
            RoundtripSetting::Level => "the level",
            RoundtripSetting::InsertDelay => "the inserted delay",
            RoundtripSetting::MaxDelay => "the longest expected delay",
            RoundtripSetting::Impulses => "the click count",
            RoundtripSetting::LoopHint => "the loop's known delay",
            RoundtripSetting::Warmup => "warm-up",
        }
    }
}

/// A setting out of range, the setting called `name`.
fn out_of_range(setting: RoundtripSetting, value: Option<&str>, name: &str) -> String {
    let value = value.map(|v| format!(" {v}")).unwrap_or_default();
    let rule = match setting {
        RoundtripSetting::Duration => "is out of range: use 0 s to 7 days (168h)",
        RoundtripSetting::Every => "is out of range: use at least 1 period, at most 65536",
        RoundtripSetting::Level => {
            ": the test signal's peak must be above 0 and at most 1.0 (full scale)"
        }
        RoundtripSetting::InsertDelay => ": use 0 to 65536 frames",
        RoundtripSetting::MaxDelay => " frames: use 1 to 65536 frames",
        RoundtripSetting::Impulses => ": use 0 to 1000 clicks",
        RoundtripSetting::LoopHint => " frames: use 0 to 65536 frames",
        RoundtripSetting::Warmup => "must be 0 to 60000 ms",
    };
    let space = if rule.starts_with([':', ' ']) {
        ""
    } else {
        " "
    };
    format!("{name}{value}{space}{rule}")
}

/// The loop expected (`frames`), longer than [`MAX_LOOP_FRAMES`]: the longest expected
/// delay called `max_delay` when one was given, the inserted delay `insert`.
fn loop_too_long(
    frames: f64,
    max_delay_given: bool,
    name: impl Fn(RoundtripSetting) -> &'static str,
) -> String {
    let (max_delay, insert, hint) = (
        name(RoundtripSetting::MaxDelay),
        name(RoundtripSetting::InsertDelay),
        name(RoundtripSetting::LoopHint),
    );
    let made_of = if max_delay_given {
        format!("{max_delay} plus {insert}")
    } else {
        format!("the stream's latencies, two periods and 2048 frames, plus {hint} and {insert}")
    };
    format!(
        "the longest loop expected is {frames} frames ({made_of}), more than the {MAX_LOOP_FRAMES} frames a round trip measures: use a shorter loop (a smaller {insert}, {hint} or {max_delay})"
    )
}

/// The longest expected delay, called `name`, below the stream's reported latency.
fn below_reported(name: &str, max: f64, reported: u32) -> String {
    format!("{name} {max} frames is shorter than the latency the stream reports ({reported} frames), which every loop includes: use at least {reported}")
}

impl RoundtripError {
    /// The message with each named setting called `name(setting)` (a front end's
    /// flag); other errors as they are.
    pub fn message(&self, name: impl Fn(RoundtripSetting) -> &'static str) -> String {
        match self {
            RoundtripError::OutOfRange { setting, value } => {
                out_of_range(*setting, value.as_deref(), name(*setting))
            }
            RoundtripError::MaxDelayBelowReported { max, reported } => {
                below_reported(name(RoundtripSetting::MaxDelay), *max, *reported)
            }
            RoundtripError::LoopTooLong {
                frames,
                max_delay_given,
            } => loop_too_long(*frames, *max_delay_given, name),
            other => other.to_string(),
        }
    }
}

/// Why a run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RoundtripError {
    /// A setting out of its range; `value` is what was asked, where said.
    #[error("{}", out_of_range(*.setting, .value.as_deref(), RoundtripSetting::name(*.setting)))]
    OutOfRange {
        /// The setting.
        setting: RoundtripSetting,
        /// Its value, as asked.
        value: Option<String>,
    },
    /// The longest expected delay is shorter than the latency the opened stream
    /// reports, which every loop includes.
    #[error("{}", below_reported(RoundtripSetting::MaxDelay.name(), *.max, *.reported))]
    MaxDelayBelowReported {
        /// The longest expected delay, frames.
        max: f64,
        /// The stream's reported playback + capture latency, frames.
        reported: u32,
    },
    /// The loop expected is longer than [`MAX_LOOP_FRAMES`].
    #[error("{}", loop_too_long(*.frames, *.max_delay_given, RoundtripSetting::name))]
    LoopTooLong {
        /// The loop expected, frames.
        frames: f64,
        /// Whether it is the longest expected delay given (else the stream's latencies
        /// and a margin).
        max_delay_given: bool,
    },
    /// The stream has no input to hear the loop with.
    #[error(
        "the {0} stream has no input: a round trip needs one (name the capture port or device)"
    )]
    NoInput(&'static str),
    /// The audio backend failed.
    #[error(transparent)]
    Audio(#[from] AudioError),
}

/// The calling thread's half of a run: the analyser and the rings the audio thread's
/// [`LoopProcessor`] fills.
struct Capture {
    analyser: Analyser,
    shared: Arc<ProcessorShared>,
    samples: rtrb::Consumer<f32>,
    blocks: rtrb::Consumer<(u64, u32)>,
}

/// Builds both halves of a run for a stream and a tone period `n`: the audio thread's
/// copier and the calling thread's [`Capture`]. May allocate (it runs before the stream
/// starts): the rings hold a second of capture, and at least four tone periods.
fn prepare(config: &RoundtripConfig, info: &StreamInfo, n: usize) -> (LoopProcessor, Capture) {
    let tone = Arc::new(MultiTone::new(n, info.sample_rate_hz, config.peak));
    let spacing = n as u64;
    let period = u64::from(info.period_frames);
    let every = match config.every_periods {
        Some(k) => u64::from(k) * period,
        None => spacing,
    };
    let capacity = (info.sample_rate_hz as usize).max(4 * n);
    let (samples_tx, samples) = rtrb::RingBuffer::<f32>::new(capacity);
    let (blocks_tx, blocks) = rtrb::RingBuffer::<(u64, u32)>::new(capacity / 16 + 64);
    let shared = Arc::new(ProcessorShared {
        start: AtomicU64::new(u64::MAX),
        blocks_dropped: AtomicU64::new(0),
    });
    let processor = LoopProcessor {
        tone: tone.clone(),
        warmup_frames: (config.warmup_ms * 1e-3 * f64::from(info.sample_rate_hz)) as u64,
        spacing,
        impulses: u64::from(config.impulses),
        insert: u64::from(config.insert_delay_frames),
        peak: config.peak,
        start: None,
        shared: shared.clone(),
        samples: samples_tx,
        blocks: blocks_tx,
    };
    let analyser = Analyser {
        tone,
        spacing,
        impulses: u64::from(config.impulses),
        every,
        // A returned click must stand well above silence: 1 % of what was sent.
        min_peak: 0.01 * config.peak,
        start: None,
        history: VecDeque::with_capacity(2 * n + capacity),
        history_first: 0,
        next_impulse: 0,
        next_window: 0,
        window_seq: 0,
        clock: None,
        dropouts: Vec::new(),
    };
    let capture = Capture {
        analyser,
        shared,
        samples,
        blocks,
    };
    (processor, capture)
}

/// An outcome with nothing measured yet: the run fills it in as it goes, so a checkpoint
/// is the same figure the end gives; the end and the steal are set when the run ends.
fn empty_outcome(
    config: &RoundtripConfig,
    info: &StreamInfo,
    tone_period: usize,
    memory_locked: bool,
    start_ns: u64,
) -> RoundtripOutcome {
    RoundtripOutcome {
        config: config.clone(),
        info: info.clone(),
        server_graph: None,
        end: RoundtripEnd::Interrupted,
        tone_period,
        impulses: Vec::new(),
        estimates: Vec::new(),
        cycles: 0,
        xruns: 0,
        gaps: 0,
        events: Vec::new(),
        blocks_dropped: 0,
        records_dropped: 0,
        unmatched_captures: None,
        frame_count_restarts: None,
        alloc_violations: 0,
        audio_thread: None,
        duplex_start: None,
        memory_locked,
        dsp: LatencyHistogram::new(1_000_000_000).expect("1 s bound is valid"),
        dsp_overload_cycles: 0,
        steal: StealTimeline::default(),
        start_ns,
        end_ns: start_ns,
        why: None,
    }
}

/// Drains the engine's cycle records and xruns into `outcome` (DSP load, skipped
/// cycles and xruns as events) and gives the analyser the latest cycle's clock.
fn drain_cycles(
    backend: &mut dyn Backend,
    outcome: &mut RoundtripOutcome,
    analyser: &mut Analyser,
    why: &mut Option<(crate::why::CycleTap, Option<i32>)>,
) {
    if let Some((_, tid @ None)) = why {
        *tid = backend.status().audio_tid;
    }
    while let Ok(r) = backend.cycles().pop() {
        if let Some((tap, tid)) = why {
            tap.see(&r, *tid);
        }
        outcome.cycles += 1;
        outcome.dsp.record(r.dsp_ns);
        if r.dsp_ns as f64 > r.cycle.period_ns {
            outcome.dsp_overload_cycles += 1;
        }
        analyser.clock = Some((
            r.cycle.first_frame,
            r.cycle.nominal_ns,
            r.cycle.period_ns,
            r.cycle.frames,
        ));
        if r.gap_frames > 0 {
            analyser
                .dropouts
                .extend(analyser.position_at(r.cycle.callback_ns));
            outcome.events.push(Event {
                mono_ns: r.cycle.callback_ns,
                kind: "skipped_cycles".into(),
                detail: json!({"cycle": r.cycle.index, "frames_skipped": r.gap_frames}),
            });
        }
    }
    for x in backend.take_xruns() {
        analyser.dropouts.extend(analyser.position_at(x.mono_ns));
        outcome.events.push(Event {
            mono_ns: x.mono_ns,
            kind: "xrun".into(),
            detail: json!({"cycles_done": x.cycles_done}),
        });
    }
}

/// Analyses the captured blocks the audio thread handed over (clicks and tone windows
/// into `outcome`), once the stream's first position is known. Stops early when `stop`
/// is raised.
fn analyse_capture(
    capture: &mut Capture,
    block: &mut Vec<f32>,
    outcome: &mut RoundtripOutcome,
    stop: &AtomicBool,
) {
    let analyser = &mut capture.analyser;
    if analyser.start.is_none() {
        let s = capture.shared.start.load(Ordering::Acquire);
        if s != u64::MAX {
            analyser.start = Some(s);
        }
    }
    while let Ok((first, len)) = capture.blocks.pop() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        block.clear();
        for _ in 0..len {
            block.push(capture.samples.pop().unwrap_or(0.0));
        }
        analyser.feed(first, block.iter().copied());
        analyser.analyse(&mut outcome.impulses, &mut outcome.estimates);
    }
}

/// Whether the measurement is over by itself: every click sent and the multi-tone
/// measured for `measure_frames` ([`RoundtripEnd::Complete`]), or, when
/// [`RoundtripConfig::give_up_without_signal`], nothing heard in the clicks and the first
/// windows ([`RoundtripEnd::NoSignal`]).
fn measured_end(
    config: &RoundtripConfig,
    outcome: &RoundtripOutcome,
    analyser: &Analyser,
    measure_frames: u64,
) -> Option<RoundtripEnd> {
    let (impulses, estimates) = (&outcome.impulses, &outcome.estimates);
    let all_clicks = impulses.len() as u64 == u64::from(config.impulses);
    if config.give_up_without_signal
        && all_clicks
        && estimates.len() >= 3
        && impulses.iter().all(|i| i.onset.is_none())
        && estimates
            .iter()
            .all(|e| e.estimate.verdict == Verdict::NoSignal)
    {
        return Some(RoundtripEnd::NoSignal);
    }
    if analyser.start.is_some()
        && analyser.next_window > analyser.tone_start() + analyser.spacing + measure_frames
        && all_clicks
    {
        return Some(RoundtripEnd::Complete);
    }
    None
}

/// Runs the probe on an opened, not yet started backend whose input hears its output.
/// `progress` is called about every 20 ms with what was analysed since the last call;
/// returning `Err(reason)` ends the run as [`RoundtripEnd::ServerGone`]. Raising `stop`
/// ends it as [`RoundtripEnd::Interrupted`]. The backend is stopped before returning.
pub fn run(
    backend: &mut dyn Backend,
    config: &RoundtripConfig,
    stop: &AtomicBool,
    mut progress: impl FnMut(RoundtripProgress<'_>) -> Result<(), String>,
) -> Result<RoundtripOutcome, RoundtripError> {
    config.validate()?;
    let info = backend.info().clone();
    config.check_against(&info)?;
    let n = config.tone_period(&info);
    let (processor, mut capture) = prepare(config, &info, n);
    let process_rt = config
        .lock_memory
        .then(|| engine::rt::ProcessRt::setup(true, Some(0)));
    let memory_locked = process_rt.as_ref().is_some_and(|p| p.memory.current);
    let steal = StealSampler::start(Duration::from_millis(50), None);
    // The trace starts before the stream, so its first callbacks are covered.
    let session = config.why.map(|_| crate::why::start(None));
    let start_ns = monotonic_ns();
    backend.start(Box::new(processor))?;
    let mut outcome = empty_outcome(config, &info, n, memory_locked, start_ns);
    let mut why = match (config.why, &session) {
        (Some(w), Some(Ok(s))) => {
            for (role, tid) in crate::why::server_threads() {
                s.name_thread(&role, tid);
            }
            Some((crate::why::CycleTap::new(s, w), None))
        }
        _ => None,
    };
    let measure_frames = (config.duration_ms * 1e-3 * f64::from(info.sample_rate_hz)) as u64;
    let checkpoint_every = Duration::from_secs_f64((config.checkpoint_ms * 1e-3).max(0.0));
    let mut last_checkpoint = std::time::Instant::now();
    let mut block = Vec::new();
    let mut reported = (0usize, 0usize);
    let end = loop {
        std::thread::sleep(Duration::from_millis(20));
        drain_cycles(backend, &mut outcome, &mut capture.analyser, &mut why);
        analyse_capture(&mut capture, &mut block, &mut outcome, stop);
        let status = backend.status();
        outcome.take_status(&status, &capture.shared);
        let due = outcome.cycles > 0 && last_checkpoint.elapsed() >= checkpoint_every;
        if due {
            last_checkpoint = std::time::Instant::now();
            outcome.end_ns = monotonic_ns();
        }
        let report = progress(RoundtripProgress {
            impulses: &outcome.impulses[reported.0..],
            estimates: &outcome.estimates[reported.1..],
            cycles: outcome.cycles,
            underruns: status.xruns + status.gaps,
            culprit: why.as_ref().and_then(|(tap, _)| tap.culprit()),
            checkpoint: due.then_some(&outcome),
        });
        reported = (outcome.impulses.len(), outcome.estimates.len());
        if let Some(p) = status.panic {
            break RoundtripEnd::Panicked(p);
        }
        if let Some(reason) = status.shutdown {
            break RoundtripEnd::ServerGone(reason);
        }
        if let Err(reason) = report {
            break RoundtripEnd::ServerGone(reason);
        }
        if stop.load(Ordering::Relaxed) {
            break RoundtripEnd::Interrupted;
        }
        if let Some(end) = measured_end(config, &outcome, &capture.analyser, measure_frames) {
            break end;
        }
    };
    backend.stop();
    outcome.end_ns = monotonic_ns();
    if why.is_some() {
        // The last cycles' misses (the counts are the stream's, read below).
        drain_cycles(backend, &mut outcome, &mut capture.analyser, &mut why);
    }
    let status = backend.status();
    outcome.why = session.map(|s| {
        if let (Ok(s), Some(tid)) = (&s, status.audio_tid) {
            s.name_thread("audio thread", tid);
        }
        crate::why::WhyOutcome::of(s)
    });
    outcome.take_status(&status, &capture.shared);
    outcome.end = end;
    outcome.steal = steal.finish();
    for c in outcome.delay_changes() {
        outcome.events.push(Event {
            mono_ns: c.time_ns,
            kind: "delay_change".into(),
            detail: json!({"window": c.window, "from_frames": c.from_frames, "to_frames": c.to_frames}),
        });
    }
    Ok(outcome)
}
