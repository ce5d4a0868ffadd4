//! Building a [`BackendSpec`] from typed values: the backend, the settings every backend
//! shares ([`StreamSettings`]) and what the streams are for ([`StreamPurpose`]). Each
//! backend takes the part of them it uses. What the chosen backend cannot run is refused
//! with a [`SpecError`]: options that belong to another backend ([`OptionGroup`]), a rate
//! out of range, playback ports without the port the cable comes back in.

use crate::alsa::setup::AlsaSpec;
use crate::alsa::stream::SampleFormat;
use crate::jack::client::JackConfig;
use crate::jack::server::ServerMode;
use crate::jack::setup::{JackPorts, JackSpec};
use crate::pipewire::native::NativeSpec;
use crate::setup::ServerChoice;
use crate::virtual_card::setup::{Cable, VirtualSpec};

use super::kind::BackendKind;
use super::spec::BackendSpec;

/// The sample rates a spec may ask for, in Hz.
pub const RATE_RANGE_HZ: std::ops::RangeInclusive<u32> = 8_000..=384_000;

/// Periods in a buffer unless told (ALSA and the virtual card).
pub const DEFAULT_PERIODS: u32 = 2;

/// The periods in a buffer each backend that takes `periods` accepts: an ALSA device
/// (whose drivers allow up to 1024), the virtual card (64).
pub fn periods_range(kind: BackendKind) -> std::ops::RangeInclusive<u32> {
    match kind {
        BackendKind::Virtual => 2..=crate::virtual_card::MAX_PERIODS,
        _ => 2..=1024,
    }
}

/// The largest gain of the virtual card's cable, either polarity.
pub const MAX_CABLE_GAIN: f32 = 100.0;

/// The event probe's loopback on the native PipeWire backend: `monitor`, a capture stream
/// on the monitor of the sink the notes play to (an independent check of the model: the
/// onset found in what the sink took).
pub const NATIVE_MONITOR_LOOPBACK: &str = "monitor";

/// The settings every backend shares; each takes the ones it uses.
#[derive(Clone, Debug)]
pub struct StreamSettings {
    /// The rate (`None`: the backend's default, or a running server's).
    pub rate_hz: Option<u32>,
    /// Periods in the buffer (ALSA and the virtual card; a JACK server's is its own).
    pub periods: u32,
    /// The ALSA device (`None`: see [`AlsaSpec::device`]).
    pub device: Option<String>,
    /// The ALSA sample format (`None`: the first the device takes).
    pub format: Option<SampleFormat>,
    /// The JACK server (JACK, and ALSA's jack PCM).
    pub server: ServerChoice,
}

/// What the streams are for, with what only some backends take.
#[derive(Clone, Debug)]
pub enum StreamPurpose {
    /// The event probe: playback.
    Event {
        /// JACK: ports, loopback capture port and MIDI input.
        jack: JackConfig,
        /// ALSA: the capture device that hears the output (`None`: none).
        loopback_device: Option<String>,
    },
    /// The round trip: a loop.
    Roundtrip {
        /// JACK: the ports the output goes to (empty: the first two physical playback
        /// ports, or audiolat's software loop when `capture` is `None` too).
        playback: Vec<String>,
        /// JACK: the port the loop comes back on (`None`: audiolat's software loop).
        capture: Option<String>,
        /// ALSA: the capture device (`None`: the playback device).
        capture_device: Option<String>,
        /// The virtual card: the cable (`None`: the input hears silence). Other backends
        /// take [`Cable::PLAIN`] only (no cable options), which is what their callers
        /// pass: anything else is refused as [`OptionGroup::Cable`].
        cable: Option<Cable>,
    },
}

/// Options only some backends take, as a spec groups them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionGroup {
    /// JACK ports: playback ports, a loopback or capture port (JACK only).
    JackPorts,
    /// A cable other than [`Cable::PLAIN`], or none (the virtual card only).
    Cable,
    /// An ALSA device, capture device or sample format (ALSA only).
    AlsaDevice,
    /// Periods in the buffer other than [`DEFAULT_PERIODS`] (not JACK: a server's buffer
    /// is its own).
    BufferPeriods,
    /// A private PipeWire through its JACK API (JACK clients only).
    PipewireServer,
    /// A JACK server: a mode other than auto, or a name (not the virtual card).
    JackServer,
}

