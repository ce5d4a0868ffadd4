use serde_json::json;

use super::*;
use crate::data::test_run;
use results::LatencyHistogram;

/// A measurement of each value ten times (a distribution needs
/// [`MIN_DISTRIBUTION_SAMPLES`]).
fn latency(metric: &str, values: &[u64], deadline: Option<f64>) -> Measurement {
    let mut h = LatencyHistogram::new(100_000_000).unwrap();
    for &v in values {
        for _ in 0..10 {
            h.record(v);
        }
    }
    let mut m = Measurement::from_histogram("jitter", metric, "test", h);
    m.deadline = deadline;
    m
}

fn cell(key: &str, run: RunData, source: Option<&str>) -> CellData {
    CellData {
        key: key.into(),
        axes: Default::default(),
        profile: "release".into(),
        status: Some(results::RunStatus::Complete),
        error: None,
        run: Some(run),
        source: source.map(str::to_string),
    }
}

fn jitter_run(values: &[u64]) -> RunData {
    test_run(
        "jitter",
        json!({}),
        vec![latency("wakeup_latency", values, None)],
    )
}

#[test]
fn a_run_gets_a_percentile_plot_and_a_histogram_with_units() {
    let data = ReportData {
        cells: vec![cell(
            "run 1",
            jitter_run(&[20_000, 25_000, 30_000, 2_000_000]),
            None,
        )],
        ..Default::default()
    };
    let figs = figures(&data);
    let ids: Vec<&str> = figs.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "fig-percentiles-wakeup-latency",
            "fig-histogram-wakeup-latency"
        ]
    );
    assert!(figs[0].svg.contains(">percentile (log of 1/(1-p))</text>"));
    assert!(figs[0].caption.contains("one sample in 100"));
    assert!(figs[1].svg.contains(">count (log)</text>"));
    assert!(figs[1].svg.contains(">wake-up latency (ms)</text>"));
    for f in &figs {
        assert!(f.svg.contains("<text class=\"axis-label x\""));
        assert!(f.svg.contains("<text class=\"axis-label y\""));
    }
}

#[test]
fn two_sources_overlay_two_series_on_the_same_axes() {
    let data = ReportData {
        cells: vec![
            cell("run 1", jitter_run(&[20_000, 30_000]), Some("run 1")),
            cell("run 2", jitter_run(&[40_000, 90_000]), Some("host b")),
        ],
        ..Default::default()
    };
    let figs = figures(&data);
    let p = figs
        .iter()
        .find(|f| f.id.starts_with("fig-percentiles"))
        .unwrap();
    assert!(p
        .svg
        .contains("<g class=\"series s0\" data-series=\"run 1\">"));
    assert!(p
        .svg
        .contains("<g class=\"series s1\" data-series=\"host b\">"));
    assert!(p
        .svg
        .contains("<g class=\"legend-item s1\" data-series=\"host b\""));
    assert!(p.caption.contains("One line per subject"));
}

#[test]
fn a_deadline_is_a_labelled_line() {
    let run = test_run(
        "net",
        json!({}),
        vec![latency(
            "response_time",
            &[100_000, 200_000],
            Some(2_666_667.0),
        )],
    );
    let data = ReportData {
        cells: vec![cell("run 1", run, None)],
        ..Default::default()
    };
    let figs = figures(&data);
    assert!(figs[0].svg.contains(">deadline 2.67 ms</text>"));
    assert!(figs[0].caption.contains("dashed line is the deadline"));
}

fn event_run(buffer_ms: f64, mean_ns: u64) -> RunData {
    test_run(
        "event",
        json!({"buffer_ms": buffer_ms, "dsp_load_percent_mean": 12.5}),
        vec![latency("event_latency", &[mean_ns, mean_ns], None)],
    )
}

