use results::LatencyHistogram;

use super::hist::{log_bins, percentile_curve};
use super::*;

fn hist(values: &[u64]) -> LatencyHistogram {
    let mut h = LatencyHistogram::new(100_000_000).unwrap();
    for &v in values {
        h.record(v);
    }
    h
}

#[test]
fn the_percentile_axis_puts_90_at_1_and_99_9_at_3() {
    assert!((percentile_position(0.9) - 1.0).abs() < 1e-9);
    assert!((percentile_position(0.999) - 3.0).abs() < 1e-9);
    assert_eq!(percentile_position(0.0), 0.0);
    assert!(percentile_position(1.0).is_finite());
    let axis = Axis::percentile();
    let labels: Vec<String> = axis
        .ticks(0.0, 3.4)
        .into_iter()
        .filter_map(|t| t.label)
        .collect();
    assert_eq!(labels, ["0%", "90%", "99%", "99.9%"]);
    assert_eq!(fmt_percentile(0.99999), "99.999%");
}

#[test]
fn ticks_step_by_one_two_five_and_label_in_the_axis_unit() {
    assert_eq!(nice_step(0.7), 1.0);
    assert_eq!(nice_step(1.3), 2.0);
    assert_eq!(nice_step(3.0), 5.0);
    assert_eq!(nice_step(4_300.0), 5_000.0);
    // 0..26 ms, linear: ticks at every 5 ms, labelled in ms.
    let axis = Axis::duration("latency", Scale::Linear);
    let (lo, hi) = axis.range(&[0.0, 26e6]).unwrap();
    let ticks = axis.ticks(lo, hi);
    let labels: Vec<&str> = ticks.iter().filter_map(|t| t.label.as_deref()).collect();
    assert_eq!(labels, ["0", "5", "10", "15", "20", "25"]);
    assert_eq!(axis.label(hi), "latency (ms)");
    // 10 us .. 26 ms on a log axis: decades, in ms.
    let axis = Axis::duration("latency", Scale::Log);
    let (lo, hi) = axis.range(&[10e3, 26e6]).unwrap();
    let labels: Vec<String> = axis
        .ticks(lo, hi)
        .into_iter()
        .filter_map(|t| t.label)
        .collect();
    assert_eq!(labels, ["0.01", "0.1", "1", "10"]);
    assert_eq!(axis.label(10f64.powf(hi)), "latency (ms)");
    // Less than a decade still gets labels.
    let (lo, hi) = axis.range(&[20e3, 45e3]).unwrap();
    assert!(
        axis.ticks(lo, hi)
            .iter()
            .filter(|t| t.label.is_some())
            .count()
            >= 2
    );
    assert_eq!(fmt_number(12_000.0), "12\u{202F}000");
    assert_eq!(fmt_number(0.025), "0.025");
    assert_eq!(fmt_number(2.5), "2.5");
    assert_eq!(fmt_number(-12_345.6), "-12\u{202F}346");
}

#[test]
fn log_bins_keep_every_sample() {
    let values: Vec<u64> = (1..2_000u64).map(|i| i * i * 37 % 9_000_000 + 1).collect();
    let h = hist(&values);
    let bins = log_bins(&h, 20);
    assert_eq!(bins.iter().map(|b| b.count).sum::<u64>(), h.count());
    // Equal widths on a log axis, contiguous.
    for w in bins.windows(2) {
        assert!((w[0].hi_ns - w[1].lo_ns).abs() < 1e-6 * w[1].lo_ns);
        assert!(((w[0].hi_ns / w[0].lo_ns) - (w[1].hi_ns / w[1].lo_ns)).abs() < 1e-9);
    }
    // Overflows are counted by the histogram, not binned.
    let mut h = LatencyHistogram::new(1_000_000).unwrap();
    for v in [10_000, 20_000, 5_000_000] {
        h.record(v);
    }
    assert_eq!(log_bins(&h, 10).iter().map(|b| b.count).sum::<u64>(), 2);
    assert!(log_bins(&LatencyHistogram::new(1_000).unwrap(), 10).is_empty());
}

