//! Two selections of runs side by side ("did this kernel / setting / board help?"): for
//! each configuration both have, each statistic's value on either side, the change, and
//! whether the change exceeds the run-to-run noise that the repeats show.
//!
//! A configuration is a plan cell's axes without its repeat (a single run is its own
//! configuration). Each side's value is the mean over its repeats; the noise is twice
//! the standard error of the difference, `2 sqrt(sa^2/na + sb^2/nb)`, from the
//! repeats' sample standard deviations (one side's when only it has repeats). With no
//! repeats on either side the noise is unknown, and the comparison says so. When runs
//! were traced (`audiolat jitter --why`), their culprits follow, side by side
//! ([`culprits`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::data::{CellData, ReportData};
use crate::paper::spread;

pub mod culprits;

/// The statistics compared, with how they are read from a measurement's summary.
pub const STATISTICS: [&str; 4] = ["mean", "p50", "p99", "max"];

/// One statistic of one configuration and metric, on both sides.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The configuration (axis labels without the repeat, or the probe).
    pub config: String,
    /// Its parts: the probe, then its `key=value` settings (empty when two single
    /// configurations with different labels are paired; the label is then `config`).
    pub parts: Vec<String>,
    /// Metric.
    pub metric: String,
    /// Unit of the values.
    pub unit: String,
    /// Statistic.
    pub statistic: String,
    /// Side A: mean over its runs.
    pub a: f64,
    /// Side B: mean over its runs.
    pub b: f64,
    /// Runs on each side.
    pub runs: (usize, usize),
    /// The noise the change is judged against, when the repeats show it.
    pub noise: Option<f64>,
}

impl Row {
    /// B - A.
    pub fn delta(&self) -> f64 {
        self.b - self.a
    }

    /// The change relative to A, in percent.
    pub fn delta_percent(&self) -> Option<f64> {
        (self.a != 0.0).then(|| 100.0 * self.delta() / self.a)
    }

    /// `exceeds noise`, `within noise` or `noise unknown`.
    pub fn verdict(&self) -> &'static str {
        match self.noise {
            Some(n) if self.delta().abs() > n => "exceeds noise",
            Some(_) => "within noise",
            None => "noise unknown",
        }
    }
}

/// Configuration fields that differ between repeats of one configuration.
const VOLATILE: [&str; 6] = [
    "seed",
    "server",
    "granted",
    "repeat",
    "playback_ports",
    "capture_port",
];

fn config_of(cell: &CellData) -> String {
    config_parts(cell).join(" ")
}

/// A configuration's parts: the probe, then `key=value` settings.
fn config_parts(cell: &CellData) -> Vec<String> {
    let axes: Vec<String> = cell
        .axes
        .iter()
        .filter(|(k, _)| k.as_str() != "repeat")
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let Some(run) = &cell.run else {
        return axes;
    };
    let probe = run.record.probe.name.to_string();
    if !axes.is_empty() {
        return std::iter::once(probe).chain(axes).collect();
    }
    // Outside a plan, a run's configuration is its settings and load.
    let mut parts = vec![probe];
    if let Some(load) = run.record.load_record().map(|l| l.spec) {
        parts.push(format!("load={load}"));
    }
    if let Some(config) = run.record.config.as_object() {
        for (k, v) in config {
            if VOLATILE.contains(&k.as_str()) || v.is_object() || v.is_array() || v.is_null() {
                continue;
            }
            if k == "load" {
                continue;
            }
            parts.push(format!(
                "{k}={}",
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            ));
        }
    }
    parts
}

/// Per (configuration, metric, statistic): the unit, the configuration's parts, the
/// values of its runs.
type Samples = BTreeMap<(String, String, String), (String, Vec<String>, Vec<f64>)>;

