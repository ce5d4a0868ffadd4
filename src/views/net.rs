//! `audiolat net` and its two ends: the study's Figure 7 and what stands beside it.

use std::fmt::Write as _;

use report::terminal::{flag_notes, fmt_ns, histogram, machine_line, summary_table};
use serde_json::{json, Value};

use super::synth_adds_ns;

/// A statistic of a histogram in ns, or `-` when it recorded nothing.
fn ns_stat(h: &results::LatencyHistogram, stat: fn(&results::Summary) -> f64) -> String {
    h.summary().map_or_else(|| "-".into(), |s| fmt_ns(stat(&s)))
}

/// `audiolat net` as text: the study's Figure 7 (histogram, max, mean, stdev, missed
/// deadlines) and what stands beside it.
pub fn net_text(run: &crate::runner::NetRun, db: &std::path::Path) -> String {
    let o = &run.outcome;
    let mut out = header(run);
    out.push_str(&summary_table(&o.measurements()));
    let Some(synth) = o.synth.as_ref().or(o.reference.as_ref()) else {
        let _ = writeln!(out, "\nnothing measured");
        return out;
    };
    response_lines(o, synth, &mut out);
    counter_lines(synth, &mut out);
    traffic_lines(synth, run.config.link, &mut out);
    if let Some(cells) = &run.cells {
        cell_lines(cells, run.cells_undone, &mut out);
    }
    for note in flag_notes(&run.flags) {
        let _ = writeln!(out, "note: {note}");
    }
    let _ = writeln!(
        out,
        "\nstored as run {} in {}; `audiolat show {}` shows it, `audiolat export {} --format series` every block",
        run.run_id,
        db.display(),
        run.run_id,
        run.run_id
    );
    out
}

/// What ran: the transport, the pads, the synth's threads, the policy, the load, and
/// the machine.
fn header(run: &crate::runner::NetRun) -> String {
    let c = &run.config;
    let mut out = String::new();
    let pressed = c.input.iter().filter(|p| p.pressure > 0.0).count();
    let pad = c.input.iter().find(|p| p.pressure > 0.0);
    let _ = writeln!(
        out,
        "\nnet run {}: {}; controller -> host -> controller over UDP on {}, {} pads pressed{}, synth on {}, poll {}, threads {}, load {}",
        run.run_id,
        run.status,
        if c.netns { "a veth pair between two network namespaces" } else { "loopback" },
        pressed,
        pad.map(|p| format!(" (x {}, y {}, pressure {})", p.x, p.y, p.pressure)).unwrap_or_default(),
        if c.workers == 0 { "the network thread".to_string() } else { format!("{} workers", c.workers) },
        c.poll,
        c.policy,
        run.load
    );
    let _ = writeln!(out, "{}\n", machine_line(&probes::machine::machine()));
    out
}

/// The phase's response time: the study's Figure 7, its misses, the blocks lost, the
/// gathering, and what the synth adds over the reference.
fn response_lines(o: &probes::net::NetOutcome, synth: &probes::net::Phase, out: &mut String) {
    use probes::net::wire::DEADLINE_NS;
    let h = &synth.host;
    let _ = writeln!(
        out,
        "\nresponse time t2 - t1 of the {} phase (the Tessellation study's Figure 7)",
        if o.synth.is_some() {
            "synth"
        } else {
            "reference"
        }
    );
    out.push_str(&histogram(&h.response, 40));
    let _ = writeln!(
        out,
        "\n{} missed deadlines of {} blocks (deadline {}: 62 frames at 44.1 kHz), max = {}, mean = {}, stdev = {}",
        h.misses,
        h.answered,
        fmt_ns(DEADLINE_NS as f64),
        ns_stat(&h.response, |s| s.max),
        ns_stat(&h.response, |s| s.mean),
        ns_stat(&h.response, |s| s.stdev)
    );
    if synth.controller.lost > 0 {
        // A block that never arrives whole misses its deadline too.
        let _ = writeln!(
            out,
            "and {} of the {} blocks sent were never answered (packets lost on the way): {} of {} missed in all",
            synth.controller.lost,
            synth.controller.blocks_sent,
            synth.controller.lost + synth.controller.late,
            synth.controller.blocks_sent
        );
    }
    let _ = writeln!(
        out,
        "gathering a block's 16 packets takes {} at the host (15 x 45.35 us between its first and last); {} blocks answered in under {} (their packets came in a burst: the controller catching up after it was late, {} packets sent more than 60 us late)",
        ns_stat(&h.gathering, |s| s.p50),
        h.short_responses,
        fmt_ns(probes::net::host::SHORT_RESPONSE_NS as f64),
        synth.controller.pacing.hdr().count_between(60_000, u64::MAX)
    );
    if let (Some(s), Some(r)) = (&o.synth, &o.reference) {
        // Without answers in either phase there is no difference to show.
        if let Some(adds) = synth_adds_ns(s, Some(r)) {
            let _ = writeln!(
                out,
                "after the last packet: {} with the synth against {} answering silence at once (median): the synth adds {} (synth time per block {}); the rest is the network path",
                ns_stat(&s.host.after_last_packet, |s| s.p50),
                ns_stat(&r.host.after_last_packet, |s| s.p50),
                fmt_ns(adds),
                ns_stat(&s.host.synth, |s| s.p50)
            );
        }
    }
}

