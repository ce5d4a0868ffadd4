//! `audiolat event`: event-to-audio latency, swept over periods, workloads, loads and
//! repeats, one stored run per cell in a group.

use crate::cli::UsageError;
use crate::commands::output::print_json;
use crate::commands::sweep::{open_group, open_sweep, scratch, sweep_exit, swept};
use crate::runner::{Context, SweepLive};
use anyhow::Result;
use serde_json::json;
use std::process::ExitCode;

/// The JACK server request for `--server`, `--server-name`, `--rate` and one period.
pub(crate) fn server_request(
    mode: engine::jack_server::ServerMode,
    name: Option<String>,
    rate: Option<u32>,
    period: Option<u32>,
) -> engine::jack_server::ServerRequest {
    engine::jack_server::ServerRequest {
        mode,
        name,
        rate_hz: rate,
        period_frames: period,
        jackd: load::find_in_path(load::JACKD.name),
        start_timeout: std::time::Duration::from_secs(10),
    }
}

/// The event cells of one period, in sweep order.
pub(crate) fn event_cells(a: &crate::cli::EventArgs) -> Result<Vec<crate::runner::EventCell>> {
    use probes::event::EventConfig;
    let mut cells = Vec::new();
    for policy in &a.policy.0 {
        for workload in &a.workload.0 {
            for load in &a.load.0 {
                for repeat in 1..=a.repeat {
                    let mut config = EventConfig::new(a.trigger, *policy);
                    config.triggers = a.triggers;
                    config.workload = *workload;
                    config.frequency_hz = a.frequency as f32;
                    config.note_ms = a.note.as_secs_f64() * 1e3;
                    config.spacing_ms = a.spacing.as_secs_f64() * 1e3;
                    config.gpio = a.gpio.clone();
                    config.lock_memory = !a.no_mlock;
                    config.seed ^= repeat as u64;
                    config.validate().map_err(|e| UsageError(e.to_string()))?;
                    cells.push(crate::runner::EventCell {
                        config,
                        load: load.clone(),
                        repeat,
                        granted: None,
                    });
                }
            }
        }
    }
    Ok(cells)
}

/// Everything `event` refuses before it starts anything: its cells, in sweep order, and
/// its backend.
pub(crate) fn event_checks(
    a: &crate::cli::EventArgs,
    scratch: &std::path::Path,
) -> Result<(Vec<crate::runner::EventCell>, engine::backend::BackendSpec)> {
    let cells = event_cells(a)?;
    for load in &a.load.0 {
        crate::runner::check_load(load, scratch)?;
    }
    if a.midi_port.is_some() && a.trigger != probes::event::TriggerSource::Midi {
        return Err(UsageError("--midi-port needs --trigger midi".into()).into());
    }
    let spec = crate::audio::sweep_spec(
        &a.audio,
        &crate::audio::event_purpose(a),
        &crate::audio::periods(&a.audio),
    )?;
    if a.trigger == probes::event::TriggerSource::Midi && !spec.has_midi() {
        return Err(UsageError(format!(
            "--trigger midi reads note-ons from a JACK MIDI port: use --backend jack (with --backend {}, use --trigger timer or key)",
            spec.name()
        ))
        .into());
    }
    if let Some(spec) = &a.gpio {
        // Open and release the line once now, so a missing chip is refused up front.
        engine::gpio::GpioLine::open(spec, "audiolat").map_err(|e| UsageError(e.to_string()))?;
    }
    if a.gpio.is_some() && a.trigger == probes::event::TriggerSource::Midi {
        return Err(UsageError(
            "--gpio needs --trigger timer or key: a MIDI note-on arrives inside the audio cycle, with no moment to raise a line at".into(),
        )
        .into());
    }
    Ok((cells, spec))
}

pub(crate) fn event(ctx: &Context, a: &crate::cli::EventArgs) -> Result<ExitCode> {
    // Everything that can be refused is refused before the database is opened.
    let scratch = scratch(ctx, &a.scratch_dir);
    let (cells, spec) = event_checks(a, &scratch)?;
    let sweep = open_sweep(&spec, crate::audio::periods(&a.audio))?;
    let store = ctx.open_store()?;
    let detail = json!({"backend": spec.name(), "periods": a.audio.period.as_ref().map(|p| p.0.clone()),
                "server": a.audio.server.to_string()});
    let group = open_group(ctx, &store, "event", &detail)?;
    let live = SweepLive {
        quiet: a.quiet || a.json,
    };
    let out = swept(
        &store,
        &group,
        sweep.run(ctx, &store, &group, &cells, &scratch, &live),
    )?;
    let group = group.id();
    let views: Vec<results::RunView> = out.runs.iter().map(|r| r.view()).collect();
    if a.json {
        print_json(&report::view::fresh::event_json(group, &views))?;
    } else {
        print!(
            "{}",
            report::view::fresh::event_text(group, &views, &ctx.db_path)
        );
    }
    sweep_exit(out.failure, out.status)
}
