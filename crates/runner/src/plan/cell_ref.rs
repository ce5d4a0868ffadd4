//! A plan cell's identity as the plan runner hands it to the cell's process: the plan run
//! (group) and the cell, written `GROUP:CELL` in the environment variable
//! [`PlanCellRef::ENV`]. The cell's process may be another build of audiolat (a build
//! profile of the plan), so the text stays as it is: written and read only here.

use std::fmt;
use std::str::FromStr;

use results::{GroupId, PlanCellId};

/// A cell of a plan run, as its process is told which cell its run is filed under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanCellRef {
    /// The plan run (its group id).
    pub group: GroupId,
    /// The cell (its plan-cell id).
    pub cell: PlanCellId,
}

/// A `GROUP:CELL` text that is not one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadPlanCellRef {
    /// The text as given.
    pub text: String,
}

impl fmt::Display for BadPlanCellRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not GROUP:CELL", self.text)
    }
}

impl std::error::Error for BadPlanCellRef {}

impl PlanCellRef {
    /// The environment variable a plan runner gives each cell's process.
    pub const ENV: &'static str = "AUDIOLAT_PLAN_CELL";

    /// The plan cell in this process's environment, if any (an unset or non-UTF-8
    /// variable is no cell). A value that is not `GROUP:CELL` is refused with its text.
    pub fn from_env() -> Result<Option<PlanCellRef>, BadPlanCellRef> {
        let Ok(v) = std::env::var(Self::ENV) else {
            return Ok(None);
        };
        v.parse().map(Some)
    }
}

impl fmt::Display for PlanCellRef {
    /// `GROUP:CELL`, as the environment variable carries it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.group, self.cell)
    }
}

impl FromStr for PlanCellRef {
    type Err = BadPlanCellRef;

    /// Reads `GROUP:CELL` (two whole numbers).
    fn from_str(text: &str) -> Result<PlanCellRef, BadPlanCellRef> {
        text.split_once(':')
            .and_then(|(g, c)| {
                Some(PlanCellRef {
                    group: g.parse().ok()?,
                    cell: c.parse().ok()?,
                })
            })
            .ok_or_else(|| BadPlanCellRef {
                text: text.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_text_is_group_colon_cell_both_ways() {
        let c = PlanCellRef {
            group: GroupId(3),
            cell: PlanCellId(17),
        };
        assert_eq!(c.to_string(), "3:17");
        assert_eq!("3:17".parse(), Ok(c));
        assert_eq!(PlanCellRef::ENV, "AUDIOLAT_PLAN_CELL");
    }

    #[test]
    fn anything_else_is_refused_with_its_text() {
        for bad in ["", "3", "3:", ":4", "a:4", "3:4:5", "3;4"] {
            let e = bad.parse::<PlanCellRef>().unwrap_err();
            assert_eq!(e.text, bad);
        }
    }
}
