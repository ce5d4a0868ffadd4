//! The network probe's records: a run of both ends' configuration ([`NetConfigRecord`])
//! and result ([`NetResultRecord`], a [`PhaseRecord`] per phase), and one end's
//! configuration ([`NetEndConfig`]: `net respond`'s [`RespondConfig`], `net emulate`'s
//! [`EmulateConfig`]), whose result is the end's own [`HostRecord`] or
//! [`ControllerRecord`].
//!
//! Runs stored before the blocks were counted by each end's books (the host's
//! `answered`, `answered_in_warmup`, `misses`, `send_dropped`; the controller's
//! `on_time`, `late`, `lost`, `malformed_answers`) read back with those keys as fields of
//! their own, written only when present; what they did not count is `None`.

mod config;
mod ends;
mod result;

pub use config::{LinkBy, LinkRecord, NetConfigRecord, PadRecord, StreamSettingRecord};
pub use ends::{EmulateConfig, NetEndConfig, RespondConfig};
pub use result::{
    ControllerRecord, DropCounts, FloodRecord, FlowRecord, HostRecord, MissCauses, NetResultRecord,
    PhaseRecord, SchedRecord, ServiceRecord, StreamRecord, TcClassRecord,
};

#[cfg(test)]
mod tests;
