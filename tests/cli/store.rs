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

/// `--db :memory:` and SQLite URIs (`file:...`) would store runs nowhere, or somewhere
/// the name does not say: every command refuses them (exit 2, one line), making
/// nothing; `./:memory:` is a file of that name.
#[test]
fn sqlites_special_names_are_refused_by_every_command() {
    let dir = tempdir();
    let real = dir.path().join("real.db");
    for name in [":memory:", "file:x.db", "file:x.db?mode=memory"] {
        let db = std::path::Path::new(name);
        let html = dir.path().join("r.html");
        for args in [
            &["jitter", "-D", "100ms", "-q"][..],
            &["runs"],
            &["show", "last"],
            &["export", "last", "--format", "csv"],
            &["report", "last", "-o", html.to_str().unwrap()],
            &["compare", "1", "2"],
            &["push", "--to", real.to_str().unwrap()],
        ] {
            let out = util::output(util::command(db, args).current_dir(dir.path()));
            assert_eq!(out.code, 2, "{name} {args:?}: {out:?}");
            assert_eq!(out.stderr.lines().count(), 1, "{name} {args:?}: {out:?}");
            assert!(
                out.stderr.contains("a file's path"),
                "{name} {args:?}: {}",
                out.stderr
            );
        }
        // As the target of a push.
        let out =
            util::output(util::command(&real, &["push", "--to", name]).current_dir(dir.path()));
        assert_eq!(out.code, 2, "push --to {name}: {out:?}");
    }
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.is_empty(), "made: {names:?}");
    // A path: a file so named.
    let out = util::output(
        util::command(
            std::path::Path::new("./:memory:"),
            &["jitter", "-D", "100ms", "-q"],
        )
        .current_dir(dir.path()),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("stored as run 1 in ./:memory:"),
        "{}",
        out.stdout
    );
    assert!(dir.path().join(":memory:").is_file());
}

/// Another process's write transaction on the database at `path`, held until dropped
/// (as `sqlite3 X.db 'BEGIN EXCLUSIVE; ...'` would).
struct HeldLock(rusqlite::Connection);

impl HeldLock {
    fn take(path: &std::path::Path) -> HeldLock {
        let c = rusqlite::Connection::open(path).unwrap();
        c.busy_timeout(Duration::from_secs(30)).unwrap();
        c.execute_batch("BEGIN EXCLUSIVE; UPDATE run SET pid = pid;")
            .unwrap();
        HeldLock(c)
    }
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        let _ = self.0.execute_batch("COMMIT");
    }
}

/// The last line of `stdout` that says where the run is.
fn stored_line(stdout: &str) -> &str {
    stdout
        .lines()
        .rfind(|l| {
            l.starts_with("stored as")
                || l.starts_with("not stored")
                || l.contains("could not be stored")
        })
        .unwrap_or_default()
}

