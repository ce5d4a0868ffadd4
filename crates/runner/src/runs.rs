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
use results::{GroupId, RunSink};

use crate::{Cell, Context, Observer, ProbeRun, RunError, Unobserved};

/// A jitter run, stored, with the probe's outcome.
pub type JitterRun = ProbeRun<JitterOutcome>;

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
    Ok(crate::with_outcome(run, &mut cell.probe))
}

/// A network-audio run, stored, with the probe's outcome.
pub type NetRun = ProbeRun<NetOutcome>;

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
    Ok(crate::with_outcome(run, &mut cell.probe))
}
