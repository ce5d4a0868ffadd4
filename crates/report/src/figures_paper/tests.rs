//! The paper figures' data side against the presets' own published values: the plans
//! are read from `presets/*.toml` as the runner stores them (axes with their labels, the
//! `[report]` tables and the `[published]` figures).

use super::*;
use crate::data::{CellData, RunData};
use results::hist::Summary;
use results::{Measurement, RunStatus};
use serde_json::json;

/// A preset as its stored plan JSON: axes (each value's label), exclusions, `report` and
/// `published` verbatim.
fn preset(name: &str) -> Value {
    let path = format!("{}/../../presets/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("preset");
    let plan: Value = serde_json::to_value(toml::from_str::<toml::Value>(&text).unwrap()).unwrap();
    let axes: Vec<Value> = plan["sweep"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(axis, values)| {
            let labels: Vec<String> = values
                .as_array()
                .unwrap()
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    Value::Object(o) => o["label"].as_str().unwrap().to_string(),
                    other => other.to_string(),
                })
                .collect();
            json!({"name": axis, "labels": labels})
        })
        .collect();
    let exclude: Vec<Value> = plan["exclude"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|x| {
                    let o = x.as_object().unwrap();
                    let axes: serde_json::Map<String, Value> = o
                        .iter()
                        .filter(|(k, _)| *k != "reason")
                        .map(|(k, v)| {
                            let v = if v.is_array() { v.clone() } else { json!([v]) };
                            (k.clone(), v)
                        })
                        .collect();
                    json!({"axes": axes, "reason": o["reason"]})
                })
                .collect()
        })
        .unwrap_or_default();
    json!({
        "name": plan["name"], "title": plan["title"], "axes": axes, "exclude": exclude,
        "report": plan["report"], "published": plan["published"],
    })
}

/// A measurement of `metric` whose every statistic is `value_ns`.
fn measurement(probe: &str, metric: &str, value_ns: f64, deadline_ns: Option<f64>) -> Measurement {
    Measurement {
        probe: probe.into(),
        metric: metric.into(),
        unit: "ns".into(),
        method: String::new(),
        summary: Some(Summary {
            count: 100,
            min: value_ns,
            mean: value_ns,
            stdev: 0.0,
            p50: value_ns,
            p90: value_ns,
            p99: value_ns,
            p999: value_ns,
            p9999: value_ns,
            max: value_ns,
            clamped_at: None,
        }),
        histogram: None,
        deadline: deadline_ns,
        misses: deadline_ns.map(|_| 0),
        detail: json!({}),
    }
}

fn cell(axes: &[(&str, &str)], run: RunData) -> CellData {
    CellData {
        key: axes.iter().map(|(_, v)| *v).collect::<Vec<_>>().join(" "),
        axes: axes
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        profile: "current".into(),
        status: Some(RunStatus::Complete),
        error: None,
        source: None,
        run: Some(run),
    }
}

/// bbb2014 as `--quick` might leave it: ALSA only, two of the USB pairs, every profile
/// and scenario, one run each (5.0 ms + 0.1 ms per column).
fn bbb2014() -> ReportData {
    let mut cells = Vec::new();
    let profiles = ["opt1", "opt2", "opt3"];
    let scenarios = ["Monophonic", "Mon+bgdproc.", "Polyphonic"];
    for buffer in ["128/64", "256/128"] {
        for (p, profile) in profiles.iter().enumerate() {
            for (s, scenario) in scenarios.iter().enumerate() {
                let ms = 5.0 + 0.1 * (p * 3 + s) as f64;
                let run = crate::data::test_run(
                    "event",
                    json!({"underruns": {"steady": 0}}),
                    vec![measurement("event", "event_latency", ms * 1e6, None)],
                );
                cells.push(cell(
                    &[
                        ("backend", "alsa"),
                        ("buffer", buffer),
                        ("profile", profile),
                        ("scenario", scenario),
                        ("repeat", "1"),
                    ],
                    run,
                ));
            }
        }
    }
    ReportData {
        plan: Some(preset("bbb2014")),
        cells,
        ..Default::default()
    }
}