/// The controller's and the host's counters.
fn counter_lines(synth: &probes::net::Phase, out: &mut String) {
    let h = &synth.host;
    let ctl = &synth.controller;
    let _ = writeln!(
        out,
        "controller: {} blocks sent, {} answered on time, {} late, {} lost; end to end (tf - t0) median {}, max {}; {} duplicate and {} unknown answers",
        ctl.blocks_sent,
        ctl.on_time,
        ctl.late,
        ctl.lost,
        ns_stat(&ctl.end_to_end, |s| s.p50),
        ns_stat(&ctl.end_to_end, |s| s.max),
        ctl.duplicate_answers,
        ctl.unknown_answers
    );
    let _ = writeln!(
        out,
        "sender pacing error (send time - due time): median {}, p99 {}, max {}; {} packets sent, {} refused by the kernel",
        ns_stat(&ctl.pacing, |s| s.p50),
        ns_stat(&ctl.pacing, |s| s.p99),
        ns_stat(&ctl.pacing, |s| s.max),
        ctl.packets_sent,
        ctl.packets_refused
    );
    let d = &h.counters.drops;
    let _ = writeln!(
        out,
        "host: {} packets dropped ({} malformed, {} duplicate, {} stale, {} foreign; {} more by the kernel on a full queue), {} incomplete blocks, {} reordered packets; arrival times from {}",
        d.total(),
        d.wrong_size + d.bad_magic + d.unknown_version + d.unknown_kind + d.bad_index + d.non_finite,
        d.duplicate,
        d.stale,
        d.foreign,
        h.kernel_dropped,
        h.counters.blocks_incomplete,
        h.counters.reordered,
        if h.kernel_timestamps { "the kernel (SO_TIMESTAMPNS)" } else { "user space" }
    );
}

/// The traffic beside the audio: a flood, an abusive stream, the shaped link, the
/// service's flows and the tc classes.
fn traffic_lines(
    synth: &probes::net::Phase,
    link: Option<probes::net::LinkShaping>,
    out: &mut String,
) {
    if let Some((sent, mbps)) = synth.flood {
        let _ = writeln!(
            out,
            "flood: {sent} datagrams of 1400 bytes at {mbps:.0} Mbit/s towards the host from a third socket (counted there as foreign)"
        );
    }
    if let Some(st) = &synth.stream {
        let _ = writeln!(
            out,
            "abusive stream: {:.0} Mbit/s offered ({} datagrams of {} bytes, {} refused at once), {:.0} Mbit/s reached its sink ({} datagrams)",
            st.offered_mbps,
            st.sent,
            probes::net::STREAM_DATAGRAM,
            st.refused,
            st.received_mbps,
            st.received
        );
    }
    if let Some(link) = link {
        let _ = writeln!(
            out,
            "link: controller -> host shaped to {} Mbit/s by {}, {}",
            link.mbps,
            match link.by {
                probes::net::ReserveBy::Tc => "tc HTB on the controller's veth",
                probes::net::ReserveBy::Service => "audiolat's user-level network service",
            },
            match link.reserve_mbps {
                Some(r) => format!("{r} Mbit/s guaranteed to the audio flow"),
                None => "no reservation (first come, first served)".to_string(),
            }
        );
    }
    if let Some(svc) = &synth.service {
        for (name, f) in ["audio", "stream"].iter().zip(&svc.flows) {
            let _ = writeln!(
                out,
                "  service ({}): {name} flow {} datagrams sent ({} in mClock's reservation phase), longest wait {}",
                svc.discipline,
                f.sent,
                f.by_reservation,
                fmt_ns(f.max_wait_ns as f64)
            );
        }
    }
    if let Some(Value::Object(classes)) = &synth.tc_classes {
        for (id, st) in classes {
            let _ = writeln!(
                out,
                "  tc class {id}: {} packets sent, {} dropped, {} over limit",
                st["packets"], st["drops"], st["overlimits"]
            );
        }
    }
}

