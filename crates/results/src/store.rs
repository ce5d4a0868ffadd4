//! The SQLite store.
//!
//! One file (default `./audiolat.db`) holds every run. A run row is written when the run
//! starts (status `running`), events and measurements as they are produced, and the
//! status when it ends, so an interrupted run keeps what it measured. A run whose process
//! died without closing it is summarised (by the caller's [`Summarise`]) and marked
//! `interrupted` the next time the store is opened for writing on the same host
//! ([`Store::open_recovering`], or [`Store::close_abandoned`] for a reader); so are its
//! group and plan cells.
//!
//! The schema is versioned with `PRAGMA user_version`; [`Store::open`] creates or
//! migrates it in one `BEGIN IMMEDIATE` transaction (two first runs may race to create
//! it) and refuses files from a newer audiolat or from another program, which are never
//! written. [`Store::open_read_only`] writes nothing at all.
//!
//! Beside the database a writer keeps a reserve file (`FILE-reserve`, [`RESERVE_BYTES`]):
//! when the filesystem fills mid-run, [`Store::closing`] removes it so the run can still
//! be closed with its summary and the real reason.

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Value;

use crate::hist::{LatencyHistogram, StoredHistogram, Summary};
use crate::model::{
    rfc3339_utc, Event, GroupRecord, Machine, Measurement, MeasurementRecord, NewPlanCell,
    PlanCell, RunInfo, RunRecord, RunStatus, Series, ToolInfo, TriggerRow,
};

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = 4;

/// The oldest schema [`Store::open_read_only`] reads as it is: version 4 only made the
/// summary columns nullable, and the reader takes a row without samples (count 0) as no
/// summary whatever its columns hold.
const OLDEST_READABLE: i64 = 3;

/// Version 4: a statistic nobody measured is NULL, not 0. The summary columns of
/// `measurement` become nullable (SQLite needs the table rebuilt for that), and the rows
/// of measurements without samples (count 0), stored as zeros before, get NULLs.
const SCHEMA_V4: &str = r#"
CREATE TABLE measurement_v4 (
    id              INTEGER PRIMARY KEY,
    run_id          INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    probe           TEXT NOT NULL,
    metric          TEXT NOT NULL,
    unit            TEXT NOT NULL,
    method          TEXT NOT NULL,
    count           INTEGER NOT NULL,
    min             REAL,
    mean            REAL,
    stdev           REAL,
    p50             REAL,
    p90             REAL,
    p99             REAL,
    p999            REAL,
    p9999           REAL,
    max             REAL,
    clamped         INTEGER NOT NULL DEFAULT 0,
    overflows       INTEGER NOT NULL DEFAULT 0,
    deadline        REAL,
    misses          INTEGER,
    histogram       BLOB,
    histogram_bound INTEGER,
    histogram_exact TEXT,
    detail          TEXT NOT NULL DEFAULT '{}'
);
INSERT INTO measurement_v4
    SELECT id, run_id, probe, metric, unit, method, count,
        CASE WHEN count > 0 THEN min END, CASE WHEN count > 0 THEN mean END,
        CASE WHEN count > 0 THEN stdev END, CASE WHEN count > 0 THEN p50 END,
        CASE WHEN count > 0 THEN p90 END, CASE WHEN count > 0 THEN p99 END,
        CASE WHEN count > 0 THEN p999 END, CASE WHEN count > 0 THEN p9999 END,
        CASE WHEN count > 0 THEN max END,
        clamped, overflows, deadline, misses, histogram, histogram_bound, histogram_exact,
        detail
    FROM measurement;
DROP TABLE measurement;
ALTER TABLE measurement_v4 RENAME TO measurement;
CREATE INDEX measurement_by_run ON measurement(run_id);
"#;

/// Version 3: the cells of plan runs (`audiolat run plan.toml`), one row per cell of the
/// matrix, pointing at the run that measured it.
const SCHEMA_V3: &str = r#"
CREATE TABLE plan_cell (
    id        INTEGER PRIMARY KEY,
    group_id  INTEGER NOT NULL REFERENCES run_group(id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    key       TEXT NOT NULL,
    axes      TEXT NOT NULL,
    argv      TEXT NOT NULL,
    profile   TEXT NOT NULL,
    status    TEXT NOT NULL DEFAULT 'pending'
              CHECK (status IN ('pending','running','complete','interrupted','failed')),
    run_id    INTEGER REFERENCES run(id),
    attempts  INTEGER NOT NULL DEFAULT 0,
    error     TEXT,
    UNIQUE (group_id, key)
);
CREATE INDEX plan_cell_by_group ON plan_cell(group_id);
"#;

/// Version 2: the `event` probe's per-trigger rows.
const SCHEMA_V2: &str = r#"
CREATE TABLE trigger (
    id              INTEGER PRIMARY KEY,
    run_id          INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    source          TEXT NOT NULL,
    trigger_ns      INTEGER NOT NULL,
    note_frame      INTEGER NOT NULL,
    offset_frames   INTEGER NOT NULL,
    cycle           INTEGER NOT NULL,
    dac_ns          INTEGER NOT NULL,
    latency_ns      INTEGER NOT NULL,
    wait_ns         INTEGER NOT NULL,
    lateness_ns     INTEGER NOT NULL,
    buffer_ns       INTEGER NOT NULL,
    late            INTEGER NOT NULL,
    missed          INTEGER NOT NULL,
    measured_ns     INTEGER,
    underruns_before INTEGER NOT NULL
);
CREATE INDEX trigger_by_run ON trigger(run_id);
"#;

const SCHEMA_V1: &str = r#"
CREATE TABLE run_group (
    id            INTEGER PRIMARY KEY,
    kind          TEXT NOT NULL,
    status        TEXT NOT NULL DEFAULT 'running'
                  CHECK (status IN ('running','complete','interrupted','failed')),
    started_at    TEXT NOT NULL,
    ended_at      TEXT,
    command_line  TEXT NOT NULL,
    detail        TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE run (
    id              INTEGER PRIMARY KEY,
    group_id        INTEGER REFERENCES run_group(id),
    probe           TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('running','complete','interrupted','failed')),
    started_at      TEXT NOT NULL,
    ended_at        TEXT,
    started_mono_ns INTEGER NOT NULL,
    ended_mono_ns   INTEGER,
    pid             INTEGER NOT NULL,
    hostname        TEXT NOT NULL,
    machine         TEXT NOT NULL,
    tool_version    TEXT NOT NULL,
    git_commit      TEXT NOT NULL,
    build_profile   TEXT NOT NULL,
    command_line    TEXT NOT NULL,
    config          TEXT NOT NULL,
    load            TEXT NOT NULL,
    qos_requested   TEXT NOT NULL,
    qos_granted     TEXT NOT NULL DEFAULT '{}',
    flags           TEXT NOT NULL DEFAULT '{}',
    result          TEXT NOT NULL DEFAULT '{}',
    error           TEXT
);
CREATE INDEX run_by_group ON run(group_id);
CREATE TABLE measurement (
    id              INTEGER PRIMARY KEY,
    run_id          INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    probe           TEXT NOT NULL,
    metric          TEXT NOT NULL,
    unit            TEXT NOT NULL,
    method          TEXT NOT NULL,
    count           INTEGER NOT NULL,
    min             REAL NOT NULL,
    mean            REAL NOT NULL,
    stdev           REAL NOT NULL,
    p50             REAL NOT NULL,
    p90             REAL NOT NULL,
    p99             REAL NOT NULL,
    p999            REAL NOT NULL,
    p9999           REAL NOT NULL,
    max             REAL NOT NULL,
    clamped         INTEGER NOT NULL DEFAULT 0,
    overflows       INTEGER NOT NULL DEFAULT 0,
    deadline        REAL,
    misses          INTEGER,
    histogram       BLOB,
    histogram_bound INTEGER,
    histogram_exact TEXT,
    detail          TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX measurement_by_run ON measurement(run_id);
CREATE TABLE event (
    id       INTEGER PRIMARY KEY,
    run_id   INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    mono_ns  INTEGER NOT NULL,
    kind     TEXT NOT NULL,
    detail   TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX event_by_run ON event(run_id);
CREATE TABLE series (
    id       INTEGER PRIMARY KEY,
    run_id   INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    name     TEXT NOT NULL,
    unit     TEXT NOT NULL,
    columns  TEXT NOT NULL,
    rows     TEXT NOT NULL
);
CREATE INDEX series_by_run ON series(run_id);
"#;

/// Errors of the store. Messages say what the user can do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database file cannot be opened or created.
    #[error("cannot use results database {path}: {reason}; {fix}")]
    Open {
        /// The path.
        path: PathBuf,
        /// What went wrong.
        reason: String,
        /// What to do.
        fix: String,
    },
    /// No database at the path, for commands that only read.
    #[error("no results database at {0}: run a probe first (e.g. `audiolat jitter`) or point --db at one")]
    Missing(PathBuf),
    /// A newer audiolat wrote this file.
    #[error("results database {path} has schema version {found}, newer than this audiolat's {SCHEMA_VERSION}: upgrade audiolat")]
    TooNew {
        /// The path.
        path: PathBuf,
        /// Version found.
        found: i64,
    },
    /// A read-only open of a database whose write-ahead log holds writes, on a
    /// filesystem that cannot share the log's index (9p, some NFS): only a writer can
    /// fold the log in (see [`Journal::Rollback`]).
    #[error("cannot use results database {0}: its write-ahead log cannot be read on this filesystem without writing; open it once with a command that records runs, or copy it with its -wal file to a local filesystem")]
    UnsharedLog(PathBuf),
    /// No such run.
    #[error("no run with id {0}: `audiolat runs` lists them")]
    NoSuchRun(i64),
    /// No such group.
    #[error("no group with id {0}: `audiolat runs` shows each run's group")]
    NoSuchGroup(i64),
    /// A plan cell is one run, but its process began a second one.
    #[error("plan cell {cell} already has run {run_id}: a plan's cell must make exactly one run (sweep with the plan's axes, not with comma lists)")]
    PlanCellTaken {
        /// The cell.
        cell: i64,
        /// Its run.
        run_id: i64,
    },
    /// A stored value could not be decoded.
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// SQLite failed. (Not a `#[source]`: SQLite's message is said once, not again as a
    /// cause.)
    #[error("SQLite: {0}")]
    Sql(rusqlite::Error),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> StoreError {
        StoreError::Sql(e)
    }
}

impl StoreError {
    /// The filesystem under the database is full (SQLite's `SQLITE_FULL`).
    pub fn is_disk_full(&self) -> bool {
        matches!(self, StoreError::Sql(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull))
    }

    /// The file is damaged or not a database (a corrupt page, a truncated file): found
    /// by a query after the open succeeded.
    pub fn is_damaged(&self) -> bool {
        matches!(self, StoreError::Sql(e) if matches!(
            e.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
        ))
    }
}

/// Which runs to list.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    /// Only this probe.
    pub probe: Option<String>,
    /// Only this group.
    pub group_id: Option<i64>,
    /// Only this status.
    pub status: Option<RunStatus>,
    /// At most this many, newest first.
    pub limit: Option<usize>,
}

/// How the database keeps its transactions safe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Journal {
    /// SQLite's write-ahead log: readers (`audiolat runs`) go on while a probe writes.
    Wal,
    /// A rollback journal, because the file's filesystem cannot share memory between
    /// processes (9p, some NFS mounts), which the write-ahead log needs; readers wait
    /// while a probe writes.
    Rollback {
        /// SQLite's error for the write-ahead log.
        reason: String,
        /// This open turned the database to a rollback journal (it was new, or had a
        /// write-ahead log): the time to tell the user. Later opens find it so already.
        switched: bool,
    },
}

