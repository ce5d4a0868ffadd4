//! Exports in the formats test farms already read: rt-tests' `cyclictest --json`
//! layout (KernelCI's and Linaro's rt-tests parsers), OpenMetrics text (the
//! node_exporter textfile collector, Prometheus), LAVA result lines (Linaro's
//! test-definitions) and JUnit XML (CI servers). Each is made from stored runs only.

use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use crate::gate::GateVerdict;
use crate::hist::{LatencyHistogram, Stat};
use crate::model::{epoch_of_rfc3339, rfc2822_utc, MeasurementRecord, RunStatus};
use crate::run::RunRecord;

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
    // A bucket's samples go to its lowest whole µs (its 3 significant digits make
    // buckets wider than 1 µs above 2 ms); the bucket holding the largest sample to the
    // largest sample's µs, as cyclictest would bin it.
    let bound_us = h.bound() / 1_000;
    for v in h.hdr().iter_recorded() {
        let top = h.hdr().highest_equivalent(v.value_iterated_to());
        let low = h.hdr().lowest_equivalent(v.value_iterated_to());
        let ns = if (low..=top).contains(&h.max()) {
            h.max()
        } else {
            low
        };
        let us = ns / 1_000;
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
    let cpu = run
        .qos_granted_record()
        .cpus
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

/// Runs' histograms as OpenMetrics text: per measurement in ns a histogram
/// `audiolat_<metric>_seconds` (cumulative `_bucket{le=...}`, `_sum`, `_count`, with
/// the overflows above the histogram's bound in `+Inf` only), its deadline misses as
/// `audiolat_<metric>_deadline_misses_total`, then `# EOF`. Each metric is one family
/// with a series per run, labelled with the run, probe, host and kernel. A measurement
/// without samples is left out.
pub fn openmetrics(runs: &[(&RunRecord, &[MeasurementRecord])]) -> String {
    // Each family's series, in the order first met: (name, help, lines).
    let mut families: Vec<(String, String, Vec<String>)> = Vec::new();
    let mut misses: Vec<(String, Vec<String>)> = Vec::new();
    for (run, measurements) in runs {
        let labels = format!(
            "run=\"{}\",probe=\"{}\",host=\"{}\",kernel=\"{}\"",
            run.id,
            label_value(run.probe.name),
            label_value(&run.machine.hostname),
            label_value(&run.machine.kernel_release)
        );
        for m in measurements.iter().map(|m| &m.measurement) {
            let (Some(h), Some(s)) = (&m.histogram, &m.summary) else {
                continue;
            };
            if m.unit != "ns" {
                continue;
            }
            let name = format!("audiolat_{}_seconds", metric_name(&m.metric));
            let at = match families.iter().position(|f| f.0 == name) {
                Some(at) => at,
                None => {
                    let help = format!("{} ({})", m.metric, label_value(&m.method));
                    families.push((name.clone(), help, Vec::new()));
                    families.len() - 1
                }
            };
            let lines = &mut families[at].2;
            for le in bucket_bounds_ns(h.bound()) {
                // Only whole HDR buckets at or below `le`: a bucket reaching past it
                // holds samples that may be above.
                let edge = h.hdr().lowest_equivalent(le + 1);
                let count = match edge {
                    0 => 0,
                    e => h.hdr().count_between(0, e - 1),
                };
                let le = le as f64 / 1e9;
                lines.push(format!("{name}_bucket{{{labels},le=\"{le}\"}} {count}"));
            }
            lines.push(format!("{name}_bucket{{{labels},le=\"+Inf\"}} {}", s.count));
            let sum = s.mean * s.count as f64 / 1e9;
            lines.push(format!("{name}_sum{{{labels}}} {sum}"));
            lines.push(format!("{name}_count{{{labels}}} {}", s.count));
            if let Some(n) = m.misses {
                let family = format!("audiolat_{}_deadline_misses", metric_name(&m.metric));
                let line = format!("{family}_total{{{labels}}} {n}");
                match misses.iter_mut().find(|f| f.0 == family) {
                    Some(f) => f.1.push(line),
                    None => misses.push((family, vec![line])),
                }
            }
        }
    }
    let mut out = String::new();
    for (name, help, lines) in &families {
        let _ = writeln!(out, "# TYPE {name} histogram");
        let _ = writeln!(out, "# UNIT {name} seconds");
        let _ = writeln!(out, "# HELP {name} {help}");
        lines.iter().for_each(|l| out.extend([l.as_str(), "\n"]));
    }
    for (name, lines) in &misses {
        let _ = writeln!(out, "# TYPE {name} counter");
        lines.iter().for_each(|l| out.extend([l.as_str(), "\n"]));
    }
    out.push_str("# EOF\n");
    out
}

/// `text` as a LAVA test case name: `[A-Za-z0-9._-]`, comparisons as words (`p99.9 >
/// 200us` is `p99.9-gt-200us`), runs of anything else as one `-`.
pub fn lava_name(text: &str) -> String {
    let words = text
        .replace(">=", " ge ")
        .replace("<=", " le ")
        .replace("==", " eq ")
        .replace("!=", " ne ")
        .replace('>', " gt ")
        .replace('<', " lt ");
    let mut out = String::new();
    for c in words.trim().chars() {
        let keep = c.is_ascii_alphanumeric() || matches!(c, '.' | '_');
        if keep {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

/// A statistic of a summary in a unit for people: ns as µs (`us`), others as they are.
fn measurement_value(v: f64, unit: &str) -> (String, String) {
    match unit {
        "ns" => (format!("{:.3}", v / 1_000.0), "us".into()),
        other => (format!("{v}"), other.to_string()),
    }
}

/// The statistics a farm's result lines carry, with their names: a percentile above
/// the histogram's bound is [`Stat::AtLeast`] it, not a measurement.
fn summary_stats(s: &crate::hist::Summary) -> Vec<(&'static str, Stat)> {
    ["min", "mean", "p50", "p99", "p99.9", "max"]
        .into_iter()
        .filter_map(|name| Some((name, s.stat(name)?)))
        .collect()
}

/// A run as LAVA result lines, `NAME RESULT [MEASUREMENT UNITS]`, as Linaro's
/// test-definitions write to `result.txt`: the run itself (`<probe>-run pass`, or
/// `fail` when it did not complete), one line per statistic of each measurement
/// (`<metric>-<stat> pass <value> <unit>`, ns as µs; a percentile above the histogram's
/// bound was not measured: `<metric>-<stat> unknown`, without a measurement), its
/// deadline misses, and one line per gate (`gate-<expr> pass|fail [value unit]`; a gate
/// whose value was not measured fails without a measurement). `prefix` starts
/// every name (a sweep's runs are told apart by it).
pub fn lava(
    run: &RunRecord,
    measurements: &[MeasurementRecord],
    gates: &[GateVerdict],
    prefix: &str,
) -> String {
    let mut out = String::new();
    let status = if run.status == RunStatus::Complete {
        "pass"
    } else {
        "fail"
    };
    let _ = writeln!(out, "{prefix}{}-run {status}", lava_name(run.probe.name));
    for m in measurements.iter().map(|m| &m.measurement) {
        let Some(s) = &m.summary else { continue };
        let metric = lava_name(&m.metric);
        for (stat, v) in summary_stats(s) {
            match v {
                Stat::Value(v) => {
                    let (value, unit) = measurement_value(v, &m.unit);
                    let _ = writeln!(out, "{prefix}{metric}-{stat} pass {value} {unit}");
                }
                Stat::AtLeast(_) => {
                    let _ = writeln!(out, "{prefix}{metric}-{stat} unknown");
                }
            }
        }
        if let Some(n) = m.misses {
            let _ = writeln!(out, "{prefix}{metric}-misses pass {n} count");
        }
    }
    for g in gates {
        let result = if g.failed() { "fail" } else { "pass" };
        let name = format!("{prefix}gate-{}", lava_name(&g.expr));
        match g.value {
            Some(v) => {
                let (value, unit) = measurement_value(v, &g.unit);
                let _ = writeln!(out, "{name} {result} {value} {unit}");
            }
            None => {
                let _ = writeln!(out, "{name} {result}");
            }
        }
    }
    out
}

/// `text` escaped for an XML attribute.
fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Runs as JUnit XML (the layout Jenkins, GitLab and most CI read): a `<testsuite>`
/// per run (`audiolat.<probe>`, `.1`, `.2`, ... in a sweep) with its id and metrics as
/// `<property>`s (`<metric>.<stat>` in the metric's unit,
/// `_ns` for ns), a test case for the run itself (a `<failure>` when it did not
/// complete) and one per gate (a `<failure>` when the run fails it, with the measured
/// value or `not measured`).
pub fn junit(runs: &[(&RunRecord, &[MeasurementRecord], &[GateVerdict])]) -> String {
    let mut body = String::new();
    let (mut tests, mut failures) = (0, 0);
    // Names stay the same from one CI run to the next (CI servers key a test's history
    // on them): the probe, and a sweep's runs by their place in it; the run's id is a
    // property.
    let suffix = |n: usize| match runs.len() {
        1 => String::new(),
        _ => format!(".{}", n + 1),
    };
    for (n, (run, measurements, gates)) in runs.iter().enumerate() {
        let class = format!("audiolat.{}", lava_name(run.probe.name));
        let mut cases = String::new();
        let mut fails = 0;
        let mut case = |name: &str, failure: Option<String>| {
            let _ = write!(
                cases,
                "    <testcase classname=\"{class}\" name=\"{}\"",
                xml(name)
            );
            match failure {
                Some(message) => {
                    fails += 1;
                    let _ = writeln!(
                        cases,
                        ">\n      <failure message=\"{}\"/>\n    </testcase>",
                        xml(&message)
                    );
                }
                None => cases.push_str("/>\n"),
            }
        };
        let status = run.status.as_str();
        case(
            &format!("{} run", run.probe),
            (run.status != RunStatus::Complete).then(|| {
                format!(
                    "the run ended {status}: {}",
                    run.error.as_deref().unwrap_or("-")
                )
            }),
        );
        for g in gates.iter() {
            let failure = g.failed().then(|| match g.value {
                Some(_) => format!("measured {}", g.value_text()),
                None => g.reason.clone().unwrap_or_else(|| "not measured".into()),
            });
            case(&format!("gate {}", g.expr), failure);
        }
        let count = 1 + gates.len();
        tests += count;
        failures += fails;
        let time = run
            .duration_s
            .map(|t| format!(" time=\"{t}\""))
            .unwrap_or_default();
        let _ = writeln!(
            body,
            "  <testsuite name=\"{class}{}\" tests=\"{count}\" failures=\"{fails}\" timestamp=\"{}\"{time} hostname=\"{}\">",
            suffix(n),
            xml(&run.started_at),
            xml(&run.machine.hostname)
        );
        body.push_str("    <properties>\n");
        let mut property = |name: &str, value: &str| {
            let _ = writeln!(
                body,
                "      <property name=\"{}\" value=\"{}\"/>",
                xml(name),
                xml(value)
            );
        };
        property("run_id", &run.id.to_string());
        property("kernel", &run.machine.kernel_release);
        property("command_line", &run.command_line);
        for m in measurements.iter().map(|m| &m.measurement) {
            let Some(s) = &m.summary else { continue };
            let unit = if m.unit == "ns" { "_ns" } else { "" };
            property(&format!("{}.count", m.metric), &s.count.to_string());
            // A percentile above the histogram's bound is left out: the bound it is at
            // least is a property of its own.
            for (stat, v) in summary_stats(s) {
                if let Some(v) = v.measured() {
                    property(&format!("{}.{stat}{unit}", m.metric), &v.to_string());
                }
            }
            if let Some(bound) = s.clamped_at {
                property(
                    &format!("{}.percentiles_clamped_at{unit}", m.metric),
                    &bound.to_string(),
                );
            }
            if let Some(n) = m.misses {
                property(&format!("{}.misses", m.metric), &n.to_string());
            }
        }
        body.push_str("    </properties>\n");
        body.push_str(&cases);
        body.push_str("  </testsuite>\n");
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"audiolat\" tests=\"{tests}\" failures=\"{failures}\">\n{body}</testsuites>\n"
    )
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

    #[test]
    fn lava_names_keep_only_what_lava_takes() {
        assert_eq!(lava_name("p99.9 > 200us"), "p99.9-gt-200us");
        assert_eq!(lava_name("xruns >= 1"), "xruns-ge-1");
        assert_eq!(lava_name("roundtrip<=10ms"), "roundtrip-le-10ms");
        assert_eq!(lava_name("  a / b  "), "a-b");
    }
}
