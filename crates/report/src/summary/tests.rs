//! Tests of the summary: a suite-like report's answer, a report with nothing in it, and
//! the HTML and terminal saying the same.

use std::collections::BTreeMap;

use results::{LatencyHistogram, Measurement, RunId, RunStatus};
use serde_json::json;

use super::*;
use crate::data::{test_run, CellData};

/// A measurement of `values` (ns), judged against `deadline` when given.
fn measured(
    probe: &str,
    metric: &str,
    values: &[u64],
    deadline: Option<(f64, u64)>,
) -> Measurement {
    let mut h = LatencyHistogram::new(1_000_000_000).unwrap();
    for &v in values {
        h.record(v);
    }
    let mut m = Measurement::from_histogram(probe, metric, "test", h);
    if let Some((d, misses)) = deadline {
        m.deadline = Some(d);
        m.misses = Some(misses);
    }
    m
}

fn many(value: u64, n: usize) -> Vec<u64> {
    vec![value; n]
}

fn cell(run: RunData) -> CellData {
    CellData {
        key: format!("run {}", run.record.id),
        axes: BTreeMap::new(),
        profile: "release".into(),
        status: Some(run.record.status),
        error: None,
        run: Some(run),
        source: None,
    }
}

fn with(mut r: RunData, id: i64, config: serde_json::Value, flags: serde_json::Value) -> RunData {
    r.record.id = RunId(id);
    r.record.config = config;
    r.record.flags = flags;
    r.record.machine.virtualization = Some("KVM".into());
    r
}

const DUMMY: &str = "/usr/bin/jackd -n audiolat-dummy -d dummy -r 48000 -p 64";

