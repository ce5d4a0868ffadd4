//! `audiolat roundtrip` (full-duplex input-to-output latency, swept) and `audiolat loop`
//! (audiolat's software loop client for JACK).

use crate::cli::UsageError;
use crate::commands::output::print_json;
use crate::commands::sweep::{check_sweep_server, finish_group, sweep_exit, sweep_status};
use crate::runner::Context;
use anyhow::Result;
use results::RunStatus;
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
        let smallest = spec.smallest_period();
        let mut list: Vec<u32> = match &a.audio.period {
            Some(p) => p.0.clone(),
            None => (4..=11)
                .map(|k| 1u32 << k)
                .filter(|&p| p >= smallest)
                .collect(),
        };
        list.sort_unstable_by(|x, y| y.cmp(x));
        list.dedup();
        periods = list.into_iter().map(Some).collect();
    }
    spec.check_periods(&periods)
        .map_err(|e| UsageError(e.to_string()))?;
    Ok((base, periods, spec))
}

pub(crate) fn roundtrip(ctx: &Context, a: &crate::cli::RoundtripArgs) -> Result<ExitCode> {
    let scratch = a
        .scratch_dir
        .clone()
        .unwrap_or_else(|| ctx.default_scratch());
    let (base, periods, spec) = roundtrip_checks(a, &scratch)?;
    let first = crate::audio::setup(&spec, periods[0], true)?;
    check_sweep_server(&first, &periods)?;
    let store = ctx.open_store()?;
    let group = store.create_group(
        "roundtrip",
        &ctx.command_line,
        &json!({"backend": spec.name(), "periods": a.audio.period.as_ref().map(|p| p.0.clone())}),
    )?;
    let quiet = a.quiet || a.json;
    let mut runs: Vec<crate::runner::RoundtripRun> = Vec::new();
    let mut failure: Option<String> = None;
    let mut setup = Some(first);
    'periods: for (i, period) in periods.iter().enumerate() {
        if i > 0 {
            drop(setup.take());
            match crate::audio::setup(&spec, *period, false) {
                Ok(s) => setup = Some(s),
                Err(e) => {
                    failure = Some(e.to_string());
                    break;
                }
            }
        }
        let Some(setup) = setup.as_mut() else { break };
        for load in &a.load.0 {
            for repeat in 1..=a.repeat {
                if ctx.stopped() {
                    break 'periods;
                }
                let cell = crate::runner::RoundtripCell {
                    config: base.clone(),
                    load: load.clone(),
                    repeat,
                    loop_description: setup.loop_description().to_string(),
                    granted: None,
                };
                let (mut stream, granted) = match crate::audio::open_stream(setup) {
                    Ok(s) => s,
                    Err(e) => {
                        failure = Some(e.to_string());
                        break 'periods;
                    }
                };
                let cell = crate::runner::RoundtripCell { granted, ..cell };
                let result = crate::runner::roundtrip_run(
                    ctx,
                    &store,
                    Some(group),
                    stream.as_mut(),
                    setup.server_mut(),
                    &cell,
                    &scratch,
                    quiet,
                );
                drop(stream);
                let run = match result {
                    Ok(run) => run,
                    Err(e) => {
                        let _ = store.finish_group(group, RunStatus::Failed);
                        return Err(e);
                    }
                };
                let stop_sweep = run.error.is_some();
                if let Some(e) = &run.error {
                    failure = Some(e.clone());
                }
                // Finding the smallest buffer: the first setting that under-runs (or
                // loses the loop) ends the descent.
                let under_ran =
                    a.find_min_buffer && !crate::min_buffer::holds_without_underruns(&run);
                runs.push(run);
                if stop_sweep || under_ran {
                    break 'periods;
                }
            }
        }
    }
    drop(setup);
    let status = sweep_status(ctx, &failure, runs.iter().map(|r| r.status));
    finish_group(&store, group, status);
    let views: Vec<results::RunView> = runs.iter().map(|r| r.view()).collect();
    let (held, failed) = crate::min_buffer::verdict(&runs);
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
    sweep_exit(failure, status)
}

/// `audiolat loop`: a software loop client until Ctrl-C.
pub(crate) fn loop_client(ctx: &Context, a: &crate::cli::LoopArgs) -> Result<ExitCode> {
    let server = a
        .server_name
        .clone()
        .unwrap_or_else(engine::jack_server::default_server_name);
    let lp = engine::jack_loop::JackLoop::start(&server, &a.name, a.delay)
        .map_err(|e| UsageError(e.to_string()))?;
    let connect = |from: &str, to: &str| -> Result<()> {
        let client = engine::jack_server::open_client(&server, "audiolat-connect")
            .map_err(|e| UsageError(e.to_string()))?;
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
