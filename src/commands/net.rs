//! `audiolat net` (both ends over loopback or network namespaces) and the two ends of a
//! two-machine run (`net respond`, `net emulate`).

use crate::cli::UsageError;
use crate::commands::experiment::net_experiment;
use crate::commands::output::{gated, measurable_gates, print_farm, print_json};
use crate::commands::sweep::status_exit;
use crate::context::Context;
use crate::run_errors::run_error;
use crate::stdio;
use anyhow::Result;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

pub(crate) fn net_respond(ctx: &Context, a: &crate::cli::RespondArgs) -> Result<ExitCode> {
    let (mut setup, config) = a.host_config()?;
    let socket = netaudio::bind(a.bind).map_err(|e| UsageError(e.to_string()))?;
    // The port the kernel gave, when --bind asked for port 0: said and stored.
    setup.bind = socket.local_addr().unwrap_or(a.bind);
    let info = runner::EndRunInfo::new(
        probes::net::respond_config(&setup),
        config.policy,
        config.cpus.as_deref(),
    )
    .map_err(run_error)?;
    let store = ctx.open_store()?;
    if !a.threads.output.quiet() {
        stdio::progress_line(format_args!(
            "audiolat net respond: {}; Ctrl-C ends",
            setup.summary()
        ));
    }
    let bound = setup.bind;
    let run = runner::end_run(ctx, &store, info, || {
        let (stop, done) = (AtomicBool::new(false), AtomicBool::new(false));
        std::thread::scope(|scope| {
            scope.spawn(|| runner::stop_after(ctx, a.duration, &stop, &done));
            let measured = runner::net_ends::respond(&config, socket, &stop, !a.no_synth, |h| {
                nothing_answered(h, bound, a.peer)
            });
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            measured
        })
    })
    .map_err(run_error)?;
    print_net_end(ctx, &run, a.threads.output.json)
}

/// Why a host counted no block, in the words of its flags.
fn nothing_answered(
    h: &probes::net::HostOutcome,
    bound: std::net::SocketAddr,
    peer: Option<std::net::SocketAddr>,
) -> String {
    if h.answers_in_warmup > 0 {
        return format!(
            "the controller stopped within the warm-up: {} blocks answered, none counted; give `net emulate` a longer --duration, or this host a shorter --warmup",
            h.answers_in_warmup
        );
    }
    let d = &h.counters.drops;
    let came = h.counters.packets_accepted + d.total() + h.kernel_dropped;
    if came == 0 {
        let from = peer.map_or(String::new(), |p| format!(" --bind {p}"));
        return format!(
            "no controller sent to {bound}: nothing measured; start `audiolat net emulate --host {bound}{from}`"
        );
    }
    let mut what = Vec::new();
    if d.foreign > 0 {
        what.push(match peer {
            Some(p) => format!("{} from addresses other than --peer {p}", d.foreign),
            None => format!("{} from addresses other than the controller's", d.foreign),
        });
    }
    for (n, words) in [
        (d.malformed(), "malformed"),
        (d.duplicate + d.stale, "duplicate or stale"),
        (d.unconfirmed, "from senders that never completed a block"),
        (h.counters.packets_accepted, "in blocks never completed"),
        (h.kernel_dropped, "dropped by the kernel on a full queue"),
    ] {
        if n > 0 {
            what.push(format!("{n} {words}"));
        }
    }
    format!(
        "no block answered on {bound}: {came} datagrams came and none completed a block ({})",
        what.join(", ")
    )
}

