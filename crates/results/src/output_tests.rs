use super::*;
use std::os::fd::AsRawFd;

/// A directory with a results database in it (`db`, a plain file: the refusals by
/// identity are tested apart from the header's).
fn dir_with_db() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    std::fs::write(&db, b"not a header, the same file all the same").unwrap();
    (dir, db)
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn the_database_is_refused_by_identity_not_by_name() {
    let (dir, db) = dir_with_db();
    let before = std::fs::read(&db).unwrap();
    let linked = dir.path().join("hard.csv");
    std::fs::hard_link(&db, &linked).unwrap();
    let symlinked = dir.path().join("soft.csv");
    std::os::unix::fs::symlink(&db, &symlinked).unwrap();
    let dotted = dir.path().join(".").join("x.db");
    for path in [db.clone(), linked, symlinked, dotted] {
        let e = write(&path, &db, b"run_id\n").unwrap_err();
        assert!(
            matches!(
                e,
                OutputError::Database {
                    part: DatabaseFile::Main,
                    ..
                }
            ),
            "{}: {e:?}",
            path.display()
        );
        assert!(e.is_refusal());
        assert_eq!(std::fs::read(&db).unwrap(), before);
    }
    assert_eq!(names(dir.path()), ["hard.csv", "soft.csv", "x.db"]);
}

#[test]
fn the_databases_companion_files_are_refused_whether_or_not_they_exist() {
    let (dir, db) = dir_with_db();
    std::fs::write(dir.path().join("x.db-wal"), b"log").unwrap();
    for (suffix, part) in [
        ("-wal", DatabaseFile::WriteAheadLog),
        ("-shm", DatabaseFile::SharedMemory),
        ("-journal", DatabaseFile::Journal),
        ("-reserve", DatabaseFile::Reserve),
    ] {
        let path = dir.path().join(format!("x.db{suffix}"));
        match check(&path, &db) {
            Err(OutputError::Database { part: p, .. }) => assert_eq!(p, part, "{suffix}"),
            other => panic!("{suffix}: {other:?}"),
        }
    }
    assert_eq!(std::fs::read(dir.path().join("x.db-wal")).unwrap(), b"log");
}

#[test]
fn a_database_not_made_yet_is_refused_by_its_directory_and_name() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let db = sub.join("new.db");
    let other_spelling = dir.path().join("sub/../sub/./new.db");
    assert!(matches!(
        check(&other_spelling, &db),
        Err(OutputError::Database { .. })
    ));
    assert!(check(&sub.join("new.csv"), &db).is_ok());
    assert!(names(&sub).is_empty());
}

#[test]
fn any_sqlite_file_is_refused_and_kept() {
    let (dir, db) = dir_with_db();
    let other = dir.path().join("other.db");
    let mut bytes = SQLITE_HEADER.to_vec();
    bytes.extend_from_slice(&[0u8; 100]);
    std::fs::write(&other, &bytes).unwrap();
    let e = write(&other, &db, b"csv").unwrap_err();
    assert!(matches!(e, OutputError::Sqlite { .. }), "{e:?}");
    assert_eq!(std::fs::read(&other).unwrap(), bytes);
}

#[test]
fn directories_and_missing_directories_are_refused() {
    let (dir, db) = dir_with_db();
    assert!(matches!(
        check(dir.path(), &db),
        Err(OutputError::Directory { .. })
    ));
    assert!(matches!(
        check(&dir.path().join("none/out.csv"), &db),
        Err(OutputError::NoDirectory { .. })
    ));
}

#[test]
fn a_write_replaces_the_file_whole_keeping_its_mode_and_leaves_no_temporary_file() {
    let (dir, db) = dir_with_db();
    let out = dir.path().join("out.csv");
    write(&out, &db, b"first version, longer than the second\n").unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o640)).unwrap();
    write(&out, &db, b"second\n").unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), b"second\n");
    assert_eq!(
        std::fs::metadata(&out).unwrap().permissions().mode() & 0o777,
        0o640
    );
    assert_eq!(names(dir.path()), ["out.csv", "x.db"]);
}

