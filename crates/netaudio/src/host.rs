//! The host (`audiolat net respond`): receives the controller's packets, gathers each
//! 16-packet block, runs the Migrator synth on it and sends the block's answer, timing
//! every block from `t1` (the kernel's receive timestamp of its first packet) to `t2`
//! (just before the answer is handed to the kernel), as the Tessellation study timed it.
//!
//! The runtime mirrors the study's: one network thread polls the socket (`recvmmsg`,
//! `MSG_DONTWAIT` when [`PollMode::Spin`]), gathers and answers; the synth's objects are
//! split over the network thread and `workers` threads that spin on the next block
//! ([`crate::workers`]: the network thread renders the first part itself while the
//! workers render theirs, then adds theirs; with no workers it runs the whole synth).
//! Every thread gets the requested policy and CPUs; memory is locked by the caller.
//!
//! Real-time contract: after start, the network and worker threads allocate, lock and
//! print nothing; malformed and foreign datagrams become counters. The synth runs in
//! the audio guard (`engine::guard::process_guard`: denormals flushed to zero, and in
//! debug builds the allocation guard), as an audio callback's processor does.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dsp::migrator::{MigratorConfig, Pad, BLOCK_FRAMES, OBJECTS, OUTPUT_CHANNELS};
use engine::clock::monotonic_ns;
use engine::rt::{Policy, SchedGrant, ThreadRt};

use crate::udp::{self, RecvBatch};
use crate::wire::{
    self, AssemblerCounters, BlockAssembler, DropReason, OutputFrames, OutputHeader, Packet,
    DEADLINE_NS, OUTPUT_PACKET_BYTES,
};
use crate::workers::{WorkerPlacement, Workers};
use crate::Histogram;

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

impl std::str::FromStr for PollMode {
    type Err = String;