/// How a caller of [`Store::open_recovering`] summarises a run a dead process left
/// `running`: the measurements to keep for it, from what it stored (or why not).
pub type Summarise = dyn Fn(&Store, &RunRecord) -> Result<Vec<Measurement>, String>;

/// A handle on the results database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    journal: Journal,
    /// Set by [`Store::file_runs_under`]: the plan run and cell every run goes to.
    plan_cell: std::cell::Cell<Option<(i64, i64)>>,
}

/// The space kept beside a database for its runs' closing writes (`FILE-reserve`): when
/// the filesystem fills mid-run, [`Store::closing`] removes it so the run's summary and
/// its real end reason can still be written.
pub const RESERVE_BYTES: u64 = 1 << 20;

/// Free space a command that records runs needs at open, besides the reserve.
const MIN_FREE_BYTES: u64 = 256 << 10;

/// What a file holds, judged before anything is written to it.
enum Contents {
    /// No schema at all (a new or empty file): audiolat may create its own.
    Empty,
    /// audiolat's schema, at this version.
    Ours(i64),
    /// Somebody else's database: these tables, and no audiolat schema.
    Foreign(Vec<String>),
}

fn contents(conn: &Connection) -> rusqlite::Result<Contents> {
    // One statement, so one snapshot: a process creating the schema meanwhile is seen
    // before or after, never half way.
    let (version, objects, tables): (i64, i64, Option<String>) = conn.query_row(
        "SELECT user_version, (SELECT count(*) FROM sqlite_master),
            (SELECT group_concat(name, char(31)) FROM (SELECT name FROM sqlite_master
             WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name))
         FROM pragma_user_version",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let tables: Vec<String> = tables
        .map(|t| t.split('\u{1f}').map(str::to_string).collect())
        .unwrap_or_default();
    let has = |t: &str| tables.iter().any(|n| n == t);
    Ok(if objects == 0 && version == 0 {
        Contents::Empty
    } else if version >= 1 && has("run") && has("run_group") {
        Contents::Ours(version)
    } else {
        Contents::Foreign(tables)
    })
}

/// `f`, tried again while another connection holds a lock SQLite's busy handler does not
/// wait for (a journal-mode switch, a schema being made), for at most 20 s.
fn retry_busy<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
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

/// The one-line refusal of a database audiolat did not make.
fn foreign(path: &Path, tables: &[String]) -> StoreError {
    let mut names = tables
        .iter()
        .take(5)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if tables.len() > 5 {
        names.push_str(&format!(" and {} more", tables.len() - 5));
    }
    StoreError::Open {
        path: path.to_path_buf(),
        reason: if tables.is_empty() {
            "it is not an audiolat results database (no audiolat schema)".into()
        } else {
            format!("it is not an audiolat results database (it has tables {names} and no audiolat schema)")
        },
        fix: "pass --db with an audiolat results database or a new file name (audiolat never changes a database it did not make)".into(),
    }
}

/// An SQLite failure while opening `path`, as one line with what to do: no raw error
/// repeated.
fn open_failure(path: &Path, e: &rusqlite::Error, writing: bool) -> StoreError {
    use rusqlite::ErrorCode as C;
    let (reason, fix) = match e.sqlite_error_code() {
        Some(C::NotADatabase) => (
            "it is not an SQLite database".to_string(),
            "pass --db with an audiolat results database or a new file name",
        ),
        Some(C::DatabaseCorrupt) => (
            "it is damaged (a corrupt page or a truncated file)".to_string(),
            "restore it from a backup (`sqlite3 FILE .recover` may save its runs), or pass --db with a new file name",
        ),
        Some(C::DiskFull) => (
            "its filesystem is full".to_string(),
            "free space there, or pass --db with a path on another filesystem",
        ),
        Some(C::DatabaseBusy | C::DatabaseLocked) => (
            "another process holds it locked".to_string(),
            "wait for it to finish (another audiolat?), or pass --db with another file",
        ),
        Some(C::ReadOnly | C::PermissionDenied | C::CannotOpen) if writing => (
            "SQLite cannot write it or its -wal/-shm files beside it (permissions, another user's files, or a read-only filesystem)".to_string(),
            "fix their permissions, run as their owner, or pass --db with a path you can write",
        ),
        Some(C::ReadOnly | C::PermissionDenied | C::CannotOpen) => (
            "SQLite cannot open it or its -wal/-shm files beside it (permissions, or another user's files)".to_string(),
            "fix their permissions, run as their owner, or pass --db with a path you can read",
        ),
        _ => (
            format!("not a usable SQLite database ({})", sqlite_message(e)),
            "pass --db with a new file name",
        ),
    };
    StoreError::Open {
        path: path.to_path_buf(),
        reason,
        fix: fix.into(),
    }
}

/// SQLite's own message, once.
fn sqlite_message(e: &rusqlite::Error) -> String {
    match e {
        rusqlite::Error::SqliteFailure(_, Some(msg)) if !msg.is_empty() => msg.clone(),
        rusqlite::Error::SqliteFailure(f, _) => f.to_string(),
        other => other.to_string(),
    }
}

/// Bytes free for an unprivileged writer on the filesystem of `dir` (`None`: unknown).
fn free_bytes(dir: &Path) -> Option<u64> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: an all-zero statvfs is a valid out value; `c` is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid path and out pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_bavail as u64 * st.f_frsize as u64)
}

/// The write-ahead log of the database at `path`.
fn wal_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

/// The reserve file of the database at `path`.
fn reserve_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-reserve");
    PathBuf::from(name)
}

/// Makes the reserve at `reserve` unless it is there whole, written first to `tmp` (this
/// process's own name) and renamed over, so another process's reserve is never truncated
/// or removed: only `tmp` is, when it could not be written. Not made when `free` (the
/// filesystem's free bytes) leaves no room for it beside what an open needs: a running
/// process's [`Store::closing`] may just have freed that space for its retry.
fn make_reserve(reserve: &Path, tmp: &Path, free: Option<u64>) -> std::io::Result<bool> {
    if std::fs::metadata(reserve).is_ok_and(|m| m.len() >= RESERVE_BYTES) {
        return Ok(false);
    }
    if free.is_some_and(|f| f < RESERVE_BYTES + MIN_FREE_BYTES) {
        return Ok(false);
    }
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(tmp)?;
    let made = (|| {
        // Written, not sized: a sparse file would free nothing when removed.
        let block = vec![0u8; 64 << 10];
        for _ in 0..RESERVE_BYTES / block.len() as u64 {
            f.write_all(&block)?;
        }
        f.sync_all()?;
        std::fs::rename(tmp, reserve)
    })();
    if made.is_err() {
        let _ = std::fs::remove_file(tmp);
    }
    made.map(|()| true)
}

