//! Each probe's configuration and result as Rust types: what a probe writes into a run's
//! `config` and `result` and what `report`, the gates, `compare` and the exports read back;
//! the parts every run shares (its `flags`, `qos_requested`, `qos_granted` and `load`:
//! [`flags`], [`qos`], [`load`], read through `RunView::flags_record` and its siblings);
//! and the JSON printed outside a run (`devices --json`, `bench --json`).
//!
//! A record is serialised with serde into the JSON the store keeps, under the keys the
//! runs of earlier releases have: a field an older run lacks is an `Option` (or has a
//! `#[serde(default)]`), so a database written by an earlier release reads back as the
//! same types. A reader asks a [`RunView`](crate::RunView) for its record
//! ([`RunView::config_as`](crate::RunView::config_as),
//! [`RunView::result_as`](crate::RunView::result_as)) and reads fields, never keys.
//!
//! Every record has a round-trip test: the JSON a probe writes reads back as the record
//! and serialises to the same JSON, so no stored key is dropped on the way.

pub mod bench;
pub mod devices;
pub mod doctor;
pub mod event;
pub mod flags;
pub mod graph;
pub mod jitter;
pub mod keys;
pub mod load;
pub mod net;
pub mod qos;
pub mod record;
pub mod roundtrip;
pub mod run_config;
pub mod stats;
pub mod stream;
pub mod why;

pub use event::{EventConfigRecord, EventResultRecord};
pub use jitter::{JitterConfigRecord, JitterResultRecord};
pub use roundtrip::{RoundtripConfigRecord, RoundtripResultRecord};
pub use run_config::RunConfig;
pub use stats::StatsRecord;
pub use stream::{StreamConfigRecord, StreamRecord};
pub use why::WhyRecord;

pub use record::Record;

#[cfg(test)]
pub(crate) mod test_support {
    use super::Record;
    use serde_json::Value;

    /// Asserts that `json` reads back as `R` and writes back unchanged.
    pub fn round_trips<R: Record + std::fmt::Debug>(json: Value) -> R {
        let record = R::from_json(&json).unwrap_or_else(|| panic!("does not read: {json}"));
        assert_eq!(record.to_json(), json, "{record:?}");
        record
    }
}
