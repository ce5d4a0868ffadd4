//! `audiolat event --server pipewire`: the event model for PipeWire held to the null
//! sink's monitor capture at two quanta, the private PipeWire and WirePlumber killed
//! mid-run, and the set-up errors (PipeWire not installed, no session bus, a quantum the
//! graph refuses) as one line with the fix, exit 2.
//!
//! The model: the JACK timing model (cycle start + offset / rate + the playback latency
//! the ports report) plus the sink's quantum, which the ports do not report (they say 0;
//! the sink takes a cycle's output in the next cycle). So `fixed` is two quanta, `asap`
//! a quantum and a half on average.

use std::path::{Path, PathBuf};
use std::time::Duration;

use results::{RunStatus, Store};
use serde_json::Value;

use crate::util::{
    command, machine_lock, private_dirs, private_pipewire_pids, require_pipewire, run_json, spawn,
    temp_db, tempdir, wait_timeout,
};

const RATE_HZ: f64 = 48_000.0;

/// The median of `values`.
fn median(mut values: Vec<f64>) -> f64 {
    assert!(!values.is_empty());
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// One quantum's event runs (`fixed` then `asap`), each with the monitor capture, held to
/// the PipeWire model and the model to the capture: through the JACK API, or through
/// native streams (`--backend pipewire`, whose loopback is `monitor`).
pub(crate) fn check_event_model(quantum: u32, native: bool) {
    let (_dir, db) = temp_db("pwm.db");
    let quantum_arg = quantum.to_string();
    let mut args = vec![
        "event",
        "--server",
        "pipewire",
        "--period",
        &quantum_arg,
        "--policy",
        "fixed,asap",
        "--triggers",
        "60",
        "--spacing",
        "30ms",
        "--note",
        "10ms",
        "--json",
    ];
    if native {
        args.extend(["--backend", "pipewire", "--loopback", "monitor"]);
    } else {
        args.extend(["--loopback", "audiolat-sink:monitor_FL"]);
    }
    let v = run_json(&db, &args);
    let frame_ns = 1e9 / RATE_HZ;
    let quantum_ns = f64::from(quantum) * frame_ns;
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{v}");
    for r in runs {
        assert_eq!(r["status"], "complete", "{r}");
        let result = &r["result"];
        let backend = if native { "pipewire" } else { "jack" };
        assert_eq!(result["backend"], backend, "{result}");
        assert_eq!(result["period_frames"], quantum, "{result}");
        // The ports report 0; the model adds the sink's quantum, and says so.
        assert_eq!(result["playback_latency_frames"], 0, "{result}");
        assert_eq!(result["unreported_sink_frames"], quantum, "{result}");
        assert_eq!(result["buffer_frames"], quantum, "{result}");
        let triggers = r["triggers"].as_array().unwrap();
        assert_eq!(triggers.len(), 60);
        let sounded: Vec<&Value> = triggers
            .iter()
            .filter(|t| t["missed"] == false && t["timing"] != "unknown")
            .collect();
        assert!(sounded.len() >= 30, "{} of 60 sounded", sounded.len());
        let latency = |t: &Value| t["latency_ns"].as_f64().unwrap();
        match r["config"]["policy"].as_str().unwrap() {
            "fixed" => {
                for t in sounded.iter().filter(|t| t["late"] == false) {
                    let l = latency(t);
                    assert!(
                        (l - 2.0 * quantum_ns).abs() <= frame_ns,
                        "fixed latency {l} ns vs one quantum of wait + the sink's quantum {} ns",
                        2.0 * quantum_ns
                    );
                }
            }
            "asap" => {
                let n = sounded.len() as f64;
                let mean = sounded.iter().map(|t| latency(t)).sum::<f64>() / n;
                let model = 1.5 * quantum_ns;
                assert!(
                    (mean - model).abs() <= quantum_ns / 4.0,
                    "asap mean {mean} ns vs half a quantum + the sink's quantum {model} ns"
                );
            }
            other => panic!("policy {other}"),
        }
        // The independent reference: the onset found in the sink's monitor capture.
        let diffs: Vec<f64> = sounded
            .iter()
            .filter_map(|t| Some(t["measured_ns"].as_f64()? - latency(t)))
            .collect();
        assert!(
            diffs.len() * 10 >= sounded.len() * 9,
            "onsets found for {} of {} notes",
            diffs.len(),
            sounded.len()
        );
        let d = median(diffs);
        assert!(
            d.abs() <= frame_ns,
            "the monitor capture differs from the model by {d} ns (median) at quantum {quantum}"
        );
    }
}

/// `fixed`: every trigger is one quantum of wait plus the sink's quantum, within a frame;
/// `asap`: the mean is half a quantum plus the sink's, within a quarter of a quantum; and
/// the model agrees with the onset in the null sink's monitor capture (median within a
/// frame), at quanta of 128 and 256.
#[test]
fn event_latency_on_pipewire_is_the_model_with_the_sinks_quantum() {
    require_pipewire();
    let _m = machine_lock();
    for quantum in [128, 256] {
        check_event_model(quantum, false);
    }
}

/// Kills the private `victim` (pipewire or wireplumber) of a running event probe once
/// triggers are stored: the run ends promptly, `interrupted`, the triggers are kept, and
/// nothing of the private PipeWire is left.
fn kill_mid_run(victim: &str) {
    let (_dir, db) = temp_db("pwk.db");
    let mut child = spawn(
        &db,
        &[
            "event",
            "--server",
            "pipewire",
            "--triggers",
            "1000",
            "--spacing",
            "30ms",
            "--note",
            "10ms",
            "-q",
        ],
    );
    let pid = child.id();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let run_id = loop {
        assert!(std::time::Instant::now() < deadline, "no triggers stored");
        std::thread::sleep(Duration::from_millis(200));
        let Ok(store) = Store::open_existing(&db) else {
            continue;
        };
        if let Ok(Some(id)) = store.last_run_id() {
            if store.triggers(id).map(|t| t.len()).unwrap_or(0) >= 10 {
                break id;
            }
        }
    };
    let targets: Vec<u32> = private_pipewire_pids(pid)
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm"))
                .unwrap_or_default()
                .trim()
                == victim
        })
        .collect();
    assert_eq!(targets.len(), 1, "one private {victim}: {targets:?}");
    // SAFETY: killing the process this test's audiolat started.
    unsafe { libc::kill(targets[0] as i32, libc::SIGKILL) };
    // Promptly: the run has 1000 triggers of 30 ms still to go.
    let status = wait_timeout(&mut child, Duration::from_secs(15));
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(1), "{stderr}");
    let line = stderr.lines().last().unwrap_or_default();
    assert!(
        line.contains("exited")
            && line.contains(&format!("{victim} exited with signal 9"))
            && line.contains("triggers measured before that are kept"),
        "{stderr}"
    );
    let store = Store::open_existing(&db).unwrap();
    assert_eq!(store.run(run_id).unwrap().status, RunStatus::Interrupted);
    let kept = store.triggers(run_id).unwrap().len();
    assert!((10..1000).contains(&kept), "{kept} triggers kept");
    let left = private_pipewire_pids(pid);
    assert!(left.is_empty(), "left running: {left:?}");
    let dirs = private_dirs(pid);
    assert!(dirs.is_empty(), "private directories left: {dirs:?}");
}

