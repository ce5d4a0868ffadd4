//! The controller (`audiolat net emulate`): a SLABS-like multitouch controller sending
//! one packet every 45.35 µs, 16 per block, at the real rate, with a fixed input (a set
//! of pads at fixed positions and pressures, as the study's controlled input), and
//! timing every block's answer: `tf - t0`, from handing the block's first packet to the
//! kernel to the answer's arrival.
//!
//! The sender is a real-time thread on absolute deadlines (`clock_nanosleep`,
//! TIMER_ABSTIME); it measures its own pacing error (send time minus due time) for every
//! packet, so a late sender is never mistaken for a slow host. A second thread receives
//! the answers.
//!
//! Real-time contract: both threads allocate, lock and print nothing once started.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use engine::clock::monotonic_ns;
use engine::rt::{Policy, SchedGrant, ThreadRt};

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
    /// How long to wait for the last answers after the last block, ns.
    pub drain_ns: u64,
    /// Scheduling policy of the sender and receiver.
    pub policy: Policy,
    /// CPU of the sender (the receiver takes the next one in the list, if any).
    pub cpus: Option<Vec<usize>>,
}

/// What the controller measured, its times in the caller's histograms `H`.
#[derive(Debug)]
pub struct ControllerOutcome<H> {
    /// Counted blocks sent.
    pub blocks_sent: u64,
    /// Packets sent (all, warm-up included) and those the kernel would not take.
    pub packets_sent: u64,
    /// Packets the kernel refused (queue full): lost before the wire.
    pub packets_refused: u64,
    /// `tf - t0` of every counted block answered, ns.
    pub end_to_end: H,
    /// Pacing error of every packet (send time minus due time), ns.
    pub pacing: H,
    /// Counted blocks answered within [`DEADLINE_NS`](wire::DEADLINE_NS).
    pub on_time: u64,
    /// Counted blocks answered after it.
    pub late: u64,
    /// Counted blocks never answered.
    pub lost: u64,
    /// Second answers to a block.
    pub duplicate_answers: u64,
    /// Answers to blocks never sent or long gone.
    pub unknown_answers: u64,
    /// Malformed answers, by reason.
    pub malformed: DropCounters,
    /// The sender's and the receiver's policies as granted.
    pub sender_thread: SchedGrant,
    /// The receiver's policy as granted.
    pub receiver_thread: Option<SchedGrant>,
    /// Answers timed by the kernel's receive timestamp (else user space).
    pub kernel_timestamps: bool,
    /// Monotonic time the first counted block was sent (the host counts from here).
    pub counted_from_ns: u64,
    /// An error that ended the run early.
    pub error: Option<String>,
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
    run_via(config, socket, start_ns, stop, None)
}

/// What the receiver thread measured.
struct Received<H> {
    sched: SchedGrant,
    end_to_end: H,
    on_time: u64,
    late: u64,
    duplicates: u64,
    unknown: u64,
    malformed: DropCounters,
    all_kernel: bool,
    error: Option<String>,
}

/// What the sender thread did.
struct Sent<H> {
    sched: SchedGrant,
    pacing: H,
    sent: u64,
    refused: u64,
    counted_blocks: u64,
    error: Option<String>,
}

/// The pacing of the sender: where packet 0 is due and from when blocks count.
#[derive(Clone, Copy)]
struct Schedule {
    start_ns: u64,
    counted_from_ns: u64,
}

