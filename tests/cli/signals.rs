//! Interrupted and killed runs: signals keep what was measured, printed and stored; a
//! SIGKILLed run keeps its last checkpoint, closed on the next open.

use std::time::Duration;

use results::{RunFilter, RunStatus, Store};
use serde_json::Value;

use crate::util::{
    self, jackd_pids, kill_with_its_server, machine_lock, poll_read_only, require_tool, run_json,
    spawn, temp_db, unique_server, wait_timeout,
};

/// Two signals 10 ms apart (a double Ctrl-C) hasten the stop but never throw the run
/// away: exit 130, the summary printed, the run stored `interrupted` with what it
/// measured (a jitter stopped before its first checkpoint too), no load left.
#[test]
fn two_quick_signals_keep_the_run_printed_and_stored_for_every_audio_probe() {
    let _m = machine_lock();
    require_tool("stress-ng", "stress-ng");
    require_tool("jackd", "jackd2");
    // (arguments, the metric stored, what the printed summary says)
    let probes: [(&[&str], &str, &str); 3] = [
        (
            &["jitter", "-D", "4", "--load", "cpu+io"],
            "wakeup_latency",
            "interrupted after",
        ),
        (
            &["event", "--triggers", "1000", "--load", "cpu+io"],
            "event_latency",
            "stored in",
        ),
        (
            // The cycles the loop ran (the loop's own figure may be withheld as
            // ambiguous when under-runs under this load hide its first click).
            &["roundtrip", "--duration", "30s", "--load", "cpu+io"],
            "dsp_time",
            "stored in",
        ),
    ];
    for (sig, (args, metric, printed)) in [libc::SIGTERM, libc::SIGINT, libc::SIGTERM]
        .into_iter()
        .zip(probes)
    {
        let (_dir, db) = temp_db("twice.db");
        let mut child = spawn(&db, args);
        let started = std::time::Instant::now();
        let id = loop {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{args:?}: no run was stored"
            );
            std::thread::sleep(Duration::from_millis(100));
            let Ok(store) = Store::open_read_only(&db) else {
                continue;
            };
            // The run's load is stored once it has started: measuring starts next.
            match store.last_run_id() {
                Ok(Some(id))
                    if store
                        .run(id)
                        .is_ok_and(|r| r.load.get("processes").is_some()) =>
                {
                    break id
                }
                _ => {}
            }
        };
        // Measuring for a while, but not yet at a checkpoint (jitter's come every 5 s;
        // event stores each trigger, round trip only at its end).
        std::thread::sleep(Duration::from_millis(2500));
        if args[0] == "event" {
            // A note that sounded: under this load the first notes may all be rendered
            // after their cycle's deadline (missed: stored, but left out of the figures).
            let store = Store::open_read_only(&db).unwrap();
            while !store.triggers(id).unwrap().iter().any(|t| t.sounded()) {
                assert!(
                    started.elapsed() < Duration::from_secs(90),
                    "{args:?}: no trigger sounded"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        std::thread::sleep(Duration::from_millis(10));
        // SAFETY: as above.
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = wait_timeout(&mut child, Duration::from_secs(60));
        let mut stdout = String::new();
        std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut stdout).unwrap();
        assert_eq!(status.code(), Some(130), "{args:?}: {status:?}");
        assert!(stdout.contains(printed), "{args:?}: {stdout}");
        let store = Store::open_read_only(&db).unwrap();
        let r = store.run(id).unwrap();
        assert_eq!(r.status, RunStatus::Interrupted, "{args:?}");
        let ms = store.measurements(id).unwrap();
        let m = ms
            .iter()
            .find(|m| m.measurement.metric == metric)
            .unwrap_or_else(|| panic!("{args:?}: no {metric} stored"));
        assert!(
            m.measurement.count() > 0,
            "{args:?}: nothing kept: {:?}\n{stdout}",
            m.measurement.summary
        );
        let tag = r.load["tag"].as_str().unwrap_or_default();
        assert!(!tag.is_empty(), "{args:?}: {}", r.load);
        for p in r.load["processes"].as_array().into_iter().flatten() {
            let pgid = p["pgid"].as_i64().unwrap() as i32;
            // SAFETY: signal 0 only checks for existence.
            let alive = unsafe { libc::kill(-pgid, 0) } == 0;
            assert!(!alive, "{args:?}: load process group {pgid} survived");
        }
        assert!(load::tagged_processes(tag).is_empty(), "{args:?}");
    }
}

#[test]
fn a_killed_run_keeps_its_last_checkpoint() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("k.db");
    let mut child = spawn(&db, &["jitter", "--duration", "120s", "-q"]);
    // Wait for the first checkpoint (every 5 s) to reach the database.
    let start = std::time::Instant::now();
    let (id, count) = loop {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no checkpoint was stored"
        );
        std::thread::sleep(Duration::from_millis(200));
        let Ok(store) = Store::open_existing(&db) else {
            continue;
        };
        let Some(r) = store
            .list_runs(&RunFilter::default())
            .unwrap()
            .into_iter()
            .next()
        else {
            continue;
        };
        let ms = store.measurements(r.id).unwrap();
        if let Some(m) = ms.iter().find(|m| m.measurement.metric == "wakeup_latency") {
            assert_eq!(m.measurement.detail["partial"], Value::Bool(true));
            break (r.id, m.measurement.count());
        }
    };
    assert!(count > 0);
    // SIGKILL: no chance to clean up or write anything more.
    child.kill().unwrap();
    child.wait().unwrap();
    let store = Store::open_existing(&db).unwrap();
    let r = store.run(id).unwrap();
    assert_eq!(
        r.status,
        RunStatus::Interrupted,
        "a vanished run is marked interrupted"
    );
    assert!(r.error.unwrap().contains("without closing"));
    let ms = store.measurements(id).unwrap();
    let lat = ms
        .iter()
        .find(|m| m.measurement.metric == "wakeup_latency")
        .unwrap();
    assert!(lat.measurement.count() >= count);
    assert_eq!(
        lat.measurement.histogram.as_ref().unwrap().count(),
        lat.measurement.count()
    );
}

