//! Terminal rendering.

use std::fmt::Write as _;

use results::model::{Finding, Verdict};
use results::records::flags::Flags;
use results::run::RunRecord;
use results::{LatencyHistogram, Measurement, Summary};

/// A duration in ns, with a unit that keeps three significant figures.
pub fn fmt_ns(ns: f64) -> String {
    let a = ns.abs();
    if a < 1_000.0 {
        format!("{ns:.0} ns")
    } else if a < 1_000_000.0 {
        format!("{:.1} us", ns / 1e3)
    } else if a < 1_000_000_000.0 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// A duration for people: "10 s", "500 ms".
pub fn fmt_duration(d: std::time::Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{} s", (s * 1000.0).round() / 1000.0)
    } else {
        format!("{} ms", (s * 1e6).round() / 1e3)
    }
}

/// A value in its unit (durations for `ns`, plain numbers otherwise).
pub fn fmt_value(v: f64, unit: &str) -> String {
    if unit == "ns" {
        fmt_ns(v)
    } else {
        format!("{v:.3} {unit}")
    }
}

/// A plain text table with aligned columns: text columns to the left, numbers to the
/// right.
#[derive(Debug, Clone, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    left: Vec<bool>,
}

impl Table {
    /// A table with these column headings; the first column is left-aligned, the rest
    /// right-aligned.
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
            left: (0..header.len()).map(|i| i == 0).collect(),
        }
    }

    /// Left-aligns these columns (text) as well.
    pub fn left_align(mut self, columns: &[usize]) -> Table {
        for &c in columns {
            if let Some(l) = self.left.get_mut(c) {
                *l = true;
            }
        }
        self
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<String>) -> &mut Self {
        self.rows.push(cells);
        self
    }

    /// Renders with two spaces between columns.
    pub fn render(&self) -> String {
        let cols = self.header.len();
        let mut width = vec![0; cols];
        for r in std::iter::once(&self.header).chain(self.rows.iter()) {
            for (i, c) in r.iter().enumerate().take(cols) {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        for r in std::iter::once(&self.header).chain(self.rows.iter()) {
            let mut line = String::new();
            for (i, c) in r.iter().enumerate().take(cols) {
                if i > 0 {
                    line.push_str("  ");
                }
                let pad = width[i] - c.chars().count();
                if self.left[i] {
                    line.push_str(c);
                    line.push_str(&" ".repeat(pad));
                } else {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(c);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// The percentile columns every summary shows.
pub const SUMMARY_COLUMNS: [&str; 11] = [
    "metric",
    "count",
    "min",
    "mean",
    "p50",
    "p90",
    "p99",
    "p99.9",
    "p99.99",
    "max",
    "overflows",
];

fn summary_cells(name: &str, unit: &str, s: Option<&Summary>, overflows: u64) -> Vec<String> {
    let Some(s) = s else {
        // Nothing measured: a count of 0 and no statistics.
        let mut cells = vec![name.to_string(), "0".to_string()];
        cells.extend(std::iter::repeat_n(
            "-".to_string(),
            SUMMARY_COLUMNS.len() - 3,
        ));
        cells.push(overflows.to_string());
        return cells;
    };
    let v = |x: f64| fmt_value(x, unit);
    let p = |x: f64| fmt_percentile(s, x, unit);
    vec![
        name.to_string(),
        s.count.to_string(),
        v(s.min),
        v(s.mean),
        p(s.p50),
        p(s.p90),
        p(s.p99),
        p(s.p999),
        p(s.p9999),
        v(s.max),
        overflows.to_string(),
    ]
}

/// One row per measurement: count, min, mean, percentiles, max, overflows. Percentiles
/// that fall among overflows are shown as `>=bound`.
pub fn summary_table(measurements: &[Measurement]) -> String {
    let mut t = Table::new(&SUMMARY_COLUMNS);
    for m in measurements {
        t.row(summary_cells(
            &m.metric,
            &m.unit,
            m.summary.as_ref(),
            m.overflows(),
        ));
    }
    t.render()
}

/// 1-2-5 bucket edges (ns) covering `lo..=hi`.
fn edges_125(lo: u64, hi: u64) -> Vec<u64> {
    let mut edges = vec![0u64];
    let mut decade = 1u64;
    'outer: loop {
        for m in [1u64, 2, 5] {
            let e = m * decade;
            if e > lo.max(1) / 2 && e > *edges.last().unwrap_or(&0) {
                edges.push(e);
            }
            if e > hi {
                break 'outer;
            }
        }
        decade = decade.saturating_mul(10);
        if decade == u64::MAX {
            break;
        }
    }
    edges
}

/// A histogram with 1-2-5 buckets and a logarithmic count axis (the OSADL and
/// Tessellation style): the rare slow wake-ups stay visible beside the common fast ones.
pub fn histogram(h: &LatencyHistogram, width: usize) -> String {
    if h.count() == 0 {
        return "(no samples)\n".into();
    }
    let edges = edges_125(h.min(), h.max());
    let mut counts: Vec<u64> = vec![0; edges.len()];
    for v in h.hdr().iter_recorded() {
        let value = h.hdr().lowest_equivalent(v.value_iterated_to());
        let i = edges.iter().rposition(|&e| e <= value).unwrap_or(0);
        counts[i] += v.count_at_value();
    }
    let overflows = h.overflows();
    let first = counts.iter().position(|&c| c > 0).unwrap_or(0);
    let last = counts.iter().rposition(|&c| c > 0).unwrap_or(0);
    let peak = counts
        .iter()
        .copied()
        .max()
        .unwrap_or(1)
        .max(overflows)
        .max(1);
    let bar = |c: u64| {
        if c == 0 {
            String::new()
        } else {
            let frac = ((c as f64) + 1.0).log10() / ((peak as f64) + 1.0).log10();
            "#".repeat(((frac * width as f64).ceil() as usize).max(1))
        }
    };
    let mut rows: Vec<(String, u64)> = Vec::new();
    // Every sample above the bound: no range below it holds one (an empty row there
    // would name a range nothing was measured in).
    let in_range = h.count() > overflows;
    for i in (first..=last).filter(|_| in_range) {
        let lo = edges[i];
        let range = match edges.get(i + 1) {
            Some(&hi) => format!("{} - {}", fmt_ns(lo as f64), fmt_ns(hi as f64)),
            None => format!(">= {}", fmt_ns(lo as f64)),
        };
        rows.push((range, counts[i]));
    }
    if overflows > 0 {
        rows.push((
            format!("> {} (overflow)", fmt_ns(h.bound() as f64)),
            overflows,
        ));
    }
    let range_w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let count_w = rows
        .iter()
        .map(|r| r.1.to_string().len())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (range, count) in &rows {
        let line = format!("  {range:>range_w$}  {count:>count_w$}  {}", bar(*count));
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let _ = writeln!(out, "(bars: log10 of count)");
    out
}

/// Doctor findings as a table, each problem followed by its fix.
pub fn doctor_table(findings: &[Finding]) -> String {
    let mut out = String::new();
    let w = findings.iter().map(|f| f.check.len()).max().unwrap_or(10);
    for f in findings {
        let tag = match f.verdict {
            Verdict::Ok => "  ok",
            Verdict::Warn => "WARN",
            Verdict::Fail => "FAIL",
        };
        let _ = writeln!(out, "{tag}  {:w$}  {}", f.check, f.value);
        if f.verdict != Verdict::Ok {
            if !f.detail.is_empty() {
                let _ = writeln!(out, "      {:w$}  why: {}", "", f.detail);
            }
            if !f.fix.is_empty() {
                let _ = writeln!(out, "      {:w$}  fix: {}", "", f.fix);
            }
        }
    }
    let n = |v| findings.iter().filter(|f| f.verdict == v).count();
    let _ = writeln!(
        out,
        "\n{} ok, {} warn, {} fail",
        n(Verdict::Ok),
        n(Verdict::Warn),
        n(Verdict::Fail)
    );
    out
}

/// Flags that change how a run's numbers must be read, in words, from the flags as
/// stored ([`Flags::of`]).
pub fn flag_notes(flags: &serde_json::Value) -> Vec<String> {
    let flags = Flags::of(flags);
    let mut notes = Vec::new();
    if flags.realtime == Some(false) {
        notes.push("NOT REAL-TIME: the measuring thread ran without a real-time policy".into());
    }
    if flags.interrupted == Some(true) {
        notes.push("interrupted: the run ended early; what was measured is kept".into());
    }
    if flags.memory_locked == Some(false) {
        notes.push("memory not locked: page faults may add to the figures".into());
    }
    if let Some(steal) = flags.host_steal_ns.filter(|&s| s > 0) {
        let mut note = format!("host steal: {}", fmt_ns(steal as f64));
        if let Some(pct) = flags.steal_percent() {
            let _ = write!(note, " ({pct:.2}% of the run)");
        }
        // Outliers set against windows placed at random: only when there were some.
        let examined = flags.outliers_examined.filter(|&n| n > 0);
        match (examined, flags.outliers_with_host_steal) {
            (Some(examined), Some(with_steal)) => {
                let _ = write!(
                    note,
                    "; {with_steal} of the {examined} largest wake-ups had steal around them"
                );
                if let Some(random) = flags.random_windows_with_host_steal_percent.flatten() {
                    let _ = write!(
                        note,
                        ", against {random:.0}% of windows of the same widths placed at random"
                    );
                }
            }
            _ => note.push_str(": the hypervisor ran something else on these CPUs"),
        }
        notes.push(note);
    }
    if let Some(late) = flags.sender_late_blocks.filter(|&n| n > 0) {
        notes.push(format!(
            "SENDER LATE: the run's own controller sent {late} blocks late (a packet more than a block period behind its schedule): their times and misses are the controller's, not the host's or the network's"
        ));
    }
    if let Some(late) = flags.late_triggers.filter(|&n| n > 0) {
        notes.push(format!(
            "{late} triggers reached the audio thread after their frame had passed and started late"
        ));
    }
    if let Some(n) = flags.missed_triggers.filter(|&n| n > 0) {
        notes.push(format!(
            "{n} notes were rendered by a callback that started after its cycle's deadline (an under-run); they are left out of the latency figures"
        ));
    }
    if let Some(n) = flags.dsp_overload_cycles.filter(|&n| n > 0) {
        notes.push(format!(
            "DSP overload: {n} cycles took longer than their period to process"
        ));
    }
    if let Some(n) = flags.unmatched_captures.flatten().filter(|&n| n > 0) {
        notes.push(format!(
            "{n} cycles had silence as input: the capture of the same graph cycle had not arrived (native PipeWire streams)"
        ));
    }
    if let Some(n) = flags.frame_count_restarts.flatten().filter(|&n| n > 0) {
        notes.push(format!(
            "the server's frame count restarted {n} times (PipeWire's libjack does); audiolat's own count went on by the cycles' times"
        ));
    }
    if let Some(n) = flags.alloc_violations.filter(|&n| n > 0) {
        notes.push(format!(
            "the audio callback allocated {n} times (debug build check)"
        ));
    }
    if flags.percentiles_clamped == Some(true) {
        notes.push("some percentiles fell above the histogram bound (shown as >=bound); raise it with `audiolat jitter --hist-bound`".into());
    }
    notes
}

/// A percentile in its unit, marked `>=` when its rank fell among the overflows.
pub fn fmt_percentile(s: &Summary, v: f64, unit: &str) -> String {
    if s.is_clamped(v) {
        format!(">={}", fmt_value(v, unit))
    } else {
        fmt_value(v, unit)
    }
}

/// A statistic in its unit, `>=bound` when it is only at least the histogram's bound.
pub fn fmt_stat(v: results::Stat, unit: &str) -> String {
    match v {
        results::Stat::Value(v) => fmt_value(v, unit),
        results::Stat::AtLeast(b) => format!(">={}", fmt_value(b, unit)),
    }
}

/// A run's headline figure as table cells: metric, p50, p99, max (`-` when none).
pub fn headline_cells(m: Option<&Measurement>) -> [String; 4] {
    match m {
        Some(m) => match &m.summary {
            Some(s) => [
                m.metric.clone(),
                fmt_percentile(s, s.p50, &m.unit),
                fmt_percentile(s, s.p99, &m.unit),
                fmt_value(s.max, &m.unit),
            ],
            // Nothing was measured (no loop found, every note missed): no figure, not 0.
            None => [m.metric.clone(), "-".into(), "-".into(), "-".into()],
        },
        None => ["-".into(), "-".into(), "-".into(), "-".into()],
    }
}

/// A machine in one line: host, kernel, preemption, CPUs, virtualisation.
pub fn machine_line(m: &results::Machine) -> String {
    let mut line = format!(
        "{}: Linux {} ({}), {} x {}, {}, clocksource {}",
        m.hostname,
        m.kernel_release,
        m.preemption,
        m.cpus_online,
        m.cpu_model,
        m.virtualization
            .as_deref()
            .map_or("bare metal".to_string(), |v| format!("virtual: {v}")),
        m.clocksource
    );
    if m.virtualization
        .as_deref()
        .is_some_and(|v| v.contains("TCG"))
    {
        line.push_str(" (an emulated CPU: its times describe the emulator, not hardware)");
    }
    line
}

/// One line per run: id, start, probe, status, duration, real-time, the headline figure.
pub fn runs_table(runs: &[(RunRecord, Option<Measurement>)]) -> String {
    let mut t = Table::new(&[
        "id", "started", "probe", "status", "secs", "rt", "metric", "p50", "p99", "max",
    ])
    .left_align(&[1, 2, 3, 5, 6]);
    for (r, m) in runs {
        let rt = match Flags::of(&r.flags).realtime {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "-",
        };
        let [metric, p50, p99, max] = headline_cells(m.as_ref());
        t.row(vec![
            r.id.to_string(),
            r.started_at
                .chars()
                .take(19)
                .collect::<String>()
                .replace('T', " "),
            r.probe.to_string(),
            r.status.to_string(),
            r.duration_s.map_or("-".into(), |d| format!("{d:.1}")),
            rt.into(),
            metric,
            p50,
            p99,
            max,
        ]);
    }
    t.render()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every sample above the bound: the bars name no range below it (nothing was
    /// measured there), only the overflows.
    #[test]
    fn a_histogram_of_overflows_only_draws_no_range_below_the_bound() {
        let mut h = LatencyHistogram::new(1_000).unwrap();
        for v in [20_000, 30_000] {
            h.record(v);
        }
        let text = histogram(&h, 40);
        assert!(!text.contains(" - "), "{text}");
        assert!(text.contains("> 1.0 us (overflow)"), "{text}");
    }

    #[test]
    fn units() {
        assert_eq!(fmt_ns(850.0), "850 ns");
        assert_eq!(fmt_ns(12_345.0), "12.3 us");
        assert_eq!(fmt_ns(1_234_567.0), "1.23 ms");
        assert_eq!(fmt_ns(2_500_000_000.0), "2.50 s");
    }

    #[test]
    fn edges_cover_the_range() {
        let e = edges_125(8_000, 5_000_000);
        assert_eq!(e[0], 0);
        assert!(e.contains(&5_000) && e.contains(&10_000) && e.contains(&20_000));
        assert!(*e.last().unwrap() > 5_000_000);
    }

    #[test]
    fn histogram_shows_every_sample_and_overflows() {
        let mut h = LatencyHistogram::new(1_000_000).unwrap();
        for _ in 0..1000 {
            h.record(15_000);
        }
        h.record(150_000);
        h.record(5_000_000);
        let text = histogram(&h, 40);
        assert!(text.contains("10.0 us - 20.0 us"), "{text}");
        assert!(text.contains("1000"));
        assert!(text.contains("overflow"));
        // Log bars: the single sample still shows, shorter than the thousand.
        let bars: Vec<usize> = text.lines().map(|l| l.matches('#').count()).collect();
        assert!(bars.iter().any(|&b| b > 0 && b < 40));
        assert!(bars.contains(&40));
    }

    #[test]
    fn table_alignment() {
        let mut t = Table::new(&["a", "bb"]);
        t.row(vec!["xyz".into(), "1".into()]);
        assert_eq!(t.render(), "a    bb\nxyz   1\n");
    }

    #[test]
    fn flags_in_words() {
        let notes = flag_notes(&serde_json::json!({
            "realtime": false, "interrupted": true, "host_steal_ns": 20_000_000u64,
            "host_steal_percent": 1.5, "outliers_with_host_steal": 3, "outliers_examined": 32
        }));
        assert!(notes[0].starts_with("NOT REAL-TIME"));
        assert!(notes.iter().any(|n| n.contains("3 of the 32")));
        // The streams' own counts: in words when some were counted; 0 or not counted
        // (null) says nothing.
        let notes = flag_notes(&serde_json::json!({
            "unmatched_captures": 3, "frame_count_restarts": 2
        }));
        assert!(
            notes[0].starts_with("3 cycles had silence as input"),
            "{notes:?}"
        );
        assert!(notes[1].contains("restarted 2 times"), "{notes:?}");
        let quiet = serde_json::json!({"unmatched_captures": 0, "frame_count_restarts": null});
        assert!(flag_notes(&quiet).is_empty());
    }
}
