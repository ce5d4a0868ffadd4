//! What the two ends of a two-machine network run measure (`net respond`, `net
//! emulate`), in the form [`crate::end_run`] stores: measurements, flags, result, error.

use std::net::UdpSocket;
use std::sync::atomic::AtomicBool;

use netaudio::{controller, host};
use results::Measurement;
use serde_json::{json, Value};

use crate::Context;

/// What an end measured: its measurements, validity flags, result and error.
pub type Measured = (Vec<Measurement>, Value, Value, Option<String>);

/// The responding end: serves `socket` with `config` until `stop` is raised; with
/// `synth` false it answers silence (its measurements are the `_reference` ones).
pub fn respond(
    config: &host::HostConfig,
    socket: UdpSocket,
    stop: &AtomicBool,
    synth: bool,
) -> Measured {
    let outcome: probes::net::HostOutcome = host::serve(config, socket, stop, 1 << 20);
    let suffix = if synth { "" } else { "_reference" };
    let ms = probes::net::host_measurements(&outcome, suffix);
    let flags = json!({"realtime": outcome.net_thread.is_realtime() && outcome.worker_threads.iter().all(|g| g.is_realtime()),
                   "kernel_timestamps": outcome.kernel_timestamps});
    let d = &outcome.counters.drops;
    let result = json!({"answered": outcome.answered, "misses": outcome.misses,
    "answered_in_warmup": outcome.answered_in_warmup, "kernel_dropped": outcome.kernel_dropped,
    "send_dropped": outcome.send_dropped, "blocks_incomplete": outcome.counters.blocks_incomplete,
    "drops": {"malformed": d.wrong_size + d.bad_magic + d.unknown_version + d.unknown_kind + d.bad_index + d.non_finite,
              "duplicate": d.duplicate, "stale": d.stale, "foreign": d.foreign},
    "net_thread": outcome.net_thread.granted.to_string()});
    (ms, flags, result, outcome.error)
}

/// The emulating end: the controller sends from `socket` with `config`, its first
/// packet due in 20 ms, until its blocks are sent or the stop flag is raised. Blocks sent
/// and none answered is the error `no_answer` words.
pub fn emulate(
    ctx: &Context,
    config: &controller::ControllerConfig,
    socket: UdpSocket,
    no_answer: impl FnOnce() -> String,
) -> Measured {
    let o: probes::net::ControllerOutcome = controller::run(
        config,
        socket,
        engine::clock::monotonic_ns() + 20_000_000,
        &ctx.stop,
    );
    let ms = probes::net::controller_measurements(&o, "");
    let flags = json!({"realtime": o.sender_thread.is_realtime() && o.receiver_thread.as_ref().is_some_and(|g| g.is_realtime()),
                   "kernel_timestamps": o.kernel_timestamps});
    let result = json!({"blocks_sent": o.blocks_sent, "on_time": o.on_time, "late": o.late, "lost": o.lost,
    "packets_sent": o.packets_sent, "packets_refused": o.packets_refused,
    "duplicate_answers": o.duplicate_answers, "unknown_answers": o.unknown_answers,
    "malformed_answers": o.malformed.total()});
    let error = o
        .error
        .clone()
        .or_else(|| (o.blocks_sent > 0 && o.on_time + o.late == 0).then(no_answer));
    (ms, flags, result, error)
}
