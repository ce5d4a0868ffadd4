//! The backend-neutral audio stream: what a probe's [`Processor`] sees every cycle, and the
//! [`Backend`] trait that JACK (pull) and, later, ALSA (push) implement.
//!
//! # Two models, one processor
//!
//! - **Pull** (JACK): the server's thread calls the backend's callback once per period; the
//!   backend calls [`Processor::process`] from it.
//! - **Push** (ALSA): the backend owns a write loop on its own real-time thread that waits
//!   for room in the device buffer, calls [`Processor::process`] and writes the period.
//!
//! Either way the processor gets a [`Cycle`] (the cycle's frame position, its nominal
//! start time from the backend's clock, that start checked against the callbacks
//! ([`CheckedStart`]) and the time the callback really started) and an
//! [`Io`] with the period's buffers. The *timing model* that turns a frame into the time it
//! reaches the DAC is the same for both: the cycle's nominal start, plus the frame's
//! offset in the cycle, plus the playback latency the backend reports
//! ([`StreamInfo::playback_latency_frames`]).
//!
//! # Accounting
//!
//! The engine, not the probe, measures each cycle on the audio thread: callback start
//! against the cycle's nominal start (wake-up lateness) and the time spent in
//! [`Processor::process`] (DSP load). One [`CycleRecord`] per cycle goes into a pre-sized
//! `rtrb` ring that a non-real-time thread drains ([`Backend::cycles`]); when the reader
//! falls behind, records are counted as dropped, never allocated. Under-runs (xruns) are
//! reported by the backend with their time ([`Backend::take_xruns`]).

use crate::backend::kind::BackendKind;
use std::fmt;

mod error;

pub use error::{
    plug_advice, plug_twin, AlsaRefusal, AudioError, PortRole, ServerSetting, StreamSetting,
};

/// How a backend moves audio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// The server calls us once per period (JACK).
    Pull,
    /// We write each period into the device from our own loop (ALSA).
    Push,
}

impl Model {
    /// How a backend of `kind` moves audio ([`BackendKind::is_pull`]).
    pub fn of(kind: crate::backend::kind::BackendKind) -> Model {
        if kind.is_pull() {
            Model::Pull
        } else {
            Model::Push
        }
    }
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Model::Pull => "pull",
            Model::Push => "push",
        })
    }
}

/// The audio server a stream runs on.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerInfo {
    /// The server name clients connect to (JACK: `-n NAME`, "default" otherwise).
    pub name: String,
    /// `true` when audiolat started this server itself and stops it afterwards.
    pub private: bool,
    /// The server's command line, when audiolat started it.
    pub command_line: Option<String>,
    /// The server program's version line, when known.
    pub version: Option<String>,
    /// On a PipeWire: the quantum asked for (`None`: none was, the server's default).
    pub quantum_asked_frames: Option<u32>,
    /// On a PipeWire: the quantum its graph was measured to run (`None`: not measured).
    pub quantum_granted_frames: Option<u32>,
    /// On a PipeWire: the rate asked for (`None`: none was, the graph's own).
    pub rate_asked_hz: Option<u32>,
    /// On a PipeWire: the rate its graph was measured to run (a JACK client's sample
    /// rate; `None`: not measured).
    pub rate_granted_hz: Option<u32>,
}

/// Facts about a stream, fixed when it is opened.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamInfo {
    /// The backend; its name ([`BackendKind`]'s `Display`) is what a run stores.
    pub backend: BackendKind,
    /// Pull or push.
    pub model: Model,
    /// The rate the stream really runs at.
    pub sample_rate_hz: u32,
    /// Frames per cycle.
    pub period_frames: u32,
    /// Frames from the start of a cycle's output buffer to the DAC, as reported by the
    /// backend for the connected playback ports (their maximum).
    pub playback_latency_frames: u32,
    /// Frames from the ADC to the start of a cycle's input buffer, for the capture source
    /// (`None` when there is none, or the backend could not read it: never a made-up 0).
    pub capture_latency_frames: Option<u32>,
    /// This client's full name on the server ("audiolat").
    pub client_name: String,
    /// Ports our output is connected to.
    pub playback_ports: Vec<String>,
    /// The port our input is connected to, when a loopback capture was asked for.
    pub capture_port: Option<String>,
    /// The MIDI port we read note-ons from, when MIDI triggers were asked for.
    pub midi_port: Option<String>,
    /// The server.
    pub server: ServerInfo,
    /// Offset added to the backend's clock to get CLOCK_MONOTONIC, in ns (jackd2 counts
    /// CLOCK_MONOTONIC_RAW; the offset is measured when the stream opens).
    pub clock_offset_ns: i64,
}

