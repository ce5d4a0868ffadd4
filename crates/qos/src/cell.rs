//! Cells and cell sets as the user gives them (a TOML file or one flag per cell),
//! checked, and joining a cell's groups from a thread.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use engine::clock::parse_duration;
use engine::rt::{format_cpu_list, parse_cpu_list_within, Policy};
use serde::Deserialize;
use serde_json::{json, Value};

/// Writes the calling thread's id to each cgroup `tasks` file (a cell's cpuset and CPU
/// accounting); returns what could not be joined, and why.
pub fn join_groups(files: &[std::path::PathBuf]) -> Vec<String> {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() }.to_string();
    files
        .iter()
        .filter_map(|f| {
            std::fs::write(f, &tid)
                .err()
                .map(|e| format!("writing {tid} to {}: {e}", f.display()))
        })
        .collect()
}

/// How a cell shares the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellKind {
    /// Exclusive CPUs, SCHED_FIFO.
    Dedicated,
    /// SCHED_DEADLINE, jobs on period boundaries.
    TimeTriggered,
    /// SCHED_DEADLINE, woken by its input.
    EventTriggered,
    /// SCHED_OTHER / BATCH / IDLE on the CPUs no dedicated cell holds.
    BestEffort,
}

impl CellKind {
    /// The kind as a cell spec spells it.
    pub fn name(&self) -> &'static str {
        match self {
            CellKind::Dedicated => "dedicated",
            CellKind::TimeTriggered => "time-triggered",
            CellKind::EventTriggered => "event-triggered",
            CellKind::BestEffort => "best-effort",
        }
    }

    fn parse(s: &str) -> Result<CellKind, String> {
        Ok(match s {
            "dedicated" => CellKind::Dedicated,
            "time-triggered" => CellKind::TimeTriggered,
            "event-triggered" => CellKind::EventTriggered,
            "best-effort" => CellKind::BestEffort,
            other => {
                return Err(format!(
                "unknown cell kind '{other}': use dedicated, time-triggered, event-triggered or best-effort"
            ))
            }
        })
    }

    /// SCHED_DEADLINE kinds.
    pub fn is_deadline(&self) -> bool {
        matches!(self, CellKind::TimeTriggered | CellKind::EventTriggered)
    }
}

impl fmt::Display for CellKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One cell.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// Its name (letters, digits, `-` and `_`).
    pub name: String,
    /// How it shares the machine.
    pub kind: CellKind,
    /// Its CPUs. Required for `dedicated`; for a SCHED_DEADLINE cell they make an
    /// exclusive CPU set of its own (its own root domain); `best-effort` defaults to the
    /// CPUs no exclusive cell holds.
    pub cpus: Option<Vec<usize>>,
    /// The policy of each thread in the cell.
    pub policy: Policy,
    /// A bandwidth reservation for the cell's network flow, Mbit/s.
    pub bandwidth_mbps: Option<f64>,
}

impl Cell {
    /// True when the cell's CPUs are its alone: dedicated, or SCHED_DEADLINE with CPUs.
    pub fn exclusive(&self) -> bool {
        self.kind == CellKind::Dedicated || (self.kind.is_deadline() && self.cpus.is_some())
    }

    /// A SCHED_DEADLINE cell's share of one CPU per thread (runtime / period), else 0.
    pub fn utilisation(&self) -> f64 {
        match self.policy {
            Policy::Deadline {
                runtime_ns,
                period_ns,
                ..
            } => runtime_ns as f64 / period_ns as f64,
            _ => 0.0,
        }
    }

    /// The cell for the record.
    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "kind": self.kind.name(),
            "cpus": self.cpus.as_ref().map(|c| format_cpu_list(c)),
            "policy": self.policy.to_string(),
            "utilisation_per_thread": self.utilisation(),
            "bandwidth_mbps": self.bandwidth_mbps,
        })
    }
}

/// The cells of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CellSet {
    /// In the order given.
    pub cells: Vec<Cell>,
}

