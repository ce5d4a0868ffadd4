//! The report's figures: which plots a report's runs call for, and their captions.
//!
//! For complete runs: per headline metric (and per metric judged against a deadline) a
//! percentile distribution and a log-binned histogram when the samples have a
//! distribution, one line per configuration (repeats merged; times the subject in a
//! several-subject report, so a comparison overlays its subjects); latency against time
//! with the run's events marked (per label, the run with the most under-runs); and
//! latency and DSP load against the buffer when the runs sweep more than one buffer.

use std::collections::BTreeMap;

use results::Measurement;

use crate::data::{CellData, ReportData, RunData};
use crate::plots::hist::{log_bins, percentile_curve};
use crate::plots::{self, Axis, Plot, RefLine, Scale, Series};
use crate::units::{fmt_count, fmt_ns};
use crate::words::metric_name;

pub mod figure;
mod group;
mod marks;
mod time;

use figure::slug;
pub use figure::{Figure, BINS_PER_DECADE, MAX_LINES, MAX_MARKS_PER_KIND, MAX_TIME_PLOTS};
use group::{
    deadline_lines, has_distribution, label_kind, lines_note, merged, samples_note, Group,
};
pub use group::{group_label, MIN_DISTRIBUTION_SAMPLES};
#[cfg(test)]
use marks::event_marks;
pub use marks::STEAL_WINDOW_NS;

/// The complete runs of a report with their cells (an interrupted or failed run's
/// samples stand in the runs table).
fn complete_runs(data: &ReportData) -> Vec<(&CellData, &RunData)> {
    data.cells
        .iter()
        .filter(|c| c.status == Some(results::RunStatus::Complete))
        .filter_map(|c| c.run.as_ref().map(|r| (c, r)))
        .collect()
}

/// The figures of a report, in reading order; complete runs only. A metric whose
/// lines hold no distribution (every sample equal, or fewer than
/// [`group::MIN_DISTRIBUTION_SAMPLES`]) gets no percentile plot or histogram: it is
/// listed by [`values_only`].
pub fn figures(data: &ReportData) -> Vec<Figure> {
    let complete = complete_runs(data);
    let mut out = Vec::new();
    out.extend(crate::figures_paper::paper_figures(data));
    let (headline, judged) = plotted_metrics(&complete);
    for metric in &headline {
        let groups = merged(data, &complete, metric);
        if has_distribution(&groups) {
            out.extend(percentile_figure(data, metric, &groups));
            out.extend(histogram_figure(data, metric, &groups));
        }
    }
    // A metric judged against a deadline reads on its percentile plot, beside the line.
    for metric in &judged {
        let groups = merged(data, &complete, metric);
        if has_distribution(&groups) {
            out.extend(percentile_figure(data, metric, &groups));
        }
    }
    out.extend(sweep_figures(data, &complete));
    for (c, r, label) in group::time_plot_runs(data, &complete, MAX_TIME_PLOTS) {
        out.extend(time::time_figure(c, r, &label));
    }
    // Ids unique in the page.
    let mut used: BTreeMap<String, usize> = BTreeMap::new();
    for f in &mut out {
        let n = used.entry(f.id.clone()).or_insert(0);
        *n += 1;
        if *n > 1 {
            f.id = format!("{}-{n}", f.id);
        }
    }
    out
}

/// One line per plotted metric that [`figures`] shows as values only, for the plots
/// section (`round trip: every sample 2.90 ms (6 samples) - no distribution to plot`):
/// a flat percentile line or a one-spike histogram would say less than the value.
pub fn values_only(data: &ReportData) -> Vec<String> {
    let complete = complete_runs(data);
    let (headline, judged) = plotted_metrics(&complete);
    headline
        .iter()
        .chain(&judged)
        .filter_map(|metric| {
            let groups = merged(data, &complete, metric);
            (!groups.is_empty() && !has_distribution(&groups))
                .then(|| group::values_line(&metric_name(metric), &groups))
        })
        .collect()
}

/// The runs' headline metrics, and the other metrics judged against a deadline (a
/// jitter run's fragment completion, a net run's end to end, DSP time against the
/// period), in the order they first appear; a net run's reference host (no synthesis,
/// `..._reference`) is a control, not plotted.
fn plotted_metrics(complete: &[(&CellData, &RunData)]) -> (Vec<String>, Vec<String>) {
    let has_hist = |m: &Measurement| m.histogram.as_ref().is_some_and(|h| h.count() > 0);
    let mut headline: Vec<String> = Vec::new();
    for (_, r) in complete {
        if let Some(m) = r.headline().filter(|m| has_hist(m)) {
            if !headline.contains(&m.metric) {
                headline.push(m.metric.clone());
            }
        }
    }
    let mut judged: Vec<String> = Vec::new();
    for (_, r) in complete {
        for m in &r.measurements {
            if m.deadline.is_some()
                && has_hist(m)
                && !m.metric.ends_with("_reference")
                && !headline.contains(&m.metric)
                && !judged.contains(&m.metric)
            {
                judged.push(m.metric.clone());
            }
        }
    }
    (headline, judged)
}