/// Removes the half-written reserves (`<reserve>.tmp.<pid>.<n>`) of processes killed
/// while they wrote them.
fn remove_dead_reserve_tmps(reserve: &Path) {
    let (Some(dir), Some(name)) = (reserve.parent(), reserve.file_name()) else {
        return;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let prefix = format!("{}.tmp.", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(pid) = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|rest| rest.split('.').next())
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        if !process_alive(i64::from(pid)) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

/// Whether the database file's header says it uses a write-ahead log (its read and
/// write format versions, bytes 18 and 19, are 2).
fn in_wal_mode(path: &Path) -> bool {
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
fn shared_mmap_works(dir: &Path) -> Result<(), String> {
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
fn journal_of(conn: &Connection) -> rusqlite::Result<Journal> {
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
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// SQLite's errors for shared memory it could not open, size, lock or map (the WAL index).
fn is_shared_memory_error(e: &rusqlite::Error) -> bool {
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

fn json_text(v: &Value) -> String {
    serde_json::to_string(v).expect("JSON values always serialise")
}

fn parse_json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or(Value::Null)
}

fn now_mono_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out pointer; CLOCK_MONOTONIC exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

impl Store {
    /// Opens (creating if needed) the database at `path` and migrates it to the current
    /// schema, for commands that record runs. Fails with a message naming the fix when
    /// the path cannot be written, its filesystem is full, or the file is not audiolat's
    /// (which is never changed).
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_recovering(path, &|_, _| Ok(Vec::new()))
    }

    /// [`Store::open`], summarising each run a dead process left `running` with
    /// `summarise` (given the store and the run; it returns the measurements to keep
    /// for it, computed from what the run stored) before closing it.
    pub fn open_recovering(path: &Path, summarise: &Summarise) -> Result<Store, StoreError> {
        let store = Store::open_checking(path, shared_mmap_works)?;
        store.keep_reserve();
        store.recover_abandoned(summarise)?;
        Ok(store)
    }

    /// Closes what dead processes left `running` in an existing database of the current
    /// schema, as [`Store::open_recovering`] would, making nothing else (no reserve): for
    /// commands that only read. Returns how many runs.
    /// It is left in its journal mode, and an older audiolat's file is refused (its runs
    /// are shown as stored).
    pub fn close_abandoned(path: &Path, summarise: &Summarise) -> Result<usize, StoreError> {
        Store::open_read_only(path)?;
        Store::reader_writer(
            path,
            "closing its dead processes' runs would need it upgraded, which only a command that records runs does",
            shared_mmap_works,
        )?
        .recover_abandoned(summarise)
    }

    /// [`Store::open`] without recovery, with the check of whether the filesystem can
    /// share the write-ahead log's memory given (tests stand in for 9p with one that
    /// says no).
    fn open_checking(
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
        let open_err = |reason: String, fix: &str| StoreError::Open {
            path: path.to_path_buf(),
            reason,
            fix: fix.to_string(),
        };
        if path.is_dir() {
            return Err(open_err(
                "it is a directory".into(),
                "give a file path, e.g. --db ./audiolat.db",
            ));
        }
        if path.exists() && !path.is_file() {
            return Err(open_err(
                "it is not a regular file".into(),
                "give a path to a file, e.g. --db ./audiolat.db",
            ));
        }
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !parent.is_dir() {
            return Err(open_err(
                format!("directory {} does not exist", parent.display()),
                "create it or pass --db with a path in an existing directory",
            ));
        }
        let probe_path = if path.exists() { path } else { parent };
        if !writable(probe_path) {
            return Err(open_err(
                format!("{} is not writable", probe_path.display()),
                "pass --db with a path you can write, or fix its permissions",
            ));
        }
        // SQLite opens a write-ahead log or shared-memory file it cannot write read-only
        // and fails only at the first write, mid-run: found here instead.
        for suffix in ["-wal", "-shm", "-journal"] {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            let beside = PathBuf::from(name);
            // Asked in this order: a journal another process's open makes and removes
            // (racing first runs) may vanish between the two questions.
            if !writable(&beside) && beside.exists() {
                return Err(open_err(
                    format!("{} beside it is not writable (another user's?)", beside.display()),
                    "run as the user who owns it, fix its permissions, or pass --db with another file",
                ));
            }
        }
        if let Some(free) = free_bytes(parent) {
            if free < MIN_FREE_BYTES {
                return Err(open_err(
                    format!("its filesystem is full ({} KiB free)", free / 1024),
                    "free space there, or pass --db with a path on another filesystem",
                ));
            }
        }
        let conn = Connection::open(path).map_err(|e| open_failure(path, &e, true))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
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
            conn,
            path: path.to_path_buf(),
            journal: Journal::Wal,
            plan_cell: std::cell::Cell::new(None),
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
        if !path.exists() {
            return Err(StoreError::Missing(path.to_path_buf()));
        }
        let (mut store, found) = Store::writer(path, shared_memory)?;
        if found != SCHEMA_VERSION {
            // Closing the connection would fold a write-ahead log in: left as it is.
            let _ = store.conn.set_db_config(
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
                fix: "a command that records runs into it upgrades it first (e.g. `audiolat jitter -D 1 --db FILE`)".into(),
            });
        }
        store.journal = journal_of(&store.conn).map_err(|e| store.unusable(&e))?;
        store.conn.execute_batch("PRAGMA foreign_keys=ON;")?;
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

    fn fold_log_checking(
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
                    .conn
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
        let open_err = |reason: String, fix: &str| StoreError::Open {
            path: path.to_path_buf(),
            reason,
            fix: fix.to_string(),
        };
        if path.is_dir() {
            return Err(open_err(
                "it is a directory".into(),
                "give a file path, e.g. --db ./audiolat.db",
            ));
        }
        if !path.exists() {
            return Err(StoreError::Missing(path.to_path_buf()));
        }
        if !path.is_file() {
            return Err(open_err(
                "it is not a regular file".into(),
                "give a path to a file, e.g. --db ./audiolat.db",
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
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let open = |conn: rusqlite::Result<Connection>| {
            let conn = conn?;
            conn.busy_timeout(std::time::Duration::from_secs(5))?;
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
                open(Connection::open_with_flags(uri, flags))
                    .map_err(|_| open_failure(path, &e, false))?
            }
            Err(e) => return Err(open_failure(path, &e, false)),
        };
        match found {
            Contents::Empty => Err(open_err(
                "it is empty: no audiolat runs in it".into(),
                "record a run into it first (e.g. `audiolat jitter --db FILE`), or point --db at a results database",
            )),
            Contents::Foreign(tables) => Err(foreign(path, &tables)),
            Contents::Ours(found) if found > SCHEMA_VERSION => Err(StoreError::TooNew {
                path: path.to_path_buf(),
                found,
            }),
            Contents::Ours(found) if found < OLDEST_READABLE => Err(open_err(
                format!("it has schema version {found}, from an older audiolat (this one reads {OLDEST_READABLE} to {SCHEMA_VERSION})"),
                "a command that records runs into it upgrades it (e.g. `audiolat jitter -D 1 --db FILE`)",
            )),
            Contents::Ours(_) => Ok(Store {
                journal: journal_of(&conn).map_err(|e| open_failure(path, &e, false))?,
                conn,
                path: path.to_path_buf(),
                plan_cell: std::cell::Cell::new(None),
            }),
        }
    }

    /// The file this store is backed by.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How the database journals: the write-ahead log, or a rollback journal where the
    /// filesystem cannot carry the log's shared memory (say so to the user once).
    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// Makes the reserve beside the database when it is missing (the last run that
    /// needed it used it). Best effort: without room for it, runs go on without one.
    fn keep_reserve(&self) {
        let dir = self
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let mut tmp = reserve_path(&self.path).into_os_string();
        tmp.push(format!(
            ".tmp.{}.{}",
            std::process::id(),
            MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        remove_dead_reserve_tmps(&reserve_path(&self.path));
        let _ = make_reserve(&reserve_path(&self.path), Path::new(&tmp), free_bytes(dir));
    }
    /// A write that closes a run (its summary, its status and end reason). When the
    /// filesystem is full, the reserve beside the database is removed to make room and
    /// the write is tried once more; the reserve is made again by the next open that
    /// finds room for it.
    pub fn closing<T>(
        &self,
        mut write: impl FnMut() -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match write() {
            Err(e) if e.is_disk_full() => {
                if std::fs::remove_file(reserve_path(&self.path)).is_ok() {
                    write()
                } else {
                    Err(e)
                }
            }
            other => other,
        }
    }

    fn configure(
        &mut self,
        shared_memory: fn(&Path) -> Result<(), String>,
    ) -> Result<(), StoreError> {
        self.conn.busy_timeout(std::time::Duration::from_secs(5))?;
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
            self.conn
                .query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))
        })
        .and_then(|_| {
            self.conn
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
        self.conn.execute_batch("PRAGMA foreign_keys=ON;")?;
        Ok(())
    }

    fn unusable(&self, e: &rusqlite::Error) -> StoreError {
        open_failure(&self.path, e, true)
    }

    fn locked(&self, e: &rusqlite::Error) -> StoreError {
        open_failure(&self.path, e, true)
    }

    /// Uses a rollback journal, because the filesystem cannot share the write-ahead log's
    /// memory (`why`). A database already so is left untouched; a new one starts so; one
    /// with a write-ahead log is turned over (a connection in exclusive locking mode keeps
    /// the log's index on its heap, so it can read it).
    fn rollback_journal(&mut self, why: String) -> Result<(), StoreError> {
        let new = std::fs::metadata(&self.path).map_or(true, |m| m.len() == 0);
        let mode = self
            .conn
            .query_row("PRAGMA journal_mode", [], |r| r.get::<_, String>(0));
        let switched = match mode.as_deref() {
            Ok("delete" | "truncate" | "persist") => new,
            _ => {
                // The first connection goes first: it holds the file's locks.
                drop(std::mem::replace(
                    &mut self.conn,
                    Connection::open_in_memory()?,
                ));
                let conn = Connection::open(&self.path).map_err(|e| self.unusable(&e))?;
                conn.busy_timeout(std::time::Duration::from_secs(5))?;
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
                        fix: "pass --db with a path on a local filesystem".into(),
                    });
                }
                self.conn = conn;
                true
            }
        };
        self.journal = Journal::Rollback {
            reason: why,
            switched,
        };
        self.conn.execute_batch("PRAGMA foreign_keys=ON;")?;
        Ok(())
    }

    /// Creates or migrates the schema: in one `BEGIN IMMEDIATE` transaction that looks
    /// at the version again once it holds the write lock (another process may have just
    /// made it), tried again while another process holds the lock (bounded).
    fn migrate(&self) -> Result<(), StoreError> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            match self.migrate_once() {
                Err(StoreError::Sql(e)) if is_busy(&e) => {
                    if std::time::Instant::now() >= deadline {
                        return Err(self.locked(&e));
                    }
                    std::thread::sleep(std::time::Duration::from_millis(
                        20 + u64::from(std::process::id() % 30),
                    ));
                }
                Err(StoreError::Sql(e)) => return Err(open_failure(&self.path, &e, true)),
                other => return other,
            }
        }
    }

    fn migrate_once(&self) -> Result<(), StoreError> {
        let version: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version == SCHEMA_VERSION {
            return Ok(());
        }
        let tx = rusqlite::Transaction::new_unchecked(
            &self.conn,
            rusqlite::TransactionBehavior::Immediate,
        )?;
        let version = match contents(&tx)? {
            Contents::Empty => 0,
            Contents::Ours(v) => v,
            Contents::Foreign(tables) => return Err(foreign(&self.path, &tables)),
        };
        if version > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: self.path.clone(),
                found: version,
            });
        }
        if version < 1 {
            tx.execute_batch(&format!("{SCHEMA_V1} PRAGMA user_version = 1;"))?;
        }
        if version < 2 {
            tx.execute_batch(&format!("{SCHEMA_V2} PRAGMA user_version = 2;"))?;
        }
        if version < 3 {
            tx.execute_batch(&format!("{SCHEMA_V3} PRAGMA user_version = 3;"))?;
        }
        if version < 4 {
            tx.execute_batch(&format!("{SCHEMA_V4} PRAGMA user_version = 4;"))?;
        }
        // Later schema versions add `if version < N { ... }` steps here.
        tx.commit()?;
        Ok(())
    }

    /// The schema version of the open file.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    /// Runs left `running` by processes of this host that no longer exist.
    pub fn abandoned_runs(&self) -> Result<Vec<RunRecord>, StoreError> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {RUN_COLUMNS} FROM run WHERE status = 'running' AND hostname = ?1 ORDER BY id"
        ))?;
        let running: Vec<RunRecord> = stmt
            .query_map([hostname()], run_from_row)?
            .collect::<Result<_, _>>()?;
        Ok(running
            .into_iter()
            .filter(|r| !process_alive(r.pid))
            .collect())
    }

    /// Groups (and their plan cells) left `running` by processes of this host that no
    /// longer exist: the process that made the group (`runner_pid` in its detail; a plan
    /// run's runner), or, for a group an older audiolat made without it (not a plan's),
    /// the process that made its runs.
    pub fn abandoned_groups(&self) -> Result<Vec<(i64, i64)>, StoreError> {
        let host = hostname();
        let mut stmt = self
            .conn
            .prepare("SELECT id, kind, detail FROM run_group WHERE status = 'running'")?;
        let groups: Vec<(i64, String, String)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?;
        let mut out = Vec::new();
        for (id, kind, detail) in groups {
            let detail = parse_json(&detail);
            let owner = if kind == "plan" || detail["runner_pid"].is_i64() {
                let on_this_host = detail["runner_host"].as_str().is_none_or(|h| h == host);
                detail["runner_pid"].as_i64().filter(|_| on_this_host)
            } else {
                // Every run of such a group comes from the process that made it.
                self.conn
                    .query_row(
                        "SELECT pid FROM run WHERE group_id = ?1 AND hostname = ?2
                         ORDER BY id DESC LIMIT 1",
                        params![id, host],
                        |r| r.get(0),
                    )
                    .optional()?
            };
            if let Some(pid) = owner.filter(|&p| !process_alive(p)) {
                out.push((id, pid));
            }
        }
        Ok(out)
    }

    /// Marks runs left `running` by processes of this host that no longer exist as
    /// `interrupted`, and closes their groups and plan cells. Returns how many runs.
    pub fn recover_stale_runs(&self) -> Result<usize, StoreError> {
        self.recover_abandoned(&|_, _| Ok(Vec::new()))
    }

    /// Closes what dead processes of this host left `running`: each run gets the
    /// measurements `summarise` makes of what it stored and becomes `interrupted` with
    /// the reason; each group becomes `interrupted`, and its cells still `running` with
    /// it. Returns how many runs.
    pub fn recover_abandoned(&self, summarise: &Summarise) -> Result<usize, StoreError> {
        let runs = self.abandoned_runs()?;
        for run in &runs {
            let mut why = format!("process {} ended without closing the run", run.pid);
            match summarise(self, run) {
                Ok(ms) if ms.is_empty() => {}
                Ok(ms) => {
                    self.replace_measurements(run.id, &ms)?;
                    why.push_str("; what it stored is summarised");
                }
                Err(e) => why.push_str(&format!("; what it stored could not be summarised: {e}")),
            }
            self.conn.execute(
                "UPDATE run SET status = 'interrupted', error = ?2, ended_at = ?3
                 WHERE id = ?1 AND status = 'running'",
                params![run.id, why, rfc3339_utc(std::time::SystemTime::now())],
            )?;
        }
        for (group, pid) in self.abandoned_groups()? {
            let why = format!("process {pid} ended without closing it");
            let tx = self.conn.unchecked_transaction()?;
            tx.execute(
                "UPDATE run_group SET status = 'interrupted', ended_at = ?2,
                    detail = json_set(detail, '$.end_reason', ?3)
                 WHERE id = ?1 AND status = 'running'",
                params![group, rfc3339_utc(std::time::SystemTime::now()), why],
            )?;
            tx.execute(
                "UPDATE plan_cell SET status = 'interrupted', error = ?2
                 WHERE group_id = ?1 AND status = 'running'",
                params![group, why],
            )?;
            tx.commit()?;
        }
        Ok(runs.len())
    }

    /// Starts a group of runs (one `audiolat suite`, later one plan).
    pub fn create_group(
        &self,
        kind: &str,
        command_line: &str,
        detail: &Value,
    ) -> Result<i64, StoreError> {
        if let Some((plan_group, _)) = self.plan_cell.get() {
            // A plan's cell is one run of the plan run: no group of its own.
            return Ok(plan_group);
        }
        // Its owner, for recovery: a group whose process dies before its first run has
        // no run to name it. (A plan run's detail names its runner itself.)
        self.conn.execute(
            "INSERT INTO run_group (kind, started_at, command_line, detail)
             VALUES (?1, ?2, ?3, json_insert(?4, '$.runner_pid', ?5, '$.runner_host', ?6))",
            params![
                kind,
                rfc3339_utc(std::time::SystemTime::now()),
                command_line,
                json_text(detail),
                std::process::id(),
                hostname()
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Closes a group of runs with its status.
    pub fn finish_group(&self, group_id: i64, status: RunStatus) -> Result<(), StoreError> {
        if self.plan_cell.get().is_some_and(|(g, _)| g == group_id) {
            // The plan runner closes its own group.
            return Ok(());
        }
        self.conn.execute(
            "UPDATE run_group SET status = ?2, ended_at = ?3 WHERE id = ?1",
            params![
                group_id,
                status.as_str(),
                rfc3339_utc(std::time::SystemTime::now())
            ],
        )?;
        Ok(())
    }

    /// A group's kind and status.
    pub fn group_status(&self, group_id: i64) -> Result<(String, RunStatus), StoreError> {
        let (kind, status): (String, String) = self
            .conn
            .query_row(
                "SELECT kind, status FROM run_group WHERE id = ?1",
                [group_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?
            .ok_or_else(|| StoreError::Corrupt(format!("no group {group_id}")))?;
        Ok((kind, RunStatus::parse(&status).unwrap_or(RunStatus::Failed)))
    }

    /// Records the start of a run (status `running`) and returns its id.
    pub fn begin_run(&self, info: &RunInfo) -> Result<i64, StoreError> {
        if let Some((plan_group, cell)) = self.plan_cell.get() {
            let run_id: Option<i64> = self
                .conn
                .query_row(
                    "SELECT run_id FROM plan_cell WHERE id = ?1 AND group_id = ?2 AND status = 'running'",
                    params![cell, plan_group],
                    |r| r.get(0),
                )
                .optional()?
                .ok_or_else(|| {
                    StoreError::Corrupt(format!(
                        "plan cell {cell} of group {plan_group} is not waiting for a run"
                    ))
                })?;
            if let Some(earlier) = run_id {
                // This attempt already made its run.
                return Err(StoreError::PlanCellTaken {
                    cell,
                    run_id: earlier,
                });
            }
            let mut info = info.clone();
            info.group_id = Some(plan_group);
            let id = self.insert_run(&info)?;
            self.conn.execute(
                "UPDATE plan_cell SET run_id = ?2 WHERE id = ?1",
                params![cell, id],
            )?;
            return Ok(id);
        }
        self.insert_run(info)
    }

    fn insert_run(&self, info: &RunInfo) -> Result<i64, StoreError> {
        self.conn.execute(
            "INSERT INTO run (group_id, probe, status, started_at, started_mono_ns, pid, hostname,
                machine, tool_version, git_commit, build_profile, command_line, config, load,
                qos_requested)
             VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                info.group_id,
                info.probe,
                rfc3339_utc(std::time::SystemTime::now()),
                now_mono_ns(),
                std::process::id(),
                info.machine.hostname,
                json_text(&serde_json::to_value(&info.machine).expect("machine serialises")),
                info.tool.version,
                info.tool.git_commit,
                info.tool.build_profile,
                info.command_line,
                json_text(&info.config),
                json_text(&info.load),
                json_text(&info.qos_requested),
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Updates fields known only once the run is under way.
    pub fn update_run(
        &self,
        run_id: i64,
        load: Option<&Value>,
        qos_granted: Option<&Value>,
    ) -> Result<(), StoreError> {
        if let Some(load) = load {
            self.conn.execute(
                "UPDATE run SET load = ?2 WHERE id = ?1",
                params![run_id, json_text(load)],
            )?;
        }
        if let Some(q) = qos_granted {
            self.conn.execute(
                "UPDATE run SET qos_granted = ?2 WHERE id = ?1",
                params![run_id, json_text(q)],
            )?;
        }
        Ok(())
    }

    /// Replaces a running run's probe result: what recovery needs to summarise the run
    /// should its process die (the closing [`Store::finish_run`] writes the real one).
    pub fn set_result(&self, run_id: i64, result: &Value) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE run SET result = ?2 WHERE id = ?1",
            params![run_id, json_text(result)],
        )?;
        Ok(())
    }

    /// Stores a measurement.
    pub fn add_measurement(&self, run_id: i64, m: &Measurement) -> Result<i64, StoreError> {
        let stored = m.histogram.as_ref().map(LatencyHistogram::to_stored);
        let exact = stored.as_ref().map(|s| {
            json_text(&serde_json::json!({
                "count": s.count, "min": s.min, "max": s.max,
                "sum": s.sum.to_string(), "sum_sq": s.sum_sq.to_string(),
            }))
        });
        let s = m.summary.as_ref();
        let stat = |f: fn(&Summary) -> f64| s.map(f);
        self.conn.execute(
            "INSERT INTO measurement (run_id, probe, metric, unit, method, count, min, mean, stdev,
                p50, p90, p99, p999, p9999, max, clamped, overflows, deadline, misses, histogram,
                histogram_bound, histogram_exact, detail)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                ?18, ?19, ?20, ?21, ?22, ?23)",
            params![
                run_id,
                m.probe,
                m.metric,
                m.unit,
                m.method,
                m.count() as i64,
                stat(|s| s.min),
                stat(|s| s.mean),
                stat(|s| s.stdev),
                stat(|s| s.p50),
                stat(|s| s.p90),
                stat(|s| s.p99),
                stat(|s| s.p999),
                stat(|s| s.p9999),
                stat(|s| s.max),
                s.is_some_and(|s| s.clamped_at.is_some()),
                m.overflows() as i64,
                m.deadline,
                m.misses.map(|v| v as i64),
                stored.as_ref().map(|s| s.v2.clone()),
                stored.as_ref().map(|s| s.bound as i64),
                exact,
                json_text(&m.detail),
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Stores measurements in place of any earlier ones of the same metrics in the run,
    /// in one transaction: how a run's checkpoints are kept up to date while it goes on
    /// (a reader, or a crash, sees one checkpoint whole, never a mix of two).
    pub fn replace_measurements(&self, run_id: i64, ms: &[Measurement]) -> Result<(), StoreError> {
        let tx = self.conn.unchecked_transaction()?;
        for m in ms {
            tx.execute(
                "DELETE FROM measurement WHERE run_id = ?1 AND metric = ?2",
                params![run_id, m.metric],
            )?;
            self.add_measurement(run_id, m)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Stores events in one transaction.
    pub fn add_events(&self, run_id: i64, events: &[Event]) -> Result<(), StoreError> {
        let tx = self.conn.unchecked_transaction()?;
        {
            let mut stmt = tx.prepare_cached(
                "INSERT INTO event (run_id, mono_ns, kind, detail) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for e in events {
                stmt.execute(params![
                    run_id,
                    e.mono_ns as i64,
                    e.kind,
                    json_text(&e.detail)
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Stores trigger rows in one transaction.
    pub fn add_triggers(&self, run_id: i64, rows: &[TriggerRow]) -> Result<(), StoreError> {
        let tx = self.conn.unchecked_transaction()?;
        {
            let mut stmt = tx.prepare_cached(
                "INSERT INTO trigger (run_id, seq, source, trigger_ns, note_frame, offset_frames,
                    cycle, dac_ns, latency_ns, wait_ns, lateness_ns, buffer_ns, late, missed,
                    measured_ns, underruns_before)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
            )?;
            for t in rows {
                stmt.execute(params![
                    run_id,
                    t.seq as i64,
                    t.source,
                    t.trigger_ns as i64,
                    t.note_frame as i64,
                    t.offset_frames,
                    t.cycle as i64,
                    t.dac_ns as i64,
                    t.latency_ns,
                    t.wait_ns,
                    t.lateness_ns,
                    t.buffer_ns,
                    t.late,
                    t.missed,
                    t.measured_ns,
                    t.underruns_before as i64,
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// A run's trigger rows, in trigger order.
    pub fn triggers(&self, run_id: i64) -> Result<Vec<TriggerRow>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT seq, source, trigger_ns, note_frame, offset_frames, cycle, dac_ns, latency_ns,
                wait_ns, lateness_ns, buffer_ns, late, missed, measured_ns, underruns_before
             FROM trigger WHERE run_id = ?1 ORDER BY seq",
        )?;
        let rows = stmt.query_map([run_id], |r| {
            Ok(TriggerRow {
                seq: r.get::<_, i64>(0)? as u64,
                source: r.get(1)?,
                trigger_ns: r.get::<_, i64>(2)? as u64,
                note_frame: r.get::<_, i64>(3)? as u64,
                offset_frames: r.get(4)?,
                cycle: r.get::<_, i64>(5)? as u64,
                dac_ns: r.get::<_, i64>(6)? as u64,
                latency_ns: r.get(7)?,
                wait_ns: r.get(8)?,
                lateness_ns: r.get(9)?,
                buffer_ns: r.get(10)?,
                late: r.get(11)?,
                missed: r.get(12)?,
                measured_ns: r.get(13)?,
                underruns_before: r.get::<_, i64>(14)? as u64,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Stores a series.
    pub fn add_series(&self, run_id: i64, series: &Series) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT INTO series (run_id, name, unit, columns, rows) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                run_id,
                series.name,
                series.unit,
                json_text(&serde_json::to_value(&series.columns).expect("strings serialise")),
                json_text(&serde_json::to_value(&series.rows).expect("numbers serialise")),
            ],
        )?;
        Ok(())
    }

    /// Closes a run with its status, validity flags, probe result and error.
    pub fn finish_run(
        &self,
        run_id: i64,
        status: RunStatus,
        flags: &Value,
        result: &Value,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE run SET status = ?2, ended_at = ?3, ended_mono_ns = ?4, flags = ?5, result = ?6,
                error = ?7 WHERE id = ?1",
            params![
                run_id,
                status.as_str(),
                rfc3339_utc(std::time::SystemTime::now()),
                now_mono_ns(),
                json_text(flags),
                json_text(result),
                error
            ],
        )?;
        Ok(())
    }

    /// Lists runs, newest first.
    pub fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, StoreError> {
        let mut sql = format!("SELECT {RUN_COLUMNS} FROM run WHERE 1=1");
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        if let Some(p) = &filter.probe {
            args.push(p.clone().into());
            sql.push_str(&format!(" AND probe = ?{}", args.len()));
        }
        if let Some(g) = filter.group_id {
            args.push(g.into());
            sql.push_str(&format!(" AND group_id = ?{}", args.len()));
        }
        if let Some(s) = filter.status {
            args.push(s.as_str().to_string().into());
            sql.push_str(&format!(" AND status = ?{}", args.len()));
        }
        sql.push_str(" ORDER BY id DESC");
        if let Some(l) = filter.limit {
            sql.push_str(&format!(" LIMIT {l}"));
        }
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map(rusqlite::params_from_iter(args), run_from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// One run.
    pub fn run(&self, run_id: i64) -> Result<RunRecord, StoreError> {
        self.conn
            .query_row(
                &format!("SELECT {RUN_COLUMNS} FROM run WHERE id = ?1"),
                [run_id],
                run_from_row,
            )
            .optional()?
            .ok_or(StoreError::NoSuchRun(run_id))
    }

    /// The most recent run id, if any.
    pub fn last_run_id(&self) -> Result<Option<i64>, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT max(id) FROM run", [], |r| r.get(0))?)
    }

    /// Files every run this store begins from now on under `cell` of the plan run
    /// `group_id`: the run joins the plan's group (and [`Store::create_group`] returns
    /// it), and the cell points at the run. A cell takes one run per process; a second
    /// [`Store::begin_run`] fails with [`StoreError::PlanCellTaken`].
    pub fn file_runs_under(&self, group_id: i64, cell: i64) -> Result<(), StoreError> {
        let status: Option<String> = self
            .conn
            .query_row(
                "SELECT status FROM plan_cell WHERE id = ?1 AND group_id = ?2",
                params![cell, group_id],
                |r| r.get(0),
            )
            .optional()?;
        match status.as_deref() {
            Some("running") => {
                self.plan_cell.set(Some((group_id, cell)));
                Ok(())
            }
            Some(s) => Err(StoreError::Corrupt(format!(
                "plan cell {cell} of group {group_id} is {s}, not waiting for a run"
            ))),
            None => Err(StoreError::Corrupt(format!(
                "no plan cell {cell} in group {group_id}"
            ))),
        }
    }

    /// A group.
    pub fn group(&self, group_id: i64) -> Result<GroupRecord, StoreError> {
        self.conn
            .query_row(
                &format!("SELECT {GROUP_COLUMNS} FROM run_group WHERE id = ?1"),
                [group_id],
                group_from_row,
            )
            .optional()?
            .ok_or(StoreError::NoSuchGroup(group_id))
    }

    /// Groups of one kind (all kinds with `None`), newest first.
    pub fn list_groups(&self, kind: Option<&str>) -> Result<Vec<GroupRecord>, StoreError> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {GROUP_COLUMNS} FROM run_group WHERE ?1 IS NULL OR kind = ?1 ORDER BY id DESC"
        ))?;
        let rows = stmt.query_map([kind], group_from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Marks a group running again (a resumed plan run).
    pub fn reopen_group(&self, group_id: i64) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE run_group SET status = 'running', ended_at = NULL WHERE id = ?1",
            [group_id],
        )?;
        Ok(())
    }

    /// Adds the cells of a plan run. Cells whose key the group already has are left as
    /// they are (a resumed plan run keeps its cells and their runs).
    pub fn add_plan_cells(&self, group_id: i64, cells: &[NewPlanCell]) -> Result<(), StoreError> {
        let tx = self.conn.unchecked_transaction()?;
        for c in cells {
            tx.execute(
                "INSERT OR IGNORE INTO plan_cell (group_id, seq, key, axes, argv, profile)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    group_id,
                    c.seq,
                    c.key,
                    json_text(&c.axes),
                    json_text(&serde_json::to_value(&c.argv).expect("strings serialise")),
                    c.profile
                ],
            )?;
            tx.execute(
                "UPDATE plan_cell SET seq = ?3 WHERE group_id = ?1 AND key = ?2",
                params![group_id, c.key, c.seq],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// The cells of a plan run, in run order.
    pub fn plan_cells(&self, group_id: i64) -> Result<Vec<PlanCell>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT id, group_id, seq, key, axes, argv, profile, status, run_id, attempts, error
             FROM plan_cell WHERE group_id = ?1 ORDER BY seq, id",
        )?;
        let rows = stmt.query_map([group_id], |r| {
            let status: String = r.get(7)?;
            Ok(PlanCell {
                id: r.get(0)?,
                group_id: r.get(1)?,
                seq: r.get(2)?,
                key: r.get(3)?,
                axes: parse_json(&r.get::<_, String>(4)?),
                argv: serde_json::from_str(&r.get::<_, String>(5)?).unwrap_or_default(),
                profile: r.get(6)?,
                status: RunStatus::parse(&status),
                run_id: r.get(8)?,
                attempts: r.get(9)?,
                error: r.get(10)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Marks a cell as being run (one more attempt) before its process starts.
    pub fn start_plan_cell(&self, cell: i64) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE plan_cell SET status = 'running', attempts = attempts + 1, error = NULL,
                run_id = NULL
             WHERE id = ?1",
            [cell],
        )?;
        Ok(())
    }

    /// Closes a run its process left `running` (it died before closing it): sets the
    /// status and the reason, keeping everything the run stored. Does nothing to a run
    /// that is closed.
    pub fn close_abandoned_run(
        &self,
        run_id: i64,
        status: RunStatus,
        error: &str,
    ) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE run SET status = ?2, ended_at = ?3, error = ?4
             WHERE id = ?1 AND status = 'running'",
            params![
                run_id,
                status.as_str(),
                rfc3339_utc(std::time::SystemTime::now()),
                error
            ],
        )?;
        Ok(())
    }

    /// Replaces a group's detail (a plan run records its runner's pid there).
    pub fn set_group_detail(&self, group_id: i64, detail: &Value) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE run_group SET detail = ?2 WHERE id = ?1",
            params![group_id, json_text(detail)],
        )?;
        Ok(())
    }

    /// Closes a cell: its status is its run's, or `failed` with the reason when it made
    /// no run.
    pub fn finish_plan_cell(
        &self,
        cell: i64,
        status: RunStatus,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE plan_cell SET status = ?2, error = ?3 WHERE id = ?1",
            params![cell, status.as_str(), error],
        )?;
        Ok(())
    }

    /// A run's measurements, in the order stored.
    pub fn measurements(&self, run_id: i64) -> Result<Vec<MeasurementRecord>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT id, run_id, probe, metric, unit, method, count, min, mean, stdev, p50, p90, p99,
                p999, p9999, max, clamped, deadline, misses, histogram, histogram_bound,
                histogram_exact, detail, overflows
             FROM measurement WHERE run_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([run_id], |r| {
            let blob: Option<Vec<u8>> = r.get(19)?;
            let bound: Option<i64> = r.get(20)?;
            let exact: Option<String> = r.get(21)?;
            let clamped: bool = r.get(16)?;
            let count = r.get::<_, i64>(6)? as u64;
            // A row without samples has NULL statistics: no summary.
            let summary = match (count, r.get::<_, Option<f64>>(7)?) {
                (1.., Some(min)) => Some(Summary {
                    count,
                    min,
                    mean: r.get(8)?,
                    stdev: r.get(9)?,
                    p50: r.get(10)?,
                    p90: r.get(11)?,
                    p99: r.get(12)?,
                    p999: r.get(13)?,
                    p9999: r.get(14)?,
                    max: r.get(15)?,
                    clamped_at: bound.filter(|_| clamped).map(|b| b as f64),
                }),
                _ => None,
            };
            let overflows: i64 = r.get(23)?;
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                Measurement {
                    probe: r.get(2)?,
                    metric: r.get(3)?,
                    unit: r.get(4)?,
                    method: r.get(5)?,
                    summary,
                    histogram: None,
                    deadline: r.get(17)?,
                    misses: r.get::<_, Option<i64>>(18)?.map(|v| v as u64),
                    detail: parse_json(&r.get::<_, String>(22)?),
                },
                blob.zip(bound)
                    .map(|(b, bound)| (b, bound, exact, overflows)),
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, run_id, mut m, hist) = row?;
            if let Some((v2, bound, exact, overflows)) = hist {
                let exact = exact.map(|e| parse_json(&e)).unwrap_or(Value::Null);
                let num = |k: &str| exact[k].as_u64().unwrap_or(0);
                let big = |k: &str| {
                    exact[k]
                        .as_str()
                        .and_then(|s| s.parse::<u128>().ok())
                        .unwrap_or(0)
                };
                let stored = StoredHistogram {
                    v2,
                    bound: bound as u64,
                    overflows: overflows as u64,
                    count: num("count"),
                    min: num("min"),
                    max: num("max"),
                    sum: big("sum"),
                    sum_sq: big("sum_sq"),
                };
                m.histogram = Some(
                    LatencyHistogram::from_stored(&stored)
                        .map_err(|e| StoreError::Corrupt(format!("measurement {id}: {e}")))?,
                );
            }
            out.push(MeasurementRecord {
                id,
                run_id,
                measurement: m,
            });
        }
        Ok(out)
    }

    /// A run's events in time order; at most `limit` when given.
    pub fn events(&self, run_id: i64, limit: Option<usize>) -> Result<Vec<Event>, StoreError> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT mono_ns, kind, detail FROM event WHERE run_id = ?1 ORDER BY mono_ns, id {}",
            limit.map_or(String::new(), |l| format!("LIMIT {l}"))
        ))?;
        let rows = stmt.query_map([run_id], |r| {
            Ok(Event {
                mono_ns: r.get::<_, i64>(0)? as u64,
                kind: r.get(1)?,
                detail: parse_json(&r.get::<_, String>(2)?),
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Number of events of each kind in a run.
    pub fn event_counts(&self, run_id: i64) -> Result<Vec<(String, u64)>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT kind, count(*) FROM event WHERE run_id = ?1 GROUP BY kind ORDER BY kind",
        )?;
        let rows = stmt.query_map([run_id], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// A run's series.
    pub fn series(&self, run_id: i64) -> Result<Vec<Series>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT name, unit, columns, rows FROM series WHERE run_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([run_id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (name, unit, columns, data) = row?;
            out.push(Series {
                name,
                unit,
                columns: serde_json::from_str(&columns)
                    .map_err(|e| StoreError::Corrupt(e.to_string()))?,
                rows: crate::model::nulls_to_nan(
                    serde_json::from_str(&data).map_err(|e| StoreError::Corrupt(e.to_string()))?,
                ),
            });
        }
        Ok(out)
    }
}

const GROUP_COLUMNS: &str = "id, kind, status, started_at, ended_at, command_line, detail";

fn group_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<GroupRecord> {
    let status: String = r.get(2)?;
    Ok(GroupRecord {
        id: r.get(0)?,
        kind: r.get(1)?,
        status: RunStatus::parse(&status).unwrap_or(RunStatus::Failed),
        started_at: r.get(3)?,
        ended_at: r.get(4)?,
        command_line: r.get(5)?,
        detail: parse_json(&r.get::<_, String>(6)?),
    })
}

const RUN_COLUMNS: &str = "id, group_id, probe, status, started_at, ended_at, started_mono_ns,
    ended_mono_ns, pid, machine, tool_version, git_commit, build_profile, command_line, config,
    load, qos_requested, qos_granted, flags, result, error";

fn run_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRecord> {
    let status: String = r.get(3)?;
    let started: i64 = r.get(6)?;
    let ended: Option<i64> = r.get(7)?;
    let machine: Machine = serde_json::from_str(&r.get::<_, String>(9)?).unwrap_or_default();
    Ok(RunRecord {
        id: r.get(0)?,
        group_id: r.get(1)?,
        probe: r.get(2)?,
        status: RunStatus::parse(&status).unwrap_or(RunStatus::Failed),
        started_at: r.get(4)?,
        ended_at: r.get(5)?,
        duration_s: ended.map(|e| (e - started) as f64 / 1e9),
        started_mono_ns: started.max(0) as u64,
        pid: r.get(8)?,
        machine,
        tool: ToolInfo {
            version: r.get(10)?,
            git_commit: r.get(11)?,
            build_profile: r.get(12)?,
        },
        command_line: r.get(13)?,
        config: parse_json(&r.get::<_, String>(14)?),
        load: parse_json(&r.get::<_, String>(15)?),
        qos_requested: parse_json(&r.get::<_, String>(16)?),
        qos_granted: parse_json(&r.get::<_, String>(17)?),
        flags: parse_json(&r.get::<_, String>(18)?),
        result: parse_json(&r.get::<_, String>(19)?),
        error: r.get(20)?,
    })
}

fn writable(path: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

fn process_alive(pid: i64) -> bool {
    if pid <= 0 || pid > i32::MAX as i64 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence.
    let rc = unsafe { libc::kill(pid as i32, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// This host's name, as stored in runs.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// The schema as audiolat `version` made it, in one transaction: an older audiolat's file.
#[cfg(test)]
fn schema_up_to(version: i64) -> String {
    let steps = [SCHEMA_V1, SCHEMA_V2, SCHEMA_V3, SCHEMA_V4];
    let schema = steps[..version as usize].concat();
    format!("BEGIN; {schema} PRAGMA user_version = {version}; COMMIT;")
}

#[cfg(test)]
mod journal_tests {
    use super::*;

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
    fn copied_with_log(dir: &Path, version: i64) -> (PathBuf, i64) {
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
        (copy, 7)
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
        let summarise = |_: &Store, _: &RunRecord| Ok(Vec::new());
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_half_written_reserve_of_a_dead_process_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let reserve = dir.path().join("a.db-reserve");
        // A pid above pid_max never runs; this process's own is left alone.
        let dead = dir.path().join("a.db-reserve.tmp.4999999.0");
        let mine = dir
            .path()
            .join(format!("a.db-reserve.tmp.{}.7", std::process::id()));
        let other = dir.path().join("a.db-reserve.tmpx");
        for f in [&dead, &mine, &other] {
            std::fs::write(f, b"x").unwrap();
        }
        remove_dead_reserve_tmps(&reserve);
        assert!(!dead.exists());
        assert!(mine.exists() && other.exists());
    }

    #[test]
    fn the_header_says_whether_a_database_keeps_a_write_ahead_log() {
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path().join("wal.db");
        Connection::open(&wal)
            .unwrap()
            .execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t (x);")
            .unwrap();
        assert!(in_wal_mode(&wal));
        let rollback = dir.path().join("rollback.db");
        Connection::open(&rollback)
            .unwrap()
            .execute_batch("CREATE TABLE t (x);")
            .unwrap();
        assert!(!in_wal_mode(&rollback));
        assert!(!in_wal_mode(&dir.path().join("none.db")));
    }

    fn info(probe: &str) -> RunInfo {
        RunInfo {
            probe: probe.into(),
            group_id: None,
            machine: Machine {
                hostname: hostname(),
                ..Machine::default()
            },
            tool: ToolInfo::default(),
            command_line: "audiolat test".into(),
            config: json!({"rate_hz": 2048}),
            load: json!({"spec": "none"}),
            qos_requested: json!({"policy": "fifo"}),
        }
    }

    #[test]
    fn a_version_1_file_gains_the_trigger_table_and_triggers_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(&schema_up_to(1)).unwrap();
        }
        let store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        let id = store.begin_run(&info("event")).unwrap();
        let rows: Vec<TriggerRow> = (0..3)
            .map(|i| TriggerRow {
                seq: i,
                source: "timer".into(),
                trigger_ns: 1_000 + i,
                latency_ns: 8_000_000 + i as i64,
                measured_ns: (i == 1).then_some(8_100_000),
                late: i == 2,
                ..TriggerRow::default()
            })
            .collect();
        store.add_triggers(id, &rows[..2]).unwrap();
        store.add_triggers(id, &rows[2..]).unwrap();
        assert_eq!(store.triggers(id).unwrap(), rows);
    }

    #[test]
    fn a_run_round_trips_with_its_histogram() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("a.db")).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        let id = store.begin_run(&info("jitter")).unwrap();
        let mut h = LatencyHistogram::new(1_000_000).unwrap();
        for v in [1_000, 2_000, 3_000, 5_000_000] {
            h.record(v);
        }
        let m = Measurement::from_histogram("jitter", "wakeup_latency", "test", h.clone());
        store.add_measurement(id, &m).unwrap();
        store
            .add_events(
                id,
                &[Event {
                    mono_ns: 5,
                    kind: "overflow".into(),
                    detail: json!({"cycle": 3}),
                }],
            )
            .unwrap();
        store
            .add_series(
                id,
                &Series {
                    name: "s".into(),
                    unit: "ns".into(),
                    columns: vec!["t".into(), "v".into()],
                    rows: vec![vec![0.0, 1.0], vec![1.0, f64::NAN]],
                },
            )
            .unwrap();
        store
            .finish_run(
                id,
                RunStatus::Interrupted,
                &json!({"realtime": true}),
                &json!({}),
                None,
            )
            .unwrap();

        let run = store.run(id).unwrap();
        assert_eq!(run.status, RunStatus::Interrupted);
        assert_eq!(run.config["rate_hz"], 2048);
        assert!(run.duration_s.unwrap() >= 0.0);
        let ms = store.measurements(id).unwrap();
        assert_eq!(ms.len(), 1);
        let back = ms[0].measurement.histogram.as_ref().unwrap();
        assert_eq!(back.summary(), h.summary());
        assert_eq!(back.overflows(), 1);
        assert_eq!(store.events(id, None).unwrap()[0].detail["cycle"], 3);
        assert_eq!(
            store.event_counts(id).unwrap(),
            vec![("overflow".into(), 1)]
        );
        // NaN goes in as JSON null and comes back as NaN.
        let rows = &store.series(id).unwrap()[0].rows;
        assert_eq!(rows[0], vec![0.0, 1.0]);
        assert_eq!(rows[1][0], 1.0);
        assert!(rows[1][1].is_nan());
        assert_eq!(store.list_runs(&RunFilter::default()).unwrap().len(), 1);

        // A later checkpoint of the same metric replaces the earlier one.
        let mut h2 = h.clone();
        h2.record(4_000);
        let m2 = Measurement::from_histogram("jitter", "wakeup_latency", "test", h2);
        store.replace_measurements(id, &[m2]).unwrap();
        let ms = store.measurements(id).unwrap();
        assert_eq!(ms.len(), 1);
        assert_eq!(ms[0].measurement.count(), 5);
    }

    #[test]
    fn a_measurement_of_nothing_is_stored_as_null_and_read_back_without_summary() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("e.db")).unwrap();
        let id = store.begin_run(&info("roundtrip")).unwrap();
        let empty = LatencyHistogram::new(1_000_000).unwrap();
        let m = Measurement::from_histogram("roundtrip", "roundtrip", "test", empty);
        store.add_measurement(id, &m).unwrap();
        let (count, min, max): (i64, Option<f64>, Option<f64>) = store
            .conn
            .query_row(
                "SELECT count, min, max FROM measurement WHERE run_id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!((count, min, max), (0, None, None));
        let back = &store.measurements(id).unwrap()[0].measurement;
        assert_eq!(back.count(), 0);
        assert_eq!(back.summary, None);
    }

    #[test]
    fn a_version_3_file_keeps_its_measurements_and_its_empty_ones_become_null() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v3.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(&schema_up_to(3)).unwrap();
            conn.execute_batch(
                "INSERT INTO run (id, probe, status, started_at, started_mono_ns, pid, hostname,
                    machine, tool_version, git_commit, build_profile, command_line, config, load,
                    qos_requested)
                 VALUES (1, 'net', 'complete', 't', 0, 1, 'h', '{}', 'v', 'g', 'p', 'c', '{}',
                    '{}', '{}');
                 INSERT INTO measurement (run_id, probe, metric, unit, method, count, min, mean,
                    stdev, p50, p90, p99, p999, p9999, max, misses)
                 VALUES (1, 'net', 'response_time', 'ns', 'm', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1379),
                        (1, 'net', 'end_to_end', 'ns', 'm', 2, 10, 15, 5, 10, 20, 20, 20, 20, 20,
                         NULL);",
            )
            .unwrap();
        }
        // Read as it is by a command that only reads: the same values, the file
        // unchanged.
        let before = std::fs::read(&path).unwrap();
        let reader = Store::open_read_only(&path).unwrap();
        assert_eq!(reader.schema_version().unwrap(), 3);
        let ms = reader.measurements(1).unwrap();
        assert_eq!(ms.len(), 2);
        assert_eq!(
            (ms[0].measurement.count(), ms[0].measurement.summary),
            (0, None)
        );
        assert_eq!(ms[0].measurement.misses, Some(1379));
        let s = ms[1].measurement.summary.unwrap();
        assert_eq!((s.count, s.min, s.mean, s.max), (2, 10.0, 15.0, 20.0));
        drop(reader);
        assert_eq!(std::fs::read(&path).unwrap(), before);
        let store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        let ms = store.measurements(1).unwrap();
        assert_eq!(ms.len(), 2);
        let empty = &ms[0].measurement;
        assert_eq!((empty.count(), empty.summary), (0, None));
        assert_eq!(empty.misses, Some(1379));
        let s = ms[1].measurement.summary.unwrap();
        assert_eq!((s.count, s.min, s.mean, s.max), (2, 10.0, 15.0, 20.0));
        // The rebuilt table still belongs to its run.
        store
            .conn
            .execute("DELETE FROM run WHERE id = 1", [])
            .unwrap();
        assert!(store.measurements(1).unwrap().is_empty());
    }

    #[test]
    fn groups_are_closed_with_a_status() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("g.db")).unwrap();
        let g = store
            .create_group("suite", "audiolat suite", &json!({}))
            .unwrap();
        assert_eq!(store.group_status(g).unwrap().1, RunStatus::Running);
        store.finish_group(g, RunStatus::Interrupted).unwrap();
        assert_eq!(
            store.group_status(g).unwrap(),
            ("suite".into(), RunStatus::Interrupted)
        );
    }

    #[test]
    fn unwritable_and_missing_paths_are_clear_errors() {
        let err = Store::open(Path::new("/nonexistent-dir/x.db")).unwrap_err();
        assert!(err.to_string().contains("does not exist"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let err = Store::open(dir.path()).unwrap_err();
        assert!(err.to_string().contains("directory"), "{err}");
        let err = Store::open(Path::new("/dev/null")).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let err = Store::open_existing(&dir.path().join("none.db")).unwrap_err();
        assert!(matches!(err, StoreError::Missing(_)));
        assert!(!dir.path().join("none.db").exists());
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n.db");
        drop(Store::open(&path).unwrap());
        Connection::open(&path)
            .unwrap()
            .execute_batch("PRAGMA user_version = 99;")
            .unwrap();
        assert!(matches!(Store::open(&path), Err(StoreError::TooNew { .. })));
    }

    #[test]
    fn runs_of_dead_processes_become_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let store = Store::open(&path).unwrap();
        let id = store.begin_run(&info("jitter")).unwrap();
        // Pretend the run belongs to a process that no longer exists.
        store
            .conn
            .execute(
                "UPDATE run SET pid = ?2 WHERE id = ?1",
                params![id, i32::MAX as i64 - 1],
            )
            .unwrap();
        drop(store);
        let store = Store::open(&path).unwrap();
        let run = store.run(id).unwrap();
        assert_eq!(run.status, RunStatus::Interrupted);
        assert!(run.error.unwrap().contains("without closing"));
    }

    #[test]
    fn unknown_run_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("u.db")).unwrap();
        let err = store.run(42).unwrap_err();
        assert!(err.to_string().contains("audiolat runs"));
    }

    fn cell(seq: i64, key: &str) -> NewPlanCell {
        NewPlanCell {
            seq,
            key: key.into(),
            axes: json!({"backend": key}),
            argv: vec!["jitter".into(), "-D".into(), "1s".into()],
            profile: "current".into(),
        }
    }

    #[test]
    fn a_plan_cell_takes_the_run_its_process_begins_and_only_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.db");
        let planner = Store::open(&path).unwrap();
        let group = planner
            .create_group("plan", "audiolat run p.toml", &json!({}))
            .unwrap();
        planner
            .add_plan_cells(group, &[cell(0, "a"), cell(1, "b")])
            .unwrap();
        // Adding the same cells again (a resume) keeps one row per key.
        planner
            .add_plan_cells(group, &[cell(1, "a"), cell(0, "b")])
            .unwrap();
        let cells = planner.plan_cells(group).unwrap();
        assert_eq!(
            cells.iter().map(|c| c.key.as_str()).collect::<Vec<_>>(),
            ["b", "a"]
        );
        assert!(cells
            .iter()
            .all(|c| c.status.is_none() && c.run_id.is_none()));
        let b = &cells[0];

        // A pending cell takes no runs.
        let child = Store::open(&path).unwrap();
        assert!(child.file_runs_under(group, b.id).is_err());
        planner.start_plan_cell(b.id).unwrap();
        child.file_runs_under(group, b.id).unwrap();
        // The cell's own sweep group is the plan's.
        assert_eq!(child.create_group("event", "x", &json!({})).unwrap(), group);
        let run = child.begin_run(&info("jitter")).unwrap();
        assert_eq!(child.run(run).unwrap().group_id, Some(group));
        let second = child.begin_run(&info("jitter")).unwrap_err();
        assert!(
            matches!(second, StoreError::PlanCellTaken { .. }),
            "{second}"
        );
        child.finish_group(group, RunStatus::Complete).unwrap();
        assert_eq!(planner.group_status(group).unwrap().1, RunStatus::Running);

        planner
            .finish_plan_cell(b.id, RunStatus::Complete, None)
            .unwrap();
        let cells = planner.plan_cells(group).unwrap();
        assert_eq!(cells[0].run_id, Some(run));
        assert_eq!(cells[0].status, Some(RunStatus::Complete));
        assert_eq!(cells[0].attempts, 1);
        let g = planner.group(group).unwrap();
        assert_eq!(g.kind, "plan");
        assert!(matches!(
            planner.group(group + 1),
            Err(StoreError::NoSuchGroup(_))
        ));
    }
}

#[cfg(test)]
mod open_tests {
    use super::*;
    use serde_json::json;

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
            }
        }
    }

    #[test]
    fn a_writer_keeps_a_reserve_that_a_closing_write_may_use() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        let store = Store::open(&path).unwrap();
        let reserve = reserve_path(&path);
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
        drop(Store::open(&path).unwrap());
        assert!(reserve.exists(), "the next open makes it again");
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
            .conn
            .execute(
                "UPDATE run_group SET detail = json_set(detail, '$.runner_pid', ?2) WHERE id = ?1",
                params![sweep, dead],
            )
            .unwrap();
        let old = store
            .create_group("suite", "audiolat suite", &json!({}))
            .unwrap();
        store
            .conn
            .execute(
                "UPDATE run_group SET detail = '{}' WHERE id = ?1",
                params![old],
            )
            .unwrap();
        let old_run = store
            .begin_run(&RunInfo {
                probe: "jitter".into(),
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
            })
            .unwrap();
        store
            .conn
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
}

