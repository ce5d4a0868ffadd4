//! Which runs share a line: one configuration each (a plan's cell without its repeat,
//! outside plans the probe and the settings that change what it measures), times the
//! subject in a several-subject report. Only repeats of one configuration are merged.

use results::{LatencyHistogram, ProbeKind};

use super::figure::MAX_LINES;
use crate::data::{CellData, ReportData, RunData};
use crate::plots::RefLine;
use crate::units::{fmt_count, fmt_ns};

/// The plan's axes that tell its cells apart (more than one label, not `repeat`).
fn varying_axes(data: &ReportData) -> Vec<String> {
    data.axes()
        .into_iter()
        .filter(|(name, labels)| name != "repeat" && labels.len() > 1)
        .map(|(name, _)| name)
        .collect()
}

/// A cell's configuration for people: the labels of the plan's varying axes
/// (`alsa, 128/64`), else the probe with its backend, period, rate and load.
pub(super) fn config_label(data: &ReportData, cell: &CellData) -> String {
    let axes = varying_axes(data);
    if !axes.is_empty() && !cell.axes.is_empty() {
        return axes
            .iter()
            .filter_map(|a| cell.axes.get(a).cloned())
            .collect::<Vec<_>>()
            .join(", ");
    }
    cell.run
        .as_ref()
        .map(|r| crate::gather::describe(&r.record))
        .unwrap_or_default()
}

/// Whether some subject's cells of `probe` (all probes when `None`) hold more than one
/// configuration (a one-subject report is one subject): then a comparison's lines need
/// the configuration beside the subject. A subject of one configuration is its line
/// (the comparison is the difference between subjects), and a jitter run and a round
/// trip never share a plot.
fn several_configs(data: &ReportData, probe: Option<&ProbeKind>) -> bool {
    let mut seen: Vec<(Option<&str>, String)> = Vec::new();
    for c in &data.cells {
        let Some(r) = &c.run else { continue };
        if probe.is_some_and(|p| p != r.record.probe) {
            continue;
        }
        let source = c.source.as_deref();
        let l = config_label(data, c);
        if seen.iter().any(|(s, _)| *s == source)
            && !seen.iter().any(|(s, k)| *s == source && *k == l)
        {
            return true;
        }
        seen.push((source, l));
    }
    false
}

/// The label that groups cells in plots: the configuration (repeats of it merged), and
/// in a several-subject report the subject, alone when each subject's runs of this probe
/// are of one configuration (`group 1`), else with it (`group 1: event, alsa 64
/// frames, idle`).
pub fn group_label(data: &ReportData, cell: &CellData) -> String {
    let probe = cell.run.as_ref().map(|r| r.record.probe);
    match &cell.source {
        Some(source) if several_configs(data, probe) => {
            format!("{source}: {}", config_label(data, cell))
        }
        Some(source) => source.clone(),
        None => config_label(data, cell),
    }
}

/// What the labels are, for captions.
pub(super) fn label_kind(data: &ReportData) -> &'static str {
    let several = data.cells.iter().any(|c| {
        c.run
            .as_ref()
            .is_some_and(|r| several_configs(data, Some(r.record.probe)))
    });
    match (data.cells.iter().any(|c| c.source.is_some()), several) {
        (true, true) => "subject and configuration (repeats merged)",
        (true, false) => "subject",
        (false, _) => "configuration (repeats merged)",
    }
}

/// A label's samples of one metric: its runs' histograms merged.
pub(super) struct Group {
    pub(super) label: String,
    pub(super) hist: LatencyHistogram,
    pub(super) runs: usize,
    pub(super) deadlines: Vec<f64>,
}

/// Adds `h` to `into`, keeping the larger bound of the two: a sample within either
/// histogram's bound stays a sample, not an overflow.
fn add_keeping_the_larger_bound(into: &mut LatencyHistogram, h: &LatencyHistogram) {
    if h.bound() > into.bound() {
        let mut wider = h.clone();
        wider.add(into);
        *into = wider;
    } else {
        into.add(h);
    }
}

/// The metric's histograms merged per label, in order of appearance.
pub(super) fn merged(
    data: &ReportData,
    complete: &[(&CellData, &RunData)],
    metric: &str,
) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for (c, r) in complete {
        let Some(m) = r.measurement(metric) else {
            continue;
        };
        let Some(h) = m.histogram.as_ref().filter(|h| h.count() > 0) else {
            continue;
        };
        let label = group_label(data, c);
        let i = match groups.iter().position(|g| g.label == label) {
            Some(i) => {
                add_keeping_the_larger_bound(&mut groups[i].hist, h);
                groups[i].runs += 1;
                i
            }
            None => {
                groups.push(Group {
                    label,
                    hist: h.clone(),
                    runs: 1,
                    deadlines: Vec::new(),
                });
                groups.len() - 1
            }
        };
        if let Some(d) = m.deadline {
            if !groups[i].deadlines.contains(&d) {
                groups[i].deadlines.push(d);
            }
        }
    }
    groups
}

