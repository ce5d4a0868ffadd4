//! Finding the delay of a loop (output → cable or software → input), two ways:
//!
//! - **impulse onset** ([`impulse_onset`]): the method of the desktop OS study (MacMillan
//!   et al., 2001): send a click, count the frames until it comes back. Whole frames; the
//!   onset is the first sample reaching half the returned peak.
//! - **multi-tone phase** ([`MultiTone`]): send a periodic sum of sinusoids and read the
//!   phase of each partial in a window of what comes back. A pure delay of τ frames turns
//!   partial `k` by `−2πkτ/N`; the slope of phase against frequency is the delay, to a
//!   small fraction of a frame. Phase *differences* between partials resolve the whole
//!   frames (partials `k0` and `k0 + 1` give τ modulo the period `N`, more distant pairs
//!   refine it), so a high-pass in the loop (a sound card's DC blocking) does not upset
//!   the whole-frame count the way a lowest partial of one cycle per period would. The
//!   intercept of the fit tells the polarity; the fit's residual, the signal-to-noise ratio
//!   of the window and its clipped samples say how far to trust the figure.
//!
//! Real-time contract: [`MultiTone::new`] allocates (its table and twiddles);
//! [`MultiTone::sample_at`] and [`MultiTone::fill`] are real-time safe (a table read);
//! the estimators allocate a little and run off the audio thread.

use std::f64::consts::PI;

/// Lowest partial of the multi-tone, Hz (above any sound card's DC blocking).
pub const LOWEST_PARTIAL_HZ: f64 = 200.0;
/// Highest partial, as a fraction of the sample rate (inside any anti-aliasing filter's
/// flat band and the `virtual` card's fractional-delay interpolator).
pub const HIGHEST_PARTIAL_OF_RATE: f64 = 0.25;

/// How far a delay estimate can be trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A clean loop: the figure holds.
    Ok,
    /// Too little of the test signal came back: no loop, or one too quiet to measure.
    NoSignal,
    /// Signal came back, but not as a delayed copy (dropouts, distortion, noise, another
    /// signal mixed in): the figure is not to be used.
    Unreliable,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Ok => "ok",
            Verdict::NoSignal => "no signal",
            Verdict::Unreliable => "unreliable",
        })
    }
}

/// One multi-tone phase estimate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhaseEstimate {
    /// The loop's delay in frames, modulo the multi-tone's period, reported in
    /// (−period/8, 7·period/8] (a period from [`period_for`] puts a real loop under half).
    pub delay_frames: f64,
    /// Standard error of `delay_frames` from the fit's scatter, in frames.
    pub stderr_frames: f64,
    /// RMS of the partials' phase residuals around the fit, radians.
    pub residual_rad: f64,
    /// Median gain of the partials (1.0 for a unity loop).
    pub gain: f64,
    /// A partial's power against the power of the rest of the window (noise, distortion,
    /// other signals) in one frequency bin, dB: the figure the phases' precision follows.
    pub snr_db: f64,
    /// The loop inverts the signal (its phase intercept is near π).
    pub inverted: bool,
    /// Samples in the window at or above full scale (0.999).
    pub clipped: usize,
    /// The verdict from the figures above. For [`Verdict::NoSignal`] the delay and its
    /// error mean nothing (and are 0 when the window was silent).
    pub verdict: Verdict,
}

/// The periodic multi-tone test signal and its phase-slope delay estimator.
#[derive(Clone, Debug)]
pub struct MultiTone {
    period: usize,
    table: Vec<f32>,
    bins: Vec<usize>,
    /// DFT of the table at each bin.
    reference: Vec<(f64, f64)>,
    cos: Vec<f64>,
    sin: Vec<f64>,
}

/// The longest loop a round trip measures, in frames (and so the longest cable, inserted
/// delay or expected delay it takes): its multi-tone then repeats every 131072 frames,
/// 2.7 s at 48 kHz, and every click waits one such period; a longer loop would take
/// minutes before its first figure. A real loop (a cable, a server's buffers at 8192
/// frames a period) is well inside it.
pub const MAX_LOOP_FRAMES: u32 = 65_536;

