//! Making a [`CellSet`] real: cpusets (the cgroup v1 `cpuset` hierarchy, or cgroup v2
//! cpuset partitions), per-cell CPU accounting (the v1 `cpuacct` hierarchy, or v2's
//! `cpu.stat`), affinities and policies, and undoing all of it.
//!
//! On **cgroup v1** (this project's test machine), for a set with exclusive cells,
//! [`Partition::create`]:
//!
//! 1. makes `audiolat-PID-rest`, a cpuset on the CPUs no exclusive cell holds, and moves
//!    every task of the root cpuset there (recording each one's affinity); kernel
//!    threads bound to a CPU cannot move and are counted (`unmovable`);
//! 2. makes `audiolat-PID-CELL` per cell, `cpu_exclusive` for exclusive cells, and a
//!    `cpuacct` group of the same name, whose `cpuacct.usage_percpu` is the kernel's own
//!    account of where the cell's threads ran;
//! 3. turns off load balancing in the root cpuset, so each exclusive cell is a
//!    scheduling domain (a root domain) of its own: the scheduler never pulls other
//!    work onto its CPUs, and SCHED_DEADLINE admits and runs its threads there.
//!
//! On **cgroup v2** (where the cpuset controller is on the unified hierarchy, as on most
//! systemd machines) the kernel does the moving: audiolat enables `cpuset` at the root,
//! makes `audiolat-PID` (a threaded subtree) and moves itself into it, and makes one
//! threaded child per cell; an exclusive cell's child is a *remote partition root*
//! (`cpuset.cpus.exclusive` on the path, `cpuset.cpus.partition = root`, Linux 6.7 and
//! later), which takes its CPUs out of every other cgroup's effective set, so every
//! other task leaves them, and is a scheduling domain of its own. A partition the
//! kernel finds invalid is refused with the kernel's reason. The kernel keeps each
//! task's own affinity request, so tasks get their CPUs back when the partition goes.
//!
//! Dropping the partition (or [`Partition::finish`]) puts every task back (v1: to the
//! root cpuset and `cpuacct` group, restoring each moved task's affinity and the root's
//! load balancing; v2: audiolat's processes to the cgroup audiolat came from), and
//! removes the groups; a state file in `/run/audiolat` lets the next audiolat undo the
//! groups of one that was killed outright.
//!
//! Cells without exclusive CPUs need no root: their threads are pinned to the shared
//! CPUs and given their policy; only the accounting needs the `cpuacct` hierarchy.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use engine::rt::{format_cpu_list, ThreadRt};
use serde_json::{json, Value};

use crate::{Admission, Cell, CellSet};

mod cgroup;
mod stale;

use cgroup::*;
pub use cgroup::{cpuset_hierarchy, task_affinity, v1_mount, v2_mount, CpusetHierarchy};
use stale::*;
pub use stale::{
    check_cpus_free, held_by_others, remove_stale, stale, CpuHeld, HeldCpu, SystemSnapshot,
};

/// One cell, placed.
#[derive(Debug, Clone, PartialEq)]
pub struct PlacedCell {
    /// The cell as asked for.
    pub cell: Cell,
    /// The CPUs its threads run on.
    pub cpus: Vec<usize>,
    /// Its cpuset directory, if it has one.
    pub cpuset: Option<PathBuf>,
    /// Its cpuacct directory, if the hierarchy is there.
    pub cpuacct: Option<PathBuf>,
    /// Whether the cpuset is a v2 (threaded) cgroup: threads join through
    /// `cgroup.threads` rather than `tasks`.
    pub cpuset_v2: bool,
    /// v1: `cpu_exclusive` read back as 1; v2: `cpuset.cpus.partition` read back as
    /// `root`.
    pub exclusive_granted: bool,
}

impl PlacedCell {
    /// The `tasks` files a thread writes its id to, to join the cell.
    pub fn tasks_files(&self) -> Vec<PathBuf> {
        let cpuset_file = if self.cpuset_v2 {
            "cgroup.threads"
        } else {
            "tasks"
        };
        self.cpuset
            .iter()
            .map(|d| d.join(cpuset_file))
            .chain(self.cpuacct.iter().map(|d| d.join("tasks")))
            .collect()
    }

    /// The `cgroup.procs` files a new process writes `0` to (itself), to join the cell
    /// with every thread and child it will have. (On v2 the process must already be in
    /// audiolat's threaded subtree, as audiolat's children are.)
    pub fn procs_files(&self) -> Vec<PathBuf> {
        self.cpuset
            .iter()
            .chain(self.cpuacct.iter())
            .map(|d| d.join("cgroup.procs"))
            .collect()
    }

