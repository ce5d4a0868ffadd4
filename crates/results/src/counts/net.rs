//! A network run's blocks as each end counts them, read from what it stored: the host
//! counts the answers it sent, the controller the answers it received. Both count the
//! blocks after their warm-up, by block number; when they count from the same block
//! (both ends in one run, or two processes with the same warm-up) their books are of
//! the same blocks, and
//!
//! - the controller: `blocks_sent = received on time + late + after the end + not
//!   received`;
//! - the two ends: an answer the host sent is received by the controller (on time,
//!   late or after the end), dropped by the controller's kernel on a full queue, lost on
//!   the way, or arrives after the controller stopped listening. So the host's
//!   `answers_sent` is at least the controller's `received`.
//!
//! Runs stored before these names (`answered`, `answered_in_warmup`, `misses`,
//! `send_dropped` on the host; `on_time`, `late`, `lost` on the controller) are read
//! under their old names; what they did not count is `None`, never 0.

use serde_json::Value;

use crate::model::Measurement;
use crate::records::net::{ControllerRecord, HostRecord, PhaseRecord};

fn count(v: &Value) -> Option<u64> {
    v.as_u64()
}

/// A network run's blocks as its host counted them: one phase of `net` (its `host`
/// record), or `net respond`'s result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostBlocks {
    /// Counted blocks whose answer left the host (the kernel took it).
    pub answers_sent: Option<u64>,
    /// Counted blocks whose answer the kernel would not take: answered and timed, never
    /// sent. (An older run counted only all refusals, the warm-up's too: `None` unless
    /// there were none.)
    pub answers_refused: Option<u64>,
    /// Counted blocks answered, sent or refused: every block the host timed (its
    /// response time's count).
    pub answered: Option<u64>,
    /// Blocks answered in the warm-up, not counted.
    pub answers_in_warmup: Option<u64>,
    /// Counted blocks answered whose response `t2 - t1` exceeded the deadline.
    pub responses_past_deadline: Option<u64>,
    /// The first counted block.
    pub counted_from_block: Option<u64>,
}

impl HostBlocks {
    /// The host's blocks from its stored record.
    pub fn of(host: &HostRecord) -> HostBlocks {
        let counted_from_block = host.counted_from_block;
        let answers_in_warmup = host.answers_in_warmup.or(host.answered_in_warmup);
        let sent = host.answers_sent;
        let refused = host.answers_refused;
        if sent.is_some() || refused.is_some() {
            return HostBlocks {
                answers_sent: sent,
                answers_refused: refused,
                answered: sent.zip(refused).map(|(s, r)| s + r),
                answers_in_warmup,
                responses_past_deadline: host.responses_past_deadline,
                counted_from_block,
            };
        }
        // An older run: `answered` counted the blocks answered, their answer refused or
        // not; `send_dropped` every refusal, the warm-up's too.
        let answered = host.answered;
        let answers_refused = host.send_dropped.filter(|&n| n == 0);
        HostBlocks {
            answers_sent: answered.zip(answers_refused).map(|(a, r)| a - r),
            answers_refused,
            answered,
            answers_in_warmup,
            responses_past_deadline: host.misses,
            counted_from_block,
        }
    }
}

/// A network run's blocks as its controller counted them: one phase of `net` (its
/// `controller` record), or `net emulate`'s result. Each counted block sent is in one
/// of the four `answers_*` counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ControllerBlocks {
    /// Counted blocks sent.
    pub blocks_sent: Option<u64>,
    /// Of those, blocks the controller itself sent late.
    pub blocks_sent_late: Option<u64>,
    /// Counted blocks whose first answer arrived within the deadline.
    pub answers_received_on_time: Option<u64>,
    /// Counted blocks whose first answer arrived past the deadline, before the run's end.
    pub answers_received_late: Option<u64>,
    /// Counted blocks whose first answer arrived after the run's end (the drain after
    /// the last packet left), while the controller still listened. `None` in a run
    /// stored before it was counted: its `answers_not_received` holds them.
    pub answers_received_after_end: Option<u64>,
    /// Counted blocks sent for which no answer was received.
    pub answers_not_received: Option<u64>,
    /// The first counted block.
    pub counted_from_block: Option<u64>,
}

