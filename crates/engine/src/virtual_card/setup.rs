//! The virtual card's set-up: its buffer and its cable.

use crate::audio::AudioError;
use crate::setup::{Setup, StreamKind};
use crate::virtual_card::VirtualConfig;

/// The rate the card runs at when none is asked for.
pub const DEFAULT_RATE_HZ: u32 = 48_000;
/// The card's period when none is asked for.
pub const DEFAULT_PERIOD_FRAMES: u32 = 256;

/// The loopback cable from the card's output to its input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cable {
    /// Its delay in frames (fractional allowed).
    pub delay_frames: f64,
    /// Its gain (negative inverts polarity).
    pub gain: f32,
}

impl Cable {
    /// The cable a virtual card has unless told: no delay, unity gain.
    pub const PLAIN: Cable = Cable {
        delay_frames: 0.0,
        gain: 1.0,
    };
}

/// The virtual card's streams.
#[derive(Clone, Debug)]
pub struct VirtualSpec {
    /// The rate (`None`: [`DEFAULT_RATE_HZ`]).
    pub rate_hz: Option<u32>,
    /// Periods in the buffer.
    pub periods: u32,
    /// The cable; `None`: the input hears silence.
    pub cable: Option<Cable>,
    /// The stream reads the card's input (a round trip's): without, it only plays and
    /// has no capture port (an event run's, which has no loopback on this card).
    pub capture: bool,
}

/// The set-up for one period (see [`crate::backend::open`]).
pub(crate) fn open(spec: &VirtualSpec, period: Option<u32>) -> Result<Setup, AudioError> {
    let config = VirtualConfig {
        sample_rate_hz: spec.rate_hz.unwrap_or(DEFAULT_RATE_HZ),
        period_frames: period.unwrap_or(DEFAULT_PERIOD_FRAMES),
        periods: spec.periods,
        loop_delay_frames: spec.cable.map(|c| c.delay_frames),
        loop_gain: spec.cable.map_or(1.0, |c| c.gain),
        capture: spec.capture,
        ..VirtualConfig::default()
    };
    config.validate()?;
    let description = match spec.cable {
        Some(c) => format!(
            "virtual cable of {} frames, gain {}",
            c.delay_frames, c.gain
        ),
        None => "no cable".into(),
    };
    Ok(Setup {
        server: None,
        _loop_client: None,
        kind: StreamKind::Virtual(config),
        loop_description: description,
    })
}
