//! What a round-trip run measured ([`RoundtripOutcome`]) and how it ended, as the results model has it.

use super::*;
use results::records::flags::Flags;
use results::records::qos::{MemoryLocked, QosGranted};
use results::records::roundtrip::{DelayChangeRecord, RoundtripResultRecord};
use results::records::{Record, StatsRecord};

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RoundtripEnd {
    /// Measured for the whole duration.
    Complete,
    /// Ended early: nothing came back (see [`RoundtripOutcome::no_loop`]).
    NoSignal,
    /// Stopped by the stop flag (Ctrl-C).
    Interrupted,
    /// The audio server or device went away.
    ServerGone(String),
    /// The processor panicked.
    Panicked(String),
}

/// One click, sent and (perhaps) found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ImpulseRow {
    /// Click number, from 0.
    pub seq: u32,
    /// Stream position the click was meant for (before the inserted delay).
    pub position: u64,
    /// What came back; `None`: nothing above the noise within a tone period.
    pub onset: Option<ImpulseOnset>,
    /// An under-run may have silenced it: its window could hold a dropout's return (see
    /// the windows' rule), so a lost click says nothing of the loop's length.
    pub dropout: bool,
}

/// One multi-tone window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EstimateRow {
    /// Window number, from 0.
    pub seq: u32,
    /// Stream position of the window's first frame.
    pub position: u64,
    /// CLOCK_MONOTONIC ns when the window's last frame was captured (by the stream's
    /// timing).
    pub time_ns: u64,
    /// The estimate.
    pub estimate: PhaseEstimate,
}

/// A step in the loop's delay between two consecutive valid windows: the path dropped or
/// added samples (e.g. a buffer between audiolat and the device that ran dry and came
/// back a period later), whether or not the backend reported an under-run.
#[derive(Debug, Clone, PartialEq)]
pub struct DelayChange {
    /// The first window at the new delay.
    pub window: u32,
    /// When that window was captured, CLOCK_MONOTONIC ns.
    pub time_ns: u64,
    /// The delay before, in frames.
    pub from_frames: f64,
    /// The delay after, in frames.
    pub to_frames: f64,
}

/// Windows closer than this (in frames) read the same delay: the multi-tone estimate's
/// error is a small fraction of a frame, a path that drops or adds samples moves it by
/// whole frames.
pub const DELAY_CHANGE_FRAMES: f64 = 0.5;

/// What the caller gets while the run goes on (about every 20 ms).
pub struct RoundtripProgress<'a> {
    /// Clicks found (or given up on) since the last call.
    pub impulses: &'a [ImpulseRow],
    /// Windows estimated since the last call.
    pub estimates: &'a [EstimateRow],
    /// Cycles so far.
    pub cycles: u64,
    /// Under-runs so far.
    pub underruns: u64,
    /// With `--why`: the largest culprit so far.
    pub culprit: Option<results::LiveCulprit>,
    /// Every [`RoundtripConfig::checkpoint_ms`] once the stream has run a cycle, what
    /// was measured so far, so the run can be stored as it goes. Its `end` reads
    /// [`RoundtripEnd::Interrupted`] and its steal timeline is empty until the run ends.
    pub checkpoint: Option<&'a RoundtripOutcome>,
}