/// The deadlines of the drawn groups as reference lines, labelled with their labels
/// when they differ (at most three): a line left out takes its deadline with it.
pub(super) fn deadline_lines(groups: &[Group]) -> Vec<RefLine> {
    let drawn = &groups[..groups.len().min(MAX_LINES)];
    let mut all: Vec<(f64, Vec<&str>)> = Vec::new();
    for g in drawn {
        for &d in &g.deadlines {
            match all.iter_mut().find(|(v, _)| *v == d) {
                Some((_, labels)) => labels.push(&g.label),
                None => all.push((d, vec![&g.label])),
            }
        }
    }
    let several = all.len() > 1;
    all.into_iter()
        .take(3)
        .map(|(d, labels)| RefLine {
            y: d,
            // Whose deadline it is, unless every line's.
            label: if several && labels.len() < drawn.len() {
                format!("deadline {} ({})", fmt_ns(d), labels.join(", "))
            } else {
                format!("deadline {}", fmt_ns(d))
            },
        })
        .collect()
}

/// The caption's note on lines not drawn: which, by name.
pub(super) fn lines_note(groups: &[Group]) -> String {
    if groups.len() <= MAX_LINES {
        return String::new();
    }
    let left: Vec<&str> = groups[MAX_LINES..]
        .iter()
        .map(|g| g.label.as_str())
        .collect();
    format!(
        " The first {MAX_LINES} of {} configurations are drawn; not drawn (the runs table has them): {}.",
        groups.len(),
        left.join("; ")
    )
}

/// Per drawn group: its samples, runs and maximum.
pub(super) fn samples_note(groups: &[Group]) -> String {
    groups
        .iter()
        .take(MAX_LINES)
        .map(|g| {
            let over = g.hist.overflows();
            format!(
                "{}: {} samples in {} run{}, max {}{}",
                if g.label.is_empty() { "all" } else { &g.label },
                fmt_count(g.hist.count()),
                g.runs,
                if g.runs == 1 { "" } else { "s" },
                fmt_ns(g.hist.max() as f64),
                if over > 0 {
                    format!(
                        ", {} above the histogram's bound of {}",
                        fmt_count(over),
                        fmt_ns(g.hist.bound() as f64)
                    )
                } else {
                    String::new()
                }
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Fewer samples than this in every line: no distribution to plot.
pub const MIN_DISTRIBUTION_SAMPLES: u64 = 20;

/// Whether the groups have a distribution worth a percentile plot or a histogram: some
/// drawn line with at least [`MIN_DISTRIBUTION_SAMPLES`] samples that are not all equal.
pub(super) fn has_distribution(groups: &[Group]) -> bool {
    groups
        .iter()
        .take(MAX_LINES)
        .any(|g| g.hist.count() >= MIN_DISTRIBUTION_SAMPLES && g.hist.min() != g.hist.max())
}

/// Per group, a line for a metric drawn as values only (no distribution): `round trip:
/// every sample 2.90 ms (6 samples)`, or its range.
pub(super) fn values_line(name: &str, groups: &[Group]) -> String {
    let each: Vec<String> = groups
        .iter()
        .map(|g| {
            let prefix = if g.label.is_empty() {
                String::new()
            } else {
                format!("{}: ", g.label)
            };
            let n = g.hist.count();
            let samples = format!("{} sample{}", fmt_count(n), if n == 1 { "" } else { "s" });
            if g.hist.min() == g.hist.max() {
                format!(
                    "{prefix}every sample {} ({samples})",
                    fmt_ns(g.hist.max() as f64)
                )
            } else {
                format!(
                    "{prefix}{} to {} ({samples})",
                    fmt_ns(g.hist.min() as f64),
                    fmt_ns(g.hist.max() as f64)
                )
            }
        })
        .collect();
    format!("{name}: {} - no distribution to plot", each.join("; "))
}

/// Per label (in order of first appearance, at most `max`), the run whose time plot
/// shows most: the one with the most under-runs, xruns and deadline misses (the first
/// of equals).
pub(super) fn time_plot_runs<'a>(
    data: &ReportData,
    complete: &[(&'a CellData, &'a RunData)],
    max: usize,
) -> Vec<(&'a CellData, &'a RunData, String)> {
    let trouble = |r: &RunData| -> u64 {
        r.event_counts
            .iter()
            .filter(|(k, _)| matches!(k.as_str(), "underrun" | "xrun" | "miss" | "deadline_miss"))
            .map(|(_, n)| *n)
            .sum()
    };
    let mut out: Vec<(&CellData, &RunData, String)> = Vec::new();
    for &(c, r) in complete {
        let label = group_label(data, c);
        match out.iter().position(|(_, _, l)| *l == label) {
            Some(i) if trouble(r) > trouble(out[i].1) => out[i] = (c, r, label),
            Some(_) => {}
            None if out.len() < max => out.push((c, r, label)),
            None => {}
        }
    }
    out
}
