//! Exports of stored runs: JSON, CSV, HdrHistogram interval logs and cyclictest's
//! histogram text.

use std::fmt::Write as _;
use std::time::Duration;

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use serde_json::{json, Value};

use crate::hist::{LatencyHistogram, Summary};
use crate::model::{Event, MeasurementRecord, Series, TriggerRow};
use crate::run::RunRecord;

/// A summary as a JSON object; without one (nothing measured) the count is 0 and every
/// statistic `null`.
pub fn summary_json(s: Option<&Summary>) -> Value {
    let Some(s) = s else {
        return json!({
            "count": 0, "min": null, "mean": null, "stdev": null,
            "p50": null, "p90": null, "p99": null, "p99.9": null, "p99.99": null,
            "max": null, "percentiles_clamped_at": null,
        });
    };
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
        "summary": summary_json(mm.summary.as_ref()),
        "overflows": mm.overflows(),
        "histogram_bound": mm.histogram.as_ref().map(LatencyHistogram::bound),
        "deadline": mm.deadline,
        "misses": mm.misses,
        "detail": mm.detail,
    });
    if buckets {
        if let Some(h) = &mm.histogram {
            let rows: Vec<Value> = h.buckets().map(|(v, n)| json!([v, n])).collect();
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
        "run_id,seq,source,trigger_ns,note_frame,offset_frames,cycle,dac_ns,latency_ns,wait_ns,lateness_ns,buffer_ns,late,missed,measured_ns,underruns_before,timing\n",
    );
    for t in triggers {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            run.id,
            t.seq,
            t.source,
            t.trigger_ns,
            t.note_frame,
            t.offset_frames,
            t.cycle,
            cell(t.dac_ns),
            cell(t.latency_ns),
            cell(t.wait_ns),
            cell(t.lateness_ns),
            t.buffer_ns,
            t.late,
            t.missed,
            cell(t.measured_ns),
            t.underruns_before,
            t.timing
        );
    }
    out
}

/// A value nobody measured is an empty cell.
fn cell<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
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

/// One CSV row per measurement with its summary. A percentile above the histogram's
/// bound was not measured: its cell is empty and `percentiles_clamped_at` holds the
/// bound it is at least (empty when every percentile was measured).
pub fn measurements_csv(run: &RunRecord, measurements: &[MeasurementRecord]) -> String {
    let mut out = String::from(
        "run_id,probe,metric,unit,count,min,mean,stdev,p50,p90,p99,p99.9,p99.99,max,overflows,deadline,misses,status,percentiles_clamped_at\n",
    );
    for m in measurements {
        let mm = &m.measurement;
        // Nothing measured: the statistics' cells are empty, not 0.
        let stats = mm.summary.as_ref().map_or_else(
            || ",,,,,,,,".to_string(),
            |s| {
                let p = |name: &str| {
                    s.stat(name)
                        .and_then(crate::hist::Stat::measured)
                        .map_or(String::new(), |v| v.to_string())
                };
                format!(
                    "{},{:.1},{:.1},{},{},{},{},{},{}",
                    s.min,
                    s.mean,
                    s.stdev,
                    p("p50"),
                    p("p90"),
                    p("p99"),
                    p("p99.9"),
                    p("p99.99"),
                    s.max
                )
            },
        );
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{}",
            run.id,
            mm.probe,
            mm.metric,
            mm.unit,
            mm.count(),
            stats,
            mm.overflows(),
            mm.deadline.map_or(String::new(), |d| d.to_string()),
            mm.misses.map_or(String::new(), |d| d.to_string()),
            run.status,
            mm.summary
                .and_then(|s| s.clamped_at)
                .map_or(String::new(), |b| b.to_string()),
        );
    }
    out
}

