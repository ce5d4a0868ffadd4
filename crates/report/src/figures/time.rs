//! Latency against time (latencytest's graphs) with the run's events on it: deadline
//! misses, xruns and overflows as marks, host steal as shaded windows.

use super::figure::{slug, Figure};
use super::marks::event_marks;
use crate::data::{CellData, RunData};
use crate::plots::{Axis, Plot, RefLine, Scale, Series};
use crate::units::{fmt_count, fmt_ns};
use crate::words::metric_name;
use results::records::why::{WhyPart, WhyRecord};
use results::records::{JitterConfigRecord, JitterResultRecord, Record, RoundtripResultRecord};

use crate::plots::{Bar, BarPart};
use crate::view::why;
use crate::words::cause_kind;

/// Dots per point up to this many points; a line beyond.
const MAX_DOTS: usize = 400;

/// The latency-against-time figure of one run, or `None` when it stores no latency
/// over time (a net run, a doctor run).
pub(super) fn time_figure(cell: &CellData, r: &RunData, label: &str) -> Option<Figure> {
    // Where the time axis starts: a jitter run's blocks count from its first deadline
    // (result.start_ns), an event run's triggers are on the events' clock; a round
    // trip's windows count from a start it does not store, so its events are not placed.
    let by_block = r
        .series
        .iter()
        .find(|s| s.name == "wakeup_latency_by_block");
    let windows = r.series.iter().find(|s| s.name == "roundtrip_windows");
    let ((what, series, refs), origin) = if !r.triggers.is_empty() {
        (event_series(r)?, Some(r.record.started_mono_ns))
    } else if let Some(s) = by_block {
        let start = JitterResultRecord::from_json(&r.record.result).and_then(|j| j.start_ns);
        (jitter_series(r, s)?, start)
    } else if let Some(s) = windows {
        (roundtrip_series(r, s)?, None)
    } else {
        return None;
    };
    let top = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let low = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    // A tail decades above the body reads on a log axis.
    let scale = if top / low > 50.0 {
        Scale::Log
    } else {
        Scale::Linear
    };
    let title = format!(
        "{what} against time: {}",
        if label.is_empty() { &cell.key } else { label }
    );
    let mut plot = Plot::new(
        &title,
        Axis::duration("time since start", Scale::Linear),
        Axis::duration("latency", scale),
    );
    plot.series = series;
    plot.refs = refs;
    let (marked, crowded) = origin.map_or((0, Vec::new()), |o| event_marks(&mut plot, r, o));
    let why = WhyPart::from_json(&r.record.result).and_then(|p| p.why);
    let missed = why::what_missed_by(
        r.record.probe,
        JitterConfigRecord::from_json(&r.record.config).is_some_and(|c| c.has_fragments()),
    );
    let bars = match (&why, origin) {
        (Some(w), Some(o)) => why_bars(&mut plot, w, missed, o),
        _ => 0,
    };
    let svg = plot.svg()?;
    let events: u64 = r
        .event_counts
        .iter()
        .filter(|(k, _)| k != "steal")
        .map(|(_, n)| *n)
        .sum();
    let run = if cell.key.starts_with("run ") {
        cell.key.clone()
    } else {
        format!("run {} ({})", r.record.id, cell.key)
    };
    let mut caption = format!(
        "{} of {run} against the time since it started.",
        capitalised(&what)
    );
    if r.series.iter().any(|s| s.name == "wakeup_latency_by_block") && r.triggers.is_empty() {
        caption.push_str(" Each step is one block of cycles (latencytest's graph).");
    }
    if marked > 0 {
        caption.push_str(" Dashed vertical lines: its events (hover for each).");
    }
    for (name, n) in &crowded {
        caption.push_str(&format!(
            " Its {} {name} are too many to mark one by one.",
            fmt_count(*n)
        ));
    }
    if origin.is_none() && events > 0 {
        caption.push_str(&format!(
            " Its {} events are counted in the runs table, not placed here: the run does not store where this time axis starts.",
            fmt_count(events)
        ));
    }
    if let Some(w) = why.as_ref().filter(|w| w.unavailable.is_none()) {
        caption.push_str(&bars_caption(w, missed, bars, origin.is_some()));
    }
    if !plot.windows.is_empty() {
        caption.push_str(" Shaded: windows in which the hypervisor took CPU time from this machine (host steal); latency there measured the host too.");
    }
    Some(Figure {
        id: format!(
            "fig-time-{}",
            slug(if label.is_empty() { &cell.key } else { label })
        ),
        title,
        caption,
        svg,
    })
}

