//! The JSON forms of what the probes' own types hold (bench, devices): the binary's
//! translation of a probe's report into the data `report::view` renders, as
//! `audiolat bench --json` and `audiolat devices --json` print it.

mod bench;
mod devices;

pub use bench::{bench_json, BenchFlags};
pub use devices::{devices_json, devices_text};
