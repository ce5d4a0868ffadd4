//! A network run's outcome as the results model: measurements, series, validity flags
//! and the counters.

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

    /// Validity flags.
    pub fn flags(&self) -> Value {
        let steal_ns = self.steal.total_ns(None);
        let cpus = engine::rt::online_cpus().len();
        let kernel = self
            .reference
            .iter()
            .chain(self.synth.iter())
            .all(|p| p.host.kernel_timestamps);
        json!({
            "realtime": self.realtime(),
            "interrupted": self.interrupted,
            "host_steal_ns": steal_ns,
            "host_steal_percent": self.steal.percent_of_span(steal_ns, cpus),
            "kernel_timestamps": kernel,
        })
    }

    /// Counters and thread grants, per phase.
    pub fn result_json(&self) -> Value {
        let phase = |p: &Phase| {
            let (h, c) = (&p.host, &p.controller);
            let d = &h.counters.drops;
            json!({
                "flood": p.flood.map(|(sent, mbps)| json!({"datagrams": sent, "mbit_per_s": mbps})),
                "stream": p.stream.as_ref().map(|st| json!({
                    "sent": st.sent, "refused": st.refused, "offered_mbit_per_s": st.offered_mbps,
                    "received": st.received, "received_mbit_per_s": st.received_mbps})),
                "service": p.service.as_ref().map(service::ServiceOutcome::to_json),
                "tc_classes": p.tc_classes,
                "host": {
                    "answered": h.answered, "misses": h.misses, "send_dropped": h.send_dropped,
                    "kernel_dropped": h.kernel_dropped,
                    "blocks_complete": h.counters.blocks_complete,
                    "blocks_incomplete": h.counters.blocks_incomplete,
                    "packets_missing": h.counters.packets_missing,
                    "reordered": h.counters.reordered,
                    "drops": {"wrong_size": d.wrong_size, "bad_magic": d.bad_magic,
                              "unknown_version": d.unknown_version, "unknown_kind": d.unknown_kind,
                              "bad_index": d.bad_index, "non_finite": d.non_finite,
                              "duplicate": d.duplicate, "stale": d.stale, "foreign": d.foreign},
                    "net_thread": h.net_thread.granted.to_string(),
                    "workers": h.worker_threads.iter().map(|g| g.granted.to_string()).collect::<Vec<_>>(),
                    "error": h.error,
                },
                "controller": {
                    "blocks_sent": c.blocks_sent, "on_time": c.on_time, "late": c.late, "lost": c.lost,
                    "packets_sent": c.packets_sent, "packets_refused": c.packets_refused,
                    "duplicate_answers": c.duplicate_answers, "unknown_answers": c.unknown_answers,
                    "malformed_answers": c.malformed.total(),
                    "sender_thread": c.sender_thread.granted.to_string(),
                    "error": c.error,
                },
            })
        };
        json!({
            "deadline_ns": wire::DEADLINE_NS,
            "short_response_ns": netaudio::host::SHORT_RESPONSE_NS,
            "stream_datagram_bytes": netaudio::traffic::STREAM_DATAGRAM,
            "reference": self.reference.as_ref().map(phase),
            "synth": self.synth.as_ref().map(phase),
        })
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
    m.misses = Some(h.misses);
    m.detail = json!({
        "answered": h.answered,
        "answered_in_warmup": h.answered_in_warmup,
        "below_gathering": h.below_gathering,
        "short_responses": h.short_responses,
        "send_dropped": h.send_dropped,
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

/// The controller's measurements: end to end `tf - t0` against the deadline, and its
/// pacing error.
pub fn controller_measurements(c: &ControllerOutcome, suffix: &str) -> Vec<Measurement> {
    let mut out = Vec::new();
    let mut e = Measurement::from_histogram(
            "net",
            &format!("end_to_end{suffix}"),
            "tf - t0 per block at the controller: from handing the block's first packet to the kernel to the answer's arrival",
            c.end_to_end.0.clone(),
        );
    e.deadline = Some(wire::DEADLINE_NS as f64);
    e.misses = Some(c.late + c.lost);
    e.detail = json!({"sent": c.blocks_sent, "on_time": c.on_time, "late": c.late, "lost": c.lost,
                          "duplicate_answers": c.duplicate_answers, "unknown_answers": c.unknown_answers});
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
