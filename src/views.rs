//! What the commands print: text for people, JSON for machines.

use std::fmt::Write as _;

use anyhow::Result;
use report::terminal::{flag_notes, fmt_ns, histogram, machine_line, summary_table};
use results::model::RunRecord;
use results::{Measurement, Store};
use serde_json::{json, Value};

/// What the synth adds after a block's last packet: the median of the synth phase less
/// that of the reference (a host answering silence at once). `None` without a reference,
/// or when either phase answered nothing: a difference with a missing side is no figure.
pub fn synth_adds_ns(
    synth: &probes::net::Phase,
    reference: Option<&probes::net::Phase>,
) -> Option<f64> {
    let median = |p: &probes::net::Phase| p.host.after_last_packet.summary().map(|s| s.p50);
    Some(median(synth)? - median(reference?)?)
}

/// The measurement a run is summarised by in lists: the first one stored.
pub fn headline(store: &Store, run: &RunRecord) -> Result<Option<Measurement>> {
    Ok(store
        .measurements(run.id)?
        .into_iter()
        .next()
        .map(|m| m.measurement))
}

/// The event runs of one sweep as JSON.
pub fn event_json(group: i64, runs: &[crate::runner::EventRun]) -> Value {
    json!({
        "group_id": group,
        "runs": runs.iter().map(|r| json!({
            "run_id": r.run_id,
            "status": r.status,
            "load": r.load,
            "config": r.outcome.config.to_json(),
            "granted": r.granted,
            "result": r.outcome.result_json(),
            "flags": r.flags,
            "error": r.error,
            "triggers": r.outcome.rows,
        })).collect::<Vec<_>>(),
    })
}

/// What a bench's figures depend on besides the kernels.
pub struct BenchFlags {
    /// The build profile audiolat was compiled with (the study's optimisation level).
    pub build_profile: String,
    /// The timing thread's scheduling policy.
    pub policy: String,
    /// Host steal over the run, percent of the machine's CPU time (`None`: not sampled).
    pub host_steal_percent: Option<f64>,
}

/// `audiolat bench` as text.
pub fn bench_text(r: &dsp::bench::BenchReport, flags: &BenchFlags) -> String {
    use report::terminal::Table;
    let mut t = Table::new(&[
        "kernel",
        "voices",
        "ns/sample",
        "ns/voice-sample",
        "ns/period",
        "vs f32::sin",
    ])
    .left_align(&[0]);
    for k in std::iter::once(&r.reference).chain(r.kernels.iter()) {
        t.row(vec![
            k.name.clone(),
            k.voices.to_string(),
            format!("{:.2}", k.ns_per_sample),
            format!("{:.2}", k.ns_per_voice_sample),
            format!("{:.0}", k.ns_per_period),
            format!("{:.2}x", k.ratio_to_reference),
        ]);
    }
    let mut out = format!(
        "\nDSP capacity at {} Hz, {} frames per period ({}), median of repeated rounds\n\n",
        r.config.sample_rate_hz,
        r.config.period_frames,
        fmt_ns(r.period_ns)
    );
    out.push_str(&t.render());
    let capped = r.voice_capacity >= dsp::bench::MAX_SEARCH_VOICES;
    let _ = writeln!(
        out,
        "\nvoice capacity: {}{} wavetable voices (bank:{}) fit in {:.0}% of a period ({} of {})",
        if capped { "at least " } else { "" },
        r.voice_capacity,
        r.voice_capacity,
        r.config.load_target * 100.0,
        fmt_ns(r.capacity_ns_per_period),
        fmt_ns(r.period_ns * r.config.load_target)
    );
    let m = &r.migrator;
    let met = m.block_ns <= dsp::bench::MIGRATOR_TARGET_NS
        && m.speedup >= dsp::bench::MIGRATOR_TARGET_SPEEDUP;
    let _ = writeln!(
        out,
        "\nMigrator synth block (32 objects x 100 oscillators x 32 frames, all pads pressed; the Tessellation study):\n  {} kernel {}, portable kernel {}, naive f32::sin reference {}: {:.0}x faster than the reference, {:.1}% of the block's {} period\n  target: at most {} and at least {:.0}x the reference: {}",
        m.kernel,
        fmt_ns(m.block_ns),
        fmt_ns(m.portable_block_ns),
        fmt_ns(m.naive_block_ns),
        m.speedup,
        100.0 * m.block_ns / m.block_period_ns,
        fmt_ns(m.block_period_ns),
        fmt_ns(dsp::bench::MIGRATOR_TARGET_NS),
        dsp::bench::MIGRATOR_TARGET_SPEEDUP,
        if met { "met" } else { "NOT met" }
    );
    let _ = writeln!(
        out,
        "built {}; timed on one thread at {}, hot cache (a lower bound on a callback's cost); host steal {} during the run",
        flags.build_profile,
        flags.policy,
        flags
            .host_steal_percent
            .map_or_else(|| "-".into(), |p| format!("{p:.1}%"))
    );
    let _ = writeln!(
        out,
        "the reference is a naive oscillator calling f32::sin per sample, timed in the same run; a ratio below 1 is faster"
    );
    out
}

