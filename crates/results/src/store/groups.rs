//! Groups of runs (a sweep, a plan) and a plan's cells: made, filed under, closed.

use super::{hostname, json_text, parse_json, Store, StoreError};
use crate::id::{GroupId, PlanCellId};
use crate::model::{rfc3339_utc, GroupRecord, NewPlanCell, PlanCell, RunStatus};
use rusqlite::{params, OptionalExtension};
use serde_json::Value;

impl Store {
    /// Starts a group of runs (one `audiolat suite`, later one plan).
    pub fn create_group(
        &self,
        kind: &str,
        command_line: &str,
        detail: &Value,
    ) -> Result<GroupId, StoreError> {
        if let Some((plan_group, _)) = self.plan_cell.get() {
            // A plan's cell is one run of the plan run: no group of its own.
            return Ok(plan_group);
        }
        // Its owner, for recovery: a group whose process dies before its first run has
        // no run to name it. (A plan run's detail names its runner itself.)
        self.conn.execute(
            "INSERT INTO run_group (kind, started_at, command_line, detail)
             VALUES (?1, ?2, ?3, json_insert(?4, '$.runner_pid', ?5, '$.runner_host', ?6))",
            params![
                kind,
                rfc3339_utc(std::time::SystemTime::now()),
                command_line,
                json_text(detail),
                std::process::id(),
                hostname()
            ],
        )?;
        Ok(GroupId(self.conn.last_insert_rowid()))
    }

    /// Closes a group of runs with its status.
    pub fn finish_group(&self, group_id: GroupId, status: RunStatus) -> Result<(), StoreError> {
        if self.plan_cell.get().is_some_and(|(g, _)| g == group_id) {
            // The plan runner closes its own group.
            return Ok(());
        }
        self.conn.execute(
            "UPDATE run_group SET status = ?2, ended_at = ?3 WHERE id = ?1",
            params![
                group_id,
                status.as_str(),
                rfc3339_utc(std::time::SystemTime::now())
            ],
        )?;
        Ok(())
    }

