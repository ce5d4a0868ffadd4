//! The commands that read what is stored: `runs`, `show`, `export`, `report`, `compare`.

use crate::cli::{ExportFormat, MetricChoice, RunRef, UsageError};
use crate::commands::output::{check_output_path, print_json};
use crate::runner::{tool_info, Context};
use anyhow::{Context as _, Result};
use results::model::RunRecord;
use results::{RunFilter, RunStatus, Store};
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;

pub(crate) fn resolve(store: &Store, r: RunRef) -> Result<RunRecord> {
    let id = match r {
        RunRef::Id(id) => id,
        RunRef::Last => store.last_run_id()?.ok_or_else(|| {
            UsageError("no runs stored yet: run a probe first (e.g. audiolat jitter)".into())
        })?,
    };
    Ok(store.run(id)?)
}

/// The report's subjects by id (`last`: the last run stored).
fn gather(store: &Store, subjects: &[crate::cli::Subject]) -> Result<Vec<report::gather::Subject>> {
    subjects
        .iter()
        .map(|s| {
            Ok(match *s {
                crate::cli::Subject::Group(g) => report::gather::Subject::Group(g),
                crate::cli::Subject::Run(RunRef::Id(id)) => report::gather::Subject::Run(id),
                crate::cli::Subject::Run(RunRef::Last) => report::gather::Subject::Run(
                    store
                        .last_run_id()?
                        .ok_or_else(|| UsageError("no runs stored yet".into()))?,
                ),
            })
        })
        .collect()
}

