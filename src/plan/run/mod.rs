//! `audiolat run` / `audiolat reproduce`: the flags, the progress line and the printing
//! around the runner's plan run (`runner::plan`: order, resume, build profiles, each
//! cell's process, the plan run's close).
//!
//! Beside this file: `progress` (the status line, ETA), `summary` (report, tables,
//! summary line, exit code) and `dry_run` (`--dry-run`'s table).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use runner::plan::{self as plan_run, Binaries, Plan, PlanObserver, PlanRunError, Planned};

use super::CliCells;
use crate::cli::{PlanRunArgs, Resume, UsageError};
use crate::runner::Context;

mod dry_run;
mod progress;
mod summary;

use dry_run::dry_run_text;
use progress::Progress;

/// `audiolat run` / `audiolat reproduce`: check, order, run, summarise, report.
pub fn run(ctx: &Context, plan: &Plan, opts: &PlanRunArgs) -> Result<ExitCode> {
    let quiet = opts.quiet || opts.json;
    let checker = CliCells::default();
    // Each cell is checked as a command line before any runs; thousands take seconds.
    let cells = plan
        .axes
        .iter()
        .fold(u64::from(plan.repeats), |n, a| n * a.values.len() as u64);
    if cells >= 1000 && !quiet {
        eprintln!("audiolat run: checking the plan's {cells} cells...");
    }
    let planned = plan_run::order(plan, &checker, &|| ctx.stopped())
        .map_err(|e| UsageError(e.to_string()))?;
    let Some(planned) = planned else {
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
        Some(how) => plan_run::reopen(&store, plan, resume(how), &planned).map_err(cli_error)?,
        None => plan_run::create_group(&ctx.command_line, &store, plan, &planned)?,
    };
    plan_run::store_cells(&store, group, &planned)?;
    // The machine as the plan found it, for the report (each start of a resumed plan
    // run adds one: the machine may have changed in between).
    let doctor = probes::doctor::run(Duration::from_secs(1));
    ::runner::suite::store_doctor(ctx, &store, Some(group), &doctor)?;
    let stored = store.plan_cells(group)?;
    let to_run = plan_run::cells_to_run(&planned, &stored).map_err(cli_error)?;
    let already = stored.len() - to_run.len();
    if !quiet {
        announce(plan, group, &planned, stored.len(), already, to_run.len());
    }
    let built = plan_run::build_binaries(&ctx.run, &store, group, &to_run, quiet, &mut Say)
        .map_err(cli_error)?;
    let binaries = match built {
        Binaries::Ready(b) => b,
        Binaries::Stopped { profile } => {
            eprintln!("audiolat run: stopped while building the `{profile}` binary; plan run {group} kept, --resume {group} continues it");
            return Ok(ExitCode::from(130));
        }
    };
    let mut progress = Progress::new(!quiet, stored.len(), already);
    let tally = plan_run::run_cells(
        &ctx.run,
        &ctx.db_path,
        &store,
        plan,
        group,
        &planned,
        &to_run,
        &binaries,
        &checker,
        &mut progress,
    );
    progress.finish();
    summary::finish(ctx, &store, plan, opts, group, tally, &progress)
}

/// `--resume`, as the runner takes it.
fn resume(how: Resume) -> plan_run::Resume {
    match how {
        Resume::Group(g) => plan_run::Resume::Group(g),
        Resume::Latest => plan_run::Resume::Latest,
    }
}

/// A plan run's error for the command line: a refusal is a usage error.
fn cli_error(e: PlanRunError) -> anyhow::Error {
    match e {
        PlanRunError::Refused(msg) => UsageError(msg).into(),
        e => e.into(),
    }
}

/// The news of building binaries, on stderr as it comes.
struct Say;

impl PlanObserver for Say {
    fn note(&mut self, text: &str) {
        eprintln!("{text}");
    }
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
        let mut s: Vec<plan_run::ServerKey> = planned.iter().filter_map(|p| p.server).collect();
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
