//! The schema: its versions, as each audiolat made it, and the forward migration run
//! on open (one `BEGIN IMMEDIATE` transaction, so two first runs may race). PostgreSQL
//! takes the same steps in its types ([`pg_schema_steps`]; migrated in `postgres`).

use super::db::vals;
use super::error::StoreError;
use super::handle::Store;
use super::journal::is_busy;
use super::refusal::{contents, foreign, open_failure, Contents};
use super::system::new_uid;
use super::version::SCHEMA_VERSION;

/// Version 8: the process that made a run is known by the boot it ran in (`boot_id`)
/// and its start time (`pid_start_ticks`) beside its pid, so that a pid the kernel gave
/// to another process since does not keep a dead process's run `running`
/// ([`crate::owner`]); runs stored before have neither and are judged by their pid. The
/// columns are added by [`Store::before_step`] (unless a file whose version was set back
/// has them).
const SCHEMA_V8: &str = "";

/// Version 7: a run's and a group's global identity (`uid`, a random UUID made when it
/// begins), so a run copied to another store (`audiolat push`) is known there and never
/// copied twice; runs and groups stored before get one in the migration
/// ([`Store::before_step`], which adds the columns unless a file whose version was set
/// back has them).
const SCHEMA_V7: &str = r#"
CREATE UNIQUE INDEX IF NOT EXISTS run_by_uid ON run(uid);
CREATE UNIQUE INDEX IF NOT EXISTS run_group_by_uid ON run_group(uid);
"#;

/// Version 6: threshold gates (`--fail-if`) judged on a run, one row per gate: the
/// expression, the measured value in its unit (NULL: not measured) and the verdict.
const SCHEMA_V6: &str = r#"
CREATE TABLE gate (
    id         INTEGER PRIMARY KEY,
    run_id     INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    expr       TEXT NOT NULL,
    metric     TEXT NOT NULL,
    op         TEXT NOT NULL,
    threshold  REAL NOT NULL,
    unit       TEXT NOT NULL,
    value      REAL,
    verdict    TEXT NOT NULL CHECK (verdict IN ('pass','fail','unknown')),
    reason     TEXT
);
CREATE INDEX gate_by_run ON gate(run_id);
"#;

/// Version 5: an event trigger's timing figures are NULL where the rendering cycle's
/// start is not known (just after an xrun: JACK's estimate of it is off there, see the
/// engine's `CheckedStart`), and each row says where its cycle's start came from
/// (`timing`); rows stored before are `unchecked`. SQLite needs the table rebuilt to
/// make columns nullable.
const SCHEMA_V5: &str = r#"
CREATE TABLE trigger_v5 (
    id              INTEGER PRIMARY KEY,
    run_id          INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    source          TEXT NOT NULL,
    trigger_ns      INTEGER NOT NULL,
    note_frame      INTEGER NOT NULL,
    offset_frames   INTEGER NOT NULL,
    cycle           INTEGER NOT NULL,
    dac_ns          INTEGER,
    latency_ns      INTEGER,
    wait_ns         INTEGER,
    lateness_ns     INTEGER,
    buffer_ns       INTEGER NOT NULL,
    late            INTEGER NOT NULL,
    missed          INTEGER NOT NULL,
    measured_ns     INTEGER,
    underruns_before INTEGER NOT NULL,
    timing          TEXT NOT NULL DEFAULT 'unchecked'
);
INSERT INTO trigger_v5
    SELECT id, run_id, seq, source, trigger_ns, note_frame, offset_frames, cycle, dac_ns,
        latency_ns, wait_ns, lateness_ns, buffer_ns, late, missed, measured_ns,
        underruns_before, 'unchecked'
    FROM trigger;
DROP TABLE trigger;
ALTER TABLE trigger_v5 RENAME TO trigger;
CREATE INDEX trigger_by_run ON trigger(run_id);
"#;

