//! What a run's lifecycle writes, as it goes: the [`RunSink`] trait.
//!
//! A run is begun (its row, before anything is measured), updated (its load as started,
//! the QoS granted, a result recovery needs while it runs), fed (trigger rows, events,
//! checkpoint measurements that replace the ones before), and finished (status, flags,
//! result, end reason). The writes that close a run go through [`RunSink::closing`],
//! which may spend a reserve kept for them (the SQLite store's file beside the database)
//! when the filesystem is full, so a run measured on a filling disk still ends with its
//! reason.
//!
//! [`Store`](crate::Store) implements it (with the `sqlite` feature) by calling its own
//! methods; tests implement it in memory.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::id::{GroupId, RunId};
use crate::model::{Event, Measurement, RunStatus, Series, TriggerRow};
use crate::run::RunInfo;

/// Where a run is once it closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// Closed in its database, under its id there.
    Stored,
    /// Closed in a local file instead, its database could not take it (a lock held
    /// past the store's wait, a full disk, a server gone): the file, its id there, and
    /// the message for the user (why, and how to put it back).
    Moved {
        /// The local file.
        path: PathBuf,
        /// Its id there.
        run_id: RunId,
        /// Why, and the `audiolat push` that puts it back.
        message: String,
    },
    /// Not closed anywhere: left `running` in its database with what it stored before
    /// (the next open closes it), or lost; the message for the user.
    NotClosed(String),
}

impl Kept {
    /// What the user must be told, unless the run is stored where asked.
    pub fn error(&self) -> Option<&String> {
        match self {
            Kept::Stored => None,
            Kept::Moved { message, .. } | Kept::NotClosed(message) => Some(message),
        }
    }
}

/// A write a [`RunSink`] could not make.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// The SQLite store failed.
    #[cfg(feature = "sqlite")]
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// Another sink failed (an in-memory one in tests).
    #[error("{message}")]
    Other {
        /// What failed.
        message: String,
        /// The failure was a full filesystem.
        disk_full: bool,
    },
}

impl SinkError {
    /// The filesystem the sink writes to is full: a closing write may retry with the
    /// reserve, and the end reason says `disk full`.
    pub fn is_disk_full(&self) -> bool {
        match self {
            #[cfg(feature = "sqlite")]
            SinkError::Store(e) => e.is_disk_full(),
            SinkError::Other { disk_full, .. } => *disk_full,
        }
    }
}

/// Where a run's lifecycle writes a run, as it goes. Ids are the sink's (a run id from
/// [`RunSink::begin_run`]). Every method may fail; the lifecycle decides what a failure
/// costs the run (a checkpoint that could not be stored is a flag; a summary that could
/// not be stored fails the run).
pub trait RunSink {
    /// Where the sink writes (a database path), for end reasons ("the filesystem of
    /// PATH filled").
    fn path(&self) -> &Path;
    /// Records a run as `running` and returns its id.
    fn begin_run(&self, info: &RunInfo) -> Result<RunId, SinkError>;
    /// Sets the run's result while it runs (what recovery needs if its process dies).
    fn set_result(&self, run_id: RunId, result: &Value) -> Result<(), SinkError>;
    /// Replaces the run's load description and/or the QoS granted.
    fn update_run(
        &self,
        run_id: RunId,
        load: Option<&Value>,
        qos_granted: Option<&Value>,
    ) -> Result<(), SinkError>;
    /// Adds trigger rows (as they come).
    fn add_triggers(&self, run_id: RunId, rows: &[TriggerRow]) -> Result<(), SinkError>;
    /// Adds events (as they come, or at the end).
    fn add_events(&self, run_id: RunId, events: &[Event]) -> Result<(), SinkError>;
    /// Adds a series.
    fn add_series(&self, run_id: RunId, series: &Series) -> Result<(), SinkError>;
    /// Replaces the measurements of the same metrics (a checkpoint, then the end).
    fn replace_measurements(&self, run_id: RunId, ms: &[Measurement]) -> Result<(), SinkError>;
    /// Closes the run with its status, flags, result and end reason. `ended`: when it
    /// stopped measuring (CLOCK_MONOTONIC ns; `None`: now), the end of its duration.
    fn finish_run(
        &self,
        run_id: RunId,
        status: RunStatus,
        flags: &Value,
        result: &Value,
        error: Option<&str>,
        ended: Option<u64>,
    ) -> Result<(), SinkError>;
    /// Removes a run begun here that a stop ended before it measured anything, with all
    /// it wrote: nothing is kept of it.
    fn discard_run(&self, run_id: RunId) -> Result<(), SinkError>;
    /// Removes a group no run was filed under (a stop ended it before any of its runs
    /// measured): `false` when it has runs and stays.
    fn discard_group(&self, group_id: GroupId) -> Result<bool, SinkError>;
    /// Makes a write that closes a run: when it fails because the filesystem is full,
    /// the sink may free the room it keeps for this and try it once more.
    fn closing(&self, write: &mut dyn FnMut() -> Result<(), SinkError>) -> Result<(), SinkError>;
    /// Records a group of runs (a sweep, a suite, an experiment) as `running` and
    /// returns its id.
    fn create_group(
        &self,
        kind: &str,
        command_line: &str,
        detail: &Value,
    ) -> Result<GroupId, SinkError>;
    /// Closes a group with its status (a closing write: call it through
    /// [`RunSink::closing`]).
    fn finish_group(&self, group_id: GroupId, status: RunStatus) -> Result<(), SinkError>;
}

