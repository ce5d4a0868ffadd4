//! The user's running PipeWire (a desktop's), measured through its JACK API: a fixture
//! plays that PipeWire (a headless PipeWire + WirePlumber started by the test, not by
//! audiolat) and audiolat runs with its client environment. `--server auto` picks it
//! (recorded, not private); each period of a sweep forces `clock.force-quantum`, the
//! quantum granted is the one asked and the round trip through its null sink's monitor
//! is that quantum; the value before (unset, or the user's own) is back after a sweep,
//! after Ctrl-C, and after a killed audiolat (restored by the next one, which says so).
//! Every session measures its loop, not only the first; the native backend's sweeps
//! force each quantum the same way.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use engine::pipewire::{PipewireRequest, PipewireServer};
use results::{RunStatus, Store};
use serde_json::Value;

use crate::util::{machine_lock, output, require_pipewire, run_json, temp_db, wait_timeout};

/// "The user's desktop PipeWire": started by the test, outside audiolat.
pub(crate) struct DesktopPipewire {
    server: PipewireServer,
}

impl DesktopPipewire {
    pub(crate) fn start() -> DesktopPipewire {
        let server = PipewireServer::start(&PipewireRequest::default()).expect("a PipeWire");
        DesktopPipewire { server }
    }

    pub(crate) fn server(&self) -> &PipewireServer {
        &self.server
    }

    pub(crate) fn socket(&self) -> PathBuf {
        self.server.info().runtime_dir.join("pipewire-0")
    }

    /// audiolat as a client of this desktop would run it.
    pub(crate) fn audiolat(&self, db: &std::path::Path, args: &[&str]) -> Command {
        let mut cmd = crate::util::command(db, args);
        cmd.envs(self.server.client_env())
            .env_remove("JACK_DEFAULT_SERVER");
        cmd
    }

