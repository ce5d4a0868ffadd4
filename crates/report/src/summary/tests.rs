//! Tests of the summary: a suite-like report's answer, a report with nothing in it, and
//! the HTML and terminal saying the same.

use std::collections::BTreeMap;

use results::{LatencyHistogram, Measurement, RunId, RunStatus};
use serde_json::json;

use super::buffers::buffer_of;
use super::*;
use crate::data::{test_run, CellData, ReportData, RunData};

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
        crate::net_fixtures::result(json!({"synth": crate::net_fixtures::phase(
            crate::net_fixtures::host(json!({})),
            crate::net_fixtures::controller(
                json!({"answers_received_after_end": 1, "answers_not_received": 2}),
            ),
            json!({}),
        )})),
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
        b.failed_below
            .map(|f| (f.buffer.period_frames, f.underruns)),
        Some((64, Some(3)))
    );
    let tried: Vec<u64> = b.tried.iter().map(|b| b.period_frames).collect();
    assert_eq!(tried, vec![64, 128]);
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
        "network audio idle: 5 of 13\u{202F}782 blocks missed the 1.41 ms deadline, 3 without an answer by the run's end",
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
            h.contains(&crate::words::escape(&v.text)),
            "{} not in\n{h}",
            v.text
        );
        assert!(h.contains(&format!("<li class=\"{}\">", v.mark.class())));
    }
    for c in &a.caveats {
        assert!(
            t.contains(c.as_str()) && h.contains(&crate::words::escape(c)),
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
    assert_eq!(words::software_clock(&r).as_deref(), Some("jackd -d dummy"));
    r.record.result["server"] = json!({"name": "default", "command_line": null, "private": false});
    assert_eq!(words::software_clock(&r), None);
    r.record.result["backend"] = json!("virtual");
    assert!(words::software_clock(&r).is_some());
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
        t.contains("128 frames (2.67 ms period at 48 kHz) held in 2 of 3 runs"),
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
            buffer_frames: None,
            rate_hz: 48_000.0
        })
    );
    // Its ports report no playback latency: the sink's quantum is the buffer, as an
    // event run at the same setting stores it, so the two are one setting.
    r.record.result["playback_latency_frames"] = json!(0);
    let mut e = event(4, 64, 0, 2_000_000);
    e.record.config["server"] = r.record.config["server"].clone();
    e.record.result["buffer_frames"] = json!(1024);
    assert_eq!(buffer_of(&r).unwrap().buffer_frames, Some(1024));
    assert_eq!(buffer_of(&r), buffer_of(&e));
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
        "64-frame periods at 48 kHz did not hold idle on JACK in 2 runs: \
         2 under-runs in 10.00 s (run 7); 5 under-runs in 10.00 s (run 10)"
    );
    assert!(text(&data).contains("in 2 runs: round trip 2.67 ms to 2.70 ms (runs 6, 9)"));
}

/// An ALSA event run at `period` frames in a `buffer`-frame buffer.
fn alsa_event(id: i64, period: u64, buffer: u64, steady_xruns: u64, latency_ns: u64) -> RunData {
    let mut r = event(id, period, steady_xruns, latency_ns);
    r.record.result["backend"] = json!("alsa");
    r.record.result["server"] = json!(null);
    r.record.config["granted"] = json!({"period_frames": period, "buffer_frames": buffer});
    r
}

fn report(runs: Vec<RunData>) -> ReportData {
    ReportData {
        cells: runs.into_iter().map(cell).collect(),
        ..ReportData::default()
    }
}

