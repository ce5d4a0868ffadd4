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
//! Layout: `handle` holds the handle ([`Store`]) with its option types and the runs in
//! progress it keeps; `error` its errors; `version` the schema versions, `url` a
//! PostgreSQL store's URL, `system` what it asks of the system, `text` stored JSON as text
//! (those leaves import no other module of the store). The opens and their pre-checks are
//! in `open` (what a file holds and an open's refusal in `refusal`, what to do about it,
//! typed, in `remedy`), the journal mode in `journal`, the schema and its migration in
//! `schema`, the reserve in `reserve`, runs in `runs`, what a run produced in `records`,
//! groups and plan cells in `groups`, gate verdicts in `gates`, dead processes' leftovers
//! in `recovery`, runs kept in memory and moved in `unpushed`; each `*_tests` file tests
//! one of them (`tests` the rest). The queries go through `db` (one interface over SQLite
//! and PostgreSQL connections); PostgreSQL's schema and opens are in `postgres`, and
//! copying runs from one store to another in `push`. This file only names the modules and
//! what they export: no module here imports another that imports it back
//! (`tests/structure.rs`).

pub(crate) mod db;
mod error;
mod gates;
mod groups;
mod handle;
mod journal;
mod open;
mod postgres;
mod push;
mod records;
mod recovery;
mod refusal;
mod remedy;
mod reserve;
mod runs;
mod schema;
mod system;
mod text;
pub(crate) mod unpushed;
mod url;
mod version;

pub use crate::model::Recovered;
pub use error::StoreError;
pub use handle::{Journal, RunFilter, Store, Summarise, MAX_LISTED};
pub use open::plain_path;
pub use postgres::{connect_bound, stop_waiting_on, DEFAULT_CONNECT_TIMEOUT};
pub use push::Pushed;
pub use remedy::Remedy;
pub use reserve::RESERVE_BYTES;
pub use system::hostname;
pub use unpushed::{LOCK_WAIT, LOCK_WAIT_MEASURING, PENDING_RETRY, UNPUSHED_DB};
pub use url::{postgres_url, redacted};
pub use version::SCHEMA_VERSION;

// What the tests beside these modules (`use super::*`) read.
#[cfg(test)]
use {
    crate::id::RunId,
    crate::model::{Measurement, RunStatus},
    crate::run::RunRecord,
    journal::{in_wal_mode, shared_mmap_works, wal_path},
    reserve::{make_reserve, remove_dead_reserve_tmps, reserve_path, MIN_FREE_BYTES},
    rusqlite::Connection,
    schema::schema_up_to,
    std::path::{Path, PathBuf},
    system::now_mono_ns,
};

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