/// A database another process holds locked when a measured run closes: the run is
/// waited for (bounded), then kept whole beside the database, printed, and said so;
/// "stored as run N" is not printed; the copy the database kept is closed by the next
/// command with where the run is; `audiolat push` puts the run back.
#[test]
fn a_database_locked_at_store_time_keeps_the_run_beside_it_and_says_so() {
    let _m = machine_lock();
    let (dir, db) = temp_db("locked.db");
    assert_eq!(run(&db, &["jitter", "-D", "100ms", "-q"]).code, 0);
    let spawned = std::time::Instant::now();
    let child = util::KillOnDrop(spawn(&db, &["jitter", "-D", "3s", "-q"]));
    // Locked once the run is under way (its row is in the database).
    let running = running_run(&db);
    let held = HeldLock::take(&db);
    let out = finished(child);
    let took = spawned.elapsed();
    drop(held);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let spool = dir.path().join(results::store::UNPUSHED_DB);
    // What was measured is printed, and where it is kept.
    assert!(
        out.stdout
            .contains(&format!("jitter run {running}: complete after")),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("stored as run"), "{}", out.stdout);
    let line = stored_line(&out.stdout);
    assert!(
        line.contains(&format!("kept in {} as run 1", spool.display())),
        "{}",
        out.stdout
    );
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("locked"), "{}", out.stderr);
    let push = format!(
        "audiolat push --db {} --to {}",
        spool.display(),
        db.display()
    );
    assert!(out.stderr.contains(&push), "{}", out.stderr);
    // Kept there whole, complete, with the cycles it printed.
    let printed: u64 = out
        .stdout
        .split("complete after ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", out.stdout));
    let kept = run_json(&spool, &["show", "1", "--json"]);
    assert_eq!(kept["run"]["status"], "complete", "{}", kept["run"]);
    assert_eq!(
        kept["run"]["result"]["cycles"].as_u64(),
        Some(printed),
        "{}",
        kept["run"]
    );
    // Its duration is what it measured: the wait for the lock is no part of it.
    let secs = kept["run"]["duration_s"].as_f64().unwrap();
    let waited = took.saturating_sub(results::store::LOCK_WAIT).as_secs_f64();
    assert!(secs <= waited, "{secs} s stored, the command took {took:?}");
    // The copy left in the database, closed by the next command: where the run is.
    let shown = run_json(&db, &["show", "2", "--json"]);
    assert_eq!(shown["run"]["status"], "interrupted", "{}", shown["run"]);
    let why = shown["run"]["error"].as_str().unwrap_or_default();
    assert!(
        why.contains(&format!("kept it in {} as run 1", spool.display())),
        "{why}"
    );
    // Put back.
    let out = run(&spool, &["push", "--to", db.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let runs = run_json(&db, &["runs", "--json"]);
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0]["status"], "complete", "{runs:?}");

    // Nowhere to keep it (no file can be made beside it or in the working directory):
    // what was measured is printed, and said not stored.
    std::fs::remove_file(&spool).unwrap();
    std::fs::create_dir(&spool).unwrap();
    let child = util::KillOnDrop(
        util::command(&db, &["jitter", "-D", "3s", "-q"])
            .current_dir(dir.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let running = running_run(&db);
    let held = HeldLock::take(&db);
    let out = finished(child);
    drop(held);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains(&format!("jitter run {running}: ")),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("wakeup_latency"), "{}", out.stdout);
    assert!(!out.stdout.contains("stored as run"), "{}", out.stdout);
    assert!(
        stored_line(&out.stdout).contains("could not be stored"),
        "{}",
        out.stdout
    );
    assert!(out.stderr.contains("could not be stored"), "{}", out.stderr);
    assert!(spool.is_dir());
}

/// A sweep (`event`, here on the virtual card) whose run the database cannot take at
/// store time: its last lines say where that run is kept, never "stored in DB".
#[test]
fn a_sweeps_run_the_database_could_not_take_is_said_kept_elsewhere() {
    let _m = machine_lock();
    let (dir, db) = temp_db("sweeplocked.db");
    let child = util::KillOnDrop(spawn(
        &db,
        &[
            "event",
            "--backend",
            "virtual",
            "--policy",
            "fixed",
            "-n",
            "30",
            "--spacing",
            "100ms",
        ],
    ));
    let running = running_run(&db);
    let held = HeldLock::take(&db);
    let out = finished(child);
    drop(held);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let spool = dir.path().join(results::store::UNPUSHED_DB);
    assert!(
        !out.stdout.lines().any(|l| l.starts_with("stored in")),
        "{}",
        out.stdout
    );
    assert!(
        stored_line(&out.stdout).contains(&format!("kept in {} as run 1", spool.display())),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(&format!("run {running}: ")),
        "{}",
        out.stdout
    );
    let kept = run_json(&spool, &["show", "1", "--json"]);
    assert_eq!(kept["run"]["probe"], "event", "{}", kept["run"]);
}

/// The run a command began in `db`, once it is under way (`running`).
fn running_run(db: &std::path::Path) -> results::RunId {
    let found = std::cell::Cell::new(None);
    util::poll_read_only(db, "the run never began", |s| {
        let running = s
            .list_runs(&results::RunFilter {
                status: Some(RunStatus::Running),
                ..Default::default()
            })
            .unwrap_or_default();
        found.set(running.first().map(|r| r.id));
        found.get().is_some()
    });
    found.get().unwrap()
}

/// A child's exit and what it printed (its output piped), waited for at most 2 min.
fn finished(mut child: util::KillOnDrop) -> util::Output {
    use std::io::Read;
    let status = wait_timeout(&mut child.0, Duration::from_secs(120));
    let (mut stdout, mut stderr) = (String::new(), String::new());
    if let Some(mut o) = child.0.stdout.take() {
        o.read_to_string(&mut stdout).unwrap();
    }
    if let Some(mut e) = child.0.stderr.take() {
        e.read_to_string(&mut stderr).unwrap();
    }
    util::Output {
        code: status.code().unwrap_or(-1),
        stdout,
        stderr,
    }
}