    pub(crate) fn metadata(&self, args: &[&str]) -> String {
        let out = Command::new("pw-metadata")
            .envs(self.server.client_env())
            .args(["-n", "settings", "0"])
            .args(args)
            .output()
            .expect("pw-metadata");
        assert!(out.status.success(), "pw-metadata {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `clock.force-quantum` as `pw-metadata` lists it ("0" when unset).
    pub(crate) fn force_quantum(&self) -> String {
        self.setting("clock.force-quantum")
    }

    /// A settings key as `pw-metadata` lists it ("0" when unset).
    fn setting(&self, key: &str) -> String {
        self.metadata(&[])
            .lines()
            .find(|l| l.contains(&format!("key:'{key}'")))
            .and_then(|l| l.split("value:'").nth(1)?.split('\'').next())
            .unwrap_or("0")
            .to_string()
    }

    /// Waits until `clock.force-quantum` reads `value`.
    pub(crate) fn wait_for(&self, value: &str) {
        let start = Instant::now();
        while self.force_quantum() != value {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "clock.force-quantum never read {value}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// audiolat's state file for a running PipeWire's quantum.
pub(crate) fn state_file(pid: u32) -> PathBuf {
    PathBuf::from(format!("/run/audiolat/pipewire-quantum-{pid}.state"))
}

/// The quantum state file of an audiolat `pid` killed outright on `desktop`, that found
/// `previous` and forced `forced` (a pid above pid_max: surely dead). Its path.
fn dead_state_file(desktop: &DesktopPipewire, pid: u32, previous: u32, forced: u32) -> PathBuf {
    let file = state_file(pid);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let text = format!(
        "pid={pid}\nsocket={}\nkey=clock.force-quantum\nprevious={previous}\nforced={forced}\n",
        desktop.socket().display()
    );
    std::fs::write(&file, text).unwrap();
    file
}

/// A sweep over `periods` on the desktop's PipeWire with `--server auto` and the JACK
/// API (`backend` empty) or `backend`'s arguments: every run records that PipeWire (not
/// private), asked = granted, and a round trip of one quantum (the later sessions on one
/// server too: the next period, the next audiolat); its graph record's force-quantum
/// "before" is the user's value (read before the sweep), not the one audiolat forced.
fn sweep_checks(desktop: &DesktopPipewire, backend: &[&str], periods: &[u32]) {
    let user: u64 = desktop.force_quantum().parse().expect("a number");
    let (_dir, db) = temp_db("pwr.db");
    let list: Vec<String> = periods.iter().map(u32::to_string).collect();
    let list = list.join(",");
    let mut args = vec!["roundtrip", "--server", "auto"];
    args.extend_from_slice(backend);
    args.extend_from_slice(&["--period", &list, "--duration", "2s", "--json"]);
    let out = output(&mut desktop.audiolat(&db, &args));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).expect("JSON");
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), periods.len(), "{v}");
    for (r, &period) in runs.iter().zip(periods) {
        assert_eq!(r["status"], "complete", "{r}");
        let run_id = r["run_id"].as_i64().unwrap().to_string();
        let stored = run_json(&db, &["show", &run_id, "--json"]);
        let server = &stored["run"]["config"]["server"];
        assert_eq!(server["name"], "pipewire-0", "{stored}");
        assert_eq!(server["private"], false, "{server}");
        let version = server["version"].as_str().unwrap_or_default();
        assert!(version.starts_with("PipeWire "), "{server}");
        assert!(version.contains(", WirePlumber "), "{server}");
        assert!(!version.contains("unknown"), "{server}");
        assert!(
            version.contains(&desktop.socket().display().to_string()),
            "{server}"
        );
        assert_eq!(server["quantum_asked_frames"], period, "{server}");
        assert_eq!(server["quantum_granted_frames"], period, "{server}");
        let graph = &stored["run"]["result"]["server"]["graph"];
        assert_eq!(graph["force_quantum"]["before"], user, "{graph}");
        assert_eq!(graph["force_quantum"]["after"], period, "{graph}");
        let frames = &r["result"]["roundtrip_frames"];
        let median = frames["median"].as_f64();
        let median = median.unwrap_or_else(|| panic!("no median: {stored}"));
        assert!(frames["count"].as_u64().unwrap_or(0) >= 3, "{r}");
        assert!(
            (median - f64::from(period)).abs() <= 0.05,
            "median {median} frames, not the granted quantum {period}: {r}"
        );
    }
}

/// One round trip on the desktop's PipeWire at its own quantum (`args` choose the server
/// and backend): a loop of the quantum granted, recorded. Returns that quantum.
fn one_quantum_loop(desktop: &DesktopPipewire, args: &[&str]) -> u64 {
    let (_dir, db) = temp_db("pwr1.db");
    let mut all = vec!["roundtrip"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--duration", "2s", "--json"]);
    let out = output(&mut desktop.audiolat(&db, &all));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).expect("JSON");
    let r = &v["runs"][0];
    assert_eq!(r["status"], "complete", "{r}");
    let run_id = r["run_id"].as_i64().unwrap().to_string();
    let stored = run_json(&db, &["show", &run_id, "--json"]);
    let server = &stored["run"]["config"]["server"];
    assert_eq!(server["private"], false, "{server}");
    assert!(server["quantum_asked_frames"].is_null(), "{server}");
    let granted = server["quantum_granted_frames"].as_u64().expect("granted");
    let frames = &r["result"]["roundtrip_frames"];
    assert!(frames["count"].as_u64().unwrap_or(0) >= 3, "{r}");
    let median = frames["median"].as_f64().expect("a median");
    assert!(
        (median - granted as f64).abs() <= 0.05,
        "median {median} frames, not the granted quantum {granted}: {r}"
    );
    granted
}

/// Every session on a running PipeWire measures its loop, not only the first: the sink's
/// graph stops between audiolat's sessions (nothing else plays into it) and PipeWire's
/// libjack restarts its frame count (a step back or a jump of seconds in the first
/// cycles), which audiolat's JACK client counts through. Two audiolats in a row, then a
/// sweep whose later period is a later session; the native streams the same.
#[test]
fn every_session_on_a_running_pipewire_measures_its_loop() {
    require_pipewire();
    let _m = machine_lock();
    let desktop = DesktopPipewire::start();
    for _ in 0..2 {
        assert_eq!(one_quantum_loop(&desktop, &["--server", "auto"]), 1024);
    }
    sweep_checks(&desktop, &[], &[128, 256]);
    assert_eq!(desktop.force_quantum(), "0");
    let native = ["--backend", "pipewire", "--server", "external"];
    for _ in 0..2 {
        assert_eq!(one_quantum_loop(&desktop, &native), 1024);
    }
}

/// The native backend on a running PipeWire with `--period`: each period's quantum forced
/// as for JACK clients (state file, measured), asked = granted, a loop of one quantum,
/// and the value before back after the sweep.
#[test]
fn native_sweep_forces_each_quantum_on_the_running_pipewire_and_restores_it() {
    require_pipewire();
    let _m = machine_lock();
    let desktop = DesktopPipewire::start();
    let native = ["--backend", "pipewire"];
    sweep_checks(&desktop, &native, &[128, 256]);
    assert_eq!(desktop.force_quantum(), "0", "not restored to unset");
    desktop.metadata(&["clock.force-quantum", "512"]);
    sweep_checks(&desktop, &native, &[256, 128]);
    assert_eq!(
        desktop.force_quantum(),
        "512",
        "the user's value not restored"
    );
}

#[test]
fn auto_measures_the_running_pipewire_at_each_forced_quantum_and_restores_it() {
    require_pipewire();
    let _m = machine_lock();
    let desktop = DesktopPipewire::start();
    assert_eq!(desktop.force_quantum(), "0");
    sweep_checks(&desktop, &[], &[64, 128, 256, 1024]);
    assert_eq!(desktop.force_quantum(), "0", "not restored to unset");
    // The user's own forced quantum is restored as it was, never to 0.
    desktop.metadata(&["clock.force-quantum", "512"]);
    sweep_checks(&desktop, &[], &[64, 128, 256, 1024]);
    assert_eq!(
        desktop.force_quantum(),
        "512",
        "the user's value not restored"
    );
}

/// Spawns a long round trip at `period` on the desktop and waits until it forced it.
fn spawn_forcing(
    desktop: &DesktopPipewire,
    db: &std::path::Path,
    period: &str,
) -> std::process::Child {
    let mut cmd = desktop.audiolat(
        db,
        &[
            "roundtrip",
            "--server",
            "auto",
            "--period",
            period,
            "--duration",
            "60s",
        ],
    );
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().expect("audiolat");
    desktop.wait_for(period);
    assert!(state_file(child.id()).exists());
    // Measuring for a while.
    std::thread::sleep(Duration::from_millis(1500));
    child
}

#[test]
fn ctrl_c_mid_run_restores_the_quantum_and_the_run_is_interrupted() {
    require_pipewire();
    let _m = machine_lock();
    let desktop = DesktopPipewire::start();
    let (_dir, db) = temp_db("pwint.db");
    let mut child = spawn_forcing(&desktop, &db, "128");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_timeout(&mut child, Duration::from_secs(60));
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert_eq!(desktop.force_quantum(), "0");
    assert!(!state_file(child.id()).exists());
    let store = Store::open_read_only(&db).unwrap();
    let id = store.last_run_id().unwrap().expect("a run");
    assert_eq!(store.run(id).unwrap().status, RunStatus::Interrupted);
}

#[test]
fn a_killed_audiolat_leaves_the_quantum_forced_and_the_next_one_restores_it() {
    require_pipewire();
    let _m = machine_lock();
    let desktop = DesktopPipewire::start();
    desktop.metadata(&["clock.force-quantum", "512"]);
    let (_dir, db) = temp_db("pwkill.db");
    let mut child = spawn_forcing(&desktop, &db, "256");
    let pid = child.id();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        desktop.force_quantum(),
        "256",
        "nothing restores after SIGKILL"
    );
    assert!(state_file(pid).exists());
    // Any measuring command undoes what killed audiolats left, and says so.
    let out = output(&mut desktop.audiolat(&db, &["jitter", "--duration", "1s", "-q"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let said = format!(
        "audiolat: restored clock.force-quantum 512 on the PipeWire at {} (left at 256 by audiolat pid {pid}, which died)",
        desktop.socket().display()
    );
    assert!(out.stderr.contains(&said), "{}", out.stderr);
    assert_eq!(desktop.force_quantum(), "512");
    assert!(!state_file(pid).exists());
}

/// The user changes `clock.force-quantum` during a run: the run ends (its buffer size
/// changed mid-run) and audiolat, which no longer owns the key, leaves the user's value,
/// says so in one line, and removes its state file.
#[test]
fn a_quantum_changed_during_the_run_is_left_as_the_user_set_it() {
    require_pipewire();
    let _m = machine_lock();
    let desktop = DesktopPipewire::start();
    let (_dir, db) = temp_db("pwchanged.db");
    let child = spawn_forcing(&desktop, &db, "128");
    let pid = child.id();
    desktop.metadata(&["clock.force-quantum", "512"]);
    let out = child.wait_with_output().expect("audiolat");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("from 128 to 512 frames mid-run"),
        "{stderr}"
    );
    assert_eq!(
        desktop.force_quantum(),
        "512",
        "the user's value overwritten"
    );
    let said = format!(
        "audiolat: left clock.force-quantum at 512 on the PipeWire at {}: it was changed during the run (audiolat forced 128 and found 0 before)",
        desktop.socket().display()
    );
    assert!(stderr.contains(&said), "{stderr}");
    assert!(!state_file(pid).exists());
}

/// A state file of an audiolat killed before it set the key (the key holds the value
/// before): nothing to restore and nothing said; the file goes.
#[test]
fn a_state_file_of_a_key_never_set_is_removed_silently() {
    require_pipewire();
    let _m = machine_lock();
    let desktop = DesktopPipewire::start();
    desktop.metadata(&["clock.force-quantum", "512"]);
    let file = dead_state_file(&desktop, 4_999_999, 512, 64);
    let (_dir, db) = temp_db("pwnever.db");
    let out = output(&mut desktop.audiolat(&db, &["jitter", "--duration", "1s", "-q"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        !out.stderr.contains("clock.force-quantum"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("4999999"), "{}", out.stderr);
    assert_eq!(desktop.force_quantum(), "512");
    assert!(!file.exists());
}

/// `--rate` on a running PipeWire forces `clock.force-rate` as `--period` forces the
/// quantum: the rate asked and the rate granted (the JACK client's) recorded, the stream
/// at that rate, a loop of the quantum the graph then runs, the graph record's "before"
/// the user's value, and force-rate (and the quantum forced with it) back as they were.
#[test]
fn rate_on_a_running_pipewire_forces_it_records_it_and_restores_it() {
    require_pipewire();
    let _m = machine_lock();
    let desktop = DesktopPipewire::start();
    let (_dir, db) = temp_db("pwrate.db");
    let args = [
        "roundtrip",
        "--server",
        "auto",
        "--rate",
        "44100",
        "--duration",
        "2s",
        "--json",
    ];
    let out = output(&mut desktop.audiolat(&db, &args));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).expect("JSON");
    let r = &v["runs"][0];
    assert_eq!(r["status"], "complete", "{r}");
    let run_id = r["run_id"].as_i64().unwrap().to_string();
    let stored = run_json(&db, &["show", &run_id, "--json"]);
    let config = &stored["run"]["config"];
    assert_eq!(config["server"]["private"], false, "{config}");
    assert_eq!(config["server"]["rate_asked_hz"], 44100, "{config}");
    assert_eq!(config["server"]["rate_granted_hz"], 44100, "{config}");
    assert_eq!(config["rate_hz"], 44100, "{config}");
    let granted = config["server"]["quantum_granted_frames"]
        .as_f64()
        .expect("a quantum");
    let median = r["result"]["roundtrip_frames"]["median"]
        .as_f64()
        .expect("a median");
    assert!(
        (median - granted).abs() <= 0.05,
        "{median} vs {granted}: {r}"
    );
    let graph = &stored["run"]["result"]["server"]["graph"];
    assert_eq!(graph["force_rate"]["before"], 0, "{graph}");
    assert_eq!(graph["force_rate"]["after"], 44100, "{graph}");
    assert_eq!(
        desktop.setting("clock.force-rate"),
        "0",
        "force-rate not restored"
    );
    let left: Vec<_> = std::fs::read_dir("/run/audiolat")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("pipewire-rate-")
        })
        .collect();
    assert!(left.is_empty(), "state files left: {left:?}");
}

/// A quantum the running PipeWire's graph refuses (3000: it rounds it down to 2048):
/// one line naming what it granted, exit 2, and the user's value back.
#[test]
fn a_refused_quantum_on_a_running_pipewire_is_one_line_and_restores_the_users_value() {
    require_pipewire();
    let _m = machine_lock();
    let desktop = DesktopPipewire::start();
    desktop.metadata(&["clock.force-quantum", "512"]);
    let (_dir, db) = temp_db("pwrefused.db");
    let args = [
        "roundtrip",
        "--server",
        "auto",
        "--period",
        "3000",
        "--duration",
        "2s",
    ];
    let out = output(&mut desktop.audiolat(&db, &args));
    assert_eq!(out.code, 2, "{}", out.stderr);
    let line = out.stderr.trim_end();
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(line.starts_with("audiolat: error: "), "{line}");
    assert!(
        line.contains("quantum of 3000 frames: the graph granted 2048")
            && line.contains("ask for 2048"),
        "{line}"
    );
    assert_eq!(
        desktop.force_quantum(),
        "512",
        "the user's value not restored"
    );
    let left: Vec<_> = std::fs::read_dir("/run/audiolat")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("pipewire-"))
        .collect();
    assert!(left.is_empty(), "state files left: {left:?}");
}

/// A `--period` outside the quanta PipeWire's graph runs (8 to 8192 frames), on every
/// PipeWire path (a private one, the running one through the JACK API, natively, in a
/// sweep): refused in PipeWire's words, not JACK's, exit 2, nothing forced.
#[test]
fn a_period_outside_pipewires_quanta_is_refused_in_pipewires_words() {
    require_pipewire();
    let _m = machine_lock();
    let desktop = DesktopPipewire::start();
    let (_dir, db) = temp_db("pwrange.db");
    for (server, period) in [
        (&["--server", "pipewire"][..], "9000"),
        (&["--server", "auto"][..], "9000"),
        (&["--server", "external"][..], "4"),
        (&["--server", "auto"][..], "4,64"),
        (&["--backend", "pipewire"][..], "9000"),
    ] {
        let mut args = vec!["roundtrip"];
        args.extend_from_slice(server);
        args.extend_from_slice(&["--period", period, "--duration", "1s"]);
        let out = output(&mut desktop.audiolat(&db, &args));
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        let first = period.split(',').next().unwrap();
        let said = format!("--period {first}: PipeWire's graph runs quanta from 8 to 8192 frames");
        assert!(out.stderr.contains(&said), "{args:?}: {}", out.stderr);
        assert!(!out.stderr.contains("JACK"), "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim_end().lines().count(), 1, "{}", out.stderr);
    }
    assert_eq!(desktop.force_quantum(), "0");
}

/// doctor on a quantum a killed audiolat left forced: a leftover worded for a PipeWire
/// setting (not cpusets, not root), with the command that puts it back by hand; the
/// next measuring command restores it.
#[test]
fn doctor_words_a_forced_quantum_left_by_a_killed_audiolat_for_pipewire() {
    require_pipewire();
    let _m = machine_lock();
    let desktop = DesktopPipewire::start();
    desktop.metadata(&["clock.force-quantum", "256"]);
    let file = dead_state_file(&desktop, 4_999_998, 0, 256);
    let (_dir, db) = temp_db("pwdoc.db");
    let mut doctor = desktop.audiolat(&db, &["doctor", "--json", "--steal-window", "100ms"]);
    let out = output(&mut doctor);
    let v: Value = serde_json::from_str(&out.stdout).expect("JSON");
    let left = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "system.leftovers")
        .expect("the leftovers finding");
    assert_eq!(left["verdict"], "fail", "{left}");
    let fix = left["fix"].as_str().unwrap();
    let by_hand = format!(
        "pw-metadata -n settings 0 clock.force-quantum 0 (on the PipeWire at {})",
        desktop.socket().display()
    );
    assert!(fix.contains(&by_hand), "{left}");
    assert!(
        !fix.contains("as root") && !fix.contains("cpuset"),
        "{left}"
    );
    assert!(
        !left["detail"].as_str().unwrap().contains("tasks"),
        "{left}"
    );
    let out = output(&mut desktop.audiolat(&db, &["jitter", "--duration", "1s", "-q"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(desktop.force_quantum(), "0");
    assert!(!file.exists());
}

/// Two audiolats on one running PipeWire: the second finds the first's forced value and
/// sees through it (the first's state file) to the user's. The first, whose quantum
/// the second changed, ends on the change and leaves the second's value, saying so; the
/// second restores the user's value, not the first's.
#[test]
fn two_audiolats_on_one_pipewire_leave_the_users_quantum() {
    require_pipewire();
    let _m = machine_lock();
    let desktop = DesktopPipewire::start();
    desktop.metadata(&["clock.force-quantum", "512"]);
    let (_dir, db) = temp_db("pwtwo.db");
    let first = spawn_forcing(&desktop, &db, "128");
    let (_dir2, db2) = temp_db("pwtwo2.db");
    let mut second = spawn_forcing(&desktop, &db2, "256");
    let out = first.wait_with_output().expect("the first audiolat");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let said = format!(
        "audiolat: left clock.force-quantum at 256 on the PipeWire at {}: it was changed during the run (audiolat forced 128 and found 512 before)",
        desktop.socket().display()
    );
    assert!(stderr.contains(&said), "{stderr}");
    assert_eq!(desktop.force_quantum(), "256");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(second.id() as i32, libc::SIGINT) };
    let status = wait_timeout(&mut second, Duration::from_secs(60));
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert_eq!(
        desktop.force_quantum(),
        "512",
        "the user's value not restored"
    );
    assert!(!state_file(second.id()).exists());
}

/// Two audiolats forcing the same quantum: the first out leaves it to the second (whose
/// state file holds the user's value), the last out restores the user's value.
#[test]
fn two_audiolats_forcing_the_same_quantum_leave_it_to_the_last_one_out() {
    require_pipewire();
    let _m = machine_lock();
    let desktop = DesktopPipewire::start();
    desktop.metadata(&["clock.force-quantum", "512"]);
    let (_dir, db) = temp_db("pwsame.db");
    let mut first = spawn_forcing(&desktop, &db, "128");
    let (_dir2, db2) = temp_db("pwsame2.db");
    let mut cmd = desktop.audiolat(
        &db2,
        &[
            "roundtrip",
            "--server",
            "auto",
            "--period",
            "128",
            "--duration",
            "60s",
        ],
    );
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut second = cmd.spawn().expect("audiolat");
    let started = std::time::Instant::now();
    while !state_file(second.id()).exists() {
        assert!(started.elapsed() < Duration::from_secs(60), "no state file");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Measuring for a while.
    std::thread::sleep(Duration::from_millis(3000));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(first.id() as i32, libc::SIGINT) };
    let status = wait_timeout(&mut first, Duration::from_secs(60));
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert_eq!(desktop.force_quantum(), "128", "restored under the second");
    assert!(!state_file(first.id()).exists());
    // SAFETY: signalling our own child.
    unsafe { libc::kill(second.id() as i32, libc::SIGINT) };
    let status = wait_timeout(&mut second, Duration::from_secs(60));
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert_eq!(
        desktop.force_quantum(),
        "512",
        "the user's value not restored"
    );
    assert!(!state_file(second.id()).exists());
}
