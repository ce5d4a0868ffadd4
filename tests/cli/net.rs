//! `audiolat net`: over loopback, across namespaces, as separate ends, admission of cells
//! and reservations, the isolation experiment, deadline cells and mClock.

use std::time::Duration;

use results::{RunFilter, Store};
use serde_json::Value;

use crate::util::{
    self, machine_lock, not_root, parse_json, require_tool, run, run_json, spawn, temp_db,
    wait_timeout,
};

/// The two ends' books on the same blocks, as stored (a phase's `host` and `controller`
/// records, or the results of a `net respond` and a `net emulate` that talked), stated as
/// relations that hold on a loaded machine:
/// - both ends count from the same block, so they count the same blocks;
/// - the controller: each block it sent was answered on time, late, after the run's end,
///   or its answer not received (exact);
/// - what the controller received, the host sent (exact);
/// - what the host sent and the controller did not receive, its kernel dropped on a full
///   queue: loopback loses nothing else. (An answer that came after the controller
///   stopped listening, two drains, 200 ms, after its last packet, would break this: a
///   real-time host is never that far behind here.)
fn assert_books_agree(host: &Value, controller: &Value) {
    let n = |v: &Value, k: &str| v[k].as_u64().unwrap_or_else(|| panic!("no {k} in {v}"));
    let c = controller;
    assert_eq!(
        host["counted_from_block"], c["counted_from_block"],
        "host {host} against controller {c}"
    );
    let received = n(c, "answers_received_on_time")
        + n(c, "answers_received_late")
        + n(c, "answers_received_after_end");
    assert_eq!(
        n(c, "blocks_sent"),
        received + n(c, "answers_not_received"),
        "{c}"
    );
    let sent = n(host, "answers_sent");
    assert!(
        received <= sent && sent - received <= n(c, "answers_dropped_by_kernel"),
        "the host sent {sent} answers, the controller received {received}: host {host} against controller {c}"
    );
}

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
    assert_books_agree(&synth["host"], c);
    // Both ends in one process: every late block is counted once, under the part of
    // its time that made it late (null only for ends run apart).
    let causes = &c["miss_causes"];
    let counted: u64 = ["sent_late", "to_host", "host", "way_back", "unsplit"]
        .iter()
        .map(|k| {
            causes[k]
                .as_u64()
                .unwrap_or_else(|| panic!("{k} in {causes}"))
        })
        .sum();
    assert_eq!(counted, c["answers_received_late"].as_u64().unwrap(), "{c}");
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
    assert_books_agree(&synth["host"], &synth["controller"]);
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
    assert!(c["answers_received_on_time"].as_u64().unwrap() > 500, "{c}");
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

/// The two ends as two processes. Both count the blocks after their warm-up by block
/// number (the controller's schedule), so the host's `answers_sent` and the
/// controller's answers received (on time, late, after the run's end) are of the same
/// blocks, and their books agree ([`assert_books_agree`]). A controller that starts late
/// on a busy machine shifts neither end's warm-up against the other's.
#[test]
fn net_respond_and_emulate_talk_across_processes() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("ends.db");
    // The host serves well past the controller's end, however late a busy machine
    // starts the controller.
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
            "8s",
            "--warmup",
            "200ms",
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
    let status = wait_timeout(&mut host, Duration::from_secs(30));
    let mut printed = String::new();
    std::io::Read::read_to_string(host.stdout.as_mut().unwrap(), &mut printed).unwrap();
    assert!(status.success(), "respond exited {status:?}");
    let r = &emulate["result"];
    assert!(r["blocks_sent"].as_u64().unwrap() > 2000, "{r}");
    // The host's own run agrees with what the controller received: the same blocks.
    let hosted = store_result(&db, "respond");
    assert_eq!(
        hosted["counted_from_block"], r["counted_from_block"],
        "host {hosted} against controller {r}"
    );
    assert_books_agree(&hosted, r);
    // Loopback answers everything it is sent at this rate.
    assert!(
        r["answers_not_received"].as_u64().unwrap() * 100 <= r["blocks_sent"].as_u64().unwrap(),
        "{r}"
    );
    // Two processes share no clock: the late blocks are not split, not guessed.
    assert!(r["miss_causes"].is_null(), "{r}");
    // The host's counters in words, not its raw record.
    assert!(
        printed.contains("host: ")
            && printed.contains(" answers sent for the blocks after the warm-up (blocks from "),
        "{printed}"
    );
    assert!(!printed.contains('{'), "{printed}");
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