impl StreamInfo {
    /// One period in nanoseconds at the nominal rate.
    pub fn period_ns(&self) -> f64 {
        self.period_frames as f64 * 1e9 / self.sample_rate_hz as f64
    }

    /// Playback latency in nanoseconds at the nominal rate.
    pub fn playback_latency_ns(&self) -> f64 {
        self.playback_latency_frames as f64 * 1e9 / self.sample_rate_hz as f64
    }

    /// Frames from a cycle's output to the sink that the ports do not report: on a
    /// PipeWire (its quantum measured, [`ServerInfo::quantum_granted_frames`]) whose
    /// ports report 0 playback latency, the graph's quantum, because the driver (the
    /// sink) takes a cycle's output in the next cycle (measured: the round trip from the
    /// null sink's playback port to its monitor is one quantum, as `jack_iodelay`
    /// through PipeWire's libjack finds). `None` elsewhere: the ports' figure is the
    /// server's own.
    pub fn unreported_sink_frames(&self) -> Option<u32> {
        self.server
            .quantum_granted_frames
            .filter(|_| self.playback_latency_frames == 0)
    }

    /// Frames from a cycle's output buffer to the DAC (or the sink): the playback
    /// latency the ports report plus [`StreamInfo::unreported_sink_frames`].
    pub fn buffer_frames(&self) -> u32 {
        self.playback_latency_frames + self.unreported_sink_frames().unwrap_or(0)
    }

    /// [`StreamInfo::buffer_frames`] in nanoseconds at the nominal rate.
    pub fn buffer_ns(&self) -> f64 {
        self.buffer_frames() as f64 * 1e9 / self.sample_rate_hz as f64
    }
}

/// One cycle as the audio thread sees it. All times are CLOCK_MONOTONIC nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Cycle {
    /// Cycle number since the stream started, from 0.
    pub index: u64,
    /// Frames in this cycle.
    pub frames: u32,
    /// Stream position of this cycle's first frame (never wraps).
    pub first_frame: u64,
    /// When this cycle nominally started, from the backend's clock (JACK: the driver's
    /// wake-up time from `jack_get_cycle_times`, its DLL's estimate, as it is: see
    /// [`Cycle::checked`] for the start checked against the callbacks).
    pub nominal_ns: u64,
    /// The time this cycle spans, in ns: from its start to the next cycle's start as the
    /// backend predicts it (JACK: `next_usecs - current_usecs`, what `jack_frames_to_time`
    /// interpolates over).
    pub period_ns: f64,
    /// When the callback really started.
    pub callback_ns: u64,
    /// The cycle's start as the engine checked it against the callbacks, or `None` when
    /// it is not known (see [`CheckedStart`]). Every figure that says when a frame
    /// sounded or how late a callback ran is computed from this, never from the
    /// unchecked `nominal_ns`.
    pub checked: Option<CheckedStart>,
    /// The callback started more than a period after the start the stream's phase
    /// predicted for this cycle: its buffer was late (an under-run), although the phase
    /// having moved, the cycle's own start (`checked`) is not known. Only a backend that
    /// checks its starts (JACK) sets it.
    pub overran: bool,
}

/// Where a cycle's [`CheckedStart`] came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimingSource {
    /// The backend's own start: JACK's (its DLL's estimate) where it agreed with the
    /// callbacks, or a push backend's, taken as it is.
    #[default]
    Backend,
    /// The engine's own estimate, where JACK's disagreed with the callbacks: the lower
    /// envelope of the callback times on the frame clock since the last discontinuity
    /// (each callback bounds its own cycle's start from above, and through the frame
    /// count every other cycle's).
    Callbacks,
    /// The cycle's own callback: a push backend put the start after the callback that
    /// ran it (ALSA's jack PCM stamps its status when it is read, after the wake-up),
    /// and a callback never starts before its cycle. The start is the callback's time,
    /// so how late the callback ran is not known
    /// ([`Cycle::checked_lateness_ns`] is `None`).
    OwnCallback,
}

