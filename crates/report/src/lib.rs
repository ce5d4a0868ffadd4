//! # report: results, shown
//!
//! This crate only reads the results model and formats it; it never measures. Today it
//! renders for the terminal: summary tables, log-count histograms, doctor findings and
//! run lists. Every function returns a `String`; printing is the binary's job.
//!
//! ```
//! use results::LatencyHistogram;
//! let mut h = LatencyHistogram::new(1_000_000).unwrap();
//! for v in [12_000, 15_000, 15_500, 90_000] { h.record(v); }
//! let text = report::terminal::histogram(&h, 30);
//! assert!(text.contains("us"));
//! ```
#![deny(missing_docs)]

pub mod terminal;
