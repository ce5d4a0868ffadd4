//! `audiolat suite`: every probe that can run here, with the embedded defaults, as one
//! group.

use crate::cli::UsageError;
use crate::commands::event::server_request;
use crate::commands::output::print_json;
use crate::commands::sweep::finish_group;
use crate::process::{EXIT_FAILED, EXIT_INTERRUPTED};
use crate::runner::{Context, LiveLine};
use anyhow::{Context as _, Result};
use results::{RunStatus, Store};
use serde_json::json;
use std::process::ExitCode;

impl SuiteEntry {
    /// A scenario that could not run, with the reason.
    fn failed(label: &str, e: &anyhow::Error) -> SuiteEntry {
        SuiteEntry {
            status: "failed".into(),
            note: format!("{e:#}"),
            ..SuiteEntry::not_run(label)
        }
    }

    /// A scenario the suite did not reach because it was interrupted.
    fn not_run(label: &str) -> SuiteEntry {
        SuiteEntry {
            label: label.into(),
            run_id: None,
            status: "not run".into(),
            headline: None,
            underruns: None,
            flags: json!({}),
            note: "interrupted".into(),
        }
    }
}

pub(crate) struct SuiteEntry {
    label: String,
    run_id: Option<i64>,
    status: String,
    headline: Option<results::Measurement>,
    underruns: Option<u64>,
    flags: serde_json::Value,
    note: String,
}

