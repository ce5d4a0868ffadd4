//! What a run counts, one definition each, read by every view of it: the terminal's
//! fresh tables and `show`, the suite's table, the report's runs table and answer, the
//! JSON, the exports and the gates. A view never counts for itself.
//!
//! - [`Dropouts`]: a run's under-runs (what its audio server reported as xruns while it
//!   measured, or the fragment deadlines a jitter run missed), apart from them the
//!   cycles its stream skipped (a dropout the server may have reported as an xrun too:
//!   the two are never added), and a network run's blocks past the deadline.
//! - [`Notes`]: an event run's triggers, by what became of their note: sounded (in every
//!   latency figure), missed (rendered after their cycle's deadline) or of unknown
//!   timing (rendered just after an under-run, before the cycles' start was known).
//! - [`NetBlocks`]: a network run's blocks by both ends' books, the host's answers sent
//!   and the controller's answers received ([`HostBlocks`], [`ControllerBlocks`]), and
//!   where the blocks without an answer went ([`Unanswered`]).

mod net;

pub use net::{deadline_blocks, ControllerBlocks, HostBlocks, NetBlocks, Unanswered};

use crate::model::TriggerRow;

/// A run's dropouts, where its probe counts them (`None`: not counted, never 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dropouts {
    /// Under-runs: the xruns the audio server reported while the run measured (an
    /// event run's after its first trigger; a round trip's all of them), or the
    /// fragment deadlines a jitter run with fragments missed.
    pub underruns: Option<u64>,
    /// An event run's xruns before its first trigger (its warm-up): said apart, not
    /// among [`Dropouts::underruns`].
    pub underruns_at_start: Option<u64>,
    /// Cycles the stream skipped while the run measured (an event run's after its first
    /// trigger): said apart from the under-runs, never added to them (the server may
    /// have reported the same dropout as an xrun).
    pub skipped_cycles: Option<u64>,
    /// A network run's blocks past the deadline (its main metric's misses).
    pub deadline_misses: Option<u64>,
}

impl Dropouts {
    /// Whether the run counted a dropout of any kind.
    pub fn any(&self) -> bool {
        [self.underruns, self.skipped_cycles, self.deadline_misses]
            .iter()
            .any(|n| n.is_some_and(|n| n > 0))
    }
}

/// An event run's triggers by what became of their note.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Notes {
    /// Triggers measured (rows).
    pub triggers: u64,
    /// Notes that sounded at their modelled time with their timing known: the rows every
    /// latency figure is over.
    pub sounded: u64,
    /// Notes rendered by a callback that started after its cycle's deadline (an
    /// under-run hit them).
    pub missed: u64,
    /// Notes rendered just after an under-run, before the cycles' start was known again:
    /// nothing about their timing was measured.
    pub timing_unknown: u64,
}

impl Notes {
    /// The notes of an event run's trigger rows.
    pub fn of(rows: &[TriggerRow]) -> Notes {
        let n = |f: fn(&TriggerRow) -> bool| rows.iter().filter(|r| f(r)).count() as u64;
        Notes {
            triggers: rows.len() as u64,
            sounded: n(TriggerRow::sounded),
            missed: n(|r| r.missed),
            timing_unknown: n(TriggerRow::timing_unknown),
        }
    }

    /// Several runs' notes together.
    pub fn sum(all: impl IntoIterator<Item = Notes>) -> Notes {
        all.into_iter().fold(Notes::default(), |a, b| Notes {
            triggers: a.triggers + b.triggers,
            sounded: a.sounded + b.sounded,
            missed: a.missed + b.missed,
            timing_unknown: a.timing_unknown + b.timing_unknown,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_probe_counts_its_own_dropouts_and_never_adds_skipped_cycles() {
        use crate::probe_kind::{EVENT, JITTER, ROUNDTRIP};
        let d = ROUNDTRIP.dropouts(&json!({}), &json!({"xruns": 4, "skipped_cycles": 1}), &[]);
        assert_eq!((d.underruns, d.skipped_cycles), (Some(4), Some(1)));
        let d = EVENT.dropouts(
            &json!({}),
            &json!({"underruns": {"start": 2, "steady": 3, "skipped_cycles_start": 0, "skipped_cycles_steady": 1}}),
            &[],
        );
        assert_eq!(
            (d.underruns, d.underruns_at_start, d.skipped_cycles),
            (Some(3), Some(2), Some(1))
        );
        // Wake-ups alone count no under-run: absent, not 0.
        let d = JITTER.dropouts(&json!({"fragments": null}), &json!({}), &[]);
        assert_eq!(d, Dropouts::default());
        assert!(!d.any());
    }
}
