//! What is stored, listed: `audiolat runs` (each run with its headline) and `audiolat
//! runs --groups` (each group with its runs and, for a plan run, its cells).

use results::model::GroupRecord;
use results::records::{JitterResultRecord, Record};
use results::run::RunRecord;
use results::{Measurement, RunFilter, RunStatus, Store, StoreError};
use serde_json::{json, Value};

use crate::terminal::Table;

/// The runs `filter` selects, each with the measurement it is summarised by.
pub fn run_rows(
    store: &Store,
    filter: &RunFilter,
) -> Result<Vec<(RunRecord, Option<Measurement>)>, StoreError> {
    store
        .list_runs(filter)?
        .into_iter()
        .map(|r| {
            let h = crate::gather::headline(store, &r)?;
            Ok((r, h))
        })
        .collect()
}

/// `audiolat runs --json`.
pub fn runs_json(rows: &[(RunRecord, Option<Measurement>)]) -> Value {
    json!(rows
        .iter()
        .map(|(r, h)| json!({
            "id": r.id, "group_id": r.group_id, "probe": r.probe, "status": r.status,
            "started_at": r.started_at, "duration_s": r.duration_s, "flags": r.flags,
            "metric": h.as_ref().map(|m| m.metric.clone()),
            "summary": h.as_ref().map(|m| results::export::summary_json(m.summary.as_ref())),
        }))
        .collect::<Vec<_>>())
}

/// A group as listed: its record, its runs, and for a plan run its cells (complete,
/// total).
#[derive(Debug, Clone)]
pub struct GroupRow {
    /// The group.
    pub group: GroupRecord,
    /// How many runs are filed under it.
    pub runs: usize,
    /// A plan run's cells: complete, total.
    pub cells: Option<(usize, usize)>,
}

/// The latest `limit` groups, newest first.
pub fn group_rows(store: &Store, limit: usize) -> Result<Vec<GroupRow>, StoreError> {
    let mut rows = Vec::new();
    for g in store.list_groups(None)?.into_iter().take(limit) {
        let runs = store.list_runs(&RunFilter {
            group_id: Some(g.id),
            ..Default::default()
        })?;
        let cells = if g.kind == "plan" {
            let cells = store.plan_cells(g.id)?;
            let complete = cells
                .iter()
                .filter(|c| c.status == Some(RunStatus::Complete))
                .count();
            Some((complete, cells.len()))
        } else {
            None
        };
        rows.push(GroupRow {
            group: g,
            runs: runs.len(),
            cells,
        });
    }
    Ok(rows)
}

/// `audiolat runs --groups --json`.
pub fn groups_json(rows: &[GroupRow]) -> Value {
    json!(rows
        .iter()
        .map(
            |GroupRow {
                 group: g,
                 runs: n,
                 cells,
             }| json!({
                "id": g.id, "kind": g.kind, "name": g.detail["name"], "status": g.status,
                "started_at": g.started_at, "ended_at": g.ended_at, "runs": n,
                "cells": cells.map(|(c, t)| json!({"complete": c, "total": t})),
                "command_line": g.command_line,
            })
        )
        .collect::<Vec<_>>())
}

/// `audiolat runs --groups`: the table and where to go next, or that there is none.
pub fn groups_text(rows: &[GroupRow]) -> String {
    if rows.is_empty() {
        return "no groups stored yet (a plan, a sweep or `audiolat suite` makes one)\n".into();
    }
    let mut t = Table::new(&[
        "group", "kind", "name", "status", "started", "runs", "cells", "command",
    ])
    .left_align(&[1, 2, 3, 4, 7]);
    for GroupRow {
        group: g,
        runs: n,
        cells,
    } in rows
    {
        t.row(vec![
            g.id.to_string(),
            g.kind.clone(),
            g.detail["name"].as_str().unwrap_or("-").to_string(),
            g.status.to_string(),
            g.started_at.replace('T', " ").chars().take(19).collect(),
            n.to_string(),
            cells
                .map(|(c, t)| format!("{c}/{t}"))
                .unwrap_or_else(|| "-".into()),
            g.command_line.clone(),
        ]);
    }
    t.render()
        + "`audiolat report group:N` writes a group's report; `audiolat compare group:A group:B` compares two\n"
}

