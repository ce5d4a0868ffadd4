//! A dedicated cell on CPU 1 and a CPU hog in a best-effort cell: the kernel's own
//! accounting (cpuacct) shows the hog never ran on CPU 1, every other task was moved
//! off it for the run, and afterwards the cpuset hierarchy and every task's cpuset,
//! affinity and policy are as before. Once on the cgroup v1 cpuset hierarchy and once on
//! cgroup v2 partitions: where the machine has the controller on v1 with no cpuset in
//! use (as this project's test machine does), the v2 test unmounts the v1 hierarchy so
//! the controller moves to the unified one, and mounts it back afterwards.
//!
//! Needs root, two CPUs, stress-ng and the v1 cpuacct hierarchy (for the per-CPU
//! accounting); elsewhere each test says why it is skipped. The two tests take turns
//! (a lock): each moves every task of the machine, so nothing else may run beside it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use qos::partition::{
    cpuset_hierarchy, v1_mount, v2_mount, CpusetHierarchy, Partition, SystemSnapshot,
};
use qos::{Capacity, CellSet};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    if v1_mount("cpuacct").is_none() {
        return Some("no cgroup v1 cpuacct hierarchy (the per-CPU accounting)".into());
    }
    if !engine::rt::online_cpus().contains(&1) {
        return Some("CPU 1 is not online".into());
    }
    if load::find_in_path("stress-ng").is_none() {
        return Some("stress-ng is not installed (apt install stress-ng)".into());
    }
    None
}

/// The cpuset controller on the unified hierarchy for as long as it lives: moved there
/// from an unused v1 hierarchy (unmounted, so the kernel frees the controller), and the
/// v1 hierarchy mounted back when dropped.
struct CpusetOnV2 {
    remount: Option<V1Mount>,
}

/// Where and how the v1 cpuset hierarchy was mounted, to mount it back the same way.
struct V1Mount {
    path: PathBuf,
    flags: libc::c_ulong,
    data: String,
}

impl V1Mount {
    /// From its `/proc/mounts` line: flags such as nosuid and relatime, the rest (the
    /// controller) as data.
    fn of(path: &std::path::Path) -> V1Mount {
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
        let options = mounts
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.len() >= 4 && f[2] == "cgroup" && std::path::Path::new(f[1]) == path)
            .map(|f| f[3].to_string())
            .unwrap_or_else(|| "cpuset".into());
        let mut flags = 0;
        let mut data = Vec::new();
        for o in options.split(',') {
            match o {
                "rw" => {}
                "ro" => flags |= libc::MS_RDONLY,
                "nosuid" => flags |= libc::MS_NOSUID,
                "nodev" => flags |= libc::MS_NODEV,
                "noexec" => flags |= libc::MS_NOEXEC,
                "relatime" => flags |= libc::MS_RELATIME,
                "noatime" => flags |= libc::MS_NOATIME,
                other => data.push(other),
            }
        }
        V1Mount {
            path: path.to_path_buf(),
            flags,
            data: data.join(","),
        }
    }
}

