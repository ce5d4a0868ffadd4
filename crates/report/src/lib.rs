//! # report: results, shown
//!
//! This crate only reads the results model and formats it; it never measures. It renders
//! each probe's run for the terminal from a [`results::RunView`], one renderer per probe
//! ([`view`]: the same function for a run just made and a stored one), the building blocks
//! for the terminal (summary tables, log-count histograms, doctor findings, run lists),
//! lays out a plan's paper-shaped tables with the studies' published figures beside ours
//! ([`paper`]), writes one self-contained HTML report with inline SVG plots drawn by
//! our own small SVG writer ([`html`], [`figures`] choosing them, [`plots`] drawing
//! them), and compares two selections of runs ([`compare`]). What the runs come to,
//! the answer a reader wants first, is [`summary`] (the report's first section, and the
//! end of `suite` and `run` in the terminal). It reads a report's data from the store
//! ([`gather`]: reading only).
//! Every function returns a value or a `String` (but [`html::write`], which writes the
//! report's file where it is asked to, or beside the database); printing is the
//! binary's job.
//!
//! ```
//! use results::LatencyHistogram;
//! let mut h = LatencyHistogram::new(1_000_000).unwrap();
//! for v in [12_000, 15_000, 15_500, 90_000] { h.record(v); }
//! let text = report::terminal::histogram(&h, 30);
//! assert!(text.contains("us"));
//! ```
#![deny(missing_docs)]
// A library says nothing on the standard streams (the binary does): `print!` and
// `eprint!` panic when the stream fails.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod compare;
pub mod data;
pub mod figures;
pub mod figures_paper;
pub mod gather;
pub mod html;
#[cfg(test)]
mod net_fixtures;
pub mod paper;
pub mod plots;
pub mod summary;
pub mod terminal;
pub mod units;
pub mod view;
pub mod words;
