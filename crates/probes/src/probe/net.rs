//! The network probe behind [`Probe`]: [`crate::net::run`] (a reference phase, then a
//! synth phase, controller and host in this process), its host runtime placed in the
//! run's cells.
//!
//! The two ends of a two-machine run (`respond`, `emulate`) are not probes: they store
//! no load and no granted QoS, and their configuration has no load (see
//! `runner::end_run`).

use std::sync::atomic::AtomicBool;

use load::{LoadItem, LoadSpec};
use results::records::flags::Flags;
use results::records::qos::{MemoryLocked, QosGranted, QosRequested};
use results::records::Record;

use crate::net::{self, NetConfig, NetOutcome};
use crate::probe::{Description, End, Outcome, Probe, ProbeError, Progress};

/// The end reason of an interrupted network run.
const INTERRUPTED: &str =
    "interrupted by a signal (Ctrl-C, SIGTERM, a hang-up or SIGQUIT); the blocks measured are kept";

/// The network probe; after a run, its typed outcome.
#[derive(Debug)]
pub struct NetProbe {
    config: NetConfig,
    outcome: Option<NetOutcome>,
}

impl NetProbe {
    /// The network probe for `config`.
    pub fn new(config: NetConfig) -> NetProbe {
        NetProbe {
            config,
            outcome: None,
        }
    }

    /// Its configuration, with the host's cell and the stream's sink groups once the
    /// run's cells were entered.
    pub fn config(&self) -> &NetConfig {
        &self.config
    }
}

impl crate::probe::KeepsOutcome for NetProbe {
    type Outcome = NetOutcome;

    fn take_outcome(&mut self) -> Option<NetOutcome> {
        self.outcome.take()
    }
}

impl Probe for NetProbe {
    fn describe(&self) -> Description {
        Description {
            probe: &results::probe_kind::NET,
            config: self.config.record().to_json(),
            qos_requested: QosRequested {
                threads: Some(self.config.policy.to_string()),
                memory: Some("mlockall".into()),
                ..QosRequested::default()
            }
            .to_json(),
            result_while_running: None,
        }
    }

    /// Locks memory, then runs both phases. `net::run` reports no progress: the
    /// lifecycle is ticked once when it returns (the load's exits are polled then).
    fn measure(
        &mut self,
        stop: &AtomicBool,
        progress: &mut dyn Progress,
    ) -> Result<Outcome, ProbeError> {
        let memory = engine::rt::lock_memory();
        let result = net::run(&self.config, stop);
        // No stream of its own to lose: a tick's verdict does not end it.
        let _ = progress.tick();
        let outcome = result.map_err(ProbeError::new)?;
        let locked = memory.current && memory.future;
        let mut granted = QosGranted {
            memory_locked: Some(MemoryLocked::Locked(locked)),
            memory_refusal: Some(memory.refusal),
            ..QosGranted::default()
        };
        if let Some(p) = outcome.synth.as_ref().or(outcome.reference.as_ref()) {
            granted.host_net_thread = Some(p.host.net_thread.granted.to_string());
            granted.host_workers = Some(
                p.host
                    .worker_threads
                    .iter()
                    .map(|g| g.granted.to_string())
                    .collect(),
            );
            granted.controller_sender = Some(p.controller.sender_thread.granted.to_string());
            granted.refusal = Some(p.host.net_thread.refusal.clone());
        }
        let mut flags = outcome.flags();
        Flags {
            memory_locked: Some(locked),
            ..Flags::default()
        }
        .add_to(&mut flags);
        let phase_error = outcome
            .reference
            .iter()
            .chain(outcome.synth.iter())
            .find_map(|p| p.host.error.clone().or(p.controller.error.clone()));
        let end = if outcome.interrupted {
            End::InterruptedSaying(INTERRUPTED.to_string())
        } else if let Some(e) = phase_error {
            End::Failed(e)
        } else {
            End::Complete
        };
        let stored = Outcome {
            measurements: outcome.measurements(),
            events: Vec::new(),
            series: outcome.series(),
            qos_granted: granted.to_json(),
            flags,
            result: outcome.result_record().to_json(),
            end,
            measured: None,
        };
        self.outcome = Some(outcome);
        Ok(stored)
    }

    fn host_threads(&self) -> Option<qos::HostThreads> {
        Some(self.config.host_threads())
    }

    fn link_mbps(&self) -> Option<f64> {
        self.config.link.map(|l| l.mbps)
    }

    fn pinned_cpus(&self) -> Vec<usize> {
        self.config.pinned_cpus()
    }

    /// The host's runtime goes in the plan's host cell; the stream's sink joins the
    /// stream load's cell.
    fn enter_cells(
        &mut self,
        cells: &[qos::partition::PlacedCell],
        plan: &qos::CellPlan,
        load: &LoadSpec,
    ) {
        let cell = |name: &str| cells.iter().find(|c| c.cell.name == name);
        self.config.host_cell = plan.host_cell.as_deref().and_then(cell).cloned();
        if let Some(stream) = self.config.stream.as_mut() {
            let item = LoadItem::Stream { mbps: None };
            if let Some(c) = load.cell_of(&item).and_then(cell) {
                stream.sink_groups = c.tasks_files();
            }
        }
    }
}
