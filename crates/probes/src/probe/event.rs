//! The event probe behind [`Probe`]: [`crate::event::run`] on an opened stream, its
//! trigger rows and under-runs handed over as they come.

use std::sync::atomic::AtomicBool;

use engine::audio::Backend;
use results::records::event::EventConfigRecord;
use results::records::qos::QosRequested;
use results::records::stream::AlsaGrantedRecord;
use results::records::Record;
use serde_json::json;

use crate::event::{
    self, stream_config_record, EventConfig, EventEnd, EventOutcome, TriggerSummary,
};
use crate::probe::{
    Description, End, LiveStatus, Outcome, Probe, ProbeError, Progress, Tally, RECOVERY_KEY,
};

/// The event probe on an opened stream; after a run, its typed outcome.
pub struct EventProbe<'a> {
    stream: &'a mut dyn Backend,
    config: EventConfig,
    granted: Option<AlsaGrantedRecord>,
    outcome: Option<EventOutcome>,
}

impl<'a> EventProbe<'a> {
    /// The event probe for `config` on `stream`; `granted` is what an ALSA device
    /// granted (stored with the run), when the stream is ALSA's.
    pub fn new(
        stream: &'a mut dyn Backend,
        config: EventConfig,
        granted: Option<AlsaGrantedRecord>,
    ) -> EventProbe<'a> {
        EventProbe {
            stream,
            config,
            granted,
            outcome: None,
        }
    }
}

impl crate::probe::KeepsOutcome for EventProbe<'_> {
    type Outcome = EventOutcome;

    fn take_outcome(&mut self) -> Option<EventOutcome> {
        self.outcome.take()
    }
}

impl Probe for EventProbe<'_> {
    fn describe(&self) -> Description {
        let sinfo = self.stream.info();
        let config = EventConfigRecord {
            stream: stream_config_record(sinfo, self.granted.clone()),
            device: Some(sinfo.client_name.clone()),
            ..self.config.record()
        }
        .to_json();
        let summary = TriggerSummary::new(&self.config, sinfo);
        Description {
            probe: &results::probe_kind::EVENT,
            config,
            qos_requested: QosRequested {
                trigger_thread: Some(self.config.trigger_policy.to_string()),
                lock_memory: Some(self.config.lock_memory),
                audio_thread: Some(sinfo.audio_thread_requested(false).to_string()),
                ..QosRequested::default()
            }
            .to_json(),
            result_while_running: Some(
                json!({RECOVERY_KEY: {"event_triggers": summary.to_json()}}),
            ),
        }
    }

    /// Trigger rows and under-runs are handed over every ~50 ms.
    fn measure(
        &mut self,
        stop: &AtomicBool,
        progress: &mut dyn Progress,
    ) -> Result<Outcome, ProbeError> {
        let wanted = self.config.triggers;
        let graph = super::pipewire_graph::start(self.stream.info());
        let mut outcome = event::run(self.stream, &self.config, stop, |p| {
            if !p.rows.is_empty() {
                progress.triggers(p.rows);
            }
            if !p.events.is_empty() {
                progress.events(p.events);
            }
            progress.status(&LiveStatus::Event {
                measured: p.measured,
                wanted,
                cycles: p.cycles,
                underruns: p.underruns,
                culprit: p.culprit.clone(),
            });
            progress.tick()
        })
        .map_err(ProbeError::new)?;
        outcome.server_graph = super::pipewire_graph::finish(graph);
        let stored = Outcome {
            measurements: outcome.measurements(),
            // Its under-runs were handed over as they came.
            events: Vec::new(),
            series: Vec::new(),
            qos_granted: outcome.qos_granted(),
            flags: outcome.flags(),
            result: outcome.result_json(),
            end: match &outcome.end {
                // Key presses that ended before the first one: nothing was measured,
                // which is no complete run.
                EventEnd::Complete
                    if outcome.rows.is_empty()
                        && self.config.source == crate::event::TriggerSource::Key =>
                {
                    End::Failed(crate::event::NO_KEY_PRESSED.into())
                }
                EventEnd::Complete => End::Complete,
                EventEnd::Interrupted => End::Interrupted,
                EventEnd::ServerGone(r) => End::StreamGone(r.clone()),
                EventEnd::Panicked(p) => End::Panicked(p.clone()),
            },
            measured: Some(Tally {
                count: outcome.rows.len(),
                noun: "triggers",
            }),
        };
        self.outcome = Some(outcome);
        Ok(stored)
    }
}