#[test]
fn the_smallest_buffer_is_the_shortest_whole_buffer_not_the_shortest_period() {
    // bbb2014: a 32-frame period in a 480-frame buffer held at 11 ms, while 64/128 held
    // at 2 ms: the answer is 64/128.
    let data = report(vec![
        alsa_event(2, 32, 480, 0, 11_220_000),
        alsa_event(3, 128, 256, 0, 3_000_000),
        alsa_event(4, 64, 128, 0, 2_000_000),
        alsa_event(5, 16, 96, 2, 1_500_000),
    ]);
    let a = answer(&data);
    let b = &a.backends[0];
    let h = b.smallest_held.unwrap();
    assert_eq!((h.period_frames, h.buffer_frames), (64, Some(128)));
    let ev = b.event_latency_ns.unwrap();
    assert!((ev - 2e6).abs() < 0.01 * 2e6, "{ev}");
    let f = b.failed_below.unwrap();
    assert_eq!((f.buffer.period_frames, f.underruns), (16, Some(2)));
    let t = text(&data);
    assert!(
        t.contains("ALSA, idle: 64/128 frames (2.67 ms buffer at 48 kHz) held, event latency 2.0"),
        "{t}"
    );
    assert!(
        t.contains("; 16/96 frames did not hold (2 under-runs)"),
        "{t}"
    );
    // Two settings with the same buffer time: the one that gave the lower latency.
    let data = report(vec![
        alsa_event(2, 32, 128, 0, 2_500_000),
        alsa_event(3, 64, 128, 0, 2_000_000),
    ]);
    let h = answer(&data).backends[0].smallest_held.unwrap();
    assert_eq!(h.period_frames, 64);
}

/// A histogram bounded at 1 ms with 5 % of its values past it.
fn clamped(probe: &str, metric: &str) -> Measurement {
    let mut h = LatencyHistogram::new(1_000_000).unwrap();
    for i in 0..1000u64 {
        h.record(if i < 950 { 30_000 } else { 5_000_000 });
    }
    Measurement::from_histogram(probe, metric, "test", h)
}

#[test]
fn a_percentile_past_the_histogram_s_bound_is_printed_as_at_least_and_warned() {
    let jitter = with(
        test_run(
            "jitter",
            json!({}),
            vec![clamped("jitter", "wakeup_latency")],
        ),
        2,
        json!({"load": "none"}),
        json!({"realtime": true}),
    );
    let mut rt = roundtrip(3, 128, 0, 0);
    rt.measurements = vec![clamped("roundtrip", "roundtrip")];
    rt.measurements[0].summary = rt.measurements[0].summary.map(|mut s| {
        s.p50 = s.clamped_at.unwrap();
        s
    });
    let data = report(vec![jitter, rt]);
    let a = answer(&data);
    let j = &a.verdicts[0];
    assert_eq!(j.mark, Mark::Warn, "{j:?}");
    assert!(
        j.text.contains("p99 >=1.00 ms, p99.9 >=1.00 ms"),
        "{}",
        j.text
    );
    assert!(a.wakeups[0].clamped());
    let r = &a.verdicts[1];
    assert_eq!(r.mark, Mark::Warn, "{r:?}");
    assert!(r.text.contains(">=1.00 ms round trip"), "{}", r.text);
    let t = text(&data);
    assert!(t.contains("round trip >=1.00 ms"), "{t}");
    let h = html(&data);
    assert!(h.contains("<td class=\"warn\">&gt;=1.00 ms</td>"), "{h}");
}

#[test]
fn interrupted_and_failed_runs_judge_no_buffer_and_are_said_apart() {
    let mut stopped = event(2, 32, 4, 1_000_000);
    stopped.record.status = RunStatus::Interrupted;
    stopped.record.result["end"] = json!("interrupted");
    let mut refused = event(3, 16, 0, 1_000_000);
    refused.record.status = RunStatus::Failed;
    refused.record.error = Some("the server refused a 16-frame period".into());
    let data = report(vec![stopped, refused, event(4, 64, 0, 2_000_000)]);
    let a = answer(&data);
    let b = &a.backends[0];
    assert_eq!(b.smallest_held.map(|h| h.period_frames), Some(64));
    assert_eq!(b.failed_below, None, "{b:#?}");
    assert_eq!(b.runs_held_at_smallest, (1, 1));
    assert_eq!(
        b.not_finished
            .iter()
            .map(|b| b.period_frames)
            .collect::<Vec<_>>(),
        vec![32]
    );
    assert_eq!(
        b.failed_runs
            .iter()
            .map(|b| b.period_frames)
            .collect::<Vec<_>>(),
        vec![16]
    );
    let t = text(&data);
    assert!(
        t.contains("; not finished at 32 frames; failed at 16 frames"),
        "{t}"
    );
    assert!(!t.contains("did not hold"), "{t}");
    let v = a
        .verdicts
        .iter()
        .find(|v| v.run_ids == vec![RunId(2)])
        .unwrap();
    assert_eq!(v.mark, Mark::Warn, "{v:?}");
    assert!(v.text.contains("not finished idle on JACK"), "{}", v.text);
    // Nothing finished: nothing judged, not "did not hold".
    let mut only = event(5, 32, 0, 1_000_000);
    only.record.status = RunStatus::Interrupted;
    let data = report(vec![only]);
    let t = text(&data);
    assert!(
        t.contains("idle: no run finished to judge a buffer; not finished at 32 frames"),
        "{t}"
    );
    assert!(html(&data).contains("<li class=\"warn\">JACK"));
}

