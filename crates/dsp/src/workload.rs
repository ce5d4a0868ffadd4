//! [`Workload`]: the tone generator the audio thread drives.

use crate::wavetable::{phase_increment, SineTable, QUARTER_CYCLE};
use crate::WorkloadKind;
use std::fmt;

/// Peak amplitude of every workload: the sum of its oscillators' amplitudes.
const PEAK: f64 = 0.5;
/// Spacing of the bank's frequency ratios: oscillator `k` runs at `f · (1 + k · 0.01)`.
const BANK_RATIO_STEP: f64 = 0.01;
/// Bank frequencies above this fraction of the sample rate fold back above `f`.
const BANK_CEILING_OF_RATE: f64 = 0.45;

/// One tone generator the audio thread drives.
///
/// A workload is a sum of wavetable oscillators (see [`WorkloadKind`]) that sounds a
/// note between a [`note_on`](Workload::note_on) and a [`note_off`](Workload::note_off),
/// each placed at an exact frame of the next [`process`](Workload::process) buffer.
///
/// Threads: [`new`](Workload::new) and [`prepare`](Workload::prepare) run on a set-up
/// thread and may allocate. [`reset`](Workload::reset), [`note_on`](Workload::note_on),
/// [`note_off`](Workload::note_off), [`process`](Workload::process) and the getters run
/// on the audio thread: they never allocate, lock, block, print or panic.
///
/// Every note starts all its oscillators at a quarter cycle (a cosine, peak first), so a
/// note's first sample is exactly [`onset_amplitude`](Workload::onset_amplitude) and no
/// sample of the note is larger in magnitude.
pub struct Workload {
    kind: WorkloadKind,
    frequency_hz: f32,
    table: SineTable,
    phases: Vec<u32>,
    increments: Vec<u32>,
    amplitudes: Vec<f32>,
    onset_amplitude: f32,
    /// 0 until `prepare` has been called.
    sample_rate_hz: u32,
    max_frames: usize,
    sounding: bool,
    pending: Pending,
}

/// Note events scheduled for the next `process` buffer.
#[derive(Clone, Copy, Debug, Default)]
struct Pending {
    on: Option<usize>,
    off: Option<usize>,
    /// Which of the two was called last: it applies second when both share an offset.
    off_called_last: bool,
}

#[derive(Clone, Copy, Debug)]
enum NoteEvent {
    On,
    Off,
}

impl Workload {
    /// Creates a silent workload of `kind` whose notes sound at `frequency_hz`. May
    /// allocate (the wavetable and one phase per oscillator).
    ///
    /// For `poly` the partials are at 2 and 3 times `frequency_hz`; for `bank:N`,
    /// oscillator `k` (from 0) is at `frequency_hz · (1 + k/100)`, and frequencies above
    /// 0.45 × the sample rate fold back into the range from `frequency_hz` up to there
    /// (so `bank:4096` at 440 Hz stays under 18.5 kHz without folding). A `frequency_hz`
    /// at or above Nyquist aliases as sampling it would.
    ///
    /// `Bank(n)` accepts any `n >= 1`, not only the command line's 1 to 65536.
    ///
    /// # Panics
    ///
    /// If `frequency_hz` is not a finite number above 0, or `kind` is `Bank(0)`.
    pub fn new(kind: WorkloadKind, frequency_hz: f32) -> Workload {
        assert!(
            frequency_hz.is_finite() && frequency_hz > 0.0,
            "workload frequency must be a finite number of Hz above 0, got {frequency_hz}"
        );
        // Poly's 1, 1/2, 1/3 as integers.
        let weights: Vec<u64> = match kind {
            WorkloadKind::Sine => vec![1],
            WorkloadKind::Poly => vec![6, 3, 2],
            WorkloadKind::Bank(voices) => {
                assert!(voices >= 1, "a bank workload needs at least 1 voice");
                vec![1; voices]
            }
        };
        let amplitudes = normalised_amplitudes(&weights);
        let onset_amplitude = amplitudes.iter().fold(0.0, |sum, &a| sum + a);
        let voices = amplitudes.len();
        Workload {
            kind,
            frequency_hz,
            table: SineTable::new(),
            phases: vec![QUARTER_CYCLE; voices],
            increments: vec![0; voices],
            amplitudes,
            onset_amplitude,
            sample_rate_hz: 0,
            max_frames: 0,
            sounding: false,
            pending: Pending::default(),
        }
    }

