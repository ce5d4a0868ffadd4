//! One phase of a network run: the sockets, the link's shaping (the kernel's classes or
//! the user-level service), then the host, the controller and the interference, together
//! until the controller is done.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use engine::clock::monotonic_ns;
use engine::rt::Policy;
use netaudio::{bind, controller, host, mclock, misses, netns, service, traffic, udp, NetError};

use super::{blocks_in, LinkShaping, NetConfig, Phase, ReserveBy, StreamOutcome};

/// The sockets of one phase, bound at their ends.
struct Sockets {
    host: UdpSocket,
    controller: UdpSocket,
    flood: Option<UdpSocket>,
    /// The stream's sender (connected to the sink), the sink's address and socket.
    stream: Option<(UdpSocket, SocketAddr, UdpSocket)>,
    host_addr: SocketAddr,
    controller_addr: SocketAddr,
}

/// The user-level service carrying the controller's packets (and the stream's), if the
/// link is shaped by it.
#[derive(Default)]
struct Service {
    controller_tx: Option<service::FlowTx>,
    stream_tx: Option<service::FlowTx>,
    thread: Option<JoinHandle<service::ServiceOutcome>>,
}

/// What the threads of a phase return.
type EndsOutcome = (
    std::thread::Result<super::HostOutcome>,
    super::ControllerOutcome,
    Option<(u64, f64)>,
    Option<StreamOutcome>,
);

fn config_error(e: impl std::fmt::Display) -> NetError {
    NetError::Config(e.to_string())
}

/// Binds every socket the phase needs, on loopback or at the ends of `link`.
fn open_sockets(config: &NetConfig, link: Option<&netns::NetnsPair>) -> Result<Sockets, NetError> {
    let loopback = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let socket = |end: netns::End| match link {
        Some(pair) => pair.bind(end, 0),
        None => bind(loopback),
    };
    let host = socket(netns::End::Host)?;
    let controller = socket(netns::End::Controller)?;
    let flood = match config.flood_mbps {
        Some(_) => Some(socket(netns::End::Controller)?),
        None => None,
    };
    let stream_sockets = match &config.stream {
        Some(_) => Some((socket(netns::End::Controller)?, socket(netns::End::Host)?)),
        None => None,
    };
    let host_addr = host.local_addr().map_err(config_error)?;
    let controller_addr = controller.local_addr().map_err(config_error)?;
    let stream = match stream_sockets {
        Some((send, sink)) => {
            // Enough send buffer to keep the link's queue full.
            udp::set_send_buffer(&send, 8 << 20);
            let addr = sink.local_addr().map_err(config_error)?;
            send.connect(addr)
                .map_err(|e| NetError::Config(format!("connecting the stream to its sink: {e}")))?;
            Some((send, addr, sink))
        }
        None => None,
    };
    Ok(Sockets {
        host,
        controller,
        flood,
        stream,
        host_addr,
        controller_addr,
    })
}

/// The two ends' configurations: the host in its cell (or at the run's policy and CPUs),
/// counting from the controller's first counted block.
fn end_configs(
    config: &NetConfig,
    sockets: &Sockets,
    synth: bool,
    duration: Duration,
) -> (host::HostConfig, controller::ControllerConfig) {
    let warmup_blocks = blocks_in(config.warmup);
    let (host_policy, host_cpus, groups) = match &config.host_cell {
        Some(cell) => (
            cell.cell.policy,
            Some(cell.cpus.clone()),
            cell.tasks_files(),
        ),
        None => (config.policy, config.host_cpus.clone(), Vec::new()),
    };
    let host_config = host::HostConfig {
        peer: Some(sockets.controller_addr),
        synth,
        workers: config.workers,
        policy: host_policy,
        cpus: host_cpus,
        groups,
        poll: config.poll,
        // The controller's schedule is known here: count the blocks it counts.
        warmup: host::Warmup::BeforeBlock(warmup_blocks.min(u64::from(u32::MAX)) as u32),
    };
    let controller_config = controller::ControllerConfig {
        host: sockets.host_addr,
        input: config.input,
        blocks: blocks_in(duration),
        warmup_blocks,
        drain_ns: 100_000_000,
        policy: config.policy,
        cpus: config.controller_cpus.clone(),
    };
    (host_config, controller_config)
}