#[test]
fn the_percentile_curve_rises_to_the_max_at_the_last_rank() {
    let values: Vec<u64> = (1..=1_000u64).map(|i| 10_000 + i * 10).collect();
    let h = hist(&values);
    let curve = percentile_curve(&h);
    assert!(curve
        .windows(2)
        .all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
    let last = curve.last().unwrap();
    assert_eq!(last.1, h.max() as f64);
    assert!((percentile_position(last.0) - 3.0).abs() < 1e-9);
    // Above the bound only the maximum is known: the curve stops within the bound.
    let mut h = LatencyHistogram::new(50_000).unwrap();
    for i in 0..1_000u64 {
        h.record(if i % 10 == 0 { 2_000_000 } else { 20_000 + i });
    }
    let curve = percentile_curve(&h);
    assert!(curve.iter().all(|p| p.1 <= 50_000.0), "{curve:?}");
    assert!(percentile_position(curve.last().unwrap().0) < 1.0 + 1e-9);
}

fn two_series_plot() -> Plot {
    let mut plot = Plot::new(
        "wake-up <latency> & \"more\"",
        Axis::percentile(),
        Axis::duration("latency", Scale::Log),
    );
    plot.series.push(Series::line(
        "idle <a>",
        vec![(0.0, 20e3), (0.99, 40e3), (0.999, 90e3)],
    ));
    plot.series.push(Series::line(
        "cpu & io",
        vec![(0.0, 30e3), (0.99, 60e3), (0.999, 2e6)],
    ));
    plot.refs.push(RefLine {
        y: 2.67e6,
        label: "deadline 2.67 ms".into(),
    });
    plot
}

#[test]
fn an_svg_names_its_units_holds_no_colour_and_escapes_its_text() {
    let svg = two_series_plot().svg().unwrap();
    assert!(svg.starts_with("<svg class=\"plot\" viewBox=\"0 0 760 "));
    assert!(svg.contains("width=\"100%\""));
    assert!(
        svg.contains("role=\"img\" aria-label=\"wake-up &lt;latency&gt; &amp; &quot;more&quot;\"")
    );
    assert!(svg.contains("<text class=\"axis-label x\""));
    assert!(svg.contains(">percentile (log of 1/(1-p))</text>"));
    assert!(svg.contains(">latency (ms)</text>"));
    assert!(svg.contains("<g class=\"series s0\" data-series=\"idle &lt;a&gt;\">"));
    assert!(svg.contains("<g class=\"series s1\" data-series=\"cpu &amp; io\">"));
    assert!(svg.contains("<g class=\"legend-item s1\" data-series=\"cpu &amp; io\" tabindex=\"0\""));
    assert!(svg.contains(">deadline 2.67 ms</text>"));
    assert!(svg.contains("<title>"));
    for fixed in [
        "fill=\"#",
        "stroke=\"#",
        "fill=\"rgb",
        "stroke=\"rgb",
        "style=",
        "http",
    ] {
        assert!(!svg.contains(fixed), "{fixed} in {svg}");
    }
    assert!(!svg.contains("idle <a>") && !svg.contains("cpu & io"));
    // The page's CSS colours series from variables only.
    assert!(CSS.contains("var(--s7") && CSS.contains("var(--grid") && CSS.contains("var(--fg"));
    assert!(!SCRIPT.contains("http") && !SCRIPT.contains("eval") && !SCRIPT.contains("fetch"));
}

#[test]
fn one_series_has_no_legend_and_nothing_to_draw_is_no_plot() {
    let mut plot = two_series_plot();
    plot.series.truncate(1);
    let svg = plot.svg().unwrap();
    assert!(!svg.contains("legend-item"));
    let empty = Plot::new(
        "t",
        Axis::percentile(),
        Axis::duration("latency", Scale::Log),
    );
    assert!(empty.svg().is_none());
    // Only values a log axis cannot show: no plot.
    let mut zeros = empty.clone();
    zeros.series.push(Series::line("a", vec![(0.5, 0.0)]));
    assert!(zeros.svg().is_none());
}

#[test]
fn marks_and_windows_are_drawn_with_their_text_and_keyed() {
    let mut plot = Plot::new(
        "latency over time",
        Axis::duration("time since start", Scale::Linear),
        Axis::duration("latency", Scale::Linear),
    );
    plot.series.push(Series::line(
        "max per block",
        vec![(0.0, 20e3), (2e9, 30e3)],
    ));
    plot.marks.push(Mark {
        x: 1e9,
        kind: "underrun".into(),
        text: "under-run at 1.00 s".into(),
    });
    plot.windows.push(Window {
        x0: 0.5e9,
        x1: 0.6e9,
        kind: "steal".into(),
        text: "host steal 3.0 ms".into(),
    });
    plot.mark_names
        .push(("underrun".into(), "under-run".into()));
    let svg = plot.svg().unwrap();
    assert!(svg.contains("<line class=\"mark underrun\""));
    assert!(svg.contains("<title>under-run at 1.00 s</title>"));
    assert!(svg.contains("<rect class=\"window steal\""));
    assert!(svg.contains(">under-run (1)</text>"));
    assert!(svg.contains(">host steal</text>"));
    assert!(svg.contains(">time since start (s)</text>"));
    assert!(svg.contains(">latency (us)</text>"));
}

#[test]
fn published_values_are_a_dashed_line_with_hollow_dots() {
    let mut plot = Plot::new(
        "mean latency against the buffer",
        Axis::duration("buffer", Scale::Linear),
        Axis::duration("mean latency", Scale::Linear),
    );
    plot.series
        .push(Series::dots("ours", vec![(1e6, 3e6), (2e6, 5e6)], true));
    let mut published = Series::dots("published", vec![(1e6, 3.5e6), (2e6, 6e6)], true);
    published.style = Style::Published;
    plot.series.push(published);
    let svg = plot.svg().unwrap();
    assert!(svg.contains("<path class=\"line dashed\""));
    assert_eq!(svg.matches("class=\"dot hollow\"").count(), 2);
    assert_eq!(svg.matches("class=\"dot\"").count(), 2);
}

#[test]
fn a_sweep_line_goes_through_the_mean_at_each_x_and_close_deadlines_alternate_sides() {
    let mut plot = Plot::new(
        "sweep",
        Axis::duration("buffer", Scale::Linear),
        Axis::duration("latency", Scale::Linear),
    );
    // Two repeats at 2 ms, out of order.
    plot.series.push(Series::dots(
        "ours",
        vec![(2e6, 4e6), (1e6, 2e6), (2e6, 6e6)],
        true,
    ));
    plot.refs = vec![
        RefLine {
            y: 7e6,
            label: "a".into(),
        },
        RefLine {
            y: 7.1e6,
            label: "b".into(),
        },
    ];
    let svg = plot.svg().unwrap();
    let d = &svg[svg.find("<path class=\"line\" d=\"").unwrap() + 23..];
    let d = &d[..d.find('"').unwrap()];
    assert_eq!(d.matches('L').count(), 1, "{d}");
    assert_eq!(svg.matches("class=\"dot\"").count(), 3);
    assert!(svg.contains("text-anchor=\"start\">a</text>"));
    assert!(svg.contains("text-anchor=\"end\">b</text>"));
}

#[test]
fn a_log_count_axis_has_no_tick_below_one() {
    let axis = Axis::log_count("count");
    let (lo, hi) = axis.range(&[1.0, 6.0]).unwrap();
    let ticks = axis.ticks(lo, hi);
    assert!(!ticks.is_empty());
    assert!(ticks.iter().all(|t| t.at >= 1.0), "{ticks:?}");
    assert!(ticks.iter().any(|t| t.label.as_deref() == Some("1")));
}

#[test]
fn a_short_log_latency_axis_shows_at_least_three_labels() {
    let axis = Axis::duration("latency", Scale::Log);
    // 12 to 30 ms: between the decade ticks only 20 and 30 ms would be labelled.
    let (lo, hi) = axis.range(&[12e6, 30e6]).unwrap();
    let ticks = axis.ticks(lo, hi);
    let labelled: Vec<&Tick> = ticks.iter().filter(|t| t.label.is_some()).collect();
    assert!(labelled.len() >= 3, "{ticks:?}");
    assert!(labelled.iter().all(|t| (lo..=hi).contains(&t.at.log10())));
    // Some label above 10 ms, in ms.
    assert!(labelled
        .iter()
        .any(|t| t.at > 10e6 && t.label.as_deref() != Some("")));
}

#[test]
fn a_bar_s_parts_share_its_height_as_their_values_share_its_sum() {
    use super::{Bar, BarPart};
    let mut plot = Plot::new(
        "bars",
        Axis::duration("time since start", Scale::Linear),
        Axis::duration("latency", Scale::Linear),
    );
    plot.series
        .push(Series::line("max", vec![(0.0, 0.0), (10e9, 4e6)]));
    plot.bars.push(Bar {
        x: 5e9,
        top: 4e6,
        parts: vec![
            BarPart {
                kind: "thread".into(),
                value: 3e6,
            },
            BarPart {
                kind: "a\"b".into(),
                value: 1e6,
            },
        ],
        text: "4 ms <late>".into(),
    });
    plot.bar_names = vec![("thread".into(), "thread".into())];
    let svg = plot.svg().unwrap();
    let bar = &svg[svg.find("<g class=\"bar\">").unwrap()..];
    let bar = &bar[..bar.find("</g>").unwrap()];
    let heights: Vec<f64> = bar
        .match_indices("height=\"")
        .map(|(i, _)| {
            let rest = &bar[i + 8..];
            rest[..rest.find('"').unwrap()].parse().unwrap()
        })
        .collect();
    assert_eq!(heights.len(), 2, "{bar}");
    assert!(
        (heights[0] / heights[1] - 3.0).abs() < 0.05,
        "{heights:?}\n{svg}"
    );
    assert!(svg.contains("<title>4 ms &lt;late&gt;</title>"), "{svg}");
    assert!(svg.contains("class=\"part a&quot;b\""), "{svg}");
    // The key: the named kinds first, then the others by their class.
    let thread = svg.find(">thread</text>").unwrap();
    let other = svg.find(">a&quot;b</text>").unwrap();
    assert!(thread < other, "{svg}");
}
