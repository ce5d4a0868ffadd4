//! The round-trip probe's configuration and result as stored with its runs (the
//! stream's part in [`super::stream`]). Every field is optional, as in
//! [`super::jitter`].

use serde::{Deserialize, Serialize};

use super::record::Record;
use super::stats::StatsRecord;
use super::stream::{StreamConfigRecord, StreamRecord};

/// A round-trip run's configuration (`config`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct RoundtripConfigRecord {
    /// The stream, as described before the run.
    #[serde(flatten)]
    pub stream: StreamConfigRecord,
    /// The capture latency the stream reports, frames (`null`: not reported).
    #[serde(default)]
    pub capture_latency_frames: Option<u64>,
    /// The playback ports.
    #[serde(default)]
    pub playback_ports: Option<Vec<String>>,
    /// The capture port.
    #[serde(default)]
    pub capture_port: Option<String>,
    /// The loop, for people ("software loop in the JACK server").
    #[serde(rename = "loop", default)]
    pub loop_description: Option<String>,
    /// The run's length, ms.
    #[serde(default)]
    pub duration_ms: Option<f64>,
    /// Periods between clicks (`null`: no clicks).
    #[serde(default)]
    pub every_periods: Option<u64>,
    /// Clicks asked for.
    #[serde(default)]
    pub impulses: Option<u64>,
    /// Frames of delay inserted in the loop.
    #[serde(default)]
    pub insert_delay_frames: Option<u64>,
    /// The test signal's peak level.
    #[serde(default)]
    pub level: Option<f64>,
    /// The longest delay looked for, frames (`null`: the default).
    #[serde(default)]
    pub max_delay_frames: Option<f64>,
    /// Memory locking was asked for.
    #[serde(default)]
    pub lock_memory: Option<bool>,
    /// The tone's period, frames.
    #[serde(default)]
    pub tone_period_frames: Option<u64>,
    /// Causes were asked for (`--why`): callbacks later than this after their cycle's
    /// start were explained (and every overrun), ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_above_ns: Option<u64>,
}

impl Record for RoundtripConfigRecord {}

/// A round-trip run's result (`result`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct RoundtripResultRecord {
    /// The stream, as it ran.
    #[serde(flatten)]
    pub stream: StreamRecord,
    /// How the run ended (`complete`, `no signal`, `server gone: ...`).
    #[serde(default)]
    pub end: Option<String>,
    /// The tone's period, frames.
    #[serde(default)]
    pub tone_period_frames: Option<u64>,
    /// The round trip over the valid windows, frames.
    #[serde(default)]
    pub roundtrip_frames: Option<StatsRecord>,
    /// The same, ms.
    #[serde(default)]
    pub roundtrip_ms: Option<StatsRecord>,
    /// The round trip by impulse onset, frames.
    #[serde(default)]
    pub impulse_frames: Option<StatsRecord>,
    /// Playback + capture latency as the stream reports them (`null` when it does not).
    #[serde(default)]
    pub reported_frames: Option<u64>,
    /// Frames of delay inserted in the loop.
    #[serde(default)]
    pub inserted_frames: Option<u64>,
    /// Measured - reported - inserted, frames (`null` without both).
    #[serde(default)]
    pub extra_frames: Option<f64>,
    /// The verdict, for people.
    #[serde(default)]
    pub verdict: Option<String>,
    /// No loop was found.
    #[serde(default)]
    pub no_loop: Option<bool>,
    /// The loop inverts the signal.
    #[serde(default)]
    pub inverted: Option<bool>,
    /// Clipped samples captured.
    #[serde(default)]
    pub clipped_samples: Option<u64>,
    /// Windows analysed.
    #[serde(default)]
    pub windows: Option<u64>,
    /// Where the delay changed during the run.
    #[serde(default)]
    pub delay_changes: Option<Vec<DelayChangeRecord>>,
    /// Cycles run.
    #[serde(default)]
    pub cycles: Option<u64>,
    /// Server under-runs.
    #[serde(default)]
    pub xruns: Option<u64>,
    /// Cycles the stream skipped.
    #[serde(default)]
    pub skipped_cycles: Option<u64>,
    /// Mean DSP load, percent of the period.
    #[serde(default)]
    pub dsp_load_percent_mean: Option<f64>,
    /// The run's length, ns.
    #[serde(default)]
    pub run_ns: Option<u64>,
    /// Why the late callbacks were late, from the kernel's trace (`--why`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<super::why::WhyRecord>,
}

