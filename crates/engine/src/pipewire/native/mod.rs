//! The native PipeWire backend (`--backend pipewire`, pull model): `pw_stream`s through
//! the `pipewire` crate, timed by the graph itself.
//!
//! # The streams
//!
//! [`NativeStream`](stream::NativeStream) (feature `pipewire-native`) connects a playback
//! stream and, for a round trip, a capture stream on the *monitor* of the same sink
//! (`stream.capture.sink=true`), both F32 mono at the graph's rate with
//! `AUTOCONNECT|MAP_BUFFERS|RT_PROCESS`, their nodes named `audiolat` and
//! `audiolat-capture` (what the profiler and pw-top show). On the private PipeWire (`--server pipewire`)
//! both target its null sink [`SINK_NODE_NAME`](crate::pipewire::config::SINK_NODE_NAME);
//! on the user's own PipeWire (`--server external`, the socket `pipewire-0` in
//! `$PIPEWIRE_RUNTIME_DIR` or `$XDG_RUNTIME_DIR`) they take its default sink.
//!
//! The context loads `client-rt.conf`, whose `module-rt` makes the stream's data thread
//! SCHED_FIFO (88 as root, PipeWire's default); the thread records its policy in its
//! first cycle, as every backend's audio thread does. The main loop runs on a non-RT
//! thread the stream owns; stopping quits it and disconnects the streams there.
//!
//! # Timing
//!
//! Both process callbacks run on the data thread, once per graph cycle. The capture
//! callback copies its chunk into a pre-sized buffer with the cycle's `now`; the playback
//! callback is the engine's cycle ([`CycleRunner`](crate::stream::CycleRunner)): its
//! `pw_stream_get_time` gives `now` (the cycle's CLOCK_MONOTONIC start, the same for both
//! streams of one cycle), `rate` and the stream's own `ticks` (the cycle's first frame on
//! the stream's frame clock); the frames are the buffer's `requested` (the quantum). The
//! input is the capture chunk of the same `now` and quantum, else silence (counted): the
//! capture's first cycles may run before the graph settles. A frame `k` of a cycle reaches
//! the sink at `now + k / rate + delay`, `delay` being what the stream reports
//! ([`StreamInfo::playback_latency_frames`](crate::audio::StreamInfo): 0 on a null sink).
//! The capture stream's own `delay`, read in its cycles, is the capture latency
//! ([`StreamInfo::capture_latency_frames`](crate::audio::StreamInfo): 0 on a null sink's
//! monitor, as its JACK port reports; absent when no capture cycle reported one).
//!
//! A quantum change under a running stream ends the stream (the processor was prepared
//! for the old one); so does a disconnection, an error of the server, or a stall.

use crate::audio::{AudioError, ServerInfo};
use crate::jack::server::ServerMode;
pub use crate::pipewire::error::{NativeError, BUILD_PACKAGES};
use crate::setup::{ServerChoice, Setup, StreamKind, SweepStep};
use std::path::PathBuf;

pub(crate) mod config;
#[cfg(feature = "pipewire-native")]
pub mod stream;

pub use config::NativeConfig;

/// The rate the streams ask for unless told (PipeWire's default graph rate).
pub const DEFAULT_RATE_HZ: u32 = crate::pipewire::server::DEFAULT_RATE_HZ;

/// The native backend's streams.
#[derive(Clone, Debug)]
pub struct NativeSpec {
    /// Which PipeWire: `Pipewire` (a private one), `External` (the user's), `Auto` (the
    /// user's when its socket exists, else a private one).
    pub server: ServerChoice,
    /// The rate to ask for (`None`: a private server's, or [`DEFAULT_RATE_HZ`]).
    pub rate_hz: Option<u32>,
    /// A capture stream on the sink's monitor (the round trip).
    pub capture: bool,
}

/// The socket of the user's PipeWire: `pipewire-0` (or `$PIPEWIRE_REMOTE`) in
/// `$PIPEWIRE_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR`.
pub fn user_socket() -> Option<PathBuf> {
    let dir =
        std::env::var_os("PIPEWIRE_RUNTIME_DIR").or_else(|| std::env::var_os("XDG_RUNTIME_DIR"))?;
    let name = std::env::var_os("PIPEWIRE_REMOTE")
        .unwrap_or_else(|| crate::pipewire::server::REMOTE_NAME.into());
    Some(PathBuf::from(dir).join(name))
}

impl NativeSpec {
    /// Whether the streams run on a private PipeWire (asked for, or `auto` with no
    /// PipeWire of the user's).
    pub fn private(&self) -> bool {
        match self.server.mode {
            ServerMode::Pipewire => true,
            ServerMode::Auto => !user_socket().is_some_and(|s| s.exists()),
            _ => false,
        }
    }

    /// Checks a sweep's periods: quanta from 8 to 8192 frames are asked of the graph
    /// (whether it runs one is measured when it is forced).
    pub fn check_periods(&self, periods: &[Option<u32>]) -> Result<(), AudioError> {
        for p in periods.iter().flatten() {
            crate::pipewire::quantum::validate_quantum(*p)?;
        }
        Ok(())
    }
}