/// With `tc` shaping the link, a reservation puts the controller's packets in the
/// reserved class. Returns whether `tc` shapes it.
fn tc_shaping(
    config: &NetConfig,
    link: Option<&netns::NetnsPair>,
    controller_socket: &UdpSocket,
) -> Result<bool, NetError> {
    let Some(shape) = config.link.filter(|s| s.by == ReserveBy::Tc) else {
        return Ok(false);
    };
    if link.is_none() {
        return Err(NetError::Config(
            "tc shaping needs network namespaces: it shapes the veth link between the namespaces"
                .into(),
        ));
    }
    if shape.reserve_mbps.is_some() {
        udp::set_priority(controller_socket, netns::RESERVED_CLASS_PRIORITY).map_err(|e| {
            NetError::Config(format!(
                "SO_PRIORITY for the reserved class: {e} (needs CAP_NET_ADMIN)"
            ))
        })?;
    }
    Ok(true)
}

/// Starts the user-level service when it shapes the link: FIFO without a reservation,
/// mClock with one (the audio flow reserved, the stream's flow best effort).
fn start_service(
    config: &NetConfig,
    sockets: &Sockets,
    stop: &Arc<AtomicBool>,
) -> Result<Service, NetError> {
    let Some(
        shape @ LinkShaping {
            by: ReserveBy::Service,
            ..
        },
    ) = config.link
    else {
        return Ok(Service::default());
    };
    let mut outs = vec![service::FlowOut {
        socket: sockets.controller.try_clone().map_err(config_error)?,
        to: sockets.host_addr,
    }];
    if let Some((sock, addr, _)) = &sockets.stream {
        outs.push(service::FlowOut {
            socket: sock.try_clone().map_err(config_error)?,
            to: *addr,
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
        // It carries the controller's packets: real-time as the controller's threads,
        // one step below them (at a fixed priority), so the bulk it moves never holds
        // up the audio threads' short wake-ups while every best-effort task waits for it.
        policy: match config.policy {
            Policy::Fifo { priority } => Policy::Fifo {
                priority: priority.saturating_sub(1).max(1),
            },
            Policy::RoundRobin { priority } => Policy::RoundRobin {
                priority: priority.saturating_sub(1).max(1),
            },
            other => other,
        },
        cpus: config.controller_cpus.clone(),
    };
    let (mut txs, handle) = service::spawn(&svc, outs, stop.clone()).map_err(NetError::Config)?;
    let stream_tx = if txs.len() > 1 { txs.pop() } else { None };
    Ok(Service {
        controller_tx: txs.pop(),
        stream_tx,
        thread: Some(handle),
    })
}

/// Runs one phase: the host answering with the synth (`synth`) or silence, for
/// `duration` after the warm-up.
pub(super) fn run_phase(
    config: &NetConfig,
    link: Option<&netns::NetnsPair>,
    synth: bool,
    duration: Duration,
    stop: &AtomicBool,
    why: Option<&crate::why::Session>,
) -> Result<Phase, NetError> {
    let sockets = open_sockets(config, link)?;
    let start_ns = monotonic_ns() + 50_000_000;
    let (host_config, controller_config) = end_configs(config, &sockets, synth, duration);
    let softirq = SoftirqWait::start();
    let host_stop = Arc::new(AtomicBool::new(false));
    let series = blocks_in(duration) as usize + 16;
    // The link's shaping: the kernel's classes, or the user-level service.
    let tc_shaped = tc_shaping(config, link, &sockets.controller)?;
    let stream_mbps = config.stream.as_ref().map(|st| {
        st.mbps
            .map_or_else(|| config.link.map_or(1000.0, |l| l.mbps * 1.5), f64::from)
    });
    let mut service = start_service(config, &sockets, &host_stop)?;
    let ends = Ends {
        host: &host_config,
        controller: &controller_config,
        start_ns,
        series,
        stream_mbps,
    };
    let (host, controller, flooded, streamed) =
        run_ends(config, &ends, sockets, &mut service, &host_stop, stop, why);
    let service = service.thread.and_then(|h| h.join().ok());
    let tc_classes = match (tc_shaped, link) {
        (true, Some(pair)) => pair.class_stats(netns::End::Controller),
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
        kernel_softirq: softirq.finish(),
    })
}

/// The kernel's softirq threads' counters at the start of a phase: network work the
/// kernel defers (a shaped queue's packets, a busy veth) waits in them for a CPU.
struct SoftirqWait(Vec<(i32, engine::rt::SchedStat)>);

impl SoftirqWait {
    fn start() -> SoftirqWait {
        SoftirqWait(
            engine::rt::softirq_threads()
                .into_iter()
                .filter_map(|(_, tid)| Some((tid, engine::rt::SchedStat::of_task(tid)?)))
                .collect(),
        )
    }

    /// Their time on a CPU and waiting for one since the start, summed (`None` where
    /// the kernel keeps no counters).
    fn finish(self) -> Option<engine::rt::SchedStat> {
        let mut sum: Option<engine::rt::SchedStat> = None;
        for (tid, before) in self.0 {
            let Some(d) = engine::rt::SchedStat::of_task(tid).map(|after| after.since(before))
            else {
                continue;
            };
            let s = sum.get_or_insert_with(Default::default);
            s.on_cpu_ns += d.on_cpu_ns;
            s.run_queue_wait_ns += d.run_queue_wait_ns;
            s.timeslices += d.timeslices;
        }
        sum
    }
}

/// What the threads of a phase run with.
struct Ends<'a> {
    host: &'a host::HostConfig,
    controller: &'a controller::ControllerConfig,
    start_ns: u64,
    series: usize,
    stream_mbps: Option<f64>,
}

