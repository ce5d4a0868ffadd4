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
pub mod mclock;
pub mod netns;
pub mod service;
pub mod udp;
pub mod wire;

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
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
    /// The host's runtime in a cell: its threads join the cell's groups and take its
    /// policy and CPUs (instead of `policy` and `host_cpus`).
    pub host_cell: Option<crate::cell::partition::PlacedCell>,
    /// The controller-to-host direction shaped to a capacity, with or without a
    /// reservation for the audio flow.
    pub link: Option<LinkShaping>,
    /// An abusive data stream from the controller's side to a sink application beside
    /// the host (the study's Figure 8), sharing the link with the audio flow.
    pub stream: Option<StreamConfig>,
}

impl NetConfig {
    /// The defaults: `duration` of synth after a 1 s warm-up, no reference phase, 8 pads
    /// pressed at (0.5, 0.5, 0.8), the network thread running the synth and blocking in
    /// `recvmmsg`, SCHED_FIFO 70, over loopback, no cells, no shaping, no interference.
    pub fn new(duration: Duration) -> NetConfig {
        NetConfig {
            duration,
            reference_duration: Duration::ZERO,
            warmup: Duration::from_secs(1),
            input: controller::fixed_input(8, 0.5, 0.5, 0.8),
            workers: 0,
            poll: host::PollMode::Block,
            policy: Policy::Fifo { priority: 70 },
            host_cpus: None,
            controller_cpus: None,
            flood_mbps: None,
            netns: false,
            host_cell: None,
            link: None,
            stream: None,
        }
    }
}

/// Who reserves bandwidth on the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReserveBy {
    /// The kernel: `tc` HTB on the controller's veth (needs `netns`).
    Tc,
    /// audiolat's user-level network service: FIFO without a reservation, mClock with.
    Service,
}

impl std::fmt::Display for ReserveBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ReserveBy::Tc => "tc",
            ReserveBy::Service => "mclock",
        })
    }
}

/// The controller-to-host direction, shaped.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkShaping {
    /// The link's capacity, Mbit/s (the study's 1 Gbit/s).
    pub mbps: f64,
    /// Guaranteed to the audio flow, Mbit/s; `None`: no guarantee.
    pub reserve_mbps: Option<f64>,
    /// Who shapes and reserves.
    pub by: ReserveBy,
}

/// The abusive stream.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamConfig {
    /// Offered rate, Mbit/s of payload; `None`: one and a half times the link's capacity
    /// (1000 without a shaped link): more than the link takes.
    pub mbps: Option<u32>,
    /// Cgroup `tasks` files the sink's thread joins (its cell).
    pub sink_groups: Vec<std::path::PathBuf>,
}

/// What the abusive stream did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamOutcome {
    /// Datagrams the sender handed over (to the kernel or the service).
    pub sent: u64,
    /// Of those, refused at once (a full queue).
    pub refused: u64,
    /// Offered Mbit/s (payload).
    pub offered_mbps: f64,
    /// Datagrams the sink received.
    pub received: u64,
    /// Mbit/s of payload the sink received: what the link let through.
    pub received_mbps: f64,
}

/// Payload of the stream's datagrams (a full Ethernet frame with the headers).
pub const STREAM_DATAGRAM: usize = 1472;

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
    /// The abusive stream, if one ran.
    pub stream: Option<StreamOutcome>,
    /// The user-level service, if it carried the controller's packets.
    pub service: Option<service::ServiceOutcome>,
    /// The HTB classes' counters on the controller's link, if `tc` shaped it.
    pub tc_classes: Option<Value>,
}

