//! What every command that stores runs shares: the database path beside the runner's
//! context, the store opened in the binary's words (after undoing what a killed
//! audiolat left), and the tool's description.

use std::path::PathBuf;

use results::{Store, ToolInfo};

use crate::cli::UsageError;
use crate::stdio;

/// What every run shares: the database path, and the lifecycle's context (the tool,
/// the command line, the stop flag, the plan cell), reached through `Deref`.
pub struct Context {
    /// Database path (for messages and the io load's default directory).
    pub db_path: PathBuf,
    /// What the lifecycle needs.
    pub run: runner::Context,
}

impl std::ops::Deref for Context {
    type Target = runner::Context;

    fn deref(&self) -> &runner::Context {
        &self.run
    }
}

impl Context {
    /// Opens the results database for writing runs; in a plan's cell, every run it
    /// begins is filed under the cell. Every measuring command opens it so, after its
    /// input is checked and before it measures: first, what an audiolat killed outright
    /// left changed on the machine is undone ([`undo_leftovers`]).
    pub fn open_store(&self) -> anyhow::Result<Store> {
        engine::phase::reached(engine::phase::Phase::StoreOpen);
        if self.stopped() {
            // Stopped before anything was begun: no database is made or changed.
            return Err(crate::process::NothingMeasured.into());
        }
        undo_leftovers(false)?;
        let store = Store::open_recovering(&self.db_path, &runner::summarise_abandoned)?;
        say_journal_once(&store);
        if let Some((group, cell)) = self.plan_cell {
            store.file_runs_under(group, cell)?;
        }
        Ok(store)
    }

    /// Opens an existing results database read-only, for commands that only read: it
    /// is never created, migrated or switched, and a read-only file or mount will do.
    /// Runs, groups and plan cells dead processes left `running` are first closed (and
    /// summarised) when the database can be written; otherwise they are shown as stored.
    pub fn open_existing_store(&self) -> anyhow::Result<Store> {
        let summarise = &runner::summarise_abandoned;
        Ok(Store::open_reading(
            &self.db_path,
            summarise,
            &say_journal_once,
        )?)
    }

    /// Where the io load writes unless told otherwise: beside the database (a
    /// PostgreSQL store's: the working directory).
    pub fn default_scratch(&self) -> PathBuf {
        match self.db_path.parent() {
            _ if results::store::postgres_url(&self.db_path).is_some() => PathBuf::from("."),
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        }
    }
}

/// Undoes what audiolats killed outright left (cpusets, load balancing, confined tasks,
/// namespaces, qdiscs, state files) and says so in one line; refuses (exit 2) when it
/// cannot, naming what is left. A running audiolat's state is not touched. The temporary
/// files they left are removed too, said only when `tell_files` (`doctor --fix`).
pub fn undo_leftovers(tell_files: bool) -> anyhow::Result<()> {
    let (removed, problems) = probes::leftovers::remove_temporary();
    if tell_files {
        for line in removed.into_iter().chain(problems) {
            stdio::say(format_args!("audiolat: {line}"));
        }
    }
    match probes::leftovers::undo() {
        Ok(Some(line)) => {
            stdio::say(format_args!("audiolat: {line}"));
            Ok(())
        }
        Ok(None) => Ok(()),
        Err(left) => Err(UsageError(format!(
            "{left}{}",
            if left.root {
                " and run `audiolat doctor`"
            } else {
                ": run `sudo audiolat doctor --fix`"
            }
        ))
        .into()),
    }
}

/// Tells the user, the one time the database turns to a rollback journal (later opens
/// find it so and say nothing), that it could not have its write-ahead log and what that
/// changes.
pub fn say_journal_once(store: &Store) {
    if let results::Journal::Rollback {
        reason: why,
        switched: true,
    } = store.journal()
    {
        stdio::say(format_args!(
            "audiolat: {} is on a filesystem that cannot share SQLite's write-ahead log ({why}): using a rollback journal, so readers wait while a probe writes (a local path avoids this)",
            store.path().display()
        ));
    }
}

/// The tool's own description, from the build.
pub fn tool_info() -> ToolInfo {
    ToolInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: env!("AUDIOLAT_GIT_COMMIT").to_string(),
        build_profile: env!("AUDIOLAT_BUILD_PROFILE").to_string(),
    }
}