/// One cell as TOML or flag keys give it, before checking.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCell {
    kind: String,
    cpus: Option<String>,
    priority: Option<u32>,
    policy: Option<String>,
    nice: Option<i32>,
    runtime: Option<String>,
    deadline: Option<String>,
    period: Option<String>,
    bandwidth: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    cell: BTreeMap<String, RawCell>,
}

fn duration_ns(what: &str, s: &str) -> Result<u64, String> {
    parse_duration(s, "us")
        .map(|d: Duration| d.as_nanos() as u64)
        .map_err(|e| format!("{what}: {e}"))
}

/// Parses a bandwidth such as `240`, `240M`, `240Mbit`, `1G`, `1Gbit` into Mbit/s.
pub fn parse_mbps(s: &str) -> Result<f64, String> {
    let t = s.trim().to_ascii_lowercase();
    let t = t
        .trim_end_matches("/s")
        .trim_end_matches("bit")
        .trim_end_matches("bps");
    let (num, scale) = if let Some(n) = t.strip_suffix('g') {
        (n, 1000.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('k') {
        (n, 0.001)
    } else {
        (t, 1.0)
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v * scale),
        _ => Err(format!(
            "'{s}' is not a bandwidth: use a positive number of Mbit/s, e.g. 240, 150M or 1G"
        )),
    }
}

fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 32
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "cell name '{name}': use 1 to 32 letters, digits, '-' or '_'"
        ));
    }
    Ok(())
}

impl RawCell {
    fn build(self, name: &str, online: &[usize]) -> Result<Cell, String> {
        check_name(name)?;
        let kind = CellKind::parse(&self.kind).map_err(|e| format!("cell {name}: {e}"))?;
        let err = |m: String| format!("cell {name}: {m}");
        let cpus = self
            .cpus
            .as_deref()
            .map(|c| {
                let v = parse_cpu_list_within(c, online)?;
                if v.is_empty() {
                    return Err("an empty CPU list".to_string());
                }
                Ok(v)
            })
            .transpose()
            .map_err(err)?;
        let refuse = |key: &str, present: bool| -> Result<(), String> {
            if present {
                Err(format!(
                    "cell {name}: '{key}' does not apply to {kind} cells"
                ))
            } else {
                Ok(())
            }
        };
        let policy = match kind {
            CellKind::Dedicated => {
                refuse("policy", self.policy.is_some())?;
                refuse("nice", self.nice.is_some())?;
                refuse(
                    "runtime/deadline/period",
                    self.runtime.is_some() || self.deadline.is_some() || self.period.is_some(),
                )?;
                if cpus.is_none() {
                    return Err(format!(
                        "cell {name}: a dedicated cell needs its CPUs (cpus=1, say)"
                    ));
                }
                Policy::Fifo {
                    priority: self.priority.unwrap_or(80),
                }
            }
            CellKind::TimeTriggered | CellKind::EventTriggered => {
                refuse("priority", self.priority.is_some())?;
                refuse("policy", self.policy.is_some())?;
                refuse("nice", self.nice.is_some())?;
                let runtime = self.runtime.as_deref().ok_or_else(|| {
                    format!("cell {name}: {kind} cells need runtime= and period=")
                })?;
                let period = self.period.as_deref().ok_or_else(|| {
                    format!("cell {name}: {kind} cells need runtime= and period=")
                })?;
                let runtime_ns = duration_ns("runtime", runtime).map_err(err)?;
                let period_ns = duration_ns("period", period).map_err(err)?;
                let deadline_ns = match self.deadline.as_deref() {
                    Some(d) => duration_ns("deadline", d).map_err(err)?,
                    None => period_ns,
                };
                Policy::Deadline {
                    runtime_ns,
                    deadline_ns,
                    period_ns,
                }
            }
            CellKind::BestEffort => {
                refuse("priority", self.priority.is_some())?;
                refuse(
                    "runtime/deadline/period",
                    self.runtime.is_some() || self.deadline.is_some() || self.period.is_some(),
                )?;
                let nice = self.nice.unwrap_or(0);
                match self.policy.as_deref().unwrap_or("other") {
                    "other" => Policy::Other { nice },
                    "batch" => Policy::Batch { nice },
                    "idle" => {
                        refuse("nice", self.nice.is_some())?;
                        Policy::Idle
                    }
                    p => {
                        return Err(format!(
                        "cell {name}: policy '{p}': a best-effort cell runs other, batch or idle"
                    ))
                    }
                }
            }
        };
        policy.validate().map_err(|e| err(e.to_string()))?;
        let bandwidth_mbps = self
            .bandwidth
            .as_deref()
            .map(parse_mbps)
            .transpose()
            .map_err(err)?;
        Ok(Cell {
            name: name.to_string(),
            kind,
            cpus,
            policy,
            bandwidth_mbps,
        })
    }
}

