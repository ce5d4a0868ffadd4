//! The cgroup file system: where the hierarchies are mounted, reading and writing
//! control files, tasks and affinities, and making and removing v2 groups.

use super::*;

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

pub(super) fn kernel_release() -> String {
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

pub(super) fn read(path: &Path) -> Result<String, String> {
    fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("reading {}: {e}", path.display()))
}

pub(super) fn write(path: &Path, value: &str) -> Result<(), String> {
    // One write(2) per value: cgroup files take one value per write.
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|mut f| f.write_all(value.as_bytes()))
        .map_err(|e| format!("writing '{value}' to {}: {e}", path.display()))
}

pub(super) fn tids(dir: &Path) -> Vec<i32> {
    ids(&dir.join("tasks"))
}

pub(super) fn ids(file: &Path) -> Vec<i32> {
    fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

pub(super) fn is_root() -> bool {
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

pub(super) fn set_task_affinity(tid: i32, cpus: &[usize]) -> bool {
    // SAFETY: zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
        // SAFETY: c < CPU_SETSIZE.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: a valid set of the size passed.
    unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 }
}
/// The unified-hierarchy cgroup of this process, from `/proc/self/cgroup` (`0::PATH`).
pub(super) fn own_v2_cgroup(root: &Path) -> PathBuf {
    let rel = fs::read_to_string("/proc/self/cgroup")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("0::").map(str::to_string))
        .unwrap_or_default();
    root.join(rel.trim_start_matches('/'))
}

/// The process a thread belongs to.
pub(super) fn tgid_of(tid: i32) -> Option<i32> {
    fs::read_to_string(format!("/proc/{tid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Empties a v2 cgroup (every process with a thread in it moves to `home`, whole),
/// makes a partition a member again, and removes it; returns what went wrong.
pub(super) fn empty_and_remove_v2(home: &Path, dir: &Path) -> Vec<String> {
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
pub(super) fn remove_emptying(dir: &Path, empty: impl Fn()) -> Vec<String> {
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

/// Moves every task of `dir` to `root` and removes `dir`; returns what went wrong.
pub(super) fn empty_and_remove(root: &Path, dir: &Path) -> Vec<String> {
    remove_emptying(dir, || {
        for tid in tids(dir) {
            let _ = write(&root.join("tasks"), &tid.to_string());
        }
    })
}

/// Writes, retrying for a second while the kernel says busy (a controller is released
/// when the last of its groups is freed, a little after `rmdir`).
pub(super) fn write_retrying(path: &Path, value: &str) -> Result<(), String> {
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
pub(super) fn v2_cell(group: &Path, name: &str) -> Result<PathBuf, String> {
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
pub(super) fn v2_cell_cpus(
    dir: &Path,
    name: &str,
    cpus: &[usize],
    exclusive: bool,
) -> Result<bool, String> {
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
pub(super) fn remove_v2_group(root: &Path, group: &Path) {
    for child in fs::read_dir(group).into_iter().flatten().flatten() {
        if child.path().is_dir() {
            let _ = empty_and_remove_v2(root, &child.path());
        }
    }
    let _ = empty_and_remove_v2(root, group);
}

/// Whether another audiolat has groups in the unified hierarchy now.
pub(super) fn other_audiolat_groups(root: &Path) -> bool {
    let own = format!("audiolat-{}", std::process::id());
    fs::read_dir(root).into_iter().flatten().flatten().any(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        name.starts_with("audiolat-") && name != own && e.path().is_dir()
    })
}

/// Whether a live audiolat other than this one turned cpuset on at the unified root (its
/// state file says so).
pub(super) fn other_audiolat_enabled_cpuset() -> bool {
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