/// Sends the abusive stream at `mbps` until `stop`, in bursts every half millisecond,
/// through `via` (the service) or straight to the kernel (`socket` connected to the sink:
/// with UDP segmentation offload 64 KiB a buffer and 64 buffers a system call, which
/// fills a gigabit link on a small VM; without it, 64 datagrams a system call).
fn stream_send(
    socket: &UdpSocket,
    mbps: f64,
    mut via: Option<service::FlowTx>,
    stop: &AtomicBool,
) -> (u64, u64, f64) {
    let junk = [0x5au8; STREAM_DATAGRAM];
    let mut gso = via.is_none() && udp::set_segmentation(socket, STREAM_DATAGRAM as u16);
    let per_buffer = udp::gso_segments_max(STREAM_DATAGRAM);
    let big = vec![0x5au8; STREAM_DATAGRAM * per_buffer];
    let per_ms = mbps * 1e6 / 8.0 / STREAM_DATAGRAM as f64 / 1000.0;
    let start = monotonic_ns();
    let (mut sent, mut refused) = (0u64, 0u64);
    let mut due = 0.0f64;
    while !stop.load(Ordering::Relaxed) {
        let elapsed_ms = (monotonic_ns() - start) as f64 / 1e6;
        due = due.max(per_ms * elapsed_ms);
        // Catch up at most 10 ms of backlog: a sender that was descheduled does not
        // then burst its whole debt.
        due = due.min((sent + refused) as f64 + per_ms * 10.0);
        while ((sent + refused) as f64) < due && !stop.load(Ordering::Relaxed) {
            let want = (due - (sent + refused) as f64).ceil() as usize;
            match via.as_mut() {
                Some(tx) => {
                    if tx.send(&junk) {
                        sent += 1;
                    } else {
                        refused += 1;
                    }
                }
                None if gso => {
                    // Whole 64 KiB buffers, then one of the remainder.
                    let (buffers, rest) = (want / per_buffer, want % per_buffer);
                    let result = if buffers > 0 {
                        udp::send_repeated(socket, &big, buffers).map(|n| n * per_buffer)
                    } else {
                        udp::send_repeated(socket, &big[..rest * STREAM_DATAGRAM], 1)
                            .map(|n| n * rest)
                    };
                    match result {
                        Ok(0) => break,
                        Ok(n) => sent += n as u64,
                        // A path that cannot segment (EIO, EINVAL): one datagram a buffer.
                        Err(_) => {
                            gso = false;
                            udp::set_segmentation(socket, 0);
                        }
                    }
                }
                None => match udp::send_repeated(socket, &junk, want) {
                    // The kernel's queue is full: what the link does not take waits.
                    Ok(0) | Err(_) => break,
                    Ok(n) => sent += n as u64,
                },
            }
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    let seconds = (monotonic_ns() - start) as f64 / 1e9;
    (
        sent,
        refused,
        (sent + refused) as f64 * STREAM_DATAGRAM as f64 * 8.0 / 1e6 / seconds.max(1e-9),
    )
}

/// The sink application: receives and counts until `stop`.
fn stream_sink(socket: UdpSocket, groups: &[std::path::PathBuf], stop: &AtomicBool) -> (u64, f64) {
    let _ = crate::cell::join_groups(groups);
    udp::set_receive_buffer(&socket, 8 << 20);
    let _ = socket.set_read_timeout(Some(Duration::from_millis(50)));
    let mut batch = udp::RecvBatch::new();
    let start = monotonic_ns();
    let (mut received, mut bytes) = (0u64, 0u64);
    while !stop.load(Ordering::Relaxed) {
        let n = batch.recv(&socket, true).unwrap_or(0);
        for i in 0..n {
            if let Some(d) = batch.get(i) {
                received += 1;
                bytes += d.bytes.len() as u64;
            }
        }
    }
    let seconds = (monotonic_ns() - start) as f64 / 1e9;
    (received, bytes as f64 * 8.0 / 1e6 / seconds.max(1e-9))
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
    let stream_sockets = match &config.stream {
        Some(_) => Some((socket(netns::End::Controller)?, socket(netns::End::Host)?)),
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
    let (host_policy, host_cpus, groups) = match &config.host_cell {
        Some(cell) => (
            cell.cell.policy,
            Some(cell.cpus.clone()),
            cell.tasks_files(),
        ),
        None => (config.policy, config.host_cpus.clone(), Vec::new()),
    };
    let host_config = host::HostConfig {
        peer: Some(controller_addr),
        synth,
        workers: config.workers,
        policy: host_policy,
        cpus: host_cpus,
        groups,
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
    let host_stop = Arc::new(AtomicBool::new(false));
    let series = blocks_in(duration) as usize + 16;
    // The link's shaping: the kernel's classes, or the user-level service.
    let mut tc_shaped = false;
    if let Some(shape) = config.link {
        if shape.by == ReserveBy::Tc {
            let pair = link.ok_or_else(|| {
                NetError::Config(
                    "tc shaping needs --netns: it shapes the veth link between the namespaces"
                        .into(),
                )
            })?;
            if shape.reserve_mbps.is_some() {
                udp::set_priority(&controller_socket, netns::RESERVED_CLASS_PRIORITY).map_err(
                    |e| {
                        NetError::Config(format!(
                            "SO_PRIORITY for the reserved class: {e} (needs CAP_NET_ADMIN)"
                        ))
                    },
                )?;
            }
            tc_shaped = true;
            let _ = pair;
        }
    }
    let stream_mbps = config.stream.as_ref().map(|st| {
        st.mbps
            .map_or_else(|| config.link.map_or(1000.0, |l| l.mbps * 1.5), f64::from)
    });
    let (stream_send_socket, sink_addr, sink_socket) = match stream_sockets {
        Some((send, sink)) => {
            // Enough send buffer to keep the link's queue full.
            udp::set_send_buffer(&send, 8 << 20);
            let addr = sink
                .local_addr()
                .map_err(|e| NetError::Config(e.to_string()))?;
            send.connect(addr)
                .map_err(|e| NetError::Config(format!("connecting the stream to its sink: {e}")))?;
            (Some(send), Some(addr), Some(sink))
        }
        None => (None, None, None),
    };
    let mut service_thread = None;
    let (mut controller_tx, mut stream_tx) = (None, None);
    if let Some(
        shape @ LinkShaping {
            by: ReserveBy::Service,
            ..
        },
    ) = config.link
    {
        let mut outs = vec![service::FlowOut {
            socket: controller_socket
                .try_clone()
                .map_err(|e| NetError::Config(e.to_string()))?,
            to: host_addr,
        }];
        if let (Some(sock), Some(addr)) = (&stream_send_socket, sink_addr) {
            outs.push(service::FlowOut {
                socket: sock
                    .try_clone()
                    .map_err(|e| NetError::Config(e.to_string()))?,
                to: addr,
            });
        }
        let discipline = match shape.reserve_mbps {
            None => service::Discipline::Fifo,
            Some(r) => {
                let mut specs = vec![mclock::FlowSpec {
                    reservation_bps: r * 1e6,
                    weight: 1.0,
                    limit_bps: f64::INFINITY,
                }];
                if outs.len() > 1 {
                    specs.push(mclock::FlowSpec {
                        reservation_bps: 0.0,
                        weight: 1.0,
                        limit_bps: f64::INFINITY,
                    });
                }
                service::Discipline::MClock(specs)
            }
        };
        let svc = service::ServiceConfig {
            link_mbps: shape.mbps,
            // The kernel's device queue, 1000 datagrams.
            queue: 1000,
            discipline,
        };
        let (mut txs, handle) =
            service::spawn(&svc, outs, host_stop.clone()).map_err(NetError::Config)?;
        if txs.len() > 1 {
            stream_tx = txs.pop();
        }
        controller_tx = txs.pop();
        service_thread = Some(handle);
    }
    let (host, controller, flooded, streamed) = std::thread::scope(|scope| {
        let host_stop_ref: &AtomicBool = &host_stop;
        let host = scope.spawn(|| host::serve(&host_config, host_socket, host_stop_ref, series));
        let flooder = config.flood_mbps.zip(flood_socket).map(|(mbps, socket)| {
            scope.spawn(move || flood(socket, host_addr, mbps, host_stop_ref))
        });
        let sink = sink_socket.map(|sock| {
            let groups = config
                .stream
                .as_ref()
                .map(|st| st.sink_groups.clone())
                .unwrap_or_default();
            scope.spawn(move || stream_sink(sock, &groups, host_stop_ref))
        });
        let streamer = match (&stream_send_socket, sink_addr, stream_mbps) {
            (Some(sock), Some(_), Some(mbps)) => {
                let tx = stream_tx.take();
                Some(scope.spawn(move || stream_send(sock, mbps, tx, host_stop_ref)))
            }
            _ => None,
        };
        let controller = controller::run_via(
            &controller_config,
            controller_socket,
            start_ns,
            stop,
            controller_tx.take(),
        );
        host_stop.store(true, Ordering::Relaxed);
        let streamed = match (
            streamer.and_then(|s| s.join().ok()),
            sink.and_then(|s| s.join().ok()),
        ) {
            (Some((sent, refused, offered_mbps)), Some((received, received_mbps))) => {
                Some(StreamOutcome {
                    sent,
                    refused,
                    offered_mbps,
                    received,
                    received_mbps,
                })
            }
            _ => None,
        };
        (
            host.join(),
            controller,
            flooder.and_then(|f| f.join().ok()),
            streamed,
        )
    });
    let service = service_thread.and_then(|h| h.join().ok());
    let tc_classes = match (tc_shaped, link) {
        (true, Some(pair)) => Some(pair.class_stats(netns::End::Controller)),
        _ => None,
    };
    let host = host.map_err(|_| NetError::Config("the host thread panicked".into()))?;
    Ok(Phase {
        host,
        controller,
        flood: flooded,
        stream: streamed,
        service,
        tc_classes,
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
    if config.link.is_some_and(|l| l.by == ReserveBy::Tc) && !config.netns {
        return Err(NetError::Config(
            "tc shaping needs --netns: it shapes the veth link between the two namespaces".into(),
        ));
    }
    let link = if config.netns {
        let pair = netns::NetnsPair::create()?;
        if let Some(
            shape @ LinkShaping {
                by: ReserveBy::Tc, ..
            },
        ) = config.link
        {
            pair.shape(netns::End::Controller, shape.mbps, shape.reserve_mbps)?;
        }
        Some(pair)
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
            "short_response_ns": host::SHORT_RESPONSE_NS,
            "stream_datagram_bytes": STREAM_DATAGRAM,
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
        "gathering_ns_median": h.gathering.summary().map(|s| s.p50),
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