    /// The kernel's account of the cell's CPU time, ns per CPU (`cpuacct.usage_percpu`).
    pub fn usage_percpu(&self) -> Option<Vec<u64>> {
        let dir = self.cpuacct.as_ref()?;
        let text = fs::read_to_string(dir.join("cpuacct.usage_percpu")).ok()?;
        Some(
            text.split_whitespace()
                .filter_map(|v| v.parse().ok())
                .collect(),
        )
    }

    /// The kernel's account of the cell's CPU time in ns, all CPUs together: the sum of
    /// `cpuacct.usage_percpu`, or v2's `cpu.stat` `usage_usec` where there is no cpuacct.
    pub fn usage_ns(&self) -> Option<u64> {
        if let Some(per_cpu) = self.usage_percpu() {
            return Some(per_cpu.iter().sum());
        }
        let dir = self.cpuset.as_ref().filter(|_| self.cpuset_v2)?;
        let text = fs::read_to_string(dir.join("cpu.stat")).ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix("usage_usec "))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|us| us * 1000)
    }

    /// Puts the calling thread in the cell: joins its groups, pins it to the cell's CPUs
    /// and sets the cell's policy. The grant says what the kernel gave. Call it on a
    /// thread made for the cell; it keeps the cell's policy until it ends.
    pub fn enter(&self) -> CellThread {
        let refusals = super::join_groups(&self.tasks_files());
        // A SCHED_DEADLINE thread must span its root domain: a cell without CPUs of its own
        // stays on the shared CPUs its cpuset gives it.
        let rt = ThreadRt::apply(&self.cell.policy, Some(&self.cpus), 128 * 1024);
        CellThread {
            cell: self.cell.name.clone(),
            rt,
            refusals,
        }
    }
}

/// What a thread got when it entered a cell.
#[derive(Debug, Clone)]
pub struct CellThread {
    /// The cell's name.
    pub cell: String,
    /// Policy and CPUs granted.
    pub rt: ThreadRt,
    /// Groups it could not join, and why.
    pub refusals: Vec<String>,
}

/// A cell set made real; undone when dropped.
#[derive(Debug)]
pub struct Partition {
    prefix: String,
    cpuset_root: Option<PathBuf>,
    v2: Option<V2Group>,
    cpuacct_root: Option<PathBuf>,
    cells: Vec<PlacedCell>,
    rest: Option<PathBuf>,
    moved: Vec<(i32, Vec<usize>)>,
    unmovable: Vec<i32>,
    root_load_balance: Option<String>,
    state_file: Option<PathBuf>,
    undone: bool,
    problems: Vec<String>,
}

/// audiolat's subtree of the unified hierarchy.
#[derive(Debug)]
pub(super) struct V2Group {
    root: PathBuf,
    /// `ROOT/audiolat-PID`, a threaded subtree's root holding audiolat and its cells.
    group: PathBuf,
    /// The cgroup audiolat was in, to go back to.
    home: PathBuf,
    /// Whether audiolat enabled `cpuset` in the root's `cgroup.subtree_control`.
    enabled_cpuset: bool,
}

pub(super) const STATE_DIR: &str = "/run/audiolat";

impl Partition {
    /// Makes the cells of an admitted set. Nothing is left behind on an error.
    pub fn create(set: &CellSet, admission: &Admission) -> Result<Partition, String> {
        let exclusive = !admission.exclusive.is_empty();
        let hierarchy = cpuset_hierarchy();
        let cpuacct_root = v1_mount("cpuacct").filter(|_| is_root());
        Partition::check(admission)?;
        let (cpuset_root, v2_root) = match hierarchy.filter(|_| is_root()) {
            Some(CpusetHierarchy::V1(p)) => (Some(p), None),
            Some(CpusetHierarchy::V2(p)) => (None, Some(p)),
            None => (None, None),
        };
        let _ = remove_stale();
        let pid = std::process::id();
        let mut p = Partition {
            prefix: format!("audiolat-{pid}-"),
            cpuset_root,
            v2: None,
            cpuacct_root,
            cells: Vec::new(),
            rest: None,
            moved: Vec::new(),
            unmovable: Vec::new(),
            root_load_balance: None,
            state_file: None,
            undone: false,
            problems: Vec::new(),
        };
        let needs_v2 = exclusive || set.cells.iter().any(|c| c.cpus.is_some());
        let built = match v2_root {
            Some(root) if needs_v2 => {
                let mut all: Vec<usize> = admission
                    .exclusive
                    .iter()
                    .flat_map(|(_, cpus)| cpus.iter().copied())
                    .collect();
                all.sort_unstable();
                all.dedup();
                p.build_v2(&root, &all)
            }
            _ => Ok(()),
        };
        if let Err(e) = built.and_then(|()| p.build(set, admission)) {
            p.undo();
            return Err(e);
        }
        Ok(p)
    }

