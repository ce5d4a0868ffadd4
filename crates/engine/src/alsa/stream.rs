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
use crate::audio::{
    AudioError, Backend, CycleRecord, DuplexStart, Io, Model, Processor, ServerInfo, StreamInfo,
    StreamStatus, XrunRecord,
};
use crate::clock::monotonic_ns;
use crate::rt::{Policy, ThreadRt};
use crate::stream::{CycleRunner, CycleTiming, StreamShared};
use alsa::pcm::{Access, Format, HwParams, TstampType, PCM};
use alsa::{Direction, ValueOr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A sample format audiolat converts to and from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleFormat {
    /// 32-bit float (the `jack` PCM's only format).
    F32,
    /// 32-bit signed integer.
    S32,
    /// 24-bit signed integer in the low three bytes of four (`S24_LE`).
    S24,
    /// 24-bit signed integer packed in three bytes (`S24_3LE`: many USB interfaces take
    /// only this).
    S24Packed,
    /// 16-bit signed integer.
    S16,
}

impl SampleFormat {
    /// Every format audiolat converts, in its order of preference: without `--format`, the
    /// first one a device takes.
    pub const ALL: [SampleFormat; 5] = [
        SampleFormat::F32,
        SampleFormat::S32,
        SampleFormat::S24,
        SampleFormat::S24Packed,
        SampleFormat::S16,
    ];

    /// ALSA's name for the format (`FLOAT_LE`, `S32_LE`, `S24_LE`, `S24_3LE`, `S16_LE`).
    pub fn alsa_name(self) -> &'static str {
        match self {
            SampleFormat::F32 => "FLOAT_LE",
            SampleFormat::S32 => "S32_LE",
            SampleFormat::S24 => "S24_LE",
            SampleFormat::S24Packed => "S24_3LE",
            SampleFormat::S16 => "S16_LE",
        }
    }

    /// The name `--format` takes (`float`, `s32`, `s24`, `s24_3`, `s16`).
    pub fn flag_name(self) -> &'static str {
        match self {
            SampleFormat::F32 => "float",
            SampleFormat::S32 => "s32",
            SampleFormat::S24 => "s24",
            SampleFormat::S24Packed => "s24_3",
            SampleFormat::S16 => "s16",
        }
    }

    fn alsa(self) -> Format {
        match self {
            SampleFormat::F32 => Format::FloatLE,
            SampleFormat::S32 => Format::S32LE,
            SampleFormat::S24 => Format::S24LE,
            SampleFormat::S24Packed => Format::S243LE,
            SampleFormat::S16 => Format::S16LE,
        }
    }

    /// The `--format` names, for messages: "float, s32, s24, s24_3 or s16".
    fn flag_names() -> String {
        let names: Vec<&str> = Self::ALL.iter().map(|f| f.flag_name()).collect();
        format!(
            "{} or {}",
            names[..names.len() - 1].join(", "),
            names[names.len() - 1]
        )
    }
}

impl std::fmt::Display for SampleFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.alsa_name())
    }
}

impl std::str::FromStr for SampleFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let lower = s.to_ascii_lowercase();
        SampleFormat::ALL
            .into_iter()
            .find(|f| lower == f.flag_name() || lower == f.alsa_name().to_ascii_lowercase())
            .or_else(|| (lower == "f32").then_some(SampleFormat::F32))
            .ok_or_else(|| {
                format!(
                    "unknown sample format `{s}`: use {}",
                    SampleFormat::flag_names()
                )
            })
    }
}

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

