use serde_json::json;

use super::*;
use crate::data::test_run;

fn latency(metric: &str, values: &[u64], deadline: Option<f64>) -> Measurement {
    let mut h = LatencyHistogram::new(100_000_000).unwrap();
    for &v in values {
        h.record(v);
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