/// A full filesystem without room for the reserve file when a measured run closes: the
/// run is kept in the working directory's file, printed, and said so.
#[test]
fn a_full_disk_without_a_reserve_keeps_the_run_in_the_working_directory() {
    let _m = machine_lock();
    let Some(fs) = util::Tmpfs::mount(4 * 1024) else {
        eprintln!("skipped: it needs root to mount a small tmpfs");
        return;
    };
    let db = fs.path().join("full.db");
    assert_eq!(run(&db, &["jitter", "-D", "100ms", "-q"]).code, 0);
    // No reserve, and no room to make one: enough left for the open; once the run is
    // under way, nothing at all.
    std::fs::remove_file(fs.path().join("full.db-reserve")).unwrap();
    fs.fill_leaving(300);
    let cwd = tempdir();
    let child = util::KillOnDrop(
        util::command(&db, &["jitter", "-D", "3s", "-q"])
            .current_dir(cwd.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let running = running_run(&db);
    fs.fill_leaving(0);
    let out = finished(child);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(!fs.path().join("full.db-reserve").exists());
    let spool = cwd.path().join(results::store::UNPUSHED_DB);
    assert!(
        out.stdout
            .contains(&format!("jitter run {running}: complete after")),
        "{}",
        out.stdout
    );
    let line = stored_line(&out.stdout);
    assert!(
        line.contains(&format!("kept in {} as run 1", spool.display())),
        "{}",
        out.stdout
    );
    assert!(out.stderr.contains("full"), "{}", out.stderr);
    let kept = run_json(&spool, &["show", "1", "--json"]);
    assert_eq!(kept["run"]["status"], "complete", "{}", kept["run"]);
}

/// A database audiolat refuses (another program's, damaged, not SQLite, from a newer
/// audiolat) gets nothing made beside it: no reserve file, no -wal or -shm.
#[test]
fn refused_databases_get_nothing_beside_them() {
    let _m = machine_lock();
    let root = tempdir();
    let make = |name: &str| {
        let dir = root.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        dir.join(format!("{name}.db"))
    };
    let foreign = make("foreign");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE notes (body TEXT);")
        .unwrap();
    let newer = make("newer");
    rusqlite::Connection::open(&newer)
        .unwrap()
        .execute_batch(
            "CREATE TABLE run (x); CREATE TABLE run_group (y); PRAGMA user_version = 99;",
        )
        .unwrap();
    let garbage = make("garbage");
    std::fs::write(&garbage, vec![0x5au8; 8192]).unwrap();
    // Damaged deep inside: the open succeeds, a query finds it.
    let damaged = make("damaged");
    for _ in 0..3 {
        assert_eq!(run(&damaged, &["jitter", "-D", "100ms", "-q"]).code, 0);
    }
    for entry in std::fs::read_dir(damaged.parent().unwrap()).unwrap() {
        let path = entry.unwrap().path();
        if path != damaged {
            std::fs::remove_file(path).unwrap();
        }
    }
    let mut bytes = std::fs::read(&damaged).unwrap();
    let tail = bytes.len() - 4096;
    bytes[tail..].fill(0x5a);
    bytes[2 * 4096..3 * 4096].fill(0x5a);
    std::fs::write(&damaged, &bytes).unwrap();
    let beside = |db: &std::path::Path| -> Vec<String> {
        std::fs::read_dir(db.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| *n != db.file_name().unwrap().to_string_lossy())
            .collect()
    };
    for db in [&foreign, &newer, &garbage, &damaged] {
        for args in [&["jitter", "-D", "100ms", "-q"][..], &["suite", "-q"]] {
            let out = run(db, args);
            assert_eq!(out.code, 2, "{} {args:?}: {}", db.display(), out.stderr);
            assert!(beside(db).is_empty(), "{args:?} made {:?}", beside(db));
        }
        // A reader makes no reserve either (SQLite's own -wal and -shm of a database in
        // write-ahead-log mode are its readers' as much as its writers').
        let out = run(db, &["runs"]);
        assert_eq!(out.code, 2, "{} runs: {}", db.display(), out.stderr);
        let made = beside(db);
        assert!(
            made.iter()
                .all(|n| n.ends_with("-wal") || n.ends_with("-shm")),
            "runs made {made:?}"
        );
    }
}
