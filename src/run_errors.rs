//! The runner's errors for the user: a refusal is a usage error (exit 2) in the words of
//! the flags that asked for it (`--load`, `--cell`), a store's error keeps its type, a
//! failed run says its id (the exit codes themselves are `process`'s).

use anyhow::Result;
use load::{LoadError, LoadSpec};
use results::SinkError;
use runner::{Failure, LoadRefusal, RunError};

use crate::cli::UsageError;

/// A run error from the lifecycle, for the user: a refusal is a usage error (exit 2);
/// a store's error keeps its type (an unusable database is exit 2 too); a failed run
/// says its id.
pub fn run_error(e: RunError) -> anyhow::Error {
    fn sink(e: SinkError) -> anyhow::Error {
        match e {
            SinkError::Store(e) => e.into(),
            other => other.into(),
        }
    }
    match e {
        RunError::Refused(why) => UsageError(why).into(),
        RunError::CellsRefused(e) => cells_refusal(e).into(),
        RunError::Begin(e) => sink(e),
        RunError::Stopped => crate::process::NothingMeasured.into(),
        RunError::Failed { run_id, failure } => match failure {
            Failure::Probe(e) => anyhow::Error::from_boxed(e.into_inner()),
            Failure::Load(e) => load_error(e).context("starting the load"),
            Failure::Storage(e) => sink(e),
            failure @ Failure::Panicked(_) => failure.into(),
        }
        .context(format!("run {run_id} failed")),
    }
}

/// Checks that a load can start here (every tool installed, scratch directory usable)
/// without starting it. A problem is a usage error: nothing has been written yet.
pub fn check_load(spec: &LoadSpec, scratch: &std::path::Path) -> Result<()> {
    runner::check_load(spec, scratch).map_err(|e| load_refusal(e).into())
}

/// Checks that every gate's metric can be measured here: a gate on a cause
/// (`why.thread:NAME`) where the kernel cannot be traced is refused, in one line, before
/// anything runs (the run would be measured without causes, and the gate never judged).
pub fn check_gates_measurable(gates: &[results::gate::Gate]) -> Result<()> {
    match runner::gates::unmeasurable_here(gates) {
        Some((gate, why)) => Err(UsageError(format!(
            "--fail-if '{}': its cause cannot be measured: the run would not be traced ({why})",
            gate.expr
        ))
        .into()),
        None => Ok(()),
    }
}

/// [`check_load`] for the network probe, which runs a `flood` itself.
pub fn check_net_load(spec: &LoadSpec, scratch: &std::path::Path) -> Result<()> {
    runner::check_net_load(spec, scratch).map_err(|e| load_refusal(e).into())
}

/// A load that cannot run here, in the words of `--load`.
fn load_refusal(e: LoadRefusal) -> UsageError {
    UsageError(match e {
        LoadRefusal::NetItems => "--load flood and stream are UDP streams aimed at the network probe's host: use them with audiolat net".into(),
        LoadRefusal::Cells => "cells (load@cell) are for audiolat net so far: leave out the @cell".into(),
        LoadRefusal::Plan(e) => load_message(&e),
    })
}

/// A load error for the user: [`load_message`]'s words where they differ from the
/// library's, else the error itself (with its causes).
fn load_error(e: LoadError) -> anyhow::Error {
    match e {
        LoadError::BadScratch(_)
        | LoadError::UnknownCell { .. }
        | LoadError::ForkInDeadlineCell { .. } => anyhow::anyhow!(load_message(&e)),
        other => anyhow::Error::new(other),
    }
}

/// A load error in the words of the flags that asked for the load.
pub fn load_message(e: &LoadError) -> String {
    match e {
        LoadError::BadScratch(dir) => format!(
            "disk load scratch directory {} is not a writable directory: pass one with --scratch-dir",
            dir.display()
        ),
        LoadError::UnknownCell { item, cell } => format!(
            "load '{item}' is placed in cell '{cell}', which no --cell or --cells defines"
        ),
        // "load X@cell: ..." is what `--load X@cell` asked for.
        LoadError::ForkInDeadlineCell { .. } => format!("--{e}"),
        other => other.to_string(),
    }
}

/// A refusal of a run's cells, in the words of the flags that placed the loads.
pub fn cells_refusal(e: qos::PlanError) -> UsageError {
    match e {
        qos::PlanError::NoSuchCell { load, cell } => UsageError(format!(
            "--load {load}@{cell}: no such cell; define it with --cell {cell}=KIND:... or in --cells"
        )),
        qos::PlanError::ForksInDeadlineCell { load, cell, kind } => UsageError(format!(
            "--load {load}@{cell}: {cell} is a SCHED_DEADLINE cell ({kind}), whose tasks may not fork: only the built-in loads (video, ep) can run there; place the others in dedicated or best-effort cells"
        )),
        qos::PlanError::NoShapedLink { reserved } => UsageError(format!(
            "admission: cells reserve bandwidth ({reserved}) but the run has no shaped link; use --link"
        )),
        qos::PlanError::Refused(why) => UsageError(why),
    }
}
