//! Cells: named sets of threads with guaranteed resources, Tessellation's space-time
//! partitions on stock Linux (Colmenares, Peters et al., J. Audio Eng. Soc. 61(4), 2013,
//! section 2).
//!
//! | kind | Tessellation | Linux |
//! |---|---|---|
//! | `dedicated` | no multiplexing: the cell owns its hardware threads | an exclusive cpuset, every other task moved off its CPUs for the run, threads pinned at SCHED_FIFO |
//! | `time-triggered` | active in periodic windows | SCHED_DEADLINE (runtime / deadline / period); jobs start on period boundaries |
//! | `event-triggered` | woken by events, never above its share | SCHED_DEADLINE woken by its input; the kernel's CBS caps it at runtime / period |
//! | `best-effort` | no guarantee | SCHED_OTHER, BATCH or IDLE on the CPUs left over |
//!
//! A [`CellSet`] is checked by [`CellSet::admit`] before anything starts (admission
//! control: exclusive CPUs, SCHED_DEADLINE bandwidth per CPU set, link bandwidth), then
//! made real by [`partition::Partition::create`], which undoes everything when dropped.
//!
//! A cell set comes from a TOML file:
//!
//! ```toml
//! [cell.music]
//! kind = "dedicated"
//! cpus = "1"
//! priority = 80
//!
//! [cell.others]
//! kind = "best-effort"
//! policy = "batch"
//!
//! [cell.video]
//! kind = "time-triggered"
//! runtime = "2ms"
//! period = "33ms"
//! ```
//!
//! or from flags, one per cell: `music=dedicated:cpus=1,priority=80`,
//! `others=best-effort:policy=batch`, `video=time-triggered:runtime=2ms,period=33ms`.

