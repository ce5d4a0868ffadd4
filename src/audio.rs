//! The audio flags as a backend spec: [`spec`] is the one place the binary turns what
//! was typed (`--backend`, `--server`, `--device`, the ports, the cable) into an
//! [`engine::backend::BackendSpec`]; `engine::backend::open` then chooses the backend and
//! starts its server. Options that belong to another backend are refused here, with the
//! flags they were typed as.

use engine::backend::{BackendSpec, ServerChoice};
use engine::jack_backend::JackConfig;

use crate::cli::{AudioArgs, BackendName, EventArgs, RoundtripArgs, UsageError};
use engine::alsa::setup::AlsaSpec;
use engine::jack::setup::{JackPorts, JackSpec};
use engine::jack_server::ServerMode;
use engine::virtual_card::setup::{Cable, VirtualSpec};

/// What the streams are for, with the options that only some backends take.
pub enum Purpose<'a> {
    /// The event probe: playback (JACK ports in `jack`).
    Event {
        /// Ports, loopback and MIDI for JACK.
        jack: JackConfig,
        /// ALSA: the capture device that hears the output (`--loopback`).
        loopback_device: Option<&'a String>,
    },
    /// The round trip: a loop.
    Roundtrip {
        /// JACK: ports the output goes to.
        playback: &'a [String],
        /// JACK: the port the loop comes back on.
        capture: Option<&'a String>,
        /// ALSA: the capture device.
        capture_device: Option<&'a String>,
        /// Virtual: the cable (delay in frames, gain), `None`: no cable.
        cable: Option<(f64, f32)>,
        /// Virtual options were given (any of --cable-delay, --cable-gain, --no-cable).
        cable_given: bool,
    },
}

/// The JACK ports of an event run: `--playback`, `--loopback` (a JACK port unless the
/// backend is ALSA, where it names a capture device) and the MIDI port.
pub fn event_jack(a: &EventArgs) -> JackConfig {
    JackConfig {
        playback: a.playback.clone(),
        capture: a
            .loopback
            .clone()
            .filter(|_| a.audio.backend != BackendName::Alsa),
        midi: (a.trigger == probes::event::TriggerSource::Midi)
            .then(|| a.midi_port.clone().unwrap_or_default()),
        ..Default::default()
    }
}

/// What an event run's streams are for.
pub fn event_purpose(a: &EventArgs) -> Purpose<'_> {
    Purpose::Event {
        jack: event_jack(a),
        loopback_device: a
            .loopback
            .as_ref()
            .filter(|_| a.audio.backend == BackendName::Alsa),
    }
}

/// What a round trip's streams are for.
pub fn roundtrip_purpose(a: &RoundtripArgs) -> Purpose<'_> {
    Purpose::Roundtrip {
        playback: &a.playback,
        capture: a.capture.as_ref(),
        capture_device: a.capture_device.as_ref(),
        cable: (!a.no_cable).then_some((a.cable_delay, a.cable_gain)),
        cable_given: a.no_cable || a.cable_delay != 0.0 || a.cable_gain != 1.0,
    }
}

/// The periods of a sweep (`None`: the backend's default).
pub fn periods(audio: &AudioArgs) -> Vec<Option<u32>> {
    match &audio.period {
        Some(list) => list.0.iter().copied().map(Some).collect(),
        None => vec![None],
    }
}

fn usage(m: impl Into<String>) -> anyhow::Error {
    UsageError(m.into()).into()
}

