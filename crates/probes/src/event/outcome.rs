//! What an event run measured ([`EventOutcome`]) as the results model has it, and the summary of stored trigger rows ([`TriggerSummary`]).

use super::*;
use results::records::event::{EventResultRecord, EventUnderrunsRecord, FixedReplacementRecord};
use results::records::flags::Flags;
use results::records::qos::{MemoryLocked, QosGranted, ThreadGrant};
use results::records::stream::{
    AlsaGrantedRecord, ConfiguredServerRecord, DuplexStartRecord, ServerRecord, StreamConfigRecord,
    StreamRecord,
};
use results::records::{Record, StatsRecord};

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventEnd {
    /// Every trigger measured.
    Complete,
    /// Stopped early by the stop flag (Ctrl-C).
    Interrupted,
    /// The audio server went away.
    ServerGone(String),
    /// The processor panicked.
    Panicked(String),
}

/// What the caller gets while the run goes on (about every 50 ms).
pub struct EventProgress<'a> {
    /// Trigger rows completed since the last call.
    pub rows: &'a [TriggerRow],
    /// Events (under-runs) since the last call.
    pub events: &'a [Event],
    /// Triggers measured so far.
    pub measured: u64,
    /// Cycles so far.
    pub cycles: u64,
    /// Under-runs so far (xruns plus skipped cycles).
    pub underruns: u64,
    /// With `--why`: the largest culprit so far.
    pub culprit: Option<results::LiveCulprit>,
}

/// Everything one run measured.
#[derive(Debug)]
pub struct EventOutcome {
    /// The configuration.
    pub config: EventConfig,
    /// The stream.
    pub info: StreamInfo,
    /// On a PipeWire: the graph's record around the run (`server.graph` in the result;
    /// see `engine::pipewire::graph`), `None` elsewhere.
    pub server_graph: Option<results::records::graph::GraphRecord>,
    /// How it ended.
    pub end: EventEnd,
    /// One row per measured trigger.
    pub rows: Vec<TriggerRow>,
    /// Cycles run.
    pub cycles: u64,
    /// Callback start minus the cycle's checked start, per cycle that started at or
    /// after it.
    pub lateness: LatencyHistogram,
    /// Checked cycle start minus callback start, per cycle whose callback started before
    /// it (within the start check's tolerance: the checked start is the backend's where
    /// it agreed with the callbacks, and JACK's may lie a few microseconds after them).
    pub early: LatencyHistogram,
    /// Time in the processor per cycle.
    pub dsp: LatencyHistogram,
    /// Cycles whose processor time exceeded the period.
    pub dsp_misses: u64,
    /// Cycles whose start was not known (just after a discontinuity): left out of
    /// `lateness` and `early`.
    pub cycles_timing_unknown: u64,
    /// Under-runs the server reported (xruns) before the first trigger, and after.
    pub xruns: (u64, u64),
    /// Cycles the stream skipped (frame gaps) before the first trigger, and after. The
    /// dummy driver's xruns skip cycles, so these mostly come with the xruns above; they
    /// are not added to them.
    pub gaps: (u64, u64),
    /// Xrun and skipped-cycle events with their times.
    pub underrun_events: Vec<Event>,
    /// Triggers that could not be handed to the audio thread or scheduled.
    pub dropped: u64,
    /// MIDI events that were malformed or did not fit.
    pub midi_dropped: u64,
    /// Loopback onsets given to a later note than the oldest awaited (whose onset was
    /// then taken as lost), each after an under-run or skipped cycle.
    pub onsets_moved: u64,
    /// Cycle records the reader lost.
    pub records_dropped: u64,
    /// The stream's own counts where its backend keeps them (`None`: not counted):
    /// native PipeWire cycles whose capture had not arrived, restarts of a JACK server's
    /// frame count.
    pub unmatched_captures: Option<u64>,
    /// See `unmatched_captures`.
    pub frame_count_restarts: Option<u64>,
    /// Cycles longer than the prepared period (rendered silent).
    pub oversized_cycles: u64,
    /// Debug builds with `assert_no_alloc`'s allocator: allocations on the audio thread.
    pub alloc_violations: u64,
    /// The trigger thread's scheduling, when there was one.
    pub trigger_thread: Option<ThreadRt>,
    /// The audio (process) thread's scheduling, as it read it in its first cycle.
    pub audio_thread: Option<engine::rt::Policy>,
    /// How a full-duplex ALSA device (with a loopback capture) started.
    pub duplex_start: Option<DuplexStart>,
    /// Memory lock granted.
    pub memory_locked: bool,
    /// Host steal through the run.
    pub steal: StealTimeline,
    /// Stream start and end, CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    /// When the run ended.
    pub end_ns: u64,
    /// First trigger time.
    pub first_trigger_ns: Option<u64>,
    /// Fixed policy: per note placed by its trigger's time, how far (in frames) its
    /// placement on the rendering cycle's time line moved from its first placement (on
    /// the time line of the cycle that first saw the trigger). Empty for other notes.
    pub fixed_shifts_frames: Vec<f64>,
    /// What the kernel's trace said of the late callbacks (`--why`), or why it could not.
    pub why: Option<crate::why::WhyOutcome>,
}

