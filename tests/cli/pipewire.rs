//! `--server pipewire`: audiolat's JACK client on a private headless PipeWire, through
//! PipeWire's libjack. The round trip through the null sink is one quantum of the graph
//! (PipeWire's default, 1024 frames), the server is recorded with its versions, and
//! nothing of it is left after the run; the event probe stores every trigger.

use results::Store;
use serde_json::Value;

use crate::util::{machine_lock, private_pipewire_pids, require_pipewire, run, run_json, temp_db};

/// PipeWire's default quantum: the graph's cycle when no client asks for another.
const DEFAULT_QUANTUM_FRAMES: f64 = 1024.0;

/// The stored server of a run is the private PipeWire, with its versions.
fn assert_pipewire_server(server: &Value) {
    assert_eq!(server["name"], "pipewire-0", "{server}");
    assert_eq!(server["private"], true, "{server}");
    let version = server["version"].as_str().unwrap_or_default();
    assert!(version.starts_with("PipeWire "), "{server}");
    assert!(version.contains(", WirePlumber "), "{server}");
    assert!(!version.contains("unknown"), "{server}");
    let command = server["command_line"].as_str().unwrap_or_default();
    assert!(command.starts_with("pipewire -c "), "{server}");
}

/// No process of the run's private PipeWire (they carry the run's audiolat pid) and no
/// private directory of it is left.
fn assert_nothing_left(db: &std::path::Path, run_id: i64) {
    let v = run_json(db, &["show", &run_id.to_string(), "--json"]);
    let pid = v["run"]["pid"].as_u64().expect("the run's pid") as u32;
    let left = private_pipewire_pids(pid);
    assert!(
        left.is_empty(),
        "processes of the private PipeWire left: {left:?}"
    );
    let dirs: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("audiolat-pipewire-{pid}-"))
        })
        .map(|e| e.path())
        .collect();
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
                .contains(&format!("--server pipewire runs JACK clients on a private PipeWire: use it with --backend jack, not --backend {backend}")),
            "{}",
            out.stderr
        );
    }
    assert!(!db.exists(), "nothing stored");
}
