//! Hang-ups: a terminal closed, an ssh session dropped, Ctrl-\ typed. Each stops the run
//! as Ctrl-C does (exit 130), on every probe, a plan and the suite: what was measured is
//! stored `interrupted`, loads and private servers are gone, and the next run finds the
//! machine as it was. (A celled net run hung up is in `cells.rs`.)

use std::time::{Duration, Instant};

use results::{RunId, RunStatus, Store};

use crate::util::{
    machine_lock, poll_read_only, private_jackd_pids, require_tool, run, temp_db, unique_server,
    OnTerminal,
};

/// The last run of `db` once its load has started (measuring starts next).
fn run_with_its_load_started(db: &std::path::Path, what: &str) -> RunId {
    let started = Instant::now();
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{what}: no run started its load"
        );
        std::thread::sleep(Duration::from_millis(100));
        let Ok(store) = Store::open_read_only(db) else {
            continue;
        };
        if let Ok(Some(id)) = store.last_run_id() {
            if store
                .run(id)
                .is_ok_and(|r| r.load.get("processes").is_some())
            {
                return id;
            }
        }
    }
}

/// Until an event run has a trigger that sounded (under load the first notes may all
/// be rendered late: missed, stored but left out of the figures).
fn wait_for_a_sounded_trigger(db: &std::path::Path, id: RunId) {
    poll_read_only(db, "no trigger sounded", |s| {
        s.triggers(id).is_ok_and(|t| t.iter().any(|t| t.sounded()))
    });
}

/// What a stopped run must hold: `interrupted`, `metric` measured (count > 0), every
/// load process of its gone.
fn assert_kept_and_loads_gone(db: &std::path::Path, id: RunId, metric: &str, what: &str) {
    let store = Store::open_read_only(db).unwrap();
    let r = store.run(id).unwrap();
    assert_eq!(r.status, RunStatus::Interrupted, "{what}: {:?}", r.error);
    let ms = store.measurements(id).unwrap();
    let m = ms
        .iter()
        .find(|m| m.measurement.metric == metric)
        .unwrap_or_else(|| panic!("{what}: no {metric} stored"));
    assert!(
        m.measurement.count() > 0,
        "{what}: nothing of {metric} kept"
    );
    let tag = r.load["tag"].as_str().unwrap_or_default();
    assert!(!tag.is_empty(), "{what}: {}", r.load);
    for p in r.load["processes"].as_array().into_iter().flatten() {
        let pgid = p["pgid"].as_i64().unwrap() as i32;
        // SAFETY: signal 0 only checks for existence.
        let alive = unsafe { libc::kill(-pgid, 0) } == 0;
        assert!(!alive, "{what}: load process group {pgid} survived");
    }
    assert!(load::tagged_processes(tag).is_empty(), "{what}");
}

/// Every probe, on a terminal that is closed mid-run: exit 130 (not killed by the
/// SIGHUP, nor a panic writing to the dead terminal), the run stored `interrupted` with
/// what it measured, its load and its private JACK server gone; and the next run on
/// the same server name starts at once (no "server already active").
#[test]
fn a_hang_up_stops_every_probe_keeping_what_it_measured() {
    let _m = machine_lock();
    require_tool("stress-ng", "stress-ng");
    require_tool("jackd", "jackd2");
    let event_server = unique_server("hup-event");
    let roundtrip_server = unique_server("hup-rt");
    // (arguments, the metric stored, the private server's name)
    let probes: [(&[&str], &str, Option<&str>); 4] = [
        (
            &["jitter", "-D", "30", "--load", "cpu"],
            "wakeup_latency",
            None,
        ),
        (
            &[
                "event",
                "--server",
                "dummy",
                "--server-name",
                &event_server,
                "--triggers",
                "1000",
                "--load",
                "cpu",
            ],
            "event_latency",
            Some(&event_server),
        ),
        (
            // The cycles the loop ran (the loop's own figure may be withheld under load).
            &[
                "roundtrip",
                "--server",
                "dummy",
                "--server-name",
                &roundtrip_server,
                "--duration",
                "30s",
                "--load",
                "cpu",
            ],
            "dsp_time",
            Some(&roundtrip_server),
        ),
        (
            &[
                "net",
                "--duration",
                "30s",
                "--warmup",
                "300ms",
                "--no-reference",
                "--load",
                "cpu",
            ],
            "response_time",
            None,
        ),
    ];
    for (args, metric, server) in probes {
        let (_dir, db) = temp_db("hup.db");
        let mut term = OnTerminal::spawn(&db, args);
        let id = run_with_its_load_started(&db, args[0]);
        std::thread::sleep(Duration::from_millis(2500));
        if args[0] == "event" {
            wait_for_a_sounded_trigger(&db, id);
        }
        let printed = term.printed();
        term.hang_up();
        let status = term.wait(Duration::from_secs(60));
        assert_eq!(status.code(), Some(130), "{args:?}: {status:?}\n{printed}");
        assert_kept_and_loads_gone(&db, id, metric, args[0]);
        assert!(private_jackd_pids(term.id()).is_empty(), "{args:?}");
        if let Some(name) = server {
            let short = if args[0] == "event" {
                ["--triggers", "3"]
            } else {
                ["--duration", "1s"]
            };
            let next = run(
                &db,
                &[
                    &[args[0], "--server", "dummy", "--server-name", name, "-q"],
                    &short[..],
                ]
                .concat(),
            );
            assert_eq!(next.code, 0, "the next run on {name}: {}", next.stderr);
        }
    }
}

