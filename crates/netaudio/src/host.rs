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

use crate::misses::HostShares;
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
    /// answer the first sender that proves to be a controller ([`Latch`]).
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
    /// The blocks answered but not counted.
    pub warmup: Warmup,
}

/// Which blocks the host answers without counting them: the warm-up, by block number,
/// the controller's schedule, and never by when a block happens to arrive. A
/// controller that sent late delays its blocks, not the warm-up's end, so both ends of
/// a run count the same blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Warmup {
    /// Blocks numbered before this one (serial-number order): the controller's first
    /// counted block, when the host knows its schedule (both ends in one process).
    BeforeBlock(u32),
    /// The first this many blocks of the stream, counted in block numbers from the first
    /// block of the controller the host answers (a controller whose schedule it does
    /// not know, run with the same warm-up).
    FirstBlocks(u64),
}

impl Warmup {
    /// Whether block `block` is counted, in a stream whose first block was `first`.
    fn counts(self, block: u32, first: u32) -> bool {
        let from = self.first_counted(first);
        (block.wrapping_sub(from) as i32) >= 0
    }

    /// The first counted block, in a stream whose first block was `first`.
    pub fn first_counted(self, first: u32) -> u32 {
        match self {
            Warmup::BeforeBlock(b) => b,
            Warmup::FirstBlocks(n) => first.wrapping_add(n.min(u64::from(u32::MAX)) as u32),
        }
    }
}

/// How long a confirmed sender may fall silent before the host, without a configured
/// peer, follows another (a controller restarted from another port): 0.74 s, the
/// assembler's resync gap ([`wire::RESYNC_GAP_BLOCKS`] blocks).
pub const PEER_SILENCE_NS: u64 = wire::RESYNC_GAP_BLOCKS as u64 * wire::BLOCK_PERIOD_NS;

/// Whom the host answers. With a configured peer, that one alone. Without one it does
/// what a media receiver that learns its source does (RFC 3550's probation of a new
/// source; a symmetric-RTP "latch" with strict source checking): it follows the newest
/// sender of a valid packet until one proves to be a controller by completing a whole
/// block (16 packets, 0.73 ms of a controller's stream), and from then on treats every
/// other sender as foreign. A stray datagram, however well formed, completes no block,
/// so it holds the stream only until the controller's next packet; a confirmed
/// controller is let go only after [`PEER_SILENCE_NS`] of silence. (An off-path sender
/// that streams whole valid blocks before the controller starts is indistinguishable
/// from one: name the controller with `peer` where that matters.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Latch {
    /// The configured peer.
    Configured(SocketAddr),
    /// Nobody yet, or the sender followed until it completes a block.
    Following(Option<SocketAddr>),
    /// The sender that completed a block, and when it was last heard.
    Confirmed {
        /// Its address.
        peer: SocketAddr,
        /// The arrival of its last datagram, ns.
        last_heard_ns: u64,
    },
}

impl Latch {
    /// The address answers go to now.
    pub fn peer(&self) -> Option<SocketAddr> {
        match *self {
            Latch::Configured(p) | Latch::Confirmed { peer: p, .. } => Some(p),
            Latch::Following(p) => p,
        }
    }
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
    /// Counted blocks (numbered from `counted_from_block` on) whose answer the kernel
    /// took: the answers that left this host. What the controller can receive.
    pub answers_sent: u64,
    /// Counted blocks whose answer the kernel would not take (its queue full): answered
    /// and timed, but the answer never left.
    pub answers_refused: u64,
    /// Blocks answered during the warm-up (sent or refused): not counted.
    pub answers_in_warmup: u64,
    /// The first block counted (by number, the controller's schedule); `None` when no
    /// controller was answered.
    pub counted_from_block: Option<u32>,
    /// The controller answered at the end (the configured peer, or the sender confirmed).
    pub peer: Option<SocketAddr>,
    /// Times a confirmed sender fell silent and the host followed another (no configured
    /// peer).
    pub peer_changes: u64,
    /// Counted blocks answered (sent or refused) whose response `t2 - t1` exceeded
    /// [`DEADLINE_NS`]: the host's own misses, whatever became of the answer.
    pub responses_past_deadline: u64,
    /// Counted blocks whose response was below their own gathering time (impossible for
    /// a correct clock; kept as a check).
    pub below_gathering: u64,
    /// Counted blocks answered in less than [`SHORT_RESPONSE_NS`]: faster than 16
    /// packets can be sent at the controller's rate, so their packets came in a burst
    /// (a controller catching up after it was late), not from a fast host.
    pub short_responses: u64,
    /// Datagrams the kernel dropped because the socket's receive queue was full
    /// (`SO_RXQ_OVFL`), while this host served.
    pub kernel_dropped: u64,
    /// The assembler's counters (drops by reason, complete/incomplete blocks).
    pub counters: AssemblerCounters,
    /// Arrival times came from the kernel's timestamps (else from user space).
    pub kernel_timestamps: bool,
    /// The network thread's policy as granted.
    pub net_thread: SchedGrant,
    /// The network thread's time on a CPU and waiting for one while it served.
    pub net_thread_sched: Option<engine::rt::SchedStat>,
    /// Each worker's policy as granted.
    pub worker_threads: Vec<SchedGrant>,
    /// An error that ended the loop early, if any.
    pub error: Option<String>,
    /// (t1, response ns) of every counted block, for the series (pre-sized; the first
    /// `series_capacity` blocks).
    pub series: Vec<(u64, u64)>,
}

