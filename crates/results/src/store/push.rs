//! Copying runs from one store to another (`audiolat push`): a board's SQLite file
//! into the fleet's PostgreSQL store.

use crate::id::RunId;

/// What a push did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pushed {
    /// Runs copied, with their id in the target.
    pub copied: Vec<(RunId, RunId)>,
    /// Runs the target already had (pushed before).
    pub already: Vec<RunId>,
    /// Runs still `running` in the source, not copied.
    pub running: Vec<RunId>,
}

use super::db::{vals, Row, Val};
use super::error::StoreError;
use super::handle::Store;
use crate::id::GroupId;
use std::collections::HashMap;

/// A run's columns as copied (all but its id and group).
const RUN_COPIED: &str = "probe, status, started_at, ended_at, started_mono_ns, ended_mono_ns,
    pid, hostname, machine, tool_version, git_commit, build_profile, command_line, config, load,
    qos_requested, qos_granted, flags, result, error, uid, boot_id, pid_start_ticks";

/// What a run owns, by table: the columns copied (all but the row's id and run).
const OWNED: [(&str, &str); 5] = [
    (
        "measurement",
        "probe, metric, unit, method, count, min, mean, stdev, p50, p90, p99, p999, p9999, max,
         clamped, overflows, deadline, misses, histogram, histogram_bound, histogram_exact, detail",
    ),
    ("event", "mono_ns, kind, detail"),
    ("series", "name, unit, columns, rows"),
    (
        "trigger",
        "seq, source, trigger_ns, note_frame, offset_frames, cycle, dac_ns, latency_ns, wait_ns,
         lateness_ns, buffer_ns, late, missed, measured_ns, underruns_before, timing",
    ),
    (
        "gate",
        "seq, expr, metric, op, threshold, unit, value, verdict, reason",
    ),
];

