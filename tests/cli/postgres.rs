//! The shared PostgreSQL store (`--db postgres://...`, `AUDIOLAT_DB`, `audiolat push`),
//! against a real throw-away PostgreSQL 15 cluster per test (the fixture is the results
//! crate's, `crates/results/tests/common/pg.rs`).

use std::path::Path;

use crate::util::{machine_lock, output, run, run_json, spawn, temp_db};

#[path = "../../crates/results/tests/common/pg.rs"]
mod pg;

/// Runs `args` on `db`, expecting exit 0.
fn ok(db: &Path, args: &[&str]) -> String {
    let out = run(db, args);
    assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
    out.stdout
}

fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn a_jitter_run_in_postgresql_reads_back_as_from_sqlite_and_reports() {
    let Some(server) = pg::start() else { return };
    let _m = machine_lock();
    let (dir, lite) = temp_db("board.db");
    let url = server.url();
    let shared = Path::new(&url);
    ok(&lite, &["jitter", "--loops", "2000", "--quiet"]);
    let pushed = ok(&lite, &["push", "--to", &url]);
    assert!(pushed.starts_with("pushed 1 run from"), "{pushed}");
    // A fresh store gives the pushed run the same id: every reader prints the same.
    for args in [
        &["show", "1"][..],
        &["show", "1", "--json"],
        &["export", "1", "--format", "csv"],
        &["export", "1", "--format", "hdr"],
        &["export", "1", "--format", "cyclictest-json"],
        &["runs", "--json"],
    ] {
        assert_eq!(ok(&lite, args), ok(shared, args), "{args:?}");
    }
    // A run recorded straight into PostgreSQL, chosen by AUDIOLAT_DB (no --db).
    let mut cmd = std::process::Command::new(crate::util::bin());
    cmd.args(["jitter", "--loops", "2000", "--quiet", "--json"])
        .env("AUDIOLAT_DB", &url)
        .stdin(std::process::Stdio::null())
        .current_dir(dir.path());
    let out = output(&mut cmd);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!dir.path().join("audiolat.db").exists());
    let runs = run_json(shared, &["runs", "--host", &this_host(), "--json"]);
    assert_eq!(runs.as_array().unwrap().len(), 2, "{runs}");
    let html = dir.path().join("r.html");
    let report = ok(shared, &["report", "2", "-o", html.to_str().unwrap()]);
    assert!(report.starts_with("report: "), "{report}");
    let page = std::fs::read_to_string(&html).unwrap();
    // The run's row names its metric and its statistics in units.
    let runs = &page[page.find("<section id=\"runs\"").expect("no runs table")..];
    assert!(
        runs.contains("wake-up latency") && runs.contains(" us<"),
        "no measurement in the report's runs table"
    );
}

#[test]
fn two_processes_write_runs_concurrently_and_both_are_kept() {
    let Some(server) = pg::start() else { return };
    let _m = machine_lock();
    let url = server.url();
    let shared = Path::new(&url);
    let args = ["jitter", "--duration", "3s", "--quiet", "--json"];
    let a = spawn(shared, &args);
    let b = spawn(shared, &args);
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let runs = run_json(shared, &["runs", "--json"]);
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_ne!(runs[0]["id"], runs[1]["id"]);
    for r in runs {
        assert_eq!(r["status"], "complete", "{r}");
    }
}

#[test]
fn a_pushed_file_is_stored_once_and_compare_takes_hosts_and_kernels() {
    let Some(server) = pg::start() else { return };
    let _m = machine_lock();
    let (_dir, lite) = temp_db("board.db");
    let url = server.url();
    let shared = Path::new(&url);
    let jitter = ["jitter", "--loops", "4000", "--quiet"];
    for _ in 0..2 {
        ok(&lite, &jitter);
        ok(shared, &jitter);
    }
    // The board's runs, as another board with another kernel made them.
    rusqlite::Connection::open(&lite)
        .unwrap()
        .execute_batch(
            "UPDATE run SET hostname = 'board-b',
                machine = json_set(machine, '$.hostname', 'board-b', '$.kernel_release', '6.1.0-b')",
        )
        .unwrap();
    let first = ok(&lite, &["push", "--to", &url]);
    assert!(first.starts_with("pushed 2 runs from"), "{first}");
    let second = ok(&lite, &["push", "--to", &url]);
    assert!(second.starts_with("pushed 0 runs"), "{second}");
    assert!(second.contains("2 runs there already"), "{second}");
    let all = run_json(shared, &["runs", "--json"]);
    assert_eq!(all.as_array().unwrap().len(), 4, "{all}");
    let b = run_json(shared, &["runs", "--host", "board-b", "--json"]);
    assert_eq!(b.as_array().unwrap().len(), 2, "{b}");
    let k = run_json(shared, &["runs", "--kernel", "6.1.0-b", "--json"]);
    assert_eq!(k.as_array().unwrap().len(), 2, "{k}");

    let host_b = "host:board-b".to_string();
    let here = format!("host:{}", this_host());
    let kernel_here = format!(
        "kernel:{}",
        String::from_utf8(
            std::process::Command::new("uname")
                .arg("-r")
                .output()
                .unwrap()
                .stdout
        )
        .unwrap()
        .trim()
    );
    for (a, b) in [
        (&host_b, &here),
        (&"kernel:6.1.0-b".to_string(), &kernel_here),
    ] {
        let cmp = run_json(shared, &["compare", a, b, "--json"]);
        let rows = cmp["rows"].as_array().unwrap_or_else(|| panic!("{cmp}"));
        assert!(!rows.is_empty(), "{cmp}");
        for r in rows {
            assert_eq!(r["runs"], serde_json::json!([2, 2]), "{r}");
            // Two repeats a side: the noise is known.
            assert!(r["noise"].is_number(), "{r}");
        }
    }
}