    /// A group's kind and status.
    pub fn group_status(&self, group_id: GroupId) -> Result<(String, RunStatus), StoreError> {
        let (kind, status): (String, String) = self
            .conn
            .query_row(
                "SELECT kind, status FROM run_group WHERE id = ?1",
                [group_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?
            .ok_or_else(|| StoreError::Corrupt(format!("no group {group_id}")))?;
        Ok((kind, RunStatus::parse(&status).unwrap_or(RunStatus::Failed)))
    }

    /// Files every run this store begins from now on under `cell` of the plan run
    /// `group_id`: the run joins the plan's group (and [`Store::create_group`] returns
    /// it), and the cell points at the run. A cell takes one run per process; a second
    /// [`Store::begin_run`] fails with [`StoreError::PlanCellTaken`].
    pub fn file_runs_under(&self, group_id: GroupId, cell: PlanCellId) -> Result<(), StoreError> {
        let status: Option<String> = self
            .conn
            .query_row(
                "SELECT status FROM plan_cell WHERE id = ?1 AND group_id = ?2",
                params![cell, group_id],
                |r| r.get(0),
            )
            .optional()?;
        match status.as_deref() {
            Some("running") => {
                self.plan_cell.set(Some((group_id, cell)));
                Ok(())
            }
            Some(s) => Err(StoreError::Corrupt(format!(
                "plan cell {cell} of group {group_id} is {s}, not waiting for a run"
            ))),
            None => Err(StoreError::Corrupt(format!(
                "no plan cell {cell} in group {group_id}"
            ))),
        }
    }

    /// A group.
    pub fn group(&self, group_id: GroupId) -> Result<GroupRecord, StoreError> {
        self.conn
            .query_row(
                &format!("SELECT {GROUP_COLUMNS} FROM run_group WHERE id = ?1"),
                [group_id],
                group_from_row,
            )
            .optional()?
            .ok_or(StoreError::NoSuchGroup(group_id))
    }

    /// Groups of one kind (all kinds with `None`), newest first.
    pub fn list_groups(&self, kind: Option<&str>) -> Result<Vec<GroupRecord>, StoreError> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {GROUP_COLUMNS} FROM run_group WHERE ?1 IS NULL OR kind = ?1 ORDER BY id DESC"
        ))?;
        let rows = stmt.query_map([kind], group_from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Marks a group running again (a resumed plan run).
    pub fn reopen_group(&self, group_id: GroupId) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE run_group SET status = 'running', ended_at = NULL WHERE id = ?1",
            [group_id],
        )?;
        Ok(())
    }

    /// Adds the cells of a plan run. Cells whose key the group already has are left as
    /// they are (a resumed plan run keeps its cells and their runs).
    pub fn add_plan_cells(
        &self,
        group_id: GroupId,
        cells: &[NewPlanCell],
    ) -> Result<(), StoreError> {
        let tx = self.conn.unchecked_transaction()?;
        for c in cells {
            tx.execute(
                "INSERT OR IGNORE INTO plan_cell (group_id, seq, key, axes, argv, profile)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    group_id,
                    c.seq,
                    c.key,
                    json_text(&c.axes),
                    json_text(&serde_json::to_value(&c.argv).expect("strings serialise")),
                    c.profile
                ],
            )?;
            tx.execute(
                "UPDATE plan_cell SET seq = ?3 WHERE group_id = ?1 AND key = ?2",
                params![group_id, c.key, c.seq],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// The cells of a plan run, in run order.
    pub fn plan_cells(&self, group_id: GroupId) -> Result<Vec<PlanCell>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT id, group_id, seq, key, axes, argv, profile, status, run_id, attempts, error
             FROM plan_cell WHERE group_id = ?1 ORDER BY seq, id",
        )?;
        let rows = stmt.query_map([group_id], |r| {
            let status: String = r.get(7)?;
            Ok(PlanCell {
                id: r.get(0)?,
                group_id: r.get(1)?,
                seq: r.get(2)?,
                key: r.get(3)?,
                axes: parse_json(&r.get::<_, String>(4)?),
                argv: serde_json::from_str(&r.get::<_, String>(5)?).unwrap_or_default(),
                profile: r.get(6)?,
                status: RunStatus::parse(&status),
                run_id: r.get(8)?,
                attempts: r.get(9)?,
                error: r.get(10)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Marks a cell as being run (one more attempt) before its process starts.
    pub fn start_plan_cell(&self, cell: PlanCellId) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE plan_cell SET status = 'running', attempts = attempts + 1, error = NULL,
                run_id = NULL
             WHERE id = ?1",
            [cell],
        )?;
        Ok(())
    }

    /// Replaces a group's detail (a plan run records its runner's pid there).
    pub fn set_group_detail(&self, group_id: GroupId, detail: &Value) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE run_group SET detail = ?2 WHERE id = ?1",
            params![group_id, json_text(detail)],
        )?;
        Ok(())
    }

    /// Closes a cell: its status is its run's, or `failed` with the reason when it made
    /// no run.
    pub fn finish_plan_cell(
        &self,
        cell: PlanCellId,
        status: RunStatus,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE plan_cell SET status = ?2, error = ?3 WHERE id = ?1",
            params![cell, status.as_str(), error],
        )?;
        Ok(())
    }
}

const GROUP_COLUMNS: &str = "id, kind, status, started_at, ended_at, command_line, detail";

fn group_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<GroupRecord> {
    let status: String = r.get(2)?;
    Ok(GroupRecord {
        id: r.get(0)?,
        kind: r.get(1)?,
        status: RunStatus::parse(&status).unwrap_or(RunStatus::Failed),
        started_at: r.get(3)?,
        ended_at: r.get(4)?,
        command_line: r.get(5)?,
        detail: parse_json(&r.get::<_, String>(6)?),
    })
}
