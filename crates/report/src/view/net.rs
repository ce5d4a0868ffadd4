//! A network-audio run (`audiolat net`): the study's Figure 7 (histogram, max, mean,
//! stdev, missed deadlines) and what stands beside it: the controller's and the host's
//! counters, the traffic beside the audio, and the cells.

use std::fmt::Write as _;

use results::counts::{ControllerBlocks, HostBlocks, NetBlocks};
use results::records::net::{
    ControllerRecord, DropCounts, HostRecord, LinkBy, NetConfigRecord, NetResultRecord,
    PhaseRecord, SchedRecord,
};
use results::RunView;
use serde_json::{json, Value};

use super::ns_stat;
use crate::terminal::{flag_notes, fmt_ns, histogram, machine_line, summary_table};

/// The net run's tables, as `audiolat net` and `audiolat show` print them.
pub fn text(run: &RunView) -> String {
    let config = run.config_as::<NetConfigRecord>();
    let mut out = header(run, config.as_ref());
    out.push_str(&summary_table(&run.measurements));
    let result = run.result_as::<NetResultRecord>();
    let Some((phase, suffix, p)) = result.as_ref().and_then(NetResultRecord::shown_phase) else {
        let _ = writeln!(out, "\nnothing measured");
        return out;
    };
    let r = result.as_ref().expect("a phase is of a result");
    response_lines(run, r, (phase, suffix, p), &mut out);
    counter_lines(run, p, suffix, &mut out);
    traffic_lines(r, config.as_ref(), p, &mut out);
    if run.qos_granted["cells"].is_object() {
        cell_lines(&run.qos_granted, &mut out);
    }
    if let Some(why) = &r.why {
        super::why::text(why, ("late block", "late blocks"), None, &mut out);
    }
    for note in flag_notes(&run.flags) {
        let _ = writeln!(out, "note: {note}");
    }
    out
}

/// The run as JSON: its status, load, flags, measurement summaries and results.
pub fn json(run: &RunView) -> Value {
    json!({
        "run_id": run.id,
        "status": run.status,
        "load": run.config_as::<NetConfigRecord>().and_then(|c| c.load),
        "flags": run.flags,
        "measurements": run.measurements.iter().map(super::measurement_summary_json).collect::<Vec<_>>(),
        "result": run.result,
    })
}

/// One end's run as JSON (`net respond|emulate --json`): its status, flags and results,
/// the error that ended it, and its measurement summaries.
pub fn end_json(run: &RunView) -> Value {
    json!({"run_id": run.id, "status": run.status, "flags": run.flags, "result": run.result,
        "error": run.error,
        "measurements": run.measurements.iter().map(super::measurement_summary_json).collect::<Vec<_>>()})
}

/// What ran: the transport, the pads, the synth's threads, the policy, the load, and
/// the machine.
fn header(run: &RunView, c: Option<&NetConfigRecord>) -> String {
    let netns = c.is_some_and(NetConfigRecord::over_netns);
    let pad = c.and_then(|c| c.pad);
    let workers = c.map_or(0, |c| c.workers);
    format!(
        "\nnet run {}: {}; controller -> host -> controller over UDP on {}, {} pads pressed{}, synth on {}, poll {}, threads {}, load {}\n{}\n\n",
        run.id,
        run.status,
        if netns { "a veth pair between two network namespaces" } else { "loopback" },
        c.map_or(0, |c| c.pads_pressed.len()),
        // Pads are stored from `f32`s: shown as they were given.
        pad.map_or(String::new(), |pad| format!(" (x {}, y {}, pressure {})", pad.x, pad.y, pad.pressure)),
        if workers == 0 { "the network thread".to_string() } else { format!("the network thread and {workers} worker{}", if workers == 1 { "" } else { "s" }) },
        c.map_or("?", |c| c.poll.as_str()),
        run.qos_requested_record().threads.as_deref().unwrap_or("?"),
        c.and_then(|c| c.load.as_deref()).unwrap_or("none"),
        machine_line(&run.machine)
    )
}

