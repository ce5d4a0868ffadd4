//! `audiolat bench` (the DSP kernels' cost and the voice capacity, measured by
//! [`dsp::bench`]) as its record (printed as JSON), with what its figures depend on
//! besides the kernels.

use results::records::bench::{Bench, KernelTiming, Migrator, MigratorRepeat};

/// What a bench's figures depend on besides the kernels.
pub struct BenchFlags {
    /// The build profile audiolat was compiled with (the study's optimisation level).
    pub build_profile: String,
    /// The timing thread's scheduling policy.
    pub policy: String,
    /// Host steal over the run, percent of the machine's CPU time (`None`: not sampled).
    pub host_steal_percent: Option<f64>,
}

/// A figure as the bench's record holds it: NaN when it is not finite (written `null`,
/// as JSON has no such number, and read back as NaN).
pub(crate) fn finite_or_nan(x: f64) -> f64 {
    if x.is_finite() {
        x
    } else {
        f64::NAN
    }
}

/// `audiolat bench` as its record (what `bench --json` prints as JSON and
/// `report::view::bench::text` renders); `workers` is `None` (`bench --workers` adds it).
pub fn record(r: &dsp::bench::BenchReport, flags: &BenchFlags) -> Bench {
    let f = finite_or_nan;
    let k = |k: &dsp::bench::KernelTiming| KernelTiming {
        name: k.name.clone(),
        voices: k.voices as u64,
        ns_per_sample: f(k.ns_per_sample),
        ns_per_period: f(k.ns_per_period),
        ns_per_voice_sample: f(k.ns_per_voice_sample),
        ratio_to_reference: f(k.ratio_to_reference),
    };
    let m = &r.migrator;
    Bench {
        sample_rate_hz: r.config.sample_rate_hz,
        period_frames: r.config.period_frames as u64,
        load_target: f(r.config.load_target),
        period_ns: f(r.period_ns),
        reference: k(&r.reference),
        kernels: r.kernels.iter().map(k).collect(),
        voice_capacity: r.voice_capacity as u64,
        voice_capacity_is_lower_bound: r.voice_capacity >= dsp::bench::MAX_SEARCH_VOICES,
        capacity_ns_per_period: f(r.capacity_ns_per_period),
        migrator: Migrator {
            kernel: m.kernel.clone(),
            available_kernels: m.available_kernels.clone(),
            unavailable_kernels: m.unavailable_kernels.clone(),
            block_ns: f(m.block_ns),
            portable_block_ns: f(m.portable_block_ns),
            naive_block_ns: f(m.naive_block_ns),
            roofline_ns: f(m.roofline_ns),
            portable_roofline_ns: f(m.portable_roofline_ns),
            speedup: f(m.speedup),
            roofline_ratio: f(m.roofline_ratio),
            portable_roofline_ratio: f(m.portable_roofline_ratio),
            block_period_ns: f(m.block_period_ns),
            target_ns: dsp::bench::MIGRATOR_TARGET_NS,
            target_speedup: dsp::bench::MIGRATOR_TARGET_SPEEDUP,
            target_roofline_ratio: dsp::bench::MIGRATOR_TARGET_ROOFLINE,
            portable_vs_best_roofline: f(m.portable_vs_best_roofline),
            target_portable_roofline_ratio: dsp::bench::MIGRATOR_TARGET_PORTABLE_ROOFLINE,
            repeats: m
                .repeats
                .iter()
                .map(|t| MigratorRepeat {
                    block_ns: f(t.block_ns),
                    portable_block_ns: f(t.portable_block_ns),
                    naive_block_ns: f(t.naive_block_ns),
                    roofline_ns: f(t.roofline_ns),
                    portable_roofline_ns: f(t.portable_roofline_ns),
                })
                .collect(),
        },
        build_profile: flags.build_profile.clone(),
        thread_policy: flags.policy.clone(),
        host_steal_percent: flags.host_steal_percent.filter(|p| p.is_finite()),
        workers: None,
    }
}
