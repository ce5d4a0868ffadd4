//! The controller side: pairing answers with blocks.

use super::*;

/// Blocks whose send time the [`AnswerMatcher`] remembers: 4096 blocks, 2.97 s. Far
/// beyond the deadline, and on purpose: a receiving thread that could not run for a
/// while (a busy machine) finds the answers queued in its socket, and their blocks must
/// still be known when it reads them; a ring of a few deadlines would have pushed them
/// out and counted every answer unknown and every block lost. (The socket's queue holds
/// less than that, about 0.9 s of answers.)
pub const ANSWER_RING_BLOCKS: usize = 4096;

/// What an answer from the host turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The first answer to a block, within [`DEADLINE_NS`] of its first packet's send.
    OnTime {
        /// The block answered.
        block: u32,
        /// `tf − t0`: the answer's arrival minus the send time of the block's packet 0.
        end_to_end_ns: u64,
    },
    /// The first answer to a block, later than [`DEADLINE_NS`].
    Late {
        /// The block answered.
        block: u32,
        /// `tf − t0`, above [`DEADLINE_NS`].
        end_to_end_ns: u64,
    },
    /// A second answer to a block already answered.
    Duplicate {
        /// The block answered again.
        block: u32,
    },
    /// An answer to a block never sent, or sent so long ago that it left the ring.
    Unknown {
        /// The block number in the answer.
        block: u32,
    },
}

/// The matcher's counts since `new` or `reset`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MatcherCounters {
    /// Blocks sent ([`AnswerMatcher::sent`] calls).
    pub sent: u64,
    /// Blocks answered (first answers), on time or late.
    pub answered: u64,
    /// Of `answered`, those later than [`DEADLINE_NS`].
    pub late: u64,
    /// Second and later answers to one block.
    pub duplicates: u64,
    /// Answers to blocks not in the ring.
    pub unknown: u64,
    /// Blocks pushed out of the ring by newer sends without an answer: lost for good.
    pub evicted_unanswered: u64,
    /// First answers whose `echo_time_ns` is not the send time recorded for the block
    /// (the host echoed the wrong packet's time).
    pub echo_mismatches: u64,
    /// First answers that arrived before the recorded send time (a clock error; their
    /// `end_to_end_ns` is reported as 0).
    pub arrived_before_send: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EntryState {
    Empty,
    Waiting,
    Answered,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct SentBlock {
    state: EntryState,
    block: u32,
    sent_ns: u64,
}

/// Pairs the host's answers with the blocks the controller sent (controller side, on the
/// thread that owns the socket). A fixed ring of the last [`ANSWER_RING_BLOCKS`] blocks,
/// indexed by block number, so it runs through the `u32` wrap-around without a seam.
#[derive(Clone, Debug)]
pub struct AnswerMatcher {
    ring: [SentBlock; ANSWER_RING_BLOCKS],
    counters: MatcherCounters,
}

impl Default for AnswerMatcher {
    fn default() -> Self {
        AnswerMatcher::new()
    }
}

impl AnswerMatcher {
    const EMPTY: SentBlock = SentBlock {
        state: EntryState::Empty,
        block: 0,
        sent_ns: 0,
    };

    /// An empty matcher.
    pub fn new() -> AnswerMatcher {
        AnswerMatcher {
            ring: [Self::EMPTY; ANSWER_RING_BLOCKS],
            counters: MatcherCounters::default(),
        }
    }

    /// Forgets every block and zeroes the counters.
    pub fn reset(&mut self) {
        *self = AnswerMatcher::new();
    }

    /// Records that `block`'s packet 0 was handed to the kernel at
    /// `first_packet_sent_ns` (`t0`). A block still unanswered in the ring place it
    /// takes counts as `evicted_unanswered`; sending the same block number again while
    /// it waits only replaces its send time.
    pub fn sent(&mut self, block: u32, first_packet_sent_ns: u64) {
        let entry = &mut self.ring[block as usize % ANSWER_RING_BLOCKS];
        if entry.state == EntryState::Waiting && entry.block != block {
            self.counters.evicted_unanswered += 1;
        }
        *entry = SentBlock {
            state: EntryState::Waiting,
            block,
            sent_ns: first_packet_sent_ns,
        };
        self.counters.sent += 1;
    }

    /// Matches an answer that arrived at `arrival_ns` (`tf`, the clock `sent` used).
    pub fn answered(&mut self, packet: &OutputPacket, arrival_ns: u64) -> Answer {
        let block = packet.header.block;
        let entry = &mut self.ring[block as usize % ANSWER_RING_BLOCKS];
        if entry.block != block || entry.state == EntryState::Empty {
            self.counters.unknown += 1;
            return Answer::Unknown { block };
        }
        if entry.state == EntryState::Answered {
            self.counters.duplicates += 1;
            return Answer::Duplicate { block };
        }
        entry.state = EntryState::Answered;
        self.counters.answered += 1;
        if packet.header.echo_time_ns != entry.sent_ns {
            self.counters.echo_mismatches += 1;
        }
        if arrival_ns < entry.sent_ns {
            self.counters.arrived_before_send += 1;
        }
        let end_to_end_ns = arrival_ns.saturating_sub(entry.sent_ns);
        if end_to_end_ns > DEADLINE_NS {
            self.counters.late += 1;
            Answer::Late {
                block,
                end_to_end_ns,
            }
        } else {
            Answer::OnTime {
                block,
                end_to_end_ns,
            }
        }
    }

    /// Blocks whose deadline has passed at `now_ns` without an answer: those pushed out
    /// of the ring unanswered, plus those in it sent more than [`DEADLINE_NS`] before
    /// `now_ns`. A late answer arriving afterwards moves its block to `late`, so the
    /// number can fall; once a block leaves the ring unanswered it stays here.
    pub fn unanswered_so_far(&self, now_ns: u64) -> u64 {
        let overdue_in_ring = self
            .ring
            .iter()
            .filter(|e| {
                e.state == EntryState::Waiting && now_ns.saturating_sub(e.sent_ns) > DEADLINE_NS
            })
            .count() as u64;
        self.counters.evicted_unanswered + overdue_in_ring
    }

    /// Blocks sent and still waiting in the ring for their first answer (a block sent
    /// again under the same number while it waits counts twice: at the wrap-around).
    pub fn waiting(&self) -> u64 {
        let c = &self.counters;
        c.sent
            .saturating_sub(c.answered)
            .saturating_sub(c.evicted_unanswered)
    }

    /// The counts so far.
    pub fn counters(&self) -> MatcherCounters {
        self.counters
    }
}
