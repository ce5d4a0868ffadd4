//! Network audio: a multitouch controller that streams gesture data as audio-rate UDP
//! and a host that must answer every block within a hard deadline (the Tessellation
//! study: Colmenares, Peters et al., "A Multicore Operating System with QoS Guarantees
//! for Network Audio Applications", J. Audio Eng. Soc. 61(4), 2013, with the SLABS
//! controller).
//!
//! The controller sends one packet every 2 frames at 44.1 kHz (45.35 µs): 2 frames × 32
//! pads × (x, y, pressure). Sixteen packets make a block of 32 frames (0.7256 ms); the
//! host answers each block with one packet of 32 frames × 8 output channels. Times on
//! one block, as the study names them:
//!
//! - `t0`: the controller hands the block's first packet (index 0) to the network
//!   (its `sender_time_ns`);
//! - `t1`: the host receives the first packet of the block to arrive
//!   ([`wire::AssembledBlock::first_arrival_ns`]);
//! - `t2`: the host hands its answer to the network (the answer's `sender_time_ns`);
//! - `tf`: the answer arrives at the controller.
//!
//! `tf − t0` must stay under [`wire::DEADLINE_NS`] (1.4059 ms, 62 frames); `t2 − t1` is
//! the host's share, what the study measured in its network driver.
//!
//! [`wire`] holds the packet format (normative text: `docs/net-protocol.md`), the
//! host's [`wire::BlockAssembler`] and the controller's [`wire::AnswerMatcher`].
//!
//! Real-time contract: [`wire::parse`], the encoders, [`wire::BlockAssembler::push`] and
//! everything on [`wire::AnswerMatcher`] allocate, lock, print and panic on nothing,
//! whatever bytes arrive; malformed, duplicate and late packets become counters. The
//! constructors (`new`) belong before the stream starts: they do not allocate either, but
//! build about 25 KiB on the stack. Debug-build tests run the hot path under
//! `assert_no_alloc`.

pub mod controller;
pub mod host;
pub mod netns;
pub mod udp;
pub mod wire;

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use engine::clock::monotonic_ns;
use engine::rt::Policy;

use results::{Measurement, Series};
use serde_json::{json, Value};

use crate::steal::{StealSampler, StealTimeline};

/// One `audiolat net` run: the controller and the host in this process, over loopback.
#[derive(Clone, Debug, PartialEq)]
pub struct NetConfig {
    /// Measured time of the synth phase (after the warm-up).
    pub duration: Duration,
    /// Measured time of the reference phase (a host that answers without synthesis),
    /// run first; zero skips it.
    pub reference_duration: Duration,
    /// Warm-up before each phase's counted blocks (the study's 1 s).
    pub warmup: Duration,
    /// The controlled input.
    pub input: controller::PadInput,
    /// Synth workers on the host (0: its network thread runs the synth).
    pub workers: usize,
    /// How the host's network thread waits.
    pub poll: host::PollMode,
    /// Policy of every thread (host and controller).
    pub policy: Policy,
    /// CPUs of the host's threads.
    pub host_cpus: Option<Vec<usize>>,
    /// CPUs of the controller's threads.
    pub controller_cpus: Option<Vec<usize>>,
    /// An abusive UDP stream at this many Mbit/s towards the host, from a third socket
    /// (the study's abusive streaming application); the host counts it as foreign.
    pub flood_mbps: Option<u32>,
    /// Put the two ends in two network namespaces joined by a veth pair (root), instead
    /// of loopback.
    pub netns: bool,
}

/// Blocks in `duration` at the controller's rate.
pub fn blocks_in(duration: Duration) -> u64 {
    (duration.as_nanos() as u64).div_ceil(wire::BLOCK_PERIOD_NS)
}

/// One phase: what both ends measured.
#[derive(Debug)]
pub struct Phase {
    /// The host's side (`t2 - t1`).
    pub host: host::HostOutcome,
    /// The controller's side (`tf - t0`, pacing).
    pub controller: controller::ControllerOutcome,
    /// Flood datagrams sent and the rate they achieved (Mbit/s), if a flood ran.
    pub flood: Option<(u64, f64)>,
}

/// Datagram size of the flood: a full Ethernet payload.
const FLOOD_DATAGRAM: usize = 1400;

