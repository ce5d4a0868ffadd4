//! A paper figure as SVG: categories along x (the study's buffer/period pairs, cases,
//! loads), each table column a colour, ours solid with filled points and the study's
//! dashed with hollow points, a column's points side by side within a category as the
//! studies' grouped bars were. It keeps the page's plot contract (the classes, the
//! legend that toggles, `<title>` hovers, colours only from CSS via `currentColor`)
//! and the plot engine's layout (width, margins, legend rows, text sizes).

use std::fmt::Write as _;

use super::{PaperFigure, PaperSeries, PaperValues};
use crate::plots::{duration_unit, fmt_number, nice_step};
use crate::words::escape;

const WIDTH: f64 = 760.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 24.0;
const PLOT_HEIGHT: f64 = 250.0;
const LEGEND_ROW: f64 = 21.0;
/// Pixels per character of legend and tick text (13 px sans-serif).
const CHAR_PX: f64 = 7.4;
/// Lines a category's tick label may wrap to.
const TICK_LINES: usize = 4;

/// The y axis: its range (values, or log10 of values), unit, ticks.
struct YAxis {
    log: bool,
    lo: f64,
    hi: f64,
    /// Divisor from values to the tick unit (ns per us for a time axis in us).
    per_unit: f64,
    unit: &'static str,
}

impl YAxis {
    fn new(f: &PaperFigure) -> Option<YAxis> {
        let mut values: Vec<f64> = f
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.value))
            .filter(|v| v.is_finite() && (!f.y_log || *v > 0.0))
            .collect();
        values.extend(f.deadline_ns);
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if lo > hi {
            return None;
        }
        let (unit, per_unit) = match f.values {
            PaperValues::Time => duration_unit(hi.abs().max(lo.abs())),
            _ => ("", 1.0),
        };
        let (lo, hi) = if f.y_log {
            (lo.log10() - 0.1, hi.log10().max(lo.log10() + 0.5) + 0.1)
        } else if hi == lo {
            let pad = lo.abs().max(1.0) * 0.1;
            (
                (lo - pad)
                    .min(0.0)
                    .max(if lo >= 0.0 { 0.0 } else { f64::MIN }),
                hi + pad,
            )
        } else {
            let pad = (hi - lo) * 0.08;
            (
                if lo >= 0.0 && lo < hi - lo {
                    0.0
                } else {
                    lo - pad
                },
                hi + pad,
            )
        };
        Some(YAxis {
            log: f.y_log,
            lo,
            hi,
            per_unit,
            unit,
        })
    }

    /// The pixel of a value (none for a value a log axis cannot show).
    fn px(&self, v: f64, top: f64, bottom: f64) -> Option<f64> {
        let f = if self.log {
            (v > 0.0).then(|| v.log10())?
        } else {
            v
        };
        let t = ((f - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0);
        Some(bottom - t * (bottom - top))
    }

    /// Ticks as (value, label): 1-2-5 steps on a linear axis; decades (with 2 and 5
    /// between when the axis spans under three) on a log axis.
    fn ticks(&self) -> Vec<(f64, String)> {
        let label = |v: f64| fmt_number(v / self.per_unit);
        if self.log {
            let span = self.hi - self.lo;
            let mults: &[f64] = if span < 3.0 { &[1.0, 2.0, 5.0] } else { &[1.0] };
            let mut out = Vec::new();
            for e in self.lo.floor() as i32..=self.hi.ceil() as i32 {
                for m in mults {
                    let v = m * 10f64.powi(e);
                    if (self.lo..=self.hi).contains(&v.log10()) {
                        out.push((v, label(v)));
                    }
                }
            }
            out
        } else {
            let step = nice_step((self.hi - self.lo) / 6.0);
            if step <= 0.0 {
                return Vec::new();
            }
            let mut v = (self.lo / step).ceil() * step;
            let mut out = Vec::new();
            while v <= self.hi + step * 1e-9 {
                out.push((v, label(if v.abs() < step * 1e-9 { 0.0 } else { v })));
                v += step;
            }
            out
        }
    }
}

