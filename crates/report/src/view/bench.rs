//! `audiolat bench`: the DSP kernels' cost, the voice capacity and the Migrator synth's
//! block, read from the bench's record (what `audiolat bench --json` prints as JSON).

use std::fmt::Write as _;

use results::records::bench::{Bench, Migrator, WorkerCount};

use crate::terminal::{fmt_ns, Table};

/// The bench as text, from its record (what `bench --json` prints).
pub fn text(b: &Bench) -> String {
    let mut t = Table::new(&[
        "kernel",
        "voices",
        "ns/sample",
        "ns/voice-sample",
        "ns/period",
        "vs f32::sin",
    ])
    .left_align(&[0]);
    for k in std::iter::once(&b.reference).chain(&b.kernels) {
        t.row(vec![
            k.name.clone(),
            k.voices.to_string(),
            format!("{:.2}", k.ns_per_sample),
            format!("{:.2}", k.ns_per_voice_sample),
            format!("{:.0}", k.ns_per_period),
            format!("{:.2}x", k.ratio_to_reference),
        ]);
    }
    let (period_ns, load_target) = (b.period_ns, b.load_target);
    let mut out = format!(
        "\nDSP capacity at {} Hz, {} frames per period ({}), median of repeated rounds\n\n",
        b.sample_rate_hz,
        b.period_frames,
        fmt_ns(period_ns)
    );
    out.push_str(&t.render());
    let _ = writeln!(
        out,
        "\nvoice capacity: {}{} wavetable voices (bank:{}) fit in {:.0}% of a period ({} of {})",
        if b.voice_capacity_is_lower_bound {
            "at least "
        } else {
            ""
        },
        b.voice_capacity,
        b.voice_capacity,
        load_target * 100.0,
        fmt_ns(b.capacity_ns_per_period),
        fmt_ns(period_ns * load_target)
    );
    migrator_lines(&b.migrator, &mut out);
    workers_lines(b, &mut out);
    let _ = writeln!(
        out,
        "built {}; timed on one thread at {}, hot cache (a lower bound on a callback's cost); host steal {} during the run",
        b.build_profile,
        b.thread_policy,
        b.host_steal_percent
            .map_or_else(|| "-".into(), |p| format!("{p:.1}%"))
    );
    let _ = writeln!(
        out,
        "the reference is a naive oscillator calling f32::sin per sample, timed in the same run; a ratio below 1 is faster"
    );
    out
}

/// The Migrator synth's block against its throughput reference and the study's target.
fn migrator_lines(m: &Migrator, out: &mut String) {
    let met = m.block_ns <= m.target_ns && m.speedup >= m.target_speedup;
    let repeats = m.repeats.len();
    let _ = writeln!(
        out,
        "\nMigrator synth block (32 objects x 100 oscillators x 32 frames, all pads pressed; the Tessellation study){}:\n  {} kernel {}, portable kernel {}, naive f32::sin reference {}: {:.0}x faster than the reference, {:.1}% of the block's {} period",
        if repeats > 1 { format!(", medians of {repeats} repeats") } else { String::new() },
        m.kernel,
        fmt_ns(m.block_ns),
        fmt_ns(m.portable_block_ns),
        fmt_ns(m.naive_block_ns),
        m.speedup,
        100.0 * m.block_ns / m.block_period_ns,
        fmt_ns(m.block_period_ns),
    );
    // A figure that was not finite is NaN (written `null`): no roofline line for it.
    if m.roofline_ns.is_finite() {
        let kernel = &m.kernel;
        // Beside its own, the portable kernel against the best kernel's roofline (wider
        // vectors and FMA): information, the target is against its own.
        let r = m.portable_vs_best_roofline;
        let vs_best = match r.is_finite() {
            true if kernel != "portable" => {
                format!(" and {r:.2}x the {kernel} roofline (half the vector width, no FMA)")
            }
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "  roofline (the block's multiply-adds and adds, none waiting on another) {} built as the kernel, {} built portable: the kernel takes {:.2}x its roofline, the portable kernel {:.2}x its own{vs_best}",
            fmt_ns(m.roofline_ns),
            fmt_ns(m.portable_roofline_ns),
            m.roofline_ratio,
            m.portable_roofline_ratio,
        );
    }
    let missing = m.unavailable_kernels.join(", ");
    let _ = writeln!(
        out,
        "  kernels this CPU runs: {}{}",
        m.available_kernels.join(", "),
        if missing.is_empty() {
            String::new()
        } else {
            format!("; compiled in but not run (this CPU lacks them): {missing}")
        }
    );
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    let _ = writeln!(
        out,
        "  targets: at most {} and at least {:.0}x the reference: {}",
        fmt_ns(m.target_ns),
        m.target_speedup,
        verdict(met)
    );
    if m.roofline_ns.is_finite() {
        let _ = writeln!(
            out,
            "  the kernel at most {:.1}x its roofline: {}; the portable kernel at most {:.1}x its own roofline ({:.2}x): {}",
            m.target_roofline_ratio,
            verdict(m.roofline_ratio <= m.target_roofline_ratio),
            m.target_portable_roofline_ratio,
            m.portable_roofline_ratio,
            verdict(m.portable_roofline_ratio <= m.target_portable_roofline_ratio),
        );
    }
}

