//! Plans: `audiolat run PLAN`, `audiolat reproduce STUDY`, a plan cell's own checks, and
//! the load worker a plan's loads run as.

use crate::cli::{Cli, Command, UsageError};
use crate::commands::net::net_config;
use crate::runner::Context;
use anyhow::Result;
use std::process::ExitCode;

pub(crate) fn load_worker(ctx: &Context, a: &crate::cli::LoadWorkerArgs) -> Result<ExitCode> {
    // In a deadline cell each thread takes its reservation as it starts (a deadline task
    // may not create threads). The kernel's admission refusing it means audiolat's own
    // admission was wrong: the load ends with the kernel's reason rather than run outside
    // its cell.
    let thread_start = || {
        let Some(share) = a.deadline else {
            return;
        };
        let policy = engine::rt::Policy::Deadline {
            runtime_ns: share.runtime_ns,
            deadline_ns: share.deadline_ns,
            period_ns: share.period_ns,
        };
        let grant = engine::rt::ThreadRt::apply(&policy, None, 0);
        if !grant.sched.is_exact() {
            eprintln!(
                "audiolat: {} load thread: SCHED_DEADLINE {}: {}",
                a.kind,
                share.to_arg(),
                grant
                    .sched
                    .refusal
                    .unwrap_or_else(|| format!("got {}", grant.sched.granted))
            );
            std::process::exit(3);
        }
    };
    match a.kind.as_str() {
        "ep" => {
            let passes = std::sync::atomic::AtomicU64::new(0);
            let failures = std::sync::atomic::AtomicU64::new(0);
            load::ep::run_until(a.threads, &ctx.stop, &passes, &failures, &thread_start);
            Ok(ExitCode::SUCCESS)
        }
        "video" => {
            let frames = std::sync::atomic::AtomicU64::new(0);
            let pace = if a.deadline.is_some_and(|d| d.time_triggered) {
                load::video::Pace::YieldToPeriod
            } else {
                load::video::Pace::Timer
            };
            load::video::run_until(a.threads, &ctx.stop, &frames, pace, &thread_start);
            Ok(ExitCode::SUCCESS)
        }
        other => Err(UsageError(format!("unknown built-in load '{other}': ep or video")).into()),
    }
}

/// A plan cell's probe checks, without side effects: what its command would refuse
/// before starting anything, and that it makes exactly one run.
pub(crate) fn check_plan_cell(cli: &Cli) -> std::result::Result<(), String> {
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
            crate::cli::jitter_config(a).map_err(|e| e.to_string())?;
            crate::runner::check_load(&a.load, &scratch).map_err(msg)
        }
        Command::Event(a) => {
            let req = a.request(&scratch).map_err(msg)?;
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
            one_run(
                req.periods.len() * req.cells.len(),
                "comma lists in --period or --load, or --repeat",
            )
        }
        Command::Net(a) => {
            if a.role.is_some() {
                return Err("a plan runs `audiolat net` itself, not its experiment, respond or emulate roles".into());
            }
            let cells = a.cells.cell_set().map_err(|e| e.to_string())?;
            let config = net_config(a, &cells).map_err(|e| e.to_string())?;
            crate::runner::check_net_load(&a.load, &scratch).map_err(msg)?;
            let placement = crate::runner::CellPlan {
                cells,
                host_cell: a.cells.host_cell.clone(),
            };
            crate::runner::admit_net(&placement, &config, &a.load)
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
        _ => Err("a plan's probe is jitter, event, roundtrip or net".into()),
    }
}

pub(crate) fn run_plan(ctx: &Context, a: &crate::cli::RunPlanArgs) -> Result<ExitCode> {
    crate::plan::run(ctx, &a.plan()?, &a.run)
}

pub(crate) fn reproduce(ctx: &Context, a: &crate::cli::ReproduceArgs) -> Result<ExitCode> {
    if a.print {
        print!("{}", a.text());
        return Ok(ExitCode::SUCCESS);
    }
    crate::plan::run(ctx, &a.plan()?, &a.run)
}
