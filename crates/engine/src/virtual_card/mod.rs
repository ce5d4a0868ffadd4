//! The `virtual` backend: a software sound card with a loopback cable, driven by a
//! real-time clock thread. It needs no server and no hardware, so it runs everywhere; its
//! latencies are known exactly, so it is the ground truth the probes are tested against.
//!
//! # The card
//!
//! A buffer of `periods × period` frames, as a sound card's DMA buffer. The **hardware
//! thread** ticks every period on absolute CLOCK_MONOTONIC deadlines (`t_k = t0 + k·P`):
//! at tick `k` it takes the period `[kP, (k+1)P)` of the playback buffer to play, and
//! delivers the capture period `[(k−1)P, kP)` that its ADC sampled during the period
//! before. The **loopback** feeds what is played back to the ADC `loop_delay_frames`
//! later (fractional delays through [`dsp::fractional::DelayKernel`]), times
//! `loop_gain` (negative: an inverting cable). The hardware's clock is ideal: when the
//! thread wakes late it catches up, tick by tick, so sample positions and times never
//! drift.
//!
//! The **application thread** (the stream's audio thread, push model) waits for each
//! tick, reads the new capture period, runs the [`Processor`] and writes a period into the
//! playback buffer, keeping it full. Its cycle `c` has stream position `cP` and nominal
//! time `t_c`; its output frame `f` plays at `t_c + (periods·P + f)/rate`, its input frame
//! `f` was sampled at `t_c + (f − P)/rate`. So the stream reports a playback latency of
//! `periods × period` frames and a capture latency of `period` frames, and a loop of
//! `D` frames comes back `periods·P + P + D` frames after it was sent: exactly.
//!
//! # Under-runs
//!
//! When the application thread falls behind, the hardware plays silence for the frames
//! not written in time and counts an under-run with its time (an over-run when capture
//! frames were overwritten before being read). The application then skips ahead to the
//! first cycle whose output can still be played, as a driver restarting after an xrun
//! would: its stream position jumps (a gap in [`CycleRecord::gap_frames`]).
//!
//! # Threads
//!
//! Both threads set themselves to SCHED_FIFO (hardware 90, application 80 by default)
//! when allowed; what they got is in [`StreamStatus::audio_thread`]. Neither allocates,
//! locks or prints once running: buffers are atomics sized at start, under-runs go
//! through a pre-sized ring.

use crate::audio::{
    AudioError, Backend, CycleRecord, Io, Model, Processor, ServerInfo, StreamInfo, StreamSetting,
    StreamStatus, XrunRecord,
};
use crate::backend::kind::BackendKind;
use crate::clock::{monotonic_ns, sleep_until_ns};
use crate::rt::{Policy, ThreadRt};
use crate::stream::{CycleRunner, CycleTiming, StreamShared};
use dsp::fractional::DelayKernel;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

pub mod setup;

/// The smallest period the card runs (its fractional loopback looks this far ahead).
pub const MIN_PERIOD_FRAMES: u32 = 32;
/// The largest period.
pub const MAX_PERIOD_FRAMES: u32 = 8192;
/// Most periods in the virtual card's buffer.
pub const MAX_PERIODS: u32 = 64;

/// The card's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct VirtualConfig {
    /// Sample rate.
    pub sample_rate_hz: u32,
    /// Frames per period (32 to 8192).
    pub period_frames: u32,
    /// Periods in the buffer (2 or more).
    pub periods: u32,
    /// The loopback cable's delay in frames (fractional allowed); `None`: no cable, the
    /// input hears silence.
    pub loop_delay_frames: Option<f64>,
    /// The cable's gain (1.0; negative inverts).
    pub loop_gain: f32,
    /// The application reads the card's input (a duplex stream, with a capture port):
    /// a round trip does; a stream that only plays (an event run) does not, and reports
    /// no capture port, as a JACK or ALSA stream without a capture does.
    pub capture: bool,
    /// Scheduling of the hardware (clock) thread.
    pub hardware_policy: Policy,
    /// Scheduling of the application (audio) thread.
    pub audio_policy: Policy,
    /// Capacity of the cycle-record ring.
    pub record_capacity: usize,
}

