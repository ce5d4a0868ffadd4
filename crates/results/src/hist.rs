//! Fixed-bound latency histograms.
//!
//! [`LatencyHistogram`] wraps an HdrHistogram with a fixed upper bound chosen before the
//! run. Its contract, edges included:
//!
//! - [`LatencyHistogram::new`] allocates; [`LatencyHistogram::record`] never does, never
//!   locks and never panics, so a real-time thread may call it every cycle.
//! - Values up to the bound are kept with 3 significant digits (1 ns resolution below
//!   2 µs, better than 0.1 % above).
//! - Values above the bound are **not clamped**: they are counted as overflows, and the
//!   exact count, sum, minimum and maximum include them. Percentiles whose rank falls
//!   among the overflows report the bound and set [`Summary::clamped`]: they are at
//!   least that large. Nothing is hidden.

use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// The statistics audiolat reports for every metric, of at least one sample: where
/// nothing was measured there is no `Summary` (an `Option<Summary>` that is `None`),
/// never one of zeros.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples, overflows included (at least 1).
    pub count: u64,
    /// Smallest sample.
    pub min: f64,
    /// Arithmetic mean of all samples.
    pub mean: f64,
    /// Population standard deviation.
    pub stdev: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// 99.99th percentile.
    pub p9999: f64,
    /// Largest sample (exact, overflows included).
    pub max: f64,
    /// When some percentile's rank fell among the overflows, the histogram's bound:
    /// every percentile at this value means "at least this".
    pub clamped_at: Option<f64>,
}

impl Summary {
    /// True when percentile value `v` stands for "at least the bound".
    pub fn is_clamped(&self, v: f64) -> bool {
        self.clamped_at.is_some_and(|b| v >= b)
    }

    /// The statistic `name` as every view reports it (`count`, `min`, `mean`, `stdev`,
    /// `p50`, `p90`, `p99`, `p99.9` or `p999`, `p99.99` or `p9999`, `max`): a percentile
    /// whose rank fell among the overflows is [`Stat::AtLeast`] the bound, never a
    /// measured value. `None` for another name.
    pub fn stat(&self, name: &str) -> Option<Stat> {
        let percentile = |v: f64| match self.clamped_at {
            Some(bound) if v >= bound => Stat::AtLeast(bound),
            _ => Stat::Value(v),
        };
        Some(match name {
            "count" => Stat::Value(self.count as f64),
            "min" => Stat::Value(self.min),
            "mean" => Stat::Value(self.mean),
            "stdev" => Stat::Value(self.stdev),
            "max" => Stat::Value(self.max),
            "p50" => percentile(self.p50),
            "p90" => percentile(self.p90),
            "p99" => percentile(self.p99),
            "p99.9" | "p999" => percentile(self.p999),
            "p99.99" | "p9999" => percentile(self.p9999),
            _ => return None,
        })
    }
}

/// A statistic of a [`Summary`] as reported: measured, or (a percentile among the
/// overflows) only known to be at least the histogram's bound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stat {
    /// The value, measured.
    Value(f64),
    /// Above the histogram's bound, which this is: the value itself was not kept.
    AtLeast(f64),
}

impl Stat {
    /// The measured value; `None` when it is only "at least" a bound.
    pub fn measured(self) -> Option<f64> {
        match self {
            Stat::Value(v) => Some(v),
            Stat::AtLeast(_) => None,
        }
    }

    /// The bound it is at least, when it is not measured.
    pub fn at_least(self) -> Option<f64> {
        match self {
            Stat::Value(_) => None,
            Stat::AtLeast(b) => Some(b),
        }
    }
}

/// Errors building or decoding a histogram.
#[derive(Debug, thiserror::Error)]
pub enum HistError {
    /// The bound cannot be represented.
    #[error("histogram bound {0} ns is not usable: use a bound between 2 ns and 2^62 ns")]
    BadBound(u64),
    /// A stored histogram could not be decoded.
    #[error("stored histogram is corrupt: {0}")]
    Corrupt(String),
}

/// A fixed-bound HDR histogram of nanosecond values with exact overflow accounting.
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
    bound: u64,
    overflows: u64,
    count: u64,
    min: u64,
    max: u64,
    sum: u128,
    sum_sq: u128,
}

/// Significant digits kept by every audiolat histogram.
pub const SIGNIFICANT_DIGITS: u8 = 3;