#[test]
fn a_single_point_sweep_draws_nothing_and_two_points_draw_a_plot() {
    let one = ReportData {
        cells: vec![
            cell("a", event_run(2.0, 3_000_000), None),
            cell("b", event_run(2.0, 3_100_000), None),
        ],
        ..Default::default()
    };
    assert!(!figures(&one).iter().any(|f| f.id.starts_with("fig-sweep")));
    let two = ReportData {
        cells: vec![
            cell("a", event_run(2.0, 3_000_000), None),
            cell("b", event_run(4.0, 5_000_000), None),
        ],
        ..Default::default()
    };
    let figs = figures(&two);
    let lat = figs.iter().find(|f| f.id == "fig-sweep-latency").unwrap();
    assert!(lat.svg.contains(">playback buffer (ms)</text>"));
    assert!(lat.svg.contains(">mean event latency (ms)</text>"));
    let dsp = figs.iter().find(|f| f.id == "fig-sweep-dsp").unwrap();
    assert!(dsp.svg.contains(">DSP time (% of the period)</text>"));
}

#[test]
fn an_underrun_is_marked_on_latency_against_time_and_steal_shaded() {
    let mut run = jitter_run(&[20_000, 30_000]);
    // The blocks count from the first deadline, after the run's own start.
    run.record.started_mono_ns = 700_000_000;
    run.record.result = json!({"start_ns": 1_000_000_000u64});
    run.series.push(results::Series {
        name: "wakeup_latency_by_block".into(),
        unit: "ns".into(),
        columns: ["t_s", "cycles", "min_ns", "mean_ns", "max_ns"]
            .map(String::from)
            .to_vec(),
        rows: vec![
            vec![0.0, 100.0, 10e3, 20e3, 40e3],
            vec![1.0, 100.0, 10e3, 21e3, 45e3],
            vec![2.0, 100.0, 10e3, 22e3, 60e3],
        ],
    });
    run.events.push(results::Event {
        mono_ns: 2_500_000_000,
        kind: "underrun".into(),
        detail: json!({"cycle": 3}),
    });
    run.events.push(results::Event {
        mono_ns: 2_700_000_000,
        kind: "steal".into(),
        detail: json!({"steal_ns": 3_000_000}),
    });
    run.event_counts = vec![("underrun".into(), 1), ("steal".into(), 1)];
    let data = ReportData {
        cells: vec![cell("run 1", run, None)],
        ..Default::default()
    };
    let figs = figures(&data);
    let t = figs.iter().find(|f| f.id.starts_with("fig-time")).unwrap();
    assert!(t.svg.contains("<line class=\"mark underrun\""));
    assert!(t
        .svg
        .contains("deadline missed (the card would under-run) at 1.50 s"));
    assert!(t.svg.contains("<rect class=\"window steal\""));
    assert!(t.svg.contains(">time since start (s)</text>"));
    assert!(t.caption.contains("host steal"));
}

#[test]
fn incomplete_runs_and_empty_reports_have_no_figures() {
    assert!(figures(&ReportData::default()).is_empty());
    let mut c = cell("run 1", jitter_run(&[20_000]), None);
    c.status = Some(results::RunStatus::Failed);
    let data = ReportData {
        cells: vec![c],
        ..Default::default()
    };
    assert!(figures(&data).is_empty());
}

#[test]
fn too_many_events_of_a_kind_are_counted_not_drawn_as_a_wall() {
    let mut run = jitter_run(&[20_000, 30_000]);
    run.record.result = json!({"start_ns": 0});
    run.series.push(results::Series {
        name: "wakeup_latency_by_block".into(),
        unit: "ns".into(),
        columns: ["t_s", "cycles", "min_ns", "mean_ns", "max_ns"]
            .map(String::from)
            .to_vec(),
        rows: vec![
            vec![0.0, 10.0, 1e3, 2e3, 3e3],
            vec![1.0, 10.0, 1e3, 2e3, 4e3],
        ],
    });
    for i in 0..(MAX_MARKS_PER_KIND as u64 + 1) {
        run.events.push(results::Event {
            mono_ns: i * 1_000_000,
            kind: "overflow".into(),
            detail: json!({}),
        });
    }
    run.events.push(results::Event {
        mono_ns: 500_000_000,
        kind: "underrun".into(),
        detail: json!({}),
    });
    let data = ReportData {
        cells: vec![cell("run 1", run, None)],
        ..Default::default()
    };
    let figs = figures(&data);
    let t = figs.iter().find(|f| f.id.starts_with("fig-time")).unwrap();
    assert!(!t.svg.contains("mark overflow"));
    assert_eq!(t.svg.matches("<line class=\"mark underrun\"").count(), 1);
    assert!(t
        .caption
        .contains("Its 101 wake-ups above the histogram's bound are too many"));
}