/// Words of `text` in lines of at most `width` characters (a word longer stays whole),
/// at most `max` lines, the last ending in `...` when cut.
fn wrap(text: &str, width: usize, max: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + word.chars().count() <= width => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    if lines.len() > max {
        lines.truncate(max);
        if let Some(l) = lines.last_mut() {
            l.push_str(" ...");
        }
    }
    lines
}

/// A legend entry: a column (toggles its two series) or a kind (toggles all of ours or
/// all of the study's).
struct Entry {
    label: String,
    /// Colour slot and point shape for a column; none for a kind.
    colour: Option<(usize, usize)>,
    /// For a kind: measured here (solid) or the study's (dashed).
    ours: bool,
}

/// The entries in rows that fit the width, each with its x (the engine's layout).
fn layout(entries: &[Entry]) -> Vec<Vec<(f64, &Entry)>> {
    crate::plots::legend_rows(entries, |e| 40.0 + e.label.chars().count() as f64 * CHAR_PX)
}

/// The legend entry a series toggles with: its column, or its kind in a table of one
/// column.
fn column_of(s: &PaperSeries) -> &str {
    if s.column.is_empty() {
        &s.label
    } else {
        &s.column
    }
}

/// The legend: a column per entry (toggling its two series), then the two kinds.
fn legend_entries(f: &PaperFigure) -> Vec<Entry> {
    let study = f.study.as_str();
    let single = f.series.iter().all(|s| s.column.is_empty());
    let mut entries: Vec<Entry> = Vec::new();
    if !single {
        for s in &f.series {
            let c = column_of(s);
            if !entries.iter().any(|e| e.label == c) {
                entries.push(Entry {
                    label: c.to_string(),
                    colour: Some((s.colour, s.shape)),
                    ours: true,
                });
            }
        }
    }
    for ours in [true, false] {
        if f.series.iter().any(|s| s.ours == ours) {
            entries.push(Entry {
                label: if ours {
                    "here".into()
                } else {
                    study.to_string()
                },
                colour: None,
                ours,
            });
        }
    }
    entries
}