/// `audiolat bench` as JSON.
pub fn bench_json(r: &dsp::bench::BenchReport, flags: &BenchFlags) -> Value {
    let k = |k: &dsp::bench::KernelTiming| {
        json!({"name": k.name, "voices": k.voices, "ns_per_sample": k.ns_per_sample,
               "ns_per_period": k.ns_per_period, "ns_per_voice_sample": k.ns_per_voice_sample,
               "ratio_to_reference": k.ratio_to_reference})
    };
    json!({
        "sample_rate_hz": r.config.sample_rate_hz,
        "period_frames": r.config.period_frames,
        "load_target": r.config.load_target,
        "period_ns": r.period_ns,
        "reference": k(&r.reference),
        "kernels": r.kernels.iter().map(k).collect::<Vec<_>>(),
        "voice_capacity": r.voice_capacity,
        "voice_capacity_is_lower_bound": r.voice_capacity >= dsp::bench::MAX_SEARCH_VOICES,
        "capacity_ns_per_period": r.capacity_ns_per_period,
        "migrator": {
            "kernel": r.migrator.kernel,
            "block_ns": r.migrator.block_ns,
            "portable_block_ns": r.migrator.portable_block_ns,
            "naive_block_ns": r.migrator.naive_block_ns,
            "speedup": r.migrator.speedup,
            "block_period_ns": r.migrator.block_period_ns,
            "target_ns": dsp::bench::MIGRATOR_TARGET_NS,
            "target_speedup": dsp::bench::MIGRATOR_TARGET_SPEEDUP,
        },
        "build_profile": flags.build_profile,
        "thread_policy": flags.policy,
        "host_steal_percent": flags.host_steal_percent,
    })
}

/// The round-trip runs as JSON.
pub fn roundtrip_json(group: i64, runs: &[crate::runner::RoundtripRun]) -> Value {
    json!({
        "group_id": group,
        "runs": runs.iter().map(|r| {
            let o = &r.outcome;
            json!({
                "run_id": r.run_id,
                "status": r.status,
                "load": r.cell.load.to_string(),
                "loop": r.cell.loop_description,
                "granted": r.cell.granted,
                "result": o.result_json(),
                "flags": r.flags,
                "error": r.error,
                "windows": o.estimates.iter().map(|e| json!({
                    "seq": e.seq, "position": e.position, "time_ns": e.time_ns,
                    "delay_frames": e.estimate.delay_frames, "stderr_frames": e.estimate.stderr_frames,
                    "snr_db": e.estimate.snr_db, "gain": e.estimate.gain,
                    "residual_rad": e.estimate.residual_rad, "inverted": e.estimate.inverted,
                    "clipped": e.estimate.clipped, "verdict": e.estimate.verdict.to_string(),
                })).collect::<Vec<_>>(),
                "impulses": o.impulses.iter().map(|i| json!({
                    "seq": i.seq, "position": i.position,
                    "frames": i.onset.map(|x| x.frames), "peak": i.onset.map(|x| x.peak),
                    "inverted": i.onset.map(|x| x.inverted),
                })).collect::<Vec<_>>(),
            })
        }).collect::<Vec<_>>(),
    })
}