#[test]
fn a_long_run_merges_its_blocks_into_at_most_a_thousand_steps() {
    let mut run = jitter_run(&[20_000, 30_000]);
    run.series.push(results::Series {
        name: "wakeup_latency_by_block".into(),
        unit: "ns".into(),
        columns: ["t_s", "cycles", "min_ns", "mean_ns", "max_ns"]
            .map(String::from)
            .to_vec(),
        rows: (0..2_500)
            .map(|i| {
                let max = if i == 1_234 { 9e6 } else { 40e3 };
                vec![f64::from(i) * 0.1, 100.0, 10e3, 20e3, max]
            })
            .collect(),
    });
    let data = ReportData {
        cells: vec![cell("run 1", run, None)],
        ..Default::default()
    };
    let figs = figures(&data);
    let t = figs.iter().find(|f| f.id.starts_with("fig-time")).unwrap();
    let max_series = &t.svg[t
        .svg
        .find("<g class=\"series s0\" data-series=\"max per block\">")
        .unwrap()..];
    let max_series = &max_series[..max_series.find("</g>").unwrap()];
    assert!(max_series.matches("<circle class=\"tip\"").count() <= 1_000);
    // The one slow block survives the merge.
    assert!(
        max_series.contains("max per block: 9.00 ms from"),
        "merged away"
    );
}

fn plan_cell(axes: &[(&str, &str)], run: RunData, source: Option<&str>) -> CellData {
    let mut c = cell(
        &axes
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join(" "),
        run,
        source,
    );
    c.axes = axes
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    c
}

fn plan(axes: &[(&str, &[&str])]) -> Option<serde_json::Value> {
    Some(json!({"axes": axes
        .iter()
        .map(|(n, l)| json!({"name": n, "labels": l}))
        .collect::<Vec<_>>()}))
}

fn series_labels(svg: &str) -> Vec<String> {
    svg.split("<g class=\"series s")
        .skip(1)
        .filter_map(|s| {
            let s = &s[s.find("data-series=\"")? + 13..];
            Some(s[..s.find('"')?].to_string())
        })
        .collect()
}

#[test]
fn lines_are_configurations_and_only_repeats_merge() {
    let mut cells = Vec::new();
    for buffer in ["128/64", "256/128"] {
        for repeat in ["1", "2"] {
            let values: &[u64] = if buffer == "128/64" {
                &[1_000_000, 2_000_000]
            } else {
                &[3_000_000, 6_000_000]
            };
            cells.push(plan_cell(
                &[("backend", "alsa"), ("buffer", buffer), ("repeat", repeat)],
                jitter_run(values),
                None,
            ));
        }
    }
    let data = ReportData {
        plan: plan(&[
            ("backend", &["alsa"]),
            ("buffer", &["128/64", "256/128"]),
            ("repeat", &["1", "2"]),
        ]),
        cells,
        ..Default::default()
    };
    let figs = figures(&data);
    let p = figs
        .iter()
        .find(|f| f.id.starts_with("fig-percentiles"))
        .unwrap();
    assert_eq!(series_labels(&p.svg), ["128/64", "256/128"]);
    assert!(p.caption.contains("128/64: 40 samples in 2 runs"));
    assert!(p.caption.contains("One line per configuration"));
}

#[test]
fn a_comparison_of_unlike_periods_draws_each_subject_and_period_with_its_deadline() {
    let run = |deadline: f64, period: u64| {
        let mut r = test_run(
            "jitter",
            json!({}),
            vec![latency(
                "wakeup_latency",
                &[100_000, 200_000],
                Some(deadline),
            )],
        );
        r.record.config = json!({"backend": "alsa", "period_frames": period});
        r
    };
    let data = ReportData {
        cells: vec![
            cell("run 1", run(1_333_333.0, 64), Some("A")),
            cell("run 2", run(5_333_333.0, 256), Some("A")),
            cell("run 3", run(1_333_333.0, 64), Some("B")),
        ],
        ..Default::default()
    };
    let figs = figures(&data);
    let p = figs
        .iter()
        .find(|f| f.id.starts_with("fig-percentiles"))
        .unwrap();
    let labels = series_labels(&p.svg);
    assert_eq!(labels.len(), 3, "{labels:?}");
    assert!(labels[0].starts_with("A: ") && labels[0].contains("alsa 64 frames"));
    assert!(labels[1].starts_with("A: ") && labels[1].contains("alsa 256 frames"));
    assert!(labels[2].starts_with("B: ") && labels[2].contains("alsa 64 frames"));
    // Each deadline names the lines it belongs to.
    assert!(p.svg.contains("deadline 5.33 ms (A: "));
    assert!(p.caption.contains("subject and configuration"));
}

