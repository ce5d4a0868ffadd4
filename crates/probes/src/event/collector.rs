//! The controlling thread's side: trigger rows assembled from what the audio thread reported.

use super::*;

/// What the probe thread gathers from the audio thread's rings.
pub(super) struct Collector {
    pub(super) source: String,
    pub(super) loopback: bool,
    pub(super) buffer_ns: f64,
    /// The capture latency the stream reported; `None` when it was not read (a loopback
    /// latency is then not measured: it would include it).
    pub(super) capture_frames: Option<f64>,
    pub(super) frame_ns: f64,
    pub(super) stage_start_ns: u64,
    pub(super) timer: bool,
    pub(super) rows: Vec<TriggerRow>,
    pub(super) waiting: Vec<TriggerRow>,
    pub(super) reported: usize,
    pub(super) events: Vec<Event>,
    pub(super) cycles: u64,
    pub(super) lateness: LatencyHistogram,
    pub(super) early: LatencyHistogram,
    pub(super) dsp: LatencyHistogram,
    pub(super) dsp_misses: u64,
    /// Cycles whose start was not known (just after a discontinuity).
    pub(super) cycles_timing_unknown: u64,
    pub(super) period_ns: f64,
    pub(super) xruns: (u64, u64),
    pub(super) gaps: (u64, u64),
    pub(super) first_trigger_ns: Option<u64>,
    /// Fixed policy: each note placed by its time, its re-placement shift in frames.
    pub(super) fixed_shifts: Vec<f64>,
    /// `--why`: the cycles' misses handed to the trace session.
    pub(super) why: Option<crate::why::CycleTap>,
    /// The audio thread's id, once the stream has said it.
    pub(super) audio_tid: Option<i32>,
}

impl Collector {
    pub(super) fn in_steady(&self, t: u64) -> bool {
        match self.first_trigger_ns {
            Some(f) => t >= f,
            None => self.timer && t >= self.stage_start_ns,
        }
    }

    /// Drains every ring; returns the under-run events found.
    pub(super) fn drain(
        &mut self,
        backend: &mut dyn Backend,
        notes: &mut rtrb::Consumer<NoteStart>,
        onsets: &mut rtrb::Consumer<Onset>,
    ) -> Vec<Event> {
        let mut new_events = Vec::new();
        if self.why.is_some() && self.audio_tid.is_none() {
            self.audio_tid = backend.status().audio_tid;
        }
        while let Ok(r) = backend.cycles().pop() {
            if let Some(tap) = &mut self.why {
                tap.see(&r, self.audio_tid);
            }
            self.cycles += 1;
            // Lateness on the checked start only: just after a discontinuity nobody
            // knows when the cycle started.
            match (r.cycle.checked, r.cycle.checked_lateness_ns()) {
                (Some(_), Some(l)) if l < 0 => {
                    self.early.record(l.unsigned_abs());
                }
                (Some(_), Some(l)) => {
                    self.lateness.record(l as u64);
                }
                // The start is the callback's own: known, but no lateness to measure.
                (Some(_), None) => {}
                (None, _) => self.cycles_timing_unknown += 1,
            }
            self.dsp.record(r.dsp_ns);
            if r.dsp_ns as f64 > self.period_ns {
                self.dsp_misses += 1;
            }
            if r.gap_frames > 0 {
                if self.in_steady(r.cycle.callback_ns) {
                    self.gaps.1 += 1;
                } else {
                    self.gaps.0 += 1;
                }
                new_events.push(Event {
                    mono_ns: r.cycle.callback_ns,
                    kind: "skipped_cycles".into(),
                    detail: json!({"cycle": r.cycle.index, "frames_skipped": r.gap_frames}),
                });
            }
        }
        for x in backend.take_xruns() {
            if self.in_steady(x.mono_ns) {
                self.xruns.1 += 1;
            } else {
                self.xruns.0 += 1;
            }
            new_events.push(Event {
                mono_ns: x.mono_ns,
                kind: "xrun".into(),
                detail: json!({"source": "server", "cycles_done": x.cycles_done}),
            });
        }
        let underruns = self.xruns.0 + self.xruns.1;
        while let Ok(n) = notes.pop() {
            self.first_trigger_ns = Some(
                self.first_trigger_ns
                    .map_or(n.trigger_ns, |f| f.min(n.trigger_ns)),
            );
            if let Some(shift) = n.shift_frames {
                self.fixed_shifts.push(shift);
            }
            let c = n.cycle;
            let note_frame = c.first_frame + n.offset as u64;
            // The DAC time on the rendering cycle's checked start (JACK's where it agreed
            // with the callbacks); none while that start is not known.
            let frame_ns = c.checked_frame_time_ns(n.offset as f64);
            let wait_ns = frame_ns.map(|f| (f - n.trigger_ns as f64).round() as i64);
            let buffer_ns = self.buffer_ns.round() as i64;
            let row = TriggerRow {
                seq: n.seq,
                source: self.source.clone(),
                trigger_ns: n.trigger_ns,
                note_frame,
                offset_frames: n.offset,
                cycle: c.index,
                dac_ns: frame_ns.map(|f| (f + self.buffer_ns).max(0.0) as u64),
                latency_ns: wait_ns.map(|w| w + buffer_ns),
                wait_ns,
                lateness_ns: c.checked_lateness_ns(),
                buffer_ns,
                late: n.late,
                // The cycle's buffer is due when the next cycle starts; a callback that
                // only began after that could not have its note played on time.
                missed: c.missed_deadline().unwrap_or(false),
                measured_ns: None,
                underruns_before: underruns,
                timing: c
                    .checked
                    .map_or("unknown", |t| t.source.as_str())
                    .to_string(),
            };
            if self.loopback {
                self.waiting.push(row);
            } else {
                self.rows.push(row);
            }
        }
        while let Ok(o) = onsets.pop() {
            if let Some(i) = self.waiting.iter().position(|r| r.seq == o.seq) {
                let mut row = self.waiting.remove(i);
                row.measured_ns = self.loopback_ns(&row, o.captured_frame);
                self.rows.push(row);
            }
        }
        self.events.extend(new_events.iter().cloned());
        new_events
    }

    /// The loopback latency of `row` whose onset was captured at `captured`. Output and
    /// capture run on one sample clock: the frames from the note's position in the
    /// output stream to its onset in the capture, less the capture latency, are the time
    /// from the note's frame to the sound, exactly; added to the wait, that is the
    /// measured latency. None without an onset, a wait, or the capture latency (not read:
    /// the figure would include it).
    pub(super) fn loopback_ns(&self, row: &TriggerRow, captured: Option<u64>) -> Option<i64> {
        let (c, wait, capture) = (captured?, row.wait_ns?, self.capture_frames?);
        let frames = c as f64 - row.note_frame as f64 - capture;
        Some(wait + (frames * self.frame_ns).round() as i64)
    }

    /// Hands the rows and events gathered since the last report to `progress`.
    pub(super) fn report(
        &mut self,
        new_events: &[Event],
        progress: &mut impl FnMut(EventProgress<'_>) -> Result<(), String>,
    ) -> Result<(), String> {
        let result = progress(EventProgress {
            rows: &self.rows[self.reported..],
            events: new_events,
            measured: self.rows.len() as u64,
            cycles: self.cycles,
            underruns: self.xruns.0 + self.xruns.1,
            culprit: self.why.as_ref().and_then(crate::why::CycleTap::culprit),
        });
        self.reported = self.rows.len();
        result
    }
}
