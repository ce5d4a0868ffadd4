//! Opening the database: the checks made before anything is written (what the file
//! holds, whether it can be written), the writer's and the reader's opens, and open-time
//! failures as one line naming the file and the fix.

use super::db::Db;
use super::error::StoreError;
use super::handle::{Journal, Store, Summarise};
use super::journal::{
    in_wal_mode, is_shared_memory_error, journal_of, retry_busy, shared_mmap_works, wal_path,
    writing_flags,
};
use super::refusal::{contents, foreign, open_failure, Contents};
use super::remedy::Remedy;
use super::reserve::{free_bytes, MIN_FREE_BYTES};
use super::system::{present_and_unwritable, writable};
use super::url::postgres_url;
use super::version::{OLDEST_READABLE, SCHEMA_VERSION};
use crate::model::Recovered;
use rusqlite::Connection;
use std::path::{Path, PathBuf};

/// Refuses the names SQLite reads as something other than a file: `:memory:` (a
/// database in memory, gone when the command ends: a run stored there is stored
/// nowhere) and URIs (`file:...`, whose options such as `mode=memory` or `immutable=1`
/// would change what is stored). audiolat takes a path only: `./:memory:` and
/// `./file:x.db` name files so called. Checked before anything is made.
pub fn plain_path(path: &Path) -> Result<(), StoreError> {
    let name = path.as_os_str().as_encoded_bytes();
    let reason = if name == b":memory:" {
        "`:memory:` is SQLite's name for a database in memory, which keeps nothing once the command ends"
    } else if name.len() >= 5 && name[..5].eq_ignore_ascii_case(b"file:") {
        "it is an SQLite URI (file:...), and audiolat takes a file's path only"
    } else {
        return Ok(());
    };
    Err(StoreError::Open {
        path: path.to_path_buf(),
        reason: reason.into(),
        fix: Remedy::PlainPath,
    })
}

