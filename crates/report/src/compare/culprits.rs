//! The culprits of two selections' misses side by side (`audiolat jitter --why`): a
//! row per culprit (its kind and name) any run's trace named, a column per run of a
//! probe some traced run has, each cell the culprit's time over that run and the misses
//! it took time in. A run that was not traced (not asked, or the kernel could not be
//! traced) is `-`, absent, never 0; a traced run in which a culprit took nothing is 0.

use std::fmt::Write as _;

use results::records::why::{WhyPart, WhyRecord};
use results::records::Record;
use results::RunId;
use serde_json::{json, Value};

use crate::data::ReportData;
use crate::units::{fmt_count, fmt_ns};
use crate::words::{cause_kind, escape, escape_code};

/// Rows the text and the HTML show (the JSON has every one).
pub const ROWS_SHOWN: usize = 12;

/// One run of either side.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// `A` or `B`.
    pub side: &'static str,
    /// The run.
    pub run_id: RunId,
    /// Its causes, when it asked for them (traced or not).
    pub why: Option<WhyRecord>,
}

impl Column {
    /// What its trace found, when the kernel was traced.
    pub fn traced(&self) -> Option<&WhyRecord> {
        self.why.as_ref().filter(|w| w.unavailable.is_none())
    }

    /// `A run 3`.
    pub fn label(&self) -> String {
        format!(
            "{} run {}",
            self.side,
            fmt_count(self.run_id.get().max(0) as u64)
        )
    }

    /// Why it has no culprits: `not traced: REASON` or `not traced (run without
    /// ...)`; `None` when traced.
    pub fn untraced_words(&self) -> Option<String> {
        match &self.why {
            None => Some("not traced (run without `audiolat jitter --why`)".into()),
            Some(w) => w.unavailable.as_ref().map(|r| format!("not traced: {r}")),
        }
    }
}

