//! The real-time settings a run asked for (`qos_requested`) and was granted
//! (`qos_granted`).
//!
//! Each probe asks for and is granted its own settings (jitter a policy and CPUs for its
//! thread; event a trigger thread beside the audio thread; net its threads), and the
//! runner adds its cells', so every key is an `Option` absent from the JSON when `None`;
//! one a probe writes `null` when it was not asked for or not refused is a
//! [`Nullable`]. The cells (`cells`, `admission`) are the `qos` crate's own JSON, kept
//! as it is written (`serde_json::Value`): `results` does not know cell plans. A key no
//! field names is kept in `other`, so nothing stored is dropped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::keys::{add_keys, present, Nullable};
use super::record::Record;

/// The real-time settings a run asked for.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct QosRequested {
    /// jitter: the measuring thread's policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// jitter: the CPUs it was to run on (`null`: any).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub cpus: Nullable<String>,
    /// jitter, event: memory was to be locked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_memory: Option<bool>,
    /// jitter: the `/dev/cpu_dma_latency` value to hold (`null`: not asked).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub cpu_dma_latency_us: Nullable<u64>,
    /// event: the trigger thread's policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_thread: Option<String>,
    /// event, roundtrip: what the audio thread runs at, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_thread: Option<String>,
    /// net (and each end of a two-machine run): its threads' policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<String>,
    /// net: how memory was to be locked (`mlockall`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// The runner: the cells asked for, as the `qos` crate writes them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cells: Option<Value>,
    /// The runner: admission's checks of the cells (`null`: no admission).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub admission: Nullable<Value>,
    /// Any other key, kept as stored.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

impl Record for QosRequested {}

/// The real-time settings a run was granted.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct QosGranted {
    /// jitter: the measuring thread's policy, as the kernel names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// jitter: why the policy asked for was refused.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub policy_refusal: Nullable<String>,
    /// jitter: the CPUs the thread may run on (a CPU list, `0-3,6`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<String>,
    /// jitter: why the CPUs asked for were refused.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub affinity_refusal: Nullable<String>,
    /// Whether memory was locked: a bool (event, roundtrip, net), or jitter's detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_locked: Option<MemoryLocked>,
    /// jitter: `/dev/cpu_dma_latency` (`null`: not asked).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub cpu_dma_latency: Nullable<DmaLatency>,
    /// jitter: the stack prefaulted, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack_prefaulted_bytes: Option<u64>,
    /// jitter: the measuring thread's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tid: Option<i32>,
    /// event: the trigger thread's grant (`null`: it has none).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub trigger_thread: Nullable<ThreadGrant>,
    /// event, roundtrip: the audio thread's policy (`null`: no cycle ran).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub audio_thread: Nullable<String>,
    /// net: why memory could not be locked.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub memory_refusal: Nullable<String>,
    /// net: the host's network thread's policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_net_thread: Option<String>,
    /// net: the host's worker threads' policies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_workers: Option<Vec<String>>,
    /// net: the controller's sender thread's policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller_sender: Option<String>,
    /// net: why the host's network thread's policy was refused.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub refusal: Nullable<String>,
    /// The runner: the cells as made, as the `qos` crate writes them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cells: Option<Value>,
    /// The runner: every cell was undone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cells_undone: Option<bool>,
    /// The runner: what could not be undone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cells_undo_problems: Option<Vec<String>>,
    /// Any other key, kept as stored.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

impl Record for QosGranted {}

impl QosRequested {
    /// What was asked for in `json`; nothing (every field `None`) when nothing, or not
    /// an object of settings, was stored.
    pub fn of(json: &Value) -> QosRequested {
        QosRequested::from_json(json).unwrap_or_default()
    }

    /// Writes the settings set here into the stored `qos_requested`, leaving the others:
    /// how the runner adds the cells to a probe's.
    pub fn add_to(&self, json: &mut Value) {
        add_keys(self.to_json(), json);
    }
}

impl QosGranted {
    /// What was granted in `json`; nothing (every field `None`) when nothing, or not an
    /// object of settings, was stored.
    pub fn of(json: &Value) -> QosGranted {
        QosGranted::from_json(json).unwrap_or_default()
    }

    /// Writes the settings set here into the stored `qos_granted`, leaving the others:
    /// how the runner adds the cells to a probe's.
    pub fn add_to(&self, json: &mut Value) {
        add_keys(self.to_json(), json);
    }
}

/// Whether memory was locked.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(untagged)]
pub enum MemoryLocked {
    /// Locked or not (event, roundtrip, net: current and future pages).
    Locked(bool),
    /// jitter: current and future pages, and why locking was refused.
    Detail(MemoryLock),
}

