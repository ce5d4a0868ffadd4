//! A run's cells with its loads and its host runtime placed in them: admission for the
//! whole run, and how a load process enters a made cell.

use std::collections::BTreeMap;

use engine::rt::Policy;
use load::{LoadItem, LoadSpec};

use crate::admission::Refusal;
use crate::partition::{Partition, PlacedCell};
use crate::{Admission, Capacity, CellKind, CellSet};

/// The cells of a run and the one the host's runtime goes in.
#[derive(Clone, Debug, Default)]
pub struct CellPlan {
    /// Every cell.
    pub cells: CellSet,
    /// The host's cell.
    pub host_cell: Option<String>,
}

/// The threads a run puts in its host cell, for admission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostThreads {
    /// How many threads (a network thread and its workers).
    pub threads: usize,
    /// They never sleep (each needs a CPU of its own in a dedicated cell).
    pub spinning: bool,
}

/// Why a run's cells were refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// A load was placed in a cell the plan does not define.
    #[error("load {load} placed in cell {cell}: no such cell")]
    NoSuchCell {
        /// The load's name (`ep`, `video`, ...).
        load: String,
        /// The cell it names.
        cell: String,
    },
    /// A load that forks was placed in a SCHED_DEADLINE cell.
    #[error("load {load} placed in cell {cell}: {cell} is a SCHED_DEADLINE cell ({kind}), whose tasks may not fork: only the built-in loads (video, ep) can run there; place the others in dedicated or best-effort cells")]
    ForksInDeadlineCell {
        /// The load's name.
        load: String,
        /// The cell.
        cell: String,
        /// The cell's kind.
        kind: CellKind,
    },
    /// Admission control refused the set (the text says what is over and by how much).
    #[error("{0}")]
    Refused(String),
    /// Cells reserve link bandwidth, but the run shapes no link.
    #[error(
        "admission: cells reserve bandwidth ({reserved}) but the run has no shaped link; shape one"
    )]
    NoShapedLink {
        /// The reservations, `NAME MBPS + ...`.
        reserved: String,
    },
}

impl From<Refusal> for PlanError {
    fn from(r: Refusal) -> PlanError {
        match r {
            Refusal::Over(why) => PlanError::Refused(why),
            Refusal::NoShapedLink { reserved } => PlanError::NoShapedLink { reserved },
        }
    }
}

impl CellPlan {
    /// Admission control for a run: the loads' cells, the host's threads in its cell
    /// (`host`, when the run has a host runtime), the link (`link_mbps`, when shaped).
    /// `Ok(None)`: the plan has no cells. A refusal comes before anything starts.
    pub fn admit(
        &self,
        load_spec: &LoadSpec,
        host: Option<HostThreads>,
        link_mbps: Option<f64>,
    ) -> Result<Option<Admission>, PlanError> {
        self.check_load_cells(load_spec)?;
        if self.cells.is_empty() {
            return Ok(None);
        }
        let mut threads = self.load_threads(load_spec);
        let mut spinning = Vec::new();
        if let (Some(h), Some(host)) = (&self.host_cell, host) {
            *threads.entry(h.clone()).or_insert(0) += host.threads;
            if host.spinning {
                spinning.push(h.clone());
            }
        }
        let capacity = Capacity::here(link_mbps);
        let admission = self.cells.admit_typed(&capacity, &threads, &spinning)?;
        Partition::check(&admission).map_err(PlanError::Refused)?;
        Ok(Some(admission))
    }

    /// Every placed load names a cell of the plan, and none that forks is in a
    /// SCHED_DEADLINE cell.
    fn check_load_cells(&self, load_spec: &LoadSpec) -> Result<(), PlanError> {
        for item in &load_spec.items {
            let Some(name) = load_spec.cell_of(item) else {
                continue;
            };
            let Some(cell) = self.cells.get(name) else {
                return Err(PlanError::NoSuchCell {
                    load: item.name().to_string(),
                    cell: name.to_string(),
                });
            };
            if cell.kind.is_deadline()
                && !matches!(item, LoadItem::Stream { .. })
                && load::deadline_threads(item, 1).is_none()
            {
                return Err(PlanError::ForksInDeadlineCell {
                    load: item.name().to_string(),
                    cell: name.to_string(),
                    kind: cell.kind,
                });
            }
        }
        Ok(())
    }

    /// Threads per deadline cell: each thread of a built-in load in a deadline cell
    /// takes the cell's reservation.
    fn load_threads(&self, load_spec: &LoadSpec) -> BTreeMap<String, usize> {
        let mut threads = BTreeMap::new();
        let cpus = engine::rt::online_cpus().len();
        for item in &load_spec.items {
            if let Some(name) = load_spec.cell_of(item) {
                if self.cells.get(name).is_some_and(|c| c.kind.is_deadline()) {
                    if let Some(n) = load::deadline_threads(item, cpus) {
                        *threads.entry(name.to_string()).or_insert(0) += n;
                    }
                }
            }
        }
        threads
    }
}

/// A load process's placement in a made cell: its groups, CPUs and policy (under
/// SCHED_DEADLINE, each thread of a built-in load takes the share itself: a deadline
/// task may not fork).
pub fn load_placement(cell: &PlacedCell) -> load::Placement {
    let policy = match cell.cell.policy {
        Policy::Other { nice } => Some((libc::SCHED_OTHER, 0, nice)),
        Policy::Batch { nice } => Some((libc::SCHED_BATCH, 0, nice)),
        Policy::Idle => Some((libc::SCHED_IDLE, 0, 0)),
        Policy::Fifo { priority } => Some((libc::SCHED_FIFO, priority as i32, 0)),
        Policy::RoundRobin { priority } => Some((libc::SCHED_RR, priority as i32, 0)),
        // Each thread of a built-in load takes it itself: a deadline task may not fork.
        Policy::Deadline { .. } => None,
    };
    let deadline = match cell.cell.policy {
        Policy::Deadline {
            runtime_ns,
            deadline_ns,
            period_ns,
        } => Some(load::DeadlineShare {
            runtime_ns,
            deadline_ns,
            period_ns,
            time_triggered: cell.cell.kind == CellKind::TimeTriggered,
        }),
        _ => None,
    };
    load::Placement {
        procs_files: cell.procs_files(),
        cpus: cell.cpus.clone(),
        policy,
        deadline,
    }
}
