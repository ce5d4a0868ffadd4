//! A plan run from start to end, as `audiolat run` and `audiolat reproduce` take it: the
//! plan run opened (new, or reopened by a resume) as a [`Group`] closed on every path,
//! the cells and a doctor run stored under it, the binaries built, the cells not yet
//! complete run, and the group closed by the one status rule ([`crate::group::status`]).
//! Nothing is printed: the start, the news and the progress go to a [`PlanObserver`],
//! the end is the returned [`PlanRunEnd`].

use std::path::Path;
use std::time::{Duration, Instant};

use results::{GroupId, Store};

use super::{
    build_binaries, cells_to_run, close, create_group, reopen, run_cells, server_settings,
    store_cells, Binaries, Closed, PlanObserver, PlanRunError, Planned, Resume, Tally,
};
use crate::group::Group;
use crate::plan::{CellChecker, Plan};
use crate::Context;

/// A plan run to make: the plan and its cells, checked and in run order ([`super::order`]).
#[derive(Debug, Clone, Copy)]
pub struct PlanRun<'a> {
    /// The plan.
    pub plan: &'a Plan,
    /// Its cells, in run order.
    pub planned: &'a [Planned],
    /// The stored plan run to continue (`None`: a new one).
    pub resume: Option<Resume>,
    /// Cargo's output is not shown while a profile's binary is built, nor the news of it.
    pub quiet: bool,
}

/// A plan run as it starts, told to [`PlanObserver::started`] before any binary is
/// built.
#[derive(Debug, Clone, Copy)]
pub struct PlanStarted<'a> {
    /// The plan's name.
    pub name: &'a str,
    /// Where the plan came from (a file, `preset NAME`).
    pub source: &'a str,
    /// The plan run (group).
    pub group: GroupId,
    /// Cells in the plan run.
    pub cells: usize,
    /// Cells already stored complete (a resume).
    pub already: usize,
    /// Cells to run now.
    pub to_run: usize,
    /// Private JACK server settings the cells need.
    pub servers: usize,
}

/// How a plan run ended.
#[derive(Debug)]
pub enum PlanRunEnd {
    /// Ctrl-C stopped the build of a profile's binary before any cell ran: the plan run
    /// is closed interrupted, kept for a resume.
    StoppedBuilding {
        /// The plan run.
        group: GroupId,
        /// The profile being built.
        profile: String,
    },
    /// The cells ran (all, or until a stop or an error) and the plan run is closed.
    Ran(PlanRunSummary),
}

/// A plan run whose cells ran, closed.
#[derive(Debug, Clone)]
pub struct PlanRunSummary {
    /// The plan run.
    pub group: GroupId,
    /// Its status and cells, as closed.
    pub closed: Closed,
    /// The cells that failed, and why the plan run could not go on, if it could not.
    pub tally: Tally,
    /// From the first cell's start (binaries built) to the close.
    pub elapsed: Duration,
}

/// Runs `run` in `store` (each cell's process writes to the database at `db_path`;
/// `checker` says whether the probe takes `--quiet`). A refusal (a resume that does not
/// fit the plan, a profile that cannot be built) is [`PlanRunError::Refused`]; an error
/// after the plan run was opened closes it `failed`.
pub fn execute(
    ctx: &Context,
    db_path: &Path,
    store: &Store,
    checker: &dyn CellChecker,
    run: &PlanRun<'_>,
    observer: &mut dyn PlanObserver,
) -> Result<PlanRunEnd, PlanRunError> {
    let id = match run.resume {
        Some(how) => reopen(store, run.plan, how, run.planned)?,
        None => create_group(&ctx.command_line, store, run.plan, run.planned)?,
    };
    let group = Group::adopt(store, id);
    store_cells(store, id, run.planned)?;
    // The machine as the plan found it, for the report (each start of a resumed plan
    // run adds one: the machine may have changed in between).
    let doctor = probes::doctor::run(Duration::from_secs(1));
    crate::suite::store_doctor(ctx, store, Some(id), &doctor)?;
    let stored = store.plan_cells(id)?;
    let to_run = cells_to_run(run.planned, &stored)?;
    observer.started(&PlanStarted {
        name: &run.plan.name,
        source: &run.plan.source,
        group: id,
        cells: stored.len(),
        already: stored.len() - to_run.len(),
        to_run: to_run.len(),
        servers: server_settings(run.planned),
    });
    let binaries = match build_binaries(ctx, &group, &to_run, run.quiet, observer)? {
        Binaries::Ready(b) => b,
        Binaries::Stopped { profile } => {
            return Ok(PlanRunEnd::StoppedBuilding { group: id, profile })
        }
    };
    let started = Instant::now();
    let tally = run_cells(
        ctx,
        db_path,
        store,
        run.plan,
        id,
        run.planned,
        &to_run,
        &binaries,
        checker,
        observer,
    );
    let closed = close(store, &group, &tally)?;
    Ok(PlanRunEnd::Ran(PlanRunSummary {
        group: id,
        closed,
        tally,
        elapsed: started.elapsed(),
    }))
}
