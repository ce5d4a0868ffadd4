//! The PostgreSQL backend: a store named by a URL (`postgres://USER@HOST[:PORT]/DBNAME`,
//! or `postgresql://`), shared by many machines at once.
//!
//! The tables, columns and schema versions are SQLite's (see `schema`), in PostgreSQL's
//! types (`BIGINT` for SQLite's integers, identity columns for its row ids, `DOUBLE
//! PRECISION`, `BYTEA` for the histograms' V2 bytes). The version is kept in the table
//! `audiolat_schema`; it is created or migrated in one transaction holding an advisory
//! lock, so two first writers may race. Ids come from the server, so runs of many hosts
//! never collide; each run keeps its host (`hostname`), and recovery closes only the
//! dead runs of the host that opens the store. SQLite's journal, reserve file and file
//! checks have no part here.

use super::db::{Db, Pg, Val};
use super::error::StoreError;
use super::handle::{Journal, Store};
use super::remedy::Remedy;
use super::schema::pg_schema_steps;
use super::version::{OLDEST_READABLE, SCHEMA_VERSION};
use std::cell::RefCell;
use std::path::PathBuf;

use super::refusal::foreign;
use super::url::redacted;
use std::time::{Duration, Instant};

/// The advisory lock key migrations hold ("audiolat" in ASCII).
const MIGRATION_LOCK: i64 = 0x6175_6469_6f6c_6174;

/// How long connecting to a server may take when its URL does not say
/// (`connect_timeout`): long enough for a server across a slow network to accept and
/// authenticate, short enough that a command whose server never answers says so before
/// a user gives up on it.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long connecting to the server of `url` may take (the TCP connect, the start-up
/// and authentication: until the server is ready for a query), as libpq reads the
/// URL's `connect_timeout`: whole seconds, at least 2 (`1` is 2), and `0` or less for
/// no bound (then only a stop ends the wait). Without it, [`DEFAULT_CONNECT_TIMEOUT`]
/// (libpq would wait for ever). A value that is no number is left to the URL's parse.
pub fn connect_bound(url: &str) -> Option<Duration> {
    let given = url
        .split_once('?')
        .map(|(_, query)| query)
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter_map(|kv| kv.split_once('='))
        .filter(|(k, _)| *k == "connect_timeout")
        .filter_map(|(_, v)| v.trim().parse::<i64>().ok())
        .next_back();
    match given {
        None => Some(DEFAULT_CONNECT_TIMEOUT),
        Some(s) if s <= 0 => None,
        Some(s) => Some(Duration::from_secs(s.max(2) as u64)),
    }
}

/// The process's stop flag (SIGINT, SIGTERM), once the program gives it: a wait for a
/// server ([`Store::connect`]) ends when it is raised.
static STOP: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicBool>> =
    std::sync::OnceLock::new();

/// Gives the store the process's stop flag: once raised, connecting to a PostgreSQL
/// server stops waiting ([`StoreError::Stopped`]). Set once; later calls are ignored.
pub fn stop_waiting_on(flag: std::sync::Arc<std::sync::atomic::AtomicBool>) {
    let _ = STOP.set(flag);
}

fn stopped() -> bool {
    STOP.get()
        .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
}

/// How a connection attempt ended.
enum Connecting {
    /// Connected.
    Connected(Box<postgres::Client>),
    /// Refused, or failed: why.
    Failed(String),
    /// No answer within the bound.
    TimedOut(Duration),
    /// The stop flag was raised while waiting.
    Stopped,
}

/// Connects with `config`, waiting at most `bound` (`None`: until connected or
/// stopped) and polling the stop flag. The client's connect has no bound of its own on
/// the start-up exchange (its `connect_timeout` is the TCP connect's), so it runs on a
/// thread of its own; a thread left waiting for a server that never answers holds its
/// socket until the process ends.
fn connect_within(config: postgres::Config, bound: Option<Duration>) -> Connecting {
    let start = Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("audiolat-pg-connect".into())
        .spawn(move || {
            let _ = tx.send(config.connect(postgres::NoTls));
        });
    if let Err(e) = spawned {
        return Connecting::Failed(format!("cannot start a thread to connect: {e}"));
    }
    loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Ok(client)) => return Connecting::Connected(Box::new(client)),
            Ok(Err(e)) => return Connecting::Failed(format!("cannot connect ({})", one_line(&e))),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Connecting::Failed("the connection attempt ended without an answer".into());
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        if stopped() {
            return Connecting::Stopped;
        }
        if let Some(b) = bound.filter(|b| start.elapsed() >= *b) {
            return Connecting::TimedOut(b);
        }
    }
}

/// What a PostgreSQL database holds, judged before anything is written to it.
enum PgContents {
    Empty,
    Ours(i64),
    Foreign(Vec<String>),
}