/// The receiver thread's real-time loop: takes the blocks' send times from `sent_rx`,
/// pairs each answer with its block and times it, until the drain after `sender_done`
/// (or `stop`). Allocates nothing once started.
fn receive_answers<H: Histogram>(
    config: &ControllerConfig,
    rs: UdpSocket,
    cpus: Option<Vec<usize>>,
    mut sent_rx: rtrb::Consumer<(u32, u64)>,
    counted_from_ns: u64,
    sender_done: &AtomicBool,
    stop: &AtomicBool,
) -> Received<H> {
    let rt = ThreadRt::apply(&config.policy, cpus.as_deref(), 128 * 1024);
    let kernel = udp::enable_receive_timestamps(&rs);
    udp::set_receive_buffer(&rs, 1 << 20);
    let _ = rs.set_read_timeout(Some(Duration::from_millis(20)));
    let mut batch = RecvBatch::new();
    let mut matcher = AnswerMatcher::new();
    let mut out = Received {
        sched: rt.sched,
        end_to_end: H::with_bound(HIST_BOUND_NS),
        on_time: 0,
        late: 0,
        duplicates: 0,
        unknown: 0,
        malformed: DropCounters::default(),
        all_kernel: kernel,
        error: None,
    };
    let mut finished_at: Option<u64> = None;
    loop {
        while let Ok((block, t0)) = sent_rx.pop() {
            matcher.sent(block, t0);
        }
        if sender_done.load(Ordering::Acquire) {
            let now = monotonic_ns();
            let since = *finished_at.get_or_insert(now);
            if now - since > config.drain_ns || stop.load(Ordering::Relaxed) {
                break;
            }
        }
        let n = match batch.recv(&rs, true) {
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
            out.all_kernel &= d.kernel_timestamp;
            let packet = match wire::parse(d.bytes) {
                Ok(Packet::Output(p)) => p,
                Ok(Packet::Input(_)) => {
                    out.malformed.record(wire::DropReason::UnknownKind);
                    continue;
                }
                Err(e) => {
                    out.malformed.record(e.kind());
                    continue;
                }
            };
            let counted = packet.header.echo_time_ns >= counted_from_ns;
            match matcher.answered(&packet, d.arrival_ns) {
                Answer::OnTime { end_to_end_ns, .. } if counted => {
                    out.on_time += 1;
                    out.end_to_end.record(end_to_end_ns);
                }
                Answer::Late { end_to_end_ns, .. } if counted => {
                    out.late += 1;
                    out.end_to_end.record(end_to_end_ns);
                }
                Answer::Duplicate { .. } => out.duplicates += 1,
                Answer::Unknown { .. } => out.unknown += 1,
                _ => {}
            }
        }
    }
    out
}

/// The sender thread's real-time loop: every packet of every block at its absolute due
/// time, its pacing error recorded, each block's send time handed to the receiver
/// through `sent_tx`; `sender_done` raised at the end. Allocates nothing once started.
#[allow(clippy::too_many_arguments)]
fn send_blocks<H: Histogram>(
    config: &ControllerConfig,
    socket: &UdpSocket,
    via: &mut Option<crate::service::FlowTx>,
    cpus: Option<Vec<usize>>,
    schedule: Schedule,
    mut sent_tx: rtrb::Producer<(u32, u64)>,
    sender_done: &AtomicBool,
    stop: &AtomicBool,
) -> Sent<H> {
    let rt = ThreadRt::apply(&config.policy, cpus.as_deref(), 128 * 1024);
    let mut out = Sent {
        sched: rt.sched,
        pacing: H::with_bound(HIST_BOUND_NS),
        sent: 0,
        refused: 0,
        counted_blocks: 0,
        error: None,
    };
    let frames: InputFrames = [config.input; 2];
    let mut packet = [0u8; INPUT_PACKET_BYTES];
    let total = config.blocks + config.warmup_blocks;
    'blocks: for block in 0..total {
        for index in 0..PACKETS_PER_BLOCK as u64 {
            if stop.load(Ordering::Relaxed) {
                break 'blocks;
            }
            let k = block * PACKETS_PER_BLOCK as u64 + index;
            let due = schedule.start_ns + wire::packet_due_ns(k);
            sleep_until(due, stop);
            let now = monotonic_ns();
            out.pacing.record(now.saturating_sub(due));
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
            match sent_now {
                Ok(true) => out.sent += 1,
                Ok(false) => out.refused += 1,
                Err(e) => {
                    out.error = Some(format!("sending to the host {}: {e}", config.host));
                    break 'blocks;
                }
            }
            if index == 0 {
                let _ = sent_tx.push((block as u32, now));
                if now >= schedule.counted_from_ns {
                    out.counted_blocks += 1;
                }
            }
        }
    }
    sender_done.store(true, Ordering::Release);
    out
}