/// The multi-tone period for loops up to `max_delay_frames`: a power of two at least
/// twice that and at least 4096.
pub fn period_for(max_delay_frames: f64) -> usize {
    ((2.0 * max_delay_frames.max(0.0)).ceil() as usize)
        .max(4096)
        .next_power_of_two()
}

impl MultiTone {
    /// A multi-tone repeating every `period` frames (a power of two, 256 or more) at
    /// `sample_rate_hz`, peaking at `peak`. Allocates.
    ///
    /// # Panics
    ///
    /// If `period` is not a power of two of at least 256, or `peak` is not in (0, 1].
    pub fn new(period: usize, sample_rate_hz: u32, peak: f32) -> MultiTone {
        assert!(
            period.is_power_of_two() && period >= 256,
            "multi-tone period must be a power of two of at least 256, got {period}"
        );
        assert!(
            peak > 0.0 && peak <= 1.0,
            "multi-tone peak must be in (0, 1], got {peak}"
        );
        let n = period;
        let k0 =
            ((LOWEST_PARTIAL_HZ * n as f64 / f64::from(sample_rate_hz)).round() as usize).max(1);
        let k_max = ((HIGHEST_PARTIAL_OF_RATE * n as f64) as usize).max(k0 + 2);
        // k0, then offsets 1, 2, 3, 4, 6, 8, 12, 16, ...: each offset at most doubles the
        // one before, so every phase difference unwraps from the one before.
        let mut offsets = vec![1usize, 2, 3];
        let mut p = 4usize;
        while k0 + p <= k_max {
            offsets.push(p);
            offsets.push(p + p / 2);
            p *= 2;
        }
        let bins: Vec<usize> = std::iter::once(k0)
            .chain(offsets.into_iter().map(|d| k0 + d))
            .filter(|&k| k <= k_max)
            .collect();
        let count = bins.len() as f64;
        let cos: Vec<f64> = (0..n)
            .map(|i| (2.0 * PI * i as f64 / n as f64).cos())
            .collect();
        let sin: Vec<f64> = (0..n)
            .map(|i| (2.0 * PI * i as f64 / n as f64).sin())
            .collect();
        // Schroeder phases keep the crest factor low.
        let mut signal = vec![0.0f64; n];
        for (i, &k) in bins.iter().enumerate() {
            let phase = -PI * (i * (i + 1)) as f64 / count;
            let (c, s) = (phase.cos(), phase.sin());
            for (m, x) in signal.iter_mut().enumerate() {
                let j = (k * m) % n;
                // cos(2πkm/N + φ)
                *x += cos[j] * c - sin[j] * s;
            }
        }
        let top = signal.iter().fold(0.0f64, |a, &x| a.max(x.abs()));
        let table: Vec<f32> = signal
            .iter()
            .map(|&x| (x * f64::from(peak) / top) as f32)
            .collect();
        let mut tone = MultiTone {
            period: n,
            table,
            bins,
            reference: Vec::new(),
            cos,
            sin,
        };
        let table64: Vec<f64> = tone.table.iter().map(|&x| f64::from(x)).collect();
        tone.reference = tone.bins.iter().map(|&k| tone.dft(&table64, k)).collect();
        tone
    }

    /// The period in frames.
    pub fn period(&self) -> usize {
        self.period
    }

    /// The partials' bin numbers (cycles per period).
    pub fn bins(&self) -> &[usize] {
        &self.bins
    }

    /// The signal at stream position `position`. Real-time safe.
    #[inline]
    pub fn sample_at(&self, position: i64) -> f32 {
        self.table[position.rem_euclid(self.period as i64) as usize]
    }

    /// Writes the signal for positions `first_position ..` into `out`. Real-time safe.
    pub fn fill(&self, first_position: i64, out: &mut [f32]) {
        for (i, x) in out.iter_mut().enumerate() {
            *x = self.sample_at(first_position + i as i64);
        }
    }

