//! The results database: unwritable, foreign, damaged, read-only, full, raced for
//! by first runs; reading commands never create one.

use std::time::Duration;

use results::{RunStatus, Store};

use crate::util::{
    self, jackd_pids, machine_lock, parse_json, require_tool, run, run_json, spawn, temp_db,
    tempdir, unique_server, wait_timeout,
};

/// Runs `audiolat --db db args` and checks it refused with exit 2 and one line that names
/// the database, carries `needle`, and repeats no raw SQLite error.
fn refused_in_one_line(db: &std::path::Path, args: &[&str], needle: &str) {
    let out = run(db, args);
    assert_eq!(out.code, 2, "{args:?}: {}{}", out.stdout, out.stderr);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: {}", out.stderr);
    assert!(lines[0].contains(&db.display().to_string()), "{}", lines[0]);
    assert!(lines[0].contains(needle), "{args:?}: {}", lines[0]);
    assert!(!lines[0].contains("Error code"), "{}", lines[0]);
}

#[test]
fn an_unwritable_database_is_refused_before_anything_runs() {
    for db in [
        "/nonexistent-dir/x.db",
        "/proc/audiolat-test.db",
        "/dev/null",
    ] {
        let out = run(std::path::Path::new(db), &["jitter", "--loops", "10"]);
        assert_eq!(out.code, 2, "{db}: {out:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{db}: {}", out.stderr);
        assert!(out.stderr.contains("--db"), "{db}: {}", out.stderr);
        assert!(out.stdout.is_empty());
        for written in [db.to_string(), format!("{db}-journal"), format!("{db}-wal")] {
            if written != "/dev/null" {
                assert!(
                    !std::path::Path::new(&written).exists(),
                    "{written} was written"
                );
            }
        }
    }
    // The same for a directory given as the database.
    let dir = tempdir();
    let out = run(dir.path(), &["jitter", "--loops", "10"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("directory"), "{}", out.stderr);
}

#[test]
fn reading_commands_do_not_create_a_database() {
    let (_dir, db) = temp_db("none.db");
    for args in [&["runs"][..], &["show", "last"], &["export", "1"]] {
        let out = run(&db, args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(out.stderr.contains("no results database"), "{}", out.stderr);
        assert!(!db.exists());
    }
}

#[test]
fn a_database_that_is_not_audiolats_is_refused_and_never_changed() {
    let (dir, db) = temp_db("other.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine');")
        .unwrap();
    drop(conn);
    let before = std::fs::read(&db).unwrap();
    for args in [
        &["runs"][..],
        &["show", "last"],
        &["export", "last", "--format", "csv"],
        &["compare", "1", "2"],
        &["jitter", "-D", "100ms", "-q"],
    ] {
        refused_in_one_line(&db, args, "not an audiolat results database");
    }
    assert_eq!(std::fs::read(&db).unwrap(), before, "the file was changed");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["other.db"], "nothing made beside it");
    // Read-only commands create nothing where there is no database.
    let none = dir.path().join("none.db");
    for args in [&["runs"][..], &["show", "last"], &["report", "last"]] {
        let out = run(&none, args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("no results database"), "{}", out.stderr);
        assert!(!none.exists());
    }
}

#[test]
fn open_time_failures_are_exit_2_in_one_line_with_the_fix() {
    let _m = machine_lock();
    let dir = tempdir();
    refused_in_one_line(dir.path(), &["runs"], "it is a directory");
    refused_in_one_line(
        dir.path(),
        &["jitter", "-D", "100ms", "-q"],
        "it is a directory",
    );
    // A corrupt page deep in a good file: the open succeeds, the query finds it.
    let db = dir.path().join("c.db");
    for _ in 0..3 {
        assert_eq!(run(&db, &["jitter", "-D", "100ms", "-q"]).code, 0);
    }
    let mut bytes = std::fs::read(&db).unwrap();
    assert!(bytes.len() >= 4 * 4096);
    let tail = bytes.len() - 4096;
    bytes[tail..].fill(0x5a);
    bytes[2 * 4096..3 * 4096].fill(0x5a);
    std::fs::write(&db, &bytes).unwrap();
    for args in [
        &["runs"][..],
        &["show", "last"],
        &["jitter", "-D", "100ms", "-q"],
    ] {
        refused_in_one_line(&db, args, "damaged");
    }
    // A full filesystem, for a command that records runs.
    let Some(fs) = util::Tmpfs::mount(1024) else {
        eprintln!("skipped the full filesystem: it needs root to mount a tmpfs");
        return;
    };
    fs.fill_leaving(0);
    let full = fs.path().join("full.db");
    refused_in_one_line(
        &full,
        &["jitter", "-D", "100ms", "-q"],
        "filesystem is full",
    );
    assert!(!full.exists());
}

#[test]
fn read_only_commands_read_a_database_on_a_read_only_mount() {
    let _m = machine_lock();
    let Some(fs) = util::Tmpfs::mount(8 * 1024) else {
        eprintln!("skipped: it needs root to mount a tmpfs read-only");
        return;
    };
    let db = fs.path().join("ro.db");
    assert_eq!(run(&db, &["jitter", "-D", "200ms", "-q"]).code, 0);
    fs.make_read_only();
    let runs = run_json(&db, &["runs", "--json"]);
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    let shown = run_json(&db, &["show", "last", "--json"]);
    assert_eq!(shown["run"]["status"], "complete", "{shown}");
    let out = run(&db, &["export", "last", "--format", "csv"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = tempdir();
    let html = report.path().join("r.html");
    let out = run(&db, &["report", "last", "-o", html.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // A command that records runs says why it cannot, in one line.
    refused_in_one_line(&db, &["jitter", "-D", "100ms", "-q"], "not writable");
}

#[test]
fn first_runs_racing_to_create_one_database_all_succeed() {
    let _m = machine_lock();
    for round in 0..3 {
        let (_dir, db) = temp_db("new.db");
        let children: Vec<_> = (0..4)
            .map(|_| util::KillOnDrop(spawn(&db, &["jitter", "-D", "100ms", "-q", "--json"])))
            .collect();
        for mut c in children {
            let status = wait_timeout(&mut c.0, Duration::from_secs(60));
            let mut stderr = String::new();
            std::io::Read::read_to_string(c.0.stderr.as_mut().unwrap(), &mut stderr).unwrap();
            assert!(status.success(), "round {round}: {stderr}");
        }
        let runs = run_json(&db, &["runs", "--json"]);
        assert_eq!(
            runs.as_array().map(Vec::len),
            Some(4),
            "round {round}: {runs}"
        );
    }
}

#[test]
fn a_disk_filling_mid_run_keeps_what_was_measured_and_says_disk_full() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let Some(fs) = util::Tmpfs::mount(4 * 1024) else {
        eprintln!("skipped: it needs root to mount a small tmpfs");
        return;
    };
    let db = fs.path().join("full.db");
    let name = unique_server("diskfull");
    let args = [
        "event",
        "--server",
        "dummy",
        "--server-name",
        &name,
        "--triggers",
        "80",
        "--spacing",
        "30ms",
        "--note",
        "10ms",
        "-q",
        "--json",
    ];
    // The database and its reserve exist; then the filesystem keeps only enough for the
    // open (the run's trigger rows need more).
    assert_eq!(run(&db, &["jitter", "-D", "100ms", "-q"]).code, 0);
    fs.fill_leaving(320);
    let out = run(&db, &args);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let last = out.stderr.lines().last().unwrap_or_default();
    assert!(last.contains("disk full"), "{}", out.stderr);
    // What was measured is printed.
    let printed = parse_json(&out.stdout);
    let printed = &printed["runs"][0];
    assert_eq!(printed["status"], "failed", "{}", printed["error"]);
    assert_eq!(printed["result"]["triggers"], 80, "{}", printed["result"]);
    assert!(printed["result"]["latency_ms"]["count"].as_u64().unwrap() > 0);
    let store = Store::open_read_only(&db).unwrap();
    let run_id = store.last_run_id().unwrap().unwrap();
    let r = store.run(run_id).unwrap();
    assert_eq!(r.status, RunStatus::Failed);
    assert!(
        r.error.as_deref().unwrap().starts_with("disk full: "),
        "{:?}",
        r.error
    );
    let stored = store.triggers(run_id).unwrap().len();
    assert!(stored < 80, "the disk never filled ({stored} rows stored)");
    let ms = store.measurements(run_id).unwrap();
    let latency = ms
        .iter()
        .find(|m| m.measurement.metric == "event_latency")
        .expect("the summary is stored");
    // The summary is the whole run's, not only the rows the disk took.
    assert!(
        latency.measurement.count() as usize > stored,
        "{} in the summary, {stored} rows stored",
        latency.measurement.count()
    );
    assert!(jackd_pids(&name).is_empty());
}