/// A statistic of a histogram in ns, or `-` when it recorded nothing.
fn ns_stat(h: &results::LatencyHistogram, stat: fn(&results::Summary) -> f64) -> String {
    h.summary().map_or_else(|| "-".into(), |s| fmt_ns(stat(&s)))
}

/// A duration for people: "10 s", "500 ms".
pub fn fmt_duration(d: std::time::Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{} s", (s * 1000.0).round() / 1000.0)
    } else {
        format!("{} ms", (s * 1e6).round() / 1e3)
    }
}

/// `audiolat net` as text: the study's Figure 7 (histogram, max, mean, stdev, missed
/// deadlines) and what stands beside it.
pub fn net_text(run: &crate::runner::NetRun, db: &std::path::Path) -> String {
    use probes::net::wire::{DEADLINE_NS, PACKET_INTERVAL_NS};
    let o = &run.outcome;
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
    let measurements = o.measurements();
    out.push_str(&summary_table(&measurements));
    let Some(synth) = o.synth.as_ref().or(o.reference.as_ref()) else {
        let _ = writeln!(out, "\nnothing measured");
        return out;
    };
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
    let _ = PACKET_INTERVAL_NS;
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
    if let Some(link) = c.link {
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
    if let Some(cells) = &run.cells {
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
            if run.cells_undone {
                "all undone at the end"
            } else {
                "NOT all undone: see the run's granted qos"
            }
        );
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

/// The study's Figure 7(a): the music application's cells alone.
pub const PAPER_FIG7A: &str = "0 misses, mean 997.54 us, stdev 35.11 us, max 1336 us (Fig. 7a)";
/// Figure 7(b): with the interfering cells.
pub const PAPER_FIG7B: &str = "0 misses, mean 1024.61 us, stdev 36.88 us, max 1405 us (Fig. 7b)";
/// Figure 8(a): the abusive stream, no bandwidth guarantee.
pub const PAPER_FIG8A: &str =
    "243903 misses (99.91%), mean 461133.61 us, stdev 113320.00 us, max 562898 us (Fig. 8a)";
/// Figure 8(b): 240 Mbit/s guaranteed.
pub const PAPER_FIG8B: &str = "0 misses, mean 983.20 us, stdev 48.37 us, max 1389 us (Fig. 8b)";
/// Section 4.2: 150 Mbit/s guaranteed.
pub const PAPER_FIG8_150: &str = "8 misses (section 4.2; no figure)";

/// One row of an experiment's table.
pub struct ExperimentRow {
    /// What the run changed.
    pub label: String,
    /// Run id, if it was stored.
    pub run_id: Option<i64>,
    /// complete, interrupted, failed.
    pub status: String,
    /// The metric's summary (`None` inside when it has no samples) and misses, if the
    /// run has the metric.
    pub summary: Option<(Option<results::Summary>, u64)>,
    /// The study's numbers for this case.
    pub paper: &'static str,
    /// Why it failed, or what to know about it.
    pub note: String,
    /// Blocks sent (the misses' denominator: lost blocks have no time).
    pub sent: u64,
}

impl ExperimentRow {
    /// The row of a finished run.
    pub fn from_run(
        label: &str,
        metric: &str,
        paper: &'static str,
        run: &crate::runner::NetRun,
    ) -> ExperimentRow {
        let m = run
            .outcome
            .measurements()
            .into_iter()
            .find(|m| m.metric == metric);
        let synth = run.outcome.synth.as_ref();
        let sent = synth.map_or(0, |p| p.controller.blocks_sent);
        // An abusive stream that could not fill the link proves nothing about it.
        let note = match (synth.and_then(|p| p.stream.as_ref()), run.config.link) {
            (Some(st), Some(link)) if st.received_mbps + 148.5 < 0.9 * link.mbps => format!(
                "the stream reached only {:.0} Mbit/s beside the audio's 148.5: this machine cannot fill a {} Mbit/s link; use a lower --link",
                st.received_mbps, link.mbps
            ),
            _ => String::new(),
        };
        ExperimentRow {
            label: label.into(),
            run_id: Some(run.run_id),
            status: run.status.to_string(),
            summary: m.map(|m| {
                // The host's misses are of the blocks it answered; a block never
                // answered missed all the same (end_to_end counts its lost already).
                let lost = match (metric, synth) {
                    ("response_time", Some(p)) => p.controller.lost,
                    _ => 0,
                };
                let misses = m.misses.unwrap_or(0) + lost;
                (m.summary, if sent > 0 { misses.min(sent) } else { misses })
            }),
            paper,
            note,
            sent,
        }
    }

    /// The row of a run that could not be made.
    pub fn failed(label: &str, paper: &'static str, e: &anyhow::Error) -> ExperimentRow {
        ExperimentRow {
            label: label.into(),
            run_id: None,
            status: "failed".into(),
            summary: None,
            paper,
            note: format!("{e:#}"),
            sent: 0,
        }
    }

    /// The row as JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "label": self.label,
            "run_id": self.run_id,
            "status": self.status,
            "blocks": self.sent,
            "misses": self.summary.as_ref().map(|s| s.1),
            "mean_ns": self.summary.and_then(|s| s.0).map(|s| s.mean),
            "stdev_ns": self.summary.and_then(|s| s.0).map(|s| s.stdev),
            "p999_ns": self.summary.and_then(|s| s.0).map(|s| s.p999),
            "max_ns": self.summary.and_then(|s| s.0).map(|s| s.max),
            "paper": self.paper,
            "note": self.note,
        })
    }
}