impl TimingSource {
    /// The name stored with a measurement: `backend` or `callbacks`.
    pub fn as_str(self) -> &'static str {
        match self {
            TimingSource::Backend => "backend",
            TimingSource::Callbacks => "callbacks",
            TimingSource::OwnCallback => "callback",
        }
    }
}

impl fmt::Display for TimingSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A cycle's start on the stream's frame clock, checked: a callback never starts before
/// its cycle, and cycles follow each other one period apart on the frame count.
///
/// JACK's cycle start (`jack_get_cycle_times`) is its DLL's estimate, and jackd2 does not
/// restart the DLL after an xrun (`JackFrameTimer::ResetFrameTime` moves the current
/// wake-up but keeps the stale next one), so after each xrun the estimate swings for
/// seconds, tens of milliseconds away from the real cycle starts. The JACK backend keeps
/// its own estimate and uses JACK's only where the two agree; right after a
/// discontinuity (an xrun, a jump in the frame count, a callback far behind the
/// estimate) the start is not known until a few cycles have been seen.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CheckedStart {
    /// When the cycle started, CLOCK_MONOTONIC ns.
    pub ns: u64,
    /// The time the cycle spans, ns: the backend's where its start is used, the nominal
    /// period otherwise.
    pub period_ns: f64,
    /// Where the start came from.
    pub source: TimingSource,
}

impl Cycle {
    /// Time of the frame `offset` frames after this cycle's first frame, on the
    /// backend's time line (not yet plus the playback latency).
    pub fn frame_time_ns(&self, offset: f64) -> f64 {
        self.nominal_ns as f64 + offset * self.period_ns / self.frames.max(1) as f64
    }

    /// Stream position (fractional frames) of time `t_ns` on this cycle's time line.
    pub fn frame_at(&self, t_ns: u64) -> f64 {
        let since = t_ns as f64 - self.nominal_ns as f64;
        self.first_frame as f64 + since * self.frames as f64 / self.period_ns.max(1.0)
    }

    /// Wake-up lateness: callback start minus nominal start, in ns (may be negative when
    /// the backend's estimate runs ahead).
    pub fn lateness_ns(&self) -> i64 {
        self.callback_ns as i64 - self.nominal_ns as i64
    }

    /// Time of the frame `offset` frames after this cycle's first frame on its checked
    /// time line ([`Cycle::checked`]); `None` when the cycle's start is not known.
    pub fn checked_frame_time_ns(&self, offset: f64) -> Option<f64> {
        let c = self.checked?;
        Some(c.ns as f64 + offset * c.period_ns / self.frames.max(1) as f64)
    }

    /// Stream position (fractional frames) of time `t_ns` on this cycle's checked time
    /// line; `None` when the cycle's start is not known.
    pub fn checked_frame_at(&self, t_ns: u64) -> Option<f64> {
        let c = self.checked?;
        let since = t_ns as f64 - c.ns as f64;
        Some(self.first_frame as f64 + since * self.frames as f64 / c.period_ns.max(1.0))
    }

    /// Wake-up lateness on the checked start: callback start minus the cycle's start, in
    /// ns; `None` when the start is not known, or is the callback's own
    /// ([`TimingSource::OwnCallback`]: nothing was measured to be late against).
    pub fn checked_lateness_ns(&self) -> Option<i64> {
        let c = self.checked?;
        (c.source != TimingSource::OwnCallback).then(|| self.callback_ns as i64 - c.ns as i64)
    }

    /// Whether the callback started after the cycle's deadline (the next cycle's start,
    /// when the backend takes the buffer), on the checked start, or [`Cycle::overran`];
    /// `None` when neither is known.
    pub fn missed_deadline(&self) -> Option<bool> {
        if self.overran {
            return Some(true);
        }
        let c = self.checked?;
        Some(self.callback_ns as f64 > c.ns as f64 + c.period_ns)
    }
}

