//! The JACK backend's set-up: which server, and which ports a period's streams connect.

use crate::audio::{AudioError, PortRole};
use crate::jack::client::{check_ports, JackConfig};
use crate::jack::loop_client::JackLoop;
use crate::jack::server::JackServer;
use crate::jack::via_pipewire::sink_port;
use crate::setup::{ServerChoice, Setup, StreamKind, SweepStep};

/// A JACK client's streams.
#[derive(Clone, Debug)]
pub struct JackSpec {
    /// The server.
    pub server: ServerChoice,
    /// The rate a running server must run at, or a private one's (`None`: the server's,
    /// or [`DEFAULT_RATE_HZ`](crate::jack::server::DEFAULT_RATE_HZ) for a private one).
    pub rate_hz: Option<u32>,
    /// What the streams connect to.
    pub ports: JackPorts,
}

/// What a JACK stream connects to.
#[derive(Clone, Debug)]
pub enum JackPorts {
    /// Playback (the event probe): these ports (none: the first two physical playback
    /// ports; on a private PipeWire, its null sink's), with an optional loopback capture
    /// port (on a private PipeWire, `audiolat-sink:monitor_FL` hears the output) and MIDI
    /// input.
    Playback(JackConfig),
    /// A round trip through a cable: out on `playback` (empty: the first two physical
    /// playback ports), back in on `capture`.
    Cable {
        /// Where the output goes.
        playback: Vec<String>,
        /// Where the loop comes back in.
        capture: String,
    },
    /// A round trip through audiolat's software loop client in the server (on a private
    /// PipeWire: through its null sink, `playback_FL` to `monitor_FL`).
    SoftwareLoop,
}

/// The set-up for one period (see [`crate::backend::open`]).
pub(crate) fn open(
    spec: &JackSpec,
    period: Option<u32>,
    step: SweepStep,
) -> Result<Setup, AudioError> {
    let server = spec.server.connect(step, spec.rate_hz, period)?;
    let on_pipewire = server.pipewire().is_some() || server.running_pipewire().is_some();
    let (config, loop_client, description) = match &spec.ports {
        JackPorts::Playback(config) if on_pipewire && config.playback.is_empty() => {
            // The null sink is the PipeWire's card: play to both its channels.
            let (sink, _) = pipewire_sink(&server)?;
            let config = JackConfig {
                playback: vec![format!("{sink}:playback_FL"), format!("{sink}:playback_FR")],
                ..config.clone()
            };
            check_ports(server.info(), &config, PortRole::Loopback)?;
            (config, None, String::new())
        }
        JackPorts::Playback(config) => {
            check_ports(server.info(), config, PortRole::Loopback)?;
            (config.clone(), None, String::new())
        }
        JackPorts::Cable { playback, capture } => {
            let config = JackConfig {
                playback: playback.clone(),
                capture: Some(capture.clone()),
                ..Default::default()
            };
            check_ports(server.info(), &config, PortRole::Capture)?;
            let description = format!(
                "cable {} -> {capture}",
                if playback.is_empty() {
                    "(first two physical playback ports)".to_string()
                } else {
                    playback.join(",")
                }
            );
            (config, None, description)
        }
        JackPorts::SoftwareLoop if on_pipewire => {
            // A JACK self-loop is unreliable on PipeWire: loop through the null sink.
            let (sink, which) = pipewire_sink(&server)?;
            let (playback, capture) = (format!("{sink}:playback_FL"), format!("{sink}:monitor_FL"));
            let description = format!("{which} {playback} -> {capture}");
            let config = JackConfig {
                playback: vec![playback],
                capture: Some(capture),
                ..Default::default()
            };
            check_ports(server.info(), &config, PortRole::Capture)?;
            (config, None, description)
        }
        JackPorts::SoftwareLoop => {
            let lp = JackLoop::start(server.name(), "audiolat-loop", 0)?;
            let config = JackConfig {
                playback: vec![lp.input_port()],
                capture: Some(lp.output_port()),
                ..Default::default()
            };
            let description = "software loop in the JACK server (audiolat-loop)".to_string();
            (config, Some(lp), description)
        }
    };
    Ok(Setup {
        server: Some(server),
        _loop_client: loop_client,
        kind: StreamKind::Jack(config),
        loop_description: description,
    })
}

/// The JACK client name of the PipeWire sink audiolat plays into when no ports are named,
/// and what it is, for people: a private PipeWire's null sink, or a running PipeWire's
/// default sink when it is a null sink. A real device is refused: audiolat never plays its
/// test signal into a sound card it was not told to use, and a round trip through a
/// speaker and a microphone is not a loop.
fn pipewire_sink(server: &JackServer) -> Result<(String, String), AudioError> {
    let Some(running) = server.running_pipewire() else {
        return Ok((
            sink_port("").trim_end_matches(':').to_string(),
            "PipeWire null sink".into(),
        ));
    };
    let sink = running.null_default_sink()?;
    Ok((
        sink.description.clone(),
        format!(
            "the default sink `{}` (a null sink) of the running PipeWire at {}:",
            sink.node_name,
            running.socket().display()
        ),
    ))
}
