//! The audio thread's side: the [`Processor`] that starts each trigger's note in the stream and reports where it landed.

use super::*;

/// A trigger on its way to the audio thread.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Trigger {
    pub(super) seq: u64,
    pub(super) t_ns: u64,
}

/// A note the audio thread started, reported to the probe thread.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct NoteStart {
    pub(super) seq: u64,
    pub(super) trigger_ns: u64,
    /// The cycle that rendered the note: its DAC time is read on this cycle's timing.
    pub(super) cycle: Cycle,
    pub(super) offset: u32,
    pub(super) late: bool,
    /// Fixed policy, a trigger placed by its time: its final placement (on the rendering
    /// cycle's time line) minus its first (on the time line of the cycle that first saw
    /// it), in frames; `None` for a note not placed by its time.
    pub(super) shift_frames: Option<f64>,
}

/// A loopback onset (or its absence) for a note.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Onset {
    pub(super) seq: u64,
    /// Stream position of the onset in the capture; `None` when it was not found in time.
    pub(super) captured_frame: Option<u64>,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Scheduled {
    pub(super) seq: u64,
    pub(super) trigger_ns: u64,
    pub(super) frame: u64,
    pub(super) late: bool,
    /// A trigger the fixed policy placed by its time: its frame is read again on each
    /// cycle's time line until the note starts (see [`EventProcessor::replace_fixed`]).
    pub(super) by_time: bool,
    /// Where the trigger was first placed (unrounded frame), for `by_time` triggers.
    pub(super) first_at: f64,
    /// Its latest placement minus `first_at`, in frames.
    pub(super) shift_frames: f64,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Awaiting {
    pub(super) seq: u64,
    pub(super) from_frame: u64,
}

pub(super) const MAX_SCHEDULED: usize = 32;
pub(super) const MAX_AWAITING: usize = 16;

#[derive(Default)]
pub(super) struct Counters {
    pub(super) triggers_dropped: AtomicU64,
    pub(super) notes_dropped: AtomicU64,
    pub(super) oversized_cycles: AtomicU64,
    pub(super) midi_dropped: AtomicU64,
    pub(super) midi_seen: AtomicU64,
    /// Onsets given to a later note than the oldest awaited, after an under-run.
    pub(super) onsets_moved: AtomicU64,
}

/// The audio-thread half of the probe.
pub(super) struct EventProcessor {
    pub(super) workload: Workload,
    pub(super) policy: NotePolicy,
    pub(super) midi: bool,
    pub(super) triggers: rtrb::Consumer<Trigger>,
    pub(super) notes: rtrb::Producer<NoteStart>,
    pub(super) onsets: rtrb::Producer<Onset>,
    pub(super) counters: Arc<Counters>,
    pub(super) scheduled: [Option<Scheduled>; MAX_SCHEDULED],
    pub(super) awaiting: [Option<Awaiting>; MAX_AWAITING],
    pub(super) note_end_frame: Option<u64>,
    /// Capture frames before this position belong to notes whose onset was found (the
    /// note and a quarter of its length after it): a loop longer than the spacing between
    /// triggers brings the previous note back while the next one is awaited. Timer
    /// triggers are spaced 1.5 notes apart at least; notes triggered closer (keys, MIDI)
    /// overlap in the capture too, and the later one's onset is looked for after this.
    pub(super) heard_until: u64,
    /// The loop's delay in frames (onset minus note start) of the last note found, at
    /// first the one the stream reports (playback + capture latency): an onset is given
    /// to the awaited note whose start it fits (see [`EventProcessor::find_onsets`]).
    pub(super) loop_frames: u64,
    /// The end of the last cycle that may have lost capture or output: one after frames
    /// the stream skipped, one whose callback overran, one whose start was not known
    /// (after an xrun), one rendered silent (oversized). `None` before any.
    pub(super) disrupted_until: Option<u64>,
    /// Where the previous cycle ended, to see skipped frames.
    pub(super) next_frame: Option<u64>,
    pub(super) note_frames: u64,
    pub(super) max_frames: usize,
    pub(super) threshold: f32,
    pub(super) timeout_frames: u64,
    pub(super) midi_seq: u64,
    pub(super) note_ms: f64,
    pub(super) loopback_timeout_ms: f64,
}

/// The note-ons due in one cycle: (offset in the cycle, slot in `scheduled`), sorted by
/// offset; only the first `len` are used.
struct DueStarts {
    starts: [(u32, usize); MAX_SCHEDULED],
    len: usize,
}

impl EventProcessor {
    pub(super) fn schedule(&mut self, s: Scheduled) {
        match self.scheduled.iter_mut().find(|x| x.is_none()) {
            Some(slot) => *slot = Some(s),
            None => {
                self.counters.notes_dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Schedules this cycle's MIDI note-ons. Audio thread: no allocation, no lock.
    #[inline]
    fn schedule_midi(&mut self, cycle: &Cycle, io: &Io<'_>) {
        let first = cycle.first_frame;
        self.counters
            .midi_dropped
            .fetch_add(io.midi_dropped as u64, Ordering::Relaxed);
        for note in io.note_ons {
            // JACK MIDI: an event read in this cycle at offset k happened during the
            // previous period at offset k. On the checked time line; where the cycle's
            // start is not known the backend's places it (the row's timing figures are
            // absent then: the note renders in this cycle).
            let trigger_ns = match cycle.checked {
                Some(c) => {
                    cycle
                        .checked_frame_time_ns(note.offset as f64)
                        .unwrap_or(0.0)
                        - c.period_ns
                }
                None => cycle.frame_time_ns(note.offset as f64) - cycle.period_ns,
            }
            .max(0.0) as u64;
            let frame = match self.policy {
                NotePolicy::Asap => first,
                NotePolicy::Fixed => first + note.offset as u64,
            };
            let seq = self.midi_seq;
            self.midi_seq += 1;
            self.counters.midi_seen.fetch_add(1, Ordering::Relaxed);
            self.schedule(Scheduled {
                seq,
                trigger_ns,
                frame,
                late: false,
                by_time: false,
                first_at: 0.0,
                shift_frames: 0.0,
            });
        }
    }

    /// Schedules the triggers the trigger thread sent, at the frame the policy gives,
    /// as many as there are free note slots: the others wait in the ring for a later
    /// cycle (a note late, and said so, rather than a trigger lost after the audio
    /// thread was held off for many spacings). Only triggers stamped before this
    /// callback started are taken: one stamped while the callback ran (between its
    /// start and this read, tens of microseconds on a loaded machine) waits for the next
    /// cycle, so a note is always rendered by the first callback that started after its
    /// trigger, and its wait is measured from a start that followed it (never before
    /// the trigger by more than the callback's lateness). Audio thread: no allocation,
    /// no lock (a wait-free ring peek and pop).
    #[inline]
    fn schedule_triggers(&mut self, cycle: &Cycle) {
        let first = cycle.first_frame;
        let n = cycle.frames as u64;
        // The ring first: most cycles have no trigger, and then no slot is looked at.
        while !self.triggers.is_empty() && self.scheduled.iter().any(Option::is_none) {
            // One trigger thread stamps and pushes in order: the first one stamped
            // after this callback started ends this cycle's triggers.
            if self
                .triggers
                .peek()
                .is_ok_and(|t| t.t_ns > cycle.callback_ns)
            {
                break;
            }
            let Ok(t) = self.triggers.pop() else {
                break;
            };
            let mut first_at = 0.0;
            let (frame, late) = match self.policy {
                NotePolicy::Asap => (first, false),
                NotePolicy::Fixed => {
                    // Placed on the checked time line; where the cycle's start is not
                    // known, on the backend's (the rendering cycle's row says whether
                    // its own start is known).
                    let at = cycle
                        .checked_frame_at(t.t_ns)
                        .unwrap_or_else(|| cycle.frame_at(t.t_ns));
                    first_at = at + n as f64;
                    let target = first_at.round();
                    if target < first as f64 {
                        (first, true)
                    } else {
                        (target as u64, false)
                    }
                }
            };
            self.schedule(Scheduled {
                seq: t.seq,
                trigger_ns: t.t_ns,
                frame,
                late,
                by_time: self.policy == NotePolicy::Fixed && !late,
                first_at,
                shift_frames: 0.0,
            });
        }
    }

    /// Fixed policy: places every pending trigger again at its time plus one period on
    /// this cycle's time line, the one its note's DAC time is read on if it starts here.
    /// The cycle that first saw a trigger placed it on its own time line; a later
    /// cycle's may differ (the start check switched between the server's start and the
    /// callbacks' envelope, which lie tens of microseconds apart; the envelope advanced
    /// by its rate allowance or was lowered; the frame count was restarted), and a note
    /// placed on one and read on the other was off the policy by that difference.
    /// Each note keeps its shift (this placement minus its first), reported with it.
    /// Audio thread: arithmetic on the fixed array.
    #[inline]
    pub(super) fn replace_fixed(&mut self, cycle: &Cycle) {
        let n = cycle.frames as f64;
        for s in self.scheduled.iter_mut().flatten() {
            if s.by_time && !s.late {
                let at = cycle
                    .checked_frame_at(s.trigger_ns)
                    .unwrap_or_else(|| cycle.frame_at(s.trigger_ns));
                s.frame = (at + n).round().max(0.0) as u64;
                s.shift_frames = at + n - s.first_at;
            }
        }
    }

    /// The scheduled notes that start before `end`, in frame order; a note whose frame
    /// went by unrendered (the stream skipped cycles) starts at offset 0, late. Audio
    /// thread: a fixed array, sorted in place.
    #[inline]
    fn due_starts(&mut self, first: u64, end: u64) -> DueStarts {
        let mut due = DueStarts {
            starts: [(u32::MAX, 0); MAX_SCHEDULED],
            len: 0,
        };
        for (i, slot) in self.scheduled.iter_mut().enumerate() {
            if let Some(s) = slot {
                if s.frame < end {
                    if s.frame < first {
                        s.late = true;
                    }
                    due.starts[due.len] = ((s.frame.max(first) - first) as u32, i);
                    due.len += 1;
                }
            }
        }
        due.starts[..due.len].sort_unstable();
        due
    }

    /// Reports the note started in scheduled slot `slot` at `offset`, and, with a
    /// loopback, starts looking for its onset in the capture. Audio thread: ring pushes
    /// and array writes only.
    #[inline]
    fn report_start(&mut self, slot: usize, cycle: &Cycle, offset: u32, loopback: bool) {
        let Some(s) = self.scheduled[slot].take() else {
            return;
        };
        let start = NoteStart {
            seq: s.seq,
            trigger_ns: s.trigger_ns,
            cycle: *cycle,
            offset,
            late: s.late,
            shift_frames: s.by_time.then_some(s.shift_frames),
        };
        if self.notes.push(start).is_err() {
            self.counters.notes_dropped.fetch_add(1, Ordering::Relaxed);
        }
        if loopback {
            let awaiting = Awaiting {
                seq: s.seq,
                from_frame: cycle.first_frame + offset as u64,
            };
            match self.awaiting.iter_mut().find(|a| a.is_none()) {
                Some(slot) => *slot = Some(awaiting),
                // Too many notes in flight: this one is not looked for.
                None => {
                    let _ = self.onsets.push(Onset {
                        seq: s.seq,
                        captured_frame: None,
                    });
                }
            }
        }
    }

    /// Renders the cycle in segments split at the note-ons in `due` and the pending
    /// note-off, so every onset is sample-exact. Audio thread: DSP and array writes.
    #[inline]
    fn render(&mut self, cycle: &Cycle, out: &mut [f32], due: &DueStarts, loopback: bool) {
        let first = cycle.first_frame;
        let end = first + cycle.frames as u64;
        let (starts, n_starts) = (&due.starts, due.len);
        let mut pos = 0usize;
        let mut k = 0usize;
        let mut off_pending = self
            .note_end_frame
            .filter(|&f| f < end)
            .map(|f| (f.max(first) - first) as u32);
        loop {
            let next_start = if k < n_starts {
                starts[k].0 as usize
            } else {
                usize::MAX
            };
            let next_off = off_pending.map_or(usize::MAX, |o| o as usize);
            let next = next_start.min(next_off).min(out.len());
            if next > pos {
                self.workload.process(&mut out[pos..next]);
                pos = next;
            }
            if pos >= out.len() {
                break;
            }
            if next_off <= next_start {
                self.workload.note_off(0);
                self.note_end_frame = None;
                off_pending = None;
                continue;
            }
            // One or more note-ons at this offset: the note starts once; every trigger
            // that asked for this frame gets its row.
            let offset = starts[k].0;
            self.workload.note_on(0);
            self.note_end_frame = Some(first + offset as u64 + self.note_frames);
            off_pending = self
                .note_end_frame
                .filter(|&f| f < end)
                .map(|f| (f - first) as u32);
            while k < n_starts && starts[k].0 == offset {
                self.report_start(starts[k].1, cycle, offset, loopback);
                k += 1;
            }
        }
    }

    /// The awaited note an onset at `onset` belongs to: the oldest (slot `oldest`,
    /// starting at `from`), unless the stream was disrupted (see
    /// [`EventProcessor::disrupted_until`]) after the oldest started, so its onset may
    /// have been lost, and a later note started before the onset and fits it better at
    /// the loop's last delay; the older ones are then given up, and the move counted.
    /// Without such evidence the onset stays the oldest's: a loop longer than the
    /// spacing whose delay steps by more than half a spacing is measured as a step, not
    /// absorbed. Audio thread: a scan of the fixed array, ring pushes.
    #[inline]
    pub(super) fn onset_owner(&mut self, oldest: usize, from: u64, onset: u64) -> usize {
        if self.disrupted_until.is_none_or(|d| d <= from) {
            return oldest;
        }
        let misfit = |start: u64| (onset.saturating_sub(start)).abs_diff(self.loop_frames);
        let later = self
            .awaiting
            .iter()
            .enumerate()
            .filter_map(|(i, a)| a.map(|a| (a.from_frame, i)))
            .filter(|&(f, _)| f > from && f <= onset)
            .min_by_key(|&(f, _)| misfit(f));
        let Some((later_from, j)) = later else {
            return oldest;
        };
        if misfit(later_from) >= misfit(from) {
            return oldest;
        }
        for slot in self.awaiting.iter_mut() {
            if let Some(a) = *slot {
                if a.from_frame < later_from {
                    *slot = None;
                    let _ = self.onsets.push(Onset {
                        seq: a.seq,
                        captured_frame: None,
                    });
                }
            }
        }
        self.counters.onsets_moved.fetch_add(1, Ordering::Relaxed);
        j
    }

    /// Loopback: gives up on notes whose onset did not come back in time, then finds the
    /// oldest awaited onset in `input`. Audio thread: a scan of the capture, ring pushes.
    #[inline]
    fn find_onsets(&mut self, cycle: &Cycle, input: Option<&[f32]>) {
        let n = cycle.frames as u64;
        let first = cycle.first_frame;
        let end = first + n;
        for slot in self.awaiting.iter_mut() {
            if let Some(a) = *slot {
                if end.saturating_sub(a.from_frame) > self.timeout_frames {
                    *slot = None;
                    let _ = self.onsets.push(Onset {
                        seq: a.seq,
                        captured_frame: None,
                    });
                }
            }
        }
        let Some(input) = input else {
            return;
        };
        let oldest = self
            .awaiting
            .iter()
            .enumerate()
            .filter_map(|(i, a)| a.map(|a| (a.from_frame, i)))
            .min();
        if let Some((from, i)) = oldest {
            let seq = self.awaiting[i].map_or(0, |a| a.seq);
            let start = from.max(self.heard_until).saturating_sub(first).min(n) as usize;
            let threshold = self.threshold * self.workload.onset_amplitude();
            let found = dsp::first_onset(&input[start.min(input.len())..], threshold);
            if let Some(g) = found {
                let onset = first + (start + g) as u64;
                // The oldest note's onset may have been lost (the stream skipped the
                // cycle that carried it): then this is a later note's, which it fits
                // at the loop's delay where the oldest's does not, and every later
                // note would otherwise take the one after it (one spacing late). Only
                // after a disruption: otherwise a latency step would be absorbed.
                let i = self.onset_owner(i, from, onset);
                let (seq, from) = self.awaiting[i].map_or((seq, from), |a| (a.seq, a.from_frame));
                self.awaiting[i] = None;
                self.loop_frames = onset.saturating_sub(from);
                self.heard_until = onset + self.note_frames + self.note_frames / 4;
                let captured_frame = Some(onset);
                let _ = self.onsets.push(Onset {
                    seq,
                    captured_frame,
                });
            }
        }
    }
}

impl Processor for EventProcessor {
    fn prepare(&mut self, info: &StreamInfo) {
        self.max_frames = info.period_frames as usize;
        self.workload
            .prepare(info.sample_rate_hz, info.period_frames as usize);
        self.note_frames = (self.note_ms * info.sample_rate_hz as f64 / 1e3).round() as u64;
        self.timeout_frames =
            (self.loopback_timeout_ms * info.sample_rate_hz as f64 / 1e3).round() as u64;
        // A first guess only (the first onset found replaces it): a capture latency not
        // read leaves its share out.
        let capture = info.capture_latency_frames.unwrap_or(0);
        self.loop_frames = u64::from(info.buffer_frames() + capture);
    }

    /// The audio callback, a real-time loop: no allocation, no lock, no print. Schedules
    /// the cycle's triggers, renders the cycle split at its note-ons and note-off, and
    /// looks for the awaited onsets in the loopback capture.
    fn process(&mut self, cycle: &Cycle, io: &mut Io<'_>) {
        let first = cycle.first_frame;
        let end = first + cycle.frames as u64;
        let skipped = self.next_frame.is_some_and(|f| f != first);
        self.next_frame = Some(end);
        if skipped || cycle.overran || cycle.checked.is_none() || io.output.len() > self.max_frames
        {
            self.disrupted_until = Some(end);
        }
        if io.output.len() > self.max_frames {
            // The server changed its buffer size beyond what was prepared: stay silent
            // rather than allocate on this thread.
            io.output.fill(0.0);
            self.counters
                .oversized_cycles
                .fetch_add(1, Ordering::Relaxed);
            return;
        }
        // 1. New triggers become scheduled notes.
        if self.midi {
            self.schedule_midi(cycle, io);
        }
        self.schedule_triggers(cycle);
        if self.policy == NotePolicy::Fixed {
            self.replace_fixed(cycle);
        }
        // 2. Events inside this cycle, in frame order: note-ons and the note-off.
        let due = self.due_starts(first, end);
        // 3. Render in segments split at the events.
        let loopback = io.input.is_some();
        self.render(cycle, io.output, &due, loopback);
        // 4. Loopback: give up on late onsets, find the oldest awaited one.
        self.find_onsets(cycle, io.input);
    }
}
