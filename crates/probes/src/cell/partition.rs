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

/// Where the unified (v2) hierarchy is mounted, from `/proc/mounts`.
pub fn v2_mount() -> Option<PathBuf> {
    let mounts = fs::read_to_string("/proc/mounts").ok()?;
    mounts.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.len() >= 3 && f[2] == "cgroup2").then(|| PathBuf::from(f[1]))
    })
}

/// The hierarchy the cpuset controller is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpusetHierarchy {
    /// The v1 `cpuset` hierarchy, mounted there.
    V1(PathBuf),
    /// The unified hierarchy, mounted there, with `cpuset` among its root's controllers.
    V2(PathBuf),
}

impl CpusetHierarchy {
    /// "cgroup v1" or "cgroup v2".
    pub fn name(&self) -> &'static str {
        match self {
            CpusetHierarchy::V1(_) => "cgroup v1",
            CpusetHierarchy::V2(_) => "cgroup v2",
        }
    }

    /// Where it is mounted.
    pub fn mount(&self) -> &Path {
        match self {
            CpusetHierarchy::V1(p) | CpusetHierarchy::V2(p) => p,
        }
    }
}

fn kernel_release() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// The hierarchy the cpuset controller is on here: v1 when its hierarchy is mounted,
/// otherwise v2 when the unified root offers `cpuset`.
pub fn cpuset_hierarchy() -> Option<CpusetHierarchy> {
    if let Some(p) = v1_mount("cpuset") {
        return Some(CpusetHierarchy::V1(p));
    }
    let root = v2_mount()?;
    let controllers = read(&root.join("cgroup.controllers")).ok()?;
    controllers
        .split_whitespace()
        .any(|c| c == "cpuset")
        .then_some(CpusetHierarchy::V2(root))
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
    ids(&dir.join("tasks"))
}

fn ids(file: &Path) -> Vec<i32> {
    fs::read_to_string(file)
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
struct V2Group {
    root: PathBuf,
    /// `ROOT/audiolat-PID`, a threaded subtree's root holding audiolat and its cells.
    group: PathBuf,
    /// The cgroup audiolat was in, to go back to.
    home: PathBuf,
    /// Whether audiolat enabled `cpuset` in the root's `cgroup.subtree_control`.
    enabled_cpuset: bool,
}

const STATE_DIR: &str = "/run/audiolat";

/// The unified-hierarchy cgroup of this process, from `/proc/self/cgroup` (`0::PATH`).
fn own_v2_cgroup(root: &Path) -> PathBuf {
    let rel = fs::read_to_string("/proc/self/cgroup")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("0::").map(str::to_string))
        .unwrap_or_default();
    root.join(rel.trim_start_matches('/'))
}

