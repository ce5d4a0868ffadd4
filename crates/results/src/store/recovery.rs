//! Runs, groups and plan cells a dead process left `running`: found, summarised (by the
//! caller's [`Summarise`]) and closed as `interrupted`.

use super::db::vals;
use super::runs::{run_from_row, RUN_COLUMNS};
use super::{hostname, parse_json, Store, StoreError, Summarise};
use crate::id::{GroupId, RunId};
use crate::model::{rfc3339_utc, RunRecord, RunStatus};

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
        Ok(running
            .into_iter()
            .filter(|r| !process_alive(r.pid))
            .collect())
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
                detail["runner_pid"].as_i64().filter(|_| on_this_host)
            } else {
                // Every run of such a group comes from the process that made it.
                self.db
                    .query_opt(
                        "SELECT pid FROM run WHERE group_id = ?1 AND hostname = ?2
                         ORDER BY id DESC LIMIT 1",
                        vals![id, &host],
                    )?
                    .map(|r| r.get(0))
                    .transpose()?
            };
            if let Some(pid) = owner.filter(|&p| !process_alive(p)) {
                out.push((id, pid));
            }
        }
        Ok(out)
    }

    /// Marks runs left `running` by processes of this host that no longer exist as
    /// `interrupted`, and closes their groups and plan cells. Returns how many runs.
    pub fn recover_stale_runs(&self) -> Result<usize, StoreError> {
        self.recover_abandoned(&|_, _| Ok(Vec::new()))
    }

    /// Closes what dead processes of this host left `running`: each run gets the
    /// measurements `summarise` makes of what it stored and becomes `interrupted` with
    /// the reason; each group becomes `interrupted`, and its cells still `running` with
    /// it. Returns how many runs.
    pub fn recover_abandoned(&self, summarise: &Summarise) -> Result<usize, StoreError> {
        let runs = self.abandoned_runs()?;
        for run in &runs {
            let mut why = format!("process {} ended without closing the run", run.pid);
            match summarise(self, run) {
                Ok(ms) if ms.is_empty() => {}
                Ok(ms) => {
                    self.replace_measurements(run.id, &ms)?;
                    why.push_str("; what it stored is summarised");
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
                        super::json_text(&detail)
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

pub(super) fn process_alive(pid: i64) -> bool {
    if pid <= 0 || pid > i32::MAX as i64 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence.
    let rc = unsafe { libc::kill(pid as i32, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
