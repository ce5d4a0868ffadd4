//! `audiolat suite`: one row per scenario (the doctor first), their notes, and where the
//! runs are stored.

use results::Measurement;
use serde_json::{json, Value};

use crate::terminal::{headline_cells, Table};

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
    /// Under-runs (or xruns), when the probe counts them.
    pub underruns: Option<u64>,
    /// Validity flags as stored.
    pub flags: &'a Value,
    /// What to know about it, in words (empty: nothing).
    pub note: &'a str,
}

/// The suite's table, each row's note and where its runs are stored.
pub fn text(group: results::GroupId, rows: &[SuiteRow<'_>], db: &std::path::Path) -> String {
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
    ])
    .left_align(&[1, 2, 3, 8]);
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
            r.underruns.map_or("-".into(), |u| u.to_string()),
            match r.flags["realtime"].as_bool() {
                Some(true) => "yes".into(),
                Some(false) => "NO".into(),
                None => "-".into(),
            },
            r.flags["host_steal_percent"]
                .as_f64()
                .map_or("-".into(), |p| format!("{p:.1}%")),
        ]);
    }
    let mut out = format!("\naudiolat suite, group {group}\n\n");
    out.push_str(&t.render());
    for r in rows.iter().filter(|r| !r.note.is_empty()) {
        out.push_str(&format!("{}: {}\n", r.label, r.note));
    }
    out.push_str(&format!(
        "\nstored in {}; `audiolat runs --group {group}` lists the runs, `audiolat show <run>` shows one\n",
        db.display()
    ));
    out
}

/// The rows as JSON (`runs` of the suite's JSON).
pub fn rows_json(rows: &[SuiteRow<'_>]) -> Value {
    json!(rows
        .iter()
        .map(|r| json!({
            "label": r.label, "run_id": r.run_id, "status": r.status,
            "metric": r.headline.map(|m| m.metric.clone()),
            "summary": r.headline.map(|m| results::export::summary_json(m.summary.as_ref())),
            "underruns": r.underruns, "flags": r.flags, "note": r.note,
        }))
        .collect::<Vec<_>>())
}
