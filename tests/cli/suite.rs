//! `audiolat suite`: doctor and every probe as one group, with its report.

use results::{RunFilter, Store};

use crate::pipewire_running::DesktopPipewire;
use crate::util::{
    has_sound_card, machine_lock, output, require_pipewire, require_tool, run_json, temp_db,
};

#[test]
fn the_suite_runs_doctor_and_every_probe_as_one_group() {
    let _m = machine_lock();
    require_tool("stress-ng", "stress-ng");
    require_tool("jackd", "jackd2");
    let (dir, db) = temp_db("s.db");
    let v = run_json(&db, &["suite", "--each", "2s", "--json"]);
    let group = v["group_id"].as_i64().unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 7, "{v}");
    assert_eq!(runs[4]["metric"], "event_latency", "{v}");
    assert_eq!(runs[5]["metric"], "roundtrip", "{v}");
    assert_eq!(runs[6]["metric"], "response_time", "{v}");
    assert!(
        runs[6]["note"]
            .as_str()
            .unwrap()
            .contains("missed the 1.41 ms deadline"),
        "{v}"
    );
    // The software loop in JACK is one period (the feedback edge), found exactly.
    assert!(
        runs[5]["note"].as_str().unwrap().starts_with("loop found"),
        "{v}"
    );
    // Without a sound card or a default JACK server, the event ran on a private dummy
    // server, and its note says where to look for something to measure.
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let default_server = std::path::Path::new(&format!("/dev/shm/jack_default_{uid}_0")).exists();
    if !has_sound_card() && !default_server {
        assert!(
            runs[4]["note"]
                .as_str()
                .unwrap()
                .contains("`audiolat devices`"),
            "{v}"
        );
    }
    assert_eq!(runs[0]["label"], "doctor");
    for r in runs {
        assert_eq!(r["status"], "complete", "{r}");
    }
    // The suite ends by writing its report beside the database.
    let report = std::path::PathBuf::from(v["report"].as_str().unwrap());
    assert_eq!(
        report,
        dir.path().join(format!("s-report-suite-{group}.html"))
    );
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("Doctor's findings") && html.contains("<svg"));
    let listed = run_json(&db, &["runs", "--group", &group.to_string(), "--json"]);
    let probes: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["probe"].as_str().unwrap())
        .collect();
    assert_eq!(
        probes,
        [
            "net",
            "roundtrip",
            "event",
            "jitter",
            "jitter",
            "jitter",
            "doctor"
        ]
    );
    // The loaded runs recorded their load's exact commands and versions.
    let store = Store::open_existing(&db).unwrap();
    let loaded = store
        .list_runs(&RunFilter {
            group_id: Some(results::GroupId(group)),
            ..RunFilter::default()
        })
        .unwrap();
    let specs: Vec<&str> = loaded
        .iter()
        .filter_map(|r| r.load["spec"].as_str())
        .collect();
    assert_eq!(specs, ["none", "none", "none", "io", "cpu", "none", "none"]);
    let cpu = &loaded[4].load["processes"][0];
    assert!(cpu["command"].as_str().unwrap().contains("stress-ng --cpu"));
    assert!(cpu["version"]
        .as_str()
        .unwrap()
        .starts_with("stress-ng, version"));
}

/// On a desktop whose audio server is PipeWire (one started by the test, outside
/// audiolat, its default sink a null sink; no jackd), the suite measures that PipeWire:
/// the event latency and the round trip through its JACK API and through native streams,
/// four runs on the running server (not a private one), each round trip one quantum of
/// its graph (the quantum it runs: the suite forces none), and PipeWire's event model.
#[test]
fn on_a_pipewire_desktop_the_suite_measures_pipewire_through_both_apis() {
    require_pipewire();
    let _m = machine_lock();
    let desktop = DesktopPipewire::start();
    let (_dir, db) = temp_db("spw.db");
    let out = output(&mut desktop.audiolat(&db, &["suite", "--each", "2s", "--json"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    let runs = v["runs"].as_array().unwrap();
    let labels: Vec<&str> = runs.iter().map(|r| r["label"].as_str().unwrap()).collect();
    let on_pipewire = [
        "event latency, sine, asap, PipeWire (JACK API)",
        "round trip, PipeWire sink's monitor (JACK API)",
        "event latency, sine, asap, PipeWire (native)",
        "round trip, PipeWire sink's monitor (native)",
    ];
    for label in on_pipewire {
        let r = runs
            .iter()
            .find(|r| r["label"] == label)
            .unwrap_or_else(|| panic!("no `{label}` in {labels:?}"));
        assert_eq!(r["status"], "complete", "{r}");
        let id = r["run_id"].as_i64().unwrap().to_string();
        let stored = run_json(&db, &["show", &id, "--json"]);
        let server = &stored["run"]["config"]["server"];
        assert_eq!(server["private"], false, "{label}: {server}");
        let socket = desktop.socket().display().to_string();
        // The record names the running server's socket (in its name or its version).
        assert!(server.to_string().contains(&socket), "{label}: {server}");
        let quantum = stored["run"]["result"]["period_frames"].as_f64().unwrap();
        if label.starts_with("round trip") {
            let median = stored["run"]["result"]["roundtrip_frames"]["median"]
                .as_f64()
                .expect("a median");
            assert!(
                (median - quantum).abs() <= 0.05,
                "{label}: {median} frames, not the quantum {quantum}"
            );
        } else {
            // PipeWire's model: the sink's quantum the ports do not report is counted.
            assert_eq!(
                stored["run"]["result"]["unreported_sink_frames"], quantum as u64,
                "{label}"
            );
        }
    }
    assert!(
        !labels.contains(&"round trip, JACK software loop"),
        "{labels:?}"
    );
}