/// Sends junk to `host` at `mbps` until `stop`, in bursts every millisecond. Returns
/// datagrams sent and the Mbit/s achieved.
fn flood(socket: UdpSocket, host: SocketAddr, mbps: u32, stop: &AtomicBool) -> (u64, f64) {
    let junk = [0xa5u8; FLOOD_DATAGRAM];
    let per_ms = f64::from(mbps) * 1e6 / 8.0 / FLOOD_DATAGRAM as f64 / 1000.0;
    let start = monotonic_ns();
    let mut sent = 0u64;
    let mut due = 0.0f64;
    while !stop.load(Ordering::Relaxed) {
        let elapsed_ms = (monotonic_ns() - start) as f64 / 1e6;
        due = due.max(per_ms * elapsed_ms);
        while (sent as f64) < due {
            if socket.send_to(&junk, host).is_err() {
                break;
            }
            sent += 1;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let seconds = (monotonic_ns() - start) as f64 / 1e9;
    (
        sent,
        sent as f64 * FLOOD_DATAGRAM as f64 * 8.0 / 1e6 / seconds.max(1e-9),
    )
}

/// Both phases and the host steal over the run.
#[derive(Debug)]
pub struct NetOutcome {
    /// The reference phase (no synthesis), if run.
    pub reference: Option<Phase>,
    /// The synth phase, if it was reached.
    pub synth: Option<Phase>,
    /// Stopped by the caller before the end.
    pub interrupted: bool,
    /// Host steal during the run.
    pub steal: StealTimeline,
    /// Run start and end, monotonic ns.
    pub start_ns: u64,
    /// Run end.
    pub end_ns: u64,
}

/// Why a run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// A socket could not be bound.
    #[error("cannot bind UDP {addr}: {source}{hint}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The system's error.
        source: std::io::Error,
        /// What to do about it.
        hint: &'static str,
    },
    /// A bad setting.
    #[error("{0}")]
    Config(String),
}

/// Binds a UDP socket with a hint for the usual failures.
pub fn bind(addr: SocketAddr) -> Result<UdpSocket, NetError> {
    UdpSocket::bind(addr).map_err(|source| {
        let hint = match source.raw_os_error() {
            Some(libc::EADDRINUSE) => {
                ": the port is in use (another audiolat or program holds it); choose another port"
            }
            Some(libc::EADDRNOTAVAIL) => {
                ": no interface has that address; use one of this machine's addresses (ip -br addr)"
            }
            Some(libc::EACCES) => ": ports below 1024 need root",
            _ => "",
        };
        NetError::Bind { addr, source, hint }
    })
}

fn phase(
    config: &NetConfig,
    link: Option<&netns::NetnsPair>,
    synth: bool,
    duration: Duration,
    stop: &AtomicBool,
) -> Result<Phase, NetError> {
    let loopback = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let socket = |end: netns::End| match link {
        Some(pair) => pair.bind(end, 0),
        None => bind(loopback),
    };
    let host_socket = socket(netns::End::Host)?;
    let controller_socket = socket(netns::End::Controller)?;
    let flood_socket = match config.flood_mbps {
        Some(_) => Some(socket(netns::End::Controller)?),
        None => None,
    };
    let host_addr = host_socket
        .local_addr()
        .map_err(|e| NetError::Config(e.to_string()))?;
    let controller_addr = controller_socket
        .local_addr()
        .map_err(|e| NetError::Config(e.to_string()))?;
    let warmup_blocks = blocks_in(config.warmup);
    let start_ns = monotonic_ns() + 50_000_000;
    let counted_from_ns =
        start_ns + wire::packet_due_ns(warmup_blocks * wire::PACKETS_PER_BLOCK as u64);
    let host_config = host::HostConfig {
        peer: Some(controller_addr),
        synth,
        workers: config.workers,
        policy: config.policy,
        cpus: config.host_cpus.clone(),
        poll: config.poll,
        count_from_ns: counted_from_ns,
        warmup_after_first_ns: 0,
    };
    let controller_config = controller::ControllerConfig {
        host: host_addr,
        input: config.input,
        blocks: blocks_in(duration),
        warmup_blocks,
        drain_ns: 100_000_000,
        policy: config.policy,
        cpus: config.controller_cpus.clone(),
    };
    let host_stop = AtomicBool::new(false);
    let series = blocks_in(duration) as usize + 16;
    let (host, controller, flooded) = std::thread::scope(|scope| {
        let host = scope.spawn(|| host::serve(&host_config, host_socket, &host_stop, series));
        let flooder = config.flood_mbps.zip(flood_socket).map(|(mbps, socket)| {
            let host_stop = &host_stop;
            scope.spawn(move || flood(socket, host_addr, mbps, host_stop))
        });
        let controller = controller::run(&controller_config, controller_socket, start_ns, stop);
        host_stop.store(true, Ordering::Relaxed);
        (host.join(), controller, flooder.and_then(|f| f.join().ok()))
    });
    let host = host.map_err(|_| NetError::Config("the host thread panicked".into()))?;
    Ok(Phase {
        host,
        controller,
        flood: flooded,
    })
}

