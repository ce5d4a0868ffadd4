//! What a report is made of: runs as stored, and for a plan run its cells and its plan
//! (the `[report]` tables and the `[published]` figures, as JSON). The binary reads these
//! from the store; this crate only formats them.

use std::collections::BTreeMap;

use results::model::{Finding, GroupRecord, TriggerRow};
use results::run::RunRecord;
use results::{Measurement, RunStatus, Series};
use serde_json::Value;

/// How many of a run's events of each kind a report reads (the first, in time order).
pub const EVENTS_SHOWN: usize = 5_000;

/// One stored run with what it measured.
#[derive(Debug, Clone)]
pub struct RunData {
    /// The run.
    pub record: RunRecord,
    /// Its measurements.
    pub measurements: Vec<Measurement>,
    /// Its series (e.g. latency against time).
    pub series: Vec<Series>,
    /// Its event counts by kind.
    pub event_counts: Vec<(String, u64)>,
    /// An event run's triggers (latency against time).
    pub triggers: Vec<TriggerRow>,
    /// Its events in time order (under-runs, overflows, host-steal spikes...), at most
    /// [`EVENTS_SHOWN`](crate::data::EVENTS_SHOWN) of each kind: the marks on latency
    /// against time. `event_counts` has the whole counts.
    pub events: Vec<results::Event>,
    /// Its threshold gates' verdicts (`--fail-if`), in the order given.
    pub gates: Vec<results::gate::GateVerdict>,
}

impl RunData {
    /// The measurement of a metric.
    pub fn measurement(&self, metric: &str) -> Option<&Measurement> {
        self.measurements.iter().find(|m| m.metric == metric)
    }

    /// The main metric of the run's probe (`None` for probes without one, e.g. doctor).
    pub fn main_metric(&self) -> Option<&'static str> {
        self.record.probe.main_metric(&self.record.config)
    }

    /// The run's headline measurement, as every list shows it
    /// ([`results::ProbeKind::headline`]).
    pub fn headline(&self) -> Option<&Measurement> {
        self.record
            .probe
            .headline(&self.record.config, &self.measurements)
    }

    /// The run's dropouts, as every view counts them ([`results::Dropouts`]).
    pub fn dropouts(&self) -> results::Dropouts {
        self.record
            .probe
            .dropouts(&self.record.config, &self.record.result, &self.measurements)
    }

    /// A value by path: `result.a.b`, `flags.x`, or `metric.stat` (stat: mean, min, max,
    /// stdev, p50, p90, p99, p999, p9999, count, misses, overflows; a percentile above
    /// the histogram's bound is none: it was not measured).
    pub fn value(&self, path: &str) -> Option<f64> {
        let (head, rest) = path.split_once('.')?;
        let json_at = |root: &Value| {
            rest.split('.')
                .try_fold(root, |v, k| v.get(k))
                .and_then(|v| match v {
                    Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
                    v => v.as_f64(),
                })
        };
        match head {
            "result" => json_at(&self.record.result),
            "flags" => json_at(&self.record.flags),
            "config" => json_at(&self.record.config),
            metric => {
                let m = self.measurement(metric)?;
                match rest {
                    "count" => return Some(m.count() as f64),
                    "misses" => return Some(m.misses? as f64),
                    "overflows" => return Some(m.overflows() as f64),
                    _ => {}
                }
                // Nothing measured: no statistic (not 0); a percentile above the
                // histogram's bound was not measured either.
                m.summary.as_ref()?.stat(rest)?.measured()
            }
        }
    }
}

/// One cell of a plan run (or, outside plans, one run).
#[derive(Debug, Clone)]
pub struct CellData {
    /// The cell's key (`run N` outside plans).
    pub key: String,
    /// Axis name -> label (with `repeat`).
    pub axes: BTreeMap<String, String>,
    /// Build profile.
    pub profile: String,
    /// `None`: not run yet.
    pub status: Option<RunStatus>,
    /// Why it failed when it made no run.
    pub error: Option<String>,
    /// Its run (the latest attempt's).
    pub run: Option<RunData>,
    /// The subject it came from when a report shows several (`run 3`, `group 2`, `host
    /// a`): comparison plots overlay one series per source. `None` in a one-subject
    /// report.
    pub source: Option<String>,
}

