//! [`NativeStream`]: the playback (and capture) `pw_stream`s, their main-loop thread and
//! their process callbacks (see the [module docs](super)).

use super::{NativeConfig, NativeError};
use crate::audio::{
    AudioError, Backend, CycleRecord, Io, Model, Processor, StreamInfo, StreamStatus, XrunRecord,
};
use crate::backend::kind::BackendKind;
use crate::clock::monotonic_ns;
use crate::stream::{CycleRunner, CycleTiming, StreamShared};
use pipewire as pw;
use pw::{properties::properties, spa};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The largest quantum the buffers are sized for (PipeWire's quantum limit).
pub const MAX_QUANTUM_FRAMES: usize = 8192;
/// How long the streams may take to run at a steady quantum after they connect.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Cycles of one quantum (with the capture matched, when there is one) that make the
/// graph steady.
const STEADY_CYCLES: u64 = 8;
/// How long stopping waits for the main-loop thread.
const STOP_TIMEOUT: Duration = Duration::from_secs(3);

/// A delay no cycle has reported.
const NOT_READ: i64 = i64::MIN;

const WARMING: u8 = 0;
const RUNNING: u8 = 1;
const CLOSING: u8 = 2;

/// What the data thread and the owner share. The `UnsafeCell`s are touched by the data
/// thread only (both process callbacks run there), except `runner`, which the owner
/// writes before `state` becomes [`RUNNING`] and takes back after the streams were
/// disconnected.
struct Cell {
    shared: Arc<StreamShared>,
    has_capture: bool,
    state: AtomicU8,
    runner: UnsafeCell<Option<CycleRunner>>,
    capture: UnsafeCell<Vec<f32>>,
    silence: UnsafeCell<Vec<f32>>,
    /// `now` and frames of the latest capture chunk.
    cap_now: AtomicI64,
    cap_frames: AtomicU32,
    /// The playback's latest quantum, and how many cycles in a row it has held (with the
    /// capture matched).
    quantum: AtomicU32,
    steady: AtomicU64,
    rate_hz: AtomicU32,
    delay_frames: AtomicI64,
    /// The capture stream's `delay` in its latest cycle ([`NOT_READ`]: none read).
    cap_delay_frames: AtomicI64,
    /// The quantum the processor was prepared for, and one seen after it (0: none).
    prepared: AtomicU32,
    resized_to: AtomicU32,
    /// Running cycles whose input was silence (no capture chunk of that cycle).
    unmatched: AtomicU64,
    /// The server's version, from the core's info (main-loop thread only).
    version: Mutex<Option<String>>,
}

// SAFETY: see the field docs of `Cell`: each `UnsafeCell` has one thread at a time.
unsafe impl Sync for Cell {}
unsafe impl Send for Cell {}

/// Counters only this backend keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NativeCounters {
    /// Running cycles whose input was silence: no capture chunk of the same cycle (same
    /// `now` and quantum) had arrived.
    pub unmatched_captures: u64,
}

/// The native PipeWire streams, ready to start (they already run, outputting silence,
/// from [`NativeStream::open`] on: that is how the quantum is measured).
pub struct NativeStream {
    info: StreamInfo,
    cell: Arc<Cell>,
    records: rtrb::Consumer<CycleRecord>,
    producer: Option<rtrb::Producer<CycleRecord>>,
    quit: Option<pw::channel::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    done: Option<std::sync::mpsc::Receiver<()>>,
    started_ns: u64,
}

fn format_pod(rate: u32) -> Vec<u8> {
    let mut ai = spa::param::audio::AudioInfoRaw::new();
    ai.set_format(spa::param::audio::AudioFormat::F32LE);
    ai.set_rate(rate);
    ai.set_channels(1);
    let mut pos = [0; spa::param::audio::MAX_CHANNELS];
    pos[0] = spa::sys::SPA_AUDIO_CHANNEL_MONO;
    ai.set_position(pos);
    spa::pod::serialize::PodSerializer::serialize(
        std::io::Cursor::new(Vec::new()),
        &spa::pod::Value::Object(spa::pod::Object {
            type_: spa::sys::SPA_TYPE_OBJECT_Format,
            id: spa::sys::SPA_PARAM_EnumFormat,
            properties: ai.into(),
        }),
    )
    .map(|(c, _)| c.into_inner())
    .unwrap_or_default()
}

