//! What a file holds, judged before anything is written to it, and an open's refusal as
//! one line naming the file and the fix.

use rusqlite::Connection;
use std::path::Path;

use super::error::StoreError;
use super::remedy::Remedy;

/// What a file holds, judged before anything is written to it.
pub(super) enum Contents {
    /// No schema at all (a new or empty file): audiolat may create its own.
    Empty,
    /// audiolat's schema, at this version.
    Ours(i64),
    /// Somebody else's database: these tables, and no audiolat schema.
    Foreign(Vec<String>),
}

pub(super) fn contents(conn: &Connection) -> rusqlite::Result<Contents> {
    // One statement, so one snapshot: a process creating the schema meanwhile is seen
    // before or after, never half way.
    let (version, objects, tables): (i64, i64, Option<String>) = conn.query_row(
        "SELECT user_version, (SELECT count(*) FROM sqlite_master),
            (SELECT group_concat(name, char(31)) FROM (SELECT name FROM sqlite_master
             WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name))
         FROM pragma_user_version",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let tables: Vec<String> = tables
        .map(|t| t.split('\u{1f}').map(str::to_string).collect())
        .unwrap_or_default();
    let has = |t: &str| tables.iter().any(|n| n == t);
    Ok(if objects == 0 && version == 0 {
        Contents::Empty
    } else if version >= 1 && has("run") && has("run_group") {
        Contents::Ours(version)
    } else {
        Contents::Foreign(tables)
    })
}

/// The one-line refusal of a database audiolat did not make.
pub(super) fn foreign(path: &Path, tables: &[String]) -> StoreError {
    let mut names = tables
        .iter()
        .take(5)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if tables.len() > 5 {
        names.push_str(&format!(" and {} more", tables.len() - 5));
    }
    StoreError::Open {
        path: path.to_path_buf(),
        reason: if tables.is_empty() {
            "it is not an audiolat results database (no audiolat schema)".into()
        } else {
            format!("it is not an audiolat results database (it has tables {names} and no audiolat schema)")
        },
        fix: Remedy::ResultsOrNewFile { not_ours: true },
    }
}

/// An SQLite failure while opening `path`, as one line with what to do: no raw error
/// repeated.
pub(super) fn open_failure(path: &Path, e: &rusqlite::Error, writing: bool) -> StoreError {
    use rusqlite::ErrorCode as C;
    let (reason, fix) = match e.sqlite_error_code() {
        Some(C::NotADatabase) => (
            "it is not an SQLite database".to_string(),
            Remedy::ResultsOrNewFile { not_ours: false },
        ),
        Some(C::DatabaseCorrupt) => (
            "it is damaged (a corrupt page or a truncated file)".to_string(),
            Remedy::RestoreOrNewFile,
        ),
        Some(C::DiskFull) => (
            "its filesystem is full".to_string(),
            Remedy::FreeSpace,
        ),
        Some(C::DatabaseBusy | C::DatabaseLocked) => (
            "another process holds it locked".to_string(),
            Remedy::WaitForWriter,
        ),
        Some(C::ReadOnly | C::PermissionDenied | C::CannotOpen) if writing => (
            "SQLite cannot write it or its -wal/-shm files beside it (permissions, another user's files, or a read-only filesystem)".to_string(),
            Remedy::FixPermissions { writing: true },
        ),
        Some(C::ReadOnly | C::PermissionDenied | C::CannotOpen) => (
            "SQLite cannot open it or its -wal/-shm files beside it (permissions, or another user's files)".to_string(),
            Remedy::FixPermissions { writing: false },
        ),
        _ => (
            format!("not a usable SQLite database ({})", sqlite_message(e)),
            Remedy::NewFile,
        ),
    };
    StoreError::Open {
        path: path.to_path_buf(),
        reason,
        fix,
    }
}

/// SQLite's own message, once.
fn sqlite_message(e: &rusqlite::Error) -> String {
    match e {
        rusqlite::Error::SqliteFailure(_, Some(msg)) if !msg.is_empty() => msg.clone(),
        rusqlite::Error::SqliteFailure(f, _) => f.to_string(),
        other => other.to_string(),
    }
}
