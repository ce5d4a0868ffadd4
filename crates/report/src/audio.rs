//! An audio run's stored result read as its probe's record: an event run's or a round
//! trip's, for the readers that take either (the summary's buffers, caveats and verdicts).
//! A leaf: it names only `results`.

use results::probe_kind::{EVENT, ROUNDTRIP};
use results::records::{EventResultRecord, Record, RoundtripResultRecord, StreamRecord};
use results::ProbeKind;
use serde_json::Value;

/// An event or round-trip run's result.
#[derive(Debug, Clone, PartialEq)]
pub enum AudioResult {
    /// An event run's.
    Event(Box<EventResultRecord>),
    /// A round trip's.
    Roundtrip(Box<RoundtripResultRecord>),
}

impl AudioResult {
    /// The result of a run of `probe`, stored as `result`; `None` for another probe's.
    /// What was not stored reads as an empty record (every field `None`).
    pub fn of(probe: &ProbeKind, result: &Value) -> Option<AudioResult> {
        if probe == &EVENT {
            Some(AudioResult::Event(Box::new(
                EventResultRecord::from_json(result).unwrap_or_default(),
            )))
        } else if probe == &ROUNDTRIP {
            Some(AudioResult::Roundtrip(Box::new(
                RoundtripResultRecord::from_json(result).unwrap_or_default(),
            )))
        } else {
            None
        }
    }

    /// The stream as it ran.
    pub fn stream(&self) -> &StreamRecord {
        match self {
            AudioResult::Event(r) => &r.stream,
            AudioResult::Roundtrip(r) => &r.stream,
        }
    }

    /// How the run ended.
    pub fn end(&self) -> Option<&str> {
        match self {
            AudioResult::Event(r) => r.end.as_deref(),
            AudioResult::Roundtrip(r) => r.end.as_deref(),
        }
    }

    /// The run's length, ns.
    pub fn run_ns(&self) -> Option<u64> {
        match self {
            AudioResult::Event(r) => r.run_ns,
            AudioResult::Roundtrip(r) => r.run_ns,
        }
    }

    /// The frames a note plays behind (an event run's; a round trip has none).
    pub fn behind_frames(&self) -> Option<u64> {
        match self {
            AudioResult::Event(r) => r.buffer_frames,
            AudioResult::Roundtrip(_) => None,
        }
    }

    /// The round trip's result, when it is one.
    pub fn roundtrip(&self) -> Option<&RoundtripResultRecord> {
        match self {
            AudioResult::Roundtrip(r) => Some(r),
            AudioResult::Event(_) => None,
        }
    }
}
