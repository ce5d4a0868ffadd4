//! The jitter probe's configuration and result as stored with its runs.
//!
//! Every field is optional: a killed run's result holds only what its last checkpoint
//! carried (`probes::probe::recovered`), and runs of earlier releases and hand-made test
//! runs lack keys. A reader shows `-` for what is missing, as it always has.

use serde::{Deserialize, Serialize};

use super::record::Record;

/// A jitter run's configuration (`config`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct JitterConfigRecord {
    /// How the thread waits (`clock_nanosleep`, `timerfd`, ...).
    #[serde(default)]
    pub mode: Option<String>,
    /// The wake-up period, ns.
    #[serde(default)]
    pub period_ns: Option<u64>,
    /// Wake-ups a second.
    #[serde(default)]
    pub rate_hz: Option<f64>,
    /// The fragment model, when the run had one (`null` without).
    #[serde(default)]
    pub fragments: Option<FragmentsRecord>,
    /// Busy work per cycle, percent of the period.
    #[serde(default)]
    pub busy_percent: Option<f64>,
    /// The scheduling policy asked for.
    #[serde(default)]
    pub policy: Option<String>,
    /// The CPUs asked for, as a CPU list (`null`: any).
    #[serde(default)]
    pub cpus: Option<String>,
    /// The run's length in seconds, when given so.
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// The run's length in cycles, when given so.
    #[serde(default)]
    pub loops: Option<u64>,
    /// The histograms' upper bound, ns.
    #[serde(default)]
    pub histogram_bound_ns: Option<u64>,
    /// Memory locking was asked for.
    #[serde(default)]
    pub lock_memory: Option<bool>,
    /// `/dev/cpu_dma_latency` was asked to be held at 0.
    #[serde(default)]
    pub dma_latency: Option<bool>,
    /// Causes were asked for (`--why`): wake-ups later than this were explained, ns
    /// (`0`: the fragment model's under-runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_above_ns: Option<u64>,
}

impl Record for JitterConfigRecord {}

impl JitterConfigRecord {
    /// The run was made with the fragment model.
    pub fn has_fragments(&self) -> bool {
        self.fragments.is_some()
    }
}

/// The fragment model a jitter run simulated.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Default)]
pub struct FragmentsRecord {
    /// Fragments in the buffer.
    #[serde(default)]
    pub fragments: Option<u64>,
    /// Frames per fragment.
    #[serde(default)]
    pub frames: Option<u64>,
    /// The sample rate, Hz.
    #[serde(default)]
    pub sample_rate: Option<u64>,
    /// A fragment's period, ns.
    #[serde(default)]
    pub period_ns: Option<u64>,
    /// `(fragments - 1) x period`, ns.
    #[serde(default)]
    pub headroom_ns: Option<u64>,
}

/// A jitter run's result (`result`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct JitterResultRecord {
    /// Cycles measured.
    #[serde(default)]
    pub cycles: Option<u64>,
    /// Cycles the run was planned for.
    #[serde(default)]
    pub planned_cycles: Option<u64>,
    /// Deadlines skipped because a wake-up came after them.
    #[serde(default)]
    pub skipped_deadlines: Option<u64>,
    /// Wake-ups above the histogram's bound.
    #[serde(default)]
    pub overflows: Option<u64>,
    /// The cycles of the first overflows.
    #[serde(default)]
    pub overflow_cycles: Option<Vec<u64>>,
    /// The fragment model's would-be under-runs.
    #[serde(default)]
    pub underruns: Option<u64>,
    /// The cycles of the first under-runs.
    #[serde(default)]
    pub underrun_cycles: Option<Vec<u64>>,
    /// The run's length, ns.
    #[serde(default)]
    pub run_ns: Option<u64>,
    /// The run's start on CLOCK_MONOTONIC, ns.
    #[serde(default)]
    pub start_ns: Option<u64>,
    /// The busy work's calibration (`null` without busy work).
    #[serde(default)]
    pub busy: Option<BusyRecord>,
    /// Host steal during the run.
    #[serde(default)]
    pub steal: Option<StealRecord>,
    /// The largest wake-ups with the host steal around them.
    #[serde(default)]
    pub outliers: Option<Vec<OutlierRecord>>,
    /// Series blocks the writer dropped.
    #[serde(default)]
    pub series_blocks_dropped: Option<u64>,
    /// Why the late wake-ups were late, from the kernel's trace (`--why`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<super::why::WhyRecord>,
}

impl Record for JitterResultRecord {}

/// The busy work's calibration.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct BusyRecord {
    /// Busy work per cycle, percent of the period.
    #[serde(deserialize_with = "crate::records::keys::nan_if_null")]
    pub percent: f64,
    /// Calibrated time of one iteration, ns.
    #[serde(deserialize_with = "crate::records::keys::nan_if_null")]
    pub ns_per_iteration: f64,
    /// Iterations a cycle.
    pub iterations_per_cycle: u64,
    /// `ns_per_iteration x iterations_per_cycle`.
    #[serde(deserialize_with = "crate::records::keys::nan_if_null")]
    pub calibrated_ns_per_cycle: f64,
}

