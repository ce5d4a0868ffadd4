//! The host (`audiolat net respond`): receives the controller's packets, gathers each
//! 16-packet block, runs the Migrator synth on it and sends the block's answer, timing
//! every block from `t1` (the kernel's receive timestamp of its first packet) to `t2`
//! (just before the answer is handed to the kernel), as the Tessellation study timed it.
//!
//! The runtime mirrors the study's: one network thread polls the socket (`recvmmsg`,
//! `MSG_DONTWAIT` when [`PollMode::Spin`]), gathers and answers; the synth's objects are
//! split over `workers` threads that spin on the next block (or, with no workers, the
//! network thread runs the synth itself). Every thread gets the requested policy and
//! CPUs; memory is locked by the caller.
//!
//! Real-time contract: after start, the network and worker threads allocate, lock and
//! print nothing; malformed and foreign datagrams become counters.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dsp::migrator::{Migrator, MigratorConfig, Pad, BLOCK_FRAMES, OBJECTS, OUTPUT_CHANNELS};
use engine::clock::monotonic_ns;
use engine::rt::{Policy, SchedGrant, ThreadRt};

use crate::udp::{self, RecvBatch};
use crate::Histogram;
use crate::wire::{
    self, AssemblerCounters, BlockAssembler, DropReason, OutputFrames, OutputHeader, Packet,
    DEADLINE_NS, OUTPUT_PACKET_BYTES,
};

/// How the network thread waits for packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollMode {
    /// Poll without blocking, never sleeping (the study's runtime): lowest latency, one
    /// CPU spent.
    Spin,
    /// Sleep in `recvmmsg` until a packet arrives: the usual Linux way (and an
    /// event-triggered cell's: woken by its input).
    Block,
    /// Poll without blocking; when nothing is there, `sched_yield`: under SCHED_DEADLINE
    /// that ends the job until the next period (a time-triggered cell's runtime).
    Periodic,
}

impl std::fmt::Display for PollMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PollMode::Spin => "spin",
            PollMode::Block => "block",
            PollMode::Periodic => "periodic",
        })
    }
}

/// What the host does.
#[derive(Clone, Debug, PartialEq)]
pub struct HostConfig {
    /// Answer only this address; datagrams from others are counted and dropped. `None`:
    /// answer whoever sends (the first sender becomes the peer).
    pub peer: Option<SocketAddr>,
    /// Run the synth (`false`: answer silence at once, the reference responder that
    /// shows what the network path alone costs).
    pub synth: bool,
    /// Worker threads the synth's objects are split over (0: the network thread runs it).
    pub workers: usize,
    /// Scheduling policy of the network and worker threads.
    pub policy: Policy,
    /// CPUs: the network thread takes the first, workers the following ones (cycling);
    /// under SCHED_DEADLINE every thread takes them all (a deadline thread must span its
    /// root domain).
    pub cpus: Option<Vec<usize>>,
    /// Cgroup `tasks` files every thread writes its id to before it starts: a cell's
    /// cpuset and CPU accounting ([`qos::partition::PlacedCell::tasks_files`]).
    pub groups: Vec<std::path::PathBuf>,
    /// How the network thread waits.
    pub poll: PollMode,
    /// Blocks whose first packet arrives before this monotonic time are answered but not
    /// counted (the warm-up).
    pub count_from_ns: u64,
    /// Also leave uncounted the blocks whose first packet arrives within this long of
    /// the first packet served (a warm-up that starts with the controller, whenever it
    /// starts).
    pub warmup_after_first_ns: u64,
}