impl ControllerBlocks {
    /// The controller's blocks from its stored record.
    pub fn of(controller: &ControllerRecord) -> ControllerBlocks {
        let c = controller;
        ControllerBlocks {
            blocks_sent: Some(c.blocks_sent),
            blocks_sent_late: c.blocks_sent_late,
            answers_received_on_time: c.answers_received_on_time.or(c.on_time),
            answers_received_late: c.answers_received_late.or(c.late),
            answers_received_after_end: c.answers_received_after_end,
            answers_not_received: c.answers_not_received.or(c.lost),
            counted_from_block: c.counted_from_block,
        }
    }

    /// Answers received to counted blocks (first answers): on time, late and after the
    /// end (none after the end in an older run, where those were not received).
    pub fn received(&self) -> Option<u64> {
        Some(
            self.answers_received_on_time?
                + self.answers_received_late?
                + self.answers_received_after_end.unwrap_or(0),
        )
    }

    /// Counted blocks with no answer by the run's end: answered after it, or not at all
    /// as far as the controller received.
    pub fn unanswered_in_run(&self) -> Option<u64> {
        Some(self.answers_not_received? + self.answers_received_after_end.unwrap_or(0))
    }

    /// Counted blocks that missed their deadline at the controller: answered late,
    /// after the end, or not at all.
    pub fn missed(&self) -> Option<u64> {
        Some(self.answers_received_late? + self.unanswered_in_run()?)
    }
}

/// One phase's blocks by both ends' books.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NetBlocks {
    /// The host's.
    pub host: HostBlocks,
    /// The controller's.
    pub controller: ControllerBlocks,
}

/// The counted blocks the controller got no answer for by the run's end, by where they
/// went, from both ends' books.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unanswered {
    /// Answered, the answer arriving after the run's end (`None`: an older run, which
    /// counted them among the others).
    pub after_end: Option<u64>,
    /// Answered by the host, the answer never received by the controller: refused by the
    /// host's kernel, lost on the way back, or after the controller stopped listening.
    pub answered_not_received: u64,
    /// Never answered by the host (the block reached it incomplete, or not at all).
    pub never_answered: u64,
}

impl NetBlocks {
    /// Both ends' blocks of a stored phase.
    pub fn of(phase: &PhaseRecord) -> NetBlocks {
        NetBlocks {
            host: HostBlocks::of(&phase.host),
            controller: ControllerBlocks::of(&phase.controller),
        }
    }

    /// Whether both ends count from the same block: their books are of the same blocks.
    pub fn same_blocks(&self) -> bool {
        self.host.counted_from_block.is_some()
            && self.host.counted_from_block == self.controller.counted_from_block
    }

    /// Where the blocks the controller got no answer for by the run's end went; `None`
    /// unless both ends count the same blocks (and stored their counts).
    pub fn unanswered(&self) -> Option<Unanswered> {
        if !self.same_blocks() {
            return None;
        }
        let c = &self.controller;
        let not_received = c.answers_not_received?;
        let answered_not_received = self
            .host
            .answered?
            .saturating_sub(c.received()?)
            .min(not_received);
        Some(Unanswered {
            after_end: c.answers_received_after_end,
            answered_not_received,
            never_answered: not_received - answered_not_received,
        })
    }
}

