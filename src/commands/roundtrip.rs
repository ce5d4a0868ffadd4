//! `audiolat roundtrip` (full-duplex input-to-output latency, swept) and `audiolat loop`
//! (audiolat's software loop client for JACK).

use crate::cli::UsageError;
use crate::commands::output::print_json;
use crate::commands::sweep::{open_group, open_sweep, scratch, sweep_exit, swept};
use crate::runner::{Context, RoundtripCell, SweepLive};
use anyhow::Result;
use serde_json::json;
use std::process::ExitCode;

/// What `roundtrip` checks before it starts anything: the base configuration, the
/// periods to run, in order, and the backend.
pub(crate) fn roundtrip_checks(
    a: &crate::cli::RoundtripArgs,
    scratch: &std::path::Path,
) -> Result<(
    probes::roundtrip::RoundtripConfig,
    Vec<Option<u32>>,
    engine::backend::BackendSpec,
)> {
    let spec = crate::audio::spec(&a.audio, &crate::audio::roundtrip_purpose(a))?;
    let base = probes::roundtrip::RoundtripConfig {
        duration_ms: a.duration.as_secs_f64() * 1e3,
        every_periods: a.every,
        impulses: a.impulses,
        insert_delay_frames: a.insert_delay,
        peak: a.level,
        max_delay_frames: a.max_delay,
        loop_hint_frames: spec.loop_hint_frames(),
        ..Default::default()
    };
    base.validate().map_err(|e| UsageError(e.to_string()))?;
    for load in &a.load.0 {
        crate::runner::check_load(load, scratch)?;
    }
    let mut periods = crate::audio::periods(&a.audio);
    if a.find_min_buffer {
        if a.load.0.len() > 1 || a.repeat > 1 {
            return Err(UsageError(
                "--find-min-buffer tries one load once per setting: give one --load and no --repeat".into(),
            )
            .into());
        }
        let given = a.audio.period.as_ref().map(|p| p.0.as_slice());
        periods = ::runner::min_buffer::search_periods(&spec, given);
    }
    spec.check_periods(&periods)
        .map_err(|e| UsageError(e.to_string()))?;
    Ok((base, periods, spec))
}

pub(crate) fn roundtrip(ctx: &Context, a: &crate::cli::RoundtripArgs) -> Result<ExitCode> {
    let scratch = scratch(ctx, &a.scratch_dir);
    let (base, periods, spec) = roundtrip_checks(a, &scratch)?;
    let sweep = open_sweep(&spec, periods)?;
    let store = ctx.open_store()?;
    let detail =
        json!({"backend": spec.name(), "periods": a.audio.period.as_ref().map(|p| p.0.clone())});
    let group = open_group(ctx, &store, "roundtrip", &detail)?;
    let live = SweepLive {
        quiet: a.quiet || a.json,
    };
    // The loop description and what a device granted are the set-up's and the
    // stream's: the sweep fills them in.
    let cells: Vec<RoundtripCell> = a
        .load
        .0
        .iter()
        .flat_map(|load| {
            (1..=a.repeat).map(|repeat| RoundtripCell {
                config: base.clone(),
                load: load.clone(),
                repeat,
                loop_description: String::new(),
                granted: None,
            })
        })
        .collect();
    let out = match (a.find_min_buffer, cells.first()) {
        (true, Some(cell)) => {
            ::runner::min_buffer::search(sweep, ctx, &store, &group, cell, &scratch, &live)
        }
        _ => sweep.run(ctx, &store, &group, &cells, &scratch, &live),
    };
    let out = swept(&store, &group, out)?;
    let group = group.id();
    let runs = &out.runs;
    let views: Vec<results::RunView> = runs.iter().map(|r| r.view()).collect();
    let (held, failed) = ::runner::min_buffer::verdict(runs);
    let (held, failed) = (held.map(|i| &views[i]), failed.map(|i| &views[i]));
    if a.json {
        let details: Vec<_> = runs
            .iter()
            .map(|r| ::runner::view::roundtrip_windows(&r.outcome))
            .collect();
        let mut v = report::view::fresh::roundtrip_json(group, &views, &details);
        if a.find_min_buffer {
            v["min_buffer"] = report::view::min_buffer::json(held, failed);
        }
        print_json(&v)?;
    } else {
        let text = report::view::fresh::roundtrip_text(group, &views, &ctx.db_path);
        print!("{text}");
        if a.find_min_buffer {
            print!("{}", report::view::min_buffer::text(held, failed));
        }
    }
    sweep_exit(out.failure, out.status)
}

/// `audiolat loop`: a software loop client until Ctrl-C.
pub(crate) fn loop_client(ctx: &Context, a: &crate::cli::LoopArgs) -> Result<ExitCode> {
    let server = a
        .server_name
        .clone()
        .unwrap_or_else(engine::jack_server::default_server_name);
    let lp = engine::jack_loop::JackLoop::start(&server, &a.name, a.delay)
        .map_err(|e| UsageError(crate::audio::audio_message(&e)))?;
    let connect = |from: &str, to: &str| -> Result<()> {
        let client = engine::jack_server::open_client(&server, "audiolat-connect")
            .map_err(|e| UsageError(crate::audio::audio_message(&e)))?;
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
    eprintln!(
        "audiolat loop: {} -> {} frames -> {} on JACK server `{server}`; Ctrl-C ends",
        lp.input_port(),
        lp.delay_frames(),
        lp.output_port()
    );
    while !ctx.stopped() {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(lp);
    Ok(ExitCode::SUCCESS)
}
