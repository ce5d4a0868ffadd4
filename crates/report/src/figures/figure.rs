//! What a figure is, with the limits every figure keeps. A leaf: it imports no other
//! module of `figures`.

/// One figure of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// The `id` of its `<figure>` (`fig-...`), unique in the report.
    pub id: String,
    /// Its title (also inside the SVG).
    pub title: String,
    /// How to read it, as plain text.
    pub caption: String,
    /// The plot ([`plots::Plot::svg`]).
    pub svg: String,
}

/// Lines a plot tells apart by colour.
pub const MAX_LINES: usize = 8;
/// Latency-against-time figures per report (per label, its run with the most
/// under-runs, xruns and deadline misses).
pub const MAX_TIME_PLOTS: usize = 6;
/// Events of one kind marked one by one on a latency-against-time figure; a kind with
/// more is counted in the caption instead (a wall of lines hides the latency).
pub const MAX_MARKS_PER_KIND: usize = 100;
/// Bins per decade of a histogram's latency axis.
pub const BINS_PER_DECADE: u32 = 20;

/// An `id`'s words: lower case, runs of anything else as one `-`.
pub(crate) fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect::<String>()
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}
