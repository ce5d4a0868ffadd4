//! Temporary files: none left after a run that ended (done or stopped); what a run killed
//! outright left is listed by doctor's leftovers check and removed by `doctor --fix`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use results::Store;

use crate::util::{
    machine_lock, poll_read_only, private_dirs, private_pipewire_pids, require_pipewire,
    require_tool, run, run_json, spawn, temp_db, tempdir, unique_server, wait_timeout, KillOnDrop,
};

/// The files in `dir` whose names contain `needle`.
fn named(dir: &Path, needle: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().contains(needle))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// The temporary paths audiolat `pid` made, in the temporary directory and in `scratch`.
fn temporary_of(pid: u32, scratch: &Path) -> Vec<PathBuf> {
    let mut left = Vec::new();
    for kind in ["plan", "pipewire", "io"] {
        let prefix = format!("audiolat-{kind}-{pid}-");
        left.extend(named(&std::env::temp_dir(), &prefix));
        left.extend(named(scratch, &prefix));
    }
    left.extend(named(scratch, "tmp-stress-ng"));
    left
}

/// The triggers of the last run in `db`, once it has `n`.
fn wait_for_triggers(db: &Path, n: usize) {
    poll_read_only(db, "no triggers were stored", |s| {
        s.last_run_id()
            .ok()
            .flatten()
            .is_some_and(|id| s.triggers(id).map_or(0, |t| t.len()) >= n)
    });
}