fn pw_err(op: &'static str) -> impl Fn(pw::Error) -> String {
    move |e| format!("{op}: {e}")
}

impl Cell {
    /// The playback callback: the engine's cycle. Real-time safe: in debug builds the
    /// whole callback (PipeWire's side too) runs under the allocation guard, as JACK's.
    fn playback(&self, s: &pw::stream::Stream) {
        #[cfg(debug_assertions)]
        assert_no_alloc::assert_no_alloc(|| self.playback_cycle(s));
        #[cfg(not(debug_assertions))]
        self.playback_cycle(s);
    }

    fn playback_cycle(&self, s: &pw::stream::Stream) {
        let callback_ns = monotonic_ns();
        let time = s.time().ok();
        let Some(mut buffer) = s.dequeue_buffer() else {
            return;
        };
        let requested = buffer.requested() as usize;
        let data = &mut buffer.datas_mut()[0];
        let mut n = 0;
        if let Some(bytes) = data.data() {
            // SAFETY: the mapped buffer is plain memory; `align_to_mut` keeps alignment.
            let (head, floats, _) = unsafe { bytes.align_to_mut::<f32>() };
            if head.is_empty() {
                n = if requested > 0 {
                    requested.min(floats.len())
                } else {
                    floats.len()
                };
                self.cycle(&mut floats[..n], time.as_ref(), callback_ns);
            }
        }
        let chunk = data.chunk_mut();
        *chunk.offset_mut() = 0;
        *chunk.stride_mut() = 4;
        *chunk.size_mut() = (n * 4) as u32;
    }

    fn cycle(&self, out: &mut [f32], time: Option<&pw::stream::Time>, callback_ns: u64) {
        let n = out.len() as u32;
        let (now, ticks, rate) = match time {
            Some(t) if t.rate().denom > 0 => (t.now(), t.ticks(), t.rate()),
            _ => {
                out.fill(0.0);
                return;
            }
        };
        // Without a capture, the playback alone makes a cycle steady.
        let matched = !self.has_capture
            || (self.cap_now.load(Ordering::Relaxed) == now
                && self.cap_frames.load(Ordering::Relaxed) == n);
        if self.state.load(Ordering::Acquire) != RUNNING {
            if self.quantum.swap(n, Ordering::Relaxed) == n && matched {
                self.steady.fetch_add(1, Ordering::Relaxed);
            } else {
                self.steady.store(0, Ordering::Relaxed);
            }
            self.rate_hz
                .store(rate.denom / rate.num.max(1), Ordering::Relaxed);
            if let Some(t) = time {
                self.delay_frames.store(t.delay(), Ordering::Relaxed);
            }
            out.fill(0.0);
            return;
        }
        if n != self.prepared.load(Ordering::Relaxed) {
            self.resized_to.store(n, Ordering::Relaxed);
            out.fill(0.0);
            return;
        }
        // SAFETY: only the data thread touches these while RUNNING (see `Cell`).
        let (runner, capture, silence) = unsafe {
            (
                &mut *self.runner.get(),
                &*self.capture.get(),
                &*self.silence.get(),
            )
        };
        let Some(runner) = runner.as_mut() else {
            out.fill(0.0);
            return;
        };
        let input = if !self.has_capture {
            None
        } else if matched {
            Some(&capture[..n as usize])
        } else {
            self.unmatched.fetch_add(1, Ordering::Relaxed);
            Some(&silence[..n as usize])
        };
        let timing = CycleTiming {
            first_frame: ticks,
            nominal_ns: now.max(0) as u64,
            period_ns: f64::from(n) * 1e9 * f64::from(rate.num) / f64::from(rate.denom),
            callback_ns,
            overran: false,
        };
        let mut io = Io {
            output: out,
            input,
            note_ons: &[],
            midi_dropped: 0,
        };
        runner.run(timing, &mut io);
    }

    /// The capture callback: keeps the chunk and its cycle's `now`. Real-time safe (under
    /// the allocation guard in debug builds).
    fn capture(&self, s: &pw::stream::Stream) {
        #[cfg(debug_assertions)]
        assert_no_alloc::assert_no_alloc(|| self.capture_chunk(s));
        #[cfg(not(debug_assertions))]
        self.capture_chunk(s);
    }