/// Everything a run measured.
#[derive(Debug)]
pub struct RoundtripOutcome {
    /// The configuration.
    pub config: RoundtripConfig,
    /// The stream.
    pub info: StreamInfo,
    /// On a PipeWire: the graph's record around the run (`server.graph` in the result;
    /// see `engine::pipewire::graph`), `None` elsewhere.
    pub server_graph: Option<results::records::graph::GraphRecord>,
    /// How it ended.
    pub end: RoundtripEnd,
    /// The tone's period in frames (also the click spacing).
    pub tone_period: usize,
    /// The clicks.
    pub impulses: Vec<ImpulseRow>,
    /// The multi-tone windows.
    pub estimates: Vec<EstimateRow>,
    /// Cycles run.
    pub cycles: u64,
    /// Under-runs and over-runs the backend reported.
    pub xruns: u64,
    /// Cycles that started after a jump of the stream position.
    pub gaps: u64,
    /// Xrun and gap events with their times.
    pub events: Vec<Event>,
    /// Captured blocks the analysis lost (the ring was full).
    pub blocks_dropped: u64,
    /// Cycle records the reader lost.
    pub records_dropped: u64,
    /// The stream's own counts where its backend keeps them (`None`: not counted):
    /// native PipeWire cycles whose capture had not arrived, restarts of a JACK server's
    /// frame count.
    pub unmatched_captures: Option<u64>,
    /// See `unmatched_captures`.
    pub frame_count_restarts: Option<u64>,
    /// Debug builds with `assert_no_alloc`'s allocator: allocations on the audio thread.
    pub alloc_violations: u64,
    /// The audio thread's scheduling, as it read it in its first cycle.
    pub audio_thread: Option<engine::rt::Policy>,
    /// How a full-duplex ALSA device started (linked, the skew between its directions).
    pub duplex_start: Option<engine::audio::DuplexStart>,
    /// The process's memory was locked for the run.
    pub memory_locked: bool,
    /// Time in the processor per cycle.
    pub dsp: LatencyHistogram,
    /// Cycles whose processing took longer than their period (a DSP overload).
    pub dsp_overload_cycles: u64,
    /// Host steal through the run.
    pub steal: StealTimeline,
    /// Stream start and end, CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    /// When the run ended.
    pub end_ns: u64,
    /// What the kernel's trace said of the late callbacks (`--why`), or why it could not.
    pub why: Option<crate::why::WhyOutcome>,
}

impl RoundtripOutcome {
    /// The run's windows and impulses as JSON (`windows`, `impulses`): the detail
    /// `audiolat roundtrip --json` prints beside the run's view.
    pub fn windows_json(&self) -> serde_json::Value {
        serde_json::json!({
            "windows": self.estimates.iter().map(|e| serde_json::json!({
                "seq": e.seq, "position": e.position, "time_ns": e.time_ns,
                "delay_frames": e.estimate.delay_frames, "stderr_frames": e.estimate.stderr_frames,
                "snr_db": e.estimate.snr_db, "gain": e.estimate.gain,
                "residual_rad": e.estimate.residual_rad, "inverted": e.estimate.inverted,
                "clipped": e.estimate.clipped, "verdict": e.estimate.verdict.to_string(),
            })).collect::<Vec<_>>(),
            "impulses": self.impulses.iter().map(|i| serde_json::json!({
                "seq": i.seq, "position": i.position,
                "frames": i.onset.map(|x| x.frames), "peak": i.onset.map(|x| x.peak),
                "inverted": i.onset.map(|x| x.inverted),
            })).collect::<Vec<_>>(),
        })
    }

    /// Takes the stream's counts so far.
    pub(super) fn take_status(
        &mut self,
        status: &engine::audio::StreamStatus,
        shared: &ProcessorShared,
    ) {
        self.xruns = status.xruns;
        self.gaps = status.gaps;
        self.blocks_dropped = shared.blocks_dropped.load(Ordering::Relaxed);
        self.records_dropped = status.records_dropped;
        self.unmatched_captures = status.unmatched_captures;
        self.frame_count_restarts = status.frame_count_restarts;
        self.alloc_violations = status.alloc_violations;
        self.audio_thread = status.audio_thread;
        self.duplex_start = status.duplex_start;
    }

    /// Frames per nanosecond's inverse: one frame in ns.
    fn frame_ns(&self) -> f64 {
        1e9 / f64::from(self.info.sample_rate_hz)
    }

    /// The windows whose estimate holds ([`Verdict::Ok`], and not [`wrapped`](Self::wrapped)).
    pub fn valid(&self) -> impl Iterator<Item = &EstimateRow> {
        let ambiguous = self.ambiguous();
        self.estimates.iter().filter(move |e| {
            !ambiguous
                && e.estimate.verdict == Verdict::Ok
                && !self.wrapped(e.estimate.delay_frames)
        })
    }

    /// The loop is longer than the tone period, so no figure can be trusted: the first
    /// click found nothing in its window while later ones found an echo (of the click
    /// before them), or every window that found a delayed copy reads shorter than the
    /// reported latency.
    pub fn ambiguous(&self) -> bool {
        let first_click_lost = self
            .impulses
            .first()
            .is_some_and(|i| i.onset.is_none() && !i.dropout)
            && self.impulses.iter().skip(1).any(|i| i.onset.is_some());
        let found: Vec<f64> = self
            .estimates
            .iter()
            .filter(|e| e.estimate.verdict == Verdict::Ok)
            .map(|e| e.estimate.delay_frames)
            .collect();
        let all_wrapped = !found.is_empty() && found.iter().all(|&f| self.wrapped(f));
        first_click_lost || all_wrapped
    }

