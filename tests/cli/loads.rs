//! `--load`: every kind starts, is recorded and is gone afterwards, whether the run ends,
//! is interrupted, killed outright, or the load dies on its own.

use std::time::Duration;

use results::{RunFilter, RunStatus, Store};
use serde_json::Value;

use crate::util::{
    machine_lock, parse_json, require_tool, run_json, spawn, temp_db, tempdir, wait_timeout,
};

/// Reads the run a background audiolat is making once its load has started.
fn wait_for_load(db: &std::path::Path) -> (results::RunId, Vec<i32>, String) {
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        if let Ok(store) = Store::open_existing(db) {
            if let Some(r) = store
                .list_runs(&RunFilter::default())
                .unwrap()
                .into_iter()
                .next()
            {
                let pids: Vec<i32> = r.load["processes"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|p| p["pgid"].as_i64())
                            .map(|p| p as i32)
                            .collect()
                    })
                    .unwrap_or_default();
                if let (false, Some(tag)) = (pids.is_empty(), r.load["tag"].as_str()) {
                    return (r.id, pids, tag.to_string());
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the run's load never appeared in the database");
}

/// Polls until no live process carries the tag, or panics after `timeout`.
fn assert_tag_gone(tag: &str, timeout: Duration) {
    let start = std::time::Instant::now();
    loop {
        let left = load::tagged_processes(tag);
        if left.is_empty() {
            return;
        }
        assert!(
            start.elapsed() < timeout,
            "load processes left behind: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn every_load_kind_starts_is_recorded_and_is_gone_afterwards() {
    let _m = machine_lock();
    require_tool("stress-ng", "stress-ng");
    require_tool("hackbench", "rt-tests");
    let (dir, db) = temp_db("loads.db");
    let v = run_json(
        &db,
        &[
            "jitter",
            "--loops",
            "1000",
            "--interval",
            "1ms",
            "--load",
            "cpu:10+io+top+mem+ep:1+hackbench+video",
            "--scratch-dir",
            dir.path().to_str().unwrap(),
            "--json",
        ],
    );
    let procs = v["load"]["processes"].as_array().unwrap();
    let items: Vec<&str> = procs.iter().map(|p| p["item"].as_str().unwrap()).collect();
    assert_eq!(
        items,
        ["cpu:10", "io", "top", "mem", "ep:1", "hackbench", "video"]
    );
    for p in procs {
        assert!(p["pgid"].as_i64().unwrap() > 0, "{p}");
        assert_ne!(p["version"], "unknown", "{p}");
    }
    for e in v["load"]["exits"].as_array().unwrap() {
        assert_eq!(
            e["early"],
            Value::Bool(false),
            "a load died during the run: {e}"
        );
    }
    assert_eq!(v["flags"]["load_exited_early"], Value::Bool(false));
    assert!(load::tagged_processes(v["load"]["tag"].as_str().unwrap()).is_empty());
    // The disk load cleaned up after itself.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("stress-ng"))
        .collect();
    assert!(left.is_empty(), "stress-ng left {left:?}");
}

#[test]
fn the_ep_load_runs_as_its_own_process_and_is_recorded() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("ep.db");
    let v = run_json(
        &db,
        &[
            "jitter",
            "--loops",
            "300",
            "--interval",
            "1ms",
            "--load",
            "ep:1",
            "--json",
        ],
    );
    let p = &v["load"]["processes"][0];
    assert!(
        p["command"]
            .as_str()
            .unwrap()
            .ends_with("__load ep --threads 1"),
        "{p}"
    );
    assert!(p["version"].as_str().unwrap().contains("NPB EP"));
    let exit = &v["load"]["exits"][0];
    assert_eq!(exit["early"], Value::Bool(false), "{exit}");
    assert!(load::tagged_processes(v["load"]["tag"].as_str().unwrap()).is_empty());
}

#[test]
fn ctrl_c_stops_the_load_and_keeps_the_run_as_interrupted() {
    let _m = machine_lock();
    require_tool("stress-ng", "stress-ng");
    let (_dir, db) = temp_db("c.db");
    let mut child = spawn(
        &db,
        &["jitter", "--duration", "120s", "--load", "cpu", "-q"],
    );
    let (id, pids, tag) = wait_for_load(&db);
    assert!(
        !load::tagged_processes(&tag).is_empty(),
        "the load is running"
    );
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_timeout(&mut child, Duration::from_secs(30));
    assert_eq!(status.code(), Some(130), "exit status {status:?}");

    // No load process left: neither the process groups nor anything carrying the tag.
    for pid in pids {
        // SAFETY: signal 0 only checks for existence.
        let alive = unsafe { libc::kill(-pid, 0) } == 0;
        assert!(!alive, "load process group {pid} survived Ctrl-C");
    }
    assert!(
        load::tagged_processes(&tag).is_empty(),
        "tagged load processes survived"
    );

    let store = Store::open_existing(&db).unwrap();
    let r = store.run(id).unwrap();
    assert_eq!(r.status, RunStatus::Interrupted);
    assert!(r.error.unwrap().contains("interrupted"));
    assert_eq!(r.flags["interrupted"], Value::Bool(true));
    let ms = store.measurements(id).unwrap();
    let lat = &ms[0].measurement;
    assert_eq!(lat.metric, "wakeup_latency");
    // About two seconds at 2048 Hz were measured, and kept.
    assert!(lat.count() > 1000, "{} samples kept", lat.count());
    assert_eq!(lat.histogram.as_ref().unwrap().count(), lat.count());
    assert!(r.load["exits"].as_array().is_some_and(|e| !e.is_empty()));
}

#[test]
fn loads_die_with_audiolat_even_when_it_is_killed_outright() {
    let _m = machine_lock();
    require_tool("stress-ng", "stress-ng");
    require_tool("hackbench", "rt-tests");
    let dir = tempdir();
    // hackbench forks 160 workers and stress-ng its own: none may outlive audiolat.
    for (name, how) in [
        ("sigkill", &[libc::SIGKILL][..]),
        ("double-ctrl-c", &[libc::SIGINT, libc::SIGINT][..]),
    ] {
        let db = dir.path().join(format!("{name}.db"));
        let mut child = spawn(
            &db,
            &[
                "jitter",
                "--duration",
                "120s",
                "--load",
                "hackbench+cpu",
                "-q",
            ],
        );
        let (_, _, tag) = wait_for_load(&db);
        assert!(
            load::tagged_processes(&tag).len() > 100,
            "{name}: hackbench's workers are running"
        );
        for &sig in how {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(child.id() as i32, sig) };
        }
        wait_timeout(&mut child, Duration::from_secs(30));
        assert_tag_gone(&tag, Duration::from_secs(15));
    }
}

#[test]
fn a_load_that_dies_mid_run_is_recorded_and_its_workers_go_with_it() {
    let _m = machine_lock();
    require_tool("hackbench", "rt-tests");
    let (_dir, db) = temp_db("d.db");
    let child = spawn(
        &db,
        &[
            "jitter",
            "--duration",
            "6s",
            "--load",
            "hackbench",
            "--json",
        ],
    );
    let (_, pgids, tag) = wait_for_load(&db);
    // hackbench's main process is the supervisor's child; kill it as a crash would.
    let main = load::tagged_processes(&tag)
        .into_iter()
        .find(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| s.rsplit(')').next().map(str::to_string))
                .and_then(|rest| rest.split_whitespace().nth(1).map(str::to_string))
                .is_some_and(|ppid| ppid == pgids[0].to_string())
        })
        .expect("hackbench's main process");
    // SAFETY: signalling a process of our own test's load.
    unsafe { libc::kill(main, libc::SIGKILL) };
    // Its 160 workers go with it, while the run goes on.
    assert_tag_gone(&tag, Duration::from_secs(5));
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = parse_json(&out.stdout);
    let exit = &v["load"]["exits"][0];
    assert_eq!(exit["early"], Value::Bool(true), "{exit}");
    assert_eq!(
        exit["status"], "signal 9",
        "the tool's own ending is recorded: {exit}"
    );
    assert_eq!(v["flags"]["load_exited_early"], Value::Bool(true));
}