impl LatencyHistogram {
    /// A histogram for values in `0..=bound_ns`. Allocates (a few hundred KiB for a
    /// bound of seconds); do it before the real-time loop.
    pub fn new(bound_ns: u64) -> Result<Self, HistError> {
        if !(2..=(1u64 << 62)).contains(&bound_ns) {
            return Err(HistError::BadBound(bound_ns));
        }
        let hist = Histogram::new_with_bounds(1, bound_ns, SIGNIFICANT_DIGITS)
            .map_err(|_| HistError::BadBound(bound_ns))?;
        Ok(LatencyHistogram {
            hist,
            bound: bound_ns,
            overflows: 0,
            count: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            sum_sq: 0,
        })
    }

    /// Records one value. Returns false when it was above the bound (an overflow, still
    /// counted in count, sum, min and max). Real-time safe: no allocation, no panic.
    #[inline]
    pub fn record(&mut self, value: u64) -> bool {
        self.count += 1;
        self.sum += value as u128;
        self.sum_sq += value as u128 * value as u128;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        if value <= self.bound && self.hist.record(value).is_ok() {
            true
        } else {
            self.overflows += 1;
            false
        }
    }

    /// Empties the histogram, keeping its memory and bound.
    pub fn reset(&mut self) {
        self.hist.reset();
        self.overflows = 0;
        self.count = 0;
        self.min = u64::MAX;
        self.max = 0;
        self.sum = 0;
        self.sum_sq = 0;
    }

    /// The upper bound fixed at creation.
    pub fn bound(&self) -> u64 {
        self.bound
    }

    /// Samples recorded, overflows included.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Samples above the bound.
    pub fn overflows(&self) -> u64 {
        self.overflows
    }

