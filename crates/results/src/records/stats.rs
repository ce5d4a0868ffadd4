//! Exact statistics as a record: what [`Stats::to_json`](crate::stats::Stats::to_json)
//! writes wherever a probe stores a small list's figures (an event run's latencies, a
//! round trip's windows).

use serde::{Deserialize, Serialize};

use super::record::Record;

/// A list's count and figures; every figure `None` (`null`) without values.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Default)]
pub struct StatsRecord {
    /// How many values.
    #[serde(default)]
    pub count: u64,
    /// Mean.
    #[serde(default)]
    pub mean: Option<f64>,
    /// Smallest.
    #[serde(default)]
    pub min: Option<f64>,
    /// Largest.
    #[serde(default)]
    pub max: Option<f64>,
    /// Sample standard deviation.
    #[serde(default)]
    pub stdev: Option<f64>,
    /// Median.
    #[serde(default)]
    pub median: Option<f64>,
}

impl Record for StatsRecord {}

impl StatsRecord {
    /// The figures when there were values, else `None`.
    pub fn measured(&self) -> Option<&StatsRecord> {
        (self.count > 0).then_some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::test_support::round_trips;
    use crate::stats::Stats;
    use serde_json::json;

    #[test]
    fn stats_with_and_without_values_round_trip() {
        let s = round_trips::<StatsRecord>(json!({"count": 3, "mean": 2.5, "min": 1.0,
            "max": 4.0, "stdev": 1.0, "median": 2.0}));
        assert_eq!(s.max, Some(4.0));
        let none = round_trips::<StatsRecord>(json!({"count": 0, "mean": null, "min": null,
            "max": null, "stdev": null, "median": null}));
        assert_eq!(none.measured(), None);
    }

    #[test]
    fn stats_write_their_figures_or_nulls() {
        let s = Stats::of([1.0, 2.0, 4.0]);
        assert_eq!(
            s.to_json(),
            json!({"count": 3, "mean": 7.0 / 3.0, "min": 1.0, "max": 4.0,
                   "stdev": s.stdev, "median": 2.0})
        );
        assert_eq!(
            Stats::of([]).to_json(),
            json!({"count": 0, "mean": null, "min": null, "max": null, "stdev": null,
                   "median": null})
        );
    }
}