/// The process a thread belongs to.
fn tgid_of(tid: i32) -> Option<i32> {
    fs::read_to_string(format!("/proc/{tid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Empties a v2 cgroup (every process with a thread in it moves to `home`, whole),
/// makes a partition a member again, and removes it; returns what went wrong.
fn empty_and_remove_v2(home: &Path, dir: &Path) -> Vec<String> {
    if !dir.exists() {
        return Vec::new();
    }
    let _ = write(&dir.join("cpuset.cpus.partition"), "member");
    remove_emptying(dir, || {
        for tid in ids(&dir.join("cgroup.threads")) {
            if let Some(tgid) = tgid_of(tid) {
                if write(&home.join("cgroup.procs"), &tgid.to_string()).is_err() {
                    // A home that is gone or refuses: the root takes anything.
                    let _ = home
                        .ancestors()
                        .filter(|a| a.join("cgroup.procs").exists())
                        .last()
                        .map(|root| write(&root.join("cgroup.procs"), &tgid.to_string()));
                }
            }
        }
    })
}

/// Empties `dir` (with `empty`) and removes it, again and again for a second while
/// tasks are still leaving; returns what went wrong.
fn remove_emptying(dir: &Path, empty: impl Fn()) -> Vec<String> {
    for attempt in 0..50 {
        empty();
        match fs::remove_dir(dir) {
            Ok(()) => return Vec::new(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
            Err(e) if attempt == 49 => {
                return vec![format!("removing {}: {e}", dir.display())];
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
    Vec::new()
}

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
                            "cell {}: CPU {} is held by audiolat PID {} (its cell `{}`): wait for that run to end, or give {} other CPUs",
                            cell.name, h.cpu, h.pid, h.cell, cell.name
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

/// Moves every task of `dir` to `root` and removes `dir`; returns what went wrong.
fn empty_and_remove(root: &Path, dir: &Path) -> Vec<String> {
    remove_emptying(dir, || {
        for tid in tids(dir) {
            let _ = write(&root.join("tasks"), &tid.to_string());
        }
    })
}

/// Writes, retrying for a second while the kernel says busy (a controller is released
/// when the last of its groups is freed, a little after `rmdir`).
fn write_retrying(path: &Path, value: &str) -> Result<(), String> {
    let mut last = Ok(());
    for _ in 0..50 {
        last = write(path, value);
        if last.is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    last
}

/// Makes a cell's threaded child of audiolat's v2 group.
fn v2_cell(group: &Path, name: &str) -> Result<PathBuf, String> {
    let dir = group.join(name);
    fs::create_dir(&dir).map_err(|e| format!("making cgroup {}: {e}", dir.display()))?;
    if let Err(e) = write(&dir.join("cgroup.type"), "threaded") {
        // Not yet in the partition's lists: removed here.
        let _ = fs::remove_dir(&dir);
        return Err(e);
    }
    Ok(dir)
}

/// Gives a v2 cell its CPUs; an exclusive one becomes a partition root. Returns whether
/// the kernel made it one; a partition it finds invalid is an error with its reason.
fn v2_cell_cpus(dir: &Path, name: &str, cpus: &[usize], exclusive: bool) -> Result<bool, String> {
    let list = format_cpu_list(cpus);
    if exclusive {
        write(&dir.join("cpuset.cpus.exclusive"), &list)?;
    }
    write(&dir.join("cpuset.cpus"), &list)?;
    if !exclusive {
        return Ok(false);
    }
    write(&dir.join("cpuset.cpus.partition"), "root")?;
    let state = read(&dir.join("cpuset.cpus.partition"))?;
    if state == "root" {
        Ok(true)
    } else {
        Err(format!(
            "cell {name}: the kernel did not make CPU {list} a partition: {state}"
        ))
    }
}

/// Empties and removes an `audiolat-PID` group of the unified hierarchy and its cells,
/// their processes going to the root.
fn remove_v2_group(root: &Path, group: &Path) {
    for child in fs::read_dir(group).into_iter().flatten().flatten() {
        if child.path().is_dir() {
            let _ = empty_and_remove_v2(root, &child.path());
        }
    }
    let _ = empty_and_remove_v2(root, group);
}

/// Whether another audiolat has groups in the unified hierarchy now.
fn other_audiolat_groups(root: &Path) -> bool {
    let own = format!("audiolat-{}", std::process::id());
    fs::read_dir(root).into_iter().flatten().flatten().any(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        name.starts_with("audiolat-") && name != own && e.path().is_dir()
    })
}

/// Whether a live audiolat other than this one turned cpuset on at the unified root (its
/// state file says so).
fn other_audiolat_enabled_cpuset() -> bool {
    let own = format!("cells-{}.json", std::process::id());
    fs::read_dir(STATE_DIR)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy() != own)
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let pid = name
                .strip_prefix("cells-")
                .and_then(|r| r.strip_suffix(".json"))
                .and_then(|p| p.parse::<i32>().ok());
            pid.is_some_and(engine::servers::process_running)
        })
        .filter_map(|e| fs::read_to_string(e.path()).ok())
        .filter_map(|t| serde_json::from_str::<Value>(&t).ok())
        .any(|state| state["v2_enabled_cpuset"] == json!(true))
}

/// A CPU an exclusive cell of another running audiolat holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldCpu {
    /// The CPU.
    pub cpu: usize,
    /// The audiolat holding it.
    pub pid: i32,
    /// Its cell.
    pub cell: String,
}

/// The CPUs other running audiolats' exclusive cells hold now: v1 cpusets
/// `audiolat-PID-CELL` with `cpu_exclusive` set, v2 groups `audiolat-PID/CELL` that are
/// partition roots.
pub fn held_by_others() -> Vec<HeldCpu> {
    let own = std::process::id() as i32;
    let mut held = Vec::new();
    let mut add = |pid: i32, cell: &str, cpus: &str| {
        for cpu in engine::rt::parse_cpu_list(cpus).unwrap_or_default() {
            held.push(HeldCpu {
                cpu,
                pid,
                cell: cell.to_string(),
            });
        }
    };
    let live =
        |name: &str| group_pid(name).filter(|&p| p != own && engine::servers::process_running(p));
    if let Some(root) = v1_mount("cpuset") {
        for entry in fs::read_dir(&root).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = live(&name) else {
                continue;
            };
            let dir = entry.path();
            if read(&dir.join("cpuset.cpu_exclusive")).as_deref() == Ok("1") {
                let cell = name.splitn(3, '-').nth(2).unwrap_or_default();
                add(
                    pid,
                    cell,
                    &read(&dir.join("cpuset.cpus")).unwrap_or_default(),
                );
            }
        }
    }
    if let Some(root) = v2_mount() {
        for entry in fs::read_dir(&root).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = live(&name) else {
                continue;
            };
            for cell in fs::read_dir(entry.path()).into_iter().flatten().flatten() {
                let dir = cell.path();
                let partition = read(&dir.join("cpuset.cpus.partition")).unwrap_or_default();
                if dir.is_dir() && partition.starts_with("root") {
                    let cpus = read(&dir.join("cpuset.cpus.exclusive")).unwrap_or_default();
                    add(pid, &cell.file_name().to_string_lossy(), &cpus);
                }
            }
        }
    }
    held
}

/// A task's command name, or empty when it is gone.
fn task_comm(tid: i32) -> String {
    fs::read_to_string(format!("/proc/{tid}/comm"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Gives back the affinities a killed audiolat's state file recorded, to tasks that
/// are still the same (same command name; a reused tid is another task).
fn restore_affinities(state: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    for entry in state["affinities"].as_array().into_iter().flatten() {
        let (Some(tid), Some(comm), Some(cpus)) =
            (entry[0].as_i64(), entry[1].as_str(), entry[2].as_str())
        else {
            continue;
        };
        let tid = tid as i32;
        let Ok(cpus) = engine::rt::parse_cpu_list(cpus) else {
            continue;
        };
        if task_comm(tid) != comm || task_affinity(tid).is_none_or(|now| now == cpus) {
            continue;
        }
        if !set_task_affinity(tid, &cpus) && task_affinity(tid).is_some() {
            problems.push(format!(
                "task {tid} ({comm}): could not restore its affinity to CPU {}",
                format_cpu_list(&cpus)
            ));
        }
    }
    problems
}

/// The pid in `audiolat-PID` or `audiolat-PID-CELL`.
fn group_pid(name: &str) -> Option<i32> {
    name.strip_prefix("audiolat-")
        .and_then(|r| r.split('-').next())
        .and_then(|p| p.parse::<i32>().ok())
}

/// The pid in a state file's name, `cells-PID.json`.
fn state_file_pid(name: &str) -> Option<i32> {
    name.strip_prefix("cells-")
        .and_then(|r| r.strip_suffix(".json"))
        .and_then(|p| p.parse::<i32>().ok())
}

/// The groups of audiolats that are gone in the directory `root` of a hierarchy.
fn dead_groups(root: &Path) -> Vec<(i32, PathBuf)> {
    let mut out: Vec<(i32, PathBuf)> = fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| {
            let pid = group_pid(&e.file_name().to_string_lossy())?;
            (!engine::servers::process_running(pid)).then(|| (pid, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// The state files of audiolats that are gone, with what they say.
fn dead_state_files() -> Vec<(i32, PathBuf, Value)> {
    let mut out: Vec<(i32, PathBuf, Value)> = fs::read_dir(STATE_DIR)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid = state_file_pid(&e.file_name().to_string_lossy())?;
            if engine::servers::process_running(pid) {
                return None;
            }
            let state = fs::read_to_string(e.path())
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .unwrap_or(Value::Null);
            Some((pid, e.path(), state))
        })
        .collect();
    out.sort_by_key(|(pid, _, _)| *pid);
    out
}

/// What audiolats that are gone (killed outright) left of their cells, by pid, one
/// phrase per thing: cpusets with the tasks they still confine, `cpuacct` groups, the
/// root cpuset's load balancing, the unified hierarchy's groups and cpuset controller,
/// state files. A running audiolat's are not listed.
pub fn stale() -> BTreeMap<i32, Vec<String>> {
    let mut out: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    if let Some(root) = v1_mount("cpuset") {
        for (pid, dir) in dead_groups(&root) {
            let tasks = tids(&dir).len();
            let cpus = read(&dir.join("cpuset.cpus")).unwrap_or_default();
            out.entry(pid).or_default().push(if tasks == 0 {
                format!("cpuset {} (CPU {cpus})", dir.display())
            } else {
                format!(
                    "cpuset {} ({tasks} tasks confined to CPU {cpus})",
                    dir.display()
                )
            });
        }
    }
    if let Some(root) = v1_mount("cpuacct") {
        for (pid, dir) in dead_groups(&root) {
            out.entry(pid)
                .or_default()
                .push(format!("cpuacct group {}", dir.display()));
        }
    }
    if let Some(root) = v2_mount() {
        for (pid, dir) in dead_groups(&root) {
            let procs = ids(&dir.join("cgroup.procs")).len();
            out.entry(pid).or_default().push(format!(
                "cgroup {} ({procs} processes in it)",
                dir.display()
            ));
        }
    }
    for (pid, file, state) in dead_state_files() {
        let items = out.entry(pid).or_default();
        if let (Some(root), Some(was)) = (
            state["cpuset_root"].as_str(),
            state["sched_load_balance"].as_str(),
        ) {
            match read(&Path::new(root).join("cpuset.sched_load_balance")) {
                Ok(now) if now != was => items.push(format!(
                    "the root cpuset's sched_load_balance {now} (was {was})"
                )),
                Ok(_) => {}
                Err(_) => items.push(format!(
                    "the root cpuset's sched_load_balance to set back to {was} (no {root} to set it in)"
                )),
            }
        }
        items.push(format!("state file {}", file.display()));
    }
    out
}

/// Undoes what audiolats that were killed outright (their pids are gone) left of their
/// cells: the root's load balancing (v1) as it was, every task back in the root cpuset
/// (which gives it every CPU again), groups removed, the unified hierarchy's cpuset
/// controller (v2) as it was, state files removed. Never stops half-way and never looks
/// at a stop flag: a signal during it does not cut it short. Returns what could not be
/// undone; a state file stays while anything of its audiolat's is left.
pub fn remove_stale() -> Vec<String> {
    let mut problems = Vec::new();
    let states = dead_state_files();
    for (_, _, state) in &states {
        if let (Some(root), Some(balance)) = (
            state["cpuset_root"].as_str(),
            state["sched_load_balance"].as_str(),
        ) {
            let file = Path::new(root).join("cpuset.sched_load_balance");
            if read(&file).ok().as_deref() != Some(balance) {
                if let Err(e) = write(&file, balance) {
                    problems.push(e);
                }
            }
        }
    }
    if let Some(root) = v2_mount() {
        for (_, dir) in dead_groups(&root) {
            remove_v2_group(&root, &dir);
            if dir.exists() {
                problems.push(format!("could not remove cgroup {}", dir.display()));
            }
        }
    }
    for controller in ["cpuset", "cpuacct"] {
        let Some(root) = v1_mount(controller) else {
            continue;
        };
        for (_, dir) in dead_groups(&root) {
            problems.extend(empty_and_remove(&root, &dir));
        }
    }
    for (_, _, state) in &states {
        problems.extend(restore_affinities(state));
    }
    let left = stale();
    for (pid, file, state) in &states {
        if let (Some(root), Some(true)) = (
            state["v2_root"].as_str(),
            state["v2_enabled_cpuset"].as_bool(),
        ) {
            // A live audiolat still holding the controller turns it off itself.
            if !other_audiolat_groups(Path::new(root)) {
                if let Err(e) =
                    write_retrying(&Path::new(root).join("cgroup.subtree_control"), "-cpuset")
                {
                    problems.push(e);
                }
            }
        }
        let only_the_file = left
            .get(pid)
            .is_none_or(|items| items.iter().all(|i| i.starts_with("state file ")));
        if only_the_file {
            if let Err(e) = fs::remove_file(file) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    problems.push(format!("removing {}: {e}", file.display()));
                }
            }
        }
    }
    problems
}

/// Every directory of a cgroup hierarchy, with its path from the mount ("/" for the
/// root).
fn cgroup_dirs(root: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let rel = dir
            .strip_prefix(root)
            .map_or(String::new(), |p| p.display().to_string());
        if let Ok(entries) = fs::read_dir(&dir) {
            stack.extend(
                entries
                    .flatten()
                    .filter(|e| e.path().is_dir())
                    .map(|e| e.path()),
            );
        }
        out.push((format!("/{rel}"), dir));
    }
    out
}

/// The scheduling state of the machine, to tell whether a run left it as found: every
/// cpuset with its settings, and every task's cpuset, affinity and policy.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemSnapshot {
    /// v1 cpuset path (relative to the mount) -> cpus, mems, cpu_exclusive,
    /// sched_load_balance; `v2:PATH` for every unified cgroup -> subtree_control, cpus,
    /// exclusive CPUs, partition state.
    pub cpusets: BTreeMap<String, String>,
    /// tid -> (command, cpuset, affinity, policy).
    pub tasks: BTreeMap<i32, (String, String, String, String)>,
}

impl SystemSnapshot {
    /// Reads the state now.
    pub fn take() -> SystemSnapshot {
        let mut cpusets = BTreeMap::new();
        if let Some(root) = v1_mount("cpuset") {
            for (rel, dir) in cgroup_dirs(&root) {
                let get = |f: &str| read(&dir.join(f)).unwrap_or_default();
                cpusets.insert(
                    rel,
                    format!(
                        "cpus={} mems={} exclusive={} load_balance={}",
                        get("cpuset.cpus"),
                        get("cpuset.mems"),
                        get("cpuset.cpu_exclusive"),
                        get("cpuset.sched_load_balance")
                    ),
                );
            }
        }
        if let Some(root) = v2_mount() {
            for (rel, dir) in cgroup_dirs(&root) {
                let get = |f: &str| read(&dir.join(f)).unwrap_or_default();
                cpusets.insert(
                    format!("v2:{rel}"),
                    format!(
                        "subtree_control={} cpus={} exclusive={} partition={}",
                        get("cgroup.subtree_control"),
                        get("cpuset.cpus"),
                        get("cpuset.cpus.exclusive"),
                        get("cpuset.cpus.partition")
                    ),
                );
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
