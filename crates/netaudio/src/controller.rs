//! The controller (`audiolat net emulate`): a SLABS-like multitouch controller sending
//! one packet every 45.35 µs, 16 per block, at the real rate, with a fixed input (a set
//! of pads at fixed positions and pressures, as the study's controlled input), and
//! timing every block's answer: `tf - t0`, from handing the block's first packet to the
//! kernel to the answer's arrival.
//!
//! The sender is a real-time thread on absolute deadlines (`clock_nanosleep`,
//! TIMER_ABSTIME); it measures its own pacing error (send time minus due time) for every
//! packet, and counts the blocks it sent late itself ([`LATE_SEND_NS`]), so a late
//! sender is never mistaken for a slow host or a lossy network. A second thread receives
//! the answers, from the host's address only.
//!
//! Blocks are counted by their schedule: block `b` is the `b`-th of the run, counted
//! when `b` is past the warm-up's blocks, whenever it was sent or answered. Each counted
//! block sent is one of: answered on time, answered late, answered after the run's end
//! (the drain after the last packet left, judged by the answer's arrival time), or not
//! answered as far as the controller received.
//!
//! Real-time contract: both threads allocate, lock and print nothing once started.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use engine::clock::monotonic_ns;
use engine::rt::{Policy, SchedGrant, ThreadRt};

use crate::misses::{BlockParts, HostShares, MissCauses};
use crate::udp::{self, RecvBatch};
use crate::wire::{
    self, Answer, AnswerMatcher, DropCounters, InputFrames, InputHeader, Packet, PadFrame,
    INPUT_PACKET_BYTES, PACKETS_PER_BLOCK, PADS,
};
use crate::Histogram;

/// The controlled input: every pad's (x, y, pressure), fixed for the run.
pub type PadInput = [PadFrame; PADS];

/// The study's kind of controlled input: `pressed` pads, spread evenly over the 32 (so
/// synth workers, which own contiguous ranges of objects, share the work), at the given
/// position and pressure; the others untouched.
pub fn fixed_input(pressed: usize, x: f32, y: f32, pressure: f32) -> PadInput {
    let mut pads = [PadFrame::ZERO; PADS];
    let pressed = pressed.min(PADS);
    for k in 0..pressed {
        pads[k * PADS / pressed] = PadFrame { x, y, pressure };
    }
    pads
}

/// What the controller does.
#[derive(Clone, Debug, PartialEq)]
pub struct ControllerConfig {
    /// The host's address.
    pub host: SocketAddr,
    /// The pads, held for the whole run.
    pub input: PadInput,
    /// Blocks to send.
    pub blocks: u64,
    /// Blocks sent first that are not counted (the warm-up).
    pub warmup_blocks: u64,
    /// The drain, ns: the run ends this long after the controller's last packet left
    /// (its due time, or later when the controller itself was late), and the
    /// controller listens as long again for answers that come after the end
    /// ([`ControllerOutcome::answers_received_after_end`]); it stops sooner once every
    /// block sent is answered.
    pub drain_ns: u64,
    /// Scheduling policy of the sender and receiver.
    pub policy: Policy,
    /// CPU of the sender (the receiver takes the next one in the list, if any).
    pub cpus: Option<Vec<usize>>,
}

/// A block is sent late by the controller itself when one of its packets leaves more than
/// this after its due time: one block period (32 frames, 725.6 µs), all the slack the
/// 62-frame deadline leaves beyond the 30 frames of gathering, so such a block can miss
/// its deadline by the controller's lateness alone, whatever the host and the network do.
pub const LATE_SEND_NS: u64 = wire::BLOCK_PERIOD_NS;

