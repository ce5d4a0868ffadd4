//! Why a run's deadlines were missed (`result.why`), from the kernel's trace: the
//! contract other tools read.
//!
//! ```json
//! "why": {
//!   "misses": [{"t_ns": 1, "late_ns": 2, "kind_of_miss": "late_wakeup",
//!               "causes": [{"kind": "thread", "name": "kworker/1:2", "pid": 7, "cpu": 1, "ns": 2}]}],
//!   "culprits": [{"kind": "thread", "name": "kworker/1:2", "ns_total": 2, "misses": 1}],
//!   "events_lost": 0
//! }
//! ```
//!
//! `t_ns` is when the thread should have run (CLOCK_MONOTONIC); a cause's `kind` is one
//! of `irq`, `softirq`, `thread`, `self`, `blocked`, `idle_exit`, `steal`,
//! `unaccounted`; the causes of a miss add up to its `late_ns`. A run that asked for
//! causes where the kernel could not be traced has `unavailable` and nothing else.

use serde::{Deserialize, Serialize};

use super::record::Record;

/// What the trace explained over a run.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct WhyRecord {
    /// Why nothing was traced (no root, no tracefs, ...), when so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    /// What counted as a miss: wake-ups later than this, ns (`null`: the probe's own
    /// deadline, such as an under-run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub above_ns: Option<u64>,
    /// The misses kept in detail (the worst ones), in time order.
    #[serde(default)]
    pub misses: Vec<MissRecord>,
    /// Every miss explained (the culprits count them all).
    #[serde(default)]
    pub misses_explained: u64,
    /// Misses not explained (handed over faster than the trace could take them).
    #[serde(default)]
    pub misses_dropped: u64,
    /// The causes over every miss, the largest total first.
    #[serde(default)]
    pub culprits: Vec<CulpritRecord>,
    /// Events the kernel's ring buffers lost.
    #[serde(default)]
    pub events_lost: u64,
    /// Events read.
    #[serde(default)]
    pub events_read: u64,
    /// Tracepoints this kernel lacks (`system:name`): what they would have explained
    /// is in `unaccounted`.
    #[serde(default)]
    pub missing_events: Vec<String>,
    /// The CPUs traced.
    #[serde(default)]
    pub cpus: Vec<u64>,
    /// The threads that matter, by role.
    #[serde(default)]
    pub threads: Vec<ThreadRecord>,
}

impl Record for WhyRecord {}

/// A thread the trace watched.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct ThreadRecord {
    /// What it does (`jitter thread`, `jackd driver`, ...).
    pub role: String,
    /// Its TID.
    pub tid: i64,
}

/// One miss with its breakdown.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct MissRecord {
    /// When the thread should have run, CLOCK_MONOTONIC ns.
    pub t_ns: u64,
    /// How late it ran (or finished), ns.
    pub late_ns: u64,
    /// `late_wakeup` or `overrun`.
    pub kind_of_miss: String,
    /// The thread's TID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tid: Option<i64>,
    /// The parts, largest first; they add up to `late_ns`.
    #[serde(default)]
    pub causes: Vec<CauseRecord>,
    /// The ring buffer lost events in this miss's window.
    #[serde(default, skip_serializing_if = "is_false")]
    pub events_lost: bool,
    /// The window did not reach back to the start of the interval.
    #[serde(default, skip_serializing_if = "is_false")]
    pub window_short: bool,
    /// Page faults the thread took in the interval.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub page_faults: u64,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One part of a miss.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct CauseRecord {
    /// `irq`, `softirq`, `thread`, `self`, `blocked`, `idle_exit`, `steal` or
    /// `unaccounted`.
    pub kind: String,
    /// A handler's, vector's or thread's name.
    pub name: String,
    /// A thread's TID (for `blocked`, the holder's).
    #[serde(default)]
    pub pid: Option<i64>,
    /// The CPU.
    #[serde(default)]
    pub cpu: Option<u64>,
    /// Its time in the interval, ns.
    pub ns: u64,
    /// An IRQ's number or a softirq's vector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<i64>,
    /// A thread's policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// A thread's real-time priority (or nice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// The thread that ran on the CPU when the late thread woke.
    #[serde(default, skip_serializing_if = "is_false")]
    pub at_wakeup: bool,
    /// For `blocked`: the state slept in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

