//! A network run's outcome as the results model: measurements, series, validity flags
//! and the counters.

use std::collections::BTreeMap;

use results::records::flags::Flags;
use results::records::net::{
    ControllerRecord, DropCounts, FloodRecord, FlowRecord, HostRecord, MissCauses, NetResultRecord,
    PhaseRecord, SchedRecord, ServiceRecord, StreamRecord, TcClassRecord,
};
use results::records::Record;
use results::{Measurement, Series};
use serde_json::{json, Value};

use super::{wire, ControllerOutcome, HostOutcome, NetOutcome, Phase};
use netaudio::service;

impl NetOutcome {
    /// Every thread of both ends ran at a real-time policy.
    pub fn realtime(&self) -> bool {
        let phase_rt = |p: &Phase| {
            p.host.net_thread.is_realtime()
                && p.host.worker_threads.iter().all(|g| g.is_realtime())
                && p.controller.sender_thread.is_realtime()
                && p.controller
                    .receiver_thread
                    .as_ref()
                    .is_some_and(|g| g.is_realtime())
                && p.service.as_ref().is_none_or(|s| s.thread.is_realtime())
        };
        self.reference.iter().chain(self.synth.iter()).all(phase_rt)
            && (self.reference.is_some() || self.synth.is_some())
    }

    /// What the synth adds after a block's last packet: the median of the synth phase less
    /// that of the reference (a host answering silence at once). `None` without either
    /// phase, or when either answered nothing: a difference with a missing side is no
    /// figure.
    pub fn synth_adds_ns(&self) -> Option<f64> {
        let median = |p: &Phase| p.host.after_last_packet.summary().map(|s| s.p50);
        Some(median(self.synth.as_ref()?)? - median(self.reference.as_ref()?)?)
    }

    /// Measurements: per phase, the host's response time `t2 - t1` against the deadline
    /// (the study's figure), the host's own share after the last packet, the synth's
    /// time, the controller's end-to-end `tf - t0` and its pacing error.
    pub fn measurements(&self) -> Vec<Measurement> {
        let mut out = Vec::new();
        // The synth phase first: the first measurement is the run's headline.
        for (suffix, phase) in [("", &self.synth), ("_reference", &self.reference)] {
            let Some(p) = phase else { continue };
            out.extend(host_measurements(&p.host, suffix));
            out.extend(controller_measurements(&p.controller, suffix));
        }
        out
    }

    /// Per block of the synth phase: time since the run started and the response.
    pub fn series(&self) -> Vec<Series> {
        let t0 = self.start_ns as f64;
        let mut out = Vec::new();
        for (name, phase) in [
            ("response_time_reference", &self.reference),
            ("response_time", &self.synth),
        ] {
            let Some(p) = phase else { continue };
            out.push(Series {
                name: name.into(),
                unit: "ns".into(),
                columns: vec!["time_s".into(), "response_ns".into()],
                rows: p
                    .host
                    .series
                    .iter()
                    .map(|&(t1, r)| vec![(t1 as f64 - t0) / 1e9, r as f64])
                    .collect(),
            });
        }
        out
    }

    /// Validity flags: with the others, `sender_late_blocks`, the counted blocks the
    /// run's own controller sent late (both phases): times it cannot blame on the host
    /// or the network.
    pub fn flags(&self) -> Value {
        let steal_ns = self.steal.total_ns(None);
        let cpus = engine::rt::online_cpus().len();
        let phases = || self.reference.iter().chain(self.synth.iter());
        let kernel = phases().all(|p| p.host.kernel_timestamps);
        let late: u64 = phases().map(|p| p.controller.blocks_sent_late).sum();
        Flags {
            realtime: Some(self.realtime()),
            interrupted: Some(self.interrupted),
            host_steal_ns: Some(steal_ns),
            host_steal_percent: Some(self.steal.percent_of_span(steal_ns, cpus)),
            kernel_timestamps: Some(kernel),
            sender_late_blocks: Some(late),
            ..Flags::default()
        }
        .to_json()
    }