impl Default for VirtualConfig {
    /// 48 kHz, 2 × 256 frames, a cable of 0 frames at unity gain, FIFO 90 / 80.
    fn default() -> Self {
        VirtualConfig {
            sample_rate_hz: 48_000,
            period_frames: 256,
            periods: 2,
            loop_delay_frames: Some(0.0),
            loop_gain: 1.0,
            capture: true,
            hardware_policy: Policy::Fifo { priority: 90 },
            audio_policy: Policy::Fifo { priority: 80 },
            record_capacity: 8192,
        }
    }
}

impl VirtualConfig {
    /// Checks the settings; every error says what to use instead.
    pub fn validate(&self) -> Result<(), AudioError> {
        if !(8_000..=384_000).contains(&self.sample_rate_hz) {
            return Err(AudioError::BadRate(self.sample_rate_hz));
        }
        if !(MIN_PERIOD_FRAMES..=MAX_PERIOD_FRAMES).contains(&self.period_frames) {
            return Err(AudioError::OutOfRange {
                setting: StreamSetting::Period,
                value: self.period_frames,
                problem: format!(
                    "the virtual card runs periods of {MIN_PERIOD_FRAMES} to {MAX_PERIOD_FRAMES} frames"
                ),
            });
        }
        if self.periods < 2 {
            return Err(AudioError::OutOfRange {
                setting: StreamSetting::Periods,
                value: self.periods,
                problem: "a buffer holds at least two periods (one playing, one being written)"
                    .into(),
            });
        }
        if self.periods > MAX_PERIODS {
            return Err(AudioError::OutOfRange {
                setting: StreamSetting::Periods,
                value: self.periods,
                problem: format!("the virtual card holds at most {MAX_PERIODS} periods"),
            });
        }
        if let Some(d) = self.loop_delay_frames {
            let most = dsp::loopdelay::MAX_LOOP_FRAMES;
            if !(d.is_finite() && (0.0..=f64::from(most)).contains(&d)) {
                return Err(AudioError::BadSetting(format!(
                    "loop delay {d} frames: use 0 to {most} frames"
                )));
            }
        }
        if !self.loop_gain.is_finite() {
            return Err(AudioError::BadSetting(
                "loop gain must be a finite number".into(),
            ));
        }
        Ok(())
    }

    /// Frames in the buffer.
    pub fn buffer_frames(&self) -> u32 {
        self.period_frames * self.periods
    }
}

/// The state both threads share: the buffers as atomics (no lock, no `unsafe`) and the
/// positions that hand them over.
struct Card {
    period: u64,
    buffer: u64,
    /// Playback buffer; position `p` lives at `p % buffer`.
    playback: Box<[AtomicU32]>,
    /// Capture buffer of `buffer + 2 periods`.
    capture: Box<[AtomicU32]>,
    /// Playback positions written by the application, exclusive end.
    written_to: AtomicU64,
    /// Ticks done; capture is valid up to `(ticks − 1) · period`.
    ticks: AtomicU64,
    t0_ns: AtomicU64,
    stop: AtomicBool,
}

impl Card {
    fn capture_capacity(&self) -> u64 {
        self.capture.len() as u64
    }
}

type XrunRing = (rtrb::Producer<u64>, rtrb::Consumer<u64>);

/// A running (or ready) virtual card stream.
pub struct VirtualStream {
    info: StreamInfo,
    config: VirtualConfig,
    shared: Arc<StreamShared>,
    records: rtrb::Consumer<CycleRecord>,
    producer: Option<rtrb::Producer<CycleRecord>>,
    /// Under-runs the hardware thread saw, and over-runs the application thread saw.
    hw_xruns: rtrb::Consumer<u64>,
    app_xruns: rtrb::Consumer<u64>,
    xrun_producers: Option<(rtrb::Producer<u64>, rtrb::Producer<u64>)>,
    card: Arc<Card>,
    threads: Option<(JoinHandle<()>, JoinHandle<CycleRunner>)>,
    started_ns: u64,
}