impl Record for RoundtripResultRecord {}

/// A change of the loop's delay between windows.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct DelayChangeRecord {
    /// The first window at the new delay.
    pub window: u64,
    /// When it was captured, CLOCK_MONOTONIC ns.
    pub time_ns: u64,
    /// The delay before, frames.
    #[serde(deserialize_with = "crate::records::keys::nan_if_null")]
    pub from_frames: f64,
    /// The delay after, frames.
    #[serde(deserialize_with = "crate::records::keys::nan_if_null")]
    pub to_frames: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::stream::tests::{alsa_stream, configured, jack_stream, merged};
    use crate::records::test_support::round_trips;
    use serde_json::json;

    #[test]
    fn a_round_trip_configuration_round_trips() {
        let own = json!({"capture_latency_frames": null, "playback_ports": ["a", "b"],
            "capture_port": "c", "loop": "software loop", "duration_ms": 2000.0,
            "every_periods": null, "impulses": 0, "insert_delay_frames": 0,
            "level": 0.5, "max_delay_frames": null, "lock_memory": false,
            "tone_period_frames": 4096});
        let c = round_trips::<RoundtripConfigRecord>(merged(configured(false), own.clone()));
        assert_eq!(c.loop_description.as_deref(), Some("software loop"));
        let mut with = own;
        with["every_periods"] = json!(8);
        with["max_delay_frames"] = json!(9600.0);
        with["capture_latency_frames"] = json!(64);
        let c = round_trips::<RoundtripConfigRecord>(merged(configured(true), with));
        assert_eq!(c.max_delay_frames, Some(9600.0));
    }

    #[test]
    fn a_round_trip_result_round_trips() {
        let frames = json!({"count": 18, "mean": 128.0, "min": 128.0, "max": 128.0,
            "stdev": 0.0, "median": 128.0});
        let none = json!({"count": 0, "mean": null, "min": null, "max": null,
            "stdev": null, "median": null});
        let own = json!({"end": "complete", "client": "audiolat", "tone_period_frames": 4096,
            "roundtrip_frames": frames, "roundtrip_ms": frames, "impulse_frames": none,
            "reported_frames": 128, "inserted_frames": 0, "extra_frames": 0.0,
            "verdict": "loop found", "no_loop": false, "inverted": false,
            "clipped_samples": 0, "windows": 18,
            "delay_changes": [{"window": 3, "time_ns": 99, "from_frames": 128.0,
                               "to_frames": 192.0}],
            "cycles": 700, "xruns": 1, "skipped_cycles": 0, "dsp_load_percent_mean": 1.5,
            "run_ns": 2_000_000_000_u64});
        let r = round_trips::<RoundtripResultRecord>(merged(jack_stream(), own.clone()));
        assert_eq!(r.delay_changes.as_deref().map(<[_]>::len), Some(1));
        let mut nothing = own;
        nothing["reported_frames"] = json!(null);
        nothing["extra_frames"] = json!(null);
        nothing["delay_changes"] = json!([]);
        nothing["dsp_load_percent_mean"] = json!(null);
        let r = round_trips::<RoundtripResultRecord>(merged(alsa_stream(), nothing));
        assert_eq!(r.stream.duplex_start.and_then(|d| d.skew_frames), Some(-3));
    }

    #[test]
    fn a_killed_round_trips_partial_result_reads() {
        // What `probes::probe::recovered` stores: the stream from the configuration
        // (its server with the quantum keys) and the checkpoint's figures.
        let r = RoundtripResultRecord::from_json(&json!({"backend": "jack",
            "rate_hz": 44100, "period_frames": 128, "server": {"name": "s",
            "private": true, "quantum_granted_frames": null}, "windows": 20,
            "roundtrip_frames": {"count": 18, "mean": 128.0, "min": 128.0, "max": 128.0,
                                 "median": 128.0, "stdev": 0.0}}))
        .unwrap();
        assert_eq!((r.windows, r.xruns), (Some(20), None));
        assert_eq!(r.roundtrip_frames.and_then(|s| s.mean), Some(128.0));
    }
}
