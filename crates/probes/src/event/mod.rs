//! The event probe: from a trigger to the first sample of a tone at the DAC.
//!
//! This is the BeagleBone Black study's measurement (a key press raises a GPIO and starts
//! a tone; an oscilloscope shows the time from the edge to the sound), done by the
//! machine itself on any backend:
//!
//! - a **trigger** happens at a known CLOCK_MONOTONIC time: a timer at random instants
//!   (default; spread uniformly over the period so the cycle quantisation is sampled
//!   fairly), a key press on the terminal, or a MIDI note-on from a JACK port;
//! - the audio thread starts a note of the [`dsp`] workload at a frame chosen by the
//!   **policy**: `asap` (offset 0 of the first cycle whose callback started after the
//!   trigger: lowest mean, up to one period of jitter) or `fixed` (the trigger's time mapped to a frame exactly
//!   one period later: constant latency, what JACK MIDI gives);
//! - the note's **DAC time** comes from the backend's timing model: the rendering cycle's
//!   start + frame offset / rate + the playback latency the ports report. The start is
//!   the one the engine checked against the callbacks ([`Cycle::checked`]: JACK's own
//!   estimate is off for seconds after an xrun); the latency is that minus the trigger
//!   time, decomposed into the *wait* (trigger to the note's frame position in the
//!   stream), the *buffer* (playback latency), and the rendering callback's *scheduling
//!   lateness* (shown beside them: it costs nothing until the callback starts after its
//!   cycle's deadline, the next cycle's start; such a note is flagged `missed` and left
//!   out of the figures). A note rendered just after a discontinuity (an xrun), when its
//!   cycle's start is not known yet, has no timing figures at all (`timing` is
//!   `unknown`): it is counted and left out of the figures the same way;
//! - with a **loopback** capture (a cable from output to input on real hardware) the
//!   onset is also found in the captured signal, and that measured latency is kept next
//!   to the model's.
//!
//! Notes are placed by splitting the period at event offsets, so every onset is
//! sample-exact. The audio thread only does arithmetic, DSP and pushes into pre-sized
//! `rtrb` rings; this module's [`run`] drains them on the calling thread, builds one
//! [`TriggerRow`] per trigger and hands rows to the caller as they complete, so a run that
//! is interrupted keeps every trigger measured so far.

pub use crate::stats::Stats;
use crate::steal::{StealSampler, StealTimeline};
use dsp::{Workload, WorkloadKind};
use engine::audio::{AudioError, Backend, Cycle, DuplexStart, Io, Processor, StreamInfo};
use engine::clock::{monotonic_ns, sleep_until_ns};
use engine::gpio::{GpioError, GpioLine, GpioSpec};
use engine::rt::{Policy, ProcessRt, ThreadRt};
use results::fmt_number;
use results::hist::LatencyHistogram;
use results::model::{Event, Measurement, TriggerRow};
use results::records::event::EventConfigRecord;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod collector;
mod outcome;
mod processor;
mod triggers;

use collector::*;
pub use outcome::*;
use processor::*;
use triggers::*;

/// Where triggers come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TriggerSource {
    /// A timer at random instants.
    Timer,
    /// Key presses on the terminal (stdin); `q`, Escape or end of input ends the run
    /// (complete, with the triggers pressed so far).
    Key,
    /// MIDI note-ons on the backend's MIDI input.
    Midi,
}

impl std::str::FromStr for TriggerSource {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "timer" => Ok(TriggerSource::Timer),
            "key" => Ok(TriggerSource::Key),
            "midi" => Ok(TriggerSource::Midi),
            o => Err(format!("unknown trigger `{o}`: use timer, key or midi")),
        }
    }
}

impl std::fmt::Display for TriggerSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TriggerSource::Timer => "timer",
            TriggerSource::Key => "key",
            TriggerSource::Midi => "midi",
        })
    }
}

/// The end reason of a key-triggered run whose input ended before the first key press.
pub const NO_KEY_PRESSED: &str =
    "the input ended before the first key press: no note was triggered, nothing was measured";

