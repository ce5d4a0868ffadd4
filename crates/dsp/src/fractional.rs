//! A delay by a fractional number of frames, as a windowed-sinc interpolator: what a
//! cable with a non-integer delay (or a second clock domain sampled at an offset) does to
//! a band-limited signal. The `virtual` sound card uses it for its loopback; the tests of
//! the round-trip estimators use it as ground truth.
//!
//! `y[m] = Σ_j h[j] · x[m − j]` with `h[j] = sinc(j − D) · w(j − D)` for the
//! [`HALF_TAPS`]·2 integers `j` nearest `D`, `w` a Kaiser window. An integer `D` is a pure
//! copy (one tap of 1.0), so integer delays are exact. For a fractional `D` the delay is
//! exact at DC and within 1e-3 frame, the gain within 0.1 %, up to [`FLAT_UP_TO`] of the
//! sample rate (measured by the tests); above that the interpolator rolls off.

/// Taps on each side of the delay.
pub const HALF_TAPS: usize = 16;
/// Fraction of the sample rate up to which a fractional delay is flat (see the module).
pub const FLAT_UP_TO: f64 = 0.3;
const KAISER_BETA: f64 = 7.0;

/// The interpolator for one delay: `y[m] = Σ taps[i] · x[m − first − i]`.
#[derive(Clone, Debug, PartialEq)]
pub struct DelayKernel {
    delay_frames: f64,
    /// `j` of the first tap.
    first: i64,
    taps: Vec<f64>,
}

impl DelayKernel {
    /// The kernel for a delay of `delay_frames` (0 or more; may allocate).
    ///
    /// # Panics
    ///
    /// If `delay_frames` is negative or not finite.
    pub fn new(delay_frames: f64) -> DelayKernel {
        assert!(
            delay_frames.is_finite() && delay_frames >= 0.0,
            "a delay is 0 frames or more, got {delay_frames}"
        );
        let whole = delay_frames.floor();
        if delay_frames == whole {
            return DelayKernel {
                delay_frames,
                first: whole as i64,
                taps: vec![1.0],
            };
        }
        let first = whole as i64 - HALF_TAPS as i64 + 1;
        let half = HALF_TAPS as f64;
        let norm = bessel_i0(KAISER_BETA);
        let mut taps: Vec<f64> = (0..2 * HALF_TAPS as i64)
            .map(|i| {
                let t = (first + i) as f64 - delay_frames;
                let sinc = if t == 0.0 {
                    1.0
                } else {
                    (std::f64::consts::PI * t).sin() / (std::f64::consts::PI * t)
                };
                let r = t / half;
                let window = if r.abs() >= 1.0 {
                    0.0
                } else {
                    bessel_i0(KAISER_BETA * (1.0 - r * r).sqrt()) / norm
                };
                sinc * window
            })
            .collect();
        // Unity gain at DC.
        let sum: f64 = taps.iter().sum();
        for t in &mut taps {
            *t /= sum;
        }
        DelayKernel {
            delay_frames,
            first,
            taps,
        }
    }

    /// The delay this kernel was made for.
    pub fn delay_frames(&self) -> f64 {
        self.delay_frames
    }

    /// Frames after `m` that `y[m]` reads (`x[m + lookahead]` at most): 0 for delays of
    /// [`HALF_TAPS`] − 1 frames or more.
    pub fn lookahead(&self) -> i64 {
        (-self.first).max(0)
    }

    /// Frames before `m` that `y[m]` reads at most.
    pub fn history(&self) -> i64 {
        self.first + self.taps.len() as i64 - 1
    }

    /// `y[m]`, reading `x` through `x_at` (called with positions `m − history()` to
    /// `m + lookahead()`). Real-time safe.
    #[inline]
    pub fn output_at(&self, m: i64, x_at: impl Fn(i64) -> f32) -> f32 {
        let mut acc = 0.0f64;
        for (i, &h) in self.taps.iter().enumerate() {
            acc += h * f64::from(x_at(m - self.first - i as i64));
        }
        acc as f32
    }
}

/// The modified Bessel function of the first kind, order 0 (series; exact to f64 for the
/// arguments a Kaiser window uses).
fn bessel_i0(x: f64) -> f64 {
    let mut sum = 1.0;
    let mut term = 1.0;
    let q = x * x / 4.0;
    for k in 1..64 {
        term *= q / (k * k) as f64;
        sum += term;
        if term < sum * 1e-17 {
            break;
        }
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delayed_tone(kernel: &DelayKernel, cycles_per_frame: f64, m: i64) -> f32 {
        kernel.output_at(m, |n| {
            (2.0 * std::f64::consts::PI * cycles_per_frame * n as f64).sin() as f32
        })
    }

    #[test]
    fn integer_delays_are_exact_copies() {
        for d in [0.0, 1.0, 7.0, 300.0] {
            let k = DelayKernel::new(d);
            assert_eq!(k.lookahead(), 0);
            assert_eq!(k.history(), d as i64);
            let x = |n: i64| n as f32;
            for m in 0..50 {
                assert_eq!(k.output_at(m, x), (m - d as i64) as f32);
            }
        }
    }

    #[test]
    fn fractional_delays_hold_delay_and_gain_up_to_the_flat_band() {
        for d in [0.25, 0.5, 3.3, 17.75, 100.125] {
            let kernel = DelayKernel::new(d);
            assert_eq!(kernel.delay_frames(), d);
            for f in [0.01, 0.05, 0.1, 0.2, FLAT_UP_TO] {
                // The delayed tone against the same tone computed at m − d: amplitude and
                // phase of the difference give the gain and delay errors.
                let n = 4096;
                let (mut re, mut im) = (0.0f64, 0.0f64);
                let (mut re0, mut im0) = (0.0f64, 0.0f64);
                let w = 2.0 * std::f64::consts::PI * f;
                for m in 1000..1000 + n {
                    let y = f64::from(delayed_tone(&kernel, f, m));
                    let ideal = (w * (m as f64 - d)).sin();
                    re += y * (w * m as f64).cos();
                    im -= y * (w * m as f64).sin();
                    re0 += ideal * (w * m as f64).cos();
                    im0 -= ideal * (w * m as f64).sin();
                }
                let gain = (re * re + im * im).sqrt() / (re0 * re0 + im0 * im0).sqrt();
                let phase = im.atan2(re) - im0.atan2(re0);
                let phase = (phase + std::f64::consts::PI).rem_euclid(2.0 * std::f64::consts::PI)
                    - std::f64::consts::PI;
                let delay_error = -phase / w;
                assert!((gain - 1.0).abs() < 1e-3, "d {d} f {f}: gain {gain}");
                assert!(
                    delay_error.abs() < 1e-3,
                    "d {d} f {f}: delay off by {delay_error} frames"
                );
            }
        }
    }

    #[test]
    fn small_fractional_delays_look_ahead_within_half_the_taps() {
        let k = DelayKernel::new(0.5);
        assert_eq!(k.lookahead(), HALF_TAPS as i64 - 1);
        assert_eq!(k.history(), HALF_TAPS as i64);
        let k = DelayKernel::new(40.5);
        assert_eq!(k.lookahead(), 0);
    }
}
