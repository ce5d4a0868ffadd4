//! `audiolat suite`: every probe that can run here, with the embedded defaults, as one
//! group. What runs and how is `runner::suite`'s plan; here: the flags, the progress, the
//! notes in words, the table, the report and the exit code.

use crate::commands::event::server_request;
use crate::commands::output::{gated, group_runs, print_farm, print_json};
use crate::commands::sweep::{close_group, open_group, status_exit};
use crate::context::Context;
use crate::live::LiveLine;
use crate::run_errors::run_error;
use crate::stdio;
use anyhow::Result;
use report::view::suite::SuiteRow;
use runner::suite::{SuiteFailure, SuiteNote, SuiteObserver, SuitePlan};
use serde_json::json;
use std::process::ExitCode;

/// The suite's live status lines (on a terminal, unless quiet).
struct Live {
    quiet: bool,
}

impl SuiteObserver for Live {
    fn live(&self, label: &str, period_ns: u64) -> Box<dyn runner::Observer + '_> {
        Box::new(LiveLine::new(label, self.quiet, period_ns))
    }
}

/// An entry's note in words (a failure's with its causes; the measurements' are
/// `report::view::suite`'s).
fn note_text(note: SuiteNote) -> String {
    use report::view::suite as view;
    match note {
        SuiteNote::None => String::new(),
        SuiteNote::Skipped(why) | SuiteNote::RunError(why) => why,
        SuiteNote::Interrupted => "interrupted".into(),
        SuiteNote::Failed(SuiteFailure::Run(e)) => format!("{:#}", run_error(e)),
        SuiteNote::NoServer(e) | SuiteNote::Failed(SuiteFailure::Open(e)) => {
            crate::audio::audio_message_in(&e, crate::audio::Wording::Suite)
        }
        SuiteNote::Failed(SuiteFailure::NoOutcome) => {
            "the probe measured but kept no outcome (a bug)".into()
        }
        SuiteNote::Doctor { ok, warn, fail } => format!("{ok} ok, {warn} warn, {fail} fail"),
        SuiteNote::EventModel {
            playback_latency_frames,
            unreported_sink_frames,
            model_latency_ns,
            no_card,
        } => view::event_model_note(
            (playback_latency_frames, unreported_sink_frames),
            model_latency_ns,
            no_card,
        ),
        SuiteNote::Roundtrip { verdict, frames } => view::roundtrip_note(verdict, frames),
        SuiteNote::Net(o) => {
            // The counts as every view reads them from the stored record.
            let record = o.result_record();
            let counts = record.synth.as_ref().map(|synth| {
                let b = results::counts::NetBlocks::of(synth);
                let n = |v: Option<u64>| v.unwrap_or(0);
                (
                    n(b.host.responses_past_deadline),
                    n(b.host.answered),
                    n(b.controller.unanswered_in_run()),
                )
            });
            view::net_note(counts, o.synth_adds_ns())
        }
    }
}

pub(crate) fn suite(ctx: &Context, a: &crate::cli::SuiteArgs) -> Result<ExitCode> {
    let crate::cli::SuiteRequest {
        each,
        scratch_dir: scratch,
        output,
    } = a.request(&ctx.default_scratch())?;
    // The suite traces its jitter runs: a gate on a cause needs a kernel it can trace.
    crate::run_errors::check_gates_measurable(&a.gates.fail_if)?;
    let (json, quiet) = (output.json, output.quiet());
    let store = ctx.open_store()?;
    let group = open_group(ctx, &store, "suite", &json!({"each_s": each.as_secs_f64()}))?;
    if !quiet {
        stdio::progress_line(format_args!(
            "audiolat suite: group {}; doctor, then each probe for {:.0} s",
            group.id(),
            each.as_secs_f64()
        ));
    }
    // Event latency and round trip on JACK: a running server, else a private jackd -d dummy.
    let jack = server_request(engine::jack::server::ServerMode::Auto, None, None, None);
    let plan = SuitePlan::new(each, scratch, Some(group.id()), ctx.load_exe.clone(), jack);
    // An error here drops the group open: it is closed `failed`.
    let outcome = runner::suite::run(&ctx.run, &store, &plan, &Live { quiet })?;
    let end = outcome.end;
    let group_status = ctx.run.group_status(end);
    close_group(&store, &group, group_status);
    let group = group.id();
    let mut entries = outcome.entries;
    // Each gate judges the suite's runs whose probe has its metric.
    let judged = runner::gates::judge_suite(
        &store,
        entries.iter().filter_map(|e| e.run_id),
        &a.gates.fail_if,
    )?;
    let words: Vec<(String, String)> = entries
        .iter_mut()
        .map(|e| (e.status.to_string(), note_text(std::mem::take(&mut e.note))))
        .collect();
    let rows: Vec<SuiteRow> = entries
        .iter()
        .zip(&words)
        .map(|(e, (status, note))| SuiteRow {
            label: &e.label,
            run_id: e.run_id,
            status,
            headline: e.headline.as_ref(),
            dropouts: e.dropouts,
            flags: &e.flags,
            why: e.why.as_ref(),
            note,
        })
        .collect();
    // The suite ends with its report, beside the database.
    let what = format!("suite-{group}");
    let data = report::gather::group(&store, group, &crate::context::tool_info());
    let report_path = (data.as_ref().map_err(|e| anyhow::anyhow!("{e}")))
        .and_then(|data| Ok(report::html::write(data, None, &ctx.db_path, &what)?));
    if let Err(e) = &report_path {
        stdio::say(format_args!(
            "audiolat: warning: the suite's report was not written: {e:#}"
        ));
    }
    let report_path = report_path.ok();
    let report = report_path.as_deref();
    if print_farm(&store, a.gates.output_format, group_runs(&store, group)?)? {
        // Printed in the farm's format instead of the tables.
    } else if json {
        let doctor = report::view::doctor::json(&outcome.doctor.machine, &outcome.doctor.findings);
        print_json(&report::view::gates::with_json(
            report::view::suite::json(group, group_status, report, doctor, &rows),
            &judged,
        ))?;
    } else {
        stdio::print(format_args!(
            "{}{}",
            report::view::suite::text(group, &rows, data.as_ref().ok(), &ctx.db_path, report),
            report::view::gates::runs_text(&judged)
        ))?;
    }
    // Ctrl-C while the report was written is an interrupted exit all the same.
    Ok(gated(
        status_exit(ctx, ctx.run.group_status(end)),
        judged.failed(),
    ))
}
