//! Exports in the formats test farms already read: rt-tests' `cyclictest --json`
//! layout (KernelCI's and Linaro's rt-tests parsers) and OpenMetrics text (the
//! node_exporter textfile collector, Prometheus). Each is made from a stored run only.

use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use crate::hist::LatencyHistogram;
use crate::model::{epoch_of_rfc3339, rfc2822_utc, MeasurementRecord, RunRecord, RunStatus};

/// A jitter run's wake-up latency in the layout of rt-tests 2.4's `cyclictest --json`:
/// the same keys and types (`"cmdline:"` and `"rt_test_version:"` with their colons),
/// one measuring thread `"0"` with its histogram of whole µs (only the buckets holding
/// samples, keys as strings, as cyclictest writes them), cycles, min, max (µs, whole)
/// and avg (µs).
///
/// Where the format wants a value audiolat did not measure it writes cyclictest's own
/// value for "not known": `cpu` -1 when the thread was not pinned to one CPU, `node` -1,
/// `resolution_in_ns` 0 (cyclictest's when its `-R` check did not run). `return_code`
/// is 0 for a complete run, 1 otherwise. `rt_test_version:` names audiolat and its
/// version, the tool that measured.
pub fn cyclictest_json(run: &RunRecord, h: &LatencyHistogram) -> Value {
    let start = epoch_of_rfc3339(&run.started_at);
    let end = run
        .ended_at
        .as_deref()
        .and_then(epoch_of_rfc3339)
        .or_else(|| Some(start? + run.duration_s?));
    let when = |t: Option<f64>| t.map(rfc2822_utc).unwrap_or_default();
    let mut histogram = Map::new();
    let bound_us = h.bound() / 1_000;
    for v in h.hdr().iter_recorded() {
        let us = h.hdr().lowest_equivalent(v.value_iterated_to()) / 1_000;
        if us < bound_us {
            let entry = histogram.entry(us.to_string()).or_insert(json!(0u64));
            *entry = json!(entry.as_u64().unwrap_or(0) + v.count_at_value());
        }
    }
    let (min, max, avg) = match h.count() {
        0 => (json!(null), json!(null), json!(null)),
        _ => (
            json!(h.min() / 1_000),
            json!(h.max() / 1_000),
            json!((h.mean() / 10.0).round() / 100.0),
        ),
    };
    let cpu = run.qos_granted["cpus"]
        .as_str()
        .and_then(|c| c.parse::<i64>().ok())
        .unwrap_or(-1);
    let m = &run.machine;
    json!({
        "file_version": 1,
        "cmdline:": run.command_line,
        "rt_test_version:": format!("audiolat {}", run.tool.version),
        "start_time": when(start),
        "end_time": when(end),
        "return_code": if run.status == RunStatus::Complete { 0 } else { 1 },
        "sysinfo": {
            "sysname": "Linux",
            "nodename": m.hostname,
            "release": m.kernel_release,
            "version": m.kernel_version,
            "machine": m.arch.as_deref().unwrap_or_default(),
            "realtime": i32::from(m.preemption.contains("PREEMPT_RT")),
        },
        "num_threads": 1,
        "resolution_in_ns": 0,
        "thread": {
            "0": {
                "histogram": histogram,
                "cycles": h.count(),
                "min": min,
                "max": max,
                "avg": avg,
                "cpu": cpu,
                "node": -1,
            }
        }
    })
}

/// `name` as an OpenMetrics metric name: letters, digits and `_`.
fn metric_name(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// `text` as an OpenMetrics label value (backslash, quote and newline escaped).
fn label_value(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The bucket bounds of a latency histogram in ns: 1, 2 and 5 times each power of ten
/// from 1 µs up to the histogram's bound (where the mass of audio latencies shows, from
/// tens of µs to tens of ms, in a dozen buckets a decade).
fn bucket_bounds_ns(bound: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut decade = 1_000u64;
    while decade <= bound {
        for k in [1, 2, 5] {
            if k * decade <= bound {
                out.push(k * decade);
            }
        }
        decade *= 10;
    }
    out
}

/// A run's histograms as OpenMetrics text: per measurement in ns a histogram
/// `audiolat_<metric>_seconds` (cumulative `_bucket{le=...}`, `_sum`, `_count`, with
/// the overflows above the histogram's bound in `+Inf` only), its deadline misses as
/// `audiolat_<metric>_deadline_misses_total`, then `# EOF`. Every series carries the
/// run, probe and host as labels. A measurement without samples is left out.
pub fn openmetrics(run: &RunRecord, measurements: &[MeasurementRecord]) -> String {
    let labels = format!(
        "run=\"{}\",probe=\"{}\",host=\"{}\",kernel=\"{}\"",
        run.id,
        label_value(&run.probe),
        label_value(&run.machine.hostname),
        label_value(&run.machine.kernel_release)
    );
    let mut out = String::new();
    for m in measurements.iter().map(|m| &m.measurement) {
        let (Some(h), Some(s)) = (&m.histogram, &m.summary) else {
            continue;
        };
        if m.unit != "ns" {
            continue;
        }
        let name = format!("audiolat_{}_seconds", metric_name(&m.metric));
        let _ = writeln!(out, "# TYPE {name} histogram");
        let _ = writeln!(out, "# UNIT {name} seconds");
        let _ = writeln!(
            out,
            "# HELP {name} {} ({}), audiolat run {}",
            m.metric,
            label_value(&m.method),
            run.id
        );
        for le in bucket_bounds_ns(h.bound()) {
            let count = h.hdr().count_between(0, le);
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels},le=\"{}\"}} {count}",
                le as f64 / 1e9
            );
        }
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", s.count);
        let _ = writeln!(
            out,
            "{name}_sum{{{labels}}} {}",
            s.mean * s.count as f64 / 1e9
        );
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", s.count);
        if let Some(misses) = m.misses {
            let misses_name = format!("audiolat_{}_deadline_misses", metric_name(&m.metric));
            let _ = writeln!(out, "# TYPE {misses_name} counter");
            let _ = writeln!(out, "{misses_name}_total{{{labels}}} {misses}");
        }
    }
    out.push_str("# EOF\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_one_two_five_per_decade_up_to_the_bound() {
        assert_eq!(
            bucket_bounds_ns(100_000),
            vec![1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000]
        );
        assert_eq!(metric_name("p99.9-x"), "p99_9_x");
        assert_eq!(label_value("a\"b\\"), "a\\\"b\\\\");
    }
}