/// Ctrl-\ (SIGQUIT to the terminal's foreground process group) stops a run as Ctrl-C
/// does, rather than dumping core and losing it.
#[test]
fn ctrl_backslash_stops_a_run_keeping_what_it_measured() {
    let _m = machine_lock();
    require_tool("stress-ng", "stress-ng");
    let (_dir, db) = temp_db("quit.db");
    let mut term = OnTerminal::spawn(&db, &["jitter", "-D", "30", "--load", "cpu"]);
    let id = run_with_its_load_started(&db, "jitter");
    std::thread::sleep(Duration::from_millis(1500));
    term.type_keys(b"\x1c");
    let status = term.wait(Duration::from_secs(60));
    let printed = term.printed();
    assert_eq!(status.code(), Some(130), "{status:?}\n{printed}");
    assert!(printed.contains("interrupted after"), "{printed}");
    assert_kept_and_loads_gone(&db, id, "wakeup_latency", "jitter");
}

/// A plan hung up while a cell runs: the runner, whose terminal it was, passes the stop
/// on to the cell (in its own process group, which the hang-up does not reach): exit
/// 130, the plan run and that cell `interrupted` with what the cell measured, the cells
/// before it kept, no run left `running`, no cell process, load or cell log left.
#[test]
fn a_hang_up_stops_a_plan_and_its_running_cell_keeping_what_they_measured() {
    let _m = machine_lock();
    require_tool("stress-ng", "stress-ng");
    let (dir, db) = temp_db("plan.db");
    let plan = dir.path().join("hup.toml");
    std::fs::write(
        &plan,
        "name = \"hup\"\nprobe = \"jitter\"\nrepeats = 3\n\n[set]\nduration = \"4s\"\nload = \"cpu\"\n",
    )
    .unwrap();
    let mut term = OnTerminal::spawn(&db, &["run", plan.to_str().unwrap()]);
    let runner = term.id();
    // The second cell's run, once its load runs: the first cell's run is complete.
    poll_read_only(&db, "the second cell never started its load", |s| {
        s.list_runs(&results::RunFilter::default())
            .is_ok_and(|runs| {
                runs.iter()
                    .filter(|r| r.probe.name == "jitter" && r.load.get("processes").is_some())
                    .count()
                    >= 2
            })
    });
    std::thread::sleep(Duration::from_millis(1500));
    let printed = term.printed();
    term.hang_up();
    let status = term.wait(Duration::from_secs(60));
    assert_eq!(status.code(), Some(130), "{status:?}\n{printed}");
    let store = Store::open_read_only(&db).unwrap();
    let group = results::GroupId(1);
    assert_eq!(store.group_status(group).unwrap().1, RunStatus::Interrupted);
    let runs = store.list_runs(&results::RunFilter::default()).unwrap();
    assert!(
        runs.iter().all(|r| r.status != RunStatus::Running),
        "a run was left running"
    );
    let jitter: Vec<_> = runs.iter().filter(|r| r.probe.name == "jitter").collect();
    assert!(
        jitter.iter().any(|r| r.status == RunStatus::Complete),
        "the first cell's run was kept"
    );
    let stopped = jitter
        .iter()
        .find(|r| r.status == RunStatus::Interrupted)
        .expect("the running cell's run is interrupted");
    drop(store);
    for r in &jitter {
        assert_kept_or_complete(&db, r.id, r.status);
    }
    assert_kept_and_loads_gone(&db, stopped.id, "wakeup_latency", "the cell");
    let marker = "AUDIOLAT_PLAN_CELL=1:";
    let cells_left: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .unwrap_or_default()
                .split(|b| *b == 0)
                .any(|v| v.starts_with(marker.as_bytes()))
                && std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c.contains(&db.display().to_string()))
        })
        .collect();
    assert!(cells_left.is_empty(), "cell processes left: {cells_left:?}");
    let logs: Vec<String> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("audiolat-plan-") && n.ends_with(&format!("-{runner}.log")))
        .collect();
    assert!(logs.is_empty(), "cell logs left: {logs:?}");
}