/// The phase's response time (the study's Figure 7), its misses, the blocks without an
/// answer, the gathering, and what the synth adds over the reference.
fn response_lines(
    run: &RunView,
    r: &NetResultRecord,
    (phase, suffix, p): (&str, &str, &PhaseRecord),
    out: &mut String,
) {
    let blocks = NetBlocks::of(p);
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let response = run.measurement(&format!("response_time{suffix}"));
    let _ = writeln!(
        out,
        "\nresponse time t2 - t1 of the {phase} phase (the Tessellation study's Figure 7)"
    );
    if let Some(hist) = response.and_then(|m| m.histogram.as_ref()) {
        out.push_str(&histogram(hist, 40));
    }
    let _ = writeln!(
        out,
        "\n{} missed deadlines of {} blocks (deadline {}: 62 frames at 44.1 kHz), max = {}, mean = {}, stdev = {}",
        count_of(blocks.host.responses_past_deadline),
        count_of(blocks.host.answered),
        fmt_ns(r.deadline_ns as f64),
        ns_stat(response, |s| s.max),
        ns_stat(response, |s| s.mean),
        ns_stat(response, |s| s.stdev)
    );
    if let Some(line) = unanswered_line(p) {
        let _ = writeln!(out, "{line}");
    }
    if let Some(line) = sender_late_line(run, r, &blocks.controller, suffix) {
        let _ = writeln!(out, "{line}");
    }
    let detail = response.map_or(&Value::Null, |m| &m.detail);
    let pacing = run.measurement(&format!("pacing_error{suffix}"));
    let _ = writeln!(
        out,
        "gathering a block's 16 packets takes {} at the host (15 x 45.35 us between its first and last); {} blocks answered in under {} (their packets came in a burst: the controller catching up after it was late, {} packets sent more than 60 us late)",
        detail["gathering_ns_median"].as_f64().map_or_else(|| "-".into(), fmt_ns),
        n(&detail["short_responses"]),
        fmt_ns(r.short_response_ns.unwrap_or(0) as f64),
        pacing
            .and_then(|m| m.histogram.as_ref())
            .map_or(0, |h| h.hdr().count_between(60_000, u64::MAX))
    );
    if let Some(adds) = synth_adds_ns(run) {
        let _ = writeln!(
            out,
            "after the last packet: {} with the synth against {} answering silence at once (median): the synth adds {} (synth time per block {}); the rest is the network path",
            ns_stat(run.measurement("after_last_packet"), |s| s.p50),
            ns_stat(run.measurement("after_last_packet_reference"), |s| s.p50),
            fmt_ns(adds),
            ns_stat(run.measurement("synth_time"), |s| s.p50)
        );
    }
}

/// The blocks the controller got no answer for by the run's end, and where they went
/// by both ends' books (`results::counts::Unanswered`, when they count the same blocks):
/// a block missed its deadline all the same. `None` when every block sent was answered
/// in the run.
fn unanswered_line(p: &PhaseRecord) -> Option<String> {
    let blocks = NetBlocks::of(p);
    let ctl = &blocks.controller;
    let unanswered = ctl.unanswered_in_run().filter(|&n| n > 0)?;
    let sent = ctl.blocks_sent.unwrap_or(0);
    let missed = ctl.missed().unwrap_or(unanswered);
    let head = format!("and {unanswered} of the {sent} blocks sent got no answer by the run's end");
    let Some(split) = blocks.unanswered() else {
        return Some(format!("{head}: {missed} of {sent} missed in all"));
    };
    let mut why = Vec::new();
    if let Some(after) = split.after_end.filter(|&n| n > 0) {
        why.push(format!(
            "{after} answered after it (the drain after the last packet)"
        ));
    }
    if split.answered_not_received > 0 {
        why.push(format!(
            "{} answered by the host whose answer the controller never received (refused by the host's kernel, lost on the way back, or after it stopped listening)",
            split.answered_not_received
        ));
    }
    if split.never_answered > 0 {
        why.push(format!(
            "{} the host never answered ({} blocks reached it incomplete: packets lost on the way there)",
            split.never_answered,
            p.host.blocks_incomplete
        ));
    }
    Some(format!(
        "{head}: {}; {missed} of {sent} missed in all",
        why.join(", ")
    ))
}

/// The blocks the run's own controller sent late, with its pacing error: their times
/// and misses are the controller's, not the host's or the network's. `None` when it kept
/// its schedule.
fn sender_late_line(
    run: &RunView,
    r: &NetResultRecord,
    ctl: &ControllerBlocks,
    suffix: &str,
) -> Option<String> {
    let late = ctl.blocks_sent_late.filter(|&n| n > 0)?;
    let pacing = run.measurement(&format!("pacing_error{suffix}"));
    Some(format!(
        "the controller itself sent {late} of the {} blocks late (a packet more than {} behind its schedule; its pacing error median {}, max {}): their times are the controller's, not the host's or the network's",
        ctl.blocks_sent.unwrap_or(0),
        fmt_ns(r.late_send_ns.map_or(725_624.0, |n| n as f64)),
        ns_stat(pacing, |s| s.p50),
        ns_stat(pacing, |s| s.max),
    ))
}