    /// The kind this workload was created with.
    pub fn kind(&self) -> WorkloadKind {
        self.kind
    }

    /// Set-up thread; may allocate. Sets every oscillator's phase increment for
    /// `sample_rate_hz` (the wavetable itself was built by [`new`](Workload::new)) and
    /// resets the workload as [`reset`](Workload::reset) does.
    ///
    /// Must be called before [`process`](Workload::process) (until then `process` writes
    /// silence and drops note events); calling it again re-prepares, e.g. for a new rate.
    /// `max_frames` is the longest buffer `process` will be given; no scratch memory
    /// depends on it today, so a longer buffer is still rendered correctly.
    ///
    /// # Panics
    ///
    /// If `sample_rate_hz` is 0.
    pub fn prepare(&mut self, sample_rate_hz: u32, max_frames: usize) {
        assert!(sample_rate_hz > 0, "sample rate must be above 0 Hz");
        self.sample_rate_hz = sample_rate_hz;
        self.max_frames = max_frames;
        let rate_hz = f64::from(sample_rate_hz);
        let base_hz = f64::from(self.frequency_hz);
        match self.kind {
            WorkloadKind::Sine | WorkloadKind::Poly => {
                // Partials are exact multiples of the fundamental's step: they never drift.
                let step = phase_increment(base_hz, sample_rate_hz);
                for (harmonic, increment) in (1u32..).zip(self.increments.iter_mut()) {
                    *increment = step.wrapping_mul(harmonic);
                }
            }
            WorkloadKind::Bank(_) => {
                let ceiling_hz = BANK_CEILING_OF_RATE * rate_hz;
                for (k, increment) in self.increments.iter_mut().enumerate() {
                    let mut hz = base_hz * (1.0 + k as f64 * BANK_RATIO_STEP);
                    if base_hz < ceiling_hz && hz > ceiling_hz {
                        hz = base_hz + (hz - base_hz) % (ceiling_hz - base_hz);
                    }
                    *increment = phase_increment(hz, sample_rate_hz);
                }
            }
        }
        self.reset();
    }

    /// Audio thread; real-time safe. Silence: the note stops, scheduled events are
    /// dropped and every oscillator's phase returns to a quarter cycle.
    pub fn reset(&mut self) {
        self.phases.fill(QUARTER_CYCLE);
        self.sounding = false;
        self.pending = Pending::default();
    }

    /// Audio thread; real-time safe. Schedules a note to start at frame `offset` of the
    /// next [`process`](Workload::process) buffer.
    ///
    /// `offset` should be below that buffer's length; a larger one is clamped to its last
    /// frame. The onset is sample-exact: `out[offset]` is the note's first sample and
    /// equals [`onset_amplitude`](Workload::onset_amplitude) (non-zero), so an onset
    /// detector with any threshold up to that value finds exactly that frame. Frames
    /// before `offset` are what they would have been without the call (silence if no
    /// note was sounding). A note-on while a note sounds restarts it at `offset`.
    ///
    /// One note-on is kept per buffer: a second call before `process` replaces the first.
    /// A note-on and a note-off at the same offset take effect in the order they were
    /// called (off then on starts a note; on then off leaves silence).
    pub fn note_on(&mut self, offset: usize) {
        self.pending.on = Some(offset);
        self.pending.off_called_last = false;
    }

    /// Audio thread; real-time safe. Schedules the note to stop at frame `offset` of the
    /// next [`process`](Workload::process) buffer: output is exactly 0.0 from that frame
    /// on. Offsets are clamped as for [`note_on`](Workload::note_on), and a second
    /// note-off before `process` replaces the first. Without a sounding note it does
    /// nothing.
    pub fn note_off(&mut self, offset: usize) {
        self.pending.off = Some(offset);
        self.pending.off_called_last = true;
    }

