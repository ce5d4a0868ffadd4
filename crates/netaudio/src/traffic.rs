//! The interference the study ran beside the audio flow: an abusive UDP flood towards
//! the host, and an abusive data stream to a sink application sharing the link.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use engine::clock::monotonic_ns;

use crate::{service, udp};

/// Payload of the stream's datagrams (a full Ethernet frame with the headers).
pub const STREAM_DATAGRAM: usize = 1472;

/// Sends the abusive stream at `mbps` until `stop`, in bursts every half millisecond,
/// through `via` (the service) or straight to the kernel (`socket` connected to the sink:
/// with UDP segmentation offload 64 KiB a buffer and 64 buffers a system call, which
/// fills a gigabit link on a small VM; without it, 64 datagrams a system call). Returns
/// datagrams sent and refused, and the offered Mbit/s.
pub fn stream_send(
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

/// The sink application: joins `groups` (its cell's `tasks` files), then receives and
/// counts until `stop`. Returns datagrams received and the Mbit/s of payload.
///
/// It takes the stream's 64 KiB segmented sends whole ([`udp::set_receive_coalescing`])
/// and counts without reading ([`udp::CountBatch`]). Cut into datagrams on the way in,
/// each of them costs the kernel 44 deliveries in softirq, in whichever thread ran the
/// link's queue: over the veth, mostly the controller's real-time sender, which then
/// fell behind its schedule (pacing error median 26 us alone, 79-392 us beside the
/// stream; half that coalesced), and under load the sink itself dropped what it could
/// not read (the link carried 820 Mbit/s of the stream, the sink counted 520-740).
pub fn stream_sink(
    socket: UdpSocket,
    groups: &[std::path::PathBuf],
    stop: &AtomicBool,
) -> (u64, f64) {
    let _ = qos::join_groups(groups);
    udp::set_receive_buffer(&socket, 8 << 20);
    udp::set_receive_coalescing(&socket);
    let _ = socket.set_read_timeout(Some(Duration::from_millis(50)));
    let mut batch = udp::CountBatch::new();
    let start = monotonic_ns();
    let (mut received, mut bytes) = (0u64, 0u64);
    while !stop.load(Ordering::Relaxed) {
        let (datagrams, payload) = batch.recv(&socket).unwrap_or((0, 0));
        received += datagrams;
        bytes += payload;
    }
    let seconds = (monotonic_ns() - start) as f64 / 1e9;
    (received, bytes as f64 * 8.0 / 1e6 / seconds.max(1e-9))
}

/// Datagram size of the flood: a full Ethernet payload.
const FLOOD_DATAGRAM: usize = 1400;

/// Sends junk to `host` at `mbps` until `stop`, in bursts every millisecond. Returns
/// datagrams sent and the Mbit/s achieved.
pub fn flood(socket: UdpSocket, host: SocketAddr, mbps: u32, stop: &AtomicBool) -> (u64, f64) {
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
