//! Plots as inline SVG, drawn by the `plotters` library: histograms with a logarithmic
//! count axis (the Tessellation and OSADL style) and x/y plots (latency against time,
//! the latencytest style; latency and DSP load against buffer size).

use plotters::prelude::*;
use results::LatencyHistogram;

/// A named series of points.
#[derive(Debug, Clone)]
pub struct XySeries {
    /// Legend label.
    pub label: String,
    /// Points (x, y).
    pub points: Vec<(f64, f64)>,
    /// Joined by lines (else points only).
    pub lines: bool,
}

const WIDTH: u32 = 760;
const HEIGHT: u32 = 340;

fn color(i: usize) -> RGBColor {
    const COLORS: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(23, 190, 207),
    ];
    COLORS[i % COLORS.len()]
}

fn range(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if lo > hi {
        return None;
    }
    let pad = if hi > lo {
        (hi - lo) * 0.05
    } else {
        lo.abs().max(1.0) * 0.1
    };
    Some((lo - pad, hi + pad))
}

/// Counts of a histogram in `bins` equal bins from `lo` to `hi` (ns), as (bin centre in
/// ms, count).
pub fn binned(h: &LatencyHistogram, lo: f64, hi: f64, bins: usize) -> Vec<(f64, f64)> {
    let width = ((hi - lo) / bins as f64).max(1.0);
    let mut counts = vec![0u64; bins];
    for v in h.hdr().iter_recorded() {
        let x = v.value_iterated_to() as f64;
        let i = (((x - lo) / width).floor().max(0.0) as usize).min(bins - 1);
        counts[i] += v.count_at_value();
    }
    counts
        .into_iter()
        .enumerate()
        .map(|(i, c)| ((lo + (i as f64 + 0.5) * width) / 1e6, c as f64))
        .collect()
}

/// The outline of a histogram: each bin's count across its width, empty bins on the
/// floor of the logarithmic axis (below 1).
fn staircase(bins: &[(f64, f64)], width: f64) -> Vec<(f64, f64)> {
    const FLOOR: f64 = 0.8;
    let mut out = Vec::with_capacity(bins.len() * 2);
    for &(centre, count) in bins {
        let y = if count > 0.0 { count } else { FLOOR };
        out.push((centre - width / 2.0, y));
        out.push((centre + width / 2.0, y));
    }
    out
}

/// Histograms (latency in ms, logarithmic count), one outline per labelled histogram.
pub fn histograms(title: &str, hists: &[(String, &LatencyHistogram)]) -> Option<String> {
    let with_data: Vec<&(String, &LatencyHistogram)> =
        hists.iter().filter(|(_, h)| h.count() > 0).collect();
    let lo = with_data
        .iter()
        .map(|(_, h)| h.min() as f64)
        .fold(f64::MAX, f64::min);
    let hi = with_data
        .iter()
        .map(|(_, h)| h.max() as f64)
        .fold(f64::MIN, f64::max);
    if with_data.is_empty() || hi < lo || hi.is_nan() || lo.is_nan() {
        return None;
    }
    // A constant sample still gets a bar of some width around it.
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        (lo - lo.max(1_000.0) * 0.01, hi + hi.max(1_000.0) * 0.01)
    };
    const BINS: usize = 120;
    let width_ms = (hi - lo) / BINS as f64 / 1e6;
    let series: Vec<XySeries> = with_data
        .iter()
        .map(|(label, h)| XySeries {
            label: label.clone(),
            points: staircase(&binned(h, lo, hi, BINS), width_ms),
            lines: true,
        })
        .collect();
    xy(title, "latency (ms)", "count (log)", &series, true)
}

/// An x/y plot; `log_y` for a logarithmic y axis (counts).
pub fn xy(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[XySeries],
    log_y: bool,
) -> Option<String> {
    let (x0, x1) = range(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)))?;
    let (y0, y1) = range(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)))?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60);
        if log_y {
            let top = series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.1))
                .fold(1.0, f64::max)
                * 2.0;
            let mut chart = builder
                .build_cartesian_2d(x0..x1, (0.8f64..top).log_scale())
                .ok()?;
            draw(&mut chart, x_desc, y_desc, series)?;
        } else {
            let y0 = if y0 > 0.0 && y0 < (y1 - y0) { 0.0 } else { y0 };
            let mut chart = builder.build_cartesian_2d(x0..x1, y0..y1).ok()?;
            draw(&mut chart, x_desc, y_desc, series)?;
        }
        root.present().ok()?;
    }
    Some(svg)
}

/// The grid with its axis names, then each series and the legend.
fn draw<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    x_desc: &str,
    y_desc: &str,
    series: &[XySeries],
) -> Option<()>
where
    X: plotters::coord::ranged1d::Ranged<ValueType = f64>
        + plotters::coord::ranged1d::ValueFormatter<f64>,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64>
        + plotters::coord::ranged1d::ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .draw()
        .ok()?;
    for (i, s) in series.iter().enumerate() {
        let c = color(i);
        let anno = if s.lines {
            chart
                .draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))
                .ok()?
        } else {
            chart
                .draw_series(s.points.iter().map(move |p| Circle::new(*p, 3, c.filled())))
                .ok()?
        };
        anno.label(s.label.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 4), (x + 14, y + 4)], c.filled()));
    }
    if series.len() > 1 || series.iter().any(|s| !s.label.is_empty()) {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .ok()?;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_plot_is_svg_with_its_title_and_a_log_axis() {
        let mut h = LatencyHistogram::new(100_000_000).unwrap();
        for v in [1_000_000u64, 1_100_000, 1_100_000, 5_000_000] {
            h.record(v);
        }
        let svg = histograms("wake-up latency", &[("idle".into(), &h)]).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("wake-up latency"));
        assert!(svg.contains("count (log)"));
        // Binning keeps every sample.
        let total: f64 = binned(&h, 1e6, 5e6, 10).iter().map(|p| p.1).sum();
        assert_eq!(total, 4.0);
    }

    #[test]
    fn nothing_to_plot_is_no_plot() {
        assert!(xy("t", "x", "y", &[], false).is_none());
        let h = LatencyHistogram::new(1_000_000).unwrap();
        assert!(histograms("t", &[("a".into(), &h)]).is_none());
    }
}