/// What the controller measured, its times in the caller's histograms `H`.
#[derive(Debug)]
pub struct ControllerOutcome<H> {
    /// Counted blocks sent (numbered from `counted_from_block` on).
    pub blocks_sent: u64,
    /// Of those, blocks the sender itself sent late: one of their packets left more than
    /// [`LATE_SEND_NS`] after its due time.
    pub blocks_sent_late: u64,
    /// The first counted block: the warm-up's blocks come before it.
    pub counted_from_block: u32,
    /// Packets sent (all, warm-up included) and those the kernel would not take.
    pub packets_sent: u64,
    /// Packets the kernel refused (queue full): lost before the wire.
    pub packets_refused: u64,
    /// `tf - t0` of every counted block answered before the run's end (on time or
    /// late), ns.
    pub end_to_end: H,
    /// Pacing error of every packet (send time minus due time), ns.
    pub pacing: H,
    /// Counted blocks whose first answer arrived within
    /// [`DEADLINE_NS`](wire::DEADLINE_NS) of the block's first packet.
    pub answers_received_on_time: u64,
    /// Counted blocks whose first answer arrived after the deadline, before the run's
    /// end.
    pub answers_received_late: u64,
    /// `answers_received_late`, each block under the part of its time that made it late
    /// ([`crate::misses`]); `None` without a host in the same process to say what its
    /// share was.
    pub miss_causes: Option<MissCauses>,
    /// Counted blocks whose first answer arrived after the run's end (the drain after
    /// the last packet left), while the controller still listened: answered, too late
    /// for the run. Not in `end_to_end`.
    pub answers_received_after_end: u64,
    /// Counted blocks sent for which no answer was received: never answered, lost on
    /// the way there or back, or answered after the controller stopped listening. The
    /// controller cannot tell which; the host's `answers_sent` can.
    pub answers_not_received: u64,
    /// Second answers to a block.
    pub duplicate_answers: u64,
    /// Answers from the host to blocks never sent or long gone.
    pub unknown_answers: u64,
    /// Datagrams received and not used, by reason: malformed, or from an address other
    /// than the host's (`foreign`: forged or stray answers, never matched).
    pub dropped_answers: DropCounters,
    /// Datagrams the kernel dropped on the controller's full receive queue until it
    /// stopped listening (`SO_RXQ_OVFL`, and `SO_MEMINFO` at the end): answers its
    /// receiver could not read in time.
    pub answers_dropped_by_kernel: u64,
    /// Blocks whose send time the sender could not hand to the receiver (its ring was
    /// full: the receiver had not run for 3 s); their answers are unknown.
    pub blocks_unrecorded: u64,
    /// The sender's policy as granted.
    pub sender_thread: SchedGrant,
    /// The receiver's policy as granted.
    pub receiver_thread: Option<SchedGrant>,
    /// The sender's time on a CPU and waiting for one.
    pub sender_sched: Option<engine::rt::SchedStat>,
    /// The receiver's time on a CPU and waiting for one.
    pub receiver_sched: Option<engine::rt::SchedStat>,
    /// Answers timed by the kernel's receive timestamp (else user space).
    pub kernel_timestamps: bool,
    /// Monotonic time the first counted block was due.
    pub counted_from_ns: u64,
    /// Monotonic time the run ended (the drain after the last packet left); `None`
    /// when the sender never finished (no receiver, a stop before it).
    pub end_ns: Option<u64>,
    /// An error that ended the run early.
    pub error: Option<String>,
}

impl<H> ControllerOutcome<H> {
    /// Counted blocks whose answer was received: on time, late or after the run's end.
    pub fn answers_received(&self) -> u64 {
        self.answers_received_on_time + self.answers_received_late + self.answers_received_after_end
    }
}

const HIST_BOUND_NS: u64 = 10_000_000_000;

/// Sleeps until the monotonic time `due_ns`, again after a signal interrupts it, unless
/// `stop` was raised. Real-time safe.
fn sleep_until(due_ns: u64, stop: &AtomicBool) {
    while !engine::clock::sleep_until_ns_interruptible(due_ns) && !stop.load(Ordering::Relaxed) {}
}

/// Runs the controller on `socket` (bound, not connected). `start_ns` is when packet 0
/// is due (give the host time to be ready). Ends after `blocks` blocks and the drain,
/// or when `stop` is raised.
pub fn run<H: Histogram>(
    config: &ControllerConfig,
    socket: UdpSocket,
    start_ns: u64,
    stop: &AtomicBool,
) -> ControllerOutcome<H> {
    run_via(config, socket, start_ns, stop, None, None, None)
}