    /// A round trip that reads shorter than the latency the stream reports, by more than
    /// a period of slack for a backend whose model over-states it: the loop is longer
    /// than the tone period and the figure wrapped around.
    pub fn wrapped(&self, frames: f64) -> bool {
        frames + f64::from(self.info.period_frames) + 0.5 < f64::from(self.reported_floor_frames())
    }

    /// Windows that found a delayed copy but read shorter than the reported latency.
    pub fn wrapped_windows(&self) -> usize {
        self.estimates
            .iter()
            .filter(|e| e.estimate.verdict == Verdict::Ok && self.wrapped(e.estimate.delay_frames))
            .count()
    }

    /// Statistics of the multi-tone round trip over the valid windows, in frames.
    pub fn measured_frames(&self) -> Stats {
        Stats::of(self.valid().map(|e| e.estimate.delay_frames))
    }

    /// Every step in the delay between consecutive valid windows (see [`DelayChange`]).
    pub fn delay_changes(&self) -> Vec<DelayChange> {
        let mut out = Vec::new();
        let mut previous: Option<f64> = None;
        for e in self.valid() {
            let d = e.estimate.delay_frames;
            if let Some(p) = previous {
                if (d - p).abs() > DELAY_CHANGE_FRAMES {
                    out.push(DelayChange {
                        window: e.seq,
                        time_ns: e.time_ns,
                        from_frames: p,
                        to_frames: d,
                    });
                }
            }
            previous = Some(d);
        }
        out
    }

    /// Statistics of the clicks' onset counts, in frames (wrapped ones left out).
    pub fn impulse_frames(&self) -> Stats {
        Stats::of(
            self.impulses
                .iter()
                .filter_map(|i| i.onset.map(|o| o.frames as f64))
                .filter(|&f| !self.ambiguous() && !self.wrapped(f)),
        )
    }

    /// Nothing was analysed: the run ended before the first click came due.
    pub fn nothing_measured(&self) -> bool {
        self.impulses.is_empty() && self.estimates.is_empty()
    }

    /// Nothing came back: something was sent and analysed, and no click was found and no
    /// window had signal.
    pub fn no_loop(&self) -> bool {
        !self.nothing_measured()
            && self.impulses.iter().all(|i| i.onset.is_none())
            && self
                .estimates
                .iter()
                .all(|e| e.estimate.verdict == Verdict::NoSignal)
    }

    /// The latency the stream reports for a loop: playback plus capture, in frames; none
    /// when the backend could not read the capture latency.
    pub fn reported_frames(&self) -> Option<u32> {
        let capture = self.info.capture_latency_frames?;
        Some(self.info.playback_latency_frames + capture)
    }

    /// The least the loop can be by what the stream reports: [`Self::reported_frames`],
    /// or the playback latency alone when the capture latency was not read.
    fn reported_floor_frames(&self) -> u32 {
        self.reported_frames()
            .unwrap_or(self.info.playback_latency_frames)
    }

    /// Windows by verdict: (ok, no signal, unreliable).
    pub fn verdicts(&self) -> (usize, usize, usize) {
        let count = |v: Verdict| {
            self.estimates
                .iter()
                .filter(|e| e.estimate.verdict == v)
                .count()
        };
        (
            count(Verdict::Ok),
            count(Verdict::NoSignal),
            count(Verdict::Unreliable),
        )
    }

    /// The loop inverts the signal (in most valid windows).
    pub fn inverted(&self) -> bool {
        let valid = self.valid().count();
        valid > 0 && self.valid().filter(|e| e.estimate.inverted).count() * 2 > valid
    }

    /// Captured samples at full scale, over all windows and clicks.
    pub fn clipped(&self) -> usize {
        self.estimates
            .iter()
            .map(|e| e.estimate.clipped)
            .chain(
                self.impulses
                    .iter()
                    .filter_map(|i| i.onset.map(|o| o.clipped)),
            )
            .sum()
    }

    /// The audio thread ran at a real-time policy.
    pub fn realtime(&self) -> bool {
        self.audio_thread.is_some_and(|p| p.is_realtime())
    }

