//! Runs: begun, updated and finished as they go, listed and read back.

use super::db::{vals, Row, Val};
use super::error::StoreError;
use super::handle::{RunFilter, Store};
use super::system::{new_uid, now_mono_ns};
use super::text::{json_text, parse_json};
use crate::id::RunId;
use crate::model::{rfc3339_utc, Machine, RunStatus, ToolInfo};
use crate::probe_kind::ProbeKind;
use crate::run::{RunInfo, RunRecord};
use serde_json::Value;

impl Store {
    /// Records the start of a run (status `running`) and returns its id. Its start is
    /// stamped once the database is held (a wait for another writer is no part of it).
    pub fn begin_run(&self, info: &RunInfo) -> Result<RunId, StoreError> {
        let id = self.db.tx(|| self.begin_run_now(info))?;
        self.keep_reserve();
        Ok(id)
    }

    fn begin_run_now(&self, info: &RunInfo) -> Result<RunId, StoreError> {
        if let Some((plan_group, cell)) = self.plan_cell.get() {
            let run_id: Option<RunId> = self
                .db
                .query_opt(
                    "SELECT run_id FROM plan_cell WHERE id = ?1 AND group_id = ?2 AND status = 'running'",
                    vals![cell, plan_group],
                )?
                .map(|r| r.get(0))
                .transpose()?
                .ok_or_else(|| {
                    StoreError::Corrupt(format!(
                        "plan cell {cell} of group {plan_group} is not waiting for a run"
                    ))
                })?;
            if let Some(earlier) = run_id {
                // This attempt already made its run.
                return Err(StoreError::PlanCellTaken {
                    cell,
                    run_id: earlier,
                });
            }
            let mut info = info.clone();
            info.group_id = Some(plan_group);
            let id = self.insert_run(&info)?;
            self.db.execute(
                "UPDATE plan_cell SET run_id = ?2 WHERE id = ?1",
                vals![cell, id],
            )?;
            return Ok(id);
        }
        self.insert_run(info)
    }