/// Runs the host, the flood, the stream and its sink beside the controller (on this
/// thread) until the controller is done, then stops them.
fn run_ends(
    config: &NetConfig,
    ends: &Ends,
    sockets: Sockets,
    service: &mut Service,
    host_stop: &AtomicBool,
    stop: &AtomicBool,
    why: Option<&crate::why::Session>,
) -> EndsOutcome {
    let Sockets {
        host: host_socket,
        controller: controller_socket,
        flood: flood_socket,
        stream,
        host_addr,
        ..
    } = sockets;
    let (stream_send_socket, sink_socket) = match stream {
        Some((send, _, sink)) => (Some(send), Some(sink)),
        None => (None, None),
    };
    host::prepare_socket(&host_socket, ends.host.poll);
    let host_ready = AtomicBool::new(false);
    // Both ends read one clock here: the host says where each block's time went before
    // its answer, and the controller counts each late block by cause.
    let host_shares = misses::HostShares::new();
    std::thread::scope(|scope| {
        // Named, so a trace (`--why`, `perf`, `top -H`) tells it from the others.
        let host = std::thread::Builder::new()
            .name("audiolat-host".into())
            .spawn_scoped(scope, || {
                host::serve_signalling(
                    ends.host,
                    host_socket,
                    host_stop,
                    ends.series,
                    Some(&host_ready),
                    Some(&host_shares),
                )
            })
            .expect("spawning the host's thread");
        let flooder = config.flood_mbps.zip(flood_socket).map(|(mbps, socket)| {
            scope.spawn(move || traffic::flood(socket, host_addr, mbps, host_stop))
        });
        let sink = sink_socket.map(|sock| {
            let groups = config
                .stream
                .as_ref()
                .map(|st| st.sink_groups.clone())
                .unwrap_or_default();
            scope.spawn(move || traffic::stream_sink(sock, &groups, host_stop))
        });
        let streamer = match (&stream_send_socket, ends.stream_mbps) {
            (Some(sock), Some(mbps)) => {
                let tx = service.stream_tx.take();
                Some(scope.spawn(move || traffic::stream_send(sock, mbps, tx, host_stop)))
            }
            _ => None,
        };
        // The controller starts once the host serves: on a busy machine the host's
        // thread, which starts at an ordinary policy, may not run before the
        // controller's real-time threads have sent the whole run. Blocks are counted
        // by number on both ends, so a later start moves no block in or out.
        while !host_ready.load(Ordering::Acquire)
            && !host.is_finished()
            && !stop.load(Ordering::Relaxed)
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        let start_ns = ends.start_ns.max(monotonic_ns() + 20_000_000);
        let controller = controller::run_via(
            ends.controller,
            controller_socket,
            start_ns,
            stop,
            service.controller_tx.take(),
            Some(&host_shares),
            why.map(crate::why::Session::sender),
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
        let host = host.join();
        if let Some(session) = why {
            let phase = if ends.host.synth {
                "synth"
            } else {
                "reference"
            };
            for (role, tid) in host_shares.threads() {
                session.name_thread(&format!("{role} ({phase} phase)"), tid);
            }
        }
        (
            host,
            controller,
            flooder.and_then(|f| f.join().ok()),
            streamed,
        )
    })
}