/// A round trip through audiolat's own loop client, a run stopped with two quick
/// Ctrl-Cs while the io load writes (the load is killed without its grace period, so
/// stress-ng cannot remove its files), event runs on a private PipeWire (its runtime,
/// configuration and state directory) done and stopped with Ctrl-C, and a plan run:
/// nothing of theirs is left in the temporary directory, the scratch directory or
/// `/dev/shm`.
#[test]
fn runs_that_ended_leave_no_temporary_file() {
    require_pipewire();
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    require_tool("stress-ng", "stress-ng");
    let (dir, db) = temp_db("clean.db");
    // The loop client is closed while its server still runs: no semaphore is left.
    let name = unique_server("clean-loop");
    let out = run(
        &db,
        &[
            "roundtrip",
            "--server",
            "dummy",
            "--server-name",
            &name,
            "--duration",
            "1s",
            "-q",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let shm = named(Path::new("/dev/shm"), &format!("_{name}_"));
    assert!(shm.is_empty(), "JACK files left: {shm:?}");

    let scratch = tempdir();
    let mut child = spawn(
        &db,
        &[
            "jitter",
            "-D",
            "30",
            "--load",
            "io",
            "--scratch-dir",
            scratch.path().to_str().unwrap(),
            "-q",
        ],
    );
    poll_read_only(&db, "the io load never started", |s| {
        s.last_run_id()
            .ok()
            .flatten()
            .and_then(|id| s.run(id).ok())
            .is_some_and(|r| r.probe.name == "jitter" && r.load.get("processes").is_some())
    });
    // stress-ng is writing its file.
    std::thread::sleep(Duration::from_millis(1500));
    for _ in 0..2 {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        std::thread::sleep(Duration::from_millis(10));
    }
    let status = wait_timeout(&mut child, Duration::from_secs(60));
    assert_eq!(status.code(), Some(130), "{status:?}");
    let left = temporary_of(child.id(), scratch.path());
    assert!(left.is_empty(), "left: {left:?}");

    // A private PipeWire's directory, done and stopped.
    let pipewire = ["event", "--server", "pipewire", "-q", "--triggers"];
    let mut done = spawn(&db, &[&pipewire[..], &["3"]].concat());
    let status = wait_timeout(&mut done, Duration::from_secs(120));
    assert_eq!(status.code(), Some(0), "{status:?}");
    let mut stopped = spawn(&db, &[&pipewire[..], &["1000"]].concat());
    wait_for_triggers(&db, 3);
    assert!(
        !private_dirs(stopped.id()).is_empty(),
        "no private directory"
    );
    // SAFETY: signalling our own child.
    unsafe { libc::kill(stopped.id() as i32, libc::SIGINT) };
    let status = wait_timeout(&mut stopped, Duration::from_secs(60));
    assert_eq!(status.code(), Some(130), "{status:?}");
    for pid in [done.id(), stopped.id()] {
        let left = temporary_of(pid, scratch.path());
        assert!(left.is_empty(), "left: {left:?}");
        assert!(private_pipewire_pids(pid).is_empty());
    }

    let plan = dir.path().join("p.toml");
    std::fs::write(
        &plan,
        "name = \"p\"\nprobe = \"jitter\"\nrepeats = 2\n\n[set]\nloops = 100\n",
    )
    .unwrap();
    let mut runner = spawn(&db, &["run", plan.to_str().unwrap(), "-q"]);
    let status = wait_timeout(&mut runner, Duration::from_secs(120));
    assert_eq!(status.code(), Some(0), "{status:?}");
    let left = temporary_of(runner.id(), dir.path());
    assert!(left.is_empty(), "left: {left:?}");
}

/// A plan runner, an io load's audiolat and an event run on a private PipeWire killed
/// outright leave a cell's log, the load's scratch directory and the PipeWire's
/// directory; a private JACK server killed outright leaves its files in /dev/shm. doctor
/// lists them all (warn: nothing on the machine is changed), `doctor --fix` removes them
/// and says so, and doctor then finds nothing.
#[test]
fn what_killed_runs_left_is_listed_by_doctor_and_removed_by_its_fix() {
    require_pipewire();
    let _m = machine_lock();
    require_tool("stress-ng", "stress-ng");
    let (dir, db) = temp_db("killed.db");
    // Both run before either is killed: a measuring command removes what a killed one
    // left before it measures.
    let plan = dir.path().join("p.toml");
    std::fs::write(
        &plan,
        "name = \"p\"\nprobe = \"jitter\"\nrepeats = 2\n\n[set]\nduration = \"30s\"\n",
    )
    .unwrap();
    let runner = KillOnDrop(spawn(&db, &["run", plan.to_str().unwrap(), "-q"]));
    let runner_pid = runner.id();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while named(
        &std::env::temp_dir(),
        &format!("audiolat-plan-{runner_pid}-"),
    )
    .is_empty()
    {
        assert!(std::time::Instant::now() < deadline, "no cell log was made");
        std::thread::sleep(Duration::from_millis(50));
    }
    let scratch = tempdir();
    let jitter = KillOnDrop(spawn(
        &db,
        &[
            "jitter",
            "-D",
            "60",
            "--load",
            "io",
            "--scratch-dir",
            scratch.path().to_str().unwrap(),
            "-q",
        ],
    ));
    let jitter_pid = jitter.id();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while named(scratch.path(), &format!("audiolat-io-{jitter_pid}-")).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the io load never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_pw_dir, pw_db) = temp_db("pipewire.db");
    let pipewire = KillOnDrop(spawn(
        &pw_db,
        &["event", "--server", "pipewire", "--triggers", "1000", "-q"],
    ));
    let pipewire_pid = pipewire.id();
    wait_for_triggers(&pw_db, 3);
    let pipewire_dir = private_dirs(pipewire_pid);
    assert_eq!(pipewire_dir.len(), 1, "{pipewire_dir:?}");
    // SIGKILL all three; the plan's cell is told to stop by the kernel, the load's
    // supervisor stops the load, the private PipeWire's processes stop.
    drop(jitter);
    drop(runner);
    drop(pipewire);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !private_pipewire_pids(pipewire_pid).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the killed run's PipeWire kept running"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(pipewire_dir[0].exists(), "nothing left to find");
    // A private server's semaphore (of a name no server runs under now).
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let semaphore = PathBuf::from(format!(
        "/dev/shm/jack_sem.{uid}_audiolat-dummy-8_audiolat-doctor-test"
    ));
    std::fs::write(&semaphore, [0u8; 12]).unwrap();

    let left = [
        format!(
            "audiolat PID {jitter_pid} (no longer running) left temporary directory {}",
            scratch
                .path()
                .canonicalize()
                .unwrap()
                .join(format!("audiolat-io-{jitter_pid}-0"))
                .display()
        ),
        format!(
            "audiolat PID {runner_pid} (no longer running) left temporary file {}",
            std::env::temp_dir()
                .join(format!("audiolat-plan-{runner_pid}-"))
                .display()
        ),
        semaphore.display().to_string(),
        format!(
            "audiolat PID {pipewire_pid} (no longer running) left temporary directory {}",
            pipewire_dir[0].display()
        ),
    ];
    let doctor = run_json(&db, &["doctor", "--json", "--steal-window", "100ms"]);
    let finding = doctor["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "system.leftovers")
        .unwrap()
        .clone();
    assert_eq!(finding["verdict"], "warn", "{finding}");
    let value = finding["value"].as_str().unwrap();
    for needle in &left {
        assert!(value.contains(needle.as_str()), "{needle}: {value}");
    }
    assert!(finding["fix"].as_str().unwrap().contains("doctor --fix"));

    let fix = run(&db, &["doctor", "--fix", "--steal-window", "100ms"]);
    assert!(fix.stderr.contains("removed what was left: "), "{fix:?}");
    assert!(!semaphore.exists());
    assert!(temporary_of(jitter_pid, scratch.path()).is_empty());
    assert!(temporary_of(runner_pid, dir.path()).is_empty());
    assert!(temporary_of(pipewire_pid, dir.path()).is_empty());
    assert!(!pipewire_dir[0].exists());
    let doctor = run_json(&db, &["doctor", "--json", "--steal-window", "100ms"]);
    let finding = doctor["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "system.leftovers")
        .unwrap()
        .clone();
    assert_eq!(finding["verdict"], "ok", "{finding}");
    // The runs the killed processes left are closed by the next open, as ever.
    assert!(Store::open(&db).is_ok());
}
