//! Plots as inline SVG, drawn by our own small writer: percentile distributions
//! (HdrHistogram's plot), histograms on log axes, latency against time with its events
//! marked, and x/y plots over sweeps.
//!
//! The contract with the page ([`crate::html`]): a plot is one `<svg class="plot">`
//! with a `viewBox` and `width="100%"` (it scales down to narrow pages), axis labels that
//! name their unit (`latency (ms)`), series in `<g class="series s{i}" data-series=..>`,
//! legend items that toggle them ([`SCRIPT`]), and a `<title>` with the exact value on
//! everything a user can hover. The SVG holds no colour: [`CSS`] colours it from the
//! page's variables (`--fg`, `--grid`, `--s0`..`--s7`), so dark mode and print work.
//!
//! ```
//! use report::plots::{Axis, Plot, Scale, Series};
//! let mut plot = Plot::new(
//!     "wake-up latency",
//!     Axis::duration("time since start", Scale::Linear),
//!     Axis::duration("latency", Scale::Linear),
//! );
//! plot.series.push(Series::line("max per block", vec![(0.0, 20e3), (1e9, 45e3)]));
//! let svg = plot.svg().unwrap();
//! assert!(svg.contains("latency (us)") && svg.contains("time since start (s)"));
//! ```

mod axis;
pub mod hist;
mod model;
mod svg;
pub(crate) use svg::legend_rows;
#[cfg(test)]
mod tests;

pub use axis::{
    duration_unit, fmt_number, fmt_percentile, nice_step, percentile_position, Axis, Quantity,
    Scale, Tick,
};
pub use model::{Bar, BarPart, Mark, Plot, RefLine, Series, Style, Window, TIPS_PER_LINE};

impl Plot {
    /// The plot as one `<svg>` element, or `None` when no series has a point the axes
    /// can show (nothing to plot is no plot).
    pub fn svg(&self) -> Option<String> {
        svg::render(self)
    }
}