impl VirtualStream {
    /// Builds the card. Nothing runs until [`Backend::start`].
    pub fn open(config: VirtualConfig) -> Result<VirtualStream, AudioError> {
        config.validate()?;
        let period = u64::from(config.period_frames);
        let buffer = u64::from(config.buffer_frames());
        let atomics = |n: u64| -> Box<[AtomicU32]> { (0..n).map(|_| AtomicU32::new(0)).collect() };
        let card = Arc::new(Card {
            period,
            buffer,
            playback: atomics(buffer),
            capture: atomics(buffer + 2 * period),
            // The buffer starts full of silence, as after an ALSA prepare + prefill.
            written_to: AtomicU64::new(buffer),
            ticks: AtomicU64::new(0),
            t0_ns: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let (producer, records) = rtrb::RingBuffer::new(config.record_capacity.max(16));
        let (hw_producer, hw_xruns): XrunRing = rtrb::RingBuffer::new(4096);
        let (app_producer, app_xruns): XrunRing = rtrb::RingBuffer::new(4096);
        let info = StreamInfo {
            backend: BackendKind::Virtual,
            model: Model::of(BackendKind::Virtual),
            sample_rate_hz: config.sample_rate_hz,
            period_frames: config.period_frames,
            playback_latency_frames: config.buffer_frames(),
            capture_latency_frames: config.capture.then_some(config.period_frames),
            client_name: "virtual".into(),
            playback_ports: vec!["virtual:playback".into()],
            capture_port: config.capture.then(|| "virtual:capture".into()),
            midi_port: None,
            server: ServerInfo {
                name: "virtual".into(),
                private: true,
                command_line: Some(format!(
                    "virtual card: {} Hz, {} x {} frames, loop {}",
                    config.sample_rate_hz,
                    config.periods,
                    config.period_frames,
                    match config.loop_delay_frames {
                        Some(d) => format!("{d} frames, gain {}", config.loop_gain),
                        None => "none".into(),
                    }
                )),
                version: None,
                quantum_asked_frames: None,
                quantum_granted_frames: None,
                rate_asked_hz: None,
                rate_granted_hz: None,
            },
            clock_offset_ns: 0,
        };
        Ok(VirtualStream {
            info,
            config,
            shared: Arc::default(),
            records,
            producer: Some(producer),
            hw_xruns,
            app_xruns,
            xrun_producers: Some((hw_producer, app_producer)),
            card,
            threads: None,
            started_ns: 0,
        })
    }

    /// The card's settings.
    pub fn config(&self) -> &VirtualConfig {
        &self.config
    }

    /// The round trip a loop of `D` frames gives on this card: playback latency + capture
    /// latency + `D`, in frames.
    pub fn expected_roundtrip_frames(&self) -> Option<f64> {
        self.config
            .loop_delay_frames
            .map(|d| f64::from(self.info.playback_latency_frames + self.config.period_frames) + d)
    }
}

fn spawn_error(what: &str) -> impl Fn(std::io::Error) -> AudioError + '_ {
    move |e| AudioError::Io {
        op: format!("starting the virtual card's {what} thread"),
        source: e,
    }
}

/// The hardware thread: ticks, plays, loops back, captures, wakes the application.
fn hardware_thread(
    card: Arc<Card>,
    config: VirtualConfig,
    shared: Arc<StreamShared>,
    mut xruns: rtrb::Producer<u64>,
    app: std::thread::Thread,
) {
    let _rt = ThreadRt::apply(&config.hardware_policy, None, 64 * 1024);
    let period = card.period;
    let period_ns = config.period_frames as f64 * 1e9 / config.sample_rate_hz as f64;
    let kernel = config.loop_delay_frames.map(DelayKernel::new);
    // What was played, for the loopback: enough history for the cable's delay and its
    // interpolator, a power of two.
    let history_len = kernel.as_ref().map_or(1, |k| {
        (k.history() as u64 + 4 * period + 64).next_power_of_two()
    });
    let mut played = vec![0.0f32; history_len as usize];
    let mask = history_len - 1;
    let played_at = |played: &[f32], p: i64, played_to: i64| -> f32 {
        if p < 0 || p >= played_to {
            0.0
        } else {
            played[(p as u64 & mask) as usize]
        }
    };
    let t0 = card.t0_ns.load(Ordering::Acquire);
    let mut k: u64 = 0;
    while !card.stop.load(Ordering::Relaxed) {
        sleep_until_ns(t0 + (k as f64 * period_ns) as u64);
        // Every tick that is due, in order (a late wake-up catches up).
        while t0 + (k as f64 * period_ns) as u64 <= monotonic_ns() {
            // Play [kP, (k+1)P): what was written, silence for the rest (an under-run).
            let first = k * period;
            let written = card.written_to.load(Ordering::Acquire);
            let mut short = false;
            for p in first..first + period {
                let x = if p < written {
                    f32::from_bits(
                        card.playback[(p % card.buffer) as usize].load(Ordering::Relaxed),
                    )
                } else {
                    short = true;
                    0.0
                };
                played[(p & mask) as usize] = x;
            }
            if short {
                shared.xruns.fetch_add(1, Ordering::Relaxed);
                let _ = xruns.push(monotonic_ns());
            }
            // Capture [(k−1)P, kP): the cable's output, sampled.
            if k >= 1 {
                let played_to = ((k + 1) * period) as i64;
                let cap = card.capture_capacity();
                for m in (k - 1) * period..k * period {
                    let y = match &kernel {
                        Some(kernel) => {
                            config.loop_gain
                                * kernel.output_at(m as i64, |p| played_at(&played, p, played_to))
                        }
                        None => 0.0,
                    };
                    card.capture[(m % cap) as usize].store(y.to_bits(), Ordering::Relaxed);
                }
            }
            k += 1;
            card.ticks.store(k, Ordering::Release);
            app.unpark();
        }
    }
}

/// The application thread: one cycle per tick, skipping ahead after an under-run.
fn application_thread(
    card: Arc<Card>,
    config: VirtualConfig,
    shared: Arc<StreamShared>,
    mut runner: CycleRunner,
    mut xruns: rtrb::Producer<u64>,
) -> CycleRunner {
    let _rt = ThreadRt::apply(&config.audio_policy, None, 256 * 1024);
    let period = card.period;
    let periods = u64::from(config.periods);
    let period_ns = config.period_frames as f64 * 1e9 / config.sample_rate_hz as f64;
    let t0 = card.t0_ns.load(Ordering::Acquire);
    let mut output = vec![0.0f32; period as usize];
    let mut input = vec![0.0f32; period as usize];
    let mut c: u64 = 0;
    loop {
        if card.stop.load(Ordering::Relaxed) {
            break;
        }
        let ticks = card.ticks.load(Ordering::Acquire);
        if ticks <= c {
            std::thread::park_timeout(std::time::Duration::from_millis(50));
            continue;
        }
        // The newest tick is ticks − 1: cycle c writes [B + cP, B + (c+1)P), which must not
        // have been played yet; if it has, skip to the first cycle that can still play.
        let c_min = ticks.saturating_sub(periods);
        if c < c_min {
            c = c_min;
        }
        // Capture [(c−1)P, cP).
        let cap = card.capture_capacity();
        let lost = |ticks_now: u64| (ticks_now.saturating_sub(1) * period).saturating_sub(cap);
        if !config.capture {
            // A stream that only plays reads nothing (and loses nothing) of the input.
        } else if c >= 1 && (c - 1) * period >= lost(ticks) {
            for (i, x) in input.iter_mut().enumerate() {
                let m = (c - 1) * period + i as u64;
                *x = f32::from_bits(card.capture[(m % cap) as usize].load(Ordering::Relaxed));
            }
            // Overwritten while it was read (the hardware went on meanwhile): lost.
            if (c - 1) * period < lost(card.ticks.load(Ordering::Acquire)) {
                input.fill(0.0);
                shared.xruns.fetch_add(1, Ordering::Relaxed);
                let _ = xruns.push(monotonic_ns());
            }
        } else {
            input.fill(0.0);
        }
        let timing = CycleTiming {
            first_frame: c * period,
            nominal_ns: t0 + (c as f64 * period_ns) as u64,
            period_ns,
            callback_ns: monotonic_ns(),
            overran: false,
        };
        let mut io = Io {
            output: &mut output,
            input: config.capture.then_some(&input[..]),
            note_ons: &[],
            midi_dropped: 0,
        };
        runner.run(timing, &mut io);
        let first = card.buffer + c * period;
        for (i, &x) in output.iter().enumerate() {
            card.playback[((first + i as u64) % card.buffer) as usize]
                .store(x.to_bits(), Ordering::Relaxed);
        }
        card.written_to.store(first + period, Ordering::Release);
        c += 1;
    }
    runner
}

impl Backend for VirtualStream {
    fn info(&self) -> &StreamInfo {
        &self.info
    }

