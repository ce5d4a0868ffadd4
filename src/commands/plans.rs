//! Plans: `audiolat run PLAN`, `audiolat reproduce STUDY` (the runner's plan run, with
//! its lines from `report::view::plan` written to the terminal, its report written and
//! its exit code), a plan cell's own checks, and the load worker a plan's loads run as.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::Result;
use report::view::plan::{self as view, DryRunCell, PlanSummary};
use results::Store;
use runner::plan::{self as plan_run, Plan, PlanRun, PlanRunEnd, PlanRunError, PlanRunSummary};

use crate::cli::{Cli, Command, PlanRunArgs, UsageError};
use crate::commands::sweep::status_exit;
use crate::context::Context;
use crate::plan::{CliCells, Progress};
use crate::stdio;

pub(crate) fn load_worker(ctx: &Context, a: &crate::cli::LoadWorkerArgs) -> Result<ExitCode> {
    a.check()?;
    load::worker::run(&a.kind, a.threads, a.deadline, &ctx.stop)
        .map_err(|e| UsageError(e.to_string()))?;
    Ok(ExitCode::SUCCESS)
}

/// A plan cell's probe checks, without side effects: what its command would refuse
/// before starting anything (its output file against the plan run's database `db`,
/// when given), and that it makes exactly one run.
pub(crate) fn check_plan_cell(
    cli: &Cli,
    db: Option<&std::path::Path>,
) -> std::result::Result<(), String> {
    let scratch = std::env::temp_dir();
    let one_run = |n: usize, how: &str| {
        if n == 1 {
            Ok(())
        } else {
            Err(format!(
                "this cell would make {n} runs ({how}): a plan's cell is one run, so sweep with an axis in [sweep] instead"
            ))
        }
    };
    let msg = |e: anyhow::Error| format!("{e:#}");
    match &cli.command {
        Command::Jitter(a) => {
            let req = a.request(&scratch).map_err(|e| e.to_string())?;
            crate::commands::jitter::gates(a, &req.config).map_err(msg)?;
            if let (Some(p), Some(db)) = (&req.histfile, db) {
                crate::commands::output::check_output_path(p, "histfile", db).map_err(msg)?;
            }
            crate::run_errors::check_load(&req.load, &req.scratch_dir).map_err(msg)
        }
        Command::Event(a) => {
            let req = a.request(&scratch).map_err(msg)?;
            crate::commands::event::gates(a).map_err(msg)?;
            one_run(
                req.cells.len() * req.periods.len(),
                "comma lists in --period, --policy, --workload or --load, or --repeat",
            )
        }
        Command::Roundtrip(a) => {
            if a.find_min_buffer {
                return Err(
                    "--find-min-buffer is a search of its own: sweep `period` as an axis instead, and the report finds the smallest buffer without under-runs".into(),
                );
            }
            let req = a.request(&scratch).map_err(msg)?;
            crate::commands::roundtrip::gates(a).map_err(msg)?;
            one_run(
                req.periods.len() * req.cells.len(),
                "comma lists in --period or --load, or --repeat",
            )
        }
        Command::Net(a) => {
            if a.role.is_some() {
                return Err("a plan runs `audiolat net` itself, not its experiment, respond or emulate roles".into());
            }
            a.request(&scratch).map_err(msg)?;
            crate::commands::output::measurable_gates(
                &a.gates,
                &results::probe_kind::NET,
                &[],
                a.why,
            )
            .map(|_| ())
            .map_err(msg)
        }
        _ => Err("a plan's probe is jitter, event, roundtrip or net".into()),
    }
}

pub(crate) fn run_plan(ctx: &Context, a: &crate::cli::RunPlanArgs) -> Result<ExitCode> {
    plan_run(ctx, &a.plan()?, &a.run)
}

pub(crate) fn reproduce(ctx: &Context, a: &crate::cli::ReproduceArgs) -> Result<ExitCode> {
    if a.print {
        // The preset's plan text (TOML): save it, edit it, `audiolat run` it.
        stdio::print(a.study.text(a.quick))?;
        return Ok(ExitCode::SUCCESS);
    }
    plan_run(ctx, &a.plan()?, &a.run)
}