    /// Counters and thread grants, per phase: the run's stored result.
    pub fn result_record(&self) -> NetResultRecord {
        let phase = |p: &Phase| PhaseRecord {
            flood: p.flood.map(|(datagrams, mbit_per_s)| FloodRecord {
                datagrams,
                mbit_per_s,
            }),
            stream: p.stream.as_ref().map(|st| StreamRecord {
                sent: st.sent,
                refused: st.refused,
                offered_mbit_per_s: st.offered_mbps,
                received: st.received,
                received_mbit_per_s: st.received_mbps,
            }),
            service: p.service.as_ref().map(service_record),
            tc_classes: p.tc_classes.as_ref().map(tc_classes_record),
            kernel_softirq: sched_record(p.kernel_softirq),
            host: host_record(&p.host),
            controller: controller_record(&p.controller),
        };
        NetResultRecord {
            deadline_ns: wire::DEADLINE_NS,
            short_response_ns: Some(netaudio::host::SHORT_RESPONSE_NS),
            late_send_ns: Some(netaudio::controller::LATE_SEND_NS),
            stream_datagram_bytes: Some(netaudio::traffic::STREAM_DATAGRAM as u64),
            reference: self.reference.as_ref().map(phase),
            synth: self.synth.as_ref().map(phase),
            why: self.why.as_ref().map(|w| w.record(None)),
        }
    }
}

/// A thread's time on a CPU and waiting for one, as stored (`None` where the kernel
/// kept no counters).
pub fn sched_record(s: Option<engine::rt::SchedStat>) -> Option<SchedRecord> {
    s.map(|s| SchedRecord {
        on_cpu_ns: s.on_cpu_ns,
        run_queue_wait_ns: s.run_queue_wait_ns,
    })
}

/// Dropped datagrams by each documented reason, as stored.
pub fn drop_counts(d: &wire::DropCounters) -> DropCounts {
    DropCounts {
        wrong_size: d.wrong_size,
        bad_magic: d.bad_magic,
        unknown_version: d.unknown_version,
        unknown_kind: d.unknown_kind,
        bad_index: d.bad_index,
        non_finite: d.non_finite,
        duplicate: d.duplicate,
        stale: d.stale,
        foreign: d.foreign,
        unconfirmed: Some(d.unconfirmed),
    }
}

/// The user-level service as stored: per flow its rate on the wire (payload and
/// [`netaudio::netns::WIRE_OVERHEAD_BYTES`] of headers per datagram) over the seconds
/// it ran.
pub fn service_record(s: &service::ServiceOutcome) -> ServiceRecord {
    let secs = s.seconds.max(1e-9);
    let overhead = netaudio::netns::WIRE_OVERHEAD_BYTES as u64;
    ServiceRecord {
        discipline: s.discipline.to_string(),
        link_mbps: s.link_mbps,
        thread: Some(s.thread.granted.to_string()),
        on_cpu_ns: s.sched.map(|s| s.on_cpu_ns),
        run_queue_wait_ns: s.sched.map(|s| s.run_queue_wait_ns),
        flows: s
            .flows
            .iter()
            .map(|f| FlowRecord {
                sent: f.sent,
                mbit_per_s: (f.bytes + f.sent * overhead) as f64 * 8.0 / 1e6 / secs,
                by_reservation: f.by_reservation,
                kernel_refused: f.kernel_refused,
                max_wait_ns: f.max_wait_ns,
            })
            .collect(),
    }
}

/// The HTB classes' counters as stored, by class id.
fn tc_classes_record(
    classes: &BTreeMap<String, netaudio::netns::ClassStats>,
) -> BTreeMap<String, TcClassRecord> {
    classes
        .iter()
        .map(|(id, c)| {
            let record = TcClassRecord {
                bytes: c.bytes,
                packets: c.packets,
                drops: c.drops,
                overlimits: c.overlimits,
            };
            (id.clone(), record)
        })
        .collect()
}

/// The host's counters as stored: the blocks it counted (from which block, answering
/// whom: the answers it sent, those the kernel refused, those past the deadline), what it
/// dropped by each documented reason, its threads. `results::counts::HostBlocks` reads
/// them.
pub fn host_record(h: &HostOutcome) -> HostRecord {
    HostRecord {
        answers_sent: Some(h.answers_sent),
        answers_refused: Some(h.answers_refused),
        answers_in_warmup: Some(h.answers_in_warmup),
        counted_from_block: h.counted_from_block.map(u64::from),
        peer: h.peer.map(|p| p.to_string()),
        peer_changes: Some(h.peer_changes),
        responses_past_deadline: Some(h.responses_past_deadline),
        kernel_dropped: Some(h.kernel_dropped),
        packets_accepted: Some(h.counters.packets_accepted),
        blocks_complete: h.counters.blocks_complete,
        blocks_incomplete: h.counters.blocks_incomplete,
        packets_missing: h.counters.packets_missing,
        reordered: h.counters.reordered,
        drops: drop_counts(&h.counters.drops),
        net_thread: h.net_thread.granted.to_string(),
        net_thread_sched: sched_record(h.net_thread_sched),
        workers: h
            .worker_threads
            .iter()
            .map(|g| g.granted.to_string())
            .collect(),
        error: h.error.clone(),
        ..HostRecord::default()
    }
}

