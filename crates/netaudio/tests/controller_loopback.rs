//! The controller over loopback, for real, against a host in this process: blocks
//! counted by their schedule when the controller itself is late, and answers from
//! anyone but the host counted apart.

use engine::clock::monotonic_ns;
use engine::rt::Policy;
use netaudio::controller::{self, ControllerConfig, ControllerOutcome};
use netaudio::host::{self, HostConfig, HostOutcome, PollMode};
use netaudio::wire;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

static SERIAL: Mutex<()> = Mutex::new(());

/// These tests look at counters, not times: a histogram that counts.
#[derive(Debug)]
struct Counts(u64);

impl netaudio::Histogram for Counts {
    fn with_bound(_bound_ns: u64) -> Self {
        Counts(0)
    }

    fn record(&mut self, _value_ns: u64) {
        self.0 += 1;
    }
}

/// What the controller's socket still held, read once both ends had ended: the
/// datagrams left in its queue, and every datagram its kernel dropped on a full queue
/// over the whole run (the socket's own count, read last).
struct AfterBoth {
    left_in_queue: u64,
    dropped_by_kernel: u64,
}

/// A run's set-up: `blocks` blocks (no warm-up), packet 0 due at `start_ns`, the
/// controller's threads at `threads` (policy, CPUs) and its drain; a host answering
/// silence with its thread at `host` (policy, CPUs) that starts serving at
/// `host_from_ns` (0: at once) and serves until the controller has ended and at least
/// 200 ms after its start, as a host in another process would.
struct Run {
    blocks: u64,
    start_ns: u64,
    threads: (Policy, Option<Vec<usize>>),
    drain_ns: u64,
    host_from_ns: u64,
    host: (Policy, Option<Vec<usize>>),
}

/// An ordinary-policy host on any CPU.
const ORDINARY_HOST: (Policy, Option<Vec<usize>>) = (Policy::Other { nice: 0 }, None);

impl Run {
    /// When the controller's last packet is due.
    fn last_packet_due_ns(&self) -> u64 {
        self.start_ns + wire::packet_due_ns(self.blocks * wire::PACKETS_PER_BLOCK as u64)
    }
}

/// Runs the controller against the host; `beside` runs meanwhile with the controller's
/// address. The controller's socket is kept open after the controller ends, until the
/// host has ended too, and then read: whatever the host sent is in one end's books or
/// the socket's.
fn run_against_host(
    run: Run,
    beside: impl FnOnce(std::net::SocketAddr) + Send,
) -> (HostOutcome<Counts>, ControllerOutcome<Counts>, AfterBoth) {
    let host_socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let controller_socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let controller_addr = controller_socket.local_addr().unwrap();
    let kept = controller_socket.try_clone().unwrap();
    let host_config = HostConfig {
        peer: Some(controller_addr),
        synth: false,
        workers: 0,
        policy: run.host.0,
        cpus: run.host.1.clone(),
        groups: Vec::new(),
        poll: PollMode::Block,
        warmup: host::Warmup::BeforeBlock(0),
    };
    let controller_config = ControllerConfig {
        host: host_socket.local_addr().unwrap(),
        input: controller::fixed_input(8, 0.5, 0.5, 0.8),
        blocks: run.blocks,
        warmup_blocks: 0,
        drain_ns: run.drain_ns,
        policy: run.threads.0,
        cpus: run.threads.1,
    };
    let (host_stop, stop) = (AtomicBool::new(false), AtomicBool::new(false));
    let (h, c) = std::thread::scope(|scope| {
        host::prepare_socket(&host_socket, PollMode::Block);
        let h = scope.spawn(|| {
            // At its policy on its CPUs already while it waits, so that it starts when
            // told: an ordinary thread woken behind a real-time one waits for it.
            engine::rt::ThreadRt::apply(&host_config.policy, host_config.cpus.as_deref(), 0);
            let wait = run.host_from_ns.saturating_sub(monotonic_ns());
            std::thread::sleep(Duration::from_nanos(wait));
            host::serve::<Counts>(&host_config, host_socket, &host_stop, 16)
        });
        let b = scope.spawn(move || beside(controller_addr));
        let c =
            controller::run::<Counts>(&controller_config, controller_socket, run.start_ns, &stop);
        let serve_until = run.host_from_ns + 200_000_000;
        std::thread::sleep(Duration::from_nanos(
            serve_until.saturating_sub(monotonic_ns()),
        ));
        host_stop.store(true, Ordering::Relaxed);
        b.join().unwrap();
        (h.join().unwrap(), c)
    });
    kept.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 2048];
    let mut left_in_queue = 0;
    while kept.recv_from(&mut buf).is_ok() {
        left_in_queue += 1;
    }
    let dropped_by_kernel = u64::from(netaudio::udp::dropped_so_far(&kept).unwrap());
    let after = AfterBoth {
        left_in_queue,
        dropped_by_kernel,
    };
    (h, c, after)
}