    /// What the user is told in one line about the loop.
    pub fn verdict_line(&self) -> String {
        let (ok, none, unreliable) = self.verdicts();
        if self.nothing_measured() {
            return "nothing measured: the run ended before the first click was analysed".into();
        }
        let wrapped = self.wrapped_windows();
        if self.ambiguous() {
            return format!(
                "ambiguous: the loop looks longer than the test signal's period ({} frames; the first click found nothing in its window, or the figure reads below the {} frames the stream reports), so it wrapped around; measure again with a max-delay above the loop's length",
                self.tone_period,
                self.reported_floor_frames()
            );
        }
        if self.no_loop() {
            return "no loop found: nothing came back at the input; check the connection (cable, ports, device)".into();
        }
        if ok == 0 {
            return format!(
                "no reliable figure: signal came back, but not as a delayed copy in any of {} windows ({unreliable} unreliable, {none} silent): check for dropouts, distortion or a second signal in the loop",
                self.estimates.len()
            );
        }
        let mut notes = Vec::new();
        if self.inverted() {
            notes.push("the loop inverts polarity".to_string());
        }
        let clipped = self.clipped();
        if clipped > 0 {
            notes.push(format!(
                "{clipped} captured samples at full scale: lower the signal's level or the gain in the loop"
            ));
        }
        let gain = Stats::of(self.valid().map(|e| e.estimate.gain)).measured();
        if let Some(gain) = gain.map(|g| g.median).filter(|&g| g < 0.01) {
            notes.push(format!(
                "the loop's gain is {:.1} dB: the figure is noisier than it needs to be",
                20.0 * gain.log10()
            ));
        }
        if wrapped > 0 {
            notes.push(format!(
                "{wrapped} windows read shorter than the reported latency (wrapped) and are left out"
            ));
        }
        let changes = self.delay_changes();
        if let Some(first) = changes.first() {
            notes.push(format!(
                "the loop's delay changed {} time{} during the run (first at window {}: {:.1} -> {:.1} frames) with {} under-run{} reported: the path dropped or added samples, so the windows before and after differ",
                changes.len(),
                if changes.len() == 1 { "" } else { "s" },
                first.window,
                first.from_frames,
                first.to_frames,
                self.xruns,
                if self.xruns == 1 { "" } else { "s" }
            ));
        }
        if self.blocks_dropped > 0 {
            notes.push(format!(
                "{} capture blocks dropped: the analysis fell behind the stream",
                self.blocks_dropped
            ));
        }
        if unreliable + none > 0 {
            notes.push(format!(
                "{} of {} windows left out ({unreliable} unreliable, {none} silent)",
                unreliable + none,
                self.estimates.len()
            ));
        }
        let median = |v: &dyn Fn(&EstimateRow) -> f64, digits: usize| {
            Stats::of(self.valid().map(v))
                .measured()
                .map_or("-".to_string(), |s| format!("{:.digits$}", s.median))
        };
        let confidence = format!(
            "loop found (estimator stderr {} frame, SNR {} dB)",
            median(&|e| e.estimate.stderr_frames, 4),
            median(&|e| e.estimate.snr_db, 0)
        );
        if notes.is_empty() {
            confidence
        } else {
            format!("{confidence}; {}", notes.join("; "))
        }
    }

    fn method(&self) -> String {
        format!(
            "multi-tone phase slope ({} partials from {:.0} Hz, period {} frames) over a window every {} frames, {} backend, stream positions output -> input; {} frames inserted by audiolat",
            self.estimates_partials(),
            dsp::loopdelay::LOWEST_PARTIAL_HZ,
            self.tone_period,
            self.config
                .every_periods
                .map_or(self.tone_period as u64, |k| u64::from(k) * u64::from(self.info.period_frames)),
            self.info.backend,
            self.config.insert_delay_frames
        )
    }

    fn estimates_partials(&self) -> usize {
        MultiTone::new(self.tone_period, self.info.sample_rate_hz, self.config.peak)
            .bins()
            .len()
    }

