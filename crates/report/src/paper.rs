//! Paper-shaped tables: a plan's `[[report.table]]`s, laid out as the study laid out its
//! figures (e.g. buffer/period rows x optimisation and scenario columns), each measured
//! value the aggregate of its cell's repeats, with the study's published value beside it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::data::{CellData, ReportData};

/// One cell of a paper table.
#[derive(Debug, Clone, PartialEq)]
pub struct TableCell {
    /// The measured value (aggregated over the repeats), scaled.
    pub value: Option<f64>,
    /// Standard deviation across the repeats (with two or more).
    pub spread: Option<f64>,
    /// Runs the value is made of.
    pub runs: usize,
    /// The study's value, when published.
    pub published: Option<Value>,
    /// Why there is no value (not run here, failed, pending).
    pub note: Option<String>,
}

/// A table laid out like a study's figure.
#[derive(Debug, Clone, PartialEq)]
pub struct PaperTable {
    /// Title.
    pub title: String,
    /// Unit of the values.
    pub unit: String,
    /// Digits after the decimal point.
    pub digits: usize,
    /// Names of the row axes.
    pub row_axes: Vec<String>,
    /// Names of the column axes (outermost first) with their labels.
    pub column_axes: Vec<(String, Vec<String>)>,
    /// Rows: labels, then one cell per column combination.
    pub rows: Vec<(Vec<String>, Vec<TableCell>)>,
    /// The published figure's caption, when there is one.
    pub caption: Option<String>,
    /// How repeats combine.
    pub aggregate: String,
    /// The value's path.
    pub value: String,
}

impl PaperTable {
    /// Column headings, one string per column (labels joined by a space).
    pub fn column_labels(&self) -> Vec<String> {
        if self.column_axes.is_empty() {
            return vec![if self.unit.is_empty() {
                "value".to_string()
            } else {
                self.unit.clone()
            }];
        }
        combos(&self.column_axes)
            .into_iter()
            .map(|c| c.join(" "))
            .collect()
    }

    /// Why cells are empty, each reason once (cells the plan has no combination for
    /// need none).
    pub fn notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = self
            .rows
            .iter()
            .flat_map(|(_, c)| c.iter().filter_map(|x| x.note.clone()))
            .filter(|n| n != "not in this plan")
            .collect();
        notes.sort();
        notes.dedup();
        notes
    }

    /// Formats a value with the table's digits.
    pub fn fmt(&self, v: f64) -> String {
        format!("{v:.*}", self.digits)
    }
}

fn combos(axes: &[(String, Vec<String>)]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = vec![Vec::new()];
    for (_, labels) in axes {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                labels.iter().map(move |l| {
                    let mut p = prefix.clone();
                    p.push(l.clone());
                    p
                })
            })
            .collect();
    }
    out
}

fn aggregate(values: &[f64], how: &str) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    Some(match how {
        "sum" => values.iter().sum(),
        "max" => values.iter().cloned().fold(f64::MIN, f64::max),
        "min" => values.iter().cloned().fold(f64::MAX, f64::min),
        _ => values.iter().sum::<f64>() / values.len() as f64,
    })
}