    /// Whether this process can make an admitted set's cells here (exclusive cells need
    /// root and the cpuset controller): checked before anything starts, so a refusal
    /// stores nothing.
    pub fn check(admission: &Admission) -> Result<(), String> {
        if admission.exclusive.is_empty() {
            return Ok(());
        }
        if !is_root() {
            return Err(
                "cells with CPUs of their own move other tasks off those CPUs, which needs root: run as root, or use best-effort cells only"
                    .into(),
            );
        }
        if cpuset_hierarchy().is_none() {
            return Err(
                "exclusive cells need the cpuset controller, which is on no mounted hierarchy: mount cgroup v2 with cpuset available (systemd does), or the v1 hierarchy (mount -t cgroup -o cpuset cpuset /sys/fs/cgroup/cpuset)"
                    .into(),
            );
        }
        Ok(())
    }

    fn make_cpuset(&self, root: &Path, name: &str, cpus: &[usize]) -> Result<PathBuf, String> {
        let dir = root.join(format!("{}{name}", self.prefix));
        fs::create_dir(&dir).map_err(|e| format!("making cpuset {}: {e}", dir.display()))?;
        let set = read(&root.join("cpuset.mems"))
            .and_then(|mems| write(&dir.join("cpuset.mems"), &mems))
            .and_then(|()| write(&dir.join("cpuset.cpus"), &format_cpu_list(cpus)));
        if let Err(e) = set {
            // Not yet in the partition's lists: removed here.
            let _ = fs::remove_dir(&dir);
            return Err(e);
        }
        Ok(dir)
    }

    fn build(&mut self, set: &CellSet, admission: &Admission) -> Result<(), String> {
        let exclusive = !admission.exclusive.is_empty();
        if let (true, Some(root)) = (exclusive, self.cpuset_root.clone()) {
            self.save_state(&root)?;
            let rest = self.make_cpuset(&root, "rest", &admission.shared)?;
            self.rest = Some(rest.clone());
            // A task may fork while we move: go round until nothing movable is left.
            for _ in 0..5 {
                let mut moved_any = false;
                for tid in tids(&root) {
                    if self.unmovable.contains(&tid) {
                        continue;
                    }
                    let Some(affinity) = task_affinity(tid) else {
                        continue;
                    };
                    if write(&rest.join("tasks"), &tid.to_string()).is_ok() {
                        self.moved.push((tid, affinity));
                        moved_any = true;
                    } else if task_affinity(tid).is_some() {
                        self.unmovable.push(tid);
                    }
                }
                if !moved_any {
                    break;
                }
            }
            self.save_affinities(&root);
        }
        for cell in &set.cells {
            let cpus = cell
                .cpus
                .clone()
                .unwrap_or_else(|| admission.shared.clone());
            let cpuset = match (&self.cpuset_root, &self.v2) {
                (Some(root), _) if exclusive || cell.cpus.is_some() => {
                    Some(self.make_cpuset(&root.clone(), &cell.name, &cpus)?)
                }
                (_, Some(v2)) => Some(v2_cell(&v2.group, &cell.name)?),
                _ => None,
            };
            // Pushed before the settings, so an error still removes the directory.
            self.cells.push(PlacedCell {
                cell: cell.clone(),
                cpus: cpus.clone(),
                cpuset: cpuset.clone(),
                cpuacct: None,
                cpuset_v2: self.v2.is_some(),
                exclusive_granted: false,
            });
            if let (Some(dir), true) = (&cpuset, self.v2.is_some()) {
                let granted = v2_cell_cpus(dir, &cell.name, &cpus, cell.exclusive())?;
                if let Some(last) = self.cells.last_mut() {
                    last.exclusive_granted = granted;
                }
            } else if let (Some(dir), true) = (&cpuset, cell.exclusive()) {
                write(&dir.join("cpuset.cpu_exclusive"), "1").map_err(|e| {
                    // Another audiolat that took the CPU since admission: name it.
                    match held_by_others().into_iter().find(|h| cpus.contains(&h.cpu)) {
                        Some(h) => format!(
                            "cell {}: {h}: wait for that run to end, or give {} other CPUs",
                            cell.name, cell.name
                        ),
                        None => format!(
                            "cell {}: {e} (another cpuset overlaps its CPUs?)",
                            cell.name
                        ),
                    }
                })?;
                let granted = read(&dir.join("cpuset.cpu_exclusive")).as_deref() == Ok("1");
                if let Some(last) = self.cells.last_mut() {
                    last.exclusive_granted = granted;
                }
            }
            if let Some(root) = &self.cpuacct_root {
                let dir = root.join(format!("{}{}", self.prefix, cell.name));
                fs::create_dir(&dir)
                    .map_err(|e| format!("making cpuacct group {}: {e}", dir.display()))?;
                if let Some(last) = self.cells.last_mut() {
                    last.cpuacct = Some(dir);
                }
            }
        }
        if let (true, Some(root)) = (exclusive, self.cpuset_root.clone()) {
            let file = root.join("cpuset.sched_load_balance");
            let was = read(&file)?;
            if was != "0" {
                write(&file, "0")?;
                self.root_load_balance = Some(was);
            }
        }
        Ok(())
    }