    fn dft(&self, window: &[f64], k: usize) -> (f64, f64) {
        let n = self.period;
        let (mut re, mut im) = (0.0, 0.0);
        let mut j = 0usize;
        for &x in window {
            re += x * self.cos[j];
            im -= x * self.sin[j];
            j += k;
            if j >= n {
                j -= n;
            }
        }
        (re, im)
    }

    /// Estimates the delay from `window` (exactly one period of what came back), whose
    /// first sample is at stream position `first_position`; positions count on the same
    /// clock as the ones the signal was sent at. The delay is the difference of positions,
    /// from 0 up to the period.
    ///
    /// # Panics
    ///
    /// If `window` is not one period long.
    pub fn estimate(&self, window: &[f32], first_position: i64) -> PhaseEstimate {
        let n = self.period;
        assert_eq!(window.len(), n, "the window must be one period long");
        let x: Vec<f64> = window.iter().map(|&v| f64::from(v)).collect();
        let clipped = window.iter().filter(|v| v.abs() >= 0.999).count();
        let total_energy: f64 = x.iter().map(|v| v * v).sum();
        let q = first_position.rem_euclid(n as i64) as usize;
        // R_k = X_k / (T_k · e^{i2πkq/N}) = gain · polarity · e^{-i2πkτ/N}.
        let mut ratio = Vec::with_capacity(self.bins.len());
        let mut tone_energy = 0.0;
        for (&k, &(tr, ti)) in self.bins.iter().zip(&self.reference) {
            let (xr, xi) = self.dft(&x, k);
            tone_energy += 2.0 * (xr * xr + xi * xi) / n as f64;
            let j = (k * q) % n;
            // T_k · e^{iθ}, θ = 2πkq/N
            let (rr, ri) = (
                tr * self.cos[j] - ti * self.sin[j],
                tr * self.sin[j] + ti * self.cos[j],
            );
            let den = rr * rr + ri * ri;
            ratio.push(((xr * rr + xi * ri) / den, (xi * rr - xr * ri) / den));
        }
        // Per bin: a partial's power against the noise power in one bin of the window.
        let noise_bins = (n / 2 - self.bins.len()).max(1) as f64;
        let noise = (total_energy - tone_energy)
            .max(total_energy * 1e-15)
            .max(1e-30)
            / noise_bins;
        let snr_db = 10.0 * ((tone_energy / self.bins.len() as f64).max(1e-30) / noise).log10();
        let mut gains: Vec<f64> = ratio.iter().map(|(r, i)| r.hypot(*i)).collect();
        gains.sort_by(f64::total_cmp);
        let gain = gains[gains.len() / 2];
        let phases: Vec<f64> = ratio.iter().map(|(r, i)| i.atan2(*r)).collect();
        let weights: Vec<f64> = ratio.iter().map(|(r, i)| r * r + i * i).collect();
        let total_weight: f64 = weights.iter().sum();
        if total_weight.is_nan() || total_weight <= 0.0 {
            // Nothing at any partial (silence): no phase to fit.
            return PhaseEstimate {
                delay_frames: 0.0,
                stderr_frames: 0.0,
                residual_rad: 0.0,
                gain,
                snr_db,
                inverted: false,
                clipped,
                verdict: Verdict::NoSignal,
            };
        }

        let nf = n as f64;
        let PhaseLine {
            tau,
            phi0,
            residual_rad,
            stderr_frames,
        } = fit_phase_line(&self.bins, &phases, &weights, n);
        let inverted = phi0.cos() < 0.0;
        let verdict = if gain < 1e-3 || snr_db < 10.0 {
            Verdict::NoSignal
        } else if residual_rad > 0.2 || stderr_frames > 0.5 {
            Verdict::Unreliable
        } else {
            Verdict::Ok
        };
        // A loop's delay is under half the period (see `period_for`): report it in
        // (−N/8, 7N/8], so a zero delay with a little noise is not read as a whole period.
        let mut delay_frames = tau.rem_euclid(nf);
        if delay_frames > 0.875 * nf {
            delay_frames -= nf;
        }
        PhaseEstimate {
            delay_frames,
            stderr_frames,
            residual_rad,
            gain,
            snr_db,
            inverted,
            clipped,
            verdict,
        }
    }
}