/// `audiolat run` / `audiolat reproduce`: check and order the cells, print them
/// (`--dry-run`) or run them (`runner::plan::execute`), then [`finish`].
fn plan_run(ctx: &Context, plan: &Plan, opts: &PlanRunArgs) -> Result<ExitCode> {
    let quiet = opts.output.quiet();
    let checker = CliCells::for_database(&ctx.db_path);
    // Each cell is checked as a command line before any runs; thousands take seconds.
    let cells = plan.cell_count();
    if cells >= 1000 && !quiet {
        stdio::progress_line(format_args!(
            "audiolat run: checking the plan's {cells} cells..."
        ));
    }
    let planned = plan_run::order(plan, &checker, &|| ctx.stopped())
        .map_err(|e| UsageError(e.to_string()))?;
    let Some(planned) = planned else {
        stdio::say("audiolat run: interrupted while checking the plan's cells: nothing was run");
        return Ok(ExitCode::from(130));
    };
    if let Some(p) = &opts.report {
        crate::commands::output::check_output_path(p, "--report", &ctx.db_path)?;
    }
    if opts.dry_run {
        let cells: Vec<DryRunCell> = planned
            .iter()
            .map(|p| DryRunCell {
                key: p.cell.key.clone(),
                profile: p.cell.profile.clone(),
                server: p.server,
                command: p.cell.command.shell_line(),
            })
            .collect();
        stdio::print(view::dry_run_text(
            &plan.name,
            &plan.source,
            &plan.probe,
            &cells,
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    let store = ctx.open_store()?;
    let run = PlanRun {
        plan,
        planned: &planned,
        resume: opts.resume,
        quiet,
    };
    let mut progress = Progress::new(!quiet, std::io::stderr().is_terminal());
    let end = plan_run::execute(
        &ctx.run,
        &ctx.db_path,
        &store,
        &checker,
        &run,
        &mut progress,
    );
    progress.clear();
    match end {
        // A refusal is a usage error.
        Err(PlanRunError::Refused(msg)) => Err(UsageError(msg).into()),
        Err(e) => Err(e.into()),
        Ok(PlanRunEnd::StoppedBuilding { group, profile }) => {
            stdio::say(format_args!("audiolat run: stopped while building the `{profile}` binary; plan run {group} kept, --resume {group} continues it"));
            Ok(ExitCode::from(130))
        }
        Ok(PlanRunEnd::Ran(ran)) => finish(ctx, &store, plan, opts, ran),
    }
}

/// Writes the closed plan run's report (to `--report`, or beside the database; a
/// warning when it cannot be), prints its summary (or JSON) and says the exit code: 0
/// complete (3 when a cell's run failed a gate), 130 interrupted, 1 otherwise (and 1
/// with the error when the plan run could not go on).
fn finish(
    ctx: &Context,
    store: &Store,
    plan: &Plan,
    opts: &PlanRunArgs,
    ran: PlanRunSummary,
) -> Result<ExitCode> {
    let PlanRunSummary {
        group,
        closed,
        tally,
        elapsed,
    } = ran;
    let data = report::gather::group(store, group, &crate::context::tool_info())
        .map_err(|e| {
            stdio::say(format_args!(
                "audiolat: warning: reading plan run {group} back for its tables and report: {:#}",
                anyhow::Error::from(e)
            ))
        })
        .ok();
    let summary = PlanSummary {
        plan: plan.name.clone(),
        group,
        status: closed.status,
        cells: closed.cells,
        complete: closed.complete,
        failed: tally.failed,
        elapsed,
        db: ctx.db_path.clone(),
        resume: plan.rerun_command(),
        report: data.as_ref().filter(|_| !opts.no_report).and_then(|d| {
            let what = format!("plan-{group}");
            report::html::write(d, opts.report.as_deref(), &ctx.db_path, &what)
                .map_err(|e| {
                    let flag = if opts.report.is_some() { "--report" } else { "the report" };
                    stdio::say(format_args!(
                        "audiolat: warning: {:#} (`audiolat report group:{group} -o PATH` writes it)",
                        crate::commands::output::output_error(flag, e)
                    ))
                })
                .ok()
        }),
        data,
    };
    let runs = crate::commands::output::group_runs(store, group)?;
    if crate::commands::output::print_farm(store, opts.gates.output_format, runs)? {
        // Printed in the farm's format instead of the tables.
    } else if opts.output.json {
        crate::commands::output::print_json(&view::summary_json(&summary))?;
    } else {
        stdio::print(view::summary_text(&summary))?;
    }
    if let Some(e) = tally.plan_error {
        stdio::say(format_args!("audiolat: error: {e}"));
        return Ok(ExitCode::from(1));
    }
    let data = summary.data.as_ref();
    let gate_failed = data.is_some_and(|d| !report::view::gates::failures(d).is_empty());
    Ok(crate::commands::output::gated(
        status_exit(ctx, closed.status),
        gate_failed,
    ))
}
