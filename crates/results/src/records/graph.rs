//! A PipeWire run's graph around it ([`GraphRecord`]): what engine's `GraphRecorder`
//! saw, stored in a stream's server part (`server.graph`).

use serde::{Deserialize, Serialize};

use super::record::Record;

/// The graph around a run on PipeWire: its driver, `clock.force-quantum` and
/// `clock.force-rate` before and after, and the profiler's first and last windows.
/// Absent values are `null`, never 0.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct GraphRecord {
    /// The driver node's name.
    #[serde(default)]
    pub driver: Option<String>,
    /// `clock.force-quantum` before and after.
    #[serde(default)]
    pub force_quantum: BeforeAfter,
    /// `clock.force-rate` before and after.
    #[serde(default)]
    pub force_rate: BeforeAfter,
    /// The profiler's first and last windows.
    #[serde(default)]
    pub profiler: Profiler,
    /// What could not be read, in words.
    #[serde(default)]
    pub problems: Vec<String>,
}

impl Record for GraphRecord {}

/// A setting before and after the run.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Default)]
pub struct BeforeAfter {
    /// Before.
    #[serde(default)]
    pub before: Option<u32>,
    /// After.
    #[serde(default)]
    pub after: Option<u32>,
}

/// The profiler's windows.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct Profiler {
    /// The window at the start.
    #[serde(default)]
    pub before: Option<ProfilerWindow>,
    /// The window at the end.
    #[serde(default)]
    pub after: Option<ProfilerWindow>,
}

/// What the profiler reported over one window of cycles.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct ProfilerWindow {
    /// The window's length (ms).
    #[serde(default)]
    pub window_ms: Option<u64>,
    /// Profiler events read.
    #[serde(default)]
    pub events: Option<u64>,
    /// The driver our nodes followed (its id).
    #[serde(default)]
    pub followed_driver: Option<u32>,
    /// Every node seen.
    #[serde(default)]
    pub nodes: Vec<ProfiledNode>,
}

impl ProfilerWindow {
    /// The driver our nodes followed, else the one with the most cycles (the lowest-id
    /// driver is often Dummy-Driver).
    pub fn driver(&self) -> Option<&ProfiledNode> {
        let drivers = || self.nodes.iter().filter(|n| n.role == NodeRole::Driver);
        self.followed_driver
            .and_then(|id| drivers().find(|n| n.id == id))
            .or_else(|| drivers().max_by_key(|n| n.cycles))
    }

    /// Cycles in which a node did not finish, over every node.
    pub fn errors(&self) -> u64 {
        self.nodes.iter().map(|n| n.errors).sum()
    }
}

/// Whether a node drives the graph or follows a driver.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum NodeRole {
    /// It drives.
    Driver,
    /// It follows.
    Follower,
}

/// One node as the profiler saw it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ProfiledNode {
    /// Its global id.
    pub id: u32,
    /// Its `node.name`.
    pub name: String,
    /// Driver or follower.
    pub role: NodeRole,
    /// A driver's quantum in its last reporting cycle (frames).
    pub quantum_frames: Option<u64>,
    /// A driver's rate in its last reporting cycle (Hz).
    pub rate_hz: Option<u32>,
    /// Cycles it was seen in.
    pub cycles: u64,
    /// Cycles it did not finish.
    pub errors: u64,
    /// A driver's xruns since it started (`None` for a follower).
    pub xruns: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::test_support::round_trips;
    use serde_json::json;

    #[test]
    fn a_graph_record_round_trips_and_finds_its_driver() {
        let node = |id: u32, role: &str, cycles: u64| {
            json!({"id": id, "name": format!("n{id}"), "role": role, "quantum_frames": 256,
                   "rate_hz": 48000, "cycles": cycles, "errors": 1, "xruns": null})
        };
        let g: GraphRecord = round_trips(json!({
            "driver": "audiolat-sink",
            "force_quantum": {"before": 0, "after": 256},
            "force_rate": {"before": null, "after": null},
            "profiler": {
                "before": null,
                "after": {"window_ms": 500, "events": 12, "followed_driver": 31,
                          "nodes": [node(30, "driver", 90), node(31, "driver", 10),
                                    node(40, "follower", 10)]},
            },
            "problems": [],
        }));
        let after = g.profiler.after.as_ref().unwrap();
        assert_eq!(after.driver().map(|d| d.id), Some(31), "the followed one");
        assert_eq!(after.errors(), 3);
        let unfollowed = ProfilerWindow {
            followed_driver: None,
            ..after.clone()
        };
        assert_eq!(
            unfollowed.driver().map(|d| d.id),
            Some(30),
            "the most cycles"
        );
    }
}