    fn save_state(&mut self, root: &Path) -> Result<(), String> {
        let balance = read(&root.join("cpuset.sched_load_balance")).unwrap_or_else(|_| "1".into());
        let _ = fs::create_dir_all(STATE_DIR);
        let file = PathBuf::from(STATE_DIR).join(format!("cells-{}.json", std::process::id()));
        let state = json!({"cpuset_root": root, "sched_load_balance": balance});
        fs::write(&file, state.to_string())
            .map_err(|e| format!("writing {}: {e}", file.display()))?;
        self.state_file = Some(file);
        Ok(())
    }

    /// Adds to the state file the affinity of each moved task that did not have every
    /// CPU of the root cpuset, so a successor can give it back if this audiolat is
    /// killed (moving a task back to the root cpuset gives it every CPU).
    fn save_affinities(&self, root: &Path) {
        let Some(file) = &self.state_file else {
            return;
        };
        let all = engine::rt::parse_cpu_list(&read(&root.join("cpuset.cpus")).unwrap_or_default())
            .unwrap_or_default();
        let pinned: Vec<Value> = self
            .moved
            .iter()
            .filter(|(_, affinity)| *affinity != all)
            .map(|(tid, affinity)| json!([tid, task_comm(*tid), format_cpu_list(affinity)]))
            .collect();
        if pinned.is_empty() {
            return;
        }
        let mut state = fs::read_to_string(file)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .unwrap_or_else(|| json!({}));
        state["affinities"] = Value::Array(pinned);
        let _ = fs::write(file, state.to_string());
    }

    /// Enables cpuset at the unified root if it is not, makes `audiolat-PID` (its
    /// `cpuset.cpus.exclusive` holding every exclusive cell's CPUs) and moves this
    /// process into it.
    fn build_v2(&mut self, root: &Path, exclusive: &[usize]) -> Result<(), String> {
        let control = root.join("cgroup.subtree_control");
        let enabled = read(&control)?;
        let enable = !enabled.split_whitespace().any(|c| c == "cpuset");
        // Another audiolat that turned cpuset on may finish first, while our group still
        // holds the controller: then whichever leaves last turns it off.
        let turn_off_after = enable || other_audiolat_enabled_cpuset();
        let group = root.join(format!("audiolat-{}", std::process::id()));
        let home = own_v2_cgroup(root);
        // Recorded first, so a killed audiolat's successor can undo whatever was done.
        let _ = fs::create_dir_all(STATE_DIR);
        let file = PathBuf::from(STATE_DIR).join(format!("cells-{}.json", std::process::id()));
        let state = json!({"v2_root": root, "v2_enabled_cpuset": turn_off_after, "home": home});
        fs::write(&file, state.to_string())
            .map_err(|e| format!("writing {}: {e}", file.display()))?;
        self.state_file = Some(file);
        self.v2 = Some(V2Group {
            root: root.to_path_buf(),
            group: group.clone(),
            home,
            enabled_cpuset: turn_off_after,
        });
        if enable {
            write(&control, "+cpuset")?;
        }
        // A group of our pid cannot be ours yet: a killed audiolat's, whose pid we got.
        if group.exists() {
            remove_v2_group(root, &group);
        }
        fs::create_dir(&group).map_err(|e| format!("making cgroup {}: {e}", group.display()))?;
        write(&group.join("cgroup.subtree_control"), "+cpuset")?;
        if !exclusive.is_empty() {
            let file = group.join("cpuset.cpus.exclusive");
            if !file.exists() {
                return Err(format!(
                    "this kernel ({}) has cgroup v2 cpusets without remote partitions (cpuset.cpus.exclusive, Linux 6.7 and later), which exclusive cells use: upgrade the kernel, or mount the v1 cpuset hierarchy",
                    kernel_release()
                ));
            }
            write(&file, &format_cpu_list(exclusive))?;
        }
        write(&group.join("cgroup.procs"), &std::process::id().to_string())
    }

