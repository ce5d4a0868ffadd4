use super::*;
use crate::model::{Machine, NewPlanCell, ToolInfo};
use crate::run::RunInfo;
use rusqlite::params;
use serde_json::json;

fn test_info() -> RunInfo {
    RunInfo {
        probe: &crate::probe_kind::JITTER,
        group_id: None,
        machine: Machine::default(),
        tool: ToolInfo::default(),
        command_line: "audiolat test".into(),
        config: json!({}),
        load: json!({}),
        qos_requested: json!({}),
        started_mono_ns: None,
    }
}

fn one_line(e: &StoreError) -> String {
    let s = e.to_string();
    assert!(!s.contains('\n'), "{s}");
    s
}

#[test]
fn first_opens_racing_to_create_a_database_all_succeed() {
    for round in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("race{round}.db"));
        let opened: Vec<_> = (0..6)
            .map(|_| {
                let path = path.clone();
                std::thread::spawn(move || Store::open(&path).map(|s| s.schema_version()))
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect();
        for o in opened {
            assert_eq!(o.unwrap().unwrap(), SCHEMA_VERSION, "round {round}");
        }
    }
}

fn foreign_file(dir: &Path) -> (PathBuf, Vec<u8>) {
    let path = dir.join("other.db");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine');")
        .unwrap();
    drop(conn);
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

#[test]
fn another_programs_database_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let (path, before) = foreign_file(dir.path());
    for err in [
        Store::open(&path).unwrap_err(),
        Store::open_read_only(&path).unwrap_err(),
    ] {
        let msg = one_line(&err);
        assert!(matches!(err, StoreError::Open { .. }), "{msg}");
        assert!(msg.contains("not an audiolat results database"), "{msg}");
        assert!(msg.contains("notes"), "{msg}");
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the file was changed"
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["other.db"], "no -wal, -shm or reserve beside it");
}

#[test]
fn reading_creates_migrates_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.db");
    assert!(matches!(
        Store::open_read_only(&missing),
        Err(StoreError::Missing(_))
    ));
    assert!(!missing.exists());
    // An older audiolat's database is read by nobody that only reads: the refusal
    // names the command that upgrades it, and the file is left at its version.
    let old = dir.path().join("v2.db");
    {
        let conn = Connection::open(&old).unwrap();
        conn.execute_batch(&schema_up_to(2)).unwrap();
    }
    let before = std::fs::read(&old).unwrap();
    let msg = one_line(&Store::open_read_only(&old).unwrap_err());
    assert!(
        msg.contains("schema version 2") && msg.contains("upgrades it"),
        "{msg}"
    );
    assert_eq!(std::fs::read(&old).unwrap(), before);
    // An empty file is not a database of runs, and stays empty.
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let msg = one_line(&Store::open_read_only(&empty).unwrap_err());
    assert!(msg.contains("empty"), "{msg}");
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);
    // A current one is read, and a write through it fails.
    let path = dir.path().join("a.db");
    let store = Store::open(&path).unwrap();
    let g = store.create_group("suite", "x", &json!({})).unwrap();
    drop(store);
    let reader = Store::open_read_only(&path).unwrap();
    assert_eq!(reader.group(g).unwrap().command_line, "x");
    assert!(reader.create_group("suite", "y", &json!({})).is_err());
}