/// Host steal during a run on the thread's CPUs.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct StealRecord {
    /// Steal, ns.
    pub ns: u64,
    /// Steal, percent of the run's CPU time (`null` when the span is unknown).
    pub percent: Option<f64>,
    /// Samples taken.
    pub samples: u64,
    /// The kernel's tick, ns.
    pub tick_ns: u64,
}

/// One of the largest wake-ups, with the host steal around it.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct OutlierRecord {
    /// Its cycle.
    #[serde(default)]
    pub cycle: Option<u64>,
    /// Its wake-up latency, ns.
    #[serde(default)]
    pub latency_ns: Option<u64>,
    /// The CPU it ran on.
    #[serde(default)]
    pub cpu: Option<u64>,
    /// Its time since the run's start, s.
    #[serde(default)]
    pub t_s: Option<f64>,
    /// Host steal on its CPU in the sampled window around it, ns.
    #[serde(default)]
    pub steal_ns_around: Option<u64>,
    /// That window, ns.
    #[serde(default)]
    pub steal_window_ns: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::test_support::round_trips;
    use serde_json::json;

    #[test]
    fn a_jitter_configuration_round_trips_with_and_without_fragments() {
        let c = round_trips::<JitterConfigRecord>(json!({
            "mode": "clock_nanosleep", "period_ns": 1_000_000, "rate_hz": 1000.0,
            "fragments": {"fragments": 2, "frames": 64, "sample_rate": 48000,
                          "period_ns": 1_333_333, "headroom_ns": 1_333_333},
            "busy_percent": 20.0, "policy": "fifo:80", "cpus": "2-3", "duration_s": 10.0,
            "loops": null, "histogram_bound_ns": 100_000_000_u64, "lock_memory": true,
            "dma_latency": false}));
        assert!(c.has_fragments());
        assert_eq!(c.fragments.and_then(|f| f.frames), Some(64));
        let c = round_trips::<JitterConfigRecord>(json!({
            "mode": "timerfd", "period_ns": 250_000, "rate_hz": 4000.0, "fragments": null,
            "busy_percent": 0.0, "policy": "other", "cpus": null, "duration_s": null,
            "loops": 1000, "histogram_bound_ns": 100_000_000_u64, "lock_memory": false,
            "dma_latency": true}));
        assert!(!c.has_fragments());
        assert_eq!(c.loops, Some(1000));
    }

    #[test]
    fn a_jitter_result_round_trips() {
        let r = round_trips::<JitterResultRecord>(json!({
            "cycles": 1000, "planned_cycles": 1000, "skipped_deadlines": 0, "overflows": 1,
            "overflow_cycles": [17], "underruns": 2, "underrun_cycles": [3, 9],
            "run_ns": 1_000_000_000_u64, "start_ns": 55, "busy": {"percent": 20.0,
            "ns_per_iteration": 1.5, "iterations_per_cycle": 100,
            "calibrated_ns_per_cycle": 150.0},
            "steal": {"ns": 0, "percent": null, "samples": 10, "tick_ns": 10_000_000},
            "outliers": [{"cycle": 17, "latency_ns": 120_000, "cpu": 2, "t_s": 0.017,
                          "steal_ns_around": 0, "steal_window_ns": 2_000_000}],
            "series_blocks_dropped": 0}));
        assert_eq!(r.outliers.as_deref().map(<[_]>::len), Some(1));
        round_trips::<JitterResultRecord>(json!({
            "cycles": 10, "planned_cycles": 10, "skipped_deadlines": 0, "overflows": 0,
            "overflow_cycles": [], "underruns": 0, "underrun_cycles": [], "run_ns": 10,
            "start_ns": 55, "busy": null,
            "steal": {"ns": 5, "percent": 0.5, "samples": 1, "tick_ns": 1},
            "outliers": [], "series_blocks_dropped": 0}));
    }

    #[test]
    fn a_killed_jitter_runs_partial_result_reads() {
        // What `probes::probe::recovered` stores: the checkpoint's counts only.
        let r = JitterResultRecord::from_json(
            &json!({"cycles": 500, "skipped_deadlines": 1, "underruns": 0}),
        )
        .unwrap();
        assert_eq!((r.cycles, r.run_ns, r.outliers), (Some(500), None, None));
    }

    /// A figure that could not be computed is written `null` (serde_json's NaN): the
    /// result still reads, that figure NaN, the rest as stored.
    #[test]
    fn a_busy_figure_written_null_reads_as_nan_not_as_no_result() {
        let r = JitterResultRecord::from_json(&json!({
            "cycles": 500,
            "busy": {"percent": 80.0, "ns_per_iteration": null, "iterations_per_cycle": 7,
                     "calibrated_ns_per_cycle": null},
        }))
        .expect("the result reads");
        let busy = r.busy.expect("busy");
        assert!(busy.ns_per_iteration.is_nan() && busy.calibrated_ns_per_cycle.is_nan());
        assert_eq!(
            (busy.percent, busy.iterations_per_cycle, r.cycles),
            (80.0, 7, Some(500))
        );
    }
}