/// A cause over the run.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct CulpritRecord {
    /// Its kind, as a cause's.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its time over every miss, ns.
    pub ns_total: u64,
    /// The misses it took time in.
    pub misses: u64,
}

/// The `why` of any probe's result, read without knowing the probe.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct WhyPart {
    /// The result's `why`, when causes were asked for.
    #[serde(default)]
    pub why: Option<WhyRecord>,
}

impl Record for WhyPart {}

impl WhyRecord {
    /// In one cell of a table: the largest culprit and its time, `none late`, or
    /// `not traced`.
    pub fn cell(&self, fmt_ns: impl Fn(f64) -> String) -> String {
        if self.unavailable.is_some() {
            return "not traced".into();
        }
        match self.named_culprits().next() {
            _ if self.misses_explained == 0 => "none late".into(),
            Some(c) if c.kind == "idle_exit" => format!("idle exit {}", fmt_ns(c.ns_total as f64)),
            Some(c) => format!("{} {}", c.name, fmt_ns(c.ns_total as f64)),
            None => "unaccounted".into(),
        }
    }

    /// The culprits that are something (not `unaccounted`), largest first.
    pub fn named_culprits(&self) -> impl Iterator<Item = &CulpritRecord> {
        self.culprits.iter().filter(|c| c.kind != "unaccounted")
    }

    /// A culprit's total by kind and name, ns (`None`: never a cause). A name ending in
    /// `*` matches every name it begins (`kworker/*`).
    pub fn culprit_ns(&self, kind: Option<&str>, name: Option<&str>) -> Option<u64> {
        let named = |c: &CulpritRecord, n: &str| match n.strip_suffix('*') {
            Some(prefix) => c.name.starts_with(prefix),
            None => c.name == n,
        };
        let matching: Vec<_> = self
            .culprits
            .iter()
            .filter(|c| kind.is_none_or(|k| c.kind == k) && name.is_none_or(|n| named(c, n)))
            .collect();
        (!matching.is_empty()).then(|| matching.iter().map(|c| c.ns_total).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::test_support::round_trips;
    use serde_json::json;

    #[test]
    fn the_contract_shape_round_trips() {
        let why: WhyRecord = round_trips(json!({
            "above_ns": 100000,
            "misses": [{
                "t_ns": 5, "late_ns": 300, "kind_of_miss": "late_wakeup", "tid": 9,
                "causes": [
                    {"kind": "thread", "name": "hog", "pid": 7, "cpu": 1, "ns": 250,
                     "policy": "fifo", "priority": 90, "at_wakeup": true},
                    {"kind": "irq", "name": "local_timer", "pid": null, "cpu": 1, "ns": 40},
                    {"kind": "unaccounted", "name": "unaccounted", "pid": null, "cpu": null, "ns": 10}
                ],
                "events_lost": true
            }],
            "misses_explained": 1,
            "misses_dropped": 0,
            "culprits": [{"kind": "thread", "name": "hog", "ns_total": 250, "misses": 1}],
            "events_lost": 0,
            "events_read": 77,
            "missing_events": ["snd_pcm:xrun"],
            "cpus": [1],
            "threads": [{"role": "jitter thread", "tid": 9}]
        }));
        assert_eq!(why.culprit_ns(Some("thread"), Some("hog")), Some(250));
        assert_eq!(why.culprit_ns(Some("softirq"), None), None);
        assert_eq!(why.culprit_ns(Some("thread"), Some("ho*")), Some(250));
        assert_eq!(why.culprit_ns(Some("thread"), Some("hog*")), Some(250));
        assert_eq!(why.culprit_ns(Some("thread"), Some("ho")), None);
        assert_eq!(why.culprit_ns(Some("irq"), Some("ho*")), None);
        let unavailable: WhyRecord = round_trips(json!({
            "unavailable": "tracing the kernel needs root",
            "misses": [], "misses_explained": 0, "misses_dropped": 0, "culprits": [],
            "events_lost": 0, "events_read": 0, "missing_events": [], "cpus": [], "threads": []
        }));
        assert!(unavailable.unavailable.is_some());
    }
}