impl Store {
    /// Connects to the PostgreSQL store at `url`. `writing`: create or migrate its
    /// schema (a command that records runs); otherwise it must hold audiolat's.
    pub(super) fn connect(url: &str, writing: bool) -> Result<Store, StoreError> {
        let shown = PathBuf::from(redacted(url));
        let refused = |reason: String| StoreError::Open {
            path: shown.clone(),
            reason,
            fix: Remedy::ReachServer,
        };
        let mut config: postgres::Config = url
            .parse()
            .map_err(|e| refused(format!("it is not a PostgreSQL URL ({e})")))?;
        let bound = connect_bound(url);
        if let Some(b) = bound {
            // Each address's TCP connect; the whole connection is bounded below.
            config.connect_timeout(b);
        }
        if config.get_application_name().is_none() {
            config.application_name("audiolat");
        }
        let client = match connect_within(config, bound) {
            Connecting::Connected(client) => *client,
            Connecting::Failed(why) => return Err(refused(why)),
            Connecting::TimedOut(b) => {
                return Err(refused(format!(
                    "the server did not answer within {} s (connect_timeout; a server that accepts connections but never answers, or a network that drops them)",
                    b.as_secs()
                )))
            }
            Connecting::Stopped => return Err(StoreError::Stopped(shown)),
        };
        let store = Store {
            db: Db::Postgres(Box::new(Pg {
                client: RefCell::new(client),
                prepared: RefCell::new(Default::default()),
            })),
            path: shown.clone(),
            journal: Journal::Wal,
            plan_cell: std::cell::Cell::new(None),
            shadow: Default::default(),
            closing: Default::default(),
            lock_wait: std::cell::Cell::new(super::unpushed::LOCK_WAIT),
            reserve_kept: Default::default(),
        };
        let found = store.pg_contents()?;
        match found {
            PgContents::Foreign(tables) => Err(foreign(&shown, &tables)),
            PgContents::Ours(v) if v > SCHEMA_VERSION => Err(StoreError::TooNew {
                path: shown,
                found: v,
            }),
            PgContents::Ours(v) if v == SCHEMA_VERSION => Ok(store),
            PgContents::Empty if !writing => Err(refused(
                "it holds no audiolat runs yet (record one into it first)".into(),
            )),
            PgContents::Ours(v) if !writing && v < OLDEST_READABLE => Err(refused(format!(
                "it has schema version {v}, from an older audiolat: a command that records runs into it upgrades it"
            ))),
            _ if !writing => Ok(store),
            _ => {
                store.pg_migrate()?;
                Ok(store)
            }
        }
    }

    fn pg_contents(&self) -> Result<PgContents, StoreError> {
        // One list, so one view: a writer making the schema meanwhile is seen before or
        // after (its tables and version row are committed together).
        let tables = self
            .db
            .query(
                "SELECT table_name::text FROM information_schema.tables
                 WHERE table_schema = current_schema() ORDER BY table_name",
                &[],
            )?
            .iter()
            .map(|r| r.get::<String>(0))
            .collect::<Result<Vec<_>, _>>()?;
        if tables.iter().any(|t| t == "audiolat_schema") {
            let v = self
                .db
                .query_one("SELECT max(version) FROM audiolat_schema", &[])?
                .get::<Option<i64>>(0)?
                .unwrap_or(0);
            return Ok(PgContents::Ours(v));
        }
        Ok(if tables.is_empty() {
            PgContents::Empty
        } else {
            PgContents::Foreign(tables)
        })
    }

    /// Creates or migrates the schema in one transaction holding the migration's
    /// advisory lock; the version is looked at again once the lock is held (another
    /// writer may just have made it).
    fn pg_migrate(&self) -> Result<(), StoreError> {
        let Db::Postgres(pg) = &self.db else {
            unreachable!("pg_migrate on SQLite")
        };
        self.db.tx(|| {
            self.db.query(
                "SELECT pg_advisory_xact_lock(?1)::text",
                &[Val::Int(MIGRATION_LOCK)],
            )?;
            let version = match self.pg_contents()? {
                PgContents::Empty => {
                    pg.batch("CREATE TABLE audiolat_schema (version BIGINT NOT NULL)")?;
                    self.db
                        .execute("INSERT INTO audiolat_schema (version) VALUES (0)", &[])?;
                    0
                }
                PgContents::Ours(v) => v,
                PgContents::Foreign(tables) => return Err(foreign(&self.path, &tables)),
            };
            if version > SCHEMA_VERSION {
                return Err(StoreError::TooNew {
                    path: self.path.clone(),
                    found: version,
                });
            }
            for (v, step) in pg_schema_steps() {
                if version < v {
                    self.before_step(v)?;
                    pg.batch(&step)?;
                }
            }
            self.db.execute(
                "UPDATE audiolat_schema SET version = ?1",
                &[Val::Int(SCHEMA_VERSION)],
            )?;
            Ok(())
        })
    }

    /// The schema version of a PostgreSQL store.
    pub(super) fn pg_schema_version(&self) -> Result<i64, StoreError> {
        match self.pg_contents()? {
            PgContents::Ours(v) => Ok(v),
            _ => Ok(0),
        }
    }
}

/// An error and its causes on one line.
fn one_line(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let s = c.to_string();
        if !text.contains(&s) {
            text.push_str(": ");
            text.push_str(&s);
        }
        cause = c.source();
    }
    text.replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_timeout_is_read_as_libpq_reads_it() {
        let secs = |url: &str| connect_bound(url).map(|d| d.as_secs());
        assert_eq!(secs("postgres://u@h/db"), Some(10));
        assert_eq!(secs("postgres://u@h/db?connect_timeout=30"), Some(30));
        assert_eq!(
            secs("postgres://u@h/db?sslmode=disable&connect_timeout=1"),
            Some(2)
        );
        assert_eq!(secs("postgres://u@h/db?connect_timeout=0"), None);
        assert_eq!(secs("postgres://u@h/db?connect_timeout=-5"), None);
    }
}