/// Why standard input cannot give key presses ([`TriggerSource::Key`]); known before a
/// run starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyInputError {
    /// Standard input is not open.
    #[error("standard input is closed")]
    Closed,
    /// Standard input is a character device that is not a terminal (`/dev/null`): it
    /// gives no key presses.
    #[error("standard input is a device that is not a terminal (such as /dev/null), which gives no key presses")]
    NotATerminal,
}

/// Whether standard input can give key presses: a terminal, a pipe or a file can; a
/// closed descriptor or another character device (`/dev/null`) cannot.
pub fn check_key_input() -> Result<(), KeyInputError> {
    // SAFETY: fstat and isatty on descriptor 0 with a valid out-pointer.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(0, &mut st) != 0 {
            return Err(KeyInputError::Closed);
        }
        if st.st_mode & libc::S_IFMT == libc::S_IFCHR && libc::isatty(0) == 0 {
            return Err(KeyInputError::NotATerminal);
        }
    }
    Ok(())
}

/// When a triggered note starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotePolicy {
    /// At offset 0 of the first cycle that sees the trigger.
    Asap,
    /// At the trigger's frame plus one period.
    Fixed,
}

impl std::str::FromStr for NotePolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "asap" => Ok(NotePolicy::Asap),
            "fixed" => Ok(NotePolicy::Fixed),
            o => Err(format!("unknown policy `{o}`: use asap or fixed")),
        }
    }
}

impl std::fmt::Display for NotePolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NotePolicy::Asap => "asap",
            NotePolicy::Fixed => "fixed",
        })
    }
}

/// One event-probe run.
#[derive(Clone, Debug)]
pub struct EventConfig {
    /// Where triggers come from.
    pub source: TriggerSource,
    /// When notes start.
    pub policy: NotePolicy,
    /// Triggers to measure.
    pub triggers: u64,
    /// What the audio thread synthesises.
    pub workload: WorkloadKind,
    /// Tone frequency.
    pub frequency_hz: f32,
    /// Length of each note.
    pub note_ms: f64,
    /// Least time between timer triggers (a random fraction of a period is added).
    pub spacing_ms: f64,
    /// Time after the stream starts before the first timer trigger; under-runs in it
    /// count as "at start".
    pub warmup_ms: f64,
    /// Seed of the trigger times.
    pub seed: u64,
    /// Scheduling of the trigger thread.
    pub trigger_policy: Policy,
    /// Raise this GPIO line at each trigger.
    pub gpio: Option<GpioSpec>,
    /// Loopback onset threshold, as a fraction of the note's first-sample amplitude.
    pub loopback_threshold: f32,
    /// Give up looking for a note's onset in the capture after this long.
    pub loopback_timeout_ms: f64,
    /// Lock memory and hold /dev/cpu_dma_latency at 0 while running.
    pub lock_memory: bool,
    /// Causes asked for (`--why`): the kernel traced and each late callback (and each
    /// overrun) of the audio thread explained.
    pub why: Option<crate::why::WhyConfig>,
}

impl EventConfig {
    /// Defaults: 100 timer triggers, `asap`, a sine at 440 Hz, 30 ms notes every 60 ms or
    /// more, trigger thread at SCHED_FIFO 60.
    pub fn new(source: TriggerSource, policy: NotePolicy) -> EventConfig {
        EventConfig {
            source,
            policy,
            triggers: 100,
            workload: WorkloadKind::Sine,
            frequency_hz: dsp::DEFAULT_FREQUENCY_HZ,
            note_ms: 30.0,
            spacing_ms: 60.0,
            warmup_ms: 500.0,
            seed: 0x5eed_a0d1_0ca7,
            trigger_policy: Policy::Fifo { priority: 60 },
            gpio: None,
            loopback_threshold: 0.5,
            loopback_timeout_ms: 1000.0,
            lock_memory: true,
            why: None,
        }
    }