/// Why the controller's late blocks were late, block by block, from the phase `p`: each
/// counted under the largest part of its time (netaudio's `misses`), with the threads'
/// waits for a CPU where their part is named, e.g. `of the 22 blocks answered late, 2
/// the controller sent late ..., 0 waited on the way to the host ..., 20 the host
/// answered late ...`. `None` without late blocks, or when the run could not split them
/// (its host ran in another process).
pub fn late_causes_text(p: &PhaseRecord) -> Option<String> {
    let (h, ctl) = (&p.host, &p.controller);
    let causes = ctl.miss_causes?;
    let late = results::counts::ControllerBlocks::of(ctl)
        .answers_received_late
        .filter(|&l| l > 0)?;
    // A thread's wait for a CPU over the run, where it was measured.
    let waited = |who: &str, sched: Option<SchedRecord>| {
        sched.map_or(String::new(), |s| {
            format!(
                "; {who} waited {} for a CPU over the run",
                fmt_ns(s.run_queue_wait_ns as f64)
            )
        })
    };
    let mut parts = vec![
        format!(
            "{} the controller sent late (their packets spread beyond a block's 0.68 ms{})",
            causes.sent_late,
            waited("its sender", ctl.sender_sched)
        ),
        format!(
            "{} waited on the way to the host (the link's queue and the kernel's path)",
            causes.to_host
        ),
        format!(
            "{} the host answered late after their last packet arrived (its synth, or its thread held off{})",
            causes.host,
            waited("its network thread", h.net_thread_sched)
        ),
        format!("{} came back late", causes.way_back),
    ];
    if causes.unsplit > 0 {
        parts.push(format!(
            "{} not split (the host's times for them were gone)",
            causes.unsplit
        ));
    }
    Some(format!(
        "of the {late} {} answered late, by the largest part of each one's time: {}",
        if late == 1 { "block" } else { "blocks" },
        parts.join(", ")
    ))
}

