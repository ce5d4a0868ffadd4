use serde_json::{json, Value};

use super::*;
use crate::records::record::Record;
use crate::records::test_support::round_trips;

fn drops() -> Value {
    json!({"wrong_size": 0, "bad_magic": 0, "unknown_version": 0, "unknown_kind": 0,
           "bad_index": 0, "non_finite": 0, "duplicate": 1, "stale": 0, "foreign": 40,
           "unconfirmed": 3})
}

fn host() -> Value {
    json!({"answers_sent": 2734, "answers_refused": 0, "answers_in_warmup": 275,
           "counted_from_block": 275, "peer": "127.0.0.1:40000", "peer_changes": 0,
           "responses_past_deadline": 21, "kernel_dropped": 0, "packets_accepted": 48128,
           "blocks_complete": 3008, "blocks_incomplete": 1, "packets_missing": 2,
           "reordered": 0, "drops": drops(), "net_thread": "SCHED_FIFO 70",
           "net_thread_sched": {"on_cpu_ns": 120, "run_queue_wait_ns": 1_610_000_000_u64},
           "workers": ["SCHED_FIFO 70"], "error": null})
}

fn controller() -> Value {
    json!({"blocks_sent": 2757, "blocks_sent_late": 12, "counted_from_block": 275,
           "answers_received_on_time": 2700, "answers_received_late": 30,
           "answers_received_after_end": 0, "answers_not_received": 27,
           "miss_causes": {"sent_late": 2, "to_host": 0, "host": 28, "way_back": 0, "unsplit": 0},
           "packets_sent": 44112, "packets_refused": 0, "duplicate_answers": 0,
           "unknown_answers": 0, "dropped_answers": drops(), "answers_dropped_by_kernel": 0,
           "blocks_unrecorded": 0, "sender_thread": "SCHED_FIFO 70",
           "sender_sched": {"on_cpu_ns": 5, "run_queue_wait_ns": 7},
           "receiver_sched": null, "error": null})
}

/// A run of both ends as `probes::net` stores it today: a reference phase over
/// loopback, a synth phase with every kind of traffic beside it.
#[test]
fn a_net_result_of_today_reads_back_whole() {
    let result = json!({
        "deadline_ns": 1_405_896, "short_response_ns": 200_000, "late_send_ns": 725_624,
        "stream_datagram_bytes": 1400,
        "reference": {"flood": null, "stream": null, "service": null, "tc_classes": null,
                      "kernel_softirq": null, "host": host(), "controller": controller()},
        "synth": {
            "flood": {"datagrams": 1000, "mbit_per_s": 11.5},
            "stream": {"sent": 90, "refused": 1, "offered_mbit_per_s": 1500.0,
                       "received": 80, "received_mbit_per_s": 851.25},
            "service": {"discipline": "mclock", "link_mbps": 1000.0, "thread": "SCHED_OTHER",
                        "on_cpu_ns": 10, "run_queue_wait_ns": null,
                        "flows": [{"sent": 5, "mbit_per_s": 148.5, "by_reservation": 5,
                                   "kernel_refused": 0, "max_wait_ns": 2_000_000}]},
            "tc_classes": {"1:10": {"bytes": 10, "packets": 2, "drops": 0, "overlimits": null}},
            "kernel_softirq": {"on_cpu_ns": 1, "run_queue_wait_ns": 2},
            "host": host(), "controller": controller()},
    });
    let r: NetResultRecord = round_trips(result);
    let synth = r.synth.as_ref().unwrap();
    assert_eq!(
        synth.service.as_ref().unwrap().flows[0].max_wait_ns,
        2_000_000
    );
    assert_eq!(synth.tc_classes.as_ref().unwrap()["1:10"].drops, Some(0));
    assert_eq!(synth.host.drops.total(), 44);
    assert_eq!(r.shown_phase().map(|(name, ..)| name), Some("synth"));
    // Floats stay floats, counts stay integers.
    let back = r.to_json();
    assert!(back["synth"]["flood"]["mbit_per_s"].is_f64());
    assert!(back["synth"]["stream"]["offered_mbit_per_s"].is_f64());
    assert!(back["deadline_ns"].is_u64());
}