#[test]
fn under_runs_are_the_xruns_and_skipped_cycles_are_said_apart() {
    let mut r = event(2, 64, 3, 2_000_000);
    r.record.result["underruns"]["skipped_cycles_steady"] = json!(2);
    let mut skipped_only = roundtrip(3, 64, 0, 2_000_000);
    skipped_only.record.result["skipped_cycles"] = json!(4);
    let data = report(vec![r, skipped_only, event(4, 128, 0, 3_000_000)]);
    let a = answer(&data);
    let f = a.backends[0].failed_below.unwrap();
    assert_eq!((f.underruns, f.skipped_cycles), (Some(3), Some(4)));
    let said: Vec<&str> = a.verdicts.iter().map(|v| v.text.as_str()).collect();
    assert!(
        said.iter()
            .any(|t| t.ends_with("3 under-runs, 2 skipped cycles in 10.00 s")),
        "{said:#?}"
    );
    assert!(
        said.iter()
            .any(|t| t.ends_with(": 4 skipped cycles in 10.00 s")),
        "{said:#?}"
    );
    assert!(text(&data).contains("64 frames did not hold (3 under-runs, 4 skipped cycles)"));
}

#[test]
fn merged_ok_lines_name_the_plan_axes_that_vary() {
    let mut cells = vec![
        cell(roundtrip(2, 128, 0, 2_600_000)),
        cell(roundtrip(3, 128, 0, 2_700_000)),
    ];
    for (c, w) in cells.iter_mut().zip(["sine", "fm"]) {
        c.axes.insert("workload".into(), w.into());
        c.axes.insert("repeat".into(), "1".into());
    }
    cells[1].axes.insert("repeat".into(), "2".into());
    let data = ReportData {
        cells,
        ..ReportData::default()
    };
    let a = answer(&data);
    assert_eq!(a.verdicts.len(), 1, "{:#?}", a.verdicts);
    assert_eq!(
        a.verdicts[0].text,
        "holds 128-frame periods at 48 kHz idle on JACK in 2 runs (workload: sine, fm): \
         round trip 2.60 ms to 2.70 ms"
    );
}

#[test]
fn each_machine_gets_its_line_and_nothing_smaller_is_said_plainly() {
    let mut a_run = event(2, 64, 0, 2_000_000);
    a_run.record.machine.hostname = "a".into();
    let mut b_run = event(3, 128, 0, 2_000_000);
    b_run.record.machine.hostname = "b".into();
    let data = report(vec![a_run, b_run]);
    let a = answer(&data);
    assert_eq!(a.machines.len(), 2, "{:?}", a.machines);
    let t = text(&data);
    assert!(
        t.contains("  machine: a: ") && t.contains("  machine: b: "),
        "{t}"
    );
    assert!(
        t.contains("; nothing with a shorter buffer was tried (tried: 64, 128 frames)"),
        "{t}"
    );
    let h = html(&data);
    assert_eq!(h.matches("<p class=\"machine\">").count(), 2, "{h}");
}