impl CellSet {
    /// Parses a TOML cell file (`[cell.NAME]` tables); CPUs must be online here.
    pub fn from_toml(text: &str) -> Result<CellSet, String> {
        Self::from_toml_within(text, &engine::rt::online_cpus())
    }

    pub(crate) fn from_toml_within(text: &str, online: &[usize]) -> Result<CellSet, String> {
        let raw: RawFile = toml::from_str(text).map_err(|e| format!("cell file: {e}"))?;
        let mut set = CellSet::default();
        for (name, cell) in raw.cell {
            set.push(cell.build(&name, online)?)?;
        }
        Ok(set)
    }

    /// Parses one cell's `NAME=KIND[:key=value,...]` text; CPUs must be online here.
    /// The errors name the cell, not where its text came from (a flag, a file).
    pub fn parse_flag(flag: &str) -> Result<Cell, String> {
        Self::parse_flag_within(flag, &engine::rt::online_cpus())
    }

    pub(crate) fn parse_flag_within(flag: &str, online: &[usize]) -> Result<Cell, String> {
        let (name, rest) = flag.split_once('=').ok_or_else(|| {
            format!("cell '{flag}': use NAME=KIND[:key=value,...], e.g. music=dedicated:cpus=1")
        })?;
        let (kind, params) = rest.split_once(':').unwrap_or((rest, ""));
        let mut raw = RawCell {
            kind: kind.trim().to_string(),
            ..RawCell::default()
        };
        for kv in params.split(',').filter(|s| !s.trim().is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("cell {name}: '{kv}' is not key=value"))?;
            let v = v.trim().to_string();
            match k.trim() {
                "cpus" => raw.cpus = Some(v),
                "priority" => {
                    raw.priority = Some(v.parse().map_err(|_| {
                        format!("cell {name}: priority '{v}' is not a number")
                    })?)
                }
                "policy" => raw.policy = Some(v),
                "nice" => {
                    raw.nice = Some(
                        v.parse()
                            .map_err(|_| format!("cell {name}: nice '{v}' is not a number"))?,
                    )
                }
                "runtime" => raw.runtime = Some(v),
                "deadline" => raw.deadline = Some(v),
                "period" => raw.period = Some(v),
                "bandwidth" => raw.bandwidth = Some(v),
                other => {
                    return Err(format!(
                        "cell {name}: unknown key '{other}': use cpus, priority, policy, nice, runtime, deadline, period or bandwidth"
                    ))
                }
            }
        }
        raw.build(name.trim(), online)
    }

    /// Adds a cell; names are unique.
    pub fn push(&mut self, cell: Cell) -> Result<(), String> {
        if self.get(&cell.name).is_some() {
            return Err(format!("cell {} is given twice", cell.name));
        }
        self.cells.push(cell);
        Ok(())
    }

    /// The cell of that name.
    pub fn get(&self, name: &str) -> Option<&Cell> {
        self.cells.iter().find(|c| c.name == name)
    }

    /// True when there are no cells.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// The cell set for the record.
    pub fn to_json(&self) -> Value {
        Value::Array(self.cells.iter().map(Cell::to_json).collect())
    }
}
