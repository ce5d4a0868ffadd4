//! What other audiolats hold now, and what one killed outright left behind: found,
//! undone, and compared before and after a run.

use super::*;

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

impl std::fmt::Display for HeldCpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CPU {} is held by audiolat PID {} (its cell `{}`)",
            self.cpu, self.pid, self.cell
        )
    }
}

/// Why threads may not be pinned to CPUs outside any cell: another running audiolat's
/// exclusive cell holds one of them. The kernel would refuse or move such a thread, and
/// the run would measure another CPU than it says; so it is refused before it starts,
/// the holder named, as cell admission refuses a cell.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{held}: wait for that run to end, or pin the threads to other CPUs")]
pub struct CpuHeld {
    /// The CPU and its holder.
    pub held: HeldCpu,
}

/// Refuses `cpus` (threads pinned outside any cell) when another running audiolat's
/// exclusive cell holds one of them ([`held_by_others`]).
pub fn check_cpus_free(cpus: &[usize]) -> Result<(), CpuHeld> {
    if cpus.is_empty() {
        return Ok(());
    }
    match held_by_others().into_iter().find(|h| cpus.contains(&h.cpu)) {
        Some(held) => Err(CpuHeld { held }),
        None => Ok(()),
    }
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
pub(super) fn task_comm(tid: i32) -> String {
    fs::read_to_string(format!("/proc/{tid}/comm"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Gives back the affinities a killed audiolat's state file recorded, to tasks that
/// are still the same (same command name; a reused tid is another task).
pub(super) fn restore_affinities(state: &Value) -> Vec<String> {
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
pub(super) fn group_pid(name: &str) -> Option<i32> {
    name.strip_prefix("audiolat-")
        .and_then(|r| r.split('-').next())
        .and_then(|p| p.parse::<i32>().ok())
}

/// The pid in a state file's name, `cells-PID.json`.
pub(super) fn state_file_pid(name: &str) -> Option<i32> {
    name.strip_prefix("cells-")
        .and_then(|r| r.strip_suffix(".json"))
        .and_then(|p| p.parse::<i32>().ok())
}

/// The groups of audiolats that are gone in the directory `root` of a hierarchy.
pub(super) fn dead_groups(root: &Path) -> Vec<(i32, PathBuf)> {
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
pub(super) fn dead_state_files() -> Vec<(i32, PathBuf, Value)> {
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
pub(super) fn cgroup_dirs(root: &Path) -> Vec<(String, PathBuf)> {
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