/// The model's mean latency of `config`'s policy on a stream (see
/// [`EventOutcome::model_latency_ns`]).
pub(super) fn model_latency_ns(config: &EventConfig, info: &StreamInfo) -> f64 {
    let p = info.period_ns();
    let base = info.buffer_ns();
    match config.policy {
        NotePolicy::Fixed => p + base,
        NotePolicy::Asap => p / 2.0 + base,
    }
}

/// The model method's words for the sink's quantum the ports do not report, if any.
fn unreported_text(info: &StreamInfo) -> String {
    info.unreported_sink_frames().map_or_else(String::new, |q| {
        format!(" the ports report + {q} frames, the PipeWire sink's quantum they do not report (the sink takes a cycle's output in the next cycle)")
    })
}

/// How a run's trigger rows become its trigger measurements (`event_latency` and, with a
/// loopback, `event_latency_loopback`): what they need of the configuration and the
/// stream, known once the stream is open. A run stores it at its start, so the rows a
/// killed run stored can be summarised later as the live run would have.
#[derive(Clone, Debug, PartialEq)]
pub struct TriggerSummary {
    /// The model latency's method.
    pub model_method: String,
    /// The loopback latency's method.
    pub loopback_method: String,
    /// Playback latency, ns.
    pub buffer_ns: f64,
    /// The model's mean latency, ns.
    pub model_mean_ns: f64,
}

impl TriggerSummary {
    /// The summary of `config` on a stream described by `info`.
    pub fn new(config: &EventConfig, info: &StreamInfo) -> TriggerSummary {
        TriggerSummary {
            model_method: format!(
                "{} trigger -> first sample at the DAC by the {} timing model (cycle start from the server, checked against the callbacks, + offset/rate + {} frames playback latency{}), {} policy",
                config.source,
                info.backend,
                info.playback_latency_frames,
                unreported_text(info),
                config.policy
            ),
            loopback_method: format!(
                "onset found in the loopback capture from {} (threshold {} of the note's first sample), minus {}",
                info.capture_port.as_deref().unwrap_or("?"),
                config.loopback_threshold,
                info.capture_latency_frames.map_or("the capture latency, which the stream did not report (so none measured)".into(), |f| format!("{f} frames capture latency"))
            ),
            buffer_ns: info.buffer_ns(),
            model_mean_ns: model_latency_ns(config, info),
        }
    }

    /// As stored with a run.
    pub fn to_json(&self) -> Value {
        json!({
            "model_method": self.model_method,
            "loopback_method": self.loopback_method,
            "buffer_ns": self.buffer_ns,
            "model_mean_ns": self.model_mean_ns,
        })
    }

    /// Read back from [`TriggerSummary::to_json`]; `None` when something is missing.
    pub fn from_json(v: &Value) -> Option<TriggerSummary> {
        Some(TriggerSummary {
            model_method: v["model_method"].as_str()?.to_string(),
            loopback_method: v["loopback_method"].as_str()?.to_string(),
            buffer_ns: v["buffer_ns"].as_f64()?,
            model_mean_ns: v["model_mean_ns"].as_f64()?,
        })
    }

