//! Spectra for self-checks: a windowed magnitude spectrum and a peak's frequency to a
//! small fraction of a bin. The synth's tests find every oscillator's frequency in its
//! output with them.
//!
//! Not real-time: these allocate. They are for analysis after the fact.

use std::f64::consts::PI;

/// The 4-term Blackman-Harris window's coefficients (sidelobes at -92 dB, main lobe
/// ±4 bins): neighbouring partials a few bins apart do not pull a peak off its place.
const BLACKMAN_HARRIS: [f64; 4] = [0.35875, 0.48829, 0.14128, 0.01168];

/// In-place radix-2 FFT of `re + i·im`.
///
/// # Panics
///
/// If the lengths differ or are not a power of two.
pub fn fft(re: &mut [f64], im: &mut [f64]) {
    let n = re.len();
    assert_eq!(n, im.len(), "real and imaginary parts differ in length");
    assert!(n.is_power_of_two(), "FFT length {n} is not a power of two");
    let bits = n.trailing_zeros();
    for i in 0..n {
        let j = if bits == 0 {
            0
        } else {
            i.reverse_bits() >> (usize::BITS - bits)
        };
        if j > i {
            re.swap(i, j);
            im.swap(i, j);
        }
    }
    let mut size = 2;
    while size <= n {
        let half = size / 2;
        let step = -2.0 * PI / size as f64;
        for start in (0..n).step_by(size) {
            for k in 0..half {
                let (s, c) = (step * k as f64).sin_cos();
                let (a, b) = (start + k, start + k + half);
                let tr = re[b] * c - im[b] * s;
                let ti = re[b] * s + im[b] * c;
                re[b] = re[a] - tr;
                im[b] = im[a] - ti;
                re[a] += tr;
                im[a] += ti;
            }
        }
        size *= 2;
    }
}

/// The magnitude spectrum of `signal` under a Blackman-Harris window, bins 0 to n/2.
///
/// # Panics
///
/// If `signal`'s length is not a power of two.
pub fn magnitude_spectrum(signal: &[f32]) -> Vec<f64> {
    let n = signal.len();
    let mut re: Vec<f64> = signal
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let t = 2.0 * PI * i as f64 / n as f64;
            let w = BLACKMAN_HARRIS[0] - BLACKMAN_HARRIS[1] * t.cos()
                + BLACKMAN_HARRIS[2] * (2.0 * t).cos()
                - BLACKMAN_HARRIS[3] * (3.0 * t).cos();
            f64::from(x) * w
        })
        .collect();
    let mut im = vec![0.0; n];
    fft(&mut re, &mut im);
    (0..=n / 2).map(|k| re[k].hypot(im[k])).collect()
}

/// The frequency, in bins, of the largest peak within `reach` bins of `near`: the
/// highest bin, refined by a parabola through the log magnitudes of it and its two
/// neighbours (Gaussian interpolation, a few thousandths of a bin off under this
/// window). `None` when the range is empty or the peak sits on its edge.
pub fn peak_bin(magnitudes: &[f64], near: f64, reach: usize) -> Option<f64> {
    let centre = near.round() as isize;
    let from = (centre - reach as isize).max(1) as usize;
    let to = ((centre + reach as isize) as usize).min(magnitudes.len().checked_sub(2)?);
    if from > to {
        return None;
    }
    let top = (from..=to).max_by(|&a, &b| magnitudes[a].total_cmp(&magnitudes[b]))?;
    if top == from || top == to {
        return None;
    }
    let (a, b, c) = (
        magnitudes[top - 1].max(1e-300).ln(),
        magnitudes[top].max(1e-300).ln(),
        magnitudes[top + 1].max(1e-300).ln(),
    );
    let denominator = a - 2.0 * b + c;
    let offset = if denominator == 0.0 {
        0.0
    } else {
        0.5 * (a - c) / denominator
    };
    Some(top as f64 + offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fft_of_a_cosine_has_its_energy_in_its_bin() {
        let n = 64;
        let mut re: Vec<f64> = (0..n)
            .map(|i| (2.0 * PI * 5.0 * i as f64 / n as f64).cos())
            .collect();
        let mut im = vec![0.0; n];
        fft(&mut re, &mut im);
        for k in 0..n {
            let m = re[k].hypot(im[k]);
            if k == 5 || k == n - 5 {
                assert!((m - n as f64 / 2.0).abs() < 1e-9, "bin {k}: {m}");
            } else {
                assert!(m < 1e-9, "bin {k}: {m}");
            }
        }
    }

    #[test]
    fn peaks_between_bins_are_found_to_a_hundredth_of_a_bin() {
        let n = 4096;
        for true_bin in [100.0, 100.25, 333.5, 1000.9] {
            let signal: Vec<f32> = (0..n)
                .map(|i| (2.0 * PI * true_bin * i as f64 / n as f64 + 0.3).sin() as f32)
                .collect();
            let spectrum = magnitude_spectrum(&signal);
            let found = peak_bin(&spectrum, true_bin, 6).unwrap();
            assert!((found - true_bin).abs() < 0.01, "{true_bin}: {found}");
        }
    }
}
