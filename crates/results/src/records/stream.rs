//! The audio stream an event or round-trip run measured on, as both store it: in the
//! configuration, the stream as described before the run (with the server's asked and
//! granted quantum and rate, and what an ALSA device granted); in the result, the stream
//! as it ran (its model, ports, client, how a duplex device started, the server's graph).
//!
//! Every field is optional, as in the probes' own records: a killed run's result holds
//! only the stream keys its configuration had, and runs of earlier releases lack keys.

use serde::{Deserialize, Serialize};

use super::record::Record;

/// The stream's part of an audio run's configuration.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct StreamConfigRecord {
    /// The backend's name (`jack`, `alsa`, `pipewire`, `virtual`).
    #[serde(default)]
    pub backend: Option<String>,
    /// The stream's rate, Hz.
    #[serde(default)]
    pub rate_hz: Option<u64>,
    /// The stream's period, frames.
    #[serde(default)]
    pub period_frames: Option<u64>,
    /// The playback latency the stream reports, frames.
    #[serde(default)]
    pub playback_latency_frames: Option<u64>,
    /// What an ALSA device granted (`null` on other backends).
    #[serde(default)]
    pub granted: Option<AlsaGrantedRecord>,
    /// The server behind the stream.
    #[serde(default)]
    pub server: Option<ConfiguredServerRecord>,
}

/// Read from an event or round-trip run's configuration, the stream's part alone.
impl Record for StreamConfigRecord {}

/// The server behind a stream as described before the run.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct ConfiguredServerRecord {
    /// The server's name.
    #[serde(default)]
    pub name: Option<String>,
    /// audiolat started it for the run.
    #[serde(default)]
    pub private: Option<bool>,
    /// Its command line, when known.
    #[serde(default)]
    pub command_line: Option<String>,
    /// Its version, when known.
    #[serde(default)]
    pub version: Option<String>,
    /// The quantum asked of PipeWire, frames.
    #[serde(default)]
    pub quantum_asked_frames: Option<u64>,
    /// The quantum PipeWire granted, frames.
    #[serde(default)]
    pub quantum_granted_frames: Option<u64>,
    /// The rate asked of PipeWire, Hz.
    #[serde(default)]
    pub rate_asked_hz: Option<u64>,
    /// The rate PipeWire granted, Hz.
    #[serde(default)]
    pub rate_granted_hz: Option<u64>,
}

/// What an ALSA device granted.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct AlsaGrantedRecord {
    /// Rate, Hz.
    #[serde(default)]
    pub rate_hz: Option<u64>,
    /// Period, frames.
    #[serde(default)]
    pub period_frames: Option<u64>,
    /// Buffer, frames.
    #[serde(default)]
    pub buffer_frames: Option<u64>,
    /// Sample format (ALSA's name).
    #[serde(default)]
    pub format: Option<String>,
    /// Access (`mmap`, `rw`).
    #[serde(default)]
    pub access: Option<String>,
    /// Playback channels.
    #[serde(default)]
    pub playback_channels: Option<u64>,
    /// Capture channels (`null` without capture).
    #[serde(default)]
    pub capture_channels: Option<u64>,
    /// Playback and capture were linked.
    #[serde(default)]
    pub linked: Option<bool>,
    /// Why they could not be linked.
    #[serde(default)]
    pub link_error: Option<String>,
}

/// The stream's part of an audio run's result: the stream as it ran.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct StreamRecord {
    /// How a duplex device started (`null` when not one).
    #[serde(default)]
    pub duplex_start: Option<DuplexStartRecord>,
    /// The backend's name.
    #[serde(default)]
    pub backend: Option<String>,
    /// The client's name (the device, on ALSA).
    #[serde(default)]
    pub client: Option<String>,
    /// The timing model (`pull`, `push`).
    #[serde(default)]
    pub model: Option<String>,
    /// The server behind the stream.
    #[serde(default)]
    pub server: Option<ServerRecord>,
    /// Rate, Hz.
    #[serde(default)]
    pub rate_hz: Option<u64>,
    /// Period, frames.
    #[serde(default)]
    pub period_frames: Option<u64>,
    /// The playback latency the stream reports, frames.
    #[serde(default)]
    pub playback_latency_frames: Option<u64>,
    /// The capture latency the stream reports, frames (`null`: not reported).
    #[serde(default)]
    pub capture_latency_frames: Option<u64>,
    /// The playback ports.
    #[serde(default)]
    pub playback_ports: Option<Vec<String>>,
    /// The capture port (`null` without capture).
    #[serde(default)]
    pub capture_port: Option<String>,
}

