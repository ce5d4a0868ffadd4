//! Running a plan: every cell as a child `audiolat` process (the binary of the cell's
//! build profile) whose one run is filed under the cell, in an order that starts one
//! private JACK server per buffer setting, with a progress line, Ctrl-C that stops the
//! current cell and keeps what is stored, and `--resume` that runs only the cells not yet
//! stored complete.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Result;
use engine::jack_server::{JackServer, ServerMode};
use results::{NewPlanCell, PlanCell, RunStatus};
use serde_json::json;

use super::Plan;
use crate::cli::{PlanRunArgs, UsageError};
use crate::runner::Context;

mod binaries;
mod cell;
mod command;
mod dry_run;
mod order;
mod progress;
mod resume;

use binaries::binary_for;
use cell::run_cell;
use command::{child_args, takes_quiet};
use dry_run::dry_run_text;
use order::{order, ServerKey};
use progress::{fmt_eta, Progress};
use resume::resume_group;

/// `audiolat run` / `audiolat reproduce`: check, order, run, summarise, report.
pub fn run(ctx: &Context, plan: &Plan, opts: &PlanRunArgs) -> Result<ExitCode> {
    let quiet = opts.quiet || opts.json;
    // Each cell is checked as a command line before any runs; thousands take seconds.
    let cells = plan
        .axes
        .iter()
        .fold(u64::from(plan.repeats), |n, a| n * a.values.len() as u64);
    if cells >= 1000 && !quiet {
        eprintln!("audiolat run: checking the plan's {cells} cells...");
    }
    let Some(planned) = order(plan, &|| ctx.stopped())? else {
        eprintln!("audiolat run: interrupted while checking the plan's cells: nothing was run");
        return Ok(ExitCode::from(130));
    };
    if opts.dry_run {
        print!("{}", dry_run_text(plan, &planned));
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(p) = &opts.report {
        crate::check_output_path(p, "--report")?;
    }
    let store = ctx.open_store()?;
    let group = match opts.resume {
        Some(how) => {
            let g = resume_group(&store, plan, how, &planned)?;
            let mut detail = store.group(g)?.detail;
            if let Some(pid) = detail["runner_pid"].as_i64() {
                // SAFETY: signal 0 only checks that the process exists.
                let alive = pid > 0
                    && pid != std::process::id() as i64
                    && unsafe { libc::kill(pid as i32, 0) } == 0;
                if alive {
                    return Err(UsageError(format!(
                        "plan run {g} is being run by process {pid}: wait for it, or stop it (Ctrl-C) and resume"
                    ))
                    .into());
                }
            }
            detail["runner_pid"] = json!(std::process::id());
            detail["runner_host"] = json!(results::store::hostname());
            store.set_group_detail(g, &detail)?;
            store.reopen_group(g)?;
            g
        }
        None => {
            let mut detail = plan.to_json();
            detail["cells"] = json!(planned.len());
            detail["runner_pid"] = json!(std::process::id());
            // With the pid, how the next open knows the plan run was left by a dead process.
            detail["runner_host"] = json!(results::store::hostname());
            store.create_group("plan", &ctx.command_line, &detail)?
        }
    };
    let new_cells: Vec<NewPlanCell> = planned
        .iter()
        .enumerate()
        .map(|(i, p)| NewPlanCell {
            seq: i as i64,
            key: p.cell.key.clone(),
            axes: p.cell.axes_json(),
            argv: p.cell.argv.clone(),
            profile: p.cell.profile.clone(),
        })
        .collect();
    store.add_plan_cells(group, &new_cells)?;
    // The machine as the plan found it, for the report (each start of a resumed plan
    // run adds one: the machine may have changed in between).
    let doctor = probes::doctor::run(Duration::from_secs(1));
    crate::runner::doctor_run(ctx, &store, Some(group), &doctor)?;
    let stored = store.plan_cells(group)?;
    // Each stored cell with its planned cell (same key), in run order.
    let by_key: BTreeMap<&str, usize> = planned
        .iter()
        .enumerate()
        .map(|(i, p)| (p.cell.key.as_str(), i))
        .collect();
    let to_run: Vec<(usize, &PlanCell)> = stored
        .iter()
        .filter(|c| c.status != Some(RunStatus::Complete))
        .map(|c| {
            let i = by_key
                .get(c.key.as_str())
                .copied()
                .ok_or_else(|| anyhow::anyhow!("plan cell {} is not in the plan", c.key))?;
            Ok((i, c))
        })
        .collect::<Result<_>>()?;
    let already = stored.len() - to_run.len();
    if !quiet {
        let servers = {
            let mut s: Vec<ServerKey> = planned.iter().filter_map(|p| p.server).collect();
            s.dedup();
            s.len()
        };
        eprintln!(
            "audiolat run: plan `{}` ({}), plan run {group}: {} cells{}{}",
            plan.name,
            plan.source,
            stored.len(),
            if already > 0 {
                format!(
                    ", {already} already stored complete, {} to run",
                    to_run.len()
                )
            } else {
                String::new()
            },
            if servers > 0 {
                format!(", {servers} private JACK server settings")
            } else {
                String::new()
            }
        );
    }
    // Binaries first: a build that fails fails before any cell runs.
    let mut binaries: BTreeMap<String, PathBuf> = BTreeMap::new();
    for (_, c) in &to_run {
        if !binaries.contains_key(&c.profile) {
            let b = match binary_for(&c.profile, quiet) {
                Ok(b) => b,
                Err(_) if ctx.stopped() => {
                    store.closing(|| store.finish_group(group, RunStatus::Interrupted))?;
                    eprintln!("audiolat run: stopped while building the `{}` binary; plan run {group} kept, --resume {group} continues it", c.profile);
                    return Ok(ExitCode::from(130));
                }
                Err(e) => {
                    store.closing(|| store.finish_group(group, RunStatus::Failed))?;
                    return Err(e);
                }
            };
            binaries.insert(c.profile.clone(), b);
        }
    }
    let quiet_flag = takes_quiet(&plan.probe);
    let mut server: Option<(ServerKey, JackServer)> = None;
    let mut progress = Progress {
        enabled: !quiet,
        tty: std::io::stderr().is_terminal(),
        total: stored.len(),
        done: already,
        started: Instant::now(),
        timed: Vec::new(),
    };
    let mut failed = 0usize;
    let mut plan_error: Option<String> = None;
    for (index, cell) in &to_run {
        if ctx.stopped() {
            break;
        }
        let want = planned[*index].server;
        // One private server per setting: restart only when the setting changes (or the
        // server died).
        let dead = match server.as_mut() {
            Some((_, s)) => s.exited().is_some(),
            None => false,
        };
        if server.as_ref().map(|(k, _)| Some(*k)) != Some(want) || dead {
            if let Some((_, mut s)) = server.take() {
                s.stop();
            }
            if let Some((rate, period)) = want {
                let req = engine::jack_server::ServerRequest {
                    mode: ServerMode::Dummy,
                    // A free private name (audiolat-dummy, -2, ...): jackd keeps a short
                    // registry of names, so names are reused, not made per plan run.
                    name: None,
                    rate_hz: Some(rate),
                    period_frames: Some(period),
                    jackd: load::find_in_path(load::JACKD.name),
                    start_timeout: Duration::from_secs(10),
                };
                match JackServer::connect(&req) {
                    Ok(s) => {
                        progress.note(&format!(
                            "audiolat run: JACK server `{}`: jackd -d dummy -r {rate} -p {period}",
                            s.name()
                        ));
                        server = Some(((rate, period), s));
                    }
                    Err(e) => {
                        plan_error = Some(format!(
                            "the plan's JACK server (rate {rate}, period {period}) did not start: {e}"
                        ));
                        break;
                    }
                }
            }
        }
        let args = child_args(
            &planned[*index].cell,
            server.as_ref().map(|(_, s)| s.name()),
            quiet_flag,
        );
        progress.show(&cell.key);
        let outcome = match run_cell(
            ctx,
            &store,
            group,
            cell,
            &binaries[&cell.profile],
            &args,
            &mut progress,
        ) {
            Ok(o) => o,
            Err(e) => {
                let _ = store.finish_plan_cell(cell.id, RunStatus::Failed, Some(&format!("{e:#}")));
                plan_error = Some(format!("running cell {}: {e:#}", cell.key));
                break;
            }
        };
        match outcome.status {
            RunStatus::Complete => progress.done += 1,
            RunStatus::Interrupted if ctx.stopped() => {}
            s => {
                failed += 1;
                progress.done += 1;
                progress.note(&format!(
                    "audiolat run: cell {} {s}: {} ({})",
                    cell.key,
                    outcome.error.as_deref().unwrap_or("no reason given"),
                    plan.location(&planned[*index].cell)
                ));
            }
        }
    }
    if let Some((_, mut s)) = server.take() {
        s.stop();
    }
    progress.finish();
    let cells = store.plan_cells(group)?;
    let complete = cells
        .iter()
        .filter(|c| c.status == Some(RunStatus::Complete))
        .count();
    let status = if complete == cells.len() {
        RunStatus::Complete
    } else if plan_error.is_some() {
        RunStatus::Failed
    } else if ctx.stopped() || cells.iter().any(|c| c.status.is_none()) {
        RunStatus::Interrupted
    } else {
        RunStatus::Failed
    };
    // Closing writes may use the reserve a full disk leaves (see Store::closing).
    store.closing(|| store.finish_group(group, status))?;
    let elapsed = progress.started.elapsed();
    let data = match crate::report_data::group(&store, group) {
        Ok(d) => Some(d),
        Err(e) => {
            eprintln!(
                "audiolat: warning: reading plan run {group} back for its tables and report: {e:#}"
            );
            None
        }
    };
    let report_path = match (&data, opts.no_report) {
        (Some(data), false) => {
            let path = opts.report.clone().unwrap_or_else(|| {
                crate::report_data::default_path(&ctx.db_path, &format!("plan-{group}"))
            });
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
        _ => None,
    };
    if opts.json {
        crate::print_json(&json!({
            "group_id": group,
            "plan": plan.name,
            "status": status,
            "cells": cells.len(),
            "complete": complete,
            "failed": failed,
            "elapsed_s": elapsed.as_secs_f64(),
            "report": report_path,
            "tables": data.as_ref().map(report::paper::tables_json),
        }))?;
    } else {
        if let Some(d) = &data {
            print!("{}", report::paper::tables_text(d));
        }
        println!(
            "\nplan run {group} ({}): {complete} of {} cells complete{} in {}; stored in {}",
            status,
            cells.len(),
            if failed > 0 {
                format!(", {failed} failed")
            } else {
                String::new()
            },
            fmt_eta(elapsed),
            ctx.db_path.display()
        );
        if let Some(p) = &report_path {
            println!("report: {}", p.display());
        }
        if status != RunStatus::Complete {
            println!(
                "continue it with: audiolat --db {} {} --resume {group}",
                ctx.db_path.display(),
                resume_hint(plan)
            );
        }
    }
    if let Some(e) = plan_error {
        eprintln!("audiolat: error: {e}");
        return Ok(ExitCode::from(1));
    }
    Ok(match status {
        RunStatus::Complete => ExitCode::SUCCESS,
        RunStatus::Interrupted => ExitCode::from(130),
        _ => ExitCode::from(1),
    })
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