/// HdrHistogram's percentile distribution: latency against how rare it is.
fn percentile_figure(data: &ReportData, metric: &str, groups: &[Group]) -> Option<Figure> {
    let name = metric_name(metric);
    let title = format!("{name}: percentile distribution");
    let top = groups.iter().map(|g| g.hist.max()).max()? as f64;
    let low = groups.iter().map(|g| g.hist.min().max(1)).min()? as f64;
    // A latency spread over decades reads on a log axis; a narrow one on a linear one.
    let scale = if top / low > 30.0 {
        Scale::Log
    } else {
        Scale::Linear
    };
    let mut plot = Plot::new(&title, Axis::percentile(), Axis::duration(&name, scale));
    for g in groups.iter().take(MAX_LINES) {
        let curve = percentile_curve(&g.hist);
        let mut s = Series::line(&g.label, curve);
        let prefix = if g.label.is_empty() {
            String::new()
        } else {
            format!("{}: ", g.label)
        };
        for q in [0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999, 0.999999] {
            if q > 1.0 - 1.0 / g.hist.count() as f64 {
                break;
            }
            let (v, above) = g.hist.percentile(q * 100.0);
            let value = if above {
                format!("above {}", fmt_ns(v as f64))
            } else {
                fmt_ns(v as f64)
            };
            s.tips.push((
                q,
                v as f64,
                format!(
                    "{prefix}p{}: {value}",
                    plots::fmt_percentile(q).trim_end_matches('%')
                ),
            ));
        }
        let n = g.hist.count();
        let last = 1.0 - 1.0 / n as f64;
        s.marked.push((
            last,
            g.hist.max() as f64,
            format!(
                "{prefix}max {} (the slowest of {} samples)",
                fmt_ns(g.hist.max() as f64),
                fmt_count(n)
            ),
        ));
        plot.series.push(s);
    }
    plot.refs = deadline_lines(groups);
    let mut bounds: Vec<u64> = Vec::new();
    for g in groups
        .iter()
        .take(MAX_LINES)
        .filter(|g| g.hist.overflows() > 0)
    {
        if !bounds.contains(&g.hist.bound()) {
            bounds.push(g.hist.bound());
            plot.refs.push(RefLine {
                y: g.hist.bound() as f64,
                label: format!("histogram bound {}", fmt_ns(g.hist.bound() as f64)),
            });
        }
    }
    let svg = plot.svg()?;
    let bound = if groups
        .iter()
        .take(MAX_LINES)
        .any(|g| g.hist.overflows() > 0)
    {
        " A line that stops short of its dot reached the histogram's bound: above it the samples were counted, not kept, and only the maximum is known."
    } else {
        ""
    };
    let deadline = if plot.refs.len() == bounds.len() {
        ""
    } else {
        if plot.refs.len() - bounds.len() > 1 {
            " The dashed lines are the runs' deadlines."
        } else {
            " The dashed line is the deadline."
        }
    };
    Some(Figure {
        id: format!("fig-percentiles-{}", slug(metric)),
        caption: format!(
            "How to read it: the x axis is how rare a latency is, on a log scale: at 99% one sample in 100 was slower than the line, at 99.9% one in 1000. A flat line is a steady system; where it rises is where the tail starts. The dot at the right end of each line is its maximum.{bound}{deadline} One line per {}. {}.{}",
            label_kind(data),
            samples_note(groups),
            lines_note(groups)
        ),
        title,
        svg,
    })
}