/// `?1, ?2, ... ?n`.
fn placeholders(n: usize) -> String {
    (1..=n)
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn column_count(columns: &str) -> usize {
    columns.split(',').count()
}

impl Store {
    /// Copies every closed run of this store into `target`, with what it produced
    /// (measurements with their histograms' bytes, events, series, triggers, gate
    /// verdicts) and its
    /// group (with a plan's cells); each run in one transaction of the target. A run the
    /// target has already (the same global identity, `uid`) is not copied again, so
    /// pushing twice stores nothing twice, unless the target's copy was never closed by
    /// its process (it moved here when the server went away, see `unpushed`) and this
    /// one was: then it replaces it. A run still `running` is left for later.
    pub fn push_to(&self, target: &Store) -> Result<Pushed, StoreError> {
        let mut pushed = Pushed::default();
        let mut groups: HashMap<GroupId, GroupId> = HashMap::new();
        let runs = self
            .db
            .query("SELECT id, uid, status, group_id FROM run ORDER BY id", &[])?;
        for r in runs {
            let id: RunId = r.get(0)?;
            let uid: String = r.get::<Option<String>>(1)?.ok_or_else(|| {
                StoreError::Corrupt(format!("run {id} has no global identity (uid)"))
            })?;
            if r.get::<String>(2)? == "running" {
                pushed.running.push(id);
                continue;
            }
            // The target's copy, unless its process never closed it there (a server
            // that went away mid-run) and this one was closed: that one is replaced.
            let known = target.db.query_opt(
                "SELECT id, ended_mono_ns IS NULL, group_id FROM run WHERE uid = ?1",
                vals![&uid],
            )?;
            let closed_here = || -> Result<bool, StoreError> {
                self.db
                    .query_one(
                        "SELECT ended_mono_ns IS NOT NULL FROM run WHERE id = ?1",
                        vals![id],
                    )?
                    .get(0)
            };
            let stale = match &known {
                Some(k) if k.get::<bool>(1)? && closed_here()? => {
                    Some((k.get::<RunId>(0)?, k.get::<Option<GroupId>>(2)?))
                }
                Some(_) => {
                    pushed.already.push(id);
                    continue;
                }
                None => None,
            };
            let group: Option<GroupId> = r.get(3)?;
            let new_id = target.db.tx(|| {
                // The unfinished copy's place: its group (a run kept locally was moved
                // out of it) and the plan cell that made it.
                let mut cells = Vec::new();
                if let Some((old, _)) = stale {
                    cells = target
                        .db
                        .query("SELECT id FROM plan_cell WHERE run_id = ?1", vals![old])?;
                    target.db.execute(
                        "UPDATE plan_cell SET run_id = NULL WHERE run_id = ?1",
                        vals![old],
                    )?;
                    target
                        .db
                        .execute("DELETE FROM run WHERE id = ?1", vals![old])?;
                }
                let to_group = match group {
                    Some(g) => Some(self.push_group(target, g, &mut groups)?),
                    None => stale.and_then(|(_, g)| g),
                };
                let new_id = self.copy_run(target, id, to_group)?;
                for cell in cells {
                    target.db.execute(
                        "UPDATE plan_cell SET run_id = ?1 WHERE id = ?2",
                        vals![new_id, cell.get::<i64>(0)?],
                    )?;
                }
                Ok(new_id)
            })?;
            pushed.copied.push((id, new_id));
        }
        Ok(pushed)
    }

    fn copy_run(
        &self,
        target: &Store,
        id: RunId,
        to_group: Option<GroupId>,
    ) -> Result<RunId, StoreError> {
        let n = column_count(RUN_COPIED);
        let row = self.db.query_one(
            &format!("SELECT {RUN_COPIED} FROM run WHERE id = ?1"),
            vals![id],
        )?;
        let mut args = vec![Val::from(to_group)];
        args.extend(row.0);
        let new_id = RunId(target.db.insert(
            &format!(
                "INSERT INTO run (group_id, {RUN_COPIED}) VALUES ({})",
                placeholders(n + 1)
            ),
            &args,
        )?);
        for (table, columns) in OWNED {
            let rows = self.db.query(
                &format!("SELECT {columns} FROM {table} WHERE run_id = ?1 ORDER BY id"),
                vals![id],
            )?;
            let insert = format!(
                "INSERT INTO {table} (run_id, {columns}) VALUES ({})",
                placeholders(column_count(columns) + 1)
            );
            for Row(values) in rows {
                let mut args = vec![Val::from(new_id)];
                args.extend(values);
                target.db.execute(&insert, &args)?;
            }
        }
        if let Some(g) = to_group {
            // The plan cell this run measured points at its copy.
            for cell in self
                .db
                .query("SELECT key FROM plan_cell WHERE run_id = ?1", vals![id])?
            {
                target.db.execute(
                    "UPDATE plan_cell SET run_id = ?1 WHERE group_id = ?2 AND key = ?3",
                    vals![new_id, g, cell.get::<String>(0)?],
                )?;
            }
        }
        Ok(new_id)
    }

    /// The target's copy of group `g`: found by its identity (and brought up to date:
    /// its status may have changed since an earlier push), or made with its plan cells.
    fn push_group(
        &self,
        target: &Store,
        g: GroupId,
        done: &mut HashMap<GroupId, GroupId>,
    ) -> Result<GroupId, StoreError> {
        if let Some(t) = done.get(&g) {
            return Ok(*t);
        }
        const COLUMNS: &str = "kind, status, started_at, ended_at, command_line, detail, uid";
        let row = self.db.query_one(
            &format!("SELECT {COLUMNS} FROM run_group WHERE id = ?1"),
            vals![g],
        )?;
        let uid: Option<String> = row.get(6)?;
        let found = target
            .db
            .query_opt("SELECT id FROM run_group WHERE uid = ?1", vals![uid])?;
        let to = match found {
            Some(t) => {
                let t: GroupId = t.get(0)?;
                target.db.execute(
                    "UPDATE run_group SET status = ?2, ended_at = ?3, detail = ?4 WHERE id = ?1",
                    &[
                        Val::from(t),
                        row.0[1].clone(),
                        row.0[3].clone(),
                        row.0[5].clone(),
                    ],
                )?;
                t
            }
            None => {
                let t = GroupId(target.db.insert(
                    &format!(
                        "INSERT INTO run_group ({COLUMNS}) VALUES ({})",
                        placeholders(7)
                    ),
                    &row.0,
                )?);
                const CELL: &str = "seq, key, axes, argv, profile, status, attempts, error";
                for Row(values) in self.db.query(
                    &format!("SELECT {CELL} FROM plan_cell WHERE group_id = ?1 ORDER BY id"),
                    vals![g],
                )? {
                    let mut args = vec![Val::from(t)];
                    args.extend(values);
                    target.db.execute(
                        &format!(
                            "INSERT INTO plan_cell (group_id, {CELL}) VALUES ({})",
                            placeholders(9)
                        ),
                        &args,
                    )?;
                }
                t
            }
        };
        done.insert(g, to);
        Ok(to)
    }
}