#[test]
fn more_configurations_than_lines_name_the_ones_left_out_and_their_deadlines_go_too() {
    let cells: Vec<CellData> = (0..10)
        .map(|i| {
            let mut r = test_run(
                "jitter",
                json!({}),
                vec![latency(
                    "wakeup_latency",
                    &[100_000, 200_000],
                    Some(1e6 * f64::from(i + 1)),
                )],
            );
            r.record.config = json!({"backend": "alsa", "period_frames": 32 * (i + 1)});
            cell(&format!("run {i}"), r, None)
        })
        .collect();
    let data = ReportData {
        cells,
        ..Default::default()
    };
    let figs = figures(&data);
    let p = figs
        .iter()
        .find(|f| f.id.starts_with("fig-percentiles"))
        .unwrap();
    assert_eq!(series_labels(&p.svg).len(), MAX_LINES);
    assert!(p.caption.contains("not drawn"), "{}", p.caption);
    assert!(p.caption.contains("alsa 288 frames") && p.caption.contains("alsa 320 frames"));
    // The tenth line's deadline (10 ms) is not drawn without its line.
    assert!(p.svg.contains(&format!(">deadline {}", fmt_ns(1e6))));
    assert!(!p.svg.contains(&format!("deadline {}", fmt_ns(10e6))));
}

fn blocks() -> results::Series {
    results::Series {
        name: "wakeup_latency_by_block".into(),
        unit: "ns".into(),
        columns: ["t_s", "cycles", "min_ns", "mean_ns", "max_ns"]
            .map(String::from)
            .to_vec(),
        rows: vec![
            vec![0.0, 100.0, 10e3, 20e3, 40e3],
            vec![1.0, 100.0, 10e3, 21e3, 45e3],
        ],
    }
}

#[test]
fn the_time_plot_shows_the_repeat_that_under_ran() {
    let mut quiet = jitter_run(&[20_000, 30_000]);
    quiet.record.result = json!({"start_ns": 0});
    quiet.series.push(blocks());
    let mut loud = quiet.clone();
    loud.record.id = results::RunId(2);
    loud.events.push(results::Event {
        mono_ns: 500_000_000,
        kind: "underrun".into(),
        detail: json!({}),
    });
    loud.event_counts = vec![("underrun".into(), 1)];
    let data = ReportData {
        cells: vec![cell("run 1", quiet, None), cell("run 2", loud, None)],
        ..Default::default()
    };
    let figs = figures(&data);
    let times: Vec<&Figure> = figs
        .iter()
        .filter(|f| f.id.starts_with("fig-time"))
        .collect();
    assert_eq!(times.len(), 1);
    assert!(times[0].caption.contains("run 2"), "{}", times[0].caption);
    assert!(times[0].svg.contains("<line class=\"mark underrun\""));
}

#[test]
fn crowded_kinds_are_counted_from_the_whole_counts_not_the_events_loaded() {
    let mut run = jitter_run(&[20_000, 30_000]);
    run.record.result = json!({"start_ns": 0});
    run.series.push(blocks());
    // Only the first few were loaded; the run had 20 000.
    for i in 0..3 {
        run.events.push(results::Event {
            mono_ns: i * 1_000_000,
            kind: "overflow".into(),
            detail: json!({}),
        });
    }
    run.event_counts = vec![("overflow".into(), 20_000)];
    let data = ReportData {
        cells: vec![cell("run 1", run, None)],
        ..Default::default()
    };
    let figs = figures(&data);
    let t = figs.iter().find(|f| f.id.starts_with("fig-time")).unwrap();
    assert!(!t.svg.contains("mark overflow"));
    assert!(
        t.caption
            .contains("Its 20\u{202f}000 wake-ups above the histogram's bound are too many"),
        "{}",
        t.caption
    );
}