/// The figure as one `<svg class="plot">`, or none when it has no point to draw.
pub(super) fn render(f: &PaperFigure) -> Option<String> {
    let y = YAxis::new(f)?;
    let study = f.study.as_str();
    let single = f.series.iter().all(|s| s.column.is_empty());
    let entries = legend_entries(f);
    let rows = layout(&entries);
    let top = 34.0 + rows.len() as f64 * LEGEND_ROW + 14.0;
    let bottom = top + PLOT_HEIGHT;
    let n = f.categories.len().max(1);
    let band = (WIDTH - RIGHT - LEFT) / n as f64;
    let tick_chars = ((band - 8.0) / CHAR_PX).floor().max(4.0) as usize;
    let ticks: Vec<(&str, Vec<String>)> = f
        .categories
        .iter()
        .map(|c| (c.as_str(), wrap(c, tick_chars, TICK_LINES)))
        .collect();
    let tick_lines = ticks.iter().map(|t| t.1.len()).max().unwrap_or(1).max(1);
    let height = bottom + 20.0 + 16.0 * tick_lines as f64 + 30.0;

    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"plot paper\" viewBox=\"0 0 {WIDTH} {height:.0}\" width=\"100%\" role=\"img\" aria-label=\"{}\">",
        escape(&f.title)
    );
    let _ = write!(
        out,
        "<text class=\"title\" x=\"{}\" y=\"22\" text-anchor=\"middle\">{}</text>",
        WIDTH / 2.0,
        escape(&short_title(&f.title))
    );
    legend(&mut out, &rows, 34.0);
    axes(&mut out, &y, &ticks, band, top, bottom);
    // Columns side by side within a category, over half its band.
    let columns: Vec<&str> = {
        let mut c: Vec<&str> = Vec::new();
        for s in &f.series {
            if !c.contains(&column_of(s)) {
                c.push(column_of(s));
            }
        }
        c
    };
    let spread = band * 0.5;
    // Half the width of a level mark: its share of the spread.
    let half = (spread / columns.len().max(1) as f64 / 2.0).clamp(3.0, 28.0);
    let x_of = |category: usize, s: &PaperSeries| {
        let i = columns.iter().position(|c| *c == column_of(s)).unwrap_or(0);
        let dodge = if columns.len() > 1 {
            -spread / 2.0 + spread * i as f64 / (columns.len() - 1) as f64
        } else {
            0.0
        };
        LEFT + band * (category as f64 + 0.5) + dodge
    };
    for ours in [false, true] {
        if single {
            kind_series(&mut out, f, ours, &|s, x| x_of(x, s), half, &y, top, bottom);
        } else {
            let kind = if ours { "here" } else { study };
            let _ = write!(
                out,
                "<g class=\"series kind\" data-series=\"{}\">",
                escape(kind)
            );
            kind_series(&mut out, f, ours, &|s, x| x_of(x, s), half, &y, top, bottom);
            out.push_str("</g>");
        }
    }
    deadline(&mut out, f, &y, top, bottom);
    let _ = write!(
        out,
        "<text class=\"axis-label x\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
        LEFT + (WIDTH - RIGHT - LEFT) / 2.0,
        height - 10.0,
        escape(&f.x_label)
    );
    let (lx, ly) = (18.0, top + PLOT_HEIGHT / 2.0);
    let _ = write!(
        out,
        "<text class=\"axis-label y\" x=\"{lx}\" y=\"{ly:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 {lx} {ly:.1})\">{}</text>",
        escape(&f.y_label(y.unit))
    );
    out.push_str("</svg>");
    Some(out)
}

/// The deadline, labelled, as a horizontal line across the plot.
fn deadline(out: &mut String, f: &PaperFigure, y: &YAxis, top: f64, bottom: f64) {
    if let Some(d) = f.deadline_ns {
        if let Some(py) = y.px(d, top, bottom) {
            let label = format!("deadline {}", crate::units::fmt_ns(d));
            let _ = write!(
                out,
                "<g class=\"ref\"><line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{py:.1}\" y2=\"{py:.1}\"><title>{}</title></line><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text></g>",
                WIDTH - RIGHT,
                escape(&label),
                WIDTH - RIGHT - 4.0,
                py - 5.0,
                escape(&label)
            );
        }
    }
}

/// The title above the plot: the table's, without a unit in parentheses at its end (the
/// y axis names it).
fn short_title(title: &str) -> String {
    match title.rsplit_once(" (") {
        Some((head, tail)) if tail.ends_with(')') && tail.len() <= 4 => head.to_string(),
        _ => title.to_string(),
    }
}

