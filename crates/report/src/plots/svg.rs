//! The SVG writer: lays a [`Plot`] out in a fixed `viewBox` (title, legend, plot area,
//! axes) and writes its elements with classes only, no colours.

use std::fmt::Write as _;

use super::axis::{Axis, Scale, Tick};
use super::model::{Plot, Series, Style, TIPS_PER_LINE};
use crate::words::escape;

const WIDTH: f64 = 760.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 24.0;
const PLOT_HEIGHT: f64 = 250.0;
const LEGEND_ROW: f64 = 21.0;

/// Pixels from axis values: one axis's range in forward positions and its pixel span.
struct Map<'a> {
    axis: &'a Axis,
    lo: f64,
    hi: f64,
    from_px: f64,
    to_px: f64,
}

impl Map<'_> {
    /// The pixel of a value; values the axis cannot show (0 on a log count axis) sit on
    /// its floor when `floor`, else are `None`. Values beyond the range are clamped.
    fn px(&self, v: f64, floor: bool) -> Option<f64> {
        let f = match self.axis.forward(v) {
            Some(f) => f,
            None if floor && v.is_finite() => self.lo,
            None => return None,
        };
        let t = ((f - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0);
        Some(self.from_px + t * (self.to_px - self.from_px))
    }

    fn tick_px(&self, t: &Tick) -> Option<f64> {
        let f = match self.axis.scale {
            Scale::Percentile => t.at,
            _ => self.axis.forward(t.at)?,
        };
        (self.lo..=self.hi).contains(&f).then(|| {
            self.from_px + (f - self.lo) / (self.hi - self.lo) * (self.to_px - self.from_px)
        })
    }

    /// The largest absolute value on the axis (for its unit).
    fn top_abs(&self) -> f64 {
        match self.axis.scale {
            Scale::Log => 10f64.powf(self.hi),
            _ => self.lo.abs().max(self.hi.abs()),
        }
    }
}