    /// The trigger measurements of `rows`: the model latency over the triggers that
    /// sounded, with its wait and lateness parts, and the loopback latency when any row
    /// has one.
    pub fn measurements(&self, rows: &[TriggerRow]) -> Vec<Measurement> {
        let sounded = || rows.iter().filter(|r| r.sounded());
        let hist_from_rows = |f: &dyn Fn(&TriggerRow) -> Option<i64>| {
            let mut h = LatencyHistogram::new(10_000_000_000).expect("10 s bound is valid");
            for r in rows {
                if let Some(v) = f(r) {
                    h.record(v.max(0) as u64);
                }
            }
            h
        };
        let mut out = Vec::new();
        let mut m = Measurement::from_histogram(
            "event",
            "event_latency",
            &self.model_method,
            hist_from_rows(&|r| r.latency_ns.filter(|_| r.sounded())),
        );
        // The latency histogram holds only positive values; the wait can be negative (a
        // trigger that arrived after its cycle's nominal start, before the callback), so
        // its statistics are kept exact, not as a histogram that would clamp them.
        m.detail = json!({
            "exact": Stats::of(sounded().filter_map(|r| r.latency_ns.map(|v| v as f64))).to_json(),
            "wait_ns": Stats::of(sounded().filter_map(|r| r.wait_ns.map(|v| v as f64))).to_json(),
            "rendering_callback_lateness_ns": Stats::of(sounded().filter_map(|r| r.lateness_ns.map(|v| v as f64))).to_json(),
            "buffer_ns": self.buffer_ns,
            "model_mean_ns": self.model_mean_ns,
            "late_triggers": rows.iter().filter(|r| r.late).count() as u64,
            "missed_triggers": rows.iter().filter(|r| r.missed).count() as u64,
            "timing_unknown_triggers": rows.iter().filter(|r| r.timing_unknown()).count() as u64,
            "timing_from_callbacks_triggers": rows.iter().filter(|r| r.timing == "callbacks").count() as u64,
        });
        out.push(m);
        if rows.iter().any(|r| r.measured_ns.is_some()) {
            let mut l = Measurement::from_histogram(
                "event",
                "event_latency_loopback",
                &self.loopback_method,
                hist_from_rows(&|r| r.measured_ns),
            );
            l.detail = json!({"exact": Stats::of(rows.iter().filter_map(|r| r.measured_ns.map(|m| m as f64))).to_json(),
                              "not_found": rows.iter().filter(|r| r.measured_ns.is_none()).count()});
            out.push(l);
        }
        out
    }
}

impl EventOutcome {
    /// The model's mean latency for this policy: `fixed` one period plus the playback
    /// latency; `asap` half a period plus the playback latency (the wait for the next
    /// cycle is uniform over a period). MIDI in `asap` mode waits a period minus the
    /// offset, which has the same mean.
    pub fn model_latency_ns(&self) -> f64 {
        model_latency_ns(&self.config, &self.info)
    }

    /// The triggers whose note could sound at its modelled time (not
    /// [`TriggerRow::missed`]) and whose rendering cycle's start is known (not
    /// [`TriggerRow::timing_unknown`]): every latency figure and its decomposition is over
    /// these.
    pub fn sounded(&self) -> impl Iterator<Item = &TriggerRow> {
        self.rows.iter().filter(|r| r.sounded())
    }

    /// Statistics of the model latency over the [`sounded`](Self::sounded) triggers.
    pub fn latency(&self) -> Stats {
        Stats::of(
            self.sounded()
                .filter_map(|r| r.latency_ns.map(|v| v as f64)),
        )
    }

    /// Triggers whose rendering callback started after its cycle's deadline (an under-run).
    pub fn missed(&self) -> u64 {
        self.rows.iter().filter(|r| r.missed).count() as u64
    }

    /// Triggers whose rendering cycle's start was not known (just after a discontinuity
    /// such as an xrun): no timing figure was measured for them.
    pub fn timing_unknown(&self) -> u64 {
        self.rows.iter().filter(|r| r.timing_unknown()).count() as u64
    }

    /// Statistics of the loopback-measured latency.
    pub fn measured(&self) -> Stats {
        Stats::of(
            self.rows
                .iter()
                .filter_map(|r| r.measured_ns.map(|m| m as f64)),
        )
    }

    /// Triggers whose frame had passed before the audio thread saw them (fixed policy).
    pub fn late(&self) -> u64 {
        self.rows.iter().filter(|r| r.late).count() as u64
    }

    /// The fixed policy's re-placements (`fixed_replacement` in the result): notes placed
    /// by their time, those moved by more than half a frame between their first placement
    /// and the rendering cycle's, and the median and largest move (absolute, frames);
    /// `None` when no note was placed by its time.
    pub fn fixed_replacement(&self) -> Option<FixedReplacementRecord> {
        let shifts = &self.fixed_shifts_frames;
        if shifts.is_empty() {
            return None;
        }
        let abs = Stats::of(shifts.iter().map(|s| s.abs()));
        Some(FixedReplacementRecord {
            notes: Some(shifts.len() as u64),
            moved_over_half_frame: Some(shifts.iter().filter(|s| s.abs() > 0.5).count() as u64),
            shift_median_frames: Some(Stats::of(shifts.iter().copied()).median),
            shift_abs_max_frames: Some(abs.max),
        })
    }