/// A run that ended `complete` before the stop, or that the stop ended with its loads gone.
fn assert_kept_or_complete(db: &std::path::Path, id: RunId, status: RunStatus) {
    if status == RunStatus::Complete {
        let store = Store::open_read_only(db).unwrap();
        let ms = store.measurements(id).unwrap();
        assert!(ms.iter().any(|m| m.measurement.count() > 0), "run {id}");
    } else {
        assert_kept_and_loads_gone(db, id, "wakeup_latency", &format!("run {id}"));
    }
}

/// The suite hung up during its event run: exit 130, the suite's group and that run
/// `interrupted` with the triggers it measured, the runs before it kept, its private
/// server and loads gone.
#[test]
fn a_hang_up_stops_the_suite_keeping_what_it_measured() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let (_dir, db) = temp_db("suite.db");
    let mut term = OnTerminal::spawn(&db, &["suite", "--each", "3s"]);
    let pid = term.id();
    poll_read_only(&db, "the suite never began its event run", |s| {
        s.last_run_id()
            .ok()
            .flatten()
            .and_then(|id| s.run(id).ok())
            .is_some_and(|r| r.probe.name == "event")
    });
    let id = Store::open_read_only(&db)
        .unwrap()
        .last_run_id()
        .unwrap()
        .unwrap();
    wait_for_a_sounded_trigger(&db, id);
    let printed = term.printed();
    term.hang_up();
    let status = term.wait(Duration::from_secs(60));
    assert_eq!(status.code(), Some(130), "{status:?}\n{printed}");
    let store = Store::open_read_only(&db).unwrap();
    let r = store.run(id).unwrap();
    assert_eq!(r.status, RunStatus::Interrupted, "{:?}", r.error);
    assert!(store
        .measurements(id)
        .unwrap()
        .iter()
        .any(|m| m.measurement.metric == "event_latency" && m.measurement.count() > 0));
    assert_eq!(
        store.group_status(r.group_id.unwrap()).unwrap().1,
        RunStatus::Interrupted
    );
    for r in store.list_runs(&results::RunFilter::default()).unwrap() {
        assert_ne!(r.status, RunStatus::Running, "run {} left running", r.id);
        let tag = r.load["tag"].as_str().unwrap_or_default();
        if !tag.is_empty() {
            assert!(load::tagged_processes(tag).is_empty(), "run {}", r.id);
        }
    }
    assert!(private_jackd_pids(pid).is_empty());
}

/// `net respond` hung up while it waits for its controller: nothing came, so nothing
/// was measured, and nothing is stored (exit 130), as for every probe stopped before it
/// measured (it was stored `failed`, "no controller sent", exit 1).
#[test]
fn a_host_hung_up_before_its_controller_sent_stores_nothing() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("respond.db");
    let mut term = OnTerminal::spawn(
        &db,
        &["net", "respond", "-D", "60s", "--bind", "127.0.0.1:0"],
    );
    let started = Instant::now();
    while !term.printed().contains("listening on") {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{}",
            term.printed()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    term.hang_up();
    let status = term.wait(Duration::from_secs(60));
    assert_eq!(status.code(), Some(130), "{status:?}");
    let store = Store::open_read_only(&db).unwrap();
    let runs = store.list_runs(&results::RunFilter::default()).unwrap();
    assert!(runs.is_empty(), "{runs:?}");
}
