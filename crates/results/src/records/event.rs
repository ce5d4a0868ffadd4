//! The event probe's configuration and result as stored with its runs (the stream's
//! part in [`super::stream`]). Every field is optional, as in [`super::jitter`].

use serde::{Deserialize, Serialize};

use super::record::Record;
use super::stats::StatsRecord;
use super::stream::{StreamConfigRecord, StreamRecord};

/// An event run's configuration (`config`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct EventConfigRecord {
    /// The stream, as described before the run.
    #[serde(flatten)]
    pub stream: StreamConfigRecord,
    /// The stream's client name (the device, on ALSA).
    #[serde(default)]
    pub device: Option<String>,
    /// What triggers a note (`timer`, `midi`, `key`, `gpio`).
    #[serde(default)]
    pub trigger: Option<String>,
    /// How a note is placed (`asap`, `fixed`, ...).
    #[serde(default)]
    pub policy: Option<String>,
    /// Triggers asked for.
    #[serde(default)]
    pub triggers: Option<u64>,
    /// The DSP workload.
    #[serde(default)]
    pub workload: Option<String>,
    /// The workload's voices.
    #[serde(default)]
    pub voices: Option<u64>,
    /// The note's tone, Hz.
    #[serde(default)]
    pub frequency_hz: Option<f64>,
    /// The note's length, ms.
    #[serde(default)]
    pub note_ms: Option<f64>,
    /// Least time between timer triggers, ms.
    #[serde(default)]
    pub spacing_ms: Option<f64>,
    /// Warm-up before the first trigger, ms.
    #[serde(default)]
    pub warmup_ms: Option<f64>,
    /// The timer's random seed.
    #[serde(default)]
    pub seed: Option<u64>,
    /// The trigger thread's scheduling policy.
    #[serde(default)]
    pub trigger_policy: Option<String>,
    /// The GPIO line, with a GPIO trigger.
    #[serde(default)]
    pub gpio: Option<String>,
    /// The loopback onset's threshold, of the note's first sample.
    #[serde(default)]
    pub loopback_threshold: Option<f64>,
    /// Memory locking was asked for.
    #[serde(default)]
    pub lock_memory: Option<bool>,
    /// Causes were asked for (`--why`): callbacks later than this after their cycle's
    /// start were explained (and every overrun), ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_above_ns: Option<u64>,
}

impl Record for EventConfigRecord {}

/// An event run's result (`result`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct EventResultRecord {
    /// The stream, as it ran.
    #[serde(flatten)]
    pub stream: StreamRecord,
    /// How the run ended (`complete`, `interrupted`, `server gone: ...`).
    #[serde(default)]
    pub end: Option<String>,
    /// The MIDI port triggers came from.
    #[serde(default)]
    pub midi_port: Option<String>,
    /// The trigger clock's offset from the stream's, ns.
    #[serde(default)]
    pub clock_offset_ns: Option<i64>,
    /// Triggers made.
    #[serde(default)]
    pub triggers: Option<u64>,
    /// Model latency over the triggers that sounded, ms.
    #[serde(default)]
    pub latency_ms: Option<StatsRecord>,
    /// The timing model's latency, ms.
    #[serde(default)]
    pub model_latency_ms: Option<f64>,
    /// Loopback latency, ms (`null` without a loopback measurement).
    #[serde(default)]
    pub loopback_ms: Option<StatsRecord>,
    /// The wait part of the latency, ms.
    #[serde(default)]
    pub wait_ms: Option<StatsRecord>,
    /// The rendering callback's lateness, ms.
    #[serde(default)]
    pub lateness_ms: Option<StatsRecord>,
    /// The buffer a note plays behind, ms.
    #[serde(default)]
    pub buffer_ms: Option<f64>,
    /// The buffer a note plays behind, frames.
    #[serde(default)]
    pub buffer_frames: Option<u64>,
    /// Sink frames the stream did not report, frames.
    #[serde(default)]
    pub unreported_sink_frames: Option<u64>,
    /// Cycles run.
    #[serde(default)]
    pub cycles: Option<u64>,
    /// Server under-runs, before and after the first trigger.
    #[serde(default)]
    pub underruns: Option<EventUnderrunsRecord>,
    /// Triggers that reached the audio thread after their frame.
    #[serde(default)]
    pub late_triggers: Option<u64>,
    /// Notes placed by their time that moved (`null` when none was).
    #[serde(default)]
    pub fixed_replacement: Option<FixedReplacementRecord>,
    /// Triggers whose note could not sound at its time.
    #[serde(default)]
    pub missed_triggers: Option<u64>,
    /// Triggers whose cycle's timing was unknown.
    #[serde(default)]
    pub timing_unknown_triggers: Option<u64>,
    /// Cycles whose start was unknown.
    #[serde(default)]
    pub cycles_timing_unknown: Option<u64>,
    /// Triggers dropped (their queue was full).
    #[serde(default)]
    pub dropped_triggers: Option<u64>,
    /// MIDI events dropped.
    #[serde(default)]
    pub midi_dropped: Option<u64>,
    /// Loopback onsets moved after an under-run (`null` without a loopback).
    #[serde(default)]
    pub onsets_moved_after_underrun: Option<u64>,
    /// Cycles larger than the period.
    #[serde(default)]
    pub oversized_cycles: Option<u64>,
    /// Mean DSP load, percent of the period.
    #[serde(default)]
    pub dsp_load_percent_mean: Option<f64>,
    /// Cycles whose processing took longer than the period.
    #[serde(default)]
    pub dsp_overload_cycles: Option<u64>,
    /// The run's length, ns.
    #[serde(default)]
    pub run_ns: Option<u64>,
    /// Why the late callbacks were late, from the kernel's trace (`--why`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<super::why::WhyRecord>,
}

