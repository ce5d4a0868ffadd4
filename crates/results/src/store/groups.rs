//! Groups of runs (a sweep, a plan) and a plan's cells: made, filed under, closed.

use super::db::{vals, Row};
use super::error::StoreError;
use super::handle::Store;
use super::system::{hostname, new_uid};
use super::text::{json_text, parse_json};
use crate::id::{GroupId, PlanCellId};
use crate::model::{rfc3339_utc, GroupRecord, NewPlanCell, PlanCell, RunStatus};
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
        // (As SQLite's json_insert did: keys the detail has already are kept.)
        let mut detail = detail.clone();
        if let Value::Object(map) = &mut detail {
            map.entry("runner_host")
                .or_insert_with(|| hostname().into());
        }
        if detail.get("runner_pid").is_none() {
            crate::owner::Owner::this_process().write_runner(&mut detail);
        }
        let id = self.db.insert(
            "INSERT INTO run_group (kind, started_at, command_line, detail, uid)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            vals![
                kind,
                rfc3339_utc(std::time::SystemTime::now()),
                command_line,
                json_text(&detail),
                new_uid()
            ],
        )?;
        self.keep_reserve();
        Ok(GroupId(id))
    }

    /// Closes a group of runs with its status.
    pub fn finish_group(&self, group_id: GroupId, status: RunStatus) -> Result<(), StoreError> {
        if self.plan_cell.get().is_some_and(|(g, _)| g == group_id) {
            // The plan runner closes its own group.
            return Ok(());
        }
        self.db.execute(
            "UPDATE run_group SET status = ?2, ended_at = ?3 WHERE id = ?1",
            vals![
                group_id,
                status.as_str(),
                rfc3339_utc(std::time::SystemTime::now())
            ],
        )?;
        Ok(())
    }

    /// Removes group `group_id` when no run is filed under it (a group a stop ended
    /// before any of its runs measured is not kept); `false` when it has runs and stays.
    /// A plan run is never removed by its cell.
    pub fn discard_group(&self, group_id: GroupId) -> Result<bool, StoreError> {
        if self.plan_cell.get().is_some_and(|(g, _)| g == group_id) {
            return Ok(false);
        }
        let removed = self.db.tx(|| {
            self.db.execute(
                "DELETE FROM run_group WHERE id = ?1
                 AND NOT EXISTS (SELECT 1 FROM run WHERE group_id = ?1)
                 AND NOT EXISTS (SELECT 1 FROM plan_cell WHERE group_id = ?1)",
                vals![group_id],
            )
        })?;
        Ok(removed > 0)
    }

    /// A group's kind and status.
    pub fn group_status(&self, group_id: GroupId) -> Result<(String, RunStatus), StoreError> {
        let row = self
            .db
            .query_opt(
                "SELECT kind, status FROM run_group WHERE id = ?1",
                vals![group_id],
            )?
            .ok_or_else(|| StoreError::Corrupt(format!("no group {group_id}")))?;
        let (kind, status): (String, String) = (row.get(0)?, row.get(1)?);
        Ok((kind, RunStatus::parse(&status).unwrap_or(RunStatus::Failed)))
    }

    /// Files every run this store begins from now on under `cell` of the plan run
    /// `group_id`: the run joins the plan's group (and [`Store::create_group`] returns
    /// it), and the cell points at the run. A cell takes one run per process; a second
    /// [`Store::begin_run`] fails with [`StoreError::PlanCellTaken`].
    pub fn file_runs_under(&self, group_id: GroupId, cell: PlanCellId) -> Result<(), StoreError> {
        let status: Option<String> = self
            .db
            .query_opt(
                "SELECT status FROM plan_cell WHERE id = ?1 AND group_id = ?2",
                vals![cell, group_id],
            )?
            .map(|r| r.get(0))
            .transpose()?;
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
        self.db
            .query_opt(
                &format!("SELECT {GROUP_COLUMNS} FROM run_group WHERE id = ?1"),
                vals![group_id],
            )?
            .as_ref()
            .map(group_from_row)
            .transpose()?
            .ok_or(StoreError::NoSuchGroup(group_id))
    }

    /// Groups of one kind (all kinds with `None`), newest first.
    pub fn list_groups(&self, kind: Option<&str>) -> Result<Vec<GroupRecord>, StoreError> {
        let rows = match kind {
            Some(kind) => self.db.query(
                &format!("SELECT {GROUP_COLUMNS} FROM run_group WHERE kind = ?1 ORDER BY id DESC"),
                vals![kind],
            )?,
            None => self.db.query(
                &format!("SELECT {GROUP_COLUMNS} FROM run_group ORDER BY id DESC"),
                &[],
            )?,
        };
        rows.iter().map(group_from_row).collect()
    }

    /// Marks a group running again (a resumed plan run).
    pub fn reopen_group(&self, group_id: GroupId) -> Result<(), StoreError> {
        self.db.execute(
            "UPDATE run_group SET status = 'running', ended_at = NULL WHERE id = ?1",
            vals![group_id],
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
        self.db.tx(|| {
            for c in cells {
                self.db.execute(
                    "INSERT INTO plan_cell (group_id, seq, key, axes, argv, profile)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING",
                    vals![
                        group_id,
                        c.seq,
                        &c.key,
                        json_text(&c.axes),
                        json_text(&serde_json::to_value(&c.argv).expect("strings serialise")),
                        &c.profile
                    ],
                )?;
                self.db.execute(
                    "UPDATE plan_cell SET seq = ?3 WHERE group_id = ?1 AND key = ?2",
                    vals![group_id, &c.key, c.seq],
                )?;
            }
            Ok(())
        })
    }

    /// The cells of a plan run, in run order.
    pub fn plan_cells(&self, group_id: GroupId) -> Result<Vec<PlanCell>, StoreError> {
        let rows = self.db.query(
            "SELECT id, group_id, seq, key, axes, argv, profile, status, run_id, attempts, error
             FROM plan_cell WHERE group_id = ?1 ORDER BY seq, id",
            vals![group_id],
        )?;
        rows.iter()
            .map(|r| {
                let status: String = r.get(7)?;
                Ok(PlanCell {
                    id: r.get(0)?,
                    group_id: r.get(1)?,
                    seq: r.get(2)?,
                    key: r.get(3)?,
                    axes: parse_json(&r.get::<String>(4)?),
                    argv: serde_json::from_str(&r.get::<String>(5)?).unwrap_or_default(),
                    profile: r.get(6)?,
                    status: RunStatus::parse(&status),
                    run_id: r.get(8)?,
                    attempts: r.get(9)?,
                    error: r.get(10)?,
                })
            })
            .collect()
    }

    /// Marks a cell as being run (one more attempt) before its process starts.
    pub fn start_plan_cell(&self, cell: PlanCellId) -> Result<(), StoreError> {
        self.db.execute(
            "UPDATE plan_cell SET status = 'running', attempts = attempts + 1, error = NULL,
                run_id = NULL
             WHERE id = ?1",
            vals![cell],
        )?;
        Ok(())
    }

    /// Replaces a group's detail (a plan run records its runner's pid there).
    pub fn set_group_detail(&self, group_id: GroupId, detail: &Value) -> Result<(), StoreError> {
        self.db.execute(
            "UPDATE run_group SET detail = ?2 WHERE id = ?1",
            vals![group_id, json_text(detail)],
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
        self.db.execute(
            "UPDATE plan_cell SET status = ?2, error = ?3 WHERE id = ?1",
            vals![cell, status.as_str(), error],
        )?;
        Ok(())
    }
}

const GROUP_COLUMNS: &str = "id, kind, status, started_at, ended_at, command_line, detail";

fn group_from_row(r: &Row) -> Result<GroupRecord, StoreError> {
    let status: String = r.get(2)?;
    Ok(GroupRecord {
        id: r.get(0)?,
        kind: r.get(1)?,
        status: RunStatus::parse(&status).unwrap_or(RunStatus::Failed),
        started_at: r.get(3)?,
        ended_at: r.get(4)?,
        command_line: r.get(5)?,
        detail: parse_json(&r.get::<String>(6)?),
    })
}