#[test]
fn ctrl_c_ends_an_event_run_with_its_triggers_and_stops_the_server_and_load() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    require_tool("top", "procps");
    let (_dir, db) = temp_db("i.db");
    let name = unique_server("ctrlc");
    let mut child = spawn(
        &db,
        &[
            "event",
            "--server",
            "dummy",
            "--server-name",
            &name,
            "--triggers",
            "1000",
            "--spacing",
            "30ms",
            "--note",
            "10ms",
            "--load",
            "top",
            "-q",
        ],
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let (run_id, tag) = loop {
        assert!(
            std::time::Instant::now() < deadline,
            "no triggers were stored"
        );
        std::thread::sleep(Duration::from_millis(200));
        let Ok(store) = Store::open_existing(&db) else {
            continue;
        };
        if let Ok(Some(id)) = store.last_run_id() {
            if store.triggers(id).map(|t| t.len()).unwrap_or(0) >= 5 {
                let r = store.run(id).unwrap();
                break (id, r.load["tag"].as_str().unwrap_or_default().to_string());
            }
        }
    };
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_timeout(&mut child, Duration::from_secs(30));
    assert_eq!(status.code(), Some(130));
    let store = Store::open_existing(&db).unwrap();
    let r = store.run(run_id).unwrap();
    assert_eq!(r.status, RunStatus::Interrupted);
    assert!(store.triggers(run_id).unwrap().len() >= 5);
    assert!(
        jackd_pids(&name).is_empty(),
        "the private jackd was stopped"
    );
    assert!(!tag.is_empty());
    assert!(
        load::tagged_processes(&tag).is_empty(),
        "the top load was stopped"
    );
}

