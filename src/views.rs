//! What the commands print: text for people, JSON for machines.

use std::fmt::Write as _;

use anyhow::Result;
use probes::doctor::DoctorReport;
use probes::jitter::JitterOutcome;
use report::terminal::{doctor_table, flag_notes, fmt_ns, histogram, machine_line, summary_table};
use results::export;
use results::model::{MeasurementRecord, RunRecord};
use results::{Event, Measurement, Store};
use serde_json::{json, Value};

use crate::runner::JitterRun;

/// Doctor as text.
pub fn doctor_text(r: &DoctorReport) -> String {
    let mut out = format!("{}\n\n", machine_line(&r.machine));
    out.push_str(&doctor_table(&r.findings));
    out
}

/// Doctor as JSON.
pub fn doctor_json(r: &DoctorReport) -> Value {
    let (ok, warn, fail) = r.counts();
    json!({"machine": r.machine, "findings": r.findings,
           "counts": {"ok": ok, "warn": warn, "fail": fail}})
}

fn config_line(o: &JitterOutcome, load: &str) -> String {
    let c = &o.config;
    let what = match &c.fragments {
        Some(f) => format!(
            "{} x {} frames at {} Hz (period {})",
            f.fragments,
            f.frames,
            f.sample_rate,
            fmt_ns(c.period_ns as f64)
        ),
        None => format!(
            "{:.1} Hz (period {})",
            1e9 / c.period_ns as f64,
            fmt_ns(c.period_ns as f64)
        ),
    };
    let busy = if c.busy_percent > 0.0 {
        format!(", {}% busy", c.busy_percent)
    } else {
        String::new()
    };
    format!(
        "{} wake-ups, {what}{busy}, {} on CPUs {}, load {load}",
        c.mode.name(),
        o.thread.sched.granted,
        engine::rt::format_cpu_list(&o.thread.cpus_granted)
    )
}

/// A jitter run as text.
pub fn jitter_text(run: &JitterRun, db: &std::path::Path) -> String {
    let o = &run.outcome;
    let load = run.load["spec"].as_str().unwrap_or("none");
    let mut out = String::new();
    let _ = writeln!(
        out,
        "jitter run {}: {} after {} cycles in {:.1} s",
        run.run_id,
        run.status,
        o.recorded.cycles,
        o.end_ns.saturating_sub(o.start_ns) as f64 / 1e9
    );
    let _ = writeln!(out, "{}\n", config_line(o, load));
    out.push_str(&summary_table(&run.measurements));
    let _ = writeln!(out, "\nwake-up latency");
    out.push_str(&histogram(&o.recorded.histograms.latency, 40));
    if let (Some(f), Some(c)) = (&o.config.fragments, &o.recorded.histograms.completion) {
        let _ = writeln!(
            out,
            "\nfragment model: headroom {} ((fragments-1) x period); {} would-be under-runs in {} fragments; worst completion {}",
            fmt_ns(f.headroom_ns() as f64),
            o.recorded.underrun_count,
            o.recorded.cycles,
            fmt_ns(c.max() as f64)
        );
        for u in o.recorded.underruns.iter().take(5) {
            let _ = writeln!(
                out,
                "  under-run at cycle {} ({:.3} s): work ended {} after its deadline",
                u.cycle,
                u.deadline_ns.saturating_sub(o.start_ns) as f64 / 1e9,
                fmt_ns(u.value_ns as f64)
            );
        }
    }
    let _ = writeln!(
        out,
        "\nlargest wake-ups (host steal on that CPU in the sampled window around each):"
    );
    for a in o.attributed_outliers().iter().take(5) {
        let steal = if a.steal_ns > 0 {
            format!(
                "{} in {}",
                fmt_ns(a.steal_ns as f64),
                fmt_ns(a.window_ns as f64)
            )
        } else {
            format!("none in {}", fmt_ns(a.window_ns as f64))
        };
        let _ = writeln!(
            out,
            "  cycle {:>8} at {:>8.3} s on cpu{}: {:>9}   steal {steal}",
            a.record.cycle,
            a.record.deadline_ns.saturating_sub(o.start_ns) as f64 / 1e9,
            a.record.cpu,
            fmt_ns(a.record.value_ns as f64),
        );
    }
    if o.recorded.skipped > 0 {
        let _ = writeln!(
            out,
            "\n{} deadlines skipped (a cycle ended after them); see wakeup_latency_co_corrected",
            o.recorded.skipped
        );
    }
    let mut notes = flag_notes(&run.flags);
    for refusal in [
        &o.thread.sched.refusal,
        &o.thread.affinity_refusal,
        &o.memory.refusal,
    ]
    .into_iter()
    .flatten()
    {
        notes.push(format!("refused: {refusal}"));
    }
    if let Some((false, _, Some(why))) = &o.dma_latency {
        notes.push(format!("refused: {why}"));
    }
    if !notes.is_empty() {
        let _ = writeln!(out);
        for n in notes {
            let _ = writeln!(out, "note: {n}");
        }
    }
    if let Some(exits) = run.load["exits"].as_array() {
        for e in exits.iter().filter(|e| e["early"] == json!(true)) {
            let _ = writeln!(
                out,
                "note: load {} exited during the run ({}): {}",
                e["item"].as_str().unwrap_or("?"),
                e["status"].as_str().unwrap_or("?"),
                e["stderr_tail"].as_str().unwrap_or("")
            );
        }
    }
    let _ = writeln!(out, "\nstored as run {} in {}", run.run_id, db.display());
    out
}