#[test]
fn open_time_failures_are_one_line_naming_the_file_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.db");
    let store = Store::open(&good).unwrap();
    for i in 0..200 {
        store
            .create_group("suite", &format!("{i:0>300}"), &json!({}))
            .unwrap();
    }
    drop(store);
    let bytes = std::fs::read(&good).unwrap();
    assert!(bytes.len() > 8 * 4096);
    let garbage = dir.path().join("garbage.db");
    std::fs::write(&garbage, vec![0x5a; 8192]).unwrap();
    let truncated = dir.path().join("truncated.db");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let cases: Vec<(PathBuf, &str, &str)> = vec![
        (dir.path().to_path_buf(), "directory", "directory"),
        (
            dir.path().join("no/such/dir/x.db"),
            "does not exist",
            "no results database",
        ),
        (garbage, "not an SQLite database", "not an SQLite database"),
        (truncated, "damaged", "damaged"),
    ];
    for (path, writing, reading) in cases {
        for (err, want) in [
            (Store::open(&path).err(), writing),
            (Store::open_read_only(&path).err(), reading),
        ] {
            let err = err.unwrap_or_else(|| panic!("{path:?} opened"));
            let msg = one_line(&err);
            assert!(msg.contains(want), "{path:?}: {msg}");
            assert!(msg.contains(&path.display().to_string()), "{msg}");
            assert!(!msg.contains("Error code"), "raw SQLite error: {msg}");
            assert!(!msg.contains("--"), "a library error names no flag: {msg}");
        }
    }
}

#[test]
fn a_writer_keeps_a_reserve_that_a_closing_write_may_use() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let store = Store::open(&path).unwrap();
    let reserve = reserve_path(&path);
    assert!(
        !reserve.exists(),
        "made with the first run, not by the open"
    );
    store.begin_run(&test_info()).unwrap();
    assert_eq!(std::fs::metadata(&reserve).unwrap().len(), RESERVE_BYTES);
    // A closing write that finds the disk full removes the reserve and tries again.
    let mut tries = 0;
    let done = store.closing(|| {
        tries += 1;
        if tries == 1 {
            Err(StoreError::Sql(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
                None,
            )))
        } else {
            Ok(tries)
        }
    });
    assert_eq!(done.unwrap(), 2);
    assert!(!reserve.exists());
    drop(store);
    Store::open(&path).unwrap().begin_run(&test_info()).unwrap();
    assert!(reserve.exists(), "the next run makes it again");
}

#[test]
fn a_reserve_is_made_whole_beside_others_and_never_removed_by_a_failed_make() {
    let dir = tempfile::tempdir().unwrap();
    let reserve = dir.path().join("r.db-reserve");
    let tmp = dir.path().join("r.db-reserve.tmp.1.0");
    let plenty = Some(RESERVE_BYTES * 8);
    // Too little room beside it (a closing write may just have freed it): not made.
    let tight = Some(RESERVE_BYTES + MIN_FREE_BYTES - 1);
    assert!(!make_reserve(&reserve, &tmp, tight).unwrap());
    assert!(!reserve.exists() && !tmp.exists());
    // Another process's part-made reserve is not truncated by a make that fails
    // (here: its own file cannot be made), nor removed.
    std::fs::write(&reserve, b"part").unwrap();
    std::fs::create_dir(&tmp).unwrap();
    assert!(make_reserve(&reserve, &tmp, plenty).is_err());
    assert_eq!(std::fs::read(&reserve).unwrap(), b"part");
    assert!(tmp.is_dir(), "a file it did not make is left alone");
    std::fs::remove_dir(&tmp).unwrap();
    // Made whole, under its own name first.
    assert!(make_reserve(&reserve, &tmp, plenty).unwrap());
    assert_eq!(std::fs::metadata(&reserve).unwrap().len(), RESERVE_BYTES);
    assert!(!tmp.exists());
    // Whole already: left as it is.
    assert!(!make_reserve(&reserve, &tmp, plenty).unwrap());
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["r.db-reserve"]);
}