/// What the host measured, its times in the caller's histograms `H`.
#[derive(Debug)]
pub struct HostOutcome<H> {
    /// `t2 - t1` of every counted block, ns.
    pub response: H,
    /// `t2 -` the arrival of the block's last packet, ns: the host's own share.
    pub after_last_packet: H,
    /// Time in the synth per block, ns.
    pub synth: H,
    /// Arrival of the last packet minus the first, ns (the gathering).
    pub gathering: H,
    /// Blocks answered and counted.
    pub answered: u64,
    /// Blocks answered during the warm-up.
    pub answered_in_warmup: u64,
    /// Counted blocks whose response exceeded [`DEADLINE_NS`].
    pub misses: u64,
    /// Counted blocks whose response was below their own gathering time (impossible for
    /// a correct clock; kept as a check).
    pub below_gathering: u64,
    /// Counted blocks answered in less than [`SHORT_RESPONSE_NS`]: faster than 16
    /// packets can be sent at the controller's rate, so their packets came in a burst
    /// (a controller catching up after it was late), not from a fast host.
    pub short_responses: u64,
    /// Answers the kernel would not take (queue full).
    pub send_dropped: u64,
    /// Datagrams the kernel dropped because the socket's receive queue was full
    /// (`SO_RXQ_OVFL`), while this host served.
    pub kernel_dropped: u64,
    /// The assembler's counters (drops by reason, complete/incomplete blocks).
    pub counters: AssemblerCounters,
    /// Arrival times came from the kernel's timestamps (else from user space).
    pub kernel_timestamps: bool,
    /// The network thread's policy as granted.
    pub net_thread: SchedGrant,
    /// Each worker's policy as granted.
    pub worker_threads: Vec<SchedGrant>,
    /// An error that ended the loop early, if any.
    pub error: Option<String>,
    /// (t1, response ns) of every counted block, for the series (pre-sized; the first
    /// `series_capacity` blocks).
    pub series: Vec<(u64, u64)>,
}

/// 90 % of the 15 packet intervals between a block's first and last packet: a response
/// shorter than this means the packets did not arrive at the controller's pace.
pub const SHORT_RESPONSE_NS: u64 = 15 * wire::PACKET_INTERVAL_NS * 9 / 10;

/// The largest response the histograms hold exactly (beyond: counted as overflow).
const HIST_BOUND_NS: u64 = 10_000_000_000;

/// What the answer and the timing need of an assembled block.
struct BlockTimes {
    block: u32,
    first_arrival_ns: u64,
    last_arrival_ns: u64,
    first_packet_sender_ns: u64,
}

/// Shared between the network thread and one worker.
struct WorkerSlot {
    generation: AtomicU64,
    done: AtomicU64,
    pads: std::cell::UnsafeCell<[Pad; OBJECTS]>,
    out: std::cell::UnsafeCell<[[f32; OUTPUT_CHANNELS]; BLOCK_FRAMES]>,
}

// SAFETY: `pads` is written only by the network thread before it publishes a generation
// (Release) and read by the worker after it sees it (Acquire); `out` is written only by
// the worker before it publishes `done` (Release) and read by the network thread after
// it sees it (Acquire). The generation protocol keeps the two from overlapping.
unsafe impl Sync for WorkerSlot {}