/// The sample standard deviation, with two or more values.
pub fn spread(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    Some((values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt())
}

fn matches(cell: &CellData, fixed: &BTreeMap<String, String>) -> bool {
    fixed.iter().all(|(k, v)| cell.axes.get(k) == Some(v))
}

/// The plan's tables, filled from its cells.
pub fn tables(data: &ReportData) -> Vec<PaperTable> {
    let Some(plan) = &data.plan else {
        return Vec::new();
    };
    let Some(specs) = plan["report"]["table"].as_array() else {
        return Vec::new();
    };
    let axes = data.axes();
    specs
        .iter()
        .map(|spec| table(data, plan, &axes, spec))
        .collect()
}

/// The labels of the plan's axis `name` (none for an unknown axis).
fn axis_labels(axes: &[(String, Vec<String>)], name: &str) -> Vec<String> {
    axes.iter()
        .find(|(n, _)| n == name)
        .map(|(_, l)| l.clone())
        .unwrap_or_default()
}

/// The strings of a JSON array (none for anything else).
fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// One `[[report.table]]` of the plan (`spec`), filled from its cells.
fn table(
    data: &ReportData,
    plan: &Value,
    axes: &[(String, Vec<String>)],
    spec: &Value,
) -> PaperTable {
    let labels_of = |name: &str| axis_labels(axes, name);
    let value = spec["value"].as_str().unwrap_or("").to_string();
    let scale = spec["scale"].as_f64().unwrap_or(1.0);
    let digits = spec["digits"].as_u64().unwrap_or(2) as usize;
    let how = spec["aggregate"].as_str().unwrap_or("mean").to_string();
    // Only runs whose value at this path is zero count (e.g. no under-runs).
    let valid_if_zero = spec["valid_if_zero"].as_str().map(str::to_string);
    let row_axes = names(&spec["rows"]);
    let column_axes: Vec<(String, Vec<String>)> = names(&spec["columns"])
        .into_iter()
        .map(|n| {
            let l = labels_of(&n);
            (n, l)
        })
        .collect();
    let filter: BTreeMap<String, String> = spec["filter"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let label = match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    (k.clone(), label)
                })
                .collect()
        })
        .unwrap_or_default();
    let published = spec["published"]
        .as_str()
        .map(|k| &plan["published"][k])
        .filter(|p| p.is_object());
    let published_rows = published.and_then(|p| p["rows"].as_object());
    let row_list = table_rows(data, axes, &row_axes, &filter, published_rows);
    let columns = combos(&column_axes);
    let mut rows = Vec::new();
    for r in &row_list {
        let mut cells = Vec::new();
        for (ci, c) in columns.iter().enumerate() {
            let mut fixed = filter.clone();
            fixed.extend(row_axes.iter().cloned().zip(r.iter().cloned()));
            fixed.extend(
                column_axes
                    .iter()
                    .map(|(n, _)| n.clone())
                    .zip(c.iter().cloned()),
            );
            let matching: Vec<&CellData> =
                data.cells.iter().filter(|x| matches(x, &fixed)).collect();
            let values: Vec<f64> = matching
                .iter()
                .filter(|x| x.status == Some(results::RunStatus::Complete))
                .filter(|x| match (&valid_if_zero, &x.run) {
                    (Some(path), Some(r)) => r.value(path) == Some(0.0),
                    _ => true,
                })
                .filter_map(|x| x.run.as_ref()?.value(&value))
                .map(|v| v * scale)
                .collect();
            let note = values
                .is_empty()
                .then(|| why_no_value(data, &matching, &fixed, valid_if_zero.as_deref(), &value));
            let published = published_rows
                .and_then(|rows| rows.get(&r.join(" ")))
                .and_then(|v| v.as_array())
                .and_then(|a| a.get(ci))
                .cloned();
            cells.push(TableCell {
                value: aggregate(&values, &how),
                spread: spread(&values),
                runs: values.len(),
                published,
                note,
            });
        }
        rows.push((r.clone(), cells));
    }
    PaperTable {
        title: spec["title"].as_str().unwrap_or(&value).to_string(),
        unit: spec["unit"].as_str().unwrap_or("").to_string(),
        digits,
        row_axes,
        column_axes,
        rows,
        caption: published.and_then(|p| p["caption"].as_str().map(str::to_string)),
        aggregate: how,
        value,
    }
}