/// What the receiver thread measured.
struct Received<H> {
    sched: SchedGrant,
    sched_stat: Option<engine::rt::SchedStat>,
    end_to_end: H,
    on_time: u64,
    late: u64,
    miss_causes: Option<MissCauses>,
    after_end: u64,
    end_ns: Option<u64>,
    duplicates: u64,
    unknown: u64,
    dropped: DropCounters,
    kernel_dropped: u64,
    all_kernel: bool,
    error: Option<String>,
}

impl<H: Histogram> Received<H> {
    /// Nothing received yet, by a thread granted `sched` (`all_kernel`: the socket
    /// gives kernel receive times; `split`: a host in this process publishes its
    /// shares, so late blocks are counted by cause).
    fn none(sched: SchedGrant, all_kernel: bool, split: bool) -> Received<H> {
        Received {
            sched,
            sched_stat: None,
            end_to_end: H::with_bound(HIST_BOUND_NS),
            on_time: 0,
            late: 0,
            miss_causes: split.then(MissCauses::default),
            after_end: 0,
            end_ns: None,
            duplicates: 0,
            unknown: 0,
            dropped: DropCounters::default(),
            kernel_dropped: 0,
            all_kernel,
            error: None,
        }
    }
}

/// What the sender thread did.
struct Sent<H> {
    sched: SchedGrant,
    sched_stat: Option<engine::rt::SchedStat>,
    pacing: H,
    sent: u64,
    refused: u64,
    counted_blocks: u64,
    counted_late: u64,
    unrecorded: u64,
    error: Option<String>,
}

/// The pacing of the sender: where packet 0 is due and the first counted block.
#[derive(Clone, Copy)]
struct Schedule {
    start_ns: u64,
    counted_from_block: u32,
}

impl Schedule {
    /// Whether block `block` is past the warm-up (serial-number order).
    fn counts(self, block: u32) -> bool {
        (block.wrapping_sub(self.counted_from_block) as i32) >= 0
    }
}

/// The time a thread spent on a CPU and waiting for one since `before`.
fn sched_since(before: Option<engine::rt::SchedStat>) -> Option<engine::rt::SchedStat> {
    engine::rt::SchedStat::current_thread()
        .zip(before)
        .map(|(after, before)| after.since(before))
}

/// The sender's end, as the receiver learns it: raised once the last packet left, with
/// its time.
#[derive(Default)]
struct SenderEnd {
    done: AtomicBool,
    last_packet_ns: AtomicU64,
}

impl SenderEnd {
    /// The last packet left at `at_ns` (or the sender gave up then).
    fn finish(&self, at_ns: u64) {
        self.last_packet_ns.store(at_ns, Ordering::Relaxed);
        self.done.store(true, Ordering::Release);
    }

    /// When the last packet left, once the sender is done.
    fn finished_at(&self) -> Option<u64> {
        self.done
            .load(Ordering::Acquire)
            .then(|| self.last_packet_ns.load(Ordering::Relaxed))
    }
}

/// Batches read without waiting once the controller stops listening: at least the
/// receive queue's 1 MiB of answers, and a bound, so that a sender that never stops
/// cannot hold the controller.
const FINAL_BATCHES: usize = 64;