fn samples(data: &ReportData, metrics: &[String]) -> Samples {
    let mut out: Samples = BTreeMap::new();
    let mut unknown: Vec<(String, String, String)> = Vec::new();
    for c in &data.cells {
        let Some(r) = &c.run else { continue };
        if c.status != Some(results::RunStatus::Complete) {
            continue;
        }
        let parts = config_parts(c);
        let config = parts.join(" ");
        for m in &r.measurements {
            let Some(s) = m
                .summary
                .filter(|_| metrics.is_empty() || metrics.contains(&m.metric))
            else {
                continue;
            };
            for stat in STATISTICS {
                let key = (config.clone(), m.metric.clone(), stat.to_string());
                // A percentile above the histogram's bound was not measured: the
                // statistic of that configuration is not compared (see `above_bound`).
                match s.stat(stat).and_then(results::Stat::measured) {
                    Some(v) => out
                        .entry(key)
                        .or_insert_with(|| (m.unit.clone(), parts.clone(), Vec::new()))
                        .2
                        .push(v),
                    None => unknown.push(key),
                }
            }
        }
    }
    for key in unknown {
        out.remove(&key);
    }
    out
}

/// The statistics a side's configurations have above their histogram's bound in some
/// run (`event buffer=128: event_latency p99`): not measured, so not compared.
pub fn above_bound(data: &ReportData, metrics: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in &data.cells {
        let Some(r) = &c.run else { continue };
        for m in &r.measurements {
            let Some(s) = m
                .summary
                .filter(|_| metrics.is_empty() || metrics.contains(&m.metric))
            else {
                continue;
            };
            for stat in STATISTICS {
                if s.stat(stat).is_some_and(|v| v.measured().is_none()) {
                    let text = format!("{}: {} {stat}", config_of(c), m.metric);
                    if !out.contains(&text) {
                        out.push(text);
                    }
                }
            }
        }
    }
    out
}

/// Configurations a side ran to the end but measured nothing of its probe's main metric
/// in (a loop not found, every note missed; among `metrics`, when named): they have no
/// row, and the reader should know why.
pub fn unmeasured(data: &ReportData, metrics: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in &data.cells {
        let Some(r) = &c.run else { continue };
        let Some(main) = r.main_metric() else {
            continue;
        };
        if c.status != Some(results::RunStatus::Complete)
            || !(metrics.is_empty() || metrics.iter().any(|m| m == main))
        {
            continue;
        }
        let empty = r.measurement(main).is_none_or(|m| m.summary.is_none());
        let config = config_of(c);
        if empty && !out.contains(&config) {
            out.push(config);
        }
    }
    out
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Which metrics a comparison covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetricChoice {
    /// Every metric the runs have.
    All,
    /// Each probe's main one ([`headline_metrics`]).
    Headline,
    /// These.
    These(Vec<String>),
}

impl MetricChoice {
    /// The metric list [`compare`] takes for `a` against `b` (empty: all of them).
    pub fn metrics(self, a: &ReportData, b: &ReportData) -> Vec<String> {
        match self {
            MetricChoice::All => Vec::new(),
            MetricChoice::Headline => headline_metrics(a, b),
            MetricChoice::These(metrics) => metrics,
        }
    }
}

/// The metrics a comparison shows by default: each run's headline (its probe's main
/// metric), on either side.
pub fn headline_metrics(a: &ReportData, b: &ReportData) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in a.runs().chain(b.runs()) {
        if let Some(m) = r.headline() {
            if !out.contains(&m.metric) {
                out.push(m.metric.clone());
            }
        }
    }
    out
}