    /// Measurements: the round trip by multi-tone (valid windows) and by click onsets,
    /// both in ns, with frames in their detail.
    pub fn measurements(&self) -> Vec<Measurement> {
        let frame_ns = self.frame_ns();
        let hist = |values: Vec<f64>| {
            let mut h = LatencyHistogram::new(100_000_000_000).expect("100 s bound is valid");
            for v in values {
                h.record((v * frame_ns).max(0.0).round() as u64);
            }
            h
        };
        let measured = self.measured_frames();
        let (ok, none, unreliable) = self.verdicts();
        let mut m = Measurement::from_histogram(
            "roundtrip",
            "roundtrip",
            &self.method(),
            hist(self.valid().map(|e| e.estimate.delay_frames).collect()),
        );
        m.detail = json!({
            "frames": measured.to_json(),
            "spread_frames": measured.measured().map(|m| m.max - m.min),
            "reported_frames": self.reported_frames(),
            "playback_latency_frames": self.info.playback_latency_frames,
            "capture_latency_frames": self.info.capture_latency_frames,
            "inserted_frames": self.config.insert_delay_frames,
            "extra_frames": self.reported_frames().filter(|_| measured.count > 0).map(|r| measured.mean - f64::from(r) - f64::from(self.config.insert_delay_frames)),
            "stderr_frames_median": Stats::of(self.valid().map(|e| e.estimate.stderr_frames)).measured().map(|s| s.median),
            "snr_db_median": Stats::of(self.valid().map(|e| e.estimate.snr_db)).measured().map(|s| s.median),
            "gain_median": Stats::of(self.valid().map(|e| e.estimate.gain)).measured().map(|s| s.median),
            "windows": {"ok": ok, "no_signal": none, "unreliable": unreliable},
            "inverted": self.inverted(),
            "clipped_samples": self.clipped(),
            "verdict": self.verdict_line(),
        });
        let mut i = Measurement::from_histogram(
            "roundtrip",
            "roundtrip_impulse",
            &format!(
                "impulse onset count (the desktop OS study's method): a click every {} frames, its onset the first sample at half the returned peak; whole frames",
                self.tone_period
            ),
            hist(
                self.impulses
                    .iter()
                    .filter_map(|i| i.onset.map(|o| o.frames as f64))
                    .collect(),
            ),
        );
        i.detail = json!({
            "frames": self.impulse_frames().to_json(),
            "sent": self.impulses.len(),
            "found": self.impulses.iter().filter(|i| i.onset.is_some()).count(),
        });
        let mut d = Measurement::from_histogram(
            "roundtrip",
            "dsp_time",
            "time in the processor per cycle (signal out, capture handed over)",
            self.dsp.clone(),
        );
        d.detail =
            json!({"dsp_load_percent_mean": dsp_load_percent(&self.dsp, self.info.period_ns())});
        vec![m, i, d]
    }

    /// Every window and every click, as tables.
    pub fn series(&self) -> Vec<Series> {
        let t0 = self.start_ns as f64;
        vec![
            Series {
                name: "roundtrip_windows".into(),
                unit: "frames".into(),
                columns: [
                    "seq",
                    "time_s",
                    "position",
                    "delay_frames",
                    "stderr_frames",
                    "snr_db",
                    "gain",
                    "residual_rad",
                    "inverted",
                    "clipped",
                    "verdict",
                ]
                .map(String::from)
                .to_vec(),
                rows: self
                    .estimates
                    .iter()
                    .map(|e| {
                        let x = &e.estimate;
                        // A window with no signal has no delay, gain or phase: NaN (an
                        // empty cell), not 0.
                        let found = |v: f64| {
                            if x.verdict == Verdict::NoSignal {
                                f64::NAN
                            } else {
                                v
                            }
                        };
                        vec![
                            f64::from(e.seq),
                            (e.time_ns as f64 - t0) / 1e9,
                            e.position as f64,
                            found(x.delay_frames),
                            found(x.stderr_frames),
                            x.snr_db,
                            found(x.gain),
                            found(x.residual_rad),
                            found(f64::from(u8::from(x.inverted))),
                            x.clipped as f64,
                            match x.verdict {
                                Verdict::Ok => 0.0,
                                Verdict::NoSignal => 1.0,
                                Verdict::Unreliable => 2.0,
                            },
                        ]
                    })
                    .collect(),
            },
            Series {
                name: "roundtrip_impulses".into(),
                unit: "frames".into(),
                // A click not found has found = 0 and NaN (stored as null, an empty CSV
                // cell) after it: nothing was measured.
                columns: ["seq", "position", "found", "frames", "peak", "inverted"]
                    .map(String::from)
                    .to_vec(),
                rows: self
                    .impulses
                    .iter()
                    .map(|i| match i.onset {
                        Some(o) => vec![
                            f64::from(i.seq),
                            i.position as f64,
                            1.0,
                            o.frames as f64,
                            f64::from(o.peak),
                            f64::from(u8::from(o.inverted)),
                        ],
                        None => vec![
                            f64::from(i.seq),
                            i.position as f64,
                            0.0,
                            f64::NAN,
                            f64::NAN,
                            f64::NAN,
                        ],
                    })
                    .collect(),
            },
        ]
    }

