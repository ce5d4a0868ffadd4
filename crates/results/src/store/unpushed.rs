//! A run in progress kept whole in memory, so that nothing it measured is lost when its
//! database cannot take it: its writes wait out a lock, and a run that cannot be closed
//! in its database is kept in a local file instead.
//!
//! While a run is written, what it wrote is also kept in memory (its [`RunInfo`] and
//! each write through [`RunSink`](crate::RunSink); a checkpoint replaces the one
//! before). Then:
//!
//! - An SQLite database another process holds locked while the run measures
//!   ([`LOCK_WAIT_MEASURING`]): the write waits in memory, and is made, in order, at a
//!   later write once the lock is gone (tried at most every [`PENDING_RETRY`]), so the
//!   measuring thread is never held up for long.
//! - A closing write (the run's summary, its status: inside [`Store::closing`], or the
//!   finish) that cannot be made once [`LOCK_WAIT`] has passed, or with the reserve
//!   spent on a full disk, or any other failure: the run moves to a local SQLite file,
//!   [`UNPUSHED_DB`] beside the database (or, when that cannot be written, in the
//!   working directory): it is begun there with the same global identity and start,
//!   every write it made is made again, and it goes on there to its end.
//! - A PostgreSQL server that goes away (any write): every run in progress moves to
//!   [`UNPUSHED_DB`] in the working directory, the same way.
//!
//! A moved run's closing write then fails with [`StoreError::KeptLocally`], which says
//! where it is and how to put it back (`audiolat push`, which replaces the unfinished
//! copy its database kept); [`Store::moved`] says where it went. Its copy in the
//! database is left `running`: the next open there closes it, saying where the run is
//! kept. A run that can be kept nowhere fails with [`StoreError::NotKept`], and so does
//! each of its later writes.

use super::db::{vals, Val};
use super::error::StoreError;
pub(crate) use super::handle::Write;
use super::handle::{InProgress, Store};
use super::reserve::reserve_path;
use crate::id::RunId;
use crate::run::RunInfo;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The file a run its database could not take is kept in: beside an SQLite database
/// (else in the working directory), in the working directory for a PostgreSQL store.
pub const UNPUSHED_DB: &str = "audiolat-unpushed.db";

/// How long an SQLite open, a run's begin and its closing writes wait for a lock
/// another process holds, before the open is refused or the run is kept in
/// [`UNPUSHED_DB`]. audiolat's own writers hold the database for milliseconds, and a
/// reader on a filesystem without the write-ahead log (9p, where readers hold writers
/// off) for a few seconds at most, so runs made side by side never wait this long; a
/// transaction someone left open in `sqlite3`, a long `VACUUM` or a backup does, and
/// the run is then kept elsewhere within seconds instead of lost or waited on without end.
pub const LOCK_WAIT: Duration = Duration::from_secs(10);

/// How long a write made while the run measures (trigger rows, events, a checkpoint)
/// waits for a lock before it waits in memory instead: the thread that makes it also
/// drains the audio thread's queues, whose room is counted in seconds.
pub const LOCK_WAIT_MEASURING: Duration = Duration::from_millis(100);

/// How often writes waiting for a lock are tried again while the run measures.
pub const PENDING_RETRY: Duration = Duration::from_secs(1);

impl Write {
    fn apply(&self, s: &Store, id: RunId) -> Result<(), StoreError> {
        match self {
            Write::Result(v) => s.set_result(id, v),
            Write::Update(l, q) => s.update_run(id, l.as_ref(), q.as_ref()),
            Write::Triggers(t) => s.add_triggers(id, t),
            Write::Events(e) => s.add_events(id, e),
            Write::Series(x) => s.add_series(id, x),
            Write::Measurements(m) => s.replace_measurements(id, m),
            Write::Finish(status, flags, result, error, ended) => {
                s.finish_run(id, *status, flags, result, error.as_deref(), *ended)
            }
        }
    }

    /// A checkpoint's metrics (a later one of the same metrics replaces it).
    fn metrics(&self) -> Option<Vec<&str>> {
        match self {
            Write::Measurements(ms) => Some(ms.iter().map(|m| m.metric.as_str()).collect()),
            _ => None,
        }
    }
}

impl InProgress {
    /// Adds a write; a checkpoint drops the earlier ones it replaces.
    fn push(&mut self, w: Write) {
        if let Some(new) = w.metrics() {
            let mut i = 0;
            while i < self.writes.len() {
                let replaced = self.writes[i]
                    .metrics()
                    .is_some_and(|old| old.iter().all(|m| new.contains(m)));
                if replaced {
                    self.writes.remove(i);
                    if i < self.made {
                        self.made -= 1;
                    }
                } else {
                    i += 1;
                }
            }
        }
        self.writes.push(w);
    }
}