/// An experiment's table: our runs beside the study's figures.
pub fn experiment_text(
    which: &str,
    metric: &str,
    group: i64,
    rows: &[ExperimentRow],
    db: &std::path::Path,
) -> String {
    let mut out = String::new();
    let what = if metric == "end_to_end" {
        "end to end tf - t0 at the controller (it includes the shaped link's queue; the study stamped t1 in the host's driver, before its network service's queue)"
    } else {
        "response time t2 - t1 at the host"
    };
    let _ = writeln!(
        out,
        "
net experiment {which} (group {group}): {what}; deadline {}
",
        fmt_ns(probes::net::wire::DEADLINE_NS as f64)
    );
    let width = rows
        .iter()
        .map(|r| r.label.len())
        .max()
        .unwrap_or(10)
        .max(10);
    let _ = writeln!(
        out,
        "{:<width$}  {:>5}  {:>8}  {:>15}  {:>10}  {:>10}  {:>10}  {:>10}  the study",
        "run", "id", "sent", "missed", "mean", "stdev", "p99.9", "max"
    );
    for r in rows {
        match &r.summary {
            Some((s, misses)) => {
                // Blocks sent: a block lost on the way has no time but missed all the same.
                let blocks = if r.sent > 0 {
                    r.sent
                } else {
                    s.map_or(0, |s| s.count)
                };
                // No block answered: no times to summarise.
                let time = |f: fn(&results::Summary) -> f64| {
                    s.as_ref().map_or_else(|| "-".into(), |s| fmt_ns(f(s)))
                };
                // No block sent: no share of them.
                let missed = if blocks > 0 {
                    format!("{misses} ({:.2}%)", 100.0 * *misses as f64 / blocks as f64)
                } else {
                    misses.to_string()
                };
                let _ = writeln!(
                    out,
                    "{:<width$}  {:>5}  {:>8}  {:>15}  {:>10}  {:>10}  {:>10}  {:>10}  {}",
                    r.label,
                    r.run_id.map_or("-".into(), |i| i.to_string()),
                    blocks,
                    missed,
                    time(|s| s.mean),
                    time(|s| s.stdev),
                    time(|s| s.p999),
                    time(|s| s.max),
                    r.paper
                );
                if !r.note.is_empty() {
                    let _ = writeln!(out, "{:<width$}  note: {}", "", r.note);
                }
            }
            None => {
                let _ = writeln!(
                    out,
                    "{:<width$}  {:>5}  {}: {}  | {}",
                    r.label,
                    r.run_id.map_or("-".into(), |i| i.to_string()),
                    r.status,
                    r.note,
                    r.paper
                );
            }
        }
    }
    let _ = writeln!(
        out,
        "
maxima on a virtual machine are the hypervisor's as much as ours: read the counts and the means. Every run is stored in {}; `audiolat show ID` shows one.",
        db.display()
    );
    out
}

