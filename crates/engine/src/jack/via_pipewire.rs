//! `--server pipewire`: JACK clients of this process on a private headless PipeWire
//! ([`PipewireServer`]), through PipeWire's own libjack.
//!
//! The `jack` crate loads `libjack.so.0` by its bare name, once, at its first call. Before
//! that call, [`load_pipewire_libjack`] loads PipeWire's libjack by its absolute path
//! (`/usr/lib/<multiarch>/pipewire-0.3/jack/libjack.so.0`) with `RTLD_NOW | RTLD_GLOBAL`:
//! glibc then resolves the bare name to the object already loaded under that soname, as
//! `pw-jack` does with `LD_LIBRARY_PATH`. One process gets one libjack: once jackd2's is
//! loaded (a JACK client was opened), PipeWire's cannot be, and that is refused
//! ([`AudioError::OtherLibjackLoaded`]) rather than measuring the wrong server.
//!
//! [`start`] then starts the server and sets the client environment
//! ([`PipewireServer::client_env`]) in this process, like the private jackd's
//! `JACK_DEFAULT_SERVER`: do it before other threads read the environment.
//!
//! On the private PipeWire, the null sink [`SINK_NODE_NAME`] is the "sound card": a
//! round trip loops from its `playback_FL` to its `monitor_FL` (one quantum of the graph;
//! a JACK self-loop is unreliable on PipeWire), and the event probe plays to its two
//! playback ports ([`sink_port`]).

use crate::audio::{AudioError, ServerInfo};
pub use crate::libjack::{libjack_candidates, load_pipewire_libjack, loaded_libjacks};
use crate::pipewire::config::SINK_NODE_NAME;
use crate::pipewire::quantum::{measure_graph, validate_quantum, ForcedQuantum, QuantumError};
use crate::pipewire::running::{force_settings, running_version, KeptQuantum, RunningPipewire};
use crate::pipewire::{PipewireRequest, PipewireServer};

/// The server name JACK clients open on a private PipeWire: its socket's name, which
/// PipeWire's libjack reaches through `PIPEWIRE_RUNTIME_DIR`.
pub const SERVER_NAME: &str = crate::pipewire::server::REMOTE_NAME;

/// The Debian package that ships PipeWire's libjack.
pub const PIPEWIRE_JACK_PACKAGE: &str = "pipewire-jack";

/// A port of the private PipeWire's null sink, as JACK clients name it
/// (`sink_port("monitor_FL")` is `audiolat-sink:monitor_FL`).
pub fn sink_port(port: &str) -> String {
    format!("{SINK_NODE_NAME}:{port}")
}

/// Starts a private PipeWire at `rate_hz` and `quantum_frames` (`None`: PipeWire's
/// defaults, 48000 Hz and 1024 frames), loads its libjack and points this process's JACK
/// clients at it, then measures the quantum its graph runs ([`measure_quantum`]; one
/// other than asked is refused). Returns the server (stopped when dropped) and what is
/// recorded of it, with the quantum asked for and granted.
pub fn start(
    rate_hz: Option<u32>,
    quantum_frames: Option<u32>,
    start_timeout: std::time::Duration,
) -> Result<(PipewireServer, ServerInfo), AudioError> {
    // Before anything else touches libjack (the logger set-up is a libjack call).
    let libjack = load_pipewire_libjack()?;
    let defaults = PipewireRequest::default();
    let quantum = quantum_frames.unwrap_or(defaults.quantum_frames);
    // A quantum the configuration cannot name (not a power of two) is forced instead,
    // and the graph's answer measured.
    let forced = !quantum.is_power_of_two();
    let configured = if forced {
        defaults.quantum_frames
    } else {
        quantum
    };
    let req = PipewireRequest {
        rate_hz: rate_hz.unwrap_or(defaults.rate_hz),
        quantum_frames: configured,
        min_quantum_frames: defaults.min_quantum_frames.min(configured),
        max_quantum_frames: defaults.max_quantum_frames.max(configured),
        start_timeout,
        ..defaults
    };
    let server = PipewireServer::start(&req)?;
    for (var, value) in server.client_env() {
        std::env::set_var(var, value);
    }
    // What the graph really runs, measured (a quantum it does not run is refused).
    let (granted, rate_granted) = if forced {
        let guard = ForcedQuantum::apply(
            server.client_env(),
            SERVER_NAME,
            quantum,
            None,
            start_timeout,
        )?;
        let granted = guard.granted();
        // Kept for the run: the setting lives and dies with this private server.
        std::mem::forget(guard);
        measure_graph(SERVER_NAME, Some(granted), start_timeout)?
    } else {
        measure_graph(SERVER_NAME, Some(quantum), start_timeout)?
    };
    if granted != quantum {
        return Err(QuantumError::NotGranted {
            asked: quantum,
            granted,
        }
        .into());
    }
    let info = server.info();
    let known = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
    let record = ServerInfo {
        name: SERVER_NAME.to_string(),
        private: true,
        command_line: Some(format!(
            "pipewire -c {} (rate {} Hz, quantum {} frames), wireplumber, dbus-daemon --session; JACK clients through {}",
            info.config_file.display(),
            info.rate_hz,
            info.quantum_frames,
            libjack.display()
        )),
        version: Some(format!(
            "PipeWire {}, WirePlumber {}",
            known(&info.pipewire_version),
            known(&info.wireplumber_version)
        )),
        quantum_asked_frames: quantum_frames,
        quantum_granted_frames: Some(granted),
        rate_asked_hz: rate_hz,
        rate_granted_hz: Some(rate_granted),
    };
    Ok((server, record))
}

