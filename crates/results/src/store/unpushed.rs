//! A PostgreSQL store's runs kept locally when the server goes away mid-run.
//!
//! While a run is written to PostgreSQL, what it wrote is also kept in memory (its
//! [`RunInfo`] and each write through [`RunSink`](crate::RunSink)). When a write finds
//! the server gone, the runs in progress move to a local SQLite file,
//! [`UNPUSHED_DB`] in the working directory: each is begun there with the same global
//! identity, what it wrote is written again, and the run goes on there to its end. Its
//! closing write then fails with [`StoreError::KeptLocally`], which says where it is
//! and how to push it (`audiolat push`, which replaces the server's unfinished copy).

use super::db::{vals, Val};
use super::{Store, StoreError};
use crate::id::RunId;
use crate::model::{Event, Measurement, RunInfo, RunStatus, Series, TriggerRow};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;

/// The file (in the working directory) a PostgreSQL store's runs move to when the
/// server goes away mid-run.
pub const UNPUSHED_DB: &str = "audiolat-unpushed.db";

/// One write of a run through its sink.
pub(crate) enum Write {
    Result(Value),
    Update(Option<Value>, Option<Value>),
    Triggers(Vec<TriggerRow>),
    Events(Vec<Event>),
    Series(Series),
    Measurements(Vec<Measurement>),
    Finish(RunStatus, Value, Value, Option<String>),
}

impl Write {
    fn apply(&self, s: &Store, id: RunId) -> Result<(), StoreError> {
        match self {
            Write::Result(v) => s.set_result(id, v),
            Write::Update(l, q) => s.update_run(id, l.as_ref(), q.as_ref()),
            Write::Triggers(t) => s.add_triggers(id, t),
            Write::Events(e) => s.add_events(id, e),
            Write::Series(x) => s.add_series(id, x),
            Write::Measurements(m) => s.replace_measurements(id, m),
            Write::Finish(status, flags, result, error) => {
                s.finish_run(id, *status, flags, result, error.as_deref())
            }
        }
    }
}

/// The runs in progress of a PostgreSQL store, and where they went if it went away.
#[derive(Default)]
pub(crate) struct Shadow {
    /// Each run begun and not yet finished: its start, its row's uid, started_at and
    /// started_mono_ns, and its writes.
    runs: HashMap<RunId, (RunInfo, Vec<Val>, Vec<Write>)>,
    /// Once the server is gone: the local store, its file, the runs' local ids and
    /// what the loss looked like.
    local: Option<Moved>,
}

/// The local store runs moved to, its file, the runs' local ids (by their id on the
/// server) and what the server's loss looked like.
type Moved = (Box<Store>, PathBuf, HashMap<RunId, RunId>, String);

impl Store {
    /// Begins a run, kept in memory too on a PostgreSQL store.
    pub(crate) fn begin_shadowed(&self, info: &RunInfo) -> Result<RunId, StoreError> {
        let id = self.begin_run(info)?;
        if self.db.is_postgres() {
            // Its identity and start, as the server has them (its duration counts from
            // there wherever it ends).
            let row = self.db.query_one(
                "SELECT uid, started_at, started_mono_ns FROM run WHERE id = ?1",
                vals![id],
            )?;
            self.shadow
                .borrow_mut()
                .runs
                .insert(id, (info.clone(), row.0, Vec::new()));
        }
        Ok(id)
    }

    /// Makes write `w` of run `id`: here while the server answers (kept in memory
    /// too), in the local file once it has gone.
    pub(crate) fn shadowed(&self, id: RunId, w: Write) -> Result<(), StoreError> {
        if !self.db.is_postgres() {
            return w.apply(self, id);
        }
        if self.shadow.borrow().local.is_none() {
            match w.apply(self, id) {
                Ok(()) => {
                    if let Some(run) = self.shadow.borrow_mut().runs.get_mut(&id) {
                        run.2.push(w);
                    }
                    return Ok(());
                }
                Err(e) if e.is_server_lost() => self.go_local(&e)?,
                Err(e) => return Err(e),
            }
        }
        let shadow = self.shadow.borrow();
        let (local, _, ids, _) = shadow.local.as_ref().expect("moved above");
        match ids.get(&id) {
            Some(l) => w.apply(local, *l),
            None => Err(StoreError::NoSuchRun(id)),
        }
    }

    /// Closes a run; one the server's loss moved to the local file is closed there,
    /// and the error says where it is kept.
    pub(crate) fn finish_shadowed(&self, id: RunId, w: Write) -> Result<(), StoreError> {
        self.shadowed(id, w)?;
        let mut shadow = self.shadow.borrow_mut();
        shadow.runs.remove(&id);
        match &shadow.local {
            Some((_, path, ids, reason)) => match ids.get(&id) {
                Some(local_id) => Err(StoreError::KeptLocally {
                    run_id: id,
                    local_id: *local_id,
                    path: path.clone(),
                    url: self.path.clone(),
                    reason: reason.clone(),
                }),
                None => Ok(()),
            },
            None => Ok(()),
        }
    }

    /// Moves the runs in progress to the local file: begun there with their identity
    /// (outside their group, which stays on the server), their writes made again.
    fn go_local(&self, lost: &StoreError) -> Result<(), StoreError> {
        let path = std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("."))
            .join(UNPUSHED_DB);
        let local = Store::open(&path)?;
        let mut ids = HashMap::new();
        let mut shadow = self.shadow.borrow_mut();
        for (id, (info, start, writes)) in &shadow.runs {
            let mut info = info.clone();
            info.group_id = None;
            let local_id = local.begin_run(&info)?;
            let mut args = vec![Val::from(local_id)];
            args.extend(start.iter().cloned());
            local.db.execute(
                "UPDATE run SET uid = ?2, started_at = ?3, started_mono_ns = ?4 WHERE id = ?1",
                &args,
            )?;
            for w in writes {
                w.apply(&local, local_id)?;
            }
            ids.insert(*id, local_id);
        }
        shadow.local = Some((Box::new(local), path, ids, lost.to_string()));
        Ok(())
    }
}
