//! audiolat's user-level network service: the senders of one side of the link hand their
//! datagrams to it instead of to the kernel, and one service thread puts them on the
//! link, never faster than the link's capacity, in the order its discipline chooses:
//!
//! - [`Discipline::Fifo`]: first come, first served across flows: no guarantee, the
//!   study's network service without reservations;
//! - [`Discipline::MClock`]: the [`mclock`](crate::mclock) scheduler with a
//!   reservation, weight and limit per flow (the study's network service with a
//!   throughput reservation for the music application).
//!
//! The service thread is on the audio flow's path, so it runs at the policy (and on the
//! CPUs) its caller gives it, the audio threads' own: at an ordinary policy on a busy
//! machine it waits for a CPU behind every other task, and the audio's datagrams wait in
//! its ring, reservation or not. What it waited is in its outcome.
//!
//! Each flow has its own wait-free ring (one producer: the flow's sender; one consumer:
//! the service), so a sender never blocks or locks; a full ring refuses the datagram,
//! which the sender counts as lost. The link gate is a token bucket at the link rate
//! with a burst of [`BURST_NS`] of link time: the service sleeps between bursts instead
//! of spinning. Bits on the link are the datagram plus
//! [`WIRE_OVERHEAD_BYTES`] of headers, as HTB
//! counts them.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use engine::clock::{monotonic_ns, sleep_until_ns};
use engine::rt::{Policy, SchedGrant, SchedStat, ThreadRt};

use crate::mclock::{FlowSpec, MClock, Phase};
use crate::netns::WIRE_OVERHEAD_BYTES;
use crate::udp;

/// The largest datagram a flow may hand over.
pub const MAX_FRAME: usize = 1472;

/// Link time the gate lets out at once (a burst), ns: the service wakes about this
/// often under load.
pub const BURST_NS: u64 = 100_000;

/// Consecutive datagrams of one flow, all of one size but the last, which leave in one
/// system call as UDP GSO (the kernel cuts them late on the path): the service's
/// per-datagram cost, not the link, would otherwise cap a gigabit stream on a small
/// machine. Filled within one burst of the link gate; sent before the service sleeps
/// or turns to another flow.
struct Batch {
    flow: usize,
    segment: usize,
    count: usize,
    /// Bit i: datagram i was served in mClock's reservation phase.
    reserved: u64,
    /// A shorter datagram ended it: only the last segment may be short.
    closed: bool,
    bytes: Vec<u8>,
    /// The path segments; cleared on the first send that fails for another reason
    /// than a full queue, and then each datagram goes alone.
    gso: bool,
}

/// Bytes of one GSO send at most (a UDP datagram's 64 KiB).
const BATCH_BYTES: usize = 65_507;
/// Segments of one GSO send at most (the kernel's UDP_MAX_SEGMENTS).
const BATCH_SEGMENTS: usize = 64;

impl Batch {
    fn new() -> Batch {
        Batch {
            flow: 0,
            segment: 0,
            count: 0,
            reserved: 0,
            closed: false,
            bytes: Vec::with_capacity(BATCH_BYTES),
            gso: true,
        }
    }

    /// Adds a datagram if it can go in the same send; `false` when it cannot (send the
    /// batch first). An empty datagram always goes alone.
    fn push(&mut self, flow: usize, datagram: &[u8], reserved: bool) -> bool {
        let fits = self.count == 0
            || (flow == self.flow
                && !self.closed
                && !datagram.is_empty()
                && datagram.len() <= self.segment
                && self.bytes.len() + datagram.len() <= BATCH_BYTES
                && self.count < BATCH_SEGMENTS);
        if !fits {
            return false;
        }
        if self.count == 0 {
            self.flow = flow;
            self.segment = datagram.len();
        }
        self.closed = datagram.len() < self.segment || datagram.is_empty();
        self.bytes.extend_from_slice(datagram);
        self.reserved |= u64::from(reserved) << self.count;
        self.count += 1;
        true
    }