#[cfg(feature = "sqlite")]
use crate::store::unpushed::Write;

/// A run's writes are kept in memory too while it goes on, so that a write a lock holds
/// off is made later, and the run can move to a local file should its database not take
/// it (a PostgreSQL server gone, an SQLite database locked or full at its close:
/// [`StoreError::KeptLocally`](crate::StoreError::KeptLocally)).
#[cfg(feature = "sqlite")]
impl RunSink for crate::Store {
    fn path(&self) -> &Path {
        crate::Store::path(self)
    }

    fn begin_run(&self, info: &RunInfo) -> Result<RunId, SinkError> {
        Ok(self.begin_shadowed(info)?)
    }

    fn set_result(&self, run_id: RunId, result: &Value) -> Result<(), SinkError> {
        Ok(self.shadowed(run_id, Write::Result(result.clone()))?)
    }

    fn update_run(
        &self,
        run_id: RunId,
        load: Option<&Value>,
        qos_granted: Option<&Value>,
    ) -> Result<(), SinkError> {
        Ok(self.shadowed(run_id, Write::Update(load.cloned(), qos_granted.cloned()))?)
    }

    fn add_triggers(&self, run_id: RunId, rows: &[TriggerRow]) -> Result<(), SinkError> {
        Ok(self.shadowed(run_id, Write::Triggers(rows.to_vec()))?)
    }

    fn add_events(&self, run_id: RunId, events: &[Event]) -> Result<(), SinkError> {
        Ok(self.shadowed(run_id, Write::Events(events.to_vec()))?)
    }

    fn add_series(&self, run_id: RunId, series: &Series) -> Result<(), SinkError> {
        Ok(self.shadowed(run_id, Write::Series(series.clone()))?)
    }

    fn replace_measurements(&self, run_id: RunId, ms: &[Measurement]) -> Result<(), SinkError> {
        Ok(self.shadowed(run_id, Write::Measurements(ms.to_vec()))?)
    }

    fn finish_run(
        &self,
        run_id: RunId,
        status: RunStatus,
        flags: &Value,
        result: &Value,
        error: Option<&str>,
        ended: Option<u64>,
    ) -> Result<(), SinkError> {
        let w = Write::Finish(
            status,
            flags.clone(),
            result.clone(),
            error.map(String::from),
            ended,
        );
        Ok(self.finish_shadowed(run_id, w)?)
    }

    /// [`Store::closing`](crate::Store::closing): the reserve beside the database is
    /// removed and the write tried once more. A failure that is not the store's (none
    /// of a store's own writes) is returned as it is, without a retry.
    fn create_group(
        &self,
        kind: &str,
        command_line: &str,
        detail: &Value,
    ) -> Result<GroupId, SinkError> {
        Ok(crate::Store::create_group(
            self,
            kind,
            command_line,
            detail,
        )?)
    }

    fn finish_group(&self, group_id: GroupId, status: RunStatus) -> Result<(), SinkError> {
        Ok(crate::Store::finish_group(self, group_id, status)?)
    }

    fn discard_run(&self, run_id: RunId) -> Result<(), SinkError> {
        Ok(self.discard_shadowed(run_id)?)
    }

    fn discard_group(&self, group_id: GroupId) -> Result<bool, SinkError> {
        Ok(crate::Store::discard_group(self, group_id)?)
    }

    fn closing(&self, write: &mut dyn FnMut() -> Result<(), SinkError>) -> Result<(), SinkError> {
        let mut foreign = None;
        let stored = crate::Store::closing(self, || match write() {
            Ok(()) => Ok(()),
            Err(SinkError::Store(e)) => Err(e),
            Err(other) => {
                foreign = Some(other);
                Ok(())
            }
        });
        match foreign {
            Some(e) => Err(e),
            None => stored.map_err(SinkError::Store),
        }
    }
}