/// alsa-lib prints its errors on stderr; audiolat turns them into its own one-line
/// errors, so this thread's are silenced (`snd_lib_error_set_local`).
pub(crate) fn silence_alsa_lib() {
    unsafe extern "C" fn quiet(
        _file: *const std::ffi::c_char,
        _line: std::ffi::c_int,
        _function: *const std::ffi::c_char,
        _errcode: std::ffi::c_int,
        _fmt: *const std::ffi::c_char,
        _args: *mut alsa_sys::__va_list_tag,
    ) {
    }
    // SAFETY: installs a thread-local handler that ignores its arguments.
    unsafe {
        alsa_sys::snd_lib_error_set_local(Some(quiet));
    }
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

/// The end of a refusal: the `plughw:` twin of a `hw:` device, which does what `hw:`
/// cannot (alsa-lib's plug plugin); for other devices, a pointer to one.
fn plug_hint(device: &str, what: &str) -> String {
    match device.strip_prefix("hw:") {
        Some(rest) => format!(": or use --device plughw:{rest} (alsa-lib's plug layer {what})"),
        None => format!(": or use a plughw: device (alsa-lib's plug layer {what})"),
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
        return Err(AudioError::BadSetting(format!(
            "ALSA device `{device}` takes only {} access, and audiolat reads and writes interleaved frames{}",
            if takes.is_empty() { "other".to_string() } else { takes.join(" or ") },
            plug_hint(device, "interleaves")
        )));
    }
    let format = match format {
        Some(f) => {
            hwp.set_format(f.alsa()).map_err(|_| {
                let takes: Vec<&str> = SampleFormat::ALL
                    .into_iter()
                    .filter(|c| hwp.test_format(c.alsa()).is_ok())
                    .map(|c| c.flag_name())
                    .collect();
                AudioError::BadSetting(format!(
                    "--format {}: ALSA device `{device}` does not take it; it takes {}{}",
                    f.flag_name(),
                    if takes.is_empty() {
                        format!("none of {}", SampleFormat::flag_names())
                    } else {
                        takes.join(", ")
                    },
                    plug_hint(device, "converts the format")
                ))
            })?;
            f
        }
        None => {
            let f = SampleFormat::ALL
                .into_iter()
                .find(|c| hwp.test_format(c.alsa()).is_ok())
                .ok_or_else(|| {
                    AudioError::BadSetting(format!(
                        "ALSA device `{device}` takes none of {}{}",
                        SampleFormat::flag_names(),
                        plug_hint(device, "converts the format")
                    ))
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
        return Err(AudioError::BadSetting(format!(
            "--rate {}: ALSA device `{device}` runs {rate} Hz instead: use --rate {rate}{}",
            config.sample_rate_hz,
            plug_hint(device, "resamples")
        )));
    }
    let period = hwp
        .set_period_size_near(config.period_frames as alsa::pcm::Frames, ValueOr::Nearest)
        .map_err(e("setting the period"))? as u32;
    if period != config.period_frames {
        return Err(AudioError::BadSetting(format!(
            "--period {}: ALSA device `{device}` refuses that period (the nearest it takes is {period} frames): use --period {period}",
            config.period_frames
        )));
    }
    let wanted = (config.period_frames * config.periods) as alsa::pcm::Frames;
    let buffer = hwp
        .set_buffer_size_near(wanted)
        .map_err(e("setting the buffer"))? as u32;
    if buffer != wanted as u32 {
        return Err(AudioError::BadSetting(format!(
            "--periods {}: ALSA device `{device}` refuses a buffer of {wanted} frames (the nearest it takes is {buffer}): use a buffer it takes",
            config.periods
        )));
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
            return Err(AudioError::BadSetting(format!(
                "--periods {}: a buffer holds at least two periods (one playing, one being written)",
                config.periods
            )));
        }
        if config.period_frames == 0 || config.period_frames > 1 << 20 {
            return Err(AudioError::BadSetting(format!(
                "--period {}: use 1 to 1048576 frames",
                config.period_frames
            )));
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
            backend: "alsa",
            model: Model::Push,
            sample_rate_hz: rate,
            period_frames: period,
            playback_latency_frames: buffer - period,
            capture_latency_frames: if capture.is_some() { period } else { 0 },
            client_name: config.device.clone(),
            playback_ports: vec![config.device.clone()],
            capture_port: config.capture_device.clone(),
            midi_port: None,
            server: config.server.clone().unwrap_or_else(|| ServerInfo {
                name: config.device.clone(),
                private: false,
                command_line: None,
                version: Some(format!("alsa-lib {}", alsa_version())),
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

/// Samples of one format, converted from and to f32.
trait Sample: Copy + Default + alsa::pcm::IoFormat {
    fn from_f32(x: f32) -> Self;
    fn to_f32(self) -> f32;
}

impl Sample for f32 {
    fn from_f32(x: f32) -> f32 {
        x
    }
    fn to_f32(self) -> f32 {
        self
    }
}

impl Sample for i32 {
    fn from_f32(x: f32) -> i32 {
        (f64::from(x.clamp(-1.0, 1.0)) * f64::from(i32::MAX)) as i32
    }
    fn to_f32(self) -> f32 {
        (f64::from(self) / f64::from(i32::MAX)) as f32
    }
}

/// `S24_LE`: a 24-bit sample in the low three bytes of a little-endian 32-bit word.
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
struct S24In32(i32);

impl alsa::pcm::IoFormat for S24In32 {
    const FORMAT: Format = Format::S24LE;
}

/// Full scale of a 24-bit sample.
const S24_FULL: f64 = 8_388_607.0;

impl Sample for S24In32 {
    fn from_f32(x: f32) -> S24In32 {
        S24In32((f64::from(x.clamp(-1.0, 1.0)) * S24_FULL) as i32)
    }
    fn to_f32(self) -> f32 {
        // The top byte is padding: sign-extend from bit 23.
        (f64::from((self.0 << 8) >> 8) / S24_FULL) as f32
    }
}

/// `S24_3LE`: a 24-bit sample packed in three little-endian bytes.
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
struct S24Packed([u8; 3]);

impl alsa::pcm::IoFormat for S24Packed {
    const FORMAT: Format = Format::S243LE;
}

impl Sample for S24Packed {
    fn from_f32(x: f32) -> S24Packed {
        let v = (f64::from(x.clamp(-1.0, 1.0)) * S24_FULL) as i32;
        let b = v.to_le_bytes();
        S24Packed([b[0], b[1], b[2]])
    }
    fn to_f32(self) -> f32 {
        let [a, b, c] = self.0;
        let v = i32::from_le_bytes([0, a, b, c]) >> 8;
        (f64::from(v) / S24_FULL) as f32
    }
}

impl Sample for i16 {
    fn from_f32(x: f32) -> i16 {
        (x.clamp(-1.0, 1.0) * f32::from(i16::MAX)) as i16
    }
    fn to_f32(self) -> f32 {
        f32::from(self) / f32::from(i16::MAX)
    }
}

struct Loop {
    playback: PCM,
    capture: Option<PCM>,
    linked: bool,
    period: usize,
    buffer: usize,
    out_channels: usize,
    in_channels: usize,
    rate: u32,
    latency_frames: i64,
    stop: Arc<AtomicBool>,
    shared: Arc<StreamShared>,
    xruns: Option<rtrb::Producer<u64>>,
}

enum Step {
    Go,
    Xrun,
    Fail(String),
}

impl Loop {
    fn classify(&self, e: alsa::Error, what: &str) -> Step {
        match e.errno() {
            libc::EPIPE | libc::ESTRPIPE => Step::Xrun,
            libc::EAGAIN | libc::EINTR => Step::Go,
            _ => Step::Fail(format!("ALSA {what} failed: {e}")),
        }
    }

    /// Prepares, prefills with silence and starts both directions (in one call when
    /// linked; else the capture first, then the playback).
    fn restart<S: Sample>(&self, out: &alsa::pcm::IO<'_, S>, silence: &[S]) -> Result<(), String> {
        let _ = self.playback.drop();
        if let Some(c) = &self.capture {
            let _ = c.drop();
        }
        self.playback
            .prepare()
            .map_err(|e| format!("ALSA prepare failed: {e}"))?;
        if let Some(c) = &self.capture {
            if !self.linked {
                c.prepare()
                    .map_err(|e| format!("ALSA prepare failed: {e}"))?;
            }
        }
        let mut left = self.buffer;
        while left > 0 {
            let n = left.min(self.period);
            match out.writei(&silence[..n * self.out_channels]) {
                Ok(w) => left -= w,
                Err(e) if e.errno() == libc::EAGAIN => break,
                Err(e) => return Err(format!("ALSA prefill failed: {e}")),
            }
        }
        if let (Some(c), false) = (&self.capture, self.linked) {
            c.start()
                .map_err(|e| format!("ALSA capture start failed: {e}"))?;
        }
        self.playback
            .start()
            .map_err(|e| format!("ALSA start failed: {e}"))?;
        Ok(())
    }

    /// Capture position minus playback position, in frames, on the first period after a
    /// start (nothing read or written since the prefill, which filled the buffer): the
    /// capture's avail is its position, the playback's avail is its position. The
    /// playback is read before and after the capture, and the reading kept only when it
    /// did not move in between.
    fn start_skew(&self) -> Option<i64> {
        let capture = self.capture.as_ref()?;
        for _ in 0..8 {
            let before = self.playback.avail().ok()?;
            let captured = capture.avail().ok()?;
            let after = self.playback.avail().ok()?;
            if before == after {
                #[allow(clippy::unnecessary_cast)]
                return Some(captured as i64 - before as i64);
            }
        }
        None
    }

    /// Waits until a whole period can be read (duplex) or written (playback only).
    ///
    /// A partial period is never read: what is missing would then wait for `avail_min`,
    /// a whole period more, and the playback would run dry meanwhile (a driver whose
    /// pointer moves in timer ticks, such as snd-aloop, wakes its reader with more than
    /// a period ready and leaves partial periods behind every time).
    fn wait_period(&self) -> Step {
        let pcm = self.capture.as_ref().unwrap_or(&self.playback);
        let what = if self.capture.is_some() {
            "capture"
        } else {
            "playback"
        };
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Step::Go;
            }
            let step = match pcm.avail_update() {
                Ok(a) if a as usize >= self.period => return Step::Go,
                Ok(_) => match pcm.wait(Some(100)) {
                    Ok(_) => Step::Go,
                    Err(e) => self.classify(e, what),
                },
                Err(e) => self.classify(e, what),
            };
            if !matches!(step, Step::Go) {
                return step;
            }
        }
    }

    /// Reads one period (ready: see [`Loop::wait_period`]).
    fn read_period<S: Sample>(&self, io: &alsa::pcm::IO<'_, S>, raw: &mut [S]) -> Step {
        let ch = self.in_channels;
        let mut got = 0;
        while got < self.period {
            match io.readi(&mut raw[got * ch..self.period * ch]) {
                Ok(n) => got += n,
                Err(e) => match self.classify(e, "capture read") {
                    Step::Go => match self.wait_period() {
                        Step::Go if !self.stop.load(Ordering::Relaxed) => {}
                        Step::Go => return Step::Go,
                        other => return other,
                    },
                    other => return other,
                },
            }
        }
        Step::Go
    }

    fn run<S: Sample>(mut self, mut runner: CycleRunner, policy: Policy) -> CycleRunner {
        silence_alsa_lib();
        let _rt = ThreadRt::apply(&policy, None, 256 * 1024);
        let Some(mut xruns) = self.xruns.take() else {
            return runner;
        };
        let Ok(out) = self.playback.io_checked::<S>() else {
            self.shared
                .end("ALSA: the playback format changed after it was set");
            return runner;
        };
        let input = match &self.capture {
            Some(c) => match c.io_checked::<S>() {
                Ok(io) => Some(io),
                Err(_) => {
                    self.shared
                        .end("ALSA: the capture format changed after it was set");
                    return runner;
                }
            },
            None => None,
        };
        let p = self.period;
        let silence = vec![S::default(); p * self.out_channels.max(self.in_channels)];
        let mut out_f32 = vec![0.0f32; p];
        let mut in_f32 = vec![0.0f32; p];
        let mut out_raw = vec![S::default(); p * self.out_channels];
        let mut in_raw = vec![S::default(); p * self.in_channels.max(1)];
        let period_ns = p as f64 * 1e9 / f64::from(self.rate);
        if let Err(why) = self.restart(&out, &silence) {
            self.shared.end(&why);
            return runner;
        }
        // The latest start, until its first period has been checked.
        // The latest start, until its first period has been checked, and the skew of
        // the attempt before it.
        let mut start = Some(DuplexStart {
            linked: self.linked,
            skew_frames: None,
            attempts: 1,
            starts: 1,
            steady_offset: false,
        });
        let mut previous_skew: Option<Option<i64>> = None;
        let mut starts: u32 = 1;
        let mut c: u64 = 0;
        let started_ns = monotonic_ns();
        let mut cycles_run: u64 = 0;
        while !self.stop.load(Ordering::Relaxed) {
            // A device without a clock (the null PCM) takes and gives periods as fast as
            // the loop can run: no figure from it means anything, and a probe would
            // analyse without end. Past a second's worth, more than twice real time ends
            // the stream.
            let elapsed_ns = monotonic_ns().saturating_sub(started_ns) as f64;
            let frames_done = (cycles_run * p as u64) as f64;
            let frames_due = elapsed_ns * 1e-9 * f64::from(self.rate) + self.buffer as f64;
            if frames_done > f64::from(self.rate) && frames_done > 2.0 * frames_due {
                self.shared.end(&format!(
                    "ALSA: the device ran {:.0}x faster than real time ({frames_done:.0} frames in {:.0} ms): it has no clock (the null PCM?); use a device that plays in real time",
                    frames_done / (frames_due - self.buffer as f64).max(1.0),
                    elapsed_ns * 1e-6
                ));
                break;
            }
            let mut step = self.wait_period();
            if matches!(step, Step::Go) && self.stop.load(Ordering::Relaxed) {
                break;
            }
            // The first period of a duplex start: how the two directions stand, and a
            // fresh start while the offset between them is an accident of the start.
            if let (Step::Go, Some(mut s)) = (&step, start) {
                if self.capture.is_some() {
                    s.skew_frames = self.start_skew();
                    if s.start_again(previous_skew) {
                        if let Err(why) = self.restart(&out, &silence) {
                            self.shared.end(&why);
                            break;
                        }
                        previous_skew = Some(s.skew_frames);
                        s.attempts += 1;
                        start = Some(s);
                        continue;
                    }
                    s.steady_offset =
                        s.skew_frames != Some(0) && previous_skew == Some(s.skew_frames);
                    self.shared.note_duplex_start(s);
                }
                previous_skew = None;
                start = None;
            }
            if let (Step::Go, Some(io)) = (&step, &input) {
                step = self.read_period(io, &mut in_raw);
            }
            match step {
                Step::Go => {}
                Step::Xrun => {
                    starts += 1;
                    start = self.xrun(&mut c, &out, &silence, &mut xruns, starts - 1);
                    previous_skew = None;
                    continue;
                }
                Step::Fail(why) => {
                    self.shared.end(&why);
                    break;
                }
            }
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
            // Periods processed (not restarts after under-runs, nor fresh starts).
            cycles_run += 1;
            let callback_ns = monotonic_ns();
            // Where the new frames land: the queue and when it was read.
            let nominal_ns = match self.playback.status() {
                Ok(st) => {
                    let ts = st.get_htstamp();
                    // time_t and snd_pcm_sframes_t are 32 bits on some targets.
                    #[allow(clippy::unnecessary_cast)]
                    let (t, delay) = (
                        ts.tv_sec as i64 * 1_000_000_000 + ts.tv_nsec as i64,
                        st.get_delay() as i64,
                    );
                    let t = if t > 0 { t } else { callback_ns as i64 };
                    (t - (self.latency_frames - delay) * 1_000_000_000 / i64::from(self.rate))
                        .max(0) as u64
                }
                Err(_) => callback_ns,
            };
            if input.is_some() {
                for (i, x) in in_f32.iter_mut().enumerate() {
                    *x = in_raw[i * self.in_channels].to_f32();
                }
            }
            let timing = CycleTiming {
                first_frame: c * p as u64,
                nominal_ns,
                period_ns,
                callback_ns,
            };
            let mut io = Io {
                output: &mut out_f32,
                input: input.as_ref().map(|_| &in_f32[..]),
                note_ons: &[],
                midi_dropped: 0,
            };
            runner.run(timing, &mut io);
            for (i, &x) in out_f32.iter().enumerate() {
                let s = S::from_f32(x);
                for ch in 0..self.out_channels {
                    out_raw[i * self.out_channels + ch] = s;
                }
            }
            let mut written = 0;
            let mut failed = None;
            while written < p && !self.stop.load(Ordering::Relaxed) {
                let step = match out.writei(&out_raw[written * self.out_channels..]) {
                    Ok(n) => {
                        written += n;
                        Step::Go
                    }
                    Err(e) if e.errno() == libc::EAGAIN => match self.playback.wait(Some(100)) {
                        Ok(_) => Step::Go,
                        Err(e) => self.classify(e, "playback wait"),
                    },
                    Err(e) => self.classify(e, "playback write"),
                };
                if !matches!(step, Step::Go) {
                    failed = Some(step);
                    break;
                }
            }
            c += 1;
            match failed {
                Some(Step::Xrun) => {
                    starts += 1;
                    start = self.xrun(&mut c, &out, &silence, &mut xruns, starts - 1);
                    previous_skew = None;
                }
                Some(Step::Fail(why)) => {
                    self.shared.end(&why);
                    break;
                }
                _ => {}
            }
        }
        let _ = self.playback.drop();
        if let Some(c) = &self.capture {
            let _ = c.drop();
        }
        runner
    }

    /// An under-run or over-run: counted with its time, then the stream restarts and its
    /// position jumps past the lost buffer. Returns the new start (the stream's
    /// `starts + 1`-th), to check on its first period.
    fn xrun<S: Sample>(
        &self,
        c: &mut u64,
        out: &alsa::pcm::IO<'_, S>,
        silence: &[S],
        xruns: &mut rtrb::Producer<u64>,
        starts: u32,
    ) -> Option<DuplexStart> {
        self.shared.xruns.fetch_add(1, Ordering::Relaxed);
        let _ = xruns.push(monotonic_ns());
        *c += (self.buffer / self.period) as u64 + 1;
        if let Err(why) = self.restart(out, silence) {
            self.shared.end(&why);
            self.stop.store(true, Ordering::SeqCst);
        }
        Some(DuplexStart {
            linked: self.linked,
            skew_frames: None,
            attempts: 1,
            starts: starts + 1,
            steady_offset: false,
        })
    }
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
mod tests {
    use super::*;

    #[test]
    fn twenty_four_bit_samples_keep_their_sign_and_scale_both_ways() {
        for x in [0.0f32, 0.5, -0.5, 1.0, -1.0, 0.25e-3, -0.75] {
            let a = S24In32::from_f32(x);
            let b = S24Packed::from_f32(x);
            assert!((a.to_f32() - x).abs() < 2e-7, "S24_LE {x}: {}", a.to_f32());
            assert!((b.to_f32() - x).abs() < 2e-7, "S24_3LE {x}: {}", b.to_f32());
        }
        // Full scale and its bytes.
        assert_eq!(S24Packed::from_f32(1.0).0, [0xff, 0xff, 0x7f]);
        assert_eq!(S24Packed::from_f32(-1.0).0, [0x01, 0x00, 0x80]);
        assert_eq!(S24In32::from_f32(-1.0).0, -8_388_607);
        // A device may leave junk in S24_LE's padding byte: it is ignored.
        assert_eq!(
            S24In32(0x7f80_0000u32 as i32).to_f32(),
            -1.0 - 1.0 / 8_388_607.0
        );
        assert!(S24In32(0x1200_0001).to_f32() > 0.0);
        // Beyond full scale clamps.
        assert_eq!(S24Packed::from_f32(3.0).0, [0xff, 0xff, 0x7f]);
        assert_eq!(std::mem::size_of::<S24Packed>(), 3);
    }

    #[test]
    fn formats_parse_by_flag_and_alsa_name_and_list_in_preference_order() {
        for f in SampleFormat::ALL {
            assert_eq!(f.flag_name().parse::<SampleFormat>(), Ok(f));
            assert_eq!(f.alsa_name().parse::<SampleFormat>(), Ok(f));
        }
        assert_eq!(
            "S24_3LE".parse::<SampleFormat>(),
            Ok(SampleFormat::S24Packed)
        );
        let err = "u8".parse::<SampleFormat>().unwrap_err();
        assert!(err.ends_with("use float, s32, s24, s24_3 or s16"), "{err}");
    }

    #[test]
    fn a_refusal_points_to_the_plughw_twin_of_a_hw_device() {
        assert_eq!(
            plug_hint("hw:Dummy", "resamples"),
            ": or use --device plughw:Dummy (alsa-lib's plug layer resamples)"
        );
        assert_eq!(
            plug_hint("hw:1,0,2", "converts the format"),
            ": or use --device plughw:1,0,2 (alsa-lib's plug layer converts the format)"
        );
        assert!(plug_hint("default", "resamples").contains("a plughw: device"));
    }

    #[test]
    fn the_grant_is_json_with_alsa_names_and_the_link_error_escaped() {
        let g = AlsaGranted {
            rate_hz: 48_000,
            period_frames: 1024,
            buffer_frames: 2048,
            format: SampleFormat::S16,
            playback_channels: 2,
            capture_channels: None,
            linked: false,
            link_error: Some("Function \"link\" not implemented".into()),
            access: "RW_INTERLEAVED",
        };
        let text = g.to_json_string();
        assert!(text.contains("\"format\":\"S16_LE\""), "{text}");
        assert!(text.contains("\"capture_channels\":null"), "{text}");
        assert!(
            text.contains("\"link_error\":\"Function \\\"link\\\" not implemented\""),
            "{text}"
        );
    }
}