/// The two ends' books on the same blocks (no warm-up), whatever the machine's load
/// made late: exact by construction.
/// - The controller: every block sent was answered on time, late, after the run's end,
///   or its answer not received.
/// - Loopback loses no datagram but on a full queue, counted by the kernel: every answer
///   the host sent, and the `foreign` datagrams sent beside it, reached the controller's
///   socket and were read (a first answer received, a duplicate or unknown answer, a
///   datagram dropped by reason), dropped by its kernel, or were still in its queue when
///   both ends had ended.
fn assert_books_agree(
    h: &HostOutcome<Counts>,
    c: &ControllerOutcome<Counts>,
    after: &AfterBoth,
    foreign: u64,
) {
    assert_eq!(
        c.blocks_sent,
        c.answers_received_on_time
            + c.answers_received_late
            + c.answers_received_after_end
            + c.answers_not_received,
        "{c:?}"
    );
    assert_eq!(
        c.end_to_end.0,
        c.answers_received_on_time + c.answers_received_late
    );
    let read =
        c.answers_received() + c.duplicate_answers + c.unknown_answers + c.dropped_answers.total();
    assert_eq!(
        h.answers_sent + foreign,
        read + after.dropped_by_kernel + after.left_in_queue,
        "host sent {} answers and {foreign} foreign datagrams came; the controller read {read}, its kernel dropped {}, {} were left in its queue: {c:?}",
        h.answers_sent,
        after.dropped_by_kernel,
        after.left_in_queue
    );
    // The controller's own count of its kernel's drops is of its run: never more than
    // the socket's at the very end.
    assert!(c.answers_dropped_by_kernel <= after.dropped_by_kernel);
    assert_eq!(h.counted_from_block, Some(c.counted_from_block));
}

/// A controller that starts 300 ms behind its schedule (a starved sender) sends its
/// first 400-odd blocks late, in a burst; its receiver, on the sender's CPU at the same
/// real-time priority (where root grants it), cannot read an answer until the burst is
/// over. The controller says it was late, counts the blocks by their numbers, and does
/// not call lost the blocks the host answered: the two ends' books agree.
#[test]
fn a_late_controller_says_so_and_loses_no_block_the_host_answered() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let behind_ns = 300_000_000;
    let blocks = 700;
    let cpu = *engine::rt::online_cpus().last().unwrap();
    let run = Run {
        blocks,
        start_ns: monotonic_ns() - behind_ns,
        threads: (Policy::Fifo { priority: 10 }, Some(vec![cpu, cpu])),
        drain_ns: 200_000_000,
        host_from_ns: 0,
        host: ORDINARY_HOST,
    };
    let (h, c, after) = run_against_host(run, |_| {});
    assert!(
        h.error.is_none() && c.error.is_none(),
        "{:?} {:?}",
        h.error,
        c.error
    );
    assert_eq!(c.blocks_sent, blocks);
    let due_in_the_past = behind_ns / wire::BLOCK_PERIOD_NS;
    assert!(
        c.blocks_sent_late >= due_in_the_past / 2,
        "{} of {blocks} blocks sent late, {due_in_the_past} were due before it started",
        c.blocks_sent_late
    );
    // However late the receiver reads, it still knows every block it is answered for.
    assert_eq!(
        c.unknown_answers, 0,
        "answers to blocks the controller forgot"
    );
    assert_eq!(c.blocks_unrecorded, 0);
    assert_books_agree(&h, &c, &after, 0);
}

/// Answers from any address but the host's (forged, or a stray host's) are counted
/// apart as foreign and never matched: they neither time a block nor count as its
/// answer, a duplicate or an unknown answer.
#[test]
fn forged_answers_from_a_foreign_port_are_counted_apart_and_never_matched() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let forger = UdpSocket::bind("127.0.0.1:0").unwrap();
    let forged = 100u32;
    let run = Run {
        blocks: 400,
        start_ns: monotonic_ns() + 20_000_000,
        threads: (Policy::Other { nice: 0 }, None),
        drain_ns: 200_000_000,
        host_from_ns: 0,
        host: ORDINARY_HOST,
    };
    let (h, c, after) = run_against_host(run, |controller| {
        std::thread::sleep(Duration::from_millis(60));
        let mut packet = [0u8; wire::OUTPUT_PACKET_BYTES];
        for block in 0..forged {
            let header = wire::OutputHeader {
                seq: block,
                block,
                sender_time_ns: 1,
                echo_time_ns: 1,
            };
            wire::encode_output(&header, &[[0.0; 8]; 32], &mut packet);
            forger.send_to(&packet, controller).unwrap();
        }
    });
    assert!(c.error.is_none(), "{:?}", c.error);
    // Read by the controller and counted foreign, or dropped by its kernel (which
    // cannot say whose they were) or still queued at the end.
    let unread = after.dropped_by_kernel + after.left_in_queue;
    assert!(
        c.dropped_answers.foreign <= u64::from(forged)
            && c.dropped_answers.foreign + unread >= u64::from(forged),
        "{} of {forged} forged answers counted foreign, {unread} unread",
        c.dropped_answers.foreign
    );
    assert_eq!(c.dropped_answers.total(), c.dropped_answers.foreign);
    assert_eq!(
        (c.duplicate_answers, c.unknown_answers),
        (0, 0),
        "a forged answer was matched"
    );
    assert_books_agree(&h, &c, &after, u64::from(forged));
}

