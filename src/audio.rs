//! Opening the audio streams of a sweep: one set-up per period (a JACK server, a loop
//! client, an ALSA configuration, a virtual card), and a fresh stream for every run from
//! it. Everything a set-up can refuse (a bad device, a period the device or server will
//! not run, a port that does not exist) is refused when it is made, as a usage error.

use engine::alsa_backend::{AlsaConfig, AlsaStream};
use engine::audio::{AudioError, Backend};
use engine::jack_backend::{JackConfig, JackStream};
use engine::jack_loop::JackLoop;
use engine::jack_server::{JackServer, ServerMode};
use engine::virtual_backend::{VirtualConfig, VirtualStream};
use serde_json::Value;

use crate::cli::{AudioArgs, BackendName, UsageError};

/// What the streams are for, with the options that only some backends take.
pub enum Purpose<'a> {
    /// The event probe: playback (JACK ports in `jack`).
    Event {
        /// Ports, loopback and MIDI for JACK.
        jack: &'a JackConfig,
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

/// How a period's streams are opened.
pub enum StreamKind {
    /// A JACK client with these ports.
    Jack(JackConfig),
    /// An ALSA device.
    Alsa(AlsaConfig),
    /// The virtual card.
    Virtual(VirtualConfig),
}

/// One period's set-up, kept alive while its runs go.
pub struct Setup {
    /// The JACK server, when one is used (JACK, or ALSA's jack PCM).
    pub server: Option<JackServer>,
    /// audiolat's software loop client, when the loop is audiolat's own: held here so it
    /// runs as long as the set-up (it closes when dropped).
    #[allow(dead_code)]
    pub loop_client: Option<JackLoop>,
    /// How each stream is opened.
    pub kind: StreamKind,
    /// How the loop is closed, for people (round trip).
    pub loop_description: String,
}

impl Setup {
    /// A fresh stream, and what an ALSA device granted (as JSON).
    pub fn open(&self) -> Result<(Box<dyn Backend>, Option<Value>), AudioError> {
        match &self.kind {
            StreamKind::Jack(config) => {
                let server = self.server.as_ref().expect("a JACK set-up has its server");
                Ok((
                    Box::new(JackStream::open(server.info(), config.clone())?),
                    None,
                ))
            }
            StreamKind::Alsa(config) => {
                let stream = AlsaStream::open(config.clone())?;
                let granted = serde_json::from_str(&stream.granted().to_json_string()).ok();
                Ok((Box::new(stream), granted))
            }
            StreamKind::Virtual(config) => {
                Ok((Box::new(VirtualStream::open(config.clone())?), None))
            }
        }
    }

    /// The JACK server whose exit ends a run.
    pub fn server_mut(&mut self) -> Option<&mut JackServer> {
        self.server.as_mut()
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

/// A machine with a sound card has a first line in /proc/asound/cards that is not
/// "--- no soundcards ---".
pub fn has_sound_card() -> bool {
    std::fs::read_to_string("/proc/asound/cards")
        .map(|t| {
            t.lines()
                .any(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        })
        .unwrap_or(false)
}

fn jack_server(
    audio: &AudioArgs,
    first: bool,
    rate: Option<u32>,
    period: Option<u32>,
) -> anyhow::Result<JackServer> {
    let mode = if first {
        audio.server
    } else {
        ServerMode::Dummy
    };
    let req = engine::jack_server::ServerRequest {
        mode,
        name: audio.server_name.clone(),
        rate_hz: rate,
        period_frames: period,
        jackd: load::find_in_path(load::JACKD.name),
        start_timeout: std::time::Duration::from_secs(10),
    };
    req.validate().map_err(|e| usage(e.to_string()))?;
    JackServer::connect(&req).map_err(|e| usage(e.to_string()))
}

/// The set-up for one period of a sweep. `first`: the sweep's first period (the server is
/// the one `--server` says; later periods each start a private one).
/// Whether a JACK server serves these streams: the JACK backend, or ALSA's jack PCM
/// (the `jack` and `loop` devices, and the default device when there is no sound card).
pub fn uses_jack_server(audio: &AudioArgs, roundtrip: bool) -> bool {
    match audio.backend {
        BackendName::Jack => true,
        BackendName::Alsa => {
            let device = alsa_device(audio, roundtrip);
            device == "jack" || device == "loop"
        }
        BackendName::Virtual => false,
    }
}

/// The ALSA device: `--device`, else `default` when there is a sound card, else the
/// jack PCM (`loop` for a round trip: the jack PCM through audiolat's software loop).
fn alsa_device(audio: &AudioArgs, roundtrip: bool) -> String {
    audio.device.clone().unwrap_or_else(|| {
        if has_sound_card() {
            "default".into()
        } else if roundtrip {
            "loop".into()
        } else {
            "jack".into()
        }
    })
}

/// The checks a set-up makes before it starts anything: options that belong to another
/// backend, and periods a private server would refuse. No side effects (a plan checks
/// every cell with it before the first runs).
pub fn check_options(audio: &AudioArgs, purpose: &Purpose<'_>) -> anyhow::Result<()> {
    // Options that belong to another backend.
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
    let roundtrip = matches!(purpose, Purpose::Roundtrip { .. });
    if uses_jack_server(audio, roundtrip) && audio.server == ServerMode::Dummy {
        // A private server's period; ALSA's jack PCM runs the server at its own period.
        let default = if backend == BackendName::Alsa {
            256
        } else {
            128
        };
        for p in periods(audio) {
            engine::jack_server::validate_period(p.unwrap_or(default))
                .map_err(|e| usage(e.to_string()))?;
        }
    }
    if let Some(r) = audio.rate {
        if !(8_000..=384_000).contains(&r) {
            return Err(usage(format!(
                "--rate {r}: use a sample rate from 8000 to 384000 Hz"
            )));
        }
    }
    Ok(())
}

pub fn setup(
    audio: &AudioArgs,
    period: Option<u32>,
    first: bool,
    purpose: &Purpose<'_>,
) -> anyhow::Result<Setup> {
    check_options(audio, purpose)?;
    let backend = audio.backend;
    match backend {
        BackendName::Jack => {
            let server = jack_server(audio, first, audio.rate, period)?;
            match purpose {
                Purpose::Event { jack, .. } => {
                    engine::jack_backend::check_ports(server.info(), jack, "--loopback")
                        .map_err(|e| usage(e.to_string()))?;
                    Ok(Setup {
                        server: Some(server),
                        loop_client: None,
                        kind: StreamKind::Jack((*jack).clone()),
                        loop_description: String::new(),
                    })
                }
                Purpose::Roundtrip {
                    playback, capture, ..
                } => match capture {
                    Some(capture) => {
                        let config = JackConfig {
                            playback: playback.to_vec(),
                            capture: Some((*capture).clone()),
                            ..Default::default()
                        };
                        engine::jack_backend::check_ports(server.info(), &config, "--capture")
                            .map_err(|e| usage(e.to_string()))?;
                        let description = format!(
                            "cable {} -> {capture}",
                            if playback.is_empty() {
                                "(first two physical playback ports)".to_string()
                            } else {
                                playback.join(",")
                            }
                        );
                        Ok(Setup {
                            server: Some(server),
                            loop_client: None,
                            kind: StreamKind::Jack(config),
                            loop_description: description,
                        })
                    }
                    None if !playback.is_empty() => Err(usage(
                        "--playback needs --capture: name the port where the cable comes back in (or leave both out for audiolat's software loop)",
                    )),
                    None => {
                        let lp = JackLoop::start(server.name(), "audiolat-loop", 0)
                            .map_err(|e| usage(e.to_string()))?;
                        let config = JackConfig {
                            playback: vec![lp.input_port()],
                            capture: Some(lp.output_port()),
                            ..Default::default()
                        };
                        Ok(Setup {
                            server: Some(server),
                            loop_client: Some(lp),
                            kind: StreamKind::Jack(config),
                            loop_description: "software loop in the JACK server (audiolat-loop)"
                                .into(),
                        })
                    }
                },
            }
        }
        BackendName::Alsa => {
            let device = alsa_device(audio, matches!(purpose, Purpose::Roundtrip { .. }));
            let rate = audio.rate.unwrap_or(48_000);
            let period = period.unwrap_or(256);
            let mut config = AlsaConfig {
                device: device.clone(),
                capture_device: None,
                sample_rate_hz: rate,
                period_frames: period,
                periods: audio.periods,
                format: audio.format,
                ..AlsaConfig::default()
            };
            let mut server = None;
            let mut loop_client = None;
            let mut description = format!("ALSA device {device}");
            if device == "jack" || device == "loop" {
                // alsa-lib's jack PCM plays into a JACK server: ours, unless one runs.
                let s = jack_server(audio, first, Some(rate), Some(period))?;
                config.server = Some(s.info().clone());
                if device == "loop" {
                    let lp = JackLoop::start(s.name(), "audiolat-loop", 0)
                        .map_err(|e| usage(e.to_string()))?;
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
            match purpose {
                Purpose::Roundtrip { capture_device, .. } => {
                    config.capture_device = Some(
                        capture_device
                            .cloned()
                            .unwrap_or_else(|| config.device.clone()),
                    );
                }
                Purpose::Event {
                    loopback_device, ..
                } => config.capture_device = loopback_device.cloned(),
            }
            // Open once now: a device or period the device refuses is refused here.
            drop(AlsaStream::open(config.clone()).map_err(|e| usage(e.to_string()))?);
            Ok(Setup {
                server,
                loop_client,
                kind: StreamKind::Alsa(config),
                loop_description: description,
            })
        }
        BackendName::Virtual => {
            let cable = match purpose {
                Purpose::Roundtrip { cable, .. } => *cable,
                Purpose::Event { .. } => None,
            };
            let config = VirtualConfig {
                sample_rate_hz: audio.rate.unwrap_or(48_000),
                period_frames: period.unwrap_or(256),
                periods: audio.periods,
                loop_delay_frames: cable.map(|c| c.0),
                loop_gain: cable.map_or(1.0, |c| c.1),
                ..VirtualConfig::default()
            };
            config.validate().map_err(|e| usage(e.to_string()))?;
            let description = match cable {
                Some((d, g)) => format!("virtual cable of {d} frames, gain {g}"),
                None => "no cable".into(),
            };
            Ok(Setup {
                server: None,
                loop_client: None,
                kind: StreamKind::Virtual(config),
                loop_description: description,
            })
        }
    }
}
