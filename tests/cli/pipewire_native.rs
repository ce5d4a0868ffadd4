//! `--backend pipewire`: native `pw_stream`s on a private headless PipeWire. The round
//! trip through the null sink and its monitor is one granted quantum and agrees with
//! `jack_iodelay` through PipeWire's libjack; the event probe follows the native timing
//! model; `compare` puts a JACK-API run and a native run side by side.

use crate::pipewire::{
    assert_graph_record, assert_nothing_left, assert_pipewire_server, iodelay_reference,
    roundtrip_frames,
};
use crate::pipewire_running::{state_file, DesktopPipewire};
use crate::util::{
    command, machine_lock, private_pipewire_pids, require_pipewire, run, run_json, temp_db,
    wait_timeout,
};

/// The native round trip at `--period 128,256`: two runs, each recording the quantum
/// asked for and granted, whose loop is one granted quantum (median and mean within
/// 0.05 frame) and equals `jack_iodelay` through PipeWire's libjack on the same loop at
/// the same quantum, to 0.05 frame.
#[test]
fn native_roundtrip_is_one_granted_quantum_and_agrees_with_jack_iodelay() {
    require_pipewire();
    let _m = machine_lock();
    let (_dir, db) = temp_db("pwn.db");
    let periods = [128u32, 256];
    let v = run_json(
        &db,
        &[
            "roundtrip",
            "--backend",
            "pipewire",
            "--server",
            "pipewire",
            "--period",
            "128,256",
            "--duration",
            "2s",
            "--json",
        ],
    );
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2, "{v}");
    for (r, &period) in runs.iter().zip(&periods) {
        assert_eq!(r["status"], "complete", "{r}");
        let result = &r["result"];
        assert_eq!(result["backend"], "pipewire", "{result}");
        assert_eq!(result["period_frames"], period, "{result}");
        let run_id = r["run_id"].as_i64().unwrap();
        let stored = run_json(&db, &["show", &run_id.to_string(), "--json"]);
        let server = &stored["run"]["config"]["server"];
        assert_pipewire_server(server);
        assert_graph_record(&stored["run"]);
        assert_eq!(server["quantum_asked_frames"], period, "{server}");
        assert_eq!(server["quantum_granted_frames"], period, "{server}");
        let (median, mean) = roundtrip_frames(result);
        for (stat, got) in [("median", median), ("mean", mean)] {
            assert!(
                (got - f64::from(period)).abs() <= 0.05,
                "{stat} {got} frames, not the granted quantum {period}: {r}"
            );
        }
        assert_nothing_left(&db, run_id);
        let reference = iodelay_reference(period);
        assert!(
            (median - reference).abs() <= 0.05,
            "at quantum {period}: native {median} frames, jack_iodelay {reference}"
        );
    }
}

/// The native event model is PipeWire's (see `pipewire_event`): a note's first frame
/// reaches the sink at the cycle's `now` + its offset / rate + the stream's `delay` (0 on
/// a null sink) + the sink's quantum, which the stream does not report (the sink takes a
/// cycle's output in the next one). `fixed` is two quanta for every trigger, to a frame;
/// the `asap` mean is a quantum and a half, within a quarter of a quantum; and the model
/// agrees with the onset in the sink's monitor (`--loopback monitor`), median within a
/// frame, at quanta of 128 and 256.
#[test]
fn native_event_agrees_with_the_pipewire_model_and_the_monitor() {
    require_pipewire();
    let _m = machine_lock();
    for quantum in [128, 256] {
        crate::pipewire_event::check_event_model(quantum, true);
    }
}

