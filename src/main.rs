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
//! | 130 | interrupted by Ctrl-C / SIGTERM (the run is stored as `interrupted`) |

mod audio;
mod cli;
mod commands;
mod plan;
mod process;
mod runner;

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Result;
use clap::Parser;
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
    EXIT_USAGE,
};
use cli::{Cli, Command, UsageError};
use runner::Context;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_error(e),
    };
    if let Command::Supervise(a) = &cli.command {
        // A load's supervisor handles its own signals; see load::supervise.
        return ExitCode::from(load::supervise(&a.program, &a.args).clamp(0, 255) as u8);
    }
    // Output piped into `head` ends quietly, as a Unix tool's does, instead of with a
    // broken-pipe panic from println!.
    // SAFETY: setting a signal's disposition to the default before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let stop = install_signal_handlers();
    let db = cli.db.clone();
    match dispatch(cli, stop) {
        Ok(code) => code,
        Err(e) if database_unusable(&e).is_some() => {
            let why = database_unusable(&e).unwrap_or_default();
            eprintln!(
                "audiolat: error: cannot use results database {}: {why}",
                db.display()
            );
            ExitCode::from(EXIT_USAGE)
        }
        Err(e) => {
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
            let msg = error_text(&e).replace('\n', " ");
            eprintln!("audiolat: error: {msg}");
            ExitCode::from(if usage { EXIT_USAGE } else { EXIT_FAILED })
        }
    }
}

fn dispatch(cli: Cli, stop: Arc<AtomicBool>) -> Result<ExitCode> {
    let ctx = Context {
        db_path: cli.db.clone(),
        run: ::runner::Context {
            command_line: command_line(),
            tool: runner::tool_info(),
            stop,
            plan_cell: plan::cell_from_env()?.map(|c| (c.group, c.cell)),
            load_exe: std::env::current_exe().ok(),
        },
    };
    if let Command::Doctor(a) = &cli.command {
        if a.fix {
            runner::undo_leftovers()?;
        }
    }
    match cli.command {
        Command::Doctor(a) => {
            let report = probes::doctor::run(a.steal_window);
            if a.json {
                print_json(&report::view::doctor::json(
                    &report.machine,
                    &report.findings,
                ))?;
            } else {
                print!(
                    "{}",
                    report::view::doctor::text(&report.machine, &report.findings)
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Devices(a) => {
            let report = probes::devices::survey();
            if a.json {
                print_json(&probes::devices::to_json(
                    &report,
                    &crate::audio::setup_args,
                ))?;
            } else {
                let (plain_names, card_plugins) = probes::devices::pcm_names_by_card(&report);
                let local = report::view::devices::Local {
                    dev_snd: std::path::Path::new("/dev/snd").exists(),
                    plain_names,
                    card_plugins,
                };
                print!(
                    "{}",
                    report::view::devices::text(
                        &probes::devices::to_json(&report, &crate::audio::setup_args),
                        &local
                    )
                );
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
        Command::Man(a) => man(&a),
        Command::Supervise(_) => unreachable!("handled before the signal handlers"),
    }
}
