//! The studies' figures beside ours, on the same axes: for each of a plan's
//! `[[report.table]]`s that has published values (a preset's `[published.*]`), one plot
//! with our measured values and the study's as two kinds of series, one colour per table
//! column (e.g. optimisation level and scenario in the BeagleBone study's Figures 4-7):
//! ours solid with filled points, the study's dashed with hollow points. The x axis is
//! the table's rows (buffer/period pairs, cases) as categories in the plan's order; a
//! table with one row axis and one column axis of at least as many labels is turned so
//! that the columns (loads, scenarios) run along x. Where a plan ran only some rows (a
//! `--quick` variant), ours has only what ran and the study's curve is whole. A cell
//! with no measured value (not run, failed, excluded) has no point: nothing is drawn as 0.
//!
//! [`paper_figure_specs`] is the data side (a pure function of the tables and the runs'
//! deadlines); [`paper_figures`] renders the specs as the report's figures.

use serde_json::Value;

use crate::data::ReportData;
use crate::paper::{self, PaperTable, TableCell};

/// What a paper figure's values are, which decides its y axis.
#[derive(Debug, Clone, PartialEq)]
pub enum PaperValues {
    /// Durations, the point values in ns (the axis picks us/ms/s).
    Time,
    /// Counts of events (missed deadlines), plotted as numbers.
    Count,
    /// Anything else, in this unit (may be empty).
    Plain(String),
}

/// One point of a paper figure's series.
#[derive(Debug, Clone, PartialEq)]
pub struct PaperPoint {
    /// Index of the x category (see [`PaperFigure::categories`]).
    pub category: usize,
    /// The value: ns for [`PaperValues::Time`], else as the table has it.
    pub value: f64,
    /// The hover text: the exact value in chosen units and where it comes from.
    pub title: String,
}

/// One series: a table column, measured here or published by the study.
#[derive(Debug, Clone, PartialEq)]
pub struct PaperSeries {
    /// Legend label, e.g. `opt1 Monophonic (here)`.
    pub label: String,
    /// The table column it stands for (empty for a table of one column).
    pub column: String,
    /// Colour slot (0..8): the same for a column's two series.
    pub colour: usize,
    /// Point shape (0 circle, 1 square, 2 triangle, 3 diamond): with more columns than
    /// colours, the colour tells the innermost column axis (scenario) and the shape the
    /// others (optimisation level).
    pub shape: usize,
    /// Measured here (solid, filled points), else the study's (dashed, hollow points).
    pub ours: bool,
    /// Points in category order; a category without a value has none.
    pub points: Vec<PaperPoint>,
}

/// A plot of one paper table on the study's axes.
#[derive(Debug, Clone, PartialEq)]
pub struct PaperFigure {
    /// Element id, `fig-paper-...` (unique within a report).
    pub id: String,
    /// Title (the table's).
    pub title: String,
    /// Caption: the study's figure and how to read the two kinds of series.
    pub caption: String,
    /// x axis label with its unit in parentheses, e.g. `buffer/period (frames)`.
    pub x_label: String,
    /// The x categories in order.
    pub categories: Vec<String>,
    /// The categories are a sweep in order (buffer/period pairs, periods, loads): a
    /// series joins its neighbouring points; else each value stands alone.
    pub ordered: bool,
    /// y axis name without its unit, e.g. `event latency, mean`.
    pub y_name: String,
    /// What the values are (time: the axis chooses the unit).
    pub values: PaperValues,
    /// A logarithmic y axis (values spanning more than a factor of 30, all positive).
    pub y_log: bool,
    /// Series: ours and the study's, for every column with a value.
    pub series: Vec<PaperSeries>,
    /// The deadline the values are judged against (ns), drawn as a horizontal line.
    pub deadline_ns: Option<f64>,
    /// Who published the values, e.g. `Topliss et al. 2014, Figure 4`.
    pub study: String,
}

impl PaperFigure {
    /// The y axis label with its unit in parentheses, for a time axis in `time_unit`
    /// (the unit the plot engine chose for the axis range).
    pub fn y_label(&self, time_unit: &str) -> String {
        let unit = match &self.values {
            PaperValues::Time => time_unit.to_string(),
            PaperValues::Count => "count".to_string(),
            PaperValues::Plain(u) if u.is_empty() => "value".to_string(),
            PaperValues::Plain(u) => u.clone(),
        };
        format!("{} ({unit})", self.y_name)
    }
}

