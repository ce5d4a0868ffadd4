//! `audiolat suite`: every probe that can run here, with the embedded defaults, as one
//! group. What runs and how is `runner::suite`'s plan; here: the flags, the progress, the
//! notes in words, the table, the report and the exit code.

use crate::commands::event::server_request;
use crate::commands::output::print_json;
use crate::commands::sweep::{close_group, open_group, status_exit};
use crate::runner::{run_error, Context, LiveLine};
use ::runner::suite::{SuiteFailure, SuiteNote, SuiteObserver, SuitePlan};
use anyhow::{Context as _, Result};
use report::view::suite::SuiteRow;
use serde_json::json;
use std::process::ExitCode;

/// The suite's live status lines (on a terminal, unless quiet).
struct Live {
    quiet: bool,
}

impl SuiteObserver for Live {
    fn live(&self, label: &str, period_ns: u64) -> Box<dyn ::runner::Observer + '_> {
        Box::new(LiveLine::new(label, self.quiet, period_ns))
    }
}

/// An entry's note in words (a failure's with its causes).
fn note_text(note: SuiteNote) -> String {
    match note {
        SuiteNote::None => String::new(),
        SuiteNote::Skipped(why) | SuiteNote::RunError(why) => why,
        SuiteNote::Interrupted => "interrupted".into(),
        SuiteNote::Failed(SuiteFailure::Run(e)) => format!("{:#}", run_error(e)),
        SuiteNote::NoServer(e) => crate::audio::audio_message(&e),
        SuiteNote::Failed(SuiteFailure::Open(e)) => crate::audio::audio_message(&e),
        SuiteNote::Failed(SuiteFailure::NoOutcome) => {
            "the probe measured but kept no outcome (a bug)".into()
        }
        SuiteNote::Doctor { ok, warn, fail } => format!("{ok} ok, {warn} warn, {fail} fail"),
        SuiteNote::EventModel {
            playback_latency_frames,
            model_latency_ns,
            no_card,
        } => format!(
            "model: half a period + {playback_latency_frames} frames playback latency = {}{}",
            report::terminal::fmt_ns(model_latency_ns),
            if no_card {
                " (no sound card here: a private jackd -d dummy; `audiolat devices` lists what can be measured)"
            } else {
                ""
            }
        ),
        SuiteNote::Roundtrip { verdict, frames } => match frames {
            None => verdict,
            Some((mean, reported)) => format!(
                "{verdict}; {mean:.3} frames = {reported} reported by the ports + {:.3} extra",
                mean - f64::from(reported)
            ),
        },
        SuiteNote::Net(o) => match o.synth.as_ref() {
            Some(p) => format!(
                "{} of {} blocks missed the 1.41 ms deadline; {} lost{}",
                p.host.misses,
                p.host.answered,
                p.controller.lost,
                o.synth_adds_ns().map_or_else(String::new, |ns| format!(
                    "; the synth adds {} after the last packet",
                    report::terminal::fmt_ns(ns)
                ))
            ),
            None => "interrupted before the synth phase".into(),
        },
    }
}

pub(crate) fn suite(ctx: &Context, a: &crate::cli::SuiteArgs) -> Result<ExitCode> {
    let crate::cli::SuiteRequest {
        each,
        scratch_dir: scratch,
        json,
        quiet,
    } = a.request(&ctx.default_scratch())?;
    let store = ctx.open_store()?;
    let group = open_group(ctx, &store, "suite", &json!({"each_s": each.as_secs_f64()}))?;
    if !quiet {
        eprintln!(
            "audiolat suite: group {}; doctor, then each probe for {:.0} s",
            group.id(),
            each.as_secs_f64()
        );
    }
    // Event latency and round trip on JACK: a running server, else a private jackd -d dummy.
    let jack = server_request(engine::jack::server::ServerMode::Auto, None, None, None);
    let plan = SuitePlan::new(each, scratch, Some(group.id()), ctx.load_exe.clone(), jack);
    // An error here drops the group open: it is closed `failed`.
    let outcome = ::runner::suite::run(&ctx.run, &store, &plan, &Live { quiet })?;
    let end = outcome.end;
    let group_status = ctx.run.group_status(end);
    close_group(&store, &group, group_status);
    let group = group.id();
    let mut entries = outcome.entries;
    let notes: Vec<String> = entries
        .iter_mut()
        .map(|e| note_text(std::mem::replace(&mut e.note, SuiteNote::None)))
        .collect();
    let statuses: Vec<String> = entries.iter().map(|e| e.status.to_string()).collect();
    let rows: Vec<SuiteRow> = entries
        .iter()
        .zip(&notes)
        .zip(&statuses)
        .map(|((e, note), status)| SuiteRow {
            label: &e.label,
            run_id: e.run_id,
            status,
            headline: e.headline.as_ref(),
            underruns: e.underruns,
            flags: &e.flags,
            note,
        })
        .collect();
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
    if json {
        print_json(&json!({
            "group_id": group,
            "status": group_status,
            "report": report_path,
            "doctor": report::view::doctor::json(&outcome.doctor.machine, &outcome.doctor.findings),
            "runs": report::view::suite::rows_json(&rows),
        }))?;
    } else {
        print!("{}", report::view::suite::text(group, &rows, &ctx.db_path));
        if let Some(p) = &report_path {
            println!("report: {}", p.display());
        }
    }
    // Ctrl-C while the report was written is an interrupted exit all the same.
    Ok(status_exit(ctx.run.group_status(end)))
}