#[test]
fn bbb2014_has_one_figure_per_published_table_with_ours_beside_the_studys_whole_curve() {
    let figs = paper_figure_specs(&bbb2014());
    // Figures 4-7 have published values; the under-run and missed-note tables do not.
    assert_eq!(
        figs.len(),
        4,
        "{:?}",
        figs.iter().map(|f| &f.title).collect::<Vec<_>>()
    );
    let fig4 = &figs[0];
    assert!(fig4.title.starts_with("Figure 4"), "{}", fig4.title);
    assert!(fig4.id.starts_with("fig-paper-0-figure-4"), "{}", fig4.id);
    assert_eq!(fig4.x_label, "buffer/period (frames)");
    assert_eq!(fig4.y_label("ms"), "event latency, mean (ms)");
    assert_eq!(fig4.values, PaperValues::Time);
    assert!(!fig4.y_log);
    assert_eq!(fig4.deadline_ns, None);
    // The study's six pairs, in the plan's order.
    assert_eq!(
        fig4.categories,
        ["128/64", "256/64", "512/64", "256/128", "512/128", "512/256"]
    );
    // Nine columns (profile x scenario), each measured here and published.
    assert_eq!(fig4.series.len(), 18);
    let ours: Vec<&PaperSeries> = fig4.series.iter().filter(|s| s.ours).collect();
    let theirs: Vec<&PaperSeries> = fig4.series.iter().filter(|s| !s.ours).collect();
    assert_eq!((ours.len(), theirs.len()), (9, 9));
    assert_eq!(ours[0].label, "opt1 Monophonic (here)");
    assert_eq!(
        theirs[0].label,
        "opt1 Monophonic (Topliss et al. 2014, Figure 4)"
    );
    for (o, t) in ours.iter().zip(&theirs) {
        assert_eq!(o.colour, t.colour, "a column's two series share a colour");
        assert!(o.colour < 8);
        // Ours only where it ran; the study's whole curve.
        assert_eq!(
            o.points.iter().map(|p| p.category).collect::<Vec<_>>(),
            [0, 3]
        );
        assert_eq!(t.points.len(), 6);
    }
    // The study's opt1 Monophonic at 128/64 is 5.6 ms; opt3 Polyphonic at 512/256 9.7 ms.
    assert!((theirs[0].points[0].value - 5.6e6).abs() < 1.0);
    assert!((theirs[8].points[5].value - 9.7e6).abs() < 1.0);
    assert_eq!(
        theirs[0].points[0].title,
        "opt1 Monophonic at 128/64: 5.60 ms (Topliss et al. 2014, Figure 4)"
    );
    // Ours: opt2 Monophonic (column 3) measured 5.3 ms, one run.
    assert!((ours[3].points[0].value - 5.3e6).abs() < 1.0);
    assert_eq!(
        ours[3].points[0].title,
        "opt2 Monophonic at 128/64: 5.30 ms (here: mean of 1 run)"
    );
    // JACK did not run: the study's values alone, and the caption says so.
    let fig6 = &figs[2];
    assert!(fig6.title.starts_with("Figure 6"));
    assert!(fig6.series.iter().all(|s| !s.ours));
    assert_eq!(fig6.series.len(), 9);
    assert!(fig6
        .caption
        .contains("Nothing of this table was measured here"));
    assert!(fig4
        .caption
        .starts_with("Topliss et al. 2014, Figure 4: ALSA latency"));
    // The Audio Cape's pairs, as the study drew them (by period, then buffer); none ran
    // here, and the caption says why.
    assert_eq!(
        figs[3].categories,
        ["128/16", "128/32", "256/32", "512/32", "256/64", "512/64"]
    );
    assert!(
        figs[3]
            .caption
            .contains("Not run here: jackd's dummy driver has two periods per buffer (no -n)."),
        "{}",
        figs[3].caption
    );
}