/// Each miss the trace explained in detail as a bar at its time (`origin_ns` the time
/// axis's 0), as tall as it was late, its causes stacked by kind; returns how many.
fn why_bars(plot: &mut Plot, w: &WhyRecord, what: (&str, &str), origin_ns: u64) -> usize {
    for m in &w.misses {
        let mut parts: Vec<BarPart> = Vec::new();
        for kind in why::KINDS {
            let ns: u64 = m
                .causes
                .iter()
                .filter(|c| c.kind == kind)
                .map(|c| c.ns)
                .sum();
            if ns > 0 {
                parts.push(BarPart {
                    kind: kind.into(),
                    value: ns as f64,
                });
            }
        }
        // A kind this report does not know still stands in its bar.
        for c in m
            .causes
            .iter()
            .filter(|c| !why::KINDS.contains(&c.kind.as_str()))
        {
            parts.push(BarPart {
                kind: c.kind.clone(),
                value: c.ns as f64,
            });
        }
        plot.bars.push(Bar {
            x: m.t_ns.saturating_sub(origin_ns) as f64,
            top: m.late_ns as f64,
            parts,
            text: why::miss_text(m, what, origin_ns),
        });
    }
    plot.bar_names = why::KINDS
        .iter()
        .map(|k| (k.to_string(), cause_kind(k)))
        .collect();
    plot.bars.len()
}

/// What the bars are, for the caption: how many of the misses the trace explained are
/// drawn, or why none are.
fn bars_caption(w: &WhyRecord, (_, many): (&str, &str), drawn: usize, placed: bool) -> String {
    let explained = w.misses_explained;
    if explained == 0 {
        return format!(
            " The kernel's trace (`audiolat jitter --why`) found no {many} to explain."
        );
    }
    if !placed {
        return format!(
            " The kernel's trace (`audiolat jitter --why`) explained {} {many}; they are not placed here: the run does not store where this time axis starts.",
            fmt_count(explained)
        );
    }
    let mut out = format!(
        " Bars: the {many} the kernel's trace explained (`audiolat jitter --why`), each as tall as it was late and split by cause, each cause's part its share of the lateness (hover for each cause); the answer lists the culprits over the run."
    );
    if (drawn as u64) < explained {
        out.push_str(&format!(
            " The {} worst of {} are drawn.",
            fmt_count(drawn as u64),
            fmt_count(explained)
        ));
    }
    out
}

type Drawn = (String, Vec<Series>, Vec<RefLine>);

fn event_series(r: &RunData) -> Option<Drawn> {
    let start = r.record.started_mono_ns as f64;
    let pts: Vec<(f64, f64)> = r
        .triggers
        .iter()
        .filter(|t| t.sounded())
        .filter_map(|t| Some((t.trigger_ns as f64 - start, t.latency_ns? as f64)))
        .collect();
    if pts.is_empty() {
        return None;
    }
    let s = if pts.len() <= MAX_DOTS {
        Series::dots("event latency", pts, false)
    } else {
        Series::line("event latency", pts)
    };
    Some(("event latency".into(), vec![s], Vec::new()))
}

fn column(s: &results::Series, name: &str) -> Option<usize> {
    s.columns.iter().position(|c| c == name)
}

/// Steps drawn per series at most: a long run's blocks are merged, `MAX_STEPS` at most
/// (the max of the maxima, the mean of the means), so a soak test's page stays small.
const MAX_STEPS: usize = 1_000;

