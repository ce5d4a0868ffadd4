//! `audiolat net`: over loopback, across namespaces, as separate ends, admission of cells
//! and reservations, the isolation experiment, deadline cells and mClock.

use std::time::Duration;

use results::{RunFilter, Store};
use serde_json::Value;

use crate::util::{
    machine_lock, not_root, parse_json, require_tool, run, run_json, spawn, temp_db, wait_timeout,
};

/// The network-audio probe end to end: both ends in one process over loopback, stored
/// with the study's figure (response time against the 1.4059 ms deadline).
#[test]
fn net_runs_over_loopback_and_stores_the_response_time_against_the_deadline() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("net.db");
    let out = run_json(
        &db,
        &[
            "net",
            "--duration",
            "2s",
            "--reference",
            "1s",
            "--warmup",
            "500ms",
            "--json",
        ],
    );
    assert_eq!(out["status"], "complete", "{out}");
    let ms = out["measurements"].as_array().unwrap();
    let metric = |name: &str| {
        ms.iter()
            .find(|m| m["metric"] == name)
            .unwrap_or_else(|| panic!("{name} in {out}"))
    };
    let response = metric("response_time");
    assert_eq!(response["deadline"], 1_405_896.0);
    assert!(
        response["summary"]["count"].as_u64().unwrap() > 1000,
        "{response}"
    );
    assert!(response["misses"].as_u64().unwrap() <= response["summary"]["count"].as_u64().unwrap());
    for name in [
        "after_last_packet",
        "synth_time",
        "end_to_end",
        "pacing_error",
        "response_time_reference",
    ] {
        assert!(
            metric(name)["summary"]["count"].as_u64().unwrap() > 0,
            "{name}"
        );
    }
    let synth = &out["result"]["synth"];
    let c = &synth["controller"];
    // The two ends' books agree: what the host answered is what the controller got.
    let received = c["on_time"].as_u64().unwrap() + c["late"].as_u64().unwrap();
    assert!(
        synth["host"]["answered"]
            .as_u64()
            .unwrap()
            .abs_diff(received)
            <= 1,
        "{synth}"
    );
    // Stored: listed, and its per-block series exported.
    let runs = run(&db, &["runs"]);
    assert!(runs.stdout.contains("net"), "{}", runs.stdout);
    let series = run(&db, &["export", "last", "--format", "series"]);
    assert_eq!(series.code, 0, "{}", series.stderr);
    assert!(
        series.stdout.contains("response_time"),
        "{}",
        &series.stdout[..series.stdout.len().min(400)]
    );
    // Interference: an abusive UDP stream at the host and the video players. The flood
    // reaches the host and is dropped as foreign; the controller's blocks still balance.
    let out = run_json(
        &db,
        &[
            "net",
            "--duration",
            "1s",
            "--no-reference",
            "--warmup",
            "300ms",
            "--load",
            "flood:200+video",
            "--json",
        ],
    );
    assert_eq!(out["status"], "complete", "{out}");
    let synth = &out["result"]["synth"];
    assert!(
        synth["flood"]["datagrams"].as_u64().unwrap() > 1000,
        "{synth}"
    );
    assert!(
        synth["host"]["drops"]["foreign"].as_u64().unwrap() > 0,
        "{synth}"
    );
    assert!(out["result"]["reference"].is_null());
    let c = &synth["controller"];
    let received = c["on_time"].as_u64().unwrap() + c["late"].as_u64().unwrap();
    assert!(
        synth["host"]["answered"]
            .as_u64()
            .unwrap()
            .abs_diff(received)
            <= 1,
        "{synth}"
    );
    // A flood aimed at nothing is refused for the other probes.
    let out = run(&db, &["jitter", "--load", "flood"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("use them with audiolat net"),
        "{}",
        out.stderr
    );
}