fn audio_result(period: u64, extra: serde_json::Value) -> serde_json::Value {
    let mut v = json!({"backend": "jack", "period_frames": period, "rate_hz": 48000,
        "end": "complete", "run_ns": 10_000_000_000u64,
        "server": {"command_line": DUMMY, "private": true}});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

fn event(id: i64, period: u64, steady_xruns: u64, latency_ns: u64) -> RunData {
    let result = audio_result(
        period,
        json!({"underruns": {"start": 0, "steady": steady_xruns,
                             "skipped_cycles_start": 0, "skipped_cycles_steady": 0}}),
    );
    let m = measured("event", "event_latency", &many(latency_ns, 150), None);
    with(
        test_run("event", result, vec![m]),
        id,
        json!({"load": "none"}),
        json!({"realtime": true}),
    )
}

fn roundtrip(id: i64, period: u64, xruns: u64, ns: u64) -> RunData {
    let result = audio_result(
        period,
        json!({"xruns": xruns, "skipped_cycles": 0, "delay_changes": [], "no_loop": false}),
    );
    let m = measured("roundtrip", "roundtrip", &many(ns, 40), None);
    with(
        test_run("roundtrip", result, vec![m]),
        id,
        json!({"load": "none"}),
        json!({"realtime": true}),
    )
}

/// A suite-like report: jitter idle and under cpu load with fragments, event latency at
/// 64 frames (under-runs) and 128 (held), round trips at the same, a net run with misses.
fn suite_like() -> ReportData {
    let mut idle = many(30_000, 20_000);
    idle.push(5_000_000);
    let jitter_idle = with(
        test_run(
            "jitter",
            json!({"skipped_deadlines": 9}),
            vec![measured("jitter", "wakeup_latency", &idle, None)],
        ),
        2,
        json!({"load": "none", "period_ns": 488_281, "rate_hz": 2048.0}),
        json!({"realtime": true, "host_steal_ns": 20_000_000, "host_steal_percent": 0.1}),
    );
    let jitter_cpu = with(
        test_run(
            "jitter",
            json!({}),
            vec![
                measured("jitter", "wakeup_latency", &many(20_000, 13_782), None),
                measured(
                    "jitter",
                    "fragment_completion",
                    &many(600_000, 13_782),
                    Some((1_451_248.0, 0)),
                ),
            ],
        ),
        3,
        json!({"load": "cpu", "busy_percent": 80.0, "period_ns": 725_624,
               "fragments": {"fragments": 3, "frames": 32, "sample_rate": 44100}}),
        json!({"realtime": false, "memory_locked": true}),
    );
    let mut net = test_run(
        "net",
        json!({"synth": {"controller": {"lost": 0}}}),
        vec![measured(
            "net",
            "response_time",
            &many(700_000, 13_782),
            Some((1_405_896.0, 5)),
        )],
    );
    net.record.id = RunId(12_345);
    net.record.config = json!({"load": "none"});
    let runs = vec![
        jitter_idle,
        jitter_cpu,
        event(4, 64, 3, 5_000_000),
        event(5, 128, 0, 7_290_000),
        roundtrip(6, 128, 0, 2_666_667),
        roundtrip(7, 64, 2, 1_333_333),
        net,
    ];
    let mut cells: Vec<CellData> = runs.into_iter().map(cell).collect();
    cells.push(CellData {
        key: "period=32".into(),
        axes: BTreeMap::new(),
        profile: "release".into(),
        status: Some(RunStatus::Failed),
        error: Some("the server refused a 32-frame period".into()),
        run: None,
        source: None,
    });
    ReportData {
        subject: "group 1".into(),
        cells,
        ..ReportData::default()
    }
}

#[test]
fn a_suite_gives_the_smallest_buffer_that_held_its_verdicts_and_its_caveats() {
    let a = answer(&suite_like());
    assert_eq!(a.backends.len(), 1, "{:?}", a.backends);
    let b = &a.backends[0];
    assert_eq!(b.backend, "JACK (jackd -d dummy)");
    assert_eq!(b.load, "idle");
    assert_eq!(b.smallest_held.map(|h| h.period_frames), Some(128));
    assert_eq!(
        b.failed_below.map(|(f, n)| (f.period_frames, n)),
        Some((64, Some(3)))
    );
    assert_eq!(b.tried_frames, vec![64, 128]);
    assert_eq!(b.runs_held_at_smallest, (2, 2));
    // The latency at the buffer that held, not at the one that did not.
    let ev = b.event_latency_ns.unwrap();
    assert!((ev - 7.29e6).abs() < 0.01 * 7.29e6, "{ev}");
    let rt = b.roundtrip_ns.unwrap();
    assert!((rt - 2.667e6).abs() < 0.01 * 2.667e6, "{rt}");

    let said: Vec<(Mark, &str)> = a
        .verdicts
        .iter()
        .map(|v| (v.mark, v.text.as_str()))
        .collect();
    assert_eq!(said.len(), 7, "{said:#?}");
    let has = |mark: Mark, text: &str| {
        assert!(
            said.iter().any(|(m, t)| *m == mark && t.contains(text)),
            "{text} not in {said:#?}"
        )
    };
    has(Mark::Warn, "wakes up idle, 2048 Hz timer: p99 30.");
    has(
        Mark::Warn,
        "the max over one 488.3 us period (9 deadlines skipped)",
    );
    has(
        Mark::Ok,
        "holds 3x32-frame fragments at 44.1 kHz under cpu load, 80 % of each period busy",
    );
    has(
        Mark::Fail,
        "64-frame periods at 48 kHz did not hold idle on JACK: 3 under-runs in 10.00 s",
    );
    has(
        Mark::Ok,
        "holds 128-frame periods at 48 kHz idle on JACK: 7.2",
    );
    has(
        Mark::Ok,
        "holds 128-frame periods at 48 kHz idle on JACK: 2.67 ms round trip",
    );
    has(
        Mark::Fail,
        "64-frame periods at 48 kHz did not hold idle on JACK: 2 under-runs",
    );
    has(
        Mark::Fail,
        "network audio idle: 5 of 13\u{202F}782 blocks missed the 1.41 ms deadline",
    );

    assert_eq!(a.wakeups.len(), 2);
    assert_eq!(
        a.wakeups[1].condition,
        "under cpu load, 80 % of each period busy"
    );
    assert_eq!(a.deadlines.len(), 2, "{:#?}", a.deadlines);
    assert_eq!(a.deadlines[1].misses, 5);
    assert_eq!(
        a.not_run,
        vec!["period=32: the server refused a 32-frame period"]
    );

    let caveats = a.caveats.join("\n");
    for words in [
        "not real-time priority (run 3)",
        "a virtual machine (KVM)",
        "host steal: the hypervisor ran something else on these CPUs for 20.00 ms (0.10 %) in run 2",
        "software clock (runs 4, 5, 6, 7: jackd -d dummy)",
    ] {
        assert!(caveats.contains(words), "{words} not in\n{caveats}");
    }
    // Each once; and nothing said of what nobody flagged.
    assert_eq!(caveats.matches("virtual machine").count(), 1);
    assert!(!caveats.contains("memory not locked"), "{caveats}");
    assert!(!caveats.contains("interrupted"), "{caveats}");
}

#[test]
fn a_report_without_runs_says_nothing_was_measured_and_prints_no_zero() {
    let data = ReportData::default();
    let a = answer(&data);
    assert!(!a.measured_anything());
    assert_eq!(a, Answer::default());
    for out in [text(&data), visible_text(&html(&data))] {
        assert!(out.contains("nothing was measured here"), "{out}");
        assert!(
            !out.chars().any(|c| c.is_ascii_digit()),
            "a number nobody measured: {out}"
        );
    }
    assert!(
        html(&data).starts_with("<section id=\"summary\" class=\"summary\">\n<h2>The answer</h2>")
    );
}

/// The text of `html` a reader sees, tags and `<code>` left out.
fn visible_text(html: &str) -> String {
    let mut text = String::new();
    let (mut in_tag, mut in_code) = (false, false);
    let mut rest = html;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("<code") {
            in_code = true;
        } else if rest.starts_with("</code>") {
            in_code = false;
        }
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag && !in_code => text.push(c),
            _ => {}
        }
        rest = &rest[c.len_utf8()..];
    }
    text
}

