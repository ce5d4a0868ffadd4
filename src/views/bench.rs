//! `audiolat bench`: the DSP kernels' cost and the voice capacity.

use std::fmt::Write as _;

use report::terminal::fmt_ns;
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

/// `audiolat bench` as text.
pub fn bench_text(r: &dsp::bench::BenchReport, flags: &BenchFlags) -> String {
    use report::terminal::Table;
    let mut t = Table::new(&[
        "kernel",
        "voices",
        "ns/sample",
        "ns/voice-sample",
        "ns/period",
        "vs f32::sin",
    ])
    .left_align(&[0]);
    for k in std::iter::once(&r.reference).chain(r.kernels.iter()) {
        t.row(vec![
            k.name.clone(),
            k.voices.to_string(),
            format!("{:.2}", k.ns_per_sample),
            format!("{:.2}", k.ns_per_voice_sample),
            format!("{:.0}", k.ns_per_period),
            format!("{:.2}x", k.ratio_to_reference),
        ]);
    }
    let mut out = format!(
        "\nDSP capacity at {} Hz, {} frames per period ({}), median of repeated rounds\n\n",
        r.config.sample_rate_hz,
        r.config.period_frames,
        fmt_ns(r.period_ns)
    );
    out.push_str(&t.render());
    let capped = r.voice_capacity >= dsp::bench::MAX_SEARCH_VOICES;
    let _ = writeln!(
        out,
        "\nvoice capacity: {}{} wavetable voices (bank:{}) fit in {:.0}% of a period ({} of {})",
        if capped { "at least " } else { "" },
        r.voice_capacity,
        r.voice_capacity,
        r.config.load_target * 100.0,
        fmt_ns(r.capacity_ns_per_period),
        fmt_ns(r.period_ns * r.config.load_target)
    );
    let m = &r.migrator;
    let met = m.block_ns <= dsp::bench::MIGRATOR_TARGET_NS
        && m.speedup >= dsp::bench::MIGRATOR_TARGET_SPEEDUP;
    let _ = writeln!(
        out,
        "\nMigrator synth block (32 objects x 100 oscillators x 32 frames, all pads pressed; the Tessellation study):\n  {} kernel {}, portable kernel {}, naive f32::sin reference {}: {:.0}x faster than the reference, {:.1}% of the block's {} period\n  target: at most {} and at least {:.0}x the reference: {}",
        m.kernel,
        fmt_ns(m.block_ns),
        fmt_ns(m.portable_block_ns),
        fmt_ns(m.naive_block_ns),
        m.speedup,
        100.0 * m.block_ns / m.block_period_ns,
        fmt_ns(m.block_period_ns),
        fmt_ns(dsp::bench::MIGRATOR_TARGET_NS),
        dsp::bench::MIGRATOR_TARGET_SPEEDUP,
        if met { "met" } else { "NOT met" }
    );
    let _ = writeln!(
        out,
        "built {}; timed on one thread at {}, hot cache (a lower bound on a callback's cost); host steal {} during the run",
        flags.build_profile,
        flags.policy,
        flags
            .host_steal_percent
            .map_or_else(|| "-".into(), |p| format!("{p:.1}%"))
    );
    let _ = writeln!(
        out,
        "the reference is a naive oscillator calling f32::sin per sample, timed in the same run; a ratio below 1 is faster"
    );
    out
}

/// `audiolat bench` as JSON.
pub fn bench_json(r: &dsp::bench::BenchReport, flags: &BenchFlags) -> Value {
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
            "block_ns": r.migrator.block_ns,
            "portable_block_ns": r.migrator.portable_block_ns,
            "naive_block_ns": r.migrator.naive_block_ns,
            "speedup": r.migrator.speedup,
            "block_period_ns": r.migrator.block_period_ns,
            "target_ns": dsp::bench::MIGRATOR_TARGET_NS,
            "target_speedup": dsp::bench::MIGRATOR_TARGET_SPEEDUP,
        },
        "build_profile": flags.build_profile,
        "thread_policy": flags.policy,
        "host_steal_percent": flags.host_steal_percent,
    })
}
