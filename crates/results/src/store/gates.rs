//! A run's gate verdicts (`--fail-if`): stored after the run, read back by `show`,
//! `report` and `export`.

use rusqlite::params;

use super::{Store, StoreError};
use crate::gate::{GateVerdict, Outcome};
use crate::id::RunId;

impl Store {
    /// Stores a run's verdicts in place of any it had, in one transaction.
    pub fn put_gates(&self, run_id: RunId, verdicts: &[GateVerdict]) -> Result<(), StoreError> {
        let tx = self.conn.unchecked_transaction()?;
        tx.execute("DELETE FROM gate WHERE run_id = ?1", [run_id])?;
        {
            let mut stmt = tx.prepare_cached(
                "INSERT INTO gate (run_id, seq, expr, metric, op, threshold, unit, value, verdict, reason) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?;
            for (seq, v) in verdicts.iter().enumerate() {
                stmt.execute(params![
                    run_id,
                    seq as i64,
                    v.expr,
                    v.metric,
                    v.op,
                    v.threshold,
                    v.unit,
                    v.value,
                    v.outcome.as_str(),
                    v.reason
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// A run's verdicts in the order its gates were given (none for a run without
    /// gates, or in a file older than gates, read as it is).
    pub fn gates(&self, run_id: RunId) -> Result<Vec<GateVerdict>, StoreError> {
        let has_table: bool = self.conn.query_row(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'gate'",
            [],
            |r| r.get(0),
        )?;
        if !has_table {
            return Ok(Vec::new());
        }
        let mut stmt = self.conn.prepare(
            "SELECT expr, metric, op, threshold, unit, value, verdict, reason FROM gate \
             WHERE run_id = ?1 ORDER BY seq",
        )?;
        let rows = stmt.query_map([run_id], |r| {
            Ok((
                GateVerdict {
                    expr: r.get(0)?,
                    metric: r.get(1)?,
                    op: r.get(2)?,
                    threshold: r.get(3)?,
                    unit: r.get(4)?,
                    value: r.get(5)?,
                    outcome: Outcome::Pass,
                    reason: r.get(7)?,
                },
                r.get::<_, String>(6)?,
            ))
        })?;
        rows.map(|row| {
            let (mut v, verdict) = row?;
            v.outcome = Outcome::parse(&verdict)
                .ok_or_else(|| StoreError::Corrupt(format!("gate verdict '{verdict}'")))?;
            Ok(v)
        })
        .collect()
    }
}