    /// Largest sample, or 0 when empty (a figure to report comes from
    /// [`LatencyHistogram::summary`], which is `None` then).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Smallest sample, or 0 when empty (see [`LatencyHistogram::max`]).
    pub fn min(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.min
        }
    }

    /// Exact mean of all samples, or 0 when empty (see [`LatencyHistogram::max`]).
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// The underlying HDR histogram (values within the bound only).
    pub fn hdr(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// The recorded buckets (values within the bound), lowest first, as (value, count):
    /// each bucket's highest equivalent value, kept within the samples' range (the
    /// bucket of the smallest sample no lower than it, that of the largest in range no
    /// higher than it), so a bucket never reports a value beyond what was measured: one
    /// sample's bucket is that sample.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let top = self.max.min(self.bound).max(self.min());
        self.hist.iter_recorded().map(move |b| {
            let v = self.hist.highest_equivalent(b.value_iterated_to());
            (v.clamp(self.min(), top), b.count_at_value())
        })
    }

    /// The value at percentile `q` (0..=100) over all samples. When the rank falls among
    /// overflows the bound is returned together with `true`.
    pub fn percentile(&self, q: f64) -> (u64, bool) {
        if self.count == 0 {
            return (0, false);
        }
        let in_range = self.hist.len();
        let rank = nearest_rank(q, self.count);
        if rank > in_range {
            if q >= 100.0 {
                return (self.max, false);
            }
            return (self.bound, true);
        }
        // The bucket holding the rank-th sample, found by its counts (value_at_quantile
        // would turn the rank back into a float and round it up again).
        let mut seen = 0;
        let mut v = self.max;
        for bucket in self.hist.iter_recorded() {
            seen += bucket.count_at_value();
            if seen >= rank {
                v = self.hist.highest_equivalent(bucket.value_iterated_to());
                break;
            }
        }
        // A bucket's top may lie above the largest sample in it, or above the bound:
        // an in-range percentile never leaves [min, min(max, bound)].
        let top = self.max.min(self.bound).max(self.min());
        (v.clamp(self.min(), top), false)
    }

    /// All the reported statistics, or `None` when nothing was recorded.
    pub fn summary(&self) -> Option<Summary> {
        if self.count == 0 {
            return None;
        }
        let mean = self.mean();
        let var = (self.sum_sq as f64 / self.count as f64 - mean * mean).max(0.0);
        let mut clamped = false;
        let mut p = |q| {
            let (v, c) = self.percentile(q);
            clamped |= c;
            v as f64
        };
        let (p50, p90, p99, p999, p9999) = (p(50.0), p(90.0), p(99.0), p(99.9), p(99.99));
        Some(Summary {
            count: self.count,
            min: self.min() as f64,
            mean,
            stdev: var.sqrt(),
            p50,
            p90,
            p99,
            p999,
            p9999,
            max: self.max as f64,
            clamped_at: clamped.then_some(self.bound as f64),
        })
    }

    /// Adds another histogram's samples. With equal bounds (the case for the interval
    /// histograms of one run) the buckets are added exactly; otherwise each bucket is
    /// replayed at its lowest equivalent value, and those above this one's bound become
    /// overflows. Not for the real-time thread (it may allocate when the bounds differ).
    pub fn add(&mut self, other: &LatencyHistogram) {
        let same_layout = other.bound == self.bound && self.hist.add(&other.hist).is_ok();
        if !same_layout {
            for v in other.hist.iter_recorded() {
                let value = other.hist.lowest_equivalent(v.value_iterated_to());
                let n = v.count_at_value();
                if value <= self.bound {
                    let _ = self.hist.record_n(value, n);
                } else {
                    self.overflows += n;
                }
            }
        }
        self.overflows += other.overflows;
        self.count += other.count;
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
        if other.count > 0 {
            self.min = self.min.min(other.min);
            self.max = self.max.max(other.max);
        }
    }

    /// A copy corrected for coordinated omission: every sample larger than
    /// `expected_interval_ns` also stands for the samples that could not be taken while
    /// it was late (value − interval, value − 2·interval, ...). `extra_overflow_values`
    /// are overflowed samples whose values were kept, so they are corrected too.
    /// Runs off the real-time thread; allocates.
    pub fn corrected_for_omission(
        &self,
        expected_interval_ns: u64,
        extra_overflow_values: &[u64],
    ) -> LatencyHistogram {
        let mut out = LatencyHistogram::new(self.bound).expect("bound already validated");
        let record_with_fill = |out: &mut LatencyHistogram, value: u64, n: u64| {
            for _ in 0..n {
                out.record(value);
            }
            if expected_interval_ns == 0 {
                return;
            }
            let mut missing = value;
            while missing > expected_interval_ns {
                missing -= expected_interval_ns;
                for _ in 0..n {
                    out.record(missing);
                }
            }
        };
        for v in self.hist.iter_recorded() {
            let value = self.hist.lowest_equivalent(v.value_iterated_to());
            record_with_fill(&mut out, value, v.count_at_value());
        }
        for &v in extra_overflow_values {
            record_with_fill(&mut out, v, 1);
        }
        // Overflows whose values were not kept are carried over uncorrected.
        let kept = extra_overflow_values.len() as u64;
        for _ in kept..self.overflows {
            out.record(self.bound.saturating_add(1));
        }
        // The exact maximum survives the correction (buckets were replayed at their
        // lowest equivalent value).
        if self.count > 0 {
            out.max = self.max;
        }
        out
    }

    /// Serialises to HdrHistogram's V2 format (values within the bound), plus the exact
    /// side statistics needed to rebuild this type.
    pub fn to_stored(&self) -> StoredHistogram {
        let mut v2 = Vec::new();
        V2Serializer::new()
            .serialize(&self.hist, &mut v2)
            .expect("serialising to a Vec cannot fail");
        StoredHistogram {
            v2,
            bound: self.bound,
            overflows: self.overflows,
            count: self.count,
            min: self.min(),
            max: self.max,
            sum: self.sum,
            sum_sq: self.sum_sq,
        }
    }

    /// Rebuilds a histogram from its stored form.
    pub fn from_stored(stored: &StoredHistogram) -> Result<Self, HistError> {
        let hist: Histogram<u64> = Deserializer::new()
            .deserialize(&mut stored.v2.as_slice())
            .map_err(|e| HistError::Corrupt(format!("{e:?}")))?;
        let mut out = LatencyHistogram::new(stored.bound)?;
        out.hist
            .add(&hist)
            .map_err(|e| HistError::Corrupt(format!("{e:?}")))?;
        out.overflows = stored.overflows;
        out.count = stored.count;
        out.min = if stored.count == 0 {
            u64::MAX
        } else {
            stored.min
        };
        out.max = stored.max;
        out.sum = stored.sum;
        out.sum_sq = stored.sum_sq;
        Ok(out)
    }
}

/// A histogram as stored: the V2 bytes and the exact statistics beside them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredHistogram {
    /// HdrHistogram V2 serialisation of the in-bound values.
    pub v2: Vec<u8>,
    /// The bound (ns).
    pub bound: u64,
    /// Samples above the bound.
    pub overflows: u64,
    /// All samples.
    pub count: u64,
    /// Exact minimum.
    pub min: u64,
    /// Exact maximum.
    pub max: u64,
    /// Exact sum.
    pub sum: u128,
    /// Exact sum of squares.
    pub sum_sq: u128,
}

