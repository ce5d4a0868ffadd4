//! `audiolat net experiment`: the Tessellation study's Figures 7 and 8 as a group of net
//! runs. The cases are the presets' (`tessellation2013`, `tessellation2013-bandwidth`),
//! run by `runner::experiment`; here: the flags, the progress lines, the table.

use crate::cli::{Experiment, ExperimentArgs, UsageError};
use crate::commands::output::print_json;
use crate::commands::sweep::{close_group, open_group, status_exit};
use crate::context::Context;
use crate::run_errors::run_error;
use crate::stdio;
use anyhow::Result;
use probes::net::ReserveBy;
use report::view::experiment::{self as view, ExperimentRow};
use runner::experiment::{
    ExperimentCase, ExperimentDesign, ExperimentObserver, ExperimentPlan, Study,
};
use serde_json::json;
use std::process::ExitCode;

/// The progress lines on stderr.
struct Progress<'a> {
    which: &'static str,
    args: &'a ExperimentArgs,
}

impl ExperimentObserver for Progress<'_> {
    fn case_starting(&self, index: usize, total: usize, case: &ExperimentCase) {
        if self.args.output.quiet() {
            return;
        }
        stdio::progress_line(format_args!(
            "audiolat net experiment {}: run {} of {}: {} ({} + {} warm-up)",
            self.which,
            index + 1,
            total,
            case.design.label,
            report::terminal::fmt_duration(self.args.duration),
            report::terminal::fmt_duration(self.args.warmup)
        ));
    }
}

/// The study's numbers for a case (`report::view::experiment::paper`).
fn paper(case: &ExperimentCase) -> &'static str {
    view::paper(
        case.link.as_ref().map(|l| l.reserve_mbps),
        !case.cells.cells.cells.is_empty(),
        !case.load.is_none(),
    )
}

/// The experiment's cases from its preset, for the flags: the music cell on `--cpu`
/// (isolation); the link's `--link` and the reservations `--by` keeps (bandwidth).
pub(crate) fn cases(a: &ExperimentArgs) -> Result<(Study, ExperimentDesign, Vec<ExperimentCase>)> {
    probes::net::check_ranges(
        a.duration,
        std::time::Duration::ZERO,
        a.warmup,
        Some(a.link),
        None,
    )
    .map_err(crate::cli::net_usage)?;
    let online = engine::rt::online_cpus();
    let cpu = a.cpu.unwrap_or_else(|| online.last().copied().unwrap_or(0));
    if !online.contains(&cpu) {
        return Err(UsageError(format!(
            "--cpu {cpu} is not online here: use one of the online CPUs ({})",
            engine::rt::format_cpu_list(&online)
        ))
        .into());
    }
    let study = match a.which {
        Experiment::Isolation => Study::Isolation,
        Experiment::Bandwidth => Study::Bandwidth,
    };
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    study
        .check_machine(root, online.len())
        .map_err(|e| UsageError(e.to_string()))?;
    let design = study.design()?;
    let by = match a.by.as_str() {
        "tc" => Some(ReserveBy::Tc),
        "mclock" => Some(ReserveBy::Service),
        _ => None,
    };
    let cases = study.cases(&design, cpu, a.link, by)?;
    Ok((study, design, cases))
}

pub(crate) fn net_experiment(ctx: &Context, a: &ExperimentArgs) -> Result<ExitCode> {
    let (study, design, cases) = cases(a)?;
    let which = study.name();
    let metric = design.metric.as_str();
    let scratch = a.scratch.or(&ctx.default_scratch());
    let store = ctx.open_store()?;
    let detail = json!({"duration_s": a.duration.as_secs_f64(), "runs": cases.iter().map(|c| c.design.label.clone()).collect::<Vec<_>>()});
    let open = open_group(ctx, &store, &format!("net experiment {which}"), &detail)?;
    let group = open.id();
    let plan = ExperimentPlan {
        cases,
        base: probes::net::NetConfig {
            warmup: a.warmup,
            ..probes::net::NetConfig::new(a.duration)
        },
        netns: design.netns,
        group: Some(group),
        scratch,
    };
    let results = runner::experiment::run(&ctx.run, &store, &plan, &Progress { which, args: a });
    if results.is_empty() && ctx.stopped() && open.discard() {
        return Err(crate::process::NothingMeasured.into());
    }
    let end = runner::experiment::group_end(&results, plan.cases.len());
    let rows: Vec<_> = results
        .into_iter()
        .map(|r| {
            let (label, paper) = (&r.case.design.label, paper(&r.case));
            match r.run {
                Ok(c) => ExperimentRow::of_run(label, metric, paper, &c.run.view),
                Err(e) => ExperimentRow::failed(label, paper, format!("{:#}", run_error(e))),
            }
        })
        .collect();
    close_group(&store, &open, ctx.run.group_status(end));
    if a.output.json {
        print_json(&view::json(which, metric, group, &rows))?;
    } else {
        stdio::print(view::stored_text(
            which,
            metric,
            group,
            netaudio::wire::DEADLINE_NS as f64,
            &rows,
            &ctx.db_path,
        ))?;
    }
    Ok(status_exit(ctx, ctx.run.group_status(end)))
}