/// The same loop through the JACK API and through native streams, at the same quantum:
/// `compare` prints both side by side, and they agree within 0.05 frame (one graph, two
/// APIs).
#[test]
fn compare_puts_the_jack_api_and_native_round_trips_side_by_side() {
    require_pipewire();
    let _m = machine_lock();
    let (_dir, db) = temp_db("pwcmp.db");
    let mut ids = Vec::new();
    for backend in ["jack", "pipewire"] {
        let v = run_json(
            &db,
            &[
                "roundtrip",
                "--backend",
                backend,
                "--server",
                "pipewire",
                "--period",
                "256",
                "--duration",
                "2s",
                "--json",
            ],
        );
        let r = &v["runs"][0];
        assert_eq!(r["status"], "complete", "{r}");
        ids.push(r["run_id"].as_i64().unwrap().to_string());
        // Each API's own count is recorded with the run's validity, the other's is
        // absent (null), never 0: the native cycles whose capture had not arrived (few:
        // the capture runs in the same graph cycle), the JACK client's frame-count
        // restarts (PipeWire's libjack restarts it).
        let stored = run_json(&db, &["show", &ids[ids.len() - 1], "--json"]);
        let flags = &stored["run"]["flags"];
        let cycles = r["result"]["cycles"].as_u64().expect("cycles");
        let (counted, absent) = if backend == "jack" {
            ("frame_count_restarts", "unmatched_captures")
        } else {
            ("unmatched_captures", "frame_count_restarts")
        };
        let n = flags[counted].as_u64().unwrap_or_else(|| panic!("{flags}"));
        assert!(
            n * 20 <= cycles,
            "{counted} {n} of {cycles} cycles: {flags}"
        );
        assert!(flags[absent].is_null(), "{flags}");
    }
    let v = run_json(&db, &["compare", &ids[0], &ids[1], "--json"]);
    let rows = v["rows"].as_array().expect("rows");
    let row = |stat: &str| {
        rows.iter()
            .find(|r| r["metric"] == "roundtrip" && r["statistic"] == stat)
            .unwrap_or_else(|| panic!("no roundtrip {stat}: {v}"))
    };
    for stat in ["mean", "p50"] {
        let r = row(stat);
        let config = r["configuration"].as_str().unwrap();
        assert!(
            config.contains("backend=jack") && config.contains("backend=pipewire"),
            "{config}"
        );
        let (a, b) = (r["a"].as_f64().unwrap(), r["b"].as_f64().unwrap());
        let frames = |ns: f64| ns * 48_000.0 / 1e9;
        assert!(
            (frames(a) - 256.0).abs() <= 0.05,
            "JACK API {stat} {} frames",
            frames(a)
        );
        assert!(
            (frames(b) - frames(a)).abs() <= 0.05,
            "{stat}: JACK API {} frames, native {} frames",
            frames(a),
            frames(b)
        );
    }
    let text = run(&db, &["compare", &ids[0], &ids[1]]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(
        text.stdout.contains("backend=jack") && text.stdout.contains("backend=pipewire"),
        "{}",
        text.stdout
    );
}

/// Bad input for the native backend: one line naming the fix, exit 2, nothing stored.
#[test]
fn native_refusals_name_the_fix() {
    let (_dir, db) = temp_db("pwnno.db");
    let cases: [(&[&str], &str); 2] = [
        (
            &["roundtrip", "--backend", "pipewire", "--server", "dummy"],
            "--backend pipewire runs on --server pipewire (a private PipeWire), external (yours) or auto",
        ),
        (
            &["roundtrip", "--backend", "pipewire", "--capture", "x:y"],
            "with --backend pipewire, the streams play to the sink and capture its monitor",
        ),
    ];
    for (args, said) in cases {
        let out = run(&db, args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(said), "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    }
    // --period on the user's PipeWire, which is not running here.
    let out = run(
        &db,
        &[
            "roundtrip",
            "--backend",
            "pipewire",
            "--server",
            "external",
            "--period",
            "128",
        ],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("no PipeWire socket at "),
        "{}",
        out.stderr
    );
    assert!(!db.exists(), "nothing stored");
}

/// The private PipeWire killed mid-run (SIGKILL to its daemon; WirePlumber follows it):
/// the run ends `interrupted` with the server's end as its reason, the triggers measured
/// before it are kept, and nothing of the server is left.
#[test]
fn a_killed_private_pipewire_interrupts_the_native_run_and_keeps_its_triggers() {
    require_pipewire();
    let _m = machine_lock();
    let (_dir, db) = temp_db("pwnkill.db");
    let mut child = command(
        &db,
        &[
            "event",
            "--backend",
            "pipewire",
            "--server",
            "pipewire",
            "--triggers",
            "400",
            "--spacing",
            "50ms",
            "--json",
        ],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let pid = child.id();
    // Until the run has measured some triggers (after the server and the warm-up).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let daemon = loop {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let daemon = private_pipewire_pids(pid).into_iter().find(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "pipewire")
        });
        assert!(std::time::Instant::now() < deadline, "no private PipeWire");
        if let Some(d) = daemon {
            break d;
        }
    };
    std::thread::sleep(std::time::Duration::from_secs(3));
    // SAFETY: killing the private PipeWire this run started.
    unsafe { libc::kill(daemon as i32, libc::SIGKILL) };
    let status = wait_timeout(&mut child, std::time::Duration::from_secs(20));
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("PipeWire"), "{stderr}");
    let v = crate::util::parse_json(&out.stdout);
    let r = &v["runs"][0];
    assert_eq!(r["status"], "interrupted", "{r}");
    let kept = r["triggers"].as_array().map_or(0, Vec::len);
    assert!(kept > 0 && kept < 400, "{kept} triggers kept");
    let run_id = r["run_id"].as_i64().unwrap();
    let stored = run_json(&db, &["show", &run_id.to_string(), "--json"]);
    assert_eq!(stored["run"]["status"], "interrupted");
    assert_nothing_left(&db, run_id);
}