/// The receiver thread's real-time loop: takes the blocks' send times from `sent_rx`,
/// pairs each answer from the host with its block and times it; a late one is counted
/// by cause from the host's `shares` when it has them. The run ends the drain after the
/// sender's last packet left; answers arriving after that (by their arrival time, not
/// by when this thread read them) are counted after the end. It listens a second drain
/// for them, unless every block sent is answered or `stop` is raised, then reads what
/// is already queued without waiting. Datagrams from any other address are foreign,
/// never matched. Allocates nothing once started.
#[allow(clippy::too_many_arguments)]
fn receive_answers<H: Histogram>(
    config: &ControllerConfig,
    rs: UdpSocket,
    cpus: Option<Vec<usize>>,
    mut sent_rx: rtrb::Consumer<(u32, u64)>,
    schedule: Schedule,
    shares: Option<&HostShares>,
    mut why: Option<trace::MissSender>,
    sender: &SenderEnd,
    stop: &AtomicBool,
) -> Received<H> {
    let rt = ThreadRt::apply(&config.policy, cpus.as_deref(), 128 * 1024);
    let sched_before = engine::rt::SchedStat::current_thread();
    let kernel = udp::enable_receive_timestamps(&rs);
    let mut batch = RecvBatch::new();
    let mut matcher = Box::new(AnswerMatcher::new());
    let mut out = Received::<H>::none(rt.sched, kernel, shares.is_some());
    let mut final_batches = 0;
    loop {
        while let Ok((block, t0)) = sent_rx.pop() {
            matcher.sent(block, t0);
        }
        if out.end_ns.is_none() {
            if let Some(last_packet_ns) = sender.finished_at() {
                // Every block's send time is in the ring before the end is known.
                while let Ok((block, t0)) = sent_rx.pop() {
                    matcher.sent(block, t0);
                }
                out.end_ns = Some(last_packet_ns.saturating_add(config.drain_ns));
            }
        }
        let listening = !stop.load(Ordering::Relaxed)
            && out.end_ns.is_none_or(|end| {
                matcher.waiting() > 0 && monotonic_ns() < end.saturating_add(config.drain_ns)
            });
        if !listening {
            final_batches += 1;
            if final_batches > FINAL_BATCHES {
                break;
            }
        }
        let n = match batch.recv(&rs, listening) {
            Ok(n) => n,
            Err(e) => {
                out.error = Some(format!("receiving answers: {e}"));
                break;
            }
        };
        // Packets sent meanwhile must be known before their answers.
        while let Ok((block, t0)) = sent_rx.pop() {
            matcher.sent(block, t0);
        }
        for i in 0..n {
            let Some(d) = batch.get(i) else { break };
            if let Some(count) = d.kernel_drops {
                // The socket is this controller's own: its counter started at 0.
                out.kernel_dropped = u64::from(count);
            }
            if d.from != Some(config.host) {
                out.dropped.record(wire::DropReason::Foreign);
                continue;
            }
            out.all_kernel &= d.kernel_timestamp;
            let packet = match wire::parse(d.bytes) {
                Ok(Packet::Output(p)) => p,
                Ok(Packet::Input(_)) => {
                    out.dropped.record(wire::DropReason::UnknownKind);
                    continue;
                }
                Err(e) => {
                    out.dropped.record(e.kind());
                    continue;
                }
            };
            let counted = schedule.counts(packet.header.block);
            let after_end = out.end_ns.is_some_and(|end| d.arrival_ns > end);
            match matcher.answered(&packet, d.arrival_ns) {
                Answer::OnTime { .. } | Answer::Late { .. } if counted && after_end => {
                    out.after_end += 1;
                }
                Answer::OnTime { end_to_end_ns, .. } if counted => {
                    out.on_time += 1;
                    out.end_to_end.record(end_to_end_ns);
                }
                Answer::Late {
                    block,
                    end_to_end_ns,
                } if counted => {
                    out.late += 1;
                    out.end_to_end.record(end_to_end_ns);
                    if let (Some(causes), Some(shares)) = (out.miss_causes.as_mut(), shares) {
                        let (tf, t2) = (d.arrival_ns, packet.header.sender_time_ns);
                        let t0 = tf.saturating_sub(end_to_end_ns);
                        let host = shares.get(block);
                        causes.count(host.map(|h| BlockParts::of(t0, t2, tf, h)));
                        if let (Some(why), Some((_, host_ns)), Some(tid)) =
                            (why.as_mut(), host, shares.host_thread())
                        {
                            why.send(trace::Miss {
                                t_ns: t2.saturating_sub(host_ns),
                                end_ns: t2,
                                tid,
                                kind: trace::MissKind::Overrun,
                            });
                        }
                    }
                }
                Answer::Duplicate { .. } => out.duplicates += 1,
                Answer::Unknown { .. } => out.unknown += 1,
                _ => {}
            }
        }
        if !listening && n < udp::BATCH {
            break;
        }
    }
    // Answers the kernel dropped after the last one read are in its count, not in any
    // datagram's.
    if let Some(count) = udp::dropped_so_far(&rs) {
        out.kernel_dropped = out.kernel_dropped.max(u64::from(count));
    }
    out.sched_stat = sched_since(sched_before);
    out
}