/// The plot rules for the page's `<style>`: colours only from the page's variables
/// (`--fg`, `--grid`, `--s0`..`--s7`; marks use `--fail`, `--warn` and `--window`), each
/// with a fallback mid-tone readable on light and dark backgrounds. A page with stacked
/// bars adds [`BARS_CSS`].
pub const CSS: &str = r#"
svg.plot { display: block; width: 100%; height: auto; max-width: 100%; background: transparent; }
svg.plot text { fill: var(--fg, currentColor); font-family: system-ui, -apple-system, "Segoe UI", sans-serif; font-size: 13px; }
svg.plot .title { font-size: 16px; font-weight: 600; }
svg.plot .axis-label { font-size: 14px; }
svg.plot .tick { font-size: 12.5px; }
svg.plot .grid line { stroke: var(--grid, rgba(128, 128, 128, .3)); stroke-width: 1; }
svg.plot .grid line.minor { stroke-dasharray: 2 4; opacity: .6; }
svg.plot .axis line { stroke: var(--fg, currentColor); stroke-width: 1; }
svg.plot .s0 { color: var(--s0, #1f77b4); } svg.plot .s1 { color: var(--s1, #d62728); }
svg.plot .s2 { color: var(--s2, #2ca02c); } svg.plot .s3 { color: var(--s3, #ff7f0e); }
svg.plot .s4 { color: var(--s4, #9467bd); } svg.plot .s5 { color: var(--s5, #8c564b); }
svg.plot .s6 { color: var(--s6, #e377c2); } svg.plot .s7 { color: var(--s7, #17becf); }
svg.plot .series .line { fill: none; stroke: currentColor; stroke-width: 2; stroke-linejoin: round; }
svg.plot .series .dot, svg.plot .series .max { fill: currentColor; stroke: none; }
svg.plot .series .line.dashed { stroke-dasharray: 7 4; }
svg.plot .series .dot.hollow { fill: var(--bg, Canvas); stroke: currentColor; stroke-width: 2; }
svg.plot .series .tip { fill: currentColor; fill-opacity: 0; stroke: none; pointer-events: all; }
svg.plot .series .tip:hover, svg.plot .series .dot:hover { fill-opacity: 1; stroke: var(--fg, currentColor); stroke-width: 1; }
svg.plot .series.off, svg.plot .ref.off { display: none; }
svg.plot .legend-item { cursor: pointer; }
svg.plot .legend-item .swatch { fill: currentColor; }
svg.plot .legend-item:focus { outline: none; }
svg.plot .legend-item:focus .swatch { stroke: var(--fg, currentColor); stroke-width: 2; }
svg.plot .legend-item.off { opacity: .4; }
svg.plot .legend-item.off text { text-decoration: line-through; }
svg.plot .ref line { stroke: var(--fg, currentColor); stroke-width: 1.5; stroke-dasharray: 7 4; }
svg.plot .ref text { font-size: 12.5px; paint-order: stroke; stroke: var(--bg, Canvas); stroke-width: 4px; stroke-linejoin: round; }
svg.plot .mark { stroke-width: 1.5; stroke-dasharray: 5 3; pointer-events: stroke; }
svg.plot .key line { stroke-dasharray: 5 3; }
svg.plot .mark.underrun, svg.plot .mark.xrun, svg.plot .mark.miss, svg.plot .key.underrun line, svg.plot .key.xrun line, svg.plot .key.miss line { stroke: var(--fail, #e0453a); }
svg.plot .mark.overflow, svg.plot .mark.skipped, svg.plot .key.overflow line, svg.plot .key.skipped line { stroke: var(--warn, #d98a00); }
svg.plot .mark.load_exit, svg.plot .key.load_exit line { stroke: var(--fg, currentColor); stroke-dasharray: 3 3; }
svg.plot .window, svg.plot .key .window-swatch { fill: var(--window, rgba(140, 140, 160, .28)); stroke: none; }
@media print { svg.plot .tip { display: none; } svg.plot { break-inside: avoid; } }
"#;

/// The rules for stacked bars ([`Bar`]), for a page that has them: a part's colour by its
/// kind, `--cause-KIND` (`thread`, `irq`, `softirq`, `self`, `blocked`, `idle_exit`,
/// `steal`, `unaccounted`), hues apart from the series' first three so that a bar is not
/// read as a line, each with a fallback mid-tone readable on light and dark backgrounds.
/// Apart from [`CSS`] so that a page without bars is the page it was.
pub const BARS_CSS: &str = r#"
svg.plot .bar .part, svg.plot .bar-key .part { fill: var(--cause-other, #8c8c96); stroke: var(--bg, Canvas); stroke-width: .5; }
svg.plot .part.thread { fill: var(--cause-thread, #8e5cc4); } svg.plot .part.irq { fill: var(--cause-irq, #e6a100); }
svg.plot .part.softirq { fill: var(--cause-softirq, #e377c2); } svg.plot .part.self { fill: var(--cause-self, #17becf); }
svg.plot .part.blocked { fill: var(--cause-blocked, #6b8e23); } svg.plot .part.idle_exit { fill: var(--cause-idle_exit, #c7b299); }
svg.plot .part.steal { fill: var(--cause-steal, #8c564b); } svg.plot .part.unaccounted { fill: var(--cause-unaccounted, #9a9aa2); }
svg.plot .bar:hover .part { stroke: var(--fg, currentColor); stroke-width: 1; }
"#;

/// The page's one script for plots: a click, or Enter, on a legend item toggles its
/// series (and the legend item) in that plot. Nothing else: no network, no eval.
pub const SCRIPT: &str = r#"(function () {
  function toggle(item) {
    var svg = item.closest('svg');
    if (!svg) return;
    var name = item.getAttribute('data-series');
    var off = !item.classList.contains('off');
    svg.querySelectorAll('[data-series]').forEach(function (n) {
      if (n.getAttribute('data-series') === name) n.classList.toggle('off', off);
    });
    item.setAttribute('aria-pressed', off ? 'false' : 'true');
  }
  document.addEventListener('click', function (e) {
    var item = e.target.closest && e.target.closest('svg.plot .legend-item');
    if (item) toggle(item);
  });
  document.addEventListener('keydown', function (e) {
    if (e.key !== 'Enter') return;
    var item = e.target.closest && e.target.closest('svg.plot .legend-item');
    if (item) { e.preventDefault(); toggle(item); }
  });
})();"#;
