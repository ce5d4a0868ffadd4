//! Why a block missed its deadline, block by block, when the controller and the host run
//! in one process and so read one clock: the host publishes, for every block it answers,
//! how long the block's last packet took to reach it and how long it then took to answer
//! ([`HostShares`]); the controller, timing an answer that came late, splits the block's
//! `tf − t0` into four parts ([`BlockParts`]) and counts the block under the largest
//! ([`MissCauses`]):
//!
//! - **sent late**: the controller's own sending, the spread of the block's packets
//!   beyond the 15 packet intervals (0.68 ms) between its first and its last;
//! - **on the way to the host**: the last packet's send to its arrival at the host: the
//!   queue that shapes the link (tc's, or the user-level service's ring) and the
//!   kernel's path;
//! - **the host**: that arrival to the answer's send (`t2`): the host's thread waking,
//!   the synth, the send;
//! - **on the way back**: `t2` to the answer's arrival at the controller (`tf`).
//!
//! Ends in two processes (or on two machines) share no clock and no memory: their
//! controller counts no causes (`None`), never a guess.
//!
//! Real-time contract: [`HostShares::publish`], [`HostShares::get`] and
//! [`MissCauses::count`] allocate, lock and block on nothing.

use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

use crate::wire::{self, ANSWER_RING_BLOCKS, PACKETS_PER_BLOCK};

/// The time between a block's first and last packet at the controller's rate: 15
/// packet intervals, 680.3 µs.
pub const NOMINAL_SPREAD_NS: u64 = wire::packet_due_ns(PACKETS_PER_BLOCK as u64 - 1);

/// The role of the host's thread that receives the blocks and answers them.
pub const HOST_THREAD: &str = "host network thread";

/// The host's two shares of each of the last [`ANSWER_RING_BLOCKS`] blocks it answered,
/// for a controller in the same process: written by the host's network thread before it
/// sends the answer, read by the controller's receiver once the answer arrived. Each
/// slot holds the block's number beside its time (one atomic word: block in the high
/// half, ns in the low half, saturated at 4.29 s), so a reader never takes another
/// block's time for this one's.
#[derive(Debug)]
pub struct HostShares {
    to_host: Box<[AtomicU64]>,
    host: Box<[AtomicU64]>,
    /// The host's network thread's id (0: not yet known).
    host_tid: AtomicI32,
    /// The host's threads by role (its network thread, its synth workers), written
    /// while they start and end, never while blocks are answered.
    threads: std::sync::Mutex<Vec<(String, i32)>>,
}

impl Default for HostShares {
    fn default() -> Self {
        HostShares::new()
    }
}

fn pack(block: u32, ns: u64) -> u64 {
    (u64::from(block) << 32) | ns.min(u64::from(u32::MAX))
}

impl HostShares {
    /// Empty (allocates 64 KiB: before the threads start).
    pub fn new() -> HostShares {
        // Slot i starts with a block number that never maps to it: nothing is read
        // before the host wrote it.
        let empty = |i: usize| AtomicU64::new(pack((i as u32).wrapping_add(1), 0));
        HostShares {
            to_host: (0..ANSWER_RING_BLOCKS).map(empty).collect(),
            host: (0..ANSWER_RING_BLOCKS).map(empty).collect(),
            host_tid: AtomicI32::new(0),
            threads: std::sync::Mutex::default(),
        }
    }

    /// The host's thread `tid` in `role` (`network thread` is the one whose blocks are
    /// timed). Not real-time safe: call as the thread starts or ends.
    pub fn name_thread(&self, role: &str, tid: i32) {
        if role == HOST_THREAD {
            self.host_tid.store(tid, Ordering::Release);
        }
        if let Ok(mut t) = self.threads.lock() {
            t.push((role.to_string(), tid));
        }
    }

    /// The host's network thread, once it said so. Real-time safe.
    pub fn host_thread(&self) -> Option<i32> {
        Some(self.host_tid.load(Ordering::Acquire)).filter(|&t| t > 0)
    }

    /// The host's threads by role, as they were named.
    pub fn threads(&self) -> Vec<(String, i32)> {
        self.threads.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// The host's thread, before it answers `block`: its last packet took `to_host_ns`
    /// from the controller's send to its arrival, and the host `host_ns` from that
    /// arrival to the answer's send. Real-time safe.
    pub fn publish(&self, block: u32, to_host_ns: u64, host_ns: u64) {
        let i = block as usize % ANSWER_RING_BLOCKS;
        self.to_host[i].store(pack(block, to_host_ns), Ordering::Release);
        self.host[i].store(pack(block, host_ns), Ordering::Release);
    }

    /// What the host published for `block` (way to the host, the host's own), `None`
    /// when it published nothing for it or a block 4096 later took its place.
    /// Real-time safe.
    pub fn get(&self, block: u32) -> Option<(u64, u64)> {
        let i = block as usize % ANSWER_RING_BLOCKS;
        let unpack = |v: u64| (v >> 32 == u64::from(block)).then_some(v & u64::from(u32::MAX));
        Some((
            unpack(self.to_host[i].load(Ordering::Acquire))?,
            unpack(self.host[i].load(Ordering::Acquire))?,
        ))
    }
}

/// Where the time of one answered block went, ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockParts {
    /// The controller's sending beyond [`NOMINAL_SPREAD_NS`].
    pub sent_late_ns: u64,
    /// The last packet's send to its arrival at the host.
    pub to_host_ns: u64,
    /// That arrival to the answer's send.
    pub host_ns: u64,
    /// The answer's send to its arrival at the controller.
    pub way_back_ns: u64,
}

