//! The private JACK server around a run: it dies mid-run, the callback overloads, a dead
//! audiolat left one behind.

use std::time::Duration;

use results::{RunStatus, Store};

use crate::util::{
    jackd_pids, machine_lock, require_tool, run, spawn, temp_db, unique_server, wait_timeout,
};

#[test]
fn the_jack_server_dying_mid_run_keeps_the_triggers_and_marks_the_run_interrupted() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let (_dir, db) = temp_db("k.db");
    let name = unique_server("kill");
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
            "-q",
        ],
    );
    // Wait until some triggers are stored, then kill the server.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let run_id = loop {
        assert!(
            std::time::Instant::now() < deadline,
            "no triggers were stored"
        );
        std::thread::sleep(Duration::from_millis(200));
        let Ok(store) = Store::open_existing(&db) else {
            continue;
        };
        if let Ok(Some(id)) = store.last_run_id() {
            if store.triggers(id).map(|t| t.len()).unwrap_or(0) >= 10 {
                break id;
            }
        }
    };
    let pids = jackd_pids(&name);
    assert_eq!(pids.len(), 1, "one private jackd: {pids:?}");
    // SAFETY: killing the jackd this test's audiolat started.
    unsafe { libc::kill(pids[0], libc::SIGKILL) };
    let status = wait_timeout(&mut child, Duration::from_secs(30));
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(1), "{stderr}");
    let error_line = stderr.lines().last().unwrap_or_default();
    assert!(
        error_line.contains("JACK server")
            && error_line.contains("triggers measured before that are kept"),
        "{stderr}"
    );
    let store = Store::open_existing(&db).unwrap();
    let r = store.run(run_id).unwrap();
    assert_eq!(r.status, RunStatus::Interrupted);
    let rows = store.triggers(run_id).unwrap();
    let kept = rows.len();
    assert!(kept >= 10, "{kept} triggers kept");
    assert!(kept < 1000);
    let ms = store.measurements(run_id).unwrap();
    assert_eq!(ms[0].measurement.metric, "event_latency");
    let valid = rows.iter().filter(|r| !r.missed).count();
    assert_eq!(ms[0].measurement.count() as usize, valid);
    assert!(jackd_pids(&name).is_empty());
}

/// A callback far heavier than its period (64k oscillators in 16 frames) on the private
/// server: the run ends, is printed and stored `complete` with its DSP overloads counted,
/// and closing the client never aborts the process (libjack cancels its process thread
/// asynchronously: it used to land inside the callback, "FATAL: exception not rethrown",
/// exit 134, the private jackd left behind).
#[test]
fn an_overloaded_jack_callback_is_reported_and_closes_cleanly() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let (_dir, db) = temp_db("o.db");
    let name = unique_server("overload");
    for _ in 0..3 {
        let out = run(
            &db,
            &[
                "event",
                "--server",
                "dummy",
                "--server-name",
                &name,
                "--workload",
                "bank:65536",
                "--period",
                "16",
                "--triggers",
                "10",
            ],
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stdout.contains("stored in"), "{}", out.stdout);
        assert!(out.stdout.contains("DSP overload"), "{}", out.stdout);
        assert!(
            jackd_pids(&name).is_empty(),
            "the private jackd was stopped"
        );
    }
    let store = Store::open_read_only(&db).unwrap();
    let id = store.last_run_id().unwrap().unwrap();
    let r = store.run(id).unwrap();
    assert_eq!(r.status, RunStatus::Complete);
    // 64k oscillators cannot be computed in 16 frames: every cycle is one.
    assert!(
        r.flags["dsp_overload_cycles"].as_u64() > Some(0),
        "{}",
        r.flags
    );
    assert!(
        r.result["dsp_overload_cycles"].as_u64() > Some(0),
        "{}",
        r.result
    );
    assert_eq!(store.triggers(id).unwrap().len(), 10);
}

/// A private server left by an audiolat that died (adopted by init) holds its name: the
/// next run stops it and starts its own under that name.
#[test]
fn a_private_server_left_by_a_dead_audiolat_is_stopped_by_the_next_run() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let (_dir, db) = temp_db("s.db");
    // A jackd whose parent exits at once. `tag` marks it as an audiolat's private server
    // (the PID of its audiolat, the shell, dead by the time it is looked at).
    let orphan = |name: &str, tag: bool| {
        let env = if tag {
            "AUDIOLAT_PRIVATE_SERVER=$$ "
        } else {
            ""
        };
        let status = std::process::Command::new("sh")
            .args([
                "-c",
                &format!("{env}jackd -n {name} -d dummy -r 44100 -p 128 >/dev/null 2>&1 &"),
            ])
            .status()
            .unwrap();
        assert!(status.success());
        let ready = std::process::Command::new("jack_wait")
            .args(["-s", name, "-w", "-t", "10"])
            .output()
            .unwrap();
        assert!(ready.status.success(), "jackd {name} did not come up");
        let pids = jackd_pids(name);
        assert_eq!(pids.len(), 1);
        pids[0]
    };
    let event = |name: &str| {
        run(
            &db,
            &[
                "event",
                "--server",
                "dummy",
                "--server-name",
                name,
                "--triggers",
                "3",
            ],
        )
    };
    let name = unique_server("stale");
    orphan(&name, true);
    let out = event(&name);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        jackd_pids(&name).is_empty(),
        "the stale jackd and the run's own were stopped"
    );
    // A jackd a user started the same way is theirs: the name is refused as busy and
    // their server keeps running.
    let users = unique_server("users");
    let pid = orphan(&users, false);
    let out = event(&users);
    let left = jackd_pids(&users);
    // SAFETY: stops the jackd this test started.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains(&users), "{}", out.stderr);
    assert_eq!(left, [pid], "the user's jackd was stopped");
    for _ in 0..250 {
        if jackd_pids(&users).is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// jackd2's registry holds eight servers, and a server killed outright keeps its entry
/// until a server of the same name starts: eight servers killed under eight names (made
/// here, with real jackds) leave no room for any other ("Too many servers already
/// active"). The next run's private server starts all the same, the dead registry
/// removed, as doctor's fix says.
#[test]
fn a_registry_full_of_killed_servers_does_not_stop_the_next_run() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let (_dir, db) = temp_db("registry.db");
    let registry = || engine::servers::jack_registry().unwrap_or_default();
    for i in 0..8 {
        if registry().len() >= 8 {
            break;
        }
        let name = format!("audiolat-test-registry-{i}");
        let mut jackd = std::process::Command::new("jackd")
            .args(["-n", &name, "-d", "dummy", "-r", "48000", "-p", "256"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let ready = std::process::Command::new("jack_wait")
            .args(["-s", &name, "-w", "-t", "10"])
            .output()
            .unwrap();
        jackd.kill().unwrap();
        jackd.wait().unwrap();
        assert!(ready.status.success(), "jackd {name} did not come up");
    }
    let dead = registry();
    assert!(dead.len() == 8 && dead.iter().all(|e| !e.alive), "{dead:?}");
    let out = run(&db, &["event", "--server", "dummy", "--triggers", "3"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        registry()
            .iter()
            .all(|e| e.name != "audiolat-test-registry-0"),
        "{:?}",
        registry()
    );
    // What the killed servers left in /dev/shm (sockets, semaphores), which other tests
    // would take for servers.
    for e in std::fs::read_dir("/dev/shm").unwrap().flatten() {
        if e.file_name()
            .to_string_lossy()
            .contains("audiolat-test-registry-")
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
}