    /// Whether a note was sounding at the end of the last [`process`](Workload::process)
    /// buffer (a note-on not yet processed does not count).
    pub fn is_sounding(&self) -> bool {
        self.sounding
    }

    /// Audio thread; real-time safe. Fills `out` (mono) with the next `out.len()` frames
    /// and consumes the scheduled note events. Silence is exactly 0.0.
    ///
    /// Every oscillator is computed for every frame while a note sounds: the cost is
    /// proportional to `voices() × frames`. An empty `out` leaves the events scheduled for
    /// the next non-empty buffer.
    pub fn process(&mut self, out: &mut [f32]) {
        let Some(last_frame) = out.len().checked_sub(1) else {
            return;
        };
        let pending = std::mem::take(&mut self.pending);
        let on = pending
            .on
            .map(|offset| (offset.min(last_frame), NoteEvent::On));
        let off = pending
            .off
            .map(|offset| (offset.min(last_frame), NoteEvent::Off));
        let events = match (on, off) {
            (Some(on), Some(off))
                if off.0 < on.0 || (off.0 == on.0 && !pending.off_called_last) =>
            {
                [Some(off), Some(on)]
            }
            (on, off) => [on, off],
        };
        let mut position = 0;
        for (offset, event) in events.into_iter().flatten() {
            self.render(&mut out[position..offset]);
            position = offset;
            match event {
                NoteEvent::On => {
                    self.phases.fill(QUARTER_CYCLE);
                    self.sounding = self.sample_rate_hz > 0;
                }
                NoteEvent::Off => self.sounding = false,
            }
        }
        self.render(&mut out[position..]);
    }

    /// The note's first sample, and the largest magnitude any of its samples reaches:
    /// Exactly 0.5 for every kind: the oscillators' amplitudes add up to it. Onset
    /// thresholds are fractions of this.
    pub fn onset_amplitude(&self) -> f32 {
        self.onset_amplitude
    }

    /// Writes the sounding note (or silence) into `out`, advancing every oscillator.
    fn render(&mut self, out: &mut [f32]) {
        out.fill(0.0);
        if !self.sounding || out.is_empty() {
            return;
        }
        let table = &self.table;
        let oscillators = self
            .phases
            .iter_mut()
            .zip(&self.increments)
            .zip(&self.amplitudes);
        for ((phase, &increment), &amplitude) in oscillators {
            let mut p = *phase;
            for sample in out.iter_mut() {
                *sample += amplitude * table.lookup(p);
                p = p.wrapping_add(increment);
            }
            *phase = p;
        }
    }
}

impl fmt::Debug for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workload")
            .field("kind", &self.kind)
            .field("frequency_hz", &self.frequency_hz)
            .field("sample_rate_hz", &self.sample_rate_hz)
            .field("max_frames", &self.max_frames)
            .field("onset_amplitude", &self.onset_amplitude)
            .field("sounding", &self.sounding)
            .finish_non_exhaustive()
    }
}

