//! Admission control: a cell set checked against what the machine (CPUs, SCHED_DEADLINE
//! share, link) offers, before anything starts, with the arithmetic.

use std::collections::BTreeMap;

use engine::rt::{format_cpu_list, Policy};

use crate::cell::{Cell, CellKind, CellSet};
use crate::partition;

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

/// Why admission control refused a set of cells.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub(crate) enum Refusal {
    /// A reservation exceeds what the machine has (the text has the arithmetic).
    #[error("{0}")]
    Over(String),
    /// Cells reserve link bandwidth, but the run shapes no link.
    #[error(
        "admission: cells reserve bandwidth ({reserved}) but the run has no shaped link; shape one"
    )]
    NoShapedLink {
        /// The reservations, `NAME MBPS + ...`.
        reserved: String,
    },
}

impl From<String> for Refusal {
    fn from(why: String) -> Refusal {
        Refusal::Over(why)
    }
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
        self.admit_typed(capacity, threads, spinning)
            .map_err(|r| r.to_string())
    }

    /// [`admit`](Self::admit), its refusal typed where the caller words it itself.
    pub(crate) fn admit_typed(
        &self,
        capacity: &Capacity,
        threads: &BTreeMap<String, usize>,
        spinning: &[String],
    ) -> Result<Admission, Refusal> {
        let online = &capacity.online;
        let mut checks = Vec::new();
        let exclusive = self.exclusive_sets(capacity)?;
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
        if let Some(line) = exclusive_check(capacity, &exclusive, &taken, &shared)? {
            checks.push(line);
        }
        self.check_best_effort(&taken, &shared)?;
        self.check_spinning(threads, spinning)?;
        checks.extend(self.check_deadline_bandwidth(capacity, threads, &shared)?);
        checks.extend(self.check_link(capacity)?);
        Ok(Admission {
            exclusive,
            shared,
            checks,
        })
    }

    /// Each exclusive cell's CPUs, checked: online, held by no other audiolat, shared
    /// with no other exclusive cell.
    fn exclusive_sets(&self, capacity: &Capacity) -> Result<Vec<(String, Vec<usize>)>, String> {
        let online = &capacity.online;
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
                        "cell {}: {h}: wait for that run to end, or give {} other CPUs",
                        cell.name, cell.name
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
        Ok(exclusive)
    }

    /// Best-effort cells with CPUs must stay off the exclusive ones.
    fn check_best_effort(&self, taken: &[usize], shared: &[usize]) -> Result<(), String> {
        for cell in &self.cells {
            if let (CellKind::BestEffort, Some(cpus)) = (cell.kind, &cell.cpus) {
                let bad: Vec<usize> = cpus.iter().filter(|c| taken.contains(c)).copied().collect();
                if !bad.is_empty() {
                    return Err(format!(
                        "cell {}: best-effort on CPU {}, which an exclusive cell holds; use CPU {}",
                        cell.name,
                        format_cpu_list(&bad),
                        format_cpu_list(shared)
                    ));
                }
            }
        }
        Ok(())
    }

    /// Spinning threads of a dedicated cell: one CPU each.
    fn check_spinning(
        &self,
        threads: &BTreeMap<String, usize>,
        spinning: &[String],
    ) -> Result<(), String> {
        let count = |name: &str| threads.get(name).copied().unwrap_or(1);
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
        Ok(())
    }

    /// SCHED_DEADLINE bandwidth per CPU set (the kernel's root domains); one check line
    /// per set.
    fn check_deadline_bandwidth(
        &self,
        capacity: &Capacity,
        threads: &BTreeMap<String, usize>,
        shared: &[usize],
    ) -> Result<Vec<String>, String> {
        let mut checks = Vec::new();
        let count = |name: &str| threads.get(name).copied().unwrap_or(1);
        let mut domains: Vec<(Vec<usize>, Vec<&Cell>)> = Vec::new();
        for cell in self.cells.iter().filter(|c| c.kind.is_deadline()) {
            let cpus = cell.cpus.clone().unwrap_or_else(|| shared.to_vec());
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
        Ok(checks)
    }

    /// Link bandwidth: the cells' reservations against the shaped link; the check line,
    /// if any cell reserves.
    fn check_link(&self, capacity: &Capacity) -> Result<Option<String>, Refusal> {
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
                    return Err(Refusal::NoShapedLink {
                        reserved: terms.join(" + "),
                    })
                }
                Some(link) => {
                    let line = format!(
                        "bandwidth: {} = {total} Mbit/s of the link's {link} Mbit/s",
                        terms.join(" + ")
                    );
                    if total > link + 1e-9 {
                        return Err(Refusal::Over(format!(
                            "admission: {line}: over by {} Mbit/s",
                            total - link
                        )));
                    }
                    return Ok(Some(line));
                }
            }
        }
        Ok(None)
    }
}

/// The exclusive cells' CPUs against what must stay for the rest of the system; the
/// check line when there are exclusive cells.
fn exclusive_check(
    capacity: &Capacity,
    exclusive: &[(String, Vec<usize>)],
    taken: &[usize],
    shared: &[usize],
) -> Result<Option<String>, String> {
    let online = &capacity.online;
    if !exclusive.is_empty() {
        let names: Vec<String> = exclusive
            .iter()
            .map(|(n, c)| format!("{n} {} ({})", format_cpu_list(c), c.len()))
            .collect();
        if shared.is_empty() {
            let others: Vec<String> = capacity.held.iter().map(ToString::to_string).collect();
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
        return Ok(Some(format!(
            "exclusive CPUs: {} = {} of {} online, CPU {} left for everything else",
            names.join(" + "),
            taken.len(),
            online.len(),
            format_cpu_list(shared)
        )));
    }
    Ok(None)
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