    fn start(&mut self, mut processor: Box<dyn Processor>) -> Result<(), AudioError> {
        let (Some(producer), Some((hw_xruns, app_xruns))) =
            (self.producer.take(), self.xrun_producers.take())
        else {
            return Err(AudioError::BadSetting(
                "the virtual stream was already started".into(),
            ));
        };
        processor.prepare(&self.info);
        let runner = CycleRunner::new(processor, producer, self.shared.clone());
        let start_ns = monotonic_ns() + 20_000_000;
        self.card.t0_ns.store(start_ns, Ordering::Release);
        self.started_ns = start_ns;
        let (card, config, shared) = (self.card.clone(), self.config.clone(), self.shared.clone());
        let app = std::thread::Builder::new()
            .name("virtual-app".into())
            .spawn(move || application_thread(card, config, shared, runner, app_xruns))
            .map_err(spawn_error("application"))?;
        let (card, config, shared) = (self.card.clone(), self.config.clone(), self.shared.clone());
        let app_thread = app.thread().clone();
        let hw = std::thread::Builder::new()
            .name("virtual-hw".into())
            .spawn(move || hardware_thread(card, config, shared, hw_xruns, app_thread))
            .map_err(spawn_error("hardware"))?;
        self.threads = Some((hw, app));
        Ok(())
    }