impl Record for EventResultRecord {}

/// An event run's server under-runs and skipped cycles, before the first trigger
/// (`start`) and after it (`steady`).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Default)]
pub struct EventUnderrunsRecord {
    /// Under-runs before the first trigger.
    #[serde(default)]
    pub start: Option<u64>,
    /// Under-runs after it.
    #[serde(default)]
    pub steady: Option<u64>,
    /// Cycles skipped before the first trigger.
    #[serde(default)]
    pub skipped_cycles_start: Option<u64>,
    /// Cycles skipped after it.
    #[serde(default)]
    pub skipped_cycles_steady: Option<u64>,
}

/// Notes placed by their time that moved between their placement and their cycle's.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Default)]
pub struct FixedReplacementRecord {
    /// Notes placed by their time.
    #[serde(default)]
    pub notes: Option<u64>,
    /// Those moved by more than half a frame.
    #[serde(default)]
    pub moved_over_half_frame: Option<u64>,
    /// The median move, frames.
    #[serde(default)]
    pub shift_median_frames: Option<f64>,
    /// The largest move (absolute), frames.
    #[serde(default)]
    pub shift_abs_max_frames: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::stream::tests::{alsa_stream, configured, jack_stream, merged};
    use crate::records::test_support::round_trips;
    use serde_json::json;

    fn own_config() -> serde_json::Value {
        json!({"device": "audiolat", "trigger": "timer", "policy": "asap", "triggers": 50,
               "workload": "none", "voices": 0, "frequency_hz": 1000.0, "note_ms": 50.0,
               "spacing_ms": 100.0, "warmup_ms": 500.0, "seed": 1, "trigger_policy": "fifo:70",
               "gpio": null, "loopback_threshold": 0.30000001192092896, "lock_memory": true})
    }

    #[test]
    fn an_event_configuration_round_trips() {
        let c = round_trips::<EventConfigRecord>(merged(configured(false), own_config()));
        assert_eq!(c.stream.backend.as_deref(), Some("jack"));
        assert_eq!(c.triggers, Some(50));
        let c = round_trips::<EventConfigRecord>(merged(configured(true), own_config()));
        assert_eq!(c.stream.granted.and_then(|g| g.buffer_frames), Some(256));
    }

    fn stats(count: u64) -> serde_json::Value {
        if count == 0 {
            return json!({"count": 0, "mean": null, "min": null, "max": null,
                          "stdev": null, "median": null});
        }
        json!({"count": count, "mean": 5.5, "min": 5.0, "max": 6.0, "stdev": 0.5,
               "median": 5.5})
    }

    fn own_result(loopback: bool) -> serde_json::Value {
        json!({"end": "complete", "client": "audiolat", "midi_port": null,
               "clock_offset_ns": -12, "triggers": 50, "latency_ms": stats(50),
               "model_latency_ms": 5.3,
               "loopback_ms": if loopback { stats(50) } else { serde_json::Value::Null },
               "wait_ms": stats(50), "lateness_ms": stats(0), "buffer_ms": 5.333,
               "buffer_frames": 256, "unreported_sink_frames": null, "cycles": 4000,
               "underruns": {"start": 1, "steady": 0, "skipped_cycles_start": 0,
                             "skipped_cycles_steady": 0},
               "late_triggers": 0,
               "fixed_replacement": if loopback { serde_json::Value::Null } else {
                   json!({"notes": 50, "moved_over_half_frame": 2,
                          "shift_median_frames": 0.1, "shift_abs_max_frames": 1.5}) },
               "missed_triggers": 0, "timing_unknown_triggers": 0, "cycles_timing_unknown": 3,
               "dropped_triggers": 0, "midi_dropped": 0,
               "onsets_moved_after_underrun": if loopback { json!(0) } else { json!(null) },
               "oversized_cycles": 0, "dsp_load_percent_mean": null, "dsp_overload_cycles": 0,
               "run_ns": 5_000_000_000_u64})
    }

    #[test]
    fn an_event_result_round_trips() {
        let r = round_trips::<EventResultRecord>(merged(jack_stream(), own_result(false)));
        assert_eq!(r.underruns.and_then(|u| u.start), Some(1));
        assert_eq!(r.stream.client.as_deref(), Some("audiolat"));
        let r = round_trips::<EventResultRecord>(merged(alsa_stream(), own_result(true)));
        assert_eq!(r.loopback_ms.map(|s| s.count), Some(50));
        assert!(r.stream.server.and_then(|s| s.graph).is_some());
    }

    #[test]
    fn a_killed_event_runs_partial_result_reads() {
        let r = EventResultRecord::from_json(&json!({"backend": "jack", "rate_hz": 48000,
            "late_triggers": 0, "model_latency_ms": 5.0, "buffer_frames": 256}))
        .unwrap();
        assert_eq!((r.buffer_frames, r.cycles), (Some(256), None));
        assert_eq!(r.stream.rate_hz, Some(48000));
    }
}
