//! A latency histogram as plot data: its percentile distribution (HdrHistogram's plot)
//! and its counts in log-spaced bins.

use results::LatencyHistogram;

/// Steps per decade of the percentile curve's x axis.
const CURVE_STEPS_PER_DECADE: f64 = 40.0;

/// The percentile distribution of `h`: points (p, latency ns) at log-spaced p from 0 to
/// the last sample's rank, 1 - 1/count, whose value is the maximum. Empty when the
/// histogram is. When the last ranks lie above the histogram's bound the curve stops
/// at the last value within it: those samples were counted, not kept, and only the
/// maximum is known (the figure marks it).
pub fn percentile_curve(h: &LatencyHistogram) -> Vec<(f64, f64)> {
    let n = h.count();
    if n == 0 {
        return Vec::new();
    }
    let last = (n as f64).log10();
    let steps = (last * CURVE_STEPS_PER_DECADE).ceil() as usize;
    let mut out = Vec::with_capacity(steps + 2);
    for i in 0..steps {
        let x = i as f64 / CURVE_STEPS_PER_DECADE;
        let p = 1.0 - 10f64.powf(-x);
        let (v, above_bound) = h.percentile(p * 100.0);
        if above_bound {
            return out;
        }
        out.push((p, v as f64));
    }
    if h.overflows() == 0 {
        out.push((1.0 - 1.0 / n as f64, h.max() as f64));
    }
    out
}

/// One bin of a histogram: samples in `[lo_ns, hi_ns)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bin {
    /// Lower edge.
    pub lo_ns: f64,
    /// Upper edge.
    pub hi_ns: f64,
    /// Samples in it.
    pub count: u64,
}

/// The samples of `h` within its bound in bins `per_decade` to a decade (equal widths on
/// a log axis), every bin from the smallest sample's to the largest's, empty ones
/// included; samples of 0 ns fall in the first bin. The counts add up to
/// `h.count() - h.overflows()`: nothing is dropped.
pub fn log_bins(h: &LatencyHistogram, per_decade: u32) -> Vec<Bin> {
    let per_decade = f64::from(per_decade.max(1));
    let index = |v: u64| ((v.max(1) as f64).log10() * per_decade).floor() as i64;
    let hdr = h.hdr();
    let recorded: Vec<(i64, u64)> = hdr
        .iter_recorded()
        .map(|b| {
            let v = hdr.median_equivalent(b.value_iterated_to());
            (index(v.min(h.bound())), b.count_at_value())
        })
        .collect();
    let (Some(first), Some(last)) = (
        recorded.iter().map(|r| r.0).min(),
        recorded.iter().map(|r| r.0).max(),
    ) else {
        return Vec::new();
    };
    let mut bins: Vec<Bin> = (first..=last)
        .map(|i| Bin {
            lo_ns: 10f64.powf(i as f64 / per_decade),
            hi_ns: 10f64.powf((i + 1) as f64 / per_decade),
            count: 0,
        })
        .collect();
    for (i, c) in recorded {
        bins[(i - first) as usize].count += c;
    }
    bins
}