impl CpusetOnV2 {
    fn take() -> Result<CpusetOnV2, String> {
        match cpuset_hierarchy() {
            Some(CpusetHierarchy::V2(_)) => Ok(CpusetOnV2 { remount: None }),
            None => Err("no cpuset controller".into()),
            Some(CpusetHierarchy::V1(mount)) => {
                if v2_mount().is_none() {
                    return Err("no cgroup v2 mount".into());
                }
                let groups = std::fs::read_dir(&mount)
                    .map(|d| d.flatten().filter(|e| e.path().is_dir()).count())
                    .unwrap_or(0);
                if groups > 0 {
                    return Err(format!(
                        "the v1 cpuset hierarchy is in use ({groups} cpusets), so its controller cannot move to cgroup v2"
                    ));
                }
                // A hierarchy is only freed by unmounting when it has no groups at all,
                // counting those still being freed (an earlier test's): wait for them.
                let deadline = Instant::now() + Duration::from_secs(30);
                while v1_cpuset_groups() != Some(1) {
                    if Instant::now() > deadline {
                        return Err(format!(
                            "the v1 cpuset hierarchy still frees {:?} groups",
                            v1_cpuset_groups()
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                let v1 = V1Mount::of(&mount);
                let path = std::ffi::CString::new(mount.as_os_str().as_encoded_bytes()).unwrap();
                // SAFETY: a valid C string; unmounting a cgroup hierarchy with no groups.
                if unsafe { libc::umount(path.as_ptr()) } != 0 {
                    return Err(format!(
                        "unmounting {}: {}",
                        mount.display(),
                        std::io::Error::last_os_error()
                    ));
                }
                let moved = CpusetOnV2 { remount: Some(v1) };
                let deadline = Instant::now() + Duration::from_secs(20);
                while !matches!(cpuset_hierarchy(), Some(CpusetHierarchy::V2(_))) {
                    if Instant::now() > deadline {
                        return Err("the cpuset controller did not appear on cgroup v2".into());
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Ok(moved)
            }
        }
    }
}

/// The groups of the cpuset controller's hierarchy, its root and those being freed
/// included (`/proc/cgroups`).
fn v1_cpuset_groups() -> Option<u32> {
    std::fs::read_to_string("/proc/cgroups")
        .ok()?
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.first() == Some(&"cpuset")).then(|| f.get(2)?.parse().ok())?
        })
}

impl CpusetOnV2 {
    /// Mounts the v1 hierarchy back as it was, if this moved the controller. The
    /// controller is free again a little after its last v2 group goes: retried for 5 s.
    fn restore(&mut self) -> Result<(), String> {
        let Some(mount) = self.remount.take() else {
            return Ok(());
        };
        let target = std::ffi::CString::new(mount.path.as_os_str().as_encoded_bytes()).unwrap();
        let data = std::ffi::CString::new(mount.data.clone()).unwrap();
        for _ in 0..250 {
            // SAFETY: valid C strings; mounting the v1 cpuset hierarchy back.
            let rc = unsafe {
                libc::mount(
                    c"cgroup".as_ptr(),
                    target.as_ptr(),
                    c"cgroup".as_ptr(),
                    mount.flags,
                    data.as_ptr().cast(),
                )
            };
            if rc == 0 {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!(
            "could not mount the v1 cpuset hierarchy back at {} ({}): {}",
            mount.path.display(),
            mount.data,
            std::io::Error::last_os_error()
        ))
    }
}

impl Drop for CpusetOnV2 {
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            eprintln!("{e}");
        }
    }
}

/// Kernel threads have no command line.
fn is_kernel_thread(tid: i32) -> bool {
    std::fs::read(format!("/proc/{tid}/cmdline")).is_ok_and(|c| c.is_empty())
}

fn spin_for(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::black_box(0u64.wrapping_add(1));
    }
}

#[test]
fn a_dedicated_v1_cpuset_keeps_a_hog_off_its_cpu_and_everything_is_put_back() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    if !matches!(cpuset_hierarchy(), Some(CpusetHierarchy::V1(_))) {
        eprintln!("skipped: the cpuset controller is not on a v1 hierarchy");
        return;
    }
    keeps_a_hog_off_cpu_1();
}

#[test]
fn a_v2_cpuset_partition_keeps_a_hog_off_its_cpu_and_everything_is_put_back() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    let mut on_v2 = match CpusetOnV2::take() {
        Ok(on_v2) => on_v2,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let moved = on_v2.remount.is_some();
    keeps_a_hog_off_cpu_1();
    on_v2.restore().unwrap();
    if moved {
        assert!(
            matches!(cpuset_hierarchy(), Some(CpusetHierarchy::V1(_))),
            "the v1 cpuset hierarchy is not back: {:?}",
            cpuset_hierarchy()
        );
    }
}

