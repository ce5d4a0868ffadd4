//! The connection under a [`Store`](super::Store): SQLite or PostgreSQL behind one small
//! interface, so the store's queries are written once.
//!
//! Statements are written in the dialect both share, with SQLite's numbered placeholders
//! (`?1`); on PostgreSQL they become `$1` (see [`pg_sql`]), and each is prepared once
//! per connection. Values cross as [`Val`] (null, 64-bit integer, double, text, bytes),
//! rows come back as [`Row`]s of them. SQLite's own mechanisms (its journal, the
//! reserve, `PRAGMA`s) stay in the SQLite-only modules, on [`Db::lite`].

use super::error::StoreError;
use crate::id::{GroupId, PlanCellId, RunId};
use std::cell::RefCell;
use std::collections::HashMap;

use ::postgres::types::{IsNull, ToSql, Type};

/// A value sent to or read from the database.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    /// SQL NULL.
    Null,
    /// An integer (booleans are 0 and 1, as SQLite keeps them).
    Int(i64),
    /// A double.
    Real(f64),
    /// Text.
    Text(String),
    /// Bytes (a histogram's V2 form).
    Blob(Vec<u8>),
}

macro_rules! val_from {
    ($($t:ty => |$v:ident| $e:expr),* $(,)?) => {
        $(impl From<$t> for Val {
            fn from($v: $t) -> Val {
                $e
            }
        })*
    };
}

val_from!(
    i64 => |v| Val::Int(v),
    i32 => |v| Val::Int(i64::from(v)),
    u32 => |v| Val::Int(i64::from(v)),
    bool => |v| Val::Int(i64::from(v)),
    f64 => |v| Val::Real(v),
    String => |v| Val::Text(v),
    &String => |v| Val::Text(v.clone()),
    &str => |v| Val::Text(v.to_string()),
    Vec<u8> => |v| Val::Blob(v),
    RunId => |v| Val::Int(v.0),
    GroupId => |v| Val::Int(v.0),
    PlanCellId => |v| Val::Int(v.0),
);

impl<T: Into<Val>> From<Option<T>> for Val {
    fn from(v: Option<T>) -> Val {
        v.map_or(Val::Null, Into::into)
    }
}

/// Parameters for a statement: `vals![a, b]` is `&[Val::from(a), Val::from(b)]`.
macro_rules! vals {
    ($($v:expr),* $(,)?) => {
        &[$($crate::store::db::Val::from($v)),*][..]
    };
}
pub(crate) use vals;

/// A value read back as a Rust type.
pub(crate) trait FromVal: Sized {
    /// The value, or `None` when it is not of this type.
    fn from_val(v: &Val) -> Option<Self>;
}

macro_rules! from_val {
    ($($t:ty => |$v:ident| $e:expr),* $(,)?) => {
        $(impl FromVal for $t {
            fn from_val($v: &Val) -> Option<$t> {
                $e
            }
        })*
    };
}

from_val!(
    i64 => |v| match v { Val::Int(i) => Some(*i), _ => None },
    u32 => |v| match v { Val::Int(i) => u32::try_from(*i).ok(), _ => None },
    bool => |v| match v { Val::Int(i) => Some(*i != 0), _ => None },
    f64 => |v| match v { Val::Real(f) => Some(*f), Val::Int(i) => Some(*i as f64), _ => None },
    String => |v| match v { Val::Text(s) => Some(s.clone()), _ => None },
    Vec<u8> => |v| match v { Val::Blob(b) => Some(b.clone()), _ => None },
    RunId => |v| i64::from_val(v).map(RunId),
    GroupId => |v| i64::from_val(v).map(GroupId),
    PlanCellId => |v| i64::from_val(v).map(PlanCellId),
);

impl<T: FromVal> FromVal for Option<T> {
    fn from_val(v: &Val) -> Option<Option<T>> {
        match v {
            Val::Null => Some(None),
            other => T::from_val(other).map(Some),
        }
    }
}

/// One row of a result.
#[derive(Debug, Clone)]
pub(crate) struct Row(pub(crate) Vec<Val>);

impl Row {
    /// Column `i` as a `T`; a value of another type is corrupt data.
    pub(crate) fn get<T: FromVal>(&self, i: usize) -> Result<T, StoreError> {
        let v = self.0.get(i).unwrap_or(&Val::Null);
        T::from_val(v).ok_or_else(|| {
            StoreError::Corrupt(format!(
                "column {i} holds {v:?}, not of type {}",
                std::any::type_name::<T>()
            ))
        })
    }
}

/// The connection: SQLite's, or a PostgreSQL client.
pub(crate) enum Db {
    /// An SQLite file.
    Sqlite(rusqlite::Connection),
    /// A PostgreSQL server.
    Postgres(Box<Pg>),
}

impl Db {
    /// The SQLite connection, for what only SQLite has (journal, pragmas, the reserve).
    ///
    /// # Panics
    /// On a PostgreSQL store: its callers are reached only through SQLite's opens.
    pub(crate) fn lite(&self) -> &rusqlite::Connection {
        match self {
            Db::Sqlite(c) => c,
            Db::Postgres(_) => unreachable!("an SQLite-only step on a PostgreSQL store"),
        }
    }

    /// Whether this is a PostgreSQL store.
    pub(crate) fn is_postgres(&self) -> bool {
        matches!(self, Db::Postgres(_))
    }