/// The cells as granted, what each ran, and whether they were undone.
fn cell_lines(cells: &Value, undone: bool, out: &mut String) {
        for cell in cells["cells"].as_array().into_iter().flatten() {
            let usage = cell["usage_ns_per_cpu"]
                .as_array()
                .map(|u| {
                    u.iter()
                        .enumerate()
                        .map(|(i, v)| format!("CPU {i} {}", fmt_ns(v.as_f64().unwrap_or(0.0))))
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .map(|u| format!("{u} (the kernel's cpuacct)"))
                .or_else(|| {
                    cell["usage_ns"]
                        .as_f64()
                        .map(|ns| format!("{} on all its CPUs (cpu.stat)", fmt_ns(ns)))
                })
                .unwrap_or_else(|| "(no accounting)".into());
            let _ = writeln!(
                out,
                "cell {}: {} on CPU {}{}, {}; ran {usage}",
                cell["name"].as_str().unwrap_or("?"),
                cell["kind"].as_str().unwrap_or("?"),
                cell["cpus"].as_str().unwrap_or("?"),
                if cell["exclusive"] == json!(true) {
                    " (exclusive)"
                } else {
                    ""
                },
                cell["policy"].as_str().unwrap_or("?"),
            );
        }
        let moved = if cells["cpusets"] == json!("cgroup v2") {
            "cgroup v2 partitions: the kernel moved every other task off the exclusive CPUs for the run".to_string()
        } else {
            format!(
                "{}: {} tasks moved off the exclusive CPUs for the run ({} kernel threads bound to a CPU could not move)",
                cells["cpusets"].as_str().unwrap_or("cpusets"),
                cells["tasks_moved"],
                cells["tasks_unmovable"]
            )
        };
        let _ = writeln!(
            out,
            "cells: {moved}; {}",
            if undone {
                "all undone at the end"
            } else {
                "NOT all undone: see the run's granted qos"
            }
        );
}


/// `audiolat net` as JSON.
pub fn net_json(run: &crate::runner::NetRun) -> Value {
    json!({
        "run_id": run.run_id,
        "status": run.status,
        "load": run.load.to_string(),
        "flags": run.flags,
        "measurements": run.outcome.measurements().iter().map(report::view::measurement_summary_json).collect::<Vec<_>>(),
        "result": run.outcome.result_json(),
    })
}

/// One end of `audiolat net` (`respond` or `emulate`) as text.
pub fn net_end_text(run: &crate::runner::NetEndRun, db: &std::path::Path) -> String {
    let mut out = String::new();
    let role = run.flags["role"].as_str().unwrap_or("net");
    let _ = writeln!(out, "\nnet {role} run {}: {}\n", run.run_id, run.status);
    out.push_str(&summary_table(&run.measurements));
    if let Some(m) = run.measurements.first() {
        if let (Some(h), Some(misses)) = (&m.histogram, m.misses) {
            let _ = writeln!(
                out,
                "\n{} (deadline {})",
                m.metric,
                fmt_ns(probes::net::wire::DEADLINE_NS as f64)
            );
            out.push_str(&histogram(h, 40));
            let blocks = m.detail["sent"].as_u64().unwrap_or(m.count());
            let stat = |f: fn(&results::Summary) -> f64| {
                m.summary
                    .as_ref()
                    .map_or_else(|| "-".into(), |s| fmt_ns(f(s)))
            };
            if blocks == 0 {
                let _ = writeln!(out, "\nno blocks: nothing to time");
            } else {
                let _ = writeln!(
                    out,
                    "\n{misses} missed deadlines of {blocks} blocks, max = {}, mean = {}, stdev = {}",
                    stat(|s| s.max),
                    stat(|s| s.mean),
                    stat(|s| s.stdev)
                );
            }
        }
    }
    let _ = writeln!(out, "{}", run.result);
    for note in flag_notes(&run.flags) {
        let _ = writeln!(out, "note: {note}");
    }
    let _ = writeln!(out, "\nstored as run {} in {}", run.run_id, db.display());
    out
}