/// The sender thread's real-time loop: every packet of every block at its absolute due
/// time, its pacing error recorded, each block's send time handed to the receiver
/// through `sent_tx`; `sender` finished at the end, with the time its last packet left.
/// Counts the counted blocks it sent and those it sent late itself. Allocates nothing
/// once started.
#[allow(clippy::too_many_arguments)]
fn send_blocks<H: Histogram>(
    config: &ControllerConfig,
    socket: &UdpSocket,
    via: &mut Option<crate::service::FlowTx>,
    cpus: Option<Vec<usize>>,
    schedule: Schedule,
    mut sent_tx: rtrb::Producer<(u32, u64)>,
    sender: &SenderEnd,
    stop: &AtomicBool,
) -> Sent<H> {
    let rt = ThreadRt::apply(&config.policy, cpus.as_deref(), 128 * 1024);
    let sched_before = engine::rt::SchedStat::current_thread();
    let mut out = Sent {
        sched: rt.sched,
        sched_stat: None,
        pacing: H::with_bound(HIST_BOUND_NS),
        sent: 0,
        refused: 0,
        counted_blocks: 0,
        counted_late: 0,
        unrecorded: 0,
        error: None,
    };
    let frames: InputFrames = [config.input; 2];
    let mut packet = [0u8; INPUT_PACKET_BYTES];
    let total = config.blocks + config.warmup_blocks;
    let mut last_packet_ns = None;
    'blocks: for block in 0..total {
        let mut latest_ns = 0u64;
        for index in 0..PACKETS_PER_BLOCK as u64 {
            if stop.load(Ordering::Relaxed) {
                break 'blocks;
            }
            let k = block * PACKETS_PER_BLOCK as u64 + index;
            let due = schedule.start_ns + wire::packet_due_ns(k);
            sleep_until(due, stop);
            let now = monotonic_ns();
            let lateness = now.saturating_sub(due);
            latest_ns = latest_ns.max(lateness);
            out.pacing.record(lateness);
            let header = InputHeader {
                index: index as u8,
                seq: k as u32,
                block: block as u32,
                sender_time_ns: now,
            };
            wire::encode_input(&header, &frames, &mut packet);
            let sent_now = match via.as_mut() {
                Some(tx) => Ok(tx.send(&packet)),
                None => udp::send_to(socket, &packet, config.host),
            };
            last_packet_ns = Some(now);
            match sent_now {
                Ok(true) => out.sent += 1,
                Ok(false) => out.refused += 1,
                Err(e) => {
                    out.error = Some(format!("sending to the host {}: {e}", config.host));
                    break 'blocks;
                }
            }
            if index == 0 {
                if sent_tx.push((block as u32, now)).is_err() {
                    out.unrecorded += 1;
                }
                if schedule.counts(block as u32) {
                    out.counted_blocks += 1;
                }
            }
        }
        if schedule.counts(block as u32) && latest_ns > LATE_SEND_NS {
            out.counted_late += 1;
        }
    }
    sender.finish(last_packet_ns.unwrap_or_else(monotonic_ns));
    out.sched_stat = sched_since(sched_before);
    out
}

