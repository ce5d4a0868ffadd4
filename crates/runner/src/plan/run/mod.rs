//! Running a plan: every cell as a child `audiolat` process (the binary of the cell's
//! build profile) whose one run is filed under the cell, in an order that starts one
//! private JACK server per buffer setting, with a progress line, Ctrl-C that stops the
//! current cell and keeps what is stored, and `--resume` that runs only the cells not yet
//! stored complete.
//!
//! Here the whole run, start to summary; beside it `order` (run order and the
//! private server each cell needs), `binaries` (the binary of each build profile),
//! `server` (the plan's JACK server), `cell` (one cell's process), `progress`,
//! `resume`, `summary` (status, report, exit code) and `dry_run`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use results::{NewPlanCell, PlanCell, RunStatus, Store};
use serde_json::json;

use super::{takes_quiet, Plan};
use crate::cli::PlanRunArgs;
use crate::runner::Context;

mod binaries;
mod cell;
mod dry_run;
mod order;
mod progress;
mod resume;
mod server;
mod summary;

use binaries::binary_for;
use cell::run_cell;
use dry_run::dry_run_text;
use order::{order, Planned, ServerKey};
use progress::Progress;
use server::PlanServer;

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
        crate::commands::output::check_output_path(p, "--report")?;
    }
    let store = ctx.open_store()?;
    let group = match opts.resume {
        Some(how) => resume::reopen(&store, plan, how, &planned)?,
        None => create_group(ctx, &store, plan, &planned)?,
    };
    store_cells(&store, group, &planned)?;
    // The machine as the plan found it, for the report (each start of a resumed plan
    // run adds one: the machine may have changed in between).
    let doctor = probes::doctor::run(Duration::from_secs(1));
    crate::runner::doctor_run(ctx, &store, Some(group), &doctor)?;
    let stored = store.plan_cells(group)?;
    let to_run = cells_to_run(&planned, &stored)?;
    let already = stored.len() - to_run.len();
    if !quiet {
        announce(plan, group, &planned, stored.len(), already, to_run.len());
    }
    let Some(binaries) = build_binaries(ctx, &store, group, &to_run, quiet)? else {
        return Ok(ExitCode::from(130));
    };
    let mut progress = Progress::new(!quiet, stored.len(), already);
    let tally = run_cells(
        ctx,
        &store,
        plan,
        group,
        &planned,
        &to_run,
        &binaries,
        &mut progress,
    );
    progress.finish();
    summary::finish(ctx, &store, plan, opts, group, tally, &progress)
}

/// A new plan run (group) for `plan`: its detail is the plan as JSON, its cell count
/// and the runner's process and host.
fn create_group(ctx: &Context, store: &Store, plan: &Plan, planned: &[Planned]) -> Result<i64> {
    let mut detail = plan.to_json();
    detail["cells"] = json!(planned.len());
    detail["runner_pid"] = json!(std::process::id());
    // With the pid, how the next open knows the plan run was left by a dead process.
    detail["runner_host"] = json!(results::store::hostname());
    Ok(store.create_group("plan", &ctx.command_line, &detail)?)
}

/// Stores the plan's cells under the plan run, in run order (cells already stored, on
/// a resume, are kept as they are).
fn store_cells(store: &Store, group: i64, planned: &[Planned]) -> Result<()> {
    let new_cells: Vec<NewPlanCell> = planned
        .iter()
        .enumerate()
        .map(|(i, p)| NewPlanCell {
            seq: i as i64,
            key: p.cell.key.clone(),
            axes: p.cell.axes_json(),
            argv: p.cell.command.argv(),
            profile: p.cell.profile.clone(),
        })
        .collect();
    store.add_plan_cells(group, &new_cells)?;
    Ok(())
}

/// The stored cells not yet complete, in run order, each with the index of its planned
/// cell (same key).
fn cells_to_run<'a>(
    planned: &[Planned],
    stored: &'a [PlanCell],
) -> Result<Vec<(usize, &'a PlanCell)>> {
    let by_key: BTreeMap<&str, usize> = planned
        .iter()
        .enumerate()
        .map(|(i, p)| (p.cell.key.as_str(), i))
        .collect();
    stored
        .iter()
        .filter(|c| c.status != Some(RunStatus::Complete))
        .map(|c| {
            let i = by_key
                .get(c.key.as_str())
                .copied()
                .ok_or_else(|| anyhow::anyhow!("plan cell {} is not in the plan", c.key))?;
            Ok((i, c))
        })
        .collect()
}