#[test]
fn host_steal_shades_its_sampling_window_with_the_amount_on_hover() {
    let mut run = jitter_run(&[20_000, 30_000]);
    run.record.result = json!({"start_ns": 0});
    run.series.push(blocks());
    run.events.push(results::Event {
        mono_ns: 200_000_000,
        // 80 ms summed over two CPUs: more than the window itself.
        kind: "steal".into(),
        detail: json!({"steal_ns": 80_000_000, "cpus": "0-1"}),
    });
    let mut plot = Plot::new(
        "t",
        Axis::duration("time since start", Scale::Linear),
        Axis::duration("latency", Scale::Linear),
    );
    event_marks(&mut plot, &run, 0);
    assert_eq!(plot.windows.len(), 1);
    let w = &plot.windows[0];
    assert_eq!((w.x0, w.x1), (200e6, 200e6 + STEAL_WINDOW_NS));
    assert!(
        w.text.contains(&format!(
            "host steal {} (summed over CPUs 0-1)",
            fmt_ns(80e6)
        )),
        "{}",
        w.text
    );
    assert!(w
        .text
        .contains(&format!("{} window", fmt_ns(STEAL_WINDOW_NS))));
}

#[test]
fn a_metric_with_every_sample_equal_is_a_value_not_a_plot() {
    let run = test_run(
        "roundtrip",
        json!({}),
        vec![Measurement::from_histogram(
            "roundtrip",
            "roundtrip_latency",
            "test",
            {
                let mut h = LatencyHistogram::new(100_000_000).unwrap();
                for _ in 0..6 {
                    h.record(2_900_000);
                }
                h
            },
        )],
    );
    let data = ReportData {
        cells: vec![cell("run 1", run, None)],
        ..Default::default()
    };
    assert!(!figures(&data)
        .iter()
        .any(|f| f.id.starts_with("fig-percentiles") || f.id.starts_with("fig-histogram")));
    let lines = values_only(&data);
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].contains("every sample 2.90 ms (6 samples) - no distribution to plot"),
        "{}",
        lines[0]
    );
}

#[test]
fn merged_histograms_keep_the_larger_bound() {
    let with_bound = |bound: u64, v: u64| {
        let mut h = LatencyHistogram::new(bound).unwrap();
        for _ in 0..10 {
            h.record(v);
        }
        test_run(
            "jitter",
            json!({}),
            vec![Measurement::from_histogram(
                "jitter",
                "wakeup_latency",
                "test",
                h,
            )],
        )
    };
    let data = ReportData {
        cells: vec![
            cell("run 1", with_bound(1_000_000, 100_000), None),
            cell("run 2", with_bound(100_000_000, 5_000_000), None),
        ],
        ..Default::default()
    };
    let complete = complete_runs(&data);
    let groups = merged(&data, &complete, "wakeup_latency");
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].hist.bound(), 100_000_000);
    assert_eq!(groups[0].hist.overflows(), 0);
    assert_eq!(groups[0].hist.count(), 20);
}

#[test]
fn events_not_placed_are_counted_with_digit_grouping() {
    let mut run = test_run(
        "roundtrip",
        json!({"rate_hz": 48_000}),
        vec![latency("roundtrip_latency", &[2_000_000, 3_000_000], None)],
    );
    run.series.push(results::Series {
        name: "roundtrip_windows".into(),
        unit: "".into(),
        columns: ["time_s", "delay_frames", "verdict"]
            .map(String::from)
            .to_vec(),
        rows: vec![vec![0.0, 139.0, 0.0], vec![1.0, 140.0, 0.0]],
    });
    run.event_counts = vec![("xrun".into(), 12_345)];
    let data = ReportData {
        cells: vec![cell("run 1", run, None)],
        ..Default::default()
    };
    let figs = figures(&data);
    let t = figs.iter().find(|f| f.id.starts_with("fig-time")).unwrap();
    assert!(
        t.caption.contains("Its 12\u{202f}345 events"),
        "{}",
        t.caption
    );
}