/// Runs of `n` or more ASCII digits in `html`'s visible text.
fn digit_runs(html: &str, n: usize) -> Vec<String> {
    visible_text(html)
        .split(|c: char| !c.is_ascii_digit())
        .filter(|d| d.len() >= n)
        .map(str::to_string)
        .collect()
}

#[test]
fn the_html_has_no_raw_nanoseconds_nor_ungrouped_counts() {
    let page = html(&suite_like());
    assert!(
        digit_runs(&page, 5).is_empty(),
        "{:?}\n{page}",
        digit_runs(&page, 5)
    );
    // Big counts are there, grouped: the net run's id and its blocks.
    assert!(page.contains("12\u{202F}345"), "{page}");
    assert!(page.contains("13\u{202F}782"), "{page}");
    assert!(!page.contains("style="), "no inline styles: {page}");
    assert!(page.contains("<ul class=\"caveats\">"));
    assert!(digit_runs("<p>1234 <code>123456</code> 12\u{202F}345</p>", 5).is_empty());
    assert_eq!(digit_runs("<td>1000000</td>", 5), vec!["1000000"]);
}

#[test]
fn the_terminal_and_the_html_say_the_same_verdicts() {
    let data = suite_like();
    let (t, h) = (text(&data), html(&data));
    let a = answer(&data);
    for v in &a.verdicts {
        assert!(t.contains(&v.text), "{} not in\n{t}", v.text);
        assert!(
            h.contains(&crate::html::escape(&v.text)),
            "{} not in\n{h}",
            v.text
        );
        assert!(h.contains(&format!("<li class=\"{}\">", v.mark.class())));
    }
    for c in &a.caveats {
        assert!(
            t.contains(c.as_str()) && h.contains(&crate::html::escape(c)),
            "{c}"
        );
    }
    // The terminal marks what did not hold so it stands out.
    assert!(
        t.contains("FAIL 64-frame periods at 48 kHz did not hold"),
        "{t}"
    );
}

