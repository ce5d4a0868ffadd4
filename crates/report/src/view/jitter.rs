//! A jitter run: its configuration, summary table, wake-up histogram, the fragment
//! model's under-runs, the largest wake-ups with the host steal around them, and notes.

use std::fmt::Write as _;

use results::records::{JitterConfigRecord, JitterResultRecord};
use results::RunView;
use serde_json::{json, Value};

use super::{ns_stat, shown_or_dash};
use crate::terminal::{flag_notes, fmt_ns, histogram, summary_table};

/// The jitter run's tables, as `audiolat jitter` and `audiolat show` print them.
pub fn text(run: &RunView) -> String {
    let r = run.result_as::<JitterResultRecord>().unwrap_or_default();
    let config = run.config_as::<JitterConfigRecord>().unwrap_or_default();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "jitter run {}: {} after {} cycles in {} s",
        run.id,
        run.status,
        shown_or_dash(r.cycles),
        r.run_ns
            .map_or("-".into(), |ns| format!("{:.1}", ns as f64 / 1e9))
    );
    let _ = writeln!(out, "{}\n", config_line(run, &config));
    out.push_str(&summary_table(&run.measurements));
    let _ = writeln!(out, "\nwake-up latency");
    if let Some(h) = run
        .measurement("wakeup_latency")
        .and_then(|m| m.histogram.as_ref())
    {
        out.push_str(&histogram(h, 40));
    }
    fragment_model(run, &config, &r, &mut out);
    largest_wakeups(&r, &mut out);
    if let Some(why) = &r.why {
        let what = super::why::what_missed(config.has_fragments());
        super::why::text(why, what, r.start_ns, &mut out);
    }
    if let Some(skipped) = r.skipped_deadlines.filter(|&n| n > 0) {
        let why = if config.has_fragments() {
            "the loop re-synchronised to the next period after each under-run, as a driver restarting after an xrun would"
        } else {
            "a cycle ended after them; see wakeup_latency_co_corrected"
        };
        let _ = writeln!(out, "\n{skipped} deadlines skipped ({why})");
    }
    notes(run, &mut out);
    out
}

/// The run as JSON: its configuration, load, granted settings, flags, measurement
/// summaries and the probe's results.
pub fn json(run: &RunView) -> Value {
    // The load is stored beside the configuration; the JSON has it on its own.
    let mut config = run.config.clone();
    if let Some(c) = config.as_object_mut() {
        c.remove("load");
    }
    json!({
        "run_id": run.id,
        "status": run.status,
        "config": config,
        "load": run.load,
        "qos_granted": run.qos_granted,
        "flags": run.flags,
        "measurements": run.measurements.iter().map(super::measurement_summary_json).collect::<Vec<_>>(),
        "result": run.result,
    })
}

/// What woke, how often, with what work, under which policy on which CPUs and load.
fn config_line(run: &RunView, c: &JitterConfigRecord) -> String {
    let period_ns = c.period_ns.unwrap_or(0) as f64;
    // A figure the fragment model lacks reads `null`, as its JSON did.
    let figure = |v: Option<u64>| v.map_or("null".into(), |v| v.to_string());
    let what = match &c.fragments {
        Some(f) => format!(
            "{} x {} frames at {} Hz (period {})",
            figure(f.fragments),
            figure(f.frames),
            figure(f.sample_rate),
            fmt_ns(period_ns)
        ),
        None => format!("{:.1} Hz (period {})", 1e9 / period_ns, fmt_ns(period_ns)),
    };
    let busy_percent = c.busy_percent.unwrap_or(0.0);
    let busy = if busy_percent > 0.0 {
        format!(", {busy_percent}% busy")
    } else {
        String::new()
    };
    let granted = run.qos_granted_record();
    format!(
        "{} wake-ups, {what}{busy}, {} on CPUs {}, load {}",
        c.mode.as_deref().unwrap_or("-"),
        granted.policy.as_deref().unwrap_or("-"),
        granted.cpus.as_deref().unwrap_or("-"),
        run.load_record().map_or("none".into(), |l| l.spec)
    )
}