/// Serves on `socket` until `stop` is raised. `series_capacity` blocks of (t1, response)
/// are kept. Allocates before the loop starts, never in it.
pub fn serve<H: Histogram>(
    config: &HostConfig,
    socket: UdpSocket,
    stop: &AtomicBool,
    series_capacity: usize,
) -> HostOutcome<H> {
    let synth_config = MigratorConfig::default();
    let cpu_for = |k: usize| -> Option<Vec<usize>> {
        config
            .cpus
            .as_ref()
            .filter(|c| !c.is_empty())
            .map(|c| match config.policy {
                Policy::Deadline { .. } => c.clone(),
                _ => vec![c[k % c.len()]],
            })
    };
    // Split the objects over the workers as evenly as possible.
    // The reference host answers without the synth: no workers spinning beside it.
    let workers = if config.synth {
        config.workers.min(OBJECTS)
    } else {
        0
    };
    let slots: Vec<Arc<WorkerSlot>> = (0..workers)
        .map(|_| {
            Arc::new(WorkerSlot {
                generation: AtomicU64::new(0),
                done: AtomicU64::new(0),
                pads: std::cell::UnsafeCell::new([Pad::default(); OBJECTS]),
                out: std::cell::UnsafeCell::new([[0.0; OUTPUT_CHANNELS]; BLOCK_FRAMES]),
            })
        })
        .collect();
    let quit = Arc::new(AtomicBool::new(false));
    let (grants_tx, grants_rx) = std::sync::mpsc::channel();
    let mut handles = Vec::new();
    for (w, slot) in slots.iter().enumerate() {
        let from = w * OBJECTS / workers;
        let to = (w + 1) * OBJECTS / workers;
        let mut part = Migrator::with_objects(synth_config, from..to);
        let slot = slot.clone();
        let quit = quit.clone();
        let policy = config.policy;
        let cpus = cpu_for(w + 1);
        let grants_tx = grants_tx.clone();
        let groups = config.groups.clone();
        handles.push(std::thread::spawn(move || {
            qos::join_groups(&groups);
            let rt = ThreadRt::apply(&policy, cpus.as_deref(), 128 * 1024);
            let _ = grants_tx.send((w, rt.sched));
            let mut seen = 0u64;
            let mut idle = 0u32;
            while !quit.load(Ordering::Relaxed) {
                let generation = slot.generation.load(Ordering::Acquire);
                if generation == seen {
                    // Spin (the study's workers never sleep), but after ~50 µs of nothing
                    // let other threads of the same priority, or any at SCHED_OTHER, run.
                    idle += 1;
                    if idle.is_multiple_of(4096) {
                        std::thread::yield_now();
                    } else {
                        std::hint::spin_loop();
                    }
                    continue;
                }
                idle = 0;
                seen = generation;
                // SAFETY: see WorkerSlot: the network thread wrote pads before
                // publishing this generation and waits for `done` before touching out.
                unsafe {
                    let pads = &*slot.pads.get();
                    let out = &mut *slot.out.get();
                    *out = [[0.0; OUTPUT_CHANNELS]; BLOCK_FRAMES];
                    part.process(pads, out);
                }
                slot.done.store(generation, Ordering::Release);
            }
        }));
    }
    drop(grants_tx);
    let mut own_synth = (workers == 0 && config.synth).then(|| Migrator::new(synth_config));
    let mut response = H::with_bound(HIST_BOUND_NS);
    let mut after_last = H::with_bound(HIST_BOUND_NS);
    let mut synth_hist = H::with_bound(HIST_BOUND_NS);
    let mut gathering = H::with_bound(HIST_BOUND_NS);
    let mut series: Vec<(u64, u64)> = Vec::with_capacity(series_capacity);
    let mut batch = RecvBatch::new();
    let mut assembler = BlockAssembler::new();
    let kernel_timestamps = udp::enable_receive_timestamps(&socket);
    udp::enable_drop_counter(&socket);
    let mut last_drop_count: u32 = 0;
    udp::set_receive_buffer(&socket, 4 << 20);
    if config.poll == PollMode::Block {
        let _ = socket.set_read_timeout(Some(Duration::from_millis(50)));
    }
    let group_refusals = qos::join_groups(&config.groups);
    let rt = ThreadRt::apply(&config.policy, cpu_for(0).as_deref(), 256 * 1024);
    let mut peer = config.peer;
    let mut answer = [0u8; OUTPUT_PACKET_BYTES];
    let mut pads = [Pad::default(); OBJECTS];
    let mut generation = 0u64;
    let mut seq = 0u32;
    let (mut answered, mut answered_in_warmup, mut misses, mut below, mut send_dropped) =
        (0, 0, 0, 0, 0);
    let mut short = 0u64;
    let mut all_kernel = kernel_timestamps;
    let mut offset_refreshed = monotonic_ns();
    let mut error = (!group_refusals.is_empty())
        .then(|| format!("joining the cell: {}", group_refusals.join("; ")));
    let mut count_from_ns = config.count_from_ns;
    let mut first_seen = false;
    'serve: while !stop.load(Ordering::Relaxed) {
        let n = match batch.recv(&socket, config.poll == PollMode::Block) {
            Ok(n) => n,
            Err(e) => {
                error = Some(format!("receiving: {e}"));
                break;
            }
        };
        if n == 0 {
            let now = monotonic_ns();
            if now - offset_refreshed > 1_000_000_000 {
                batch.realtime_offset_ns = udp::realtime_minus_monotonic_ns();
                offset_refreshed = now;
            }
            match config.poll {
                PollMode::Spin => std::hint::spin_loop(),
                // SAFETY: no preconditions.
                PollMode::Periodic => unsafe {
                    libc::sched_yield();
                },
                PollMode::Block => {}
            }
            continue;
        }
        for i in 0..n {
            let Some(d) = batch.get(i) else { break };
            match (peer, d.from) {
                (Some(p), Some(from)) if p != from => {
                    assembler.record_drop(DropReason::Foreign);
                    continue;
                }
                _ => {}
            }
            all_kernel &= d.kernel_timestamp;
            if let Some(count) = d.kernel_drops {
                last_drop_count = count;
            }
            if d.truncated {
                assembler.record_drop(DropReason::WrongSize);
                continue;
            }
            let packet = match wire::parse(d.bytes) {
                Ok(Packet::Input(p)) => {
                    // Without a configured peer, the first sender of a valid packet
                    // becomes it (junk from anyone else cannot take the stream over).
                    if peer.is_none() {
                        peer = d.from;
                    }
                    p
                }
                Ok(Packet::Output(_)) => {
                    assembler.record_drop(DropReason::UnknownKind);
                    continue;
                }
                Err(e) => {
                    assembler.record_drop(e.kind());
                    continue;
                }
            };
            let Some(block) = assembler.push(&packet, d.arrival_ns) else {
                continue;
            };
            // The pads' state at the block's last frame drives the synth; only that and
            // the block's times are taken out of the assembler (not its 12 KiB of frames).
            for (pad, frame) in pads.iter_mut().zip(block.frames[BLOCK_FRAMES - 1].iter()) {
                *pad = Pad {
                    x: frame.x,
                    y: frame.y,
                    pressure: frame.pressure,
                };
            }
            let block = BlockTimes {
                block: block.block,
                first_arrival_ns: block.first_arrival_ns,
                last_arrival_ns: block.last_arrival_ns,
                first_packet_sender_ns: block.first_packet_sender_ns,
            };
            let synth_start = monotonic_ns();
            let mut frames: OutputFrames = [[0.0; OUTPUT_CHANNELS]; BLOCK_FRAMES];
            if config.synth {
                if let Some(s) = own_synth.as_mut() {
                    s.process(&pads, &mut frames);
                } else {
                    generation += 1;
                    for slot in &slots {
                        // SAFETY: see WorkerSlot; the worker is idle (its done equals the
                        // previous generation).
                        unsafe { *slot.pads.get() = pads };
                        slot.generation.store(generation, Ordering::Release);
                    }
                    for slot in &slots {
                        let mut waited = 0u32;
                        while slot.done.load(Ordering::Acquire) != generation {
                            if stop.load(Ordering::Relaxed) {
                                break 'serve;
                            }
                            waited += 1;
                            if waited.is_multiple_of(4096) {
                                std::thread::yield_now();
                            } else {
                                std::hint::spin_loop();
                            }
                        }
                        // SAFETY: the worker published done for this generation.
                        let part = unsafe { &*slot.out.get() };
                        for (row, add) in frames.iter_mut().zip(part.iter()) {
                            for (x, y) in row.iter_mut().zip(add.iter()) {
                                *x += y;
                            }
                        }
                    }
                }
            }
            let t2 = monotonic_ns();
            let header = OutputHeader {
                seq,
                block: block.block,
                sender_time_ns: t2,
                echo_time_ns: block.first_packet_sender_ns,
            };
            seq = seq.wrapping_add(1);
            wire::encode_output(&header, &frames, &mut answer);
            let Some(to) = peer else { continue };
            match udp::send_to(&socket, &answer, to) {
                Ok(true) => {}
                Ok(false) => send_dropped += 1,
                Err(e) => {
                    error = Some(format!("sending the answer to {to}: {e}"));
                    break 'serve;
                }
            }
            if !first_seen {
                first_seen = true;
                count_from_ns =
                    count_from_ns.max(block.first_arrival_ns + config.warmup_after_first_ns);
            }
            if block.first_arrival_ns < count_from_ns {
                answered_in_warmup += 1;
                continue;
            }
            answered += 1;
            let t = t2.saturating_sub(block.first_arrival_ns);
            response.record(t);
            after_last.record(t2.saturating_sub(block.last_arrival_ns));
            synth_hist.record(t2.saturating_sub(synth_start));
            let gather = block.last_arrival_ns.saturating_sub(block.first_arrival_ns);
            gathering.record(gather);
            if t > DEADLINE_NS {
                misses += 1;
            }
            if t < gather {
                below += 1;
            }
            if t < SHORT_RESPONSE_NS {
                short += 1;
            }
            if series.len() < series.capacity() {
                series.push((block.first_arrival_ns, t));
            }
        }
    }
    quit.store(true, Ordering::Relaxed);
    for h in handles {
        let _ = h.join();
    }
    let mut worker_threads: Vec<(usize, SchedGrant)> = grants_rx.try_iter().collect();
    worker_threads.sort_by_key(|(w, _)| *w);
    assembler.finish();
    HostOutcome {
        response,
        after_last_packet: after_last,
        synth: synth_hist,
        gathering,
        answered,
        answered_in_warmup,
        misses,
        below_gathering: below,
        short_responses: short,
        send_dropped,
        // The socket is this host's own, so its counter started at 0.
        kernel_dropped: u64::from(last_drop_count),
        counters: assembler.counters(),
        kernel_timestamps: all_kernel,
        net_thread: rt.sched,
        worker_threads: worker_threads.into_iter().map(|(_, g)| g).collect(),
        error,
        series,
    }
}
