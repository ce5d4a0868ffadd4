//! `--server pipewire`: audiolat's JACK client on a private headless PipeWire, through
//! PipeWire's libjack. The round trip through the null sink is one quantum of the graph
//! (PipeWire's default, 1024 frames), the server is recorded with its versions, and
//! nothing of it is left after the run; the event probe stores every trigger.

use results::Store;
use serde_json::Value;

use crate::util::{
    machine_lock, private_pipewire_pids, require_pipewire, require_tool, run, run_json, temp_db,
};

/// PipeWire's default quantum: the graph's cycle when no client asks for another.
const DEFAULT_QUANTUM_FRAMES: f64 = 1024.0;

/// The stored server of a run is the private PipeWire, with its versions.
pub(crate) fn assert_pipewire_server(server: &Value) {
    assert_eq!(server["name"], "pipewire-0", "{server}");
    assert_eq!(server["private"], true, "{server}");
    let version = server["version"].as_str().unwrap_or_default();
    assert!(version.starts_with("PipeWire "), "{server}");
    assert!(version.contains(", WirePlumber "), "{server}");
    assert!(!version.contains("unknown"), "{server}");
    let command = server["command_line"].as_str().unwrap_or_default();
    assert!(command.starts_with("pipewire -c "), "{server}");
}

/// A stored PipeWire run's graph record (`result.server.graph`): the null sink drove
/// the run's cycles, force-quantum was read before and after (a private server's is
/// 0: its quantum is its default), and the profiler's first and last windows saw the
/// driver run the quantum measured through the JACK client (`quantum_granted_frames`).
pub(crate) fn assert_graph_record(run: &Value) {
    let granted = &run["config"]["server"]["quantum_granted_frames"];
    assert!(granted.as_u64().is_some(), "{run}");
    let graph = &run["result"]["server"]["graph"];
    assert_eq!(graph["driver"], "audiolat-sink", "{graph}");
    assert_eq!(graph["problems"], serde_json::json!([]), "{graph}");
    for when in ["before", "after"] {
        assert_eq!(graph["force_quantum"][when], 0, "{graph}");
        assert_eq!(graph["force_rate"][when], 0, "{graph}");
        let window = &graph["profiler"][when];
        let nodes = window["nodes"].as_array().expect("profiled nodes");
        let sink = nodes
            .iter()
            .find(|n| n["role"] == "driver" && n["name"] == "audiolat-sink")
            .unwrap_or_else(|| panic!("the sink drives the {when} window: {graph}"));
        assert_eq!(&sink["quantum_frames"], granted, "{graph}");
        assert_eq!(sink["rate_hz"], 48000, "{graph}");
        assert!(sink["xruns"].as_u64().is_some(), "{graph}");
        assert!(sink["cycles"].as_u64().unwrap() >= 1, "{graph}");
        let audiolat = nodes
            .iter()
            .find(|n| n["role"] == "follower" && n["name"] == "audiolat")
            .unwrap_or_else(|| panic!("audiolat follows in the {when} window: {graph}"));
        assert!(audiolat["errors"].as_u64().is_some(), "{graph}");
    }
    // The window follows the driver audiolat's own nodes ran on: the sink.
    let last = &graph["profiler"]["after"];
    let sink_id = last["nodes"]
        .as_array()
        .and_then(|n| n.iter().find(|n| n["name"] == "audiolat-sink"))
        .map(|n| n["id"].clone());
    assert_eq!(Some(last["followed_driver"].clone()), sink_id, "{graph}");
}

/// No process of the run's private PipeWire (they carry the run's audiolat pid) and no
/// private directory of it is left.
pub(crate) fn assert_nothing_left(db: &std::path::Path, run_id: i64) {
    let v = run_json(db, &["show", &run_id.to_string(), "--json"]);
    let pid = v["run"]["pid"].as_u64().expect("the run's pid") as u32;
    let left = private_pipewire_pids(pid);
    assert!(
        left.is_empty(),
        "processes of the private PipeWire left: {left:?}"
    );
    let dirs = crate::util::private_dirs(pid);
    assert!(dirs.is_empty(), "private directories left: {dirs:?}");
}

