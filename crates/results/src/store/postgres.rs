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

use super::db::{pg_sql, Db, Prepared, Row, Val};
use super::schema::{pg_schema_steps, OLDEST_READABLE, SCHEMA_VERSION};
use super::{Journal, Remedy, Store, StoreError};
use postgres::types::{IsNull, ToSql, Type};
use std::cell::RefCell;
use std::path::{Path, PathBuf};

/// The advisory lock key migrations hold ("audiolat" in ASCII).
const MIGRATION_LOCK: i64 = 0x6175_6469_6f6c_6174;

/// A PostgreSQL connection with its prepared statements.
pub(crate) struct Pg {
    client: RefCell<postgres::Client>,
    prepared: Prepared,
}

/// The PostgreSQL URL `path` holds, if it is one (`postgres://` or `postgresql://`).
pub fn postgres_url(path: &Path) -> Option<&str> {
    path.to_str()
        .filter(|s| s.starts_with("postgres://") || s.starts_with("postgresql://"))
}

/// The URL as it may be shown: a password in it is replaced by `***`.
pub fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.split_once('@') {
        Some((user, host)) if user.contains(':') => {
            let name = user.split(':').next().unwrap_or("");
            format!("{scheme}://{name}:***@{host}")
        }
        _ => url.to_string(),
    }
}

impl From<postgres::Error> for StoreError {
    fn from(e: postgres::Error) -> StoreError {
        // Gone: the connection closed, its socket failed, or the server said it is
        // shutting down (SQLSTATE class 57P) or the connection failed (class 08).
        let lost = e.is_closed()
            || std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>())
            || e.code()
                .is_some_and(|c| c.code().starts_with("57P") || c.code().starts_with("08"));
        let message = match e.as_db_error() {
            Some(db) => format!("{} ({})", db.message(), db.code().code()),
            None => e.to_string(),
        };
        StoreError::Postgres { message, lost }
    }
}

impl Pg {
    fn prepare(
        &self,
        client: &mut postgres::Client,
        sql: &str,
    ) -> Result<postgres::Statement, StoreError> {
        if let Some(s) = self.prepared.borrow().get(sql) {
            return Ok(s.clone());
        }
        let stmt = client.prepare(&pg_sql(sql))?;
        self.prepared
            .borrow_mut()
            .insert(sql.to_string(), stmt.clone());
        Ok(stmt)
    }

    pub(crate) fn execute(&self, sql: &str, params: &[Val]) -> Result<u64, StoreError> {
        let mut client = self.client.borrow_mut();
        let stmt = self.prepare(&mut client, sql)?;
        let args: Vec<&(dyn ToSql + Sync)> = params.iter().map(|v| v as _).collect();
        Ok(client.execute(&stmt, &args)?)
    }

    pub(crate) fn query(&self, sql: &str, params: &[Val]) -> Result<Vec<Row>, StoreError> {
        let mut client = self.client.borrow_mut();
        let stmt = self.prepare(&mut client, sql)?;
        let args: Vec<&(dyn ToSql + Sync)> = params.iter().map(|v| v as _).collect();
        client
            .query(&stmt, &args)?
            .iter()
            .map(|r| {
                (0..r.len())
                    .map(|i| pg_val(r, i))
                    .collect::<Result<_, _>>()
                    .map(Row)
            })
            .collect()
    }

    /// Runs statements without parameters (a transaction's `BEGIN`, a schema step).
    pub(crate) fn batch(&self, sql: &str) -> Result<(), StoreError> {
        Ok(self.client.borrow_mut().batch_execute(sql)?)
    }
}

/// Column `i` of a row, as a [`Val`] by its PostgreSQL type.
fn pg_val(r: &postgres::Row, i: usize) -> Result<Val, StoreError> {
    let ty = r.columns()[i].type_().clone();
    let v = match ty {
        Type::INT8 => r.try_get::<_, Option<i64>>(i)?.map(Val::Int),
        Type::INT4 => r.try_get::<_, Option<i32>>(i)?.map(|v| Val::Int(v.into())),
        Type::INT2 => r.try_get::<_, Option<i16>>(i)?.map(|v| Val::Int(v.into())),
        Type::BOOL => r.try_get::<_, Option<bool>>(i)?.map(|v| Val::Int(v.into())),
        Type::FLOAT8 => r.try_get::<_, Option<f64>>(i)?.map(Val::Real),
        Type::FLOAT4 => r.try_get::<_, Option<f32>>(i)?.map(|v| Val::Real(v.into())),
        Type::TEXT | Type::VARCHAR | Type::NAME | Type::BPCHAR => {
            r.try_get::<_, Option<String>>(i)?.map(Val::Text)
        }
        Type::BYTEA => r.try_get::<_, Option<Vec<u8>>>(i)?.map(Val::Blob),
        other => {
            return Err(StoreError::Corrupt(format!(
                "column {} has PostgreSQL type {other}, which audiolat does not store",
                r.columns()[i].name()
            )))
        }
    };
    Ok(v.unwrap_or(Val::Null))
}

impl ToSql for Val {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut postgres::types::private::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match (self, ty) {
            (Val::Null, _) => Ok(IsNull::Yes),
            (Val::Int(v), &Type::INT4) => i32::try_from(*v)?.to_sql(ty, out),
            (Val::Int(v), &Type::INT2) => i16::try_from(*v)?.to_sql(ty, out),
            (Val::Int(v), &Type::BOOL) => (*v != 0).to_sql(ty, out),
            (Val::Int(v), &Type::FLOAT8) => (*v as f64).to_sql(ty, out),
            (Val::Int(v), &Type::TEXT | &Type::VARCHAR) => v.to_string().to_sql(ty, out),
            (Val::Int(v), _) => v.to_sql(ty, out),
            (Val::Real(v), &Type::FLOAT4) => (*v as f32).to_sql(ty, out),
            (Val::Real(v), _) => v.to_sql(ty, out),
            (Val::Text(v), _) => v.as_str().to_sql(ty, out),
            (Val::Blob(v), _) => v.as_slice().to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
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
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(std::time::Duration::from_secs(10));
        }
        if config.get_application_name().is_none() {
            config.application_name("audiolat");
        }
        let client = config
            .connect(postgres::NoTls)
            .map_err(|e| refused(format!("cannot connect ({})", one_line(&e))))?;
        let store = Store {
            db: Db::Postgres(Box::new(Pg {
                client: RefCell::new(client),
                prepared: RefCell::new(Default::default()),
            })),
            path: shown.clone(),
            journal: Journal::Wal,
            plan_cell: std::cell::Cell::new(None),
            shadow: Default::default(),
        };
        let found = store.pg_contents()?;
        match found {
            PgContents::Foreign(tables) => Err(super::open::foreign(&shown, &tables)),
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
                PgContents::Foreign(tables) => {
                    return Err(super::open::foreign(&self.path, &tables))
                }
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
    fn urls_are_told_from_paths_and_passwords_hidden() {
        assert!(postgres_url(Path::new("postgres://a@h/db")).is_some());
        assert!(postgres_url(Path::new("postgresql://a@h/db")).is_some());
        assert!(postgres_url(Path::new("./postgres.db")).is_none());
        assert_eq!(
            redacted("postgres://u:secret@h/db"),
            "postgres://u:***@h/db"
        );
        assert_eq!(redacted("postgres://u@h/db"), "postgres://u@h/db");
    }
}
