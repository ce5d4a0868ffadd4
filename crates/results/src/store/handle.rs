//! The handle on a results database ([`Store`]) with its option types, and the runs in
//! progress it keeps in memory (their behaviour is in `unpushed`). What a handle does
//! lives by subject in the modules beside this one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::Value;

use super::db::{Db, Val};
use crate::id::{GroupId, PlanCellId, RunId};
use crate::model::{Event, Measurement, Recovered, RunStatus, Series, TriggerRow};
use crate::run::{RunInfo, RunRecord};

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
    pub(super) db: Db,
    /// The file, or a PostgreSQL store's URL (its password hidden).
    pub(super) path: PathBuf,
    pub(super) journal: Journal,
    /// Set by [`Store::file_runs_under`]: the plan run and cell every run goes to.
    pub(super) plan_cell: std::cell::Cell<Option<(GroupId, PlanCellId)>>,
    /// The runs in progress, kept in memory until they close (see `unpushed`).
    pub(super) shadow: std::cell::RefCell<Shadow>,
    /// Set while [`Store::closing`] makes a closing write.
    pub(super) closing: std::cell::Cell<bool>,
    /// How long a write other than a measuring run's waits for a lock ([`LOCK_WAIT`](super::unpushed::LOCK_WAIT);
    /// shorter in tests).
    pub(super) lock_wait: std::cell::Cell<std::time::Duration>,
    /// The reserve was looked after (made if missing) by this handle.
    pub(super) reserve_kept: std::cell::Cell<bool>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
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

/// One write of a run through its sink.
pub(crate) enum Write {
    Result(Value),
    Update(Option<Value>, Option<Value>),
    Triggers(Vec<TriggerRow>),
    Events(Vec<Event>),
    Series(Series),
    Measurements(Vec<Measurement>),
    /// Status, flags, result, error and when the run ended (CLOCK_MONOTONIC ns).
    Finish(RunStatus, Value, Value, Option<String>, Option<u64>),
}

/// A run in progress, kept.
pub(super) struct InProgress {
    /// What it was begun with.
    pub(super) info: RunInfo,
    /// Its row's uid, started_at and started_mono_ns, as its database has them.
    pub(super) start: Vec<Val>,
    /// Its writes, in order.
    pub(super) writes: Vec<Write>,
    /// How many of them were made in its database (or failed there while it measured).
    pub(super) made: usize,
    /// When a lock last kept the next write from being made.
    pub(super) locked_at: Option<Instant>,
    /// Why it could be kept nowhere, once so: every later write fails so.
    pub(super) lost: Option<String>,
}

/// The runs in progress of a store, and where runs went that their database could not
/// take.
#[derive(Default)]
pub(crate) struct Shadow {
    pub(super) runs: HashMap<RunId, InProgress>,
    /// The local file runs moved to, once one did.
    pub(super) local: Option<(Box<Store>, PathBuf)>,
    /// Runs moved there: their id there, and why they moved (kept after they close).
    pub(super) moved: HashMap<RunId, (RunId, String)>,
}