/// The controller's counters as stored: blocks by their schedule (sent, sent late by
/// the controller itself; their answers received on time, late, after the run's end, or
/// not received), the late ones by cause (`None` when its host ran elsewhere), the
/// answers it could not use by each documented reason, its threads.
/// `results::counts::ControllerBlocks` reads them.
pub fn controller_record(c: &ControllerOutcome) -> ControllerRecord {
    ControllerRecord {
        blocks_sent: c.blocks_sent,
        blocks_sent_late: Some(c.blocks_sent_late),
        counted_from_block: Some(u64::from(c.counted_from_block)),
        answers_received_on_time: Some(c.answers_received_on_time),
        answers_received_late: Some(c.answers_received_late),
        answers_received_after_end: Some(c.answers_received_after_end),
        answers_not_received: Some(c.answers_not_received),
        miss_causes: c.miss_causes.map(|m| MissCauses {
            sent_late: m.sent_late,
            to_host: m.to_host,
            host: m.host,
            way_back: m.way_back,
            unsplit: m.unsplit,
        }),
        packets_sent: c.packets_sent,
        packets_refused: c.packets_refused,
        duplicate_answers: c.duplicate_answers,
        unknown_answers: c.unknown_answers,
        dropped_answers: Some(drop_counts(&c.dropped_answers)),
        answers_dropped_by_kernel: Some(c.answers_dropped_by_kernel),
        blocks_unrecorded: Some(c.blocks_unrecorded),
        sender_thread: c.sender_thread.granted.to_string(),
        sender_sched: sched_record(c.sender_sched),
        receiver_sched: sched_record(c.receiver_sched),
        error: c.error.clone(),
        ..ControllerRecord::default()
    }
}

/// The host's measurements: response time `t2 - t1` against the deadline, its share after
/// the last packet, and (for the synth phase, `suffix` empty) the synth's time.
pub fn host_measurements(h: &HostOutcome, suffix: &str) -> Vec<Measurement> {
    let mut out = Vec::new();
    let what = if suffix.is_empty() {
        "the Migrator synth answering"
    } else {
        "a host answering silence at once (no synthesis)"
    };
    let mut m = Measurement::from_histogram(
            "net",
            &format!("response_time{suffix}"),
            &format!(
                "t2 - t1 per 32-frame block, {what}: t1 the kernel's receive timestamp of the block's first packet ({}), t2 just before the answer is handed to the kernel; blocks after the warm-up",
                if h.kernel_timestamps { "SO_TIMESTAMPNS, mapped to CLOCK_MONOTONIC" } else { "user space: the kernel gave no timestamp" }
            ),
            h.response.0.clone(),
        );
    m.deadline = Some(wire::DEADLINE_NS as f64);
    m.misses = Some(h.responses_past_deadline);
    m.detail = json!({
        "answers_sent": h.answers_sent,
        "answers_refused": h.answers_refused,
        "answers_in_warmup": h.answers_in_warmup,
        "below_gathering": h.below_gathering,
        "short_responses": h.short_responses,
        "kernel_timestamps": h.kernel_timestamps,
        "gathering_ns_median": h.gathering.summary().map(|s| s.p50),
    });
    out.push(m);
    out.push(Measurement::from_histogram(
            "net",
            &format!("after_last_packet{suffix}"),
            "t2 minus the arrival of the block's last packet: the host's own share (synth and send), without the gathering",
            h.after_last_packet.0.clone(),
        ));
    if suffix.is_empty() {
        out.push(Measurement::from_histogram(
                "net",
                "synth_time",
                "time in the Migrator synth per block (32 objects x 100 oscillators, pressed pads only), on the host",
                h.synth.0.clone(),
            ));
    }
    out
}