impl<H> HostOutcome<H> {
    /// Counted blocks answered, their answer sent or refused: every block the host timed
    /// (its `response` histogram's count).
    pub fn blocks_answered(&self) -> u64 {
        self.answers_sent + self.answers_refused
    }
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
    last_packet_sender_ns: u64,
    /// After the warm-up, by its number.
    counted: bool,
}

/// The histograms and counters of the blocks served.
struct Tally<H> {
    response: H,
    after_last: H,
    synth: H,
    gathering: H,
    series: Vec<(u64, u64)>,
    answers_sent: u64,
    answers_refused: u64,
    answers_in_warmup: u64,
    past_deadline: u64,
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
            answers_sent: 0,
            answers_refused: 0,
            answers_in_warmup: 0,
            past_deadline: 0,
            below: 0,
            short: 0,
        }
    }

    /// The outcome: the blocks counted, `rx`'s datagrams, the threads' grants and the
    /// error that ended the loop.
    fn into_outcome(
        self,
        rx: Receiver,
        threads: (SchedGrant, Option<engine::rt::SchedStat>, Vec<SchedGrant>),
        error: Option<String>,
    ) -> HostOutcome<H> {
        let (net_thread, net_thread_sched, worker_threads) = threads;
        HostOutcome {
            response: self.response,
            after_last_packet: self.after_last,
            synth: self.synth,
            gathering: self.gathering,
            answers_sent: self.answers_sent,
            answers_refused: self.answers_refused,
            answers_in_warmup: self.answers_in_warmup,
            counted_from_block: rx
                .stream_first_block
                .map(|first| rx.warmup.first_counted(first)),
            peer: rx.latch.peer().filter(|_| rx.stream_first_block.is_some()),
            peer_changes: rx.peer_changes,
            responses_past_deadline: self.past_deadline,
            below_gathering: self.below,
            short_responses: self.short,
            // The socket is this host's own, so its counter started at 0.
            kernel_dropped: u64::from(rx.last_drop_count),
            counters: rx.assembler.counters(),
            kernel_timestamps: rx.all_kernel,
            net_thread,
            net_thread_sched,
            worker_threads,
            error,
            series: self.series,
        }
    }

    /// Counts one block answered at `t2` after the warm-up, its synth started at
    /// `synth_start`, its answer taken by the kernel (`sent`) or refused. Real-time
    /// safe.
    fn count(&mut self, block: &BlockTimes, t2: u64, synth_start: u64, sent: bool) {
        if sent {
            self.answers_sent += 1;
        } else {
            self.answers_refused += 1;
        }
        let t = t2.saturating_sub(block.first_arrival_ns);
        self.response.record(t);
        self.after_last
            .record(t2.saturating_sub(block.last_arrival_ns));
        self.synth.record(t2.saturating_sub(synth_start));
        let gather = block.last_arrival_ns.saturating_sub(block.first_arrival_ns);
        self.gathering.record(gather);
        if t > DEADLINE_NS {
            self.past_deadline += 1;
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
    latch: Latch,
    assembler: BlockAssembler,
    pads: [Pad; OBJECTS],
    all_kernel: bool,
    last_drop_count: u32,
    warmup: Warmup,
    /// The number of the first block of the stream followed (its first packet placed).
    stream_first_block: Option<u32>,
    peer_changes: u64,
}

impl Receiver {
    /// Takes one datagram: drops it by reason, or adds it to its block; when that
    /// completes the block, the pads' state at its last frame and its times. Real-time
    /// safe.
    fn accept(&mut self, d: &udp::Datagram<'_>) -> Option<BlockTimes> {
        let Some(from) = d.from else {
            self.assembler.record_drop(DropReason::Foreign);
            return None;
        };
        let other_sender = match self.latch {
            Latch::Configured(p) => p != from,
            Latch::Confirmed {
                peer,
                last_heard_ns,
            } => peer != from && d.arrival_ns.saturating_sub(last_heard_ns) <= PEER_SILENCE_NS,
            Latch::Following(_) => false,
        };
        if other_sender {
            self.assembler.record_drop(DropReason::Foreign);
            return None;
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
            Ok(Packet::Input(p)) => p,
            Ok(Packet::Output(_)) => {
                self.assembler.record_drop(DropReason::UnknownKind);
                return None;
            }
            Err(e) => {
                self.assembler.record_drop(e.kind());
                return None;
            }
        };
        self.follow(from, d.arrival_ns);
        let first = *self.stream_first_block.get_or_insert(packet.header.block);
        let block = self.assembler.push(&packet, d.arrival_ns)?;
        if let Latch::Following(Some(peer)) = self.latch {
            // A whole block: this sender is a controller.
            self.latch = Latch::Confirmed {
                peer,
                last_heard_ns: d.arrival_ns,
            };
        }
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
            last_packet_sender_ns: block.last_packet_sender_ns,
            counted: self.warmup.counts(block.block, first),
        })
    }

    /// A valid input packet from `from` at `arrival_ns`: the latch follows it, or a
    /// confirmed controller is heard again ([`Latch`]). Leaving a sender never
    /// confirmed forgets its packets; leaving a confirmed one that fell silent starts
    /// a new stream.
    fn follow(&mut self, from: SocketAddr, arrival_ns: u64) {
        match &mut self.latch {
            Latch::Configured(_) => {}
            Latch::Confirmed {
                peer,
                last_heard_ns,
            } if *peer == from => *last_heard_ns = arrival_ns,
            Latch::Following(Some(p)) if *p == from => {}
            Latch::Following(followed) => {
                if followed.is_some() {
                    self.assembler.abandon();
                    self.stream_first_block = None;
                }
                self.latch = Latch::Following(Some(from));
            }
            Latch::Confirmed { .. } => {
                // The confirmed controller fell silent (`accept` let this one through).
                self.assembler.abandon();
                self.stream_first_block = None;
                self.peer_changes += 1;
                self.latch = Latch::Following(Some(from));
            }
        }
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
    serve_signalling(config, socket, stop, series_capacity, None, None)
}

