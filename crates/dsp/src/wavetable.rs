//! The sine table and the fixed-point phase arithmetic every oscillator shares.

use crate::TABLE_SIZE;

/// Bits of the phase accumulator that index the table (`TABLE_SIZE == 1 << INDEX_BITS`).
const INDEX_BITS: u32 = TABLE_SIZE.trailing_zeros();
/// Bits below the index: the interpolation fraction.
const FRAC_BITS: u32 = u32::BITS - INDEX_BITS;
const FRAC_MASK: u32 = (1 << FRAC_BITS) - 1;
const FRAC_SCALE: f32 = 1.0 / (1u32 << FRAC_BITS) as f32;
/// One full cycle of phase, as a real number.
const PHASE_CYCLE: f64 = 4_294_967_296.0;

const _: () = assert!(TABLE_SIZE.is_power_of_two() && INDEX_BITS == 11);

/// Phase of a quarter cycle: the table reads exactly 1.0 there (a cosine starts at its peak).
pub(crate) const QUARTER_CYCLE: u32 = 1 << 30;

/// One cycle of sine in `TABLE_SIZE` points plus a guard point equal to the first, so
/// interpolation never wraps an index.
pub(crate) struct SineTable {
    points: Box<[f32; TABLE_SIZE + 1]>,
}

impl SineTable {
    /// Allocates and fills the table. The four quadrant points are exact (0, 1, 0, -1).
    pub(crate) fn new() -> SineTable {
        let mut points = Box::new([0.0f32; TABLE_SIZE + 1]);
        let quarter = TABLE_SIZE / 4;
        for (i, point) in points.iter_mut().enumerate() {
            *point = if i % quarter == 0 {
                [0.0, 1.0, 0.0, -1.0][(i / quarter) % 4]
            } else {
                (std::f64::consts::TAU * i as f64 / TABLE_SIZE as f64).sin() as f32
            };
        }
        SineTable { points }
    }

    /// sin(2π · phase / 2^32), linearly interpolated between the two nearest points.
    #[inline(always)]
    pub(crate) fn lookup(&self, phase: u32) -> f32 {
        // The index is at most TABLE_SIZE - 1, so both reads are in bounds and the
        // compiler can prove it.
        let index = (phase >> FRAC_BITS) as usize;
        let fraction = (phase & FRAC_MASK) as f32 * FRAC_SCALE;
        let below = self.points[index];
        let above = self.points[index + 1];
        below + (above - below) * fraction
    }
}

/// The phase step per sample of a tone at `frequency_hz`, rounded to the nearest
/// 1/2^32 of a cycle. A frequency at or above Nyquist aliases exactly as sampling a
/// sine of that frequency would (the step is taken modulo one cycle).
pub(crate) fn phase_increment(frequency_hz: f64, sample_rate_hz: u32) -> u32 {
    let cycles_per_sample = (frequency_hz / sample_rate_hz as f64).rem_euclid(1.0);
    // A value that rounds up to a whole cycle is a step of 0 (modulo one cycle).
    ((cycles_per_sample * PHASE_CYCLE).round() as u64 & u64::from(u32::MAX)) as u32
}

/// The frequency a phase step really produces: `increment · rate / 2^32`.
#[cfg(test)]
pub(crate) fn increment_frequency_hz(increment: u32, sample_rate_hz: u32) -> f64 {
    increment as f64 * sample_rate_hz as f64 / PHASE_CYCLE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quadrant_points_are_exact_and_guard_repeats_first() {
        let table = SineTable::new();
        assert_eq!(table.lookup(0), 0.0);
        assert_eq!(table.lookup(QUARTER_CYCLE), 1.0);
        assert_eq!(table.lookup(2 * QUARTER_CYCLE), 0.0);
        assert_eq!(table.lookup(3 * QUARTER_CYCLE), -1.0);
        assert_eq!(table.points[TABLE_SIZE], table.points[0]);
    }

    #[test]
    fn lookup_is_within_interpolation_error_of_sin() {
        let table = SineTable::new();
        // Worst case of linear interpolation: (2π/N)²/8 ≈ 1.2e-6, plus f32 rounding.
        let bound = (std::f64::consts::TAU / TABLE_SIZE as f64).powi(2) / 8.0 + 1e-7;
        let mut worst = 0.0f64;
        for k in 0..100_003u64 {
            let phase = (k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32;
            let exact = (std::f64::consts::TAU * phase as f64 / PHASE_CYCLE).sin();
            worst = worst.max((table.lookup(phase) as f64 - exact).abs());
        }
        assert!(worst < bound, "worst error {worst:e} >= {bound:e}");
        assert!(worst > 1e-7, "suspiciously exact: {worst:e}");
    }

    #[test]
    fn phase_increment_rounds_and_wraps() {
        assert_eq!(phase_increment(12_000.0, 48_000), QUARTER_CYCLE);
        assert_eq!(phase_increment(0.0, 48_000), 0);
        assert_eq!(phase_increment(48_000.0, 48_000), 0);
        assert_eq!(phase_increment(60_000.0, 48_000), QUARTER_CYCLE);
        // Just below a whole cycle rounds to a whole cycle, i.e. 0.
        assert_eq!(phase_increment(48_000.0 - 1e-9, 48_000), 0);
        let step = phase_increment(440.0, 44_100);
        let error_hz = (increment_frequency_hz(step, 44_100) - 440.0).abs();
        assert!(error_hz <= 0.5 * 44_100.0 / PHASE_CYCLE);
    }
}