/// The blocks a network measurement's deadline misses are of: the blocks sent when it
/// counts them (the controller's `end_to_end`: a block without an answer has no time but
/// missed all the same), else its samples.
pub fn deadline_blocks(m: &Measurement) -> u64 {
    count(&m.detail["blocks_sent"])
        .or_else(|| count(&m.detail["sent"]))
        .unwrap_or(m.count())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::net::{ControllerRecord, HostRecord, PhaseRecord};

    /// A phase of the run: the host's and the controller's records.
    fn phase(host: HostRecord, controller: ControllerRecord) -> PhaseRecord {
        PhaseRecord {
            flood: None,
            stream: None,
            service: None,
            tc_classes: None,
            kernel_softirq: None,
            host,
            controller,
        }
    }

    /// The run as an older audiolat stored it, and as this one does: both read
    /// alike, whatever the names.
    #[test]
    fn a_phase_stored_under_the_old_names_reads_as_under_the_new() {
        let old = phase(
            HostRecord {
                answered: Some(2734),
                answered_in_warmup: Some(275),
                counted_from_block: Some(275),
                misses: Some(21),
                send_dropped: Some(0),
                ..HostRecord::default()
            },
            ControllerRecord {
                blocks_sent: 2757,
                blocks_sent_late: Some(12),
                counted_from_block: Some(275),
                on_time: Some(2700),
                late: Some(30),
                lost: Some(27),
                ..ControllerRecord::default()
            },
        );
        let new = phase(
            HostRecord {
                answers_sent: Some(2734),
                answers_refused: Some(0),
                answers_in_warmup: Some(275),
                counted_from_block: Some(275),
                responses_past_deadline: Some(21),
                ..HostRecord::default()
            },
            ControllerRecord {
                blocks_sent: 2757,
                blocks_sent_late: Some(12),
                counted_from_block: Some(275),
                answers_received_on_time: Some(2700),
                answers_received_late: Some(30),
                answers_received_after_end: Some(0),
                answers_not_received: Some(27),
                ..ControllerRecord::default()
            },
        );
        let (old, new) = (NetBlocks::of(&old), NetBlocks::of(&new));
        assert_eq!(old.host, new.host);
        assert_eq!(new.host.answered, Some(2734));
        assert_eq!(new.host.responses_past_deadline, Some(21));
        // What an older run never counted is unknown, not 0.
        assert_eq!(old.controller.answers_received_after_end, None);
        assert_eq!(new.controller.answers_received_after_end, Some(0));
        for c in [old.controller, new.controller] {
            assert_eq!(c.received(), Some(2730));
            assert_eq!(c.unanswered_in_run(), Some(27));
            assert_eq!(c.missed(), Some(57));
        }
        // The host answered 4 blocks the controller never received; 23 it never answered.
        let split = new.unanswered().unwrap();
        assert_eq!((split.answered_not_received, split.never_answered), (4, 23));
        assert_eq!(old.unanswered().unwrap().never_answered, 23);
    }

    #[test]
    fn a_host_that_refused_answers_sent_fewer_than_it_answered() {
        let h = HostBlocks::of(&HostRecord {
            answers_sent: Some(90),
            answers_refused: Some(10),
            ..HostRecord::default()
        });
        assert_eq!((h.answers_sent, h.answered), (Some(90), Some(100)));
        // An older run's refusals were counted with the warm-up's: the answers it sent
        // are unknown, the blocks it answered are not.
        let h = HostBlocks::of(&HostRecord {
            answered: Some(100),
            send_dropped: Some(3),
            ..HostRecord::default()
        });
        assert_eq!(
            (h.answers_sent, h.answers_refused, h.answered),
            (None, None, Some(100))
        );
    }

    #[test]
    fn blocks_answered_after_the_end_are_neither_received_in_time_nor_lost() {
        let c = ControllerBlocks::of(&ControllerRecord {
            blocks_sent: 100,
            answers_received_on_time: Some(90),
            answers_received_late: Some(2),
            answers_received_after_end: Some(5),
            answers_not_received: Some(3),
            ..ControllerRecord::default()
        });
        assert_eq!(c.received(), Some(97));
        assert_eq!(c.unanswered_in_run(), Some(8));
        assert_eq!(c.missed(), Some(10));
        let both = NetBlocks {
            host: HostBlocks::of(&HostRecord {
                answers_sent: Some(98),
                answers_refused: Some(0),
                counted_from_block: Some(7),
                ..HostRecord::default()
            }),
            controller: ControllerBlocks {
                counted_from_block: Some(7),
                ..c
            },
        };
        let split = both.unanswered().unwrap();
        assert_eq!(
            (
                split.after_end,
                split.answered_not_received,
                split.never_answered
            ),
            (Some(5), 1, 2)
        );
        // Two ends counting from different blocks count different blocks: no split.
        let apart = NetBlocks {
            controller: ControllerBlocks {
                counted_from_block: Some(8),
                ..c
            },
            ..both
        };
        assert_eq!(apart.unanswered(), None);
    }
}
