//! A run's validity flags (`flags`): what a reader must know before trusting its numbers.
//!
//! Every probe writes the flags it has and no others, and the runner adds its own (the
//! load's, the cells', a storing error), so each known flag is an `Option` absent from
//! the JSON when `None`. A flag a probe writes as `null` when it could not tell (host
//! steal not sampled, a counter the backend does not keep) is a [`Nullable`]: `None`
//! absent, `Some(None)` written `null`. A flag no field names (a probe outside audiolat,
//! a key of another release) is kept in [`Flags::other`], so nothing stored is dropped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::keys::{add_keys, present, Nullable};
use super::record::Record;

/// A run's validity flags, as stored.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct Flags {
    /// The measuring threads ran in a real-time class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realtime: Option<bool>,
    /// The run was interrupted (a stop, its server gone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<bool>,
    /// Memory was locked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_locked: Option<bool>,
    /// Host steal over the run, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_steal_ns: Option<u64>,
    /// Host steal over the run, percent of the CPUs' time (`null`: not sampled).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub host_steal_percent: Nullable<f64>,
    /// jitter: the policy granted is the one asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_as_requested: Option<bool>,
    /// jitter: the CPUs granted are the ones asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity_as_requested: Option<bool>,
    /// jitter: `/dev/cpu_dma_latency` was held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_dma_latency_held: Option<bool>,
    /// jitter: the outliers in whose window the host stole time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outliers_with_host_steal: Option<u64>,
    /// jitter: the outliers examined for steal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outliers_examined: Option<u64>,
    /// jitter: the share of random windows with host steal, percent (`null`: none taken).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub random_windows_with_host_steal_percent: Nullable<f64>,
    /// jitter: values above the histogram's bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram_overflows: Option<u64>,
    /// jitter: a percentile was clamped at the histogram's bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentiles_clamped: Option<bool>,
    /// event: triggers answered late.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_triggers: Option<u64>,
    /// event: triggers never answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missed_triggers: Option<u64>,
    /// event: triggers whose timing is not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing_unknown_triggers: Option<u64>,
    /// event: triggers dropped before the audio thread saw them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped_triggers: Option<u64>,
    /// event, roundtrip: per-cycle records the audio thread could not hand over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycle_records_dropped: Option<u64>,
    /// event, roundtrip: captures matched to no playback (`null`: not counted here).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub unmatched_captures: Nullable<u64>,
    /// event, roundtrip: times the device's frame count restarted (`null`: not known).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub frame_count_restarts: Nullable<u64>,
    /// event, roundtrip: cycles the DSP workload overran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsp_overload_cycles: Option<u64>,
    /// event, roundtrip: the run's audio server was a private one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_server: Option<bool>,
    /// roundtrip: no loop was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_loop: Option<bool>,
    /// roundtrip: the loop inverts the signal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inverted: Option<bool>,
    /// roundtrip: clipped samples captured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clipped_samples: Option<u64>,
    /// roundtrip: windows with a delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows_ok: Option<u64>,
    /// roundtrip: windows without a signal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows_no_signal: Option<u64>,
    /// roundtrip: windows whose delay was unreliable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows_unreliable: Option<u64>,
    /// roundtrip: xruns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xruns: Option<u64>,
    /// roundtrip: cycles skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_cycles: Option<u64>,
    /// roundtrip: times the delay changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_changes: Option<u64>,
    /// roundtrip: capture blocks dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture_blocks_dropped: Option<u64>,
    /// net: every phase's host took kernel timestamps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_timestamps: Option<bool>,
    /// net: counted blocks the run's own controller sent late.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_late_blocks: Option<u64>,
    /// net, one end of a two-machine run: `respond` or `emulate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Written by releases that counted allocations in the audio callback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc_violations: Option<u64>,
    /// The runner: the machine's CPU is emulated (QEMU's TCG), so its times are not a
    /// real CPU's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emulated_cpu: Option<bool>,
    /// The runner: the load ended before the run did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_exited_early: Option<bool>,
    /// The runner: the run's cells were undone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cells_undone: Option<bool>,
    /// The runner: why a checkpoint could not be stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_error: Option<String>,
    /// The runner: why the run's closing writes failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_error: Option<String>,
    /// Any other flag, by its key: one no field here names (a probe registered outside
    /// audiolat writes its own), kept so that the flags read back whole.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

impl Record for Flags {}

impl Flags {
    /// The flags in `json`; none (every field `None`) when nothing, or not an object of
    /// flags, was stored.
    pub fn of(json: &Value) -> Flags {
        Flags::from_json(json).unwrap_or_default()
    }