/// Datagrams dropped by reason (each counter stored apart, named as stored, in the
/// protocol's order; only those above 0), `none`, or `-` where the run stored no
/// counters.
pub fn drops_text(drops: Option<&DropCounts>) -> String {
    let Some(drops) = drops else {
        return "-".into();
    };
    let parts: Vec<String> = drops
        .by_reason()
        .into_iter()
        .filter_map(|(name, n)| {
            n.filter(|&n| n > 0)
                .map(|n| format!("{n} {}", name.replace('_', " ")))
        })
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

/// A thread's wait for a CPU as stored, e.g. `waited 1.61 s for a CPU`; empty when not
/// measured.
fn waited_text(run_queue_wait_ns: Option<u64>) -> String {
    run_queue_wait_ns.map_or(String::new(), |w| {
        format!("waited {} for a CPU", fmt_ns(w as f64))
    })
}

/// A count as stored, `null` where an older run stored none (as its JSON reads).
fn stored(n: Option<u64>) -> String {
    n.map_or_else(|| "null".into(), |n| n.to_string())
}

/// What the synth adds after a block's last packet: the median of the synth phase less
/// that of the reference (a host answering silence at once). `None` without a reference,
/// or when either phase answered nothing: a difference with a missing side is no figure.
pub fn synth_adds_ns(run: &RunView) -> Option<f64> {
    let median = |metric: &str| run.measurement(metric)?.summary.as_ref().map(|s| s.p50);
    Some(median("after_last_packet")? - median("after_last_packet_reference")?)
}

/// The controller's and the host's counters.
fn counter_lines(run: &RunView, p: &PhaseRecord, suffix: &str, out: &mut String) {
    let (h, ctl) = (&p.host, &p.controller);
    let end_to_end = run.measurement(&format!("end_to_end{suffix}"));
    let pacing = run.measurement(&format!("pacing_error{suffix}"));
    let _ = writeln!(
        out,
        "controller: {}; end to end (tf - t0) median {}, max {}; {} duplicate and {} unknown answers; answers dropped: {}{}",
        controller_blocks_text(&ControllerBlocks::of(ctl)),
        ns_stat(end_to_end, |s| s.p50),
        ns_stat(end_to_end, |s| s.max),
        ctl.duplicate_answers,
        ctl.unknown_answers,
        drops_text(ctl.dropped_answers.as_ref()),
        match ctl.answers_dropped_by_kernel.unwrap_or(0) {
            0 => String::new(),
            k => format!(", {k} more by the kernel on a full queue"),
        }
    );
    if let Some(line) = late_causes_text(p) {
        let _ = writeln!(out, "  {line}");
    }
    let _ = writeln!(
        out,
        "sender pacing error (send time - due time): median {}, p99 {}, max {}; {} packets sent, {} refused by the kernel",
        ns_stat(pacing, |s| s.p50),
        ns_stat(pacing, |s| s.p99),
        ns_stat(pacing, |s| s.max),
        ctl.packets_sent,
        ctl.packets_refused
    );
    let dropped = h.drops.total();
    let kernel_timestamps = run
        .measurement(&format!("response_time{suffix}"))
        .is_some_and(|m| m.detail["kernel_timestamps"] == json!(true));
    let _ = writeln!(
        out,
        "host: {dropped} packets dropped ({}; {} more by the kernel on a full queue), {} incomplete blocks, {} reordered packets; arrival times from {}",
        drops_text(Some(&h.drops)),
        stored(h.kernel_dropped),
        h.blocks_incomplete,
        h.reordered,
        if kernel_timestamps { "the kernel (SO_TIMESTAMPNS)" } else { "user space" }
    );
}

/// The traffic beside the audio: a flood, an abusive stream, the shaped link, the
/// service's flows and the tc classes.
fn traffic_lines(
    r: &NetResultRecord,
    config: Option<&NetConfigRecord>,
    p: &PhaseRecord,
    out: &mut String,
) {
    if let Some(flood) = &p.flood {
        let _ = writeln!(
            out,
            "flood: {} datagrams of 1400 bytes at {:.0} Mbit/s towards the host from a third socket (counted there as foreign)",
            flood.datagrams,
            flood.mbit_per_s
        );
    }
    if let Some(st) = &p.stream {
        let _ = writeln!(
            out,
            "abusive stream: {:.0} Mbit/s offered ({} datagrams of {} bytes, {} refused at once), {:.0} Mbit/s reached its sink ({} datagrams)",
            st.offered_mbit_per_s,
            st.sent,
            stored(r.stream_datagram_bytes),
            st.refused,
            st.received_mbit_per_s,
            st.received
        );
    }
    if let Some(link) = config.and_then(|c| c.link) {
        let _ = writeln!(
            out,
            "link: controller -> host shaped to {} Mbit/s by {}, {}",
            link.mbps,
            match link.by {
                LinkBy::Tc => "tc HTB on the controller's veth",
                LinkBy::Service => "audiolat's user-level network service",
            },
            match link.reserve_mbps {
                Some(r) => format!("{r} Mbit/s guaranteed to the audio flow"),
                None => "no reservation (first come, first served)".to_string(),
            }
        );
    }
    if let Some(svc) = &p.service {
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
        let waited = waited_text(svc.run_queue_wait_ns);
        if let Some(thread) = &svc.thread {
            let _ = writeln!(
                out,
                "  service thread: {thread}{}",
                if waited.is_empty() {
                    String::new()
                } else {
                    format!(", {waited}")
                }
            );
        }
    }
    let softirq = waited_text(p.kernel_softirq.map(|s| s.run_queue_wait_ns));
    if !softirq.is_empty() && (p.service.is_some() || p.tc_classes.is_some()) {
        let _ = writeln!(
            out,
            "  the kernel's softirq threads (ksoftirqd: the network work it defers) {softirq}"
        );
    }
    for (id, st) in p.tc_classes.iter().flatten() {
        let _ = writeln!(
            out,
            "  tc class {id}: {} packets sent, {} dropped, {} over limit",
            stored(st.packets),
            stored(st.drops),
            stored(st.overlimits)
        );
    }
}

/// The cells as granted, what each ran, and whether they were undone.
fn cell_lines(granted: &Value, out: &mut String) {
    let cells = &granted["cells"];
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
        "cgroup v2 partitions: the kernel moved every other task off the exclusive CPUs for the run"
            .to_string()
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
        if granted["cells_undone"] == json!(true) {
            "all undone at the end"
        } else {
            "NOT all undone: see the run's granted qos"
        }
    );
}