    /// The audio thread ran at a real-time policy, and so did the trigger thread (when
    /// there was one).
    pub fn realtime(&self) -> bool {
        self.audio_thread.is_some_and(|p| p.is_realtime())
            && self.trigger_thread.as_ref().is_none_or(|t| t.is_realtime())
    }

    /// How this run's trigger rows become measurements.
    pub fn trigger_summary(&self) -> TriggerSummary {
        TriggerSummary::new(&self.config, &self.info)
    }

    /// Measurements: event latency (model), its wait part, loopback latency, cycle
    /// lateness and DSP time per cycle.
    pub fn measurements(&self) -> Vec<Measurement> {
        let mut out = self.trigger_summary().measurements(&self.rows);
        let mut lat = Measurement::from_histogram(
            "event",
            "callback_lateness",
            "per cycle: callback start - the cycle's start (the server's where it agreed with the callbacks, else the lower envelope of the callbacks on the frame clock; cycles just after a discontinuity, whose start is not known, are left out)",
            self.lateness.clone(),
        );
        lat.detail = json!({"cycles_early": self.early.count(),
                            "cycles_timing_unknown": self.cycles_timing_unknown});
        out.push(lat);
        if self.early.count() > 0 {
            out.push(Measurement::from_histogram(
                "event",
                "callback_early",
                "per cycle whose callback started before the cycle's checked start (the backend's start, where it agreed with the callbacks to within the check's tolerance): checked start - callback start",
                self.early.clone(),
            ));
        }
        let mut d = Measurement::from_histogram(
            "event",
            "dsp_time",
            "per cycle: time in the processor (workload + note scheduling)",
            self.dsp.clone(),
        );
        d.deadline = Some(self.info.period_ns());
        d.misses = Some(self.dsp_misses);
        d.detail = json!({"dsp_load_percent_mean": crate::stats::dsp_load_percent(&self.dsp, self.info.period_ns()),
                          "dsp_load_percent_max": self.dsp.summary().map(|s| 100.0 * s.max / self.info.period_ns())});
        out.push(d);
        out
    }

    /// The server's facts and what the run was granted.
    pub fn qos_granted(&self) -> Value {
        QosGranted {
            trigger_thread: Some(self.trigger_thread.as_ref().map(|t| ThreadGrant {
                policy: t.sched.granted.to_string(),
                refusal: t.sched.refusal.clone(),
            })),
            audio_thread: Some(self.audio_thread.map(|p| p.to_string())),
            memory_locked: Some(MemoryLocked::Locked(self.memory_locked)),
            ..QosGranted::default()
        }
        .to_json()
    }

    /// Validity flags.
    pub fn flags(&self) -> Value {
        let steal_ns = self.steal.total_ns(None);
        let cpus = engine::rt::online_cpus().len();
        Flags {
            realtime: Some(self.realtime()),
            memory_locked: Some(self.memory_locked),
            interrupted: Some(self.end != EventEnd::Complete),
            host_steal_ns: Some(steal_ns),
            host_steal_percent: Some(self.steal.percent_of_span(steal_ns, cpus)),
            late_triggers: Some(self.late()),
            missed_triggers: Some(self.missed()),
            timing_unknown_triggers: Some(self.timing_unknown()),
            dropped_triggers: Some(self.dropped),
            cycle_records_dropped: Some(self.records_dropped),
            unmatched_captures: Some(self.unmatched_captures),
            frame_count_restarts: Some(self.frame_count_restarts),
            dsp_overload_cycles: Some(self.dsp_misses),
            private_server: Some(self.info.server.private),
            ..Flags::default()
        }
        .to_json()
    }

    /// Probe-specific results.
    pub fn result_json(&self) -> Value {
        self.result_record().to_json()
    }

