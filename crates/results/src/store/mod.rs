//! The store: an SQLite file, or a PostgreSQL database shared by many machines.
//!
//! One file (default `./audiolat.db`) holds every run; a `postgres://` URL in its place
//! names a PostgreSQL store (`postgres`), with the same tables and versions. A run row is written when the run
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
//! Beside the database a writer keeps a reserve file (`FILE-reserve`, [`RESERVE_BYTES`]),
//! made when the database takes its first run or group (a refused database gets none):
//! when the filesystem fills mid-run, [`Store::closing`] removes it so the run can still
//! be closed with its summary and the real reason.
//!
//! Layout: this file holds the handle ([`Store`]) and its error and option types; the
//! opens and their pre-checks are in `open` (what to do about a refusal, typed, in
//! `remedy`), the journal mode in `journal`, the schema and
//! its migration in `schema`, the reserve in `reserve`, runs in `runs`, what a run
//! produced in `records`, groups and plan cells in `groups`, gate verdicts in `gates`,
//! and dead processes' leftovers in `recovery`; each `*_tests` file tests one of them
//! (`tests` the rest). The queries go through `db` (one interface over SQLite and
//! PostgreSQL); PostgreSQL's connection, schema and opens are in `postgres`, and copying
//! runs from one store to another in `push`.

pub(crate) mod db;
mod gates;
mod groups;
mod journal;
mod open;
mod postgres;
mod push;
mod records;
mod recovery;
mod remedy;
mod reserve;
mod runs;
mod schema;
pub(crate) mod unpushed;

use crate::id::{GroupId, PlanCellId, RunId};
#[cfg(test)]
use crate::model::Measurement;
pub use crate::model::Recovered;
use crate::model::RunStatus;
use crate::run::RunRecord;
use db::Db;
#[cfg(test)]
use rusqlite::Connection;
use serde_json::Value;
use std::path::{Path, PathBuf};

#[cfg(test)]
use journal::{in_wal_mode, shared_mmap_works, wal_path};
pub use open::plain_path;
pub use postgres::{
    connect_bound, postgres_url, redacted, stop_waiting_on, DEFAULT_CONNECT_TIMEOUT,
};
pub use push::Pushed;
pub use remedy::Remedy;
pub use reserve::RESERVE_BYTES;
#[cfg(test)]
use reserve::{make_reserve, remove_dead_reserve_tmps, reserve_path, MIN_FREE_BYTES};
#[cfg(test)]
use schema::schema_up_to;
pub use schema::SCHEMA_VERSION;
pub use unpushed::{LOCK_WAIT, LOCK_WAIT_MEASURING, PENDING_RETRY, UNPUSHED_DB};

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
        fix: Remedy,
    },
    /// No database at the path, for commands that only read. (The binary adds how to
    /// make one or choose another.)
    #[error("no results database at {0}: run a probe first, or use an existing results database")]
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
    /// The database could not take the run (a PostgreSQL server that went away mid-run;
    /// an SQLite database locked or full at its close): the run was moved to a local
    /// SQLite file, where it ended and is kept, to be pushed later (see `unpushed`).
    #[error("{}", kept_message(self))]
    KeptLocally {
        /// The run's id in the database it began in.
        run_id: RunId,
        /// Its id in the local file.
        local_id: RunId,
        /// The local file.
        path: PathBuf,
        /// The database it began in (a PostgreSQL store's URL, password hidden).
        url: PathBuf,
        /// Why the database could not take it.
        reason: String,
    },
    /// The database could not take the run, and no local file could either: what was
    /// measured is only in memory (the run's copy in the database keeps what it stored
    /// before, closed by the next open).
    #[error("run {run_id} could not be stored: {why}")]
    NotKept {
        /// The run's id in the database it began in.
        run_id: RunId,
        /// Why, from the database and the local file.
        why: String,
    },
    /// A stop (SIGINT, SIGTERM: [`stop_waiting_on`]) came while connecting to the
    /// PostgreSQL store (its URL, password hidden): nothing was done.
    #[error("stopped while connecting to the PostgreSQL store {}: nothing was measured or stored", .0.display())]
    Stopped(PathBuf),
    /// No such run.
    #[error("no run with id {0}: `audiolat runs` lists them")]
    NoSuchRun(RunId),
    /// No such group.
    #[error("no group with id {0}: `audiolat runs` shows each run's group")]
    NoSuchGroup(GroupId),
    /// A plan cell is one run, but its process began a second one.
    #[error("plan cell {cell} already has run {run_id}: a plan's cell must make exactly one run (sweep with the plan's axes, not with comma lists)")]
    PlanCellTaken {
        /// The cell.
        cell: PlanCellId,
        /// Its run.
        run_id: RunId,
    },
    /// A stored value could not be decoded.
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// SQLite failed. (Not a `#[source]`: SQLite's message is said once, not again as a
    /// cause.)
    #[error("SQLite: {0}")]
    Sql(rusqlite::Error),
    /// PostgreSQL failed; `lost`: the connection to the server is gone (it stopped, or
    /// the network between).
    #[error("PostgreSQL: {message}")]
    Postgres {
        /// The server's or the client's message.
        message: String,
        /// The connection is gone.
        lost: bool,
    },
}