/// The histogram on log axes: log-spaced latency bins, logarithmic counts.
fn histogram_figure(data: &ReportData, metric: &str, groups: &[Group]) -> Option<Figure> {
    let name = metric_name(metric);
    let title = format!("{name}: histogram");
    let mut plot = Plot::new(
        &title,
        Axis::duration(&name, Scale::Log),
        Axis::log_count("count"),
    );
    for g in groups.iter().take(MAX_LINES) {
        let bins = log_bins(&g.hist, BINS_PER_DECADE);
        let mut points = Vec::with_capacity(bins.len() * 2 + 2);
        if let Some(first) = bins.first() {
            points.push((first.lo_ns, 0.0));
        }
        for b in &bins {
            points.push((b.lo_ns, b.count as f64));
            points.push((b.hi_ns, b.count as f64));
        }
        if let Some(last) = bins.last() {
            points.push((last.hi_ns, 0.0));
        }
        let over = g.hist.overflows();
        let label = if over > 0 {
            format!(
                "{} (+{} above {})",
                g.label,
                fmt_count(over),
                fmt_ns(g.hist.bound() as f64)
            )
        } else {
            g.label.clone()
        };
        let prefix = if g.label.is_empty() {
            String::new()
        } else {
            format!("{}: ", g.label)
        };
        let mut s = Series::line(&label, points);
        s.tips = bins
            .iter()
            .filter(|b| b.count > 0)
            .map(|b| {
                (
                    (b.lo_ns * b.hi_ns).sqrt(),
                    b.count as f64,
                    format!(
                        "{prefix}{} to {}: {} samples",
                        fmt_ns(b.lo_ns),
                        fmt_ns(b.hi_ns),
                        fmt_count(b.count)
                    ),
                )
            })
            .collect();
        plot.series.push(s);
    }
    let svg = plot.svg()?;
    Some(Figure {
        id: format!("fig-histogram-{}", slug(metric)),
        caption: format!(
            "Every sample of every run, in bins of equal width on the log latency axis ({BINS_PER_DECADE} to a decade), counts on a log axis: a bin of one sample still shows. One outline per {}. {}.{}",
            label_kind(data),
            samples_note(groups),
            lines_note(groups)
        ),
        title,
        svg,
    })
}

/// Per label: (buffer ns, mean event latency ns) and (buffer ns, DSP load %).
type ByBuffer = (Vec<(f64, f64)>, Vec<(f64, f64)>);

/// Latency and DSP load against the playback buffer, only when the runs sweep more than
/// one buffer: a single point is a table row, not a plot.
fn sweep_figures(data: &ReportData, complete: &[(&CellData, &RunData)]) -> Vec<Figure> {
    let mut by_label: Vec<(String, ByBuffer)> = Vec::new();
    for (c, r) in complete {
        let Some(buffer_ms) = r.value("result.buffer_ms") else {
            continue;
        };
        let label = group_label(data, c);
        let idx = match by_label.iter().position(|(l, _)| *l == label) {
            Some(i) => i,
            None => {
                by_label.push((label, ByBuffer::default()));
                by_label.len() - 1
            }
        };
        let e = &mut by_label[idx].1;
        if let Some(l) = r.value("event_latency.mean") {
            e.0.push((buffer_ms * 1e6, l));
        }
        if let Some(d) = r.value("result.dsp_load_percent_mean") {
            e.1.push((buffer_ms * 1e6, d));
        }
    }
    let series = |pick: fn(&ByBuffer) -> &Vec<(f64, f64)>| -> Vec<Series> {
        by_label
            .iter()
            .take(MAX_LINES)
            .filter(|(_, e)| !pick(e).is_empty())
            .map(|(l, e)| {
                let mut pts = pick(e).clone();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                Series::dots(l, pts, true)
            })
            .collect()
    };
    let distinct_x = |s: &[Series]| {
        let mut xs: Vec<f64> = s
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        xs.len()
    };
    let mut out = Vec::new();
    let buffer = || Axis::duration("playback buffer", Scale::Linear);
    let latency = series(|e| &e.0);
    if distinct_x(&latency) > 1 {
        let mut plot = Plot::new(
            "event latency against the buffer",
            buffer(),
            Axis::duration("mean event latency", Scale::Linear),
        );
        plot.series = latency;
        out.extend(plot.svg().map(|svg| Figure {
            id: "fig-sweep-latency".into(),
            title: plot.title.clone(),
            caption: "Mean event-to-audio latency of each run against its playback buffer (the latency the backend reports); a dot per run.".into(),
            svg,
        }));
    }
    let dsp = series(|e| &e.1);
    if distinct_x(&dsp) > 1 {
        let mut plot = Plot::new(
            "DSP load against the buffer",
            buffer(),
            Axis::unit("DSP time", "% of the period", Scale::Linear),
        );
        plot.series = dsp;
        out.extend(plot.svg().map(|svg| {
            Figure {
                id: "fig-sweep-dsp".into(),
                title: plot.title.clone(),
                caption:
                    "Mean DSP time per cycle of each run, in percent of its period; a dot per run."
                        .into(),
                svg,
            }
        }));
    }
    out
}

#[cfg(test)]
mod tests;
