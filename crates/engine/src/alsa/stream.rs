//! The ALSA backend (push model), on the `alsa` crate: `hw:X`, `plughw:X`, `default`, or
//! the `jack` PCM of alsa-lib's plugin package (which plays into a JACK server; on a
//! machine without a sound card, audiolat's private `jackd -d dummy`).
//!
//! [`AlsaStream::open`] asks for a rate, a period and a buffer of `periods` periods and a
//! sample format (FLOAT, S32, S24, S24_3 or S16: the first the device takes, unless one
//! is asked for); a period or buffer the device would change is an error that names what it
//! takes, and every granted value is in [`AlsaStream::granted`]. With a capture device the
//! stream is full duplex, the two PCMs linked when alsa-lib can (`snd_pcm_link`) and
//! started together otherwise.
//!
//! # The audio thread
//!
//! One thread (SCHED_FIFO 80 by default) prefills the playback buffer with silence, starts
//! the stream and loops: it waits for a period (reading it from the capture PCM, or
//! polling the playback PCM), runs the [`Processor`] and writes the period. An under-run or
//! over-run (EPIPE) is counted with its time and recovered as `snd_pcm_recover` would:
//! the PCMs are prepared, prefilled and started again, and the stream position jumps (a
//! gap in [`CycleRecord::gap_frames`]). Any other error ends the stream with the reason.
//! The loop does not allocate: buffers are sized before it starts, IO handles made once.
//!
//! # Timing model
//!
//! Cycle `c` has stream position `c·P` on both directions. Its output frames play after
//! the frames already queued: `snd_pcm_status` gives the queue (`delay`) and the time it
//! was read (`htstamp`, CLOCK_MONOTONIC), so output frame `f` reaches the DAC at
//! `htstamp + (delay + f)/rate`. The stream reports a playback latency of
//! `buffer − period` frames (the queue when the application writes as soon as a period
//! is free), and sets the cycle's nominal start so that nominal + (latency + f)/rate is
//! that DAC time: the nominal start is when the period became free. The capture latency
//! is one period (the frames read were sampled during the period before).