/// [`StoreError::KeptLocally`] in words: where the run is, why, and how to put it back.
fn kept_message(e: &StoreError) -> String {
    let StoreError::KeptLocally {
        run_id,
        local_id,
        path,
        url,
        reason,
    } = e
    else {
        return String::new();
    };
    let (path, url) = (path.display(), url.display());
    let push = format!("`audiolat push --db {path} --to {url}`");
    if postgres_url(Path::new(&url.to_string())).is_some() {
        format!("the PostgreSQL store {url} went away mid-run ({reason}): run {run_id} is kept in {path} as run {local_id}, with what it measured, ended as it would have; push it later: {push}")
    } else {
        format!("{url} could not take run {run_id} when it closed ({reason}): it is kept in {path} as run {local_id}, with what it measured, ended as it would have; put it there later: {push}")
    }
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

    /// Another process held the SQLite database locked for as long as the write
    /// waited ([`LOCK_WAIT`], or [`LOCK_WAIT_MEASURING`] while a run measures).
    pub fn is_locked(&self) -> bool {
        matches!(self, StoreError::Sql(e) if matches!(
            e.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        ))
    }

    /// The PostgreSQL server went away (stopped, or the network between).
    pub fn is_server_lost(&self) -> bool {
        matches!(self, StoreError::Postgres { lost: true, .. })
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

/// The most rows a listing asks for (runs by [`RunFilter::limit`], a run's events): a
/// count beyond any store's, which every database's `LIMIT` takes.
pub const MAX_LISTED: usize = 1_000_000;

/// Which runs to list.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    /// Only this probe.
    pub probe: Option<String>,
    /// Only this group.
    pub group_id: Option<GroupId>,
    /// Only this status.
    pub status: Option<RunStatus>,
    /// Only runs made on this host.
    pub host: Option<String>,
    /// Only runs made under this kernel release (`uname -r`).
    pub kernel: Option<String>,
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
/// `running`: what to keep for it, from what it stored (or why not).
pub type Summarise = dyn Fn(&Store, &RunRecord) -> Result<Recovered, String>;

/// A handle on the results database.
pub struct Store {
    db: Db,
    /// The file, or a PostgreSQL store's URL (its password hidden).
    path: PathBuf,
    journal: Journal,
    /// Set by [`Store::file_runs_under`]: the plan run and cell every run goes to.
    plan_cell: std::cell::Cell<Option<(GroupId, PlanCellId)>>,
    /// The runs in progress, kept in memory until they close (see `unpushed`).
    shadow: std::cell::RefCell<unpushed::Shadow>,
    /// Set while [`Store::closing`] makes a closing write.
    closing: std::cell::Cell<bool>,
    /// How long a write other than a measuring run's waits for a lock ([`LOCK_WAIT`];
    /// shorter in tests).
    lock_wait: std::cell::Cell<std::time::Duration>,
    /// The reserve was looked after (made if missing) by this handle.
    reserve_kept: std::cell::Cell<bool>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

pub(super) fn json_text(v: &Value) -> String {
    serde_json::to_string(v).expect("JSON values always serialise")
}

pub(super) fn parse_json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or(Value::Null)
}

pub(super) fn now_mono_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out pointer; CLOCK_MONOTONIC exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

impl Store {
    /// The file this store is backed by (a PostgreSQL store: its URL, without password).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this store is a PostgreSQL database (shared), not an SQLite file.
    pub fn is_shared(&self) -> bool {
        self.db.is_postgres()
    }

    /// How the database journals: the write-ahead log, or a rollback journal where the
    /// filesystem cannot carry the log's shared memory (say so to the user once).
    pub fn journal(&self) -> &Journal {
        &self.journal
    }
}

pub(super) fn writable(path: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// Whether `path` exists and this process may not write it, asked in one question (a
/// journal another process's open makes and removes, racing first runs, may appear or
/// vanish between two).
pub(super) fn present_and_unwritable(path: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0 {
        return false;
    }
    std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOENT)
}

/// This host's name, as stored in runs.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

#[cfg(test)]
mod journal_tests;
#[cfg(test)]
mod open_tests;
#[cfg(test)]
mod recovery_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod unpushed_tests;
