//! `audiolat bench --json`: the DSP kernels' cost, the voice capacity, the Migrator synth's
//! block and (with `--workers`) the block split over worker threads, as `probes::bench`
//! and `probes::bench_workers` write it and `report::view::bench` reads it.
//!
//! The bench is printed, not stored. A timing that is not a finite number (a ratio over a
//! zero time) is written `null`, as serde_json writes any such float, and reads back as
//! NaN ([`nan_if_null`]), which the text prints as it printed a missing figure.

use serde::{Deserialize, Serialize};

use super::record::Record;

/// The whole bench.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Bench {
    /// The sample rate the kernels were timed at.
    pub sample_rate_hz: u32,
    /// The period the kernels were timed at.
    pub period_frames: u64,
    /// The share of a period the voice capacity may take.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub load_target: f64,
    /// The period in ns.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub period_ns: f64,
    /// The naive `f32::sin` oscillator every kernel is compared with.
    pub reference: KernelTiming,
    /// Each kernel.
    pub kernels: Vec<KernelTiming>,
    /// The wavetable voices that fit in `load_target` of a period.
    pub voice_capacity: u64,
    /// The search stopped at its ceiling: at least `voice_capacity`.
    pub voice_capacity_is_lower_bound: bool,
    /// The time of `voice_capacity` voices per period.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub capacity_ns_per_period: f64,
    /// The Migrator synth's block.
    pub migrator: Migrator,
    /// The build profile audiolat was compiled with.
    pub build_profile: String,
    /// The timing thread's scheduling policy.
    pub thread_policy: String,
    /// Host steal over the run, percent of the machine's CPU time (`None`: not sampled).
    pub host_steal_percent: Option<f64>,
    /// The block split over worker threads (`bench --workers`; absent unless asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<WorkersBench>,
}

impl Record for Bench {}

/// One kernel's cost.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct KernelTiming {
    /// Its name.
    pub name: String,
    /// The voices it ran.
    pub voices: u64,
    /// ns per sample (all voices).
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub ns_per_sample: f64,
    /// ns per period.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub ns_per_period: f64,
    /// ns per voice and sample.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub ns_per_voice_sample: f64,
    /// Its time against the reference's (below 1 is faster).
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub ratio_to_reference: f64,
}

/// The Migrator synth's block against its references and the study's targets.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Migrator {
    /// The kernel the synth ran.
    pub kernel: String,
    /// The kernels this CPU runs, the fastest first.
    pub available_kernels: Vec<String>,
    /// The kernels compiled in that this CPU does not run.
    pub unavailable_kernels: Vec<String>,
    /// Median ns per block.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub block_ns: f64,
    /// Median ns per block of the portable kernel.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub portable_block_ns: f64,
    /// Median ns per block of the naive reference.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub naive_block_ns: f64,
    /// Median ns per block of the throughput reference on the synth's kernel.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub roofline_ns: f64,
    /// Median ns per block of the throughput reference on the portable kernel.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub portable_roofline_ns: f64,
    /// `naive_block_ns / block_ns`.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub speedup: f64,
    /// `block_ns / roofline_ns`.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub roofline_ratio: f64,
    /// `portable_block_ns / portable_roofline_ns`.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub portable_roofline_ratio: f64,
    /// The block's period in ns.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub block_period_ns: f64,
    /// The study's target block time.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub target_ns: f64,
    /// The study's target speed-up against the naive reference.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub target_speedup: f64,
    /// The target of `roofline_ratio`.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub target_roofline_ratio: f64,
    /// `portable_block_ns / roofline_ns` (information, not a target).
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub portable_vs_best_roofline: f64,
    /// The target of `portable_roofline_ratio`.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub target_portable_roofline_ratio: f64,
    /// Each repeat's figures, in the order they ran.
    pub repeats: Vec<MigratorRepeat>,
}

/// One repeat of the Migrator timings.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct MigratorRepeat {
    /// ns per block.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub block_ns: f64,
    /// ns per block of the portable kernel.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub portable_block_ns: f64,
    /// ns per block of the naive reference.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub naive_block_ns: f64,
    /// ns per block of the throughput reference.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub roofline_ns: f64,
    /// ns per block of the portable throughput reference.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub portable_roofline_ns: f64,
}

/// The synth block split over the calling thread and worker threads (`bench --workers`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct WorkersBench {
    /// How the figures were taken.
    pub method: String,
    /// The policy every thread asked for.
    pub policy_requested: String,
    /// Why real-time was refused (`None`: granted).
    pub realtime_refused: Option<String>,
    /// The CPUs the calling thread ran on.
    pub caller_cpus: Vec<u64>,
    /// Rounds per count.
    pub rounds: u64,
    /// Timed blocks per round.
    pub blocks_per_round: u64,
    /// `kernel.sched_rt_runtime_us`.
    pub sched_rt_runtime_us: Option<i64>,
    /// `kernel.sched_rt_period_us`.
    pub sched_rt_period_us: Option<i64>,
    /// One row per worker count.
    pub counts: Vec<WorkerCount>,
}

