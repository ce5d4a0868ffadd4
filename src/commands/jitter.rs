//! `audiolat jitter`: periodic wake-up latency and fragment deadlines as one stored run.

use crate::commands::output::{
    check_output_path, gated, measurable_gates, print_farm, print_json, write_output,
};
use crate::context::Context;
use crate::live::LiveLine;
use crate::process::{EXIT_FAILED, EXIT_INTERRUPTED};
use crate::run_errors::run_error;
use crate::stdio;
use anyhow::Result;
use results::RunStatus;
use std::process::ExitCode;

/// A jitter run's gates (`--fail-if`), measured with the settings given (`--fragments`
/// for under-runs, `--why` for causes) and here.
pub(crate) fn gates(
    a: &crate::cli::JitterArgs,
    config: &probes::jitter::JitterConfig,
) -> Result<Vec<results::gate::Gate>> {
    let fragments = config
        .fragments
        .map(|_| results::probe_kind::Setting::Fragments);
    measurable_gates(
        &a.gates,
        &results::probe_kind::JITTER,
        fragments.as_slice(),
        a.why.asked(),
    )
}

pub(crate) fn jitter(ctx: &Context, a: &crate::cli::JitterArgs) -> Result<ExitCode> {
    // Everything is checked before the database is opened: bad input writes nothing.
    let req = a.request(&ctx.default_scratch())?;
    let gates = gates(a, &req.config)?;
    crate::run_errors::check_load(&req.load, &req.scratch_dir)?;
    if let Some(p) = &req.histfile {
        check_output_path(p, "--histfile", &ctx.db_path)?;
    }
    let store = ctx.open_store()?;
    let live = LiveLine::new("jitter", req.output.quiet(), req.config.period_ns);
    let runner::ProbeRun { run, outcome } = runner::jitter(
        ctx,
        &store,
        None,
        &req.config,
        &req.load,
        &req.scratch_dir,
        &live,
    )
    .map_err(run_error)?;
    let judged = runner::gates::judge_runs(&store, [run.run_id], &gates)?;
    let printed = (|| -> Result<()> {
        if print_farm(&store, a.gates.output_format, [run.run_id])? {
            // Printed in the farm's format instead of the tables.
        } else if req.output.json {
            print_json(&report::view::gates::with_json(
                report::view::jitter::json(&run.view),
                &judged,
            ))?;
        } else {
            let text = report::view::fresh::jitter_text(&run.view, &ctx.db_path, &run.kept);
            stdio::print(format_args!(
                "{text}{}",
                report::view::gates::runs_text(&judged)
            ))?;
        }
        Ok(())
    })();
    // The histogram file after the tables: a file that cannot be written (a full disk)
    // costs the file, not what the run printed or stored.
    let histogram = match &req.histfile {
        Some(path) => {
            let text = outcome.cyclictest_histogram();
            write_output(path, "--histfile", &ctx.db_path, text.as_bytes()).map_err(|e| {
                e.context(format!(
                    "run {} is stored, but not its histogram",
                    run.run_id
                ))
            })
        }
        None => Ok(()),
    };
    if let Some(e) = &run.error {
        stdio::say(format_args!("audiolat: error: run {}: {e}", run.run_id));
    }
    match (printed, histogram) {
        (Err(e), Err(h)) => return Err(anyhow::anyhow!("{e:#}; {h:#}")),
        (Err(e), Ok(())) | (Ok(()), Err(e)) => return Err(e),
        (Ok(()), Ok(())) => {}
    }
    if run.error.is_some() {
        return Ok(ExitCode::from(EXIT_FAILED));
    }
    Ok(match run.status {
        RunStatus::Interrupted => ExitCode::from(EXIT_INTERRUPTED),
        _ => gated(ExitCode::SUCCESS, judged.failed()),
    })
}