    /// Sends what it holds and counts it for its flow.
    fn flush(&mut self, outs: &[FlowOut], counts: &mut [FlowCount]) {
        if self.count == 0 {
            return;
        }
        let out = &outs[self.flow];
        let c = &mut counts[self.flow];
        let mut sent_all = None;
        if self.gso && self.count > 1 && self.segment > 0 {
            match udp::send_segmented_to(&out.socket, &self.bytes, self.segment as u16, out.to) {
                Ok(ok) => sent_all = Some(ok),
                Err(_) => self.gso = false,
            }
        }
        match sent_all {
            Some(true) => {
                c.sent += self.count as u64;
                c.bytes += self.bytes.len() as u64;
                c.by_reservation += u64::from(self.reserved.count_ones());
            }
            Some(false) => c.kernel_refused += self.count as u64,
            None => {
                // One at a time. Only the last may be short, and an empty one is alone.
                for i in 0..self.count {
                    let from = (i * self.segment).min(self.bytes.len());
                    let to = ((i + 1) * self.segment).min(self.bytes.len());
                    let datagram = &self.bytes[from..to];
                    if let Ok(true) = udp::send_to(&out.socket, datagram, out.to) {
                        c.sent += 1;
                        c.bytes += datagram.len() as u64;
                        c.by_reservation += (self.reserved >> i) & 1;
                    } else {
                        c.kernel_refused += 1;
                    }
                }
            }
        }
        self.count = 0;
        self.reserved = 0;
        self.closed = false;
        self.bytes.clear();
    }
}

/// One datagram waiting in a flow's ring.
#[derive(Clone, Copy)]
pub struct Frame {
    len: u16,
    queued_ns: u64,
    bytes: [u8; MAX_FRAME],
}

impl Default for Frame {
    fn default() -> Self {
        Frame {
            len: 0,
            queued_ns: 0,
            bytes: [0; MAX_FRAME],
        }
    }
}

/// A flow's sending end: owned by one sender thread.
pub struct FlowTx {
    producer: rtrb::Producer<Frame>,
    scratch: Box<Frame>,
}

impl FlowTx {
    /// Hands a datagram to the service; `false` when the flow's ring is full (the
    /// datagram is lost) or it is larger than [`MAX_FRAME`]. Copies, never allocates or
    /// blocks.
    pub fn send(&mut self, bytes: &[u8]) -> bool {
        if bytes.len() > MAX_FRAME || self.producer.is_full() {
            return false;
        }
        self.scratch.len = bytes.len() as u16;
        self.scratch.queued_ns = monotonic_ns();
        self.scratch.bytes[..bytes.len()].copy_from_slice(bytes);
        self.producer.push(*self.scratch).is_ok()
    }
}

/// Where a flow's datagrams go.
pub struct FlowOut {
    /// The socket they leave from (its address is what the receiver sees).
    pub socket: UdpSocket,
    /// Their destination.
    pub to: SocketAddr,
}

/// How the service orders the flows.
#[derive(Clone, Debug, PartialEq)]
pub enum Discipline {
    /// First come, first served.
    Fifo,
    /// mClock with one spec per flow.
    MClock(Vec<FlowSpec>),
}

impl Discipline {
    /// Its name for the record.
    pub fn name(&self) -> &'static str {
        match self {
            Discipline::Fifo => "fifo",
            Discipline::MClock(_) => "mclock",
        }
    }
}

/// The service's configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct ServiceConfig {
    /// The link's capacity, Mbit/s.
    pub link_mbps: f64,
    /// Datagrams each flow's ring holds.
    pub queue: usize,
    /// The order.
    pub discipline: Discipline,
    /// The service thread's scheduling policy (the audio threads').
    pub policy: Policy,
    /// Its CPUs, if pinned.
    pub cpus: Option<Vec<usize>>,
}

/// What the service did, per flow.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowCount {
    /// Datagrams put on the link.
    pub sent: u64,
    /// Their bytes (payload).
    pub bytes: u64,
    /// Served in mClock's reservation phase.
    pub by_reservation: u64,
    /// The kernel would not take them (its queue full).
    pub kernel_refused: u64,
    /// Largest wait in the service, ns.
    pub max_wait_ns: u64,
}

/// What the service did.
#[derive(Clone, Debug, PartialEq)]
pub struct ServiceOutcome {
    /// Per flow.
    pub flows: Vec<FlowCount>,
    /// The service thread's policy as granted.
    pub thread: SchedGrant,
    /// Its time on a CPU and waiting for one while it served.
    pub sched: Option<SchedStat>,
    /// Seconds it ran.
    pub seconds: f64,
    /// The discipline's name.
    pub discipline: &'static str,
    /// The link's capacity, Mbit/s.
    pub link_mbps: f64,
}