#[test]
fn roundtrip_through_the_null_sink_is_one_quantum_and_leaves_nothing() {
    require_pipewire();
    let _m = machine_lock();
    let (_dir, db) = temp_db("pw.db");
    let v = run_json(
        &db,
        &[
            "roundtrip",
            "--server",
            "pipewire",
            "--duration",
            "2s",
            "--json",
        ],
    );
    let r = &v["runs"][0];
    assert_eq!(r["status"], "complete", "{r}");
    let result = &r["result"];
    assert_eq!(result["period_frames"], 1024, "{result}");
    assert_eq!(
        result["capture_port"], "audiolat-sink:monitor_FL",
        "{result}"
    );
    let frames = &result["roundtrip_frames"];
    assert!(frames["count"].as_u64().unwrap() >= 3, "{result}");
    for stat in ["median", "mean"] {
        let got = frames[stat].as_f64().unwrap();
        assert!(
            (got - DEFAULT_QUANTUM_FRAMES).abs() <= 0.05,
            "{stat} {got} frames, not one quantum ({DEFAULT_QUANTUM_FRAMES}): {result}"
        );
    }
    let run_id = r["run_id"].as_i64().unwrap();
    let stored = run_json(&db, &["show", &run_id.to_string(), "--json"]);
    assert_eq!(stored["run"]["status"], "complete");
    assert_pipewire_server(&stored["run"]["config"]["server"]);
    assert_graph_record(&stored["run"]);
    assert_nothing_left(&db, run_id);
}

#[test]
fn event_on_pipewire_stores_every_trigger() {
    require_pipewire();
    let _m = machine_lock();
    let (_dir, db) = temp_db("pwev.db");
    let v = run_json(
        &db,
        &["event", "--server", "pipewire", "-n", "20", "--json"],
    );
    let r = &v["runs"][0];
    assert_eq!(r["status"], "complete", "{r}");
    assert_eq!(
        r["result"]["playback_ports"],
        serde_json::json!(["audiolat-sink:playback_FL", "audiolat-sink:playback_FR"])
    );
    assert_eq!(r["result"]["triggers"], 20, "{r}");
    let run_id = r["run_id"].as_i64().unwrap();
    let store = Store::open_existing(&db).unwrap();
    let rows = store.triggers(results::RunId(run_id)).unwrap();
    assert_eq!(rows.len(), 20);
    drop(store);
    let stored = run_json(&db, &["show", &run_id.to_string(), "--json"]);
    assert_pipewire_server(&stored["run"]["config"]["server"]);
    assert_nothing_left(&db, run_id);
}

/// `--server pipewire` is a JACK client's server: the other backends refuse it.
#[test]
fn pipewire_is_refused_with_the_alsa_and_virtual_backends() {
    let (_dir, db) = temp_db("pwno.db");
    for backend in ["alsa", "virtual"] {
        let out = run(
            &db,
            &["roundtrip", "--backend", backend, "--server", "pipewire"],
        );
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(
            out.stderr
                .contains(&format!("--server pipewire runs JACK clients or native streams on a private PipeWire: use it with --backend jack or pipewire, not --backend {backend}")),
            "{}",
            out.stderr
        );
    }
    assert!(!db.exists(), "nothing stored");
}

/// The round trip's median and mean, in frames, of a stored run's result.
pub(crate) fn roundtrip_frames(result: &Value) -> (f64, f64) {
    let frames = &result["roundtrip_frames"];
    assert!(frames["count"].as_u64().unwrap_or(0) >= 3, "{result}");
    (
        frames["median"].as_f64().unwrap(),
        frames["mean"].as_f64().unwrap(),
    )
}

/// audiolat's round trip at each of `periods` (one sweep), after checking each run's
/// recorded quantum (asked = granted = the period) and that the loop is one quantum.
fn audiolat_roundtrips(periods: &[u32]) -> Vec<f64> {
    let (_dir, db) = temp_db("pwq.db");
    let list = periods
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let v = run_json(
        &db,
        &[
            "roundtrip",
            "--server",
            "pipewire",
            "--period",
            &list,
            "--duration",
            "2s",
            "--json",
        ],
    );
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), periods.len(), "{v}");
    let mut medians = Vec::new();
    for (r, &period) in runs.iter().zip(periods) {
        assert_eq!(r["status"], "complete", "{r}");
        let run_id = r["run_id"].as_i64().unwrap();
        let stored = run_json(&db, &["show", &run_id.to_string(), "--json"]);
        let server = &stored["run"]["config"]["server"];
        assert_pipewire_server(server);
        assert_eq!(server["quantum_asked_frames"], period, "{server}");
        assert_eq!(server["quantum_granted_frames"], period, "{server}");
        assert_graph_record(&stored["run"]);
        let (median, mean) = roundtrip_frames(&r["result"]);
        for (stat, got) in [("median", median), ("mean", mean)] {
            assert!(
                (got - f64::from(period)).abs() <= 0.05,
                "{stat} {got} frames, not the granted quantum {period}: {r}"
            );
        }
        assert_nothing_left(&db, run_id);
        medians.push(median);
    }
    medians
}