    fn capture_chunk(&self, s: &pw::stream::Stream) {
        let time = s.time().ok();
        let Some(mut buffer) = s.dequeue_buffer() else {
            return;
        };
        let data = &mut buffer.datas_mut()[0];
        let (size, offset) = (data.chunk().size() as usize, data.chunk().offset() as usize);
        let stride = (data.chunk().stride().max(4)) as usize;
        let Some(bytes) = data.data() else {
            return;
        };
        let end = (offset + size).min(bytes.len());
        // SAFETY: as in `playback`.
        let (head, floats, _) = unsafe { bytes[offset.min(end)..end].align_to::<f32>() };
        if !head.is_empty() || stride != 4 {
            return;
        }
        // SAFETY: only the data thread touches the capture buffer.
        let keep = unsafe { &mut *self.capture.get() };
        let n = floats.len().min(keep.len());
        keep[..n].copy_from_slice(&floats[..n]);
        self.cap_frames.store(n as u32, Ordering::Relaxed);
        self.cap_now
            .store(time.as_ref().map_or(-1, |t| t.now()), Ordering::Relaxed);
        if let Some(t) = &time {
            self.cap_delay_frames.store(t.delay(), Ordering::Relaxed);
        }
    }
}

/// The main-loop thread's body: context (`client-rt.conf`), core, streams; runs until
/// told to quit, then disconnects the streams (which stops their callbacks).
fn main_loop(
    config: NativeConfig,
    cell: Arc<Cell>,
    ready: std::sync::mpsc::Sender<Result<(), String>>,
    quit: pw::channel::Receiver<()>,
) -> Result<(), String> {
    pw::init();
    let mainloop = pw::main_loop::MainLoopRc::new(None).map_err(pw_err("a main loop"))?;
    let context = pw::context::ContextRc::new(
        &mainloop,
        Some(properties! { "config.name" => "client-rt.conf" }),
    )
    .map_err(pw_err("a context"))?;
    let core = context
        .connect_rc(None)
        .map_err(pw_err("connecting to the PipeWire"))?;
    let (v, shared) = (cell.clone(), cell.shared.clone());
    let _core_listener = core
        .add_listener_local()
        .info(move |info| {
            if let Ok(mut v) = v.version.lock() {
                *v = Some(info.version().to_string());
            }
        })
        .error(move |id, _seq, res, message| {
            if id == pw::core::PW_ID_CORE {
                shared.end(&format!("the PipeWire server went away ({message}, {res})"));
            }
        })
        .register();
    let props = |capture: bool| {
        let mut p = properties! {
            *pw::keys::MEDIA_TYPE => "Audio",
            *pw::keys::MEDIA_CATEGORY => if capture { "Capture" } else { "Playback" },
            *pw::keys::MEDIA_ROLE => "Production",
            // Named, not after the program (PipeWire's default): the profiler and pw-top
            // tell our nodes by it.
            *pw::keys::NODE_NAME => if capture { "audiolat-capture" } else { "audiolat" },
        };
        if let Some(t) = &config.target {
            p.insert(*pw::keys::TARGET_OBJECT, t.as_str());
        }
        if capture {
            p.insert(*pw::keys::STREAM_CAPTURE_SINK, "true");
        }
        p
    };
    let flags = pw::stream::StreamFlags::AUTOCONNECT
        | pw::stream::StreamFlags::MAP_BUFFERS
        | pw::stream::StreamFlags::RT_PROCESS;
    let state_cb = |what: &'static str, shared: Arc<StreamShared>| {
        move |_: &pw::stream::Stream, _: &mut (), _old, new| match new {
            pw::stream::StreamState::Error(e) => {
                shared.end(&format!("the PipeWire {what} stream failed: {e}"))
            }
            pw::stream::StreamState::Unconnected => {
                shared.end(&format!("the PipeWire {what} stream was disconnected"))
            }
            _ => {}
        }
    };
    let play = pw::stream::StreamBox::new(&core, "audiolat", props(false))
        .map_err(pw_err("a playback stream"))?;
    let c = cell.clone();
    let _play_listener = play
        .add_local_listener_with_user_data(())
        .state_changed(state_cb("playback", cell.shared.clone()))
        .process(move |s, _| c.playback(s))
        .register()
        .map_err(pw_err("the playback stream's listener"))?;
    let pod = format_pod(config.rate_hz);
    let mut params = [spa::pod::Pod::from_bytes(&pod).ok_or("a format pod")?];
    let cap = if config.capture {
        let cap = pw::stream::StreamBox::new(&core, "audiolat-capture", props(true))
            .map_err(pw_err("a capture stream"))?;
        let c = cell.clone();
        let listener = cap
            .add_local_listener_with_user_data(())
            .state_changed(state_cb("capture", cell.shared.clone()))
            .process(move |s, _| c.capture(s))
            .register()
            .map_err(pw_err("the capture stream's listener"))?;
        let mut cap_params = [spa::pod::Pod::from_bytes(&pod).ok_or("a format pod")?];
        cap.connect(spa::utils::Direction::Input, None, flags, &mut cap_params)
            .map_err(pw_err("connecting the capture stream"))?;
        Some((cap, listener))
    } else {
        None
    };
    play.connect(spa::utils::Direction::Output, None, flags, &mut params)
        .map_err(pw_err("connecting the playback stream"))?;
    let ml = mainloop.clone();
    let _quit = quit.attach(mainloop.loop_(), move |()| ml.quit());
    let _ = ready.send(Ok(()));
    mainloop.run();
    let _ = play.disconnect();
    if let Some((cap, _)) = &cap {
        let _ = cap.disconnect();
    }
    Ok(())
}