/// As [`run`], but with `via` the packets go through audiolat's user-level network
/// service (its flow's ring) instead of straight to the kernel; answers still arrive on
/// `socket`, which the service sends from.
pub fn run_via<H: Histogram>(
    config: &ControllerConfig,
    socket: UdpSocket,
    start_ns: u64,
    stop: &AtomicBool,
    mut via: Option<crate::service::FlowTx>,
) -> ControllerOutcome<H> {
    let receiver_socket = socket.try_clone();
    let (sent_tx, sent_rx) = rtrb::RingBuffer::<(u32, u64)>::new(4096);
    let sender_done = AtomicBool::new(false);
    let counted_from_ns =
        start_ns + wire::packet_due_ns(config.warmup_blocks * PACKETS_PER_BLOCK as u64);
    let schedule = Schedule {
        start_ns,
        counted_from_ns,
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
        let sender_done = &sender_done;
        let receiver = receiver_socket.ok().map(|rs| {
            scope.spawn(move || {
                receive_answers::<H>(
                    config,
                    rs,
                    receiver_cpus,
                    sent_rx,
                    counted_from_ns,
                    sender_done,
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
                sender_done,
                stop,
            )
        });
        let sent = sender.join().unwrap_or_else(|_| {
            sender_done.store(true, Ordering::Release);
            Sent {
                sched: SchedGrant {
                    requested: config.policy,
                    granted: Policy::Other { nice: 0 },
                    refusal: Some("the sender thread panicked".into()),
                },
                pacing: H::with_bound(HIST_BOUND_NS),
                sent: 0,
                refused: 0,
                counted_blocks: 0,
                error: Some("the controller's sender thread panicked".to_string()),
            }
        });
        let received = receiver.and_then(|r| r.join().ok());
        outcome(sent, received, counted_from_ns)
    })
}

/// Both threads' results as one outcome (without a receiver, every counted block lost).
fn outcome<H: Histogram>(
    sent: Sent<H>,
    received: Option<Received<H>>,
    counted_from_ns: u64,
) -> ControllerOutcome<H> {
    let Some(r) = received else {
        return ControllerOutcome {
            blocks_sent: sent.counted_blocks,
            packets_sent: sent.sent,
            packets_refused: sent.refused,
            end_to_end: H::with_bound(HIST_BOUND_NS),
            pacing: sent.pacing,
            on_time: 0,
            late: 0,
            lost: sent.counted_blocks,
            duplicate_answers: 0,
            unknown_answers: 0,
            malformed: DropCounters::default(),
            sender_thread: sent.sched,
            receiver_thread: None,
            kernel_timestamps: false,
            counted_from_ns,
            error: sent
                .error
                .or(Some("the answer receiver could not start".into())),
        };
    };
    ControllerOutcome {
        blocks_sent: sent.counted_blocks,
        packets_sent: sent.sent,
        packets_refused: sent.refused,
        end_to_end: r.end_to_end,
        pacing: sent.pacing,
        on_time: r.on_time,
        late: r.late,
        lost: sent.counted_blocks.saturating_sub(r.on_time + r.late),
        duplicate_answers: r.duplicates,
        unknown_answers: r.unknown,
        malformed: r.malformed,
        sender_thread: sent.sched,
        receiver_thread: Some(r.sched),
        kernel_timestamps: r.all_kernel,
        counted_from_ns,
        error: sent.error.or(r.error),
    }
}
