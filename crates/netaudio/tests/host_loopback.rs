//! The host over loopback, for real: malformed, foreign and junk datagrams beside a
//! valid stream, counted and dropped while every valid block is answered.

use assert_no_alloc::AllocDisabler;
use engine::rt::Policy;
use netaudio::host::PollMode;
use netaudio::wire;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Duration;

static SERIAL: Mutex<()> = Mutex::new(());

/// Counts an allocation inside the audio guard the synth runs in (debug builds).
#[global_allocator]
static ALLOCATOR: AllocDisabler = AllocDisabler;

/// These tests look at the host's counters, not its times: a histogram that counts.
struct Counts(u64);

impl netaudio::Histogram for Counts {
    fn with_bound(_bound_ns: u64) -> Self {
        Counts(0)
    }

    fn record(&mut self, _value_ns: u64) {
        self.0 += 1;
    }
}

#[test]
fn malformed_and_foreign_packets_are_counted_and_dropped_while_valid_blocks_are_answered() {
    use netaudio::host::{self, HostConfig};
    use netaudio::wire::{
        encode_input, InputHeader, PadFrame, INPUT_PACKET_BYTES, PACKETS_PER_BLOCK,
    };
    use std::net::UdpSocket;
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let host_socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let host_addr = host_socket.local_addr().unwrap();
    let controller = UdpSocket::bind("127.0.0.1:0").unwrap();
    let foreign = UdpSocket::bind("127.0.0.1:0").unwrap();
    let config = HostConfig {
        peer: Some(controller.local_addr().unwrap()),
        synth: true,
        // The split synth, with no more computing threads (the network thread and its
        // workers, each spinning while it waits) than CPUs, as the CLI allows.
        workers: engine::rt::online_cpus().len().saturating_sub(1).max(1),
        policy: Policy::Other { nice: 0 },
        cpus: None,
        groups: Vec::new(),
        poll: PollMode::Block,
        warmup: host::Warmup::FirstBlocks(0),
    };
    let stop = AtomicBool::new(false);
    let blocks = 300u32;
    let frames = [[PadFrame {
        x: 0.5,
        y: 0.5,
        pressure: 0.9,
    }; 32]; 2];
    let mut packet = [0u8; INPUT_PACKET_BYTES];
    let mut rng = 0x1234_5678_9abc_def0u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let (mut malformed_sent, mut foreign_sent) = (0u64, 0u64);
    let reader = controller.try_clone().unwrap();
    reader
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let violations = assert_no_alloc::violation_count();
    let answered = std::sync::atomic::AtomicU32::new(0);
    let (outcome, answers) = std::thread::scope(|scope| {
        host::prepare_socket(&host_socket, PollMode::Block);
        let h = scope.spawn(|| host::serve::<Counts>(&config, host_socket, &stop, 1024));
        // The answers are read as they come, so no queue has to hold them all.
        let answers = scope.spawn(|| {
            let mut buf = [0u8; 2048];
            let mut answers = 0u32;
            while let Ok((n, _)) = reader.recv_from(&mut buf) {
                if matches!(wire::parse(&buf[..n]), Ok(wire::Packet::Output(_))) {
                    answers += 1;
                    answered.store(answers, std::sync::atomic::Ordering::Relaxed);
                }
            }
            answers
        });
        std::thread::sleep(Duration::from_millis(50));
        for block in 0..blocks {
            for index in 0..PACKETS_PER_BLOCK as u8 {
                let header = InputHeader {
                    index,
                    seq: block * 16 + u32::from(index),
                    block,
                    sender_time_ns: 1,
                };
                encode_input(&header, &frames, &mut packet);
                controller.send_to(&packet, host_addr).unwrap();
                // Garbage from the peer itself: random bytes, a cut packet, a NaN.
                let junk: Vec<u8> = (0..(next() % 1200) as usize)
                    .map(|_| next() as u8)
                    .collect();
                controller.send_to(&junk, host_addr).unwrap();
                controller
                    .send_to(&packet[..INPUT_PACKET_BYTES - 7], host_addr)
                    .unwrap();
                let mut nan = packet;
                nan[40..44].copy_from_slice(&f32::NAN.to_le_bytes());
                controller.send_to(&nan, host_addr).unwrap();
                malformed_sent += 3;
                // A valid packet from a stranger.
                foreign.send_to(&packet, host_addr).unwrap();
                foreign_sent += 1;
            }
            std::thread::sleep(Duration::from_millis(1));
            // Five datagrams a packet are more than a busy machine's host keeps up with
            // at full pace: the sender waits for the host's answers to come within 8
            // blocks (what is checked here is the counting, not the pace).
            let waiting = std::time::Instant::now();
            while answered.load(std::sync::atomic::Ordering::Relaxed) + 8 < block
                && waiting.elapsed() < Duration::from_secs(2)
            {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        std::thread::sleep(Duration::from_millis(200));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        (h.join().unwrap(), answers.join().unwrap())
    });
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(
        assert_no_alloc::violation_count(),
        violations,
        "the synth allocated in its guard"
    );
    let d = &outcome.counters.drops;
    // Every datagram is accounted for: accepted into a block, dropped by reason, or
    // dropped by the kernel on a full queue (which this pace should not cause).
    let sent = u64::from(blocks) * 16 + malformed_sent + foreign_sent;
    assert_eq!(
        outcome.counters.packets_accepted + d.total() + outcome.kernel_dropped,
        sent,
        "{:?}",
        outcome.counters
    );
    assert_eq!(
        outcome.kernel_dropped, 0,
        "the kernel dropped datagrams: the host fell behind"
    );
    let malformed = d.wrong_size
        + d.bad_magic
        + d.unknown_version
        + d.unknown_kind
        + d.bad_index
        + d.non_finite;
    // Loopback with a 4 MiB receive buffer loses nothing here; every bad packet is
    // counted under a reason, and only those.
    assert_eq!(malformed, malformed_sent, "{d:?}");
    assert_eq!(d.non_finite, u64::from(blocks) * 16, "{d:?}");
    assert_eq!(d.foreign, foreign_sent);
    assert_eq!(
        outcome.answers_sent,
        u64::from(blocks),
        "every valid block answered"
    );
    assert_eq!(outcome.counters.blocks_incomplete, 0);
    // The answers reached the controller.
    assert_eq!(answers, blocks);
    let mut buf = [0u8; 2048];
    // The foreign sender got nothing.
    foreign
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    assert!(foreign.recv_from(&mut buf).is_err());
}

#[test]
fn without_a_configured_peer_junk_cannot_take_the_stream_over() {
    use netaudio::host::{self, HostConfig};
    use netaudio::wire::{encode_input, InputHeader, PadFrame, INPUT_PACKET_BYTES};
    use std::net::UdpSocket;
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let host_socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let host_addr = host_socket.local_addr().unwrap();
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    let controller = UdpSocket::bind("127.0.0.1:0").unwrap();
    let config = HostConfig {
        peer: None,
        synth: false,
        workers: 0,
        policy: Policy::Other { nice: 0 },
        cpus: None,
        groups: Vec::new(),
        poll: PollMode::Block,
        warmup: host::Warmup::FirstBlocks(0),
    };
    let stop = AtomicBool::new(false);
    let outcome = std::thread::scope(|scope| {
        host::prepare_socket(&host_socket, PollMode::Block);
        let h = scope.spawn(|| host::serve::<Counts>(&config, host_socket, &stop, 64));
        std::thread::sleep(Duration::from_millis(50));
        // Junk first, from a stranger: it must not become the peer.
        stranger.send_to(b"junk", host_addr).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let frames = [[PadFrame::ZERO; 32]; 2];
        let mut packet = [0u8; INPUT_PACKET_BYTES];
        for block in 0..20u32 {
            for index in 0..16u8 {
                let header = InputHeader {
                    index,
                    seq: block * 16 + u32::from(index),
                    block,
                    sender_time_ns: 1,
                };
                encode_input(&header, &frames, &mut packet);
                controller.send_to(&packet, host_addr).unwrap();
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(100));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        h.join().unwrap()
    });
    assert_eq!(outcome.blocks_answered(), 20, "{:?}", outcome.counters);
    assert_eq!(outcome.counters.drops.wrong_size, 1);
    assert_eq!(outcome.counters.drops.foreign, 0);
}

/// Sends `blocks` whole blocks from `from` to `to`, a millisecond apart, their block
/// numbers from `first`.
fn send_blocks(from: &std::net::UdpSocket, to: std::net::SocketAddr, first: u32, blocks: u32) {
    use netaudio::wire::{encode_input, InputHeader, PadFrame, INPUT_PACKET_BYTES};
    let frames = [[PadFrame::ZERO; 32]; 2];
    let mut packet = [0u8; INPUT_PACKET_BYTES];
    for block in first..first + blocks {
        for index in 0..16u8 {
            let header = InputHeader {
                index,
                seq: block * 16 + u32::from(index),
                block,
                sender_time_ns: 1,
            };
            encode_input(&header, &frames, &mut packet);
            from.send_to(&packet, to).unwrap();
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A host with no configured peer, its answers read by `controller`'s reader thread.
fn serve_without_peer(
    host_socket: std::net::UdpSocket,
    controller: &std::net::UdpSocket,
    traffic: impl FnOnce(std::net::SocketAddr),
) -> (netaudio::host::HostOutcome<Counts>, u32) {
    use netaudio::host::{self, HostConfig};
    let host_addr = host_socket.local_addr().unwrap();
    let config = HostConfig {
        peer: None,
        synth: false,
        workers: 0,
        policy: Policy::Other { nice: 0 },
        cpus: None,
        groups: Vec::new(),
        poll: PollMode::Block,
        warmup: host::Warmup::FirstBlocks(0),
    };
    let stop = AtomicBool::new(false);
    let reader = controller.try_clone().unwrap();
    reader
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    std::thread::scope(|scope| {
        host::prepare_socket(&host_socket, PollMode::Block);
        let h = scope.spawn(|| host::serve::<Counts>(&config, host_socket, &stop, 64));
        let answers = scope.spawn(|| {
            let mut buf = [0u8; 2048];
            let mut answers = 0u32;
            while let Ok((n, _)) = reader.recv_from(&mut buf) {
                if matches!(wire::parse(&buf[..n]), Ok(wire::Packet::Output(_))) {
                    answers += 1;
                }
            }
            answers
        });
        std::thread::sleep(Duration::from_millis(50));
        traffic(host_addr);
        std::thread::sleep(Duration::from_millis(100));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        (h.join().unwrap(), answers.join().unwrap())
    })
}

/// A stray datagram that is a valid controller packet, from a stranger, arriving first:
/// it holds nothing. The controller that follows completes a block, becomes the peer
/// and has every block answered; the stray is counted apart (`unconfirmed`), and the
/// stranger gets no answer.
#[test]
fn without_a_configured_peer_a_stray_valid_datagram_cannot_take_the_stream_over() {
    use netaudio::wire::{encode_input, InputHeader, PadFrame, INPUT_PACKET_BYTES};
    use std::net::UdpSocket;
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    let controller = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (outcome, answers) = serve_without_peer(
        UdpSocket::bind("127.0.0.1:0").unwrap(),
        &controller,
        |host| {
            let mut packet = [0u8; INPUT_PACKET_BYTES];
            let header = InputHeader {
                index: 3,
                seq: 77,
                block: 9,
                sender_time_ns: 1,
            };
            encode_input(&header, &[[PadFrame::ZERO; 32]; 2], &mut packet);
            stranger.send_to(&packet, host).unwrap();
            std::thread::sleep(Duration::from_millis(20));
            send_blocks(&controller, host, 0, 20);
        },
    );
    assert_eq!(outcome.blocks_answered(), 20, "{:?}", outcome.counters);
    assert_eq!(answers, 20, "the controller got every answer");
    assert_eq!(outcome.peer, Some(controller.local_addr().unwrap()));
    let d = &outcome.counters.drops;
    assert_eq!((d.unconfirmed, d.foreign), (1, 0), "{d:?}");
    assert_eq!(outcome.counters.blocks_incomplete, 0);
    assert_eq!(outcome.counted_from_block, Some(0));
    stranger
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    assert!(stranger.recv_from(&mut [0u8; 2048]).is_err());
}

/// Once a controller has completed a block, a stranger streaming whole valid blocks
/// beside it is foreign: it cannot take the stream over while the controller sends.
#[test]
fn without_a_configured_peer_a_confirmed_controller_keeps_the_stream() {
    use std::net::UdpSocket;
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    let controller = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (outcome, answers) = serve_without_peer(
        UdpSocket::bind("127.0.0.1:0").unwrap(),
        &controller,
        |host| {
            send_blocks(&controller, host, 0, 5);
            for k in 0..10 {
                send_blocks(&stranger, host, 1000 + k, 1);
                send_blocks(&controller, host, 5 + k, 1);
            }
        },
    );
    assert_eq!(outcome.blocks_answered(), 15, "{:?}", outcome.counters);
    assert_eq!(answers, 15);
    assert_eq!(outcome.counters.drops.foreign, 10 * 16);
    assert_eq!(outcome.peer_changes, 0);
    assert_eq!(outcome.peer, Some(controller.local_addr().unwrap()));
}

/// A host's warm-up counts blocks by their numbers, the controller's schedule: a
/// controller that sends its first blocks late (in a burst) shifts no block into or out
/// of the count.
#[test]
fn the_warmup_is_counted_in_blocks_not_in_arrival_time() {
    use netaudio::host::{self, HostConfig};
    use std::net::UdpSocket;
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let host_socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let host_addr = host_socket.local_addr().unwrap();
    let controller = UdpSocket::bind("127.0.0.1:0").unwrap();
    let config = HostConfig {
        peer: Some(controller.local_addr().unwrap()),
        synth: false,
        workers: 0,
        policy: Policy::Other { nice: 0 },
        cpus: None,
        groups: Vec::new(),
        poll: PollMode::Block,
        warmup: host::Warmup::FirstBlocks(10),
    };
    let stop = AtomicBool::new(false);
    let outcome = std::thread::scope(|scope| {
        host::prepare_socket(&host_socket, PollMode::Block);
        let h = scope.spawn(|| host::serve::<Counts>(&config, host_socket, &stop, 64));
        std::thread::sleep(Duration::from_millis(50));
        // The first 30 blocks at once (a controller catching up), then 20 at pace.
        for block in 0..30 {
            send_blocks(&controller, host_addr, block, 1);
        }
        send_blocks(&controller, host_addr, 30, 20);
        std::thread::sleep(Duration::from_millis(100));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        h.join().unwrap()
    });
    assert_eq!(
        (outcome.answers_in_warmup, outcome.blocks_answered()),
        (10, 40),
        "{:?}",
        outcome.counters
    );
    assert_eq!(outcome.counted_from_block, Some(10));
}
