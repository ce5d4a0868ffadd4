//! The ALSA backend's set-up: which device, and the JACK server behind alsa-lib's jack
//! PCM when the device is one.

use crate::alsa::stream::{AlsaConfig, AlsaStream, SampleFormat};
use crate::audio::AudioError;
use crate::jack::loop_client::JackLoop;
use crate::setup::{has_sound_card, ServerChoice, Setup, StreamKind, SweepStep};

/// alsa-lib's PCMs that play into a JACK server (`jack`, and the plugin's `loop`): the
/// set-up connects to (or starts) the server behind them.
const JACK_PCMS: [&str; 2] = ["jack", "loop"];

/// The rate an ALSA device is opened at when none is asked for.
pub const DEFAULT_RATE_HZ: u32 = 48_000;
/// The period an ALSA device must grant when none is asked for.
pub const DEFAULT_PERIOD_FRAMES: u32 = 256;
/// The periods audiolat asks an ALSA device for (which one grants is the device's to
/// say): from the smallest any driver runs to the largest a buffer is sized for.
pub const PERIOD_RANGE_FRAMES: std::ops::RangeInclusive<u32> = 16..=65_536;

/// An ALSA device's streams.
#[derive(Clone, Debug)]
pub struct AlsaSpec {
    /// The device; `None`: `default` when there is a sound card, else the jack PCM
    /// (`loop` for a duplex stream: the jack PCM through audiolat's software loop).
    pub device: Option<String>,
    /// The capture device: a duplex stream's (`None`: the playback device), or the
    /// device that hears the output of a playback stream (`None`: none).
    pub capture_device: Option<String>,
    /// Full duplex (a round trip) rather than playback with an optional capture.
    pub duplex: bool,
    /// The rate (`None`: [`DEFAULT_RATE_HZ`]).
    pub rate_hz: Option<u32>,
    /// Periods in the buffer.
    pub periods: u32,
    /// The sample format (`None`: the first the device takes).
    pub format: Option<SampleFormat>,
    /// The JACK server behind the jack PCM (`jack` and `loop` devices).
    pub server: ServerChoice,
}

impl AlsaSpec {
    /// The device the streams open (see [`AlsaSpec::device`]).
    pub fn resolved_device(&self) -> String {
        self.device.clone().unwrap_or_else(|| {
            if has_sound_card() {
                "default".into()
            } else if self.duplex {
                "loop".into()
            } else {
                "jack".into()
            }
        })
    }

    /// Whether the device is alsa-lib's jack PCM, which plays into a JACK server.
    pub fn uses_jack_server(&self) -> bool {
        JACK_PCMS.contains(&self.resolved_device().as_str())
    }
}

/// The set-up for one period (see [`crate::backend::open`]).
pub(crate) fn open(
    spec: &AlsaSpec,
    period: Option<u32>,
    step: SweepStep,
) -> Result<Setup, AudioError> {
    let device = spec.resolved_device();
    let rate = spec.rate_hz.unwrap_or(DEFAULT_RATE_HZ);
    let period = period.unwrap_or(DEFAULT_PERIOD_FRAMES);
    let mut config = AlsaConfig {
        device: device.clone(),
        capture_device: None,
        sample_rate_hz: rate,
        period_frames: period,
        periods: spec.periods,
        format: spec.format,
        ..AlsaConfig::default()
    };
    let mut server = None;
    let mut loop_client = None;
    let mut description = format!("ALSA device {device}");
    if JACK_PCMS.contains(&device.as_str()) {
        // alsa-lib's jack PCM plays into a JACK server: ours, unless one runs.
        let s = spec.server.connect(step, Some(rate), Some(period))?;
        config.server = Some(s.info().clone());
        if device == "loop" {
            let lp = JackLoop::start(s.name(), "audiolat-loop", 0)?;
            config.device = "audiolat_loop".into();
            config.definitions = Some(format!(
                "pcm.audiolat_loop {{ type jack playback_ports {{ 0 {} }} capture_ports {{ 0 {} }} }}",
                lp.input_port(),
                lp.output_port()
            ));
            description = format!(
                "ALSA's jack PCM through a software loop in the JACK server `{}` (audiolat-loop)",
                s.name()
            );
            loop_client = Some(lp);
        } else {
            description = format!("ALSA's jack PCM on the JACK server `{}`", s.name());
        }
        server = Some(s);
    }
    config.capture_device = if spec.duplex {
        Some(
            spec.capture_device
                .clone()
                .unwrap_or_else(|| config.device.clone()),
        )
    } else {
        spec.capture_device.clone()
    };
    // Open once now: a device or period the device refuses is refused here.
    drop(AlsaStream::open(config.clone())?);
    Ok(Setup {
        server,
        _loop_client: loop_client,
        kind: StreamKind::Alsa(config),
        loop_description: description,
    })
}
