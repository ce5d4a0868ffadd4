//! What a run a dead process left `running` shows, from what it stored before it died:
//! its configuration (stored before it measured) and its last checkpoint. Nothing is
//! made up: what was stored neither way stays out of the result, and the renderers show
//! it as `-`.

use results::probe_kind::{EVENT, JITTER, ROUNDTRIP};
use results::records::flags::Flags;
use results::records::Record;
use results::{Measurement, ProbeKind, Recovered};
use serde_json::{json, Map, Value};

/// The stream's part of an audio run's result that its configuration holds as well
/// (the stream was open when the run was described).
const STREAM_KEYS: [&str; 8] = [
    "backend",
    "rate_hz",
    "period_frames",
    "playback_latency_frames",
    "capture_latency_frames",
    "playback_ports",
    "capture_port",
    "server",
];

/// The result and flags of a run of `probe` (its stored `config`), from its last
/// checkpoint's `measurements` (or, for an event run, the ones its trigger rows make):
/// the stream as described, the counts the checkpoint carries. `buffer_ns`: an event
/// run's buffer as it stored it for recovery. No measurements of its own.
pub fn recovered(
    probe: &ProbeKind,
    config: &Value,
    measurements: &[Measurement],
    buffer_ns: Option<f64>,
) -> Recovered {
    let mut result = Map::new();
    let mut flags = Flags::default();
    let find = |metric: &str| measurements.iter().find(|m| m.metric == metric);
    if probe == &EVENT || probe == &ROUNDTRIP {
        for key in STREAM_KEYS {
            if let Some(v) = config.get(key).filter(|v| !v.is_null()) {
                result.insert(key.into(), v.clone());
            }
        }
    }
    if probe == &JITTER {
        if let Some(m) = find("wakeup_latency") {
            copy(&m.detail, "cycles_so_far", &mut result, "cycles");
            copy(
                &m.detail,
                "skipped_deadlines",
                &mut result,
                "skipped_deadlines",
            );
        }
        if let Some(misses) = find("fragment_completion").and_then(|m| m.misses) {
            result.insert("underruns".into(), json!(misses));
        }
    } else if probe == &EVENT {
        if let Some(d) = find("event_latency").map(|m| &m.detail) {
            for key in [
                "late_triggers",
                "missed_triggers",
                "timing_unknown_triggers",
            ] {
                copy(d, key, &mut result, key);
            }
            if let Some(ns) = d["model_mean_ns"].as_f64() {
                result.insert("model_latency_ms".into(), json!(ns / 1e6));
            }
        }
        if let (Some(ns), Some(rate)) = (buffer_ns, config["rate_hz"].as_f64()) {
            result.insert(
                "buffer_frames".into(),
                json!((ns * rate / 1e9).round() as u64),
            );
        }
    } else if probe == &ROUNDTRIP {
        if let Some(d) = find("roundtrip").map(|m| &m.detail) {
            copy(d, "frames", &mut result, "roundtrip_frames");
            for key in [
                "verdict",
                "reported_frames",
                "inserted_frames",
                "extra_frames",
                "clipped_samples",
                "inverted",
            ] {
                copy(d, key, &mut result, key);
            }
            let w = &d["windows"];
            if let (Some(ok), Some(none), Some(unreliable)) = (
                w["ok"].as_u64(),
                w["no_signal"].as_u64(),
                w["unreliable"].as_u64(),
            ) {
                result.insert("windows".into(), json!(ok + none + unreliable));
                flags.windows_ok = Some(ok);
                flags.windows_no_signal = Some(none);
                flags.windows_unreliable = Some(unreliable);
            }
        }
        if let Some(m) = find("roundtrip_impulse") {
            copy(&m.detail, "frames", &mut result, "impulse_frames");
        }
    }
    Recovered {
        measurements: Vec::new(),
        result: if result.is_empty() {
            Value::Null
        } else {
            Value::Object(result)
        },
        flags: if flags == Flags::default() {
            Value::Null
        } else {
            flags.to_json()
        },
    }
}