impl Store {
    /// Begins a run, kept in memory too. The begin waits [`LOCK_WAIT`] for a lock, and
    /// the run's start is stamped once it holds the database (a wait is no part of it).
    pub(crate) fn begin_shadowed(&self, info: &RunInfo) -> Result<RunId, StoreError> {
        let id = self.waiting(self.lock_wait.get(), || self.begin_run(info))?;
        // Its identity and start, as the database has them (its duration counts from
        // there wherever it ends).
        let row = self.db.query_one(
            "SELECT uid, started_at, started_mono_ns FROM run WHERE id = ?1",
            vals![id],
        )?;
        self.shadow.borrow_mut().runs.insert(
            id,
            InProgress {
                info: info.clone(),
                start: row.0,
                writes: Vec::new(),
                made: 0,
                locked_at: None,
                lost: None,
            },
        );
        Ok(id)
    }

    /// Makes write `w` of run `id`: in its database, after any that wait for a lock;
    /// where the run moved, once it did.
    pub(crate) fn shadowed(&self, id: RunId, w: Write) -> Result<(), StoreError> {
        let closing = self.closing.get() || matches!(w, Write::Finish(..));
        {
            let shadow = self.shadow.borrow();
            if let Some((local_id, _)) = shadow.moved.get(&id) {
                let (local, _) = shadow.local.as_ref().expect("a moved run has its file");
                return w.apply(local, *local_id);
            }
            match shadow.runs.get(&id) {
                // Not begun here (a test's write to a row it made itself).
                None => {
                    drop(shadow);
                    return w.apply(self, id);
                }
                Some(run) => {
                    if let Some(why) = &run.lost {
                        return Err(StoreError::NotKept {
                            run_id: id,
                            why: why.clone(),
                        });
                    }
                }
            }
        }
        self.shadow
            .borrow_mut()
            .runs
            .get_mut(&id)
            .expect("checked above")
            .push(w);
        self.catch_up(id, closing)
    }

    /// Makes the writes of run `id` its database has not had yet, in order.
    fn catch_up(&self, id: RunId, closing: bool) -> Result<(), StoreError> {
        loop {
            let made = {
                let shadow = self.shadow.borrow();
                let run = &shadow.runs[&id];
                if run.made == run.writes.len() {
                    return Ok(());
                }
                if !closing && run.locked_at.is_some_and(|t| t.elapsed() < PENDING_RETRY) {
                    return Ok(());
                }
                let wait = if closing {
                    self.lock_wait.get()
                } else {
                    LOCK_WAIT_MEASURING.min(self.lock_wait.get())
                };
                self.waiting(wait, || run.writes[run.made].apply(self, id))
            };
            let mut shadow = self.shadow.borrow_mut();
            let run = shadow.runs.get_mut(&id).expect("kept until it finishes");
            match made {
                Ok(()) => {
                    run.made += 1;
                    run.locked_at = None;
                }
                Err(e) if e.is_server_lost() => {
                    drop(shadow);
                    let all: Vec<RunId> = self.shadow.borrow().runs.keys().copied().collect();
                    return self.move_runs(&all, &e.to_string());
                }
                Err(e) if e.is_locked() && !closing => {
                    // Made later, at a write after the lock is gone.
                    run.locked_at = Some(Instant::now());
                    return Ok(());
                }
                Err(e) if !closing => {
                    // Not made there (the run's end reason says so), kept for a move.
                    run.made += 1;
                    return Err(e);
                }
                Err(e) if e.is_disk_full() && reserve_path(&self.path).exists() => {
                    // [`Store::closing`] frees the reserve and makes this write again.
                    run.writes.pop();
                    return Err(e);
                }
                Err(e) => {
                    drop(shadow);
                    let why = if e.is_locked() {
                        format!(
                            "another process held it locked for {} s",
                            self.lock_wait.get().as_secs_f64()
                        )
                    } else if e.is_disk_full() {
                        "its filesystem is full, with no room kept for closing runs left"
                            .to_string()
                    } else {
                        e.to_string()
                    };
                    return self.move_runs(&[id], &why);
                }
            }
        }
    }

    /// Closes a run; one that moved is closed where it went, and the error says where
    /// it is kept.
    pub(crate) fn finish_shadowed(&self, id: RunId, w: Write) -> Result<(), StoreError> {
        self.shadowed(id, w)?;
        let mut shadow = self.shadow.borrow_mut();
        shadow.runs.remove(&id);
        match (&shadow.local, shadow.moved.get(&id)) {
            (Some((_, path)), Some((local_id, why))) => Err(StoreError::KeptLocally {
                run_id: id,
                local_id: *local_id,
                path: path.clone(),
                url: self.path.clone(),
                reason: why.clone(),
            }),
            _ => Ok(()),
        }
    }

    /// Removes run `id` (see [`Store::discard_run`]), where it moved too, and forgets
    /// its writes. Waits [`LOCK_WAIT`] for a lock, as a closing write does.
    pub(crate) fn discard_shadowed(&self, id: RunId) -> Result<(), StoreError> {
        let moved = {
            let mut shadow = self.shadow.borrow_mut();
            shadow.runs.remove(&id);
            shadow.moved.remove(&id)
        };
        if let Some((local_id, _)) = moved {
            if let Some((local, _)) = &self.shadow.borrow().local {
                local.discard_run(local_id)?;
            }
        }
        self.waiting(self.lock_wait.get(), || self.discard_run(id))
    }