/// A line fitted through the partials' phases (see [`fit_phase_line`]).
struct PhaseLine {
    /// The delay τ, frames (any number of periods).
    tau: f64,
    /// The intercept φ0, rad.
    phi0: f64,
    /// The weighted RMS residual of the phases about the line, rad.
    residual_rad: f64,
    /// τ's standard error, frames.
    stderr_frames: f64,
}

/// The line through the partials' phases, θ_k = φ0 − 2πkτ/N (bins `bins` of an
/// `n`-sample period, each phase weighted by its partial's power): the delay τ in frames,
/// its intercept, how well it fits and how sure τ is.
fn fit_phase_line(bins: &[usize], phases: &[f64], weights: &[f64], n: usize) -> PhaseLine {
    // Whole periods of each difference from the one before, then a weighted fit of
    // the unwrapped phases: θ_k = φ0 − 2πkτ/N.
    let nf = n as f64;
    let k0 = bins[0];
    let diff = |i: usize| wrap(phases[i] - phases[0]);
    let mut tau = (-diff(1) * nf / (2.0 * PI)).rem_euclid(nf);
    for (i, &k) in bins.iter().enumerate().skip(2) {
        let d = (k - k0) as f64;
        let predicted = -2.0 * PI * d * tau / nf;
        tau -= wrap(diff(i) - predicted) * nf / (2.0 * PI * d);
    }
    let mut phi0 = 0.0;
    for _ in 0..2 {
        // Intercept at the current slope (circular mean), then unwrap and refit.
        let (mut c, mut s) = (0.0, 0.0);
        for (i, &k) in bins.iter().enumerate() {
            let a = phases[i] + 2.0 * PI * k as f64 * tau / nf;
            c += weights[i] * a.cos();
            s += weights[i] * a.sin();
        }
        phi0 = s.atan2(c);
        let (mut sw, mut sk, mut sy, mut skk, mut sky) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for (i, &k) in bins.iter().enumerate() {
            let kf = k as f64;
            let predicted = phi0 - 2.0 * PI * kf * tau / nf;
            let y = predicted + wrap(phases[i] - predicted);
            let w = weights[i];
            sw += w;
            sk += w * kf;
            sy += w * y;
            skk += w * kf * kf;
            sky += w * kf * y;
        }
        let slope = (sw * sky - sk * sy) / (sw * skk - sk * sk);
        let intercept = (sy - slope * sk) / sw;
        tau = -slope * nf / (2.0 * PI);
        phi0 = intercept;
    }
    let (mut sw, mut sres, mut skk_c) = (0.0, 0.0, 0.0);
    let kbar: f64 = bins
        .iter()
        .zip(weights)
        .map(|(&k, w)| k as f64 * w)
        .sum::<f64>()
        / weights.iter().sum::<f64>();
    for (i, &k) in bins.iter().enumerate() {
        let kf = k as f64;
        let r = wrap(phases[i] - (phi0 - 2.0 * PI * kf * tau / nf));
        sw += weights[i];
        sres += weights[i] * r * r;
        skk_c += weights[i] * (kf - kbar) * (kf - kbar);
    }
    let residual_rad = (sres / sw).sqrt();
    let dof = (bins.len() as f64 - 2.0).max(1.0);
    let slope_var = sres / dof / skk_c;
    let stderr_frames = slope_var.sqrt() * nf / (2.0 * PI);
    PhaseLine {
        tau,
        phi0,
        residual_rad,
        stderr_frames,
    }
}