#[test]
fn subjects_of_one_configuration_each_are_labelled_by_the_subject_alone() {
    let run = |period: u64| {
        let mut r = jitter_run(&[100_000, 200_000]);
        r.record.config = json!({"backend": "alsa", "period_frames": period});
        r
    };
    let data = ReportData {
        cells: vec![
            cell("run 1", run(64), Some("group 1")),
            cell("run 2", run(64), Some("group 1")),
            cell("run 3", run(1024), Some("group 2")),
        ],
        ..Default::default()
    };
    let figs = figures(&data);
    let p = figs
        .iter()
        .find(|f| f.id.starts_with("fig-percentiles"))
        .unwrap();
    assert_eq!(series_labels(&p.svg), ["group 1", "group 2"]);
    assert!(p.caption.contains("One line per subject."));
}

#[test]
fn explained_misses_stand_as_bars_stacked_by_cause_on_latency_against_time() {
    let mut run = jitter_run(&[20_000, 30_000]);
    run.record.result = json!({"start_ns": 1_000_000_000u64, "why": crate::view::why::test_why()});
    run.series.push(results::Series {
        name: "wakeup_latency_by_block".into(),
        unit: "ns".into(),
        columns: ["t_s", "cycles", "min_ns", "mean_ns", "max_ns"]
            .map(String::from)
            .to_vec(),
        rows: vec![
            vec![0.0, 100.0, 10e3, 20e3, 40e3],
            vec![1.0, 100.0, 10e3, 21e3, 2e6],
            vec![2.0, 100.0, 10e3, 22e3, 60e3],
        ],
    });
    let data = ReportData {
        cells: vec![cell("run 1", run, None)],
        ..Default::default()
    };
    let figs = figures(&data);
    let t = figs.iter().find(|f| f.id.starts_with("fig-time")).unwrap();
    // Each kept miss is a bar at its time from the run's start, its hover naming each
    // cause; the kernel's names are escaped.
    assert_eq!(t.svg.matches("<g class=\"bar\">").count(), 2, "{}", t.svg);
    assert!(
        t.svg
            .contains("<title>late wake-up at 0.500 s: 2.00 ms late (late wakeup)\n1.50 ms: thread &lt;script&gt;x&lt;/script&gt; (pid 7"),
        "{}",
        t.svg
    );
    assert!(!t.svg.contains("<script>"), "{}", t.svg);
    // Its parts stacked in one order, one class per kind; the key names the kinds drawn.
    let first = &t.svg[t.svg.find("<g class=\"bar\">").unwrap()..];
    let first = &first[..first.find("</g>").unwrap()];
    let kinds: Vec<&str> = first
        .match_indices("class=\"part ")
        .map(|(i, _)| {
            let rest = &first[i + 12..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect();
    assert_eq!(kinds, ["thread", "irq", "unaccounted"]);
    for key in ["thread", "irq", "softirq", "unaccounted"] {
        assert!(
            t.svg.contains(&format!(
                "<g class=\"key bar-key\"><rect class=\"part {key}\""
            )),
            "{key}: {}",
            t.svg
        );
    }
    assert!(!t.svg.contains("rect class=\"part self\""), "{}", t.svg);
    assert!(
        !t.svg.contains(" fill=\""),
        "colours from CSS only: {}",
        t.svg
    );
    assert!(
        t.caption.contains("`audiolat jitter --why`"),
        "{}",
        t.caption
    );
    assert!(
        t.caption.contains("The 2 worst of 3 are drawn."),
        "{}",
        t.caption
    );

    // Causes asked for but not traced, or not asked for: no bars.
    let mut untraced = data.clone();
    let r = untraced.cells[0].run.as_mut().unwrap();
    r.record.result = json!({"start_ns": 1_000_000_000u64, "why": {"unavailable": "needs root"}});
    let figs = figures(&untraced);
    let t = figs.iter().find(|f| f.id.starts_with("fig-time")).unwrap();
    assert!(!t.svg.contains("class=\"bar\""));
    assert!(!t.caption.contains("--why"), "{}", t.caption);
}
