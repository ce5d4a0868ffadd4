//! How a period's native streams are opened ([`NativeConfig`]): what the set-up hands
//! the streams, in every build (the streams themselves, [`stream`](super::stream), need
//! the feature `pipewire-native`). A leaf: the shared set-up types name it.

use crate::audio::ServerInfo;

/// How a period's native streams are opened.
#[derive(Clone, Debug)]
pub struct NativeConfig {
    /// The sink to target (`None`: the server's default sink).
    pub target: Option<String>,
    /// A capture stream on the target's monitor.
    pub capture: bool,
    /// The rate to ask for.
    pub rate_hz: u32,
    /// What is recorded of the server (the quantum granted is filled in at open when it
    /// was not measured before).
    pub server: ServerInfo,
    /// Capacity of the cycle-record ring.
    pub record_capacity: usize,
}
