//! What the PipeWire profiler saw of the graph's nodes over a window of cycles, as plain
//! values: read by [`profiler`](super::profiler) (feature `pipewire-native`), recorded
//! by [`graph`](super::graph) in every build.

/// Whether a node drives the graph (its clock) or follows a driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeRole {
    /// The driver: its clock times the cycles.
    Driver,
    /// A follower, scheduled in its driver's cycles.
    Follower,
}

/// One node as the profiler saw it in the window.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeProfile {
    /// The node's global id.
    pub id: u32,
    /// Its name (`node.name`).
    pub name: String,
    /// Driver or follower.
    pub role: NodeRole,
    /// The driver's quantum in the last cycle that reported it (the clock's duration),
    /// in frames (`None`: no cycle reported it).
    pub quantum_frames: Option<u64>,
    /// The driver's rate in the last cycle that reported it, in Hz (`None`: none did).
    pub rate_hz: Option<u32>,
    /// Cycles in which this node was seen.
    pub cycles: u64,
    /// Cycles in which it did not finish (status not *finished*), as pw-top's ERR.
    pub errors: u64,
    /// A driver's xrun count since it started, as its last cycle reported it
    /// (`None` for a follower: 0.3.65 counts none).
    pub xruns: Option<u64>,
}

/// What the profiler reported over a window of cycles.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfilerSnapshot {
    /// The graph time its cycles cover, in ms: the cycles (each its quantum at its rate)
    /// of the driver our nodes follow, else of the driver with the most graph time. The
    /// server sends cycles in batches, so a window is counted in cycles.
    pub window_ms: u64,
    /// The driver (node id) our own nodes followed, when they were named and seen.
    pub followed: Option<u32>,
    /// Profiler events received (the server batches several cycles in one).
    pub events: u64,
    /// The nodes seen, drivers first, then by id.
    pub nodes: Vec<NodeProfile>,
}

impl ProfilerSnapshot {
    /// The driver our nodes followed, else the driver that ran the most cycles in the
    /// window.
    pub fn driver(&self) -> Option<&NodeProfile> {
        let drivers = || self.nodes.iter().filter(|n| n.role == NodeRole::Driver);
        self.followed
            .and_then(|id| drivers().find(|n| n.id == id))
            .or_else(|| drivers().max_by_key(|n| n.cycles))
    }
}
