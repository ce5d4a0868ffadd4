//! `audiolat roundtrip`: exact on the virtual card, no loop without a cable, equal to
//! jack_iodelay on a JACK software loop, and the minimum-buffer search.

use std::time::Duration;

use results::Store;
use serde_json::Value;

use crate::util::{self, machine_lock, require_tool, run, run_json, spawn, temp_db, DummyJackd};

/// The round trip on its ground truth, through the CLI: the virtual card's loop is its
/// playback latency (periods × period) + its capture latency (a period) + the cable,
/// exactly; continuous windows through the run show no spread; an inserted delay adds
/// exactly its frames; and every run is stored with its windows.
#[test]
fn roundtrip_on_the_virtual_card_is_exact_and_the_inserted_delay_adds_its_frames() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("rt.db");
    for (cable, insert) in [("7.25", "0"), ("0", "0"), ("7.25", "50")] {
        let v = run_json(
            &db,
            &[
                "roundtrip",
                "--backend",
                "virtual",
                "--period",
                "128",
                "--periods",
                "3",
                "--cable-delay",
                cable,
                "--insert-delay",
                insert,
                "--duration",
                "1s",
                "--every",
                "16",
                "--impulses",
                "2",
                "--json",
            ],
        );
        let r = &v["runs"][0];
        assert_eq!(r["status"], "complete", "{r}");
        let result = &r["result"];
        let expected =
            128.0 * 3.0 + 128.0 + cable.parse::<f64>().unwrap() + insert.parse::<f64>().unwrap();
        let frames = &result["roundtrip_frames"];
        assert!(frames["count"].as_u64().unwrap() >= 5, "{result}");
        let mean = frames["mean"].as_f64().unwrap();
        assert!(
            (mean - expected).abs() <= 0.05,
            "cable {cable}, inserted {insert}: {mean} frames against {expected}"
        );
        let spread = frames["max"].as_f64().unwrap() - frames["min"].as_f64().unwrap();
        assert!(
            spread < 1e-3,
            "continuous windows spread by {spread} frames"
        );
        assert_eq!(result["reported_frames"], 512);
        assert!(
            result["verdict"]
                .as_str()
                .unwrap()
                .starts_with("loop found"),
            "{result}"
        );
        let store = Store::open_existing(&db).unwrap();
        let run_id = results::RunId(r["run_id"].as_i64().unwrap());
        let series = store.series(run_id).unwrap();
        let windows = series
            .iter()
            .find(|s| s.name == "roundtrip_windows")
            .unwrap();
        assert_eq!(
            windows.rows.len(),
            r["windows"].as_array().unwrap().len(),
            "every window is stored"
        );
    }
}

/// No cable: "no loop found", never a number; the run is kept, `failed` (it measured
/// nothing), and says so.
#[test]
fn roundtrip_without_a_loop_says_no_loop_found() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("none.db");
    let out = run(
        &db,
        &[
            "roundtrip",
            "--backend",
            "virtual",
            "--no-cable",
            "--duration",
            "5s",
        ],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stdout.contains("no loop found"), "{}", out.stdout);
    let v = run_json(&db, &["show", "last", "--json"]);
    assert_eq!(v["run"]["status"], "failed", "{v}");
    assert_eq!(v["run"]["flags"]["no_loop"], true, "{v}");
    assert!(v["run"]["result"]["roundtrip_frames"]["count"] == 0, "{v}");
}