/// A host that nobody sends to measured nothing: it says so (exit 1, one error line),
/// stores the run `failed` with that reason, and names the port it listened on, the
/// kernel's when `--bind` asked for port 0.
#[test]
fn net_respond_with_no_sender_says_where_it_listened_and_stores_no_complete_run() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("nobody.db");
    let out = run(
        &db,
        &["net", "respond", "--bind", "127.0.0.1:0", "-D", "300ms"],
    );
    assert_eq!(out.code, 1, "{out:?}");
    let listening = out
        .stderr
        .lines()
        .next()
        .and_then(|l| l.split("listening on 127.0.0.1:").nth(1))
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_else(|| panic!("no listening line: {}", out.stderr));
    let port: u16 = listening.parse().unwrap();
    assert_ne!(port, 0, "{}", out.stderr);
    let errors: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("audiolat: error: "))
        .collect();
    assert_eq!(
        errors,
        [format!(
            "audiolat: error: no controller sent to 127.0.0.1:{port}: nothing measured; start `audiolat net emulate --host 127.0.0.1:{port}`"
        )],
        "{}",
        out.stderr
    );
    assert!(!out.stdout.contains('{'), "{}", out.stdout);
    let store = Store::open_existing(&db).unwrap();
    let runs = store.list_runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, results::RunStatus::Failed, "{:?}", runs[0]);
    assert_eq!(runs[0].config["bind"], format!("127.0.0.1:{port}"));
}

/// `net respond` without `--peer`: a stray datagram that is a valid controller packet,
/// from another port, arriving first, does not take the stream over. The controller that
/// follows is answered (`net emulate` gets its answers); the stray is counted apart.
#[test]
fn net_respond_without_a_peer_is_not_taken_over_by_a_stray_datagram() {
    use netaudio::wire::{encode_input, InputHeader, PadFrame, INPUT_PACKET_BYTES};
    let _m = machine_lock();
    let (_dir, db) = temp_db("stray.db");
    let mut host = util::KillOnDrop(spawn(
        &db,
        &[
            "net",
            "respond",
            "--bind",
            "127.0.0.1:19730",
            "--duration",
            "6s",
            "--warmup",
            "200ms",
            "--quiet",
        ],
    ));
    std::thread::sleep(Duration::from_millis(300));
    let stray = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut packet = [0u8; INPUT_PACKET_BYTES];
    let header = InputHeader {
        index: 0,
        seq: 0,
        block: 0,
        sender_time_ns: 1,
    };
    encode_input(&header, &[[PadFrame::ZERO; 32]; 2], &mut packet);
    stray.send_to(&packet, "127.0.0.1:19730").unwrap();
    let emulate = run(
        &db,
        &[
            "net",
            "emulate",
            "--host",
            "127.0.0.1:19730",
            "--bind",
            "127.0.0.1:19731",
            "--duration",
            "1s",
            "--warmup",
            "200ms",
            "--json",
        ],
    );
    let status = wait_timeout(&mut host.0, Duration::from_secs(30));
    assert_eq!(emulate.code, 0, "{}", emulate.stderr);
    assert!(status.success(), "respond exited {status:?}");
    let r = &parse_json(&emulate.stdout)["result"];
    assert!(
        r["answers_received_on_time"].as_u64().unwrap() > 1000,
        "{r}"
    );
    let hosted = store_result(&db, "respond");
    assert_eq!(hosted["peer"], "127.0.0.1:19731", "{hosted}");
    assert_eq!(hosted["drops"]["unconfirmed"], 1, "{hosted}");
    assert_eq!(hosted["drops"]["foreign"], 0, "{hosted}");
}