/// An angle wrapped into (−π, π].
fn wrap(a: f64) -> f64 {
    let w = (a + PI).rem_euclid(2.0 * PI) - PI;
    if w == -PI {
        PI
    } else {
        w
    }
}

/// One impulse found again.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ImpulseOnset {
    /// Frames from the impulse to its returned onset (the first sample reaching half the
    /// returned peak).
    pub frames: i64,
    /// The returned peak's magnitude.
    pub peak: f32,
    /// The returned peak is negative (for a positive impulse).
    pub inverted: bool,
    /// Samples in the window at or above full scale (0.999).
    pub clipped: usize,
}

/// Finds a returned impulse in `window` (first sample at stream position
/// `window_position`) sent at stream position `impulse_position`; `None` when the
/// window's peak is under `min_peak` (nothing came back).
pub fn impulse_onset(
    window: &[f32],
    window_position: i64,
    impulse_position: i64,
    min_peak: f32,
) -> Option<ImpulseOnset> {
    let (index, &value) = window
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))?;
    let peak = value.abs();
    if peak.is_nan() || peak < min_peak {
        return None;
    }
    let onset = window[..=index]
        .iter()
        .position(|x| x.abs() >= 0.5 * peak)?;
    Some(ImpulseOnset {
        frames: window_position + onset as i64 - impulse_position,
        peak,
        inverted: value < 0.0,
        clipped: window.iter().filter(|v| v.abs() >= 0.999).count(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fractional::DelayKernel;

    /// What a loop of `delay` frames, `gain` and `noise` returns at positions
    /// `first..first + len`, for the tone sent at every position.
    fn looped(
        tone: &MultiTone,
        delay: f64,
        gain: f32,
        first: i64,
        len: usize,
        noise: f32,
    ) -> Vec<f32> {
        let kernel = DelayKernel::new(delay);
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        (0..len as i64)
            .map(|i| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let r = (seed >> 11) as f32 / (1u64 << 53) as f32 - 0.5;
                gain * kernel.output_at(first + i, |p| tone.sample_at(p)) + noise * r
            })
            .collect()
    }

    #[test]
    fn the_tone_repeats_peaks_where_asked_and_spans_its_band() {
        let tone = MultiTone::new(8192, 48_000, 0.5);
        assert_eq!(tone.period(), 8192);
        let peak = (0..8192)
            .map(|p| tone.sample_at(p).abs())
            .fold(0.0, f32::max);
        assert!((peak - 0.5).abs() < 1e-6, "{peak}");
        assert_eq!(tone.sample_at(5), tone.sample_at(5 + 8192));
        assert_eq!(tone.sample_at(-1), tone.sample_at(8191));
        let bins = tone.bins();
        assert!(bins.len() >= 12, "{bins:?}");
        let hz = |k: usize| k as f64 * 48_000.0 / 8192.0;
        assert!((hz(bins[0]) - LOWEST_PARTIAL_HZ).abs() < 6.0);
        assert!(hz(*bins.last().unwrap()) <= 0.25 * 48_000.0);
        assert_eq!(bins[1] - bins[0], 1);
        // Each partial's distance from the first at most doubles the one before.
        for w in bins[1..].windows(2) {
            assert!(w[1] - bins[0] <= 2 * (w[0] - bins[0]), "{bins:?}");
        }
        let mut out = [0.0f32; 7];
        tone.fill(100, &mut out);
        assert_eq!(out[3], tone.sample_at(103));
    }

    #[test]
    fn integer_and_fractional_delays_are_found_to_a_hundredth_of_a_frame() {
        let tone = MultiTone::new(8192, 48_000, 0.5);
        for delay in [
            0.0, 1.0, 64.0, 300.0, 0.5, 17.25, 256.75, 1000.1, 4095.5, 6000.0,
        ] {
            for first in [0i64, 12_345, 100_000] {
                let window = looped(&tone, delay, 1.0, first, 8192, 0.0);
                let e = tone.estimate(&window, first);
                assert_eq!(e.verdict, Verdict::Ok, "{delay} at {first}: {e:?}");
                assert!(
                    (e.delay_frames - delay).abs() < 0.01,
                    "{delay} at {first}: {e:?}"
                );
                assert!(!e.inverted);
                assert!((e.gain - 1.0).abs() < 1e-3, "{e:?}");
                assert_eq!(e.clipped, 0);
            }
        }
    }

    #[test]
    fn noise_gain_and_polarity_are_reported() {
        let tone = MultiTone::new(8192, 44_100, 0.5);
        // Quiet and noisy, but a loop: still found, with a wider error.
        let window = looped(&tone, 123.4, 0.05, 777, 8192, 0.02);
        let e = tone.estimate(&window, 777);
        assert_eq!(e.verdict, Verdict::Ok, "{e:?}");
        assert!((e.delay_frames - 123.4).abs() < 0.1, "{e:?}");
        assert!((e.gain - 0.05).abs() < 0.005, "{e:?}");
        // The stated error covers the real one.
        assert!(e.stderr_frames > 0.0 && e.stderr_frames < 0.2, "{e:?}");
        assert!(
            (e.delay_frames - 123.4).abs() < 4.0 * e.stderr_frames,
            "{e:?}"
        );
        // Inverted.
        let window = looped(&tone, 50.0, -1.0, 0, 8192, 0.0);
        let e = tone.estimate(&window, 0);
        assert!(e.inverted, "{e:?}");
        assert!((e.delay_frames - 50.0).abs() < 0.01, "{e:?}");
        // Nothing came back: silence, or noise only.
        for window in [vec![0.0f32; 8192], looped(&tone, 0.0, 0.0, 0, 8192, 0.1)] {
            let e = tone.estimate(&window, 0);
            assert_eq!(e.verdict, Verdict::NoSignal, "{e:?}");
        }
        // Clipping is counted.
        let window = looped(&tone, 10.0, 4.0, 0, 8192, 0.0)
            .into_iter()
            .map(|x| x.clamp(-1.0, 1.0))
            .collect::<Vec<_>>();
        let e = tone.estimate(&window, 0);
        assert!(e.clipped > 0, "{e:?}");
    }

    #[test]
    fn a_dropout_in_the_window_makes_the_estimate_unreliable() {
        let tone = MultiTone::new(8192, 48_000, 0.5);
        let mut window = looped(&tone, 200.0, 1.0, 0, 8192, 0.0);
        // Half the window lost (an under-run played silence).
        for x in &mut window[1000..5096] {
            *x = 0.0;
        }
        let e = tone.estimate(&window, 0);
        assert_ne!(e.verdict, Verdict::Ok, "{e:?}");
    }

    #[test]
    fn periods_cover_the_delay_twice() {
        assert_eq!(period_for(0.0), 4096);
        assert_eq!(period_for(2048.0), 4096);
        assert_eq!(period_for(2049.0), 8192);
        assert_eq!(period_for(10_000.0), 32_768);
    }

    #[test]
    fn impulses_are_counted_to_their_onset() {
        let mut window = vec![0.0f32; 1000];
        window[300] = 0.1;
        window[301] = -0.8;
        window[302] = 0.3;
        let o = impulse_onset(&window, 5000, 4900, 0.01).unwrap();
        assert_eq!(o.frames, 5000 + 301 - 4900);
        assert!(o.inverted);
        assert_eq!(o.peak, 0.8);
        assert_eq!(impulse_onset(&[0.0; 100], 0, 0, 0.01), None);
        assert_eq!(impulse_onset(&[], 0, 0, 0.01), None);
        // A fractional delay smears the click; the onset is where it reaches half.
        let kernel = DelayKernel::new(40.5);
        let click = |p: i64| if p == 0 { 0.5 } else { 0.0 };
        let w: Vec<f32> = (0..200).map(|m| kernel.output_at(m, click)).collect();
        let o = impulse_onset(&w, 0, 0, 0.01).unwrap();
        assert!(o.frames == 40 || o.frames == 41, "{o:?}");
    }
}