/// Read from an event or round-trip run's result, the stream's part alone.
impl Record for StreamRecord {}

/// The server behind a stream as it ran.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct ServerRecord {
    /// The server's name.
    #[serde(default)]
    pub name: Option<String>,
    /// audiolat started it for the run.
    #[serde(default)]
    pub private: Option<bool>,
    /// Its command line, when known.
    #[serde(default)]
    pub command_line: Option<String>,
    /// Its version, when known.
    #[serde(default)]
    pub version: Option<String>,
    /// The PipeWire graph around the run (engine's `GraphRecorder`), stored only when
    /// recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph: Option<super::graph::GraphRecord>,
}

/// How a duplex device's two directions started.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Default)]
pub struct DuplexStartRecord {
    /// The directions were linked.
    #[serde(default)]
    pub linked: Option<bool>,
    /// Capture behind playback at the start, frames (`null`: not measured).
    #[serde(default)]
    pub skew_frames: Option<i64>,
    /// Start attempts.
    #[serde(default)]
    pub attempts: Option<u64>,
    /// Starts made.
    #[serde(default)]
    pub starts: Option<u64>,
    /// The skew held steady.
    #[serde(default)]
    pub steady_offset: Option<bool>,
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::{json, Value};

    /// A JACK stream's result part as `probes` writes it.
    pub fn jack_stream() -> Value {
        json!({"duplex_start": null, "backend": "jack", "client": "audiolat",
               "model": "pull",
               "server": {"name": "audiolat-1", "private": true,
                          "command_line": "jackd -d dummy", "version": "1.9.22"},
               "rate_hz": 48000, "period_frames": 128, "playback_latency_frames": 256,
               "capture_latency_frames": null, "playback_ports": ["system:playback_1"],
               "capture_port": null})
    }

    /// An ALSA duplex stream's result part, with the server's graph.
    pub fn alsa_stream() -> Value {
        json!({"duplex_start": {"linked": false, "skew_frames": -3, "attempts": 2,
                                "starts": 2, "steady_offset": true},
               "backend": "alsa", "client": "hw:0", "model": "push",
               "server": {"name": "hw:0", "private": false, "command_line": null,
                          "version": null,
                          "graph": {"driver": "audiolat-sink",
                                    "force_quantum": {"before": 0, "after": 64},
                                    "force_rate": {"before": null, "after": null},
                                    "profiler": {"before": null, "after": null},
                                    "problems": ["no profiler"]}},
               "rate_hz": 44100, "period_frames": 64, "playback_latency_frames": 128,
               "capture_latency_frames": 64, "playback_ports": ["hw:0"],
               "capture_port": "hw:0"})
    }

    /// A stream's configuration part as `probes` writes it.
    pub fn configured(granted: bool) -> Value {
        json!({"backend": if granted { "alsa" } else { "jack" }, "rate_hz": 48000,
               "period_frames": 128, "playback_latency_frames": 256,
               "granted": if granted {
                   json!({"rate_hz": 48000, "period_frames": 128, "buffer_frames": 256,
                          "format": "S32_LE", "access": "mmap", "playback_channels": 2,
                          "capture_channels": null, "linked": false, "link_error": "busy"})
               } else { Value::Null },
               "server": {"name": "n", "private": true, "command_line": null,
                          "version": null, "quantum_asked_frames": 128,
                          "quantum_granted_frames": 128, "rate_asked_hz": null,
                          "rate_granted_hz": null}})
    }

    /// `a`'s keys with `b`'s.
    pub fn merged(mut a: Value, b: Value) -> Value {
        if let (Some(a), Value::Object(b)) = (a.as_object_mut(), b) {
            a.extend(b);
        }
        a
    }
}
