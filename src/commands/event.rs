//! `audiolat event`: event-to-audio latency, swept over periods, workloads, loads and
//! repeats, one stored run per cell in a group.

use crate::commands::output::{gated, measurable_gates, print_farm, print_json};
use crate::commands::sweep::{open_group, open_sweep, sweep_exit, swept};
use crate::context::Context;
use crate::live::SweepLive;
use crate::stdio;
use anyhow::Result;
use serde_json::json;
use std::process::ExitCode;

/// The JACK server request for `--server`, `--server-name`, `--rate` and one period.
pub(crate) fn server_request(
    mode: engine::jack::server::ServerMode,
    name: Option<String>,
    rate: Option<u32>,
    period: Option<u32>,
) -> engine::jack::server::ServerRequest {
    engine::jack::server::ServerRequest {
        mode,
        name,
        rate_hz: rate,
        period_frames: period,
        jackd: load::find_in_path(load::JACKD.name),
        start_timeout: std::time::Duration::from_secs(10),
    }
}

/// An event run's gates (`--fail-if`), measured with the settings given (`--loopback`
/// for its latency, `--why` for causes) and here.
pub(crate) fn gates(a: &crate::cli::EventArgs) -> Result<Vec<results::gate::Gate>> {
    let loopback = a
        .loopback
        .as_ref()
        .map(|_| results::probe_kind::Setting::Loopback);
    measurable_gates(
        &a.gates,
        &results::probe_kind::EVENT,
        loopback.as_slice(),
        a.why.asked(),
    )
}

pub(crate) fn event(ctx: &Context, a: &crate::cli::EventArgs) -> Result<ExitCode> {
    // Everything that can be refused is refused before the database is opened.
    let req = a.request(&ctx.default_scratch())?;
    let gates = gates(a)?;
    let (sweep, store) = open_sweep(ctx, &req)?;
    let detail = json!({"backend": req.spec.name(), "periods": a.audio.period.as_ref().map(|p| p.0.clone()),
                "server": a.audio.server.to_string()});
    let group = open_group(ctx, &store, "event", &detail)?;
    let live = SweepLive {
        quiet: a.output.quiet(),
    };
    let run = sweep.run(ctx, &store, &group, &req.cells, &req.scratch_dir, &live);
    let out = swept(&store, &group, run)?;
    if out.nothing_stored {
        return Err(crate::process::NothingMeasured.into());
    }
    let group = group.id();
    let views: Vec<results::RunView> = out.runs.iter().map(|r| r.run.view.clone()).collect();
    let kept: Vec<results::Kept> = out.runs.iter().map(|r| r.run.kept.clone()).collect();
    let judged = runner::gates::judge_sweep(&store, views.iter().map(|v| v.id), &gates)?;
    if print_farm(&store, a.gates.output_format, views.iter().map(|v| v.id))? {
        // Printed in the farm's format instead of the tables.
    } else if a.output.json {
        print_json(&report::view::gates::with_json(
            report::view::fresh::event_json(group, &views),
            &judged,
        ))?;
    } else {
        let text = report::view::fresh::event_text(group, &views, &kept, &ctx.db_path);
        stdio::print(format_args!(
            "{text}{}",
            report::view::gates::runs_text(&judged)
        ))?;
    }
    Ok(gated(
        sweep_exit(ctx, out.failure, out.status)?,
        judged.failed(),
    ))
}