/// A MIDI note-on the backend read for this cycle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoteOn {
    /// Frame offset inside the cycle.
    pub offset: u32,
    /// MIDI note number.
    pub note: u8,
    /// Velocity (never 0: a note-on with velocity 0 is a note-off and is not reported).
    pub velocity: u8,
}

/// Most note-ons one cycle reports; more are counted in [`Io::midi_dropped`].
pub const MAX_NOTE_ONS: usize = 64;

/// The buffers of one cycle.
pub struct Io<'a> {
    /// The mono output, `cycle.frames` long. The processor must write every frame.
    pub output: &'a mut [f32],
    /// The loopback capture, when one is connected.
    pub input: Option<&'a [f32]>,
    /// Note-ons from the MIDI input, in time order.
    pub note_ons: &'a [NoteOn],
    /// Note-ons this cycle that did not fit in [`MAX_NOTE_ONS`] or were malformed.
    pub midi_dropped: u32,
}

/// The probe's code on the audio thread.
///
/// `prepare` runs once on the thread that starts the stream and may allocate; `process`
/// runs on the audio thread every cycle and must not allocate, lock, block, print or
/// panic. If it panics anyway the backend catches the panic, outputs silence from then
/// on and reports it through [`StreamStatus::panic`].
pub trait Processor: Send + 'static {
    /// Size everything for this stream. Called before the first cycle.
    fn prepare(&mut self, info: &StreamInfo);
    /// Render one cycle.
    fn process(&mut self, cycle: &Cycle, io: &mut Io<'_>);
}

/// What the engine measured about one cycle, on the audio thread.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CycleRecord {
    /// The cycle.
    pub cycle: Cycle,
    /// Time spent in [`Processor::process`], in ns.
    pub dsp_ns: u64,
    /// Frames the stream skipped just before this cycle (its first frame minus where the
    /// previous cycle ended): a dropout the server may or may not report as an xrun. JACK's
    /// dummy driver skips whole periods when its thread wakes too late.
    pub gap_frames: u64,
}

/// An under-run (or over-run) the backend reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XrunRecord {
    /// When the backend told us, CLOCK_MONOTONIC ns.
    pub mono_ns: u64,
    /// Cycles the engine had completed by then.
    pub cycles_done: u64,
}

/// Health of a running stream, read from any thread.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamStatus {
    /// Cycles completed.
    pub cycles: u64,
    /// Under-runs the server reported so far.
    pub xruns: u64,
    /// Cycles that started after a gap in the frame count (see [`CycleRecord::gap_frames`]).
    pub gaps: u64,
    /// Cycle records dropped because the reader fell behind.
    pub records_dropped: u64,
    /// Set when the server went away, changed the stream under us (its buffer size or
    /// rate, or freewheeling) or stopped calling the stream (a backend's stall limit), with
    /// the reason.
    pub shutdown: Option<String>,
    /// Set when the processor panicked, with the panic message.
    pub panic: Option<String>,
    /// The audio thread's scheduling policy, as the thread read it from the kernel in its
    /// first cycle (`None` before the first cycle).
    pub audio_thread: Option<crate::rt::Policy>,
    /// The audio thread's id (TID), as the thread read it in its first cycle (`None`
    /// before): the thread `--why` explains.
    pub audio_tid: Option<i32>,
    /// Debug builds: allocations made on the audio thread inside the callback, as counted
    /// by `assert_no_alloc` when the program installs its `AllocDisabler` (always 0 in
    /// release builds and without that allocator).
    pub alloc_violations: u64,
    /// A full-duplex push stream (ALSA): how its two directions started the last time
    /// they did (`None` before the first cycle, and for other streams).
    pub duplex_start: Option<DuplexStart>,
    /// Native PipeWire streams with a capture: running cycles whose input was silence
    /// because the capture of the same cycle had not arrived (`None`: not counted).
    pub unmatched_captures: Option<u64>,
    /// A JACK client: restarts of the server's frame count that audiolat's own count
    /// bridged (PipeWire's libjack restarts it; `None`: not counted).
    pub frame_count_restarts: Option<u64>,
}

