//! A run's load: checked before anything is opened ([`check_load`]), started before the
//! probe measures, its exits polled while it does, stopped before anything else can
//! fail (and by its guard on every other path).

use std::path::{Path, PathBuf};

use load::{LoadCommand, LoadContext, LoadSpec};
use results::records::load::{Load, LoadExit, LoadProcess};
use results::records::Record;
use results::{Event, RunId, RunSink};
use serde_json::{json, Value};

use crate::Failure;

/// The load context for a run: loads tagged with this process and the time, built-in
/// loads run (and tools supervised) by `load_exe`, the disk load writing in `scratch`.
pub fn load_context(load_exe: Option<PathBuf>, scratch: &Path) -> LoadContext {
    let nanos = engine::clock::realtime_ns();
    LoadContext {
        supervisor: load_exe.clone(),
        self_exe: load_exe,
        scratch_dir: scratch.to_path_buf(),
        tag: format!("audiolat-{}-{nanos}", std::process::id()),
        cpus: engine::rt::online_cpus().len(),
        placements: Default::default(),
    }
}

/// Why a load cannot be run here, found before anything starts.
#[derive(Debug, thiserror::Error)]
pub enum LoadRefusal {
    /// UDP streams (flood, stream) aimed at the network probe's host, in a run that has
    /// none.
    #[error("the load's UDP streams (flood, stream) need the network probe's host")]
    NetItems,
    /// Items placed in cells, in a run that has no cells.
    #[error("the load places items in cells, but this run has no cells")]
    Cells,
    /// A tool is missing, or the scratch directory unusable.
    #[error(transparent)]
    Plan(load::LoadError),
}

/// Checks that `spec` can start here for a run without cells or a network host (every
/// tool installed, `scratch` usable) without starting it.
pub fn check_load(spec: &LoadSpec, scratch: &Path) -> Result<(), LoadRefusal> {
    if spec.has_net_items() {
        return Err(LoadRefusal::NetItems);
    }
    if spec.cells.iter().any(Option::is_some) {
        return Err(LoadRefusal::Cells);
    }
    check_net_load(spec, scratch)
}

/// [`check_load`] for the network probe, which runs the UDP streams itself and has
/// cells: only the tools and the scratch directory are checked.
pub fn check_net_load(spec: &LoadSpec, scratch: &Path) -> Result<(), LoadRefusal> {
    let lctx = load_context(std::env::current_exe().ok(), scratch);
    load::plan(spec, &lctx).map_err(LoadRefusal::Plan)?;
    Ok(())
}

/// The load as a run stores it: its spec and its `commands`, each with its process
/// group (`None`: planned, not started).
pub(crate) fn load_record<'a>(
    spec: &LoadSpec,
    commands: impl Iterator<Item = (&'a LoadCommand, Option<i32>)>,
) -> Load {
    Load {
        spec: spec.to_string(),
        processes: Some(
            commands
                .map(|(c, pgid)| LoadProcess {
                    item: c.item.to_string(),
                    command: c.command_line(),
                    version: c.version.clone(),
                    pgid,
                })
                .collect(),
        ),
        tag: None,
        exits: None,
    }
}

/// A running load as its run stores it: its processes and its tag.
fn running_record(r: &load::RunningLoad) -> Load {
    Load {
        tag: Some(r.tag().to_string()),
        ..load_record(r.spec(), r.processes().map(|(c, pid)| (c, Some(pid))))
    }
}

/// A load started for a run: its exits are polled while the run goes on. Dropped
/// without [`RunLoad::stop`] (an error, a panic), its processes are stopped all the same
/// ([`load::RunningLoad`] stops them when dropped).
#[derive(Debug)]
pub struct RunLoad {
    running: Option<load::RunningLoad>,
    spec: LoadSpec,
    exits: Vec<Event>,
}

impl RunLoad {
    /// Starts `spec` (nothing for `none`).
    pub fn begin(spec: &LoadSpec, lctx: &LoadContext) -> Result<RunLoad, load::LoadError> {
        let running = if spec.is_none() {
            None
        } else {
            Some(load::start(spec, lctx)?)
        };
        Ok(RunLoad {
            running,
            spec: spec.clone(),
            exits: Vec::new(),
        })
    }

    /// Stores the running load's description with run `run_id` (nothing for `none`).
    pub fn store(&self, sink: &dyn RunSink, run_id: RunId) -> Result<(), Failure> {
        match &self.running {
            Some(r) => sink
                .update_run(run_id, Some(&running_record(r).to_json()), None)
                .map_err(Failure::Storage),
            None => Ok(()),
        }
    }

    /// Notes load processes that ended on their own.
    pub fn poll(&mut self) {
        if let Some(r) = self.running.as_mut() {
            for exit in r.poll_exits() {
                self.exits.push(Event {
                    mono_ns: engine::clock::monotonic_ns(),
                    kind: "load_exit".into(),
                    detail: json!({"item": exit.item, "pgid": exit.pid, "status": exit.status,
                                   "stderr_tail": exit.stderr_tail}),
                });
            }
        }
    }

    /// Stops the load; its description with the exits, and the exit events.
    pub fn stop(mut self) -> (Value, Vec<Event>) {
        let record = match self.running.take() {
            Some(r) => {
                let mut record = running_record(&r);
                let exits = r.stop().exits.into_iter().map(|e| LoadExit {
                    item: e.item,
                    pgid: e.pid,
                    status: e.status,
                    early: e.early,
                    stderr_tail: e.stderr_tail,
                });
                record.exits = Some(exits.collect());
                record
            }
            None => load_record(&self.spec, std::iter::empty()),
        };
        (record.to_json(), self.exits)
    }
}
