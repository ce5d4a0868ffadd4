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
    workers_lines(b, &mut out);
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

/// The synth block split over the calling thread and worker threads (`bench
/// --workers`), one row per count, which figure the speed-ups are against, then each
/// count against the one before and where the hand-off dominates, worked out from the
/// figures. Nothing when the bench did not run it.
fn workers_lines(b: &Value, out: &mut String) {
    let w = &b["workers"];
    let Some(counts) = w["counts"].as_array() else {
        return;
    };
    let ns = |v: &Value| v.as_f64().map_or_else(|| "-".to_string(), fmt_ns);
    let ratio = |v: &Value| {
        v.as_f64()
            .map_or_else(|| "-".to_string(), |r| format!("{r:.2}x"))
    };
    let mut t = Table::new(&[
        "workers",
        "threads",
        "block p50",
        "block p99",
        "vs 0",
        "vs 1",
        "to workers",
        "back",
        "hand-off",
        "longest part",
        "worker CPUs",
    ]);
    for c in counts {
        let cpus: Vec<String> = c["worker_cpus"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|l| {
                l.as_array()
                    .into_iter()
                    .flatten()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join("+")
            })
            .collect();
        t.row(vec![
            c["workers"].to_string(),
            c["threads"].to_string(),
            ns(&c["block_median_ns"]),
            ns(&c["block_p99_ns"]),
            ratio(&c["speedup_vs_zero"]),
            ratio(&c["speedup_vs_one"]),
            ns(&c["handoff_to_workers_ns"]),
            ns(&c["handoff_back_ns"]),
            ns(&c["handoff_ns"]),
            ns(&c["longest_part_ns"]),
            if cpus.is_empty() {
                "-".into()
            } else {
                cpus.join(",")
            },
        ]);
    }
    let policy = match w["realtime_refused"].as_str() {
        Some(why) => format!("SCHED_OTHER: real-time refused ({why})"),
        None => w["policy_requested"].as_str().unwrap_or("?").to_string(),
    };
    let caller_cpus = w["caller_cpus"].as_array().into_iter().flatten();
    let caller_cpus = caller_cpus.map(Value::to_string).collect::<Vec<_>>();
    let _ = writeln!(
        out,
        "\nMigrator block split over the calling thread and N worker threads (as `audiolat net --workers N`: N+1 parts of the 32 objects, the caller renders one), every thread {policy}, caller on CPU {}; medians and p99 of {} blocks per count in {} rounds:\n",
        caller_cpus.join("+"),
        w["blocks_per_round"].as_u64().unwrap_or(0) * w["rounds"].as_u64().unwrap_or(0),
        w["rounds"],
    );
    out.push_str(&t.render());
    let _ = writeln!(
        out,
        "  vs 0 is against the 0 row: the whole synth on the calling thread, timed here block by block as the splits are ({policy}, pinned); the single-thread Migrator block above ({}) is a mean of back-to-back calls at {} on an unpinned thread, not this reference",
        ns(&b["migrator"]["block_ns"]),
        b["thread_policy"].as_str().unwrap_or("?"),
    );
    workers_verdict(counts, out);
}

/// "1 worker (2 threads)", "3 workers (4 threads)".
fn count_name(c: &Value) -> String {
    let n = c["workers"].as_u64().unwrap_or(0);
    format!(
        "{n} worker{} ({} thread{})",
        if n == 1 { "" } else { "s" },
        n + 1,
        if n == 0 { "" } else { "s" }
    )
}

