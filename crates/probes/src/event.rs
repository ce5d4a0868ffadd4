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
//!   **policy**: `asap` (offset 0 of the first cycle that sees the trigger: lowest mean,
//!   up to one period of jitter) or `fixed` (the trigger's time mapped to a frame exactly
//!   one period later: constant latency, what JACK MIDI gives);
//! - the note's **DAC time** comes from the backend's timing model: the rendering cycle's
//!   nominal start + frame offset / rate + the playback latency the ports report. The
//!   latency is that minus the trigger time, decomposed into the *wait* (trigger to the
//!   note's frame position in the stream), the *buffer* (playback latency), and the
//!   rendering callback's *scheduling lateness* (shown beside them: it costs nothing
//!   until the callback starts after its cycle's deadline, the next cycle's start; such
//!   a note is flagged `missed` and left out of the figures);
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
use results::hist::LatencyHistogram;
use results::model::{Event, Measurement, TriggerRow};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

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
        }
    }

    /// Checks the numbers against each other.
    pub fn validate(&self) -> Result<(), EventError> {
        if self.triggers == 0 {
            return Err(EventError::Config("--triggers must be at least 1".into()));
        }
        if !(self.note_ms > 0.0 && self.note_ms <= 10_000.0) {
            return Err(EventError::Config(format!(
                "note length {} ms: use more than 0 and at most 10000 ms",
                self.note_ms
            )));
        }
        if self.spacing_ms < self.note_ms * 1.5 {
            return Err(EventError::Config(format!(
                "trigger spacing {} ms is too short for {} ms notes: notes need silence between them, use at least {} ms",
                self.spacing_ms,
                self.note_ms,
                self.note_ms * 1.5
            )));
        }
        if !(self.loopback_threshold > 0.0 && self.loopback_threshold <= 1.0) {
            return Err(EventError::Config(
                "the loopback threshold must be in (0, 1]".into(),
            ));
        }
        Ok(())
    }

    /// The configuration as stored with the run.
    pub fn to_json(&self) -> Value {
        json!({
            "trigger": self.source.to_string(),
            "policy": self.policy.to_string(),
            "triggers": self.triggers,
            "workload": self.workload.to_string(),
            "voices": self.workload.voices(),
            "frequency_hz": self.frequency_hz,
            "note_ms": self.note_ms,
            "spacing_ms": self.spacing_ms,
            "warmup_ms": self.warmup_ms,
            "seed": self.seed,
            "trigger_policy": self.trigger_policy.to_string(),
            "gpio": self.gpio.as_ref().map(|g| g.to_string()),
            "loopback_threshold": self.loopback_threshold,
            "lock_memory": self.lock_memory,
        })
    }
}

/// Why the event probe could not run.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    /// A bad setting.
    #[error("{0}")]
    Config(String),
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

/// A trigger on its way to the audio thread.
#[derive(Clone, Copy, Debug, Default)]
struct Trigger {
    seq: u64,
    t_ns: u64,
}

/// A note the audio thread started, reported to the probe thread.
#[derive(Clone, Copy, Debug, Default)]
struct NoteStart {
    seq: u64,
    trigger_ns: u64,
    /// The cycle that rendered the note: its DAC time is read on this cycle's timing.
    cycle: Cycle,
    offset: u32,
    late: bool,
}

/// A loopback onset (or its absence) for a note.
#[derive(Clone, Copy, Debug, Default)]
struct Onset {
    seq: u64,
    /// Stream position of the onset in the capture; `None` when it was not found in time.
    captured_frame: Option<u64>,
}

#[derive(Clone, Copy, Debug)]
struct Scheduled {
    seq: u64,
    trigger_ns: u64,
    frame: u64,
    late: bool,
}

#[derive(Clone, Copy, Debug)]
struct Awaiting {
    seq: u64,
    from_frame: u64,
}

const MAX_SCHEDULED: usize = 32;
const MAX_AWAITING: usize = 16;

#[derive(Default)]
struct Counters {
    triggers_dropped: AtomicU64,
    notes_dropped: AtomicU64,
    oversized_cycles: AtomicU64,
    midi_dropped: AtomicU64,
    midi_seen: AtomicU64,
}

/// The audio-thread half of the probe.
struct EventProcessor {
    workload: Workload,
    policy: NotePolicy,
    midi: bool,
    triggers: rtrb::Consumer<Trigger>,
    notes: rtrb::Producer<NoteStart>,
    onsets: rtrb::Producer<Onset>,
    counters: Arc<Counters>,
    scheduled: [Option<Scheduled>; MAX_SCHEDULED],
    awaiting: [Option<Awaiting>; MAX_AWAITING],
    note_end_frame: Option<u64>,
    /// Capture frames before this position belong to notes whose onset was found (the
    /// note and a quarter of its length after it): a loop longer than the spacing between
    /// triggers brings the previous note back while the next one is awaited. Timer
    /// triggers are spaced 1.5 notes apart at least; notes triggered closer (keys, MIDI)
    /// overlap in the capture too, and the later one's onset is looked for after this.
    heard_until: u64,
    note_frames: u64,
    max_frames: usize,
    threshold: f32,
    timeout_frames: u64,
    midi_seq: u64,
    note_ms: f64,
    loopback_timeout_ms: f64,
}