/// The synth block split over the calling thread and worker threads (`bench
/// --workers`), one row per count, which figure the speed-ups are against, then each
/// count against the one before and where the hand-off dominates, worked out from the
/// figures. Nothing when the bench did not run it.
fn workers_lines(b: &Bench, out: &mut String) {
    let Some(w) = &b.workers else {
        return;
    };
    let counts = &w.counts;
    // A figure that was not finite was written `null`: "-" as a missing one.
    let finite = |v: Option<f64>| v.filter(|x| x.is_finite());
    let ns = |v: Option<f64>| finite(v).map_or_else(|| "-".to_string(), fmt_ns);
    let ratio = |v: Option<f64>| finite(v).map_or_else(|| "-".to_string(), |r| format!("{r:.2}x"));
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
        let cpus: Vec<String> = c
            .worker_cpus
            .iter()
            .map(|l| l.iter().map(u64::to_string).collect::<Vec<_>>().join("+"))
            .collect();
        t.row(vec![
            c.workers.to_string(),
            c.threads.to_string(),
            ns(Some(c.block_median_ns)),
            ns(Some(c.block_p99_ns)),
            ratio(c.speedup_vs_zero),
            ratio(c.speedup_vs_one),
            ns(c.handoff_to_workers_ns),
            ns(c.handoff_back_ns),
            ns(c.handoff_ns),
            ns(c.longest_part_ns),
            if cpus.is_empty() {
                "-".into()
            } else {
                cpus.join(",")
            },
        ]);
    }
    let policy = match &w.realtime_refused {
        Some(why) => format!("SCHED_OTHER: real-time refused ({why})"),
        None => w.policy_requested.clone(),
    };
    let caller_cpus = w.caller_cpus.iter().map(u64::to_string).collect::<Vec<_>>();
    let _ = writeln!(
        out,
        "\nMigrator block split over the calling thread and N worker threads (as `audiolat net --workers N`: N+1 parts of the 32 objects, the caller renders one), every thread {policy}, caller on CPU {}; medians and p99 of {} blocks per count in {} rounds:\n",
        caller_cpus.join("+"),
        w.blocks_per_round * w.rounds,
        w.rounds,
    );
    out.push_str(&t.render());
    let _ = writeln!(
        out,
        "  vs 0 is against the 0 row: the whole synth on the calling thread, timed here block by block as the splits are ({policy}, pinned); the single-thread Migrator block above ({}) is a mean of back-to-back calls at {} on an unpinned thread, not this reference",
        ns(Some(b.migrator.block_ns)),
        b.thread_policy,
    );
    workers_verdict(counts, out);
}

/// "1 worker (2 threads)", "3 workers (4 threads)".
fn count_name(c: &WorkerCount) -> String {
    let n = c.workers;
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
fn workers_verdict(counts: &[WorkerCount], out: &mut String) {
    // A figure not measured (or not finite) is NaN, as a missing one was.
    let f = |v: Option<f64>| v.unwrap_or(f64::NAN);
    let mut sorted: Vec<&WorkerCount> = counts.iter().collect();
    sorted.sort_by_key(|c| c.workers);
    let (mut previous, mut stops, mut half) = (None::<&WorkerCount>, None, None);
    for c in sorted.iter().copied().filter(|c| c.workers > 0) {
        let (block, handoff) = (c.block_median_ns, f(c.handoff_ns));
        let against = previous.unwrap_or(sorted[0]);
        let gain = against.block_median_ns / block;
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
            fmt_ns(f(c.longest_part_ns)),
            fmt_ns(f(c.caller_part_ns)),
            fmt_ns(f(c.caller_part_alone_ns)),
            if c.shares_cpu {
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
            fmt_ns(c.block_median_ns),
            fmt_ns(p.block_median_ns),
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
            fmt_ns(f(c.handoff_ns)),
            fmt_ns(c.block_median_ns),
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
    use super::*;

    fn count(workers: u64, block: f64, handoff: Option<f64>) -> WorkerCount {
        WorkerCount {
            workers,
            threads: workers + 1,
            blocks: 100,
            block_median_ns: block,
            block_p99_ns: block,
            speedup_vs_zero: None,
            speedup_vs_one: None,
            handoff_to_workers_ns: None,
            handoff_back_ns: None,
            handoff_ns: handoff,
            longest_part_ns: handoff.map(|_| block / 2.0),
            caller_part_ns: handoff.map(|_| block / 2.0 - 100.0),
            caller_part_alone_ns: handoff.map(|_| block / 4.0),
            realtime: false,
            policy: "SCHED_OTHER".into(),
            worker_cpus: Vec::new(),
            shares_cpu: false,
        }
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
