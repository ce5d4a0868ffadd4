//! The store's errors: each says what failed and what the user can do.

use std::path::{Path, PathBuf};

use super::remedy::Remedy;
use super::url::postgres_url;
use super::version::SCHEMA_VERSION;
use crate::id::{GroupId, PlanCellId, RunId};

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