/// The controller's measurements: end to end `tf - t0` against the deadline (the blocks
/// answered before the run's end; its misses are of every block sent: late, answered
/// after the end or not at all), and its pacing error.
pub fn controller_measurements(c: &ControllerOutcome, suffix: &str) -> Vec<Measurement> {
    let mut out = Vec::new();
    let mut e = Measurement::from_histogram(
            "net",
            &format!("end_to_end{suffix}"),
            "tf - t0 per block at the controller: from handing the block's first packet to the kernel to the answer's arrival",
            c.end_to_end.0.clone(),
        );
    e.deadline = Some(wire::DEADLINE_NS as f64);
    e.misses =
        Some(c.answers_received_late + c.answers_received_after_end + c.answers_not_received);
    e.detail = json!({"blocks_sent": c.blocks_sent, "blocks_sent_late": c.blocks_sent_late,
                      "answers_received_on_time": c.answers_received_on_time,
                      "answers_received_late": c.answers_received_late,
                      "answers_received_after_end": c.answers_received_after_end,
                      "answers_not_received": c.answers_not_received,
                      "duplicate_answers": c.duplicate_answers,
                      "unknown_answers": c.unknown_answers});
    out.push(e);
    let mut pacing = Measurement::from_histogram(
            "net",
            &format!("pacing_error{suffix}"),
            "the controller's send time minus each packet's due time (absolute deadlines every 45.35 us): a late sender, not a slow host",
            c.pacing.0.clone(),
        );
    pacing.detail = json!({"packets_sent": c.packets_sent, "packets_refused": c.packets_refused});
    out.push(pacing);
    out
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    use engine::rt::Policy;
    use results::records::net::{NetConfigRecord, NetResultRecord};
    use results::records::Record;
    use serde_json::Value;

    use crate::net::{run, NetConfig};

    /// The keys of `json`'s object, sorted.
    fn keys(json: &Value) -> Vec<&str> {
        let mut keys: Vec<&str> = json
            .as_object()
            .unwrap_or_else(|| panic!("not an object: {json}"))
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        keys
    }

    /// A short run of both phases over loopback stores its configuration and result as
    /// their records, under every key a net run has stored (the lists are those of the
    /// `json!` the records replaced), and both read back as written.
    #[test]
    fn a_net_runs_configuration_and_result_are_stored_as_their_records() {
        let config = NetConfig {
            reference_duration: Duration::from_millis(40),
            warmup: Duration::from_millis(20),
            policy: Policy::Other { nice: 0 },
            ..NetConfig::new(Duration::from_millis(40))
        };
        let described = config.record().to_json();
        assert_eq!(
            keys(&described),
            [
                "block_period_ns",
                "controller_cpus",
                "deadline_ns",
                "duration_s",
                "host_cpus",
                "link",
                "packet_interval_ns",
                "pad",
                "pads_pressed",
                "poll",
                "reference_duration_s",
                "stream",
                "transport",
                "warmup_s",
                "workers"
            ]
        );
        assert!(described["duration_s"].is_f64() && described["deadline_ns"].is_u64());
        assert_eq!(
            NetConfigRecord::from_json(&described),
            Some(config.record())
        );

        let outcome = run(&config, &AtomicBool::new(false)).expect("a loopback run");
        let result = outcome.result_record().to_json();
        assert_eq!(
            keys(&result),
            [
                "deadline_ns",
                "late_send_ns",
                "reference",
                "short_response_ns",
                "stream_datagram_bytes",
                "synth"
            ]
        );
        for phase in [&result["reference"], &result["synth"]] {
            assert_eq!(
                keys(phase),
                [
                    "controller",
                    "flood",
                    "host",
                    "kernel_softirq",
                    "service",
                    "stream",
                    "tc_classes"
                ]
            );
            assert_eq!(
                keys(&phase["host"]),
                [
                    "answers_in_warmup",
                    "answers_refused",
                    "answers_sent",
                    "blocks_complete",
                    "blocks_incomplete",
                    "counted_from_block",
                    "drops",
                    "error",
                    "kernel_dropped",
                    "net_thread",
                    "net_thread_sched",
                    "packets_accepted",
                    "packets_missing",
                    "peer",
                    "peer_changes",
                    "reordered",
                    "responses_past_deadline",
                    "workers"
                ]
            );
            assert_eq!(
                keys(&phase["controller"]),
                [
                    "answers_dropped_by_kernel",
                    "answers_not_received",
                    "answers_received_after_end",
                    "answers_received_late",
                    "answers_received_on_time",
                    "blocks_sent",
                    "blocks_sent_late",
                    "blocks_unrecorded",
                    "counted_from_block",
                    "dropped_answers",
                    "duplicate_answers",
                    "error",
                    "miss_causes",
                    "packets_refused",
                    "packets_sent",
                    "receiver_sched",
                    "sender_sched",
                    "sender_thread",
                    "unknown_answers"
                ]
            );
            // Each drop reason apart, by netaudio's names for them.
            let names: Vec<&str> = netaudio::wire::DropReason::ALL
                .iter()
                .map(|r| r.name())
                .collect();
            let mut sorted = names.clone();
            sorted.sort_unstable();
            assert_eq!(keys(&phase["host"]["drops"]), sorted);
            assert_eq!(keys(&phase["controller"]["dropped_answers"]), sorted);
            assert!(phase["host"]["blocks_complete"].is_u64());
        }
        let record = NetResultRecord::from_json(&result).expect("reads back");
        assert_eq!(record.to_json(), result);
        assert_eq!(record, outcome.result_record());
    }
}