    /// Runs a statement; returns the rows it changed.
    pub(crate) fn execute(&self, sql: &str, params: &[Val]) -> Result<u64, StoreError> {
        match self {
            Db::Sqlite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                Ok(stmt.execute(rusqlite::params_from_iter(params.iter()))? as u64)
            }
            Db::Postgres(pg) => pg.execute(sql, params),
        }
    }

    /// Runs a query; returns its rows.
    pub(crate) fn query(&self, sql: &str, params: &[Val]) -> Result<Vec<Row>, StoreError> {
        match self {
            Db::Sqlite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                let n = stmt.column_count();
                let rows = stmt.query_map(rusqlite::params_from_iter(params.iter()), |r| {
                    (0..n)
                        .map(|i| r.get_ref(i).map(lite_val))
                        .collect::<rusqlite::Result<Vec<Val>>>()
                        .map(Row)
                })?;
                Ok(rows.collect::<Result<_, _>>()?)
            }
            Db::Postgres(pg) => pg.query(sql, params),
        }
    }

    /// The first row of a query, if any.
    pub(crate) fn query_opt(&self, sql: &str, params: &[Val]) -> Result<Option<Row>, StoreError> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// The first row of a query that always returns one.
    pub(crate) fn query_one(&self, sql: &str, params: &[Val]) -> Result<Row, StoreError> {
        self.query_opt(sql, params)?
            .ok_or_else(|| StoreError::Corrupt(format!("no row from {sql}")))
    }

    /// Runs an `INSERT` and returns the id the database gave the row.
    pub(crate) fn insert(&self, sql: &str, params: &[Val]) -> Result<i64, StoreError> {
        self.query_one(&format!("{sql} RETURNING id"), params)?
            .get(0)
    }

    /// Runs `f` in one transaction: committed when it returns `Ok`, rolled back when it
    /// fails (or its commit does). Not nested.
    pub(crate) fn tx<T>(&self, f: impl FnOnce() -> Result<T, StoreError>) -> Result<T, StoreError> {
        match self {
            Db::Sqlite(c) => {
                // Immediate: the write lock is taken (or waited for) at the start, never
                // half way, where another writer's commit would fail it without a wait.
                c.execute_batch("BEGIN IMMEDIATE")?;
                match f().and_then(|v| Ok(c.execute_batch("COMMIT").map(|()| v)?)) {
                    Ok(v) => Ok(v),
                    Err(e) => {
                        let _ = c.execute_batch("ROLLBACK");
                        Err(e)
                    }
                }
            }
            Db::Postgres(pg) => {
                pg.batch("BEGIN")?;
                match f() {
                    Ok(v) => {
                        pg.batch("COMMIT")?;
                        Ok(v)
                    }
                    Err(e) => {
                        let _ = pg.batch("ROLLBACK");
                        Err(e)
                    }
                }
            }
        }
    }

    /// The SQL text of a JSON text column's field, as text (`runs --kernel`).
    pub(crate) fn json_field(&self, column: &str, key: &str) -> String {
        match self {
            Db::Sqlite(_) => format!("json_extract({column}, '$.{key}')"),
            Db::Postgres(_) => format!("(({column})::json ->> '{key}')"),
        }
    }
}

fn lite_val(v: rusqlite::types::ValueRef<'_>) -> Val {
    use rusqlite::types::ValueRef as V;
    match v {
        V::Null => Val::Null,
        V::Integer(i) => Val::Int(i),
        V::Real(f) => Val::Real(f),
        V::Text(t) => Val::Text(String::from_utf8_lossy(t).into_owned()),
        V::Blob(b) => Val::Blob(b.to_vec()),
    }
}

impl rusqlite::ToSql for Val {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Val::Null => ValueRef::Null,
            Val::Int(i) => ValueRef::Integer(*i),
            Val::Real(f) => ValueRef::Real(*f),
            Val::Text(s) => ValueRef::Text(s.as_bytes()),
            Val::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

/// SQLite's `?N` placeholders as PostgreSQL's `$N` (outside quoted text).
pub(crate) fn pg_sql(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quoted = false;
    for c in sql.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                out.push(c);
            }
            '?' if !quoted => out.push('$'),
            _ => out.push(c),
        }
    }
    out
}

/// Prepared statements of one PostgreSQL connection, by their SQLite text.
pub(crate) type Prepared = RefCell<HashMap<String, ::postgres::Statement>>;

/// A PostgreSQL connection with its prepared statements.
pub(crate) struct Pg {
    pub(super) client: RefCell<::postgres::Client>,
    pub(super) prepared: Prepared,
}

impl From<::postgres::Error> for StoreError {
    fn from(e: ::postgres::Error) -> StoreError {
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
        client: &mut ::postgres::Client,
        sql: &str,
    ) -> Result<::postgres::Statement, StoreError> {
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
fn pg_val(r: &::postgres::Row, i: usize) -> Result<Val, StoreError> {
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
        out: &mut ::postgres::types::private::BytesMut,
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

    ::postgres::types::to_sql_checked!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_dollars_outside_quotes() {
        assert_eq!(
            pg_sql("SELECT '?x' FROM t WHERE a = ?1 AND b = ?12"),
            "SELECT '?x' FROM t WHERE a = $1 AND b = $12"
        );
    }

    #[test]
    fn values_read_back_as_their_types() {
        let row = Row(vec![
            Val::Int(3),
            Val::Null,
            Val::Real(1.5),
            Val::Text("a".into()),
        ]);
        assert_eq!(row.get::<RunId>(0).unwrap(), RunId(3));
        assert_eq!(row.get::<Option<i64>>(1).unwrap(), None);
        assert_eq!(row.get::<f64>(2).unwrap(), 1.5);
        assert!(row.get::<i64>(3).is_err());
        assert!(row.get::<bool>(0).unwrap());
    }
}