/// A report's paper figures, drawn: one per paper table with at least one published
/// number that has a point to draw, in the plan's order.
pub fn paper_figures(data: &ReportData) -> Vec<crate::figures::figure::Figure> {
    paper_figure_specs(data)
        .into_iter()
        .filter_map(|f| {
            Some(crate::figures::figure::Figure {
                svg: render(&f)?,
                id: f.id,
                title: f.title,
                caption: f.caption,
            })
        })
        .collect()
}

/// The specs of a report's paper figures: one per paper table with at least one
/// published number (none for a plan without published values, or no plan).
pub fn paper_figure_specs(data: &ReportData) -> Vec<PaperFigure> {
    paper::tables(data)
        .iter()
        .enumerate()
        .filter_map(|(i, t)| figure_spec(t, i, deadline_ns(data, &t.value)))
        .collect()
}

/// The one deadline (ns) the complete runs' measurement of the metric at `value_path`
/// (`response_time.mean` -> `response_time`) is judged against; none when there is none,
/// the runs disagree, or the statistic is not itself a latency (a standard deviation, a
/// count).
pub fn deadline_ns(data: &ReportData, value_path: &str) -> Option<f64> {
    let (metric, stat) = value_path.split_once('.')?;
    let latency = ["mean", "min", "max", "p50", "p90", "p99", "p999", "p9999"];
    if !latency.contains(&stat) {
        return None;
    }
    let mut deadlines: Vec<f64> = data
        .cells
        .iter()
        .filter(|c| c.status == Some(results::RunStatus::Complete))
        .filter_map(|c| c.run.as_ref()?.measurement(metric)?.deadline)
        .filter(|d| d.is_finite() && *d > 0.0)
        .collect();
    deadlines.sort_by(f64::total_cmp);
    deadlines.dedup();
    match deadlines.as_slice() {
        [d] => Some(*d),
        _ => None,
    }
}

/// ns per one of a time unit, for the units a table may be in.
fn ns_per(unit: &str) -> Option<f64> {
    match unit {
        "ns" => Some(1.0),
        "us" | "µs" => Some(1e3),
        "ms" => Some(1e6),
        "s" => Some(1e9),
        _ => None,
    }
}

/// A published value as a number and whether the study gave it approximately (`~0.5`);
/// none for `-`, `not tested` and the like.
pub fn published_number(v: &Value) -> Option<(f64, bool)> {
    match v {
        Value::Number(n) => n.as_f64().map(|x| (x, false)),
        Value::String(s) => {
            let t = s.trim();
            let (approx, t) = match t.strip_prefix('~') {
                Some(rest) => (true, rest.trim()),
                None => (false, t),
            };
            t.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .map(|x| (x, approx))
        }
        _ => None,
    }
}

/// The x axis label of a table's row axes, with a unit: buffer/period pairs and periods
/// are frames; anything else is a category.
fn x_label(axes: &[String]) -> String {
    match axes {
        [a] if a == "buffer" => "buffer/period (frames)".into(),
        [a] if a == "period" => "period (frames)".into(),
        [a] if a == "load" || a == "scenario" => format!("{a} (workload)"),
        _ => format!("{} (category)", axes.join("/")),
    }
}

/// The y axis name of a table's value path, e.g. `event_latency.mean` -> `event
/// latency, mean`, `response_time.misses` -> `missed deadlines of response time`.
fn y_name(t: &PaperTable) -> String {
    let (metric, stat) = t.value.split_once('.').unwrap_or((&t.value, ""));
    let metric = crate::words::metric_name(metric);
    let stat = match stat {
        "p50" => "median".to_string(),
        "p90" => "90th percentile".into(),
        "p99" => "99th percentile".into(),
        "p999" => "99.9th percentile".into(),
        "p9999" => "99.99th percentile".into(),
        "stdev" => "standard deviation".into(),
        "max" => "maximum".into(),
        "min" => "minimum".into(),
        "misses" => return format!("missed deadlines of {metric}"),
        other => other.replace(['_', '.'], " "),
    };
    let name = if stat.is_empty() {
        metric
    } else {
        format!("{metric}, {stat}")
    };
    match t.aggregate.as_str() {
        "min" => format!("{name}, smallest"),
        _ => name,
    }
}

/// Who published a table's values: its caption up to the first colon (or its panels,
/// ` (a) ...`), else "the study".
fn study_name(t: &PaperTable) -> String {
    t.caption
        .as_deref()
        .and_then(|c| c.split(':').next())
        .and_then(|c| c.split(" (a)").next())
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or("the study")
        .to_string()
}

