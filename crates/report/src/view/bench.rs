//! `audiolat bench`: the DSP kernels' cost, the voice capacity and the Migrator synth's
//! block, read from the bench's JSON form (what `audiolat bench --json` prints).

use std::fmt::Write as _;

use serde_json::Value;

use crate::terminal::{fmt_ns, Table};

/// The bench as text, from its JSON form.
pub fn text(b: &Value) -> String {
    let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    let mut t = Table::new(&[
        "kernel",
        "voices",
        "ns/sample",
        "ns/voice-sample",
        "ns/period",
        "vs f32::sin",
    ])
    .left_align(&[0]);
    let kernels = b["kernels"].as_array().into_iter().flatten();
    for k in std::iter::once(&b["reference"]).chain(kernels) {
        t.row(vec![
            k["name"].as_str().unwrap_or("?").to_string(),
            k["voices"].to_string(),
            format!("{:.2}", f(&k["ns_per_sample"])),
            format!("{:.2}", f(&k["ns_per_voice_sample"])),
            format!("{:.0}", f(&k["ns_per_period"])),
            format!("{:.2}x", f(&k["ratio_to_reference"])),
        ]);
    }
    let period_ns = f(&b["period_ns"]);
    let load_target = f(&b["load_target"]);
    let mut out = format!(
        "\nDSP capacity at {} Hz, {} frames per period ({}), median of repeated rounds\n\n",
        b["sample_rate_hz"],
        b["period_frames"],
        fmt_ns(period_ns)
    );
    out.push_str(&t.render());
    let _ = writeln!(
        out,
        "\nvoice capacity: {}{} wavetable voices (bank:{}) fit in {:.0}% of a period ({} of {})",
        if b["voice_capacity_is_lower_bound"] == Value::Bool(true) {
            "at least "
        } else {
            ""
        },
        b["voice_capacity"],
        b["voice_capacity"],
        load_target * 100.0,
        fmt_ns(f(&b["capacity_ns_per_period"])),
        fmt_ns(period_ns * load_target)
    );
    migrator_lines(&b["migrator"], &mut out);
    let _ = writeln!(
        out,
        "built {}; timed on one thread at {}, hot cache (a lower bound on a callback's cost); host steal {} during the run",
        b["build_profile"].as_str().unwrap_or("?"),
        b["thread_policy"].as_str().unwrap_or("?"),
        b["host_steal_percent"]
            .as_f64()
            .map_or_else(|| "-".into(), |p| format!("{p:.1}%"))
    );
    let _ = writeln!(
        out,
        "the reference is a naive oscillator calling f32::sin per sample, timed in the same run; a ratio below 1 is faster"
    );
    out
}

/// The Migrator synth's block against its throughput reference and the study's target.
fn migrator_lines(m: &Value, out: &mut String) {
    let f = |k: &str| m[k].as_f64().unwrap_or(f64::NAN);
    let met = f("block_ns") <= f("target_ns") && f("speedup") >= f("target_speedup");
    let repeats = m["repeats"].as_array().map_or(1, Vec::len);
    let _ = writeln!(
        out,
        "\nMigrator synth block (32 objects x 100 oscillators x 32 frames, all pads pressed; the Tessellation study){}:\n  {} kernel {}, portable kernel {}, naive f32::sin reference {}: {:.0}x faster than the reference, {:.1}% of the block's {} period",
        if repeats > 1 { format!(", medians of {repeats} repeats") } else { String::new() },
        m["kernel"].as_str().unwrap_or("?"),
        fmt_ns(f("block_ns")),
        fmt_ns(f("portable_block_ns")),
        fmt_ns(f("naive_block_ns")),
        f("speedup"),
        100.0 * f("block_ns") / f("block_period_ns"),
        fmt_ns(f("block_period_ns")),
    );
    if m["roofline_ns"].is_number() {
        let kernel = m["kernel"].as_str().unwrap_or("?");
        // Beside its own, the portable kernel against the best kernel's roofline (wider
        // vectors and FMA): information, the target is against its own.
        let vs_best = match m["portable_vs_best_roofline"].as_f64() {
            Some(r) if kernel != "portable" => {
                format!(" and {r:.2}x the {kernel} roofline (half the vector width, no FMA)")
            }
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "  roofline (the block's multiply-adds and adds, none waiting on another) {} built as the kernel, {} built portable: the kernel takes {:.2}x its roofline, the portable kernel {:.2}x its own{vs_best}",
            fmt_ns(f("roofline_ns")),
            fmt_ns(f("portable_roofline_ns")),
            f("roofline_ratio"),
            f("portable_roofline_ratio"),
        );
    }
    let names = |k: &str| {
        let v: Vec<&str> = m[k]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        v.join(", ")
    };
    if m["available_kernels"].is_array() {
        let missing = names("unavailable_kernels");
        let _ = writeln!(
            out,
            "  kernels this CPU runs: {}{}",
            names("available_kernels"),
            if missing.is_empty() {
                String::new()
            } else {
                format!("; compiled in but not run (this CPU lacks them): {missing}")
            }
        );
    }
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    let _ = writeln!(
        out,
        "  targets: at most {} and at least {:.0}x the reference: {}",
        fmt_ns(f("target_ns")),
        f("target_speedup"),
        verdict(met)
    );
    if m["roofline_ns"].is_number() {
        let _ = writeln!(
            out,
            "  the kernel at most {:.1}x its roofline: {}; the portable kernel at most {:.1}x its own roofline ({:.2}x): {}",
            f("target_roofline_ratio"),
            verdict(f("roofline_ratio") <= f("target_roofline_ratio")),
            f("target_portable_roofline_ratio"),
            f("portable_roofline_ratio"),
            verdict(f("portable_roofline_ratio") <= f("target_portable_roofline_ratio")),
        );
    }
}