    fn insert_run(&self, info: &RunInfo) -> Result<RunId, StoreError> {
        let owner = crate::owner::Owner::this_process();
        let id = self.db.insert(
            "INSERT INTO run (group_id, probe, status, started_at, started_mono_ns, pid, hostname,
                machine, tool_version, git_commit, build_profile, command_line, config, load,
                qos_requested, uid, boot_id, pid_start_ticks)
             VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,
                ?16, ?17)",
            vals![
                info.group_id,
                info.probe.name,
                rfc3339_utc(std::time::SystemTime::now()),
                info.started_mono_ns
                    .map_or_else(now_mono_ns, |ns| ns as i64),
                owner.pid,
                &info.machine.hostname,
                json_text(&serde_json::to_value(&info.machine).expect("machine serialises")),
                &info.tool.version,
                &info.tool.git_commit,
                &info.tool.build_profile,
                &info.command_line,
                json_text(&info.config),
                json_text(&info.load),
                json_text(&info.qos_requested),
                new_uid(),
                owner.boot_id,
                owner.start_ticks,
            ],
        )?;
        Ok(RunId(id))
    }

    /// Removes run `run_id` with everything it wrote (its rows, events, measurements,
    /// series, gates): a run a stop ended before it measured anything is not kept. A plan
    /// cell that made it is left without a run, as if its process had made none.
    pub fn discard_run(&self, run_id: RunId) -> Result<(), StoreError> {
        self.db.tx(|| {
            self.db.execute(
                "UPDATE plan_cell SET run_id = NULL WHERE run_id = ?1",
                vals![run_id],
            )?;
            self.db
                .execute("DELETE FROM run WHERE id = ?1", vals![run_id])?;
            Ok(())
        })
    }

    /// Updates fields known only once the run is under way.
    pub fn update_run(
        &self,
        run_id: RunId,
        load: Option<&Value>,
        qos_granted: Option<&Value>,
    ) -> Result<(), StoreError> {
        if let Some(load) = load {
            self.db.execute(
                "UPDATE run SET load = ?2 WHERE id = ?1",
                vals![run_id, json_text(load)],
            )?;
        }
        if let Some(q) = qos_granted {
            self.db.execute(
                "UPDATE run SET qos_granted = ?2 WHERE id = ?1",
                vals![run_id, json_text(q)],
            )?;
        }
        Ok(())
    }

    /// Replaces a running run's probe result: what recovery needs to summarise the run
    /// should its process die (the closing [`Store::finish_run`] writes the real one).
    pub fn set_result(&self, run_id: RunId, result: &Value) -> Result<(), StoreError> {
        self.db.execute(
            "UPDATE run SET result = ?2 WHERE id = ?1",
            vals![run_id, json_text(result)],
        )?;
        Ok(())
    }

    /// Closes a run with its status, validity flags, probe result and error. `ended`:
    /// when it stopped measuring (CLOCK_MONOTONIC ns; `None`: now), so that its duration
    /// is what it measured, not the time its closing writes took.
    pub fn finish_run(
        &self,
        run_id: RunId,
        status: RunStatus,
        flags: &Value,
        result: &Value,
        error: Option<&str>,
        ended: Option<u64>,
    ) -> Result<(), StoreError> {
        let ended_ns = ended.map_or_else(now_mono_ns, |ns| ns as i64);
        let ended_at = match ended {
            // The wall clock of that moment (the monotonic clock's distance back from now).
            Some(ns) => std::time::SystemTime::now()
                .checked_sub(std::time::Duration::from_nanos(
                    now_mono_ns().saturating_sub(ns as i64).max(0) as u64,
                ))
                .unwrap_or_else(std::time::SystemTime::now),
            None => std::time::SystemTime::now(),
        };
        self.db.execute(
            "UPDATE run SET status = ?2, ended_at = ?3, ended_mono_ns = ?4, flags = ?5, result = ?6,
                error = ?7 WHERE id = ?1",
            vals![
                run_id,
                status.as_str(),
                rfc3339_utc(ended_at),
                ended_ns,
                json_text(flags),
                json_text(result),
                error
            ],
        )?;
        Ok(())
    }

    /// Lists runs, newest first.
    pub fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, StoreError> {
        let mut sql = format!("SELECT {RUN_COLUMNS} FROM run WHERE 1=1");
        let mut args: Vec<Val> = Vec::new();
        let kernel = self.db.json_field("machine", "kernel_release");
        let conditions = [
            ("probe", filter.probe.clone().map(Val::from)),
            ("group_id", filter.group_id.map(Val::from)),
            ("status", filter.status.map(|s| Val::from(s.as_str()))),
            ("hostname", filter.host.clone().map(Val::from)),
            (kernel.as_str(), filter.kernel.clone().map(Val::from)),
        ];
        for (column, value) in conditions {
            if let Some(v) = value {
                args.push(v);
                sql.push_str(&format!(" AND {column} = ?{}", args.len()));
            }
        }
        sql.push_str(" ORDER BY id DESC");
        if let Some(l) = filter.limit {
            sql.push_str(&format!(" LIMIT {l}"));
        }
        self.db
            .query(&sql, &args)?
            .iter()
            .map(run_from_row)
            .collect()
    }

    /// One run.
    pub fn run(&self, run_id: RunId) -> Result<RunRecord, StoreError> {
        self.db
            .query_opt(
                &format!("SELECT {RUN_COLUMNS} FROM run WHERE id = ?1"),
                vals![run_id],
            )?
            .as_ref()
            .map(run_from_row)
            .transpose()?
            .ok_or(StoreError::NoSuchRun(run_id))
    }

    /// The most recent run id, if any.
    pub fn last_run_id(&self) -> Result<Option<RunId>, StoreError> {
        self.db.query_one("SELECT max(id) FROM run", &[])?.get(0)
    }
}

pub(super) const RUN_COLUMNS: &str =
    "id, group_id, probe, status, started_at, ended_at, started_mono_ns,
    ended_mono_ns, pid, machine, tool_version, git_commit, build_profile, command_line, config,
    load, qos_requested, qos_granted, flags, result, error";

pub(super) fn run_from_row(r: &Row) -> Result<RunRecord, StoreError> {
    let status: String = r.get(3)?;
    let started: i64 = r.get(6)?;
    let ended: Option<i64> = r.get(7)?;
    let machine: Machine = serde_json::from_str(&r.get::<String>(9)?).unwrap_or_default();
    Ok(RunRecord {
        id: r.get(0)?,
        group_id: r.get(1)?,
        probe: ProbeKind::stored(&r.get::<String>(2)?),
        status: RunStatus::parse(&status).unwrap_or(RunStatus::Failed),
        started_at: r.get(4)?,
        ended_at: r.get(5)?,
        duration_s: ended.map(|e| (e - started) as f64 / 1e9),
        started_mono_ns: started.max(0) as u64,
        pid: r.get(8)?,
        machine,
        tool: ToolInfo {
            version: r.get(10)?,
            git_commit: r.get(11)?,
            build_profile: r.get(12)?,
        },
        command_line: r.get(13)?,
        config: parse_json(&r.get::<String>(14)?),
        load: parse_json(&r.get::<String>(15)?),
        qos_requested: parse_json(&r.get::<String>(16)?),
        qos_granted: parse_json(&r.get::<String>(17)?),
        flags: parse_json(&r.get::<String>(18)?),
        result: parse_json(&r.get::<String>(19)?),
        error: r.get(20)?,
    })
}
