//! Making a [`CellSet`] real: cpusets (the cgroup v1 `cpuset` hierarchy), per-cell CPU
//! accounting (the v1 `cpuacct` hierarchy), affinities and policies, and undoing all of
//! it.
//!
//! For a set with exclusive cells, [`Partition::create`]:
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
//! Dropping the partition (or [`Partition::finish`]) moves every task back to the
//! root cpuset and `cpuacct` group, restores each moved task's affinity and the root's
//! load balancing, and removes the groups; a state file in `/run/audiolat` lets the next
//! audiolat undo the groups of one that was killed outright.
//!
//! Cells without exclusive CPUs need no root: their threads are pinned to the shared
//! CPUs and given their policy; only the accounting needs the `cpuacct` hierarchy.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use engine::rt::{format_cpu_list, ThreadRt};
use serde_json::{json, Value};

use super::{Admission, Cell, CellSet};

/// Where the kernel mounts a v1 controller, from `/proc/mounts`.
pub fn v1_mount(controller: &str) -> Option<PathBuf> {
    let mounts = fs::read_to_string("/proc/mounts").ok()?;
    mounts.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.len() >= 4 && f[2] == "cgroup" && f[3].split(',').any(|o| o == controller))
            .then(|| PathBuf::from(f[1]))
    })
}

fn read(path: &Path) -> Result<String, String> {
    fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("reading {}: {e}", path.display()))
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    // One write(2) per value: cgroup files take one value per write.
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|mut f| f.write_all(value.as_bytes()))
        .map_err(|e| format!("writing '{value}' to {}: {e}", path.display()))
}