    /// Checks the numbers, alone and against each other, before anything is started.
    pub fn validate(&self) -> Result<(), EventError> {
        if self.triggers == 0 {
            return Err(EventError::NoTriggers);
        }
        let out_of_range = |setting, value: String| Err(EventError::OutOfRange { setting, value });
        if self.triggers > MAX_TRIGGERS {
            return out_of_range(EventSetting::Triggers, self.triggers.to_string());
        }
        if !(self.note_ms > 0.0 && self.note_ms <= MAX_NOTE_MS) {
            return out_of_range(
                EventSetting::Note,
                format!("{} ms", fmt_number(self.note_ms)),
            );
        }
        if !(self.spacing_ms.is_finite() && self.spacing_ms <= MAX_SPACING_MS) {
            return out_of_range(
                EventSetting::Spacing,
                format!("{} ms", fmt_number(self.spacing_ms)),
            );
        }
        if self.spacing_ms < self.note_ms * 1.5 {
            return Err(EventError::SpacingBelowNote {
                spacing_ms: self.spacing_ms,
                note_ms: self.note_ms,
            });
        }
        if !FREQUENCY_RANGE_HZ.contains(&self.frequency_hz) {
            return out_of_range(
                EventSetting::Frequency,
                format!("{} Hz", fmt_number(f64::from(self.frequency_hz))),
            );
        }
        if self.source == TriggerSource::Timer {
            // The timer's triggers come a spacing apart at least: the run lasts that long.
            let longest_ms = engine::clock::LONGEST_RUN.as_secs_f64() * 1e3;
            if self.triggers as f64 * self.spacing_ms > longest_ms {
                return Err(EventError::TooLong {
                    triggers: self.triggers,
                    most: (longest_ms / self.spacing_ms) as u64,
                });
            }
        }
        if !(self.loopback_threshold > 0.0 && self.loopback_threshold <= 1.0) {
            return Err(EventError::Config(
                "the loopback threshold must be in (0, 1]".into(),
            ));
        }
        Ok(())
    }

    /// The configuration as stored with the run, but for the stream it runs on
    /// (`stream` and `device` left empty: the probe fills them in when the stream is open).
    pub fn record(&self) -> EventConfigRecord {
        EventConfigRecord {
            stream: Default::default(),
            device: None,
            trigger: Some(self.source.to_string()),
            policy: Some(self.policy.to_string()),
            triggers: Some(self.triggers),
            workload: Some(self.workload.to_string()),
            voices: Some(self.workload.voices() as u64),
            frequency_hz: Some(f64::from(self.frequency_hz)),
            note_ms: Some(self.note_ms),
            spacing_ms: Some(self.spacing_ms),
            warmup_ms: Some(self.warmup_ms),
            seed: Some(self.seed),
            trigger_policy: Some(self.trigger_policy.to_string()),
            gpio: self.gpio.as_ref().map(|g| g.to_string()),
            loopback_threshold: Some(f64::from(self.loopback_threshold)),
            lock_memory: Some(self.lock_memory),
            why_above_ns: self.why.map(|w| w.above_ns),
        }
    }
}

/// Most triggers in a run (each is a stored row).
pub const MAX_TRIGGERS: u64 = 1_000_000;
/// Longest note, ms.
pub const MAX_NOTE_MS: f64 = 10_000.0;
/// Longest least time between timer triggers, ms.
pub const MAX_SPACING_MS: f64 = 60_000.0;
/// The tone frequencies a note may have, Hz (what is heard; below the Nyquist frequency
/// of the stream's rate too, see [`EventConfig::check_against`]).
pub const FREQUENCY_RANGE_HZ: std::ops::RangeInclusive<f32> = 20.0..=20_000.0;

/// A setting [`EventConfig::validate`] refuses by name: a front end words it with what
/// sets it ([`EventError::message`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventSetting {
    /// Triggers in a run.
    Triggers,
    /// The note's length.
    Note,
    /// The least time between timer triggers.
    Spacing,
    /// The tone's frequency.
    Frequency,
}