/// Version 4: a statistic nobody measured is NULL, not 0. The summary columns of
/// `measurement` become nullable (SQLite needs the table rebuilt for that), and the rows
/// of measurements without samples (count 0), stored as zeros before, get NULLs.
const SCHEMA_V4: &str = r#"
CREATE TABLE measurement_v4 (
    id              INTEGER PRIMARY KEY,
    run_id          INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    probe           TEXT NOT NULL,
    metric          TEXT NOT NULL,
    unit            TEXT NOT NULL,
    method          TEXT NOT NULL,
    count           INTEGER NOT NULL,
    min             REAL,
    mean            REAL,
    stdev           REAL,
    p50             REAL,
    p90             REAL,
    p99             REAL,
    p999            REAL,
    p9999           REAL,
    max             REAL,
    clamped         INTEGER NOT NULL DEFAULT 0,
    overflows       INTEGER NOT NULL DEFAULT 0,
    deadline        REAL,
    misses          INTEGER,
    histogram       BLOB,
    histogram_bound INTEGER,
    histogram_exact TEXT,
    detail          TEXT NOT NULL DEFAULT '{}'
);
INSERT INTO measurement_v4
    SELECT id, run_id, probe, metric, unit, method, count,
        CASE WHEN count > 0 THEN min END, CASE WHEN count > 0 THEN mean END,
        CASE WHEN count > 0 THEN stdev END, CASE WHEN count > 0 THEN p50 END,
        CASE WHEN count > 0 THEN p90 END, CASE WHEN count > 0 THEN p99 END,
        CASE WHEN count > 0 THEN p999 END, CASE WHEN count > 0 THEN p9999 END,
        CASE WHEN count > 0 THEN max END,
        clamped, overflows, deadline, misses, histogram, histogram_bound, histogram_exact,
        detail
    FROM measurement;
DROP TABLE measurement;
ALTER TABLE measurement_v4 RENAME TO measurement;
CREATE INDEX measurement_by_run ON measurement(run_id);
"#;