/// As [`run`], but with `via` the packets go through audiolat's user-level network
/// service (its flow's ring) instead of straight to the kernel; answers still arrive on
/// `socket`, which the service sends from. With `host_shares`, published by a host in
/// this process, every block answered late is counted by cause
/// ([`ControllerOutcome::miss_causes`]); with `why` as well, each is handed to a kernel
/// trace session as a miss of the host's thread, from the block's last packet's arrival
/// to the answer's send (`--why`).
pub fn run_via<H: Histogram>(
    config: &ControllerConfig,
    socket: UdpSocket,
    start_ns: u64,
    stop: &AtomicBool,
    mut via: Option<crate::service::FlowTx>,
    host_shares: Option<&HostShares>,
    why: Option<trace::MissSender>,
) -> ControllerOutcome<H> {
    // The receive side is set up before any thread starts: answers that arrive before
    // the receiver first runs (a busy machine) wait in a queue of full size, and one it
    // cannot hold is counted.
    udp::enable_receive_timestamps(&socket);
    udp::enable_drop_counter(&socket);
    udp::set_receive_buffer(&socket, 1 << 20);
    let _ = socket.set_read_timeout(Some(Duration::from_millis(20)));
    let receiver_socket = socket.try_clone();
    let (sent_tx, sent_rx) = rtrb::RingBuffer::<(u32, u64)>::new(4096);
    let sender_end = SenderEnd::default();
    let counted_from_ns =
        start_ns + wire::packet_due_ns(config.warmup_blocks * PACKETS_PER_BLOCK as u64);
    let schedule = Schedule {
        start_ns,
        counted_from_block: config.warmup_blocks.min(u64::from(u32::MAX)) as u32,
    };
    let receiver_cpus = config
        .cpus
        .as_ref()
        .filter(|c| c.len() > 1)
        .map(|c| vec![c[1]]);
    let sender_cpus = config
        .cpus
        .as_ref()
        .and_then(|c| c.first())
        .map(|&c| vec![c]);
    std::thread::scope(|scope| {
        let sender_end = &sender_end;
        let receiver = receiver_socket.ok().map(|rs| {
            scope.spawn(move || {
                receive_answers::<H>(
                    config,
                    rs,
                    receiver_cpus,
                    sent_rx,
                    schedule,
                    host_shares,
                    why,
                    sender_end,
                    stop,
                )
            })
        });
        // The sender, on a thread of its own (its policy and CPUs must not stick to the
        // caller, who starts the next phase's threads).
        let via = &mut via;
        let socket = &socket;
        let sender = scope.spawn(move || {
            send_blocks::<H>(
                config,
                socket,
                via,
                sender_cpus,
                schedule,
                sent_tx,
                sender_end,
                stop,
            )
        });
        let sent = sender.join().unwrap_or_else(|_| {
            sender_end.finish(monotonic_ns());
            Sent {
                sched: SchedGrant {
                    requested: config.policy,
                    granted: Policy::Other { nice: 0 },
                    refusal: Some("the sender thread panicked".into()),
                },
                sched_stat: None,
                pacing: H::with_bound(HIST_BOUND_NS),
                sent: 0,
                refused: 0,
                counted_blocks: 0,
                counted_late: 0,
                unrecorded: 0,
                error: Some("the controller's sender thread panicked".to_string()),
            }
        });
        let received = receiver.and_then(|r| r.join().ok());
        outcome(
            sent,
            received,
            schedule,
            counted_from_ns,
            host_shares.is_some(),
        )
    })
}

/// Both threads' results as one outcome (without a receiver, no counted block's answer
/// received; `split`: late blocks were to be counted by cause).
fn outcome<H: Histogram>(
    sent: Sent<H>,
    received: Option<Received<H>>,
    schedule: Schedule,
    counted_from_ns: u64,
    split: bool,
) -> ControllerOutcome<H> {
    let receiver_thread = received.as_ref().map(|r| r.sched.clone());
    let error = match &received {
        Some(r) => sent.error.or_else(|| r.error.clone()),
        None => sent
            .error
            .or(Some("the answer receiver could not start".into())),
    };
    let r = received.unwrap_or_else(|| Received::none(sent.sched.clone(), false, split));
    ControllerOutcome {
        blocks_sent: sent.counted_blocks,
        blocks_sent_late: sent.counted_late,
        counted_from_block: schedule.counted_from_block,
        packets_sent: sent.sent,
        packets_refused: sent.refused,
        end_to_end: r.end_to_end,
        pacing: sent.pacing,
        answers_received_on_time: r.on_time,
        answers_received_late: r.late,
        miss_causes: r.miss_causes,
        answers_received_after_end: r.after_end,
        answers_not_received: sent
            .counted_blocks
            .saturating_sub(r.on_time + r.late + r.after_end),
        duplicate_answers: r.duplicates,
        unknown_answers: r.unknown,
        dropped_answers: r.dropped,
        answers_dropped_by_kernel: r.kernel_dropped,
        blocks_unrecorded: sent.unrecorded,
        sender_thread: sent.sched,
        receiver_thread,
        sender_sched: sent.sched_stat,
        receiver_sched: r.sched_stat,
        kernel_timestamps: r.all_kernel,
        counted_from_ns,
        end_ns: r.end_ns,
        error,
    }
}
