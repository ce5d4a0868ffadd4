//! Exports of stored runs: JSON, CSV, HdrHistogram interval logs and cyclictest's
//! histogram text.

use std::fmt::Write as _;
use std::time::Duration;

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use serde_json::{json, Value};

use crate::hist::{LatencyHistogram, Summary};
use crate::model::{Event, MeasurementRecord, RunRecord, Series, TriggerRow};

/// A summary as a JSON object.
pub fn summary_json(s: &Summary) -> Value {
    json!({
        "count": s.count, "min": s.min, "mean": s.mean, "stdev": s.stdev,
        "p50": s.p50, "p90": s.p90, "p99": s.p99, "p99.9": s.p999, "p99.99": s.p9999,
        "max": s.max, "percentiles_clamped_at": s.clamped_at,
    })
}

/// A measurement as JSON; `buckets` adds the histogram's recorded values and counts.
pub fn measurement_json(m: &MeasurementRecord, buckets: bool) -> Value {
    let mm = &m.measurement;
    let mut v = json!({
        "id": m.id,
        "probe": mm.probe,
        "metric": mm.metric,
        "unit": mm.unit,
        "method": mm.method,
        "summary": summary_json(&mm.summary),
        "overflows": mm.overflows(),
        "histogram_bound": mm.histogram.as_ref().map(LatencyHistogram::bound),
        "deadline": mm.deadline,
        "misses": mm.misses,
        "detail": mm.detail,
    });
    if buckets {
        if let Some(h) = &mm.histogram {
            let rows: Vec<Value> = h
                .hdr()
                .iter_recorded()
                .map(|b| json!([b.value_iterated_to(), b.count_at_value()]))
                .collect();
            v["histogram"] = json!({"value_count": rows});
        }
    }
    v
}

/// A whole run as one JSON document.
pub fn run_json(
    run: &RunRecord,
    measurements: &[MeasurementRecord],
    events: &[Event],
    series: &[Series],
    triggers: &[TriggerRow],
) -> Value {
    json!({
        "run": run,
        "measurements": measurements.iter().map(|m| measurement_json(m, true)).collect::<Vec<_>>(),
        "events": events,
        "series": series,
        "triggers": triggers,
    })
}

/// One CSV row per trigger of an `event` run (times in ns, CLOCK_MONOTONIC).
pub fn triggers_csv(run: &RunRecord, triggers: &[TriggerRow]) -> String {
    let mut out = String::from(
        "run_id,seq,source,trigger_ns,note_frame,offset_frames,cycle,dac_ns,latency_ns,wait_ns,lateness_ns,buffer_ns,late,missed,measured_ns,underruns_before\n",
    );
    for t in triggers {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            run.id,
            t.seq,
            t.source,
            t.trigger_ns,
            t.note_frame,
            t.offset_frames,
            t.cycle,
            t.dac_ns,
            t.latency_ns,
            t.wait_ns,
            t.lateness_ns,
            t.buffer_ns,
            t.late,
            t.missed,
            t.measured_ns.map_or(String::new(), |m| m.to_string()),
            t.underruns_before
        );
    }
    out
}

/// Every series of a run as CSV, one block per series: a `# name (unit)` line, the
/// column names with `run_id` first, then the rows (NaN as an empty cell).
pub fn series_csv(run: &RunRecord, series: &[Series]) -> String {
    let mut out = String::new();
    for (i, s) in series.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let _ = writeln!(out, "# {} ({})", s.name, s.unit);
        let _ = writeln!(out, "run_id,{}", s.columns.join(","));
        for row in &s.rows {
            let cells: Vec<String> = row
                .iter()
                .map(|v| {
                    if v.is_nan() {
                        String::new()
                    } else {
                        v.to_string()
                    }
                })
                .collect();
            let _ = writeln!(out, "{},{}", run.id, cells.join(","));
        }
    }
    out
}

/// One CSV row per measurement with its summary.
pub fn measurements_csv(run: &RunRecord, measurements: &[MeasurementRecord]) -> String {
    let mut out = String::from(
        "run_id,probe,metric,unit,count,min,mean,stdev,p50,p90,p99,p99.9,p99.99,max,overflows,deadline,misses,status\n",
    );
    for m in measurements {
        let mm = &m.measurement;
        let s = &mm.summary;
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{:.1},{:.1},{},{},{},{},{},{},{},{},{},{}",
            run.id,
            mm.probe,
            mm.metric,
            mm.unit,
            s.count,
            s.min,
            s.mean,
            s.stdev,
            s.p50,
            s.p90,
            s.p99,
            s.p999,
            s.p9999,
            s.max,
            mm.overflows(),
            mm.deadline.map_or(String::new(), |d| d.to_string()),
            mm.misses.map_or(String::new(), |d| d.to_string()),
            run.status,
        );
    }
    out
}

/// An HdrHistogram interval log (the format of HdrHistogram's `HistogramLogProcessor`
/// and plotter), one interval per measurement, tagged with the metric name.
pub fn hdr_log(run: &RunRecord, measurements: &[MeasurementRecord]) -> String {
    let mut buf = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    {
        let mut writer = IntervalLogWriterBuilder::new()
            .add_comment(&format!(
                "audiolat run {} ({}), started {}; values in ns",
                run.id, run.probe, run.started_at
            ))
            .begin_log_with(&mut buf, &mut serializer)
            .expect("writing to a Vec cannot fail");
        let duration = Duration::from_secs_f64(run.duration_s.unwrap_or(0.0).max(0.0));
        for m in measurements {
            let Some(h) = &m.measurement.histogram else {
                continue;
            };
            let tag = Tag::new(&m.measurement.metric);
            writer
                .write_histogram(h.hdr(), Duration::ZERO, duration, tag)
                .expect("writing to a Vec cannot fail");
        }
    }
    String::from_utf8(buf).expect("interval logs are ASCII")
}