/// The label of two different configurations compared with each other: what they share
/// at the front (the probe) once, then each side's settings the other does not have
/// (`roundtrip backend=jack | backend=pipewire`), so that a long shared configuration
/// does not hide the difference.
fn paired_label(a: &[String], b: &[String]) -> String {
    let shared = a.iter().zip(b).take_while(|(x, y)| x == y).count().min(1);
    let only = |x: &[String], y: &[String]| {
        x.iter()
            .skip(shared)
            .filter(|p| !y.contains(p))
            .cloned()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let side_a = a[..shared]
        .iter()
        .cloned()
        .chain(Some(only(a, b)).filter(|d| !d.is_empty()))
        .collect::<Vec<_>>()
        .join(" ");
    format!("{side_a} | {}", only(b, a)).trim_end().to_string()
}

/// The rows both sides have, configuration by configuration, for these metrics (all with
/// an empty list). When each side is a single configuration (two runs, or two plan runs
/// of one cell each), they are compared with each other even if their labels differ.
pub fn compare(a: &ReportData, b: &ReportData, metrics: &[String]) -> Vec<Row> {
    let sa = samples(a, metrics);
    let sb = samples(b, metrics);
    let configs = |s: &Samples| {
        let mut c: Vec<String> = s.keys().map(|k| k.0.clone()).collect();
        c.dedup();
        c
    };
    let (ca, cb) = (configs(&sa), configs(&sb));
    let pair_all = ca.len() == 1 && cb.len() == 1;
    let mut rows = Vec::new();
    for ((config, metric, stat), (unit, parts, va)) in &sa {
        let other_config = if pair_all { &cb[0] } else { config };
        let Some((_, other_parts, vb)) =
            sb.get(&(other_config.clone(), metric.clone(), stat.clone()))
        else {
            continue;
        };
        let se2 = |v: &[f64]| spread(v).map(|s| s * s / v.len() as f64);
        let noise =
            match (se2(va), se2(vb)) {
                (Some(x), Some(y)) => Some(2.0 * (x + y).sqrt()),
                // One side's spread stands for both.
                (Some(_), None) => spread(va)
                    .map(|s| 2.0 * s * (1.0 / va.len() as f64 + 1.0 / vb.len() as f64).sqrt()),
                (None, Some(_)) => spread(vb)
                    .map(|s| 2.0 * s * (1.0 / va.len() as f64 + 1.0 / vb.len() as f64).sqrt()),
                (None, None) => None,
            };
        let paired = pair_all && config != other_config;
        rows.push(Row {
            config: if paired {
                paired_label(parts, other_parts)
            } else {
                config.clone()
            },
            parts: if paired { Vec::new() } else { parts.clone() },
            metric: metric.clone(),
            unit: unit.clone(),
            statistic: stat.clone(),
            a: mean(va),
            b: mean(vb),
            runs: (va.len(), vb.len()),
            noise,
        });
    }
    // Statistics in their natural order within a configuration and metric.
    rows.sort_by_key(|r| {
        (
            r.config.clone(),
            r.metric.clone(),
            STATISTICS.iter().position(|s| *s == r.statistic),
        )
    });
    rows
}

/// The machines a side's runs ran on (kernel, preemption, virtualisation), one line
/// each, in run order: comparing two kernels is comparing these.
pub fn machines(data: &ReportData) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in data.runs() {
        let line = crate::terminal::machine_line(&r.record.machine);
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// Whether any run of a side ran on an emulated CPU (QEMU's TCG): its times are the
/// emulator's, not the hardware's.
pub fn emulated(data: &ReportData) -> bool {
    data.runs().any(|r| {
        r.record
            .machine
            .virtualization
            .as_deref()
            .is_some_and(|v| v.contains("TCG"))
    })
}

/// Row labels without the settings every row of their probe shares, and those shared
/// settings per probe (printed once under the table): what tells the rows apart first.
fn short_labels(rows: &[Row]) -> (Vec<String>, Vec<(String, String)>) {
    let mut common: Vec<(String, Vec<String>)> = Vec::new();
    for p in rows.iter().map(|r| &r.parts) {
        let Some((probe, settings)) = p.split_first() else {
            continue;
        };
        match common.iter_mut().find(|(name, _)| name == probe) {
            Some((_, shared)) => shared.retain(|s| settings.contains(s)),
            None => common.push((probe.clone(), settings.to_vec())),
        }
    }
    let labels = rows
        .iter()
        .map(|r| {
            let Some((probe, settings)) = r.parts.split_first() else {
                return r.config.clone();
            };
            let shared = &common
                .iter()
                .find(|(name, _)| name == probe)
                .expect("seen")
                .1;
            std::iter::once(probe.clone())
                .chain(settings.iter().filter(|s| !shared.contains(s)).cloned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let common = common
        .into_iter()
        .filter(|(_, shared)| !shared.is_empty())
        .map(|(probe, shared)| (probe, shared.join(" ")))
        .collect();
    (labels, common)
}

/// The comparison as text.
pub fn text(a: &ReportData, b: &ReportData, rows: &[Row], metrics: &[String]) -> String {
    let (a_name, b_name) = (&a.subject, &b.subject);
    let mut out = format!("\ncompare A = {a_name} with B = {b_name}\n");
    for (side, data) in [("A", a), ("B", b)] {
        for m in machines(data) {
            out.push_str(&format!("{side} ran on {m}\n"));
        }
    }
    if emulated(a) || emulated(b) {
        out.push_str("an emulated CPU (QEMU TCG) ran some of these runs: their times describe the emulator, not hardware\n");
    }
    out.push('\n');
    let measured_nothing = |out: &mut String| {
        for (side, data) in [("A", a), ("B", b)] {
            let nothing = unmeasured(data, metrics);
            if !nothing.is_empty() {
                let _ = writeln!(
                    out,
                    "{side} measured nothing in: {} (no row for these)",
                    nothing.join("; ")
                );
            }
            let above = above_bound(data, metrics);
            if !above.is_empty() {
                let _ = writeln!(
                    out,
                    "{side} has percentiles above the histogram's bound (at least the bound, not measured; no row for these): {}",
                    above.join("; ")
                );
            }
        }
    };
    if rows.is_empty() {
        out.push_str("nothing to compare: the two have no configuration and metric in common\n");
        measured_nothing(&mut out);
        if let Some(c) = culprits::culprits(a, b) {
            out.push_str(&culprits::text(&c));
        }
        return out;
    }
    let (labels, common) = short_labels(rows);
    let mut t = crate::terminal::Table::new(&[
        "configuration",
        "metric",
        "stat",
        "A",
        "B",
        "B - A",
        "change",
        "noise",
        "runs",
        "verdict",
    ])
    .left_align(&[1, 2, 9]);
    for (r, label) in rows.iter().zip(&labels) {
        let fmt = |v: f64| crate::terminal::fmt_value(v, &r.unit);
        t.row(vec![
            label.clone(),
            r.metric.clone(),
            r.statistic.clone(),
            fmt(r.a),
            fmt(r.b),
            format!(
                "{}{}",
                if r.delta() >= 0.0 { "+" } else { "-" },
                fmt(r.delta().abs())
            ),
            r.delta_percent()
                .map(|p| format!("{p:+.1}%"))
                .unwrap_or_else(|| "-".into()),
            r.noise.map(fmt).unwrap_or_else(|| "?".into()),
            format!("{}/{}", r.runs.0, r.runs.1),
            r.verdict().into(),
        ]);
    }
    out.push_str(&t.render());
    for (probe, settings) in &common {
        let _ = writeln!(out, "every {probe} row: {settings}");
    }
    measured_nothing(&mut out);
    if let Some(c) = culprits::culprits(a, b) {
        out.push_str(&culprits::text(&c));
    }
    let _ = writeln!(
        out,
        "\nA and B are the means over each configuration's runs; noise is twice the standard error of B - A from the repeats' spread (\"?\": no repeats, so no noise estimate: add repeats to the plan). Maxima are one sample each: their changes say little. With many rows, about one in twenty exceeds two standard errors by chance."
    );
    out
}

/// The comparison as a report section (`<section id="comparison">`): the same rows as
/// [`text`], units chosen per value; the report around it overlays A and B on the same
/// axes.
pub fn html(a: &ReportData, b: &ReportData, rows: &[Row], metrics: &[String]) -> String {
    use crate::words::escape;
    let mut out = format!(
        "<section id=\"comparison\" class=\"comparison\"><h2>A against B</h2>\n<p>A = {}, B = {}</p>\n",
        escape(&a.subject),
        escape(&b.subject)
    );
    for (side, data) in [("A", a), ("B", b)] {
        for m in machines(data) {
            let _ = writeln!(out, "<p class=\"meta\">{side} ran on {}</p>", escape(&m));
        }
    }
    if emulated(a) || emulated(b) {
        out.push_str("<p class=\"warn\">An emulated CPU (QEMU TCG) ran some of these runs: their times describe the emulator, not hardware.</p>\n");
    }
    if rows.is_empty() {
        out.push_str(
            "<p>Nothing to compare: the two have no configuration and metric in common.</p>\n",
        );
    }
    for (side, data) in [("A", a), ("B", b)] {
        let nothing = unmeasured(data, metrics);
        if !nothing.is_empty() {
            let _ = writeln!(
                out,
                "<p class=\"note\">{side} measured nothing in: {}.</p>",
                escape(&nothing.join("; "))
            );
        }
        let above = above_bound(data, metrics);
        if !above.is_empty() {
            let _ = writeln!(
                out,
                "<p class=\"note\">{side} has percentiles above the histogram's bound (at least the bound, not measured; no row for these): {}.</p>",
                escape(&above.join("; "))
            );
        }
    }
    let why = culprits::culprits(a, b).map(|c| culprits::html(&c));
    if rows.is_empty() {
        out.push_str(why.as_deref().unwrap_or_default());
        out.push_str("</section>\n");
        return out;
    }
    let (labels, common) = short_labels(rows);
    out.push_str("<div class=\"table-wrap\"><table class=\"compare\"><thead><tr><th class=\"label\">configuration</th><th class=\"label\">metric</th><th>stat</th><th>A</th><th>B</th><th>B - A</th><th>change</th><th>noise</th><th>runs</th><th class=\"label\">verdict</th></tr></thead><tbody>\n");
    for (r, label) in rows.iter().zip(&labels) {
        let fmt = |v: f64| crate::units::fmt_value(v, &r.unit);
        let class = match r.verdict() {
            "exceeds noise" => "warn",
            "within noise" => "ok",
            _ => "",
        };
        let _ = writeln!(
            out,
            "<tr><td class=\"label\"><code>{}</code></td><td class=\"label\">{}</td><td>{}</td><td class=\"nowrap\">{}</td><td class=\"nowrap\">{}</td><td class=\"nowrap\">{}{}</td><td>{}</td><td class=\"nowrap\">{}</td><td>{}/{}</td><td class=\"label {class}\">{}</td></tr>",
            escape(label),
            escape(&r.metric),
            escape(&r.statistic),
            escape(&fmt(r.a)),
            escape(&fmt(r.b)),
            if r.delta() >= 0.0 { "+" } else { "-" },
            escape(&fmt(r.delta().abs())),
            r.delta_percent()
                .map(|p| format!("{p:+.1} %"))
                .unwrap_or_else(|| "-".into()),
            r.noise.map(fmt).map(|n| escape(&n)).unwrap_or_else(|| "?".into()),
            r.runs.0,
            r.runs.1,
            r.verdict()
        );
    }
    out.push_str("</tbody></table></div>\n");
    for (probe, settings) in &common {
        let _ = writeln!(
            out,
            "<p class=\"note\">Every {} row: {}</p>",
            escape(probe),
            escape(settings)
        );
    }
    out.push_str("<p class=\"note\">A and B are the means over each configuration's runs; noise is twice the standard error of B - A from the repeats' spread (?: no repeats, so no noise estimate). Maxima are one sample each: their changes say little. The plots below overlay A and B on the same axes.</p>\n");
    out.push_str(why.as_deref().unwrap_or_default());
    out.push_str("</section>\n");
    out
}

/// The comparison as JSON.
pub fn json(a: &ReportData, b: &ReportData, rows: &[Row], metrics: &[String]) -> Value {
    json!({
        "a": a.subject,
        "b": b.subject,
        "a_measured_nothing": unmeasured(a, metrics),
        "b_measured_nothing": unmeasured(b, metrics),
        "a_above_histogram_bound": above_bound(a, metrics),
        "b_above_histogram_bound": above_bound(b, metrics),
        "a_machines": machines(a),
        "b_machines": machines(b),
        "emulated": emulated(a) || emulated(b),
        "culprits": culprits::culprits(a, b).map(|c| culprits::json(&c)),
        "rows": rows.iter().map(|r| json!({
            "configuration": r.config,
            "metric": r.metric,
            "unit": r.unit,
            "statistic": r.statistic,
            "a": r.a,
            "b": r.b,
            "delta": r.delta(),
            "delta_percent": r.delta_percent(),
            "noise": r.noise,
            "runs": [r.runs.0, r.runs.1],
            "verdict": r.verdict(),
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_paired_label_says_the_probe_once_and_only_what_differs() {
        let parts = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
        assert_eq!(
            super::paired_label(
                &parts("roundtrip load=none backend=jack period_frames=256 rate_hz=48000"),
                &parts("roundtrip load=none backend=pipewire period_frames=256 rate_hz=48000"),
            ),
            "roundtrip backend=jack | backend=pipewire"
        );
        assert_eq!(
            super::paired_label(&parts("event buffer=128"), &parts("jitter buffer=128")),
            "event | jitter"
        );
        assert_eq!(
            super::paired_label(
                &parts("event buffer=128"),
                &parts("event buffer=128 load=cpu")
            ),
            "event | load=cpu"
        );
    }

    use super::*;
    use results::{LatencyHistogram, Measurement, RunStatus};

    fn cell(repeat: u32, values: &[u64]) -> CellData {
        let mut h = LatencyHistogram::new(1_000_000_000).unwrap();
        for v in values {
            h.record(*v);
        }
        CellData {
            key: format!("x repeat={repeat}"),
            axes: [
                ("buffer".to_string(), "128".to_string()),
                ("repeat".to_string(), repeat.to_string()),
            ]
            .into(),
            profile: "current".into(),
            status: Some(RunStatus::Complete),
            error: None,
            source: None,
            run: Some(crate::data::test_run(
                "event",
                json!({}),
                vec![Measurement::from_histogram(
                    "event",
                    "event_latency",
                    "m",
                    h,
                )],
            )),
        }
    }

    fn side(means: &[u64]) -> ReportData {
        ReportData {
            cells: means
                .iter()
                .enumerate()
                .map(|(i, m)| cell(i as u32 + 1, &[*m]))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_change_beyond_the_repeats_spread_exceeds_noise_and_one_inside_it_does_not() {
        let a = side(&[5_000_000, 5_100_000, 4_900_000]);
        let far = side(&[8_000_000, 8_100_000, 7_900_000]);
        let near = side(&[5_050_000, 4_950_000, 5_000_000]);
        let rows = compare(&a, &far, &[]);
        let mean = rows.iter().find(|r| r.statistic == "mean").unwrap();
        assert_eq!(mean.config, "event buffer=128");
        assert!((mean.delta() - 3_000_000.0).abs() < 1e4, "{mean:?}");
        assert_eq!(mean.runs, (3, 3));
        assert_eq!(mean.verdict(), "exceeds noise");
        let rows = compare(&a, &near, &["event_latency".to_string()]);
        let mean = rows.iter().find(|r| r.statistic == "mean").unwrap();
        assert_eq!(mean.verdict(), "within noise");
        let text = text(&a, &near, &rows, &[]);
        assert!(text.contains("within noise"), "{text}");
        assert!(
            text.contains("A ran on ") && text.contains("B ran on "),
            "{text}"
        );
        assert!(!text.contains("emulated"), "{text}");
    }

    #[test]
    fn labels_drop_what_every_row_of_a_probe_shares_and_say_it_once() {
        let row = |parts: &[&str]| Row {
            config: parts.join(" "),
            parts: parts.iter().map(|p| p.to_string()).collect(),
            metric: "m".into(),
            unit: "ns".into(),
            statistic: "mean".into(),
            a: 1.0,
            b: 2.0,
            runs: (1, 1),
            noise: None,
        };
        let paired = Row {
            config: "event buffer=128 | event buffer=256".into(),
            parts: Vec::new(),
            ..row(&[])
        };
        let rows = [
            row(&["jitter", "load=cpu", "mode=nanosleep", "rate_hz=1378"]),
            row(&["jitter", "load=none", "mode=nanosleep", "rate_hz=2048"]),
            // A value may hold spaces and `=`: it stays one setting.
            row(&[
                "net",
                "load=none",
                "transport=UDP over loopback (127.0.0.1), x=y",
                "workers=0",
            ]),
            paired,
        ];
        let (labels, common) = short_labels(&rows);
        assert_eq!(
            labels,
            [
                "jitter load=cpu rate_hz=1378",
                "jitter load=none rate_hz=2048",
                "net",
                "event buffer=128 | event buffer=256"
            ]
        );
        assert_eq!(
            common,
            [
                ("jitter".to_string(), "mode=nanosleep".to_string()),
                (
                    "net".to_string(),
                    "load=none transport=UDP over loopback (127.0.0.1), x=y workers=0".to_string()
                )
            ]
        );
    }

    #[test]
    fn a_configuration_one_side_measured_nothing_in_is_named() {
        let a = side(&[5_000_000]);
        let b = ReportData {
            cells: vec![cell(1, &[])],
            ..Default::default()
        };
        assert!(compare(&a, &b, &[]).is_empty());
        assert_eq!(unmeasured(&b, &[]), ["event buffer=128"]);
        assert!(unmeasured(&a, &[]).is_empty());
        assert!(unmeasured(&b, &["wakeup_latency".to_string()]).is_empty());
        let text = text(&a, &b, &[], &[]);
        assert!(text.contains("nothing to compare"), "{text}");
        assert!(
            text.contains("B measured nothing in: event buffer=128"),
            "{text}"
        );
        let v = json(&a, &b, &[], &[]);
        assert_eq!(v["b_measured_nothing"][0], "event buffer=128");
    }

    #[test]
    fn each_side_says_what_it_ran_on_and_an_emulated_cpu_is_named() {
        let a = side(&[5_000_000]);
        let mut b = side(&[6_000_000]);
        for c in &mut b.cells {
            let m = &mut c.run.as_mut().unwrap().record.machine;
            m.kernel_release = "6.1.0-56-rt-amd64".into();
            m.preemption = "PREEMPT_RT".into();
            m.virtualization = Some("QEMU (TCG)".into());
        }
        let rows = compare(&a, &b, &[]);
        let text = text(&a, &b, &rows, &[]);
        let b_line = text.lines().find(|l| l.starts_with("B ran on ")).unwrap();
        assert!(
            b_line.contains("Linux 6.1.0-56-rt-amd64 (PREEMPT_RT)"),
            "{text}"
        );
        assert!(text.contains("an emulated CPU (QEMU TCG)"), "{text}");
        let v = json(&a, &b, &rows, &[]);
        assert_eq!(v["emulated"], true);
        assert_eq!(v["b_machines"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn single_runs_compare_with_each_other_and_say_the_noise_is_unknown() {
        let (a, b) = (side(&[5_000_000]), side(&[6_000_000]));
        assert_eq!(headline_metrics(&a, &b), ["event_latency"]);
        let rows = compare(&a, &b, &headline_metrics(&a, &b));
        let mean = rows.iter().find(|r| r.statistic == "mean").unwrap();
        assert_eq!(mean.verdict(), "noise unknown");
        assert!((mean.delta_percent().unwrap() - 20.0).abs() < 0.5);
    }

    #[test]
    fn a_metric_choice_names_the_metrics_compare_takes() {
        let (a, b) = (side(&[5_000_000]), side(&[6_000_000]));
        assert_eq!(MetricChoice::Headline.metrics(&a, &b), ["event_latency"]);
        assert!(MetricChoice::All.metrics(&a, &b).is_empty());
        let these = MetricChoice::These(vec!["a".into()]);
        assert_eq!(these.metrics(&a, &b), ["a"]);
    }
}