/// Starts the service thread. Returns one [`FlowTx`] per flow, in the order of `outs`,
/// and the thread, which ends when `stop` is raised.
pub fn spawn(
    config: &ServiceConfig,
    outs: Vec<FlowOut>,
    stop: Arc<AtomicBool>,
) -> Result<(Vec<FlowTx>, JoinHandle<ServiceOutcome>), String> {
    if !(config.link_mbps.is_finite() && config.link_mbps > 0.0) {
        return Err(format!(
            "link rate {} Mbit/s: use a positive rate",
            config.link_mbps
        ));
    }
    let scheduler = match &config.discipline {
        Discipline::Fifo => None,
        Discipline::MClock(specs) => {
            if specs.len() != outs.len() {
                return Err(format!(
                    "mClock has {} flow specs for {} flows",
                    specs.len(),
                    outs.len()
                ));
            }
            let bps: Vec<FlowSpec> = specs.clone();
            Some(MClock::new(&bps, config.queue)?)
        }
    };
    let mut txs = Vec::new();
    let mut rxs = Vec::new();
    for _ in &outs {
        let (p, c) = rtrb::RingBuffer::<Frame>::new(config.queue.max(1));
        txs.push(FlowTx {
            producer: p,
            scratch: Box::default(),
        });
        rxs.push(c);
    }
    let discipline = config.discipline.name();
    let link_mbps = config.link_mbps;
    let (policy, cpus) = (config.policy, config.cpus.clone());
    let handle = std::thread::Builder::new()
        .name("al-netsvc".into())
        .spawn(move || {
            let rt = ThreadRt::apply(&policy, cpus.as_deref(), 64 * 1024);
            let before = SchedStat::current_thread();
            let start = monotonic_ns();
            let flows = serve_flows(&outs, rxs, scheduler, link_mbps * 1e6, &stop);
            ServiceOutcome {
                flows,
                thread: rt.sched,
                sched: SchedStat::current_thread()
                    .zip(before)
                    .map(|(after, before)| after.since(before)),
                seconds: (monotonic_ns() - start) as f64 / 1e9,
                discipline,
                link_mbps,
            }
        })
        .map_err(|e| format!("starting the network service thread: {e}"))?;
    Ok((txs, handle))
}

/// The service thread's real-time loop: offers the rings' new frames to the scheduler,
/// paces the link at `link_bps`, sends the next flow's frame (mClock's pick, or the
/// oldest head without one) in batches, until `stop`. Returns the flows' counts.
fn serve_flows(
    outs: &[FlowOut],
    mut rxs: Vec<rtrb::Consumer<Frame>>,
    mut scheduler: Option<MClock>,
    link_bps: f64,
    stop: &AtomicBool,
) -> Vec<FlowCount> {
    let start = monotonic_ns();
    let n = outs.len();
    let mut counts = vec![FlowCount::default(); n];
    // Frames of each ring already handed to the scheduler.
    let mut seen = vec![0usize; n];
    let mut link_free_ns = start;
    let mut batch = Batch::new();
    while !stop.load(Ordering::Relaxed) {
        let now = monotonic_ns();
        if let Some(s) = scheduler.as_mut() {
            offer(s, &mut rxs, &mut seen, now);
        }
        if link_free_ns > now + BURST_NS {
            batch.flush(outs, &mut counts);
            sleep_until_ns(link_free_ns - BURST_NS);
            continue;
        }
        // Which flow goes next.
        let pick = match scheduler.as_mut() {
            Some(s) => s
                .dequeue(now)
                .map(|served| (served.flow, served.phase == Phase::Reservation)),
            None => oldest_head(&mut rxs).map(|f| (f, false)),
        };
        let Some((f, reserved)) = pick else {
            batch.flush(outs, &mut counts);
            let next = scheduler
                .as_ref()
                .and_then(|s| s.next_eligible_ns())
                .unwrap_or(now + 20_000)
                .min(now + 20_000)
                .max(now + 2_000);
            sleep_until_ns(next);
            continue;
        };
        let Ok(frame) = rxs[f].pop() else { continue };
        if scheduler.is_some() {
            seen[f] = seen[f].saturating_sub(1);
        }
        let len = frame.len as usize;
        let c = &mut counts[f];
        c.max_wait_ns = c.max_wait_ns.max(now.saturating_sub(frame.queued_ns));
        if !batch.push(f, &frame.bytes[..len], reserved) {
            batch.flush(outs, &mut counts);
            batch.push(f, &frame.bytes[..len], reserved);
        }
        let bits = ((len + WIRE_OVERHEAD_BYTES) * 8) as f64;
        link_free_ns = link_free_ns.max(now) + (bits * 1e9 / link_bps) as u64;
    }
    batch.flush(outs, &mut counts);
    counts
}