use crate::alsa::devices::{holder_of_name, PcmDirection};
use crate::alsa::silence_alsa_lib;
use crate::audio::{
    AlsaRefusal, AudioError, Backend, CycleRecord, Model, Processor, ServerInfo, StreamInfo,
    StreamSetting, StreamStatus, XrunRecord,
};
use crate::backend::kind::BackendKind;
use crate::clock::monotonic_ns;
use crate::rt::Policy;
use crate::stream::{CycleRunner, StreamShared};
use alsa::pcm::{Access, HwParams, TstampType, PCM};
use alsa::{Direction, ValueOr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

#[cfg(test)]
use crate::alsa::format::Sample;
pub use crate::alsa::format::SampleFormat;
use crate::alsa::format::{S24In32, S24Packed};
use crate::alsa::write_loop::Loop;

/// What to open.
#[derive(Clone, Debug, PartialEq)]
pub struct AlsaConfig {
    /// Playback device (`hw:0`, `plughw:0`, `default`, `jack`, ...).
    pub device: String,
    /// Capture device for full duplex; `None`: playback only.
    pub capture_device: Option<String>,
    /// Sample rate.
    pub sample_rate_hz: u32,
    /// Frames per period.
    pub period_frames: u32,
    /// Periods in the buffer (2 or more).
    pub periods: u32,
    /// The sample format; `None`: the first of [`SampleFormat::ALL`] the device takes.
    pub format: Option<SampleFormat>,
    /// The audio thread's scheduling.
    pub audio_policy: Policy,
    /// Capacity of the cycle-record ring.
    pub record_capacity: usize,
    /// ALSA configuration text (PCM definitions) added to alsa-lib's before opening, e.g.
    /// a `jack` PCM with audiolat's own ports.
    pub definitions: Option<String>,
    /// The audio server behind the device, when there is one (the `jack` PCM's server).
    pub server: Option<ServerInfo>,
}

impl Default for AlsaConfig {
    /// `default`, playback only, 48 kHz, 2 × 256 frames, any format, SCHED_FIFO 80.
    fn default() -> Self {
        AlsaConfig {
            device: "default".into(),
            capture_device: None,
            sample_rate_hz: 48_000,
            period_frames: 256,
            periods: 2,
            format: None,
            audio_policy: Policy::Fifo { priority: 80 },
            record_capacity: 8192,
            definitions: None,
            server: None,
        }
    }
}

/// What the devices granted.
#[derive(Clone, Debug, PartialEq)]
pub struct AlsaGranted {
    /// Rate.
    pub rate_hz: u32,
    /// Period in frames.
    pub period_frames: u32,
    /// Buffer in frames.
    pub buffer_frames: u32,
    /// Sample format.
    pub format: SampleFormat,
    /// Playback channels (audiolat's mono output goes to each).
    pub playback_channels: u32,
    /// Capture channels (audiolat listens to the first).
    pub capture_channels: Option<u32>,
    /// Capture and playback are linked (start and stop together).
    pub linked: bool,
    /// Why they could not be linked (then the capture starts first, the playback just
    /// after, and the skew between them is measured on every start).
    pub link_error: Option<String>,
    /// The access mode: audiolat reads and writes interleaved frames.
    pub access: &'static str,
}

impl AlsaGranted {
    /// As JSON, for the run's record.
    pub fn to_json_string(&self) -> String {
        format!(
            "{{\"rate_hz\":{},\"period_frames\":{},\"buffer_frames\":{},\"format\":\"{}\",\"access\":\"{}\",\"playback_channels\":{},\"capture_channels\":{},\"linked\":{},\"link_error\":{}}}",
            self.rate_hz,
            self.period_frames,
            self.buffer_frames,
            self.format.alsa_name(),
            self.access,
            self.playback_channels,
            self.capture_channels.map_or("null".to_string(), |c| c.to_string()),
            self.linked,
            self.link_error.as_ref().map_or("null".to_string(), |e| format!("\"{}\"", e.replace('\\', "\\\\").replace('"', "\\\""))),
        )
    }
}

extern "C" {
    /// alsa-lib's global configuration tree (`snd_config` in `conf.h`).
    static mut snd_config: *mut alsa_sys::snd_config_t;
}

/// Adds `text` (ALSA configuration, e.g. `pcm.name { ... }`) to alsa-lib's global
/// configuration, after loading the system's. The definitions last while the system's
/// files are unchanged (alsa-lib reloads them when they change).
fn add_definitions(text: &str) -> Result<(), AudioError> {
    let fail = |what: &str, rc: i32| {
        AudioError::BadSetting(format!(
            "ALSA configuration: {what} failed ({}): {text}",
            std::io::Error::from_raw_os_error(-rc)
        ))
    };
    // SAFETY: snd_config_update loads the global tree; the input buffer is read during
    // snd_config_load only and closed after; snd_config is alsa-lib's global, valid once
    // updated. alsa-lib serialises its own use of the tree.
    unsafe {
        let rc = alsa_sys::snd_config_update();
        if rc < 0 {
            return Err(fail("loading the system configuration", rc));
        }
        let mut input: *mut alsa_sys::snd_input_t = std::ptr::null_mut();
        let rc = alsa_sys::snd_input_buffer_open(
            &mut input,
            text.as_ptr() as *const std::ffi::c_char,
            text.len() as isize,
        );
        if rc < 0 {
            return Err(fail("opening the definitions", rc));
        }
        let rc = alsa_sys::snd_config_load(*std::ptr::addr_of_mut!(snd_config), input);
        alsa_sys::snd_input_close(input);
        if rc < 0 {
            return Err(fail("reading the definitions", rc));
        }
    }
    Ok(())
}

fn alsa_err<'a>(op: &'static str, device: &'a str) -> impl Fn(alsa::Error) -> AudioError + 'a {
    move |e| {
        match e.errno() {
        // snd_pcm_open says EINVAL for a card that is not there (hw:97).
        errno
            if matches!(errno, libc::ENOENT | libc::ENODEV | libc::ENXIO)
                || (errno == libc::EINVAL && op.starts_with("opening")) =>
        {
            AudioError::BadSetting(format!(
                "ALSA device `{device}` does not exist: list devices with `audiolat devices` (or use the virtual backend)"
            ))
        }
        libc::EBUSY => {
            let direction = if op.contains("capture") {
                PcmDirection::Capture
            } else {
                PcmDirection::Playback
            };
            let who = match holder_of_name(device, direction) {
                Some(h) => format!("{h} holds it"),
                None => "another program uses it".to_string(),
            };
            AudioError::BadSetting(format!(
                "ALSA device `{device}` is busy: {who} (stop it, or use a `plug` or `dmix` device; `audiolat devices` lists what is free)"
            ))
        }
        _ => AudioError::Alsa {
            op,
            device: device.to_string(),
            detail: e.to_string(),
        },
    }
    }
}

/// Sets the hardware parameters; returns (format, channels, rate, period, buffer).
fn set_hw(
    pcm: &PCM,
    device: &str,
    config: &AlsaConfig,
    format: Option<SampleFormat>,
) -> Result<(SampleFormat, u32, u32, u32, u32), AudioError> {
    let e = |op| alsa_err(op, device);
    let hwp = HwParams::any(pcm).map_err(e("reading the device's parameters"))?;
    if hwp.set_access(Access::RWInterleaved).is_err() {
        let takes: Vec<&str> = [
            (Access::RWNonInterleaved, "non-interleaved"),
            (Access::MMapInterleaved, "mmap interleaved"),
            (Access::MMapNonInterleaved, "mmap non-interleaved"),
        ]
        .into_iter()
        .filter(|(a, _)| hwp.test_access(*a).is_ok())
        .map(|(_, n)| n)
        .collect();
        return Err(AudioError::AlsaRefused {
            device: device.to_string(),
            refusal: AlsaRefusal::Access { takes },
        });
    }
    let format = match format {
        Some(f) => {
            hwp.set_format(f.alsa()).map_err(|_| {
                let takes: Vec<SampleFormat> = SampleFormat::ALL
                    .into_iter()
                    .filter(|c| hwp.test_format(c.alsa()).is_ok())
                    .collect();
                AudioError::AlsaRefused {
                    device: device.to_string(),
                    refusal: AlsaRefusal::Format { asked: f, takes },
                }
            })?;
            f
        }
        None => {
            let f = SampleFormat::ALL
                .into_iter()
                .find(|c| hwp.test_format(c.alsa()).is_ok())
                .ok_or_else(|| AudioError::AlsaRefused {
                    device: device.to_string(),
                    refusal: AlsaRefusal::NoFormat,
                })?;
            hwp.set_format(f.alsa())
                .map_err(e("setting the sample format"))?;
            f
        }
    };
    // Mono where the device allows it, else its smallest channel count.
    let min = hwp
        .get_channels_min()
        .map_err(e("reading the channel counts"))?;
    let channels = min.max(1);
    hwp.set_channels(channels)
        .map_err(e("setting the channels"))?;
    let rate = hwp
        .set_rate_near(config.sample_rate_hz, ValueOr::Nearest)
        .map_err(e("setting the rate"))?;
    if rate != config.sample_rate_hz {
        return Err(AudioError::AlsaRefused {
            device: device.to_string(),
            refusal: AlsaRefusal::Rate {
                asked: config.sample_rate_hz,
                runs: rate,
            },
        });
    }
    let period = hwp
        .set_period_size_near(config.period_frames as alsa::pcm::Frames, ValueOr::Nearest)
        .map_err(e("setting the period"))? as u32;
    if period != config.period_frames {
        return Err(AudioError::AlsaRefused {
            device: device.to_string(),
            refusal: AlsaRefusal::Period {
                asked: config.period_frames,
                nearest: period,
            },
        });
    }
    let wanted = (config.period_frames * config.periods) as alsa::pcm::Frames;
    let buffer = hwp
        .set_buffer_size_near(wanted)
        .map_err(e("setting the buffer"))? as u32;
    if buffer != wanted as u32 {
        return Err(AudioError::AlsaRefused {
            device: device.to_string(),
            refusal: AlsaRefusal::Buffer {
                periods: config.periods,
                wanted: wanted as u32,
                nearest: buffer,
            },
        });
    }
    pcm.hw_params(&hwp).map_err(e("applying the parameters"))?;
    Ok((format, channels, rate, period, buffer))
}

fn set_sw(pcm: &PCM, device: &str, period: u32) -> Result<(), AudioError> {
    let e = |op| alsa_err(op, device);
    let swp = pcm
        .sw_params_current()
        .map_err(e("reading the software parameters"))?;
    // Started by hand, never by the fill level.
    let boundary = swp.get_boundary().map_err(e("reading the boundary"))?;
    swp.set_start_threshold(boundary)
        .map_err(e("setting the start threshold"))?;
    swp.set_avail_min(period as alsa::pcm::Frames)
        .map_err(e("setting avail_min"))?;
    swp.set_tstamp_mode(true)
        .map_err(e("enabling timestamps"))?;
    // Not every plugin has a monotonic timestamp type; the default is then used.
    let _ = swp.set_tstamp_type(TstampType::Monotonic);
    pcm.sw_params(&swp)
        .map_err(e("applying the software parameters"))?;
    Ok(())
}

/// A running (or ready) ALSA stream.
pub struct AlsaStream {
    info: StreamInfo,
    config: AlsaConfig,
    granted: AlsaGranted,
    shared: Arc<StreamShared>,
    records: rtrb::Consumer<CycleRecord>,
    producer: Option<rtrb::Producer<CycleRecord>>,
    xrun_times: rtrb::Consumer<u64>,
    xrun_producer: Option<rtrb::Producer<u64>>,
    pcms: Option<(PCM, Option<PCM>)>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<CycleRunner>>,
    started_ns: u64,
}

impl AlsaStream {
    /// Opens and configures the device(s). Nothing runs until [`Backend::start`].
    pub fn open(config: AlsaConfig) -> Result<AlsaStream, AudioError> {
        if config.periods < 2 {
            return Err(AudioError::OutOfRange {
                setting: StreamSetting::Periods,
                value: config.periods,
                problem: "a buffer holds at least two periods (one playing, one being written)"
                    .into(),
            });
        }
        if config.period_frames == 0 || config.period_frames > 1 << 20 {
            return Err(AudioError::OutOfRange {
                setting: StreamSetting::Period,
                value: config.period_frames,
                problem: "use 1 to 1048576 frames".into(),
            });
        }
        silence_alsa_lib();
        if let Some(text) = &config.definitions {
            add_definitions(text)?;
        }
        // Non-blocking: the audio thread waits with a time limit, so a device (or a JACK
        // server behind it) that stops cannot hang it.
        let playback = PCM::new(&config.device, Direction::Playback, true)
            .map_err(alsa_err("opening the playback device", &config.device))?;
        let (format, out_ch, rate, period, buffer) =
            set_hw(&playback, &config.device, &config, config.format)?;
        set_sw(&playback, &config.device, period)?;
        let (capture, in_ch, link_error) = match &config.capture_device {
            Some(dev) => {
                let capture = PCM::new(dev, Direction::Capture, true)
                    .map_err(alsa_err("opening the capture device", dev))?;
                let (_, ch, _, _, _) = set_hw(&capture, dev, &config, Some(format))?;
                set_sw(&capture, dev, period)?;
                let link_error = capture.link(&playback).err().map(|e| e.to_string());
                (Some(capture), Some(ch), link_error)
            }
            None => (None, None, None),
        };
        let linked = capture.is_some() && link_error.is_none();
        let granted = AlsaGranted {
            rate_hz: rate,
            period_frames: period,
            buffer_frames: buffer,
            format,
            playback_channels: out_ch,
            capture_channels: in_ch,
            linked,
            link_error,
            access: "RW_INTERLEAVED",
        };
        let (producer, records) = rtrb::RingBuffer::new(config.record_capacity.max(16));
        let (xrun_producer, xrun_times) = rtrb::RingBuffer::new(4096);
        let info = StreamInfo {
            backend: BackendKind::Alsa,
            model: Model::of(BackendKind::Alsa),
            sample_rate_hz: rate,
            period_frames: period,
            playback_latency_frames: buffer - period,
            capture_latency_frames: capture.is_some().then_some(period),
            client_name: config.device.clone(),
            playback_ports: vec![config.device.clone()],
            capture_port: config.capture_device.clone(),
            midi_port: None,
            server: config.server.clone().unwrap_or_else(|| ServerInfo {
                name: config.device.clone(),
                private: false,
                command_line: None,
                version: Some(format!("alsa-lib {}", alsa_version())),
                quantum_asked_frames: None,
                quantum_granted_frames: None,
                rate_asked_hz: None,
                rate_granted_hz: None,
            }),
            clock_offset_ns: 0,
        };
        Ok(AlsaStream {
            info,
            config,
            granted,
            shared: Arc::default(),
            records,
            producer: Some(producer),
            xrun_times,
            xrun_producer: Some(xrun_producer),
            pcms: Some((playback, capture)),
            stop: Arc::default(),
            thread: None,
            started_ns: 0,
        })
    }

    /// What the devices granted.
    pub fn granted(&self) -> &AlsaGranted {
        &self.granted
    }

    /// What was asked for.
    pub fn config(&self) -> &AlsaConfig {
        &self.config
    }
}

fn alsa_version() -> String {
    // SAFETY: returns a static NUL-terminated string.
    unsafe { std::ffi::CStr::from_ptr(alsa_sys::snd_asoundlib_version()) }
        .to_string_lossy()
        .into_owned()
}

impl Backend for AlsaStream {
    fn info(&self) -> &StreamInfo {
        &self.info
    }

    fn start(&mut self, mut processor: Box<dyn Processor>) -> Result<(), AudioError> {
        let (Some(producer), Some(xruns), Some((playback, capture))) = (
            self.producer.take(),
            self.xrun_producer.take(),
            self.pcms.take(),
        ) else {
            return Err(AudioError::BadSetting(
                "the ALSA stream was already started".into(),
            ));
        };
        processor.prepare(&self.info);
        let runner = CycleRunner::new(processor, producer, self.shared.clone());
        let g = &self.granted;
        let lp = Loop {
            playback,
            capture,
            linked: g.linked,
            period: g.period_frames as usize,
            buffer: g.buffer_frames as usize,
            out_channels: g.playback_channels as usize,
            in_channels: g.capture_channels.unwrap_or(1) as usize,
            rate: g.rate_hz,
            latency_frames: i64::from(self.info.playback_latency_frames),
            stop: self.stop.clone(),
            shared: self.shared.clone(),
            xruns: Some(xruns),
        };
        let policy = self.config.audio_policy;
        let format = g.format;
        self.started_ns = monotonic_ns();
        let thread = std::thread::Builder::new()
            .name("alsa-audio".into())
            .spawn(move || match format {
                SampleFormat::F32 => lp.run::<f32>(runner, policy),
                SampleFormat::S32 => lp.run::<i32>(runner, policy),
                SampleFormat::S24 => lp.run::<S24In32>(runner, policy),
                SampleFormat::S24Packed => lp.run::<S24Packed>(runner, policy),
                SampleFormat::S16 => lp.run::<i16>(runner, policy),
            })
            .map_err(|e| AudioError::Io {
                op: "starting the ALSA audio thread".into(),
                source: e,
            })?;
        self.thread = Some(thread);
        Ok(())
    }

    fn status(&self) -> StreamStatus {
        let mut status = self.shared.status();
        if self.thread.is_some() {
            status.shutdown = status.shutdown.or_else(|| {
                self.shared
                    .stall(self.started_ns, self.info.period_ns())
                    .map(|(silent_ns, cycles)| {
                        format!(
                            "ALSA device `{}` delivered no period for {:.1} s after {cycles} cycles (is its clock running? a `jack` device needs its JACK server running)",
                            self.config.device,
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
        while let Ok(mono_ns) = self.xrun_times.pop() {
            out.push(XrunRecord {
                mono_ns,
                cycles_done,
            });
        }
        out
    }

    fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            // The processor comes back here and is dropped off the audio thread.
            drop(t.join());
        }
    }
}

impl Drop for AlsaStream {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests;
