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

use dsp::loopdelay::{impulse_onset, period_for, ImpulseOnset, MultiTone, PhaseEstimate, Verdict};
use engine::audio::{AudioError, Backend, Cycle, Io, Processor, StreamInfo};
use engine::clock::monotonic_ns;
use results::{Event, LatencyHistogram, Measurement, Series};
use serde_json::{json, Value};

use crate::stats::{dsp_load_percent, Stats};
use crate::steal::{StealSampler, StealTimeline};

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
        }
    }
}

impl RoundtripConfig {
    /// Checks the settings; every error says what to use.
    pub fn validate(&self) -> Result<(), RoundtripError> {
        if !(self.duration_ms.is_finite() && self.duration_ms >= 0.0) {
            return Err(RoundtripError::Config(
                "--duration must be 0 s or more".into(),
            ));
        }
        if self.every_periods == Some(0) {
            return Err(RoundtripError::Config(
                "--every must be at least 1 period".into(),
            ));
        }
        if !(self.peak > 0.0 && self.peak <= 1.0) {
            return Err(RoundtripError::Config(format!(
                "--level {}: the test signal's peak must be above 0 and at most 1.0 (full scale)",
                self.peak
            )));
        }
        if self.insert_delay_frames > 1_000_000 {
            return Err(RoundtripError::Config(format!(
                "--insert-delay {}: use 0 to 1000000 frames",
                self.insert_delay_frames
            )));
        }
        if let Some(m) = self.max_delay_frames {
            if !(m.is_finite() && m > 0.0 && m <= 4_000_000.0) {
                return Err(RoundtripError::Config(format!(
                    "--max-delay {m} frames: use 1 to 4000000 frames"
                )));
            }
        }
        if !(self.warmup_ms.is_finite() && self.warmup_ms >= 0.0) {
            return Err(RoundtripError::Config(
                "warm-up must be 0 ms or more".into(),
            ));
        }
        Ok(())
    }

    /// Checks the settings against the opened stream: `--max-delay` cannot be shorter
    /// than the latency the stream reports, which every loop includes.
    pub fn check_against(&self, info: &StreamInfo) -> Result<(), RoundtripError> {
        let reported = info.playback_latency_frames + info.capture_latency_frames;
        match self.max_delay_frames {
            Some(max) if max < f64::from(reported) => Err(RoundtripError::Config(format!(
                "--max-delay {max} frames is shorter than the latency the stream reports ({reported} frames), which every loop includes: use at least {reported}"
            ))),
            _ => Ok(()),
        }
    }

    /// The tone period for a stream: twice the longest expected loop, a power of two.
    /// Both estimators read loops from 0 to one tone period.
    pub fn tone_period(&self, info: &StreamInfo) -> usize {
        let expected = self.max_delay_frames.unwrap_or_else(|| {
            f64::from(
                info.playback_latency_frames + info.capture_latency_frames + 2 * info.period_frames,
            ) + 2048.0
                + self.loop_hint_frames.max(0.0)
        }) + f64::from(self.insert_delay_frames);
        period_for(expected)
    }
}

/// Why a run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RoundtripError {
    /// A bad setting.
    #[error("{0}")]
    Config(String),
    /// The stream has no input to hear the loop with.
    #[error(
        "the {0} stream has no input: a round trip needs one (name the capture port or device)"
    )]
    NoInput(&'static str),
    /// The audio backend failed.
    #[error(transparent)]
    Audio(#[from] AudioError),
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RoundtripEnd {
    /// Measured for the whole duration.
    Complete,
    /// Ended early: nothing came back (see [`RoundtripOutcome::no_loop`]).
    NoSignal,
    /// Stopped by the stop flag (Ctrl-C).
    Interrupted,
    /// The audio server or device went away.
    ServerGone(String),
    /// The processor panicked.
    Panicked(String),
}

/// One click, sent and (perhaps) found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ImpulseRow {
    /// Click number, from 0.
    pub seq: u32,
    /// Stream position the click was meant for (before the inserted delay).
    pub position: u64,
    /// What came back; `None`: nothing above the noise within a tone period.
    pub onset: Option<ImpulseOnset>,
}

/// One multi-tone window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EstimateRow {
    /// Window number, from 0.
    pub seq: u32,
    /// Stream position of the window's first frame.
    pub position: u64,
    /// CLOCK_MONOTONIC ns when the window's last frame was captured (by the stream's
    /// timing).
    pub time_ns: u64,
    /// The estimate.
    pub estimate: PhaseEstimate,
}