/// A native event run on the desktop's PipeWire with `--period`, spawned, once its
/// quantum is forced and it has measured for 3 s.
fn spawn_native_event(
    desktop: &DesktopPipewire,
    db: &std::path::Path,
    period: &str,
) -> std::process::Child {
    let mut cmd = desktop.audiolat(
        db,
        &[
            "event",
            "--backend",
            "pipewire",
            "--server",
            "auto",
            "--period",
            period,
            "--triggers",
            "400",
            "--spacing",
            "50ms",
            "--json",
        ],
    );
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().expect("audiolat");
    desktop.wait_for(period);
    assert!(state_file(child.id()).exists());
    std::thread::sleep(std::time::Duration::from_secs(3));
    child
}

/// No node of audiolat's streams (`audiolat`, `audiolat-capture`) is left on the
/// desktop's PipeWire.
fn assert_no_native_nodes(desktop: &DesktopPipewire) {
    let out = std::process::Command::new("pw-cli")
        .envs(desktop.server().client_env())
        .args(["ls", "Node"])
        .output()
        .expect("pw-cli");
    let nodes = String::from_utf8_lossy(&out.stdout);
    for ours in ["\"audiolat\"", "\"audiolat-capture\""] {
        assert!(
            !nodes.contains(&format!("node.name = {ours}")),
            "{ours} left: {nodes}"
        );
    }
}

/// The triggers an event run kept (its stdout's JSON), checked stored as `status`.
fn kept_triggers(out: &std::process::Output, db: &std::path::Path, status: &str) -> usize {
    let v = crate::util::parse_json(&out.stdout);
    let r = &v["runs"][0];
    assert_eq!(r["status"], status, "{r}");
    let run_id = r["run_id"].as_i64().unwrap().to_string();
    let stored = run_json(db, &["show", &run_id, "--json"]);
    assert_eq!(stored["run"]["status"], status, "{stored}");
    r["triggers"].as_array().map_or(0, Vec::len)
}

/// Ctrl-C in the middle of a native run on the user's running PipeWire, whose own
/// `clock.force-quantum` is 512: exit 130, the run `interrupted` with the triggers it
/// measured, the user's 512 back, audiolat's state file gone, none of its nodes left.
#[test]
fn ctrl_c_mid_native_run_on_a_running_pipewire_restores_its_quantum_and_keeps_triggers() {
    require_pipewire();
    let _m = machine_lock();
    let desktop = DesktopPipewire::start();
    desktop.metadata(&["clock.force-quantum", "512"]);
    let (_dir, db) = temp_db("pwnint.db");
    let child = spawn_native_event(&desktop, &db, "128");
    let pid = child.id();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let mut child = child;
    let status = wait_timeout(&mut child, std::time::Duration::from_secs(60));
    let out = child.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(130), "{out:?}");
    let kept = kept_triggers(&out, &db, "interrupted");
    assert!(kept > 0 && kept < 400, "{kept} triggers kept");
    assert_eq!(
        desktop.force_quantum(),
        "512",
        "the user's value not restored"
    );
    assert!(!state_file(pid).exists());
    assert_no_native_nodes(&desktop);
}

