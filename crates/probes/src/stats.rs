//! Exact statistics of small lists of values (triggers, windows), kept beside the
//! histograms for figures that must not be bucketed: [`Stats`] lives in the results
//! model (reports compute the same figures from stored rows).

pub use results::stats::Stats;

/// The mean time in the audio processor as a share of the period, in percent; `None`
/// when no cycle was timed (or the period is unknown).
pub fn dsp_load_percent(dsp: &results::LatencyHistogram, period_ns: f64) -> Option<f64> {
    (dsp.count() > 0 && period_ns > 0.0).then(|| 100.0 * dsp.mean() / period_ns)
}