#[test]
fn tessellation2013_draws_the_response_time_against_its_deadline_and_counts_misses() {
    let deadline_ns = 1_405_900.0;
    let cases = [
        ("alone, no cells", 1_010_000.0),
        ("alone, dedicated cell", 990_000.0),
    ];
    let cells = cases
        .iter()
        .map(|(case, ns)| {
            let run = crate::data::test_run(
                "net",
                json!({}),
                vec![measurement("net", "response_time", *ns, Some(deadline_ns))],
            );
            cell(&[("case", case), ("repeat", "1")], run)
        })
        .collect();
    let data = ReportData {
        plan: Some(preset("tessellation2013")),
        cells,
        ..Default::default()
    };
    let figs = paper_figure_specs(&data);
    let titles: Vec<&str> = figs.iter().map(|f| f.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "Figure 7: mean response time (us)",
            "Figure 7: missed deadlines (of all blocks), summed over repeats",
            "Figure 7: standard deviation of the response time (us)",
            "Figure 7: maximum response time (us)",
        ]
    );
    // A standard deviation is no latency: no deadline beside it; the maximum has one.
    assert_eq!(figs[2].deadline_ns, None);
    assert_eq!(figs[3].deadline_ns, Some(deadline_ns));
    assert!((figs[3].series[1].points[1].value - 1_405_000.0).abs() < 1e-6);
    let mean = &figs[0];
    assert_eq!(mean.categories.len(), 4);
    assert_eq!(mean.x_label, "case (category)");
    assert_eq!(mean.y_label("us"), "response time, mean (us)");
    assert_eq!(mean.deadline_ns, Some(deadline_ns));
    let labels: Vec<&str> = mean.series.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, ["here", "Colmenares et al. 2013, Figure 7"]);
    let theirs = &mean.series[1];
    // "-" for the cases without cells: no point, not 0.
    assert_eq!(
        theirs
            .points
            .iter()
            .map(|p| (p.category, p.value.round()))
            .collect::<Vec<_>>(),
        [(2, 997_540.0), (3, 1_024_610.0)]
    );
    assert_eq!(
        mean.series[0]
            .points
            .iter()
            .map(|p| p.category)
            .collect::<Vec<_>>(),
        [0, 2]
    );
    let missed = &figs[1];
    assert_eq!(missed.values, PaperValues::Count);
    assert_eq!(missed.deadline_ns, None);
    assert_eq!(
        missed.y_label(""),
        "missed deadlines of response time (count)"
    );
    // The runs' misses (0 each) beside the study's 0 and 0.
    assert_eq!(missed.series[0].points.len(), 2);
    assert!(missed.series[1].points.iter().all(|p| p.value == 0.0));
}

#[test]
fn tessellation_bandwidth_spans_decades_on_a_log_axis_with_grouped_counts() {
    let data = ReportData {
        plan: Some(preset("tessellation2013-bandwidth")),
        ..Default::default()
    };
    let figs = paper_figure_specs(&data);
    assert_eq!(figs.len(), 2);
    // 461133.61 us against 983.20 us.
    assert!(figs[0].y_log);
    assert!(figs[0].series[0].points[0].title.contains("461.13 ms"));
    // 243903 missed deadlines, digits grouped.
    assert!(figs[1].series[0].points[0].title.contains("243\u{202F}903"));
    assert!(!figs[1].y_log, "zero counts: no log axis");
}

#[test]
fn latencytest_puts_the_loads_along_x_and_reads_the_studys_approximate_values() {
    let data = ReportData {
        plan: Some(preset("latencytest1999")),
        ..Default::default()
    };
    let figs = paper_figure_specs(&data);
    assert_eq!(figs.len(), 1);
    let f = &figs[0];
    assert_eq!(f.categories, ["CPU 10%", "CPU 80%", "CPU 80% + disk I/O"]);
    assert_eq!(f.x_label, "scenario (workload)");
    assert_eq!(f.y_label("ms"), "wake-up latency, maximum (ms)");
    assert_eq!(f.series.len(), 2);
    assert_eq!(f.series[0].label, "RTC 2048 Hz (Senoner 1999)");
    assert_ne!(f.series[0].colour, f.series[1].colour);
    // "~0.5" is about 0.5 ms; "-" (disk I/O) is no point.
    let p = &f.series[0].points;
    assert_eq!(p.len(), 2);
    assert!((p[0].value - 0.5e6).abs() < 1.0);
    assert_eq!(
        p[0].title,
        "RTC 2048 Hz at CPU 10%: about 500.0 us (Senoner 1999)"
    );
}

#[test]
fn macmillan_turns_the_loads_along_x_and_skips_not_tested() {
    let data = ReportData {
        plan: Some(preset("macmillan2001")),
        ..Default::default()
    };
    let figs = paper_figure_specs(&data);
    assert_eq!(figs.len(), 1);
    let f = &figs[0];
    assert_eq!(f.categories, ["no load", "CPU and disk load"]);
    assert_eq!(f.y_name, "round trip, mean, smallest");
    let alsa = &f.series[0];
    assert_eq!(alsa.points.len(), 1, "ALSA under load was not tested");
}

#[test]
fn no_published_values_no_plan_no_figures() {
    let mut plan = preset("bbb2014");
    plan["published"] = json!({});
    let data = ReportData {
        plan: Some(plan),
        cells: bbb2014().cells,
        ..Default::default()
    };
    assert!(paper_figure_specs(&data).is_empty());
    assert!(paper_figure_specs(&ReportData::default()).is_empty());
    assert_eq!(published_number(&json!("not tested")), None);
    assert_eq!(published_number(&json!("-")), None);
    assert_eq!(published_number(&json!("~0.7")), Some((0.7, true)));
    assert_eq!(published_number(&json!(4.3)), Some((4.3, false)));
}