#[cfg(test)]
mod recovery_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_dead_processs_run_gets_the_summarisers_measurements_and_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        let store = Store::open(&path).unwrap();
        let info = RunInfo {
            probe: "event".into(),
            group_id: None,
            machine: Machine {
                hostname: hostname(),
                ..Machine::default()
            },
            tool: ToolInfo::default(),
            command_line: "audiolat event".into(),
            config: json!({}),
            load: json!({}),
            qos_requested: json!({}),
        };
        let id = store.begin_run(&info).unwrap();
        store
            .conn
            .execute(
                "UPDATE run SET pid = ?2 WHERE id = ?1",
                params![id, i32::MAX as i64 - 1],
            )
            .unwrap();
        drop(store);
        std::fs::remove_file(reserve_path(&path)).unwrap();
        // A reader sees it as stored and changes nothing.
        let reader = Store::open_read_only(&path).unwrap();
        assert_eq!(reader.abandoned_runs().unwrap().len(), 1);
        assert_eq!(reader.run(id).unwrap().status, RunStatus::Running);
        drop(reader);
        let summarise = |_: &Store, run: &RunRecord| {
            let mut h = LatencyHistogram::new(1_000_000).unwrap();
            h.record(run.id as u64 * 1000);
            Ok(vec![Measurement::from_histogram(
                "event",
                "event_latency",
                "test",
                h,
            )])
        };
        assert_eq!(Store::close_abandoned(&path, &summarise).unwrap(), 1);
        let store = Store::open_read_only(&path).unwrap();
        let run = store.run(id).unwrap();
        assert_eq!(run.status, RunStatus::Interrupted);
        assert!(run.error.unwrap().contains("summarised"));
        assert!(run.ended_at.is_some());
        let ms = store.measurements(id).unwrap();
        assert_eq!(ms.len(), 1);
        assert_eq!(ms[0].measurement.count(), 1);
        assert!(
            !reserve_path(&path).exists(),
            "closing runs for a reader makes nothing new"
        );
    }
}
