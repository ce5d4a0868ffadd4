//! The end of a plan run: its status, its report, the summary printed and the exit code.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use report::data::ReportData;
use results::{RunStatus, Store};
use runner::plan::{Plan, Tally};
use serde_json::json;

use super::progress::{fmt_eta, Progress};
use crate::cli::PlanRunArgs;
use crate::runner::Context;

/// What a plan run came to, as the summary shows it.
struct Summary {
    group: i64,
    status: RunStatus,
    cells: usize,
    complete: usize,
    failed: usize,
    elapsed: std::time::Duration,
    report: Option<PathBuf>,
    data: Option<ReportData>,
}

/// Closes the plan run with its status, writes its report, prints its tables and
/// summary (or JSON), and says the exit code: 0 complete, 130 interrupted, 1 otherwise
/// (and 1 with the error when the plan run could not go on).
pub(super) fn finish(
    ctx: &Context,
    store: &Store,
    plan: &Plan,
    opts: &PlanRunArgs,
    group: i64,
    tally: Tally,
    progress: &Progress,
) -> Result<ExitCode> {
    let closed = runner::plan::close(&ctx.run, store, group, &tally)?;
    let status = closed.status;
    let elapsed = progress.started.elapsed();
    let data = match report::gather::group(store, group, &crate::runner::tool_info())
        .map_err(anyhow::Error::from)
    {
        Ok(d) => Some(d),
        Err(e) => {
            eprintln!(
                "audiolat: warning: reading plan run {group} back for its tables and report: {e:#}"
            );
            None
        }
    };
    let report = match (&data, opts.no_report) {
        (Some(data), false) => write_report(ctx, opts, group, data),
        _ => None,
    };
    let summary = Summary {
        group,
        status,
        cells: closed.cells,
        complete: closed.complete,
        failed: tally.failed,
        elapsed,
        report,
        data,
    };
    if opts.json {
        print_json(plan, &summary)?;
    } else {
        print_text(ctx, plan, &summary);
    }
    if let Some(e) = tally.plan_error {
        eprintln!("audiolat: error: {e}");
        return Ok(ExitCode::from(1));
    }
    Ok(match status {
        RunStatus::Complete => ExitCode::SUCCESS,
        RunStatus::Interrupted => ExitCode::from(130),
        _ => ExitCode::from(1),
    })
}

/// Writes the HTML report (to `--report`, or beside the database); `None`, with a
/// warning, when it cannot be written.
fn write_report(
    ctx: &Context,
    opts: &PlanRunArgs,
    group: i64,
    data: &ReportData,
) -> Option<PathBuf> {
    let path = opts
        .report
        .clone()
        .unwrap_or_else(|| report::gather::default_path(&ctx.db_path, &format!("plan-{group}")));
    match std::fs::write(&path, report::html::render(data)) {
        Ok(()) => Some(path),
        Err(e) => {
            eprintln!(
                "audiolat: warning: the report was not written to {}: {e} (`audiolat report group:{group} -o PATH` writes it)",
                path.display()
            );
            None
        }
    }
}

/// `--json`: the summary as one JSON object, with the tables.
fn print_json(plan: &Plan, s: &Summary) -> Result<()> {
    crate::commands::output::print_json(&json!({
        "group_id": s.group,
        "plan": plan.name,
        "status": s.status,
        "cells": s.cells,
        "complete": s.complete,
        "failed": s.failed,
        "elapsed_s": s.elapsed.as_secs_f64(),
        "report": s.report,
        "tables": s.data.as_ref().map(report::paper::tables_json),
    }))
}

/// The tables, the summary line, where the report is, and how to continue.
fn print_text(ctx: &Context, plan: &Plan, s: &Summary) {
    let group = s.group;
    if let Some(d) = &s.data {
        print!("{}", report::paper::tables_text(d));
    }
    println!(
        "\nplan run {group} ({}): {} of {} cells complete{} in {}; stored in {}",
        s.status,
        s.complete,
        s.cells,
        if s.failed > 0 {
            format!(", {} failed", s.failed)
        } else {
            String::new()
        },
        fmt_eta(s.elapsed),
        ctx.db_path.display()
    );
    if let Some(p) = &s.report {
        println!("report: {}", p.display());
    }
    if s.status != RunStatus::Complete {
        println!(
            "continue it with: audiolat --db {} {} --resume {group}",
            ctx.db_path.display(),
            resume_hint(plan)
        );
    }
}

fn resume_hint(plan: &Plan) -> String {
    match plan.source.strip_prefix("preset ") {
        Some(name) => format!(
            "reproduce {}{}",
            name.trim_end_matches(" --quick"),
            if name.ends_with(" --quick") {
                " --quick"
            } else {
                ""
            }
        ),
        None => format!("run {}", load::shell_quote(&plan.source)),
    }
}
