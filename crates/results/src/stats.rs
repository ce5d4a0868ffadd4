//! Exact statistics of small lists of values (triggers, windows), kept beside the
//! histograms for figures that must not be bucketed.

use serde_json::Value;

use crate::records::record::Record;
use crate::records::stats::StatsRecord;

/// Exact statistics of a list of values.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stats {
    /// How many.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Sample standard deviation.
    pub stdev: f64,
    /// Median.
    pub median: f64,
}

impl Stats {
    /// Statistics of `values` (count 0 and every figure 0 when empty: read them through
    /// [`Stats::measured`] or [`Stats::to_json`], which say there were none).
    pub fn of(values: impl IntoIterator<Item = f64>) -> Stats {
        let mut v: Vec<f64> = values.into_iter().collect();
        if v.is_empty() {
            return Stats::default();
        }
        v.sort_by(f64::total_cmp);
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = if v.len() > 1 {
            v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        Stats {
            count: v.len() as u64,
            mean,
            min: v[0],
            max: v[v.len() - 1],
            stdev: var.sqrt(),
            median: v[v.len() / 2],
        }
    }

    /// The statistics, or `None` when there were no values: what a figure derived from
    /// them must check before it is shown.
    pub fn measured(self) -> Option<Stats> {
        (self.count > 0).then_some(self)
    }

    /// The same statistics in another unit (e.g. ns to ms with 1e-6).
    pub fn scaled(&self, k: f64) -> Stats {
        Stats {
            count: self.count,
            mean: self.mean * k,
            min: self.min * k,
            max: self.max * k,
            stdev: self.stdev * k,
            median: self.median * k,
        }
    }

    /// As a JSON object: count, mean, min, max, stdev, median.
    /// Without values every figure is `null`, never a made-up 0.
    pub fn to_json(self) -> Value {
        StatsRecord::from(self).to_json()
    }
}

impl From<Stats> for StatsRecord {
    fn from(s: Stats) -> StatsRecord {
        if s.count == 0 {
            return StatsRecord::default();
        }
        StatsRecord {
            count: s.count,
            mean: Some(s.mean),
            min: Some(s.min),
            max: Some(s.max),
            stdev: Some(s.stdev),
            median: Some(s.median),
        }
    }
}
