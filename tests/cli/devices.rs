//! What can be measured here: `audiolat devices`, and ALSA through alsa-lib's jack PCM.

use std::path::Path;

use results::Store;
use serde_json::Value;

use crate::util::{
    self, has_sound_card, jackd_pids, machine_lock, require_tool, run, run_json, temp_db,
    unique_server, DummyJackd,
};

/// `audiolat devices` here: no sound card on CI's machines (it says so, and still lists
/// the private JACK server, ALSA's jack PCM and the virtual card), and a JACK server this
/// test starts is listed with its rate, period and ports, and the flags that use it.
#[test]
fn devices_lists_what_can_be_measured_here() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let (dir, db) = temp_db("devices.db");
    let has_card = has_sound_card();
    let out = run(&db, &["devices"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for flags in ["--backend virtual", "--backend jack"] {
        assert!(
            out.stdout.lines().any(|l| l.trim() == flags),
            "{flags}:\n{}",
            out.stdout
        );
    }
    let v = run_json(&db, &["devices", "--json"]);
    let cards = v["alsa"]["cards"].as_array().expect("a list of cards");
    if !has_card {
        assert!(out.stdout.contains("no sound card"), "{}", out.stdout);
        assert!(cards.is_empty(), "{v}");
        let args = util::suggested_args(&v);
        assert!(args.contains(&"--backend alsa --device jack"), "{args:?}");
    }
    for s in v["suggestions"].as_array().unwrap() {
        assert!(s["args"].as_str().unwrap().starts_with("--backend "), "{s}");
        assert!(!s["probes"].as_array().unwrap().is_empty(), "{s}");
    }
    assert!(v["servers"]["pipewire"]["running"].is_boolean(), "{v}");

    // A JACK server: listed with what it runs and its physical ports.
    let jackd = DummyJackd::start("devices", 48000, 256);
    let name = jackd.name().to_string();
    let v = run_json(&db, &["devices", "--json"]);
    let server = v["servers"]["jack"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name.as_str())
        .unwrap_or_else(|| panic!("{name} is not listed: {v}"));
    assert_eq!(server["answers"], true, "{server}");
    assert_eq!(server["rate_hz"], 48000, "{server}");
    assert_eq!(server["period_frames"], 256, "{server}");
    assert_eq!(
        server["pid"].as_u64(),
        Some(u64::from(jackd.pid())),
        "{server}"
    );
    assert_eq!(
        server["playback_ports"],
        serde_json::json!(["system:playback_1", "system:playback_2"])
    );
    assert_eq!(
        server["capture_ports"],
        serde_json::json!(["system:capture_1", "system:capture_2"])
    );
    let args = util::suggested_args(&v);
    let external = format!("--backend jack --server external --server-name {name}");
    assert!(args.contains(&external.as_str()), "{args:?}");
    let text = run(&db, &["devices"]).stdout;
    assert!(
        text.contains(&format!("JACK `{name}`")) && text.contains("system:playback_1"),
        "{text}"
    );
    // The flags it gives work: an event run on that server.
    let mut flags: Vec<&str> = vec!["event"];
    flags.extend(external.split(' '));
    flags.extend(["--triggers", "3", "--quiet"]);
    let out = run(&db, &flags);
    assert_eq!(out.code, 0, "{flags:?}: {}", out.stderr);
    jackd.stop();
    // Listing stores nothing.
    let other = dir.path().join("untouched.db");
    assert_eq!(run(&other, &["devices"]).code, 0);
    assert!(!other.exists(), "devices wrote a database");
}

/// ALSA for real, through alsa-lib's jack PCM on a private dummy server (what audiolat
/// uses without a sound card): the event probe and the round trip run under CPU load,
/// with the granted buffer and period stored with each run and the under-runs counted.
#[test]
fn alsa_through_the_jack_pcm_runs_event_and_roundtrip_under_load() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    require_tool("stress-ng", "stress-ng");
    if !std::path::Path::new("/usr/lib/x86_64-linux-gnu/alsa-lib/libasound_module_pcm_jack.so")
        .exists()
    {
        eprintln!(
            "skipped: alsa-lib's jack plugin is not installed (apt install libasound2-plugins)"
        );
        return;
    }
    let (_dir, db) = temp_db("alsa.db");
    let name = unique_server("alsa");
    let v = run_json(
        &db,
        &[
            "event",
            "--backend",
            "alsa",
            "--server",
            "dummy",
            "--server-name",
            &name,
            "--period",
            "256",
            "--periods",
            "3",
            "--triggers",
            "20",
            "--load",
            "cpu",
            "--json",
        ],
    );
    let r = &v["runs"][0];
    assert_eq!(r["status"], "complete", "{r}");
    assert_eq!(r["result"]["backend"], "alsa");
    assert_eq!(r["result"]["model"], "push");
    assert!(
        r["result"]["underruns"]["start"].is_u64() && r["result"]["underruns"]["steady"].is_u64()
    );
    assert_eq!(r["triggers"].as_array().unwrap().len(), 20);
    let store = Store::open_existing(&db).unwrap();
    let run = store
        .run(results::RunId(r["run_id"].as_i64().unwrap()))
        .unwrap();
    let granted = &run.config["granted"];
    assert_eq!(granted["period_frames"], 256, "{granted}");
    assert_eq!(granted["buffer_frames"], 768, "{granted}");
    assert_eq!(granted["format"], "FLOAT_LE");
    assert_eq!(granted["access"], "RW_INTERLEAVED");
    assert_eq!(run.load["spec"], "cpu");
    assert!(
        jackd_pids(&name).is_empty(),
        "the private jackd was stopped"
    );

    let v = run_json(
        &db,
        &[
            "roundtrip",
            "--backend",
            "alsa",
            "--server",
            "dummy",
            "--server-name",
            &name,
            "--period",
            "128",
            "--duration",
            "2s",
            "--impulses",
            "2",
            "--load",
            "cpu",
            "--json",
        ],
    );
    let r = &v["runs"][0];
    assert_eq!(r["status"], "complete", "{r}");
    let result = &r["result"];
    assert!(
        result["verdict"]
            .as_str()
            .unwrap()
            .starts_with("loop found"),
        "{result}"
    );
    assert!(result["xruns"].is_u64() && result["skipped_cycles"].is_u64());
    // The loop through the jack PCM and audiolat's loop client is a whole number of
    // periods, the same in every valid window, unless the path itself changed: the jack
    // PCM can run dry under load and come back a period later without an under-run
    // reported. Then the probe must say so: a step between windows, a whole number of
    // periods, in the result, the flags, the events and the verdict.
    let frames = &result["roundtrip_frames"];
    let (min, max) = (
        frames["min"].as_f64().unwrap(),
        frames["max"].as_f64().unwrap(),
    );
    let whole_periods = |f: f64| (f / 128.0 - (f / 128.0).round()).abs() < 1e-3;
    assert!(whole_periods(min) && whole_periods(max), "{frames}");
    let changes = result["delay_changes"].as_array().unwrap();
    let run = store
        .run(results::RunId(r["run_id"].as_i64().unwrap()))
        .unwrap();
    assert_eq!(run.flags["delay_changes"], changes.len(), "{result}");
    if changes.is_empty() {
        assert!(max - min < 1e-3, "{frames}");
    } else {
        eprintln!("the loop's delay changed mid-run: {changes:?}");
        for c in changes {
            let (from, to) = (
                c["from_frames"].as_f64().unwrap(),
                c["to_frames"].as_f64().unwrap(),
            );
            assert!(whole_periods(from) && whole_periods(to), "{c}");
        }
        assert!(
            result["verdict"]
                .as_str()
                .unwrap()
                .contains("the loop's delay changed"),
            "{result}"
        );
        let steps = store
            .event_counts(run.id)
            .unwrap()
            .into_iter()
            .find(|(k, _)| k == "delay_change")
            .map_or(0, |(_, n)| n);
        assert_eq!(steps as usize, changes.len());
    }
    assert_eq!(run.config["granted"]["period_frames"], 128);
    assert_eq!(run.config["granted"]["capture_channels"], 1);
    // The jack PCM cannot be linked: it says so, and how the two directions started is
    // measured instead (their skew read from the pointers on the first period).
    assert_eq!(r["granted"]["linked"], false, "{}", r["granted"]);
    assert!(r["granted"]["link_error"].is_string(), "{}", r["granted"]);
    let start = &result["duplex_start"];
    assert_eq!(start["linked"], false, "{start}");
    assert!(start["starts"].as_u64().unwrap() >= 1, "{start}");
    assert!(
        jackd_pids(&name).is_empty(),
        "the private jackd was stopped"
    );
}