/// Version 3: the cells of plan runs (`audiolat run plan.toml`), one row per cell of the
/// matrix, pointing at the run that measured it.
const SCHEMA_V3: &str = r#"
CREATE TABLE plan_cell (
    id        INTEGER PRIMARY KEY,
    group_id  INTEGER NOT NULL REFERENCES run_group(id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    key       TEXT NOT NULL,
    axes      TEXT NOT NULL,
    argv      TEXT NOT NULL,
    profile   TEXT NOT NULL,
    status    TEXT NOT NULL DEFAULT 'pending'
              CHECK (status IN ('pending','running','complete','interrupted','failed')),
    run_id    INTEGER REFERENCES run(id),
    attempts  INTEGER NOT NULL DEFAULT 0,
    error     TEXT,
    UNIQUE (group_id, key)
);
CREATE INDEX plan_cell_by_group ON plan_cell(group_id);
"#;

/// Version 2: the `event` probe's per-trigger rows.
const SCHEMA_V2: &str = r#"
CREATE TABLE trigger (
    id              INTEGER PRIMARY KEY,
    run_id          INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    source          TEXT NOT NULL,
    trigger_ns      INTEGER NOT NULL,
    note_frame      INTEGER NOT NULL,
    offset_frames   INTEGER NOT NULL,
    cycle           INTEGER NOT NULL,
    dac_ns          INTEGER NOT NULL,
    latency_ns      INTEGER NOT NULL,
    wait_ns         INTEGER NOT NULL,
    lateness_ns     INTEGER NOT NULL,
    buffer_ns       INTEGER NOT NULL,
    late            INTEGER NOT NULL,
    missed          INTEGER NOT NULL,
    measured_ns     INTEGER,
    underruns_before INTEGER NOT NULL
);
CREATE INDEX trigger_by_run ON trigger(run_id);
"#;

const SCHEMA_V1: &str = r#"
CREATE TABLE run_group (
    id            INTEGER PRIMARY KEY,
    kind          TEXT NOT NULL,
    status        TEXT NOT NULL DEFAULT 'running'
                  CHECK (status IN ('running','complete','interrupted','failed')),
    started_at    TEXT NOT NULL,
    ended_at      TEXT,
    command_line  TEXT NOT NULL,
    detail        TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE run (
    id              INTEGER PRIMARY KEY,
    group_id        INTEGER REFERENCES run_group(id),
    probe           TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('running','complete','interrupted','failed')),
    started_at      TEXT NOT NULL,
    ended_at        TEXT,
    started_mono_ns INTEGER NOT NULL,
    ended_mono_ns   INTEGER,
    pid             INTEGER NOT NULL,
    hostname        TEXT NOT NULL,
    machine         TEXT NOT NULL,
    tool_version    TEXT NOT NULL,
    git_commit      TEXT NOT NULL,
    build_profile   TEXT NOT NULL,
    command_line    TEXT NOT NULL,
    config          TEXT NOT NULL,
    load            TEXT NOT NULL,
    qos_requested   TEXT NOT NULL,
    qos_granted     TEXT NOT NULL DEFAULT '{}',
    flags           TEXT NOT NULL DEFAULT '{}',
    result          TEXT NOT NULL DEFAULT '{}',
    error           TEXT
);
CREATE INDEX run_by_group ON run(group_id);
CREATE TABLE measurement (
    id              INTEGER PRIMARY KEY,
    run_id          INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    probe           TEXT NOT NULL,
    metric          TEXT NOT NULL,
    unit            TEXT NOT NULL,
    method          TEXT NOT NULL,
    count           INTEGER NOT NULL,
    min             REAL NOT NULL,
    mean            REAL NOT NULL,
    stdev           REAL NOT NULL,
    p50             REAL NOT NULL,
    p90             REAL NOT NULL,
    p99             REAL NOT NULL,
    p999            REAL NOT NULL,
    p9999           REAL NOT NULL,
    max             REAL NOT NULL,
    clamped         INTEGER NOT NULL DEFAULT 0,
    overflows       INTEGER NOT NULL DEFAULT 0,
    deadline        REAL,
    misses          INTEGER,
    histogram       BLOB,
    histogram_bound INTEGER,
    histogram_exact TEXT,
    detail          TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX measurement_by_run ON measurement(run_id);
CREATE TABLE event (
    id       INTEGER PRIMARY KEY,
    run_id   INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    mono_ns  INTEGER NOT NULL,
    kind     TEXT NOT NULL,
    detail   TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX event_by_run ON event(run_id);
CREATE TABLE series (
    id       INTEGER PRIMARY KEY,
    run_id   INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    name     TEXT NOT NULL,
    unit     TEXT NOT NULL,
    columns  TEXT NOT NULL,
    rows     TEXT NOT NULL
);
CREATE INDEX series_by_run ON series(run_id);
"#;

impl Store {
    /// Creates or migrates the schema: in one `BEGIN IMMEDIATE` transaction that looks
    /// at the version again once it holds the write lock (another process may have just
    /// made it), tried again while another process holds the lock (bounded).
    pub(super) fn migrate(&self) -> Result<(), StoreError> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            match self.migrate_once() {
                Err(StoreError::Sql(e)) if is_busy(&e) => {
                    if std::time::Instant::now() >= deadline {
                        return Err(self.locked(&e));
                    }
                    std::thread::sleep(std::time::Duration::from_millis(
                        20 + u64::from(std::process::id() % 30),
                    ));
                }
                Err(StoreError::Sql(e)) => return Err(open_failure(&self.path, &e, true)),
                other => return other,
            }
        }
    }

    fn migrate_once(&self) -> Result<(), StoreError> {
        let version: i64 = self
            .db
            .lite()
            .query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version == SCHEMA_VERSION {
            return Ok(());
        }
        let tx = rusqlite::Transaction::new_unchecked(
            self.db.lite(),
            rusqlite::TransactionBehavior::Immediate,
        )?;
        let version = match contents(&tx)? {
            Contents::Empty => 0,
            Contents::Ours(v) => v,
            Contents::Foreign(tables) => return Err(foreign(&self.path, &tables)),
        };
        if version > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: self.path.clone(),
                found: version,
            });
        }
        if version < 1 {
            tx.execute_batch(&format!("{SCHEMA_V1} PRAGMA user_version = 1;"))?;
        }
        if version < 2 {
            tx.execute_batch(&format!("{SCHEMA_V2} PRAGMA user_version = 2;"))?;
        }
        if version < 3 {
            tx.execute_batch(&format!("{SCHEMA_V3} PRAGMA user_version = 3;"))?;
        }
        if version < 4 {
            tx.execute_batch(&format!("{SCHEMA_V4} PRAGMA user_version = 4;"))?;
        }
        if version < 5 {
            tx.execute_batch(&format!("{SCHEMA_V5} PRAGMA user_version = 5;"))?;
        }
        if version < 6 {
            tx.execute_batch(&format!("{SCHEMA_V6} PRAGMA user_version = 6;"))?;
        }
        if version < 7 {
            self.before_step(7)?;
            tx.execute_batch(&format!("{SCHEMA_V7} PRAGMA user_version = 7;"))?;
        }
        if version < 8 {
            self.before_step(8)?;
            tx.execute_batch(&format!("{SCHEMA_V8} PRAGMA user_version = 8;"))?;
        }
        // Later schema versions add `if version < N { ... }` steps here.
        tx.commit()?;
        Ok(())
    }

    /// What a step needs before its SQL, in its transaction: version 7 adds the `uid`
    /// columns and gives each run and group stored before it its identity; version 8
    /// adds the run's `boot_id` and `pid_start_ticks`.
    pub(super) fn before_step(&self, version: i64) -> Result<(), StoreError> {
        if version == 8 {
            self.add_column("run", "boot_id", "TEXT")?;
            self.add_column(
                "run",
                "pid_start_ticks",
                if self.db.is_postgres() {
                    "BIGINT"
                } else {
                    "INTEGER"
                },
            )?;
        }
        if version == 7 {
            for table in ["run", "run_group"] {
                self.add_column(table, "uid", "TEXT")?;
                let ids = self
                    .db
                    .query(&format!("SELECT id FROM {table} WHERE uid IS NULL"), &[])?;
                for row in ids {
                    self.db.execute(
                        &format!("UPDATE {table} SET uid = ?2 WHERE id = ?1"),
                        vals![row.get::<i64>(0)?, new_uid()],
                    )?;
                }
            }
        }
        Ok(())
    }

    /// Whether `table` has `column`.
    pub(super) fn has_column(&self, table: &str, column: &str) -> Result<bool, StoreError> {
        let n: i64 = if self.db.is_postgres() {
            self.db.query_one(
                "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema()
                 AND table_name = ?1 AND column_name = ?2",
                vals![table, column],
            )?
        } else {
            self.db.query_one(
                "SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2",
                vals![table, column],
            )?
        }
        .get(0)?;
        Ok(n > 0)
    }

    /// Adds `column` of `kind` to `table` unless it is there.
    fn add_column(&self, table: &str, column: &str, kind: &str) -> Result<(), StoreError> {
        if !self.has_column(table, column)? {
            self.db.execute(
                &format!("ALTER TABLE {table} ADD COLUMN {column} {kind}"),
                &[],
            )?;
        }
        Ok(())
    }

    /// The schema version of the open file (or PostgreSQL database).
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        if self.db.is_postgres() {
            return self.pg_schema_version();
        }
        Ok(self
            .db
            .lite()
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }
}