impl EventSetting {
    /// The setting's name in the library's own words.
    pub fn name(self) -> &'static str {
        match self {
            EventSetting::Triggers => "the trigger count",
            EventSetting::Note => "the note length",
            EventSetting::Spacing => "the trigger spacing",
            EventSetting::Frequency => "the tone frequency",
        }
    }

    /// What the setting takes.
    fn range(self) -> String {
        match self {
            EventSetting::Triggers => format!("use 1 to {MAX_TRIGGERS}"),
            EventSetting::Note => format!("use more than 0 and at most {MAX_NOTE_MS} ms"),
            EventSetting::Spacing => {
                format!("use at most {MAX_SPACING_MS} ms (and 1.5 notes at least)")
            }
            EventSetting::Frequency => format!(
                "use {} to {} Hz",
                FREQUENCY_RANGE_HZ.start(),
                FREQUENCY_RANGE_HZ.end()
            ),
        }
    }
}

/// The message of an [`EventError`] that names settings, each called `name(setting)`.
fn event_message(e: &EventError, name: &dyn Fn(EventSetting) -> &'static str) -> Option<String> {
    Some(match e {
        EventError::OutOfRange { setting, value } => {
            format!("{} {value} is out of range: {}", name(*setting), setting.range())
        }
        EventError::SpacingBelowNote {
            spacing_ms,
            note_ms,
        } => format!(
            "{} {} ms is too short for {} {} ms: notes need silence between them, use at least {} ms",
            name(EventSetting::Spacing),
            fmt_number(*spacing_ms),
            name(EventSetting::Note),
            fmt_number(*note_ms),
            fmt_number(note_ms * 1.5)
        ),
        EventError::TooLong { triggers, most } => format!(
            "{} {triggers} at {} apart would take longer than {}, the longest audiolat measures for: use 1 to {most}",
            name(EventSetting::Triggers),
            name(EventSetting::Spacing),
            engine::clock::LONGEST_RUN_WORDS
        ),
        EventError::AboveNyquist {
            frequency_hz,
            rate_hz,
        } => format!(
            "{} {frequency_hz} Hz is at or above half the stream's rate of {rate_hz} Hz, which cannot carry it: use {} to {} Hz",
            name(EventSetting::Frequency),
            FREQUENCY_RANGE_HZ.start(),
            (*rate_hz as f32 / 2.0 - 1.0).min(*FREQUENCY_RANGE_HZ.end())
        ),
        _ => return None,
    })
}

impl EventError {
    /// The message with each named setting called `name(setting)` (a front end's flag);
    /// other errors as they are.
    pub fn message(&self, name: impl Fn(EventSetting) -> &'static str) -> String {
        event_message(self, &name).unwrap_or_else(|| self.to_string())
    }
}