pub(crate) fn runs(ctx: &Context, a: &crate::cli::RunsArgs) -> Result<ExitCode> {
    let store = ctx.open_existing_store()?;
    if a.groups {
        return groups(&store, a);
    }
    let list = store.list_runs(&a.filter())?;
    let mut rows = Vec::new();
    for r in list {
        let h = report::gather::headline(&store, &r)?;
        rows.push((r, h));
    }
    if a.json {
        print_json(&json!(rows
            .iter()
            .map(|(r, h)| json!({
                "id": r.id, "group_id": r.group_id, "probe": r.probe, "status": r.status,
                "started_at": r.started_at, "duration_s": r.duration_s, "flags": r.flags,
                "metric": h.as_ref().map(|m| m.metric.clone()),
                "summary": h.as_ref().map(|m| results::export::summary_json(m.summary.as_ref())),
            }))
            .collect::<Vec<_>>()))?;
    } else if rows.is_empty() {
        println!("no runs match");
    } else {
        print!("{}", report::terminal::runs_table(&rows));
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn show(ctx: &Context, a: &crate::cli::ShowArgs) -> Result<ExitCode> {
    let store = ctx.open_existing_store()?;
    let run = resolve(&store, a.run)?;
    let measurements = store.measurements(run.id)?;
    if a.json {
        let events = store.events(run.id, None)?;
        let series = store.series(run.id)?;
        let triggers = store.triggers(run.id)?;
        print_json(&results::export::run_json(
            &run,
            &measurements,
            &events,
            &series,
            &triggers,
        ))?;
    } else {
        let counts = store.event_counts(run.id)?;
        let events = store.events(run.id, Some(a.events))?;
        let view = results::RunView::from_stored(
            &run,
            &measurements,
            store.events(run.id, None)?,
            store.triggers(run.id)?,
        );
        print!("{}", report::view::run::text(&run, &view, &counts, &events));
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn export(ctx: &Context, a: &crate::cli::ExportArgs) -> Result<ExitCode> {
    if let Some(p) = &a.output {
        check_output_path(p, "--output")?;
    }
    let store = ctx.open_existing_store()?;
    let run = resolve(&store, a.run)?;
    let measurements = store.measurements(run.id)?;
    let text = match a.format {
        ExportFormat::Json => {
            let events = store.events(run.id, None)?;
            let series = store.series(run.id)?;
            let triggers = store.triggers(run.id)?;
            serde_json::to_string_pretty(&results::export::run_json(
                &run,
                &measurements,
                &events,
                &series,
                &triggers,
            ))? + "\n"
        }
        ExportFormat::Triggers => {
            let triggers = store.triggers(run.id)?;
            // An event run that measured no trigger exports the header alone.
            if triggers.is_empty() && run.probe != "event" {
                return Err(UsageError(format!(
                    "run {} has no triggers: only event runs do (audiolat runs --probe event)",
                    run.id
                ))
                .into());
            }
            results::export::triggers_csv(&run, &triggers)
        }
        ExportFormat::Series => {
            let series = store.series(run.id)?;
            if series.is_empty() {
                return Err(UsageError(format!(
                    "run {} has no series: jitter and roundtrip runs do (audiolat runs --probe roundtrip)",
                    run.id
                ))
                .into());
            }
            results::export::series_csv(&run, &series)
        }
        ExportFormat::Csv => results::export::measurements_csv(&run, &measurements),
        ExportFormat::Hdr => results::export::hdr_log(&run, &measurements),
        ExportFormat::Cyclictest => {
            // cyclictest's histogram is of periodic wake-up latency: jitter's, no other.
            if run.probe != "jitter" {
                return Err(UsageError(format!(
                    "run {} is a {} run: --format cyclictest exports jitter runs only (wake-up latency); use --format hdr or csv for this one",
                    run.id, run.probe
                ))
                .into());
            }
            let h = measurements
                .iter()
                .find(|m| m.measurement.metric == "wakeup_latency")
                .and_then(|m| m.measurement.histogram.as_ref())
                .ok_or_else(|| {
                    UsageError(format!(
                        "run {} has no wake-up latency histogram to export",
                        run.id
                    ))
                })?;
            let cycles: Vec<u64> = run.result["overflow_cycles"]
                .as_array()
                .map(|a| a.iter().filter_map(|v| v.as_u64()).collect())
                .unwrap_or_default();
            results::export::cyclictest_histogram(h, &cycles)
        }
    };
    match &a.output {
        Some(p) => std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?,
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn write_report(ctx: &Context, a: &crate::cli::ReportArgs) -> Result<ExitCode> {
    if let Some(p) = &a.output {
        check_output_path(p, "--output")?;
    }
    let store = ctx.open_existing_store()?;
    let subjects = if a.subjects.is_empty() {
        let latest = store.list_groups(None)?.into_iter().next().ok_or_else(|| {
            UsageError(
                "no groups stored yet: name runs (`audiolat report 3 4`), or run a plan or `audiolat suite` first"
                    .into(),
            )
        })?;
        vec![crate::cli::Subject::Group(latest.id)]
    } else {
        a.subjects.clone()
    };
    let data = report::gather::subjects(&store, &gather(&store, &subjects)?, &tool_info())?;
    let name = match subjects.as_slice() {
        [crate::cli::Subject::Group(g)] => match &data.group {
            Some(gr) if gr.kind == "plan" => format!("plan-{g}"),
            _ => format!("group-{g}"),
        },
        _ => {
            let ids: Vec<i64> = data.runs().map(|r| r.record.id).collect();
            match ids.as_slice() {
                [] => "empty".into(),
                [one] => format!("run-{one}"),
                [first, .., last] => format!("runs-{first}-to-{last}"),
            }
        }
    };
    let path = a
        .output
        .clone()
        .unwrap_or_else(|| report::gather::default_path(&ctx.db_path, &name));
    std::fs::write(&path, report::html::render(&data))
        .with_context(|| format!("writing the report {}", path.display()))?;
    if a.print {
        print!("{}", report::paper::tables_text(&data));
    }
    println!("report: {} ({})", path.display(), data.subject);
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn compare(ctx: &Context, a: &crate::cli::CompareArgs) -> Result<ExitCode> {
    let store = ctx.open_existing_store()?;
    let da = report::gather::subjects(&store, &gather(&store, &[a.a])?, &tool_info())?;
    let db = report::gather::subjects(&store, &gather(&store, &[a.b])?, &tool_info())?;
    let metrics = match a.metrics() {
        MetricChoice::All => Vec::new(),
        MetricChoice::Headline => report::compare::headline_metrics(&da, &db),
        MetricChoice::These(metrics) => metrics,
    };
    let rows = report::compare::compare(&da, &db, &metrics);
    if a.json {
        print_json(&report::compare::json(&da, &db, &rows, &metrics))?;
    } else {
        print!("{}", report::compare::text(&da, &db, &rows, &metrics));
    }
    Ok(ExitCode::SUCCESS)
}

/// `audiolat runs --groups`: each group with its kind, name, status and runs.
pub(crate) fn groups(store: &Store, a: &crate::cli::RunsArgs) -> Result<ExitCode> {
    let mut rows = Vec::new();
    for g in store.list_groups(None)?.into_iter().take(a.limit) {
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
        rows.push((g, runs.len(), cells));
    }
    if a.json {
        print_json(&json!(rows
            .iter()
            .map(|(g, n, cells)| json!({
                "id": g.id, "kind": g.kind, "name": g.detail["name"], "status": g.status,
                "started_at": g.started_at, "ended_at": g.ended_at, "runs": n,
                "cells": cells.map(|(c, t)| json!({"complete": c, "total": t})),
                "command_line": g.command_line,
            }))
            .collect::<Vec<_>>()))?;
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        println!("no groups stored yet (a plan, a sweep or `audiolat suite` makes one)");
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = report::terminal::Table::new(&[
        "group", "kind", "name", "status", "started", "runs", "cells", "command",
    ])
    .left_align(&[1, 2, 3, 4, 7]);
    for (g, n, cells) in &rows {
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
    print!("{}", t.render());
    println!("`audiolat report group:N` writes a group's report; `audiolat compare group:A group:B` compares two");
    Ok(ExitCode::SUCCESS)
}