/// The README's ALSA example (`event --backend alsa --period 128 --periods 3 --load cpu`)
/// through the jack PCM: the table's buffer is what the device granted (3 x 128 = 384
/// frames, as the answer says it, with a note that a note plays behind 256 of them), and
/// no callback starts before its cycle (the jack PCM stamps its status after the
/// wake-up: a start taken from it as it is came out after the callback, "late cb -370
/// ns").
#[test]
fn alsa_event_shows_the_granted_buffer_and_no_callback_before_its_cycle() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    require_tool("stress-ng", "stress-ng");
    if !std::path::Path::new("/usr/lib/x86_64-linux-gnu/alsa-lib/libasound_module_pcm_jack.so")
        .exists()
    {
        eprintln!(
            "skipped: alsa-lib's jack plugin is not installed (apt install libasound2-plugins)"
        );
        return;
    }
    let (_dir, db) = temp_db("alsa-buffer.db");
    let name = unique_server("alsabuf");
    let out = run(
        &db,
        &[
            "event",
            "--backend",
            "alsa",
            "--server",
            "dummy",
            "--server-name",
            &name,
            "--period",
            "128",
            "--periods",
            "3",
            "--load",
            "cpu",
            "--triggers",
            "30",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let head = out
        .stdout
        .lines()
        .find(|l| l.starts_with("run ") && l.contains("buffer"))
        .unwrap();
    let row = out
        .stdout
        .lines()
        .skip_while(|l| *l != head)
        .nth(1)
        .unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    let at = |name: &str| {
        head.split_whitespace()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no {name} in {head}"))
    };
    assert_eq!(cells[at("period")], "128", "{row}");
    assert_eq!(cells[at("buffer")], "384", "{}", out.stdout);
    assert!(
        out.stdout
            .contains("buffer 384 frames, as the device granted; a note plays behind 256 of them"),
        "{}",
        out.stdout
    );
    let shown = run_json(&db, &["show", "last", "--json"]);
    let triggers = shown["triggers"].as_array().unwrap();
    assert!(!triggers.is_empty());
    let early: Vec<&Value> = triggers
        .iter()
        .filter(|t| t["lateness_ns"].as_i64().is_some_and(|l| l < 0))
        .collect();
    assert!(early.is_empty(), "callbacks before their cycle: {early:?}");
}

/// The README's virtual-card example, as written (`event --backend virtual --policy
/// fixed`, no loopback asked for): the card plays only, so no loopback is looked for
/// and none is said missing; the run is complete with its notes at their fixed time.
#[test]
fn the_readmes_virtual_event_example_runs_without_a_loopback() {
    let _m = machine_lock();
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    assert!(readme.contains("\naudiolat event --backend virtual --policy fixed\n"));
    let (_dir, db) = temp_db("virtual-event.db");
    let out = run(&db, &["event", "--backend", "virtual", "--policy", "fixed"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains("no onset found"), "{}", out.stdout);
    assert!(!out.stdout.contains("loopback"), "{}", out.stdout);
    let shown = run_json(&db, &["show", "last", "--json"]);
    assert_eq!(shown["run"]["status"], "complete");
    assert!(
        shown["run"]["result"]["capture_port"].is_null(),
        "{}",
        shown["run"]["result"]
    );
    let triggers = shown["triggers"].as_array().unwrap();
    assert_eq!(triggers.len(), 100);
    assert!(triggers.iter().all(|t| t["measured_ns"].is_null()));
}