/// Across two network namespaces joined by a veth pair (root only): the link is real,
/// the namespaces are gone afterwards.
#[test]
fn net_runs_across_two_network_namespaces_and_removes_them() {
    let _m = machine_lock();
    if not_root("network namespaces need root") {
        return;
    }
    require_tool("ip", "iproute2");
    let (_dir, db) = temp_db("ns.db");
    let out = run_json(
        &db,
        &[
            "net",
            "--netns",
            "--duration",
            "1s",
            "--no-reference",
            "--warmup",
            "300ms",
            "--json",
        ],
    );
    assert_eq!(out["status"], "complete", "{out}");
    let c = &out["result"]["synth"]["controller"];
    assert!(c["on_time"].as_u64().unwrap() > 500, "{c}");
    let store = Store::open_existing(&db).unwrap();
    let stored = store
        .run(results::RunId(out["run_id"].as_i64().unwrap()))
        .unwrap();
    assert!(
        stored.config["transport"]
            .as_str()
            .unwrap()
            .contains("veth"),
        "{}",
        stored.config
    );
    let left = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let left = String::from_utf8_lossy(&left.stdout);
    assert!(
        !left.contains("al-host-") && !left.contains("al-ctl-"),
        "left behind: {left}"
    );
}

#[test]
fn net_respond_and_emulate_talk_across_processes() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("ends.db");
    let mut host = spawn(
        &db,
        &[
            "net",
            "respond",
            "--bind",
            "127.0.0.1:19700",
            "--peer",
            "127.0.0.1:19701",
            "--duration",
            "4s",
            "--warmup",
            "200ms",
            "--json",
        ],
    );
    std::thread::sleep(Duration::from_millis(300));
    let emulate = run_json(
        &db,
        &[
            "net",
            "emulate",
            "--host",
            "127.0.0.1:19700",
            "--bind",
            "127.0.0.1:19701",
            "--duration",
            "2s",
            "--warmup",
            "200ms",
            "--json",
        ],
    );
    let status = wait_timeout(&mut host, Duration::from_secs(20));
    assert!(status.success(), "respond exited {status:?}");
    let r = &emulate["result"];
    assert!(r["blocks_sent"].as_u64().unwrap() > 2000, "{r}");
    // The host's own run agrees with what the controller received.
    let hosted = store_result(&db, "respond");
    let received = r["on_time"].as_u64().unwrap() + r["late"].as_u64().unwrap();
    assert!(
        hosted["answered"].as_u64().unwrap().abs_diff(received) <= 2,
        "host {hosted} against controller {r}"
    );
    // Loopback answers everything it is sent at this rate.
    assert!(
        r["lost"].as_u64().unwrap() * 100 <= r["blocks_sent"].as_u64().unwrap(),
        "{r}"
    );
    // Nothing answers: the controller says so instead of a number.
    let out = run(
        &db,
        &[
            "net",
            "emulate",
            "--host",
            "127.0.0.1:19702",
            "--bind",
            "127.0.0.1:19703",
            "--duration",
            "1s",
            "--warmup",
            "100ms",
        ],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("no answer from 127.0.0.1:19702"),
        "{}",
        out.stderr
    );
}