    /// `block`, `spin` or `periodic` (the [`Display`](std::fmt::Display) spelling).
    fn from_str(s: &str) -> Result<PollMode, String> {
        match s {
            "block" => Ok(PollMode::Block),
            "spin" => Ok(PollMode::Spin),
            "periodic" => Ok(PollMode::Periodic),
            _ => Err("use block, spin or periodic".into()),
        }
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
    /// Worker threads the synth's objects are split over beside the network thread,
    /// which renders a part too (0: the network thread runs the whole synth).
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

/// The histograms and counters of the blocks served.
struct Tally<H> {
    response: H,
    after_last: H,
    synth: H,
    gathering: H,
    series: Vec<(u64, u64)>,
    answered: u64,
    answered_in_warmup: u64,
    misses: u64,
    below: u64,
    short: u64,
}

impl<H: Histogram> Tally<H> {
    /// Allocates the histograms and the series (`series_capacity` blocks).
    fn new(series_capacity: usize) -> Tally<H> {
        Tally {
            response: H::with_bound(HIST_BOUND_NS),
            after_last: H::with_bound(HIST_BOUND_NS),
            synth: H::with_bound(HIST_BOUND_NS),
            gathering: H::with_bound(HIST_BOUND_NS),
            series: Vec::with_capacity(series_capacity),
            answered: 0,
            answered_in_warmup: 0,
            misses: 0,
            below: 0,
            short: 0,
        }
    }

    /// The outcome: the blocks counted, `rx`'s datagrams, the threads' grants and the
    /// error that ended the loop.
    fn into_outcome(
        self,
        rx: Receiver,
        send_dropped: u64,
        net_thread: SchedGrant,
        worker_threads: Vec<SchedGrant>,
        error: Option<String>,
    ) -> HostOutcome<H> {
        HostOutcome {
            response: self.response,
            after_last_packet: self.after_last,
            synth: self.synth,
            gathering: self.gathering,
            answered: self.answered,
            answered_in_warmup: self.answered_in_warmup,
            misses: self.misses,
            below_gathering: self.below,
            short_responses: self.short,
            send_dropped,
            // The socket is this host's own, so its counter started at 0.
            kernel_dropped: u64::from(rx.last_drop_count),
            counters: rx.assembler.counters(),
            kernel_timestamps: rx.all_kernel,
            net_thread,
            worker_threads,
            error,
            series: self.series,
        }
    }

    /// Counts one block answered at `t2` after the warm-up, its synth started at
    /// `synth_start`. Real-time safe.
    fn count(&mut self, block: &BlockTimes, t2: u64, synth_start: u64) {
        self.answered += 1;
        let t = t2.saturating_sub(block.first_arrival_ns);
        self.response.record(t);
        self.after_last
            .record(t2.saturating_sub(block.last_arrival_ns));
        self.synth.record(t2.saturating_sub(synth_start));
        let gather = block.last_arrival_ns.saturating_sub(block.first_arrival_ns);
        self.gathering.record(gather);
        if t > DEADLINE_NS {
            self.misses += 1;
        }
        if t < gather {
            self.below += 1;
        }
        if t < SHORT_RESPONSE_NS {
            self.short += 1;
        }
        if self.series.len() < self.series.capacity() {
            self.series.push((block.first_arrival_ns, t));
        }
    }
}

/// The network thread's state between datagrams.
struct Receiver {
    peer: Option<SocketAddr>,
    assembler: BlockAssembler,
    pads: [Pad; OBJECTS],
    all_kernel: bool,
    last_drop_count: u32,
}

impl Receiver {
    /// Takes one datagram: drops it by reason, or adds it to its block; when that
    /// completes the block, the pads' state at its last frame and its times. Real-time
    /// safe.
    fn accept(&mut self, d: &udp::Datagram<'_>) -> Option<BlockTimes> {
        match (self.peer, d.from) {
            (Some(p), Some(from)) if p != from => {
                self.assembler.record_drop(DropReason::Foreign);
                return None;
            }
            _ => {}
        }
        self.all_kernel &= d.kernel_timestamp;
        if let Some(count) = d.kernel_drops {
            self.last_drop_count = count;
        }
        if d.truncated {
            self.assembler.record_drop(DropReason::WrongSize);
            return None;
        }
        let packet = match wire::parse(d.bytes) {
            Ok(Packet::Input(p)) => {
                // Without a configured peer, the first sender of a valid packet
                // becomes it (junk from anyone else cannot take the stream over).
                if self.peer.is_none() {
                    self.peer = d.from;
                }
                p
            }
            Ok(Packet::Output(_)) => {
                self.assembler.record_drop(DropReason::UnknownKind);
                return None;
            }
            Err(e) => {
                self.assembler.record_drop(e.kind());
                return None;
            }
        };
        let block = self.assembler.push(&packet, d.arrival_ns)?;
        // The pads' state at the block's last frame drives the synth; only that and
        // the block's times are taken out of the assembler (not its 12 KiB of frames).
        for (pad, frame) in self
            .pads
            .iter_mut()
            .zip(block.frames[BLOCK_FRAMES - 1].iter())
        {
            *pad = Pad {
                x: frame.x,
                y: frame.y,
                pressure: frame.pressure,
            };
        }
        Some(BlockTimes {
            block: block.block,
            first_arrival_ns: block.first_arrival_ns,
            last_arrival_ns: block.last_arrival_ns,
            first_packet_sender_ns: block.first_packet_sender_ns,
        })
    }
}

/// Serves on `socket` until `stop` is raised. `series_capacity` blocks of (t1, response)
/// are kept. Allocates before the loop starts, never in it.
///
/// The network thread's real-time loop: receive a batch, assemble, synthesize, answer,
/// count; each step a helper that allocates nothing.
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
    // The reference host answers without the synth: no workers spinning beside it.
    let workers = if config.synth {
        config.workers.min(OBJECTS)
    } else {
        0
    };
    let placement = WorkerPlacement {
        policy: config.policy,
        cpus: (1..=workers).map(cpu_for).collect(),
        groups: config.groups.clone(),
    };
    let mut pool = Workers::start(workers, synth_config, &placement);
    let mut tally = Tally::<H>::new(series_capacity);
    let mut batch = RecvBatch::new();
    let kernel_timestamps = prepare_socket(&socket, config.poll);
    let group_refusals = qos::join_groups(&config.groups);
    let rt = ThreadRt::apply(&config.policy, cpu_for(0).as_deref(), 256 * 1024);
    let mut rx = Receiver {
        peer: config.peer,
        assembler: BlockAssembler::new(),
        pads: [Pad::default(); OBJECTS],
        all_kernel: kernel_timestamps,
        last_drop_count: 0,
    };
    let mut answer = [0u8; OUTPUT_PACKET_BYTES];
    let (mut seq, mut send_dropped) = (0u32, 0u64);
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
            idle(config.poll, &mut batch, &mut offset_refreshed);
            continue;
        }
        for i in 0..n {
            let Some(d) = batch.get(i) else { break };
            let Some(block) = rx.accept(&d) else {
                continue;
            };
            let synth_start = monotonic_ns();
            let mut frames: OutputFrames = [[0.0; OUTPUT_CHANNELS]; BLOCK_FRAMES];
            if config.synth && !pool.synthesize(&rx.pads, &mut frames, stop) {
                break 'serve;
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
            let Some(to) = rx.peer else { continue };
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
                tally.answered_in_warmup += 1;
                continue;
            }
            tally.count(&block, t2, synth_start);
        }
    }
    let worker_threads = pool.finish().into_iter().map(|rt| rt.sched).collect();
    rx.assembler.finish();
    tally.into_outcome(rx, send_dropped, rt.sched, worker_threads, error)
}

/// Receive timestamps (returns whether the kernel gives them), the drop counter, a
/// 4 MiB receive queue, and for [`PollMode::Block`] a 50 ms timeout to see `stop`.
fn prepare_socket(socket: &UdpSocket, poll: PollMode) -> bool {
    let kernel_timestamps = udp::enable_receive_timestamps(socket);
    udp::enable_drop_counter(socket);
    udp::set_receive_buffer(socket, 4 << 20);
    if poll == PollMode::Block {
        let _ = socket.set_read_timeout(Some(Duration::from_millis(50)));
    }
    kernel_timestamps
}

/// Nothing arrived: refresh the realtime-to-monotonic offset once a second, then wait as
/// the poll mode says (spin, yield the period, or nothing: `recvmmsg` slept).
fn idle(poll: PollMode, batch: &mut RecvBatch, offset_refreshed: &mut u64) {
    let now = monotonic_ns();
    if now - *offset_refreshed > 1_000_000_000 {
        batch.realtime_offset_ns = udp::realtime_minus_monotonic_ns();
        *offset_refreshed = now;
    }
    match poll {
        PollMode::Spin => std::hint::spin_loop(),
        // SAFETY: no preconditions.
        PollMode::Periodic => unsafe {
            libc::sched_yield();
        },
        PollMode::Block => {}
    }
}

#[cfg(test)]
mod tests {
    use super::PollMode;

    #[test]
    fn poll_modes_parse_their_own_spelling() {
        for mode in [PollMode::Block, PollMode::Spin, PollMode::Periodic] {
            assert_eq!(mode.to_string().parse::<PollMode>(), Ok(mode));
        }
        assert_eq!(
            "busy".parse::<PollMode>(),
            Err("use block, spin or periodic".into())
        );
    }
}
