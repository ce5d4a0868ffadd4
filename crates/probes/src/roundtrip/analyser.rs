//! The analysing thread's side: clicks found and windows estimated from the captured blocks.

use super::*;

/// The analysis side: a contiguous history of the capture, cut into click windows and
/// tone windows as they fill.
pub(super) struct Analyser {
    pub(super) tone: Arc<MultiTone>,
    pub(super) spacing: u64,
    pub(super) impulses: u64,
    pub(super) every: u64,
    pub(super) min_peak: f32,
    pub(super) start: Option<u64>,
    pub(super) history: VecDeque<f32>,
    pub(super) history_first: u64,
    pub(super) next_impulse: u64,
    pub(super) next_window: u64,
    pub(super) window_seq: u32,
    /// The latest cycle's position and time, to date windows.
    pub(super) clock: Option<(u64, u64, f64, u32)>,
    /// Stream positions of the under-runs (xruns, skipped cycles) so far, by their times
    /// on the cycles' clock (see [`Analyser::dropout_near`]).
    pub(super) dropouts: Vec<u64>,
}

impl Analyser {
    pub(super) fn tone_start(&self) -> u64 {
        self.start.unwrap_or(0) + self.impulses * self.spacing
    }

    /// Adds a captured block; a jump in positions starts the history again (no window
    /// may span a gap).
    pub(super) fn feed(&mut self, first: u64, samples: impl Iterator<Item = f32>) {
        let end = self.history_first + self.history.len() as u64;
        if self.history.is_empty() || first != end {
            self.history.clear();
            self.history_first = first;
        }
        self.history.extend(samples);
    }

    pub(super) fn window(&self, from: u64, len: usize) -> Option<Vec<f32>> {
        let end = self.history_first + self.history.len() as u64;
        if from < self.history_first || from + len as u64 > end {
            return None;
        }
        let skip = (from - self.history_first) as usize;
        Some(self.history.range(skip..skip + len).copied().collect())
    }

    pub(super) fn time_of(&self, position: u64) -> u64 {
        match self.clock {
            Some((first, nominal_ns, period_ns, frames)) => {
                let offset = position as f64 - first as f64;
                (nominal_ns as f64 + offset * period_ns / f64::from(frames.max(1))).max(0.0) as u64
            }
            None => monotonic_ns(),
        }
    }

    /// Stream position of time `t_ns` on the latest cycle's clock; `None` before the
    /// first cycle.
    pub(super) fn position_at(&self, t_ns: u64) -> Option<u64> {
        let (first, nominal_ns, period_ns, frames) = self.clock?;
        let since = t_ns as f64 - nominal_ns as f64;
        Some((first as f64 + since * f64::from(frames) / period_ns.max(1.0)).max(0.0) as u64)
    }

    /// Whether the capture window `[from, from + n)` may hold the return of an
    /// under-run's dropout. An under-run reported at position `x` silenced output frames
    /// before `x` (those due while the application was held up, a stall shorter than a
    /// tone period), and the loop, shorter than half a tone period, brings them back by
    /// `x + n / 2`: a window overlapping `(x - n, x + n / 2]` is not a clean loop.
    pub(super) fn dropout_near(&self, from: u64, n: u64) -> bool {
        self.dropouts
            .iter()
            .any(|&x| from <= x + n / 2 && from + n > x.saturating_sub(n))
    }

    /// Clicks and windows that can be analysed now.
    pub(super) fn analyse(
        &mut self,
        impulses: &mut Vec<ImpulseRow>,
        estimates: &mut Vec<EstimateRow>,
    ) {
        let Some(start) = self.start else { return };
        let n = self.tone.period();
        let history_end = self.history_first + self.history.len() as u64;
        while self.next_impulse < self.impulses {
            let sent = start + self.next_impulse * self.spacing;
            if history_end < sent + self.spacing {
                break;
            }
            let onset = self
                .window(sent, self.spacing as usize)
                .and_then(|w| impulse_onset(&w, sent as i64, sent as i64, self.min_peak));
            impulses.push(ImpulseRow {
                seq: self.next_impulse as u32,
                position: sent,
                onset,
                dropout: self.dropout_near(sent, self.spacing),
            });
            self.next_impulse += 1;
        }
        let tone_start = self.tone_start();
        if self.next_window == 0 {
            // The first window starts a whole tone period after the tone did: every loop
            // shorter than that is in its steady state by then.
            self.next_window = tone_start + n as u64;
        }
        loop {
            let from = self.next_window;
            if history_end < from + n as u64 {
                break;
            }
            if let Some(w) = self.window(from, n) {
                let mut estimate = self.tone.estimate(&w, from as i64 - tone_start as i64);
                // The phase gives the delay modulo the tone period, centred on 0; a loop
                // is causal, so a negative reading is the period minus the loop's excess.
                if estimate.delay_frames < -1.0 {
                    estimate.delay_frames += n as f64;
                }
                // A window holding an under-run's dropout reads a delay off by the
                // hole's share of the fit (0.0008 frame for a period of silence in a
                // window of 8192 frames on the virtual card), within its own standard
                // error: it is a dropout, not the loop.
                if estimate.verdict == Verdict::Ok && self.dropout_near(from, n as u64) {
                    estimate.verdict = Verdict::Unreliable;
                }
                estimates.push(EstimateRow {
                    seq: self.window_seq,
                    position: from,
                    time_ns: self.time_of(from + n as u64),
                    estimate,
                });
                self.window_seq += 1;
                self.next_window = from + self.every;
            } else {
                // The history restarted after a gap: the next window starts in it.
                self.next_window = self.history_first.max(from + self.every);
            }
        }
        // Keep what the next click or window still needs.
        let keep_from = if self.next_impulse < self.impulses {
            start + self.next_impulse * self.spacing
        } else {
            self.next_window
        };
        while self.history_first < keep_from && !self.history.is_empty() {
            self.history.pop_front();
            self.history_first += 1;
        }
    }
}