    /// Validity flags.
    pub fn flags(&self) -> Value {
        let steal_ns = self.steal.total_ns(None);
        let cpus = engine::rt::online_cpus().len();
        let (ok, none, unreliable) = self.verdicts();
        Flags {
            realtime: Some(self.realtime()),
            interrupted: Some(!matches!(
                self.end,
                RoundtripEnd::Complete | RoundtripEnd::NoSignal
            )),
            host_steal_ns: Some(steal_ns),
            host_steal_percent: Some(self.steal.percent_of_span(steal_ns, cpus)),
            no_loop: Some(self.no_loop()),
            inverted: Some(self.inverted()),
            clipped_samples: Some(self.clipped() as u64),
            windows_ok: Some(ok as u64),
            windows_no_signal: Some(none as u64),
            windows_unreliable: Some(unreliable as u64),
            xruns: Some(self.xruns),
            skipped_cycles: Some(self.gaps),
            delay_changes: Some(self.delay_changes().len() as u64),
            capture_blocks_dropped: Some(self.blocks_dropped),
            cycle_records_dropped: Some(self.records_dropped),
            unmatched_captures: Some(self.unmatched_captures),
            frame_count_restarts: Some(self.frame_count_restarts),
            dsp_overload_cycles: Some(self.dsp_overload_cycles),
            private_server: Some(self.info.server.private),
            memory_locked: Some(self.memory_locked),
            ..Flags::default()
        }
        .to_json()
    }

    /// What the run was granted.
    pub fn qos_granted(&self) -> Value {
        QosGranted {
            audio_thread: Some(self.audio_thread.map(|p| p.to_string())),
            memory_locked: Some(MemoryLocked::Locked(self.memory_locked)),
            ..QosGranted::default()
        }
        .to_json()
    }

    /// Probe-specific results.
    pub fn result_json(&self) -> Value {
        self.result_record().to_json()
    }

    /// The results as their record ([`RoundtripResultRecord`]).
    pub fn result_record(&self) -> RoundtripResultRecord {
        let frame_ms = self.frame_ns() * 1e-6;
        let measured = self.measured_frames();
        let mut stream = crate::event::stream_record(&self.info, self.duplex_start);
        if let (Some(graph), Some(server)) = (&self.server_graph, &mut stream.server) {
            server.graph = Some(graph.clone());
        }
        let inserted = self.config.insert_delay_frames;
        RoundtripResultRecord {
            stream,
            end: Some(match &self.end {
                RoundtripEnd::Complete => "complete".to_string(),
                RoundtripEnd::NoSignal => "no signal".to_string(),
                RoundtripEnd::Interrupted => "interrupted".to_string(),
                RoundtripEnd::ServerGone(r) => format!("server gone: {r}"),
                RoundtripEnd::Panicked(p) => format!("processor panicked: {p}"),
            }),
            tone_period_frames: Some(self.tone_period as u64),
            roundtrip_frames: Some(StatsRecord::from(measured)),
            roundtrip_ms: Some(StatsRecord::from(measured.scaled(frame_ms))),
            impulse_frames: Some(StatsRecord::from(self.impulse_frames())),
            reported_frames: self.reported_frames().map(u64::from),
            inserted_frames: Some(u64::from(inserted)),
            extra_frames: self
                .reported_frames()
                .filter(|_| measured.count > 0)
                .map(|r| measured.mean - f64::from(r) - f64::from(inserted)),
            verdict: Some(self.verdict_line()),
            no_loop: Some(self.no_loop()),
            inverted: Some(self.inverted()),
            clipped_samples: Some(self.clipped() as u64),
            windows: Some(self.estimates.len() as u64),
            delay_changes: Some(
                self.delay_changes()
                    .iter()
                    .map(|c| DelayChangeRecord {
                        window: u64::from(c.window),
                        time_ns: c.time_ns,
                        from_frames: c.from_frames,
                        to_frames: c.to_frames,
                    })
                    .collect(),
            ),
            cycles: Some(self.cycles),
            xruns: Some(self.xruns),
            skipped_cycles: Some(self.gaps),
            dsp_load_percent_mean: dsp_load_percent(&self.dsp, self.info.period_ns()),
            run_ns: Some(self.end_ns.saturating_sub(self.start_ns)),
            why: self
                .why
                .as_ref()
                .map(|w| w.record(self.config.why.map(|c| c.above_ns))),
        }
    }
}
