//! The JACK backend (pull model), on the `jack` crate.
//!
//! [`JackStream::open`] registers a mono output port `out` (and, when asked, an input `in`
//! for a loopback capture and a MIDI input `midi_in`), reads the server's rate, period and
//! the playback ports' reported latency, and [`Backend::start`] activates the client and
//! connects the ports.
//!
//! Threads:
//! - the JACK process thread runs [`Processor::process`] inside `catch_unwind`, measures the
//!   cycle and pushes one [`CycleRecord`] into a pre-sized ring. It never allocates, locks
//!   or prints (a panic is the exception: it is caught, the message kept, and the port
//!   outputs silence from then on);
//! - JACK's notification thread records xruns (with their time) and a server shutdown;
//! - the thread that owns the [`JackStream`] drains the records and polls
//!   [`Backend::status`].
//!
//! A started stream whose process callback stops being called (no cycle for
//! [`STALL_AFTER_MS`] ms or 16 periods, whichever is longer) is reported as ended, with the
//! reason, rather than waited on for ever: a server that hangs (or is stopped) says
//! nothing, and jackd2 1.9.21 can leave a client unwoken when a client ahead of it in the
//! graph kept a stale wake-up handle for its slot (a client that closed while that one was
//! still opening).

use crate::audio::{
    AudioError, Backend, CycleRecord, Io, Model, NoteOn, PortRole, Processor, ServerInfo,
    StreamInfo, StreamStatus, XrunRecord, MAX_NOTE_ONS,
};
use crate::backend::kind::BackendKind;
use crate::clock::monotonic_ns;
use crate::jack::frame_count::FrameCount;
use crate::jack::server::open_client;
use crate::jack::start_check::{Observed, ServerStart, StartCheck};
use crate::stream::{CycleRunner, CycleTiming, StreamShared};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;

/// How a client's process thread leaves audiolat's code before the client is closed.
///
/// libjack stops a client's process thread with `pthread_cancel` when the client is
/// deactivated, and the thread is cancellable *asynchronously*: the cancellation (a
/// forced unwind) lands wherever the thread is. Inside a Rust callback it meets a
/// `catch_unwind` (the engine's and the `jack` crate's), which cannot catch it, and glibc
/// aborts the process ("FATAL: exception not rethrown") -- with a callback heavier than
/// its period the thread is almost always inside it. So a client is never deactivated
/// while its thread may be in Rust: [`CallbackExit::close`] asks the callback to return
/// [`jack::Control::Quit`] at its next start (libjack then ends the thread itself, from
/// its own code, and marks the client inactive) and waits for the thread to be gone.
#[derive(Default)]
pub(crate) struct CallbackExit {
    closing: AtomicBool,
    /// The process thread's kernel id, recorded at its first callback; 0 until then.
    thread_id: AtomicI32,
    /// Set from [`CallbackExit::enter`] to [`CallbackExit::leave`].
    in_callback: AtomicBool,
}

