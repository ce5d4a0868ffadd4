//! One module per command (or family of commands): what the command does between its
//! parsed flags and its printed output.

pub(crate) mod bench;
pub(crate) mod docs;
pub(crate) mod event;
pub(crate) mod experiment;
pub(crate) mod jitter;
pub(crate) mod net;
pub(crate) mod output;
pub(crate) mod plans;
pub(crate) mod roundtrip;
pub(crate) mod stored;
pub(crate) mod suite;
pub(crate) mod sweep;