    /// Writes the flags set here into the stored `flags` (an object, made one if it was
    /// `null`), each over the key of the same name; the others are left as they are.
    /// How the runner adds its flags to a probe's.
    pub fn add_to(&self, flags: &mut Value) {
        add_keys(self.to_json(), flags);
    }

    /// Host steal in percent, when it was sampled.
    pub fn steal_percent(&self) -> Option<f64> {
        self.host_steal_percent.flatten()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::records::test_support::round_trips;

    /// jitter's flags with the runner's, as a run stores them.
    #[test]
    fn jitter_flags_round_trip() {
        let f: Flags = round_trips(json!({
            "realtime": true, "policy_as_requested": true, "affinity_as_requested": false,
            "memory_locked": true, "cpu_dma_latency_held": false, "interrupted": false,
            "host_steal_ns": 0, "host_steal_percent": null, "outliers_with_host_steal": 0,
            "outliers_examined": 3, "random_windows_with_host_steal_percent": 12.5,
            "histogram_overflows": 0, "percentiles_clamped": false,
            "load_exited_early": false, "cells_undone": true, "emulated_cpu": false,
        }));
        assert_eq!(f.host_steal_percent, Some(None));
        assert_eq!(f.random_windows_with_host_steal_percent, Some(Some(12.5)));
        assert!(f.other.is_empty());
    }

    /// event's flags, the counters the backend does not keep written `null`.
    #[test]
    fn event_flags_round_trip() {
        let f: Flags = round_trips(json!({
            "realtime": false, "memory_locked": false, "interrupted": true,
            "host_steal_ns": 1200, "host_steal_percent": 0.25, "late_triggers": 2,
            "missed_triggers": 0, "timing_unknown_triggers": 1, "dropped_triggers": 0,
            "cycle_records_dropped": 0, "unmatched_captures": null,
            "frame_count_restarts": 3, "dsp_overload_cycles": 0, "private_server": true,
            "load_exited_early": true, "store_error": "disk full",
        }));
        assert_eq!(f.unmatched_captures, Some(None));
        assert_eq!(f.steal_percent(), Some(0.25));
    }

    /// roundtrip's flags, and the ones a recovered run keeps (its windows only).
    #[test]
    fn roundtrip_flags_round_trip() {
        round_trips::<Flags>(json!({
            "realtime": true, "interrupted": false, "host_steal_ns": 0,
            "host_steal_percent": 0.0, "no_loop": false, "inverted": true,
            "clipped_samples": 4, "windows_ok": 18, "windows_no_signal": 1,
            "windows_unreliable": 0, "xruns": 0, "skipped_cycles": 0, "delay_changes": 1,
            "capture_blocks_dropped": 0, "cycle_records_dropped": 0,
            "unmatched_captures": 0, "frame_count_restarts": null, "dsp_overload_cycles": 0,
            "private_server": false, "memory_locked": true, "checkpoint_error": "locked",
        }));
        let f: Flags =
            round_trips(json!({"windows_ok": 18, "windows_no_signal": 0, "windows_unreliable": 2}));
        assert_eq!(f.realtime, None);
    }

    /// net's flags, a two-machine end's, and a flag no field names.
    #[test]
    fn net_flags_and_unknown_flags_round_trip() {
        round_trips::<Flags>(json!({
            "realtime": true, "interrupted": false, "host_steal_ns": 0,
            "host_steal_percent": null, "kernel_timestamps": true, "sender_late_blocks": 0,
            "memory_locked": false,
        }));
        round_trips::<Flags>(json!({
            "host_steal_ns": 0, "host_steal_percent": 1.5, "memory_locked": true,
            "interrupted": false, "role": "respond",
        }));
        let f: Flags = round_trips(json!({"realtime": true, "ticks_lost": 3}));
        assert_eq!(f.other["ticks_lost"], 3);
    }

    /// The runner's flags go over a probe's, leaving the others; into `null` too.
    #[test]
    fn flags_are_added_to_a_probes() {
        let mut stored = json!({"realtime": true, "interrupted": false, "ticks_lost": 3});
        let runner = Flags {
            interrupted: Some(true),
            load_exited_early: Some(false),
            ..Flags::default()
        };
        runner.add_to(&mut stored);
        assert_eq!(
            stored,
            json!({"realtime": true, "interrupted": true, "ticks_lost": 3, "load_exited_early": false})
        );
        let mut none = Value::Null;
        runner.add_to(&mut none);
        assert_eq!(
            none,
            json!({"interrupted": true, "load_exited_early": false})
        );
    }

    /// Nothing stored reads as no flags.
    #[test]
    fn nothing_stored_is_no_flags() {
        assert_eq!(Flags::of(&Value::Null), Flags::default());
        assert_eq!(Flags::of(&json!({})), Flags::default());
        assert_eq!(Flags::default().to_json(), json!({}));
    }
}
