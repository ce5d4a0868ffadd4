//! `roundtrip --find-min-buffer` on PipeWire: each quantum forced in turn, through the
//! JACK API and natively (`--backend pipewire`), on a private PipeWire and on the user's
//! running one. The verdict names the smallest quantum that held (no under-run, no
//! skipped cycle, a loop of one granted quantum) and the first that did not, and the
//! user's `clock.force-quantum` is back after the search.

use serde_json::Value;

use crate::pipewire::{assert_graph_record, assert_nothing_left, assert_pipewire_server};
use crate::pipewire_running::DesktopPipewire;
use crate::util::{machine_lock, output, require_pipewire, run_json, temp_db};

/// The quanta the searches try, largest first.
const QUANTA: [u32; 3] = [2048, 256, 32];

/// A search's JSON `v` (its runs stored in `db`): the runs go down from the largest
/// quantum, each asked = granted = its period (and `check_server` holds for the stored
/// server); every run before the first that failed ran complete, with no xrun and no
/// skipped cycle and a loop of one quantum; the search stopped at the first that failed,
/// and the verdict names both. Returns the smallest quantum that held.
fn check_search(db: &std::path::Path, v: &Value, check_server: &dyn Fn(&Value)) -> u32 {
    let runs = v["runs"].as_array().expect("runs");
    assert!(!runs.is_empty() && runs.len() <= QUANTA.len(), "{v}");
    let failing = &v["min_buffer"]["first_failing"];
    if failing.is_null() {
        assert_eq!(runs.len(), QUANTA.len(), "every quantum held: {v}");
    }
    let mut held = None;
    for (i, (r, &quantum)) in runs.iter().zip(&QUANTA).enumerate() {
        let result = &r["result"];
        assert_eq!(result["period_frames"], quantum, "{result}");
        let run_id = r["run_id"].as_i64().unwrap();
        let stored = run_json(db, &["show", &run_id.to_string(), "--json"]);
        let server = &stored["run"]["config"]["server"];
        check_server(server);
        assert_eq!(server["quantum_asked_frames"], quantum, "{server}");
        assert_eq!(server["quantum_granted_frames"], quantum, "{server}");
        if failing["run_id"] == run_id {
            // The search stops at the first setting that did not hold.
            assert_eq!(i + 1, runs.len(), "the search went on after a failure: {v}");
            assert_eq!(failing["period_frames"], quantum, "{v}");
            continue;
        }
        assert_eq!(r["status"], "complete", "{r}");
        assert_eq!(result["xruns"], 0, "{result}");
        assert_eq!(result["skipped_cycles"], 0, "{result}");
        let frames = &result["roundtrip_frames"];
        assert!(frames["count"].as_u64().unwrap_or(0) >= 3, "{result}");
        let median = frames["median"].as_f64().expect("a median");
        assert!(
            (median - f64::from(quantum)).abs() <= 0.05,
            "median {median} frames, not the granted quantum {quantum}: {r}"
        );
        held = Some((quantum, run_id));
    }
    let (quantum, run_id) = held.unwrap_or_else(|| panic!("no quantum held: {v}"));
    let smallest = &v["min_buffer"]["smallest_holding"];
    assert_eq!(smallest["run_id"], run_id, "{v}");
    assert_eq!(smallest["period_frames"], quantum, "{v}");
    assert_eq!(smallest["quantum_granted_frames"], quantum, "{v}");
    quantum
}

/// The search on a private PipeWire (`--server pipewire`), through the JACK API and
/// natively: every run records the private server with force-quantum 0 before and
/// after, and leaves nothing running.
#[test]
fn find_min_buffer_on_a_private_pipewire_names_the_smallest_quantum_that_held() {
    require_pipewire();
    let _m = machine_lock();
    let list = QUANTA.map(|q| q.to_string()).join(",");
    for native in [false, true] {
        let (_dir, db) = temp_db("pwmin.db");
        let mut args = vec!["roundtrip", "--server", "pipewire", "--find-min-buffer"];
        if native {
            args.extend(["--backend", "pipewire"]);
        }
        args.extend(["--period", &list, "--duration", "1s", "--json"]);
        let v = run_json(&db, &args);
        check_search(&db, &v, &|server| assert_pipewire_server(server));
        for r in v["runs"].as_array().unwrap() {
            let run_id = r["run_id"].as_i64().unwrap();
            let stored = run_json(&db, &["show", &run_id.to_string(), "--json"]);
            assert_graph_record(&stored["run"]);
            assert_nothing_left(&db, run_id);
        }
    }
}

/// The search on the user's running PipeWire (`--server auto`), through the JACK API
/// and natively, each quantum forced in turn: the user's own `clock.force-quantum` (512)
/// is back after each search.
#[test]
fn find_min_buffer_on_a_running_pipewire_restores_the_users_force_quantum() {
    require_pipewire();
    let _m = machine_lock();
    let desktop = DesktopPipewire::start();
    desktop.metadata(&["clock.force-quantum", "512"]);
    desktop.wait_for("512");
    let list = QUANTA.map(|q| q.to_string()).join(",");
    for backend in [&[][..], &["--backend", "pipewire"][..]] {
        let (_dir, db) = temp_db("pwminr.db");
        let mut args = vec!["roundtrip", "--server", "auto", "--find-min-buffer"];
        args.extend_from_slice(backend);
        args.extend(["--period", &list, "--duration", "1s", "--json"]);
        let out = output(&mut desktop.audiolat(&db, &args));
        assert_eq!(out.code, 0, "{}", out.stderr);
        let v: Value = serde_json::from_str(&out.stdout).expect("JSON");
        check_search(&db, &v, &|server| {
            assert_eq!(server["name"], "pipewire-0", "{server}");
            assert_eq!(server["private"], false, "{server}");
        });
        assert_eq!(
            desktop.force_quantum(),
            "512",
            "the user's force-quantum not restored after {backend:?}"
        );
    }
}