/// The series of one kind (ours or the study's), each a `<g class="series s{c}">`
/// with its line and its points.
#[allow(clippy::too_many_arguments)]
fn kind_series(
    out: &mut String,
    f: &PaperFigure,
    ours: bool,
    x_of: &dyn Fn(&PaperSeries, usize) -> f64,
    half: f64,
    y: &YAxis,
    top: f64,
    bottom: f64,
) {
    for s in f.series.iter().filter(|s| s.ours == ours) {
        let _ = write!(
            out,
            "<g class=\"series s{} {}\" data-series=\"{}\">",
            s.colour % 8,
            if ours { "here" } else { "study" },
            escape(column_of(s))
        );
        let pts: Vec<(usize, f64, f64, &str)> = s
            .points
            .iter()
            .filter_map(|p| {
                let py = y.px(p.value, top, bottom)?;
                Some((p.category, x_of(s, p.category), py, p.title.as_str()))
            })
            .collect();
        let dash = if ours {
            ""
        } else {
            " stroke-dasharray=\"6 4\""
        };
        let mut d = String::new();
        if f.ordered {
            // Neighbouring categories joined; a category without a value breaks the line.
            for (i, (c, px, py, _)) in pts.iter().enumerate() {
                let joined = i > 0 && pts[i - 1].0 + 1 == *c;
                let _ = write!(d, "{}{px:.1} {py:.1}", if joined { "L" } else { "M" });
            }
        } else {
            // Each value a level mark across its slot, as the top of the study's bar.
            for (_, px, py, _) in &pts {
                let _ = write!(d, "M{:.1} {py:.1}H{:.1}", px - half, px + half);
            }
        }
        if d.contains('L') || d.contains('H') {
            let _ = write!(out, "<path class=\"line\" d=\"{d}\"{dash}/>");
        }
        for (_, px, py, title) in pts {
            let (class, r, attrs) = if ours {
                ("dot", 4.0, ">")
            } else {
                (
                    "ring",
                    4.5,
                    " fill=\"none\" stroke=\"currentColor\" stroke-width=\"2\" pointer-events=\"all\">",
                )
            };
            out.push_str(&point(s.shape, px, py, r, class, attrs));
            let close = if s.shape % 4 == 0 {
                "</circle>"
            } else if s.shape % 4 == 1 {
                "</rect>"
            } else {
                "</path>"
            };
            let _ = write!(out, "<title>{}</title>{close}", escape(title));
        }
        out.push_str("</g>");
    }
}

/// Whether any column entry has a shape other than a circle (then every column entry
/// shows its shape).
fn entries_have_shapes(rows: &[Vec<(f64, &Entry)>]) -> bool {
    rows.iter()
        .flatten()
        .any(|(_, e)| e.colour.is_some_and(|(_, shape)| shape > 0))
}

/// A point of `shape` (0 circle, 1 square, 2 triangle, 3 diamond) of radius `r` at
/// (x, y), with `class`, extra attributes `attrs` and no title (the caller closes it
/// with one when it hovers: the element is returned open when `attrs` ends in `>`).
fn point(shape: usize, x: f64, y: f64, r: f64, class: &str, attrs: &str) -> String {
    let body = match shape % 4 {
        1 => {
            let a = r * 0.9;
            format!(
                "<rect class=\"{class}\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"{attrs}",
                x - a,
                y - a,
                2.0 * a,
                2.0 * a
            )
        }
        2 => {
            let a = r * 1.2;
            format!(
                "<path class=\"{class}\" d=\"M{x:.1} {:.1}L{:.1} {:.1}L{:.1} {:.1}Z\"{attrs}",
                y - a,
                x + a * 0.9,
                y + a * 0.6,
                x - a * 0.9,
                y + a * 0.6
            )
        }
        3 => {
            let a = r * 1.25;
            format!(
                "<path class=\"{class}\" d=\"M{x:.1} {:.1}L{:.1} {y:.1}L{x:.1} {:.1}L{:.1} {y:.1}Z\"{attrs}",
                y - a,
                x + a,
                y + a,
                x - a
            )
        }
        _ => format!("<circle class=\"{class}\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r}\"{attrs}"),
    };
    if attrs.ends_with('>') {
        body
    } else {
        body + "/>"
    }
}