/// [`serve`], raising `ready` once its threads run at their policy on their CPUs, in
/// their cell, and it is about to receive: a caller that starts the controller beside
/// it waits for that, so a host thread that a busy CPU has not yet let run (it starts
/// at an ordinary policy, beside real-time threads) is not left out of the run. With
/// `shares`, every block's way to the host and the host's own share are published
/// there before its answer leaves, for a controller in the same process
/// ([`crate::misses`]).
pub fn serve_signalling<H: Histogram>(
    config: &HostConfig,
    socket: UdpSocket,
    stop: &AtomicBool,
    series_capacity: usize,
    ready: Option<&AtomicBool>,
    shares: Option<&HostShares>,
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
    if let Some(shares) = shares {
        // SAFETY: gettid has no preconditions.
        shares.name_thread(crate::misses::HOST_THREAD, unsafe { libc::gettid() });
    }
    let sched_before = engine::rt::SchedStat::current_thread();
    if let Some(ready) = ready {
        ready.store(true, Ordering::Release);
    }
    let mut rx = Receiver {
        latch: config
            .peer
            .map_or(Latch::Following(None), Latch::Configured),
        assembler: BlockAssembler::new(),
        pads: [Pad::default(); OBJECTS],
        all_kernel: kernel_timestamps,
        last_drop_count: 0,
        warmup: config.warmup,
        stream_first_block: None,
        peer_changes: 0,
    };
    let mut answer = [0u8; OUTPUT_PACKET_BYTES];
    let mut seq = 0u32;
    let mut offset_refreshed = monotonic_ns();
    let mut error = (!group_refusals.is_empty())
        .then(|| format!("joining the cell: {}", group_refusals.join("; ")));
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
            if let Some(shares) = shares {
                shares.publish(
                    block.block,
                    block
                        .last_arrival_ns
                        .saturating_sub(block.last_packet_sender_ns),
                    t2.saturating_sub(block.last_arrival_ns),
                );
            }
            let Some(to) = rx.latch.peer() else { continue };
            let sent = match udp::send_to(&socket, &answer, to) {
                Ok(sent) => sent,
                Err(e) => {
                    error = Some(format!("sending the answer to {to}: {e}"));
                    break 'serve;
                }
            };
            if !block.counted {
                tally.answers_in_warmup += 1;
                continue;
            }
            tally.count(&block, t2, synth_start, sent);
        }
    }
    let net_thread_sched = engine::rt::SchedStat::current_thread()
        .zip(sched_before)
        .map(|(after, before)| after.since(before));
    if let Some(shares) = shares {
        for tid in pool.tids() {
            shares.name_thread("synth worker", tid);
        }
    }
    let worker_threads = pool.finish().into_iter().map(|rt| rt.sched).collect();
    rx.assembler.finish();
    // Datagrams dropped after the last one read are in the socket's count alone.
    if let Some(count) = udp::dropped_so_far(&socket) {
        rx.last_drop_count = rx.last_drop_count.max(count);
    }
    let threads = (rt.sched, net_thread_sched, worker_threads);
    tally.into_outcome(rx, threads, error)
}

/// Receive timestamps (returns whether the kernel gives them), the drop counter, a
/// 4 MiB receive queue, and for [`PollMode::Block`] a 50 ms timeout to see `stop`.
/// [`serve`] does it first; a caller that starts `serve` on a thread of its own calls it
/// before, so datagrams that arrive before that thread first runs (a busy machine) wait
/// in a queue of full size, and one it cannot hold is counted.
pub fn prepare_socket(socket: &UdpSocket, poll: PollMode) -> bool {
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
