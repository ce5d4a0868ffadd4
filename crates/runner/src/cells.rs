//! A run's cells, in the lifecycle's order: admitted before anything is stored, made
//! before the load starts (the load's items placed in them), undone after the load
//! stops (its processes are in the cgroups until then), on every path.
//!
//! What a cell is, admission and making and undoing them are `qos`'s
//! ([`qos::CellPlan::admit`], [`qos::partition::Partition`]); here only the order.

use load::LoadContext;
use qos::partition::{Partition, PlacedCell};
use qos::{Admission, CellPlan, CellSet};
use results::records::flags::Flags;
use results::records::qos::{QosGranted, QosRequested};
use serde_json::{json, Value};

/// A run's cells made real. Dropped without [`MadeCells::undo`] (an error, a panic),
/// they are undone all the same.
pub trait MadeCells {
    /// Every cell as placed.
    fn placed(&self) -> &[PlacedCell];
    /// What was granted, for the run's record (read before they are undone).
    fn granted(&self) -> Value;
    /// Undoes them; what could not be undone (empty when all was).
    fn undo(self: Box<Self>) -> Vec<String>;
}

impl MadeCells for Partition {
    fn placed(&self) -> &[PlacedCell] {
        self.cells()
    }

    fn granted(&self) -> Value {
        Partition::granted(self)
    }

    fn undo(self: Box<Self>) -> Vec<String> {
        self.finish()
    }
}

/// How a run's admitted cells are made: `Err` is a refusal (nothing is stored).
pub type MakeCells = fn(&CellSet, &Admission) -> Result<Box<dyn MadeCells>, String>;

/// The cells made as `qos` makes them (cgroups, CPU sets): [`Partition::create`].
pub fn make_partition(set: &CellSet, admission: &Admission) -> Result<Box<dyn MadeCells>, String> {
    Ok(Box::new(Partition::create(set, admission)?))
}

/// A run's cells as they were, once undone.
#[derive(Debug, Clone, PartialEq)]
pub struct CellsRecord {
    /// What was granted (per cell its CPUs, cpuset, exclusivity, CPU time).
    pub granted: Value,
    /// What could not be undone (empty when every cell was).
    pub undo_problems: Vec<String>,
}

impl CellsRecord {
    /// Every cell was undone.
    pub fn undone(&self) -> bool {
        self.undo_problems.is_empty()
    }

    /// Adds the cells to the run's granted QoS and flags.
    pub(crate) fn record(&self, qos_granted: &mut Value, flags: &mut Value) {
        QosGranted {
            cells: Some(self.granted.clone()),
            cells_undone: Some(self.undone()),
            cells_undo_problems: Some(self.undo_problems.clone()),
            ..QosGranted::default()
        }
        .add_to(qos_granted);
        Flags {
            cells_undone: Some(self.undone()),
            ..Flags::default()
        }
        .add_to(flags);
    }
}

/// A cell plan with what admission approved, before anything is stored.
pub(crate) struct Admitted<'a> {
    pub plan: &'a CellPlan,
    pub admission: Option<Admission>,
}

impl Admitted<'_> {
    /// The plan as stored with the run's configuration and requested QoS.
    pub fn describe(&self, config: &mut Value, qos_requested: &mut Value) {
        config["cells"] = self.plan.cells.to_json();
        config["host_cell"] = json!(self.plan.host_cell);
        QosRequested {
            cells: Some(self.plan.cells.to_json()),
            admission: Some(self.admission.as_ref().map(|a| json!(a.checks))),
            ..QosRequested::default()
        }
        .add_to(qos_requested);
    }

    /// Makes the admitted cells (none without an admission) and places the load's items
    /// in them.
    pub fn make(
        &self,
        make: MakeCells,
        lctx: &mut LoadContext,
    ) -> Result<Option<Box<dyn MadeCells>>, String> {
        let Some(admission) = &self.admission else {
            return Ok(None);
        };
        let made = make(&self.plan.cells, admission)?;
        for placed in made.placed() {
            lctx.placements
                .insert(placed.cell.name.clone(), qos::load_placement(placed));
        }
        Ok(Some(made))
    }
}

/// Undoes `made` (after the load stopped), keeping what was granted.
pub(crate) fn undo(made: Option<Box<dyn MadeCells>>) -> Option<CellsRecord> {
    made.map(|m| {
        let granted = m.granted();
        CellsRecord {
            granted,
            undo_problems: m.undo(),
        }
    })
}