/// One end of `audiolat net` run on its own (`respond` or `emulate`, the run's `role`
/// flag): its measurements, the first one's histogram against its deadline, and its
/// results.
pub fn end_text(run: &RunView) -> String {
    let mut out = String::new();
    let flags = run.flags_record();
    let role = flags.role.as_deref().unwrap_or("net");
    let _ = writeln!(out, "\nnet {role} run {}: {}\n", run.id, run.status);
    out.push_str(&summary_table(&run.measurements));
    if let Some(m) = run.measurements.first() {
        if let (Some(h), Some(misses)) = (&m.histogram, m.misses) {
            let _ = writeln!(
                out,
                "\n{} (deadline {})",
                m.metric,
                m.deadline.map_or_else(|| "-".into(), fmt_ns)
            );
            out.push_str(&histogram(h, 40));
            let blocks = results::counts::deadline_blocks(m);
            if blocks == 0 {
                let _ = writeln!(out, "\nno blocks: nothing to time");
            } else {
                let _ = writeln!(
                    out,
                    "\n{misses} missed deadlines of {blocks} blocks, max = {}, mean = {}, stdev = {}",
                    ns_stat(Some(m), |s| s.max),
                    ns_stat(Some(m), |s| s.mean),
                    ns_stat(Some(m), |s| s.stdev)
                );
            }
        }
    }
    out.push_str(&match role {
        "respond" => host_end_counters(run.result_as::<HostRecord>().as_ref()),
        "emulate" => controller_end_counters(run.result_as::<ControllerRecord>().as_ref()),
        _ => String::new(),
    });
    for note in flag_notes(&run.flags) {
        let _ = writeln!(out, "note: {note}");
    }
    out
}

/// A count, `-` where the run did not count it.
fn count_of(n: Option<u64>) -> String {
    n.map_or_else(|| "-".into(), |n| n.to_string())
}

/// The controller's blocks in words: sent, and their answers received on time, late,
/// after the run's end, or not received (`-` where an older run did not count).
fn controller_blocks_text(c: &ControllerBlocks) -> String {
    format!(
        "{} blocks sent ({} late by the controller itself); answers received: {} on time, {} late, {} after the run's end; {} blocks with no answer received",
        count_of(c.blocks_sent),
        count_of(c.blocks_sent_late),
        count_of(c.answers_received_on_time),
        count_of(c.answers_received_late),
        count_of(c.answers_received_after_end),
        count_of(c.answers_not_received),
    )
}

/// The host's counters in words (what `respond` stores as its result; `-` throughout
/// where the run stored none).
fn host_end_counters(h: Option<&HostRecord>) -> String {
    let from = match (
        h.and_then(|h| h.counted_from_block),
        h.and_then(|h| h.peer.as_deref()),
    ) {
        (Some(b), Some(p)) => format!(" (blocks from {b} on, answering {p})"),
        (Some(b), None) => format!(" (blocks from {b} on)"),
        _ => String::new(),
    };
    let blocks = h.map(HostBlocks::of).unwrap_or_default();
    format!(
        "host: {} answers sent for the blocks after the warm-up{from}, {} more the kernel would not take, {} blocks answered in the warm-up; {} incomplete blocks; packets dropped: {}; {} more by the kernel on a full queue{}\n",
        count_of(blocks.answers_sent),
        count_of(blocks.answers_refused),
        count_of(blocks.answers_in_warmup),
        count_of(h.map(|h| h.blocks_incomplete)),
        drops_text(h.map(|h| &h.drops)),
        count_of(h.and_then(|h| h.kernel_dropped)),
        match h.and_then(|h| h.peer_changes) {
            Some(k) if k > 0 => format!("; followed another controller {k} times after its peer fell silent"),
            _ => String::new(),
        }
    )
}

/// The controller's counters in words (what `emulate` stores as its result; `-`
/// throughout where the run stored none).
fn controller_end_counters(c: Option<&ControllerRecord>) -> String {
    format!(
        "controller: {}; {} duplicate and {} unknown answers; answers dropped: {}; {} more by the kernel on a full queue; {} packets sent, {} refused by the kernel\n",
        controller_blocks_text(&c.map(ControllerBlocks::of).unwrap_or_default()),
        count_of(c.map(|c| c.duplicate_answers)),
        count_of(c.map(|c| c.unknown_answers)),
        drops_text(c.and_then(|c| c.dropped_answers.as_ref())),
        count_of(c.and_then(|c| c.answers_dropped_by_kernel)),
        count_of(c.map(|c| c.packets_sent)),
        count_of(c.map(|c| c.packets_refused)),
    )
}
