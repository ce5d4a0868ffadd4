//! Plans on the command line: the plan model and its run are `runner::plan`'s; here the
//! command line's side of them. [`CliCells`] answers the plan's questions with clap's
//! own definition of the commands (a probe's flags, whether a cell's command line parses
//! and passes its probe's checks, which private JACK server it needs); [`Progress`]
//! writes a plan run's start and progress lines. `commands::plans` runs the plan
//! (`runner::plan::execute`) and prints its summary.

mod checker;
mod progress;
#[cfg(test)]
mod tests;

pub use checker::CliCells;
pub use progress::Progress;
pub use runner::plan::{Plan, PlanCellRef, PlanError};

/// Parses and checks a plan's text against the CLI's probes. `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Plan, PlanError> {
    Plan::parse(text, file, &CliCells::default())
}

/// The plan cell in this process's environment, if any. A value that is not
/// `GROUP:CELL` is a usage error (an unset or non-UTF-8 variable is no cell).
pub fn cell_from_env() -> anyhow::Result<Option<PlanCellRef>> {
    PlanCellRef::from_env().map_err(|e| {
        crate::cli::UsageError(format!(
            "{}={}: expected GROUP:CELL (it is set by `audiolat run` for its cells; unset it)",
            PlanCellRef::ENV,
            e.text
        ))
        .into()
    })
}
