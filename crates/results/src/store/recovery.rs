//! Runs, groups and plan cells a dead process left `running`: found, summarised (by the
//! caller's [`Summarise`]) and closed as `interrupted`.

use super::db::vals;
use super::error::StoreError;
use super::handle::{Store, Summarise};
use super::runs::{run_from_row, RUN_COLUMNS};
use super::system::hostname;
use super::text::{json_text, parse_json};
use crate::id::{GroupId, RunId};
use crate::model::Recovered;
use crate::model::{rfc3339_utc, RunStatus};
use crate::owner::Owner;
use crate::run::RunRecord;
use std::path::PathBuf;

impl Store {
    /// Runs left `running` by processes of this host that no longer exist.
    pub fn abandoned_runs(&self) -> Result<Vec<RunRecord>, StoreError> {
        let running: Vec<RunRecord> = self
            .db
            .query(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM run WHERE status = 'running' AND hostname = ?1 ORDER BY id"
                ),
                vals![hostname()],
            )?
            .iter()
            .map(run_from_row)
            .collect::<Result<_, _>>()?;
        let mut out = Vec::new();
        for r in running {
            if !self.run_owner(r.id, r.pid)?.is_alive() {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// The process that made run `id` (of pid `pid`): with its boot and start time when
    /// they were stored (schema 8 on).
    fn run_owner(&self, id: RunId, pid: i64) -> Result<Owner, StoreError> {
        let mut owner = Owner {
            pid,
            boot_id: None,
            start_ticks: None,
        };
        if self.has_column("run", "boot_id")? {
            if let Some(row) = self.db.query_opt(
                "SELECT boot_id, pid_start_ticks FROM run WHERE id = ?1",
                vals![id],
            )? {
                owner.boot_id = row.get(0)?;
                owner.start_ticks = row.get(1)?;
            }
        }
        Ok(owner)
    }

    /// Groups (and their plan cells) left `running` by processes of this host that no
    /// longer exist: the process that made the group (`runner_pid` in its detail; a plan
    /// run's runner), or, for a group an older audiolat made without it (not a plan's),
    /// the process that made its runs.
    pub fn abandoned_groups(&self) -> Result<Vec<(GroupId, i64)>, StoreError> {
        let host = hostname();
        let groups: Vec<(GroupId, String, String)> = self
            .db
            .query(
                "SELECT id, kind, detail FROM run_group WHERE status = 'running'",
                &[],
            )?
            .iter()
            .map(|r| Ok::<_, StoreError>((r.get(0)?, r.get(1)?, r.get(2)?)))
            .collect::<Result<_, _>>()?;
        let mut out = Vec::new();
        for (id, kind, detail) in groups {
            let detail = parse_json(&detail);
            let owner = if kind == "plan" || detail["runner_pid"].is_i64() {
                let on_this_host = detail["runner_host"].as_str().is_none_or(|h| h == host);
                Owner::runner_of(&detail).filter(|_| on_this_host)
            } else {
                // Every run of such a group comes from the process that made it.
                let last: Option<(RunId, i64)> = self
                    .db
                    .query_opt(
                        "SELECT id, pid FROM run WHERE group_id = ?1 AND hostname = ?2
                         ORDER BY id DESC LIMIT 1",
                        vals![id, &host],
                    )?
                    .map(|r| Ok::<_, StoreError>((r.get(0)?, r.get(1)?)))
                    .transpose()?;
                match last {
                    Some((run, pid)) => Some(self.run_owner(run, pid)?),
                    None => None,
                }
            };
            if let Some(owner) = owner.filter(|o| !o.is_alive()) {
                out.push((id, owner.pid));
            }
        }
        Ok(out)
    }

    /// Marks runs left `running` by processes of this host that no longer exist as
    /// `interrupted`, and closes their groups and plan cells. Returns how many runs.
    pub fn recover_stale_runs(&self) -> Result<usize, StoreError> {
        self.recover_abandoned(&|_, _| Ok(Recovered::default()))
    }

    /// Closes what dead processes of this host left `running`: each run gets the
    /// measurements `summarise` makes of what it stored and becomes `interrupted` with
    /// the reason; each group becomes `interrupted`, and its cells still `running` with
    /// it. Returns how many runs.
    pub fn recover_abandoned(&self, summarise: &Summarise) -> Result<usize, StoreError> {
        let runs = self.abandoned_runs()?;
        for run in &runs {
            let mut why = match self.kept_elsewhere(run.id)? {
                Some((spool, local_id)) => format!(
                    "process {} could not close it here, and kept it in {} as run {local_id} with what it measured; `audiolat push --db {} --to {}` puts it here",
                    run.pid,
                    spool.display(),
                    spool.display(),
                    self.path.display()
                ),
                None => format!("process {} ended without closing the run", run.pid),
            };
            match summarise(self, run) {
                Ok(kept) => {
                    if !kept.measurements.is_empty() {
                        self.replace_measurements(run.id, &kept.measurements)?;
                        why.push_str("; what it stored is summarised");
                    }
                    if !kept.result.is_null() {
                        self.set_result(run.id, &kept.result)?;
                    }
                    if !kept.flags.is_null() {
                        self.db.execute(
                            "UPDATE run SET flags = ?2 WHERE id = ?1",
                            vals![run.id, json_text(&kept.flags)],
                        )?;
                    }
                }
                Err(e) => why.push_str(&format!("; what it stored could not be summarised: {e}")),
            }
            self.db.execute(
                "UPDATE run SET status = 'interrupted', error = ?2, ended_at = ?3
                 WHERE id = ?1 AND status = 'running'",
                vals![run.id, why, rfc3339_utc(std::time::SystemTime::now())],
            )?;
        }
        for (group, pid) in self.abandoned_groups()? {
            let why = format!("process {pid} ended without closing it");
            self.db.tx(|| {
                let Some(row) = self.db.query_opt(
                    "SELECT detail FROM run_group WHERE id = ?1 AND status = 'running'",
                    vals![group],
                )?
                else {
                    return Ok(());
                };
                let mut detail = parse_json(&row.get::<String>(0)?);
                if let serde_json::Value::Object(map) = &mut detail {
                    map.insert("end_reason".into(), why.clone().into());
                }
                self.db.execute(
                    "UPDATE run_group SET status = 'interrupted', ended_at = ?2, detail = ?3
                     WHERE id = ?1 AND status = 'running'",
                    vals![
                        group,
                        rfc3339_utc(std::time::SystemTime::now()),
                        json_text(&detail)
                    ],
                )?;
                self.db.execute(
                    "UPDATE plan_cell SET status = 'interrupted', error = ?2
                     WHERE group_id = ?1 AND status = 'running'",
                    vals![group, &why],
                )?;
                Ok(())
            })?;
        }
        Ok(runs.len())
    }

    /// The local file a run left `running` here was kept in (see `unpushed`), and its id
    /// there: the file beside this database or in the working directory that has a run
    /// of the same identity.
    fn kept_elsewhere(&self, run_id: RunId) -> Result<Option<(PathBuf, RunId)>, StoreError> {
        let uid: Option<String> = self
            .db
            .query_one("SELECT uid FROM run WHERE id = ?1", vals![run_id])?
            .get(0)?;
        let Some(uid) = uid else {
            return Ok(None);
        };
        for spool in self.unpushed_places() {
            if !spool.is_file() || spool == self.path {
                continue;
            }
            let Ok(local) = Store::open_read_only(&spool) else {
                continue;
            };
            if local.path == self.path {
                continue;
            }
            if let Ok(Some(row)) = local
                .db
                .query_opt("SELECT id FROM run WHERE uid = ?1", vals![&uid])
            {
                return Ok(Some((spool, row.get(0)?)));
            }
        }
        Ok(None)
    }

    /// Closes a run its process left `running` (it died before closing it): sets the
    /// status and the reason, keeping everything the run stored. Does nothing to a run
    /// that is closed.
    pub fn close_abandoned_run(
        &self,
        run_id: RunId,
        status: RunStatus,
        error: &str,
    ) -> Result<(), StoreError> {
        self.db.execute(
            "UPDATE run SET status = ?2, ended_at = ?3, error = ?4
             WHERE id = ?1 AND status = 'running'",
            vals![
                run_id,
                status.as_str(),
                rfc3339_utc(std::time::SystemTime::now()),
                error
            ],
        )?;
        Ok(())
    }
}