/// jack_iodelay's last settled reading of a loop, in frames.
fn jack_iodelay_frames(server: &str, loop_in: &str, loop_out: &str) -> f64 {
    // Line-buffered: jack_iodelay prints with stdio, and a pipe would hold its lines.
    let iodelay = std::process::Command::new("stdbuf")
        .args(["-oL", "jack_iodelay"])
        .env("JACK_DEFAULT_SERVER", server)
        .env("JACK_NO_START_SERVER", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("jack_iodelay starts");
    let connect = |from: &str, to: &str| {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let ok = std::process::Command::new("jack_connect")
                .env("JACK_DEFAULT_SERVER", server)
                .env("JACK_NO_START_SERVER", "1")
                .args([from, to])
                .output()
                .is_ok_and(|o| o.status.success());
            if ok {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "jack_connect {from} {to}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    connect("jack_delay:out", loop_in);
    connect(loop_out, "jack_delay:in");
    std::thread::sleep(Duration::from_secs(4));
    // SAFETY: stopping the jack_iodelay this test started.
    unsafe { libc::kill(iodelay.id() as i32, libc::SIGTERM) };
    let out = iodelay.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // "   256.000 frames      5.333 ms total roundtrip latency": the last settled one.
    text.lines()
        .rev()
        .filter(|l| l.contains("total roundtrip latency"))
        .find_map(|l| l.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no reading from jack_iodelay: {text}"))
}

/// The independent reference for JACK: jackd2's jack_iodelay and audiolat measure the
/// same software loop (`audiolat loop`, a client copying its input to its output N frames
/// later) and must agree; a loop of N more frames reads N more in both.
#[test]
fn roundtrip_on_a_jack_software_loop_equals_jack_iodelay() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    require_tool("jack_iodelay", "jackd2");
    require_tool("jack_connect", "jackd2");
    let (_dir, db) = temp_db("io.db");
    let jackd = DummyJackd::start("iodelay", 48000, 256);
    let name = jackd.name().to_string();
    let mut readings = Vec::new();
    for delay in ["0", "100"] {
        let mut lp = util::KillOnDrop(spawn(
            &db,
            &["loop", "--server-name", &name, "--delay", delay],
        ));
        std::thread::sleep(Duration::from_millis(700));
        let reference = jack_iodelay_frames(&name, "audiolat-loop:in", "audiolat-loop:out");
        let v = run_json(
            &db,
            &[
                "roundtrip",
                "--server",
                "external",
                "--server-name",
                &name,
                "--playback",
                "audiolat-loop:in",
                "--capture",
                "audiolat-loop:out",
                "--duration",
                "2s",
                "--impulses",
                "2",
                "--json",
            ],
        );
        // SAFETY: a clean stop (SIGINT) of the loop client this test started.
        unsafe { libc::kill(lp.id() as i32, libc::SIGINT) };
        let status = util::wait_timeout(&mut lp.0, Duration::from_secs(10));
        assert!(status.success(), "audiolat loop exited {status}");
        let result = &v["runs"][0]["result"];
        let ours = result["roundtrip_frames"]["mean"].as_f64().unwrap();
        eprintln!("loop delay {delay}: audiolat {ours} frames, jack_iodelay {reference} frames");
        assert!(
            (ours - reference).abs() <= 0.05,
            "loop delay {delay}: audiolat {ours} frames, jack_iodelay {reference}"
        );
        // A software loop in JACK: one period for the feedback edge, plus the loop's own.
        assert!(
            (ours - 256.0 - delay.parse::<f64>().unwrap()).abs() <= 0.05,
            "{result}"
        );
        readings.push(ours);
    }
    assert!(
        (readings[1] - readings[0] - 100.0).abs() <= 0.05,
        "{readings:?}"
    );
    // A clean stop (SIGTERM), within 10 s.
    let stopped = jackd.stop();
    assert!(stopped.is_some(), "jackd did not exit within 10s");
}

/// --find-min-buffer steps down through the periods and stops at the first that
/// under-runs; the verdict names the smallest that held and its round trip.
#[test]
fn find_min_buffer_steps_down_and_reports_the_smallest_that_held() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("min.db");
    let v = run_json(
        &db,
        &[
            "roundtrip",
            "--backend",
            "virtual",
            "--find-min-buffer",
            "--period",
            "64,256,128",
            "--duration",
            "500ms",
            "--impulses",
            "1",
            "--json",
        ],
    );
    let runs = v["runs"].as_array().unwrap();
    let periods: Vec<u64> = runs
        .iter()
        .map(|r| r["result"]["period_frames"].as_u64().unwrap())
        .collect();
    assert_eq!(
        periods,
        [256, 128, 64][..periods.len()].to_vec(),
        "descending: {periods:?}"
    );
    let holds = |r: &Value| {
        r["status"] == "complete"
            && r["result"]["xruns"] == 0
            && r["result"]["skipped_cycles"] == 0
            && r["result"]["roundtrip_frames"]["count"].as_u64().unwrap() > 0
    };
    let first_fail = runs.iter().position(|r| !holds(r));
    let min = &v["min_buffer"];
    match first_fail {
        // The descent stops at the first failure.
        Some(i) => {
            assert_eq!(i, runs.len() - 1, "{v}");
            assert_eq!(min["first_failing"]["run_id"], runs[i]["run_id"]);
        }
        None => {
            assert_eq!(runs.len(), 3);
            assert!(min["first_failing"].is_null());
        }
    }
    let held = first_fail.unwrap_or(runs.len());
    if held > 0 {
        let last = &runs[held - 1];
        assert_eq!(min["smallest_holding"]["run_id"], last["run_id"], "{v}");
        // On the virtual card the round trip is exactly its buffer plus a period.
        let p = last["result"]["period_frames"].as_f64().unwrap();
        let rt = min["smallest_holding"]["roundtrip_frames"]
            .as_f64()
            .unwrap();
        assert!((rt - 3.0 * p).abs() < 0.05, "{v}");
    } else {
        assert!(min["smallest_holding"].is_null());
    }
    let out = run(
        &db,
        &["roundtrip", "--find-min-buffer", "--load", "none,cpu"],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("one load"), "{}", out.stderr);
}