impl std::fmt::Display for OptionGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            OptionGroup::JackPorts => "JACK ports",
            OptionGroup::Cable => "virtual cable",
            OptionGroup::AlsaDevice => "ALSA device or sample format",
            OptionGroup::BufferPeriods => "buffer size in periods",
            OptionGroup::PipewireServer => "private PipeWire server",
            OptionGroup::JackServer => "JACK server",
        })
    }
}

/// A spec the chosen backend cannot run.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SpecError {
    /// Options that belong to another backend than the one chosen.
    #[error("the {backend} backend takes no {options}")]
    ForeignOptions {
        /// Which options.
        options: OptionGroup,
        /// The backend chosen.
        backend: BackendKind,
    },
    /// The rate is outside [`RATE_RANGE_HZ`].
    #[error(
        "a sample rate of {0} Hz is out of range: use one from {min} to {max} Hz",
        min = RATE_RANGE_HZ.start(),
        max = RATE_RANGE_HZ.end()
    )]
    RateOutOfRange(u32),
    /// Periods in the buffer outside [`periods_range`] of the backend.
    #[error("{periods} periods in a buffer: the {backend} backend takes {} to {}", periods_range(*.backend).start(), periods_range(*.backend).end())]
    PeriodsOutOfRange {
        /// Periods asked for.
        periods: u32,
        /// The backend.
        backend: BackendKind,
    },
    /// The virtual card's cable delay is outside 0 to
    /// [`dsp::loopdelay::MAX_LOOP_FRAMES`].
    #[error("a cable delay of {0} frames is out of range: use 0 to {max} frames", max = dsp::loopdelay::MAX_LOOP_FRAMES)]
    CableDelayOutOfRange(f64),
    /// The virtual card's cable gain is beyond [`MAX_CABLE_GAIN`] either way.
    #[error("a cable gain of {0} is out of range: use -{max} to {max} (negative inverts)", max = MAX_CABLE_GAIN)]
    CableGainOutOfRange(f32),
    /// A JACK round trip names the ports the output goes to, but not the port the
    /// cable comes back in.
    #[error("a JACK round trip's playback ports need the capture port the cable comes back in")]
    PlaybackWithoutCapture,
}

impl BackendSpec {
    /// The spec of `kind`'s streams for `purpose`, with the `settings` that backend
    /// takes. No side effects: nothing is opened or started. Options of another backend
    /// are refused first, in [`OptionGroup`]'s order, then the rate.
    pub fn build(
        kind: BackendKind,
        settings: StreamSettings,
        purpose: StreamPurpose,
    ) -> Result<BackendSpec, SpecError> {
        if let Some(options) = foreign_options(kind, &settings, &purpose) {
            return Err(SpecError::ForeignOptions {
                options,
                backend: kind,
            });
        }
        if let Some(r) = settings.rate_hz {
            if !RATE_RANGE_HZ.contains(&r) {
                return Err(SpecError::RateOutOfRange(r));
            }
        }
        if !kind.has_quantum() && !periods_range(kind).contains(&settings.periods) {
            return Err(SpecError::PeriodsOutOfRange {
                periods: settings.periods,
                backend: kind,
            });
        }
        if let StreamPurpose::Roundtrip {
            cable: Some(cable), ..
        } = &purpose
        {
            let most = f64::from(dsp::loopdelay::MAX_LOOP_FRAMES);
            if !(cable.delay_frames.is_finite() && (0.0..=most).contains(&cable.delay_frames)) {
                return Err(SpecError::CableDelayOutOfRange(cable.delay_frames));
            }
            if !(cable.gain.is_finite() && cable.gain.abs() <= MAX_CABLE_GAIN) {
                return Err(SpecError::CableGainOutOfRange(cable.gain));
            }
        }
        Ok(match kind {
            BackendKind::Jack => BackendSpec::Jack(JackSpec {
                server: settings.server,
                rate_hz: settings.rate_hz,
                ports: jack_ports(purpose)?,
            }),
            BackendKind::Alsa => BackendSpec::Alsa(AlsaSpec {
                device: settings.device,
                duplex: matches!(purpose, StreamPurpose::Roundtrip { .. }),
                capture_device: match purpose {
                    StreamPurpose::Event {
                        loopback_device, ..
                    } => loopback_device,
                    StreamPurpose::Roundtrip { capture_device, .. } => capture_device,
                },
                rate_hz: settings.rate_hz,
                periods: settings.periods,
                format: settings.format,
                server: settings.server,
            }),
            BackendKind::Virtual => BackendSpec::Virtual(VirtualSpec {
                rate_hz: settings.rate_hz,
                periods: settings.periods,
                // An event run plays only: the card has no loopback to offer it (its
                // input, without a cable, would hear silence: no onset to find).
                capture: matches!(purpose, StreamPurpose::Roundtrip { .. }),
                cable: match purpose {
                    StreamPurpose::Roundtrip { cable, .. } => cable,
                    StreamPurpose::Event { .. } => None,
                },
            }),
            BackendKind::Pipewire => BackendSpec::Pipewire(NativeSpec {
                server: settings.server,
                rate_hz: settings.rate_hz,
                capture: matches!(purpose, StreamPurpose::Roundtrip { .. })
                    || native_monitor_loopback(&purpose),
            }),
        })
    }
}

