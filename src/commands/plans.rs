//! Plans: `audiolat run PLAN`, `audiolat reproduce STUDY`, a plan cell's own checks, and
//! the load worker a plan's loads run as.

use crate::cli::{Cli, Command, UsageError};
use crate::commands::event::event_checks;
use crate::commands::net::net_config;
use crate::commands::roundtrip::roundtrip_checks;
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
            let (cells, _) = event_checks(a, &scratch).map_err(msg)?;
            one_run(
                cells.len() * crate::audio::periods(&a.audio).len(),
                "comma lists in --period, --policy, --workload or --load, or --repeat",
            )
        }
        Command::Roundtrip(a) => {
            if a.find_min_buffer {
                return Err(
                    "--find-min-buffer is a search of its own: sweep `period` as an axis instead, and the report finds the smallest buffer without under-runs".into(),
                );
            }
            let (_, periods, _) = roundtrip_checks(a, &scratch).map_err(msg)?;
            one_run(
                periods.len() * a.load.0.len() * a.repeat as usize,
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
            let placement = qos::CellPlan {
                cells,
                host_cell: a.cells.host_cell.clone(),
            };
            ::runner::admit_net(&placement, &config, &a.load)
                .map(|_| ())
                .map_err(|e| crate::runner::cells_refusal(e).to_string())
        }
        _ => Err("a plan's probe is jitter, event, roundtrip or net".into()),
    }
}

pub(crate) fn run_plan(ctx: &Context, a: &crate::cli::RunPlanArgs) -> Result<ExitCode> {
    let text = std::fs::read_to_string(&a.plan).map_err(|e| {
        UsageError(format!(
            "cannot read plan {}: {e} (`audiolat reproduce bbb2014 --print > plan.toml` writes one to start from)",
            a.plan.display()
        ))
    })?;
    let plan = crate::plan::parse(&text, &a.plan.display().to_string())
        .map_err(|e| UsageError(e.to_string()))?;
    crate::plan::run(ctx, &plan, &a.run)
}

pub(crate) fn reproduce(ctx: &Context, a: &crate::cli::ReproduceArgs) -> Result<ExitCode> {
    let text = crate::presets::text(&a.study, a.quick).expect("the study name was checked by clap");
    if a.print {
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    let source = format!(
        "preset {}{}",
        a.study,
        if a.quick { " --quick" } else { "" }
    );
    let plan = crate::plan::parse(&text, &source).map_err(|e| UsageError(e.to_string()))?;
    crate::plan::run(ctx, &plan, &a.run)
}