/// Each worker count against the one below it (the lowest against the 0 row), then where
/// block time stops falling and where the hand-off is half the block or more: from the
/// figures, counts in order.
fn workers_verdict(counts: &[Value], out: &mut String) {
    let f = |c: &Value, k: &str| c[k].as_f64().unwrap_or(f64::NAN);
    let mut sorted: Vec<&Value> = counts.iter().collect();
    sorted.sort_by_key(|c| c["workers"].as_u64().unwrap_or(0));
    let (mut previous, mut stops, mut half) = (None::<&Value>, None, None);
    for c in sorted
        .iter()
        .copied()
        .filter(|c| c["workers"].as_u64().unwrap_or(0) > 0)
    {
        let (block, handoff) = (f(c, "block_median_ns"), f(c, "handoff_ns"));
        let against = previous.unwrap_or(sorted[0]);
        let gain = f(against, "block_median_ns") / block;
        let _ = writeln!(
            out,
            "  {}: {} than {}; hand-off {} of {} (longest part {}; the caller's part {} beside the workers, {} alone){}",
            count_name(c),
            if gain >= 1.0 {
                format!("{gain:.2}x faster")
            } else {
                format!("{:.2}x slower", 1.0 / gain)
            },
            match previous {
                Some(p) => count_name(p),
                None => "the whole synth on the calling thread".into(),
            },
            fmt_ns(handoff),
            fmt_ns(block),
            fmt_ns(f(c, "longest_part_ns")),
            fmt_ns(f(c, "caller_part_ns")),
            fmt_ns(f(c, "caller_part_alone_ns")),
            if c["shares_cpu"] == true {
                " (a worker shares the caller's CPU)"
            } else {
                ""
            },
        );
        if stops.is_none() && gain <= 1.0 {
            stops = Some((against, c));
        }
        if half.is_none() && 2.0 * handoff >= block {
            half = Some(c);
        }
        previous = Some(c);
    }
    let Some(last) = previous else { return };
    let _ = match stops {
        Some((p, c)) => writeln!(
            out,
            "  on this machine block time stops falling at {}: {} against {} with {}",
            count_name(c),
            fmt_ns(f(c, "block_median_ns")),
            fmt_ns(f(p, "block_median_ns")),
            count_name(p),
        ),
        None => writeln!(
            out,
            "  on this machine block time falls with every worker count tried (up to {})",
            count_name(last),
        ),
    };
    let _ = match half {
        Some(c) => writeln!(
            out,
            "  the hand-off dominates from {}: {} of the {} block",
            count_name(c),
            fmt_ns(f(c, "handoff_ns")),
            fmt_ns(f(c, "block_median_ns")),
        ),
        None => writeln!(
            out,
            "  the hand-off stays under half the block up to {}",
            count_name(last),
        ),
    };
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn count(workers: u64, block: f64, handoff: Option<f64>) -> Value {
        json!({
            "workers": workers, "threads": workers + 1,
            "block_median_ns": block, "handoff_ns": handoff,
            "longest_part_ns": handoff.map(|_| block / 2.0),
            "caller_part_ns": handoff.map(|_| block / 2.0 - 100.0),
            "caller_part_alone_ns": handoff.map(|_| block / 4.0),
            "shares_cpu": false,
        })
    }

    /// The verdict follows the figures: a split slower than the 0 row stops the fall at
    /// its first count; a fall over every count says so; the hand-off dominates from the
    /// first count where it is half the block.
    #[test]
    fn the_verdict_is_worked_out_from_the_figures() {
        let mut out = String::new();
        workers_verdict(
            &[count(0, 8_000.0, None), count(1, 9_000.0, Some(600.0))],
            &mut out,
        );
        assert!(out.contains("1 worker (2 threads): 1.12x slower than the whole synth on the calling thread; hand-off 600 ns of 9.0 us (longest part 4.5 us; the caller's part 4.4 us beside the workers, 2.2 us alone)"), "{out}");
        assert!(out.contains("stops falling at 1 worker (2 threads): 9.0 us against 8.0 us with 0 workers (1 thread)"), "{out}");
        assert!(
            out.contains("the hand-off stays under half the block up to 1 worker (2 threads)"),
            "{out}"
        );
        let mut out = String::new();
        workers_verdict(
            &[
                count(2, 3_000.0, Some(1_600.0)),
                count(0, 8_000.0, None),
                count(1, 5_000.0, Some(600.0)),
            ],
            &mut out,
        );
        assert!(
            out.contains("1 worker (2 threads): 1.60x faster than the whole synth"),
            "{out}"
        );
        assert!(
            out.contains("2 workers (3 threads): 1.67x faster than 1 worker (2 threads)"),
            "{out}"
        );
        assert!(
            out.contains("falls with every worker count tried (up to 2 workers (3 threads))"),
            "{out}"
        );
        assert!(
            out.contains(
                "the hand-off dominates from 2 workers (3 threads): 1.6 us of the 3.0 us block"
            ),
            "{out}"
        );
    }
}