/// The audio flags as a spec, refusing options that belong to another backend and a
/// rate out of range. No side effects (a plan checks every cell with it before the first
/// runs).
pub fn spec(audio: &AudioArgs, purpose: &Purpose<'_>) -> anyhow::Result<BackendSpec> {
    refuse_foreign_options(audio, purpose)?;
    if let Some(r) = audio.rate {
        if !(8_000..=384_000).contains(&r) {
            return Err(usage(format!(
                "--rate {r}: use a sample rate from 8000 to 384000 Hz"
            )));
        }
    }
    let server = ServerChoice {
        mode: audio.server,
        name: audio.server_name.clone(),
        jackd: load::find_in_path(load::JACKD.name),
    };
    Ok(match audio.backend {
        BackendName::Jack => BackendSpec::Jack(JackSpec {
            server,
            rate_hz: audio.rate,
            ports: match purpose {
                Purpose::Event { jack, .. } => JackPorts::Playback(jack.clone()),
                Purpose::Roundtrip {
                    playback,
                    capture: Some(capture),
                    ..
                } => JackPorts::Cable {
                    playback: playback.to_vec(),
                    capture: (*capture).clone(),
                },
                Purpose::Roundtrip { playback, .. } if !playback.is_empty() => {
                    return Err(usage(
                        "--playback needs --capture: name the port where the cable comes back in (or leave both out for audiolat's software loop)",
                    ))
                }
                Purpose::Roundtrip { .. } => JackPorts::SoftwareLoop,
            },
        }),
        BackendName::Alsa => BackendSpec::Alsa(AlsaSpec {
            device: audio.device.clone(),
            capture_device: match purpose {
                Purpose::Event {
                    loopback_device, ..
                } => loopback_device.cloned(),
                Purpose::Roundtrip { capture_device, .. } => capture_device.cloned(),
            },
            duplex: matches!(purpose, Purpose::Roundtrip { .. }),
            rate_hz: audio.rate,
            periods: audio.periods,
            format: audio.format,
            server,
        }),
        BackendName::Virtual => BackendSpec::Virtual(VirtualSpec {
            rate_hz: audio.rate,
            periods: audio.periods,
            cable: match purpose {
                Purpose::Roundtrip { cable, .. } => cable.map(|(delay_frames, gain)| Cable {
                    delay_frames,
                    gain,
                }),
                Purpose::Event { .. } => None,
            },
        }),
    })
}

/// The spec of a sweep whose periods are `periods`: [`spec`], then the periods the
/// backend's servers would refuse.
pub fn sweep_spec(
    audio: &AudioArgs,
    purpose: &Purpose<'_>,
    periods: &[Option<u32>],
) -> anyhow::Result<BackendSpec> {
    let spec = spec(audio, purpose)?;
    spec.check_periods(periods)
        .map_err(|e| usage(e.to_string()))?;
    Ok(spec)
}

/// Options typed for another backend than `--backend`.
fn refuse_foreign_options(audio: &AudioArgs, purpose: &Purpose<'_>) -> anyhow::Result<()> {
    let jack_ports_given = match purpose {
        Purpose::Event { jack, .. } => !jack.playback.is_empty() || jack.capture.is_some(),
        Purpose::Roundtrip {
            playback, capture, ..
        } => !playback.is_empty() || capture.is_some(),
    };
    let cable_given = matches!(
        purpose,
        Purpose::Roundtrip {
            cable_given: true,
            ..
        }
    );
    let capture_device_given = matches!(
        purpose,
        Purpose::Roundtrip {
            capture_device: Some(_),
            ..
        }
    );
    let backend = audio.backend;
    if backend != BackendName::Jack && jack_ports_given {
        return Err(usage(format!(
            "--playback, --capture, --loopback and --midi-port name JACK ports: use them with --backend jack (with --backend {backend}, {})",
            if backend == BackendName::Alsa { "name the device with --device" } else { "the card has one loop: --cable-delay, --cable-gain, --no-cable" }
        )));
    }
    if backend != BackendName::Virtual && cable_given {
        return Err(usage(
            "--cable-delay, --cable-gain and --no-cable set the virtual card: use them with --backend virtual",
        ));
    }
    if backend != BackendName::Alsa
        && (audio.device.is_some() || audio.format.is_some() || capture_device_given)
    {
        return Err(usage(
            "--device, --capture-device and --format name an ALSA device: use them with --backend alsa",
        ));
    }
    if backend == BackendName::Jack && audio.periods != 2 {
        return Err(usage(
            "--periods sets an ALSA or virtual buffer: a JACK server's buffer is its own (the playback latency its ports report)",
        ));
    }
    if backend == BackendName::Virtual
        && (audio.server != ServerMode::Auto || audio.server_name.is_some())
    {
        return Err(usage(
            "--server and --server-name choose a JACK server: the virtual card needs none (use --backend jack or alsa)",
        ));
    }
    Ok(())
}
