//! The load a run ran under (`load`): its spec, its processes, and once it stopped how
//! each ended, as the runner stores it.
//!
//! Planned, the processes have no process group yet (`pgid` `null`); running, the load
//! has its `tag`; stopped, its `exits`. A run with no load of its own (one end of a
//! two-machine net run) stores its spec alone.

use serde::{Deserialize, Serialize};

use super::record::Record;

/// The load as run.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Load {
    /// The load as typed (`none`, `cpu`, `io+video`, ...).
    pub spec: String,
    /// Its processes (absent where the run stores its spec alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<Vec<LoadProcess>>,
    /// The tag in its processes' environment (`AUDIOLAT_LOAD_TAG`), once started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// How each process ended, once stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exits: Option<Vec<LoadExit>>,
}

impl Record for Load {}

impl Load {
    /// The load of a run that has none: `{"spec": "none"}`.
    pub fn none() -> Load {
        Load {
            spec: "none".into(),
            processes: None,
            tag: None,
            exits: None,
        }
    }
}

/// One process of a load.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct LoadProcess {
    /// The spec item it runs.
    pub item: String,
    /// Its command line.
    pub command: String,
    /// The program's version.
    pub version: String,
    /// Its process group (`None`: not started yet).
    pub pgid: Option<i32>,
}

/// How one process of a load ended.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct LoadExit {
    /// The spec item it ran.
    pub item: String,
    /// Its process group.
    pub pgid: i32,
    /// `exit N` or `signal N`.
    pub status: String,
    /// It ended before it was asked to.
    pub early: bool,
    /// The end of its stderr.
    pub stderr_tail: String,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::records::test_support::round_trips;

    /// Planned (no process groups), then stopped (its tag and exits), as a run stores it.
    #[test]
    fn a_load_round_trips() {
        round_trips::<Load>(json!({"spec": "cpu", "processes": [{"item": "cpu",
            "command": "stress-ng --cpu 2", "version": "0.17.06", "pgid": null}]}));
        let l: Load = round_trips(json!({"spec": "cpu+video", "processes": [
                {"item": "cpu", "command": "stress-ng --cpu 2", "version": "0.17.06", "pgid": 4242},
                {"item": "video", "command": "audiolat load-worker video", "version": "1", "pgid": 4250}],
            "tag": "run-17", "exits": [
                {"item": "cpu", "pgid": 4242, "status": "signal 15", "early": false, "stderr_tail": ""},
                {"item": "video", "pgid": 4250, "status": "exit 1", "early": true, "stderr_tail": "oops"}]}));
        assert!(l.exits.unwrap()[1].early);
    }

    /// No load: the spec alone, or an empty process list (the suite's own runs).
    #[test]
    fn no_load_round_trips() {
        assert_eq!(round_trips::<Load>(json!({"spec": "none"})), Load::none());
        round_trips::<Load>(json!({"spec": "none", "processes": []}));
    }
}