/// cyclictest's histogram text (`cyclictest -h N` / `--histfile`): one line per µs
/// bucket from 0 to the bound, then its trailer, so existing plotting scripts read it.
/// `overflow_cycles` are the cycle numbers of samples above the bound.
pub fn cyclictest_histogram(h: &LatencyHistogram, overflow_cycles: &[u64]) -> String {
    let buckets = h.linear_buckets(1_000);
    let n = (h.bound() / 1_000) as usize;
    let mut out = String::with_capacity(n * 14 + 256);
    out.push_str("# Histogram\n");
    // Values within the bound but past the last whole µs bucket count as overflows,
    // as in cyclictest (`diff >= histogram`).
    let mut beyond: u64 = buckets[n.min(buckets.len())..].iter().sum();
    for (us, count) in buckets.iter().take(n).enumerate() {
        let _ = writeln!(out, "{us:06} {count:06}");
    }
    beyond += h.overflows();
    let total: u64 = buckets.iter().take(n).sum();
    let _ = writeln!(out, "# Total: {total:09}");
    let _ = writeln!(out, "# Min Latencies: {:05}", h.min() / 1_000);
    let _ = writeln!(out, "# Avg Latencies: {:05}", (h.mean() / 1_000.0) as u64);
    let _ = writeln!(out, "# Max Latencies: {:05}", h.max() / 1_000);
    let _ = writeln!(out, "# Histogram Overflows: {beyond:05}");
    out.push_str("# Histogram Overflow at cycle number:\n# Thread 0:");
    for c in overflow_cycles {
        let _ = write!(out, " {c:05}");
    }
    if (overflow_cycles.len() as u64) < beyond {
        let _ = write!(
            out,
            " # {:05} others",
            beyond - overflow_cycles.len() as u64
        );
    }
    out.push('\n');
    out
}

/// Parses cyclictest's histogram text back into (µs, count) pairs and its trailer
/// fields. Used to compare with cyclictest itself.
pub fn parse_cyclictest_histogram(text: &str) -> CyclictestHistogram {
    let mut out = CyclictestHistogram::default();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            let field = |name: &str| {
                rest.strip_prefix(name)
                    .and_then(|v| v.trim().parse::<u64>().ok())
            };
            if let Some(v) = field("Total:") {
                out.total = v;
            } else if let Some(v) = field("Min Latencies:") {
                out.min_us = v;
            } else if let Some(v) = field("Avg Latencies:") {
                out.avg_us = v;
            } else if let Some(v) = field("Max Latencies:") {
                out.max_us = v;
            } else if let Some(v) = field("Histogram Overflows:") {
                out.overflows = v;
            }
            continue;
        }
        let mut parts = line.split_whitespace();
        if let (Some(a), Some(b)) = (parts.next(), parts.next()) {
            if let (Ok(us), Ok(count)) = (a.parse::<u64>(), b.parse::<u64>()) {
                out.buckets.push((us, count));
            }
        }
    }
    out
}

/// cyclictest histogram text, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CyclictestHistogram {
    /// (µs, count) per bucket (first thread).
    pub buckets: Vec<(u64, u64)>,
    /// `# Total:`
    pub total: u64,
    /// `# Min Latencies:`
    pub min_us: u64,
    /// `# Avg Latencies:`
    pub avg_us: u64,
    /// `# Max Latencies:`
    pub max_us: u64,
    /// `# Histogram Overflows:`
    pub overflows: u64,
}

impl CyclictestHistogram {
    /// The value (µs) at percentile `q` of the in-histogram samples plus overflows
    /// (which rank above every bucket).
    pub fn percentile_us(&self, q: f64) -> u64 {
        let all = self.total + self.overflows;
        let rank = ((q / 100.0) * all as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for &(us, count) in &self.buckets {
            seen += count;
            if seen >= rank {
                return us;
            }
        }
        self.buckets.last().map_or(0, |b| b.0 + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cyclictest_text_round_trips() {
        let mut h = LatencyHistogram::new(200_000).unwrap();
        for v in [8_100, 8_900, 15_000, 15_500, 199_999, 250_000] {
            h.record(v);
        }
        let text = cyclictest_histogram(&h, &[5]);
        let parsed = parse_cyclictest_histogram(&text);
        assert_eq!(parsed.buckets.len(), 200);
        assert_eq!(parsed.buckets[8], (8, 2));
        assert_eq!(parsed.buckets[15], (15, 2));
        assert_eq!(parsed.buckets[199], (199, 1));
        assert_eq!(parsed.total, 5);
        assert_eq!(parsed.overflows, 1);
        assert_eq!(parsed.max_us, 250);
        assert_eq!(parsed.min_us, 8);
        assert_eq!(parsed.percentile_us(50.0), 15);
        assert!(text.contains("# Thread 0: 00005\n"));
    }

    #[test]
    fn parses_real_cyclictest_output() {
        let text = "# /dev/cpu_dma_latency set to 0us\n# Histogram\n000000 000000\n000001 000002\n\
                    000002 000003\n# Total: 000000005\n# Min Latencies: 00001\n\
                    # Avg Latencies: 00001\n# Max Latencies: 00009\n# Histogram Overflows: 00001\n\
                    # Histogram Overflow at cycle number:\n# Thread 0: 00004\n";
        let p = parse_cyclictest_histogram(text);
        assert_eq!(p.total, 5);
        assert_eq!(p.overflows, 1);
        assert_eq!(p.percentile_us(50.0), 2);
        assert_eq!(p.percentile_us(100.0), 3);
    }
}