    /// The placed cell of that name.
    pub fn cell(&self, name: &str) -> Option<&PlacedCell> {
        self.cells.iter().find(|c| c.cell.name == name)
    }

    /// Every placed cell.
    pub fn cells(&self) -> &[PlacedCell] {
        &self.cells
    }

    /// What was granted, for the run's record: per cell its CPUs, cpuset, exclusivity and
    /// the kernel's CPU time per CPU so far; tasks moved off the exclusive CPUs and those
    /// that could not move.
    pub fn granted(&self) -> Value {
        let cells: Vec<Value> = self
            .cells
            .iter()
            .map(|c| {
                json!({
                    "name": c.cell.name,
                    "kind": c.cell.kind.name(),
                    "policy": c.cell.policy.to_string(),
                    "cpus": format_cpu_list(&c.cpus),
                    "cpuset": c.cpuset.as_ref().map(|p| p.display().to_string()),
                    "exclusive": c.exclusive_granted,
                    "usage_ns": c.usage_ns(),
                    "usage_ns_per_cpu": c.usage_percpu(),
                    "bandwidth_mbps": c.cell.bandwidth_mbps,
                })
            })
            .collect();
        let hierarchy = if self.v2.is_some() {
            "cgroup v2"
        } else if self.cpuset_root.is_some() {
            "cgroup v1"
        } else {
            "none"
        };
        json!({
            "cells": cells,
            "cpusets": hierarchy,
            "tasks_moved": self.moved.len(),
            "tasks_unmovable": self.unmovable.len(),
            "root_load_balance_off": self.root_load_balance.is_some(),
            "problems": self.problems,
        })
    }

    /// Undoes everything and says what could not be undone (empty when all was).
    pub fn finish(mut self) -> Vec<String> {
        self.undo();
        std::mem::take(&mut self.problems)
    }

    fn undo(&mut self) {
        if self.undone {
            return;
        }
        self.undone = true;
        if let Some(root) = self.cpuset_root.clone() {
            if let Some(was) = self.root_load_balance.take() {
                if let Err(e) = write(&root.join("cpuset.sched_load_balance"), &was) {
                    self.problems.push(e);
                }
            }
            let dirs: Vec<PathBuf> = self
                .cells
                .iter()
                .filter_map(|c| c.cpuset.clone())
                .chain(self.rest.clone())
                .collect();
            for dir in &dirs {
                self.problems.extend(empty_and_remove(&root, dir));
            }
            for (tid, affinity) in &self.moved {
                let differs = task_affinity(*tid).is_some_and(|now| now != *affinity);
                // A task that ended meanwhile needs nothing.
                if differs && !set_task_affinity(*tid, affinity) && task_affinity(*tid).is_some() {
                    self.problems.push(format!(
                        "task {tid}: could not restore its affinity to CPU {}",
                        format_cpu_list(affinity)
                    ));
                }
            }
        }
        if let Some(v2) = self.v2.take() {
            let dirs: Vec<PathBuf> = self
                .cells
                .iter()
                .filter_map(|c| c.cpuset.clone())
                .chain([v2.group.clone()])
                .collect();
            for dir in &dirs {
                self.problems.extend(empty_and_remove_v2(&v2.home, dir));
            }
            // The last audiolat out turns cpuset off; one still running will.
            if v2.enabled_cpuset && !other_audiolat_groups(&v2.root) {
                if let Err(e) = write_retrying(&v2.root.join("cgroup.subtree_control"), "-cpuset") {
                    self.problems.push(e);
                }
            }
        }
        if let Some(root) = self.cpuacct_root.clone() {
            for dir in self
                .cells
                .iter()
                .filter_map(|c| c.cpuacct.clone())
                .collect::<Vec<_>>()
            {
                self.problems.extend(empty_and_remove(&root, &dir));
            }
        }
        // Kept when something could not be undone: the next audiolat tries again.
        if let Some(f) = self.state_file.take() {
            if self.problems.is_empty() {
                let _ = fs::remove_file(f);
            }
        }
    }
}

impl Drop for Partition {
    fn drop(&mut self) {
        self.undo();
    }
}
