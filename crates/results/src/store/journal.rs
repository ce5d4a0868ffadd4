//! The journal mode: the write-ahead log where the filesystem can share its index's
//! memory, a rollback journal where it cannot (9p, some NFS), and how that is found out.

use super::db::Db;
use super::error::StoreError;
use super::handle::{Journal, Store};
use super::remedy::Remedy;
use rusqlite::Connection;
use std::path::{Path, PathBuf};

/// The write-ahead log of the database at `path`.
pub(super) fn wal_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

/// Whether the database file's header says it uses a write-ahead log (its read and
/// write format versions, bytes 18 and 19, are 2).
pub(super) fn in_wal_mode(path: &Path) -> bool {
    use std::io::Read as _;
    let mut header = [0u8; 20];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut header))
        .is_ok_and(|()| header[18] == 2 && header[19] == 2)
}

/// Whether a file in `dir` can be mapped shared and writable, as SQLite maps its
/// write-ahead log's index (`-shm`). 9p without a page cache (QEMU's virtfs, the kernel
/// lab's share) cannot. `Err` says why; a directory where the test file cannot even be
/// made is left to SQLite to judge.
pub(super) fn shared_mmap_works(dir: &Path) -> Result<(), String> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let probe = dir.join(format!(
        ".audiolat-shm-check-{}-{nanos}",
        std::process::id()
    ));
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&probe)
    else {
        return Ok(());
    };
    let result = map_shared(&file);
    drop(file);
    let _ = std::fs::remove_file(&probe);
    result
}

fn map_shared(file: &std::fs::File) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    if file.set_len(4096).is_err() {
        return Ok(());
    }
    // SAFETY: maps 4096 bytes of a file of that length, unmapped at once; no other use.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(format!(
            "a shared, writable mapping of a file there fails: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: the mapping made just above.
    unsafe { libc::munmap(ptr, 4096) };
    Ok(())
}

/// How the open database journals, as it is (a reader's view: nothing switched now).
pub(super) fn journal_of(conn: &Connection) -> rusqlite::Result<Journal> {
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
    Ok(if mode == "wal" {
        Journal::Wal
    } else {
        Journal::Rollback {
            reason: format!("it is in {mode} mode"),
            switched: false,
        }
    })
}

/// SQLite is waiting on another process's lock.
pub(super) fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// SQLite's errors for shared memory it could not open, size, lock or map (the WAL index).
pub(super) fn is_shared_memory_error(e: &rusqlite::Error) -> bool {
    const SQLITE_IOERR_SHMOPEN: i32 = 10 | (18 << 8);
    const SQLITE_IOERR_SHMSIZE: i32 = 10 | (19 << 8);
    const SQLITE_IOERR_SHMLOCK: i32 = 10 | (20 << 8);
    const SQLITE_IOERR_SHMMAP: i32 = 10 | (21 << 8);
    matches!(
        e.sqlite_error().map(|f| f.extended_code),
        Some(
            SQLITE_IOERR_SHMOPEN
                | SQLITE_IOERR_SHMSIZE
                | SQLITE_IOERR_SHMLOCK
                | SQLITE_IOERR_SHMMAP
        )
    )
}

impl Store {
    pub(super) fn configure(
        &mut self,
        shared_memory: fn(&Path) -> Result<(), String>,
    ) -> Result<(), StoreError> {
        self.db.lite().busy_timeout(super::unpushed::LOCK_WAIT)?;
        // WAL lets `audiolat runs` read while a probe writes. Its index lives in shared
        // memory (a mapped `-shm` file), which 9p and some NFS mounts cannot map: asked
        // for there, WAL fails at the first read with an I/O error, after writing the
        // switch into the file's header. So the filesystem is asked first.
        let dir = self
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        if let Err(why) = shared_memory(&dir) {
            return self.rollback_journal(why);
        }
        let wal = retry_busy(|| {
            self.db
                .lite()
                .query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))
        })
        .and_then(|_| {
            self.db
                .lite()
                .query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                    r.get::<_, i64>(0)
                })
        });
        match wal {
            Ok(_) => {}
            // A filesystem that maps a test file but not SQLite's index (rare).
            Err(e) if is_shared_memory_error(&e) => return self.rollback_journal(e.to_string()),
            Err(e) if is_busy(&e) => return Err(self.locked(&e)),
            Err(e) => return Err(self.unusable(&e)),
        }
        self.db.lite().execute_batch("PRAGMA foreign_keys=ON;")?;
        Ok(())
    }

    /// Uses a rollback journal, because the filesystem cannot share the write-ahead log's
    /// memory (`why`). A database already so is left untouched; a new one starts so; one
    /// with a write-ahead log is turned over (a connection in exclusive locking mode keeps
    /// the log's index on its heap, so it can read it).
    pub(super) fn rollback_journal(&mut self, why: String) -> Result<(), StoreError> {
        let new = std::fs::metadata(&self.path).map_or(true, |m| m.len() == 0);
        let mode = self
            .db
            .lite()
            .query_row("PRAGMA journal_mode", [], |r| r.get::<_, String>(0));
        let switched = match mode.as_deref() {
            Ok("delete" | "truncate" | "persist") => new,
            _ => {
                // The first connection goes first: it holds the file's locks.
                drop(std::mem::replace(
                    &mut self.db,
                    Db::Sqlite(Connection::open_in_memory()?),
                ));
                let conn = Connection::open_with_flags(&self.path, writing_flags())
                    .map_err(|e| self.unusable(&e))?;
                conn.busy_timeout(super::unpushed::LOCK_WAIT)?;
                conn.execute_batch("PRAGMA locking_mode=EXCLUSIVE;")?;
                let mode: String = conn
                    .query_row("PRAGMA journal_mode=DELETE", [], |r| r.get(0))
                    .map_err(|e| {
                        if is_busy(&e) {
                            self.locked(&e)
                        } else {
                            self.unusable(&e)
                        }
                    })?;
                conn.execute_batch(
                    "PRAGMA locking_mode=NORMAL; SELECT count(*) FROM sqlite_master;",
                )
                .map_err(|e| self.unusable(&e))?;
                if mode != "delete" {
                    return Err(StoreError::Open {
                        path: self.path.clone(),
                        reason: format!(
                            "its filesystem cannot share SQLite's write-ahead log ({why}), and the database stayed in {mode} mode"
                        ),
                        fix: Remedy::LocalFilesystem,
                    });
                }
                self.db = Db::Sqlite(conn);
                true
            }
        };
        self.journal = Journal::Rollback {
            reason: why,
            switched,
        };
        self.db.lite().execute_batch("PRAGMA foreign_keys=ON;")?;
        Ok(())
    }
}

/// `f`, tried again while another connection holds a lock SQLite's busy handler does not
/// wait for (a journal-mode switch, a schema being made), for at most 20 s.
pub(super) fn retry_busy<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        match f() {
            Err(e) if is_busy(&e) && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(
                    20 + u64::from(std::process::id() % 30),
                ));
            }
            other => return other,
        }
    }
}

/// The flags of a writing connection: the path is a file's, never an SQLite URI.
pub(super) fn writing_flags() -> rusqlite::OpenFlags {
    use rusqlite::OpenFlags as F;
    F::SQLITE_OPEN_READ_WRITE | F::SQLITE_OPEN_CREATE | F::SQLITE_OPEN_NO_MUTEX
}