/// `audiolat report --print`: the report's tables in the terminal: its answer, a row
/// per run (its headline, as every list shows it, and its under-runs, as every view
/// counts them), a line per run that failed a gate, then a plan's study tables.
pub fn report_text(data: &crate::data::ReportData) -> String {
    let mut out = crate::summary::text(data);
    let mut t = Table::new(&[
        "cell",
        "run",
        "probe",
        "status",
        "metric",
        "p50",
        "p99",
        "max",
        "under-runs",
    ])
    .left_align(&[0, 2, 3, 4]);
    for c in &data.cells {
        let Some(r) = &c.run else {
            let status = c.status.map_or("pending".into(), |s| s.to_string());
            t.row(vec![
                c.key.clone(),
                "-".into(),
                "-".into(),
                status,
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]);
            continue;
        };
        let [metric, p50, p99, max] = crate::terminal::headline_cells(r.headline());
        t.row(vec![
            c.key.clone(),
            r.record.id.to_string(),
            r.record.probe.to_string(),
            r.record.status.to_string(),
            metric,
            p50,
            p99,
            max,
            crate::units::fmt_dropouts(&r.dropouts()).unwrap_or_else(|| "-".into()),
        ]);
    }
    if !data.cells.is_empty() {
        out.push('\n');
        out.push_str(&t.render());
    }
    // A line per run that failed a gate, with what failed it.
    for (key, run, failed) in super::gates::failures(data) {
        let what: Vec<String> = failed
            .iter()
            .map(|g| match &g.reason {
                Some(why) => format!("{} ({why})", g.expr),
                None => format!("{} (measured {})", g.expr, g.value_text()),
            })
            .collect();
        out.push_str(&format!(
            "run {run} ({key}) failed its gates: {}\n",
            what.join("; ")
        ));
    }
    out + &crate::paper::tables_text(data)
}

/// The file name a report is written to beside the database, for its data: `plan-N`
/// or `group-N` for one group (`group`), else by its runs (`run-N`, `runs-A-to-B`).
pub fn report_name(group: Option<results::GroupId>, data: &crate::data::ReportData) -> String {
    if let Some(g) = group {
        return match &data.group {
            Some(gr) if gr.kind == "plan" => format!("plan-{g}"),
            _ => format!("group-{g}"),
        };
    }
    let ids: Vec<results::RunId> = data.runs().map(|r| r.record.id).collect();
    match ids.as_slice() {
        [] => "empty".into(),
        [one] => format!("run-{one}"),
        [first, .., last] => format!("runs-{first}-to-{last}"),
    }
}

/// The run as `show` prints it: the probe's tables from the stored view ([`super::run::text`]),
/// its event counts and its first `events` events.
pub fn run_text(store: &Store, run: &RunRecord, events: usize) -> Result<String, StoreError> {
    let measurements = store.measurements(run.id)?;
    let counts = store.event_counts(run.id)?;
    let listed = store.events(run.id, Some(events))?;
    let view = results::RunView::from_stored(
        run,
        &measurements,
        store.events(run.id, None)?,
        store.triggers(run.id)?,
    );
    let gates = super::gates::text(run.id, &store.gates(run.id)?);
    Ok(super::run::text(run, &view, &counts, &listed) + &gates)
}

/// The run in full as JSON: record, measurements with their buckets, events, series,
/// triggers and gate verdicts (`show --json`, `export --format json`).
pub fn run_json(store: &Store, run: &RunRecord) -> Result<Value, StoreError> {
    let measurements = store.measurements(run.id)?;
    let events = store.events(run.id, None)?;
    let series = store.series(run.id)?;
    let triggers = store.triggers(run.id)?;
    let mut out = results::export::run_json(run, &measurements, &events, &series, &triggers);
    out["gates"] = super::gates::json(&store.gates(run.id)?);
    Ok(out)
}

/// What a run can be exported as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportKind {
    /// The run in full ([`run_json`]).
    Json,
    /// One row per measurement with its summary.
    Csv,
    /// HdrHistogram interval log.
    Hdr,
    /// cyclictest's histogram of a jitter run's wake-up latency.
    Cyclictest,
    /// A jitter run in the layout of `cyclictest --json` (rt-tests 2.4).
    CyclictestJson,
    /// The run's histograms as OpenMetrics text.
    OpenMetrics,
    /// One CSV row per trigger of an event run.
    Triggers,
    /// The run's series as CSV blocks.
    Series,
    /// One CSV row per threshold gate with its verdict.
    Gates,
    /// LAVA result lines (`NAME RESULT [MEASUREMENT UNITS]`).
    Lava,
    /// JUnit XML: a test case per gate, the metrics as properties.
    Junit,
}

impl ExportKind {
    /// Every format, in the order `audiolat export --help` lists them.
    pub const ALL: [ExportKind; 11] = [
        ExportKind::Json,
        ExportKind::Csv,
        ExportKind::Hdr,
        ExportKind::Cyclictest,
        ExportKind::CyclictestJson,
        ExportKind::OpenMetrics,
        ExportKind::Lava,
        ExportKind::Junit,
        ExportKind::Triggers,
        ExportKind::Series,
        ExportKind::Gates,
    ];
}

/// Why a run could not be exported.
#[derive(Debug)]
pub enum ExportError {
    /// The store could not be read.
    Store(StoreError),
    /// Triggers asked of a run that is not an event run and has none.
    NoTriggers,
    /// Series asked of a run that has none.
    NoSeries,
    /// cyclictest's histogram asked of a run of another probe than jitter.
    NotJitter,
    /// A jitter run without a wake-up latency histogram.
    NoHistogram,
    /// A format of one run asked of several (a sweep's `--format`).
    OneRunOnly,
}

impl From<StoreError> for ExportError {
    fn from(e: StoreError) -> ExportError {
        ExportError::Store(e)
    }
}