/// An entry of the legend: a series (toggles) or a key to marks and windows.
enum Entry<'a> {
    Series(usize, &'a str),
    Mark(&'a str, String),
    Window(&'a str),
    /// A bar part's kind and its name.
    Part(&'a str, String),
}

/// A bar's width, px.
const BAR_PX: f64 = 5.0;

fn entry_width(text: &str) -> f64 {
    26.0 + text.chars().count() as f64 * 7.4 + 14.0
}

/// The plot as SVG, or `None` when there is nothing to draw.
pub(super) fn render(plot: &Plot) -> Option<String> {
    let drawable = |s: &Series| {
        s.points
            .iter()
            .any(|&(x, y)| plot.x.forward(x).is_some() && plot.y.forward(y).is_some())
    };
    if !plot.series.iter().any(drawable) {
        return None;
    }
    let mut xs: Vec<f64> = plot
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    let mut ys: Vec<f64> = plot
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .collect();
    for s in &plot.series {
        xs.extend(s.marked.iter().map(|m| m.0));
        ys.extend(s.marked.iter().map(|m| m.1));
    }
    xs.extend(plot.marks.iter().map(|m| m.x));
    xs.extend(plot.windows.iter().flat_map(|w| [w.x0, w.x1]));
    ys.extend(plot.refs.iter().map(|r| r.y));
    xs.extend(plot.bars.iter().map(|b| b.x));
    ys.extend(plot.bars.iter().map(|b| b.top));
    if !plot.bars.is_empty() {
        // A bar stands on zero (a log axis cannot show it and keeps its floor).
        ys.push(0.0);
    }
    let (x_lo, x_hi) = plot.x.range(&xs)?;
    let (y_lo, y_hi) = plot.y.range(&ys)?;

    let entries = legend_entries(plot);
    let rows = layout_rows(&entries);
    let top = 34.0 + rows.len() as f64 * LEGEND_ROW + 14.0;
    let bottom = top + PLOT_HEIGHT;
    let height = bottom + 54.0;
    let xmap = Map {
        axis: &plot.x,
        lo: x_lo,
        hi: x_hi,
        from_px: LEFT,
        to_px: WIDTH - RIGHT,
    };
    let ymap = Map {
        axis: &plot.y,
        lo: y_lo,
        hi: y_hi,
        from_px: bottom,
        to_px: top,
    };

    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"plot\" viewBox=\"0 0 {WIDTH} {height}\" width=\"100%\" role=\"img\" aria-label=\"{}\">",
        escape(&plot.title)
    );
    let _ = write!(
        out,
        "<text class=\"title\" x=\"{}\" y=\"22\" text-anchor=\"middle\">{}</text>",
        WIDTH / 2.0,
        escape(&plot.title)
    );
    legend(&mut out, &rows, 34.0);
    axes(&mut out, &xmap, &ymap);
    windows_and_marks(&mut out, plot, &xmap, top, bottom);
    bars(&mut out, plot, &xmap, &ymap);
    for (i, s) in plot.series.iter().enumerate() {
        series(&mut out, plot, i, s, &xmap, &ymap);
    }
    // Labels alternate between the left and the right end, so close lines stay legible.
    for (i, r) in plot.refs.iter().enumerate() {
        let Some(y) = ymap.px(r.y, false) else {
            continue;
        };
        let (x, anchor) = if i % 2 == 0 {
            (LEFT + 6.0, "start")
        } else {
            (WIDTH - RIGHT - 6.0, "end")
        };
        let _ = write!(
            out,
            "<g class=\"ref\"><line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"><title>{}</title></line><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{}</text></g>",
            WIDTH - RIGHT,
            escape(&r.label),
            y - 5.0,
            escape(&r.label)
        );
    }
    let _ = write!(
        out,
        "<text class=\"axis-label x\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
        LEFT + (WIDTH - RIGHT - LEFT) / 2.0,
        bottom + 44.0,
        escape(&plot.x.label(xmap.top_abs()))
    );
    let (lx, ly) = (18.0, top + PLOT_HEIGHT / 2.0);
    let _ = write!(
        out,
        "<text class=\"axis-label y\" x=\"{lx}\" y=\"{ly:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 {lx} {ly:.1})\">{}</text>",
        escape(&plot.y.label(ymap.top_abs()))
    );
    out.push_str("</svg>");
    Some(out)
}

/// Host-steal windows and event marks, under the series.
fn windows_and_marks(out: &mut String, plot: &Plot, xmap: &Map, top: f64, bottom: f64) {
    for w in &plot.windows {
        let (Some(a), Some(b)) = (xmap.px(w.x0, false), xmap.px(w.x1, false)) else {
            continue;
        };
        let (a, b) = (a.min(b), a.max(b).max(a.min(b) + 2.0));
        let _ = write!(
            out,
            "<rect class=\"window {}\" x=\"{a:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{PLOT_HEIGHT}\"><title>{}</title></rect>",
            escape(&w.kind),
            b - a,
            escape(&w.text)
        );
    }
    for m in &plot.marks {
        let Some(x) = xmap.px(m.x, false) else {
            continue;
        };
        let _ = write!(
            out,
            "<line class=\"mark {}\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{top:.1}\" y2=\"{bottom:.1}\"><title>{}</title></line>",
            escape(&m.kind),
            escape(&m.text)
        );
    }
}

/// The stacked bars, under the series: each part's share of the bar's height is its share
/// of the parts' sum; the bar's `<title>` names every part.
fn bars(out: &mut String, plot: &Plot, xmap: &Map, ymap: &Map) {
    let base = ymap.from_px;
    for b in &plot.bars {
        let (Some(x), Some(top)) = (xmap.px(b.x, false), ymap.px(b.top, true)) else {
            continue;
        };
        let sum: f64 = b.parts.iter().map(|p| p.value.max(0.0)).sum();
        if sum <= 0.0 || top >= base {
            continue;
        }
        let _ = write!(out, "<g class=\"bar\"><title>{}</title>", escape(&b.text));
        let mut y = base;
        for p in &b.parts {
            let h = (base - top) * p.value.max(0.0) / sum;
            if h <= 0.0 {
                continue;
            }
            y -= h;
            let _ = write!(
                out,
                "<rect class=\"part {}\" x=\"{:.1}\" y=\"{y:.1}\" width=\"{BAR_PX}\" height=\"{h:.1}\"/>",
                escape(&p.kind),
                x - BAR_PX / 2.0
            );
        }
        out.push_str("</g>");
    }
}

/// The bar parts' kinds in the key's order: those named first, in their order, then
/// the others as they come.
fn bar_kinds(plot: &Plot) -> Vec<(&str, String)> {
    let present = |k: &str| {
        plot.bars
            .iter()
            .any(|b| b.parts.iter().any(|p| p.kind == k))
    };
    let mut out: Vec<(&str, String)> = plot
        .bar_names
        .iter()
        .filter(|(k, _)| present(k))
        .map(|(k, n)| (k.as_str(), n.clone()))
        .collect();
    for p in plot.bars.iter().flat_map(|b| &b.parts) {
        if !out.iter().any(|(k, _)| *k == p.kind) {
            out.push((&p.kind, p.kind.replace('_', " ")));
        }
    }
    out
}

fn legend_entries(plot: &Plot) -> Vec<Entry<'_>> {
    let mut entries = Vec::new();
    if plot.series.len() > 1 {
        for (i, s) in plot.series.iter().enumerate() {
            entries.push(Entry::Series(i, &s.label));
        }
    }
    let mut kinds: Vec<&str> = Vec::new();
    for m in &plot.marks {
        if !kinds.contains(&m.kind.as_str()) {
            kinds.push(&m.kind);
        }
    }
    for k in kinds {
        let name = plot
            .mark_names
            .iter()
            .find(|(kind, _)| kind == k)
            .map_or_else(|| k.replace('_', " "), |(_, n)| n.clone());
        let n = plot.marks.iter().filter(|m| m.kind == k).count();
        entries.push(Entry::Mark(k, format!("{name} ({n})")));
    }
    let mut windows: Vec<&str> = Vec::new();
    for w in &plot.windows {
        if !windows.contains(&w.kind.as_str()) {
            windows.push(&w.kind);
        }
    }
    for k in windows {
        entries.push(Entry::Window(k));
    }
    for (k, name) in bar_kinds(plot) {
        entries.push(Entry::Part(k, name));
    }
    entries
}

fn entry_text<'a>(e: &'a Entry<'a>) -> std::borrow::Cow<'a, str> {
    match e {
        Entry::Series(_, label) => (*label).into(),
        Entry::Mark(_, text) => text.as_str().into(),
        Entry::Window("steal") => "host steal".into(),
        Entry::Window(k) => k.replace('_', " ").into(),
        Entry::Part(_, name) => name.as_str().into(),
    }
}

/// The legend's entries in rows that fit the width.
fn layout_rows<'a>(entries: &'a [Entry<'a>]) -> Vec<Vec<(f64, &'a Entry<'a>)>> {
    legend_rows(entries, |e| entry_width(&entry_text(e)))
}

/// Legend entries laid out in rows that fit a plot's width, each with its x: an entry
/// `width` px wide starts a new row where it would pass the right margin. Shared by the
/// papers' figures.
pub(crate) fn legend_rows<T>(entries: &[T], width: impl Fn(&T) -> f64) -> Vec<Vec<(f64, &T)>> {
    let mut rows: Vec<Vec<(f64, &T)>> = Vec::new();
    let mut x = LEFT;
    for e in entries {
        let w = width(e);
        if rows.is_empty() || (x + w > WIDTH - RIGHT && x > LEFT) {
            rows.push(Vec::new());
            x = LEFT;
        }
        if let Some(row) = rows.last_mut() {
            row.push((x, e));
        }
        x += w;
    }
    rows
}

fn legend(out: &mut String, rows: &[Vec<(f64, &Entry)>], y0: f64) {
    for (r, row) in rows.iter().enumerate() {
        let y = y0 + r as f64 * LEGEND_ROW;
        for (x, e) in row {
            let text = escape(&entry_text(e));
            match e {
                Entry::Series(i, label) => {
                    let _ = write!(
                        out,
                        "<g class=\"legend-item s{}\" data-series=\"{}\" tabindex=\"0\" role=\"button\" aria-pressed=\"true\"><title>show or hide {}</title><rect class=\"swatch\" x=\"{x:.1}\" y=\"{:.1}\" width=\"18\" height=\"11\" rx=\"2\"/><text x=\"{:.1}\" y=\"{:.1}\">{text}</text></g>",
                        i % 8,
                        escape(label),
                        escape(label),
                        y + 4.0,
                        x + 24.0,
                        y + 14.0
                    );
                }
                Entry::Mark(kind, _) => {
                    let _ = write!(
                        out,
                        "<g class=\"key {}\"><line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke-width=\"2\"/><text x=\"{:.1}\" y=\"{:.1}\">{text}</text></g>",
                        escape(kind),
                        x + 9.0,
                        x + 9.0,
                        y + 2.0,
                        y + 17.0,
                        x + 24.0,
                        y + 14.0
                    );
                }
                Entry::Part(kind, _) => {
                    let _ = write!(
                        out,
                        "<g class=\"key bar-key\"><rect class=\"part {}\" x=\"{x:.1}\" y=\"{:.1}\" width=\"18\" height=\"13\"/><text x=\"{:.1}\" y=\"{:.1}\">{text}</text></g>",
                        escape(kind),
                        y + 3.0,
                        x + 24.0,
                        y + 14.0
                    );
                }
                Entry::Window(kind) => {
                    let _ = write!(
                        out,
                        "<g class=\"key {}\"><rect class=\"window-swatch\" x=\"{x:.1}\" y=\"{:.1}\" width=\"18\" height=\"13\"/><text x=\"{:.1}\" y=\"{:.1}\">{text}</text></g>",
                        escape(kind),
                        y + 3.0,
                        x + 24.0,
                        y + 14.0
                    );
                }
            }
        }
    }
}

fn axes(out: &mut String, xmap: &Map, ymap: &Map) {
    let (left, right, top, bottom) = (xmap.from_px, xmap.to_px, ymap.to_px, ymap.from_px);
    let xticks = xmap.axis.ticks(xmap.lo, xmap.hi);
    let yticks = ymap.axis.ticks(ymap.lo, ymap.hi);
    out.push_str("<g class=\"grid\">");
    for t in &xticks {
        if let Some(x) = xmap.tick_px(t) {
            let minor = if t.major { "" } else { " class=\"minor\"" };
            let _ = write!(
                out,
                "<line{minor} x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{top:.1}\" y2=\"{bottom:.1}\"/>"
            );
        }
    }
    for t in &yticks {
        if let Some(y) = ymap.tick_px(t) {
            let minor = if t.major { "" } else { " class=\"minor\"" };
            let _ = write!(
                out,
                "<line{minor} x1=\"{left:.1}\" x2=\"{right:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>"
            );
        }
    }
    out.push_str("</g>");
    let _ = write!(
        out,
        "<g class=\"axis x\"><line x1=\"{left:.1}\" x2=\"{right:.1}\" y1=\"{bottom:.1}\" y2=\"{bottom:.1}\"/>"
    );
    for t in &xticks {
        if let (Some(x), Some(label)) = (xmap.tick_px(t), t.label.as_ref()) {
            let _ = write!(
                out,
                "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{bottom:.1}\" y2=\"{:.1}\"/><text class=\"tick\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                bottom + 5.0,
                bottom + 20.0,
                escape(label)
            );
        }
    }
    out.push_str("</g>");
    let _ = write!(
        out,
        "<g class=\"axis y\"><line x1=\"{left:.1}\" x2=\"{left:.1}\" y1=\"{top:.1}\" y2=\"{bottom:.1}\"/>"
    );
    for t in &yticks {
        if let (Some(y), Some(label)) = (ymap.tick_px(t), t.label.as_ref()) {
            let _ = write!(
                out,
                "<line x1=\"{:.1}\" x2=\"{left:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/><text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                left - 5.0,
                left - 8.0,
                y + 4.5,
                escape(label)
            );
        }
    }
    out.push_str("</g>");
}

/// The points a series' line goes through: its points for a line; for a sweep (dots
/// and a line) the mean at each x in x order, so repeats at one x do not zigzag.
fn line_points(s: &Series) -> Vec<(f64, f64)> {
    if s.style == Style::Line {
        return s.points.clone();
    }
    let mut sorted = s.points.clone();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out: Vec<(f64, f64)> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let x = sorted[i].0;
        let same: Vec<f64> = sorted[i..]
            .iter()
            .take_while(|p| p.0 == x)
            .map(|p| p.1)
            .collect();
        i += same.len();
        out.push((x, same.iter().sum::<f64>() / same.len() as f64));
    }
    out
}

