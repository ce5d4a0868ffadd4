//! `audiolat roundtrip` (full-duplex input-to-output latency, swept) and `audiolat loop`
//! (audiolat's software loop client for JACK).

use crate::cli::UsageError;
use crate::commands::output::{gated, measurable_gates, print_farm, print_json};
use crate::commands::sweep::{open_group, open_sweep, sweep_exit, swept};
use crate::context::Context;
use crate::live::SweepLive;
use crate::stdio;
use anyhow::Result;
use serde_json::json;
use std::process::ExitCode;

/// A round-trip run's gates (`--fail-if`), measured with `--why` for causes, and here.
pub(crate) fn gates(a: &crate::cli::RoundtripArgs) -> Result<Vec<results::gate::Gate>> {
    measurable_gates(
        &a.gates,
        &results::probe_kind::ROUNDTRIP,
        &[],
        a.why.asked(),
    )
}

pub(crate) fn roundtrip(ctx: &Context, a: &crate::cli::RoundtripArgs) -> Result<ExitCode> {
    let req = a.request(&ctx.default_scratch())?;
    let gates = gates(a)?;
    let (sweep, store) = open_sweep(ctx, &req)?;
    let detail = json!({"backend": req.spec.name(), "periods": a.audio.period.as_ref().map(|p| p.0.clone())});
    let group = open_group(ctx, &store, "roundtrip", &detail)?;
    let live = SweepLive {
        quiet: a.output.quiet(),
    };
    let scratch = &req.scratch_dir;
    let out = match (a.find_min_buffer, req.cells.first()) {
        (true, Some(cell)) => {
            runner::min_buffer::search(sweep, ctx, &store, &group, cell, scratch, &live)
        }
        _ => sweep.run(ctx, &store, &group, &req.cells, scratch, &live),
    };
    let out = swept(&store, &group, out)?;
    if out.nothing_stored {
        return Err(crate::process::NothingMeasured.into());
    }
    let group = group.id();
    let runs = &out.runs;
    let views: Vec<results::RunView> = runs.iter().map(|r| r.run.view.clone()).collect();
    let kept: Vec<results::Kept> = runs.iter().map(|r| r.run.kept.clone()).collect();
    let (held, failed) = runner::min_buffer::verdict(runs);
    let (held, failed) = (held.map(|i| &views[i]), failed.map(|i| &views[i]));
    let judged = runner::gates::judge_sweep(&store, views.iter().map(|v| v.id), &gates)?;
    if print_farm(&store, a.gates.output_format, views.iter().map(|v| v.id))? {
        // Printed in the farm's format instead of the tables.
    } else if a.output.json {
        let details: Vec<_> = runs.iter().map(|r| r.outcome.windows_json()).collect();
        let mut v = report::view::fresh::roundtrip_json(group, &views, &details);
        if a.find_min_buffer {
            v["min_buffer"] = report::view::min_buffer::json(held, failed);
        }
        print_json(&report::view::gates::with_json(v, &judged))?;
    } else {
        let text = report::view::fresh::roundtrip_text(group, &views, &kept, &ctx.db_path);
        stdio::print(format_args!("{text}"))?;
        if a.find_min_buffer {
            stdio::print(report::view::min_buffer::text(held, failed))?;
        }
        stdio::print(report::view::gates::runs_text(&judged))?;
    }
    Ok(gated(
        sweep_exit(ctx, out.failure, out.status)?,
        judged.failed(),
    ))
}

/// `audiolat loop`: a software loop client until Ctrl-C.
pub(crate) fn loop_client(ctx: &Context, a: &crate::cli::LoopArgs) -> Result<ExitCode> {
    a.check()?;
    let server = a
        .server_name
        .clone()
        .unwrap_or_else(engine::jack::server::default_server_name);
    let words = |e: engine::audio::AudioError| {
        UsageError(crate::audio::audio_message_in(
            &e,
            crate::audio::Wording::Loop,
        ))
    };
    engine::phase::reached(engine::phase::Phase::LoopStart);
    let lp =
        engine::jack::loop_client::JackLoop::start(&server, &a.name, a.delay).map_err(words)?;
    let connect = |from: &str, to: &str| -> Result<()> {
        let client =
            engine::jack::server::open_client(&server, "audiolat-connect").map_err(words)?;
        client
            .connect_ports_by_name(from, to)
            .map_err(|e| UsageError(format!("connecting {from} to {to}: {e}")))?;
        Ok(())
    };
    if let Some(from) = &a.from {
        connect(from, &lp.input_port())?;
    }
    if let Some(to) = &a.to {
        connect(&lp.output_port(), to)?;
    }
    stdio::progress_line(format_args!(
        "audiolat loop: {} -> {} frames -> {} on JACK server `{server}`; Ctrl-C ends",
        lp.input_port(),
        lp.delay_frames(),
        lp.output_port()
    ));
    while !ctx.stopped() {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(lp);
    Ok(ExitCode::SUCCESS)
}