pub(crate) fn suite(ctx: &Context, a: &crate::cli::SuiteArgs) -> Result<ExitCode> {
    let scratch = a
        .scratch_dir
        .clone()
        .unwrap_or_else(|| ctx.default_scratch());
    // Refuse what can be refused before anything is written; a probe whose tool is
    // missing is skipped, by name, later ("every probe that can run here").
    if !scratch.is_dir() {
        return Err(UsageError(format!(
            "--scratch-dir {}: not a directory; give an existing directory on the disk to load",
            scratch.display()
        ))
        .into());
    }
    let store = ctx.open_store()?;
    let group = store.create_group(
        "suite",
        &ctx.command_line,
        &json!({"each_s": a.each.as_secs_f64()}),
    )?;
    let quiet = a.quiet || a.json;
    if !quiet {
        eprintln!(
            "audiolat suite: group {group}; doctor, then each probe for {:.0} s",
            a.each.as_secs_f64()
        );
    }
    let report = probes::doctor::run(std::time::Duration::from_secs(1));
    let doctor_id = crate::runner::doctor_run(ctx, &store, Some(group), &report)?;
    let (ok, warn, fail) = report.counts();
    let mut entries = vec![SuiteEntry {
        label: "doctor".into(),
        run_id: Some(doctor_id),
        status: "complete".into(),
        headline: None,
        underruns: None,
        flags: json!({}),
        note: format!("{ok} ok, {warn} warn, {fail} fail"),
    }];
    let mut failed = false;
    for (label, config, load) in crate::runner::suite_plan(a.each) {
        if ctx.stopped() {
            entries.push(SuiteEntry::not_run(label));
            continue;
        }
        if let Err(e) = crate::runner::check_load(&load, &scratch) {
            entries.push(SuiteEntry {
                label: label.into(),
                run_id: None,
                status: "skipped".into(),
                headline: None,
                underruns: None,
                flags: json!({}),
                note: e.to_string(),
            });
            continue;
        }
        let live = LiveLine::new(label, quiet, config.period_ns);
        match crate::runner::jitter_run(ctx, &store, Some(group), &config, &load, &scratch, &live) {
            Ok(run) => {
                let headline = run
                    .measurements
                    .iter()
                    .find(|m| m.metric == "fragment_completion")
                    .or(run.measurements.first())
                    .cloned();
                entries.push(SuiteEntry {
                    label: label.into(),
                    run_id: Some(run.run_id),
                    status: run.status.to_string(),
                    headline,
                    underruns: config
                        .fragments
                        .map(|_| run.outcome.recorded.underrun_count),
                    flags: run.flags.clone(),
                    note: String::new(),
                });
            }
            Err(e) => {
                failed = true;
                entries.push(SuiteEntry::failed(label, &e));
            }
        }
    }
    // Event-to-audio latency on JACK: a running server, else a private jackd -d dummy.
    let event_label = "event latency, sine, asap";
    if ctx.stopped() {
        entries.push(SuiteEntry::not_run(event_label));
    } else {
        let req = server_request(engine::jack_server::ServerMode::Auto, None, None, None);
        match engine::jack_server::JackServer::connect(&req) {
            Err(e) => entries.push(SuiteEntry {
                label: event_label.into(),
                run_id: None,
                status: "skipped".into(),
                headline: None,
                underruns: None,
                flags: json!({}),
                note: e.to_string(),
            }),
            Ok(mut server) => {
                // Without a card the suite's audio runs on a software clock: say where to
                // look for something with a DAC.
                let no_card = if server.info().private && !crate::audio::has_sound_card() {
                    " (no sound card here: a private jackd -d dummy; `audiolat devices` lists what can be measured)"
                } else {
                    ""
                };
                let mut config = probes::event::EventConfig::new(
                    probes::event::TriggerSource::Timer,
                    probes::event::NotePolicy::Asap,
                );
                let budget_ms = (a.each.as_secs_f64() * 1e3 - config.warmup_ms).max(0.0);
                config.triggers = ((budget_ms / (config.spacing_ms + 3.0)) as u64).max(10);
                let cell = crate::runner::EventCell {
                    config,
                    load: load::LoadSpec::none(),
                    repeat: 1,
                    jack: engine::jack_backend::JackConfig::default(),
                    granted: None,
                };
                let result =
                    engine::jack_backend::JackStream::open(server.info(), cell.jack.clone())
                        .map_err(anyhow::Error::from)
                        .and_then(|mut stream| {
                            crate::runner::event_run(
                                ctx,
                                &store,
                                Some(group),
                                &mut stream,
                                Some(&mut server),
                                &cell,
                                &scratch,
                                quiet,
                            )
                        });
                match result {
                    Ok(run) => {
                        if run.error.is_some() {
                            failed = true;
                        }
                        let headline = store
                            .measurements(run.run_id)?
                            .into_iter()
                            .map(|m| m.measurement)
                            .find(|m| m.metric == "event_latency");
                        entries.push(SuiteEntry {
                            label: event_label.into(),
                            run_id: Some(run.run_id),
                            status: run.status.to_string(),
                            headline,
                            underruns: Some(run.outcome.xruns.0 + run.outcome.xruns.1),
                            flags: run.flags.clone(),
                            note: run.error.clone().unwrap_or_else(|| {
                                format!(
                                    "model: half a period + {} frames playback latency = {}{no_card}",
                                    run.outcome.info.playback_latency_frames,
                                    report::terminal::fmt_ns(run.outcome.model_latency_ns())
                                )
                            }),
                        });
                    }
                    Err(e) => {
                        failed = true;
                        entries.push(SuiteEntry::failed(event_label, &e));
                    }
                }
                // The round trip on the same server, through audiolat's software loop
                // (or nothing but a cable can close a loop on real hardware).
                let rt_label = "round trip, JACK software loop";
                if ctx.stopped() {
                    entries.push(SuiteEntry::not_run(rt_label));
                } else {
                    let outcome =
                        suite_roundtrip(ctx, &store, group, &mut server, a, &scratch, quiet);
                    match outcome {
                        Ok(run) => {
                            if run.error.is_some() {
                                failed = true;
                            }
                            let headline = store
                                .measurements(run.run_id)?
                                .into_iter()
                                .map(|m| m.measurement)
                                .find(|m| m.metric == "roundtrip");
                            let o = &run.outcome;
                            let m = o.measured_frames();
                            entries.push(SuiteEntry {
                                label: rt_label.into(),
                                run_id: Some(run.run_id),
                                status: run.status.to_string(),
                                headline,
                                underruns: Some(o.xruns + o.gaps),
                                flags: run.flags.clone(),
                                note: run.error.clone().unwrap_or_else(|| {
                                    if m.count == 0 {
                                        return o.verdict_line();
                                    }
                                    format!(
                                        "{}; {:.3} frames = {} reported by the ports + {:.3} extra",
                                        o.verdict_line(),
                                        m.mean,
                                        o.reported_frames(),
                                        m.mean - f64::from(o.reported_frames())
                                    )
                                }),
                            });
                        }
                        Err(e) => {
                            failed = true;
                            entries.push(SuiteEntry::failed(rt_label, &e));
                        }
                    }
                }
            }
        }
    }
    // The Tessellation study's network audio, over loopback: needs nothing installed.
    let net_label = "network audio, Migrator synth, loopback";
    if ctx.stopped() {
        entries.push(SuiteEntry::not_run(net_label));
    } else {
        let config = probes::net::NetConfig {
            reference_duration: (a.each / 4).max(std::time::Duration::from_secs(1)),
            ..probes::net::NetConfig::new(a.each)
        };
        match crate::runner::net_run(
            ctx,
            &store,
            Some(group),
            &config,
            &load::LoadSpec::default(),
            &crate::runner::CellPlan::default(),
            &scratch,
        ) {
            Ok(run) => {
                let headline = run.outcome.measurements().into_iter().next();
                let phase = run.outcome.synth.as_ref();
                let note = match phase {
                    Some(p) => format!(
                        "{} of {} blocks missed the 1.41 ms deadline; {} lost{}",
                        p.host.misses,
                        p.host.answered,
                        p.controller.lost,
                        report::view::net::synth_adds_ns(&run.view()).map_or_else(
                            String::new,
                            |ns| format!(
                                "; the synth adds {} after the last packet",
                                report::terminal::fmt_ns(ns)
                            )
                        )
                    ),
                    None => "interrupted before the synth phase".into(),
                };
                if run.status == RunStatus::Failed {
                    failed = true;
                }
                entries.push(SuiteEntry {
                    label: net_label.into(),
                    run_id: Some(run.run_id),
                    status: run.status.to_string(),
                    headline,
                    underruns: None,
                    flags: run.flags.clone(),
                    note,
                });
            }
            Err(e) => {
                failed = true;
                entries.push(SuiteEntry::failed(net_label, &e));
            }
        }
    }
    let group_status = if ctx.stopped() {
        RunStatus::Interrupted
    } else if failed {
        RunStatus::Failed
    } else {
        RunStatus::Complete
    };
    finish_group(&store, group, group_status);
    // The suite ends with its report, beside the database.
    let report_path = report::gather::default_path(&ctx.db_path, &format!("suite-{group}"));
    let report_written = report::gather::group(&store, group, &crate::runner::tool_info())
        .map_err(anyhow::Error::from)
        .and_then(|data| {
            std::fs::write(&report_path, report::html::render(&data))
                .with_context(|| format!("writing the report {}", report_path.display()))
        });
    if let Err(e) = &report_written {
        eprintln!("audiolat: warning: the suite's report was not written: {e:#}");
    }
    let report_path = report_written.is_ok().then_some(report_path);
    if a.json {
        print_json(&json!({
            "group_id": group,
            "status": group_status,
            "report": report_path,
            "doctor": report::view::doctor::json(&report.machine, &report.findings),
            "runs": entries.iter().map(|e| json!({
                "label": e.label, "run_id": e.run_id, "status": e.status,
                "metric": e.headline.as_ref().map(|m| m.metric.clone()),
                "summary": e.headline.as_ref().map(|m| results::export::summary_json(m.summary.as_ref())),
                "underruns": e.underruns, "flags": e.flags, "note": e.note,
            })).collect::<Vec<_>>(),
        }))?;
    } else {
        print!("{}", suite_text(group, &entries, &ctx.db_path));
        if let Some(p) = &report_path {
            println!("report: {}", p.display());
        }
    }
    Ok(if ctx.stopped() {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if failed {
        ExitCode::from(EXIT_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

/// The suite's round trip: audiolat's software loop in the suite's JACK server, measured
/// for about `--each`.
pub(crate) fn suite_roundtrip(
    ctx: &Context,
    store: &Store,
    group: i64,
    server: &mut engine::jack_server::JackServer,
    a: &crate::cli::SuiteArgs,
    scratch: &std::path::Path,
    quiet: bool,
) -> Result<crate::runner::RoundtripRun> {
    let lp = engine::jack_loop::JackLoop::start(server.name(), "audiolat-loop", 0)?;
    let mut stream = engine::jack_backend::JackStream::open(
        server.info(),
        engine::jack_backend::JackConfig {
            playback: vec![lp.input_port()],
            capture: Some(lp.output_port()),
            ..Default::default()
        },
    )?;
    // The clicks and the first window take about a second before the measuring starts.
    let cell = crate::runner::RoundtripCell {
        config: probes::roundtrip::RoundtripConfig {
            duration_ms: (a.each.as_secs_f64() - 1.5).max(1.0) * 1e3,
            ..Default::default()
        },
        load: load::LoadSpec::none(),
        repeat: 1,
        loop_description: "software loop in the JACK server (audiolat-loop)".into(),
        granted: None,
    };
    let run = crate::runner::roundtrip_run(
        ctx,
        store,
        Some(group),
        &mut stream,
        Some(server),
        &cell,
        scratch,
        quiet,
    );
    drop(stream);
    drop(lp);
    run
}

pub(crate) fn suite_text(group: i64, entries: &[SuiteEntry], db: &std::path::Path) -> String {
    use report::terminal::Table;
    let mut t = Table::new(&[
        "run",
        "scenario",
        "status",
        "metric",
        "p50",
        "p99",
        "max",
        "under-runs",
        "rt",
        "steal",
    ])
    .left_align(&[1, 2, 3, 8]);
    for e in entries {
        let [metric, p50, p99, max] = report::terminal::headline_cells(e.headline.as_ref());
        t.row(vec![
            e.run_id.map_or("-".into(), |i| i.to_string()),
            e.label.clone(),
            e.status.clone(),
            metric,
            p50,
            p99,
            max,
            e.underruns.map_or("-".into(), |u| u.to_string()),
            match e.flags["realtime"].as_bool() {
                Some(true) => "yes".into(),
                Some(false) => "NO".into(),
                None => "-".into(),
            },
            e.flags["host_steal_percent"]
                .as_f64()
                .map_or("-".into(), |p| format!("{p:.1}%")),
        ]);
    }
    let mut out = format!("\naudiolat suite, group {group}\n\n");
    out.push_str(&t.render());
    for e in entries.iter().filter(|e| !e.note.is_empty()) {
        out.push_str(&format!("{}: {}\n", e.label, e.note));
    }
    out.push_str(&format!(
        "\nstored in {}; `audiolat runs --group {group}` lists the runs, `audiolat show <run>` shows one\n",
        db.display()
    ));
    out
}