impl Store {
    /// Opens (creating if needed) the database at `path` and migrates it to the current
    /// schema, for commands that record runs. Fails with a message naming the fix when
    /// the path cannot be written, its filesystem is full, or the file is not audiolat's
    /// (which is never changed, nor anything made beside it). The reserve beside it is
    /// made when it first takes a run or group ([`Store::begin_run`]).
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_recovering(path, &|_, _| Ok(Recovered::default()))
    }

    /// [`Store::open`], summarising each run a dead process left `running` with
    /// `summarise` (given the store and the run; it returns the measurements to keep
    /// for it, computed from what the run stored) before closing it.
    pub fn open_recovering(path: &Path, summarise: &Summarise) -> Result<Store, StoreError> {
        if let Some(url) = postgres_url(path) {
            let store = Store::connect(url, true)?;
            store.recover_abandoned(summarise)?;
            return Ok(store);
        }
        let store = Store::open_checking(path, shared_mmap_works)?;
        store.recover_abandoned(summarise)?;
        Ok(store)
    }

    /// Closes what dead processes left `running` in an existing database of the current
    /// schema, as [`Store::open_recovering`] would, making nothing else (no reserve): for
    /// commands that only read. Returns how many runs.
    /// It is left in its journal mode, and an older audiolat's file is refused (its runs
    /// are shown as stored).
    pub fn close_abandoned(path: &Path, summarise: &Summarise) -> Result<usize, StoreError> {
        if let Some(url) = postgres_url(path) {
            return Store::connect(url, false)?.recover_abandoned(summarise);
        }
        Store::open_read_only(path)?;
        Store::reader_writer(
            path,
            "closing its dead processes' runs would need it upgraded, which only a command that records runs does",
            shared_mmap_works,
        )?
        .recover_abandoned(summarise)
    }

    /// Opens an existing database for a command that only reads ([`Store::open_read_only`]:
    /// never created, migrated or switched). A log only a writer can fold in (9p) is
    /// folded in first ([`Store::fold_log`]; the one case where reading writes), the
    /// writer given to `folded` (to tell of a switch to a rollback journal). Runs and
    /// groups dead processes left `running` are closed (and summarised) when the
    /// database can be written ([`Store::close_abandoned`]); otherwise they are shown as
    /// stored.
    pub fn open_reading(
        path: &Path,
        summarise: &Summarise,
        folded: &dyn Fn(&Store),
    ) -> Result<Store, StoreError> {
        if let Some(url) = postgres_url(path) {
            let store = Store::connect(url, false)?;
            if store.schema_version()? == SCHEMA_VERSION {
                store.recover_abandoned(summarise)?;
            }
            return Ok(store);
        }
        let store = match Store::open_read_only(path) {
            Err(StoreError::UnsharedLog(_)) => {
                folded(&Store::fold_log(path)?);
                Store::open_read_only(path)?
            }
            other => other?,
        };
        let abandoned =
            !store.abandoned_runs()?.is_empty() || !store.abandoned_groups()?.is_empty();
        if abandoned && Store::close_abandoned(path, summarise).is_ok() {
            return Store::open_read_only(path);
        }
        Ok(store)
    }

    /// [`Store::open`] without recovery, with the check of whether the filesystem can
    /// share the write-ahead log's memory given (tests stand in for 9p with one that
    /// says no).
    pub(super) fn open_checking(
        path: &Path,
        shared_memory: fn(&Path) -> Result<(), String>,
    ) -> Result<Store, StoreError> {
        let (mut store, _) = Store::writer(path, shared_memory)?;
        store.configure(shared_memory)?;
        store.migrate()?;
        Ok(store)
    }

    /// A writing connection on the database at `path` (made when missing), after the
    /// checks that find what SQLite would fail on only mid-run, with the version found
    /// (0 for a new file): nothing is written yet, and another program's file or a newer
    /// audiolat's is refused.
    fn writer(
        path: &Path,
        shared_memory: fn(&Path) -> Result<(), String>,
    ) -> Result<(Store, i64), StoreError> {
        let open_err = |reason: String, fix: Remedy| StoreError::Open {
            path: path.to_path_buf(),
            reason,
            fix,
        };
        plain_path(path)?;
        if path.is_dir() {
            return Err(open_err(
                "it is a directory".into(),
                Remedy::FilePath { directory: true },
            ));
        }
        if path.exists() && !path.is_file() {
            return Err(open_err(
                "it is not a regular file".into(),
                Remedy::FilePath { directory: false },
            ));
        }
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !parent.is_dir() {
            return Err(open_err(
                format!("directory {} does not exist", parent.display()),
                Remedy::ExistingDirectory,
            ));
        }
        let probe_path = if path.exists() { path } else { parent };
        if !writable(probe_path) {
            return Err(open_err(
                format!("{} is not writable", probe_path.display()),
                Remedy::WritableFile,
            ));
        }
        // SQLite opens a write-ahead log or shared-memory file it cannot write read-only
        // and fails only at the first write, mid-run: found here instead.
        for suffix in ["-wal", "-shm", "-journal"] {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            let beside = PathBuf::from(name);
            if present_and_unwritable(&beside) {
                return Err(open_err(
                    format!(
                        "{} beside it is not writable (another user's?)",
                        beside.display()
                    ),
                    Remedy::RunAsOwner,
                ));
            }
        }
        if let Some(free) = free_bytes(parent) {
            if free < MIN_FREE_BYTES {
                return Err(open_err(
                    format!("its filesystem is full ({} KiB free)", free / 1024),
                    Remedy::FreeSpace,
                ));
            }
        }
        let conn = Connection::open_with_flags(path, writing_flags())
            .map_err(|e| open_failure(path, &e, true))?;
        conn.busy_timeout(super::unpushed::LOCK_WAIT)?;
        // A write-ahead-log database where the log's index cannot be shared (9p) can only
        // be read by a connection that keeps the index on its heap: exclusive locking.
        if in_wal_mode(path) && shared_memory(parent).is_err() {
            conn.execute_batch("PRAGMA locking_mode=EXCLUSIVE;")
                .map_err(|e| open_failure(path, &e, true))?;
        }
        // Judged before anything is written: the journal switch below writes the header.
        let found =
            match retry_busy(|| contents(&conn)).map_err(|e| open_failure(path, &e, true))? {
                Contents::Foreign(tables) => return Err(foreign(path, &tables)),
                Contents::Ours(found) if found > SCHEMA_VERSION => {
                    return Err(StoreError::TooNew {
                        path: path.to_path_buf(),
                        found,
                    })
                }
                Contents::Ours(found) => found,
                Contents::Empty => 0,
            };
        let store = Store {
            db: Db::Sqlite(conn),
            path: path.to_path_buf(),
            journal: Journal::Wal,
            plan_cell: std::cell::Cell::new(None),
            shadow: Default::default(),
            closing: Default::default(),
            lock_wait: std::cell::Cell::new(super::unpushed::LOCK_WAIT),
            reserve_kept: Default::default(),
        };
        Ok((store, found))
    }

    /// A writing connection, for a command that only reads, on an existing database of
    /// the current schema, left in its journal mode: nothing is created, migrated,
    /// switched or reserved. `why` says what the write is for, in the refusal of any
    /// other file.
    fn reader_writer(
        path: &Path,
        why: &str,
        shared_memory: fn(&Path) -> Result<(), String>,
    ) -> Result<Store, StoreError> {
        plain_path(path)?;
        if !path.exists() {
            return Err(StoreError::Missing(path.to_path_buf()));
        }
        let (mut store, found) = Store::writer(path, shared_memory)?;
        if found != SCHEMA_VERSION {
            // Closing the connection would fold a write-ahead log in: left as it is.
            let _ = store.db.lite().set_db_config(
                rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
                true,
            );
            return Err(StoreError::Open {
                path: path.to_path_buf(),
                reason: if found == 0 {
                    format!("it holds no audiolat schema, and {why}")
                } else {
                    format!("it has schema version {found}, from an older audiolat, and {why}")
                },
                fix: Remedy::UpgradeByRecording { first: true },
            });
        }
        store.journal = journal_of(store.db.lite()).map_err(|e| store.unusable(&e))?;
        store.db.lite().execute_batch("PRAGMA foreign_keys=ON;")?;
        Ok(store)
    }

    /// Folds the write-ahead log of an existing database of the current schema into the
    /// file, for a command that only reads where the log's index cannot be shared
    /// ([`StoreError::UnsharedLog`], 9p): there the database turns to a rollback journal
    /// (as a recording command's open does; [`Journal::Rollback`] says it happened),
    /// elsewhere the log is checkpointed. Nothing is migrated, recovered or reserved; an
    /// older audiolat's file is refused with the command that upgrades it.
    pub fn fold_log(path: &Path) -> Result<Store, StoreError> {
        Store::fold_log_checking(path, shared_mmap_works)
    }

    pub(super) fn fold_log_checking(
        path: &Path,
        shared_memory: fn(&Path) -> Result<(), String>,
    ) -> Result<Store, StoreError> {
        let mut store = Store::reader_writer(
            path,
            "its write-ahead log must be folded in to be read on this filesystem, which only the current schema's reader does",
            shared_memory,
        )?;
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        if let Err(why) = shared_memory(&dir) {
            store.rollback_journal(why)?;
        } else if store.journal == Journal::Wal {
            retry_busy(|| {
                store
                    .db
                    .lite()
                    .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                        r.get::<_, i64>(0)
                    })
            })
            .map_err(|e| open_failure(path, &e, true))?;
        }
        Ok(store)
    }

    /// Opens an existing database for reading and writing; a missing file is an error.
    pub fn open_existing(path: &Path) -> Result<Store, StoreError> {
        if let Some(url) = postgres_url(path) {
            return Store::connect(url, true);
        }
        plain_path(path)?;
        if !path.is_file() && !path.is_dir() {
            return Err(StoreError::Missing(path.to_path_buf()));
        }
        Store::open(path)
    }

    /// Opens an existing database read-only (`SQLITE_OPEN_READ_ONLY`), for commands that
    /// only read: nothing is created, migrated, switched or written, so a read-only file,
    /// directory or mount will do. A database of the previous schema (3) is read as it
    /// is; an older one is refused with the command that upgrades it, and another
    /// program's is refused.
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        if let Some(url) = postgres_url(path) {
            return Store::connect(url, false);
        }
        let open_err = |reason: String, fix: Remedy| StoreError::Open {
            path: path.to_path_buf(),
            reason,
            fix,
        };
        plain_path(path)?;
        if path.is_dir() {
            return Err(open_err(
                "it is a directory".into(),
                Remedy::FilePath { directory: true },
            ));
        }
        if !path.exists() {
            return Err(StoreError::Missing(path.to_path_buf()));
        }
        if !path.is_file() {
            return Err(open_err(
                "it is not a regular file".into(),
                Remedy::FilePath { directory: false },
            ));
        }
        // A log that holds writes, on a filesystem that cannot share the log's index
        // (9p): SQLite's own error there is a bare I/O error, so ask the filesystem first.
        if std::fs::metadata(wal_path(path)).is_ok_and(|m| m.len() > 0)
            && shared_mmap_works(
                path.parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new(".")),
            )
            .is_err()
        {
            return Err(StoreError::UnsharedLog(path.to_path_buf()));
        }
        use rusqlite::OpenFlags;
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let open = |conn: rusqlite::Result<Connection>| {
            let conn = conn?;
            conn.busy_timeout(super::unpushed::LOCK_WAIT)?;
            let found = contents(&conn)?;
            Ok::<_, rusqlite::Error>((conn, found))
        };
        let (conn, found) = match open(Connection::open_with_flags(path, flags)) {
            Ok(v) => v,
            // A write-ahead-log database whose log holds writes, where its index cannot
            // be shared: only a writer can fold the log in.
            Err(e)
                if (matches!(
                    e.sqlite_error_code(),
                    Some(rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::ReadOnly)
                ) || is_shared_memory_error(&e))
                    && std::fs::metadata(wal_path(path)).is_ok_and(|m| m.len() > 0) =>
            {
                return Err(StoreError::UnsharedLog(path.to_path_buf()));
            }
            // A write-ahead-log database without a log, on a read-only directory (where
            // its `-shm` cannot be made) or a filesystem without shared memory: nobody
            // can be writing it there, so it is read as unchanging.
            Err(e)
                if matches!(
                    e.sqlite_error_code(),
                    Some(rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::ReadOnly)
                ) || is_shared_memory_error(&e) =>
            {
                let uri = format!(
                    "file:{}?immutable=1",
                    path.to_string_lossy()
                        .replace('%', "%25")
                        .replace('?', "%3f")
                        .replace('#', "%23")
                );
                open(Connection::open_with_flags(
                    uri,
                    flags | OpenFlags::SQLITE_OPEN_URI,
                ))
                .map_err(|_| open_failure(path, &e, false))?
            }
            Err(e) => return Err(open_failure(path, &e, false)),
        };
        match found {
            Contents::Empty => Err(open_err(
                "it is empty: no audiolat runs in it".into(),
                Remedy::RecordFirst,
            )),
            Contents::Foreign(tables) => Err(foreign(path, &tables)),
            Contents::Ours(found) if found > SCHEMA_VERSION => Err(StoreError::TooNew {
                path: path.to_path_buf(),
                found,
            }),
            Contents::Ours(found) if found < OLDEST_READABLE => Err(open_err(
                format!("it has schema version {found}, from an older audiolat (this one reads {OLDEST_READABLE} to {SCHEMA_VERSION})"),
                Remedy::UpgradeByRecording { first: false },
            )),
            Contents::Ours(_) => Ok(Store {
                journal: journal_of(&conn).map_err(|e| open_failure(path, &e, false))?,
                db: Db::Sqlite(conn),
                path: path.to_path_buf(),
                plan_cell: std::cell::Cell::new(None),
                shadow: Default::default(),
                closing: Default::default(),
            lock_wait: std::cell::Cell::new(super::unpushed::LOCK_WAIT),
            reserve_kept: Default::default(),
            }),
        }
    }

    pub(super) fn unusable(&self, e: &rusqlite::Error) -> StoreError {
        open_failure(&self.path, e, true)
    }

    pub(super) fn locked(&self, e: &rusqlite::Error) -> StoreError {
        open_failure(&self.path, e, true)
    }
}