/// The native backend's one loopback: an event run's `loopback` named
/// [`NATIVE_MONITOR_LOOPBACK`], a capture of the sink's monitor, with no playback ports.
fn native_monitor_loopback(purpose: &StreamPurpose) -> bool {
    matches!(purpose, StreamPurpose::Event { jack, .. }
        if jack.playback.is_empty()
            && jack.midi.is_none()
            && jack.capture.as_deref() == Some(NATIVE_MONITOR_LOOPBACK))
}

/// The first group of options given that `kind` does not take, if any.
fn foreign_options(
    kind: BackendKind,
    settings: &StreamSettings,
    purpose: &StreamPurpose,
) -> Option<OptionGroup> {
    let (jack_ports, cable, capture_device) = match purpose {
        StreamPurpose::Event {
            jack,
            loopback_device,
        } => (
            !jack.playback.is_empty() || jack.capture.is_some(),
            false,
            loopback_device.is_some(),
        ),
        StreamPurpose::Roundtrip {
            playback,
            capture,
            capture_device,
            cable,
        } => (
            !playback.is_empty() || capture.is_some(),
            *cable != Some(Cable::PLAIN),
            capture_device.is_some(),
        ),
    };
    let alsa = settings.device.is_some() || settings.format.is_some() || capture_device;
    let server = settings.server.mode != ServerMode::Auto || settings.server.name.is_some();
    [
        (
            OptionGroup::JackPorts,
            jack_ports
                && !kind.has_ports()
                && !(kind == BackendKind::Pipewire && native_monitor_loopback(purpose)),
        ),
        (OptionGroup::Cable, cable && kind != BackendKind::Virtual),
        (OptionGroup::AlsaDevice, alsa && kind != BackendKind::Alsa),
        (
            OptionGroup::BufferPeriods,
            settings.periods != DEFAULT_PERIODS && kind.has_quantum(),
        ),
        (
            OptionGroup::PipewireServer,
            settings.server.mode == ServerMode::Pipewire && !kind.is_server_client(),
        ),
        (
            OptionGroup::JackServer,
            (server && kind == BackendKind::Virtual)
                || (kind == BackendKind::Pipewire
                    && (settings.server.mode == ServerMode::Dummy
                        || settings.server.name.is_some())),
        ),
    ]
    .into_iter()
    .find_map(|(group, foreign)| foreign.then_some(group))
}