/// Amplitudes in proportion to integer `weights` (to within one quantum) that add up to
/// exactly `PEAK`.
///
/// Each amplitude is a whole number of quanta of 2^-25, the spacing of f32 values just
/// below 0.5, so every partial sum on the way to 0.5 is an f32 and the note's first
/// sample (the amplitudes added in order, each times exactly 1.0) is exactly 0.5.
fn normalised_amplitudes(weights: &[u64]) -> Vec<f32> {
    const QUANTA_PER_PEAK: u64 = 1 << 24;
    const QUANTUM: f32 = PEAK as f32 / QUANTA_PER_PEAK as f32;
    let total: u64 = weights.iter().sum();
    let mut quanta: Vec<u64> = weights
        .iter()
        .map(|w| QUANTA_PER_PEAK * w / total)
        .collect();
    // Flooring left fewer quanta than oscillators; hand them out one each.
    let missing = QUANTA_PER_PEAK - quanta.iter().sum::<u64>();
    for q in quanta.iter_mut().take(missing as usize) {
        *q += 1;
    }
    quanta.iter().map(|&q| q as f32 * QUANTUM).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::first_onset;

    const KINDS: [WorkloadKind; 5] = [
        WorkloadKind::Sine,
        WorkloadKind::Poly,
        WorkloadKind::Bank(1),
        WorkloadKind::Bank(3),
        WorkloadKind::Bank(64),
    ];

    fn prepared(kind: WorkloadKind, rate_hz: u32, frames: usize) -> Workload {
        let mut workload = Workload::new(kind, crate::DEFAULT_FREQUENCY_HZ);
        workload.prepare(rate_hz, frames);
        workload
    }

    /// Positive-going zero crossings, interpolated between samples.
    fn rising_crossings(samples: &[f32]) -> Vec<f64> {
        samples
            .windows(2)
            .enumerate()
            .filter(|(_, w)| w[0] < 0.0 && w[1] >= 0.0)
            .map(|(i, w)| {
                let (a, b) = (f64::from(w[0]), f64::from(w[1]));
                i as f64 + a / (a - b)
            })
            .collect()
    }

    fn cents(measured_hz: f64, target_hz: f64) -> f64 {
        1200.0 * (measured_hz / target_hz).log2()
    }

    /// Worst frequency error in cents over several notes and rates, from the signal
    /// (zero crossings over 10 s) and from the phase increments.
    fn worst_frequency_errors() -> (f64, f64) {
        let (mut worst_signal, mut worst_step) = (0.0f64, 0.0f64);
        for rate_hz in [44_100u32, 48_000] {
            for target_hz in [27.5f32, 440.0, 1000.0, 4186.0] {
                let mut workload = Workload::new(WorkloadKind::Sine, target_hz);
                workload.prepare(rate_hz, 1024);
                workload.note_on(0);
                let mut out = vec![0.0f32; 10 * rate_hz as usize];
                workload.process(&mut out);
                let crossings = rising_crossings(&out);
                let cycles = (crossings.len() - 1) as f64;
                let span = crossings[crossings.len() - 1] - crossings[0];
                let measured_hz = cycles * f64::from(rate_hz) / span;
                let step_hz =
                    crate::wavetable::increment_frequency_hz(workload.increments[0], rate_hz);
                worst_signal = worst_signal.max(cents(measured_hz, f64::from(target_hz)).abs());
                worst_step = worst_step.max(cents(step_hz, f64::from(target_hz)).abs());
            }
        }
        (worst_signal, worst_step)
    }

    #[test]
    fn frequency_error_is_far_below_one_cent() {
        let (signal_cents, step_cents) = worst_frequency_errors();
        println!("worst frequency error: {signal_cents:.2e} cents measured, {step_cents:.2e} cents from the phase step");
        assert!(signal_cents < 1.0 && step_cents < 1.0);
        // Measured: 2.7e-4 cents, the rounding of the phase step at 27.5 Hz.
        assert!(signal_cents < 1e-3, "{signal_cents:e} cents");
        assert!(step_cents < 1e-3, "{step_cents:e} cents");
    }

    /// THD (harmonics 2 to 10) and THD+N of `sine` at `frequency_hz`, in dB relative to
    /// the fundamental.
    ///
    /// The fundamental's phase is known exactly from the accumulator, so the ideal tone
    /// is subtracted sample by sample and the rest is projected onto harmonics of the
    /// exact generated frequency: no window, no leakage from a frequency a few
    /// nano-hertz off a DFT bin.
    fn distortion_db(frequency_hz: f32, rate_hz: u32, seconds: usize) -> (f64, f64) {
        let mut workload = Workload::new(WorkloadKind::Sine, frequency_hz);
        workload.prepare(rate_hz, 512);
        workload.note_on(0);
        let mut out = vec![0.0f32; seconds * rate_hz as usize];
        workload.process(&mut out);
        let step = workload.increments[0];
        let n = out.len() as f64;
        let angle = |i: usize| {
            let phase = QUARTER_CYCLE.wrapping_add(step.wrapping_mul(i as u32));
            std::f64::consts::TAU * f64::from(phase) / 4_294_967_296.0
        };
        let error: Vec<f64> = out
            .iter()
            .enumerate()
            .map(|(i, &x)| f64::from(x) - PEAK * angle(i).sin())
            .collect();
        let project = |harmonic: f64| {
            let (mut re, mut im) = (0.0, 0.0);
            for (i, e) in error.iter().enumerate() {
                let (s, c) = (harmonic * angle(i)).sin_cos();
                re += e * c;
                im += e * s;
            }
            (2.0 * re / n, 2.0 * im / n)
        };
        let (fundamental_cos, fundamental_sin) = project(1.0);
        let fundamental = (fundamental_cos.powi(2) + (PEAK + fundamental_sin).powi(2)).sqrt();
        let harmonic_power: f64 = (2..=10)
            .map(|h| {
                let (re, im) = project(f64::from(h));
                re * re + im * im
            })
            .sum();
        let thd = harmonic_power.sqrt() / fundamental;
        // Everything but the fundamental (the error minus its fundamental-coherent part).
        let residual_power = error
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let (s, c) = angle(i).sin_cos();
                (e - fundamental_cos * c - fundamental_sin * s).powi(2)
            })
            .sum::<f64>()
            / n;
        let thd_n = residual_power.sqrt() / (fundamental / std::f64::consts::SQRT_2);
        (20.0 * thd.log10(), 20.0 * thd_n.log10())
    }

    #[test]
    fn sine_distortion_is_far_below_minus_100_db() {
        for frequency_hz in [1000.0, 997.0] {
            let (thd_db, thd_n_db) = distortion_db(frequency_hz, 48_000, 2);
            println!("{frequency_hz} Hz at 48 kHz: THD {thd_db:.1} dB, THD+N {thd_n_db:.1} dB");
            assert!(thd_db < -100.0, "THD {thd_db:.1} dB at {frequency_hz} Hz");
            assert!(
                thd_n_db < -100.0,
                "THD+N {thd_n_db:.1} dB at {frequency_hz} Hz"
            );
        }
    }

    #[test]
    fn onset_is_sample_exact_for_every_kind_and_offset() {
        let frames = 128;
        for kind in KINDS {
            for offset in [0, 1, 17, frames - 1] {
                let mut workload = prepared(kind, 48_000, frames);
                let mut out = vec![f32::NAN; frames];
                workload.process(&mut out);
                assert!(
                    out.iter().all(|&x| x == 0.0),
                    "{kind}: silence before any note"
                );
                workload.note_on(offset);
                out.fill(f32::NAN);
                workload.process(&mut out);
                let amplitude = workload.onset_amplitude();
                assert!(amplitude > 0.0 && amplitude <= 0.5, "{kind}: {amplitude}");
                assert_eq!(
                    first_onset(&out, 0.5 * amplitude),
                    Some(offset),
                    "{kind} at {offset}"
                );
                assert_eq!(
                    first_onset(&out, amplitude),
                    Some(offset),
                    "{kind} at {offset}"
                );
                assert!(
                    out[..offset].iter().all(|&x| x == 0.0),
                    "{kind} at {offset}"
                );
                assert_eq!(out[offset], amplitude, "{kind} at {offset}");
                assert!(
                    out.iter().all(|x| x.abs() <= amplitude),
                    "{kind}: peak after onset"
                );
                assert!(workload.is_sounding());
            }
        }
    }

    #[test]
    fn onset_amplitude_is_exactly_half_for_every_kind() {
        let kinds = [WorkloadKind::Sine, WorkloadKind::Poly]
            .into_iter()
            .chain((1..=4096).map(WorkloadKind::Bank))
            .chain([WorkloadKind::Bank(100_000)]);
        for kind in kinds {
            let workload = Workload::new(kind, 440.0);
            assert_eq!(workload.onset_amplitude(), 0.5, "{kind}");
            let total: f64 = workload.amplitudes.iter().map(|&a| f64::from(a)).sum();
            assert_eq!(total, 0.5, "{kind}");
            let (low, high) = workload
                .amplitudes
                .iter()
                .fold((f32::MAX, 0.0f32), |(l, h), &a| (l.min(a), h.max(a)));
            if let WorkloadKind::Bank(_) = kind {
                assert!(high - low <= 2.0f32.powi(-25), "{kind}: equal voices");
            }
        }
        let poly = Workload::new(WorkloadKind::Poly, 440.0).amplitudes;
        for (amplitude, expected) in poly.iter().zip([3.0 / 11.0, 3.0 / 22.0, 1.0 / 11.0]) {
            assert!((f64::from(*amplitude) - expected).abs() < 1e-7);
        }
    }

    #[test]
    fn offset_past_the_buffer_is_clamped_to_its_last_frame() {
        for kind in KINDS {
            let mut workload = prepared(kind, 44_100, 64);
            let mut out = vec![0.0f32; 64];
            workload.note_on(1000);
            workload.process(&mut out);
            assert_eq!(first_onset(&out, 1e-9), Some(63), "{kind}");
            assert_eq!(out[63], workload.onset_amplitude());
        }
    }

    #[test]
    fn note_on_while_sounding_restarts_at_offset_and_leaves_earlier_frames_alone() {
        for kind in KINDS {
            let mut restarted = prepared(kind, 48_000, 128);
            let mut untouched = prepared(kind, 48_000, 128);
            let (mut a, mut b) = (vec![0.0f32; 128], vec![0.0f32; 128]);
            restarted.note_on(5);
            untouched.note_on(5);
            restarted.process(&mut a);
            untouched.process(&mut b);
            assert_eq!(a, b);
            restarted.note_on(40);
            restarted.process(&mut a);
            untouched.process(&mut b);
            assert_eq!(a[..40], b[..40], "{kind}: frames before the restart");
            assert!(
                a[..40].iter().any(|&x| x != 0.0),
                "{kind}: the old note sounds"
            );
            assert_eq!(a[40], restarted.onset_amplitude(), "{kind}");
            // The restarted note is the note started afresh.
            let mut fresh = prepared(kind, 48_000, 128);
            let mut c = vec![0.0f32; 128];
            fresh.note_on(40);
            fresh.process(&mut c);
            assert_eq!(a[40..], c[40..], "{kind}");
        }
    }

    #[test]
    fn note_off_makes_output_exactly_zero_from_offset() {
        for kind in KINDS {
            for offset in [0, 1, 17, 127] {
                let mut stopped = prepared(kind, 48_000, 128);
                let mut playing = prepared(kind, 48_000, 128);
                let (mut a, mut b) = (vec![0.0f32; 128], vec![0.0f32; 128]);
                stopped.note_on(3);
                playing.note_on(3);
                stopped.process(&mut a);
                playing.process(&mut b);
                stopped.note_off(offset);
                stopped.process(&mut a);
                playing.process(&mut b);
                assert_eq!(a[..offset], b[..offset], "{kind} off at {offset}");
                assert!(
                    a[offset..].iter().all(|&x| x == 0.0),
                    "{kind} off at {offset}"
                );
                assert!(b[offset..].iter().any(|&x| x != 0.0));
                assert!(!stopped.is_sounding());
                stopped.process(&mut a);
                assert!(a.iter().all(|&x| x == 0.0), "{kind}: silent afterwards");
            }
        }
    }

    #[test]
    fn note_off_and_on_in_one_buffer_apply_in_frame_then_call_order() {
        let amplitude = 0.5;
        let mut workload = prepared(WorkloadKind::Sine, 48_000, 64);
        let mut out = vec![0.0f32; 64];
        // A note from 10 to 30.
        workload.note_off(30);
        workload.note_on(10);
        workload.process(&mut out);
        assert_eq!(first_onset(&out, 0.25), Some(10));
        assert_eq!(out[10], amplitude);
        assert!(out[..10].iter().chain(&out[30..]).all(|&x| x == 0.0));
        assert!(!workload.is_sounding());
        // Same offset: on then off is silence, off then on is a note.
        workload.note_on(20);
        workload.note_off(20);
        workload.process(&mut out);
        assert!(out.iter().all(|&x| x == 0.0));
        workload.note_off(20);
        workload.note_on(20);
        workload.process(&mut out);
        assert_eq!(first_onset(&out, 0.25), Some(20));
        assert!(workload.is_sounding());
    }

    #[test]
    fn split_buffers_match_one_buffer() {
        for kind in KINDS {
            let mut whole = prepared(kind, 44_100, 256);
            let mut split = prepared(kind, 44_100, 256);
            let mut a = vec![0.0f32; 256];
            let mut b = vec![0.0f32; 256];
            whole.note_on(33);
            whole.process(&mut a);
            split.process(&mut b[..33]);
            split.note_on(0);
            split.process(&mut b[33..100]);
            split.process(&mut b[100..100]);
            split.process(&mut b[100..]);
            assert_eq!(a, b, "{kind}");
        }
    }

    #[test]
    fn reset_silences_and_restarts_phases() {
        for kind in KINDS {
            let mut workload = prepared(kind, 48_000, 64);
            let mut out = vec![0.0f32; 64];
            workload.note_on(0);
            workload.process(&mut out);
            workload.note_on(7);
            workload.reset();
            assert!(!workload.is_sounding());
            workload.process(&mut out);
            assert!(
                out.iter().all(|&x| x == 0.0),
                "{kind}: pending note dropped"
            );
            workload.note_on(0);
            let mut again = vec![0.0f32; 64];
            workload.process(&mut again);
            let mut fresh = prepared(kind, 48_000, 64);
            fresh.note_on(0);
            fresh.process(&mut out);
            assert_eq!(again, out, "{kind}");
        }
    }

    #[test]
    fn unprepared_workload_is_silent() {
        let mut workload = Workload::new(WorkloadKind::Poly, 440.0);
        let mut out = vec![1.0f32; 32];
        workload.note_on(0);
        workload.process(&mut out);
        assert!(out.iter().all(|&x| x == 0.0));
        assert!(!workload.is_sounding());
    }

    #[test]
    fn bank_oscillators_are_distinct_and_under_the_ceiling() {
        for rate_hz in [44_100u32, 48_000] {
            let workload = prepared(WorkloadKind::Bank(4096), rate_hz, 128);
            let mut steps = workload.increments.clone();
            steps.sort_unstable();
            steps.dedup();
            assert_eq!(steps.len(), 4096, "at {rate_hz} Hz");
            let ceiling = phase_increment(BANK_CEILING_OF_RATE * f64::from(rate_hz), rate_hz);
            assert!(workload.increments.iter().all(|&s| s <= ceiling));
        }
        // A high note folds instead of aliasing.
        let mut high = Workload::new(WorkloadKind::Bank(512), 8000.0);
        high.prepare(44_100, 128);
        let ceiling = phase_increment(0.45 * 44_100.0, 44_100);
        let floor = phase_increment(8000.0, 44_100);
        assert!(high
            .increments
            .iter()
            .all(|&s| (floor..=ceiling).contains(&s)));
    }

    #[test]
    fn poly_partials_are_exact_harmonics() {
        let workload = prepared(WorkloadKind::Poly, 48_000, 64);
        let f = workload.increments[0];
        assert_eq!(workload.increments, [f, 2 * f, 3 * f]);
        assert!(workload.amplitudes[0] > workload.amplitudes[1]);
        assert!(workload.amplitudes[1] > workload.amplitudes[2]);
    }

    #[test]
    #[should_panic(expected = "at least 1 voice")]
    fn empty_bank_is_refused() {
        let _ = Workload::new(WorkloadKind::Bank(0), 440.0);
    }

    #[test]
    #[should_panic(expected = "finite number of Hz above 0")]
    fn non_positive_frequency_is_refused() {
        let _ = Workload::new(WorkloadKind::Sine, 0.0);
    }
}
