//! # results: what audiolat measured, kept
//!
//! This crate owns audiolat's data model (runs, measurements, events, series; see
//! ARCHITECTURE.md; [`RunView`] is one run as its renderers read it), the fixed-bound HDR histograms every probe records into, the SQLite
//! store, the exports and the threshold gates judged on a stored run ([`gate`]).
//!
//! Promises:
//!
//! - [`LatencyHistogram::record`] is real-time safe (no allocation, lock or panic) and
//!   never clamps: values above the bound are counted as overflows and kept in the exact
//!   count, mean, minimum and maximum.
//! - The store writes a run as it goes: a run row at the start, events and
//!   measurements as they come, the status at the end. An interrupted run keeps what it
//!   measured; a run whose process vanished is marked `interrupted` on the next open.
//! - Histograms are stored in HdrHistogram's V2 serialised form, readable by any
//!   HdrHistogram implementation.
//! - [`RunSink`] is what a run's lifecycle writes (begin, rows and events as they come,
//!   checkpoints, the closing writes with their reserve, finish); the SQLite `Store` implements it.
//! - A run in progress is described by [`LiveStatus`] (what a live status line shows;
//!   never stored).
//! - Runs, groups and plan cells are named by typed ids ([`RunId`], [`GroupId`],
//!   [`PlanCellId`]) that serialise and print as the bare row number.
//! - The schema is versioned (`PRAGMA user_version`) and migrated forward on open.
//!
//! The store is behind the `sqlite` feature (on by default); real-time crates depend on
//! this crate without it, for the model and histogram types only.
//!
//! ```
//! use results::LatencyHistogram;
//! let mut h = LatencyHistogram::new(100_000_000).unwrap(); // bound: 100 ms, in ns
//! h.record(15_000);
//! h.record(250_000_000); // above the bound: an overflow, still in max and mean
//! assert_eq!(h.overflows(), 1);
//! assert_eq!(h.max(), 250_000_000);
//! ```
#![deny(missing_docs)]
// A library says nothing on the standard streams (the binary does): `print!` and
// `eprint!` panic when the stream fails.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod counts;
pub mod export;
pub mod farm;
pub mod gate;
pub mod hist;
pub mod id;
pub mod live;
pub mod model;
pub mod number;
pub mod output;
pub mod owner;
pub mod probe_kind;
pub mod records;
pub mod run;
pub mod sink;
pub mod stats;
#[cfg(feature = "sqlite")]
pub mod store;
pub mod stored_backend;
pub mod view;

pub use counts::{Dropouts, Notes};
pub use hist::{LatencyHistogram, Stat, Summary};
pub use id::{GroupId, ParseIdError, PlanCellId, RunId};
pub use live::{LiveCulprit, LiveSnapshot, LiveStatus};
pub use model::{
    Event, Finding, GroupRecord, Machine, Measurement, NewPlanCell, PlanCell, Recovered, RunStatus,
    Series, ToolInfo, Verdict,
};
pub use number::fmt_number;
pub use probe_kind::ProbeKind;
pub use run::{RunInfo, RunRecord};
pub use sink::{Kept, RunSink, SinkError};
#[cfg(feature = "sqlite")]
pub use store::{Journal, Remedy, RunFilter, Store, StoreError, Summarise, MAX_LISTED};
pub use view::RunView;