/// Hands the scheduler each ring's frames it has not seen yet (read without
/// committing: the frames stay in the ring until sent). Real-time safe.
fn offer(s: &mut MClock, rxs: &mut [rtrb::Consumer<Frame>], seen: &mut [usize], now: u64) {
    for (f, rx) in rxs.iter_mut().enumerate() {
        let waiting = rx.slots();
        if waiting <= seen[f] {
            continue;
        }
        let Ok(chunk) = rx.read_chunk(waiting) else {
            continue;
        };
        let (a, b) = chunk.as_slices();
        for frame in a.iter().chain(b.iter()).skip(seen[f]) {
            let bits = (u32::from(frame.len) + WIRE_OVERHEAD_BYTES as u32) * 8;
            if !s.enqueue(f, bits, now) {
                break;
            }
            seen[f] += 1;
        }
    }
}

/// FIFO across flows: the flow whose head frame was queued first.
fn oldest_head(rxs: &mut [rtrb::Consumer<Frame>]) -> Option<usize> {
    let mut best: Option<(usize, u64)> = None;
    for (f, rx) in rxs.iter_mut().enumerate() {
        if let Ok(head) = rx.peek() {
            if best.is_none_or(|(_, t)| head.queued_ns < t) {
                best = Some((f, head.queued_ns));
            }
        }
    }
    best.map(|(f, _)| f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_holds_one_flows_run_of_equal_datagrams_and_a_short_last_one() {
        let mut b = Batch::new();
        assert!(b.push(1, &[0; 800], true));
        assert!(b.push(1, &[0; 800], false));
        // Another flow, or a longer datagram, needs a send of its own.
        assert!(!b.push(0, &[0; 800], false));
        assert!(!b.push(1, &[0; 900], false));
        // A shorter one may end the batch, and nothing follows it.
        assert!(b.push(1, &[0; 300], false));
        assert!(!b.push(1, &[0; 300], false));
        assert_eq!((b.count, b.reserved, b.bytes.len()), (3, 0b001, 1900));
        // An empty datagram goes alone.
        let mut b = Batch::new();
        assert!(b.push(0, &[], false));
        assert!(!b.push(0, &[], false));
        let mut b = Batch::new();
        assert!(b.push(0, &[0; 10], false));
        assert!(!b.push(0, &[], false));
        // At most 64 segments and 64 KiB.
        let mut b = Batch::new();
        let mut n = 0;
        while b.push(2, &[0; 1000], false) {
            n += 1;
        }
        assert_eq!(n, BATCH_SEGMENTS);
        let mut b = Batch::new();
        let mut n = 0;
        while b.push(2, &[0; MAX_FRAME], false) {
            n += 1;
        }
        assert_eq!(n, BATCH_BYTES / MAX_FRAME);
    }

    #[test]
    fn a_flushed_batch_arrives_whole_and_is_counted_for_its_flow() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let outs = vec![FlowOut {
            socket: UdpSocket::bind("127.0.0.1:0").unwrap(),
            to: rx.local_addr().unwrap(),
        }];
        let mut counts = vec![FlowCount::default()];
        let mut b = Batch::new();
        for i in 0..5u8 {
            assert!(b.push(0, &[i; 500], i < 2));
        }
        b.flush(&outs, &mut counts);
        assert_eq!(b.count, 0);
        assert_eq!(
            (counts[0].sent, counts[0].bytes, counts[0].by_reservation),
            (5, 2500, 2)
        );
        let mut buf = [0u8; 2048];
        for i in 0..5u8 {
            let n = rx.recv(&mut buf).unwrap();
            assert_eq!(n, 500);
            assert!(buf[..n].iter().all(|&x| x == i), "datagram {i} in order");
        }
    }
}
