//! What the two ends of a two-machine network run measure (`net respond`, `net
//! emulate`), in the form [`crate::end_run`] stores: measurements, flags, result, error.

use std::net::UdpSocket;
use std::sync::atomic::AtomicBool;

use netaudio::{controller, host};
use results::records::Record;
use results::Measurement;
use serde_json::{json, Value};

use crate::Context;

/// What an end measured, as [`crate::end_run`] stores it.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Its measurements.
    pub measurements: Vec<Measurement>,
    /// Validity flags.
    pub flags: Value,
    /// Counters and grants.
    pub result: Value,
    /// Why it measured nothing, or could not go on.
    pub error: Option<String>,
    /// Nothing was exchanged with the other end (no datagram came to the host, no block
    /// left the controller): stopped so, it measured nothing and nothing is stored.
    pub nothing_exchanged: bool,
}

/// The responding end: serves `socket` with `config` until `stop` is raised; with
/// `synth` false it answers silence (its measurements are the `_reference` ones). A host
/// that counted no block measured nothing: the error `nothing_answered` words from what
/// it did get.
pub fn respond(
    config: &host::HostConfig,
    socket: UdpSocket,
    stop: &AtomicBool,
    synth: bool,
    nothing_answered: impl FnOnce(&probes::net::HostOutcome) -> String,
) -> Measured {
    let outcome: probes::net::HostOutcome = host::serve(config, socket, stop, 1 << 20);
    let suffix = if synth { "" } else { "_reference" };
    let ms = probes::net::host_measurements(&outcome, suffix);
    let flags = json!({"realtime": outcome.net_thread.is_realtime() && outcome.worker_threads.iter().all(|g| g.is_realtime()),
                   "kernel_timestamps": outcome.kernel_timestamps});
    let result = probes::net::host_record(&outcome).to_json();
    let error = outcome
        .error
        .clone()
        .or_else(|| (outcome.blocks_answered() == 0).then(|| nothing_answered(&outcome)));
    let c = &outcome.counters;
    let came = c.packets_accepted + c.drops.total() + outcome.kernel_dropped;
    Measured {
        measurements: ms,
        flags,
        result,
        error,
        nothing_exchanged: came == 0,
    }
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
                   "kernel_timestamps": o.kernel_timestamps,
                   "sender_late_blocks": o.blocks_sent_late});
    let result = probes::net::controller_record(&o).to_json();
    let error = o
        .error
        .clone()
        .or_else(|| (o.blocks_sent > 0 && o.answers_received() == 0).then(no_answer));
    Measured {
        measurements: ms,
        flags,
        result,
        error,
        nothing_exchanged: o.blocks_sent == 0,
    }
}