/// How the capture and playback of a full-duplex device started, measured from their
/// hardware pointers on the first period after the start.
///
/// The round trip through a loop is the frames between the two directions' stream
/// positions, so it includes any offset between their starts. Linked PCMs
/// (`snd_pcm_link`) start in one kernel call; even so a driver whose pointers move in
/// timer ticks (snd-aloop moves by jiffies) can put the tick between the two, and the
/// loop then reads a tick longer or shorter; PCMs that cannot be linked start one after
/// the other. audiolat measures the offset (`skew`) and starts the pair again while it is
/// neither 0 nor the same as on the start before: an offset that repeats is the
/// device's own (pointers that lead or lag the converters by different amounts, USB's
/// playback pointer counting packets queued and capture's packets come back), one that
/// does not is an accident of the start. So the same settings give the same figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DuplexStart {
    /// The two PCMs were linked and started together.
    pub linked: bool,
    /// Capture position minus playback position, in frames, on the first period after
    /// the start (0: aligned); `None` when the pointers would not hold still long enough
    /// to read.
    pub skew_frames: Option<i64>,
    /// Starts made for this one: until the skew was 0 or repeated (at most a few).
    pub attempts: u32,
    /// Times the stream started: 1, plus one for every restart after an under-run.
    pub starts: u32,
    /// The skew is not 0 and was the same on the start before: the device's own offset.
    pub steady_offset: bool,
}

/// Starts of a duplex pair made, at most, to get one that is aligned or steady.
pub const MAX_START_ATTEMPTS: u32 = 4;

impl DuplexStart {
    /// Whether to start the pair again after reading this start's skew, given the skew
    /// of the start before (`None` on the first). Again while the skew is neither 0 nor
    /// the same as before, up to [`MAX_START_ATTEMPTS`]; never when it could not be read.
    pub fn start_again(&self, previous: Option<Option<i64>>) -> bool {
        match self.skew_frames {
            None | Some(0) => false,
            Some(_) => self.attempts < MAX_START_ATTEMPTS && previous != Some(self.skew_frames),
        }
    }
}

impl StreamStatus {
    /// `true` while audio is flowing normally.
    pub fn is_healthy(&self) -> bool {
        self.shutdown.is_none() && self.panic.is_none()
    }
}

/// An open audio stream.
pub trait Backend {
    /// The stream's facts.
    fn info(&self) -> &StreamInfo;
    /// Hands the processor to the audio thread and starts the stream.
    fn start(&mut self, processor: Box<dyn Processor>) -> Result<(), AudioError>;
    /// Health: cycles, xruns, server shutdown, processor panic.
    fn status(&self) -> StreamStatus;
    /// The per-cycle records, to drain from a non-real-time thread.
    fn cycles(&mut self) -> &mut rtrb::Consumer<CycleRecord>;
    /// Under-runs reported since the last call.
    fn take_xruns(&mut self) -> Vec<XrunRecord>;
    /// Stops the stream. The processor is dropped here, off the audio thread.
    fn stop(&mut self);
}

#[cfg(test)]
mod duplex_tests {
    use super::*;

    fn start(skew: Option<i64>, attempts: u32) -> DuplexStart {
        DuplexStart {
            linked: true,
            skew_frames: skew,
            attempts,
            starts: 1,
            steady_offset: false,
        }
    }

    #[test]
    fn a_pair_starts_again_only_while_its_skew_is_an_accident_of_the_start() {
        // Aligned, or unreadable: keep it.
        assert!(!start(Some(0), 1).start_again(None));
        assert!(!start(None, 1).start_again(None));
        // snd-aloop: a timer tick fell between the two triggers; the next start is aligned.
        assert!(start(Some(192), 1).start_again(None));
        assert!(!start(Some(0), 2).start_again(Some(Some(192))));
        // A device's own offset repeats: one more start shows it, then it is kept.
        assert!(start(Some(-24), 1).start_again(None));
        assert!(!start(Some(-24), 2).start_again(Some(Some(-24))));
        // One that changes every time is kept after the last attempt.
        assert!(start(Some(7), 3).start_again(Some(Some(3))));
        assert!(!start(Some(9), MAX_START_ATTEMPTS).start_again(Some(Some(7))));
    }
}