/// Why the event probe could not run.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    /// A bad setting.
    #[error("{0}")]
    Config(String),
    /// The run was asked for no triggers.
    #[error("the number of triggers must be at least 1")]
    NoTriggers,
    /// A named setting out of its range; `value` is what was asked, with its unit.
    #[error("{}", event_message(self, &EventSetting::name).unwrap_or_default())]
    OutOfRange {
        /// The setting.
        setting: EventSetting,
        /// Its value, as asked.
        value: String,
    },
    /// Timer triggers closer than one and a half notes.
    #[error("{}", event_message(self, &EventSetting::name).unwrap_or_default())]
    SpacingBelowNote {
        /// The spacing, ms.
        spacing_ms: f64,
        /// The note's length, ms.
        note_ms: f64,
    },
    /// Timer triggers that would take longer than
    /// [`LONGEST_RUN`](engine::clock::LONGEST_RUN).
    #[error("{}", event_message(self, &EventSetting::name).unwrap_or_default())]
    TooLong {
        /// Triggers asked for.
        triggers: u64,
        /// The most that fit.
        most: u64,
    },
    /// A tone at or above the stream's Nyquist frequency.
    #[error("{}", event_message(self, &EventSetting::name).unwrap_or_default())]
    AboveNyquist {
        /// The tone, Hz.
        frequency_hz: f32,
        /// The stream's rate, Hz.
        rate_hz: u32,
    },
    /// A GPIO line was asked for with MIDI triggers.
    #[error("a GPIO line needs timer or key triggers: a MIDI note-on arrives inside the audio cycle, with no moment to raise a line at")]
    GpioWithMidi,
    /// The audio backend failed.
    #[error(transparent)]
    Audio(#[from] AudioError),
    /// The GPIO line could not be used.
    #[error(transparent)]
    Gpio(#[from] GpioError),
    /// A thread could not be started.
    #[error("starting the {what} thread: {source}")]
    Thread {
        /// Which thread.
        what: &'static str,
        /// The error.
        source: std::io::Error,
    },
}

impl EventConfig {
    /// Checks the settings against the opened stream, before anything is started: the
    /// tone below the Nyquist frequency of the stream's rate ([`Self::check_rate`]), and
    /// a source the stream can serve (MIDI triggers need its MIDI input).
    pub fn check_against(&self, info: &StreamInfo) -> Result<(), EventError> {
        self.check_rate(info.sample_rate_hz)?;
        check_source(self, info)
    }

    /// Checks the tone against a stream rate of `rate_hz`: a tone at or above half the
    /// rate cannot be carried (it folds back as another tone).
    pub fn check_rate(&self, rate_hz: u32) -> Result<(), EventError> {
        if f64::from(self.frequency_hz) >= f64::from(rate_hz) / 2.0 {
            return Err(EventError::AboveNyquist {
                frequency_hz: self.frequency_hz,
                rate_hz,
            });
        }
        Ok(())
    }
}

/// Refuses trigger sources the backend or the settings cannot serve: MIDI triggers
/// without the backend's MIDI input, or with a GPIO line to raise.
fn check_source(config: &EventConfig, info: &StreamInfo) -> Result<(), EventError> {
    if config.source == TriggerSource::Midi && info.midi_port.is_none() {
        return Err(EventError::Config(
            "MIDI triggers need the backend's MIDI input: open it with a MIDI port".into(),
        ));
    }
    if config.source == TriggerSource::Midi && config.gpio.is_some() {
        return Err(EventError::GpioWithMidi);
    }
    Ok(())
}

/// The audio thread's half, before [`Processor::prepare`] sizes it to the stream.
fn new_processor(
    config: &EventConfig,
    triggers: rtrb::Consumer<Trigger>,
    notes: rtrb::Producer<NoteStart>,
    onsets: rtrb::Producer<Onset>,
    counters: Arc<Counters>,
) -> EventProcessor {
    EventProcessor {
        workload: Workload::new(config.workload, config.frequency_hz),
        policy: config.policy,
        midi: config.source == TriggerSource::Midi,
        triggers,
        notes,
        onsets,
        counters,
        scheduled: [None; MAX_SCHEDULED],
        awaiting: [None; MAX_AWAITING],
        note_end_frame: None,
        heard_until: 0,
        loop_frames: 0,
        disrupted_until: None,
        next_frame: None,
        note_frames: 0,
        max_frames: 0,
        threshold: config.loopback_threshold,
        timeout_frames: 0,
        midi_seq: 0,
        note_ms: config.note_ms,
        loopback_timeout_ms: config.loopback_timeout_ms,
    }
}

/// The calling thread's half, empty, for a stream started at `start_ns`.
fn new_collector(config: &EventConfig, info: &StreamInfo, start_ns: u64) -> Collector {
    let hist = || LatencyHistogram::new(1_000_000_000).expect("1 s bound is valid");
    Collector {
        source: config.source.to_string(),
        loopback: info.capture_port.is_some(),
        buffer_ns: info.buffer_ns(),
        capture_frames: info.capture_latency_frames.map(f64::from),
        frame_ns: 1e9 / info.sample_rate_hz as f64,
        stage_start_ns: start_ns + (config.warmup_ms * 1e6) as u64,
        timer: config.source == TriggerSource::Timer,
        rows: Vec::new(),
        waiting: Vec::new(),
        reported: 0,
        events: Vec::new(),
        cycles: 0,
        lateness: hist(),
        early: hist(),
        dsp: hist(),
        dsp_misses: 0,
        cycles_timing_unknown: 0,
        period_ns: info.period_ns(),
        xruns: (0, 0),
        gaps: (0, 0),
        first_trigger_ns: None,
        fixed_shifts: Vec::new(),
        why: None,
        audio_tid: None,
    }
}

/// What the calling thread reads from the other two while the run goes on.
struct Watched<'a> {
    counters: &'a Counters,
    /// The stream's period, from its info at the start.
    period_ns: f64,
    /// Raised by the trigger thread when its input ended (`q`, Escape, end of input).
    input_ended: &'a AtomicBool,
    notes: &'a mut rtrb::Consumer<NoteStart>,
    onsets: &'a mut rtrb::Consumer<Onset>,
}