impl EventProcessor {
    fn schedule(&mut self, s: Scheduled) {
        match self.scheduled.iter_mut().find(|x| x.is_none()) {
            Some(slot) => *slot = Some(s),
            None => {
                self.counters.notes_dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl Processor for EventProcessor {
    fn prepare(&mut self, info: &StreamInfo) {
        self.max_frames = info.period_frames as usize;
        self.workload
            .prepare(info.sample_rate_hz, info.period_frames as usize);
        self.note_frames = (self.note_ms * info.sample_rate_hz as f64 / 1e3).round() as u64;
        self.timeout_frames =
            (self.loopback_timeout_ms * info.sample_rate_hz as f64 / 1e3).round() as u64;
    }

    fn process(&mut self, cycle: &Cycle, io: &mut Io<'_>) {
        let n = cycle.frames as u64;
        let first = cycle.first_frame;
        let end = first + n;
        if io.output.len() > self.max_frames {
            // The server changed its buffer size beyond what was prepared: stay silent
            // rather than allocate on this thread.
            io.output.fill(0.0);
            self.counters
                .oversized_cycles
                .fetch_add(1, Ordering::Relaxed);
            return;
        }
        // 1. New triggers become scheduled notes.
        if self.midi {
            self.counters
                .midi_dropped
                .fetch_add(io.midi_dropped as u64, Ordering::Relaxed);
            for note in io.note_ons {
                // JACK MIDI: an event read in this cycle at offset k happened during the
                // previous period at offset k.
                let trigger_ns =
                    (cycle.frame_time_ns(note.offset as f64) - cycle.period_ns).max(0.0) as u64;
                let frame = match self.policy {
                    NotePolicy::Asap => first,
                    NotePolicy::Fixed => first + note.offset as u64,
                };
                let seq = self.midi_seq;
                self.midi_seq += 1;
                self.counters.midi_seen.fetch_add(1, Ordering::Relaxed);
                self.schedule(Scheduled {
                    seq,
                    trigger_ns,
                    frame,
                    late: false,
                });
            }
        }
        while let Ok(t) = self.triggers.pop() {
            let (frame, late) = match self.policy {
                NotePolicy::Asap => (first, false),
                NotePolicy::Fixed => {
                    let target = (cycle.frame_at(t.t_ns) + n as f64).round();
                    if target < first as f64 {
                        (first, true)
                    } else {
                        (target as u64, false)
                    }
                }
            };
            self.schedule(Scheduled {
                seq: t.seq,
                trigger_ns: t.t_ns,
                frame,
                late,
            });
        }
        // 2. Events inside this cycle, in frame order: note-ons and the note-off.
        let mut starts: [(u32, usize); MAX_SCHEDULED] = [(u32::MAX, 0); MAX_SCHEDULED];
        let mut n_starts = 0;
        for (i, slot) in self.scheduled.iter_mut().enumerate() {
            if let Some(s) = slot {
                if s.frame < end {
                    if s.frame < first {
                        // Its frame went by unrendered (the stream skipped cycles): it
                        // starts at offset 0, late.
                        s.late = true;
                    }
                    starts[n_starts] = ((s.frame.max(first) - first) as u32, i);
                    n_starts += 1;
                }
            }
        }
        starts[..n_starts].sort_unstable();
        let off_at = self
            .note_end_frame
            .filter(|&f| f < end)
            .map(|f| (f.max(first) - first) as u32);
        // 3. Render in segments split at the events.
        let out = &mut *io.output;
        let mut pos = 0usize;
        let mut k = 0usize;
        let mut off_pending = off_at;
        loop {
            let next_start = if k < n_starts {
                starts[k].0 as usize
            } else {
                usize::MAX
            };
            let next_off = off_pending.map_or(usize::MAX, |o| o as usize);
            let next = next_start.min(next_off).min(out.len());
            if next > pos {
                self.workload.process(&mut out[pos..next]);
                pos = next;
            }
            if pos >= out.len() {
                break;
            }
            if next_off <= next_start {
                self.workload.note_off(0);
                self.note_end_frame = None;
                off_pending = None;
                continue;
            }
            // One or more note-ons at this offset: the note starts once; every trigger
            // that asked for this frame gets its row.
            let offset = starts[k].0;
            self.workload.note_on(0);
            self.note_end_frame = Some(first + offset as u64 + self.note_frames);
            off_pending = self
                .note_end_frame
                .filter(|&f| f < end)
                .map(|f| (f - first) as u32);
            while k < n_starts && starts[k].0 == offset {
                if let Some(s) = self.scheduled[starts[k].1].take() {
                    let start = NoteStart {
                        seq: s.seq,
                        trigger_ns: s.trigger_ns,
                        cycle: *cycle,
                        offset,
                        late: s.late,
                    };
                    if self.notes.push(start).is_err() {
                        self.counters.notes_dropped.fetch_add(1, Ordering::Relaxed);
                    }
                    if io.input.is_some() {
                        let awaiting = Awaiting {
                            seq: s.seq,
                            from_frame: first + offset as u64,
                        };
                        match self.awaiting.iter_mut().find(|a| a.is_none()) {
                            Some(slot) => *slot = Some(awaiting),
                            // Too many notes in flight: this one is not looked for.
                            None => {
                                let _ = self.onsets.push(Onset {
                                    seq: s.seq,
                                    captured_frame: None,
                                });
                            }
                        }
                    }
                }
                k += 1;
            }
        }
        // 4. Loopback: give up on notes whose onset did not come back in time, then find
        // the oldest awaited onset in the capture.
        for slot in self.awaiting.iter_mut() {
            if let Some(a) = *slot {
                if end.saturating_sub(a.from_frame) > self.timeout_frames {
                    *slot = None;
                    let _ = self.onsets.push(Onset {
                        seq: a.seq,
                        captured_frame: None,
                    });
                }
            }
        }
        if let Some(input) = io.input {
            let oldest = self
                .awaiting
                .iter()
                .enumerate()
                .filter_map(|(i, a)| a.map(|a| (a.from_frame, i)))
                .min();
            if let Some((from, i)) = oldest {
                let seq = self.awaiting[i].map_or(0, |a| a.seq);
                let start = from.max(self.heard_until).saturating_sub(first).min(n) as usize;
                let threshold = self.threshold * self.workload.onset_amplitude();
                let found = dsp::first_onset(&input[start.min(input.len())..], threshold);
                if let Some(g) = found {
                    self.awaiting[i] = None;
                    let onset = first + (start + g) as u64;
                    self.heard_until = onset + self.note_frames + self.note_frames / 4;
                    let captured_frame = Some(onset);
                    let _ = self.onsets.push(Onset {
                        seq,
                        captured_frame,
                    });
                }
            }
        }
    }
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventEnd {
    /// Every trigger measured.
    Complete,
    /// Stopped early by the stop flag (Ctrl-C).
    Interrupted,
    /// The audio server went away.
    ServerGone(String),
    /// The processor panicked.
    Panicked(String),
}

/// What the caller gets while the run goes on (about every 50 ms).
pub struct EventProgress<'a> {
    /// Trigger rows completed since the last call.
    pub rows: &'a [TriggerRow],
    /// Events (under-runs) since the last call.
    pub events: &'a [Event],
    /// Triggers measured so far.
    pub measured: u64,
    /// Cycles so far.
    pub cycles: u64,
    /// Under-runs so far (xruns plus skipped cycles).
    pub underruns: u64,
}

/// Everything one run measured.
#[derive(Debug)]
pub struct EventOutcome {
    /// The configuration.
    pub config: EventConfig,
    /// The stream.
    pub info: StreamInfo,
    /// How it ended.
    pub end: EventEnd,
    /// One row per measured trigger.
    pub rows: Vec<TriggerRow>,
    /// Cycles run.
    pub cycles: u64,
    /// Callback start minus nominal cycle start, per cycle that started at or after it.
    pub lateness: LatencyHistogram,
    /// Nominal cycle start minus callback start, per cycle whose callback started before
    /// the nominal start the backend reported (its clock estimate ran ahead).
    pub early: LatencyHistogram,
    /// Time in the processor per cycle.
    pub dsp: LatencyHistogram,
    /// Cycles whose processor time exceeded the period.
    pub dsp_misses: u64,
    /// Under-runs the server reported (xruns) before the first trigger, and after.
    pub xruns: (u64, u64),
    /// Cycles the stream skipped (frame gaps) before the first trigger, and after. The
    /// dummy driver's xruns skip cycles, so these mostly come with the xruns above; they
    /// are not added to them.
    pub gaps: (u64, u64),
    /// Xrun and skipped-cycle events with their times.
    pub underrun_events: Vec<Event>,
    /// Triggers that could not be handed to the audio thread or scheduled.
    pub dropped: u64,
    /// MIDI events that were malformed or did not fit.
    pub midi_dropped: u64,
    /// Cycle records the reader lost.
    pub records_dropped: u64,
    /// Cycles longer than the prepared period (rendered silent).
    pub oversized_cycles: u64,
    /// Debug builds with `assert_no_alloc`'s allocator: allocations on the audio thread.
    pub alloc_violations: u64,
    /// The trigger thread's scheduling, when there was one.
    pub trigger_thread: Option<ThreadRt>,
    /// The audio (process) thread's scheduling, as it read it in its first cycle.
    pub audio_thread: Option<engine::rt::Policy>,
    /// How a full-duplex ALSA device (with a loopback capture) started.
    pub duplex_start: Option<DuplexStart>,
    /// Memory lock granted.
    pub memory_locked: bool,
    /// Host steal through the run.
    pub steal: StealTimeline,
    /// Stream start and end, CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    /// When the run ended.
    pub end_ns: u64,
    /// First trigger time.
    pub first_trigger_ns: Option<u64>,
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Sleeps until `t_ns` in steps of at most 50 ms; false when `stop` was raised.
fn sleep_until_or_stop(t_ns: u64, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = monotonic_ns();
        if now >= t_ns {
            return true;
        }
        sleep_until_ns(t_ns.min(now + 50_000_000));
    }
}

/// Stamps a trigger (raising the GPIO line around the stamp) and hands it over.
fn fire(
    seq: u64,
    gpio: Option<&GpioLine>,
    tx: &mut rtrb::Producer<Trigger>,
    counters: &Counters,
) -> u64 {
    let before = monotonic_ns();
    let t_ns = match gpio {
        Some(line) => {
            let _ = line.set(true);
            (before + monotonic_ns()) / 2
        }
        None => before,
    };
    if tx.push(Trigger { seq, t_ns }).is_err() {
        counters.triggers_dropped.fetch_add(1, Ordering::Relaxed);
    }
    t_ns
}

struct RawTerminal {
    fd: i32,
    saved: Option<libc::termios>,
}

impl RawTerminal {
    fn new(fd: i32) -> RawTerminal {
        // SAFETY: isatty/tcgetattr/tcsetattr on a file descriptor with valid out-pointers.
        unsafe {
            if libc::isatty(fd) == 0 {
                return RawTerminal { fd, saved: None };
            }
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(fd, &mut t) != 0 {
                return RawTerminal { fd, saved: None };
            }
            let saved = t;
            t.c_lflag &= !(libc::ICANON | libc::ECHO);
            t.c_cc[libc::VMIN] = 1;
            t.c_cc[libc::VTIME] = 0;
            libc::tcsetattr(fd, libc::TCSANOW, &t);
            RawTerminal {
                fd,
                saved: Some(saved),
            }
        }
    }
}

impl Drop for RawTerminal {
    fn drop(&mut self) {
        if let Some(saved) = self.saved {
            // SAFETY: restoring the attributes read in `new`.
            unsafe { libc::tcsetattr(self.fd, libc::TCSANOW, &saved) };
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn trigger_thread(
    config: &EventConfig,
    period_ns: f64,
    start_ns: u64,
    mut tx: rtrb::Producer<Trigger>,
    gpio: Option<GpioLine>,
    counters: &Counters,
    done: &AtomicBool,
    input_ended: &AtomicBool,
) -> ThreadRt {
    let rt = ThreadRt::apply(&config.trigger_policy, None, 64 * 1024);
    let note_ns = (config.note_ms * 1e6) as u64;
    match config.source {
        TriggerSource::Timer => {
            let mut rng = config.seed;
            let mut next = start_ns + (config.warmup_ms * 1e6) as u64;
            for seq in 0..config.triggers {
                let jitter = (splitmix(&mut rng) >> 11) as f64 / (1u64 << 53) as f64;
                next += (config.spacing_ms * 1e6 + jitter * period_ns) as u64;
                if !sleep_until_or_stop(next, done) {
                    break;
                }
                let t = fire(seq, gpio.as_ref(), &mut tx, counters);
                if let Some(line) = gpio.as_ref() {
                    if sleep_until_or_stop(t + note_ns, done) {
                        let _ = line.set(false);
                    }
                }
            }
        }
        TriggerSource::Key => {
            let _raw = RawTerminal::new(0);
            let mut seq = 0;
            while seq < config.triggers && !done.load(Ordering::Relaxed) {
                let mut pfd = libc::pollfd {
                    fd: 0,
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                let ready = unsafe { libc::poll(&mut pfd, 1, 50) };
                if ready <= 0 {
                    continue;
                }
                let mut byte = 0u8;
                // SAFETY: reading one byte into a valid buffer.
                let got = unsafe { libc::read(0, (&mut byte as *mut u8).cast(), 1) };
                if got <= 0 || byte == b'q' || byte == 0x1b || byte == 0x04 {
                    input_ended.store(true, Ordering::SeqCst);
                    break;
                }
                let t = fire(seq, gpio.as_ref(), &mut tx, counters);
                seq += 1;
                if let Some(line) = gpio.as_ref() {
                    if sleep_until_or_stop(t + note_ns, done) {
                        let _ = line.set(false);
                    }
                }
            }
        }
        TriggerSource::Midi => {}
    }
    if let Some(line) = gpio.as_ref() {
        let _ = line.set(false);
    }
    rt
}

/// What the probe thread gathers from the audio thread's rings.
struct Collector {
    source: String,
    loopback: bool,
    buffer_ns: f64,
    capture_frames: f64,
    frame_ns: f64,
    stage_start_ns: u64,
    timer: bool,
    rows: Vec<TriggerRow>,
    waiting: Vec<TriggerRow>,
    reported: usize,
    events: Vec<Event>,
    cycles: u64,
    lateness: LatencyHistogram,
    early: LatencyHistogram,
    dsp: LatencyHistogram,
    dsp_misses: u64,
    period_ns: f64,
    xruns: (u64, u64),
    gaps: (u64, u64),
    first_trigger_ns: Option<u64>,
}

impl Collector {
    fn in_steady(&self, t: u64) -> bool {
        match self.first_trigger_ns {
            Some(f) => t >= f,
            None => self.timer && t >= self.stage_start_ns,
        }
    }

    /// Drains every ring; returns the under-run events found.
    fn drain(
        &mut self,
        backend: &mut dyn Backend,
        notes: &mut rtrb::Consumer<NoteStart>,
        onsets: &mut rtrb::Consumer<Onset>,
    ) -> Vec<Event> {
        let mut new_events = Vec::new();
        while let Ok(r) = backend.cycles().pop() {
            self.cycles += 1;
            let l = r.cycle.lateness_ns();
            if l < 0 {
                self.early.record(l.unsigned_abs());
            } else {
                self.lateness.record(l as u64);
            }
            self.dsp.record(r.dsp_ns);
            if r.dsp_ns as f64 > self.period_ns {
                self.dsp_misses += 1;
            }
            if r.gap_frames > 0 {
                if self.in_steady(r.cycle.callback_ns) {
                    self.gaps.1 += 1;
                } else {
                    self.gaps.0 += 1;
                }
                new_events.push(Event {
                    mono_ns: r.cycle.callback_ns,
                    kind: "skipped_cycles".into(),
                    detail: json!({"cycle": r.cycle.index, "frames_skipped": r.gap_frames}),
                });
            }
        }
        for x in backend.take_xruns() {
            if self.in_steady(x.mono_ns) {
                self.xruns.1 += 1;
            } else {
                self.xruns.0 += 1;
            }
            new_events.push(Event {
                mono_ns: x.mono_ns,
                kind: "xrun".into(),
                detail: json!({"source": "server", "cycles_done": x.cycles_done}),
            });
        }
        let underruns = self.xruns.0 + self.xruns.1;
        while let Ok(n) = notes.pop() {
            self.first_trigger_ns = Some(
                self.first_trigger_ns
                    .map_or(n.trigger_ns, |f| f.min(n.trigger_ns)),
            );
            let c = n.cycle;
            let note_frame = c.first_frame + n.offset as u64;
            // The DAC time on the rendering cycle's own timing (JACK's estimate of that
            // cycle's start), as jack_frames_to_time would give it inside that cycle.
            let frame_ns = c.frame_time_ns(n.offset as f64);
            let dac_ns = frame_ns + self.buffer_ns;
            let wait_ns = (frame_ns - n.trigger_ns as f64).round() as i64;
            let row = TriggerRow {
                seq: n.seq,
                source: self.source.clone(),
                trigger_ns: n.trigger_ns,
                note_frame,
                offset_frames: n.offset,
                cycle: c.index,
                dac_ns: dac_ns.max(0.0) as u64,
                latency_ns: wait_ns + self.buffer_ns.round() as i64,
                wait_ns,
                lateness_ns: c.lateness_ns(),
                buffer_ns: self.buffer_ns.round() as i64,
                late: n.late,
                // The cycle's buffer is due when the next cycle starts; a callback that
                // only began after that could not have its note played on time.
                missed: c.callback_ns as f64 > c.nominal_ns as f64 + c.period_ns,
                measured_ns: None,
                underruns_before: underruns,
            };
            if self.loopback {
                self.waiting.push(row);
            } else {
                self.rows.push(row);
            }
        }
        while let Ok(o) = onsets.pop() {
            if let Some(i) = self.waiting.iter().position(|r| r.seq == o.seq) {
                let mut row = self.waiting.remove(i);
                // Output and capture run on one sample clock: the frames from the note's
                // position in the output stream to its onset in the capture, less the
                // capture latency, are the time from the note's frame to the sound,
                // exactly. Added to the wait, that is the measured latency.
                row.measured_ns = o.captured_frame.map(|c| {
                    let frames = c as f64 - row.note_frame as f64 - self.capture_frames;
                    row.wait_ns + (frames * self.frame_ns).round() as i64
                });
                self.rows.push(row);
            }
        }
        self.events.extend(new_events.iter().cloned());
        new_events
    }

    /// Hands the rows and events gathered since the last report to `progress`.
    fn report(
        &mut self,
        new_events: &[Event],
        progress: &mut impl FnMut(EventProgress<'_>) -> Result<(), String>,
    ) -> Result<(), String> {
        let result = progress(EventProgress {
            rows: &self.rows[self.reported..],
            events: new_events,
            measured: self.rows.len() as u64,
            cycles: self.cycles,
            underruns: self.xruns.0 + self.xruns.1,
        });
        self.reported = self.rows.len();
        result
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
    if config.source == TriggerSource::Midi && info.midi_port.is_none() {
        return Err(EventError::Config(
            "MIDI triggers need the backend's MIDI input: open it with a MIDI port".into(),
        ));
    }
    if config.source == TriggerSource::Midi && config.gpio.is_some() {
        return Err(EventError::Config(
            "--gpio needs --trigger timer or key: a MIDI note-on arrives inside the audio cycle, with no moment to raise a line at".into(),
        ));
    }
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
    let processor = EventProcessor {
        workload: Workload::new(config.workload, config.frequency_hz),
        policy: config.policy,
        midi: config.source == TriggerSource::Midi,
        triggers: trigger_rx,
        notes: note_tx,
        onsets: onset_tx,
        counters: counters.clone(),
        scheduled: [None; MAX_SCHEDULED],
        awaiting: [None; MAX_AWAITING],
        note_end_frame: None,
        heard_until: 0,
        note_frames: 0,
        max_frames: 0,
        threshold: config.loopback_threshold,
        timeout_frames: 0,
        midi_seq: 0,
        note_ms: config.note_ms,
        loopback_timeout_ms: config.loopback_timeout_ms,
    };
    let steal = StealSampler::start(Duration::from_millis(50), None);
    let hist = || LatencyHistogram::new(1_000_000_000).expect("1 s bound is valid");
    let start_ns = monotonic_ns();
    backend.start(Box::new(processor))?;
    let mut c = Collector {
        source: config.source.to_string(),
        loopback: info.capture_port.is_some(),
        buffer_ns: info.playback_latency_ns(),
        capture_frames: info.capture_latency_frames as f64,
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
        period_ns: info.period_ns(),
        xruns: (0, 0),
        gaps: (0, 0),
        first_trigger_ns: None,
    };

    let done = AtomicBool::new(false);
    let input_ended = AtomicBool::new(false);
    let mut end = EventEnd::Complete;
    let trigger_rt = std::thread::scope(|s| -> Result<Option<ThreadRt>, EventError> {
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
        loop {
            std::thread::sleep(Duration::from_millis(20));
            let new_events = c.drain(backend, &mut note_rx, &mut onset_rx);
            let report = c.report(&new_events, &mut progress);
            let status = backend.status();
            if let Some(p) = status.panic {
                end = EventEnd::Panicked(p);
                break;
            }
            if let Some(reason) = status.shutdown {
                end = EventEnd::ServerGone(reason);
                break;
            }
            if let Err(reason) = report {
                end = EventEnd::ServerGone(reason);
                break;
            }
            if stop.load(Ordering::Relaxed) {
                end = EventEnd::Interrupted;
                break;
            }
            let measured = c.rows.len() as u64;
            if measured >= config.triggers {
                break;
            }
            let handed = counters.triggers_dropped.load(Ordering::Relaxed)
                + counters.notes_dropped.load(Ordering::Relaxed);
            if measured + handed >= config.triggers && c.waiting.is_empty() {
                break;
            }
            if input_ended.load(Ordering::SeqCst) && c.waiting.is_empty() && note_rx.is_empty() {
                // The trigger thread is done; give the audio thread two periods to start
                // the last notes.
                std::thread::sleep(Duration::from_nanos((info.period_ns() * 2.0) as u64));
                if note_rx.is_empty() {
                    // `q`, Escape or the end of the input: the user ended the run.
                    break;
                }
            }
        }
        done.store(true, Ordering::SeqCst);
        Ok(handle.and_then(|h| h.join().ok()))
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
    Ok(EventOutcome {
        config: config.clone(),
        info,
        end,
        rows: c.rows,
        cycles: c.cycles,
        lateness: c.lateness,
        early: c.early,
        dsp: c.dsp,
        dsp_misses: c.dsp_misses,
        xruns: c.xruns,
        gaps: c.gaps,
        underrun_events: c.events,
        dropped: counters.triggers_dropped.load(Ordering::Relaxed)
            + counters.notes_dropped.load(Ordering::Relaxed),
        midi_dropped: counters.midi_dropped.load(Ordering::Relaxed),
        records_dropped: status.records_dropped,
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
    })
}

/// The model's mean latency of `config`'s policy on a stream (see
/// [`EventOutcome::model_latency_ns`]).
fn model_latency_ns(config: &EventConfig, info: &StreamInfo) -> f64 {
    let p = info.period_ns();
    let base = info.playback_latency_ns();
    match config.policy {
        NotePolicy::Fixed => p + base,
        NotePolicy::Asap => p / 2.0 + base,
    }
}

/// How a run's trigger rows become its trigger measurements (`event_latency` and, with a
/// loopback, `event_latency_loopback`): what they need of the configuration and the
/// stream, known once the stream is open. A run stores it at its start, so the rows a
/// killed run stored can be summarised later as the live run would have.
#[derive(Clone, Debug, PartialEq)]
pub struct TriggerSummary {
    /// The model latency's method.
    pub model_method: String,
    /// The loopback latency's method.
    pub loopback_method: String,
    /// Playback latency, ns.
    pub buffer_ns: f64,
    /// The model's mean latency, ns.
    pub model_mean_ns: f64,
}

impl TriggerSummary {
    /// The summary of `config` on a stream described by `info`.
    pub fn new(config: &EventConfig, info: &StreamInfo) -> TriggerSummary {
        TriggerSummary {
            model_method: format!(
                "{} trigger -> first sample at the DAC by the {} timing model (cycle start from the server + offset/rate + {} frames playback latency), {} policy",
                config.source, info.backend, info.playback_latency_frames, config.policy
            ),
            loopback_method: format!(
                "onset found in the loopback capture from {} (threshold {} of the note's first sample), minus {} frames capture latency",
                info.capture_port.as_deref().unwrap_or("?"),
                config.loopback_threshold,
                info.capture_latency_frames
            ),
            buffer_ns: info.playback_latency_ns(),
            model_mean_ns: model_latency_ns(config, info),
        }
    }

    /// As stored with a run.
    pub fn to_json(&self) -> Value {
        json!({
            "model_method": self.model_method,
            "loopback_method": self.loopback_method,
            "buffer_ns": self.buffer_ns,
            "model_mean_ns": self.model_mean_ns,
        })
    }

    /// Read back from [`TriggerSummary::to_json`]; `None` when something is missing.
    pub fn from_json(v: &Value) -> Option<TriggerSummary> {
        Some(TriggerSummary {
            model_method: v["model_method"].as_str()?.to_string(),
            loopback_method: v["loopback_method"].as_str()?.to_string(),
            buffer_ns: v["buffer_ns"].as_f64()?,
            model_mean_ns: v["model_mean_ns"].as_f64()?,
        })
    }

    /// The trigger measurements of `rows`: the model latency over the triggers that
    /// sounded, with its wait and lateness parts, and the loopback latency when any row
    /// has one.
    pub fn measurements(&self, rows: &[TriggerRow]) -> Vec<Measurement> {
        let sounded = || rows.iter().filter(|r| !r.missed);
        let hist_from_rows = |f: &dyn Fn(&TriggerRow) -> Option<i64>| {
            let mut h = LatencyHistogram::new(10_000_000_000).expect("10 s bound is valid");
            for r in rows {
                if let Some(v) = f(r) {
                    h.record(v.max(0) as u64);
                }
            }
            h
        };
        let mut out = Vec::new();
        let mut m = Measurement::from_histogram(
            "event",
            "event_latency",
            &self.model_method,
            hist_from_rows(&|r| (!r.missed).then_some(r.latency_ns)),
        );
        // The latency histogram holds only positive values; the wait can be negative (a
        // trigger that arrived after its cycle's nominal start, before the callback), so
        // its statistics are kept exact, not as a histogram that would clamp them.
        m.detail = json!({
            "exact": Stats::of(sounded().map(|r| r.latency_ns as f64)).to_json(),
            "wait_ns": Stats::of(sounded().map(|r| r.wait_ns as f64)).to_json(),
            "rendering_callback_lateness_ns": Stats::of(sounded().map(|r| r.lateness_ns as f64)).to_json(),
            "buffer_ns": self.buffer_ns,
            "model_mean_ns": self.model_mean_ns,
            "late_triggers": rows.iter().filter(|r| r.late).count() as u64,
            "missed_triggers": rows.iter().filter(|r| r.missed).count() as u64,
        });
        out.push(m);
        if rows.iter().any(|r| r.measured_ns.is_some()) {
            let mut l = Measurement::from_histogram(
                "event",
                "event_latency_loopback",
                &self.loopback_method,
                hist_from_rows(&|r| r.measured_ns),
            );
            l.detail = json!({"exact": Stats::of(rows.iter().filter_map(|r| r.measured_ns.map(|m| m as f64))).to_json(),
                              "not_found": rows.iter().filter(|r| r.measured_ns.is_none()).count()});
            out.push(l);
        }
        out
    }
}

impl EventOutcome {
    /// The model's mean latency for this policy: `fixed` one period plus the playback
    /// latency; `asap` half a period plus the playback latency (the wait for the next
    /// cycle is uniform over a period). MIDI in `asap` mode waits a period minus the
    /// offset, which has the same mean.
    pub fn model_latency_ns(&self) -> f64 {
        model_latency_ns(&self.config, &self.info)
    }

    /// The triggers whose note could sound at its modelled time (not
    /// [`TriggerRow::missed`]): every latency figure and its decomposition is over these.
    pub fn sounded(&self) -> impl Iterator<Item = &TriggerRow> {
        self.rows.iter().filter(|r| !r.missed)
    }

    /// Statistics of the model latency over the [`sounded`](Self::sounded) triggers.
    pub fn latency(&self) -> Stats {
        Stats::of(self.sounded().map(|r| r.latency_ns as f64))
    }

    /// Triggers whose rendering callback started after its cycle's deadline (an under-run).
    pub fn missed(&self) -> u64 {
        self.rows.iter().filter(|r| r.missed).count() as u64
    }

    /// Statistics of the loopback-measured latency.
    pub fn measured(&self) -> Stats {
        Stats::of(
            self.rows
                .iter()
                .filter_map(|r| r.measured_ns.map(|m| m as f64)),
        )
    }

    /// Triggers whose frame had passed before the audio thread saw them (fixed policy).
    pub fn late(&self) -> u64 {
        self.rows.iter().filter(|r| r.late).count() as u64
    }

    /// The audio thread ran at a real-time policy, and so did the trigger thread (when
    /// there was one).
    pub fn realtime(&self) -> bool {
        self.audio_thread.is_some_and(|p| p.is_realtime())
            && self.trigger_thread.as_ref().is_none_or(|t| t.is_realtime())
    }

    /// How this run's trigger rows become measurements.
    pub fn trigger_summary(&self) -> TriggerSummary {
        TriggerSummary::new(&self.config, &self.info)
    }

    /// Measurements: event latency (model), its wait part, loopback latency, cycle
    /// lateness and DSP time per cycle.
    pub fn measurements(&self) -> Vec<Measurement> {
        let mut out = self.trigger_summary().measurements(&self.rows);
        let mut lat = Measurement::from_histogram(
            "event",
            "callback_lateness",
            "per cycle: callback start - the cycle's nominal start from the server",
            self.lateness.clone(),
        );
        lat.detail = json!({"cycles_early": self.early.count()});
        out.push(lat);
        if self.early.count() > 0 {
            out.push(Measurement::from_histogram(
                "event",
                "callback_early",
                "per cycle whose callback started before the cycle's nominal start from the server (its clock estimate ran ahead): nominal start - callback start",
                self.early.clone(),
            ));
        }
        let mut d = Measurement::from_histogram(
            "event",
            "dsp_time",
            "per cycle: time in the processor (workload + note scheduling)",
            self.dsp.clone(),
        );
        d.deadline = Some(self.info.period_ns());
        d.misses = Some(self.dsp_misses);
        d.detail = json!({"dsp_load_percent_mean": crate::stats::dsp_load_percent(&self.dsp, self.info.period_ns()),
                          "dsp_load_percent_max": self.dsp.summary().map(|s| 100.0 * s.max / self.info.period_ns())});
        out.push(d);
        out
    }

    /// The server's facts and what the run was granted.
    pub fn qos_granted(&self) -> Value {
        json!({
            "trigger_thread": self.trigger_thread.as_ref().map(|t| json!({
                "policy": t.sched.granted.to_string(),
                "refusal": t.sched.refusal,
            })),
            "audio_thread": self.audio_thread.map(|p| p.to_string()),
            "memory_locked": self.memory_locked,
        })
    }

    /// Validity flags.
    pub fn flags(&self) -> Value {
        let steal_ns = self.steal.total_ns(None);
        let cpus = engine::rt::online_cpus().len();
        json!({
            "realtime": self.realtime(),
            "memory_locked": self.memory_locked,
            "interrupted": self.end != EventEnd::Complete,
            "host_steal_ns": steal_ns,
            "host_steal_percent": self.steal.percent_of_span(steal_ns, cpus),
            "late_triggers": self.late(),
            "missed_triggers": self.missed(),
            "dropped_triggers": self.dropped,
            "cycle_records_dropped": self.records_dropped,
            "dsp_overload_cycles": self.dsp_misses,
            "private_server": self.info.server.private,
        })
    }

    /// Probe-specific results.
    pub fn result_json(&self) -> Value {
        let ms = 1e-6;
        let mut out = stream_json(&self.info, self.duplex_start);
        let own = json!({
            "end": match &self.end {
                EventEnd::Complete => "complete".to_string(),
                EventEnd::Interrupted => "interrupted".to_string(),
                EventEnd::ServerGone(r) => format!("server gone: {r}"),
                EventEnd::Panicked(p) => format!("processor panicked: {p}"),
            },
            "client": self.info.client_name,
            "midi_port": self.info.midi_port,
            "clock_offset_ns": self.info.clock_offset_ns,
            "triggers": self.rows.len(),
            "latency_ms": self.latency().scaled(ms).to_json(),
            "model_latency_ms": self.model_latency_ns() * ms,
            "loopback_ms": self.rows.iter().any(|r| r.measured_ns.is_some())
                .then(|| self.measured().scaled(ms).to_json()),
            "wait_ms": Stats::of(self.sounded().map(|r| r.wait_ns as f64)).scaled(ms).to_json(),
            "lateness_ms": Stats::of(self.sounded().map(|r| r.lateness_ns as f64)).scaled(ms).to_json(),
            "buffer_ms": self.info.playback_latency_ns() * ms,
            "cycles": self.cycles,
            "underruns": {"start": self.xruns.0, "steady": self.xruns.1,
                          "skipped_cycles_start": self.gaps.0, "skipped_cycles_steady": self.gaps.1},
            "late_triggers": self.late(),
            "missed_triggers": self.missed(),
            "dropped_triggers": self.dropped,
            "midi_dropped": self.midi_dropped,
            "oversized_cycles": self.oversized_cycles,
            "dsp_load_percent_mean": crate::stats::dsp_load_percent(&self.dsp, self.info.period_ns()),
            "dsp_overload_cycles": self.dsp_misses,
            "run_ns": self.end_ns.saturating_sub(self.start_ns),
        });
        merge(&mut out, own);
        out
    }
}

/// The stream an audio probe ran on, as stored with its result: backend, model, server,
/// rate, period, the latencies it reports, its ports, and how a duplex device started.
pub(crate) fn stream_json(info: &StreamInfo, start: Option<DuplexStart>) -> Value {
    json!({
        "duplex_start": start.map(|s| json!({
            "linked": s.linked,
            "skew_frames": s.skew_frames,
            "attempts": s.attempts,
            "starts": s.starts,
            "steady_offset": s.steady_offset,
        })),
        "backend": info.backend,
        "client": info.client_name,
        "model": info.model.to_string(),
        "server": {"name": info.server.name, "private": info.server.private,
                   "command_line": info.server.command_line,
                   "version": info.server.version},
        "rate_hz": info.sample_rate_hz,
        "period_frames": info.period_frames,
        "playback_latency_frames": info.playback_latency_frames,
        "capture_latency_frames": info.capture_latency_frames,
        "playback_ports": info.playback_ports,
        "capture_port": info.capture_port,
    })
}

/// Adds `more`'s keys to the JSON object `into`.
pub(crate) fn merge(into: &mut Value, more: Value) {
    if let (Some(a), Value::Object(b)) = (into.as_object_mut(), more) {
        a.extend(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_print() {
        for s in ["timer", "key", "midi"] {
            assert_eq!(s.parse::<TriggerSource>().unwrap().to_string(), s);
        }
        for s in ["asap", "fixed"] {
            assert_eq!(s.parse::<NotePolicy>().unwrap().to_string(), s);
        }
        assert!("gpio"
            .parse::<TriggerSource>()
            .unwrap_err()
            .contains("timer, key or midi"));
        assert!("late"
            .parse::<NotePolicy>()
            .unwrap_err()
            .contains("asap or fixed"));
    }

    #[test]
    fn configs_are_checked() {
        let mut c = EventConfig::new(TriggerSource::Timer, NotePolicy::Asap);
        assert!(c.validate().is_ok());
        c.triggers = 0;
        assert!(c.validate().unwrap_err().to_string().contains("--triggers"));
        c.triggers = 5;
        c.spacing_ms = 10.0;
        assert!(c.validate().unwrap_err().to_string().contains("silence"));
    }

    #[test]
    fn stats_are_exact() {
        let s = Stats::of([1.0, 2.0, 3.0, 4.0]);
        assert_eq!(
            (s.count, s.mean, s.min, s.max, s.median),
            (4, 2.5, 1.0, 4.0, 3.0)
        );
        assert!((s.stdev - 1.2909944).abs() < 1e-6);
        assert_eq!(Stats::of([]).count, 0);
    }

    #[test]
    fn trigger_times_are_spread_over_the_period() {
        // The fractional part added to each spacing is uniform: its deciles are filled.
        let mut rng = 7;
        let mut bins = [0u32; 10];
        for _ in 0..10_000 {
            let u = (splitmix(&mut rng) >> 11) as f64 / (1u64 << 53) as f64;
            bins[(u * 10.0) as usize] += 1;
        }
        assert!(bins.iter().all(|&b| (900..1100).contains(&b)), "{bins:?}");
    }
}