/// Everything a report shows.
#[derive(Debug, Clone, Default)]
pub struct ReportData {
    /// What the report is about, e.g. `plan run 4 (bbb2014-quick)`.
    pub subject: String,
    /// The group, when the report is about one.
    pub group: Option<GroupRecord>,
    /// The plan (a plan run's group detail), when there is one.
    pub plan: Option<Value>,
    /// The cells (or runs), in run order.
    pub cells: Vec<CellData>,
    /// Doctor's findings, from a doctor run of the group (or the latest).
    pub doctor: Option<Vec<Finding>>,
    /// When the report was made (RFC 3339 UTC).
    pub generated_at: String,
    /// The audiolat that made the report.
    pub tool_version: String,
}

impl ReportData {
    /// The title: the plan's, else the subject.
    pub fn title(&self) -> String {
        self.plan
            .as_ref()
            .and_then(|p| p["title"].as_str())
            .map(str::to_string)
            .unwrap_or_else(|| format!("audiolat report: {}", self.subject))
    }

    /// The runs, in order.
    pub fn runs(&self) -> impl Iterator<Item = &RunData> {
        self.cells.iter().filter_map(|c| c.run.as_ref())
    }

    /// The axes of the plan in order, with their labels.
    pub fn axes(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = self
            .plan
            .as_ref()
            .and_then(|p| p["axes"].as_array())
            .map(|a| {
                a.iter()
                    .map(|x| {
                        (
                            x["name"].as_str().unwrap_or("").to_string(),
                            x["labels"]
                                .as_array()
                                .map(|l| {
                                    l.iter()
                                        .filter_map(|v| v.as_str().map(str::to_string))
                                        .collect()
                                })
                                .unwrap_or_default(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut repeats: Vec<String> = self
            .cells
            .iter()
            .filter_map(|c| c.axes.get("repeat").cloned())
            .collect();
        repeats.sort_by_key(|r| r.parse::<u32>().unwrap_or(0));
        repeats.dedup();
        if !repeats.is_empty() {
            out.push(("repeat".into(), repeats));
        }
        out
    }

    /// Why the plan does not run a combination (its exclusion's reason), if it does not.
    pub fn exclusion(&self, axes: &BTreeMap<String, String>) -> Option<String> {
        let list = self.plan.as_ref()?["exclude"].as_array()?;
        list.iter()
            .find(|x| {
                x["axes"].as_object().is_some_and(|m| {
                    m.iter().all(|(axis, labels)| {
                        axes.get(axis).is_some_and(|l| {
                            labels
                                .as_array()
                                .is_some_and(|ls| ls.iter().any(|v| v.as_str() == Some(l)))
                        })
                    })
                })
            })
            .map(|x| {
                let r = x["reason"].as_str().unwrap_or("");
                if r.is_empty() {
                    "excluded by the plan".to_string()
                } else {
                    r.to_string()
                }
            })
    }
}

/// A complete run of `probe` with this result and these measurements, for tests.
#[cfg(test)]
pub(crate) fn test_run(probe: &str, result: Value, measurements: Vec<Measurement>) -> RunData {
    use results::model::{Machine, ToolInfo};
    RunData {
        record: RunRecord {
            id: results::RunId(1),
            group_id: Some(results::GroupId(1)),
            probe: results::probe_kind::ProbeKind::stored(probe),
            status: RunStatus::Complete,
            started_at: String::new(),
            ended_at: None,
            duration_s: None,
            started_mono_ns: 0,
            pid: 1,
            machine: Machine::default(),
            tool: ToolInfo::default(),
            command_line: String::new(),
            config: serde_json::json!({}),
            load: serde_json::json!({}),
            qos_requested: serde_json::json!({}),
            qos_granted: serde_json::json!({}),
            flags: serde_json::json!({}),
            result,
            error: None,
        },
        measurements,
        series: Vec::new(),
        event_counts: Vec::new(),
        triggers: Vec::new(),
        events: Vec::new(),
        gates: Vec::new(),
    }
}