/// The set-up for one period (see [`crate::backend::open`]): a private PipeWire started
/// as `--server pipewire` starts it for JACK clients (its quantum set in its
/// configuration and measured), or the user's (a period's quantum forced on it as
/// `--server auto` forces it for JACK clients: [`crate::pipewire::running::force_quantum`],
/// kept in a state file, measured by a JACK client, restored after the period).
pub(crate) fn open(
    spec: &NativeSpec,
    period: Option<u32>,
    step: SweepStep,
) -> Result<Setup, AudioError> {
    if !cfg!(feature = "pipewire-native") {
        return Err(NativeError::NotBuilt.into());
    }
    let sink = crate::pipewire::config::SINK_NODE_NAME;
    if spec.private() {
        let choice = ServerChoice {
            mode: ServerMode::Pipewire,
            ..spec.server.clone()
        };
        let server = choice.connect(step, spec.rate_hz, period)?;
        let info = native_info(&server);
        let config = NativeConfig {
            target: Some(sink.to_string()),
            capture: spec.capture,
            rate_hz: spec.rate_hz.unwrap_or(DEFAULT_RATE_HZ),
            server: info,
            record_capacity: 8192,
        };
        return Ok(Setup {
            server: Some(server),
            _loop_client: None,
            kind: StreamKind::Pipewire(config),
            loop_description: format!("PipeWire null sink {sink} -> its monitor (native streams)"),
        });
    }
    let socket = user_socket().filter(|s| s.exists()).ok_or_else(|| {
        AudioError::from(NativeError::NoUserPipewire(
            user_socket().map_or("$XDG_RUNTIME_DIR unset".into(), |s| s.display().to_string()),
        ))
    })?;
    // The user's default sink, and only a null sink: never a sound card unasked.
    let running = crate::pipewire::running::detect().ok_or_else(|| {
        AudioError::from(NativeError::NoUserPipewire(socket.display().to_string()))
    })?;
    let sink = running.null_default_sink()?;
    let loop_description = format!(
        "the default sink `{}` (a null sink) -> its monitor (native streams)",
        sink.node_name
    );
    if let Some(p) = period {
        let choice = ServerChoice {
            mode: ServerMode::External,
            ..spec.server.clone()
        };
        let server = choice.connect(step, spec.rate_hz, Some(p))?;
        if server.running_pipewire().is_none() {
            return Err(NativeError::QuantumOnExternal(p).into());
        }
        let config = NativeConfig {
            target: Some(sink.node_name.clone()),
            capture: spec.capture,
            rate_hz: spec.rate_hz.unwrap_or(DEFAULT_RATE_HZ),
            server: native_info(&server),
            record_capacity: 8192,
        };
        return Ok(Setup {
            server: Some(server),
            _loop_client: None,
            kind: StreamKind::Pipewire(config),
            loop_description,
        });
    }
    // Recorded as the JACK API path records this PipeWire (the socket's name, the
    // versions of PipeWire and WirePlumber, where it runs), but for how audiolat reaches
    // it; the quantum granted is the streams' own, measured at open.
    let config = NativeConfig {
        target: Some(sink.node_name.clone()),
        capture: spec.capture,
        rate_hz: spec.rate_hz.unwrap_or(DEFAULT_RATE_HZ),
        server: ServerInfo {
            name: running.remote.clone(),
            private: false,
            command_line: None,
            version: Some(crate::pipewire::running::running_version(
                &running,
                NATIVE_CLIENTS,
            )),
            quantum_asked_frames: None,
            quantum_granted_frames: None,
            rate_asked_hz: None,
            rate_granted_hz: None,
        },
        record_capacity: 8192,
    };
    Ok(Setup {
        server: None,
        _loop_client: None,
        kind: StreamKind::Pipewire(config),
        loop_description,
    })
}

/// How native streams reach a PipeWire, in its recorded version text.
const NATIVE_CLIENTS: &str = "native streams";

/// What is recorded of a PipeWire reached through its JACK API for native streams: the
/// streams are native; PipeWire's libjack only measured the quantum granted.
fn native_info(server: &crate::jack::server::JackServer) -> ServerInfo {
    let mut info = server.info().clone();
    let through = "JACK clients through ";
    for text in [info.command_line.as_mut(), info.version.as_mut()]
        .into_iter()
        .flatten()
    {
        if let Some(at) = text.find(through) {
            let (head, tail) = text.split_at(at);
            let libjack = tail[through.len()..].trim_end_matches(')');
            let closing = if tail.ends_with(')') { ")" } else { "" };
            *text = format!(
                "{head}{NATIVE_CLIENTS}; the quantum granted measured by a JACK client through {libjack}{closing}"
            );
        }
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_fix() {
        let e = NativeError::NotBuilt.to_string();
        for needed in [
            "pipewire-native",
            "libpipewire-0.3-dev",
            "libspa-0.2-dev",
            "libclang-dev",
        ] {
            assert!(e.contains(needed), "{e}");
        }
        let e = NativeError::QuantumOnExternal(128).to_string();
        assert!(
            e.contains("128 frames") && e.contains("stop that jackd"),
            "{e}"
        );
    }

    #[test]
    fn a_private_server_asked_for_is_private_and_either_takes_quanta_from_8_to_8192() {
        let spec = |mode| NativeSpec {
            server: ServerChoice {
                mode,
                name: None,
                jackd: None,
            },
            rate_hz: None,
            capture: true,
        };
        assert!(spec(ServerMode::Pipewire).private());
        assert!(!spec(ServerMode::External).private());
        assert!(spec(ServerMode::Pipewire)
            .check_periods(&[Some(128), None])
            .is_ok());
        // Not a power of two: asked of the graph, which rounds it down (measured).
        assert!(spec(ServerMode::Pipewire)
            .check_periods(&[Some(100)])
            .is_ok());
        assert!(spec(ServerMode::Pipewire)
            .check_periods(&[Some(7)])
            .is_err());
        assert!(spec(ServerMode::External)
            .check_periods(&[Some(128), None])
            .is_ok());
        assert!(spec(ServerMode::External)
            .check_periods(&[Some(9000)])
            .is_err());
    }
}