#[test]
fn a_round_trip_beside_an_event_run_at_the_same_period_is_the_same_setting() {
    // On JACK the event run stores the server's buffer (its ports' playback latency);
    // the round trip's loop ports report none: one setting, both latencies at it.
    let mut ev = event(5, 128, 0, 6_820_000);
    ev.record.result["buffer_frames"] = json!(256);
    let mut rt = roundtrip(6, 128, 0, 2_900_000);
    rt.record.result["playback_latency_frames"] = json!(0);
    let data = report(vec![ev, rt]);
    let b = &answer(&data).backends[0];
    assert_eq!(b.tried.len(), 1, "{:#?}", b.tried);
    assert_eq!(b.smallest_held.and_then(|h| h.buffer_frames), Some(256));
    assert!(
        b.event_latency_ns.is_some() && b.roundtrip_ns.is_some(),
        "{b:#?}"
    );
    assert_eq!(b.runs_held_at_smallest, (2, 2));
    let t = text(&data);
    assert!(
        t.contains("128/256 frames (5.33 ms buffer at 48 kHz) held, event latency 6.8"),
        "{t}"
    );
}

fn traced_jitter(id: i64, why: serde_json::Value) -> RunData {
    with(
        test_run(
            "jitter",
            json!({"start_ns": 1_000_000_000u64, "why": why}),
            vec![measured(
                "jitter",
                "wakeup_latency",
                &many(30_000, 100),
                None,
            )],
        ),
        id,
        json!({"load": "none", "period_ns": 1_000_000}),
        json!({"realtime": true}),
    )
}

#[test]
fn a_traced_run_s_culprits_are_in_the_answer_escaped_and_as_the_terminal_says_them() {
    let data = report(vec![traced_jitter(4, crate::view::why::test_why())]);
    let (t, h) = (text(&data), html(&data));
    assert!(h.contains("<h3 id=\"why\">"), "{h}");
    assert!(
        h.contains("2 of 3 late wake-ups: &lt;script&gt;x&lt;/script&gt; ran 9.80 ms"),
        "{h}"
    );
    assert!(
        h.contains("<code>&lt;script&gt;x&lt;/script&gt;</code></td><td class=\"label\">thread</td><td class=\"nowrap\">9.80 ms</td><td class=\"nowrap\">2 of 3</td>"),
        "{h}"
    );
    assert!(!h.contains("<script>"), "{h}");
    assert!(digit_runs(&h, 5).is_empty(), "{:?}", digit_runs(&h, 5));
    // The terminal's answer and the run's own view say the same.
    assert!(
        t.contains("run 4, idle: 3 late wake-ups later than 100.0 us explained from the kernel trace of cpu1 (no events lost)"),
        "{t}"
    );
    assert!(
        t.contains("2 of 3 late wake-ups: <script>x</script> ran 9.80 ms"),
        "{t}"
    );
    let w = <results::records::why::WhyRecord as results::records::Record>::from_json(
        &crate::view::why::test_why(),
    )
    .unwrap();
    let mut view = String::new();
    crate::view::why::text(&w, ("late wake-up", "late wake-ups"), None, &mut view);
    let a = answer(&data);
    assert!(view.contains(&a.whys[0].line), "{view}");
    for row in &a.whys[0].culprits {
        assert!(
            row.iter().all(|part| view.contains(part.as_str())),
            "{row:?} {view}"
        );
        assert!(
            row.iter()
                .all(|part| h.contains(&crate::words::escape(part))),
            "{row:?}"
        );
    }

    // Asked for but not traced: one line. Not asked: nothing.
    let untraced = report(vec![traced_jitter(
        5,
        json!({"unavailable": "tracing the kernel needs root"}),
    )]);
    let h = html(&untraced);
    assert_eq!(
        h.matches("not traced: tracing the kernel needs root")
            .count(),
        1,
        "{h}"
    );
    assert!(!h.contains("<table class=\"why\""), "{h}");
    let mut plain = traced_jitter(6, json!(null));
    plain.record.result = json!({"start_ns": 1});
    let none = report(vec![plain]);
    assert!(!html(&none).contains("id=\"why\""));
    assert!(!text(&none).contains("jitter --why"));
}