/// `jack_iodelay`'s last round trip ("   128.000 frames ... total roundtrip latency").
fn iodelay_frames(log: &str) -> Option<f64> {
    log.lines()
        .filter(|l| l.contains("total roundtrip latency"))
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .next_back()
}

/// The reference: `jack_iodelay` through PipeWire's libjack on a private PipeWire this
/// test starts, looped `jack_delay:out` -> the null sink's playback, its monitor ->
/// `jack_delay:in`, at `clock.force-quantum` = `quantum`.
pub(crate) fn iodelay_reference(quantum: u32) -> f64 {
    use engine::pipewire::{PipewireRequest, PipewireServer};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    require_tool("jack_iodelay", "jackd2");
    let server = PipewireServer::start(&PipewireRequest {
        start_timeout: Duration::from_secs(10),
        ..Default::default()
    })
    .expect("a private PipeWire");
    let libdir = engine::jack::via_pipewire::libjack_candidates()
        .into_iter()
        .find(|p| p.exists())
        .and_then(|p| p.parent().map(|d| d.to_path_buf()))
        .unwrap();
    let client = |program: &str| {
        let mut cmd = Command::new(program);
        cmd.envs(server.client_env())
            .env("LD_LIBRARY_PATH", &libdir)
            .env_remove("JACK_DEFAULT_SERVER")
            .stdin(Stdio::null());
        cmd
    };
    let ok = |mut cmd: Command| {
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{cmd:?}: {out:?}");
    };
    let mut set = client("pw-metadata");
    set.args([
        "-n",
        "settings",
        "0",
        "clock.force-quantum",
        &quantum.to_string(),
    ]);
    ok(set);
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut iod = client("stdbuf");
    iod.args(["-o0", "jack_iodelay"])
        .stdout(log.reopen().unwrap())
        .stderr(Stdio::null());
    let mut iod = iod.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    for (from, to) in [
        ("jack_delay:out", "audiolat-sink:playback_FL"),
        ("audiolat-sink:monitor_FL", "jack_delay:in"),
    ] {
        // Until jack_delay's ports exist.
        loop {
            let mut connect = client("jack_connect");
            connect
                .args([from, to])
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if connect.status().unwrap().success() {
                break;
            }
            assert!(Instant::now() < deadline, "jack_connect {from} {to} failed");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    // Until it has measured a few round trips (it prints one about every 0.5 s).
    let frames = loop {
        std::thread::sleep(Duration::from_millis(200));
        let text = std::fs::read_to_string(log.path()).unwrap_or_default();
        let n = text.matches("total roundtrip latency").count();
        if n >= 3 {
            break iodelay_frames(&text).unwrap();
        }
        assert!(
            Instant::now() < deadline + Duration::from_secs(10),
            "jack_iodelay measured nothing: {text}"
        );
    };
    // It ignores SIGINT.
    unsafe { libc::kill(iod.id() as i32, libc::SIGTERM) };
    let _ = iod.wait();
    frames
}

/// `--period 128,256`: each run records the quantum asked for and granted, its loop is
/// one granted quantum, and (the acceptance's reference) it agrees with `jack_iodelay`
/// through PipeWire's libjack on the same loop, to 0.05 frame, at both quanta.
#[test]
fn a_period_sweep_is_granted_and_agrees_with_jack_iodelay() {
    require_pipewire();
    let _m = machine_lock();
    let periods = [128, 256];
    let ours = audiolat_roundtrips(&periods);
    for (&period, ours) in periods.iter().zip(ours) {
        let reference = iodelay_reference(period);
        assert!(
            (ours - reference).abs() <= 0.05,
            "at quantum {period}: audiolat {ours} frames, jack_iodelay {reference}"
        );
    }
}