/// A table's rows: the published figure's (its shape), else every combination of the
/// row axes that has a cell; in the order of the first row axis's labels.
fn table_rows(
    data: &ReportData,
    axes: &[(String, Vec<String>)],
    row_axes: &[String],
    filter: &BTreeMap<String, String>,
    published_rows: Option<&serde_json::Map<String, Value>>,
) -> Vec<Vec<String>> {
    let labels_of = |name: &str| axis_labels(axes, name);
    let row_list: Vec<Vec<String>> = match published_rows {
        Some(rows) if row_axes.len() == 1 => rows.keys().map(|k| vec![k.clone()]).collect(),
        _ => {
            let all = combos(
                &row_axes
                    .iter()
                    .map(|n| (n.clone(), labels_of(n)))
                    .collect::<Vec<_>>(),
            );
            all.into_iter()
                .filter(|r| {
                    let mut fixed = filter.clone();
                    fixed.extend(row_axes.iter().cloned().zip(r.iter().cloned()));
                    data.cells.iter().any(|c| matches(c, &fixed))
                })
                .collect()
        }
    };
    // A published row's key order is the file's; keep the axis order instead.
    {
        let order = row_axes.first().map(|n| labels_of(n)).unwrap_or_default();
        let mut r = row_list;
        r.sort_by_key(|labels| {
            order
                .iter()
                .position(|l| Some(l) == labels.first())
                .unwrap_or(usize::MAX)
        });
        r
    }
}

/// Why a table cell has no value: not in the plan (or excluded here), not run yet, its
/// runs lack the value, or how they ended.
fn why_no_value(
    data: &ReportData,
    matching: &[&CellData],
    fixed: &BTreeMap<String, String>,
    valid_if_zero: Option<&str>,
    value: &str,
) -> String {
    if matching.is_empty() {
        data.exclusion(fixed)
            .map(|r| format!("not run here: {r}"))
            .unwrap_or_else(|| "not in this plan".into())
    } else if matching.iter().all(|x| x.status.is_none()) {
        "not run yet".into()
    } else if matching
        .iter()
        .any(|x| x.status == Some(results::RunStatus::Complete))
    {
        match valid_if_zero {
            Some(p) => format!("no run with {p} = 0"),
            None => format!("no `{value}` in the run"),
        }
    } else {
        let reason = matching
            .iter()
            .find_map(|x| {
                x.error
                    .clone()
                    .or_else(|| x.run.as_ref()?.record.error.clone())
            })
            .unwrap_or_default();
        format!(
            "{}{}",
            matching
                .iter()
                .find_map(|x| x.status)
                .map(|s| s.to_string())
                .unwrap_or_default(),
            if reason.is_empty() {
                String::new()
            } else {
                format!(": {reason}")
            }
        )
    }
}