#[test]
fn a_plan_s_shared_dummy_server_is_a_software_clock_though_stored_by_name_only() {
    let mut r = event(3, 64, 0, 2_000_000);
    r.record.result["server"] =
        json!({"name": "audiolat-dummy", "command_line": null, "private": false});
    assert_eq!(
        caveats::software_clock(&r).as_deref(),
        Some("jackd -d dummy")
    );
    r.record.result["server"] = json!({"name": "default", "command_line": null, "private": false});
    assert_eq!(caveats::software_clock(&r), None);
    r.record.result["backend"] = json!("virtual");
    assert!(caveats::software_clock(&r).is_some());
    // Deadlines of one kind over several runs are one line, their misses summed.
    let mut data = suite_like();
    let mut again = data.cells[1].run.clone().unwrap();
    again.record.id = RunId(8);
    again.measurements[1].misses = Some(2);
    data.cells.push(cell(again));
    let a = answer(&data);
    let fragments: Vec<&DeadlineAnswer> = a
        .deadlines
        .iter()
        .filter(|d| d.what.starts_with("fragment"))
        .collect();
    assert_eq!(fragments.len(), 1, "{:#?}", a.deadlines);
    assert_eq!((fragments[0].misses, fragments[0].count), (2, 2 * 13_782));
    assert_eq!(fragments[0].run_ids, vec![RunId(3), RunId(8)]);
}

#[test]
fn a_setting_that_held_in_one_run_and_not_the_next_says_so() {
    let mut data = suite_like();
    data.cells.push(cell(event(9, 128, 1, 7_000_000)));
    let a = answer(&data);
    assert_eq!(a.backends[0].runs_held_at_smallest, (2, 3));
    let t = text(&data);
    assert!(
        t.contains("128 frames (2.67 ms at 48 kHz) held in 2 of 3 runs"),
        "{t}"
    );
}

#[test]
fn on_a_pipewire_the_buffer_is_the_quantum_its_graph_granted() {
    let mut r = roundtrip(3, 64, 0, 21_333_333);
    r.record.config["server"] = json!({"quantum_granted_frames": 1024, "rate_granted_hz": 48000});
    assert_eq!(
        buffer_of(&r),
        Some(Buffer {
            period_frames: 1024,
            rate_hz: 48_000.0
        })
    );
}

#[test]
fn in_a_report_of_two_subjects_each_has_its_own_smallest_buffer() {
    let mut a_cell = cell(event(2, 64, 0, 2_000_000));
    a_cell.source = Some("host a".into());
    let mut b_cell = cell(event(3, 64, 4, 2_000_000));
    b_cell.source = Some("host b".into());
    let data = ReportData {
        cells: vec![a_cell, b_cell],
        ..ReportData::default()
    };
    let a = answer(&data);
    assert_eq!(a.backends.len(), 2, "{:#?}", a.backends);
    assert_eq!(
        a.backends[0].smallest_held.map(|b| b.period_frames),
        Some(64)
    );
    assert_eq!(a.backends[1].smallest_held, None);
    let t = text(&data);
    assert!(
        t.contains("host a: JACK (jackd -d dummy), idle: 64 frames"),
        "{t}"
    );
    assert!(t.contains("host b: JACK (jackd -d dummy), idle: no buffer tried held; 64 frames did not hold (4 under-runs)"), "{t}");
}

#[test]
fn the_same_verdict_of_several_runs_is_said_once_with_the_range_of_its_values() {
    let mut data = suite_like();
    data.cells.push(cell(roundtrip(9, 128, 0, 2_700_000)));
    data.cells.push(cell(roundtrip(10, 64, 5, 1_333_333)));
    let a = answer(&data);
    let rt: Vec<&VerdictLine> = a
        .verdicts
        .iter()
        .filter(|v| v.text.contains("round trip"))
        .collect();
    assert_eq!(rt.len(), 1, "{:#?}", a.verdicts);
    assert_eq!(
        rt[0].text,
        "holds 128-frame periods at 48 kHz idle on JACK in 2 runs: round trip 2.67 ms to 2.70 ms"
    );
    assert_eq!(rt[0].run_ids, vec![RunId(6), RunId(9)]);
    // The failures of one probe at one setting are one line; another probe's apart.
    let failed: Vec<&VerdictLine> = a
        .verdicts
        .iter()
        .filter(|v| v.mark == Mark::Fail && v.text.starts_with("64-frame"))
        .collect();
    assert_eq!(failed.len(), 2, "{failed:#?}");
    assert_eq!(
        failed[1].text,
        "64-frame periods at 48 kHz did not hold idle on JACK in 2 runs"
    );
    assert!(text(&data).contains("in 2 runs: round trip 2.67 ms to 2.70 ms (runs 6, 9)"));
}