/// One worker count's figures; the hand-offs and parts `None` with 0 workers.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct WorkerCount {
    /// Worker threads beside the caller.
    pub workers: u64,
    /// Threads in all.
    pub threads: u64,
    /// Blocks timed.
    pub blocks: u64,
    /// Median block time.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub block_median_ns: f64,
    /// p99 block time.
    #[serde(deserialize_with = "super::keys::nan_if_null")]
    pub block_p99_ns: f64,
    /// Against the 0-worker row.
    pub speedup_vs_zero: Option<f64>,
    /// Against the 1-worker row (`None` when 1 was not run, or for 0).
    pub speedup_vs_one: Option<f64>,
    /// Hand-off to the workers, median.
    pub handoff_to_workers_ns: Option<f64>,
    /// Hand-off back, median.
    pub handoff_back_ns: Option<f64>,
    /// The whole hand-off, median.
    pub handoff_ns: Option<f64>,
    /// The longest part, median.
    pub longest_part_ns: Option<f64>,
    /// The caller's part beside the workers, median.
    pub caller_part_ns: Option<f64>,
    /// The caller's part alone, median.
    pub caller_part_alone_ns: Option<f64>,
    /// Whether every thread ran real-time.
    pub realtime: bool,
    /// The policy granted.
    pub policy: String,
    /// Each worker's CPUs.
    pub worker_cpus: Vec<Vec<u64>>,
    /// A worker shares the caller's CPU.
    pub shares_cpu: bool,
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::records::test_support::round_trips;

    fn kernel(name: &str) -> Value {
        json!({"name": name, "voices": 64, "ns_per_sample": 120.5, "ns_per_period": 30848.0,
               "ns_per_voice_sample": 1.88, "ratio_to_reference": 0.25})
    }

    fn bench() -> Value {
        json!({
            "sample_rate_hz": 48000, "period_frames": 256, "load_target": 0.5,
            "period_ns": 5333333.3, "reference": kernel("f32::sin"),
            "kernels": [kernel("wavetable")], "voice_capacity": 4096,
            "voice_capacity_is_lower_bound": true, "capacity_ns_per_period": 2600000.0,
            "migrator": {"kernel": "avx2+fma", "available_kernels": ["avx2+fma", "portable"],
                "unavailable_kernels": ["avx512+fma"], "block_ns": 9000.0,
                "portable_block_ns": 14000.0, "naive_block_ns": 700000.0,
                "roofline_ns": 6000.0, "portable_roofline_ns": 9000.0, "speedup": 77.7,
                "roofline_ratio": 1.5, "portable_roofline_ratio": 1.55,
                "block_period_ns": 725623.6, "target_ns": 15000.0, "target_speedup": 60.0,
                "target_roofline_ratio": 1.6, "portable_vs_best_roofline": 2.3,
                "target_portable_roofline_ratio": 2.5,
                "repeats": [{"block_ns": 9000.0, "portable_block_ns": 14000.0,
                    "naive_block_ns": 700000.0, "roofline_ns": 6000.0,
                    "portable_roofline_ns": 9000.0}]},
            "build_profile": "release", "thread_policy": "SCHED_OTHER",
            "host_steal_percent": null,
        })
    }

    /// The bench without `--workers` has no `workers` key, as `bench --json` prints it.
    #[test]
    fn a_bench_round_trips() {
        let b: Bench = round_trips(bench());
        assert!(b.workers.is_none());
        assert_eq!(b.kernels[0].name, "wavetable");
        let mut steal = bench();
        steal["host_steal_percent"] = json!(0.4);
        assert_eq!(round_trips::<Bench>(steal).host_steal_percent, Some(0.4));
    }

    /// With `--workers`: a 0 row without hand-offs, a 1 row with them.
    #[test]
    fn a_bench_with_workers_round_trips() {
        let mut b = bench();
        b["workers"] = json!({
            "method": "medians", "policy_requested": "SCHED_FIFO",
            "realtime_refused": null, "caller_cpus": [0], "rounds": 7,
            "blocks_per_round": 300, "sched_rt_runtime_us": 950000,
            "sched_rt_period_us": 1000000,
            "counts": [
                {"workers": 0, "threads": 1, "blocks": 2100, "block_median_ns": 8000.0,
                 "block_p99_ns": 9000.0, "speedup_vs_zero": 1.0, "speedup_vs_one": null,
                 "handoff_to_workers_ns": null, "handoff_back_ns": null, "handoff_ns": null,
                 "longest_part_ns": null, "caller_part_ns": null, "caller_part_alone_ns": null,
                 "realtime": true, "policy": "SCHED_FIFO:70", "worker_cpus": [],
                 "shares_cpu": false},
                {"workers": 1, "threads": 2, "blocks": 2100, "block_median_ns": 5000.0,
                 "block_p99_ns": 6000.0, "speedup_vs_zero": 1.6, "speedup_vs_one": 1.0,
                 "handoff_to_workers_ns": 300.0, "handoff_back_ns": 300.0, "handoff_ns": 600.0,
                 "longest_part_ns": 2500.0, "caller_part_ns": 2400.0,
                 "caller_part_alone_ns": 2000.0, "realtime": true, "policy": "SCHED_FIFO:70",
                 "worker_cpus": [[1]], "shares_cpu": false}]});
        let b: Bench = round_trips(b);
        assert_eq!(b.workers.unwrap().counts[1].handoff_ns, Some(600.0));
    }

    /// A ratio over a zero time is written `null` and reads back as NaN.
    #[test]
    fn a_float_that_was_not_finite_reads_as_nan() {
        let mut b = bench();
        b["migrator"]["speedup"] = Value::Null;
        let r: Bench = round_trips(b);
        assert!(r.migrator.speedup.is_nan());
    }
}