/// The calling thread's loop: every 20 ms drains the rings into `c`, hands new rows to
/// `progress` and checks whether the run is over; returns why it ended. A run ends
/// [`EventEnd::Complete`] when every trigger is measured or handed on (dropped), or when
/// the trigger thread's input ended and no note is left to start.
fn collect_until_end(
    backend: &mut dyn Backend,
    config: &EventConfig,
    c: &mut Collector,
    w: Watched<'_>,
    stop: &AtomicBool,
    progress: &mut impl FnMut(EventProgress<'_>) -> Result<(), String>,
) -> EventEnd {
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let new_events = c.drain(backend, w.notes, w.onsets);
        let report = c.report(&new_events, progress);
        let status = backend.status();
        if let Some(p) = status.panic {
            return EventEnd::Panicked(p);
        }
        if let Some(reason) = status.shutdown {
            return EventEnd::ServerGone(reason);
        }
        if let Err(reason) = report {
            return EventEnd::ServerGone(reason);
        }
        if stop.load(Ordering::Relaxed) {
            return EventEnd::Interrupted;
        }
        let measured = c.rows.len() as u64;
        if measured >= config.triggers {
            return EventEnd::Complete;
        }
        let handed = w.counters.triggers_dropped.load(Ordering::Relaxed)
            + w.counters.notes_dropped.load(Ordering::Relaxed);
        if measured + handed >= config.triggers && c.waiting.is_empty() {
            return EventEnd::Complete;
        }
        if w.input_ended.load(Ordering::SeqCst) && c.waiting.is_empty() && w.notes.is_empty() {
            // The trigger thread is done; give the audio thread two periods to start
            // the last notes.
            std::thread::sleep(Duration::from_nanos((w.period_ns * 2.0) as u64));
            if w.notes.is_empty() {
                // `q`, Escape or the end of the input: the user ended the run.
                return EventEnd::Complete;
            }
        }
    }
}