fn measurement_summary_json(m: &Measurement) -> Value {
    json!({
        "metric": m.metric, "unit": m.unit, "method": m.method,
        "summary": export::summary_json(&m.summary), "overflows": m.overflows(),
        "deadline": m.deadline, "misses": m.misses,
    })
}

/// A jitter run as JSON.
pub fn jitter_json(run: &JitterRun) -> Value {
    json!({
        "run_id": run.run_id,
        "status": run.status,
        "config": run.outcome.config.to_json(),
        "load": run.load,
        "qos_granted": run.outcome.qos_granted(),
        "flags": run.flags,
        "measurements": run.measurements.iter().map(measurement_summary_json).collect::<Vec<_>>(),
        "result": run.outcome.result_json(),
    })
}

/// The measurement a run is summarised by in lists: the first one stored.
pub fn headline(store: &Store, run: &RunRecord) -> Result<Option<Measurement>> {
    Ok(store
        .measurements(run.id)?
        .into_iter()
        .next()
        .map(|m| m.measurement))
}

/// One stored run as text.
pub fn show_text(
    run: &RunRecord,
    measurements: &[MeasurementRecord],
    event_counts: &[(String, u64)],
    events: &[Event],
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "run {}: {} {}", run.id, run.probe, run.status);
    if let Some(g) = run.group_id {
        let _ = writeln!(out, "  group      {g}");
    }
    let _ = writeln!(
        out,
        "  started    {}{}",
        run.started_at,
        run.duration_s
            .map_or(String::new(), |d| format!(", {d:.1} s"))
    );
    let _ = writeln!(out, "  machine    {}", machine_line(&run.machine));
    let _ = writeln!(
        out,
        "  tool       audiolat {} (commit {}, {})",
        run.tool.version, run.tool.git_commit, run.tool.build_profile
    );
    let _ = writeln!(out, "  command    {}", run.command_line);
    let _ = writeln!(out, "  config     {}", run.config);
    if let Some(procs) = run.load["processes"].as_array() {
        let _ = writeln!(
            out,
            "  load       {}",
            run.load["spec"].as_str().unwrap_or("none")
        );
        for p in procs {
            let _ = writeln!(
                out,
                "             {}   [{}]",
                p["command"].as_str().unwrap_or(""),
                p["version"].as_str().unwrap_or("")
            );
        }
    }
    if run.qos_granted.as_object().is_some_and(|o| !o.is_empty()) {
        let _ = writeln!(out, "  granted    {}", run.qos_granted);
    }
    if let Some(e) = &run.error {
        let _ = writeln!(out, "  note       {e}");
    }
    for n in flag_notes(&run.flags) {
        let _ = writeln!(out, "  validity   {n}");
    }
    if !measurements.is_empty() {
        let ms: Vec<Measurement> = measurements.iter().map(|m| m.measurement.clone()).collect();
        let _ = writeln!(out);
        out.push_str(&summary_table(&ms));
        for m in &ms {
            if let (Some(d), Some(miss)) = (m.deadline, m.misses) {
                let _ = writeln!(
                    out,
                    "{}: {} of {} missed the deadline of {}",
                    m.metric,
                    miss,
                    m.summary.count,
                    fmt_ns(d)
                );
            }
        }
        if let Some(h) = ms.iter().find_map(|m| m.histogram.as_ref().map(|h| (m, h))) {
            let _ = writeln!(out, "\n{}", h.0.metric);
            out.push_str(&histogram(h.1, 40));
        }
    }
    if let Some(findings) = run.result["findings"].as_array() {
        let findings: Vec<results::Finding> = findings
            .iter()
            .filter_map(|f| serde_json::from_value(f.clone()).ok())
            .collect();
        let _ = writeln!(out);
        out.push_str(&doctor_table(&findings));
    }
    if !event_counts.is_empty() {
        let counts: Vec<String> = event_counts
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        let _ = writeln!(out, "\nevents: {}", counts.join(", "));
        for e in events {
            let t = e.mono_ns as f64 / 1e9 - run.started_mono_ns as f64 / 1e9;
            let _ = writeln!(out, "  t={t:>+9.3} s  {:<10} {}", e.kind, e.detail);
        }
    }
    out
}