/// The part of a block's time that made it miss (the largest).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissCause {
    /// The controller sent the block's packets late.
    SentLate,
    /// They waited on the way to the host.
    ToHost,
    /// The host answered late after the last packet arrived.
    Host,
    /// The answer was late on the way back.
    WayBack,
}

impl BlockParts {
    /// The parts of a block sent at `t0` (its first packet), answered at `t2` (the
    /// answer's send) and timed at `tf` (its arrival), all on one clock, with the
    /// host's shares (`to_host_ns`, `host_ns`): the controller's sending is what is left
    /// of `t2 − t0`.
    pub fn of(t0: u64, t2: u64, tf: u64, (to_host_ns, host_ns): (u64, u64)) -> BlockParts {
        let sending = t2
            .saturating_sub(t0)
            .saturating_sub(to_host_ns.saturating_add(host_ns));
        BlockParts {
            sent_late_ns: sending.saturating_sub(NOMINAL_SPREAD_NS),
            to_host_ns,
            host_ns,
            way_back_ns: tf.saturating_sub(t2),
        }
    }

    /// The largest part (a tie goes to the earlier on the block's path).
    pub fn largest(&self) -> MissCause {
        let parts = [
            (self.sent_late_ns, MissCause::SentLate),
            (self.to_host_ns, MissCause::ToHost),
            (self.host_ns, MissCause::Host),
            (self.way_back_ns, MissCause::WayBack),
        ];
        let mut best = parts[0];
        for p in &parts[1..] {
            if p.0 > best.0 {
                best = *p;
            }
        }
        best.1
    }
}

/// The blocks answered late, each counted under the part of its time that was largest
/// ([`BlockParts::largest`]). Their sum is the blocks answered late.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MissCauses {
    /// The controller sent them late.
    pub sent_late: u64,
    /// They waited on the way to the host.
    pub to_host: u64,
    /// The host answered them late.
    pub host: u64,
    /// Their answers were late on the way back.
    pub way_back: u64,
    /// The host's shares were gone (the answer came 4096 blocks, 3 s, after another
    /// took their slot): not split.
    pub unsplit: u64,
}

impl MissCauses {
    /// Counts one block answered late, by its parts (`None`: not split). Real-time
    /// safe.
    pub fn count(&mut self, parts: Option<BlockParts>) {
        match parts.map(|p| p.largest()) {
            Some(MissCause::SentLate) => self.sent_late += 1,
            Some(MissCause::ToHost) => self.to_host += 1,
            Some(MissCause::Host) => self.host += 1,
            Some(MissCause::WayBack) => self.way_back += 1,
            None => self.unsplit += 1,
        }
    }

    /// Every block counted.
    pub fn total(&self) -> u64 {
        self.sent_late + self.to_host + self.host + self.way_back + self.unsplit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_is_counted_under_its_largest_part() {
        const US: u64 = 1000;
        let t0 = 1_000_000 * US;
        // Sent on schedule (the last packet 680 us after the first), 3 us on the way,
        // then the host's thread held off 1.5 ms, back in 5 us: the host's.
        let t2 = t0 + NOMINAL_SPREAD_NS + 3 * US + 1500 * US;
        let held = BlockParts::of(t0, t2, t2 + 5 * US, (3 * US, 1500 * US));
        assert_eq!(held.sent_late_ns, 0);
        assert_eq!(held.largest(), MissCause::Host);
        // The last packet sent 900 us behind the first's schedule, the rest quick.
        let t2 = t0 + NOMINAL_SPREAD_NS + 900 * US + 50 * US;
        let late = BlockParts::of(t0, t2, t2 + 5 * US, (10 * US, 40 * US));
        assert_eq!(late.sent_late_ns, 900 * US);
        assert_eq!(late.largest(), MissCause::SentLate);
        // Queued behind the bulk: 1 ms on the way.
        let t2 = t0 + NOMINAL_SPREAD_NS + 1000 * US + 30 * US;
        let queued = BlockParts::of(t0, t2, t2 + 5 * US, (1000 * US, 30 * US));
        assert_eq!(queued.largest(), MissCause::ToHost);
        let t2 = t0 + NOMINAL_SPREAD_NS + 40 * US;
        let back = BlockParts::of(t0, t2, t2 + 800 * US, (10 * US, 30 * US));
        assert_eq!(back.largest(), MissCause::WayBack);
        let mut causes = MissCauses::default();
        for p in [held, late, queued, back] {
            causes.count(Some(p));
        }
        causes.count(None);
        assert_eq!(
            causes,
            MissCauses {
                sent_late: 1,
                to_host: 1,
                host: 1,
                way_back: 1,
                unsplit: 1
            }
        );
        assert_eq!(causes.total(), 5);
    }

    #[test]
    fn a_slot_answers_only_for_its_own_block() {
        let shares = HostShares::new();
        // Nothing published: no block finds a time, whatever its slot.
        for block in [0, 1, 4095, 4096, u32::MAX] {
            assert_eq!(shares.get(block), None);
        }
        shares.publish(7, 3_000, 40_000);
        assert_eq!(shares.get(7), Some((3_000, 40_000)));
        // Block 7 + 4096 shares its slot: not its time.
        assert_eq!(shares.get(7 + ANSWER_RING_BLOCKS as u32), None);
        shares.publish(7 + ANSWER_RING_BLOCKS as u32, 1, 2);
        assert_eq!(shares.get(7), None);
        // Saturated, not wrapped.
        shares.publish(9, u64::MAX, 5_000_000_000);
        assert_eq!(
            shares.get(9),
            Some((u64::from(u32::MAX), u64::from(u32::MAX)))
        );
    }
}
