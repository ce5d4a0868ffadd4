//! Runs of one probe each, as the commands make them: a jitter run ([`jitter`]) and a
//! network run ([`net`], with its cells admitted first by [`admit_net`]), each returned
//! with the probe's typed outcome beside what the lifecycle stored, and its
//! [`results::RunView`] for the renderers.

use std::path::Path;

use load::LoadSpec;
use probes::jitter::{JitterConfig, JitterOutcome};
use probes::net::{NetConfig, NetOutcome};
use probes::probe::{JitterProbe, NetProbe};
use qos::CellPlan;
use results::{GroupId, Measurement, RunId, RunSink, RunStatus};
use serde_json::Value;

use crate::{Cell, Context, Kept, Observer, Run, RunError, Unobserved};

/// A jitter run, stored.
#[derive(Debug)]
pub struct JitterRun {
    /// Run id.
    pub run_id: RunId,
    /// How it ended.
    pub status: RunStatus,
    /// What was measured.
    pub outcome: JitterOutcome,
    /// The stored measurements.
    pub measurements: Vec<Measurement>,
    /// The load as run, with exits.
    pub load: Value,
    /// Validity flags as stored.
    pub flags: Value,
    /// Set when the run could not be stored whole (status `failed`), or was kept
    /// elsewhere: the reason, for the user.
    pub error: Option<String>,
    /// Where it is kept.
    pub kept: Kept,
}

impl JitterRun {
    /// The run's view, for the renderers `audiolat show` uses.
    pub fn view(&self) -> results::RunView {
        let closed = crate::view::Closed {
            run_id: self.run_id,
            status: self.status,
            flags: &self.flags,
            error: self.error.as_ref(),
        };
        crate::view::jitter(closed, &self.outcome, &self.measurements, &self.load)
    }
}

/// Runs the jitter probe as a stored run under `load` (its disk load writing in
/// `scratch`), its live status to `observer`. `group` ties it to a suite.
pub fn jitter(
    ctx: &Context,
    sink: &dyn RunSink,
    group: Option<GroupId>,
    config: &JitterConfig,
    load: &LoadSpec,
    scratch: &Path,
    observer: &dyn Observer,
) -> Result<JitterRun, RunError> {
    let mut cell = Cell {
        group,
        ..Cell::new(
            JitterProbe::new(config.clone()),
            load.clone(),
            scratch.to_path_buf(),
        )
    };
    let run = crate::run(ctx, sink, &mut cell, None, observer)?;
    Ok(JitterRun {
        run_id: run.run_id,
        status: run.status,
        outcome: measured(cell.probe.take_outcome()),
        measurements: run.measurements,
        load: run.load,
        flags: run.flags,
        error: run.error,
        kept: run.kept,
    })
}

/// A probe that measured keeps its outcome (the [`probes::probe::Probe`] contract).
fn measured<T>(outcome: Option<T>) -> T {
    outcome.expect("a probe that measured keeps its outcome")
}

/// A network-audio run, stored.
#[derive(Debug)]
pub struct NetRun {
    /// Run id.
    pub run_id: RunId,
    /// How it ended.
    pub status: RunStatus,
    /// What was measured.
    pub outcome: NetOutcome,
    /// The configuration.
    pub config: NetConfig,
    /// Background load.
    pub load: LoadSpec,
    /// Validity flags as stored.
    pub flags: Value,
    /// The cells as granted, if the run had any.
    pub cells: Option<Value>,
    /// Every cell was undone at the end.
    pub cells_undone: bool,
    /// Set when the run could not be stored whole (status `failed`), or was kept
    /// elsewhere: the reason, for the user.
    pub storage_error: Option<String>,
    /// Where it is kept.
    pub kept: Kept,
}

impl NetRun {
    /// A network run from the lifecycle's run and the probe's outcome.
    pub fn of(run: Run, outcome: NetOutcome, config: NetConfig, load: LoadSpec) -> NetRun {
        NetRun {
            run_id: run.run_id,
            status: run.status,
            outcome,
            config,
            load,
            flags: run.flags,
            cells: run.cells.as_ref().map(|c| c.granted.clone()),
            cells_undone: run.cells.as_ref().is_none_or(|c| c.undone()),
            storage_error: run.error,
            kept: run.kept,
        }
    }

    /// The run's view, for the renderers `audiolat show` uses.
    pub fn view(&self) -> results::RunView {
        let closed = crate::view::Closed {
            run_id: self.run_id,
            status: self.status,
            flags: &self.flags,
            error: self.storage_error.as_ref(),
        };
        let cells = crate::view::CellsGranted {
            granted: self.cells.as_ref(),
            undone: self.cells_undone,
        };
        crate::view::net(closed, &self.outcome, &self.config, &self.load, cells)
    }
}

/// Admission control for a network run, before anything starts: the CPUs its threads are
/// pinned to outside any cell held by no other audiolat's cell, then [`CellPlan::admit`]
/// with the host's threads and link of `config`.
pub fn admit_net(
    plan: &CellPlan,
    config: &NetConfig,
    load: &LoadSpec,
) -> Result<Option<qos::Admission>, qos::PlanError> {
    qos::partition::check_cpus_free(&config.pinned_cpus())
        .map_err(|e| qos::PlanError::Refused(e.to_string()))?;
    plan.admit(
        load,
        Some(config.host_threads()),
        config.link.map(|l| l.mbps),
    )
}

/// Runs the network probe (reference phase, then synth phase, over loopback) as a
/// stored run, its loads placed in `cells`.
pub fn net(
    ctx: &Context,
    sink: &dyn RunSink,
    group: Option<GroupId>,
    config: &NetConfig,
    load: &LoadSpec,
    cells: &CellPlan,
    scratch: &Path,
) -> Result<NetRun, RunError> {
    let mut cell = Cell {
        group,
        cells: Some(cells.clone()),
        ..Cell::new(
            NetProbe::new(config.clone()),
            load.clone(),
            scratch.to_path_buf(),
        )
    };
    let run = crate::run(ctx, sink, &mut cell, None, &Unobserved)?;
    let outcome = measured(cell.probe.take_outcome());
    Ok(NetRun::of(
        run,
        outcome,
        cell.probe.config().clone(),
        load.clone(),
    ))
}