#[test]
fn a_killed_event_run_is_summarised_from_its_stored_triggers_on_the_next_open() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let (_dir, db) = temp_db("k.db");
    let name = unique_server("sigkill");
    let child = util::KillOnDrop(spawn(
        &db,
        &[
            "event",
            "--server",
            "dummy",
            "--server-name",
            &name,
            "--triggers",
            "80",
            "-q",
        ],
    ));
    poll_read_only(&db, "no triggers were stored", |s| {
        s.last_run_id()
            .ok()
            .flatten()
            .is_some_and(|id| s.triggers(id).map_or(0, |t| t.len()) >= 10)
    });
    kill_with_its_server(child, &name);
    let stored = Store::open_read_only(&db).unwrap();
    let run_id = stored.last_run_id().unwrap().unwrap();
    let rows = stored.triggers(run_id).unwrap();
    assert!(
        rows.len() >= 10 && rows.len() < 80,
        "{} triggers",
        rows.len()
    );
    assert_eq!(stored.run(run_id).unwrap().status, RunStatus::Running);
    drop(stored);
    // `show` (a read-only command) finds it left by a dead process, and it is closed
    // with what it stored summarised, as the live run would have.
    let shown = run_json(&db, &["show", &run_id.to_string(), "--json"]);
    assert_eq!(shown["run"]["status"], "interrupted", "{}", shown["run"]);
    let error = shown["run"]["error"].as_str().unwrap();
    assert!(
        error.contains("ended without closing the run") && error.contains("summarised"),
        "{error}"
    );
    let latency = shown["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "event_latency")
        .unwrap_or_else(|| panic!("no event_latency: {shown}"));
    let sounded = rows.iter().filter(|r| !r.missed).count();
    assert_eq!(
        latency["summary"]["count"].as_u64(),
        Some(sounded as u64),
        "{latency}"
    );
    let group = Store::open_read_only(&db)
        .unwrap()
        .run(run_id)
        .unwrap()
        .group_id
        .unwrap();
    let store = Store::open_read_only(&db).unwrap();
    assert_eq!(store.group_status(group).unwrap().1, RunStatus::Interrupted);
}

/// A round trip is written as it goes: a SIGKILLed run keeps, on the next open, the
/// measurements of its last checkpoint.
#[test]
fn a_killed_roundtrip_run_keeps_its_last_checkpoint_on_the_next_open() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let (_dir, db) = temp_db("rk.db");
    let name = unique_server("rtkill");
    let child = util::KillOnDrop(spawn(
        &db,
        &[
            "roundtrip",
            "--server",
            "dummy",
            "--server-name",
            &name,
            "--duration",
            "60s",
        ],
    ));
    // The cycles the loop ran are always measured (the loop's own figure may be
    // withheld as ambiguous on this noisy machine).
    let cycles = |s: &Store| -> Option<u64> {
        let id = s.last_run_id().ok().flatten()?;
        s.measurements(id)
            .ok()?
            .iter()
            .find(|m| m.measurement.metric == "dsp_time")
            .and_then(|m| m.measurement.summary.as_ref())
            .map(|s| s.count)
    };
    poll_read_only(&db, "no checkpoint was stored", |s| {
        cycles(s).is_some_and(|c| c > 0)
    });
    kill_with_its_server(child, &name);
    let stored = Store::open_read_only(&db).unwrap();
    let run_id = stored.last_run_id().unwrap().unwrap();
    assert_eq!(stored.run(run_id).unwrap().status, RunStatus::Running);
    let checkpointed = cycles(&stored).unwrap();
    drop(stored);
    let shown = run_json(&db, &["show", &run_id.to_string(), "--json"]);
    assert_eq!(shown["run"]["status"], "interrupted", "{}", shown["run"]);
    let error = shown["run"]["error"].as_str().unwrap();
    assert!(error.contains("ended without closing the run"), "{error}");
    let dsp = shown["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "dsp_time")
        .unwrap_or_else(|| panic!("no dsp_time: {shown}"));
    assert_eq!(
        dsp["summary"]["count"].as_u64(),
        Some(checkpointed),
        "{dsp}"
    );
    let names: Vec<&str> = shown["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["metric"].as_str())
        .collect();
    assert!(names.contains(&"roundtrip"), "{names:?}");
}
