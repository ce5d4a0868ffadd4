use super::*;
use rusqlite::params;

fn no_shared_memory(_: &Path) -> Result<(), String> {
    Err("no shared mappings here (a test's 9p)".into())
}

fn header_modes(path: &Path) -> (u8, u8) {
    let bytes = std::fs::read(path).unwrap();
    (bytes[18], bytes[19])
}

#[test]
fn a_local_directory_maps_shared_memory_and_leaves_no_test_file() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(shared_mmap_works(dir.path()), Ok(()));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    let store = Store::open(&dir.path().join("a.db")).unwrap();
    assert_eq!(store.journal(), &Journal::Wal);
}

#[test]
fn without_shared_memory_a_wal_database_is_turned_over_whole_and_said_once() {
    let dir = tempfile::tempdir().unwrap();
    // A database with a write-ahead log still holding its last write, as another
    // machine left it (its files copied while it was open).
    let made = dir.path().join("made.db");
    let store = Store::open(&made).unwrap();
    let group = store
        .create_group("suite", "made elsewhere", &serde_json::json!({}))
        .unwrap();
    let copy = dir.path().join("copy.db");
    std::fs::copy(&made, &copy).unwrap();
    std::fs::copy(made.with_extension("db-wal"), copy.with_extension("db-wal")).unwrap();
    drop(store);
    assert_eq!(header_modes(&copy), (2, 2), "copied in WAL mode");
    let store = Store::open_checking(&copy, no_shared_memory).unwrap();
    assert!(
        matches!(store.journal(), Journal::Rollback { switched: true, .. }),
        "{:?}",
        store.journal()
    );
    assert_eq!(store.group(group).unwrap().command_line, "made elsewhere");
    drop(store);
    assert_eq!(header_modes(&copy), (1, 1), "turned to a rollback journal");
    assert!(!copy.with_extension("db-wal").exists());
    // Opened again there: already so, untouched, nothing new to say.
    let before = std::fs::read(&copy).unwrap();
    let store = Store::open_checking(&copy, no_shared_memory).unwrap();
    assert!(matches!(
        store.journal(),
        Journal::Rollback {
            switched: false,
            ..
        }
    ));
    drop(store);
    assert_eq!(std::fs::read(&copy).unwrap(), before);
    // A new database there starts with a rollback journal, and says so.
    let fresh = dir.path().join("fresh.db");
    let store = Store::open_checking(&fresh, no_shared_memory).unwrap();
    assert!(matches!(
        store.journal(),
        Journal::Rollback { switched: true, .. }
    ));
    drop(store);
    assert_eq!(header_modes(&fresh), (1, 1));
}

/// A database whose write-ahead log still holds its last writes (the files copied
/// while it was open), at schema `version`, with a run a dead process left
/// `running`; and that run's id.
fn copied_with_log(dir: &Path, version: i64) -> (PathBuf, crate::RunId) {
    let made = dir.join(format!("made{version}.db"));
    let conn = Connection::open(&made).unwrap();
    conn.execute_batch("PRAGMA journal_mode=WAL;").unwrap();
    conn.execute_batch(&schema_up_to(version)).unwrap();
    conn.execute(
        "INSERT INTO run (id, probe, status, started_at, started_mono_ns, pid, hostname,
            machine, tool_version, git_commit, build_profile, command_line, config, load,
            qos_requested)
         VALUES (7, 'event', 'running', 't', 0, ?1, ?2, '{}', 'v', 'g', 'p', 'c', '{}',
            '{}', '{}')",
        params![i32::MAX as i64 - 1, hostname()],
    )
    .unwrap();
    let copy = dir.join(format!("copy{version}.db"));
    std::fs::copy(&made, &copy).unwrap();
    std::fs::copy(wal_path(&made), wal_path(&copy)).unwrap();
    drop(conn);
    assert!(std::fs::metadata(wal_path(&copy)).unwrap().len() > 0);
    (copy, crate::RunId(7))
}

#[test]
fn a_reader_folds_an_unshared_log_in_and_changes_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let (copy, run) = copied_with_log(dir.path(), SCHEMA_VERSION);
    let store = Store::fold_log_checking(&copy, no_shared_memory).unwrap();
    assert!(
        matches!(store.journal(), Journal::Rollback { switched: true, .. }),
        "{:?}",
        store.journal()
    );
    drop(store);
    assert_eq!(header_modes(&copy), (1, 1), "turned to a rollback journal");
    assert!(!wal_path(&copy).exists(), "the log is folded in");
    assert!(!reserve_path(&copy).exists(), "no reserve for a reader");
    // The dead process's run is left for the reader's own recovery, with its
    // summariser: not closed here without its summary.
    let reader = Store::open_read_only(&copy).unwrap();
    assert_eq!(reader.run(run).unwrap().status, RunStatus::Running);
    assert_eq!(reader.schema_version().unwrap(), SCHEMA_VERSION);
}

#[test]
fn a_reader_does_not_fold_in_an_older_schemas_log_nor_migrate_it() {
    let dir = tempfile::tempdir().unwrap();
    let (copy, _) = copied_with_log(dir.path(), 3);
    let wal = std::fs::read(wal_path(&copy)).unwrap();
    let before = std::fs::read(&copy).unwrap();
    let err = Store::fold_log_checking(&copy, no_shared_memory).unwrap_err();
    let msg = err.to_string();
    assert!(!msg.contains('\n'), "{msg}");
    assert!(
        msg.contains("schema version 3") && msg.contains("upgrades it"),
        "{msg}"
    );
    assert!(
        std::fs::read(&copy).unwrap() == before,
        "the file was changed"
    );
    assert!(
        std::fs::read(wal_path(&copy)).unwrap() == wal,
        "the log was changed"
    );
    assert!(!reserve_path(&copy).exists());
}

#[test]
fn closing_dead_runs_for_a_reader_keeps_the_journal_mode_and_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    let summarise = |_: &Store, _: &RunRecord| Ok(Recovered::default());
    // A rollback-journal database stays one.
    let (path, run) = copied_with_log(dir.path(), SCHEMA_VERSION);
    drop(Store::fold_log_checking(&path, no_shared_memory).unwrap());
    assert_eq!(header_modes(&path), (1, 1));
    assert_eq!(Store::close_abandoned(&path, &summarise).unwrap(), 1);
    assert_eq!(header_modes(&path), (1, 1), "switched to WAL by a reader");
    assert!(!wal_path(&path).exists());
    let reader = Store::open_read_only(&path).unwrap();
    assert_eq!(reader.run(run).unwrap().status, RunStatus::Interrupted);
    drop(reader);
    // The previous schema is read, but its runs are left as stored, not migrated.
    let (old, run) = copied_with_log(dir.path(), 3);
    let conn = Connection::open(&old).unwrap();
    conn.execute_batch("PRAGMA journal_mode=DELETE;").unwrap();
    drop(conn);
    let before = std::fs::read(&old).unwrap();
    let msg = Store::close_abandoned(&old, &summarise)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("schema version 3"), "{msg}");
    assert!(
        std::fs::read(&old).unwrap() == before,
        "the file was changed"
    );
    let reader = Store::open_read_only(&old).unwrap();
    assert_eq!(reader.schema_version().unwrap(), 3);
    assert_eq!(reader.run(run).unwrap().status, RunStatus::Running);
}
