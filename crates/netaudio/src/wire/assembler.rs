//! The host side: gathering input packets into blocks.

use super::*;

/// A block number jump (forward or back) larger than this, in blocks, is taken as the
/// controller restarting rather than as loss or delay: the assembler starts again at the
/// new block and counts a resync instead of a billion missing packets. 1024 blocks are
/// 0.74 s, far longer than any delay a LAN adds.
pub const RESYNC_GAP_BLOCKS: u32 = 1024;

/// A complete block as the assembler hands it out.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AssembledBlock {
    /// The block number.
    pub block: u32,
    /// When the first of its packets to arrive arrived (`t1`, the caller's clock).
    pub first_arrival_ns: u64,
    /// The `sender_time_ns` of its packet 0 (`t0`, the controller's clock): the answer's
    /// `echo_time_ns`.
    pub first_packet_sender_ns: u64,
    /// When the packet that completed it arrived.
    pub last_arrival_ns: u64,
    /// The `sender_time_ns` of the packet that completed it (the sender's clock): with
    /// `last_arrival_ns`, its way to the host when both ends read one clock.
    pub last_packet_sender_ns: u64,
    /// How many of its packets arrived out of order (after a higher index of the same
    /// block, or after a packet of the next block).
    pub reordered_packets: u32,
    /// Its 32 frames, `[frame][pad]`.
    pub frames: BlockFrames,
}