/// A running PipeWire (the user's) in use: what is recorded of it, and the quantum
/// forced on it, restored when this is dropped.
pub struct OnRunning {
    /// The server.
    pub server: RunningPipewire,
    /// What is recorded of it.
    pub info: ServerInfo,
    /// The quantum forced (`None`: none was asked for).
    pub forced: Option<KeptQuantum>,
}

/// Uses the running PipeWire `server` through its JACK API: loads PipeWire's libjack,
/// points this process's JACK clients at it, forces `quantum_frames` and `rate_hz`
/// when given ([`crate::pipewire::running::force_settings`]: kept in state files until
/// restored) and measures the quantum its graph runs.
pub fn use_running(
    server: RunningPipewire,
    quantum_frames: Option<u32>,
    rate_hz: Option<u32>,
    timeout: std::time::Duration,
) -> Result<OnRunning, AudioError> {
    if let Some(q) = quantum_frames {
        validate_quantum(q)?;
    }
    let libjack = load_pipewire_libjack()?;
    for (var, value) in server.client_env() {
        std::env::set_var(var, value);
    }
    let name = server.remote.clone();
    let forced = if quantum_frames.is_some() || rate_hz.is_some() {
        Some(force_settings(
            &server,
            &name,
            quantum_frames,
            rate_hz,
            timeout,
        )?)
    } else {
        None
    };
    let (granted, rate_granted) = match &forced {
        Some(kept) => (kept.granted(), kept.granted_rate_hz()),
        None => measure_graph(&name, None, timeout)?,
    };
    let info = ServerInfo {
        name,
        private: false,
        command_line: None,
        version: Some(running_version(
            &server,
            &format!("JACK clients through {}", libjack.display()),
        )),
        quantum_asked_frames: quantum_frames,
        quantum_granted_frames: Some(granted),
        rate_asked_hz: rate_hz,
        rate_granted_hz: Some(rate_granted),
    };
    Ok(OnRunning {
        server,
        info,
        forced,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_start_with_this_architectures_multiarch_dir() {
        let first = libjack_candidates()[0].display().to_string();
        assert!(first.starts_with("/usr/lib/"), "{first}");
        assert!(first.contains("-linux-gnu"), "{first}");
        assert!(
            first.ends_with("/pipewire-0.3/jack/libjack.so.0"),
            "{first}"
        );
        assert_eq!(sink_port("monitor_FL"), "audiolat-sink:monitor_FL");
    }

    #[test]
    fn any_quantum_from_8_to_8192_is_asked_of_the_graph() {
        for asked in [8, 128, 3000, 8192] {
            assert!(validate_quantum(asked).is_ok(), "{asked}");
        }
        for refused in [0, 7, 8193] {
            assert!(validate_quantum(refused).is_err(), "{refused}");
        }
    }

    #[test]
    fn a_missing_libjack_names_the_package() {
        let e = AudioError::NoPipewireJack {
            looked: "/usr/lib/x/pipewire-0.3/jack/libjack.so.0".into(),
        };
        assert!(
            e.to_string().ends_with("install the pipewire-jack package"),
            "{e}"
        );
        assert_eq!(PIPEWIRE_JACK_PACKAGE, "pipewire-jack");
    }
}