/// The line that opens a plan run: its cells, how many are left, its private servers.
fn announce(
    plan: &Plan,
    group: i64,
    planned: &[Planned],
    total: usize,
    already: usize,
    to_run: usize,
) {
    let servers = {
        let mut s: Vec<ServerKey> = planned.iter().filter_map(|p| p.server).collect();
        s.dedup();
        s.len()
    };
    eprintln!(
        "audiolat run: plan `{}` ({}), plan run {group}: {} cells{}{}",
        plan.name,
        plan.source,
        total,
        if already > 0 {
            format!(", {already} already stored complete, {to_run} to run")
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

/// The binary of every profile the cells to run use, before any cell runs, so a build
/// that fails fails first. On a failure the plan run is closed failed (the error
/// returned); `None` when Ctrl-C stopped a build: the plan run is closed interrupted,
/// kept for --resume.
fn build_binaries(
    ctx: &Context,
    store: &Store,
    group: i64,
    to_run: &[(usize, &PlanCell)],
    quiet: bool,
) -> Result<Option<BTreeMap<String, PathBuf>>> {
    let mut binaries: BTreeMap<String, PathBuf> = BTreeMap::new();
    for (_, c) in to_run {
        if !binaries.contains_key(&c.profile) {
            let b = match binary_for(&c.profile, quiet) {
                Ok(b) => b,
                Err(_) if ctx.stopped() => {
                    store.closing(|| store.finish_group(group, RunStatus::Interrupted))?;
                    eprintln!("audiolat run: stopped while building the `{}` binary; plan run {group} kept, --resume {group} continues it", c.profile);
                    return Ok(None);
                }
                Err(e) => {
                    store.closing(|| store.finish_group(group, RunStatus::Failed))?;
                    return Err(e);
                }
            };
            binaries.insert(c.profile.clone(), b);
        }
    }
    Ok(Some(binaries))
}

/// How the cells went: the ones that failed, and what stopped the plan run, if anything
/// did (a server that did not start, a cell that could not be run).
struct Tally {
    failed: usize,
    plan_error: Option<String>,
}

/// Runs the cells in order, each on its private server when it needs one, until all ran,
/// Ctrl-C stopped the plan, or the plan run cannot go on.
#[allow(clippy::too_many_arguments)]
fn run_cells(
    ctx: &Context,
    store: &Store,
    plan: &Plan,
    group: i64,
    planned: &[Planned],
    to_run: &[(usize, &PlanCell)],
    binaries: &BTreeMap<String, PathBuf>,
    progress: &mut Progress,
) -> Tally {
    let quiet_flag = takes_quiet(&plan.probe);
    let mut server = PlanServer::default();
    let mut tally = Tally {
        failed: 0,
        plan_error: None,
    };
    for (index, cell) in to_run {
        if ctx.stopped() {
            break;
        }
        let server_name = match server.serve(planned[*index].server, progress) {
            Ok(name) => name,
            Err(e) => {
                tally.plan_error = Some(e);
                break;
            }
        };
        // The cell on the plan's server instead of one of its own, with no status line.
        let mut command = planned[*index].cell.command.clone();
        if let Some(name) = server_name {
            command = command.on_server(name);
        }
        if quiet_flag {
            command = command.quiet();
        }
        progress.show(&cell.key);
        let outcome = match run_cell(
            ctx,
            store,
            group,
            cell,
            &binaries[&cell.profile],
            &command,
            progress,
        ) {
            Ok(o) => o,
            Err(e) => {
                let _ = store.finish_plan_cell(cell.id, RunStatus::Failed, Some(&format!("{e:#}")));
                tally.plan_error = Some(format!("running cell {}: {e:#}", cell.key));
                break;
            }
        };
        match outcome.status {
            RunStatus::Complete => progress.done += 1,
            RunStatus::Interrupted if ctx.stopped() => {}
            s => {
                tally.failed += 1;
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
    server.stop();
    tally
}