/// The text of `run` exported as `kind`.
pub fn export(store: &Store, run: &RunRecord, kind: ExportKind) -> Result<String, ExportError> {
    use results::export as x;
    Ok(match kind {
        ExportKind::Json => {
            serde_json::to_string_pretty(&run_json(store, run)?).unwrap_or_default() + "\n"
        }
        ExportKind::Triggers => {
            let triggers = store.triggers(run.id)?;
            // An event run that measured no trigger exports the header alone.
            if triggers.is_empty() && !run.probe.triggers {
                return Err(ExportError::NoTriggers);
            }
            x::triggers_csv(run, &triggers)
        }
        ExportKind::Series => {
            let series = store.series(run.id)?;
            if series.is_empty() {
                return Err(ExportError::NoSeries);
            }
            x::series_csv(run, &series)
        }
        ExportKind::Gates => super::gates::csv(run.id, &store.gates(run.id)?),
        ExportKind::Csv => x::measurements_csv(run, &store.measurements(run.id)?),
        ExportKind::Hdr => x::hdr_log(run, &store.measurements(run.id)?),
        ExportKind::OpenMetrics | ExportKind::Lava | ExportKind::Junit => {
            return farm_text(store, std::slice::from_ref(run), kind)
        }
        ExportKind::Cyclictest | ExportKind::CyclictestJson => {
            // cyclictest's histogram is of periodic wake-up latency: jitter's, no other.
            if !run.probe.cyclictest {
                return Err(ExportError::NotJitter);
            }
            let measurements = store.measurements(run.id)?;
            let h = measurements
                .iter()
                .find(|m| m.measurement.metric == "wakeup_latency")
                .and_then(|m| m.measurement.histogram.as_ref())
                .ok_or(ExportError::NoHistogram)?;
            if kind == ExportKind::CyclictestJson {
                let doc = results::farm::cyclictest_json(run, h);
                return Ok(serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n");
            }
            let cycles = JitterResultRecord::from_json(&run.result)
                .and_then(|r| r.overflow_cycles)
                .unwrap_or_default();
            x::cyclictest_histogram(h, &cycles)
        }
    })
}

/// What `audiolat push` did, one line each: runs copied (their ids here and there),
/// runs the target had already, runs still running (pushed by a later push).
pub fn push_text(
    p: &results::store::Pushed,
    from: &std::path::Path,
    to: &std::path::Path,
) -> String {
    let ids = |v: &[results::RunId]| {
        v.iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let runs = |n: usize| if n == 1 { "run" } else { "runs" };
    let mut out = format!(
        "pushed {} {} from {} to {}",
        p.copied.len(),
        runs(p.copied.len()),
        from.display(),
        to.display()
    );
    if !p.copied.is_empty() {
        let pairs: Vec<String> = p
            .copied
            .iter()
            .map(|(a, b)| format!("{a} as {b}"))
            .collect();
        out.push_str(&format!(": {}", pairs.join(", ")));
    }
    out.push('\n');
    if !p.already.is_empty() {
        out.push_str(&format!(
            "{} {} there already (pushed before), not copied again: {}\n",
            p.already.len(),
            runs(p.already.len()),
            ids(&p.already)
        ));
    }
    if !p.running.is_empty() {
        out.push_str(&format!(
            "{} {} still running, not pushed (push again once it has ended): {}\n",
            p.running.len(),
            runs(p.running.len()),
            ids(&p.running)
        ));
    }
    out
}

/// `runs` in a farm format (`--output-format` on a probe, or `export`): OpenMetrics, LAVA (a
/// sweep's names start with `cell<n>-`) and JUnit take several runs; the other formats
/// one ([`export`]).
pub fn farm_text(
    store: &Store,
    runs: &[RunRecord],
    kind: ExportKind,
) -> Result<String, ExportError> {
    let mut read = Vec::new();
    for run in runs {
        read.push((run, store.measurements(run.id)?, store.gates(run.id)?));
    }
    // A sweep's runs by their place in it (`cell2-`), so a name is the same from one CI
    // run to the next (LAVA keys a case's history on it).
    let prefix = |n: usize| match runs.len() {
        1 => String::new(),
        _ => format!("cell{}-", n + 1),
    };
    Ok(match kind {
        ExportKind::OpenMetrics => {
            let runs: Vec<_> = read.iter().map(|(r, m, _)| (*r, m.as_slice())).collect();
            results::farm::openmetrics(&runs)
        }
        ExportKind::Lava => read
            .iter()
            .enumerate()
            .map(|(n, (r, m, g))| results::farm::lava(r, m, g, &prefix(n)))
            .collect(),
        ExportKind::Junit => {
            let runs: Vec<_> = read
                .iter()
                .map(|(r, m, g)| (*r, m.as_slice(), g.as_slice()))
                .collect();
            results::farm::junit(&runs)
        }
        _ => match runs {
            [run] => export(store, run, kind)?,
            _ => return Err(ExportError::OneRunOnly),
        },
    })
}