    fn status(&self) -> StreamStatus {
        let mut status = self.shared.status();
        if self.threads.is_some() {
            status.shutdown = status.shutdown.or_else(|| {
                self.shared
                    .stall(self.started_ns, self.info.period_ns())
                    .map(|(silent_ns, cycles)| {
                        format!(
                            "the virtual card's application thread ran no cycle for {:.1} s after {cycles} cycles",
                            silent_ns as f64 / 1e9
                        )
                    })
            });
        }
        status
    }

    fn cycles(&mut self) -> &mut rtrb::Consumer<CycleRecord> {
        &mut self.records
    }

    fn take_xruns(&mut self) -> Vec<XrunRecord> {
        let cycles_done = self.shared.cycles.load(Ordering::Relaxed);
        let mut out = Vec::new();
        for ring in [&mut self.hw_xruns, &mut self.app_xruns] {
            while let Ok(mono_ns) = ring.pop() {
                out.push(XrunRecord {
                    mono_ns,
                    cycles_done,
                });
            }
        }
        out.sort_by_key(|x| x.mono_ns);
        out
    }

    fn stop(&mut self) {
        self.card.stop.store(true, Ordering::SeqCst);
        if let Some((hw, app)) = self.threads.take() {
            app.thread().unpark();
            let _ = hw.join();
            // The processor comes back here and is dropped off the audio thread.
            drop(app.join());
        }
    }
}

impl Drop for VirtualStream {
    fn drop(&mut self) {
        self.stop();
    }
}