/// What a JACK client's streams connect to, for `purpose`.
fn jack_ports(purpose: StreamPurpose) -> Result<JackPorts, SpecError> {
    Ok(match purpose {
        StreamPurpose::Event { jack, .. } => JackPorts::Playback(jack),
        StreamPurpose::Roundtrip {
            playback,
            capture: Some(capture),
            ..
        } => JackPorts::Cable { playback, capture },
        StreamPurpose::Roundtrip { playback, .. } if !playback.is_empty() => {
            return Err(SpecError::PlaybackWithoutCapture)
        }
        StreamPurpose::Roundtrip { .. } => JackPorts::SoftwareLoop,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jack::server::ServerMode;

    /// Settings every backend takes: no backend's own options.
    fn settings(rate_hz: Option<u32>) -> StreamSettings {
        StreamSettings {
            rate_hz,
            periods: DEFAULT_PERIODS,
            device: None,
            format: None,
            server: ServerChoice {
                mode: ServerMode::Auto,
                name: None,
                jackd: None,
            },
        }
    }

    /// A round trip with the plain cable and no capture device.
    fn roundtrip(playback: &[&str], capture: Option<&str>) -> StreamPurpose {
        StreamPurpose::Roundtrip {
            playback: playback.iter().map(|p| p.to_string()).collect(),
            capture: capture.map(str::to_string),
            capture_device: None,
            cable: Some(Cable::PLAIN),
        }
    }

    #[test]
    fn a_rate_out_of_range_is_refused_for_every_backend() {
        for kind in [BackendKind::Jack, BackendKind::Alsa, BackendKind::Virtual] {
            let e = BackendSpec::build(kind, settings(Some(7_999)), roundtrip(&[], None));
            assert_eq!(e.unwrap_err(), SpecError::RateOutOfRange(7_999));
        }
        assert!(BackendSpec::build(
            BackendKind::Virtual,
            settings(Some(384_000)),
            roundtrip(&[], None)
        )
        .is_ok());
    }

    #[test]
    fn jack_round_trip_ports() {
        let spec =
            |p: &[&str], c| BackendSpec::build(BackendKind::Jack, settings(None), roundtrip(p, c));
        assert!(matches!(
            spec(&[], None),
            Ok(BackendSpec::Jack(JackSpec {
                ports: JackPorts::SoftwareLoop,
                ..
            }))
        ));
        assert!(matches!(
            spec(&["system:playback_1"], Some("system:capture_1")),
            Ok(BackendSpec::Jack(JackSpec {
                ports: JackPorts::Cable { .. },
                ..
            }))
        ));
        assert_eq!(
            spec(&["system:playback_1"], None).unwrap_err(),
            SpecError::PlaybackWithoutCapture
        );
    }

    #[test]
    fn each_backend_takes_its_settings() {
        let alsa_settings = StreamSettings {
            device: Some("hw:1".into()),
            periods: 3,
            ..settings(None)
        };
        let duplex = StreamPurpose::Roundtrip {
            playback: Vec::new(),
            capture: None,
            capture_device: Some("hw:2".into()),
            cable: Some(Cable::PLAIN),
        };
        let alsa = BackendSpec::build(BackendKind::Alsa, alsa_settings, duplex);
        let Ok(BackendSpec::Alsa(alsa)) = alsa else {
            panic!("an ALSA spec");
        };
        assert!(alsa.duplex);
        assert_eq!(alsa.device.as_deref(), Some("hw:1"));
        assert_eq!(alsa.capture_device.as_deref(), Some("hw:2"));
        assert_eq!(alsa.periods, 3);
        let event = StreamPurpose::Event {
            jack: JackConfig::default(),
            loopback_device: None,
        };
        let virt_settings = StreamSettings {
            periods: 3,
            ..settings(None)
        };
        let virt = BackendSpec::build(BackendKind::Virtual, virt_settings, event);
        let Ok(BackendSpec::Virtual(virt)) = virt else {
            panic!("a virtual spec");
        };
        assert!(virt.cable.is_none());
        assert_eq!(virt.periods, 3);
    }

    /// Options of another backend are refused with their group and the backend, in
    /// [`OptionGroup`]'s order and before the rate.
    #[test]
    fn options_of_another_backend_are_refused() {
        let refused = |kind, settings, purpose| match BackendSpec::build(kind, settings, purpose) {
            Err(SpecError::ForeignOptions { options, backend }) => {
                assert_eq!(backend, kind);
                Some(options)
            }
            _ => None,
        };
        use BackendKind::{Alsa, Jack, Virtual};
        let ports = || roundtrip(&["a:out"], Some("b:in"));
        assert_eq!(
            refused(Alsa, settings(None), ports()),
            Some(OptionGroup::JackPorts)
        );
        assert_eq!(refused(Jack, settings(None), ports()), None);
        let loopback = StreamPurpose::Event {
            jack: JackConfig {
                capture: Some("b:in".into()),
                ..Default::default()
            },
            loopback_device: None,
        };
        assert_eq!(
            refused(Virtual, settings(None), loopback),
            Some(OptionGroup::JackPorts)
        );
        for cable in [
            None,
            Some(Cable {
                delay_frames: 3.0,
                gain: 1.0,
            }),
        ] {
            let purpose = StreamPurpose::Roundtrip {
                playback: Vec::new(),
                capture: None,
                capture_device: None,
                cable,
            };
            assert_eq!(
                refused(Jack, settings(None), purpose.clone()),
                Some(OptionGroup::Cable)
            );
            assert_eq!(refused(Virtual, settings(None), purpose), None);
        }
        let device = StreamSettings {
            device: Some("hw:1".into()),
            ..settings(Some(1))
        };
        assert_eq!(
            refused(Virtual, device.clone(), roundtrip(&[], None)),
            Some(OptionGroup::AlsaDevice)
        );
        assert_eq!(refused(Alsa, device, roundtrip(&[], None)), None);
        let periods = StreamSettings {
            periods: 3,
            ..settings(None)
        };
        assert_eq!(
            refused(Jack, periods.clone(), roundtrip(&[], None)),
            Some(OptionGroup::BufferPeriods)
        );
        assert_eq!(refused(Virtual, periods, roundtrip(&[], None)), None);
        let mut named = settings(None);
        named.server.name = Some("studio".into());
        assert_eq!(
            refused(Virtual, named.clone(), roundtrip(&[], None)),
            Some(OptionGroup::JackServer)
        );
        assert_eq!(refused(Alsa, named, roundtrip(&[], None)), None);
        let mut pipewire = settings(None);
        pipewire.server.mode = ServerMode::Pipewire;
        assert_eq!(
            refused(Alsa, pipewire.clone(), roundtrip(&[], None)),
            Some(OptionGroup::PipewireServer)
        );
        assert_eq!(
            refused(Virtual, pipewire.clone(), roundtrip(&[], None)),
            Some(OptionGroup::PipewireServer)
        );
        assert_eq!(refused(Jack, pipewire, roundtrip(&[], None)), None);
    }

    #[test]
    fn the_native_pipewire_backend_takes_its_servers_and_no_other_backends_options() {
        use BackendKind::Pipewire;
        let on = |mode| {
            let mut s = settings(None);
            s.server.mode = mode;
            s
        };
        let spec = |s, purpose| BackendSpec::build(Pipewire, s, purpose);
        for mode in [ServerMode::Pipewire, ServerMode::External, ServerMode::Auto] {
            match spec(on(mode), roundtrip(&[], None)) {
                Ok(BackendSpec::Pipewire(s)) => assert!(s.capture && s.server.mode == mode),
                other => panic!("{other:?}"),
            }
        }
        let event = StreamPurpose::Event {
            jack: JackConfig::default(),
            loopback_device: None,
        };
        assert!(matches!(
            spec(on(ServerMode::Pipewire), event),
            Ok(BackendSpec::Pipewire(NativeSpec { capture: false, .. }))
        ));
        let foreign = |s, purpose| match spec(s, purpose) {
            Err(SpecError::ForeignOptions { options, .. }) => Some(options),
            _ => None,
        };
        assert_eq!(
            foreign(on(ServerMode::Dummy), roundtrip(&[], None)),
            Some(OptionGroup::JackServer)
        );
        assert_eq!(
            foreign(settings(None), roundtrip(&[], Some("x:y"))),
            Some(OptionGroup::JackPorts)
        );
        let periods = StreamSettings {
            periods: 3,
            ..settings(None)
        };
        assert_eq!(
            foreign(periods, roundtrip(&[], None)),
            Some(OptionGroup::BufferPeriods)
        );
        assert_eq!(Pipewire.to_string(), "pipewire");
    }
}