/// The hog stays off a dedicated CPU 1 on whichever hierarchy the controller is on, and
/// the machine is as found afterwards.
fn keeps_a_hog_off_cpu_1() {
    let hierarchy = cpuset_hierarchy().unwrap();
    let before = SystemSnapshot::take();
    let mut set = CellSet::default();
    set.push(CellSet::parse_flag("music=dedicated:cpus=1,priority=10").unwrap())
        .unwrap();
    set.push(CellSet::parse_flag("hog=best-effort:policy=batch").unwrap())
        .unwrap();
    let admission = set
        .admit(&Capacity::here(None), &BTreeMap::new(), &[])
        .unwrap();
    assert_eq!(admission.shared, vec![0]);
    let partition = Partition::create(&set, &admission).unwrap();
    let music = partition.cell("music").unwrap().clone();
    let hog = partition.cell("hog").unwrap().clone();
    assert!(
        music.exclusive_granted,
        "{}: the exclusive cpuset was not granted",
        hierarchy.name()
    );

    // Every task that could move is off CPU 1: only the cell's and per-CPU kernel
    // threads may run there. On v1 audiolat moved them to its "rest" cpuset; on v2 the
    // partition took CPU 1 out of every other cgroup.
    let during = SystemSnapshot::take();
    let moved: Vec<_> = match &hierarchy {
        CpusetHierarchy::V1(_) => {
            let rest = format!("/audiolat-{}-rest", std::process::id());
            during
                .tasks
                .iter()
                .filter(|(_, (_, cpuset, _, _))| *cpuset == rest)
                .collect()
        }
        CpusetHierarchy::V2(_) => during
            .tasks
            .iter()
            .filter(|(tid, (_, cpuset, _, _))| {
                !cpuset.contains("audiolat-") && !is_kernel_thread(**tid)
            })
            .collect(),
    };
    assert!(moved.len() > 5, "only {} tasks were moved", moved.len());
    for (tid, (comm, _, affinity, _)) in &moved {
        let cpus = engine::rt::parse_cpu_list(affinity).unwrap();
        assert!(
            !cpus.contains(&1),
            "{}: task {tid} ({comm}) may still run on CPU 1: {affinity}",
            hierarchy.name()
        );
    }

    // The hog: stress-ng with two workers, which would take both CPUs, placed in the
    // best-effort cell by the load crate (before it runs its program).
    let mut ctx = load::LoadContext::new(std::env::temp_dir(), "audiolat-cells-test".into());
    ctx.supervisor = None;
    ctx.cpus = 2;
    ctx.placements.insert(
        "hog".into(),
        load::Placement {
            procs_files: hog.procs_files(),
            cpus: hog.cpus.clone(),
            policy: Some((libc::SCHED_BATCH, 0, 0)),
            deadline: None,
        },
    );
    let spec: load::LoadSpec = "cpu@hog".parse().unwrap();
    let running = load::start(&spec, &ctx).unwrap();

    // A thread of ours in the dedicated cell, busy meanwhile.
    let done = AtomicBool::new(false);
    let music_thread = std::thread::scope(|scope| {
        let t = scope.spawn(|| {
            let entered = music.enter();
            while !done.load(Ordering::Relaxed) {
                spin_for(Duration::from_millis(5));
                std::thread::sleep(Duration::from_millis(5));
            }
            entered
        });
        std::thread::sleep(Duration::from_secs(2));
        done.store(true, Ordering::Relaxed);
        t.join().unwrap()
    });
    let hog_usage = hog.usage_percpu().unwrap();
    let music_usage = music.usage_percpu().unwrap();
    let report = running.stop();
    assert!(
        music_thread.refusals.is_empty(),
        "{:?}",
        music_thread.refusals
    );
    assert_eq!(music_thread.rt.cpus_granted, vec![1]);
    assert!(music_thread.rt.is_realtime(), "{:?}", music_thread.rt.sched);

    // The kernel's accounting: the hog ran, and never on CPU 1; the cell's thread ran on
    // CPU 1 only.
    assert!(
        hog_usage[0] > 500_000_000,
        "the hog barely ran: {hog_usage:?}"
    );
    assert_eq!(hog_usage[1], 0, "the hog ran on CPU 1: {hog_usage:?}");
    assert!(
        music_usage[1] > 50_000_000,
        "the music thread barely ran: {music_usage:?}"
    );
    assert_eq!(
        music_usage[0], 0,
        "the music thread ran on CPU 0: {music_usage:?}"
    );
    let granted = partition.granted();
    assert_eq!(granted["cells"][0]["exclusive"], true, "{granted}");
    assert_eq!(granted["cpusets"], hierarchy.name(), "{granted}");
    eprintln!(
        "{}: {} tasks off CPU 1, hog {hog_usage:?} ns per CPU, music {music_usage:?}",
        hierarchy.name(),
        moved.len()
    );
    let problems = partition.finish();
    assert!(problems.is_empty(), "{problems:?}");
    drop(report);

    // As found.
    let after = SystemSnapshot::take();
    let differences = after.differences(&before);
    assert!(
        differences.is_empty(),
        "not as found:\n{}",
        differences.join("\n")
    );
    let leftovers: Vec<_> = after
        .cpusets
        .keys()
        .filter(|k| k.contains("audiolat-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
