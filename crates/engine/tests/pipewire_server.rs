//! Real-PipeWire tests: each starts a private headless PipeWire + WirePlumber through
//! `PipewireServer`. Each requires PipeWire (scripts/install-deps installs it) and
//! names the package that is missing.

mod common;

use engine::pipewire::{PipewireError, PipewireProcess, PipewireRequest, PipewireServer};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One server at a time: they share the machine's two CPUs.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// A fresh parent directory for one test's private directories.
fn parent_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("audiolat-pwtest-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn request(parent: &Path) -> PipewireRequest {
    PipewireRequest {
        parent_dir: parent.to_path_buf(),
        // Generous: a loaded machine, not a measurement.
        start_timeout: Duration::from_secs(10),
        ..Default::default()
    }
}

/// The port names `pw-link -o` (outputs) or `pw-link -i` (inputs) lists, run as a client
/// with nothing but the server's client environment.
fn ports(server: &PipewireServer, flag: &str) -> Vec<String> {
    let out = Command::new("pw-link")
        .arg(flag)
        .env_remove("PIPEWIRE_RUNTIME_DIR")
        .env_remove("PIPEWIRE_REMOTE")
        .env_remove("PIPEWIRE_CONFIG_DIR")
        .envs(server.client_env())
        .output()
        .unwrap();
    assert!(out.status.success(), "pw-link {flag}: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .collect()
}

/// A version like "0.3.65": three dot-separated numbers.
fn is_version(v: &str) -> bool {
    let parts: Vec<&str> = v.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

/// Whether a pid has a /proc entry at all (a zombie counts: it must be reaped too).
fn has_proc_entry(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Asserts nothing of a stopped server is left: no pid, no member of its group, no dir.
fn assert_all_gone(pids: &[u32], group: u32, dir: &Path) {
    for pid in pids {
        assert!(!has_proc_entry(*pid), "pid {pid} is still in /proc");
    }
    let pgrep = Command::new("pgrep")
        .args(["-g", &group.to_string()])
        .output()
        .unwrap();
    assert_eq!(
        pgrep.status.code(),
        Some(1),
        "pgrep -g {group} found: {}",
        String::from_utf8_lossy(&pgrep.stdout)
    );
    assert!(!dir.exists(), "{} still exists", dir.display());
}

fn private_dir(server: &PipewireServer) -> PathBuf {
    let info = server.info();
    assert_eq!(info.runtime_dir.parent(), Some(info.private_dir.as_path()));
    info.private_dir
}

/// The names left in `dir`.
fn entries(dir: &Path) -> Vec<std::ffi::OsString> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect()
}

/// Asserts no process has `dir` on its command line (the bus's address and the daemon's
/// configuration file are in the private directory).
fn assert_no_process_under(dir: &Path) {
    let pgrep = Command::new("pgrep")
        .args(["-f", &dir.display().to_string()])
        .output()
        .unwrap();
    assert_eq!(pgrep.status.code(), Some(1), "{pgrep:?}");
}

fn all_pids(server: &PipewireServer) -> Vec<u32> {
    let p = server.info().pids;
    vec![p.dbus_daemon, p.pipewire, p.wireplumber]
}

#[test]
fn starts_with_the_sinks_ports_and_stops_leaving_nothing() {
    let _serial = serial();
    common::require_pipewire();
    let parent = parent_dir("starts");
    let mut server = PipewireServer::start(&request(&parent)).unwrap();
    let info = server.info();

    let outputs = ports(&server, "-o");
    let inputs = ports(&server, "-i");
    for port in ["monitor_FL", "monitor_FR"] {
        assert!(
            outputs.contains(&format!("audiolat-sink:{port}")),
            "{outputs:?}"
        );
    }
    for port in ["playback_FL", "playback_FR"] {
        assert!(
            inputs.contains(&format!("audiolat-sink:{port}")),
            "{inputs:?}"
        );
    }
    assert_eq!(info.sink_node, "audiolat-sink");

    let pw = info.pipewire_version.as_deref().unwrap();
    let wp = info.wireplumber_version.as_deref().unwrap();
    assert!(is_version(pw) && pw.starts_with("0.3."), "{pw}");
    assert!(is_version(wp) && wp.starts_with("0.4."), "{wp}");

    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&info.runtime_dir)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "{}", info.runtime_dir.display());
    assert!(info.runtime_dir.join("pipewire-0").exists());
    assert_eq!(info.pids.group, info.pids.dbus_daemon);
    let env = server.client_env();
    assert!(env
        .iter()
        .any(|(k, v)| *k == "PIPEWIRE_REMOTE" && v == "pipewire-0"));
    assert!(env
        .iter()
        .any(|(k, v)| *k == "XDG_RUNTIME_DIR" && Path::new(v) == info.runtime_dir));

    let pids = all_pids(&server);
    for pid in &pids {
        assert!(has_proc_entry(*pid), "pid {pid} is not running");
    }
    assert!(server.exited().is_empty(), "{:?}", server.exited());

    let dir = private_dir(&server);
    server.stop();
    assert_all_gone(&pids, info.pids.group, &dir);
    server.stop(); // a second stop does nothing
    std::fs::remove_dir_all(&parent).unwrap();
}

