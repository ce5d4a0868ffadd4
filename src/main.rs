//! audiolat: a real-time audio latency test bench for Linux.
//!
//! This binary parses the command line, runs probes as stored runs, and prints. It is
//! the one place where errors become exit codes:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done |
//! | 1 | a run failed while measuring (status `failed`), or its audio server went away or changed mid-run (status `interrupted`); what was measured is kept |
//! | 2 | refused before anything started: bad input, missing tool, unusable database |
//! | 3 | measured and stored, but a `--fail-if` gate failed (or its metric was not measured) |
//! | 130 | interrupted by Ctrl-C, SIGTERM, a hang-up (SIGHUP), SIGQUIT or a closed progress pipe (the run is stored as `interrupted`) |
//!
//! Nothing here prints with `print!` or `eprint!`, which panic when the stream fails
//! (a full disk, a closed pipe): standard output and standard error go through
//! [`stdio`].
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod audio;
mod cli;
mod commands;
mod context;
mod live;
mod plan;
mod process;
mod run_errors;
mod stdio;

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Result;
use clap::Parser;
use results::records::Record;
use results::StoreError;

use crate::commands::bench::bench;
use crate::commands::docs::{completions, man};
use crate::commands::event::event;
use crate::commands::jitter::jitter;
use crate::commands::net::net;
use crate::commands::output::print_json;
use crate::commands::plans::{load_worker, reproduce, run_plan};
use crate::commands::roundtrip::{loop_client, roundtrip};
use crate::commands::stored::{compare, export, push, runs, show, write_report};
use crate::commands::suite::suite;
use crate::process::{
    clap_error, command_line, database_unusable, error_text, install_signal_handlers, EXIT_FAILED,
    EXIT_INTERRUPTED, EXIT_USAGE,
};
use cli::{Cli, Command, UsageError};
use context::Context;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_error(e),
    };
    if let Command::Supervise(a) = &cli.command {
        // A load's supervisor handles its own signals; see load::supervise.
        return ExitCode::from(load::supervise(&a.program, &a.args).clamp(0, 255) as u8);
    }
    // SIGPIPE stays ignored (Rust's set-up): a closed pipe is an error where it is
    // written (exit 1, or a stop of the run its progress line belongs to; see stdio),
    // never a death halfway through a run that leaves the machine changed.
    let stop = install_signal_handlers();
    engine::phase::arm_from_env(&stop);
    stdio::stop_on_broken_progress(Arc::clone(&stop));
    // A stop while connecting to a PostgreSQL store ends the wait.
    results::store::stop_waiting_on(stop.clone());
    let db = cli.db.clone();
    if let Err(why) = stdio::check_stdout(&db) {
        stdio::say(format_args!("audiolat: error: {why}"));
        return ExitCode::from(EXIT_USAGE);
    }
    match dispatch(cli, stop) {
        Ok(code) => code,
        Err(e) => {
            let (code, line) = failure(&e, &db);
            stdio::say(format_args!("{line}"));
            ExitCode::from(code)
        }
    }
}

/// The exit code and the one line an error ends the command with.
fn failure(e: &anyhow::Error, db: &std::path::Path) -> (u8, String) {
    if let Some(why) = database_unusable(e) {
        return (
            EXIT_USAGE,
            format!(
                "audiolat: error: cannot use results database {}: {why}",
                db.display()
            ),
        );
    }
    if e.chain().any(|c| {
        matches!(c.downcast_ref::<StoreError>(), Some(StoreError::Stopped(_)))
            || c.is::<crate::process::NothingMeasured>()
    }) {
        // A stop while connecting to the store, or before anything was measured:
        // interrupted, nothing stored.
        return (
            EXIT_INTERRUPTED,
            format!("audiolat: {}", error_text(e).replace('\n', " ")),
        );
    }
    let usage = e.downcast_ref::<UsageError>().is_some()
        || e.chain().any(|c| {
            matches!(
                c.downcast_ref::<StoreError>(),
                Some(
                    StoreError::Open { .. }
                        | StoreError::UnsharedLog(_)
                        | StoreError::Missing(_)
                        | StoreError::TooNew { .. }
                        | StoreError::NoSuchRun(_)
                        | StoreError::NoSuchGroup(_)
                )
            )
        });
    let msg = error_text(e).replace('\n', " ");
    let code = if usage { EXIT_USAGE } else { EXIT_FAILED };
    (code, format!("audiolat: error: {msg}"))
}

fn dispatch(cli: Cli, stop: Arc<AtomicBool>) -> Result<ExitCode> {
    let ctx = Context {
        db_path: cli.db.clone(),
        run: runner::Context {
            command_line: command_line(),
            tool: context::tool_info(),
            stop,
            plan_cell: plan::cell_from_env()?.map(|c| (c.group, c.cell)),
            load_exe: std::env::current_exe().ok(),
        },
    };
    if let Command::Doctor(a) = &cli.command {
        a.checked_steal_window()?;
        if a.fix {
            context::undo_leftovers(true)?;
        }
    }
    match cli.command {
        Command::Doctor(a) => {
            let report = probes::doctor::run(a.checked_steal_window()?);
            if a.json {
                print_json(&report::view::doctor::json(
                    &report.machine,
                    &report.findings,
                ))?;
            } else {
                stdio::print(report::view::doctor::text(
                    &report.machine,
                    &report.findings,
                ))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Devices(a) => {
            let report = probes::devices::survey();
            if a.json {
                print_json(&probes::devices::record(&report, &crate::audio::setup_args).to_json())?;
            } else {
                let (plain_names, card_plugins) = probes::devices::pcm_names_by_card(&report);
                let local = report::view::devices::Local {
                    dev_snd: std::path::Path::new("/dev/snd").exists(),
                    plain_names,
                    card_plugins,
                };
                stdio::print(report::view::devices::text(
                    &probes::devices::record(&report, &crate::audio::setup_args),
                    &local,
                ))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Jitter(a) => jitter(&ctx, &a),
        Command::Event(a) => event(&ctx, &a),
        Command::Roundtrip(a) => roundtrip(&ctx, &a),
        Command::Loop(a) => loop_client(&ctx, &a),
        Command::Bench(a) => bench(&ctx, &a),
        Command::Net(a) => net(&ctx, &a),
        Command::Suite(a) => suite(&ctx, &a),
        Command::Run(a) => run_plan(&ctx, &a),
        Command::Reproduce(a) => reproduce(&ctx, &a),
        Command::Report(a) => write_report(&ctx, &a),
        Command::Compare(a) => compare(&ctx, &a),
        Command::Runs(a) => runs(&ctx, &a),
        Command::Show(a) => show(&ctx, &a),
        Command::Export(a) => export(&ctx, &a),
        Command::Push(a) => push(&ctx, &a),
        Command::Load(a) => load_worker(&ctx, &a),
        Command::Completions(a) => completions(&a),
        Command::Man(a) => man(&a, &ctx.db_path),
        Command::Supervise(_) => unreachable!("handled before the signal handlers"),
    }
}