fn legend(out: &mut String, rows: &[Vec<(f64, &Entry)>], y0: f64) {
    for (r, row) in rows.iter().enumerate() {
        let y = y0 + r as f64 * LEGEND_ROW;
        for (x, e) in row {
            let label = escape(&e.label);
            let colour = e
                .colour
                .map(|(c, _)| format!(" s{}", c % 8))
                .unwrap_or_default();
            let shapes = entries_have_shapes(rows);
            let _ = write!(
                out,
                "<g class=\"legend-item{colour}\" data-series=\"{label}\" tabindex=\"0\" role=\"button\" aria-pressed=\"true\"><title>show or hide {label}</title>"
            );
            match e.colour {
                Some((_, shape)) if shapes => {
                    out.push_str(&point(shape, x + 9.0, y + 9.5, 5.0, "swatch", ""));
                }
                Some(_) => {
                    let _ = write!(
                        out,
                        "<rect class=\"swatch\" x=\"{x:.1}\" y=\"{:.1}\" width=\"18\" height=\"11\" rx=\"2\"/>",
                        y + 4.0
                    );
                }
                None => {
                    let (cy, dash) = (
                        y + 9.5,
                        if e.ours {
                            ""
                        } else {
                            " stroke-dasharray=\"4 3\""
                        },
                    );
                    let circle = if e.ours {
                        "fill=\"currentColor\""
                    } else {
                        "fill=\"none\" stroke=\"currentColor\" stroke-width=\"1.5\""
                    };
                    let _ = write!(
                        out,
                        "<line x1=\"{x:.1}\" x2=\"{:.1}\" y1=\"{cy:.1}\" y2=\"{cy:.1}\" stroke=\"currentColor\" stroke-width=\"2\"{dash}/><circle cx=\"{:.1}\" cy=\"{cy:.1}\" r=\"3.5\" {circle}/>",
                        x + 18.0,
                        x + 9.0
                    );
                }
            }
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\">{label}</text></g>",
                x + 24.0,
                y + 14.0
            );
        }
    }
}

fn axes(
    out: &mut String,
    y: &YAxis,
    ticks: &[(&str, Vec<String>)],
    band: f64,
    top: f64,
    bottom: f64,
) {
    let (left, right) = (LEFT, WIDTH - RIGHT);
    let yticks = y.ticks();
    out.push_str("<g class=\"grid\">");
    for (v, _) in &yticks {
        if let Some(py) = y.px(*v, top, bottom) {
            let _ = write!(
                out,
                "<line x1=\"{left:.1}\" x2=\"{right:.1}\" y1=\"{py:.1}\" y2=\"{py:.1}\"/>"
            );
        }
    }
    // Lines between categories.
    for i in 1..ticks.len() {
        let x = left + band * i as f64;
        let _ = write!(
            out,
            "<line class=\"minor\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{top:.1}\" y2=\"{bottom:.1}\"/>"
        );
    }
    out.push_str("</g>");
    let _ = write!(
        out,
        "<g class=\"axis x\"><line x1=\"{left:.1}\" x2=\"{right:.1}\" y1=\"{bottom:.1}\" y2=\"{bottom:.1}\"/>"
    );
    for (i, (category, lines)) in ticks.iter().enumerate() {
        let x = left + band * (i as f64 + 0.5);
        let _ = write!(
            out,
            "<text class=\"tick\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">",
            bottom + 20.0
        );
        let _ = write!(out, "<title>{}</title>", escape(category));
        for (l, line) in lines.iter().enumerate() {
            let _ = write!(
                out,
                "<tspan x=\"{x:.1}\" dy=\"{}\">{}</tspan>",
                if l == 0 { 0.0 } else { 16.0 },
                escape(line)
            );
        }
        out.push_str("</text>");
    }
    out.push_str("</g>");
    let _ = write!(
        out,
        "<g class=\"axis y\"><line x1=\"{left:.1}\" x2=\"{left:.1}\" y1=\"{top:.1}\" y2=\"{bottom:.1}\"/>"
    );
    for (v, label) in &yticks {
        if let Some(py) = y.px(*v, top, bottom) {
            let _ = write!(
                out,
                "<line x1=\"{:.1}\" x2=\"{left:.1}\" y1=\"{py:.1}\" y2=\"{py:.1}\"/><text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                left - 5.0,
                left - 8.0,
                py + 4.5,
                escape(label)
            );
        }
    }
    out.push_str("</g>");
}