/// A culprit across the runs.
#[derive(Debug, Clone, PartialEq)]
pub struct CulpritRow {
    /// Its kind (`thread`, `irq`, ...).
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Per column: its time over the run, ns, and the misses it took time in (`None`:
    /// the run was not traced).
    pub cells: Vec<Option<(u64, u64)>>,
}

impl CulpritRow {
    fn largest_ns(&self) -> u64 {
        self.cells.iter().flatten().map(|c| c.0).max().unwrap_or(0)
    }
}

/// The culprits of both sides.
#[derive(Debug, Clone, PartialEq)]
pub struct Culprits {
    /// The runs, A's then B's.
    pub columns: Vec<Column>,
    /// The culprits, the largest time in any run first.
    pub rows: Vec<CulpritRow>,
}

/// The culprits side by side, or `None` when no run of either side was traced.
pub fn culprits(a: &ReportData, b: &ReportData) -> Option<Culprits> {
    let runs: Vec<(Column, &results::ProbeKind)> = [("A", a), ("B", b)]
        .into_iter()
        .flat_map(|(side, data)| {
            data.runs().map(move |r| {
                let column = Column {
                    side,
                    run_id: r.record.id,
                    why: WhyPart::from_json(&r.record.result).and_then(|p| p.why),
                };
                (column, r.record.probe)
            })
        })
        .collect();
    let traced: Vec<&results::ProbeKind> = runs
        .iter()
        .filter(|(c, _)| c.traced().is_some())
        .map(|(_, p)| *p)
        .collect();
    if traced.is_empty() {
        return None;
    }
    // Only runs of a probe traced somewhere: a run of another probe could not have been.
    let columns: Vec<Column> = runs
        .into_iter()
        .filter(|(_, p)| traced.contains(p))
        .map(|(c, _)| c)
        .collect();
    let mut rows: Vec<CulpritRow> = Vec::new();
    for w in columns.iter().filter_map(Column::traced) {
        for c in &w.culprits {
            if !rows.iter().any(|r| r.kind == c.kind && r.name == c.name) {
                rows.push(CulpritRow {
                    kind: c.kind.clone(),
                    name: c.name.clone(),
                    cells: Vec::new(),
                });
            }
        }
    }
    for row in &mut rows {
        row.cells = columns
            .iter()
            .map(|col| {
                let w = col.traced()?;
                Some(
                    w.culprits
                        .iter()
                        .filter(|c| c.kind == row.kind && c.name == row.name)
                        .fold((0, 0), |(ns, n), c| (ns + c.ns_total, n + c.misses)),
                )
            })
            .collect();
    }
    rows.sort_by(|x, y| {
        y.largest_ns()
            .cmp(&x.largest_ns())
            .then_with(|| (&x.kind, &x.name).cmp(&(&y.kind, &y.name)))
    });
    Some(Culprits { columns, rows })
}

/// A cell: `9.80 ms (9 of 12)`, `0 ns (0 of 12)` for a traced run the culprit took
/// nothing in, `-` for a run not traced.
fn cell(c: Option<(u64, u64)>, col: &Column) -> String {
    match (c, col.traced()) {
        (Some((ns, n)), Some(w)) => format!(
            "{} ({} of {})",
            fmt_ns(ns as f64),
            fmt_count(n),
            fmt_count(w.misses_explained)
        ),
        _ => "-".into(),
    }
}

const HEADING: &str = "culprits of the misses (`audiolat jitter --why`): each one's time over each run (the misses it took time in, of those the trace explained); `-`: the run was not traced";

/// The runs not traced, and why, in one line (`B run 4: not traced: ...`).
fn untraced(c: &Culprits) -> Vec<String> {
    c.columns
        .iter()
        .filter_map(|col| Some(format!("{}: {}", col.label(), col.untraced_words()?)))
        .collect()
}

/// The culprits as text, after the comparison's table.
pub fn text(c: &Culprits) -> String {
    let mut out = format!("\n{HEADING}\n");
    let mut header = vec!["  culprit".to_string(), "kind".to_string()];
    header.extend(c.columns.iter().map(Column::label));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = crate::terminal::Table::new(&header).left_align(&[0, 1]);
    for row in c.rows.iter().take(ROWS_SHOWN) {
        let mut cells = vec![format!("  {}", row.name), cause_kind(&row.kind)];
        cells.extend(
            row.cells
                .iter()
                .zip(&c.columns)
                .map(|(v, col)| cell(*v, col)),
        );
        t.row(cells);
    }
    out.push_str(&t.render());
    if c.rows.len() > ROWS_SHOWN {
        let _ = writeln!(out, "  ... {} more", c.rows.len() - ROWS_SHOWN);
    }
    if c.rows.is_empty() {
        out.push_str("  no miss to explain in the traced runs\n");
    }
    for line in untraced(c) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// The culprits as part of the comparison's section.
pub fn html(c: &Culprits) -> String {
    let mut out = format!(
        "<h3 id=\"comparison-why\">Culprits</h3>\n<p class=\"note\">{}.</p>\n",
        escape_code(&capitalised(HEADING))
    );
    if c.rows.is_empty() {
        out.push_str("<p>No miss to explain in the traced runs.</p>\n");
    } else {
        out.push_str("<div class=\"table-wrap\"><table class=\"compare why\"><thead><tr><th class=\"label\">culprit</th><th class=\"label\">kind</th>");
        for col in &c.columns {
            let _ = write!(out, "<th>{}</th>", escape(&col.label()));
        }
        out.push_str("</tr></thead><tbody>\n");
        for row in c.rows.iter().take(ROWS_SHOWN) {
            let _ = write!(
                out,
                "<tr><td class=\"label wrap\"><code>{}</code></td><td class=\"label\">{}</td>",
                escape(&row.name),
                escape(&cause_kind(&row.kind))
            );
            for (v, col) in row.cells.iter().zip(&c.columns) {
                let _ = write!(out, "<td class=\"nowrap\">{}</td>", escape(&cell(*v, col)));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table></div>\n");
        if c.rows.len() > ROWS_SHOWN {
            let more = format!(
                "And {} more culprits (`audiolat compare --json` lists every one).",
                c.rows.len() - ROWS_SHOWN
            );
            let _ = writeln!(out, "<p class=\"note\">{}</p>", escape_code(&more));
        }
    }
    for line in untraced(c) {
        let _ = writeln!(out, "<p class=\"note\">{}.</p>", escape_code(&line));
    }
    out
}

/// The culprits as JSON: the runs, then a row per culprit with each run's figures
/// (`null`: the run was not traced).
pub fn json(c: &Culprits) -> Value {
    json!({
        "runs": c.columns.iter().map(|col| json!({
            "side": col.side,
            "run_id": col.run_id,
            "traced": col.traced().is_some(),
            "asked": col.why.is_some(),
            "unavailable": col.why.as_ref().and_then(|w| w.unavailable.clone()),
            "misses_explained": col.traced().map(|w| w.misses_explained),
        })).collect::<Vec<_>>(),
        "rows": c.rows.iter().map(|r| json!({
            "kind": r.kind,
            "name": r.name,
            "runs": r.cells.iter().map(|v| v.map(|(ns, n)| json!({"ns_total": ns, "misses": n}))).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{test_run, CellData};
    use serde_json::json;

    fn side(runs: &[(i64, Value)]) -> ReportData {
        ReportData {
            cells: runs
                .iter()
                .map(|(id, result)| {
                    let mut run = test_run("jitter", result.clone(), Vec::new());
                    run.record.id = RunId(*id);
                    CellData {
                        key: format!("run {id}"),
                        axes: Default::default(),
                        profile: "current".into(),
                        status: Some(results::RunStatus::Complete),
                        error: None,
                        source: None,
                        run: Some(run),
                    }
                })
                .collect(),
            ..Default::default()
        }
    }

    fn traced(culprits: Value, explained: u64) -> Value {
        json!({"why": {"misses_explained": explained, "culprits": culprits}})
    }

    #[test]
    fn a_culprit_a_traced_run_did_not_name_is_zero_and_an_untraced_run_is_a_dash() {
        let a = side(&[(
            3,
            traced(
                json!([{"kind": "thread", "name": "<b>hog</b>", "ns_total": 9_800_000, "misses": 9}]),
                12,
            ),
        )]);
        let b = side(&[
            (
                4,
                traced(
                    json!([{"kind": "irq", "name": "nvme0q1", "ns_total": 1_000_000, "misses": 2}]),
                    3,
                ),
            ),
            (5, json!({})),
            (
                6,
                json!({"why": {"unavailable": "tracing the kernel needs root"}}),
            ),
        ]);
        let c = culprits(&a, &b).unwrap();
        let labels: Vec<String> = c.columns.iter().map(Column::label).collect();
        assert_eq!(labels, ["A run 3", "B run 4", "B run 5", "B run 6"]);
        assert_eq!(c.rows[0].name, "<b>hog</b>");
        assert_eq!(
            c.rows[0].cells,
            [Some((9_800_000, 9)), Some((0, 0)), None, None]
        );
        assert_eq!(
            c.rows[1].cells,
            [Some((0, 0)), Some((1_000_000, 2)), None, None]
        );

        let t = text(&c);
        let hog = t.lines().find(|l| l.contains("<b>hog</b>")).unwrap();
        assert!(hog.contains("9.80 ms (9 of 12)"), "{t}");
        assert!(hog.contains("0 ns (0 of 3)"), "{t}");
        assert_eq!(hog.matches(" -").count(), 2, "{t}");
        assert!(
            t.contains("B run 5: not traced (run without `audiolat jitter --why`)"),
            "{t}"
        );
        assert!(
            t.contains("B run 6: not traced: tracing the kernel needs root"),
            "{t}"
        );

        let h = html(&c);
        assert!(h.contains("<code>&lt;b&gt;hog&lt;/b&gt;</code>"), "{h}");
        assert!(!h.contains("<b>"), "{h}");
        assert!(h.contains("<td class=\"nowrap\">-</td>"), "{h}");

        let v = json(&c);
        assert_eq!(v["rows"][0]["runs"][0]["ns_total"], 9_800_000);
        assert_eq!(v["rows"][0]["runs"][1]["ns_total"], 0);
        assert!(v["rows"][0]["runs"][2].is_null());
        assert_eq!(v["runs"][3]["unavailable"], "tracing the kernel needs root");
        assert_eq!(v["runs"][2]["asked"], false);

        // The comparison carries them in each of its forms.
        let rows = crate::compare::compare(&a, &b, &[]);
        assert!(crate::compare::text(&a, &b, &rows, &[]).contains("culprits of the misses"));
        assert!(crate::compare::html(&a, &b, &rows, &[]).contains("id=\"comparison-why\""));
        assert_eq!(
            crate::compare::json(&a, &b, &rows, &[])["culprits"]["rows"][1]["name"],
            "nvme0q1"
        );
    }

    #[test]
    fn without_a_traced_run_there_is_no_culprits_part() {
        let a = side(&[(1, json!({}))]);
        let b = side(&[(2, json!({"why": {"unavailable": "needs root"}}))]);
        assert_eq!(culprits(&a, &b), None);
        let rows = crate::compare::compare(&a, &b, &[]);
        assert!(!crate::compare::text(&a, &b, &rows, &[]).contains("culprits"));
        assert!(crate::compare::json(&a, &b, &rows, &[])["culprits"].is_null());
    }
}