/// Each end's flags reach the setup it stores (what a setup configures is
/// `netaudio::ends`'s unit tests): `--no-synth` and the default 1 s warm-up, `-D`.
#[test]
fn each_end_stores_the_setup_its_flags_ask_for() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("setups.db");
    let respond = [
        "net",
        "respond",
        "--no-synth",
        "-D",
        "200ms",
        "--bind",
        "127.0.0.1:19726",
    ];
    let out = run(&db, &[&respond[..], &["--quiet"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let emulate = ["net", "emulate", "-D", "2s", "--warmup", "100ms", "--quiet"];
    let to = ["--host", "127.0.0.1:19727", "--bind", "127.0.0.1:19728"];
    let out = run(&db, &[&emulate[..], &to].concat());
    assert_eq!(out.code, 1, "nobody answers: {}", out.stderr);
    let store = Store::open_existing(&db).unwrap();
    let host = store.run(results::RunId(1)).unwrap().config;
    assert_eq!(
        (&host["synth"], &host["warmup_s"]),
        (&Value::from(false), &Value::from(1.0))
    );
    let controller = store.run(results::RunId(2)).unwrap().config;
    assert_eq!(controller["duration_s"], 2.0, "{controller}");
}

/// The stored result of the newest net run of `role`.
fn store_result(db: &std::path::Path, role: &str) -> Value {
    let store = Store::open_existing(db).unwrap();
    let runs = store.list_runs(&RunFilter::default()).unwrap();
    let run = runs
        .iter()
        .find(|r| r.config["role"] == role)
        .unwrap_or_else(|| panic!("no {role} run stored"));
    run.result.clone()
}

/// Cells and reservations that do not fit are refused before anything starts, with the
/// arithmetic; nothing is stored.
#[test]
fn net_refuses_cells_and_reservations_that_do_not_fit() {
    let (_dir, db) = temp_db("admission.db");
    let online = engine::rt::online_cpus();
    let all = online
        .iter()
        .map(|c| format!("--cell=c{c}=dedicated:cpus={c}"))
        .collect::<Vec<_>>();
    let mut cases: Vec<(Vec<String>, &str)> = vec![
        (all, "over by 1 CPU"),
        (
            vec![
                "--cell=tt=time-triggered:runtime=900us,period=1ms".into(),
                "--cell=et=event-triggered:runtime=900us,period=1ms".into(),
                format!("--cell=pad=time-triggered:runtime={}ms,period=1ms", 0),
            ],
            "",
        ),
        (vec!["--host-cell=nope".into()], "no such cell"),
        (vec!["--load=ep@nowhere".into()], "no such cell"),
        (
            vec![
                "--cell=dl=time-triggered:runtime=1ms,period=10ms".into(),
                "--load=cpu@dl".into(),
            ],
            "may not fork",
        ),
        // Each thread of a built-in load takes the cell's reservation: 4 x 0.6 CPU.
        (
            vec![
                "--cell=dl=event-triggered:runtime=6ms,period=10ms".into(),
                "--load=ep:4@dl".into(),
            ],
            "over by",
        ),
        (
            vec![
                "--link=1000".into(),
                "--reserve=2000".into(),
                "--reserve-by=mclock".into(),
            ],
            "exceeds --link 1000 Mbit/s by 1000 Mbit/s",
        ),
        (vec!["--link=300".into()], "add --netns"),
        (
            vec![
                "--link=300".into(),
                "--reserve-by=mclock".into(),
                "--cell=a=best-effort:bandwidth=200".into(),
                "--cell=b=best-effort:bandwidth=150".into(),
            ],
            "over by 50 Mbit/s",
        ),
        (vec!["--cell=x=dedicated".into()], "needs its CPUs"),
    ];
    // SCHED_DEADLINE over-commitment on the CPUs: 2 x 0.9 per CPU.
    let n = online.len();
    cases[1] = (
        (0..n + 1)
            .map(|i| format!("--cell=d{i}=event-triggered:runtime=900us,period=1ms"))
            .collect(),
        "over by",
    );
    for (args, says) in cases {
        let mut all: Vec<&str> = vec!["net", "--duration", "1s"];
        all.extend(args.iter().map(String::as_str));
        let out = run(&db, &all);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{args:?}: {}", out.stderr);
        assert_eq!(
            out.stderr.trim().lines().count(),
            1,
            "{args:?}: {}",
            out.stderr
        );
    }
    assert!(
        !db.exists()
            || Store::open_existing(&db)
                .unwrap()
                .list_runs(&RunFilter::default())
                .unwrap()
                .is_empty(),
        "a refused run was stored"
    );
}

/// `audiolat net experiment isolation`: four stored runs (alone and with video + EP,
/// without and with a dedicated cell), the study's Figure 7 beside ours, and the
/// machine's cpusets as found afterwards (root only).
#[test]
fn net_experiment_isolation_runs_the_four_cases_and_leaves_no_cpuset() {
    let _m = machine_lock();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || engine::rt::online_cpus().len() < 2 {
        eprintln!("skipped: cells need root and two CPUs");
        return;
    }
    let (_dir, db) = temp_db("iso.db");
    let out = run_json(
        &db,
        &[
            "net",
            "experiment",
            "isolation",
            "--duration",
            "1s",
            "--warmup",
            "300ms",
            "--json",
        ],
    );
    let rows = out["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{out}");
    for r in rows {
        assert_eq!(r["status"], "complete", "{r}");
        assert!(r["blocks"].as_u64().unwrap() > 1000, "{r}");
        assert!(r["mean_ns"].as_f64().is_some_and(|m| m > 0.0), "{r}");
    }
    assert!(rows[2]["paper"].as_str().unwrap().contains("Fig. 7a"));
    let store = Store::open_existing(&db).unwrap();
    // The experiment's group is closed with its runs, not left running.
    let group = store
        .group(results::GroupId(out["group"].as_i64().unwrap()))
        .unwrap();
    assert_eq!(group.status, results::RunStatus::Complete, "{group:?}");
    let run = store
        .run(results::RunId(rows[3]["run_id"].as_i64().unwrap()))
        .unwrap();
    let cells = &run.qos_granted["cells"];
    assert_eq!(cells["cells"][0]["exclusive"], true, "{cells}");
    assert_eq!(run.qos_granted["cells_undone"], true);
    // The best-effort cell's loads never ran on the music cell's CPU.
    let music_cpu: usize = cells["cells"][0]["cpus"].as_str().unwrap().parse().unwrap();
    let others = &cells["cells"][1]["usage_ns_per_cpu"];
    assert_eq!(others[music_cpu], 0, "{cells}");
    let left: Vec<_> = std::fs::read_dir("/sys/fs/cgroup/cpuset")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("audiolat-"))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// A reservation by the user-level mClock service, end to end from the command line:
/// the stream and the service's counters are stored (root only: namespaces).
#[test]
fn net_keeps_a_builtin_load_in_a_deadline_cell_to_its_share() {
    let _m = machine_lock();
    if not_root("SCHED_DEADLINE needs root") {
        return;
    }
    let (_dir, db) = temp_db("dl.db");
    // EP never sleeps: only the kernel's CBS holds each of its two threads to
    // 2 ms per 10 ms, 0.4 CPU together.
    let out = run_json(
        &db,
        &[
            "net",
            "--cell",
            "ep=event-triggered:runtime=2ms,period=10ms",
            "--load",
            "ep:2@ep",
            "--duration",
            "2s",
            "--no-reference",
            "--warmup",
            "300ms",
            "--json",
        ],
    );
    assert_eq!(out["status"], "complete", "{out}");
    let exported = run(&db, &["export", "last"]);
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    let run_record = &parse_json(&exported.stdout)["run"];
    let cell = &run_record["qos_granted"]["cells"]["cells"][0];
    assert_eq!(cell["name"], "ep", "{run_record}");
    assert!(
        cell["policy"]
            .as_str()
            .unwrap()
            .starts_with("SCHED_DEADLINE"),
        "{cell}"
    );
    // The kernel's accounting of the cell against its share over the run, which the
    // load's whole life lies within: never more (a tenth for the CBS's per-tick
    // overrun, paid back the next period), and it did run under the reservation.
    let used_s = cell["usage_ns"].as_f64().unwrap() / 1e9;
    let run_s = run_record["duration_s"].as_f64().unwrap();
    let share = 2.0 * 2.0 / 10.0;
    assert!(
        used_s <= share * run_s * 1.1,
        "the cell used {used_s:.3} s of CPU in {run_s:.3} s: over its {share} CPU"
    );
    assert!(
        used_s >= share * 2.0 * 0.25,
        "the cell used only {used_s:.3} s of CPU in {run_s:.3} s"
    );
}

#[test]
fn net_reserves_bandwidth_with_mclock_beside_an_abusive_stream() {
    let _m = machine_lock();
    if not_root("network namespaces need root") {
        return;
    }
    require_tool("ip", "iproute2");
    let (_dir, db) = temp_db("bw.db");
    let out = run_json(
        &db,
        &[
            "net",
            "--netns",
            "--link",
            "300",
            "--reserve",
            "240",
            "--reserve-by",
            "mclock",
            "--load",
            "stream",
            "--duration",
            "1s",
            "--no-reference",
            "--warmup",
            "300ms",
            "--json",
        ],
    );
    assert_eq!(out["status"], "complete", "{out}");
    let synth = &out["result"]["synth"];
    assert_eq!(synth["service"]["discipline"], "mclock", "{synth}");
    assert!(synth["stream"]["sent"].as_u64().unwrap() > 1000, "{synth}");
    let audio = &synth["service"]["flows"][0];
    assert!(audio["by_reservation"].as_u64().unwrap() > 1000, "{audio}");
}