/// A step in the loop's delay between two consecutive valid windows: the path dropped or
/// added samples (e.g. a buffer between audiolat and the device that ran dry and came
/// back a period later), whether or not the backend reported an under-run.
#[derive(Debug, Clone, PartialEq)]
pub struct DelayChange {
    /// The first window at the new delay.
    pub window: u32,
    /// When that window was captured, CLOCK_MONOTONIC ns.
    pub time_ns: u64,
    /// The delay before, in frames.
    pub from_frames: f64,
    /// The delay after, in frames.
    pub to_frames: f64,
}

/// Windows closer than this (in frames) read the same delay: the multi-tone estimate's
/// error is a small fraction of a frame, a path that drops or adds samples moves it by
/// whole frames.
pub const DELAY_CHANGE_FRAMES: f64 = 0.5;

/// What the caller gets while the run goes on (about every 20 ms).
pub struct RoundtripProgress<'a> {
    /// Clicks found (or given up on) since the last call.
    pub impulses: &'a [ImpulseRow],
    /// Windows estimated since the last call.
    pub estimates: &'a [EstimateRow],
    /// Cycles so far.
    pub cycles: u64,
    /// Under-runs so far.
    pub underruns: u64,
    /// Every [`RoundtripConfig::checkpoint_ms`] once the stream has run a cycle, what
    /// was measured so far, so the run can be stored as it goes. Its `end` reads
    /// [`RoundtripEnd::Interrupted`] and its steal timeline is empty until the run ends.
    pub checkpoint: Option<&'a RoundtripOutcome>,
}

/// Everything a run measured.
#[derive(Debug)]
pub struct RoundtripOutcome {
    /// The configuration.
    pub config: RoundtripConfig,
    /// The stream.
    pub info: StreamInfo,
    /// How it ended.
    pub end: RoundtripEnd,
    /// The tone's period in frames (also the click spacing).
    pub tone_period: usize,
    /// The clicks.
    pub impulses: Vec<ImpulseRow>,
    /// The multi-tone windows.
    pub estimates: Vec<EstimateRow>,
    /// Cycles run.
    pub cycles: u64,
    /// Under-runs and over-runs the backend reported.
    pub xruns: u64,
    /// Cycles that started after a jump of the stream position.
    pub gaps: u64,
    /// Xrun and gap events with their times.
    pub events: Vec<Event>,
    /// Captured blocks the analysis lost (the ring was full).
    pub blocks_dropped: u64,
    /// Cycle records the reader lost.
    pub records_dropped: u64,
    /// Debug builds with `assert_no_alloc`'s allocator: allocations on the audio thread.
    pub alloc_violations: u64,
    /// The audio thread's scheduling, as it read it in its first cycle.
    pub audio_thread: Option<engine::rt::Policy>,
    /// How a full-duplex ALSA device started (linked, the skew between its directions).
    pub duplex_start: Option<engine::audio::DuplexStart>,
    /// The process's memory was locked for the run.
    pub memory_locked: bool,
    /// Time in the processor per cycle.
    pub dsp: LatencyHistogram,
    /// Cycles whose processing took longer than their period (a DSP overload).
    pub dsp_overload_cycles: u64,
    /// Host steal through the run.
    pub steal: StealTimeline,
    /// Stream start and end, CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    /// When the run ended.
    pub end_ns: u64,
}

/// The audio thread's side: sends the signal, hands the capture over.
struct LoopProcessor {
    tone: Arc<MultiTone>,
    warmup_frames: u64,
    spacing: u64,
    impulses: u64,
    insert: u64,
    peak: f32,
    start: Option<u64>,
    shared: Arc<ProcessorShared>,
    samples: rtrb::Producer<f32>,
    blocks: rtrb::Producer<(u64, u32)>,
}

#[derive(Default)]
struct ProcessorShared {
    /// Stream position of the first click (`u64::MAX` until the first cycle).
    start: AtomicU64,
    blocks_dropped: AtomicU64,
}

impl LoopProcessor {
    /// The reference signal at signal position `q` (from the first click).
    #[inline]
    fn signal(&self, q: i64) -> f32 {
        let clicks = (self.impulses * self.spacing) as i64;
        if q < 0 {
            0.0
        } else if q < clicks {
            if q % self.spacing as i64 == 0 {
                self.peak
            } else {
                0.0
            }
        } else {
            self.tone.sample_at(q - clicks)
        }
    }
}

impl Processor for LoopProcessor {
    fn prepare(&mut self, _: &StreamInfo) {}

