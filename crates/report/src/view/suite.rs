//! `audiolat suite`: one row per scenario (the doctor first), their notes, and where the
//! runs are stored.

use results::Measurement;
use serde_json::{json, Value};

use crate::terminal::{headline_cells, Table};
use crate::units::fmt_count;

/// One scenario of a suite, as printed.
#[derive(Debug, Clone, Copy)]
pub struct SuiteRow<'a> {
    /// The scenario.
    pub label: &'a str,
    /// Its stored run.
    pub run_id: Option<results::RunId>,
    /// How it ended (a run's status, `failed`, `skipped`, `not run`).
    pub status: &'a str,
    /// The measurement it is summarised by.
    pub headline: Option<&'a Measurement>,
    /// Its dropouts, as every view counts them.
    pub dropouts: results::Dropouts,
    /// Validity flags as stored.
    pub flags: &'a Value,
    /// Why its misses were late, when causes were asked for.
    pub why: Option<&'a results::records::WhyRecord>,
    /// What to know about it, in words (empty: nothing).
    pub note: &'a str,
}

/// The suite's table, each row's note, the answer of its stored runs (`data`, when read
/// back: [`crate::summary::text`]), where its runs are stored and its report (when
/// written).
pub fn text(
    group: results::GroupId,
    rows: &[SuiteRow<'_>],
    data: Option<&crate::data::ReportData>,
    db: &std::path::Path,
    report: Option<&std::path::Path>,
) -> String {
    let mut t = Table::new(&[
        "run",
        "scenario",
        "status",
        "metric",
        "p50",
        "p99",
        "max",
        "under-runs",
        "rt",
        "steal",
        "why (top culprit)",
    ])
    .left_align(&[1, 2, 3, 8, 10]);
    for r in rows {
        let [metric, p50, p99, max] = headline_cells(r.headline);
        t.row(vec![
            r.run_id.map_or("-".into(), |i| i.to_string()),
            r.label.to_string(),
            r.status.to_string(),
            metric,
            p50,
            p99,
            max,
            crate::units::fmt_dropouts(&r.dropouts).unwrap_or_else(|| "-".into()),
            super::realtime_cell(r.flags).into(),
            super::steal_cell(r.flags),
            r.why
                .map_or("-".into(), |w| w.cell(crate::terminal::fmt_ns)),
        ]);
    }
    let mut out = format!("\naudiolat suite, group {group}\n\n");
    out.push_str(&t.render());
    for r in rows.iter().filter(|r| !r.note.is_empty()) {
        out.push_str(&format!("{}: {}\n", r.label, r.note));
    }
    if let Some(w) = rows.iter().find_map(|r| r.why) {
        out.push_str(&match &w.unavailable {
            Some(reason) => {
                format!("why: not traced ({reason}); the runs were measured without causes\n")
            }
            None => "why: causes traced from the kernel for every run (`audiolat jitter --why`, and the same flag on event, roundtrip and net); `audiolat show <run>` breaks down each miss\n".into(),
        });
    }
    if let Some(d) = data {
        out.push_str(&crate::summary::text(d));
    }
    out.push_str(&format!(
        "\nstored in {}; `audiolat runs --group {group}` lists the runs, `audiolat show <run>` shows one\n",
        db.display()
    ));
    if let Some(p) = report {
        out.push_str(&format!("report: {}\n", p.display()));
    }
    out
}

/// The event latency's note: its model, `no_card` when a private dummy server stood in
/// for a sound card.
pub fn event_model_note(
    (playback_latency_frames, unreported_sink_frames): (u32, Option<u32>),
    model_latency_ns: f64,
    no_card: bool,
) -> String {
    format!(
        "model: half a period + {playback_latency_frames} frames playback latency{} = {}{}",
        unreported_sink_frames.map_or_else(String::new, |f| format!(
            " + {f} frames the PipeWire sink adds, which the ports do not report"
        )),
        crate::terminal::fmt_ns(model_latency_ns),
        if no_card {
            " (no sound card here: a private jackd -d dummy; `audiolat devices` lists what can be measured)"
        } else {
            ""
        }
    )
}

/// The round trip's note: its verdict, and its mean (frames) against the latency the
/// ports report, when it measured any.
pub fn roundtrip_note(verdict: String, frames: Option<(f64, u32)>) -> String {
    match frames {
        None => verdict,
        Some((mean, reported)) => format!(
            "{verdict}; {mean:.3} frames = {reported} reported by the ports + {:.3} extra",
            mean - f64::from(reported)
        ),
    }
}

/// The network audio's note: its synth phase's (the host's responses past the deadline,
/// the blocks it answered, the blocks without an answer at the controller by the run's
/// end: `results::counts::NetBlocks`), none when it ended before that phase, and what
/// the synth adds after the last packet.
pub fn net_note(synth: Option<(u64, u64, u64)>, synth_adds_ns: Option<f64>) -> String {
    match synth {
        Some((past_deadline, answered, unanswered)) => format!(
            "{} of {} blocks missed the 1.41 ms deadline; {} without an answer by the run's end{}",
            fmt_count(past_deadline),
            fmt_count(answered),
            fmt_count(unanswered),
            synth_adds_ns.map_or_else(String::new, |ns| format!(
                "; the synth adds {} after the last packet",
                crate::terminal::fmt_ns(ns)
            ))
        ),
        None => "interrupted before the synth phase".into(),
    }
}

/// The suite's JSON: its group, how it ended, its report (when written), the doctor's
/// `doctor::json` and one row per scenario.
pub fn json(
    group: results::GroupId,
    status: results::RunStatus,
    report: Option<&std::path::Path>,
    doctor: Value,
    rows: &[SuiteRow<'_>],
) -> Value {
    json!({
        "group_id": group,
        "status": status,
        "report": report,
        "doctor": doctor,
        "runs": rows_json(rows),
    })
}

/// The rows as JSON (`runs` of the suite's JSON).
pub fn rows_json(rows: &[SuiteRow<'_>]) -> Value {
    json!(rows
        .iter()
        .map(|r| json!({
            "label": r.label, "run_id": r.run_id, "status": r.status,
            "metric": r.headline.map(|m| m.metric.clone()),
            "summary": r.headline.map(|m| results::export::summary_json(m.summary.as_ref())),
            "underruns": r.dropouts.underruns, "skipped_cycles": r.dropouts.skipped_cycles,
            "deadline_misses": r.dropouts.deadline_misses, "flags": r.flags, "note": r.note,
        }))
        .collect::<Vec<_>>())
}