#[test]
fn the_private_pipewire_killed_mid_run_keeps_the_triggers() {
    require_pipewire();
    let _m = machine_lock();
    kill_mid_run("pipewire");
}

#[test]
fn the_private_wireplumber_killed_mid_run_keeps_the_triggers() {
    require_pipewire();
    let _m = machine_lock();
    kill_mid_run("wireplumber");
}

/// A directory of links to every program on `$PATH` but `hide`, and the `(name, script)`
/// programs given.
fn fake_path(dir: &Path, hide: &[&str], scripts: &[(&str, &str)]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    for d in std::env::split_paths(&path) {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let name = e.file_name();
            let to = bin.join(&name);
            if hide.iter().any(|h| name == *h) || to.exists() {
                continue;
            }
            let _ = std::os::unix::fs::symlink(e.path(), to);
        }
    }
    for (name, text) in scripts {
        let p = bin.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}

/// audiolat `event --server pipewire` with `args` and `PATH=path`: exit 2, one line on
/// stderr holding each of `wanted`, nothing stored and nothing left running.
fn assert_setup_error(path: Option<&Path>, args: &[&str], wanted: &[&str]) {
    let (_dir, db) = temp_db("pwerr.db");
    let mut cmd = command(
        &db,
        &[&["event", "--server", "pipewire", "-n", "3"], args].concat(),
    );
    if let Some(path) = path {
        cmd.env("PATH", path);
    }
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = output_of(child);
    assert_eq!(out.0, 2, "{}", out.1);
    assert_eq!(out.1.lines().count(), 1, "one line: {}", out.1);
    for w in wanted {
        assert!(out.1.contains(w), "{w:?} not in: {}", out.1);
    }
    assert!(!db.exists(), "nothing stored");
    assert!(private_pipewire_pids(pid).is_empty());
    assert!(private_dirs(pid).is_empty(), "{:?}", private_dirs(pid));
}

/// A spawned child's exit code and stderr.
fn output_of(child: std::process::Child) -> (i32, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// PipeWire not installed (each program missing names its Debian package), no session
/// bus possible (a `dbus-daemon` that exits 1), a quantum the graph refuses (3000: it
/// grants 2048): each one line naming the fix, exit 2, nothing left.
#[test]
fn pipewire_setup_errors_are_one_line_with_the_fix() {
    require_pipewire();
    let _m = machine_lock();
    for (program, package) in [
        ("pipewire", "pipewire-bin"),
        ("wireplumber", "wireplumber"),
        ("dbus-daemon", "dbus-daemon"),
    ] {
        let dir = tempdir();
        let path = fake_path(dir.path(), &[program], &[]);
        assert_setup_error(
            Some(&path),
            &[],
            &[&format!(
                "{program} not found: install the {package} package"
            )],
        );
    }
    let dir = tempdir();
    let path = fake_path(
        dir.path(),
        &["dbus-daemon"],
        &[(
            "dbus-daemon",
            "#!/bin/sh\necho 'Failed to start message bus: no session bus here' >&2\nexit 1\n",
        )],
    );
    assert_setup_error(
        Some(&path),
        &[],
        &[
            "dbus-daemon exited with exit status 1",
            "no session bus here",
            "check that `dbus-daemon --session` runs here (the dbus-daemon package)",
        ],
    );
    // pw-metadata is what forces a quantum the configuration cannot name.
    let dir = tempdir();
    let path = fake_path(dir.path(), &["pw-metadata"], &[]);
    assert_setup_error(
        Some(&path),
        &["--period", "3000"],
        &["pw-metadata not found: install the pipewire-bin package"],
    );
    assert_setup_error(
        None,
        &["--period", "3000"],
        &[
            "quantum of 3000 frames: the graph granted 2048",
            "ask for 2048",
        ],
    );
}