/// A block's value held across its interval (a step per block), with its interval and
/// value on hover; `merge` combines adjacent blocks' values when there are more than
/// [`MAX_STEPS`].
fn block_steps(
    label: &str,
    s: &results::Series,
    (t, v): (usize, usize),
    merge: fn(&[f64]) -> f64,
) -> Series {
    let rows: Vec<&Vec<f64>> = s.rows.iter().filter(|row| row[t].is_finite()).collect();
    // Each block: (start ns, end ns, value).
    let blocks: Vec<(f64, f64, f64)> = rows
        .iter()
        .enumerate()
        .filter(|(_, row)| row[v].is_finite())
        .map(|(i, row)| {
            let start = row[t] * 1e9;
            let width = match (rows.get(i + 1), i.checked_sub(1).and_then(|j| rows.get(j))) {
                (Some(next), _) => next[t] * 1e9 - start,
                (None, Some(prev)) => start - prev[t] * 1e9,
                (None, None) => 0.0,
            };
            (start, start + width, row[v])
        })
        .collect();
    let per_step = blocks.len().div_ceil(MAX_STEPS).max(1);
    let mut points = Vec::with_capacity(blocks.len().min(MAX_STEPS) * 2);
    let mut tips = Vec::with_capacity(blocks.len().min(MAX_STEPS));
    for chunk in blocks.chunks(per_step) {
        let (start, end) = (chunk[0].0, chunk[chunk.len() - 1].1);
        let values: Vec<f64> = chunk.iter().map(|b| b.2).collect();
        let value = merge(&values);
        points.push((start, value));
        points.push((end, value));
        let over = if chunk.len() > 1 {
            format!(" ({} blocks)", chunk.len())
        } else {
            String::new()
        };
        tips.push((
            (start + end) / 2.0,
            value,
            format!(
                "{label}: {} from {} to {}{over}",
                fmt_ns(value),
                fmt_ns(start),
                fmt_ns(end)
            ),
        ));
    }
    let mut series = Series::line(label, points);
    series.tips = tips;
    series
}

fn max_of(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

fn mean_of(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

fn jitter_series(r: &RunData, s: &results::Series) -> Option<Drawn> {
    let t = column(s, "t_s")?;
    let mut series = vec![
        block_steps("max per block", s, (t, column(s, "max_ns")?), max_of),
        block_steps("mean per block", s, (t, column(s, "mean_ns")?), mean_of),
    ];
    let mut refs = Vec::new();
    if let Some(c) = column(s, "completion_max_ns") {
        series.push(block_steps(
            "fragment completion, max per block",
            s,
            (t, c),
            max_of,
        ));
        if let Some(d) = r
            .measurement("fragment_completion")
            .and_then(|m| m.deadline)
        {
            refs.push(RefLine {
                y: d,
                label: format!("fragment deadline {}", fmt_ns(d)),
            });
        }
    }
    Some((metric_name("wakeup_latency"), series, refs))
}

fn roundtrip_series(r: &RunData, s: &results::Series) -> Option<Drawn> {
    let rate_hz = RoundtripResultRecord::from_json(&r.record.result)
        .and_then(|rt| rt.stream.rate_hz)
        .map(|hz| hz as f64)
        .filter(|r| *r > 0.0)?;
    let (t, delay, verdict) = (
        column(s, "time_s")?,
        column(s, "delay_frames")?,
        column(s, "verdict")?,
    );
    // Windows with a reliable estimate only (verdict 0).
    let pts: Vec<(f64, f64)> = s
        .rows
        .iter()
        .filter(|row| row[verdict] == 0.0 && row[delay].is_finite() && row[t].is_finite())
        .map(|row| (row[t] * 1e9, row[delay] * 1e9 / rate_hz))
        .collect();
    if pts.is_empty() {
        return None;
    }
    let s = if pts.len() <= MAX_DOTS {
        Series::dots("round trip per window", pts, true)
    } else {
        Series::line("round trip per window", pts)
    };
    Some(("round trip".into(), vec![s], Vec::new()))
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}