/// A host that answers only after the run's end (an ordinary-policy host a busy machine
/// held off past the drain; here, one that starts serving then, and serves on after the
/// controller ended, as a host in another process does): its answers, read while the
/// controller still listens (a second drain), are counted answered after the end, not
/// lost, and time nothing. The host starts half a drain after the scheduled end; both
/// ends' threads are real-time, so that the controller keeps its schedule and the host
/// answers when told, whatever the load.
#[test]
fn answers_that_arrive_after_the_run_s_end_are_counted_so_not_lost() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let blocks = 60;
    let drain_ns = 600_000_000;
    let mut run = Run {
        blocks,
        start_ns: monotonic_ns() + 20_000_000,
        threads: (Policy::Fifo { priority: 10 }, None),
        drain_ns,
        host_from_ns: 0,
        host: (Policy::Fifo { priority: 10 }, None),
    };
    run.host_from_ns = run.last_packet_due_ns() + drain_ns + drain_ns / 2;
    let (h, c, after) = run_against_host(run, |_| {});
    assert!(
        h.error.is_none() && c.error.is_none(),
        "{:?} {:?}",
        h.error,
        c.error
    );
    assert_eq!(h.answers_sent, blocks, "the host answered every block");
    assert_books_agree(&h, &c, &after, 0);
    // Every answer the controller read came after its run's end: none timed a block.
    assert_eq!(
        (c.answers_received_on_time, c.answers_received_late),
        (0, 0),
        "{c:?}"
    );
    assert_eq!(c.end_to_end.0, 0);
    assert_eq!(
        (c.answers_received_after_end, c.answers_not_received),
        (blocks, 0),
        "{c:?}, {} left in the queue",
        after.left_in_queue
    );
    assert!(c.end_ns.is_some_and(|end| end <= monotonic_ns()));
}

/// A receiver held off its CPU (by a busier real-time thread) from just after the last
/// packet until past the drain finds the host's last answers waiting in its socket: they
/// arrived before the run's end, and count by their arrival time (late, against a
/// 1.4 ms deadline), not as lost because the receiver read them after the drain.
#[test]
fn answers_queued_while_the_receiver_was_held_off_count_by_their_arrival() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let cpus = engine::rt::online_cpus();
    if cpus.len() < 2 {
        return;
    }
    let (controller_cpu, host_cpu) = (cpus[cpus.len() - 1], cpus[0]);
    let blocks = 200;
    let drain_ns = 200_000_000;
    let mut run = Run {
        blocks,
        start_ns: monotonic_ns() + 20_000_000,
        threads: (
            Policy::Fifo { priority: 10 },
            Some(vec![controller_cpu, controller_cpu]),
        ),
        drain_ns,
        host_from_ns: 0,
        // A real-time host on the other CPU: it answers when told, whatever the load.
        host: (Policy::Fifo { priority: 10 }, Some(vec![host_cpu])),
    };
    let last_packet_due = run.last_packet_due_ns();
    // The host answers every block 50 ms after the last packet, well before the run's
    // end (the drain, 200 ms); the receiver is held off from 30 ms to 500 ms.
    run.host_from_ns = last_packet_due + 50_000_000;
    let held = (last_packet_due + 30_000_000, last_packet_due + 500_000_000);
    let (h, c, after) = run_against_host(run, |_| {
        std::thread::sleep(Duration::from_nanos(held.0.saturating_sub(monotonic_ns())));
        let rt =
            engine::rt::ThreadRt::apply(&Policy::Fifo { priority: 20 }, Some(&[controller_cpu]), 0);
        while rt.is_realtime() && monotonic_ns() < held.1 {
            std::hint::spin_loop();
        }
    });
    if !c.sender_thread.is_realtime() {
        // Without real-time threads (not root) nothing here is held off.
        return;
    }
    assert!(
        h.error.is_none() && c.error.is_none(),
        "{:?} {:?}",
        h.error,
        c.error
    );
    assert_eq!(h.answers_sent, blocks, "the host answered every block");
    assert_books_agree(&h, &c, &after, 0);
    assert_eq!(
        (
            c.answers_received_late,
            c.answers_received_after_end,
            c.answers_not_received
        ),
        (blocks, 0, 0),
        "{c:?}"
    );
}
