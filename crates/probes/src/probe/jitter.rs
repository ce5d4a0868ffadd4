//! The jitter probe behind [`Probe`]: [`crate::jitter::run`] with its checkpoints.

use std::sync::atomic::AtomicBool;

use results::records::qos::QosRequested;
use results::records::Record;

use crate::jitter::{self, JitterConfig, JitterOutcome, LoopEnd};
use crate::probe::{Description, End, LiveStatus, Outcome, Probe, ProbeError, Progress};

/// The jitter probe with its configuration; after a run, its typed outcome.
#[derive(Debug)]
pub struct JitterProbe {
    config: JitterConfig,
    outcome: Option<JitterOutcome>,
}

impl JitterProbe {
    /// A jitter probe for `config`.
    pub fn new(config: JitterConfig) -> JitterProbe {
        JitterProbe {
            config,
            outcome: None,
        }
    }
}

impl crate::probe::KeepsOutcome for JitterProbe {
    type Outcome = JitterOutcome;

    fn take_outcome(&mut self) -> Option<JitterOutcome> {
        self.outcome.take()
    }
}

impl Probe for JitterProbe {
    fn describe(&self) -> Description {
        let config = &self.config;
        Description {
            probe: &results::probe_kind::JITTER,
            config: config.to_json(),
            qos_requested: QosRequested {
                policy: Some(config.policy.to_string()),
                cpus: Some(config.cpus.as_ref().map(|c| engine::rt::format_cpu_list(c))),
                lock_memory: Some(config.lock_memory),
                cpu_dma_latency_us: Some(config.dma_latency.then_some(0)),
                ..QosRequested::default()
            }
            .to_json(),
            result_while_running: None,
        }
    }

    fn pinned_cpus(&self) -> Vec<usize> {
        self.config.cpus.clone().unwrap_or_default()
    }

    /// Checkpoints are the measurements so far; the stream-less probe measures on
    /// whatever [`Progress::tick`] says.
    fn measure(
        &mut self,
        stop: &AtomicBool,
        progress: &mut dyn Progress,
    ) -> Result<Outcome, ProbeError> {
        let config = &self.config;
        let outcome = jitter::run(config, stop, |p| {
            progress.status(&LiveStatus::Jitter(p.live));
            // The run is written as it goes: a checkpoint replaces the measurements so far.
            if let Some(totals) = p.checkpoint {
                progress.checkpoint(&jitter::measurements(config, totals, &[], true));
            }
            let _ = progress.tick();
        })
        .map_err(ProbeError::with_causes)?;
        let stored = Outcome {
            measurements: outcome.measurements(),
            events: outcome.events(),
            series: vec![outcome.series()],
            qos_granted: outcome.qos_granted(),
            flags: outcome.flags(),
            result: outcome.result_json(),
            end: match outcome.end {
                LoopEnd::Complete => End::Complete,
                LoopEnd::Interrupted => End::Interrupted,
            },
            measured: None,
        };
        self.outcome = Some(outcome);
        Ok(stored)
    }
}