impl CallbackExit {
    /// On the process thread, first thing in every callback: whether the callback must
    /// return `Quit` at once. Real-time safe (one system call, in the first callback).
    pub(crate) fn enter(&self) -> bool {
        if self.thread_id.load(Ordering::Relaxed) == 0 {
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() };
            self.thread_id.store(tid, Ordering::Release);
        }
        self.in_callback.store(true, Ordering::Release);
        self.closing.load(Ordering::Acquire)
    }

    /// On the process thread, last thing in every callback.
    pub(crate) fn leave(&self) {
        self.in_callback.store(false, Ordering::Release);
    }

    /// Asks the callback to quit and waits (at most `timeout`) until the process thread
    /// has exited. Returns whether it is out of audiolat's code: exited, never called, or
    /// (a server that stopped calling it) waiting in libjack.
    pub(crate) fn close(&self, timeout: std::time::Duration) -> bool {
        self.closing.store(true, Ordering::Release);
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let tid = self.thread_id.load(Ordering::Acquire);
            // A thread id is a pid to /proc; one that exited but is not joined yet is
            // a zombie: gone from audiolat's code.
            if tid == 0 || !crate::servers::process_running(tid) {
                return true;
            }
            if std::time::Instant::now() > deadline {
                return !self.in_callback.load(Ordering::Acquire);
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
}

/// How long a closing stream waits for its process thread to leave audiolat's code: the
/// callback in progress finishes first, however heavy.
const CALLBACK_EXIT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// What to open.
#[derive(Clone, Debug)]
pub struct JackConfig {
    /// Client name ("audiolat"); JACK adds a suffix when it is taken.
    pub client_name: String,
    /// Ports to connect our output to; empty means the first two physical playback ports.
    pub playback: Vec<String>,
    /// A port to connect our input to (the loopback capture), if any.
    pub capture: Option<String>,
    /// Register a MIDI input; connect it to this port when non-empty.
    pub midi: Option<String>,
    /// Capacity of the cycle-record ring (cycles the reader may fall behind).
    pub record_capacity: usize,
}

impl Default for JackConfig {
    fn default() -> Self {
        JackConfig {
            client_name: "audiolat".into(),
            playback: Vec::new(),
            capture: None,
            midi: None,
            record_capacity: 8192,
        }
    }
}

pub use crate::stream::STALL_AFTER_MS;

/// What only JACK tells: changes of the server under a running stream.
#[derive(Default)]
struct JackFlags {
    resized_to: AtomicU64,
    rate_changed_to: AtomicU64,
    freewheeled: AtomicBool,
    /// [`FrameCount::restarts`], published by the process thread.
    frame_count_restarts: AtomicU64,
}

struct Notifications {
    shared: Arc<StreamShared>,
    flags: Arc<JackFlags>,
    /// The rate the stream was opened at.
    rate_hz: u32,
}

impl jack::NotificationHandler for Notifications {
    unsafe fn shutdown(&mut self, _status: jack::ClientStatus, reason: &str) {
        self.shared.end(if reason.is_empty() {
            "the server shut down"
        } else {
            reason
        });
    }

    /// Called at activation with the server's rate and again if it changes: a change
    /// mid-run invalidates every frame-to-time figure.
    fn sample_rate(&mut self, _: &jack::Client, rate_hz: jack::Frames) -> jack::Control {
        if rate_hz != self.rate_hz {
            self.flags
                .rate_changed_to
                .store(u64::from(rate_hz), Ordering::SeqCst);
        }
        jack::Control::Continue
    }

    /// Freewheeling runs cycles as fast as the CPU allows, on no clock: the timing model
    /// no longer holds.
    fn freewheel(&mut self, _: &jack::Client, enabled: bool) {
        if enabled {
            self.flags.freewheeled.store(true, Ordering::SeqCst);
        }
    }

    fn xrun(&mut self, _: &jack::Client) -> jack::Control {
        self.shared.note_xrun(monotonic_ns());
        jack::Control::Continue
    }
}

struct Handler {
    out: jack::Port<jack::AudioOut>,
    input: Option<jack::Port<jack::AudioIn>>,
    midi: Option<jack::Port<jack::MidiIn>>,
    runner: CycleRunner,
    flags: Arc<JackFlags>,
    clock_offset_ns: i64,
    frame_count: FrameCount,
    note_ons: [NoteOn; MAX_NOTE_ONS],
    nominal_period_ns: f64,
    prepared_frames: u32,
    exit: Arc<CallbackExit>,
    /// The client's own check of each cycle's start (JACK's is its DLL's estimate,
    /// which an xrun throws off for seconds).
    start_check: StartCheck,
    shared: Arc<StreamShared>,
}

impl jack::ProcessHandler for Handler {
    /// Called on the audio thread before the first cycle and when the server changes its
    /// buffer size. A change mid-run ends the stream's validity: the processor was
    /// prepared for the old period and the reported latencies no longer hold.
    fn buffer_size(&mut self, _: &jack::Client, size: jack::Frames) -> jack::Control {
        if size != self.prepared_frames {
            self.flags.resized_to.store(size as u64, Ordering::SeqCst);
        }
        jack::Control::Continue
    }

    fn process(&mut self, _: &jack::Client, ps: &jack::ProcessScope) -> jack::Control {
        if self.exit.enter() {
            self.out.as_mut_slice(ps).fill(0.0);
            self.exit.leave();
            return jack::Control::Quit;
        }
        // The JACK side of the cycle (timing, MIDI) runs under the allocation guard too;
        // the runner publishes the audio thread's count.
        #[cfg(debug_assertions)]
        assert_no_alloc::assert_no_alloc(|| self.cycle(ps));
        #[cfg(not(debug_assertions))]
        self.cycle(ps);
        self.exit.leave();
        jack::Control::Continue
    }
}

impl Handler {
    /// One cycle on the process thread: JACK's timing, checked against the callbacks
    /// ([`StartCheck`]), the MIDI note-ons, then the processor. Real-time safe.
    fn cycle(&mut self, ps: &jack::ProcessScope) {
        let callback_ns = monotonic_ns();
        let frames = ps.n_frames();
        let times = ps.cycle_times().ok();
        let (low, nominal_ns, period_ns) = match times {
            Some(t) => (
                t.current_frames,
                (t.current_usecs as i64 * 1000 + self.clock_offset_ns).max(0) as u64,
                // Frames inside the cycle map to time between this wake-up and the next
                // one, as jack_frames_to_time does.
                if t.next_usecs > t.current_usecs {
                    (t.next_usecs - t.current_usecs) as f64 * 1000.0
                } else if t.period_usecs > 0.0 {
                    t.period_usecs as f64 * 1000.0
                } else {
                    self.nominal_period_ns
                },
            ),
            None => (ps.last_frame_time(), callback_ns, self.nominal_period_ns),
        };
        // JACK's 32-bit frame counter, made continuous (its wrap, and PipeWire's
        // restarts of it: see `FrameCount`).
        let first_frame = self.frame_count.next(low, frames, nominal_ns, callback_ns);
        self.flags
            .frame_count_restarts
            .store(self.frame_count.restarts(), Ordering::Relaxed);
        let mut timing = CycleTiming {
            first_frame,
            nominal_ns,
            period_ns,
            callback_ns,
            overran: false,
        };
        let checked = self.start_check.check(Observed {
            callback_ns,
            first_frame: timing.first_frame,
            frames,
            xruns: self.shared.xruns.load(Ordering::Relaxed),
            server: times.map(|_| ServerStart {
                ns: nominal_ns,
                period_ns,
            }),
        });
        timing.overran = self.start_check.overran();
        let mut n_notes = 0;
        let mut midi_dropped = 0;
        if let Some(midi) = self.midi.as_ref() {
            for event in midi.iter(ps) {
                let b = event.bytes;
                if b.len() >= 3 && b[0] & 0xF0 == 0x90 && b[2] > 0 {
                    if n_notes < MAX_NOTE_ONS && event.time < frames {
                        self.note_ons[n_notes] = NoteOn {
                            offset: event.time,
                            note: b[1] & 0x7F,
                            velocity: b[2] & 0x7F,
                        };
                        n_notes += 1;
                    } else {
                        midi_dropped += 1;
                    }
                } else if b.is_empty() || b[0] & 0x80 == 0 {
                    midi_dropped += 1;
                }
            }
        }
        let input = self.input.as_ref().map(|p| p.as_slice(ps));
        let mut io = Io {
            output: self.out.as_mut_slice(ps),
            input,
            note_ons: &self.note_ons[..n_notes],
            midi_dropped,
        };
        self.runner.run_checked(timing, checked, &mut io);
    }
}

enum State {
    Open {
        client: jack::Client,
        out: jack::Port<jack::AudioOut>,
        input: Option<jack::Port<jack::AudioIn>>,
        midi: Option<jack::Port<jack::MidiIn>>,
        producer: rtrb::Producer<CycleRecord>,
    },
    Running(jack::AsyncClient<Notifications, Handler>),
    Stopped,
}

/// A JACK client with one output port, ready to start.
pub struct JackStream {
    info: StreamInfo,
    state: State,
    config: JackConfig,
    shared: Arc<StreamShared>,
    flags: Arc<JackFlags>,
    records: rtrb::Consumer<CycleRecord>,
    /// CLOCK_MONOTONIC ns when the client was activated.
    started_ns: u64,
    exit: Arc<CallbackExit>,
}

fn jack_err(op: &'static str) -> impl Fn(jack::Error) -> AudioError {
    move |e| {
        let said = crate::jack::server::libjack_messages();
        let detail = match said.last() {
            Some(m) => format!("{e} (libjack: {m})"),
            None => e.to_string(),
        };
        AudioError::Jack { op, detail }
    }
}

/// Measures the offset from JACK's clock to CLOCK_MONOTONIC. jackd2 on Linux counts
/// CLOCK_MONOTONIC_RAW, which runs apart from CLOCK_MONOTONIC by NTP's corrections (on
/// this kind of VM by about 0.1 s), so the offset is read once when the stream opens: the
/// closest of nine bracketed reads of `jack_get_time`. Its error is JACK's microsecond
/// resolution; the two clocks' rates differ by parts per million, far under a frame
/// over a run.
fn clock_offset_ns(client: &jack::Client) -> i64 {
    let mut best: Option<(u64, i64)> = None;
    for _ in 0..9 {
        let a = monotonic_ns();
        let jack_us = client.time();
        let b = monotonic_ns();
        // JACK truncates to whole microseconds: its reading means "jack_us + 0.5 us".
        let offset = ((a + b) / 2) as i64 - (jack_us as i64 * 1000 + 500);
        if best.is_none_or(|(w, _)| b - a < w) {
            best = Some((b - a, offset));
        }
    }
    best.map(|(_, o)| o).unwrap_or(0)
}

impl JackStream {
    /// Opens a client on `server` and registers the ports. Nothing runs until
    /// [`Backend::start`].
    pub fn open(server: &ServerInfo, config: JackConfig) -> Result<JackStream, AudioError> {
        // jackd2 1.9.21 refuses a second client named like its server once the first
        // has closed: keep the names apart.
        let client_name = if config.client_name == server.name {
            format!("{}-client", config.client_name)
        } else {
            config.client_name.clone()
        };
        let client = open_client(&server.name, &client_name)?;
        let out = client
            .register_port("out", jack::AudioOut::default())
            .map_err(jack_err("registering the output port"))?;
        let input = match &config.capture {
            Some(_) => Some(
                client
                    .register_port("in", jack::AudioIn::default())
                    .map_err(jack_err("registering the loopback input port"))?,
            ),
            None => None,
        };
        let midi = match &config.midi {
            Some(_) => Some(
                client
                    .register_port("midi_in", jack::MidiIn::default())
                    .map_err(jack_err("registering the MIDI input port"))?,
            ),
            None => None,
        };
        let playback = if config.playback.is_empty() {
            let ports = client.ports(
                None,
                Some(jack::jack_sys::FLOAT_MONO_AUDIO),
                jack::PortFlags::IS_INPUT | jack::PortFlags::IS_PHYSICAL,
            );
            if ports.is_empty() {
                return Err(AudioError::NoPlayback(server.name.clone()));
            }
            ports.into_iter().take(2).collect()
        } else {
            config.playback.clone()
        };
        let mut playback_latency = 0;
        for name in &playback {
            let port = client
                .port_by_name(name)
                .ok_or_else(|| AudioError::NoSuchPort(name.clone()))?;
            playback_latency =
                playback_latency.max(port.get_latency_range(jack::LatencyType::Playback).1);
        }
        let mut capture_latency = None;
        if let Some(name) = &config.capture {
            let port = client
                .port_by_name(name)
                .ok_or_else(|| AudioError::NoSuchPort(name.clone()))?;
            capture_latency = Some(port.get_latency_range(jack::LatencyType::Capture).1);
        }
        if let Some(name) = config.midi.as_ref().filter(|m| !m.is_empty()) {
            client
                .port_by_name(name)
                .ok_or_else(|| AudioError::NoSuchPort(name.clone()))?;
        }
        let (producer, records) = rtrb::RingBuffer::new(config.record_capacity.max(16));
        let info = StreamInfo {
            backend: BackendKind::Jack,
            model: Model::of(BackendKind::Jack),
            sample_rate_hz: client.sample_rate(),
            period_frames: client.buffer_size(),
            playback_latency_frames: playback_latency,
            capture_latency_frames: capture_latency,
            client_name: client.name().to_string(),
            playback_ports: playback,
            capture_port: config.capture.clone(),
            midi_port: config.midi.clone(),
            server: server.clone(),
            clock_offset_ns: clock_offset_ns(&client),
        };
        Ok(JackStream {
            info,
            state: State::Open {
                client,
                out,
                input,
                midi,
                producer,
            },
            config,
            shared: Arc::default(),
            flags: Arc::default(),
            records,
            started_ns: 0,
            exit: Arc::default(),
        })
    }

    fn client(&self) -> Option<&jack::Client> {
        match &self.state {
            State::Open { client, .. } => Some(client),
            State::Running(a) => Some(a.as_client()),
            State::Stopped => None,
        }
    }

    /// Why the running stream counts as stalled: no process callback for
    /// [`STALL_AFTER_MS`] (or 16 periods) since the last one or since activation.
    fn stalled(&self) -> Option<String> {
        if !matches!(self.state, State::Running(_)) {
            return None;
        }
        let (silent_ns, cycles) = self.shared.stall(self.started_ns, self.info.period_ns())?;
        Some(if cycles == 0 {
            format!(
                "the JACK server `{}` never ran audiolat's process callback in the {:.1} s since \
                 it was activated: the server or a client ahead of audiolat in its graph is stuck \
                 (restart the server and the clients connected to audiolat's inputs)",
                self.info.server.name,
                silent_ns as f64 / 1e9
            )
        } else {
            format!(
                "the JACK server `{}` stopped running audiolat's process callback: none for \
                 {:.1} s after {cycles} cycles (is the server stopped or hung?)",
                self.info.server.name,
                silent_ns as f64 / 1e9
            )
        })
    }

    /// libjack's own conversion of a frame (JACK's 32-bit frame count) to
    /// CLOCK_MONOTONIC ns, on its current cycle timing: the reference the engine's
    /// [`Cycle::frame_time_ns`] is checked against.
    pub fn frames_to_time_ns(&self, frame: u32) -> Option<u64> {
        let c = self.client()?;
        Some((c.frames_to_time(frame) as i64 * 1000 + self.info.clock_offset_ns) as u64)
    }
}

impl Backend for JackStream {
    fn info(&self) -> &StreamInfo {
        &self.info
    }

    fn start(&mut self, mut processor: Box<dyn Processor>) -> Result<(), AudioError> {
        let State::Open {
            client,
            out,
            input,
            midi,
            producer,
        } = std::mem::replace(&mut self.state, State::Stopped)
        else {
            return Err(AudioError::Jack {
                op: "starting the stream",
                detail: "it was already started".into(),
            });
        };
        processor.prepare(&self.info);
        let out_name = out.name().map_err(jack_err("naming the output port"))?;
        let in_name = match &input {
            Some(p) => Some(p.name().map_err(jack_err("naming the input port"))?),
            None => None,
        };
        let midi_name = match &midi {
            Some(p) => Some(p.name().map_err(jack_err("naming the MIDI port"))?),
            None => None,
        };
        let handler = Handler {
            out,
            input,
            midi,
            runner: CycleRunner::new(processor, producer, self.shared.clone()),
            flags: self.flags.clone(),
            clock_offset_ns: self.info.clock_offset_ns,
            frame_count: FrameCount::new(self.info.sample_rate_hz),
            note_ons: [NoteOn::default(); MAX_NOTE_ONS],
            nominal_period_ns: self.info.period_ns(),
            prepared_frames: self.info.period_frames,
            exit: self.exit.clone(),
            start_check: StartCheck::new(self.info.sample_rate_hz),
            shared: self.shared.clone(),
        };
        let notifications = Notifications {
            shared: self.shared.clone(),
            flags: self.flags.clone(),
            rate_hz: self.info.sample_rate_hz,
        };
        self.started_ns = monotonic_ns();
        let active = client
            .activate_async(notifications, handler)
            .map_err(jack_err("activating the client"))?;
        let c = active.as_client();
        for port in &self.info.playback_ports {
            c.connect_ports_by_name(&out_name, port)
                .map_err(jack_err("connecting the output to the playback port"))?;
        }
        if let (Some(src), Some(dst)) = (&self.config.capture, &in_name) {
            c.connect_ports_by_name(src, dst)
                .map_err(jack_err("connecting the loopback capture"))?;
        }
        if let (Some(src), Some(dst)) = (
            self.config.midi.as_ref().filter(|m| !m.is_empty()),
            &midi_name,
        ) {
            c.connect_ports_by_name(src, dst)
                .map_err(jack_err("connecting the MIDI input"))?;
        }
        self.state = State::Running(active);
        Ok(())
    }

    fn status(&self) -> StreamStatus {
        let mut status = self.shared.status();
        let f = &self.flags;
        let resized = f.resized_to.load(Ordering::SeqCst);
        let rate = f.rate_changed_to.load(Ordering::SeqCst);
        status.shutdown = status
            .shutdown
            .or_else(|| {
                (resized != 0).then(|| {
                    format!(
                        "the server changed its buffer size from {} to {resized} frames mid-run",
                        self.info.period_frames
                    )
                })
            })
            .or_else(|| {
                (rate != 0).then(|| {
                    format!(
                        "the server changed its sample rate from {} to {rate} Hz mid-run",
                        self.info.sample_rate_hz
                    )
                })
            })
            .or_else(|| {
                f.freewheeled.load(Ordering::SeqCst).then(|| {
                    "the server entered freewheel mode (cycles on no clock) mid-run".to_string()
                })
            })
            .or_else(|| self.stalled());
        status.frame_count_restarts = Some(f.frame_count_restarts.load(Ordering::Relaxed));
        status
    }

    fn cycles(&mut self) -> &mut rtrb::Consumer<CycleRecord> {
        &mut self.records
    }

    fn take_xruns(&mut self) -> Vec<XrunRecord> {
        self.shared.take_xruns()
    }

    fn stop(&mut self) {
        match std::mem::replace(&mut self.state, State::Stopped) {
            State::Running(active) => {
                if self.shared.ended_flag.load(Ordering::SeqCst) {
                    // The server is gone: deactivating would talk to a dead socket. The
                    // client's memory is leaked on purpose rather than risking a hang.
                    std::mem::forget(active);
                } else {
                    deactivate_with_deadline(active, &self.exit);
                }
            }
            State::Open { client, .. } => drop(client),
            State::Stopped => {}
        }
    }
}

/// Checks, before anything is stored or started, that the ports `config` names exist on
/// `server` and can be connected the way the stream would: playback ports are audio
/// inputs, the loopback capture an audio output, the MIDI source a MIDI output.
/// `capture_role` is what the capture port was named for, for the message.
pub fn check_ports(
    server: &ServerInfo,
    config: &JackConfig,
    capture_role: PortRole,
) -> Result<(), AudioError> {
    let client = open_client(&server.name, "audiolat-probe")?;
    let check = |name: &str, midi: bool, want_output: bool, role: PortRole| {
        let port = client
            .port_by_name(name)
            .ok_or_else(|| AudioError::NoSuchPort(name.to_string()))?;
        let kind = port.port_type().unwrap_or_default();
        let is_midi = kind.contains("midi");
        let is_audio = kind == jack::jack_sys::FLOAT_MONO_AUDIO;
        let is_output = port.flags().contains(jack::PortFlags::IS_OUTPUT);
        if (midi && !is_midi) || (!midi && !is_audio) || is_output != want_output {
            let needed = format!(
                "{} {}",
                if midi { "a MIDI" } else { "an audio" },
                if want_output { "output" } else { "input" }
            );
            let found = format!(
                "{} {}",
                if kind.is_empty() { "a port" } else { &kind },
                if is_output { "output" } else { "input" }
            );
            return Err(AudioError::WrongPort {
                name: name.to_string(),
                role,
                needed,
                found,
            });
        }
        Ok(())
    };
    for name in &config.playback {
        check(name, false, false, PortRole::Playback)?;
    }
    if let Some(name) = &config.capture {
        check(name, false, true, capture_role)?;
    }
    if let Some(name) = config.midi.as_ref().filter(|m| !m.is_empty()) {
        check(name, true, true, PortRole::Midi)?;
    }
    Ok(())
}

/// How long deactivating a client may take before it is left to libjack: a server that is
/// stopped or hung never answers `jack_deactivate`.
const DEACTIVATE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// Deactivates and closes the client on a worker thread (the processor is dropped there,
/// off the audio thread), waiting at most [`DEACTIVATE_TIMEOUT`]: a server that does not
/// answer must not hang audiolat's exit. The process thread is first made to leave
/// audiolat's code (see [`CallbackExit`]); if it does not within
/// [`CALLBACK_EXIT_TIMEOUT`], the client is left to the process's exit rather than
/// cancelled inside a Rust callback.
pub(crate) fn deactivate_with_deadline<N, P>(active: jack::AsyncClient<N, P>, exit: &CallbackExit)
where
    N: jack::NotificationHandler + Send + 'static,
    P: jack::ProcessHandler + Send + 'static,
{
    if !exit.close(CALLBACK_EXIT_TIMEOUT) {
        std::mem::forget(active);
        return;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("jack-close".into())
        .spawn(move || {
            drop(active.deactivate());
            let _ = tx.send(());
        });
    if spawned.is_ok() {
        let _ = rx.recv_timeout(DEACTIVATE_TIMEOUT);
    }
}

impl Drop for JackStream {
    fn drop(&mut self) {
        self.stop();
    }
}