fn series(out: &mut String, plot: &Plot, i: usize, s: &Series, xmap: &Map, ymap: &Map) {
    let _ = write!(
        out,
        "<g class=\"series s{}\" data-series=\"{}\">",
        i % 8,
        escape(&s.label)
    );
    let at = |x: f64, y: f64| Some((xmap.px(x, false)?, ymap.px(y, true)?));
    if matches!(s.style, Style::Line | Style::LineDots | Style::Published) {
        let mut d = String::new();
        let mut pen_down = false;
        let through = line_points(s);
        for &(x, y) in &through {
            match at(x, y) {
                Some((px, py)) => {
                    let _ = write!(d, "{}{px:.1} {py:.1}", if pen_down { "L" } else { "M" });
                    pen_down = true;
                }
                None => pen_down = false,
            }
        }
        let class = if s.style == Style::Published {
            "line dashed"
        } else {
            "line"
        };
        let _ = write!(out, "<path class=\"{class}\" d=\"{d}\"/>");
    }
    let text = |x: f64, y: f64| {
        let prefix = if s.label.is_empty() {
            String::new()
        } else {
            format!("{}: ", s.label)
        };
        format!(
            "{prefix}{} {}, {} {}",
            plot.x.name,
            plot.x.fmt_value(x),
            plot.y.name,
            plot.y.fmt_value(y)
        )
    };
    let mut dot = |class: &str, r: f64, x: f64, y: f64, tip: &str| {
        if let Some((px, py)) = at(x, y) {
            let _ = write!(
                out,
                "<circle class=\"{class}\" cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"{r}\"><title>{}</title></circle>",
                escape(tip)
            );
        }
    };
    if !s.tips.is_empty() {
        for (x, y, tip) in &s.tips {
            dot("tip", 5.0, *x, *y, tip);
        }
    } else if s.style == Style::Line {
        let stride = s.points.len().div_ceil(TIPS_PER_LINE).max(1);
        for &(x, y) in s.points.iter().step_by(stride) {
            dot("tip", 5.0, x, y, &text(x, y));
        }
    }
    if matches!(s.style, Style::Dots | Style::LineDots | Style::Published) {
        let class = if s.style == Style::Published {
            "dot hollow"
        } else {
            "dot"
        };
        for &(x, y) in &s.points {
            dot(class, 4.0, x, y, &text(x, y));
        }
    }
    for (x, y, tip) in &s.marked {
        dot("max", 4.5, *x, *y, tip);
    }
    out.push_str("</g>");
}