/// A value of the table in words, for a hover title.
fn fmt_value(t: &PaperTable, values: &PaperValues, v: f64) -> String {
    match values {
        PaperValues::Time => crate::units::fmt_ns(v),
        PaperValues::Count if v >= 0.0 && v.fract() == 0.0 => crate::units::fmt_count(v as u64),
        PaperValues::Count => t.fmt(v),
        PaperValues::Plain(u) if u.is_empty() => t.fmt(v),
        PaperValues::Plain(u) => format!("{} {u}", t.fmt(v)),
    }
}

/// How repeats combine, for a hover title ("mean of 5 runs").
fn made_of(t: &PaperTable, cell: &TableCell) -> String {
    let how = match t.aggregate.as_str() {
        "sum" => "sum",
        "max" => "largest",
        "min" => "smallest",
        _ => "mean",
    };
    let runs = if cell.runs == 1 { "run" } else { "runs" };
    format!("{how} of {} {runs}", cell.runs)
}

/// A table seen as a grid: categories along x, columns as series, and the cell of
/// (category, column).
struct Grid<'a> {
    categories: Vec<String>,
    /// The axis along x.
    x_axis: String,
    columns: Vec<String>,
    cell: Box<dyn Fn(usize, usize) -> &'a TableCell + 'a>,
}

/// The table's grid: rows along x, unless the table has one row axis and one column
/// axis with at least as many labels (loads, scenarios), which then run along x.
fn grid(t: &PaperTable) -> (Grid<'_>, String) {
    let rows: Vec<String> = t.rows.iter().map(|(l, _)| l.join(" ")).collect();
    let columns = t.column_labels();
    let turn = t.row_axes.len() == 1 && t.column_axes.len() == 1 && columns.len() >= rows.len();
    if turn {
        let label = x_label(&[t.column_axes[0].0.clone()]);
        let g = Grid {
            x_axis: t.column_axes[0].0.clone(),
            categories: columns,
            columns: rows,
            cell: Box::new(move |x, s| &t.rows[s].1[x]),
        };
        (g, label)
    } else {
        let order = pair_order(&rows);
        let g = Grid {
            x_axis: t.row_axes.join("/"),
            categories: order.iter().map(|&i| rows[i].clone()).collect(),
            columns: if t.column_axes.is_empty() {
                vec![String::new()]
            } else {
                columns
            },
            cell: Box::new(move |x, s| &t.rows[order[x]].1[s]),
        };
        (g, x_label(&t.row_axes))
    }
}

/// The order the studies drew buffer/period pairs in (`128/16`, `128/32`, `256/32`: by
/// period, then buffer) when every label is such a pair; else the labels' own order.
fn pair_order(labels: &[String]) -> Vec<usize> {
    let pair = |l: &str| {
        let (buffer, period) = l.split_once('/')?;
        Some((
            period.trim().parse::<u64>().ok()?,
            buffer.trim().parse::<u64>().ok()?,
        ))
    };
    let mut order: Vec<usize> = (0..labels.len()).collect();
    if labels.iter().all(|l| pair(l).is_some()) {
        order.sort_by_key(|&i| pair(&labels[i]));
    }
    order
}

/// The colour and shape of series column `s` of `n`: a colour per column while they
/// last; past eight columns of two or more column axes, a colour per label of the
/// innermost axis and a shape per combination of the others.
fn look(t: &PaperTable, n: usize, s: usize) -> (usize, usize) {
    match t.column_axes.last() {
        Some((_, inner)) if n > 8 && t.column_axes.len() >= 2 && !inner.is_empty() => {
            (s % inner.len() % 8, s / inner.len() % 4)
        }
        _ => (s % 8, 0),
    }
}