    fn process(&mut self, cycle: &Cycle, io: &mut Io<'_>) {
        let start = *self.start.get_or_insert_with(|| {
            let s = cycle.first_frame + self.warmup_frames;
            self.shared.start.store(s, Ordering::Release);
            s
        });
        let base = cycle.first_frame as i64 - start as i64 - self.insert as i64;
        for (i, x) in io.output.iter_mut().enumerate() {
            *x = self.signal(base + i as i64);
        }
        if let Some(input) = io.input {
            if self.samples.slots() >= input.len() && self.blocks.slots() >= 1 {
                for &x in input {
                    let _ = self.samples.push(x);
                }
                let _ = self.blocks.push((cycle.first_frame, input.len() as u32));
            } else {
                self.shared.blocks_dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The analysis side: a contiguous history of the capture, cut into click windows and
/// tone windows as they fill.
struct Analyser {
    tone: Arc<MultiTone>,
    spacing: u64,
    impulses: u64,
    every: u64,
    min_peak: f32,
    start: Option<u64>,
    history: VecDeque<f32>,
    history_first: u64,
    next_impulse: u64,
    next_window: u64,
    window_seq: u32,
    /// The latest cycle's position and time, to date windows.
    clock: Option<(u64, u64, f64, u32)>,
}

impl Analyser {
    fn tone_start(&self) -> u64 {
        self.start.unwrap_or(0) + self.impulses * self.spacing
    }

    /// Adds a captured block; a jump in positions starts the history again (no window
    /// may span a gap).
    fn feed(&mut self, first: u64, samples: impl Iterator<Item = f32>) {
        let end = self.history_first + self.history.len() as u64;
        if self.history.is_empty() || first != end {
            self.history.clear();
            self.history_first = first;
        }
        self.history.extend(samples);
    }

    fn window(&self, from: u64, len: usize) -> Option<Vec<f32>> {
        let end = self.history_first + self.history.len() as u64;
        if from < self.history_first || from + len as u64 > end {
            return None;
        }
        let skip = (from - self.history_first) as usize;
        Some(self.history.range(skip..skip + len).copied().collect())
    }

    fn time_of(&self, position: u64) -> u64 {
        match self.clock {
            Some((first, nominal_ns, period_ns, frames)) => {
                let offset = position as f64 - first as f64;
                (nominal_ns as f64 + offset * period_ns / f64::from(frames.max(1))).max(0.0) as u64
            }
            None => monotonic_ns(),
        }
    }

    /// Clicks and windows that can be analysed now.
    fn analyse(&mut self, impulses: &mut Vec<ImpulseRow>, estimates: &mut Vec<EstimateRow>) {
        let Some(start) = self.start else { return };
        let n = self.tone.period();
        let history_end = self.history_first + self.history.len() as u64;
        while self.next_impulse < self.impulses {
            let sent = start + self.next_impulse * self.spacing;
            if history_end < sent + self.spacing {
                break;
            }
            let onset = self
                .window(sent, self.spacing as usize)
                .and_then(|w| impulse_onset(&w, sent as i64, sent as i64, self.min_peak));
            impulses.push(ImpulseRow {
                seq: self.next_impulse as u32,
                position: sent,
                onset,
            });
            self.next_impulse += 1;
        }
        let tone_start = self.tone_start();
        if self.next_window == 0 {
            // The first window starts a whole tone period after the tone did: every loop
            // shorter than that is in its steady state by then.
            self.next_window = tone_start + n as u64;
        }
        loop {
            let from = self.next_window;
            if history_end < from + n as u64 {
                break;
            }
            if let Some(w) = self.window(from, n) {
                let mut estimate = self.tone.estimate(&w, from as i64 - tone_start as i64);
                // The phase gives the delay modulo the tone period, centred on 0; a loop
                // is causal, so a negative reading is the period minus the loop's excess.
                if estimate.delay_frames < -1.0 {
                    estimate.delay_frames += n as f64;
                }
                estimates.push(EstimateRow {
                    seq: self.window_seq,
                    position: from,
                    time_ns: self.time_of(from + n as u64),
                    estimate,
                });
                self.window_seq += 1;
                self.next_window = from + self.every;
            } else {
                // The history restarted after a gap: the next window starts in it.
                self.next_window = self.history_first.max(from + self.every);
            }
        }
        // Keep what the next click or window still needs.
        let keep_from = if self.next_impulse < self.impulses {
            start + self.next_impulse * self.spacing
        } else {
            self.next_window
        };
        while self.history_first < keep_from && !self.history.is_empty() {
            self.history.pop_front();
            self.history_first += 1;
        }
    }
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
    if info.capture_port.is_none() {
        return Err(RoundtripError::NoInput(info.backend));
    }
    config.check_against(&info)?;
    let n = config.tone_period(&info);
    let tone = Arc::new(MultiTone::new(n, info.sample_rate_hz, config.peak));
    let spacing = n as u64;
    let period = u64::from(info.period_frames);
    let every = match config.every_periods {
        Some(k) => u64::from(k) * period,
        None => spacing,
    };
    // Room for a second of capture, and at least four tone periods.
    let capacity = (info.sample_rate_hz as usize).max(4 * n);
    let (samples_tx, mut samples_rx) = rtrb::RingBuffer::<f32>::new(capacity);
    let (blocks_tx, mut blocks_rx) = rtrb::RingBuffer::<(u64, u32)>::new(capacity / 16 + 64);
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
    let mut analyser = Analyser {
        tone: tone.clone(),
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
    };
    let process_rt = config
        .lock_memory
        .then(|| engine::rt::ProcessRt::setup(true, Some(0)));
    let memory_locked = process_rt.as_ref().is_some_and(|p| p.memory.current);
    let steal = StealSampler::start(Duration::from_millis(50), None);
    let start_ns = monotonic_ns();
    backend.start(Box::new(processor))?;
    // What was measured so far, kept as the outcome itself so a checkpoint is the same
    // figure the end gives; the end and the steal are filled in when the run ends.
    let mut outcome = RoundtripOutcome {
        config: config.clone(),
        info: info.clone(),
        end: RoundtripEnd::Interrupted,
        tone_period: n,
        impulses: Vec::new(),
        estimates: Vec::new(),
        cycles: 0,
        xruns: 0,
        gaps: 0,
        events: Vec::new(),
        blocks_dropped: 0,
        records_dropped: 0,
        alloc_violations: 0,
        audio_thread: None,
        duplex_start: None,
        memory_locked,
        dsp: LatencyHistogram::new(1_000_000_000).expect("1 s bound is valid"),
        dsp_overload_cycles: 0,
        steal: StealTimeline::default(),
        start_ns,
        end_ns: start_ns,
    };
    let measure_frames = (config.duration_ms * 1e-3 * f64::from(info.sample_rate_hz)) as u64;
    let checkpoint_every = Duration::from_secs_f64((config.checkpoint_ms * 1e-3).max(0.0));
    let mut last_checkpoint = std::time::Instant::now();
    let mut block = Vec::new();
    let mut reported = (0usize, 0usize);
    let end = loop {
        std::thread::sleep(Duration::from_millis(20));
        while let Ok(r) = backend.cycles().pop() {
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
                outcome.events.push(Event {
                    mono_ns: r.cycle.callback_ns,
                    kind: "skipped_cycles".into(),
                    detail: json!({"cycle": r.cycle.index, "frames_skipped": r.gap_frames}),
                });
            }
        }
        for x in backend.take_xruns() {
            outcome.events.push(Event {
                mono_ns: x.mono_ns,
                kind: "xrun".into(),
                detail: json!({"cycles_done": x.cycles_done}),
            });
        }
        if analyser.start.is_none() {
            let s = shared.start.load(Ordering::Acquire);
            if s != u64::MAX {
                analyser.start = Some(s);
            }
        }
        while let Ok((first, len)) = blocks_rx.pop() {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            block.clear();
            for _ in 0..len {
                block.push(samples_rx.pop().unwrap_or(0.0));
            }
            analyser.feed(first, block.iter().copied());
            analyser.analyse(&mut outcome.impulses, &mut outcome.estimates);
        }
        let status = backend.status();
        outcome.take_status(&status, &shared);
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
        let (impulses, estimates) = (&outcome.impulses, &outcome.estimates);
        if config.give_up_without_signal
            && impulses.len() as u64 == u64::from(config.impulses)
            && estimates.len() >= 3
            && impulses.iter().all(|i| i.onset.is_none())
            && estimates
                .iter()
                .all(|e| e.estimate.verdict == Verdict::NoSignal)
        {
            break RoundtripEnd::NoSignal;
        }
        if analyser.start.is_some()
            && analyser.next_window > analyser.tone_start() + spacing + measure_frames
            && impulses.len() as u64 == u64::from(config.impulses)
        {
            break RoundtripEnd::Complete;
        }
    };
    backend.stop();
    outcome.end_ns = monotonic_ns();
    outcome.take_status(&backend.status(), &shared);
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

impl RoundtripOutcome {
    /// Takes the stream's counts so far.
    fn take_status(&mut self, status: &engine::audio::StreamStatus, shared: &ProcessorShared) {
        self.xruns = status.xruns;
        self.gaps = status.gaps;
        self.blocks_dropped = shared.blocks_dropped.load(Ordering::Relaxed);
        self.records_dropped = status.records_dropped;
        self.alloc_violations = status.alloc_violations;
        self.audio_thread = status.audio_thread;
        self.duplex_start = status.duplex_start;
    }

    /// Frames per nanosecond's inverse: one frame in ns.
    fn frame_ns(&self) -> f64 {
        1e9 / f64::from(self.info.sample_rate_hz)
    }

    /// The windows whose estimate holds ([`Verdict::Ok`], and not [`wrapped`](Self::wrapped)).
    pub fn valid(&self) -> impl Iterator<Item = &EstimateRow> {
        let ambiguous = self.ambiguous();
        self.estimates.iter().filter(move |e| {
            !ambiguous
                && e.estimate.verdict == Verdict::Ok
                && !self.wrapped(e.estimate.delay_frames)
        })
    }

    /// The loop is longer than the tone period, so no figure can be trusted: the first
    /// click found nothing in its window while later ones found an echo (of the click
    /// before them), or every window that found a delayed copy reads shorter than the
    /// reported latency.
    pub fn ambiguous(&self) -> bool {
        let first_click_lost = self.impulses.first().is_some_and(|i| i.onset.is_none())
            && self.impulses.iter().skip(1).any(|i| i.onset.is_some());
        let found: Vec<f64> = self
            .estimates
            .iter()
            .filter(|e| e.estimate.verdict == Verdict::Ok)
            .map(|e| e.estimate.delay_frames)
            .collect();
        let all_wrapped = !found.is_empty() && found.iter().all(|&f| self.wrapped(f));
        first_click_lost || all_wrapped
    }

    /// A round trip that reads shorter than the latency the stream reports, by more than
    /// a period of slack for a backend whose model over-states it: the loop is longer
    /// than the tone period and the figure wrapped around.
    pub fn wrapped(&self, frames: f64) -> bool {
        frames + f64::from(self.info.period_frames) + 0.5 < f64::from(self.reported_frames())
    }

    /// Windows that found a delayed copy but read shorter than the reported latency.
    pub fn wrapped_windows(&self) -> usize {
        self.estimates
            .iter()
            .filter(|e| e.estimate.verdict == Verdict::Ok && self.wrapped(e.estimate.delay_frames))
            .count()
    }

    /// Statistics of the multi-tone round trip over the valid windows, in frames.
    pub fn measured_frames(&self) -> Stats {
        Stats::of(self.valid().map(|e| e.estimate.delay_frames))
    }

    /// Every step in the delay between consecutive valid windows (see [`DelayChange`]).
    pub fn delay_changes(&self) -> Vec<DelayChange> {
        let mut out = Vec::new();
        let mut previous: Option<f64> = None;
        for e in self.valid() {
            let d = e.estimate.delay_frames;
            if let Some(p) = previous {
                if (d - p).abs() > DELAY_CHANGE_FRAMES {
                    out.push(DelayChange {
                        window: e.seq,
                        time_ns: e.time_ns,
                        from_frames: p,
                        to_frames: d,
                    });
                }
            }
            previous = Some(d);
        }
        out
    }

    /// Statistics of the clicks' onset counts, in frames (wrapped ones left out).
    pub fn impulse_frames(&self) -> Stats {
        Stats::of(
            self.impulses
                .iter()
                .filter_map(|i| i.onset.map(|o| o.frames as f64))
                .filter(|&f| !self.ambiguous() && !self.wrapped(f)),
        )
    }

    /// Nothing was analysed: the run ended before the first click came due.
    pub fn nothing_measured(&self) -> bool {
        self.impulses.is_empty() && self.estimates.is_empty()
    }

    /// Nothing came back: something was sent and analysed, and no click was found and no
    /// window had signal.
    pub fn no_loop(&self) -> bool {
        !self.nothing_measured()
            && self.impulses.iter().all(|i| i.onset.is_none())
            && self
                .estimates
                .iter()
                .all(|e| e.estimate.verdict == Verdict::NoSignal)
    }

    /// The latency the stream reports for a loop: playback plus capture, in frames.
    pub fn reported_frames(&self) -> u32 {
        self.info.playback_latency_frames + self.info.capture_latency_frames
    }

    /// Windows by verdict: (ok, no signal, unreliable).
    pub fn verdicts(&self) -> (usize, usize, usize) {
        let count = |v: Verdict| {
            self.estimates
                .iter()
                .filter(|e| e.estimate.verdict == v)
                .count()
        };
        (
            count(Verdict::Ok),
            count(Verdict::NoSignal),
            count(Verdict::Unreliable),
        )
    }

    /// The loop inverts the signal (in most valid windows).
    pub fn inverted(&self) -> bool {
        let valid = self.valid().count();
        valid > 0 && self.valid().filter(|e| e.estimate.inverted).count() * 2 > valid
    }

    /// Captured samples at full scale, over all windows and clicks.
    pub fn clipped(&self) -> usize {
        self.estimates
            .iter()
            .map(|e| e.estimate.clipped)
            .chain(
                self.impulses
                    .iter()
                    .filter_map(|i| i.onset.map(|o| o.clipped)),
            )
            .sum()
    }

    /// The audio thread ran at a real-time policy.
    pub fn realtime(&self) -> bool {
        self.audio_thread.is_some_and(|p| p.is_realtime())
    }

    /// What the user is told in one line about the loop.
    pub fn verdict_line(&self) -> String {
        let (ok, none, unreliable) = self.verdicts();
        if self.nothing_measured() {
            return "nothing measured: the run ended before the first click was analysed".into();
        }
        let wrapped = self.wrapped_windows();
        if self.ambiguous() {
            return format!(
                "ambiguous: the loop looks longer than the test signal's period ({} frames; the first click found nothing in its window, or the figure reads below the {} frames the stream reports), so it wrapped around; measure again with --max-delay above the loop's length",
                self.tone_period,
                self.reported_frames()
            );
        }
        if self.no_loop() {
            return "no loop found: nothing came back at the input; check the connection (cable, ports, device)".into();
        }
        if ok == 0 {
            return format!(
                "no reliable figure: signal came back, but not as a delayed copy in any of {} windows ({unreliable} unreliable, {none} silent): check for dropouts, distortion or a second signal in the loop",
                self.estimates.len()
            );
        }
        let mut notes = Vec::new();
        if self.inverted() {
            notes.push("the loop inverts polarity".to_string());
        }
        let clipped = self.clipped();
        if clipped > 0 {
            notes.push(format!(
                "{clipped} captured samples at full scale: lower the level (--level) or the gain in the loop"
            ));
        }
        let gain = Stats::of(self.valid().map(|e| e.estimate.gain)).measured();
        if let Some(gain) = gain.map(|g| g.median).filter(|&g| g < 0.01) {
            notes.push(format!(
                "the loop's gain is {:.1} dB: the figure is noisier than it needs to be",
                20.0 * gain.log10()
            ));
        }
        if wrapped > 0 {
            notes.push(format!(
                "{wrapped} windows read shorter than the reported latency (wrapped) and are left out"
            ));
        }
        let changes = self.delay_changes();
        if let Some(first) = changes.first() {
            notes.push(format!(
                "the loop's delay changed {} time{} during the run (first at window {}: {:.1} -> {:.1} frames) with {} under-run{} reported: the path dropped or added samples, so the windows before and after differ",
                changes.len(),
                if changes.len() == 1 { "" } else { "s" },
                first.window,
                first.from_frames,
                first.to_frames,
                self.xruns,
                if self.xruns == 1 { "" } else { "s" }
            ));
        }
        if self.blocks_dropped > 0 {
            notes.push(format!(
                "{} capture blocks dropped: the analysis fell behind the stream",
                self.blocks_dropped
            ));
        }
        if unreliable + none > 0 {
            notes.push(format!(
                "{} of {} windows left out ({unreliable} unreliable, {none} silent)",
                unreliable + none,
                self.estimates.len()
            ));
        }
        let median = |v: &dyn Fn(&EstimateRow) -> f64, digits: usize| {
            Stats::of(self.valid().map(v))
                .measured()
                .map_or("-".to_string(), |s| format!("{:.digits$}", s.median))
        };
        let confidence = format!(
            "loop found (estimator stderr {} frame, SNR {} dB)",
            median(&|e| e.estimate.stderr_frames, 4),
            median(&|e| e.estimate.snr_db, 0)
        );
        if notes.is_empty() {
            confidence
        } else {
            format!("{confidence}; {}", notes.join("; "))
        }
    }

    fn method(&self) -> String {
        format!(
            "multi-tone phase slope ({} partials from {:.0} Hz, period {} frames) over a window every {} frames, {} backend, stream positions output -> input; {} frames inserted by audiolat",
            self.estimates_partials(),
            dsp::loopdelay::LOWEST_PARTIAL_HZ,
            self.tone_period,
            self.config
                .every_periods
                .map_or(self.tone_period as u64, |k| u64::from(k) * u64::from(self.info.period_frames)),
            self.info.backend,
            self.config.insert_delay_frames
        )
    }

    fn estimates_partials(&self) -> usize {
        MultiTone::new(self.tone_period, self.info.sample_rate_hz, self.config.peak)
            .bins()
            .len()
    }

    /// Measurements: the round trip by multi-tone (valid windows) and by click onsets,
    /// both in ns, with frames in their detail.
    pub fn measurements(&self) -> Vec<Measurement> {
        let frame_ns = self.frame_ns();
        let hist = |values: Vec<f64>| {
            let mut h = LatencyHistogram::new(100_000_000_000).expect("100 s bound is valid");
            for v in values {
                h.record((v * frame_ns).max(0.0).round() as u64);
            }
            h
        };
        let measured = self.measured_frames();
        let (ok, none, unreliable) = self.verdicts();
        let mut m = Measurement::from_histogram(
            "roundtrip",
            "roundtrip",
            &self.method(),
            hist(self.valid().map(|e| e.estimate.delay_frames).collect()),
        );
        m.detail = json!({
            "frames": measured.to_json(),
            "spread_frames": measured.measured().map(|m| m.max - m.min),
            "reported_frames": self.reported_frames(),
            "playback_latency_frames": self.info.playback_latency_frames,
            "capture_latency_frames": self.info.capture_latency_frames,
            "inserted_frames": self.config.insert_delay_frames,
            "extra_frames": (measured.count > 0).then(|| measured.mean - f64::from(self.reported_frames()) - f64::from(self.config.insert_delay_frames)),
            "stderr_frames_median": Stats::of(self.valid().map(|e| e.estimate.stderr_frames)).measured().map(|s| s.median),
            "snr_db_median": Stats::of(self.valid().map(|e| e.estimate.snr_db)).measured().map(|s| s.median),
            "gain_median": Stats::of(self.valid().map(|e| e.estimate.gain)).measured().map(|s| s.median),
            "windows": {"ok": ok, "no_signal": none, "unreliable": unreliable},
            "inverted": self.inverted(),
            "clipped_samples": self.clipped(),
            "verdict": self.verdict_line(),
        });
        let mut i = Measurement::from_histogram(
            "roundtrip",
            "roundtrip_impulse",
            &format!(
                "impulse onset count (the desktop OS study's method): a click every {} frames, its onset the first sample at half the returned peak; whole frames",
                self.tone_period
            ),
            hist(
                self.impulses
                    .iter()
                    .filter_map(|i| i.onset.map(|o| o.frames as f64))
                    .collect(),
            ),
        );
        i.detail = json!({
            "frames": self.impulse_frames().to_json(),
            "sent": self.impulses.len(),
            "found": self.impulses.iter().filter(|i| i.onset.is_some()).count(),
        });
        let mut d = Measurement::from_histogram(
            "roundtrip",
            "dsp_time",
            "time in the processor per cycle (signal out, capture handed over)",
            self.dsp.clone(),
        );
        d.detail =
            json!({"dsp_load_percent_mean": dsp_load_percent(&self.dsp, self.info.period_ns())});
        vec![m, i, d]
    }

    /// Every window and every click, as tables.
    pub fn series(&self) -> Vec<Series> {
        let t0 = self.start_ns as f64;
        vec![
            Series {
                name: "roundtrip_windows".into(),
                unit: "frames".into(),
                columns: [
                    "seq",
                    "time_s",
                    "position",
                    "delay_frames",
                    "stderr_frames",
                    "snr_db",
                    "gain",
                    "residual_rad",
                    "inverted",
                    "clipped",
                    "verdict",
                ]
                .map(String::from)
                .to_vec(),
                rows: self
                    .estimates
                    .iter()
                    .map(|e| {
                        let x = &e.estimate;
                        // A window with no signal has no delay, gain or phase: NaN (an
                        // empty cell), not 0.
                        let found = |v: f64| {
                            if x.verdict == Verdict::NoSignal {
                                f64::NAN
                            } else {
                                v
                            }
                        };
                        vec![
                            f64::from(e.seq),
                            (e.time_ns as f64 - t0) / 1e9,
                            e.position as f64,
                            found(x.delay_frames),
                            found(x.stderr_frames),
                            x.snr_db,
                            found(x.gain),
                            found(x.residual_rad),
                            found(f64::from(u8::from(x.inverted))),
                            x.clipped as f64,
                            match x.verdict {
                                Verdict::Ok => 0.0,
                                Verdict::NoSignal => 1.0,
                                Verdict::Unreliable => 2.0,
                            },
                        ]
                    })
                    .collect(),
            },
            Series {
                name: "roundtrip_impulses".into(),
                unit: "frames".into(),
                // A click not found has found = 0 and NaN (stored as null, an empty CSV
                // cell) after it: nothing was measured.
                columns: ["seq", "position", "found", "frames", "peak", "inverted"]
                    .map(String::from)
                    .to_vec(),
                rows: self
                    .impulses
                    .iter()
                    .map(|i| match i.onset {
                        Some(o) => vec![
                            f64::from(i.seq),
                            i.position as f64,
                            1.0,
                            o.frames as f64,
                            f64::from(o.peak),
                            f64::from(u8::from(o.inverted)),
                        ],
                        None => vec![
                            f64::from(i.seq),
                            i.position as f64,
                            0.0,
                            f64::NAN,
                            f64::NAN,
                            f64::NAN,
                        ],
                    })
                    .collect(),
            },
        ]
    }

    /// Validity flags.
    pub fn flags(&self) -> Value {
        let steal_ns = self.steal.total_ns(None);
        let cpus = engine::rt::online_cpus().len();
        let (ok, none, unreliable) = self.verdicts();
        json!({
            "realtime": self.realtime(),
            "interrupted": !matches!(self.end, RoundtripEnd::Complete | RoundtripEnd::NoSignal),
            "host_steal_ns": steal_ns,
            "host_steal_percent": self.steal.percent_of_span(steal_ns, cpus),
            "no_loop": self.no_loop(),
            "inverted": self.inverted(),
            "clipped_samples": self.clipped(),
            "windows_ok": ok,
            "windows_no_signal": none,
            "windows_unreliable": unreliable,
            "xruns": self.xruns,
            "skipped_cycles": self.gaps,
            "delay_changes": self.delay_changes().len(),
            "capture_blocks_dropped": self.blocks_dropped,
            "cycle_records_dropped": self.records_dropped,
            "dsp_overload_cycles": self.dsp_overload_cycles,
            "private_server": self.info.server.private,
            "memory_locked": self.memory_locked,
        })
    }

    /// What the run was granted.
    pub fn qos_granted(&self) -> Value {
        json!({"audio_thread": self.audio_thread.map(|p| p.to_string()),
               "memory_locked": self.memory_locked})
    }

    /// Probe-specific results.
    pub fn result_json(&self) -> Value {
        let frame_ms = self.frame_ns() * 1e-6;
        let measured = self.measured_frames();
        let mut out = crate::event::stream_json(&self.info, self.duplex_start);
        let own = json!({
            "end": match &self.end {
                RoundtripEnd::Complete => "complete".to_string(),
                RoundtripEnd::NoSignal => "no signal".to_string(),
                RoundtripEnd::Interrupted => "interrupted".to_string(),
                RoundtripEnd::ServerGone(r) => format!("server gone: {r}"),
                RoundtripEnd::Panicked(p) => format!("processor panicked: {p}"),
            },
            "tone_period_frames": self.tone_period,
            "roundtrip_frames": measured.to_json(),
            "roundtrip_ms": measured.scaled(frame_ms).to_json(),
            "impulse_frames": self.impulse_frames().to_json(),
            "reported_frames": self.reported_frames(),
            "inserted_frames": self.config.insert_delay_frames,
            "extra_frames": (measured.count > 0).then(|| measured.mean - f64::from(self.reported_frames()) - f64::from(self.config.insert_delay_frames)),
            "verdict": self.verdict_line(),
            "no_loop": self.no_loop(),
            "inverted": self.inverted(),
            "clipped_samples": self.clipped(),
            "windows": self.estimates.len(),
            "delay_changes": self.delay_changes().iter().map(|c| json!({
                "window": c.window, "time_ns": c.time_ns,
                "from_frames": c.from_frames, "to_frames": c.to_frames,
            })).collect::<Vec<_>>(),
            "cycles": self.cycles,
            "xruns": self.xruns,
            "skipped_cycles": self.gaps,
            "dsp_load_percent_mean": dsp_load_percent(&self.dsp, self.info.period_ns()),
            "run_ns": self.end_ns.saturating_sub(self.start_ns),
        });
        crate::event::merge(&mut out, own);
        out
    }
}
