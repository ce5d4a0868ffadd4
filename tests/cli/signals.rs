//! Interrupted and killed runs: signals keep what was measured, printed and stored; a
//! SIGKILLed run keeps its last checkpoint, closed on the next open.

use std::time::Duration;

use results::{RunFilter, RunStatus, Store};
use serde_json::Value;

use crate::util::{
    self, jackd_pids, kill_with_its_server, machine_lock, poll_read_only, require_tool, run,
    run_json, spawn, temp_db, unique_server, wait_timeout,
};

/// What `show` must not print of a killed run: a 0, `null`, `?` or `NO` nobody
/// measured (its stored configuration and checkpoints are shown, an unknown is `-`).
fn invented(shown: &str) -> Vec<&'static str> {
    [
        "null",
        "?",
        "0+-",
        " 0/0 ",
        "after 0 cycles",
        "in 0.0 s",
        " NO ",
        "no cycle ran",
        "(external)",
    ]
    .into_iter()
    .filter(|s| {
        // The stored configuration is printed as its JSON, where null means "not set".
        shown
            .lines()
            .filter(|l| !l.starts_with("  config ") && !l.starts_with("  granted "))
            .any(|l| l.contains(s))
    })
    .collect()
}

/// `show ID` of a killed run, checked for invented values; its text.
fn shown_without_inventions(db: &std::path::Path, id: results::RunId) -> String {
    let out = util::run(db, &["show", &id.to_string()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let made_up = invented(&out.stdout);
    assert!(made_up.is_empty(), "{made_up:?} in\n{}", out.stdout);
    out.stdout
}

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
    // The next command closes it (`show`, a reader), and shows it.
    let text = shown_without_inventions(&db, id);
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
    // Shown with the cycles its checkpoint counted; what it never stored is `-`.
    let cycles = lat.measurement.detail["cycles_so_far"].as_u64().unwrap();
    assert!(
        text.contains(&format!("interrupted after {cycles} cycles in - s")),
        "{text}"
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
    // Shown with the stream it described and the counts of its rows.
    let text = shown_without_inventions(&db, run_id);
    assert!(text.contains("jack backend"), "{text}");
    assert!(text.contains("(private: "), "{text}");
    assert_eq!(
        shown["run"]["result"]["period_frames"],
        shown["run"]["config"]["period_frames"]
    );
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
    // Shown with its stream as described and its checkpoint's windows, in every view.
    let text = shown_without_inventions(&db, run_id);
    let period = shown["run"]["config"]["period_frames"].as_u64().unwrap();
    assert_eq!(
        shown["run"]["result"]["period_frames"].as_u64(),
        Some(period)
    );
    assert_eq!(
        shown["run"]["result"]["rate_hz"],
        shown["run"]["config"]["rate_hz"]
    );
    let windows = shown["run"]["result"]["windows"].as_u64();
    let ok = shown["run"]["flags"]["windows_ok"].as_u64();
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{run_id} ")))
        .unwrap_or_else(|| panic!("{text}"));
    let cell = |v: Option<u64>| v.map_or("-".to_string(), |n| n.to_string());
    assert!(
        row.contains(&format!(" {period} "))
            && row.contains(&format!("{}/{}", cell(ok), cell(windows))),
        "{row}"
    );
    assert!(
        row.contains(" -/- "),
        "xruns and skipped cycles were never stored: {row}"
    );
}

/// An event run killed outright: the kernel stops its private jackd, which keeps its
/// name in jackd's registry while it exits (a zombie until init reaps it). The next run
/// on that name, started at once, waits for it instead of failing with "server already
/// active"; so does the next run with no name asked for.
#[test]
fn the_next_run_starts_at_once_after_a_killed_runs_server() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let (_dir, db) = temp_db("next.db");
    let name = unique_server("killed-next");
    for named in [true, false, true] {
        let server: &[&str] = if named {
            &["--server", "dummy", "--server-name", &name]
        } else {
            &["--server", "dummy"]
        };
        let child = util::KillOnDrop(spawn(
            &db,
            &[&["event"], server, &["--triggers", "1000", "-q"]].concat(),
        ));
        let before = Store::open_read_only(&db)
            .ok()
            .and_then(|s| s.last_run_id().ok().flatten());
        poll_read_only(&db, "no triggers were stored", |s| {
            s.last_run_id()
                .ok()
                .flatten()
                .is_some_and(|id| Some(id) != before && s.triggers(id).map_or(0, |t| t.len()) >= 3)
        });
        let mut child = child;
        // SAFETY: killing the audiolat this test started.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        let _ = child.0.wait();
        let next = run(
            &db,
            &[&["event"], server, &["--triggers", "3", "-q"]].concat(),
        );
        assert_eq!(next.code, 0, "named {named}: {}", next.stderr);
    }
}

/// A run left `running` whose pid the kernel has since given to another process: the
/// process that made it is told apart by its start time, so the next open closes the
/// run as a dead process's (by the pid alone it stayed `running` for good).
#[test]
fn a_run_whose_pid_went_to_another_process_is_closed_as_a_dead_ones() {
    let (_dir, db) = temp_db("reused.db");
    let out = run(&db, &["jitter", "--loops", "10", "-q"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let other = util::KillOnDrop(
        std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap(),
    );
    let other_start = results::owner::start_ticks(other.id() as i32).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    // As if the run's process had died mid-run and `sleep` had been given its pid: the
    // stored start time is the dead process's, not the sleep's.
    let changed = conn
        .execute(
            "UPDATE run SET status = 'running', ended_at = NULL, error = NULL, pid = ?1,
             pid_start_ticks = ?2 WHERE id = 1",
            rusqlite::params![other.id(), other_start - 1],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(conn);
    let shown = run_json(&db, &["show", "1", "--json"]);
    assert_eq!(shown["run"]["status"], "interrupted", "{}", shown["run"]);
    let error = shown["run"]["error"].as_str().unwrap();
    assert!(
        error.contains(&format!(
            "process {} ended without closing the run",
            other.id()
        )),
        "{error}"
    );
    // The process whose pid it is now was not touched.
    assert!(engine::servers::process_running(other.id() as i32));
}