fn fmt_published(v: &Value, digits: usize) -> String {
    match v {
        Value::Number(n) => format!("{:.*}", digits, n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => s.clone(),
        _ => "-".into(),
    }
}

/// The tables as text: each value, with the published one in parentheses.
pub fn tables_text(data: &ReportData) -> String {
    let mut out = String::new();
    for t in tables(data) {
        let _ = writeln!(out, "\n{}", t.title);
        let has_published = t
            .rows
            .iter()
            .any(|(_, c)| c.iter().any(|x| x.published.is_some()));
        if has_published {
            let _ = writeln!(
                out,
                "measured here (the study's value in parentheses){}",
                t.caption
                    .as_ref()
                    .map(|c| format!("; study: {c}"))
                    .unwrap_or_default()
            );
        }
        let mut header: Vec<String> = vec![t.row_axes.join("/")];
        header.extend(t.column_labels());
        let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut table = crate::terminal::Table::new(&header_refs);
        for (labels, cells) in &t.rows {
            let mut row = vec![labels.join(" ")];
            for c in cells {
                let measured = match c.value {
                    Some(v) => t.fmt(v),
                    None => "-".into(),
                };
                row.push(match &c.published {
                    Some(p) => format!("{measured} ({})", fmt_published(p, t.digits)),
                    None => measured,
                });
            }
            table.row(row);
        }
        out.push_str(&table.render());
        for n in t.notes() {
            let _ = writeln!(out, "  -: {n}");
        }
    }
    out + &crate::view::gates::report_text(data)
}

/// The tables as JSON.
pub fn tables_json(data: &ReportData) -> Value {
    Value::Array(
        tables(data)
            .into_iter()
            .map(|t| {
                json!({
                    "title": t.title,
                    "unit": t.unit,
                    "value": t.value,
                    "aggregate": t.aggregate,
                    "rows_by": t.row_axes,
                    "columns": t.column_labels(),
                    "caption": t.caption,
                    "rows": t.rows.iter().map(|(labels, cells)| json!({
                        "labels": labels,
                        "cells": cells.iter().map(|c| json!({
                            "value": c.value, "spread": c.spread, "runs": c.runs,
                            "published": c.published, "note": c.note,
                        })).collect::<Vec<_>>(),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::RunStatus;

    fn run(latency_ms: f64) -> crate::data::RunData {
        crate::data::test_run(
            "event",
            json!({"latency_ms": {"mean": latency_ms}, "underruns": {"steady": 1}}),
            Vec::new(),
        )
    }

    fn cell(backend: &str, buffer: &str, repeat: u32, v: Option<f64>) -> CellData {
        CellData {
            key: format!("{backend} {buffer} {repeat}"),
            axes: [
                ("backend".to_string(), backend.to_string()),
                ("buffer".to_string(), buffer.to_string()),
                ("repeat".to_string(), repeat.to_string()),
            ]
            .into(),
            profile: "current".into(),
            status: v.map(|_| RunStatus::Complete),
            error: None,
            source: None,
            run: v.map(run),
        }
    }

    #[test]
    fn a_table_averages_repeats_puts_the_published_value_beside_and_says_why_a_cell_is_empty() {
        let data = ReportData {
            plan: Some(json!({
                "axes": [
                    {"name": "backend", "labels": ["alsa", "jack"]},
                    {"name": "buffer", "labels": ["128/64", "256/64"]},
                ],
                "exclude": [{"axes": {"backend": ["jack"], "buffer": ["256/64"]}, "reason": "two periods"}],
                "report": {"table": [
                    {"title": "T", "value": "result.latency_ms.mean", "digits": 1,
                     "rows": ["buffer"], "columns": ["backend"], "published": "f"},
                    {"title": "U", "value": "result.underruns.steady", "aggregate": "sum",
                     "rows": ["buffer"], "columns": ["backend"]},
                ]},
                "published": {"f": {"caption": "Fig", "rows": {"256/64": [6.4, 6.3], "128/64": [5.6, 4.5]}}},
            })),
            cells: vec![
                cell("alsa", "128/64", 1, Some(5.0)),
                cell("alsa", "128/64", 2, Some(6.0)),
                cell("alsa", "256/64", 1, Some(7.0)),
                cell("jack", "128/64", 1, None),
            ],
            ..Default::default()
        };
        let t = tables(&data);
        assert_eq!(t.len(), 2);
        let fig = &t[0];
        // Rows in the axis's order, not the published table's.
        assert_eq!(fig.rows[0].0, ["128/64"]);
        let alsa_128 = &fig.rows[0].1[0];
        assert_eq!(alsa_128.value, Some(5.5));
        assert_eq!(alsa_128.runs, 2);
        assert!((alsa_128.spread.unwrap() - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-9);
        assert_eq!(alsa_128.published, Some(json!(5.6)));
        assert_eq!(fig.rows[0].1[1].note.as_deref(), Some("not run yet"));
        assert_eq!(
            fig.rows[1].1[1].note.as_deref(),
            Some("not run here: two periods")
        );
        assert_eq!(t[1].rows[0].1[0].value, Some(2.0));
        let text = tables_text(&data);
        assert!(text.contains("5.5 (5.6)"), "{text}");
        assert!(text.contains("not run here: two periods"), "{text}");
    }
}
