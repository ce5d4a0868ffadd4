//! A dedicated cell on CPU 1 and a CPU hog in a best-effort cell: the kernel's own
//! accounting (cpuacct) shows the hog never ran on CPU 1, every other task was moved
//! off it for the run, and afterwards the cpuset hierarchy and every task's cpuset,
//! affinity and policy are as before.
//!
//! Needs root, the cgroup v1 cpuset and cpuacct hierarchies, two CPUs and stress-ng;
//! elsewhere it says why it is skipped. One test in this binary: it moves every task of
//! the machine, so nothing else of ours may run beside it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use probes::cell::partition::{v1_mount, Partition, SystemSnapshot};
use probes::cell::{Capacity, CellSet};

fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    if v1_mount("cpuset").is_none() || v1_mount("cpuacct").is_none() {
        return Some("no cgroup v1 cpuset and cpuacct hierarchies".into());
    }
    if !engine::rt::online_cpus().contains(&1) {
        return Some("CPU 1 is not online".into());
    }
    if load::find_in_path("stress-ng").is_none() {
        return Some("stress-ng is not installed (apt install stress-ng)".into());
    }
    None
}

fn spin_for(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::black_box(0u64.wrapping_add(1));
    }
}

#[test]
fn a_dedicated_cell_keeps_a_hog_off_its_cpu_and_everything_is_put_back() {
    if let Some(why) = skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
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
    assert!(music.exclusive_granted, "cpu_exclusive was not granted");

    // Every task that could move is off CPU 1: only the cell's and per-CPU kernel
    // threads may run there.
    let during = SystemSnapshot::take();
    let rest = format!("/audiolat-{}-rest", std::process::id());
    let moved: Vec<_> = during
        .tasks
        .iter()
        .filter(|(_, (_, cpuset, _, _))| *cpuset == rest)
        .collect();
    assert!(moved.len() > 5, "only {} tasks were moved", moved.len());
    for (tid, (comm, _, affinity, _)) in &moved {
        let cpus = engine::rt::parse_cpu_list(affinity).unwrap();
        assert!(
            !cpus.contains(&1),
            "task {tid} ({comm}) may still run on CPU 1: {affinity}"
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
