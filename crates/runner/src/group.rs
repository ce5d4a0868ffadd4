//! A group of runs (a sweep, a suite, an experiment): opened in a [`RunSink`], and closed
//! on every path, as the run lifecycle closes its runs.
//!
//! [`Group`] is the guard: [`Group::open`] records the group `running` (or
//! [`Group::adopt`] takes charge of one the caller made), [`Group::close`] closes it with
//! its status (a closing write, which may spend the sink's reserve), and a group dropped
//! before it was closed (an error returned mid-group, a panic) is closed `failed` then.
//! [`status`] is the one rule every group's status follows, the plan run's too.
//!
//! The rule, as a user reads a stored group's status: `failed` when an error stopped the
//! group before its end (a set-up that would not open, a run that ended with an error,
//! a plan run that could not go on); else `interrupted` when the user stopped it (or one
//! of its runs was interrupted): what did not run was not tried; else `failed` when one
//! of its runs failed; else `complete`.

use std::cell::Cell;

use results::{GroupId, RunSink, RunStatus, SinkError};
use serde_json::Value;

/// How a group of runs went, for [`status`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupEnd {
    /// An error stopped the group before its end.
    pub stopped_by_error: bool,
    /// The user stopped the group (Ctrl-C), or one of its runs was interrupted.
    pub interrupted: bool,
    /// One of its runs did not complete (and the group went on).
    pub run_failed: bool,
}

impl GroupEnd {
    /// Folds one of the group's runs in by its stored status: an interrupted run makes
    /// the group interrupted, a failed one counts as a failed run.
    pub fn add_run(&mut self, status: RunStatus) {
        match status {
            RunStatus::Interrupted => self.interrupted = true,
            RunStatus::Failed => self.run_failed = true,
            _ => {}
        }
    }
}

/// The status a group ends with (see the module's rule).
pub fn status(end: GroupEnd) -> RunStatus {
    if end.stopped_by_error {
        RunStatus::Failed
    } else if end.interrupted {
        RunStatus::Interrupted
    } else if end.run_failed {
        RunStatus::Failed
    } else {
        RunStatus::Complete
    }
}

/// A group of runs, open in its sink until closed; dropped open, it is closed `failed`.
pub struct Group<'a> {
    sink: &'a dyn RunSink,
    id: GroupId,
    closed: Cell<bool>,
}

impl std::fmt::Debug for Group<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("id", &self.id)
            .field("closed", &self.closed.get())
            .finish()
    }
}

impl<'a> Group<'a> {
    /// Records a group of `kind` (its command line and detail) in `sink`.
    pub fn open(
        sink: &'a dyn RunSink,
        kind: &str,
        command_line: &str,
        detail: &Value,
    ) -> Result<Group<'a>, SinkError> {
        let id = sink.create_group(kind, command_line, detail)?;
        Ok(Group::adopt(sink, id))
    }

    /// Takes charge of closing group `id`, already recorded in `sink`.
    pub fn adopt(sink: &'a dyn RunSink, id: GroupId) -> Group<'a> {
        Group {
            sink,
            id,
            closed: Cell::new(false),
        }
    }

    /// The group's id.
    pub fn id(&self) -> GroupId {
        self.id
    }

    /// Closes the group with `status`, with the reserve the sink keeps for closing
    /// writes. Closed once: a later call does nothing. When even the reserve does not
    /// do, the group stays `running` (the next open of a store closes it) and the error
    /// is returned.
    pub fn close(&self, status: RunStatus) -> Result<(), SinkError> {
        if self.closed.replace(true) {
            return Ok(());
        }
        self.sink
            .closing(&mut || self.sink.finish_group(self.id, status))
    }

    /// Removes the group, which a stop ended before any of its runs measured (so none
    /// is filed under it): nothing of it is kept. `false` when it could not be removed
    /// (it has runs, or the sink refused): it is closed `interrupted` instead.
    pub fn discard(&self) -> bool {
        if self.closed.get() {
            return false;
        }
        match self.sink.discard_group(self.id) {
            Ok(true) => {
                self.closed.set(true);
                true
            }
            _ => {
                let _ = self.close(RunStatus::Interrupted);
                false
            }
        }
    }

    /// Whether the group was closed (or its close tried).
    pub fn is_closed(&self) -> bool {
        self.closed.get()
    }
}

impl Drop for Group<'_> {
    /// A group left open (an error returned mid-group, a panic) ends `failed`.
    fn drop(&mut self) {
        let _ = self.close(RunStatus::Failed);
    }
}
