//! The round-trip probe behind [`Probe`]: [`crate::roundtrip::run`] on an opened
//! full-duplex stream, with its checkpoints.

use std::sync::atomic::AtomicBool;

use engine::audio::Backend;
use results::records::qos::QosRequested;
use results::records::roundtrip::RoundtripConfigRecord;
use results::records::stream::AlsaGrantedRecord;
use results::records::Record;

use crate::event::stream_config_record;
use crate::probe::{Description, End, LiveStatus, Outcome, Probe, ProbeError, Progress, Tally};
use crate::roundtrip::{self, RoundtripConfig, RoundtripEnd, RoundtripOutcome};

/// The round-trip probe on an opened stream; after a run, its typed outcome.
pub struct RoundtripProbe<'a> {
    stream: &'a mut dyn Backend,
    config: RoundtripConfig,
    loop_description: String,
    granted: Option<AlsaGrantedRecord>,
    outcome: Option<RoundtripOutcome>,
}

impl<'a> RoundtripProbe<'a> {
    /// The round-trip probe for `config` on `stream`, whose loop is closed as
    /// `loop_description` says (for people: "software loop in the JACK server");
    /// `granted` is what an ALSA device granted, when the stream is ALSA's.
    pub fn new(
        stream: &'a mut dyn Backend,
        config: RoundtripConfig,
        loop_description: String,
        granted: Option<AlsaGrantedRecord>,
    ) -> RoundtripProbe<'a> {
        RoundtripProbe {
            stream,
            config,
            loop_description,
            granted,
            outcome: None,
        }
    }
}

impl crate::probe::KeepsOutcome for RoundtripProbe<'_> {
    type Outcome = RoundtripOutcome;

    fn take_outcome(&mut self) -> Option<RoundtripOutcome> {
        self.outcome.take()
    }
}

impl Probe for RoundtripProbe<'_> {
    fn describe(&self) -> Description {
        let sinfo = self.stream.info();
        let c = &self.config;
        Description {
            probe: &results::probe_kind::ROUNDTRIP,
            config: RoundtripConfigRecord {
                stream: stream_config_record(sinfo, self.granted.clone()),
                capture_latency_frames: sinfo.capture_latency_frames.map(u64::from),
                playback_ports: Some(sinfo.playback_ports.clone()),
                capture_port: sinfo.capture_port.clone(),
                loop_description: Some(self.loop_description.clone()),
                duration_ms: Some(c.duration_ms),
                every_periods: c.every_periods.map(u64::from),
                impulses: Some(u64::from(c.impulses)),
                insert_delay_frames: Some(u64::from(c.insert_delay_frames)),
                level: Some(f64::from(c.peak)),
                max_delay_frames: c.max_delay_frames,
                lock_memory: Some(c.lock_memory),
                tone_period_frames: Some(c.tone_period(sinfo) as u64),
                why_above_ns: c.why.map(|w| w.above_ns),
            }
            .to_json(),
            qos_requested: QosRequested {
                audio_thread: Some(sinfo.audio_thread_requested(true).to_string()),
                ..QosRequested::default()
            }
            .to_json(),
            result_while_running: None,
        }
    }

    /// Checkpoints are the measurements so far.
    fn measure(
        &mut self,
        stop: &AtomicBool,
        progress: &mut dyn Progress,
    ) -> Result<Outcome, ProbeError> {
        let mut last: Option<f64> = None;
        let mut windows = 0usize;
        let graph = super::pipewire_graph::start(self.stream.info());
        let mut outcome = roundtrip::run(self.stream, &self.config, stop, |p| {
            // The run is written as it goes: a checkpoint replaces the measurements so far.
            if let Some(so_far) = p.checkpoint {
                progress.checkpoint(&so_far.measurements());
            }
            windows += p.estimates.len();
            if let Some(e) = p
                .estimates
                .iter()
                .rev()
                .find(|e| e.estimate.verdict == dsp::loopdelay::Verdict::Ok)
            {
                last = Some(e.estimate.delay_frames);
            }
            progress.status(&LiveStatus::Roundtrip {
                windows,
                last_delay_frames: last,
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
            events: outcome.events.clone(),
            series: outcome.series(),
            qos_granted: outcome.qos_granted(),
            flags: outcome.flags(),
            result: outcome.result_json(),
            end: match &outcome.end {
                RoundtripEnd::Complete => End::Complete,
                // Nothing came back: nothing was measured, which is no complete run (its
                // verdict line says why).
                RoundtripEnd::NoSignal => End::Failed(outcome.verdict_line()),
                RoundtripEnd::Interrupted => End::Interrupted,
                RoundtripEnd::ServerGone(r) => End::StreamGone(r.clone()),
                RoundtripEnd::Panicked(p) => End::Panicked(p.clone()),
            },
            measured: Some(Tally {
                count: outcome.estimates.len(),
                noun: "windows",
            }),
        };
        self.outcome = Some(outcome);
        Ok(stored)
    }
}