/// The rank (1-based) of percentile `q` among `count` samples: the nearest rank,
/// ceil(q% of count), at least 1, without the float's error (99.9% of 2000 is 1998,
/// where `(99.9 / 100.0) * 2000.0` is 1998.0000000000002), `q` taken to a millionth of
/// a percent.
pub fn nearest_rank(q: f64, count: u64) -> u64 {
    // In whole millionths of a percent, in integers: exact for any count.
    let q = (q.clamp(0.0, 100.0) * 1e6).round() as u128;
    let rank = (q * u128::from(count)).div_ceil(100_000_000);
    (rank as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_statistics_include_overflows() {
        let mut h = LatencyHistogram::new(1_000).unwrap();
        for v in [100, 200, 300, 5_000] {
            h.record(v);
        }
        assert_eq!(h.count(), 4);
        assert_eq!(h.overflows(), 1);
        assert_eq!(h.max(), 5_000);
        assert_eq!(h.min(), 100);
        assert_eq!(h.mean(), 1_400.0);
        let s = h.summary().unwrap();
        assert_eq!(s.p50, 200.0);
        // p99's rank (4 of 4) is the overflow: the bound is reported, and flagged; p50
        // is not.
        assert_eq!(s.p99, 1_000.0);
        assert!(s.is_clamped(s.p99));
        assert!(!s.is_clamped(s.p50));
        assert_eq!(s.max, 5_000.0);
    }

    #[test]
    fn percentiles_match_a_sorted_list() {
        let mut h = LatencyHistogram::new(10_000_000).unwrap();
        let values: Vec<u64> = (1..=1000).map(|i| i * 997 % 1500 + 1).collect();
        for &v in &values {
            h.record(v);
        }
        let mut sorted = values.clone();
        sorted.sort_unstable();
        let (p50, _) = h.percentile(50.0);
        assert_eq!(p50, sorted[499]);
        let (p99, _) = h.percentile(99.0);
        assert_eq!(p99, sorted[989]);
        assert_eq!(h.summary().unwrap().clamped_at, None);
    }

    #[test]
    fn a_percentile_of_a_whole_rank_is_that_rank() {
        let mut h = LatencyHistogram::new(10_000_000).unwrap();
        for _ in 0..1997 {
            h.record(1_000);
        }
        for v in [5_000_000, 6_000_000, 7_000_000] {
            h.record(v);
        }
        // 99.9% of 2000 samples is the 1998th; 99.99% of 2000 is 1999.8, so the 2000th.
        assert_eq!(h.percentile(99.9).0, h.hdr().highest_equivalent(5_000_000));
        assert_eq!(h.percentile(99.99).0, 7_000_000);
        assert_eq!(h.percentile(50.0).0, h.hdr().highest_equivalent(1_000));
    }

    #[test]
    fn every_percentile_is_the_sample_at_its_nearest_rank() {
        // Samples far enough apart that each has a bucket of its own.
        for n in 1..=300u64 {
            let mut h = LatencyHistogram::new(10_000_000).unwrap();
            for v in 1..=n {
                h.record(v * 10_000);
            }
            for q in [50.0, 90.0, 99.0, 99.9] {
                let rank = (q * n as f64 / 100.0 - 1e-9).ceil().max(1.0) as u64;
                let want = h.hdr().highest_equivalent(rank * 10_000).min(n * 10_000);
                assert_eq!(h.percentile(q).0, want, "p{q} of {n}");
            }
        }
        assert_eq!(nearest_rank(99.99, 199_999_999), 199_980_000);
        assert_eq!(nearest_rank(99.9, 10_000_000_000), 9_990_000_000);
        assert_eq!(nearest_rank(50.0, 29), 15);
    }

    #[test]
    fn merging_equal_bounds_is_exact_up_to_the_bound() {
        // A sample just under the bound stays in range after a merge.
        let mut a = LatencyHistogram::new(100_000_000).unwrap();
        let mut b = LatencyHistogram::new(100_000_000).unwrap();
        b.record(99_990_000);
        a.add(&b);
        assert_eq!(a.overflows(), 0);
        let s = a.summary().unwrap();
        assert_eq!(s.clamped_at, None);
        assert!(s.p99 <= s.max, "{s:?}");
    }

    #[test]
    fn percentiles_stay_ordered_and_under_the_bound_with_overflows() {
        let mut h = LatencyHistogram::new(100_000_000).unwrap();
        for _ in 0..98 {
            h.record(20_000);
        }
        h.record(99_999_000);
        h.record(200_000_000);
        let s = h.summary().unwrap();
        assert!(s.p99 <= 100_000_000.0, "{s:?}");
        assert!(s.p50 <= s.p90 && s.p90 <= s.p99 && s.p99 <= s.p999 && s.p999 <= s.p9999);
        assert!(!s.is_clamped(s.p50));
        assert!(s.is_clamped(s.p999));
    }

    #[test]
    fn percentiles_stay_within_the_exact_extremes() {
        // 9041784 lies in an HDR bucket whose top is higher; p99.99 must not exceed it.
        let mut h = LatencyHistogram::new(100_000_000).unwrap();
        for _ in 0..100 {
            h.record(20_000);
        }
        h.record(9_041_784);
        let s = h.summary().unwrap();
        assert_eq!(s.max, 9_041_784.0);
        assert!(s.p9999 <= s.max && s.p50 >= s.min, "{s:?}");
    }

    #[test]
    fn stored_form_round_trips() {
        let mut h = LatencyHistogram::new(100_000_000).unwrap();
        for i in 0..10_000u64 {
            h.record(i * 37 % 90_000 + 5);
        }
        h.record(200_000_000);
        let back = LatencyHistogram::from_stored(&h.to_stored()).unwrap();
        assert_eq!(back.summary(), h.summary());
        assert_eq!(back.overflows(), 1);
    }

    #[test]
    fn corrupt_bytes_are_an_error_not_a_panic() {
        let mut stored = LatencyHistogram::new(1000).unwrap().to_stored();
        stored.v2 = vec![1, 2, 3, 4, 5];
        assert!(LatencyHistogram::from_stored(&stored).is_err());
    }

    #[test]
    fn omission_correction_fills_skipped_periods() {
        let mut h = LatencyHistogram::new(1_000_000).unwrap();
        h.record(10);
        h.record(3_500); // late by 3.5 intervals of 1000: stands for 2500, 1500, 500 too
        let c = h.corrected_for_omission(1_000, &[]);
        assert_eq!(c.count(), 5);
        assert_eq!(c.max(), 3_500);
        assert_eq!(c.percentile(50.0).0, 1_500);
    }

    #[test]
    fn merging_keeps_exact_extremes() {
        let mut a = LatencyHistogram::new(1000).unwrap();
        let mut b = LatencyHistogram::new(1000).unwrap();
        a.record(10);
        b.record(5);
        b.record(50_000);
        a.add(&b);
        assert_eq!(a.count(), 3);
        assert_eq!(a.min(), 5);
        assert_eq!(a.max(), 50_000);
        assert_eq!(a.overflows(), 1);
    }

    #[test]
    fn reset_empties_everything() {
        let mut h = LatencyHistogram::new(1000).unwrap();
        h.record(10);
        h.record(5000);
        h.reset();
        assert_eq!(h.count(), 0);
        assert_eq!(h.overflows(), 0);
        assert_eq!(h.summary(), None);
        h.record(7);
        assert_eq!(h.min(), 7);
        assert_eq!(h.max(), 7);
    }

    #[test]
    fn nothing_recorded_has_no_summary() {
        let h = LatencyHistogram::new(1000).unwrap();
        assert_eq!(h.summary(), None);
        let mut one = LatencyHistogram::new(1000).unwrap();
        one.record(0);
        // A measured 0 is a value, with a count of 1.
        let s = one.summary().unwrap();
        assert_eq!((s.count, s.min, s.max, s.p50), (1, 0.0, 0.0, 0.0));
    }

    #[test]
    fn bad_bounds_are_refused() {
        assert!(LatencyHistogram::new(0).is_err());
        assert!(LatencyHistogram::new(1).is_err());
    }

    #[cfg(debug_assertions)]
    #[test]
    fn recording_does_not_allocate() {
        use assert_no_alloc::{assert_no_alloc, reset_violation_count, violation_count};
        let mut h = LatencyHistogram::new(100_000_000).unwrap();
        reset_violation_count();
        assert_no_alloc(|| {
            for i in 0..100_000u64 {
                h.record(i * 7919 % 150_000_000);
            }
        });
        assert_eq!(violation_count(), 0);
        assert!(h.overflows() > 0);
        // The guard is armed: an allocation is seen.
        assert_no_alloc(|| drop(std::hint::black_box(vec![0u8; 8])));
        assert!(violation_count() > 0);
        reset_violation_count();
    }
}

#[cfg(all(test, debug_assertions))]
#[global_allocator]
static ALLOCATOR: assert_no_alloc::AllocDisabler = assert_no_alloc::AllocDisabler;