/// A controller starved for 300 ms (a real-time hog on its CPU, as a busy machine
/// would) sends late. Its run says so in every view, as a validity flag (the terminal,
/// `show`, JSON, the report, gates), and blames neither the host nor the network: the
/// blocks the host answered are not counted lost.
#[test]
fn a_starved_controller_is_flagged_in_every_view_and_blames_no_one_else() {
    let _m = machine_lock();
    if not_root("a real-time hog needs root") {
        return;
    }
    let (dir, db) = temp_db("starved.db");
    let cpu = *engine::rt::online_cpus().last().unwrap();
    let cpus = format!("{cpu},{cpu}");
    let net = spawn(
        &db,
        &[
            "net",
            "--no-reference",
            "--duration",
            "2s",
            "--warmup",
            "200ms",
            "--controller-cpus",
            &cpus,
            "--fail-if",
            "sender_late > 0",
            "--fail-if",
            "misses > 1000000",
            "--json",
        ],
    );
    // A hog above the controller's priority on its CPU, for 300 ms, once it streams.
    std::thread::sleep(Duration::from_millis(900));
    let hog = std::thread::spawn(move || {
        let rt = engine::rt::ThreadRt::apply(
            &engine::rt::Policy::Fifo { priority: 90 },
            Some(&[cpu]),
            0,
        );
        let until = std::time::Instant::now() + Duration::from_millis(300);
        while std::time::Instant::now() < until {
            std::hint::spin_loop();
        }
        rt.sched.is_realtime()
    });
    assert!(hog.join().unwrap(), "the hog got no real-time policy");
    let out: util::Output = net.wait_with_output().unwrap().into();
    // The gate on the flag fails the run (exit 3), which is stored all the same.
    assert_eq!(out.code, 3, "{}", out.stderr);
    let v = parse_json(&out.stdout);
    let late = v["flags"]["sender_late_blocks"].as_u64().unwrap();
    assert!(late > 50, "{}", v["flags"]);
    let synth = &v["result"]["synth"];
    let c = &synth["controller"];
    assert_eq!(c["blocks_sent_late"], late, "{c}");
    // The host answered the late blocks: the controller counts them received, not
    // lost.
    assert_books_agree(&synth["host"], c);
    assert!(
        c["answers_not_received"].as_u64().unwrap() * 100 <= c["blocks_sent"].as_u64().unwrap(),
        "{c}"
    );
    // Gates: the flag is a metric; a verdict on another says the sender was late.
    let gates = &v["gates"];
    assert_eq!(gates[0]["outcome"], "fail", "{gates}");
    assert_eq!(gates[1]["outcome"], "pass", "{gates}");
    assert_eq!(
        gates[1]["reason"],
        format!("the run's own controller sent {late} blocks late"),
        "{gates}"
    );
    // show, as text and JSON; the report's validity cell and its caveats.
    let id = v["run_id"].as_i64().unwrap().to_string();
    let shown = run(&db, &["show", &id]);
    for says in [
        format!("note: SENDER LATE: the run's own controller sent {late} blocks late"),
        format!("the controller itself sent {late} of the "),
    ] {
        assert!(shown.stdout.contains(&says), "{says}: {}", shown.stdout);
    }
    let shown = run_json(&db, &["show", &id, "--json"]);
    assert_eq!(shown["run"]["flags"]["sender_late_blocks"], late);
    let html = dir.path().join("r.html");
    let report = run(&db, &["report", &id, "-o", html.to_str().unwrap()]);
    assert_eq!(report.code, 0, "{}", report.stderr);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("sender late blocks"), "no flag in the report");
    assert!(
        page.contains("the controller sent blocks late"),
        "no caveat in the report"
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
    assert_eq!(out.code, 1, "nobody sends: {}", out.stderr);
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