pub mod partition;

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
            "'{s}' is not a bandwidth: use Mbit/s, e.g. 240, 150M or 1G"
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
                    "cell {name}: '{key}' does not apply to a {kind} cell"
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
                    format!("cell {name}: a {kind} cell needs runtime= and period=")
                })?;
                let period = self.period.as_deref().ok_or_else(|| {
                    format!("cell {name}: a {kind} cell needs runtime= and period=")
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

    fn from_toml_within(text: &str, online: &[usize]) -> Result<CellSet, String> {
        let raw: RawFile = toml::from_str(text).map_err(|e| format!("cell file: {e}"))?;
        let mut set = CellSet::default();
        for (name, cell) in raw.cell {
            set.push(cell.build(&name, online)?)?;
        }
        Ok(set)
    }

    /// Parses one `NAME=KIND[:key=value,...]` flag; CPUs must be online here.
    pub fn parse_flag(flag: &str) -> Result<Cell, String> {
        Self::parse_flag_within(flag, &engine::rt::online_cpus())
    }

    fn parse_flag_within(flag: &str, online: &[usize]) -> Result<Cell, String> {
        let (name, rest) = flag.split_once('=').ok_or_else(|| {
            format!("--cell '{flag}': use NAME=KIND[:key=value,...], e.g. music=dedicated:cpus=1")
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

/// What the machine offers, for admission control.
#[derive(Clone, Debug, PartialEq)]
pub struct Capacity {
    /// Online CPUs.
    pub online: Vec<usize>,
    /// The share of each CPU SCHED_DEADLINE may reserve
    /// (`sched_rt_runtime_us / sched_rt_period_us`, 0.95 by default).
    pub deadline_share: f64,
    /// The link's capacity, Mbit/s, when bandwidth is reserved.
    pub link_mbps: Option<f64>,
    /// CPUs the exclusive cells of other running audiolats hold now.
    pub held: Vec<partition::HeldCpu>,
}

impl Capacity {
    /// This machine's CPUs and SCHED_DEADLINE share, and the given link.
    pub fn here(link_mbps: Option<f64>) -> Capacity {
        let read =
            |p: &str| -> Option<f64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
        let runtime = read("/proc/sys/kernel/sched_rt_runtime_us");
        let period = read("/proc/sys/kernel/sched_rt_period_us");
        let deadline_share = match (runtime, period) {
            (Some(r), Some(p)) if r < 0.0 => {
                let _ = p;
                1.0
            }
            (Some(r), Some(p)) if p > 0.0 => r / p,
            _ => 0.95,
        };
        Capacity {
            online: engine::rt::online_cpus(),
            deadline_share,
            link_mbps,
            held: partition::held_by_others(),
        }
    }
}

/// The set-up that admission control approved: which CPUs are exclusive, which are left
/// for everything else, and the arithmetic that was checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Admission {
    /// Exclusive CPU sets, by cell.
    pub exclusive: Vec<(String, Vec<usize>)>,
    /// CPUs left for every other task and for cells without CPUs of their own.
    pub shared: Vec<usize>,
    /// One line per check, e.g. "SCHED_DEADLINE on CPU 0: 0.300 of 0.950".
    pub checks: Vec<String>,
}

impl CellSet {
    /// Admission control: refuses a set whose reservations exceed what the machine has,
    /// before anything starts, with the arithmetic. `threads` is the number of threads
    /// each cell will hold (a SCHED_DEADLINE cell reserves runtime/period per thread; a
    /// dedicated cell whose threads spin needs a CPU per thread); cells not named hold 1.
    /// `spinning` names the cells whose threads never sleep.
    pub fn admit(
        &self,
        capacity: &Capacity,
        threads: &BTreeMap<String, usize>,
        spinning: &[String],
    ) -> Result<Admission, String> {
        let online = &capacity.online;
        let mut checks = Vec::new();
        let mut exclusive: Vec<(String, Vec<usize>)> = Vec::new();
        for cell in &self.cells {
            if let Some(cpus) = &cell.cpus {
                if let Some(c) = cpus.iter().find(|c| !online.contains(c)) {
                    return Err(format!(
                        "cell {}: CPU {c} is not online (online: {})",
                        cell.name,
                        format_cpu_list(online)
                    ));
                }
                if let Some(h) = capacity.held.iter().find(|h| cpus.contains(&h.cpu)) {
                    return Err(format!(
                        "cell {}: CPU {} is held by audiolat PID {} (its cell `{}`): wait for that run to end, or give {} other CPUs",
                        cell.name, h.cpu, h.pid, h.cell, cell.name
                    ));
                }
            }
            if !cell.exclusive() {
                continue;
            }
            let cpus = cell.cpus.clone().unwrap_or_default();
            for (other, theirs) in &exclusive {
                let both: Vec<usize> = cpus
                    .iter()
                    .filter(|c| theirs.contains(c))
                    .copied()
                    .collect();
                if !both.is_empty() {
                    return Err(format!(
                        "cells {other} and {} both want CPU {} for themselves: exclusive CPU sets must not overlap",
                        cell.name,
                        format_cpu_list(&both)
                    ));
                }
            }
            exclusive.push((cell.name.clone(), cpus));
        }
        let taken: Vec<usize> = exclusive
            .iter()
            .flat_map(|(_, c)| c.iter().copied())
            .collect();
        // Another audiolat's exclusive CPUs are no one else's either.
        let shared: Vec<usize> = online
            .iter()
            .filter(|c| !taken.contains(c) && !capacity.held.iter().any(|h| h.cpu == **c))
            .copied()
            .collect();
        if !exclusive.is_empty() {
            let names: Vec<String> = exclusive
                .iter()
                .map(|(n, c)| format!("{n} {} ({})", format_cpu_list(c), c.len()))
                .collect();
            if shared.is_empty() {
                let others: Vec<String> = capacity
                    .held
                    .iter()
                    .map(|h| {
                        format!(
                            "CPU {} is held by audiolat PID {} (its cell `{}`)",
                            h.cpu, h.pid, h.cell
                        )
                    })
                    .collect();
                if !others.is_empty() {
                    return Err(format!(
                        "admission: exclusive cells take {} and {}, leaving none for the rest of the system; wait for that run to end, or give the cells fewer CPUs",
                        names.join(" + "),
                        others.join(", ")
                    ));
                }
                return Err(format!(
                    "admission: exclusive cells take {} = {} of the {} online CPUs, leaving none for the rest of the system: over by 1 CPU; give the cells fewer CPUs",
                    names.join(" + "),
                    taken.len(),
                    online.len()
                ));
            }
            checks.push(format!(
                "exclusive CPUs: {} = {} of {} online, CPU {} left for everything else",
                names.join(" + "),
                taken.len(),
                online.len(),
                format_cpu_list(&shared)
            ));
        }
        // Best-effort cells with CPUs must stay off the exclusive ones.
        for cell in &self.cells {
            if let (CellKind::BestEffort, Some(cpus)) = (cell.kind, &cell.cpus) {
                let bad: Vec<usize> = cpus.iter().filter(|c| taken.contains(c)).copied().collect();
                if !bad.is_empty() {
                    return Err(format!(
                        "cell {}: best-effort on CPU {}, which an exclusive cell holds; use CPU {}",
                        cell.name,
                        format_cpu_list(&bad),
                        format_cpu_list(&shared)
                    ));
                }
            }
        }
        let count = |name: &str| threads.get(name).copied().unwrap_or(1);
        // Spinning threads of a dedicated cell: one CPU each.
        for cell in &self.cells {
            if cell.kind == CellKind::Dedicated && spinning.contains(&cell.name) {
                let n = count(&cell.name);
                let cpus = cell.cpus.as_ref().map_or(0, Vec::len);
                if n > cpus {
                    return Err(format!(
                        "admission: cell {} has {cpus} CPU(s) but {n} threads that spin: over by {} CPU(s); add CPUs to the cell or use fewer workers",
                        cell.name,
                        n - cpus
                    ));
                }
            }
        }
        // SCHED_DEADLINE bandwidth per CPU set (the kernel's root domains).
        let mut domains: Vec<(Vec<usize>, Vec<&Cell>)> = Vec::new();
        for cell in self.cells.iter().filter(|c| c.kind.is_deadline()) {
            let cpus = cell.cpus.clone().unwrap_or_else(|| shared.clone());
            match domains.iter_mut().find(|(c, _)| *c == cpus) {
                Some((_, cells)) => cells.push(cell),
                None => domains.push((cpus, vec![cell])),
            }
        }
        for (cpus, cells) in &domains {
            let limit = capacity.deadline_share * cpus.len() as f64;
            let mut terms = Vec::new();
            let mut total = 0.0;
            for cell in cells {
                let n = count(&cell.name);
                let u = cell.utilisation() * n as f64;
                total += u;
                if let Policy::Deadline {
                    runtime_ns,
                    period_ns,
                    ..
                } = cell.policy
                {
                    terms.push(format!(
                        "{} ({n} x {}/{})",
                        cell.name,
                        fmt_ns(runtime_ns),
                        fmt_ns(period_ns)
                    ));
                }
            }
            let line = format!(
                "SCHED_DEADLINE on CPU {}: {} = {total:.3} CPU of the {limit:.3} it may use ({:.0}% of {} CPU)",
                format_cpu_list(cpus),
                terms.join(" + "),
                capacity.deadline_share * 100.0,
                cpus.len()
            );
            if total > limit + 1e-9 {
                return Err(format!(
                    "admission: {line}: over by {:.3} CPU; lower a runtime, lengthen a period or give the cells more CPUs",
                    total - limit
                ));
            }
            checks.push(line);
        }
        // Link bandwidth.
        let reserved: Vec<&Cell> = self
            .cells
            .iter()
            .filter(|c| c.bandwidth_mbps.is_some())
            .collect();
        if !reserved.is_empty() {
            let total: f64 = reserved.iter().filter_map(|c| c.bandwidth_mbps).sum();
            let terms: Vec<String> = reserved
                .iter()
                .map(|c| format!("{} {}", c.name, c.bandwidth_mbps.unwrap_or(0.0)))
                .collect();
            match capacity.link_mbps {
                None => {
                    return Err(format!(
                        "admission: cells reserve bandwidth ({}) but the run has no shaped link; use --link",
                        terms.join(" + ")
                    ))
                }
                Some(link) => {
                    let line = format!(
                        "bandwidth: {} = {total} Mbit/s of the link's {link} Mbit/s",
                        terms.join(" + ")
                    );
                    if total > link + 1e-9 {
                        return Err(format!(
                            "admission: {line}: over by {} Mbit/s",
                            total - link
                        ));
                    }
                    checks.push(line);
                }
            }
        }
        Ok(Admission {
            exclusive,
            shared,
            checks,
        })
    }
}

/// `725us`, `2ms`, `1.5ms`.
pub fn fmt_ns(ns: u64) -> String {
    if ns >= 1_000_000 && ns.is_multiple_of(1_000) {
        let ms = ns as f64 / 1e6;
        format!("{}ms", trim(ms))
    } else if ns >= 1_000 {
        format!("{}us", trim(ns as f64 / 1e3))
    } else {
        format!("{ns}ns")
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_cpus() -> Capacity {
        Capacity {
            online: vec![0, 1],
            deadline_share: 0.95,
            link_mbps: Some(1000.0),
            held: Vec::new(),
        }
    }

    #[test]
    fn flags_and_toml_give_the_same_cells() {
        let toml = r#"
            [cell.music]
            kind = "dedicated"
            cpus = "1"
            priority = 70
            bandwidth = "240"

            [cell.video]
            kind = "time-triggered"
            runtime = "2ms"
            period = "33ms"

            [cell.ep]
            kind = "best-effort"
            policy = "batch"
            nice = 5
        "#;
        let from_file = CellSet::from_toml_within(toml, &[0, 1]).unwrap();
        let mut from_flags = CellSet::default();
        for f in [
            "ep=best-effort:policy=batch,nice=5",
            "music=dedicated:cpus=1,priority=70,bandwidth=240M",
            "video=time-triggered:runtime=2ms,period=33ms",
        ] {
            from_flags
                .push(CellSet::parse_flag_within(f, &[0, 1]).unwrap())
                .unwrap();
        }
        // The TOML tables come sorted by name.
        assert_eq!(from_file, from_flags);
        let music = from_file.get("music").unwrap();
        assert_eq!(music.policy, Policy::Fifo { priority: 70 });
        assert_eq!(music.bandwidth_mbps, Some(240.0));
        assert!(music.exclusive());
        let video = from_file.get("video").unwrap();
        assert_eq!(
            video.policy,
            Policy::Deadline {
                runtime_ns: 2_000_000,
                deadline_ns: 33_000_000,
                period_ns: 33_000_000
            }
        );
        assert!(!video.exclusive());
    }

    #[test]
    fn bad_cells_are_refused_with_the_reason() {
        for (flag, says) in [
            ("music", "NAME=KIND"),
            ("music=exclusive", "unknown cell kind"),
            ("music=dedicated", "needs its CPUs"),
            ("music=dedicated:cpus=", "empty CPU list"),
            ("music=dedicated:cpus=1,policy=batch", "does not apply"),
            ("music=dedicated:cpus=1,priority=100", "priority"),
            (
                "tt=time-triggered:runtime=2ms",
                "needs runtime= and period=",
            ),
            ("tt=time-triggered:runtime=3ms,period=2ms", "runtime"),
            ("be=best-effort:policy=fifo", "other, batch or idle"),
            ("be=best-effort:colour=red", "unknown key"),
            ("b e=best-effort", "cell name"),
            ("be=best-effort:bandwidth=lots", "not a bandwidth"),
        ] {
            let e = CellSet::parse_flag_within(flag, &[0, 1]).unwrap_err();
            assert!(e.contains(says), "{flag}: {e}");
        }
        assert!(CellSet::from_toml_within(
            "[cell.a]\nkind = \"dedicated\"\ncpus = \"1\"\ncolour = 1\n",
            &[0, 1]
        )
        .unwrap_err()
        .contains("colour"));
        let mut set = CellSet::default();
        set.push(CellSet::parse_flag_within("a=best-effort", &[0, 1]).unwrap())
            .unwrap();
        assert!(set
            .push(CellSet::parse_flag_within("a=best-effort", &[0, 1]).unwrap())
            .unwrap_err()
            .contains("twice"));
    }

    fn set(flags: &[&str]) -> CellSet {
        let mut s = CellSet::default();
        for f in flags {
            s.push(CellSet::parse_flag_within(f, &[0, 1]).unwrap())
                .unwrap();
        }
        s
    }

    #[test]
    fn admission_refuses_over_commitment_and_says_by_how_much() {
        let none = BTreeMap::new();
        // Every CPU exclusive: nothing left for the system.
        let e = set(&["a=dedicated:cpus=0", "b=dedicated:cpus=1"])
            .admit(&two_cpus(), &none, &[])
            .unwrap_err();
        assert!(
            e.contains("= 2 of the 2 online CPUs") && e.contains("over by 1 CPU"),
            "{e}"
        );
        // Overlapping exclusive sets.
        let e = set(&[
            "a=dedicated:cpus=1",
            "b=time-triggered:cpus=1,runtime=1ms,period=10ms",
        ])
        .admit(&two_cpus(), &none, &[])
        .unwrap_err();
        assert!(e.contains("both want CPU 1"), "{e}");
        // SCHED_DEADLINE: 0.6 + 0.5 on the one shared CPU.
        let e = set(&[
            "m=dedicated:cpus=1",
            "tt=time-triggered:runtime=6ms,period=10ms",
            "et=event-triggered:runtime=5ms,period=10ms",
        ])
        .admit(&two_cpus(), &none, &[])
        .unwrap_err();
        assert!(
            e.contains("tt (1 x 6ms/10ms) + et (1 x 5ms/10ms) = 1.100 CPU of the 0.950")
                && e.contains("over by 0.150 CPU"),
            "{e}"
        );
        // Threads multiply the share.
        let threads = BTreeMap::from([("tt".to_string(), 4)]);
        let e = set(&["tt=time-triggered:runtime=5ms,period=10ms"])
            .admit(&two_cpus(), &threads, &[])
            .unwrap_err();
        assert!(
            e.contains("2.000 CPU of the 1.900") && e.contains("over by 0.100"),
            "{e}"
        );
        // Spinning threads need a CPU each.
        let threads = BTreeMap::from([("m".to_string(), 3)]);
        let e = set(&["m=dedicated:cpus=1"])
            .admit(&two_cpus(), &threads, &["m".to_string()])
            .unwrap_err();
        assert!(e.contains("over by 2 CPU"), "{e}");
        // Bandwidth.
        let e = set(&["m=best-effort:bandwidth=240", "x=best-effort:bandwidth=900"])
            .admit(&two_cpus(), &none, &[])
            .unwrap_err();
        assert!(
            e.contains("m 240 + x 900 = 1140 Mbit/s of the link's 1000 Mbit/s")
                && e.contains("over by 140 Mbit/s"),
            "{e}"
        );
        // Best-effort on an exclusive CPU.
        let e = set(&["m=dedicated:cpus=1", "be=best-effort:cpus=1"])
            .admit(&two_cpus(), &none, &[])
            .unwrap_err();
        assert!(e.contains("use CPU 0"), "{e}");
        // Offline CPU: refused as the cell is read, its range never expanded.
        for (flag, says) in [
            (
                "m=dedicated:cpus=7",
                "cell m: CPU 7 is not online; this machine has CPUs 0-1",
            ),
            (
                "m=dedicated:cpus=0-99999999999",
                "cell m: CPU 99999999999 is not online; this machine has CPUs 0-1",
            ),
        ] {
            assert_eq!(CellSet::parse_flag_within(flag, &[0, 1]).unwrap_err(), says);
        }
        let e = CellSet::from_toml_within(
            "[cell.m]\nkind = \"dedicated\"\ncpus = \"1-99999999999\"\n",
            &[0, 1],
        )
        .unwrap_err();
        assert!(e.contains("CPU 99999999999 is not online"), "{e}");
    }

    #[test]
    fn a_cpu_another_audiolat_holds_is_refused_naming_it() {
        let mut capacity = two_cpus();
        capacity.held = vec![partition::HeldCpu {
            cpu: 1,
            pid: 4242,
            cell: "music".into(),
        }];
        let none = BTreeMap::new();
        for flags in [
            &["m2=dedicated:cpus=1"][..],
            &["be=best-effort:cpus=0-1"][..],
        ] {
            let e = set(flags).admit(&capacity, &none, &[]).unwrap_err();
            assert!(
                e.contains("CPU 1 is held by audiolat PID 4242 (its cell `music`)"),
                "{e}"
            );
        }
        // Its CPU is not left for everything else either.
        let a = set(&["be=best-effort"])
            .admit(&capacity, &none, &[])
            .unwrap();
        assert_eq!(a.shared, vec![0]);
        let e = set(&["m2=dedicated:cpus=0"])
            .admit(&capacity, &none, &[])
            .unwrap_err();
        assert!(
            e.contains("leaving none") && e.contains("held by audiolat PID 4242"),
            "{e}"
        );
    }

    #[test]
    fn a_feasible_set_is_admitted_with_its_arithmetic() {
        let a = set(&[
            "music=dedicated:cpus=1,bandwidth=240",
            "video=time-triggered:runtime=2ms,period=33ms",
            "ep=best-effort:policy=batch",
        ])
        .admit(&two_cpus(), &BTreeMap::new(), &[])
        .unwrap();
        assert_eq!(a.exclusive, vec![("music".to_string(), vec![1])]);
        assert_eq!(a.shared, vec![0]);
        assert!(
            a.checks
                .iter()
                .any(|c| c.contains("video (1 x 2ms/33ms) = 0.061 CPU of the 0.950")),
            "{:?}",
            a.checks
        );
        assert!(a
            .checks
            .iter()
            .any(|c| c.contains("240 Mbit/s of the link's 1000")));
    }

    #[test]
    fn bandwidths_parse() {
        assert_eq!(parse_mbps("240").unwrap(), 240.0);
        assert_eq!(parse_mbps("1G").unwrap(), 1000.0);
        assert_eq!(parse_mbps("150Mbit").unwrap(), 150.0);
        assert_eq!(parse_mbps("500kbit").unwrap(), 0.5);
        assert!(parse_mbps("0").is_err());
        assert!(parse_mbps("-5").is_err());
    }
}