    /// Where run `id` went when its database could not take it: the local file and its
    /// id there.
    pub fn moved(&self, id: RunId) -> Option<(PathBuf, RunId)> {
        let shadow = self.shadow.borrow();
        let (local_id, _) = shadow.moved.get(&id)?;
        Some((shadow.local.as_ref()?.1.clone(), *local_id))
    }

    /// Moves `runs` to the local file, `why` their database could not take them: each is
    /// begun there with its identity and start (outside its group, which stays in the
    /// database), every write it made is made again, and it goes on there. A run that
    /// cannot be moved is lost: [`StoreError::NotKept`], now and at its later writes.
    fn move_runs(&self, runs: &[RunId], why: &str) -> Result<(), StoreError> {
        let moved = self.open_local().and_then(|()| {
            for id in runs {
                self.move_run(*id, why)?;
            }
            Ok(())
        });
        if let Err(e) = moved {
            let lost = format!(
                "{} could not take it ({why}), nor could a local file ({e})",
                self.path.display()
            );
            let mut shadow = self.shadow.borrow_mut();
            for id in runs {
                if let Some(run) = shadow.runs.get_mut(id) {
                    run.lost = Some(lost.clone());
                }
            }
            return Err(StoreError::NotKept {
                run_id: runs[0],
                why: lost,
            });
        }
        Ok(())
    }

    fn move_run(&self, id: RunId, why: &str) -> Result<(), StoreError> {
        let shadow = self.shadow.borrow();
        let Some(run) = shadow.runs.get(&id) else {
            return Ok(());
        };
        let (local, _) = shadow.local.as_ref().expect("opened first");
        let mut info = run.info.clone();
        info.group_id = None;
        let local_id = local.begin_run(&info)?;
        let mut args = vec![Val::from(local_id)];
        args.extend(run.start.iter().cloned());
        local.db.execute(
            "UPDATE run SET uid = ?2, started_at = ?3, started_mono_ns = ?4 WHERE id = ?1",
            &args,
        )?;
        for w in &run.writes {
            w.apply(local, local_id)?;
        }
        drop(shadow);
        let mut shadow = self.shadow.borrow_mut();
        shadow.moved.insert(id, (local_id, why.to_string()));
        if let Some(run) = shadow.runs.get_mut(&id) {
            run.made = run.writes.len();
        }
        Ok(())
    }

    /// Where a run this database cannot take is kept, in the order tried: beside an
    /// SQLite database, then (and only there for a PostgreSQL store) in the working
    /// directory.
    pub(super) fn unpushed_places(&self) -> Vec<PathBuf> {
        let mut places = Vec::new();
        if !self.db.is_postgres() {
            let dir = self
                .path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            places.push(dir.join(UNPUSHED_DB));
        }
        places.push(
            std::env::current_dir()
                .unwrap_or_else(|_| PathBuf::from("."))
                .join(UNPUSHED_DB),
        );
        places
    }

    /// Opens the local file once: beside an SQLite database, else (or for a PostgreSQL
    /// store) in the working directory; never the database itself.
    fn open_local(&self) -> Result<(), StoreError> {
        if self.shadow.borrow().local.is_some() {
            return Ok(());
        }
        let mut last = None;
        for path in self.unpushed_places() {
            if same_file(&path, &self.path) {
                continue;
            }
            match Store::open(&path) {
                Ok(store) => {
                    self.shadow.borrow_mut().local = Some((Box::new(store), path));
                    return Ok(());
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            StoreError::Corrupt(format!("{UNPUSHED_DB} is the database itself"))
        }))
    }

    /// Runs `f` with SQLite waiting at most `wait` for another process's lock (then
    /// back to the store's usual wait, [`LOCK_WAIT`]).
    pub(super) fn waiting<T>(&self, wait: Duration, f: impl FnOnce() -> T) -> T {
        if let super::db::Db::Sqlite(c) = &self.db {
            let _ = c.busy_timeout(wait);
            let out = f();
            let _ = c.busy_timeout(self.lock_wait.get());
            out
        } else {
            f()
        }
    }
}

#[cfg(test)]
impl Store {
    /// Waits `wait` instead of [`LOCK_WAIT`] for a lock (tests that hold one).
    pub(crate) fn set_lock_wait(&self, wait: Duration) {
        self.lock_wait.set(wait);
        if let super::db::Db::Sqlite(c) = &self.db {
            let _ = c.busy_timeout(wait);
        }
    }
}

/// Whether two paths name one file (the second may not exist yet).
fn same_file(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| {
        let dir = p
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        dir.canonicalize()
            .ok()
            .map(|d| d.join(p.file_name().unwrap_or_default()))
    };
    a == b || canon(a).is_some_and(|x| Some(x) == canon(b))
}