    /// The results as their record ([`EventResultRecord`]).
    pub fn result_record(&self) -> EventResultRecord {
        let ms = 1e-6;
        let mut stream = stream_record(&self.info, self.duplex_start);
        if let (Some(graph), Some(server)) = (&self.server_graph, &mut stream.server) {
            server.graph = Some(graph.clone());
        }
        let stats_ms = |s: Stats| Some(StatsRecord::from(s.scaled(ms)));
        EventResultRecord {
            stream,
            end: Some(match &self.end {
                EventEnd::Complete => "complete".to_string(),
                EventEnd::Interrupted => "interrupted".to_string(),
                EventEnd::ServerGone(r) => format!("server gone: {r}"),
                EventEnd::Panicked(p) => format!("processor panicked: {p}"),
            }),
            midi_port: self.info.midi_port.clone(),
            clock_offset_ns: Some(self.info.clock_offset_ns),
            triggers: Some(self.rows.len() as u64),
            latency_ms: stats_ms(self.latency()),
            model_latency_ms: Some(self.model_latency_ns() * ms),
            loopback_ms: self
                .rows
                .iter()
                .any(|r| r.measured_ns.is_some())
                .then(|| StatsRecord::from(self.measured().scaled(ms))),
            wait_ms: stats_ms(Stats::of(
                self.sounded().filter_map(|r| r.wait_ns.map(|v| v as f64)),
            )),
            lateness_ms: stats_ms(Stats::of(
                self.sounded()
                    .filter_map(|r| r.lateness_ns.map(|v| v as f64)),
            )),
            buffer_ms: Some(self.info.buffer_ns() * ms),
            buffer_frames: Some(u64::from(self.info.buffer_frames())),
            unreported_sink_frames: self.info.unreported_sink_frames().map(u64::from),
            cycles: Some(self.cycles),
            underruns: Some(EventUnderrunsRecord {
                start: Some(self.xruns.0),
                steady: Some(self.xruns.1),
                skipped_cycles_start: Some(self.gaps.0),
                skipped_cycles_steady: Some(self.gaps.1),
            }),
            late_triggers: Some(self.late()),
            fixed_replacement: self.fixed_replacement(),
            missed_triggers: Some(self.missed()),
            timing_unknown_triggers: Some(self.timing_unknown()),
            cycles_timing_unknown: Some(self.cycles_timing_unknown),
            dropped_triggers: Some(self.dropped),
            midi_dropped: Some(self.midi_dropped),
            onsets_moved_after_underrun: self
                .info
                .capture_port
                .is_some()
                .then_some(self.onsets_moved),
            oversized_cycles: Some(self.oversized_cycles),
            dsp_load_percent_mean: crate::stats::dsp_load_percent(&self.dsp, self.info.period_ns()),
            dsp_overload_cycles: Some(self.dsp_misses),
            run_ns: Some(self.end_ns.saturating_sub(self.start_ns)),
            why: self
                .why
                .as_ref()
                .map(|w| w.record(self.config.why.map(|c| c.above_ns))),
        }
    }
}

/// The stream an audio probe ran on, as stored with its result: backend, model, server,
/// rate, period, the latencies it reports, its ports, and how a duplex device started.
pub(crate) fn stream_record(info: &StreamInfo, start: Option<DuplexStart>) -> StreamRecord {
    StreamRecord {
        duplex_start: start.map(|s| DuplexStartRecord {
            linked: Some(s.linked),
            skew_frames: s.skew_frames,
            attempts: Some(u64::from(s.attempts)),
            starts: Some(u64::from(s.starts)),
            steady_offset: Some(s.steady_offset),
        }),
        backend: Some(info.backend.name().to_string()),
        client: Some(info.client_name.clone()),
        model: Some(info.model.to_string()),
        server: Some(ServerRecord {
            name: Some(info.server.name.clone()),
            private: Some(info.server.private),
            command_line: info.server.command_line.clone(),
            version: info.server.version.clone(),
            graph: None,
        }),
        rate_hz: Some(u64::from(info.sample_rate_hz)),
        period_frames: Some(u64::from(info.period_frames)),
        playback_latency_frames: Some(u64::from(info.playback_latency_frames)),
        capture_latency_frames: info.capture_latency_frames.map(u64::from),
        playback_ports: Some(info.playback_ports.clone()),
        capture_port: info.capture_port.clone(),
    }
}

/// The stream an audio probe runs on, as stored with its configuration before the run;
/// `granted`: what an ALSA device granted.
pub(crate) fn stream_config_record(
    info: &StreamInfo,
    granted: Option<AlsaGrantedRecord>,
) -> StreamConfigRecord {
    let server = &info.server;
    StreamConfigRecord {
        backend: Some(info.backend.name().to_string()),
        rate_hz: Some(u64::from(info.sample_rate_hz)),
        period_frames: Some(u64::from(info.period_frames)),
        playback_latency_frames: Some(u64::from(info.playback_latency_frames)),
        granted,
        server: Some(ConfiguredServerRecord {
            name: Some(server.name.clone()),
            private: Some(server.private),
            command_line: server.command_line.clone(),
            version: server.version.clone(),
            quantum_asked_frames: server.quantum_asked_frames.map(u64::from),
            quantum_granted_frames: server.quantum_granted_frames.map(u64::from),
            rate_asked_hz: server.rate_asked_hz.map(u64::from),
            rate_granted_hz: server.rate_granted_hz.map(u64::from),
        }),
    }
}