#[test]
fn a_paper_figure_draws_both_kinds_with_labelled_axes_hovers_and_toggles_and_no_colours() {
    let figs = paper_figure_specs(&bbb2014());
    let svg = render(&figs[0]).expect("a figure with points draws");
    assert!(
        svg.starts_with("<svg class=\"plot paper\" viewBox=\"0 0 760 "),
        "{svg}"
    );
    assert!(svg.contains("width=\"100%\" role=\"img\" aria-label=\"Figure 4"));
    assert!(svg.contains("<text class=\"axis-label x\""));
    assert!(svg.contains(">buffer/period (frames)</text>"));
    assert!(svg.contains(">event latency, mean (ms)</text>"));
    // A column toggles its two series; a kind toggles all of ours or all of the study's.
    assert!(
        svg.contains("<g class=\"legend-item s0\" data-series=\"opt1 Monophonic\" tabindex=\"0\"")
    );
    assert!(svg.contains("<g class=\"series s0 here\" data-series=\"opt1 Monophonic\">"));
    assert!(svg.contains("<g class=\"series s0 study\" data-series=\"opt1 Monophonic\">"));
    assert!(svg.contains("<g class=\"series kind\" data-series=\"here\">"));
    assert!(svg.contains("data-series=\"Topliss et al. 2014, Figure 4\" tabindex=\"0\""));
    // Ours filled, the study's hollow and dashed, each point with its exact value.
    assert_eq!(svg.matches(" class=\"dot\"").count(), 9 * 2);
    assert_eq!(svg.matches(" class=\"ring\"").count(), 9 * 6);
    // Nine columns: a colour per scenario, a shape per optimisation level.
    assert_eq!(figs[0].series[4].colour, 2);
    assert_eq!(figs[0].series[6].colour, 0);
    assert_eq!(figs[0].series[6].shape, 1);
    assert!(svg.contains("<rect class=\"dot\""));
    assert!(figs[0].ordered);
    assert!(svg.contains(
        "<title>opt1 Monophonic at 128/64: 5.60 ms (Topliss et al. 2014, Figure 4)</title>"
    ));
    assert!(svg.contains("stroke-dasharray=\"6 4\""));
    // Colours only from CSS.
    assert!(!svg.contains("fill=\"#") && !svg.contains("stroke=\"#") && !svg.contains("rgb("));
    // Every category named on the x axis.
    for c in &figs[0].categories {
        assert!(svg.contains(&format!(">{c}</tspan>")), "{c}");
    }
}

#[test]
fn a_one_column_figure_has_its_deadline_line_and_the_kinds_as_its_legend() {
    let cells = vec![cell(
        &[("case", "alone, dedicated cell"), ("repeat", "1")],
        crate::data::test_run(
            "net",
            json!({}),
            vec![measurement(
                "net",
                "response_time",
                990_000.0,
                Some(1_405_900.0),
            )],
        ),
    )];
    let data = ReportData {
        plan: Some(preset("tessellation2013")),
        cells,
        ..Default::default()
    };
    let figs = paper_figure_specs(&data);
    let svg = render(&figs[0]).unwrap();
    assert!(svg.contains("<g class=\"ref\">"));
    assert!(svg.contains(">deadline 1.41 ms</text>"), "{svg}");
    assert!(svg.contains(">response time, mean (ms)</text>"));
    assert!(svg.contains("<g class=\"legend-item\" data-series=\"here\""));
    assert!(svg.contains("<g class=\"series s0 here\" data-series=\"here\">"));
    assert!(svg.contains("data-series=\"Colmenares et al. 2013, Figure 7\""));
    // The long case names wrap under their category.
    assert!(svg.contains("<tspan"));
    assert!(!svg.contains("class=\"series kind\""));
}

#[test]
fn the_report_draws_the_paper_figures_first_each_with_both_kinds() {
    let data = bbb2014();
    let drawn = paper_figures(&data);
    assert_eq!(drawn.len(), 4);
    // Figures 4 measured here and published; 5-7 the study's alone (none of their
    // rows ran in this plan).
    assert!(
        drawn[0].svg.contains(" here\" data-series=")
            && drawn[0].svg.contains(" study\" data-series=")
    );
    assert!(drawn[1..]
        .iter()
        .all(|f| f.svg.contains(" study\" data-series=")));
    let all = crate::figures::figures(&data);
    assert_eq!(
        all.iter().take(4).map(|f| &f.id).collect::<Vec<_>>(),
        drawn.iter().map(|f| &f.id).collect::<Vec<_>>()
    );
    let page = crate::html::render(&data);
    assert!(
        page.contains("id=\"fig-paper-0-figure-4-alsa-the-usb-interface-s-pair"),
        "ids"
    );
}