/// The schema's steps in PostgreSQL's types, with the version each makes: SQLite's
/// integers are `BIGINT` (row ids identity columns), its reals `DOUBLE PRECISION`, its
/// blobs `BYTEA`.
pub(super) fn pg_schema_steps() -> Vec<(i64, String)> {
    let steps = [
        SCHEMA_V1, SCHEMA_V2, SCHEMA_V3, SCHEMA_V4, SCHEMA_V5, SCHEMA_V6, SCHEMA_V7, SCHEMA_V8,
    ];
    steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let sql = s
                .replace(
                    "INTEGER PRIMARY KEY",
                    "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
                )
                .replace(" INTEGER", " BIGINT")
                .replace(" REAL", " DOUBLE PRECISION")
                .replace(" BLOB", " BYTEA");
            (i as i64 + 1, sql)
        })
        .collect()
}

/// The schema as audiolat `version` made it, in one transaction: an older audiolat's file.
#[cfg(test)]
pub(super) fn schema_up_to(version: i64) -> String {
    let v7 = format!(
        "ALTER TABLE run ADD COLUMN uid TEXT; ALTER TABLE run_group ADD COLUMN uid TEXT; {SCHEMA_V7}"
    );
    let v8 = "ALTER TABLE run ADD COLUMN boot_id TEXT; ALTER TABLE run ADD COLUMN pid_start_ticks INTEGER;";
    let steps = [
        SCHEMA_V1, SCHEMA_V2, SCHEMA_V3, SCHEMA_V4, SCHEMA_V5, SCHEMA_V6, &v7, v8,
    ];
    let schema = steps[..version as usize].concat();
    format!("BEGIN; {schema} PRAGMA user_version = {version}; COMMIT;")
}