impl NativeStream {
    /// Connects the streams and waits until the graph runs them at a steady quantum
    /// (the capture matched to the playback, when there is one), at most 10 s. The
    /// quantum seen is [`StreamInfo::period_frames`] and, when nothing measured it
    /// before, the server's granted quantum.
    pub fn open(config: NativeConfig) -> Result<NativeStream, AudioError> {
        let cell = Arc::new(Cell {
            shared: Arc::default(),
            has_capture: config.capture,
            state: AtomicU8::new(WARMING),
            runner: UnsafeCell::new(None),
            capture: UnsafeCell::new(vec![0.0; MAX_QUANTUM_FRAMES]),
            silence: UnsafeCell::new(vec![0.0; MAX_QUANTUM_FRAMES]),
            cap_now: AtomicI64::new(-1),
            cap_frames: AtomicU32::new(0),
            quantum: AtomicU32::new(0),
            steady: AtomicU64::new(0),
            rate_hz: AtomicU32::new(0),
            delay_frames: AtomicI64::new(0),
            cap_delay_frames: AtomicI64::new(NOT_READ),
            prepared: AtomicU32::new(0),
            resized_to: AtomicU32::new(0),
            unmatched: AtomicU64::new(0),
            version: Mutex::new(None),
        });
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let (quit_tx, quit_rx) = pw::channel::channel();
        let (c, cfg, err_tx) = (cell.clone(), config.clone(), ready_tx.clone());
        let thread = std::thread::Builder::new()
            .name("pw-main".into())
            .spawn(move || {
                if let Err(e) = main_loop(cfg, c, ready_tx, quit_rx) {
                    let _ = err_tx.send(Err(e));
                }
                let _ = done_tx.send(());
            })
            .map_err(|e| AudioError::Io {
                op: "starting the PipeWire main-loop thread".into(),
                source: e,
            })?;
        let (producer, records) = rtrb::RingBuffer::new(config.record_capacity.max(16));
        let mut stream = NativeStream {
            info: StreamInfo {
                backend: BackendKind::Pipewire,
                model: Model::of(BackendKind::Pipewire),
                sample_rate_hz: config.rate_hz,
                period_frames: 0,
                playback_latency_frames: 0,
                capture_latency_frames: None,
                client_name: "audiolat".into(),
                playback_ports: vec![config
                    .target
                    .clone()
                    .unwrap_or_else(|| "default sink".into())],
                capture_port: config.capture.then(|| {
                    format!(
                        "{} (monitor)",
                        config.target.as_deref().unwrap_or("default sink")
                    )
                }),
                midi_port: None,
                server: config.server.clone(),
                clock_offset_ns: 0,
            },
            cell,
            records,
            producer: Some(producer),
            quit: Some(quit_tx),
            thread: Some(thread),
            done: Some(done_rx),
            started_ns: 0,
        };
        let failed = |why: String| AudioError::from(NativeError::Stream(why));
        match ready_rx.recv_timeout(START_TIMEOUT) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(failed(e)),
            Err(_) => return Err(failed("the main loop did not start".into())),
        }
        stream.wait_steady().map_err(failed)?;
        Ok(stream)
    }

    fn wait_steady(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        let c = &self.cell;
        while c.steady.load(Ordering::Relaxed) < STEADY_CYCLES {
            if let Some(why) = self.cell.shared.status().shutdown {
                return Err(why);
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "the streams did not run at a steady quantum within {START_TIMEOUT:?} (last quantum {} frames{})",
                    c.quantum.load(Ordering::Relaxed),
                    if self.info.capture_port.is_some() { ", the capture of the sink's monitor not matched to it" } else { "" }
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let quantum = c.quantum.load(Ordering::Relaxed);
        self.info.period_frames = quantum;
        self.info.sample_rate_hz = c.rate_hz.load(Ordering::Relaxed);
        self.info.playback_latency_frames = c.delay_frames.load(Ordering::Relaxed).max(0) as u32;
        // The capture stream's own `delay` (the latency the sink's monitor reports), as
        // read in its cycles; none read (or negative) stays absent.
        let cap_delay = c.cap_delay_frames.load(Ordering::Relaxed);
        self.info.capture_latency_frames = (self.cell.has_capture && cap_delay != NOT_READ)
            .then(|| u32::try_from(cap_delay).ok())
            .flatten();
        let server = &mut self.info.server;
        if server.quantum_granted_frames.is_none() {
            server.quantum_granted_frames = Some(quantum);
        }
        if server.version.is_none() {
            let version = c.version.lock().ok().and_then(|v| v.clone());
            server.version = version.map(|v| format!("PipeWire {v}"));
        }
        Ok(())
    }

    /// Counters only this backend keeps.
    pub fn counters(&self) -> NativeCounters {
        NativeCounters {
            unmatched_captures: self.cell.unmatched.load(Ordering::Relaxed),
        }
    }
}

impl Backend for NativeStream {
    fn info(&self) -> &StreamInfo {
        &self.info
    }

    fn start(&mut self, mut processor: Box<dyn Processor>) -> Result<(), AudioError> {
        let producer = self
            .producer
            .take()
            .ok_or_else(|| AudioError::BadSetting("the stream was already started".into()))?;
        processor.prepare(&self.info);
        let runner = CycleRunner::new(processor, producer, self.cell.shared.clone());
        // SAFETY: the data thread does not touch `runner` before `state` is RUNNING.
        unsafe { *self.cell.runner.get() = Some(runner) };
        self.cell
            .prepared
            .store(self.info.period_frames, Ordering::Relaxed);
        self.started_ns = monotonic_ns();
        self.cell.state.store(RUNNING, Ordering::Release);
        Ok(())
    }

    fn status(&self) -> StreamStatus {
        let mut status = self.cell.shared.status();
        status.unmatched_captures = self
            .cell
            .has_capture
            .then(|| self.cell.unmatched.load(Ordering::Relaxed));
        let resized = self.cell.resized_to.load(Ordering::Relaxed);
        if status.shutdown.is_none() && resized != 0 {
            status.shutdown = Some(format!(
                "the PipeWire graph changed its quantum from {} to {resized} frames mid-run",
                self.info.period_frames
            ));
        }
        if status.shutdown.is_none() && self.cell.state.load(Ordering::Relaxed) == RUNNING {
            if let Some((silent_ns, _)) = self
                .cell
                .shared
                .stall(self.started_ns, self.info.period_ns())
            {
                status.shutdown = Some(format!(
                    "the PipeWire graph stopped running audiolat's streams: no cycle for {:.1} s",
                    silent_ns as f64 / 1e9
                ));
            }
        }
        status
    }

    fn cycles(&mut self) -> &mut rtrb::Consumer<CycleRecord> {
        &mut self.records
    }

    fn take_xruns(&mut self) -> Vec<XrunRecord> {
        self.cell.shared.take_xruns()
    }

    fn stop(&mut self) {
        self.cell.state.store(CLOSING, Ordering::Release);
        if let Some(quit) = self.quit.take() {
            let _ = quit.send(());
        }
        let done = self
            .done
            .take()
            .is_some_and(|d| d.recv_timeout(STOP_TIMEOUT).is_ok());
        match self.thread.take() {
            Some(t) if done => {
                let _ = t.join();
                // The streams are disconnected: the processor is dropped here.
                // SAFETY: the data thread no longer runs the callbacks.
                drop(unsafe { (*self.cell.runner.get()).take() });
            }
            // A main loop that does not quit keeps the runner (and its processor).
            Some(t) => std::mem::forget(t),
            None => {}
        }
    }
}

impl Drop for NativeStream {
    fn drop(&mut self) {
        self.stop();
    }
}
