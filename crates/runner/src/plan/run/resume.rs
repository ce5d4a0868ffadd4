//! `--resume`: finding the plan run to continue and checking it against the plan.

use std::collections::BTreeMap;

use results::{GroupId, PlanCell, RunStatus, Store};
use serde_json::json;

use super::order::Planned;
use super::PlanRunError;
use crate::plan::Plan;

/// Which plan run to continue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// This one (its group id).
    Group(GroupId),
    /// The latest unfinished plan run of the plan's name.
    Latest,
}

/// The plan run to continue, checked against the plan's cells.
fn resume_group(
    store: &Store,
    plan: &Plan,
    how: Resume,
    cells: &[Planned],
) -> Result<GroupId, PlanRunError> {
    let group = match how {
        Resume::Group(g) => {
            let rec = store.group(g)?;
            if rec.kind != "plan" {
                return Err(PlanRunError::Refused(format!(
                    "group {g} ({}) is not a plan run: `audiolat runs --groups` shows them",
                    rec.kind
                )));
            }
            rec
        }
        Resume::Latest => store
            .list_groups(Some("plan"))?
            .into_iter()
            .find(|g| g.detail["name"] == json!(plan.name) && g.status != RunStatus::Complete)
            .ok_or_else(|| {
                PlanRunError::Refused(format!(
                    "no unfinished plan run of `{}` in this database: run it without --resume",
                    plan.name
                ))
            })?,
    };
    if group.detail["name"] != json!(plan.name) {
        return Err(PlanRunError::Refused(format!(
            "group {} is the plan run of `{}`, not `{}`",
            group.id,
            group.detail["name"].as_str().unwrap_or("?"),
            plan.name
        )));
    }
    let stored = store.plan_cells(group.id)?;
    let stored_map: BTreeMap<&str, &PlanCell> =
        stored.iter().map(|c| (c.key.as_str(), c)).collect();
    for p in cells {
        match stored_map.get(p.cell.key.as_str()) {
            Some(s) if s.argv == p.cell.command.argv() && s.profile == p.cell.profile => {}
            Some(_) => {
                return Err(PlanRunError::Refused(format!(
                    "the plan changed since plan run {}: cell {} now runs different settings; run the plan anew (without --resume)",
                    group.id, p.cell.key
                )))
            }
            None => {
                return Err(PlanRunError::Refused(format!(
                    "the plan changed since plan run {}: cell {} is new; run the plan anew (without --resume)",
                    group.id, p.cell.key
                )))
            }
        }
    }
    if stored.len() != cells.len() {
        return Err(PlanRunError::Refused(format!(
            "the plan changed since plan run {}: it had {} cells, now {}; run the plan anew (without --resume)",
            group.id,
            stored.len(),
            cells.len()
        )));
    }
    Ok(group.id)
}

/// The plan run `--resume` continues, taken over by this process: refused while another
/// live process runs it; then reopened with this process as its runner.
pub(super) fn reopen(
    store: &Store,
    plan: &Plan,
    how: Resume,
    cells: &[Planned],
) -> Result<GroupId, PlanRunError> {
    let g = resume_group(store, plan, how, cells)?;
    let mut detail = store.group(g)?.detail;
    if let Some(runner) = results::owner::Owner::runner_of(&detail) {
        if runner.pid != i64::from(std::process::id()) && runner.is_alive() {
            return Err(PlanRunError::Refused(format!(
                "plan run {g} is being run by process {}: wait for it, or stop it (Ctrl-C) and resume",
                runner.pid
            )));
        }
    }
    results::owner::Owner::this_process().write_runner(&mut detail);
    detail["runner_host"] = json!(results::store::hostname());
    store.set_group_detail(g, &detail)?;
    store.reopen_group(g)?;
    Ok(g)
}