#[test]
fn two_servers_in_a_row_each_start_fresh() {
    let _serial = serial();
    common::require_pipewire();
    let parent = parent_dir("twice");
    let mut first = PipewireServer::start(&request(&parent)).unwrap();
    let first_dir = private_dir(&first);
    let first_pids = all_pids(&first);
    first.stop();
    assert_all_gone(&first_pids, first.info().pids.group, &first_dir);

    let second = PipewireServer::start(&request(&parent)).unwrap();
    let second_dir = private_dir(&second);
    assert_ne!(first_dir, second_dir);
    assert!(ports(&second, "-o").contains(&"audiolat-sink:monitor_FL".to_string()));
    drop(second);
    assert!(!second_dir.exists());
    std::fs::remove_dir_all(&parent).unwrap();
}

#[test]
fn a_killed_wireplumber_is_reported_by_exited() {
    let _serial = serial();
    common::require_pipewire();
    let parent = parent_dir("killed");
    let mut server = PipewireServer::start(&request(&parent)).unwrap();
    let info = server.info();
    // SAFETY: killing the test's own child process.
    unsafe { libc::kill(info.pids.wireplumber as i32, libc::SIGKILL) };
    let deadline = Instant::now() + Duration::from_secs(10);
    let exits = loop {
        let exits = server.exited();
        if !exits.is_empty() || Instant::now() > deadline {
            break exits;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(exits.len(), 1, "{exits:?}");
    assert_eq!(exits[0].process, PipewireProcess::Wireplumber);
    assert_eq!(exits[0].pid, info.pids.wireplumber);
    assert_eq!(exits[0].status, "signal 9");
    // Still listed on the next call.
    assert_eq!(server.exited(), exits);

    let dir = private_dir(&server);
    let pids = all_pids(&server);
    server.stop();
    assert_all_gone(&pids, info.pids.group, &dir);
    std::fs::remove_dir_all(&parent).unwrap();
}

#[test]
fn dropping_a_started_server_stops_it() {
    let _serial = serial();
    common::require_pipewire();
    let parent = parent_dir("drop");
    let server = PipewireServer::start(&request(&parent)).unwrap();
    let (pids, group, dir) = (
        all_pids(&server),
        server.info().pids.group,
        private_dir(&server),
    );
    drop(server);
    assert_all_gone(&pids, group, &dir);
    std::fs::remove_dir_all(&parent).unwrap();
}

#[test]
fn a_daemon_that_exits_at_once_is_an_error_with_its_output() {
    let _serial = serial();
    common::require_pipewire();
    // The real bus, session manager and pw-link, and a `pipewire` that fails.
    let parent = parent_dir("fails");
    let tools = parent.join("bin");
    std::fs::create_dir(&tools).unwrap();
    for tool in ["wireplumber", "dbus-daemon", "pw-link"] {
        let real = String::from_utf8(
            Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap();
        std::os::unix::fs::symlink(real.trim(), tools.join(tool)).unwrap();
    }
    let fake = tools.join("pipewire");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'fake pipewire: cannot start' >&2\nexit 3\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();

    let req = PipewireRequest {
        tool_dirs: Some(vec![tools.clone()]),
        ..request(&parent)
    };
    let err = PipewireServer::start(&req).unwrap_err();
    match &err {
        PipewireError::Exited {
            process,
            status,
            output,
        } => {
            assert_eq!(*process, PipewireProcess::Pipewire);
            assert_eq!(status, "exit status 3");
            assert!(output.contains("fake pipewire: cannot start"), "{output}");
        }
        other => panic!("expected Exited, got {other}"),
    }
    let message = err.to_string();
    assert!(
        message.starts_with("pipewire exited with exit status 3"),
        "{message}"
    );
    // Nothing is left: only the tools' directory remains in the parent.
    assert_eq!(entries(&parent), vec![std::ffi::OsString::from("bin")]);
    assert_no_process_under(&parent);
    std::fs::remove_dir_all(&parent).unwrap();
}

#[test]
fn a_server_not_ready_in_time_is_an_error_and_is_stopped() {
    let _serial = serial();
    common::require_pipewire();
    let parent = parent_dir("slow");
    // No time at all: WirePlumber cannot have given the sink its ports at the first look.
    let req = PipewireRequest {
        start_timeout: Duration::ZERO,
        ..request(&parent)
    };
    let err = PipewireServer::start(&req).unwrap_err();
    assert!(matches!(err, PipewireError::NotReady { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.starts_with("the private PipeWire was not ready within 0ns: "),
        "{message}"
    );
    assert!(entries(&parent).is_empty(), "{:?}", entries(&parent));
    assert_no_process_under(&parent);
    std::fs::remove_dir_all(&parent).unwrap();
}

#[test]
fn a_dead_audiolats_private_directory_is_removed() {
    let _serial = serial();
    common::require_pipewire();
    let parent = parent_dir("stale");
    let mut gone = Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    let stale = parent.join(format!("audiolat-pipewire-{}-0", gone.id()));
    std::fs::create_dir_all(stale.join("runtime")).unwrap();
    let not_ours = parent.join("audiolat-pipewire-notes");
    std::fs::create_dir(&not_ours).unwrap();

    let server = PipewireServer::start(&request(&parent)).unwrap();
    assert!(!stale.exists(), "{} is still there", stale.display());
    assert!(not_ours.exists());
    drop(server);
    assert_eq!(
        entries(&parent),
        vec![std::ffi::OsString::from("audiolat-pipewire-notes")]
    );
    std::fs::remove_dir_all(&parent).unwrap();
}

/// Set in the child process of [`a_killed_parent_takes_its_server_with_it`].
const HOLDER_ENV: &str = "AUDIOLAT_TEST_PIPEWIRE_HOLDER";

/// Only in the child of [`a_killed_parent_takes_its_server_with_it`]: starts a server in
/// the directory given, prints its pids, and waits to be killed.
#[test]
fn holder_of_a_server_until_killed() {
    let Some(parent) = std::env::var_os(HOLDER_ENV) else {
        return;
    };
    let server = PipewireServer::start(&request(Path::new(&parent))).unwrap();
    let p = server.info().pids;
    println!("PIDS {} {} {}", p.dbus_daemon, p.pipewire, p.wireplumber);
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
fn a_killed_parent_takes_its_server_with_it() {
    let _serial = serial();
    common::require_pipewire();
    use std::io::BufRead;
    let parent = parent_dir("orphan");
    let mut holder = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "holder_of_a_server_until_killed", "--nocapture"])
        .env(HOLDER_ENV, &parent)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pids: Vec<i32> = std::io::BufReader::new(holder.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .find_map(|l| {
            l.strip_prefix("PIDS ")
                .map(|p| p.split(' ').map(|n| n.parse().unwrap()).collect())
        })
        .expect("the holder printed no pids");
    holder.kill().unwrap(); // SIGKILL: no Drop runs
    holder.wait().unwrap();

    // PR_SET_PDEATHSIG ends all three; init reaps them.
    let deadline = Instant::now() + Duration::from_secs(10);
    while pids.iter().any(|p| engine::servers::process_running(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    for pid in &pids {
        assert!(
            !engine::servers::process_running(*pid),
            "pid {pid} outlived its audiolat"
        );
    }
    // Its private directory is left behind, and the next server removes it.
    let stale = format!("audiolat-pipewire-{}-0", holder.id());
    assert_eq!(entries(&parent), vec![std::ffi::OsString::from(&stale)]);
    let server = PipewireServer::start(&request(&parent)).unwrap();
    assert!(!parent.join(&stale).exists());
    drop(server);
    assert!(entries(&parent).is_empty());
    std::fs::remove_dir_all(&parent).unwrap();
}
