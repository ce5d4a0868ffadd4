//! `audiolat show`: one stored run's record, its probe's tables, its measurements and its
//! events.

use results::probe_kind::{EVENT, JITTER, NET, ROUNDTRIP};
use results::records::doctor::DoctorResultRecord;
use results::records::Record;
use std::fmt::Write as _;

use results::run::RunRecord;
use results::{Event, Measurement, RunView};

use super::deadline_line;
use crate::terminal::{doctor_table, flag_notes, histogram, machine_line, summary_table};

/// One stored run as text: when, where, with what and what it was granted; then the
/// probe's own tables (the same a fresh run prints), then every measurement's summary;
/// then the findings and the events (`event_counts` of every
/// kind, `events` the ones to list).
pub fn text(
    record: &RunRecord,
    view: &RunView,
    event_counts: &[(String, u64)],
    events: &[Event],
) -> String {
    let mut out = record_lines(record);
    let probe = view.probe;
    if probe == &JITTER {
        let _ = writeln!(out);
        out.push_str(&super::jitter::text(view));
    } else if probe == &ROUNDTRIP {
        out.push_str(&super::roundtrip::text(std::slice::from_ref(view)));
    } else if probe == &EVENT {
        out.push_str(&super::event::text(std::slice::from_ref(view)));
    } else if probe == &NET && view.flags_record().role.is_some() {
        out.push_str(&super::net::end_text(view));
    } else if probe == &NET {
        out.push_str(&super::net::text(view));
    }
    // Every stored measurement's summary, as `show` always listed them (the probe's
    // tables above read them; this lists each, `-` where nothing was measured).
    measurement_lines(&view.measurements, &mut out);
    if let Some(doctor) = DoctorResultRecord::from_json(&record.result) {
        let _ = writeln!(out);
        out.push_str(&doctor_table(&doctor.findings));
    }
    if !event_counts.is_empty() {
        let counts: Vec<String> = event_counts
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        let _ = writeln!(out, "\nevents: {}", counts.join(", "));
        for e in events {
            let t = e.mono_ns as f64 / 1e9 - record.started_mono_ns as f64 / 1e9;
            let _ = writeln!(out, "  t={t:>+9.3} s  {:<10} {}", e.kind, e.detail);
        }
    }
    out
}

/// The run's record: id, probe, status, when, machine, tool, command, configuration,
/// load, what was granted, and its notes.
fn record_lines(run: &RunRecord) -> String {
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
    if let Some(load) = run.load_record() {
        if let Some(procs) = &load.processes {
            let _ = writeln!(out, "  load       {}", load.spec);
            for p in procs {
                let _ = writeln!(out, "             {}   [{}]", p.command, p.version);
            }
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
    out
}

/// A run's measurements for a probe without its own renderer: the summary table, the
/// deadlines missed, and the first histogram.
fn measurement_lines(ms: &[Measurement], out: &mut String) {
    if ms.is_empty() {
        return;
    }
    let _ = writeln!(out);
    out.push_str(&summary_table(ms));
    for m in ms {
        if let Some(line) = deadline_line(m) {
            let _ = writeln!(out, "{line}");
        }
    }
    if let Some((m, h)) = ms.iter().find_map(|m| m.histogram.as_ref().map(|h| (m, h))) {
        let _ = writeln!(out, "\n{}", m.metric);
        out.push_str(&histogram(h, 40));
    }
}