/// Runs the probe on an opened, not yet started backend. `progress` is called about every
/// 20 ms with the rows completed since the last call, and once more after the stream has
/// stopped with the rest (so every trigger measured reaches the caller); returning
/// `Err(reason)` ends the run as [`EventEnd::ServerGone`] (the caller watches a private
/// server's process). Raising `stop` ends it as [`EventEnd::Interrupted`]. The backend is
/// stopped before returning.
pub fn run(
    backend: &mut dyn Backend,
    config: &EventConfig,
    stop: &AtomicBool,
    mut progress: impl FnMut(EventProgress<'_>) -> Result<(), String>,
) -> Result<EventOutcome, EventError> {
    config.validate()?;
    let info = backend.info().clone();
    config.check_against(&info)?;
    let gpio = match &config.gpio {
        Some(spec) => Some(GpioLine::open(spec, "audiolat")?),
        None => None,
    };
    let process_rt = config.lock_memory.then(|| ProcessRt::setup(true, Some(0)));
    let memory_locked = process_rt.as_ref().is_some_and(|p| p.memory.current);
    let capacity = 4096;
    let (trigger_tx, trigger_rx) = rtrb::RingBuffer::new(capacity);
    let (note_tx, mut note_rx) = rtrb::RingBuffer::new(capacity);
    let (onset_tx, mut onset_rx) = rtrb::RingBuffer::new(capacity);
    let counters = Arc::new(Counters::default());
    let processor = new_processor(config, trigger_rx, note_tx, onset_tx, counters.clone());
    let steal = StealSampler::start(Duration::from_millis(50), None);
    // The trace starts before the stream, so its first callbacks are covered.
    let session = config.why.map(|_| crate::why::start(None));
    let start_ns = monotonic_ns();
    backend.start(Box::new(processor))?;
    let mut c = new_collector(config, &info, start_ns);
    if let (Some(w), Some(Ok(s))) = (config.why, &session) {
        c.why = Some(crate::why::CycleTap::new(s, w));
        for (role, tid) in crate::why::server_threads() {
            s.name_thread(&role, tid);
        }
    }

    let done = AtomicBool::new(false);
    let input_ended = AtomicBool::new(false);
    let (trigger_rt, end) = std::thread::scope(|s| -> Result<_, EventError> {
        let handle = if config.source == TriggerSource::Midi {
            None
        } else {
            let (cfg, counters, done, input_ended) = (config, &*counters, &done, &input_ended);
            let period_ns = info.period_ns();
            Some(
                std::thread::Builder::new()
                    .name("audiolat-trigger".into())
                    .spawn_scoped(s, move || {
                        trigger_thread(
                            cfg,
                            period_ns,
                            start_ns,
                            trigger_tx,
                            gpio,
                            counters,
                            done,
                            input_ended,
                        )
                    })
                    .map_err(|e| EventError::Thread {
                        what: "trigger",
                        source: e,
                    })?,
            )
        };
        let watched = Watched {
            counters: &counters,
            period_ns: info.period_ns(),
            input_ended: &input_ended,
            notes: &mut note_rx,
            onsets: &mut onset_rx,
        };
        let end = collect_until_end(backend, config, &mut c, watched, stop, &mut progress);
        done.store(true, Ordering::SeqCst);
        Ok((handle.and_then(|h| h.join().ok()), end))
    })?;
    backend.stop();
    let end_ns = monotonic_ns();
    // The last records, notes and onsets; rows still waiting for a loopback onset keep
    // their model latency. Every row reaches the caller.
    let new_events = c.drain(backend, &mut note_rx, &mut onset_rx);
    let mut waiting = std::mem::take(&mut c.waiting);
    c.rows.append(&mut waiting);
    let _ = c.report(&new_events, &mut progress);
    c.rows.sort_by_key(|r| r.seq);
    let status = backend.status();
    drop(process_rt);
    let why = session.map(|s| {
        if let (Ok(s), Some(tid)) = (&s, status.audio_tid) {
            s.name_thread("audio thread", tid);
        }
        crate::why::WhyOutcome::of(s)
    });
    Ok(EventOutcome {
        config: config.clone(),
        info,
        server_graph: None,
        end,
        rows: c.rows,
        cycles: c.cycles,
        lateness: c.lateness,
        early: c.early,
        dsp: c.dsp,
        dsp_misses: c.dsp_misses,
        cycles_timing_unknown: c.cycles_timing_unknown,
        xruns: c.xruns,
        gaps: c.gaps,
        underrun_events: c.events,
        dropped: counters.triggers_dropped.load(Ordering::Relaxed)
            + counters.notes_dropped.load(Ordering::Relaxed),
        midi_dropped: counters.midi_dropped.load(Ordering::Relaxed),
        onsets_moved: counters.onsets_moved.load(Ordering::Relaxed),
        records_dropped: status.records_dropped,
        unmatched_captures: status.unmatched_captures,
        frame_count_restarts: status.frame_count_restarts,
        oversized_cycles: counters.oversized_cycles.load(Ordering::Relaxed),
        alloc_violations: status.alloc_violations,
        trigger_thread: trigger_rt,
        audio_thread: status.audio_thread,
        duplex_start: status.duplex_start,
        memory_locked,
        steal: steal.finish(),
        start_ns,
        end_ns,
        first_trigger_ns: c.first_trigger_ns,
        fixed_shifts_frames: c.fixed_shifts,
        why,
    })
}

#[cfg(test)]
mod tests;