#[test]
fn a_write_through_a_symbolic_link_replaces_its_target() {
    let (dir, db) = dir_with_db();
    let real = dir.path().join("real.html");
    std::fs::write(&real, b"old").unwrap();
    let link = dir.path().join("latest.html");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    write(&link, &db, b"new").unwrap();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(&real).unwrap(), b"new");
}

#[test]
fn a_full_device_fails_the_write_and_creates_nothing() {
    if !Path::new("/dev/full").exists() {
        eprintln!("skipped: no /dev/full");
        return;
    }
    let (dir, db) = dir_with_db();
    let e = write(Path::new("/dev/full"), &db, b"histogram\n").unwrap_err();
    match &e {
        OutputError::Io { source, .. } => {
            assert_eq!(source.raw_os_error(), Some(libc::ENOSPC), "{e:?}")
        }
        other => panic!("{other:?}"),
    }
    assert!(!e.is_refusal());
    assert_eq!(names(dir.path()), ["x.db"]);
}

/// A rename that fails (here: over a directory that is not empty, which no check lets
/// through) removes the temporary file and leaves the target as it was.
#[test]
fn a_failed_rename_removes_the_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("report.html");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("inside"), b"kept").unwrap();
    assert!(replace(&target, None, b"<html>").is_err());
    assert_eq!(names(dir.path()), ["report.html"]);
    assert_eq!(std::fs::read(target.join("inside")).unwrap(), b"kept");
}

#[test]
fn a_descriptor_path_writes_to_the_descriptor_appending_where_it_appends() {
    let (dir, db) = dir_with_db();
    let log = dir.path().join("log.txt");
    std::fs::write(&log, b"before\n").unwrap();
    let f = OpenOptions::new().append(true).open(&log).unwrap();
    let path = PathBuf::from(format!("/dev/fd/{}", f.as_raw_fd()));
    write(&path, &db, b"after\n").unwrap();
    assert_eq!(std::fs::read(&log).unwrap(), b"before\nafter\n");
    // The database reached through a descriptor is the database.
    let held = File::open(&db).unwrap();
    let through = PathBuf::from(format!("/proc/self/fd/{}", held.as_raw_fd()));
    assert!(matches!(
        check(&through, &db),
        Err(OutputError::Database { .. })
    ));
}

#[test]
fn a_stream_on_the_database_or_an_sqlite_file_is_refused() {
    let (dir, db) = dir_with_db();
    let appending = OpenOptions::new().append(true).open(&db).unwrap();
    let what = Path::new("standard output");
    assert!(matches!(
        check_stream(&appending, what, &db),
        Err(OutputError::Database { .. })
    ));
    let other = dir.path().join("other.db");
    std::fs::write(&other, SQLITE_HEADER).unwrap();
    let appending = OpenOptions::new().append(true).open(&other).unwrap();
    assert!(matches!(
        check_stream(&appending, what, &db),
        Err(OutputError::Sqlite { .. })
    ));
    let plain = File::create(dir.path().join("plain.txt")).unwrap();
    assert!(check_stream(&plain, what, &db).is_ok());
}

#[test]
fn a_new_stream_file_is_never_one_that_exists() {
    let (dir, db) = dir_with_db();
    let log = dir.path().join("cell.log");
    let mut f = create_new(&log, &db).unwrap();
    f.write_all(b"line\n").unwrap();
    assert_eq!(
        std::fs::metadata(&log).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(matches!(
        create_new(&log, &db),
        Err(OutputError::Exists { .. })
    ));
    assert!(matches!(
        create_new(&db, &db),
        Err(OutputError::Database { .. })
    ));
    assert_eq!(std::fs::read(&log).unwrap(), b"line\n");
}