fn tids(dir: &Path) -> Vec<i32> {
    fs::read_to_string(dir.join("tasks"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A task's affinity (`sched_getaffinity`), or `None` when it is gone.
pub fn task_affinity(tid: i32) -> Option<Vec<usize>> {
    // SAFETY: zeroed cpu_set_t is a valid empty set; out pointer of the size passed.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc =
        unsafe { libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    (rc == 0).then(|| {
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: index below CPU_SETSIZE.
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect()
    })
}

fn set_task_affinity(tid: i32, cpus: &[usize]) -> bool {
    // SAFETY: zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
        // SAFETY: c < CPU_SETSIZE.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: a valid set of the size passed.
    unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 }
}

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
    /// `cpu_exclusive` read back as 1.
    pub exclusive_granted: bool,
}

impl PlacedCell {
    /// The `tasks` files a thread writes its id to, to join the cell.
    pub fn tasks_files(&self) -> Vec<PathBuf> {
        self.cpuset
            .iter()
            .chain(self.cpuacct.iter())
            .map(|d| d.join("tasks"))
            .collect()
    }

    /// The `cgroup.procs` files a new process writes `0` to (itself), to join the cell
    /// with every thread and child it will have.
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

const STATE_DIR: &str = "/run/audiolat";

impl Partition {
    /// Makes the cells of an admitted set. Nothing is left behind on an error.
    pub fn create(set: &CellSet, admission: &Admission) -> Result<Partition, String> {
        let exclusive = !admission.exclusive.is_empty();
        let cpuset_root = v1_mount("cpuset");
        let cpuacct_root = v1_mount("cpuacct").filter(|_| is_root());
        if exclusive {
            if !is_root() {
                return Err(
                    "cells with CPUs of their own move other tasks off those CPUs, which needs root: run as root, or use best-effort cells only"
                        .into(),
                );
            }
            if cpuset_root.is_none() {
                return Err(
                    "exclusive cells need the cgroup v1 cpuset hierarchy, which is not mounted (cgroup v2 partitions are not supported yet): mount -t cgroup -o cpuset cpuset /sys/fs/cgroup/cpuset"
                        .into(),
                );
            }
        }
        remove_stale();
        let pid = std::process::id();
        let mut p = Partition {
            prefix: format!("audiolat-{pid}-"),
            cpuset_root: cpuset_root.filter(|_| is_root()),
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
        if let Err(e) = p.build(set, admission) {
            p.undo();
            return Err(e);
        }
        Ok(p)
    }

    fn make_cpuset(&self, root: &Path, name: &str, cpus: &[usize]) -> Result<PathBuf, String> {
        let dir = root.join(format!("{}{name}", self.prefix));
        fs::create_dir(&dir).map_err(|e| format!("making cpuset {}: {e}", dir.display()))?;
        write(&dir.join("cpuset.mems"), &read(&root.join("cpuset.mems"))?)?;
        write(&dir.join("cpuset.cpus"), &format_cpu_list(cpus))?;
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
        }
        for cell in &set.cells {
            let cpus = cell
                .cpus
                .clone()
                .unwrap_or_else(|| admission.shared.clone());
            let cpuset = match &self.cpuset_root {
                Some(root) if exclusive || cell.cpus.is_some() => {
                    Some(self.make_cpuset(&root.clone(), &cell.name, &cpus)?)
                }
                _ => None,
            };
            // Pushed before the flags, so an error still removes the directory.
            self.cells.push(PlacedCell {
                cell: cell.clone(),
                cpus,
                cpuset: cpuset.clone(),
                cpuacct: None,
                exclusive_granted: false,
            });
            if let (Some(dir), true) = (&cpuset, cell.exclusive()) {
                write(&dir.join("cpuset.cpu_exclusive"), "1").map_err(|e| {
                    format!(
                        "cell {}: {e} (another cpuset overlaps its CPUs?)",
                        cell.name
                    )
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
                    "usage_ns_per_cpu": c.usage_percpu(),
                    "bandwidth_mbps": c.cell.bandwidth_mbps,
                })
            })
            .collect();
        json!({
            "cells": cells,
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
        if let Some(f) = self.state_file.take() {
            let _ = fs::remove_file(f);
        }
    }
}

impl Drop for Partition {
    fn drop(&mut self) {
        self.undo();
    }
}

/// Moves every task of `dir` to `root` and removes `dir`; returns what went wrong.
fn empty_and_remove(root: &Path, dir: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for attempt in 0..50 {
        for tid in tids(dir) {
            let _ = write(&root.join("tasks"), &tid.to_string());
        }
        match fs::remove_dir(dir) {
            Ok(()) => return problems,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return problems,
            Err(e) if attempt == 49 => {
                problems.push(format!("removing {}: {e}", dir.display()));
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
    problems
}

/// Undoes the groups of an audiolat that was killed outright (its pid is gone): tasks
/// back to the root, groups removed, the root's load balancing as it was.
pub fn remove_stale() {
    for controller in ["cpuset", "cpuacct"] {
        let Some(root) = v1_mount(controller) else {
            continue;
        };
        let Ok(entries) = fs::read_dir(&root) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name
                .strip_prefix("audiolat-")
                .and_then(|r| r.split('-').next())
                .and_then(|p| p.parse::<i32>().ok());
            // SAFETY: signal 0 only checks that the process exists.
            if pid.is_some_and(|p| unsafe { libc::kill(p, 0) } != 0) {
                let _ = empty_and_remove(&root, &entry.path());
            }
        }
    }
    let Ok(entries) = fs::read_dir(STATE_DIR) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix("cells-")
            .and_then(|r| r.strip_suffix(".json"))
            .and_then(|p| p.parse::<i32>().ok());
        // SAFETY: signal 0 only checks that the process exists.
        if pid.is_some_and(|p| unsafe { libc::kill(p, 0) } != 0) {
            if let Ok(state) = fs::read_to_string(entry.path())
                .map_err(|e| e.to_string())
                .and_then(|t| serde_json::from_str::<Value>(&t).map_err(|e| e.to_string()))
            {
                if let (Some(root), Some(balance)) = (
                    state["cpuset_root"].as_str(),
                    state["sched_load_balance"].as_str(),
                ) {
                    let _ = write(&Path::new(root).join("cpuset.sched_load_balance"), balance);
                }
            }
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// The scheduling state of the machine, to tell whether a run left it as found: every
/// cpuset with its settings, and every task's cpuset, affinity and policy.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemSnapshot {
    /// cpuset path (relative to the mount) -> cpus, mems, cpu_exclusive,
    /// sched_load_balance.
    pub cpusets: BTreeMap<String, String>,
    /// tid -> (command, cpuset, affinity, policy).
    pub tasks: BTreeMap<i32, (String, String, String, String)>,
}

impl SystemSnapshot {
    /// Reads the state now.
    pub fn take() -> SystemSnapshot {
        let mut cpusets = BTreeMap::new();
        if let Some(root) = v1_mount("cpuset") {
            let mut stack = vec![root.clone()];
            while let Some(dir) = stack.pop() {
                let rel = dir
                    .strip_prefix(&root)
                    .map_or(String::new(), |p| p.display().to_string());
                let get = |f: &str| read(&dir.join(f)).unwrap_or_default();
                cpusets.insert(
                    format!("/{rel}"),
                    format!(
                        "cpus={} mems={} exclusive={} load_balance={}",
                        get("cpuset.cpus"),
                        get("cpuset.mems"),
                        get("cpuset.cpu_exclusive"),
                        get("cpuset.sched_load_balance")
                    ),
                );
                if let Ok(entries) = fs::read_dir(&dir) {
                    stack.extend(
                        entries
                            .flatten()
                            .filter(|e| e.path().is_dir())
                            .map(|e| e.path()),
                    );
                }
            }
        }
        let mut tasks = BTreeMap::new();
        for proc_entry in fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = proc_entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            for t in fs::read_dir(format!("/proc/{pid}/task"))
                .into_iter()
                .flatten()
                .flatten()
            {
                let Ok(tid) = t.file_name().to_string_lossy().parse::<i32>() else {
                    continue;
                };
                let base = t.path();
                let comm = fs::read_to_string(base.join("comm"))
                    .unwrap_or_default()
                    .trim()
                    .to_string();
                let cpuset = fs::read_to_string(base.join("cpuset"))
                    .unwrap_or_default()
                    .trim()
                    .to_string();
                let affinity = task_affinity(tid)
                    .map(|a| format_cpu_list(&a))
                    .unwrap_or_default();
                // SAFETY: a plain query by tid.
                let policy = unsafe { libc::sched_getscheduler(tid) };
                if policy < 0 {
                    continue;
                }
                tasks.insert(tid, (comm, cpuset, affinity, policy.to_string()));
            }
        }
        SystemSnapshot { cpusets, tasks }
    }

    /// Differences from `before`, for tasks alive in both (one line each).
    pub fn differences(&self, before: &SystemSnapshot) -> Vec<String> {
        let mut out = Vec::new();
        if self.cpusets != before.cpusets {
            out.push(format!(
                "cpusets were {:?}, now {:?}",
                before.cpusets, self.cpusets
            ));
        }
        for (tid, was) in &before.tasks {
            if let Some(now) = self.tasks.get(tid) {
                // A thread that renamed itself is another thread (tid reuse): skip it.
                if now != was && now.0 == was.0 {
                    out.push(format!("task {tid} ({}): was {was:?}, now {now:?}", was.0));
                }
            }
        }
        out
    }
}
