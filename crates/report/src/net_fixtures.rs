//! A network run's stored configuration and result in the shape the net probe writes
//! (`results::records::net`), for tests: what a test sets over the least an older run
//! stored.

use serde_json::{json, Value};

/// `base` with `with`'s keys set over it.
fn over(mut base: Value, with: Value) -> Value {
    if let (Some(base), Some(with)) = (base.as_object_mut(), with.as_object()) {
        base.extend(with.clone());
    }
    base
}

/// No datagram dropped, under every reason's name.
pub fn no_drops() -> Value {
    json!({"wrong_size": 0, "bad_magic": 0, "unknown_version": 0, "unknown_kind": 0,
        "bad_index": 0, "non_finite": 0, "duplicate": 0, "stale": 0, "foreign": 0,
        "unconfirmed": 0})
}

/// Drops: `with` over none.
pub fn drops(with: Value) -> Value {
    over(no_drops(), with)
}

/// A host's record: `with` over what every run stored.
pub fn host(with: Value) -> Value {
    over(
        json!({"blocks_complete": 0, "blocks_incomplete": 0, "packets_missing": 0,
            "reordered": 0, "drops": no_drops(), "net_thread": "SCHED_FIFO 70",
            "workers": [], "error": null}),
        with,
    )
}

/// A controller's record: `with` over what every run stored.
pub fn controller(with: Value) -> Value {
    over(
        json!({"blocks_sent": 0, "packets_sent": 0, "packets_refused": 0,
            "duplicate_answers": 0, "unknown_answers": 0, "sender_thread": "SCHED_FIFO 70",
            "error": null}),
        with,
    )
}

/// A phase of `host` and `controller`, with `with` (traffic beside them) over it.
pub fn phase(host: Value, controller: Value, with: Value) -> Value {
    over(json!({"host": host, "controller": controller}), with)
}

/// A run's result: `with` (its phases) over the deadline.
pub fn result(with: Value) -> Value {
    over(json!({"deadline_ns": 1_405_896}), with)
}

/// A run's configuration: `with` over the defaults' (over loopback, 8 pads).
pub fn config(with: Value) -> Value {
    over(
        json!({"transport": "UDP over loopback (127.0.0.1), controller and host in this process",
            "duration_s": 1.0, "reference_duration_s": 0.0, "warmup_s": 1.0,
            "pads_pressed": [0, 1, 2, 3, 4, 5, 6, 7], "pad": null, "workers": 0,
            "poll": "block", "host_cpus": null, "controller_cpus": null,
            "deadline_ns": 1_405_896, "packet_interval_ns": 45_351,
            "block_period_ns": 725_624, "link": null, "stream": null}),
        with,
    )
}
