//! A run's gate verdicts (`--fail-if`): stored after the run, read back by `show`,
//! `report` and `export`.

use super::db::vals;
use super::error::StoreError;
use super::handle::Store;
use crate::gate::{GateVerdict, Outcome};
use crate::id::RunId;

impl Store {
    /// Stores a run's verdicts in place of any it had, in one transaction.
    pub fn put_gates(&self, run_id: RunId, verdicts: &[GateVerdict]) -> Result<(), StoreError> {
        self.db.tx(|| {
            self.db
                .execute("DELETE FROM gate WHERE run_id = ?1", vals![run_id])?;
            for (seq, v) in verdicts.iter().enumerate() {
                self.db.execute(
                    "INSERT INTO gate (run_id, seq, expr, metric, op, threshold, unit, value, verdict, reason) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                    vals![
                        run_id,
                        seq as i64,
                        &v.expr,
                        &v.metric,
                        &v.op,
                        v.threshold,
                        &v.unit,
                        v.value,
                        v.outcome.as_str(),
                        v.reason.clone()
                    ],
                )?;
            }
            Ok(())
        })
    }

    /// A run's verdicts in the order its gates were given (none for a run without
    /// gates, or in a file older than gates, read as it is).
    pub fn gates(&self, run_id: RunId) -> Result<Vec<GateVerdict>, StoreError> {
        // (A PostgreSQL store is always made whole, with the table.)
        if !self.db.is_postgres() {
            let has_table: i64 = self
                .db
                .query_one(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'gate'",
                    &[],
                )?
                .get(0)?;
            if has_table == 0 {
                return Ok(Vec::new());
            }
        }
        let rows = self.db.query(
            "SELECT expr, metric, op, threshold, unit, value, verdict, reason FROM gate \
             WHERE run_id = ?1 ORDER BY seq",
            vals![run_id],
        )?;
        rows.iter()
            .map(|r| {
                let verdict: String = r.get(6)?;
                Ok(GateVerdict {
                    expr: r.get(0)?,
                    metric: r.get(1)?,
                    op: r.get(2)?,
                    threshold: r.get(3)?,
                    unit: r.get(4)?,
                    value: r.get(5)?,
                    outcome: Outcome::parse(&verdict)
                        .ok_or_else(|| StoreError::Corrupt(format!("gate verdict '{verdict}'")))?,
                    reason: r.get(7)?,
                })
            })
            .collect()
    }
}
