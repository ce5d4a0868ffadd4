//! What a plot is: its axes, series, reference lines, marks and windows, as data (drawn
//! by `svg`). A leaf beside `axis`: it imports no module of `plots` but `axis`.

use super::axis::Axis;

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// A line through the points in order.
    Line,
    /// A dot per point, each with its value on hover.
    Dots,
    /// A dot on each point and a line through the mean at each x, in x order (a sweep
    /// with repeats).
    LineDots,
    /// As [`Style::LineDots`] with a dashed line and hollow dots: values from elsewhere
    /// (a study's published figure) beside ours on the same axes.
    Published,
}

/// A named series of points (x, y) in the axes' values (ns for durations).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend label (and the `data-series` that toggles it).
    pub label: String,
    /// The points, in drawing order.
    pub points: Vec<(f64, f64)>,
    /// How it is drawn.
    pub style: Style,
    /// Where a user can hover for exact values, with the text shown: when empty, a
    /// line gets up to [`TIPS_PER_LINE`] evenly spread points with their x and y.
    pub tips: Vec<(f64, f64, String)>,
    /// Points marked with a visible dot and their text (the maximum of a distribution).
    pub marked: Vec<(f64, f64, String)>,
}

/// How many hover points a line gets when its series names none.
pub const TIPS_PER_LINE: usize = 60;

impl Series {
    /// A line.
    pub fn line(label: &str, points: Vec<(f64, f64)>) -> Series {
        Series {
            label: label.into(),
            points,
            style: Style::Line,
            tips: Vec::new(),
            marked: Vec::new(),
        }
    }

    /// Dots joined by a line when `joined` (a sweep), else dots.
    pub fn dots(label: &str, points: Vec<(f64, f64)>, joined: bool) -> Series {
        Series {
            style: if joined { Style::LineDots } else { Style::Dots },
            ..Series::line(label, points)
        }
    }
}

/// A horizontal reference line across the plot (a deadline), labelled on the plot.
#[derive(Debug, Clone, PartialEq)]
pub struct RefLine {
    /// Where (a y value).
    pub y: f64,
    /// Its label, e.g. `deadline 2.67 ms`.
    pub label: String,
}

/// A vertical mark at one x (an under-run, a deadline miss, an overflow).
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// Where (an x value).
    pub x: f64,
    /// Its kind, a CSS class (`underrun`, `xrun`, `miss`, `overflow`, `skipped`).
    pub kind: String,
    /// What a hover shows.
    pub text: String,
}

/// A shaded window between two x values (host steal).
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    /// Where it starts.
    pub x0: f64,
    /// Where it ends.
    pub x1: f64,
    /// Its kind, a CSS class (`steal`).
    pub kind: String,
    /// What a hover shows.
    pub text: String,
}

/// A stacked bar standing at one x (a deadline miss the kernel's trace explained): as
/// tall as `top`, split into its parts in proportion to their values, bottom first, so
/// that on a log axis too the parts keep their shares of the bar.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// Where (an x value).
    pub x: f64,
    /// How tall (a y value).
    pub top: f64,
    /// Its parts, bottom first.
    pub parts: Vec<BarPart>,
    /// What a hover shows (the whole bar, each part named).
    pub text: String,
}

/// One part of a [`Bar`].
#[derive(Debug, Clone, PartialEq)]
pub struct BarPart {
    /// Its kind, a CSS class (`irq`, `thread`, ...): one colour per kind in every bar.
    pub kind: String,
    /// Its value (the same unit as the bar's `top`).
    pub value: f64,
}

/// One plot: its title, axes, series and annotations.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    /// Title (also the SVG's `aria-label`).
    pub title: String,
    /// The horizontal axis.
    pub x: Axis,
    /// The vertical axis.
    pub y: Axis,
    /// The series, at most 8 told apart by colour (`s0`..`s7`; more repeat them).
    pub series: Vec<Series>,
    /// Horizontal reference lines (deadlines).
    pub refs: Vec<RefLine>,
    /// Vertical marks (events).
    pub marks: Vec<Mark>,
    /// Shaded windows (host steal).
    pub windows: Vec<Window>,
    /// Names of the mark kinds, for the key (`underrun` -> `under-run`); kinds not
    /// named are keyed by their class.
    pub mark_names: Vec<(String, String)>,
    /// Stacked bars (explained misses), drawn under the series.
    pub bars: Vec<Bar>,
    /// The bar parts' kinds and their names, in the key's order; a kind not listed is
    /// keyed by its class, after these.
    pub bar_names: Vec<(String, String)>,
}

impl Plot {
    /// An empty plot.
    pub fn new(title: &str, x: Axis, y: Axis) -> Plot {
        Plot {
            title: title.into(),
            x,
            y,
            series: Vec::new(),
            refs: Vec::new(),
            marks: Vec::new(),
            windows: Vec::new(),
            mark_names: Vec::new(),
            bars: Vec::new(),
            bar_names: Vec::new(),
        }
    }
}