/// An HdrHistogram interval log in format v1.3 (the format of HdrHistogram's
/// `HistogramLogProcessor`, plotter and the Python `hdrh` reader): the version line, a
/// comment naming the run, `#[StartTime: ...]` and `#[BaseTime: ...]` (the run's start,
/// so interval timestamps count from it), the column legend, then one interval per
/// measurement with samples, tagged with the metric name (values in ns; a comment names
/// the measurements that had none).
pub fn hdr_log(run: &RunRecord, measurements: &[MeasurementRecord]) -> String {
    let mut buf = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    // A histogram's interval holds its samples within the bound; those above it (the
    // overflows) are named in a comment, never logged as made-up values.
    let in_range = |h: &&crate::hist::LatencyHistogram| !h.hdr().is_empty();
    let empty: Vec<&str> = measurements
        .iter()
        .filter(|m| {
            m.measurement
                .histogram
                .as_ref()
                .is_some_and(|h| h.count() == 0)
        })
        .map(|m| m.measurement.metric.as_str())
        .collect();
    let overflows: Vec<String> = measurements
        .iter()
        .filter_map(|m| {
            let h = m.measurement.histogram.as_ref()?;
            (h.overflows() > 0).then(|| {
                format!(
                    "{} {} above {} ns (max {} ns)",
                    m.measurement.metric,
                    h.overflows(),
                    h.bound(),
                    h.max()
                )
            })
        })
        .collect();
    let mut head = String::from("#[Histogram log format version 1.3]\n");
    let _ = writeln!(
        head,
        "#audiolat run {} ({}), started {}; values in ns",
        run.id, run.probe, run.started_at
    );
    if !empty.is_empty() {
        let _ = writeln!(head, "#no samples, left out: {}", empty.join(", "));
    }
    if !overflows.is_empty() {
        let _ = writeln!(
            head,
            "#overflows, not in the intervals: {}",
            overflows.join("; ")
        );
    }
    if let Some(start) = crate::model::epoch_of_rfc3339(&run.started_at) {
        let _ = writeln!(
            head,
            "#[StartTime: {start:.3} (seconds since epoch), {}]",
            crate::model::rfc2822_utc(start)
        );
        let _ = writeln!(head, "#[BaseTime: {start:.3} (seconds since epoch)]");
    }
    head.push_str("\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n");
    buf.extend_from_slice(head.as_bytes());
    let duration = Duration::from_secs_f64(run.duration_s.unwrap_or(0.0).max(0.0));
    for m in measurements {
        // A histogram without samples has no interval to log (its max would read 0).
        let Some(h) = m.measurement.histogram.as_ref().filter(in_range) else {
            continue;
        };
        let mut line = Vec::new();
        IntervalLogWriterBuilder::new()
            .begin_log_with(&mut line, &mut serializer)
            .expect("writing to a Vec cannot fail")
            .write_histogram(
                h.hdr(),
                Duration::ZERO,
                duration,
                Tag::new(&m.measurement.metric),
            )
            .expect("writing to a Vec cannot fail");
        let line = String::from_utf8(line).expect("interval logs are ASCII");
        buf.extend_from_slice(with_interval_max(&line, interval_max(h)).as_bytes());
    }
    String::from_utf8(buf).expect("interval logs are ASCII")
}

/// The largest value of a histogram's interval: its exact maximum when every sample is
/// in it; with overflows (left out of the interval), the top of its highest bucket, no
/// higher than the bound. HdrHistogram's writer would log the top of the highest
/// bucket, above the largest sample (a single sample of 12 170 576 ns as 12 173 311).
fn interval_max(h: &LatencyHistogram) -> u64 {
    if h.overflows() == 0 {
        return h.max();
    }
    h.buckets().last().map_or(0, |(v, _)| v)
}

/// An interval line (`Tag=...,start,length,max,histogram`) with its max field set to
/// `max` (ns, written as the log writes it, three decimals).
fn with_interval_max(line: &str, max: u64) -> String {
    let fields: Vec<&str> = line.splitn(5, ',').collect();
    match fields.as_slice() {
        [tag, start, length, _, rest] => format!("{tag},{start},{length},{max}.000,{rest}"),
        _ => line.to_string(),
    }
}