impl MemoryLocked {
    /// Why locking was refused, where it says.
    pub fn refusal(&self) -> Option<&str> {
        match self {
            MemoryLocked::Locked(_) => None,
            MemoryLocked::Detail(d) => d.refusal.as_deref(),
        }
    }
}

/// jitter's memory lock.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct MemoryLock {
    /// Current pages locked.
    pub current: bool,
    /// Future pages locked.
    pub future: bool,
    /// Why locking was refused.
    pub refusal: Option<String>,
}

/// jitter's `/dev/cpu_dma_latency` hold.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct DmaLatency {
    /// It was held.
    pub held: bool,
    /// The value held, µs.
    pub value_us: Option<i32>,
    /// Why it could not be held.
    pub refusal: Option<String>,
}

/// A thread's grant: its policy, and why the one asked for was refused.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ThreadGrant {
    /// The policy granted.
    pub policy: String,
    /// Why the policy asked for was refused.
    pub refusal: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::records::test_support::round_trips;

    /// jitter's, with the cells the runner adds.
    #[test]
    fn jitter_qos_round_trips() {
        round_trips::<QosRequested>(json!({"policy": "fifo:80", "cpus": null,
            "lock_memory": true, "cpu_dma_latency_us": 0,
            "cells": {"audio": {"cpus": "2-3"}}, "admission": null}));
        let g: QosGranted = round_trips(json!({"policy": "SCHED_FIFO 80",
            "policy_refusal": null, "cpus": "2", "affinity_refusal": "EINVAL",
            "memory_locked": {"current": true, "future": false, "refusal": "ENOMEM"},
            "cpu_dma_latency": {"held": false, "value_us": null, "refusal": "EACCES"},
            "stack_prefaulted_bytes": 524288, "tid": 4242,
            "cells": {"audio": {"cpus": "2"}}, "cells_undone": true,
            "cells_undo_problems": []}));
        assert_eq!(g.memory_locked.unwrap().refusal(), Some("ENOMEM"));
        let g: QosGranted = round_trips(json!({"policy": "SCHED_OTHER",
            "policy_refusal": "EPERM", "cpus": "0-3", "affinity_refusal": null,
            "memory_locked": {"current": false, "future": false, "refusal": null},
            "cpu_dma_latency": null, "stack_prefaulted_bytes": 0, "tid": 7}));
        assert_eq!(g.cpu_dma_latency, Some(None));
    }

    /// event's and roundtrip's: memory locked is a bool here.
    #[test]
    fn audio_qos_round_trips() {
        round_trips::<QosRequested>(json!({"trigger_thread": "fifo:70",
            "lock_memory": true, "audio_thread": "SCHED_FIFO 80"}));
        round_trips::<QosRequested>(json!({"audio_thread": "SCHED_FIFO 80"}));
        let g: QosGranted = round_trips(json!({"trigger_thread": {"policy": "SCHED_FIFO 70",
            "refusal": null}, "audio_thread": null, "memory_locked": true}));
        assert_eq!(g.memory_locked, Some(MemoryLocked::Locked(true)));
        round_trips::<QosGranted>(
            json!({"trigger_thread": null, "audio_thread": "SCHED_FIFO 80", "memory_locked": false}),
        );
    }

    /// net's, one end's, the suite's empty ones, and a key no field names.
    #[test]
    fn net_qos_round_trips() {
        round_trips::<QosRequested>(json!({"threads": "fifo:80", "memory": "mlockall"}));
        round_trips::<QosGranted>(json!({"memory_locked": true, "memory_refusal": null,
            "host_net_thread": "SCHED_FIFO 80", "host_workers": ["SCHED_FIFO 80"],
            "controller_sender": "SCHED_FIFO 80", "refusal": null}));
        let q: QosGranted =
            round_trips(json!({"memory_locked": false, "memory_refusal": "EPERM", "cpu_boost": 1}));
        assert_eq!(q.other["cpu_boost"], 1);
        assert_eq!(QosGranted::of(&json!({})), QosGranted::default());
    }

    /// The runner's keys go over a probe's, leaving the others.
    #[test]
    fn the_cells_are_added_to_a_probes() {
        let mut stored = json!({"audio_thread": "SCHED_FIFO 80", "memory_locked": true});
        QosGranted {
            cells: Some(json!({"audio": {"cpus": "2"}})),
            cells_undone: Some(true),
            cells_undo_problems: Some(Vec::new()),
            ..QosGranted::default()
        }
        .add_to(&mut stored);
        assert_eq!(
            stored,
            json!({"audio_thread": "SCHED_FIFO 80", "memory_locked": true,
                "cells": {"audio": {"cpus": "2"}}, "cells_undone": true, "cells_undo_problems": []})
        );
    }
}