/// The run's start on CLOCK_MONOTONIC: the probe's own, else the stored run's.
fn start_ns(run: &RunView, r: &JitterResultRecord) -> u64 {
    r.start_ns.unwrap_or(run.started_mono_ns)
}

/// The fragment model's headroom and its first would-be under-runs.
fn fragment_model(
    run: &RunView,
    config: &JitterConfigRecord,
    r: &JitterResultRecord,
    out: &mut String,
) {
    let (Some(f), Some(completion)) = (&config.fragments, run.measurement("fragment_completion"))
    else {
        return;
    };
    let _ = writeln!(
        out,
        "\nfragment model: headroom {} ((fragments-1) x period); {} would-be under-runs in {} fragments; worst completion {}",
        f.headroom_ns.map_or("-".into(), |ns| fmt_ns(ns as f64)),
        shown_or_dash(r.underruns),
        shown_or_dash(r.cycles),
        ns_stat(Some(completion), |s| s.max)
    );
    let start = start_ns(run, r);
    for u in run.events.iter().filter(|e| e.kind == "underrun").take(5) {
        let _ = writeln!(
            out,
            "  under-run at cycle {} ({:.3} s): work ended {} after its deadline",
            u.detail["cycle"],
            u.mono_ns.saturating_sub(start) as f64 / 1e9,
            fmt_ns(u.detail["completion_ns"].as_u64().unwrap_or(0) as f64)
        );
    }
}

/// The largest wake-ups, with the host steal on their CPU around each (nothing when the
/// run never stored them: a killed run).
fn largest_wakeups(r: &JitterResultRecord, out: &mut String) {
    let Some(outliers) = &r.outliers else {
        return;
    };
    let _ = writeln!(
        out,
        "\nlargest wake-ups (host steal on that CPU in the sampled window around each):"
    );
    for a in outliers.iter().take(5) {
        let window = fmt_ns(a.steal_window_ns.unwrap_or(0) as f64);
        let steal = match a.steal_ns_around.unwrap_or(0) {
            0 => format!("none in {window}"),
            ns => format!("{} in {window}", fmt_ns(ns as f64)),
        };
        let _ = writeln!(
            out,
            "  cycle {:>8} at {:>8.3} s on cpu{}: {:>9}   steal {steal}",
            a.cycle.unwrap_or(0),
            a.t_s.unwrap_or(0.0),
            a.cpu.unwrap_or(0),
            fmt_ns(a.latency_ns.unwrap_or(0) as f64),
        );
    }
}

/// Validity notes, settings the kernel refused, and loads that exited early.
fn notes(run: &RunView, out: &mut String) {
    let q = run.qos_granted_record();
    let mut notes = flag_notes(&run.flags);
    let refusals = [
        q.policy_refusal.clone().flatten(),
        q.affinity_refusal.clone().flatten(),
        q.memory_locked
            .as_ref()
            .and_then(|m| m.refusal().map(str::to_string)),
    ];
    for why in refusals.into_iter().flatten() {
        notes.push(format!("refused: {why}"));
    }
    if let Some(dma) = q.cpu_dma_latency.flatten() {
        if let (false, Some(why)) = (dma.held, &dma.refusal) {
            notes.push(format!("refused: {why}"));
        }
    }
    if !notes.is_empty() {
        let _ = writeln!(out);
        for n in notes {
            let _ = writeln!(out, "note: {n}");
        }
    }
    let exits = run.load_record().and_then(|l| l.exits);
    for e in exits.iter().flatten().filter(|e| e.early) {
        let _ = writeln!(
            out,
            "note: load {} exited during the run ({}): {}",
            e.item, e.status, e.stderr_tail
        );
    }
}