pub(crate) fn net_emulate(ctx: &Context, a: &crate::cli::EmulateArgs) -> Result<ExitCode> {
    let (setup, config) = a.controller_config()?;
    let socket = netaudio::bind(a.bind).map_err(|e| UsageError(e.to_string()))?;
    if let Err(e) = socket.connect(a.host) {
        return Err(UsageError(format!("--host {}: unreachable from {} ({e}): check the address and the route (ip route get {})", a.host, a.bind, a.host.ip())).into());
    }
    // Sending goes through send_to; the socket stays unconnected for it.
    let socket = {
        drop(socket);
        netaudio::bind(a.bind).map_err(|e| UsageError(e.to_string()))?
    };
    let info = runner::EndRunInfo::new(
        probes::net::emulate_config(&setup),
        config.policy,
        config.cpus.as_deref(),
    )
    .map_err(run_error)?;
    let store = ctx.open_store()?;
    if !a.threads.output.quiet() {
        stdio::progress_line(format_args!(
            "audiolat net emulate: {} pads to {} from {} for {} after {} of warm-up",
            a.input.pads,
            a.host,
            a.bind,
            report::terminal::fmt_duration(a.duration),
            report::terminal::fmt_duration(a.warmup)
        ));
    }
    let run = runner::end_run(ctx, &store, info, || {
            runner::net_ends::emulate(ctx, &config, socket, || {
                format!(
                "no answer from {}: is `audiolat net respond` running there, and does its --peer name this controller's address ({} as the host sees it)?",
                a.host, a.bind
            )
            })
        },
    )
    .map_err(run_error)?;
    print_net_end(ctx, &run, a.threads.output.json)
}

pub(crate) fn print_net_end(
    ctx: &Context,
    run: &runner::EndRun,
    as_json: bool,
) -> Result<ExitCode> {
    let db = &ctx.db_path;
    let nothing = run.measurements.first().is_none_or(|m| m.summary.is_none());
    if as_json {
        print_json(&report::view::net::end_json(&run.view))?;
    } else if !(nothing && run.error.is_some()) {
        stdio::print(report::view::fresh::net_end_text(&run.view, db, &run.kept))?;
    }
    if let Some(e) = &run.error {
        stdio::say(format_args!("audiolat: error: {e}"));
    }
    Ok(status_exit(ctx, run.status))
}

pub(crate) fn net(ctx: &Context, a: &crate::cli::NetArgs) -> Result<ExitCode> {
    match &a.role {
        Some(crate::cli::NetRole::Respond(r)) => return net_respond(ctx, r),
        Some(crate::cli::NetRole::Emulate(e)) => return net_emulate(ctx, e),
        Some(crate::cli::NetRole::Experiment(e)) => return net_experiment(ctx, e),
        None => {}
    }
    let crate::cli::NetRequest {
        config,
        placement,
        scratch,
    } = a.request(&ctx.default_scratch())?;
    let gates = measurable_gates(&a.gates, &results::probe_kind::NET, &[], a.why)?;
    let store = ctx.open_store()?;
    if !a.output.quiet() {
        stdio::progress_line(format_args!(
            "audiolat net: {} of reference then {} of synth, each after {} of warm-up, over {}",
            report::terminal::fmt_duration(config.reference_duration),
            report::terminal::fmt_duration(config.duration),
            report::terminal::fmt_duration(config.warmup),
            if config.netns {
                "a veth pair between two network namespaces"
            } else {
                "loopback"
            }
        ));
    }
    let run = runner::net(ctx, &store, None, &config, &a.load, &placement, &scratch)
        .map_err(run_error)?
        .run;
    let judged = runner::gates::judge_runs(&store, [run.run_id], &gates)?;
    if print_farm(&store, a.gates.output_format, [run.run_id])? {
        // Printed in the farm's format instead of the tables.
    } else if a.output.json {
        print_json(&report::view::gates::with_json(
            report::view::net::json(&run.view),
            &judged,
        ))?;
    } else {
        let text = report::view::fresh::net_text(&run.view, &ctx.db_path, &run.kept);
        stdio::print(format_args!(
            "{text}{}",
            report::view::gates::runs_text(&judged)
        ))?;
    }
    if let Some(e) = &run.error {
        stdio::say(format_args!("audiolat: error: run {}: {e}", run.run_id));
    }
    Ok(gated(status_exit(ctx, run.status), judged.failed()))
}