#[test]
fn groups_and_plan_cells_of_dead_processes_are_closed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.db");
    let store = Store::open(&path).unwrap();
    let dead = i32::MAX as i64 - 1;
    let plan = store
        .create_group("plan", "audiolat run p.toml", &json!({"runner_pid": dead}))
        .unwrap();
    store
        .add_plan_cells(
            plan,
            &[NewPlanCell {
                seq: 0,
                key: "a".into(),
                axes: json!({}),
                argv: vec!["jitter".into()],
                profile: "current".into(),
            }],
        )
        .unwrap();
    let cell = store.plan_cells(plan).unwrap()[0].id;
    store.start_plan_cell(cell).unwrap();
    let alive = store
        .create_group(
            "plan",
            "audiolat run q.toml",
            &json!({"runner_pid": std::process::id()}),
        )
        .unwrap();
    // A sweep whose process died before its first run, and one of an older audiolat
    // (no owner in its detail) whose runs name it.
    let sweep = store
        .create_group("sweep", "audiolat jitter --cpu 0,1", &json!({}))
        .unwrap();
    assert_eq!(
        store.group(sweep).unwrap().detail["runner_pid"],
        json!(std::process::id())
    );
    store
        .db
        .lite()
        .execute(
            "UPDATE run_group SET detail = json_set(detail, '$.runner_pid', ?2) WHERE id = ?1",
            params![sweep, dead],
        )
        .unwrap();
    let old = store
        .create_group("suite", "audiolat suite", &json!({}))
        .unwrap();
    store
        .db
        .lite()
        .execute(
            "UPDATE run_group SET detail = '{}' WHERE id = ?1",
            params![old],
        )
        .unwrap();
    let old_run = store
        .begin_run(&RunInfo {
            probe: &crate::probe_kind::JITTER,
            group_id: Some(old),
            machine: Machine {
                hostname: hostname(),
                ..Machine::default()
            },
            tool: ToolInfo::default(),
            command_line: "audiolat suite".into(),
            config: json!({}),
            load: json!({}),
            qos_requested: json!({}),
            started_mono_ns: None,
        })
        .unwrap();
    store
        .db
        .lite()
        .execute(
            "UPDATE run SET pid = ?2 WHERE id = ?1",
            params![old_run, dead],
        )
        .unwrap();
    drop(store);
    let store = Store::open(&path).unwrap();
    for g in [sweep, old] {
        assert_eq!(
            store.group_status(g).unwrap().1,
            RunStatus::Interrupted,
            "{g}"
        );
    }
    assert_eq!(store.group_status(plan).unwrap().1, RunStatus::Interrupted);
    let g = store.group(plan).unwrap();
    assert!(g.detail["end_reason"]
        .as_str()
        .unwrap()
        .contains("ended without closing"));
    let c = &store.plan_cells(plan).unwrap()[0];
    assert_eq!(c.status, Some(RunStatus::Interrupted));
    assert!(c
        .error
        .as_deref()
        .unwrap()
        .contains("ended without closing"));
    assert_eq!(store.group_status(alive).unwrap().1, RunStatus::Running);
}

#[test]
fn sqlites_special_names_are_refused_and_a_path_names_a_file() {
    for name in [
        ":memory:",
        "file:x.db",
        "FILE:x.db?mode=memory",
        "file::memory:",
    ] {
        let path = Path::new(name);
        for err in [
            Store::open(path).unwrap_err(),
            Store::open_read_only(path).unwrap_err(),
            Store::open_existing(path).unwrap_err(),
            Store::open_reading(path, &|_, _| Ok(Recovered::default()), &|_| {}).unwrap_err(),
            Store::close_abandoned(path, &|_, _| Ok(Recovered::default())).unwrap_err(),
            Store::fold_log(path).unwrap_err(),
        ] {
            let msg = one_line(&err);
            assert!(
                matches!(
                    err,
                    StoreError::Open {
                        fix: Remedy::PlainPath,
                        ..
                    }
                ),
                "{name}: {msg}"
            );
        }
        // Nothing made in the working directory (a reserve, a file so named).
        for made in [name.to_string(), format!("{name}-reserve")] {
            assert!(!Path::new(&made).exists(), "{made} was made");
        }
    }
    // The same names as a path (`./:memory:`, here under a directory): files so named.
    let dir = tempfile::tempdir().unwrap();
    for name in [":memory:", "file:x.db"] {
        let path = dir.path().join(name);
        drop(Store::open(&path).unwrap());
        assert!(path.is_file(), "{name}");
    }
}