/// `from[key]` as `to[as_key]`, when it was stored.
fn copy(from: &Value, key: &str, to: &mut Map<String, Value>, as_key: &str) {
    if let Some(v) = from.get(key).filter(|v| !v.is_null()) {
        to.insert(as_key.into(), v.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::LatencyHistogram;

    fn checkpoint(metric: &str, detail: Value) -> Measurement {
        let mut h = LatencyHistogram::new(1_000_000_000).unwrap();
        h.record(2_902_494);
        let mut m = Measurement::from_histogram("x", metric, "test", h);
        m.detail = detail;
        m
    }

    #[test]
    fn a_killed_round_trip_keeps_its_stream_and_its_checkpoints_windows() {
        let config = json!({"backend": "jack", "rate_hz": 44100, "period_frames": 128,
            "playback_latency_frames": 0, "capture_latency_frames": 0, "loop": "l",
            "server": {"name": "s", "private": true}, "duration_ms": 20000.0});
        let frames = json!({"count": 18, "mean": 128.0, "min": 128.0, "max": 128.0,
            "median": 128.0, "stdev": 0.0});
        let ms = [
            checkpoint(
                "roundtrip",
                json!({"frames": frames, "windows": {"ok": 18, "no_signal": 0, "unreliable": 2},
                       "verdict": "loop found", "reported_frames": 0, "inserted_frames": 0}),
            ),
            checkpoint(
                "roundtrip_impulse",
                json!({"frames": {"count": 4, "mean": 128.0}}),
            ),
        ];
        let r = recovered(&results::probe_kind::ROUNDTRIP, &config, &ms, None);
        assert_eq!(r.result["period_frames"], 128);
        assert_eq!(r.result["rate_hz"], 44100);
        assert_eq!(r.result["server"]["private"], true);
        assert_eq!(r.result["windows"], 20);
        assert_eq!(r.result["roundtrip_frames"], frames);
        assert_eq!(r.result["impulse_frames"]["count"], 4);
        assert_eq!(r.result["verdict"], "loop found");
        assert_eq!(r.flags["windows_ok"], 18);
        // Not stored: left out, not zero.
        for absent in ["xruns", "skipped_cycles", "model", "duration_ms", "run_ns"] {
            assert!(r.result.get(absent).is_none(), "{absent}: {}", r.result);
        }
        assert!(r.flags.get("realtime").is_none());
        assert!(r.measurements.is_empty());
    }

    #[test]
    fn a_killed_jitter_run_keeps_its_checkpoints_cycles_and_an_event_run_its_counts() {
        let ms = [checkpoint(
            "wakeup_latency",
            json!({"partial": true, "cycles_so_far": 10240, "skipped_deadlines": 17}),
        )];
        let r = recovered(
            &results::probe_kind::JITTER,
            &json!({"period_ns": 488281}),
            &ms,
            None,
        );
        assert_eq!(r.result, json!({"cycles": 10240, "skipped_deadlines": 17}));
        assert!(r.flags.is_null());
        let ms = [checkpoint(
            "event_latency",
            json!({"missed_triggers": 1, "late_triggers": 0, "timing_unknown_triggers": 2,
                   "model_mean_ns": 4_350_000.0}),
        )];
        let config = json!({"backend": "jack", "rate_hz": 48000, "period_frames": 128});
        let r = recovered(
            &results::probe_kind::EVENT,
            &config,
            &ms,
            Some(2_666_666.666_666_7),
        );
        assert_eq!(r.result["missed_triggers"], 1);
        assert_eq!(r.result["timing_unknown_triggers"], 2);
        assert_eq!(r.result["model_latency_ms"], 4.35);
        assert_eq!(r.result["buffer_frames"], 128);
        assert_eq!(r.result["period_frames"], 128);
        // Nothing stored, nothing made up.
        let r = recovered(
            &results::probe_kind::NET,
            &json!({"duration_s": 10.0}),
            &[],
            None,
        );
        assert!(r.result.is_null() && r.flags.is_null());
    }
}