/// cyclictest's histogram text (`cyclictest -h N` / `--histfile`): one line per µs
/// bucket from 0 to the last bucket holding a sample (as cyclictest trims its output),
/// then its trailer, so existing plotting scripts read it. The output grows with the
/// data, not with the histogram's bound. Without samples there are no bucket lines and
/// the trailer's minimum, average and maximum are `-`, never a made-up 0.
/// `overflow_cycles` are the cycle numbers of samples above the bound.
pub fn cyclictest_histogram(h: &LatencyHistogram, overflow_cycles: &[u64]) -> String {
    // Whole µs buckets below the bound; a value within the bound but past the last
    // whole bucket counts as an overflow, as in cyclictest (`diff >= histogram`).
    let n = h.bound() / 1_000;
    let mut buckets: Vec<(u64, u64)> = Vec::new();
    let mut beyond = h.overflows();
    for v in h.hdr().iter_recorded() {
        let us = h.hdr().lowest_equivalent(v.value_iterated_to()) / 1_000;
        if us >= n {
            beyond += v.count_at_value();
        } else if let Some(last) = buckets.last_mut().filter(|b| b.0 == us) {
            last.1 += v.count_at_value();
        } else {
            buckets.push((us, v.count_at_value()));
        }
    }
    let used = buckets.last().map_or(0, |b| b.0 + 1);
    let mut out = String::with_capacity(used as usize * 14 + 256);
    out.push_str("# Histogram\n");
    let mut next = buckets.iter().peekable();
    for us in 0..used {
        let count = match next.peek() {
            Some(&&(at, c)) if at == us => {
                next.next();
                c
            }
            _ => 0,
        };
        let _ = writeln!(out, "{us:06} {count:06}");
    }
    let total: u64 = buckets.iter().map(|b| b.1).sum();
    let _ = writeln!(out, "# Total: {total:09}");
    if h.count() == 0 {
        out.push_str("# Min Latencies: -\n# Avg Latencies: -\n# Max Latencies: -\n");
    } else {
        let _ = writeln!(out, "# Min Latencies: {:05}", h.min() / 1_000);
        let _ = writeln!(out, "# Avg Latencies: {:05}", (h.mean() / 1_000.0) as u64);
        let _ = writeln!(out, "# Max Latencies: {:05}", h.max() / 1_000);
    }
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
        let rank = crate::hist::nearest_rank(q, all);
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
    use crate::RunId;

    #[test]
    fn cyclictest_text_round_trips() {
        let mut h = LatencyHistogram::new(200_000).unwrap();
        for v in [8_100, 8_900, 15_000, 15_500, 199_999, 250_000] {
            h.record(v);
        }
        let text = cyclictest_histogram(&h, &[5]);
        let parsed = parse_cyclictest_histogram(&text);
        // Up to the last used bucket (199 µs), not the bound.
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
    fn cyclictest_text_stops_at_the_last_used_bucket() {
        // A bound of 10 s would be 10 million lines; the data decides the length.
        let mut h = LatencyHistogram::new(10_000_000_000).unwrap();
        for v in [1_500, 2_100, 41_500] {
            h.record(v);
        }
        let text = cyclictest_histogram(&h, &[]);
        let parsed = parse_cyclictest_histogram(&text);
        assert_eq!(parsed.buckets.len(), 42, "{text}");
        assert_eq!(parsed.buckets[1], (1, 1));
        assert_eq!(parsed.buckets[2], (2, 1));
        assert_eq!(parsed.buckets[41], (41, 1));
        assert_eq!(parsed.total, 3);
        assert_eq!(parsed.max_us, 41);
        assert!(text.len() < 2_000, "{} bytes", text.len());
    }

    #[test]
    fn cyclictest_text_of_nothing_has_no_made_up_statistics() {
        let h = LatencyHistogram::new(10_000_000_000).unwrap();
        let text = cyclictest_histogram(&h, &[]);
        assert_eq!(
            text,
            "# Histogram\n# Total: 000000000\n# Min Latencies: -\n# Avg Latencies: -\n\
             # Max Latencies: -\n# Histogram Overflows: 00000\n\
             # Histogram Overflow at cycle number:\n# Thread 0:\n"
        );
    }

    #[test]
    fn csv_of_an_empty_measurement_leaves_its_statistics_empty() {
        let m = crate::model::Measurement::from_histogram(
            "roundtrip",
            "roundtrip",
            "test",
            LatencyHistogram::new(1_000_000).unwrap(),
        );
        let record = MeasurementRecord {
            id: 1,
            run_id: RunId(7),
            measurement: m,
        };
        let csv = measurements_csv(&run_record(RunId(7)), &[record]);
        let row = csv.lines().nth(1).unwrap();
        assert_eq!(row, "7,roundtrip,roundtrip,ns,0,,,,,,,,,,0,,,complete,");
        let json = measurement_json(
            &MeasurementRecord {
                id: 1,
                run_id: RunId(7),
                measurement: crate::model::Measurement::from_histogram(
                    "net",
                    "response_time",
                    "test",
                    LatencyHistogram::new(1_000_000).unwrap(),
                ),
            },
            true,
        );
        assert_eq!(json["summary"]["count"], 0);
        for k in ["min", "mean", "stdev", "p50", "p99", "p99.9", "max"] {
            assert!(json["summary"][k].is_null(), "{k}: {json}");
        }
    }

    /// A histogram of one sample says that sample, never the top of its bucket: in the
    /// JSON's buckets and as the hdr log's `Interval_Max` (HdrHistogram's writer logs the
    /// bucket's top, 12 173 311 ns for a sample of 12 170 576).
    #[test]
    fn a_one_sample_histogram_reports_its_sample_not_its_buckets_top() {
        let mut h = LatencyHistogram::new(10_000_000_000).unwrap();
        h.record(12_170_576);
        assert!(h.hdr().highest_equivalent(12_170_576) > 12_170_576);
        let record = MeasurementRecord {
            id: 1,
            run_id: RunId(7),
            measurement: crate::model::Measurement::from_histogram(
                "event",
                "event_latency",
                "test",
                h,
            ),
        };
        let json = measurement_json(&record, true);
        assert_eq!(
            json["histogram"]["value_count"],
            json!([[12_170_576u64, 1]])
        );
        assert_eq!(json["summary"]["max"], 12_170_576.0);
        let log = hdr_log(&run_record(RunId(7)), std::slice::from_ref(&record));
        let line = log
            .lines()
            .find(|l| l.starts_with("Tag=event_latency,"))
            .unwrap();
        assert_eq!(line.split(',').nth(3), Some("12170576.000"), "{log}");
    }

    fn run_record(id: RunId) -> RunRecord {
        RunRecord {
            id,
            group_id: None,
            probe: &crate::probe_kind::ROUNDTRIP,
            status: crate::model::RunStatus::Complete,
            started_at: "2026-01-01T00:00:00.000Z".into(),
            ended_at: None,
            duration_s: None,
            started_mono_ns: 0,
            pid: 1,
            machine: Default::default(),
            tool: Default::default(),
            command_line: String::new(),
            config: json!({}),
            load: json!({}),
            qos_requested: json!({}),
            qos_granted: json!({}),
            flags: json!({}),
            result: json!({}),
            error: None,
        }
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