/// The assembler's counts since `new` or `reset`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AssemblerCounters {
    /// Packets not used, by reason (the assembler records `duplicate`, `stale` and
    /// `bad_index`; the caller adds parse errors and foreign senders through
    /// [`BlockAssembler::record_drop`]).
    pub drops: DropCounters,
    /// Packets placed into a block (complete or not).
    pub packets_accepted: u64,
    /// Blocks handed out complete.
    pub blocks_complete: u64,
    /// Blocks given up with packets missing: pushed out of the window by a newer block,
    /// dropped at a resync, or still in flight at [`BlockAssembler::finish`]. Includes
    /// `blocks_skipped`.
    pub blocks_incomplete: u64,
    /// Incomplete blocks of which no packet arrived at all (a gap in block numbers).
    pub blocks_skipped: u64,
    /// Packets missing from the incomplete blocks (16 for each skipped block).
    pub packets_missing: u64,
    /// Packets used although they arrived out of order.
    pub reordered: u64,
    /// Block-number jumps of more than [`RESYNC_GAP_BLOCKS`].
    pub resyncs: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SlotState {
    /// Not a block of this stream (before the first block, after a resync, or after
    /// `finish`): leaving the window uncounted. Packets may still start it.
    Void,
    /// A block of the stream with no packet yet.
    Expected,
    /// Some packets arrived.
    Filling,
    /// Complete, or closed by `finish`: further packets are stale.
    Done,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Slot {
    state: SlotState,
    /// Bit i: packet i arrived.
    present: u16,
    assembled: AssembledBlock,
}

impl Slot {
    const EMPTY: Slot = Slot {
        state: SlotState::Void,
        present: 0,
        assembled: AssembledBlock {
            block: 0,
            first_arrival_ns: 0,
            first_packet_sender_ns: 0,
            last_arrival_ns: 0,
            last_packet_sender_ns: 0,
            reordered_packets: 0,
            frames: [[PadFrame::ZERO; PADS]; FRAMES_PER_BLOCK],
        },
    };

    fn open(&mut self, block: u32, state: SlotState) {
        self.state = state;
        self.present = 0;
        self.assembled.block = block;
        self.assembled.reordered_packets = 0;
    }
}

pub(super) const ALL_PRESENT: u16 = u16::MAX >> (16 - PACKETS_PER_BLOCK);

/// Gathers input packets into complete 32-frame blocks (host side, on the receive
/// thread).
///
/// The window holds the newest block seen and the one before it, so packets reordered
/// across one block boundary are still used. Rules, per pushed packet:
///
/// - index above 15 (a hand-built packet; [`parse`] never yields one): `bad_index`;
/// - for a block older than the window, or already complete: `stale`;
/// - same block and index as one already placed: `duplicate`;
/// - for a block newer than the window: the window moves; blocks leaving it unfinished
///   count as incomplete with their missing packets, and blocks jumped over entirely as
///   skipped (16 packets missing each). A jump of more than [`RESYNC_GAP_BLOCKS`] either
///   way is a resync instead (in-flight blocks incomplete, the gap not counted);
/// - after a higher index of its block, or for the older block of the window once the
///   newer has begun: used, and counted `reordered`.
///
/// Block numbers compare by serial-number arithmetic (RFC 1982), so the stream runs
/// through `u32::MAX` to 0 without a seam. The first block may be incomplete when the
/// host starts mid-block; blocks before the first packet seen are not counted.
///
/// No method allocates; the struct is about 25 KiB, built once with [`BlockAssembler::new`].
#[derive(Clone, Debug)]
pub struct BlockAssembler {
    /// Indexed by block number & 1: the window's two blocks never share a slot.
    slots: [Slot; 2],
    newest: u32,
    started: bool,
    counters: AssemblerCounters,
}

impl Default for BlockAssembler {
    fn default() -> Self {
        BlockAssembler::new()
    }
}

impl BlockAssembler {
    /// An empty assembler.
    pub fn new() -> BlockAssembler {
        BlockAssembler {
            slots: [Slot::EMPTY; 2],
            newest: 0,
            started: false,
            counters: AssemblerCounters::default(),
        }
    }

    /// Forgets every block and zeroes the counters, as after `new`.
    pub fn reset(&mut self) {
        for slot in &mut self.slots {
            slot.state = SlotState::Void;
            slot.present = 0;
        }
        self.newest = 0;
        self.started = false;
        self.counters = AssemblerCounters::default();
    }

    /// Places one packet, received at `arrival_ns`. Returns the block it completes,
    /// valid until the next call.
    pub fn push(&mut self, packet: &InputPacket, arrival_ns: u64) -> Option<&AssembledBlock> {
        let header = &packet.header;
        let index = usize::from(header.index);
        if index >= PACKETS_PER_BLOCK {
            self.counters.drops.record(DropReason::BadIndex);
            return None;
        }
        let block = header.block;
        if !self.started {
            self.restart_at(block);
        }
        // Serial-number distance from the newest block, -2^31..2^31.
        let distance = block.wrapping_sub(self.newest) as i32;
        if distance.unsigned_abs() > RESYNC_GAP_BLOCKS {
            self.retire_both();
            self.restart_at(block);
            self.counters.resyncs += 1;
        } else if distance > 0 {
            self.advance_to(block, distance.unsigned_abs());
        } else if distance < -1 {
            self.counters.drops.record(DropReason::Stale);
            return None;
        }

        let older = block != self.newest;
        let slot = &mut self.slots[(block & 1) as usize];
        match slot.state {
            SlotState::Done => {
                self.counters.drops.record(DropReason::Stale);
                return None;
            }
            SlotState::Void | SlotState::Expected => {
                slot.open(block, SlotState::Filling);
                slot.assembled.first_arrival_ns = arrival_ns;
            }
            SlotState::Filling => {}
        }
        let bit = 1u16 << index;
        if slot.present & bit != 0 {
            self.counters.drops.record(DropReason::Duplicate);
            return None;
        }
        let after_higher_index = u32::from(slot.present) >> (index + 1) != 0;
        if older || after_higher_index {
            slot.assembled.reordered_packets += 1;
            self.counters.reordered += 1;
        }
        let first_frame = index * FRAMES_PER_PACKET;
        slot.assembled.frames[first_frame..first_frame + FRAMES_PER_PACKET]
            .copy_from_slice(&packet.frames);
        if index == 0 {
            slot.assembled.first_packet_sender_ns = header.sender_time_ns;
        }
        slot.present |= bit;
        self.counters.packets_accepted += 1;
        if slot.present == ALL_PRESENT {
            slot.state = SlotState::Done;
            slot.assembled.last_arrival_ns = arrival_ns;
            slot.assembled.last_packet_sender_ns = header.sender_time_ns;
            self.counters.blocks_complete += 1;
            return Some(&slot.assembled);
        }
        None
    }

    /// Counts a datagram the caller dropped before pushing (a [`WireError::kind`], or
    /// [`DropReason::Foreign`]), so one set of counters covers the whole receive path.
    pub fn record_drop(&mut self, reason: DropReason) {
        self.counters.drops.record(reason);
    }

    /// Ends a run: blocks still in flight count as incomplete (a block of the window
    /// with no packet yet as skipped). Later packets for the window's blocks are stale.
    /// Calling it twice counts nothing more.
    pub fn finish(&mut self) {
        self.retire_both();
        for slot in &mut self.slots {
            slot.state = SlotState::Done;
        }
    }

    /// Forgets the blocks in flight as if their packets had never been placed: those
    /// packets move from `packets_accepted` to [`DropReason::Unconfirmed`], no block is
    /// counted incomplete, and the next packet starts the stream again. For a caller that
    /// stops following a sender it never confirmed (a stray datagram is no stream).
    /// Real-time safe.
    pub fn abandon(&mut self) {
        for slot in &mut self.slots {
            if slot.state == SlotState::Filling {
                let placed = u64::from(slot.present.count_ones());
                self.counters.packets_accepted -= placed;
                self.counters.drops.unconfirmed += placed;
                self.counters.reordered = self
                    .counters
                    .reordered
                    .saturating_sub(u64::from(slot.assembled.reordered_packets));
            }
            slot.state = SlotState::Void;
            slot.present = 0;
        }
        self.started = false;
    }

    /// The counts so far.
    pub fn counters(&self) -> AssemblerCounters {
        self.counters
    }

    /// The newest block number seen since `new` or `reset`, if any packet was pushed.
    pub fn newest_block(&self) -> Option<u32> {
        self.started.then_some(self.newest)
    }

    fn restart_at(&mut self, block: u32) {
        let before = block.wrapping_sub(1);
        self.slots[(before & 1) as usize].open(before, SlotState::Void);
        self.slots[(block & 1) as usize].open(block, SlotState::Expected);
        self.newest = block;
        self.started = true;
    }

    /// Moves the window forward by `distance` (1..=RESYNC_GAP_BLOCKS) blocks to `block`.
    fn advance_to(&mut self, block: u32, distance: u32) {
        if distance == 1 {
            // The slot of `block` holds the window's older block, which leaves it.
            let slot = (block & 1) as usize;
            self.retire(slot);
            self.slots[slot].open(block, SlotState::Expected);
        } else {
            self.retire_both();
            let skipped = u64::from(distance - 2);
            self.counters.blocks_incomplete += skipped;
            self.counters.blocks_skipped += skipped;
            self.counters.packets_missing += skipped * PACKETS_PER_BLOCK as u64;
            let before = block.wrapping_sub(1);
            self.slots[(before & 1) as usize].open(before, SlotState::Expected);
            self.slots[(block & 1) as usize].open(block, SlotState::Expected);
        }
        self.newest = block;
    }

    fn retire_both(&mut self) {
        self.retire(0);
        self.retire(1);
    }

    /// Counts the block in `slot` if it leaves the window unfinished.
    fn retire(&mut self, slot: usize) {
        let slot = &mut self.slots[slot];
        let missing = match slot.state {
            SlotState::Void | SlotState::Done => return,
            SlotState::Expected => {
                self.counters.blocks_skipped += 1;
                PACKETS_PER_BLOCK as u64
            }
            SlotState::Filling => u64::from(PACKETS_PER_BLOCK as u32 - slot.present.count_ones()),
        };
        self.counters.blocks_incomplete += 1;
        self.counters.packets_missing += missing;
        slot.state = SlotState::Void;
    }
}
