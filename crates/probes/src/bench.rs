//! `audiolat bench` (the DSP kernels' cost and the voice capacity, measured by
//! [`dsp::bench`]) as JSON, with what its figures depend on besides the kernels.

use serde_json::{json, Value};

/// What a bench's figures depend on besides the kernels.
pub struct BenchFlags {
    /// The build profile audiolat was compiled with (the study's optimisation level).
    pub build_profile: String,
    /// The timing thread's scheduling policy.
    pub policy: String,
    /// Host steal over the run, percent of the machine's CPU time (`None`: not sampled).
    pub host_steal_percent: Option<f64>,
}

/// `audiolat bench` as JSON (what `report::view::bench::text` renders).
pub fn to_json(r: &dsp::bench::BenchReport, flags: &BenchFlags) -> Value {
    let k = |k: &dsp::bench::KernelTiming| {
        json!({"name": k.name, "voices": k.voices, "ns_per_sample": k.ns_per_sample,
               "ns_per_period": k.ns_per_period, "ns_per_voice_sample": k.ns_per_voice_sample,
               "ratio_to_reference": k.ratio_to_reference})
    };
    json!({
        "sample_rate_hz": r.config.sample_rate_hz,
        "period_frames": r.config.period_frames,
        "load_target": r.config.load_target,
        "period_ns": r.period_ns,
        "reference": k(&r.reference),
        "kernels": r.kernels.iter().map(k).collect::<Vec<_>>(),
        "voice_capacity": r.voice_capacity,
        "voice_capacity_is_lower_bound": r.voice_capacity >= dsp::bench::MAX_SEARCH_VOICES,
        "capacity_ns_per_period": r.capacity_ns_per_period,
        "migrator": {
            "kernel": r.migrator.kernel,
            "available_kernels": r.migrator.available_kernels,
            "unavailable_kernels": r.migrator.unavailable_kernels,
            "block_ns": r.migrator.block_ns,
            "portable_block_ns": r.migrator.portable_block_ns,
            "naive_block_ns": r.migrator.naive_block_ns,
            "roofline_ns": r.migrator.roofline_ns,
            "portable_roofline_ns": r.migrator.portable_roofline_ns,
            "speedup": r.migrator.speedup,
            "roofline_ratio": r.migrator.roofline_ratio,
            "portable_roofline_ratio": r.migrator.portable_roofline_ratio,
            "block_period_ns": r.migrator.block_period_ns,
            "target_ns": dsp::bench::MIGRATOR_TARGET_NS,
            "target_speedup": dsp::bench::MIGRATOR_TARGET_SPEEDUP,
            "target_roofline_ratio": dsp::bench::MIGRATOR_TARGET_ROOFLINE,
            "portable_vs_best_roofline": r.migrator.portable_vs_best_roofline,
            "target_portable_roofline_ratio": dsp::bench::MIGRATOR_TARGET_PORTABLE_ROOFLINE,
            "repeats": r.migrator.repeats.iter().map(|t| json!({
                "block_ns": t.block_ns, "portable_block_ns": t.portable_block_ns,
                "naive_block_ns": t.naive_block_ns, "roofline_ns": t.roofline_ns,
                "portable_roofline_ns": t.portable_roofline_ns,
            })).collect::<Vec<_>>(),
        },
        "build_profile": flags.build_profile,
        "thread_policy": flags.policy,
        "host_steal_percent": flags.host_steal_percent,
    })
}
