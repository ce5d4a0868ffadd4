//! A network-audio run (`audiolat net`): the study's Figure 7 (histogram, max, mean,
//! stdev, missed deadlines) and what stands beside it: the controller's and the host's
//! counters, the traffic beside the audio, and the cells.

use std::fmt::Write as _;

use results::counts::{ControllerBlocks, HostBlocks, NetBlocks};
use results::RunView;
use serde_json::{json, Value};

use super::ns_stat;
use crate::terminal::{flag_notes, fmt_ns, histogram, machine_line, summary_table};

/// The net run's tables, as `audiolat net` and `audiolat show` print them.
pub fn text(run: &RunView) -> String {
    let mut out = header(run);
    out.push_str(&summary_table(&run.measurements));
    let r = &run.result;
    let (phase, suffix) = if r["synth"].is_object() {
        ("synth", "")
    } else if r["reference"].is_object() {
        ("reference", "_reference")
    } else {
        let _ = writeln!(out, "\nnothing measured");
        return out;
    };
    let p = &r[phase];
    response_lines(run, phase, suffix, &mut out);
    counter_lines(run, p, suffix, &mut out);
    traffic_lines(run, p, &mut out);
    if run.qos_granted["cells"].is_object() {
        cell_lines(&run.qos_granted, &mut out);
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
        "load": run.config["load"],
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
fn header(run: &RunView) -> String {
    let c = &run.config;
    let netns = c["transport"]
        .as_str()
        .is_some_and(|t| t.starts_with("UDP over a veth"));
    // Pads are stored from `f32`s: shown as they were given.
    let f32_of = |v: &Value| v.as_f64().unwrap_or(0.0) as f32;
    let pad = &c["pad"];
    let workers = c["workers"].as_u64().unwrap_or(0);
    format!(
        "\nnet run {}: {}; controller -> host -> controller over UDP on {}, {} pads pressed{}, synth on {}, poll {}, threads {}, load {}\n{}\n\n",
        run.id,
        run.status,
        if netns { "a veth pair between two network namespaces" } else { "loopback" },
        c["pads_pressed"].as_array().map_or(0, Vec::len),
        if pad.is_object() {
            format!(" (x {}, y {}, pressure {})", f32_of(&pad["x"]), f32_of(&pad["y"]), f32_of(&pad["pressure"]))
        } else {
            String::new()
        },
        if workers == 0 { "the network thread".to_string() } else { format!("the network thread and {workers} worker{}", if workers == 1 { "" } else { "s" }) },
        c["poll"].as_str().unwrap_or("?"),
        run.qos_requested_record().threads.as_deref().unwrap_or("?"),
        c["load"].as_str().unwrap_or("none"),
        machine_line(&run.machine)
    )
}

/// The phase's response time (the study's Figure 7), its misses, the blocks without an
/// answer, the gathering, and what the synth adds over the reference.
fn response_lines(run: &RunView, phase: &str, suffix: &str, out: &mut String) {
    let r = &run.result;
    let p = &r[phase];
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
        fmt_ns(n(&r["deadline_ns"]) as f64),
        ns_stat(response, |s| s.max),
        ns_stat(response, |s| s.mean),
        ns_stat(response, |s| s.stdev)
    );
    if let Some(line) = unanswered_line(p) {
        let _ = writeln!(out, "{line}");
    }
    if let Some(line) = sender_late_line(run, &blocks.controller, suffix) {
        let _ = writeln!(out, "{line}");
    }
    let detail = response.map_or(&Value::Null, |m| &m.detail);
    let pacing = run.measurement(&format!("pacing_error{suffix}"));
    let _ = writeln!(
        out,
        "gathering a block's 16 packets takes {} at the host (15 x 45.35 us between its first and last); {} blocks answered in under {} (their packets came in a burst: the controller catching up after it was late, {} packets sent more than 60 us late)",
        detail["gathering_ns_median"].as_f64().map_or_else(|| "-".into(), fmt_ns),
        n(&detail["short_responses"]),
        fmt_ns(n(&r["short_response_ns"]) as f64),
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
fn unanswered_line(p: &Value) -> Option<String> {
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
            count(&p["host"]["blocks_incomplete"])
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
fn sender_late_line(run: &RunView, ctl: &ControllerBlocks, suffix: &str) -> Option<String> {
    let late = ctl.blocks_sent_late.filter(|&n| n > 0)?;
    let pacing = run.measurement(&format!("pacing_error{suffix}"));
    Some(format!(
        "the controller itself sent {late} of the {} blocks late (a packet more than {} behind its schedule; its pacing error median {}, max {}): their times are the controller's, not the host's or the network's",
        ctl.blocks_sent.unwrap_or(0),
        fmt_ns(run.result["late_send_ns"].as_f64().unwrap_or(725_624.0)),
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
pub fn late_causes_text(p: &Value) -> Option<String> {
    let (h, ctl) = (&p["host"], &p["controller"]);
    let causes = ctl["miss_causes"].as_object()?;
    let n = |k: &str| causes.get(k).and_then(Value::as_u64).unwrap_or(0);
    let late = results::counts::ControllerBlocks::of(ctl)
        .answers_received_late
        .filter(|&l| l > 0)?;
    // A thread's wait for a CPU over the run, where it was measured.
    let waited = |who: &str, sched: &Value| {
        sched["run_queue_wait_ns"]
            .as_f64()
            .map_or(String::new(), |w| {
                format!("; {who} waited {} for a CPU over the run", fmt_ns(w))
            })
    };
    let mut parts = vec![
        format!(
            "{} the controller sent late (their packets spread beyond a block's 0.68 ms{})",
            n("sent_late"),
            waited("its sender", &ctl["sender_sched"])
        ),
        format!(
            "{} waited on the way to the host (the link's queue and the kernel's path)",
            n("to_host")
        ),
        format!(
            "{} the host answered late after their last packet arrived (its synth, or its thread held off{})",
            n("host"),
            waited("its network thread", &h["net_thread_sched"])
        ),
        format!("{} came back late", n("way_back")),
    ];
    if n("unsplit") > 0 {
        parts.push(format!(
            "{} not split (the host's times for them were gone)",
            n("unsplit")
        ));
    }
    Some(format!(
        "of the {late} {} answered late, by the largest part of each one's time: {}",
        if late == 1 { "block" } else { "blocks" },
        parts.join(", ")
    ))
}

/// The drop counters in the protocol's order (`docs/net-protocol.md`, Validation).
const DROP_COUNTERS: [&str; 10] = [
    "wrong_size",
    "bad_magic",
    "unknown_version",
    "unknown_kind",
    "bad_index",
    "non_finite",
    "duplicate",
    "stale",
    "foreign",
    "unconfirmed",
];

/// Datagrams dropped by reason (each counter stored apart, named as stored, in the
/// protocol's order; only those above 0), `none`, or `-` where the run stored no
/// counters.
pub fn drops_text(drops: &Value) -> String {
    let Some(map) = drops.as_object() else {
        return "-".into();
    };
    let rank = |k: &str| {
        DROP_COUNTERS
            .iter()
            .position(|c| *c == k)
            .unwrap_or(usize::MAX)
    };
    let mut counters: Vec<(&String, &Value)> = map.iter().collect();
    counters.sort_by_key(|(k, _)| rank(k));
    let parts: Vec<String> = counters
        .into_iter()
        .filter_map(|(k, v)| {
            v.as_u64()
                .filter(|&n| n > 0)
                .map(|n| format!("{n} {}", k.replace('_', " ")))
        })
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

/// A thread's wait for a CPU as stored (`sched_json`), e.g. `waited 1.61 s for a CPU`;
/// empty when not measured.
fn waited_text(sched: &Value) -> String {
    sched["run_queue_wait_ns"]
        .as_f64()
        .map_or(String::new(), |w| format!("waited {} for a CPU", fmt_ns(w)))
}

/// What the synth adds after a block's last packet: the median of the synth phase less
/// that of the reference (a host answering silence at once). `None` without a reference,
/// or when either phase answered nothing: a difference with a missing side is no figure.
pub fn synth_adds_ns(run: &RunView) -> Option<f64> {
    let median = |metric: &str| run.measurement(metric)?.summary.as_ref().map(|s| s.p50);
    Some(median("after_last_packet")? - median("after_last_packet_reference")?)
}

/// The controller's and the host's counters.
fn counter_lines(run: &RunView, p: &Value, suffix: &str, out: &mut String) {
    let (h, ctl) = (&p["host"], &p["controller"]);
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let end_to_end = run.measurement(&format!("end_to_end{suffix}"));
    let pacing = run.measurement(&format!("pacing_error{suffix}"));
    let _ = writeln!(
        out,
        "controller: {}; end to end (tf - t0) median {}, max {}; {} duplicate and {} unknown answers; answers dropped: {}{}",
        controller_blocks_text(&ControllerBlocks::of(ctl)),
        ns_stat(end_to_end, |s| s.p50),
        ns_stat(end_to_end, |s| s.max),
        ctl["duplicate_answers"],
        ctl["unknown_answers"],
        drops_text(&ctl["dropped_answers"]),
        match n(&ctl["answers_dropped_by_kernel"]) {
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
        ctl["packets_sent"],
        ctl["packets_refused"]
    );
    let d = &h["drops"];
    let dropped: u64 = d
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(_, v)| v.as_u64())
        .sum();
    let kernel_timestamps = run
        .measurement(&format!("response_time{suffix}"))
        .is_some_and(|m| m.detail["kernel_timestamps"] == json!(true));
    let _ = writeln!(
        out,
        "host: {dropped} packets dropped ({}; {} more by the kernel on a full queue), {} incomplete blocks, {} reordered packets; arrival times from {}",
        drops_text(d),
        h["kernel_dropped"],
        h["blocks_incomplete"],
        h["reordered"],
        if kernel_timestamps { "the kernel (SO_TIMESTAMPNS)" } else { "user space" }
    );
}

/// The traffic beside the audio: a flood, an abusive stream, the shaped link, the
/// service's flows and the tc classes.
fn traffic_lines(run: &RunView, p: &Value, out: &mut String) {
    let flood = &p["flood"];
    if flood.is_object() {
        let _ = writeln!(
            out,
            "flood: {} datagrams of 1400 bytes at {:.0} Mbit/s towards the host from a third socket (counted there as foreign)",
            flood["datagrams"],
            flood["mbit_per_s"].as_f64().unwrap_or(0.0)
        );
    }
    let st = &p["stream"];
    if st.is_object() {
        let f = |k: &str| st[k].as_f64().unwrap_or(0.0);
        let _ = writeln!(
            out,
            "abusive stream: {:.0} Mbit/s offered ({} datagrams of {} bytes, {} refused at once), {:.0} Mbit/s reached its sink ({} datagrams)",
            f("offered_mbit_per_s"),
            st["sent"],
            run.result["stream_datagram_bytes"],
            st["refused"],
            f("received_mbit_per_s"),
            st["received"]
        );
    }
    let link = &run.config["link"];
    if link.is_object() {
        let _ = writeln!(
            out,
            "link: controller -> host shaped to {} Mbit/s by {}, {}",
            link["mbps"].as_f64().unwrap_or(0.0),
            if link["by"] == json!("tc") {
                "tc HTB on the controller's veth"
            } else {
                "audiolat's user-level network service"
            },
            match link["reserve_mbps"].as_f64() {
                Some(r) => format!("{r} Mbit/s guaranteed to the audio flow"),
                None => "no reservation (first come, first served)".to_string(),
            }
        );
    }
    let svc = &p["service"];
    for (name, f) in ["audio", "stream"]
        .iter()
        .zip(svc["flows"].as_array().into_iter().flatten())
    {
        let _ = writeln!(
            out,
            "  service ({}): {name} flow {} datagrams sent ({} in mClock's reservation phase), longest wait {}",
            svc["discipline"].as_str().unwrap_or("?"),
            f["sent"],
            f["by_reservation"],
            fmt_ns(f["max_wait_ns"].as_u64().unwrap_or(0) as f64)
        );
    }
    if svc.is_object() {
        let waited = waited_text(svc);
        if let Some(thread) = svc["thread"].as_str() {
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
    let softirq = waited_text(&p["kernel_softirq"]);
    if !softirq.is_empty() && (svc.is_object() || p["tc_classes"].is_object()) {
        let _ = writeln!(
            out,
            "  the kernel's softirq threads (ksoftirqd: the network work it defers) {softirq}"
        );
    }
    if let Some(classes) = p["tc_classes"].as_object() {
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
    out.push_str(&end_counters(role, &run.result));
    for note in flag_notes(&run.flags) {
        let _ = writeln!(out, "note: {note}");
    }
    out
}

/// A stored count, `-` where the run stored none (an older run).
fn count(v: &Value) -> String {
    count_of(v.as_u64())
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

/// One end's counters in words (what `respond` and `emulate` store as their result).
fn end_counters(role: &str, r: &Value) -> String {
    let n = |k: &str| count(&r[k]);
    match role {
        "respond" => {
            let from = match (r["counted_from_block"].as_u64(), r["peer"].as_str()) {
                (Some(b), Some(p)) => format!(" (blocks from {b} on, answering {p})"),
                (Some(b), None) => format!(" (blocks from {b} on)"),
                _ => String::new(),
            };
            let h = HostBlocks::of(r);
            format!(
                "host: {} answers sent for the blocks after the warm-up{from}, {} more the kernel would not take, {} blocks answered in the warm-up; {} incomplete blocks; packets dropped: {}; {} more by the kernel on a full queue{}\n",
                count_of(h.answers_sent),
                count_of(h.answers_refused),
                count_of(h.answers_in_warmup),
                n("blocks_incomplete"),
                drops_text(&r["drops"]),
                n("kernel_dropped"),
                match r["peer_changes"].as_u64() {
                    Some(k) if k > 0 => format!("; followed another controller {k} times after its peer fell silent"),
                    _ => String::new(),
                }
            )
        }
        "emulate" => format!(
            "controller: {}; {} duplicate and {} unknown answers; answers dropped: {}; {} more by the kernel on a full queue; {} packets sent, {} refused by the kernel\n",
            controller_blocks_text(&ControllerBlocks::of(r)),
            n("duplicate_answers"),
            n("unknown_answers"),
            drops_text(&r["dropped_answers"]),
            n("answers_dropped_by_kernel"),
            n("packets_sent"),
            n("packets_refused"),
        ),
        _ => String::new(),
    }
}