/// A run stored before each end kept its own books (audiolat's first net runs): the old
/// names are kept, what it did not count is `None`.
#[test]
fn a_net_result_of_an_older_run_reads_with_its_old_names() {
    let old = json!({
        "deadline_ns": 1_405_896,
        "reference": null,
        "synth": {
            "host": {"answered": 2734, "misses": 21, "send_dropped": 0,
                     "blocks_complete": 3008, "blocks_incomplete": 1, "packets_missing": 2,
                     "reordered": 0,
                     "drops": {"wrong_size": 0, "bad_magic": 0, "unknown_version": 0,
                               "unknown_kind": 0, "bad_index": 0, "non_finite": 0,
                               "duplicate": 0, "stale": 0, "foreign": 0},
                     "net_thread": "SCHED_FIFO 70", "workers": [], "error": null},
            "controller": {"blocks_sent": 2757, "on_time": 2700, "late": 30, "lost": 27,
                           "packets_sent": 44112, "packets_refused": 0,
                           "duplicate_answers": 0, "unknown_answers": 0,
                           "malformed_answers": 0, "sender_thread": "SCHED_FIFO 70",
                           "error": null}}});
    let r = NetResultRecord::from_json(&old).expect("an older run reads");
    let synth = r.synth.as_ref().unwrap();
    assert_eq!(
        (synth.host.answered, synth.host.answers_sent),
        (Some(2734), None)
    );
    assert_eq!(synth.host.drops.unconfirmed, None);
    assert_eq!(
        (synth.controller.lost, synth.controller.answers_not_received),
        (Some(27), None)
    );
    assert_eq!(
        (r.late_send_ns, synth.controller.dropped_answers),
        (None, None)
    );
    // Its old names are written back as read; the new ones it lacks come back `null`.
    let back = r.to_json();
    assert_eq!(back["synth"]["controller"]["malformed_answers"], 0);
    assert_eq!(back["synth"]["host"]["send_dropped"], 0);
    assert!(back["synth"]["host"]["answers_sent"].is_null());
    // Nothing stored is no result.
    assert_eq!(NetResultRecord::from_json(&json!({})), None);
}

/// Each end's result is its end's record alone.
#[test]
fn an_end_result_is_its_ends_record() {
    let h: HostRecord = round_trips(host());
    assert_eq!(h.peer.as_deref(), Some("127.0.0.1:40000"));
    let c: ControllerRecord = round_trips(controller());
    assert_eq!(c.miss_causes.map(|m| m.host), Some(28));
}

#[test]
fn a_net_config_reads_back_with_what_the_lifecycle_added() {
    let described = json!({
        "transport": "UDP over loopback (127.0.0.1), controller and host in this process",
        "duration_s": 10.0, "reference_duration_s": 0.0, "warmup_s": 1.0,
        "pads_pressed": [0, 1, 2, 3, 4, 5, 6, 7],
        "pad": {"x": 0.5, "y": 0.5, "pressure": f64::from(0.8_f32)},
        "workers": 0, "poll": "block", "host_cpus": null, "controller_cpus": [2, 3],
        "deadline_ns": 1_405_896, "packet_interval_ns": 45_351, "block_period_ns": 725_624,
        "link": null, "stream": null});
    let c: NetConfigRecord = round_trips(described.clone());
    assert_eq!(c.pad.map(|p| p.pressure), Some(0.8));
    assert!(!c.over_netns());
    assert_eq!((c.load.as_ref(), c.host_cell.as_ref()), (None, None));
    // Stored: with the load, the cells and the host's cell (none: `null`).
    let mut stored = described;
    stored["load"] = json!("none");
    stored["repeat"] = json!(2);
    stored["cells"] = json!([{"name": "audio", "kind": "dedicated"}]);
    stored["host_cell"] = Value::Null;
    stored["link"] = json!({"mbps": 1000.0, "reserve_mbps": null, "by": "mclock"});
    stored["stream"] = json!({"mbps": null});
    let c: NetConfigRecord = round_trips(stored);
    assert_eq!(c.host_cell, Some(None));
    assert_eq!(c.link.map(|l| l.by), Some(LinkBy::Service));
    assert_eq!(c.load.as_deref(), Some("none"));
    // A run from before links and streams lacks their keys.
    let mut older = c.to_json();
    let map = older.as_object_mut().unwrap();
    map.remove("link");
    map.remove("stream");
    let c = NetConfigRecord::from_json(&older).expect("reads");
    assert_eq!((c.link, c.stream), (None, None));
}

#[test]
fn an_ends_configuration_is_told_by_its_role() {
    let respond = json!({"role": "respond", "bind": "127.0.0.1:9700", "peer": null,
        "synth": true, "workers": 2, "poll": "spin", "cpus": [1], "warmup_s": 1.0,
        "duration_s": null, "deadline_ns": 1_405_896});
    let r: NetEndConfig = round_trips(respond);
    assert_eq!(r.role(), "respond");
    let emulate = json!({"role": "emulate", "host": "10.0.0.2:9700", "bind": "0.0.0.0:9701",
        "pads": 8, "x": 0.5, "y": 0.5, "pressure": f64::from(0.8_f32), "cpus": null,
        "duration_s": 2.0, "warmup_s": 1.0, "deadline_ns": 1_405_896});
    let e: NetEndConfig = round_trips(emulate);
    assert!(matches!(
        e,
        NetEndConfig::Emulate(EmulateConfig { pads: 8, .. })
    ));
    // A run of both ends is no end's.
    let both = json!({"transport": "UDP over loopback", "duration_s": 1.0});
    assert_eq!(NetEndConfig::from_json(&both), None);
}