fn bounds<T: std::fmt::Display + PartialEq>(b: &engine::alsa_devices::Bounds<T>) -> String {
    match (&b.min, &b.max) {
        (Some(lo), Some(hi)) if lo == hi => lo.to_string(),
        (Some(lo), Some(hi)) => format!("{lo}-{hi}"),
        (Some(lo), None) => format!("{lo}-?"),
        (None, Some(hi)) => format!("?-{hi}"),
        (None, None) => "-".into(),
    }
}

fn bounds_json<T: serde::Serialize>(b: &engine::alsa_devices::Bounds<T>) -> Value {
    json!({"min": b.min, "max": b.max})
}

fn holder_json(h: &engine::alsa_devices::Holder) -> Value {
    json!({"pid": h.pid, "command": h.command})
}

/// `audiolat devices` as text: the cards and what each PCM device accepts, the audio
/// servers, and the flags that measure each thing.
pub fn devices_text(r: &probes::devices::DevicesReport) -> String {
    use engine::alsa_devices::Probe;
    let mut out = String::new();
    if r.alsa.cards.is_empty() {
        let _ = writeln!(
            out,
            "ALSA: no sound card here{}: no DAC to time against, audio probes run on a software clock (below)",
            if std::path::Path::new("/dev/snd").exists() {
                ""
            } else {
                " (no /dev/snd)"
            }
        );
    }
    for card in &r.alsa.cards {
        let _ = writeln!(
            out,
            "card {} [{}]: {}{}",
            card.index,
            card.id,
            card.long_name,
            card.driver
                .as_deref()
                .map_or(String::new(), |d| format!(" (driver {d})"))
        );
        if let Some(e) = &card.error {
            let _ = writeln!(out, "  {e}");
        }
        let mut t = report::terminal::Table::new(&[
            "pcm",
            "name",
            "direction",
            "free",
            "channels",
            "rate Hz",
            "period",
            "buffer",
            "periods",
            "audiolat formats",
        ])
        .left_align(&[1, 2, 9]);
        // (what a stream takes, the streams that take it), and subdevices in use.
        let mut formats: Vec<(String, Vec<String>)> = Vec::new();
        let mut notes = Vec::new();
        for d in &card.devices {
            let pcm = format!("hw:{},{}", card.id, d.device);
            for s in [&d.playback, &d.capture].into_iter().flatten() {
                let mut row = vec![
                    pcm.clone(),
                    d.name.clone().unwrap_or_else(|| "-".into()),
                    s.direction.name().to_string(),
                    format!("{}/{}", s.subdevices_available, s.subdevices_count),
                ];
                match &s.probe {
                    Probe::Caps(c) => {
                        let rates = match c.rates_continuous {
                            Some(true) => format!("{} (any)", bounds(&c.rate_hz)),
                            _ => c
                                .standard_rates_hz
                                .iter()
                                .map(|r| r.to_string())
                                .collect::<Vec<_>>()
                                .join(","),
                        };
                        let ours: Vec<&str> =
                            c.audiolat_formats().iter().map(|f| f.alsa_name()).collect();
                        row.extend([
                            bounds(&c.channels),
                            if rates.is_empty() { "-".into() } else { rates },
                            bounds(&c.period_frames),
                            bounds(&c.buffer_frames),
                            bounds(&c.periods),
                            if ours.is_empty() {
                                "none: use plughw:".into()
                            } else {
                                ours.join(" ")
                            },
                        ]);
                        let takes = format!(
                            "formats {}; access {}",
                            c.formats.join(" "),
                            c.access.join(" ")
                        );
                        match formats.iter_mut().find(|(t, _)| *t == takes) {
                            Some((_, who)) => who.push(format!("{pcm} {}", s.direction.name())),
                            None => {
                                formats.push((takes, vec![format!("{pcm} {}", s.direction.name())]))
                            }
                        }
                    }
                    Probe::Busy(holders) => {
                        let who: Vec<String> = holders.iter().map(|h| h.to_string()).collect();
                        row.extend(std::iter::repeat_n("-".to_string(), 5));
                        row.push(format!(
                            "busy: {}",
                            if who.is_empty() {
                                "held by another program".to_string()
                            } else {
                                format!("held by {}", who.join(", "))
                            }
                        ));
                    }
                    Probe::Failed(why) => {
                        row.extend(std::iter::repeat_n("-".to_string(), 5));
                        row.push(format!("not readable: {why}"));
                    }
                }
                t.row(row);
                for sub in s.subdevices.iter().filter(|x| x.in_use()) {
                    notes.push(format!(
                        "  {pcm},{} {}: {}{}",
                        sub.index,
                        s.direction.name(),
                        sub.state.as_deref().unwrap_or("in use"),
                        sub.holder
                            .as_ref()
                            .map_or(String::new(), |h| format!(", held by {h}"))
                    ));
                }
            }
        }
        out.push_str(&t.render());
        let streams: usize = formats.iter().map(|(_, who)| who.len()).sum();
        for (takes, who) in formats {
            if who.len() == streams && streams > 1 {
                let _ = writeln!(out, "  every device: {takes}");
            } else {
                let _ = writeln!(out, "  {}: {takes}", who.join(", "));
            }
        }
        for n in notes {
            let _ = writeln!(out, "{n}");
        }
        out.push('\n');
    }
    if !r.alsa.cards.is_empty() {
        let _ = writeln!(
            out,
            "free = subdevices free / all; period and buffer in frames; each device was opened read-only and closed, nothing played\n"
        );
    }
    match &r.alsa.names_error {
        Some(e) => {
            let _ = writeln!(out, "ALSA PCM names: {e}");
        }
        None => {
            // The names of each card's devices (`plughw:CARD=Dummy,DEV=0`) by their
            // plug-in only; --json lists them all.
            let mut names: Vec<&str> = Vec::new();
            let mut per_card: Vec<String> = Vec::new();
            for h in &r.alsa.names {
                let parts = engine::alsa_devices::parse_pcm_name(&h.name);
                if parts.card.is_some() {
                    if !per_card.contains(&parts.plugin) {
                        per_card.push(parts.plugin);
                    }
                } else {
                    names.push(&h.name);
                }
            }
            let _ = writeln!(
                out,
                "ALSA PCM names (aplay -L): {}{}",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                },
                if per_card.is_empty() {
                    String::new()
                } else {
                    format!("; for each card: {}", per_card.join(", "))
                }
            );
        }
    }
    let _ = writeln!(out, "\naudio servers:");
    let mut any_jack = false;
    for e in &r.jack {
        any_jack = true;
        let pid = e.pid.map_or(String::new(), |p| format!(" (pid {p})"));
        match (&e.ports, &e.error) {
            (Some(p), _) => {
                let list = |v: &[String]| {
                    if v.is_empty() {
                        "none".to_string()
                    } else {
                        v.join(" ")
                    }
                };
                let _ = writeln!(
                    out,
                    "  JACK `{}`{pid}: {} Hz, {} frames a period, {} ports; physical playback {}; physical capture {}",
                    e.name,
                    p.facts.rate_hz,
                    p.facts.period_frames,
                    p.all_ports,
                    list(&p.playback),
                    list(&p.capture)
                );
            }
            (None, Some(why)) => {
                let _ = writeln!(out, "  JACK `{}`{pid}: {why}", e.name);
            }
            (None, None) => {}
        }
    }
    if !any_jack {
        let _ = writeln!(
            out,
            "  JACK: no server answers{}",
            match &r.jackd {
                Some(j) => format!(" (audiolat can start a private one: {})", j.display()),
                None => " and jackd is not installed (apt install jackd2)".into(),
            }
        );
    }
    for (name, s) in [("PipeWire", &r.pipewire), ("PulseAudio", &r.pulseaudio)] {
        let _ = writeln!(
            out,
            "  {name}: {}",
            match (s.running, &s.socket) {
                (true, Some(p)) => format!("running, socket {}", p.display()),
                (true, None) => "running (no socket for this user)".into(),
                (false, Some(p)) => format!("socket {} (its process is not visible)", p.display()),
                (false, None) => "not running".into(),
            }
        );
    }
    let _ = writeln!(
        out,
        "\nwhat can be measured here: audiolat event|roundtrip FLAGS"
    );
    for s in &r.suggestions {
        let _ = writeln!(
            out,
            "  {}\n      {}: {}",
            s.args,
            s.probes.join(", "),
            s.what
        );
    }
    out
}