/// Runs the reference phase (if any), then the synth phase. Raising `stop` ends the
/// phase running and skips the next; what was measured is kept.
pub fn run(config: &NetConfig, stop: &AtomicBool) -> Result<NetOutcome, NetError> {
    if config.workers > 64 {
        return Err(NetError::Config(format!(
            "--workers {}: use 0 (the network thread runs the synth) to 64",
            config.workers
        )));
    }
    let link = if config.netns {
        Some(netns::NetnsPair::create()?)
    } else {
        None
    };
    let steal = StealSampler::start(Duration::from_millis(50), None);
    let start_ns = monotonic_ns();
    let reference = if config.reference_duration.is_zero() {
        None
    } else {
        Some(phase(
            config,
            link.as_ref(),
            false,
            config.reference_duration,
            stop,
        )?)
    };
    let synth = if stop.load(Ordering::Relaxed) {
        None
    } else {
        Some(phase(config, link.as_ref(), true, config.duration, stop)?)
    };
    drop(link);
    Ok(NetOutcome {
        reference,
        synth,
        interrupted: stop.load(Ordering::Relaxed),
        steal: steal.finish(),
        start_ns,
        end_ns: monotonic_ns(),
    })
}

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
        let cpus = engine::rt::online_cpus().len().max(1) as u64;
        let span = self.steal.span_ns().max(1) * cpus;
        let kernel = self
            .reference
            .iter()
            .chain(self.synth.iter())
            .all(|p| p.host.kernel_timestamps);
        json!({
            "realtime": self.realtime(),
            "interrupted": self.interrupted,
            "host_steal_ns": steal_ns,
            "host_steal_percent": 100.0 * steal_ns as f64 / span as f64,
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
            "reference": self.reference.as_ref().map(phase),
            "synth": self.synth.as_ref().map(phase),
        })
    }
}

/// The host's measurements: response time `t2 - t1` against the deadline, its share after
/// the last packet, and (for the synth phase, `suffix` empty) the synth's time.
pub fn host_measurements(h: &host::HostOutcome, suffix: &str) -> Vec<Measurement> {
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
            h.response.clone(),
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
        "gathering_ns_median": h.gathering.percentile(50.0).0,
    });
    out.push(m);
    out.push(Measurement::from_histogram(
            "net",
            &format!("after_last_packet{suffix}"),
            "t2 minus the arrival of the block's last packet: the host's own share (synth and send), without the gathering",
            h.after_last_packet.clone(),
        ));
    if suffix.is_empty() {
        out.push(Measurement::from_histogram(
                "net",
                "synth_time",
                "time in the Migrator synth per block (32 objects x 100 oscillators, pressed pads only), on the host",
                h.synth.clone(),
            ));
    }
    out
}

/// The controller's measurements: end to end `tf - t0` against the deadline, and its
/// pacing error.
pub fn controller_measurements(
    c: &controller::ControllerOutcome,
    suffix: &str,
) -> Vec<Measurement> {
    let mut out = Vec::new();
    let mut e = Measurement::from_histogram(
            "net",
            &format!("end_to_end{suffix}"),
            "tf - t0 per block at the controller: from handing the block's first packet to the kernel to the answer's arrival",
            c.end_to_end.clone(),
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
            c.pacing.clone(),
        );
    pacing.detail = json!({"packets_sent": c.packets_sent, "packets_refused": c.packets_refused});
    out.push(pacing);
    out
}
