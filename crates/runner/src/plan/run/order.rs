//! The order cells run in: the cells that share a private JACK server together.

use crate::plan::{Cell, CellChecker, CellRefusal, Plan, PlanError};

/// The private JACK server a cell needs: (rate, period).
pub type ServerKey = (u32, u32);

/// A cell, checked, with what the plan runner needs beyond its arguments.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The cell.
    pub cell: Cell,
    /// The private JACK server it runs on (`None`: it needs none).
    pub server: Option<ServerKey>,
}

/// The cells in run order: the cells of one server together (first appearance first),
/// plan order within, each checked by `checker`. `None` when `stopped` said so while
/// the cells were checked.
pub fn order(
    plan: &Plan,
    checker: &dyn CellChecker,
    stopped: &dyn Fn() -> bool,
) -> Result<Option<Vec<Planned>>, PlanError> {
    let cells = plan.cells(&|command| {
        if stopped() {
            return Err(CellRefusal::CannotRun("interrupted".into()));
        }
        checker.check(command)
    });
    if stopped() {
        return Ok(None);
    }
    let mut keyed: Vec<Planned> = cells?
        .into_iter()
        .map(|(cell, server)| Planned { cell, server })
        .collect();
    let mut first_seen: Vec<Option<ServerKey>> = Vec::new();
    for p in &keyed {
        if !first_seen.contains(&p.server) {
            first_seen.push(p.server);
        }
    }
    keyed.sort_by_key(|p| first_seen.iter().position(|s| *s == p.server));
    Ok(Some(keyed))
}

/// How many private JACK server settings the cells, in run order, start one after
/// another.
pub fn server_settings(planned: &[Planned]) -> usize {
    let mut s: Vec<ServerKey> = planned.iter().filter_map(|p| p.server).collect();
    s.dedup();
    s.len()
}