#[test]
fn postgresql_stopped_mid_run_keeps_the_run_locally_and_says_how_to_push_it() {
    let Some(mut server) = pg::start() else {
        return;
    };
    let _m = machine_lock();
    let dir = crate::util::tempdir();
    let url = server.url();
    let shared = Path::new(&url);
    let mut cmd = crate::util::command(shared, &["jitter", "-D", "5s", "--quiet"]);
    let child = cmd
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Stopped once the run is under way (its row is in the store).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        // (Refused until the run's process has made the schema.)
        let runs = run(shared, &["runs", "--json"]);
        if runs.code == 0 && runs.stdout.contains("\"id\"") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the run never began");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    server.stop();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let local = dir.path().join("audiolat-unpushed.db");
    let push = format!("audiolat push --db {} --to", local.display());
    assert!(stderr.contains(&push), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // Kept there, ended as it would have, with what it measured.
    let runs = run_json(&local, &["runs", "--json"]);
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "complete", "{:?}", runs[0]);
    // Its start is the server's: its duration counts from there (not from the move).
    assert!(
        runs[0]["duration_s"].as_f64().is_some_and(|d| d > 0.0),
        "{:?}",
        runs[0]
    );
    let shown = run_json(&local, &["show", "1", "--json"]);
    let count = shown["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "wakeup_latency")
        .map(|m| m["summary"]["count"].as_u64().unwrap_or(0))
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(count > 0, "{shown}");

    // Pushed once the server is back: it replaces the unfinished copy there.
    server.restart();
    let url = server.url();
    let shared = Path::new(&url);
    let pushed = ok(&local, &["push", "--to", &url]);
    assert!(pushed.starts_with("pushed 1 run"), "{pushed}");
    let there = run_json(shared, &["runs", "--json"]);
    let there = there.as_array().unwrap();
    assert_eq!(there.len(), 1, "{there:?}");
    assert_eq!(there[0]["status"], "complete");
}

/// A "server" on a loopback port that accepts connections and never answers: each
/// connection is held open, silent, until the guard drops.
struct SilentServer {
    port: u16,
    held: std::sync::Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
}

impl SilentServer {
    fn start() -> SilentServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let keep = held.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                keep.lock().unwrap().push(conn);
            }
        });
        SilentServer { port, held }
    }

    /// How many connections it has accepted.
    fn connections(&self) -> usize {
        self.held.lock().unwrap().len()
    }

    fn url(&self, query: &str) -> String {
        format!("postgres://audiolat@127.0.0.1:{}/silent{query}", self.port)
    }
}

/// A server that accepts the connection and never answers: the connection gives up
/// after its `connect_timeout` (exit 2, one line, nothing run), and a Ctrl-C or SIGTERM
/// while it waits (here with no bound: `connect_timeout=0`, as libpq reads it) ends
/// the command with 130.
#[test]
fn a_server_that_never_answers_times_out_and_a_stop_ends_the_wait() {
    let server = SilentServer::start();
    let url = server.url("?connect_timeout=2");
    for args in [&["jitter", "-D", "100ms", "-q"][..], &["runs"]] {
        let out = run(Path::new(&url), args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("did not answer within 2 s"),
            "{args:?}: {}",
            out.stderr
        );
        assert!(out.stdout.is_empty(), "{}", out.stdout);
    }
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let url = server.url("?connect_timeout=0");
        let before = server.connections();
        let mut child = crate::util::KillOnDrop(spawn(Path::new(&url), &["jitter", "-q"]));
        // Waiting for the server (its signal handlers are set before it connects).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while server.connections() == before {
            assert!(std::time::Instant::now() < deadline, "it never connected");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        // SAFETY: signalling the audiolat this test started.
        unsafe { libc::kill(child.id() as i32, signal) };
        let status = crate::util::wait_timeout(&mut child.0, std::time::Duration::from_secs(60));
        let mut stderr = String::new();
        std::io::Read::read_to_string(child.0.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        assert_eq!(status.code(), Some(130), "signal {signal}: {stderr}");
        assert!(stderr.contains("stopped while connecting"), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}