/// `audiolat devices --json`. The shape (every key always present; `null` for what is
/// not known, never 0):
///
/// - `alsa.cards[]`: `index`, `id`, `driver`, `name`, `long_name`, `error`, and `pcm[]`
///   of `device`, `id`, `name`, `playback` and `capture` (each `null` when the device
///   has no such direction, else `name` (`hw:ID,D`), `subdevices`,
///   `subdevices_available`, `subdevice_list[]` (`subdevice`, `name`, `state`, `holder`),
///   `status` (`ok`, `busy` or `failed`), `holders[]` (`pid`, `command`), `error`, and
///   what it accepts: `formats[]`, `audiolat_formats[]`, `access[]`, `channels`,
///   `rate_hz`, `period_frames`, `buffer_frames`, `periods` (each `{min, max}`),
///   `rates_continuous`, `standard_rates_hz[]`, all `null` unless `status` is `ok`);
/// - `alsa.pcm_names[]`: `name`, `description`, `direction` (`playback`, `capture` or
///   `null` for both); `alsa.pcm_names_error`;
/// - `servers.jack[]`: `name`, `pid`, `default`, `answers`, `rate_hz`, `period_frames`,
///   `ports`, `playback_ports[]`, `capture_ports[]`, `error`; `servers.jack_running`,
///   `servers.jackd`; `servers.pipewire` and `servers.pulseaudio`: `running`, `socket`;
/// - `suggestions[]`: `probes[]`, `args`, `what`.
pub fn devices_json(r: &probes::devices::DevicesReport) -> Value {
    use engine::alsa_devices::Probe;
    let stream = |card: &engine::alsa_devices::Card,
                  d: &engine::alsa_devices::PcmDevice,
                  s: Option<&engine::alsa_devices::PcmStream>| {
        let Some(s) = s else {
            return Value::Null;
        };
        let caps = s.caps();
        let (status, holders, error) = match &s.probe {
            Probe::Caps(_) => ("ok", Vec::new(), None),
            Probe::Busy(h) => ("busy", h.iter().map(holder_json).collect(), None),
            Probe::Failed(why) => ("failed", Vec::new(), Some(why.clone())),
        };
        json!({
            "name": format!("hw:{},{}", card.id, d.device),
            "subdevices": s.subdevices_count,
            "subdevices_available": s.subdevices_available,
            "subdevice_list": s.subdevices.iter().map(|x| json!({
                "subdevice": x.index,
                "name": x.name,
                "state": x.state,
                "holder": x.holder.as_ref().map(holder_json),
            })).collect::<Vec<_>>(),
            "status": status,
            "holders": holders,
            "error": error,
            "formats": caps.map(|c| c.formats.clone()),
            "audiolat_formats": caps.map(|c| c.audiolat_formats().iter().map(|f| f.alsa_name()).collect::<Vec<_>>()),
            "access": caps.map(|c| c.access.clone()),
            "channels": caps.map(|c| bounds_json(&c.channels)),
            "rate_hz": caps.map(|c| bounds_json(&c.rate_hz)),
            "rates_continuous": caps.and_then(|c| c.rates_continuous),
            "standard_rates_hz": caps.map(|c| c.standard_rates_hz.clone()),
            "period_frames": caps.map(|c| bounds_json(&c.period_frames)),
            "buffer_frames": caps.map(|c| bounds_json(&c.buffer_frames)),
            "periods": caps.map(|c| bounds_json(&c.periods)),
        })
    };
    let cards: Vec<Value> = r
        .alsa
        .cards
        .iter()
        .map(|c| {
            json!({
                "index": c.index,
                "id": c.id,
                "driver": c.driver,
                "name": c.name,
                "long_name": c.long_name,
                "error": c.error,
                "pcm": c.devices.iter().map(|d| json!({
                    "device": d.device,
                    "id": d.id,
                    "name": d.name,
                    "playback": stream(c, d, d.playback.as_ref()),
                    "capture": stream(c, d, d.capture.as_ref()),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let jack: Vec<Value> = r
        .jack
        .iter()
        .map(|e| {
            let p = e.ports.as_ref();
            json!({
                "name": e.name,
                "pid": e.pid,
                "default": e.default,
                "answers": p.is_some(),
                "rate_hz": p.map(|p| p.facts.rate_hz),
                "period_frames": p.map(|p| p.facts.period_frames),
                "ports": p.map(|p| p.all_ports),
                "playback_ports": p.map(|p| p.playback.clone()),
                "capture_ports": p.map(|p| p.capture.clone()),
                "error": e.error,
            })
        })
        .collect();
    let socket_server = |s: &probes::devices::SocketServer| json!({"running": s.running, "socket": s.socket.as_ref().map(|p| p.display().to_string())});
    json!({
        "alsa": {
            "cards": cards,
            "pcm_names": r.alsa.names.iter().map(|h| json!({
                "name": h.name,
                "description": h.description,
                "direction": h.direction.map(|d| d.name()),
            })).collect::<Vec<_>>(),
            "pcm_names_error": r.alsa.names_error,
        },
        "servers": {
            "jack": jack,
            "jack_running": r.jack_running,
            "jackd": r.jackd.as_ref().map(|p| p.display().to_string()),
            "pipewire": socket_server(&r.pipewire),
            "pulseaudio": socket_server(&r.pulseaudio),
        },
        "suggestions": r.suggestions.iter().map(|s| json!({
            "probes": s.probes,
            "args": s.args,
            "what": s.what,
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_net_row_or_deadline_without_answers_shows_no_figure_and_no_share_of_nothing() {
        let row = |summary, sent| ExperimentRow {
            label: "lost".into(),
            run_id: Some(3),
            status: "complete".into(),
            summary,
            paper: "-",
            note: String::new(),
            sent,
        };
        let text = experiment_text(
            "isolation",
            "response_time",
            1,
            &[row(Some((None, 1379)), 1379), row(Some((None, 0)), 0)],
            std::path::Path::new("x.db"),
        );
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("lost")).collect();
        let cells = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        // Every block sent was lost: all missed, no times.
        assert_eq!(
            cells(lines[0])[1..],
            ["3", "1379", "1379", "(100.00%)", "-", "-", "-", "-", "-"],
            "{text}"
        );
        // Nothing sent: no share of nothing.
        assert_eq!(
            cells(lines[1])[1..],
            ["3", "0", "0", "-", "-", "-", "-", "-"],
            "{text}"
        );
        let json = row(Some((None, 1379)), 1379).to_json();
        assert!(
            json["mean_ns"].is_null() && json["max_ns"].is_null(),
            "{json}"
        );

    }
}