/// The spec of one paper table's figure (`index`: the table's place in the plan, for the
/// id), or none when the study published no number for it.
pub fn figure_spec(t: &PaperTable, index: usize, deadline_ns: Option<f64>) -> Option<PaperFigure> {
    let any_published = t.rows.iter().any(|(_, cells)| {
        cells
            .iter()
            .any(|c| c.published.as_ref().and_then(published_number).is_some())
    });
    if !any_published {
        return None;
    }
    let values = match (ns_per(&t.unit), t.aggregate.as_str()) {
        (Some(_), _) => PaperValues::Time,
        (None, "sum") if t.unit.is_empty() => PaperValues::Count,
        _ => PaperValues::Plain(t.unit.clone()),
    };
    let to_value = |v: f64| v * ns_per(&t.unit).unwrap_or(1.0);
    let study = study_name(t);
    let (g, x_label) = grid(t);
    let mut series = Vec::new();
    for (s, column) in g.columns.iter().enumerate() {
        let (colour, shape) = look(t, g.columns.len(), s);
        let name = |who: &str| {
            if column.is_empty() {
                who.to_string()
            } else {
                format!("{column} ({who})")
            }
        };
        let at = |x: usize| {
            let c = &g.categories[x];
            match (column.is_empty(), c.is_empty()) {
                (true, _) => c.clone(),
                (false, true) => column.clone(),
                (false, false) => format!("{column} at {c}"),
            }
        };
        let ours: Vec<PaperPoint> = (0..g.categories.len())
            .filter_map(|x| {
                let cell = (g.cell)(x, s);
                let v = to_value(cell.value?);
                let spread = cell
                    .spread
                    .map(|sd| format!(", sd {}", fmt_value(t, &values, to_value(sd))))
                    .unwrap_or_default();
                Some(PaperPoint {
                    category: x,
                    value: v,
                    title: format!(
                        "{}: {} (here: {}{spread})",
                        at(x),
                        fmt_value(t, &values, v),
                        made_of(t, cell)
                    ),
                })
            })
            .collect();
        let theirs: Vec<PaperPoint> = (0..g.categories.len())
            .filter_map(|x| {
                let (v, approx) = published_number((g.cell)(x, s).published.as_ref()?)?;
                let v = to_value(v);
                Some(PaperPoint {
                    category: x,
                    value: v,
                    title: format!(
                        "{}: {}{} ({study})",
                        at(x),
                        if approx { "about " } else { "" },
                        fmt_value(t, &values, v)
                    ),
                })
            })
            .collect();
        if !ours.is_empty() {
            series.push(PaperSeries {
                label: name("here"),
                column: column.clone(),
                colour,
                shape,
                ours: true,
                points: ours,
            });
        }
        if !theirs.is_empty() {
            series.push(PaperSeries {
                label: name(&study),
                column: column.clone(),
                colour,
                shape,
                ours: false,
                points: theirs,
            });
        }
    }
    let all: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.value))
        .chain(deadline_ns.filter(|_| values == PaperValues::Time))
        .collect();
    let lo = all.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = all.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let y_log = lo > 0.0 && hi / lo > 30.0;
    let caption = caption(t, &series, &study, y_log);
    Some(PaperFigure {
        id: format!("fig-paper-{index}-{}", slug(&t.title)),
        title: t.title.clone(),
        caption,
        x_label,
        ordered: ["buffer", "period", "load", "scenario"].contains(&g.x_axis.as_str()),
        categories: g.categories,
        y_name: y_name(t),
        values: values.clone(),
        y_log,
        series,
        deadline_ns: deadline_ns.filter(|_| values == PaperValues::Time),
        study,
    })
}

/// A paper figure's caption: the study's caption, whether anything was measured, how to
/// read the two kinds of series.
fn caption(t: &PaperTable, series: &[PaperSeries], study: &str, y_log: bool) -> String {
    let mut caption: Vec<String> = t.caption.iter().map(|c| format!("{c}.")).collect();
    if !series.iter().any(|s| s.ours) {
        caption.push("Nothing of this table was measured here: the study's values alone.".into());
    }
    // Why ours has no point where it has none ("Not run here: ...").
    for note in t.notes() {
        let mut chars = note.chars();
        let first = chars.next().map(|c| c.to_uppercase().collect::<String>());
        caption.push(format!("{}{}.", first.unwrap_or_default(), chars.as_str()));
    }
    caption.push(format!(
        "Ours (here) solid with filled points, {study} dashed with hollow points{}; hover a \
         point for its exact value, click a legend entry to hide it.",
        match t.column_axes.split_last() {
            _ if series.iter().all(|s| s.column.is_empty()) => String::new(),
            Some(((inner, _), outer)) if series.iter().any(|s| s.shape > 0) => format!(
                ", one colour per {inner} and one point shape per {}",
                outer
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join("/")
            ),
            _ => ", one colour per column of the table".to_string(),
        }
    ));
    if y_log {
        caption.push("The y axis is logarithmic.".into());
    }
    caption.join(" ")
}

/// A spec drawn as one `<svg class="plot">` (the page's plot contract), or none when it
/// has no point to draw.
pub fn render(figure: &PaperFigure) -> Option<String> {
    svg::render(figure)
}

/// Lower-case letters and digits of `s`, runs of anything else as one `-` (at most 40
/// characters).
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
        if out.len() >= 40 {
            break;
        }
    }
    out.trim_end_matches('-').to_string()
}

mod svg;
#[cfg(test)]
mod tests;