/// WirePlumber (the session manager that linked the streams) killed under a native run
/// on the user's running PipeWire: the run ends, interrupted with the PipeWire's reason
/// or complete, either way with the triggers it measured; the quantum it forced is
/// restored (the settings live in PipeWire, not WirePlumber) and none of its nodes is
/// left.
#[test]
fn killing_wireplumber_under_native_streams_ends_the_run_honestly_and_leaves_nothing() {
    require_pipewire();
    let _m = machine_lock();
    let desktop = DesktopPipewire::start();
    let (_dir, db) = temp_db("pwnwp.db");
    let mut child = spawn_native_event(&desktop, &db, "256");
    let pid = child.id();
    let wireplumber = desktop.server().info().pids.wireplumber;
    // SAFETY: killing the WirePlumber of the test's own PipeWire.
    unsafe { libc::kill(wireplumber as i32, libc::SIGKILL) };
    let status = wait_timeout(&mut child, std::time::Duration::from_secs(60));
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let kept = match status.code() {
        Some(0) => kept_triggers(&out, &db, "complete"),
        Some(1) => {
            assert!(stderr.contains("PipeWire"), "{stderr}");
            kept_triggers(&out, &db, "interrupted")
        }
        other => panic!("exit {other:?}: {stderr}"),
    };
    assert!(kept > 0, "no trigger kept: {stderr}");
    eprintln!(
        "WirePlumber killed: exit {:?}, {kept} triggers kept; {stderr}",
        status.code()
    );
    assert_eq!(desktop.force_quantum(), "0", "not restored");
    assert!(!state_file(pid).exists());
    assert_no_native_nodes(&desktop);
}

/// A running PipeWire is recorded alike by the JACK API and by native streams (with no
/// quantum asked, so no JACK client at all): the same name (its socket's), the same
/// version text (PipeWire's and WirePlumber's versions, where it runs) but for how
/// audiolat reached it, and the quantum granted (the streams' own measure for native).
#[test]
fn native_and_jack_api_runs_record_a_running_pipewire_alike() {
    require_pipewire();
    let _m = machine_lock();
    let desktop = DesktopPipewire::start();
    let (_dir, db) = temp_db("pwnrec.db");
    let mut servers = Vec::new();
    for backend in ["jack", "pipewire"] {
        let args = [
            "roundtrip",
            "--backend",
            backend,
            "--server",
            "auto",
            "--duration",
            "2s",
            "--json",
        ];
        let out = crate::util::output(&mut desktop.audiolat(&db, &args));
        assert_eq!(out.code, 0, "{}", out.stderr);
        let v = crate::util::parse_json(&out.stdout);
        let run_id = v["runs"][0]["run_id"].as_i64().unwrap().to_string();
        let stored = run_json(&db, &["show", &run_id, "--json"]);
        servers.push(stored["run"]["config"]["server"].clone());
    }
    let (jack, native) = (&servers[0], &servers[1]);
    assert_eq!(jack["name"], "pipewire-0", "{jack}");
    for key in [
        "name",
        "private",
        "quantum_asked_frames",
        "quantum_granted_frames",
    ] {
        assert_eq!(jack[key], native[key], "{key}: {jack} {native}");
    }
    let running_at = format!("(running at {}, ", desktop.socket().display());
    let version = |s: &serde_json::Value| s["version"].as_str().unwrap_or_default().to_string();
    let (jv, nv) = (version(jack), version(native));
    let head = |v: &str| v.split(&running_at).next().unwrap_or_default().to_string();
    assert!(
        jv.contains(&running_at) && nv.contains(&running_at),
        "{jv} / {nv}"
    );
    assert_eq!(head(&jv), head(&nv));
    let versions = head(&nv);
    assert!(
        versions.starts_with("PipeWire ")
            && versions.contains(", WirePlumber ")
            && !versions.contains("unknown"),
        "{nv}"
    );
    assert!(jv.ends_with("/pipewire-0.3/jack/libjack.so.0)"), "{jv}");
    assert!(
        nv.ends_with(&format!("{running_at}native streams)")),
        "{nv}"
    );
}
