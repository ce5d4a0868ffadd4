//! Showing what was stored: the HTML report in a browser, `compare`, and `runs`, `show`,
//! every export and the report for a probe that measured nothing.

use std::time::Duration;

use results::export::parse_cyclictest_histogram;
use results::{RunFilter, Store};

use crate::cdp::{png_size_with_ink, Browser};
use crate::util::{machine_lock, run, run_json, spawn, temp_db, wait_timeout};

/// A plan's report is one self-contained HTML file that a browser loads without errors
/// or fetching anything, showing the plan's table with its headers, the plots as SVG,
/// the runs with their validity flags and the machine; its screenshot is not blank.
#[test]
fn the_html_report_renders_in_headless_chromium_with_its_tables_and_plots() {
    let (dir, db) = temp_db("r.db");
    let plan = dir.path().join("virtual.toml");
    std::fs::write(
        &plan,
        r#"
name = "report-check"
title = "Report check: virtual card"
probe = "event"
repeats = 2
[set]
backend = "virtual"
triggers = 12
spacing = "20ms"
note = "5ms"
[sweep]
period = [64, 256]
workload = ["sine", "poly"]
[[report.table]]
title = "Mean latency by period and workload (ms)"
value = "event_latency.mean"
scale = 1e-6
rows = ["period"]
columns = ["workload"]
published = "made_up"
[published.made_up]
caption = "numbers to show beside ours"
rows = { "64" = [1.5, 1.6], "256" = [5.5, "-"] }
"#,
    )
    .unwrap();
    let out = run(&db, &["run", plan.to_str().unwrap(), "--no-report", "-q"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let html = dir.path().join("report.html");
    let out = run(&db, &["report", "group:1", "-o", html.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("report.html"), "{}", out.stdout);
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(!text.contains("src=\"http") && !text.contains("href=\"http"));

    let mut browser = Browser::launch();
    let mut page = browser.open(1200, 1600);
    let url = page.navigate(&html);
    let dom_text = page
        .eval("document.documentElement.outerHTML")
        .as_str()
        .unwrap()
        .to_string();
    // The paper-shaped table, its headers and the published value beside ours.
    assert!(dom_text.contains("Mean latency by period and workload (ms)"));
    assert!(
        dom_text.contains("<table class=\"paper\">"),
        "no paper table"
    );
    for header in [">period<", ">sine<", ">poly<"] {
        assert!(dom_text.contains(header), "header {header} missing");
    }
    assert!(dom_text.contains("class=\"published\""));
    // Plots: inline SVG in the plot contract, one with a log count axis.
    let plots = page.eval("document.querySelectorAll('svg.plot').length");
    assert!(plots.as_u64().unwrap_or(0) >= 3, "plots missing: {plots}");
    let y_labels = page.eval(
        "[...document.querySelectorAll('svg.plot text.axis-label.y')].map((t) => t.textContent)",
    );
    assert!(
        y_labels
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l == "count (log)"),
        "no plot with a `count (log)` axis: {y_labels}"
    );
    // Runs with validity flags, and the machine with doctor's findings.
    assert!(dom_text.contains("memory locked") && dom_text.contains("realtime"));
    assert!(dom_text.contains("Doctor's findings"));

    let shot = page.screenshot_full();
    png_size_with_ink(&shot, "the report's screenshot");
    let log = page.log();
    assert!(
        log.errors.is_empty(),
        "the page logged errors: {:?}",
        log.errors
    );
    let elsewhere: Vec<&String> = log
        .requests
        .iter()
        .filter(|r| **r != url && !r.starts_with("data:"))
        .collect();
    assert!(elsewhere.is_empty(), "the page fetched {elsewhere:?}");
}

/// `compare` puts two plan runs side by side: a change far beyond the repeats' spread
/// exceeds the noise, a plan run against itself is within it, and two single runs have
/// no noise estimate.
#[test]
fn compare_says_whether_a_change_exceeds_the_noise_of_the_repeats() {
    let (dir, db) = temp_db("c.db");
    let plan = |period: u32| {
        let p = dir.path().join(format!("p{period}.toml"));
        std::fs::write(
            &p,
            format!(
                "name = \"cmp{period}\"\nprobe = \"event\"\nrepeats = 3\n[set]\nbackend = \"virtual\"\nperiod = {period}\ntriggers = 12\nspacing = \"20ms\"\nnote = \"5ms\"\n[sweep]\nworkload = [\"sine\"]\n"
            ),
        )
        .unwrap();
        let out = run(&db, &["run", p.to_str().unwrap(), "--no-report", "-q"]);
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    };
    plan(64); // group 1
    plan(1024); // group 2
    let v = run_json(&db, &["compare", "group:1", "group:2", "--json"]);
    let rows = v["rows"].as_array().unwrap();
    let mean = rows
        .iter()
        .find(|r| r["metric"] == "event_latency" && r["statistic"] == "mean")
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(mean["configuration"], "event workload=sine");
    assert_eq!(mean["runs"], serde_json::json!([3, 3]));
    // 960 more frames of period at 48 kHz: the buffer alone adds 40 ms.
    assert!(mean["delta"].as_f64().unwrap() > 20e6, "{mean}");
    assert_eq!(mean["verdict"], "exceeds noise", "{mean}");
    // Without --metric each probe's headline; --all-metrics every one; --metric these.
    let metrics_of = |v: &serde_json::Value| {
        let mut m: Vec<String> = v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["metric"].as_str().unwrap().to_string())
            .collect();
        m.dedup();
        m
    };
    assert_eq!(metrics_of(&v), ["event_latency"]);
    let all = metrics_of(&run_json(
        &db,
        &["compare", "group:1", "group:2", "--all-metrics", "--json"],
    ));
    let other = all
        .iter()
        .find(|m| *m != "event_latency")
        .expect("more than the headline");
    let args = [
        "compare",
        "group:1",
        "group:2",
        "--metric",
        other,
        "--metric",
        "event_latency",
        "--json",
    ];
    let mut these = metrics_of(&run_json(&db, &args));
    these.sort();
    these.dedup();
    let mut want = vec![other.clone(), "event_latency".to_string()];
    want.sort();
    assert_eq!(these, want);
    let same = run_json(&db, &["compare", "group:1", "group:1", "--json"]);
    for r in same["rows"].as_array().unwrap() {
        assert_eq!(r["verdict"], "within noise", "{r}");
    }
    let text = run(&db, &["compare", "2", "6"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(text.stdout.contains("noise unknown"), "{}", text.stdout);
    // --html: the same comparison on top of one page, A and B on the same axes below.
    let page = dir.path().join("cmp.html");
    let out = run(
        &db,
        &[
            "compare",
            "group:1",
            "group:2",
            "--html",
            "-o",
            page.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("cmp.html"), "{}", out.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    let comparison = &html[html
        .find("<section id=\"comparison\"")
        .expect("no comparison")..];
    assert!(comparison.contains("exceeds noise"), "{comparison}");
    for side in ["group 1", "group 2"] {
        assert!(
            html.contains(&format!("data-series=\"{side}\"")),
            "no series for {side} in the overlaid plots"
        );
    }
    let out = run(&db, &["compare", "1", "2", "-o", "x.html"]);
    assert_eq!(out.code, 2, "-o without --html: {}", out.stderr);
    // The groups list gives the ids `report` and `compare` take.
    let groups = run_json(&db, &["runs", "--groups", "--json"]);
    let groups = groups.as_array().unwrap();
    assert_eq!(groups.len(), 2, "{groups:?}");
    assert_eq!(groups[0]["id"], 2);
    assert_eq!(groups[0]["kind"], "plan");
    assert_eq!(groups[0]["name"], "cmp1024");
    assert_eq!(
        groups[0]["cells"],
        serde_json::json!({"complete": 3, "total": 3})
    );
    let bad = run(&db, &["compare", "group:99", "1"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("no group with id 99"), "{}", bad.stderr);
}

/// The cells of `metric`'s row in a summary table (after the metric's name).
fn summary_row<'a>(text: &'a str, metric: &str) -> Vec<&'a str> {
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(metric))
        .unwrap_or_else(|| panic!("no {metric} row in:\n{text}"))
        .split_whitespace()
        .skip(1)
        .collect()
}

/// Every probe made to measure nothing (a round trip without a cable, an event run
/// stopped before its first trigger, a controller nobody answers, a host nobody sends
/// to, a jitter run of one cycle with no interval): `runs`, `show`, `show --json`, every
/// export and the HTML report say so (`-`, `null`, an empty cell) and never print 0 for
/// a statistic nobody measured.
#[test]
fn a_probe_that_measured_nothing_prints_no_made_up_zero() {
    let _m = machine_lock();
    let (dir, db) = temp_db("nothing.db");
    let ok = |args: &[&str], code: i32| {
        let out = run(&db, args);
        assert_eq!(out.code, code, "{args:?}: {}", out.stderr);
        out
    };
    // (run id, metric that measured nothing)
    let mut empty: Vec<(results::RunId, &str)> = Vec::new();
    let last = |db: &std::path::Path| {
        Store::open_existing(db)
            .unwrap()
            .list_runs(&RunFilter::default())
            .unwrap()[0]
            .id
    };

    ok(&["jitter", "--loops", "1", "--quiet"], 0);
    empty.push((last(&db), "wakeup_interval"));
    let jitter = last(&db);

    ok(
        &[
            "roundtrip",
            "--backend",
            "virtual",
            "--no-cable",
            "--duration",
            "2s",
            "--quiet",
        ],
        // It measured nothing: stored `failed`, with the reason.
        1,
    );
    empty.push((last(&db), "roundtrip"));
    empty.push((last(&db), "roundtrip_impulse"));
    let roundtrip = last(&db);

    // The first trigger is due after the warm-up and 30 s: Ctrl-C comes long before.
    let mut ev = spawn(
        &db,
        &[
            "event",
            "--backend",
            "virtual",
            "--triggers",
            "5",
            "--spacing",
            "30s",
            "--quiet",
        ],
    );
    std::thread::sleep(Duration::from_millis(1_500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(ev.id() as i32, libc::SIGINT) };
    let status = wait_timeout(&mut ev, Duration::from_secs(30));
    assert_eq!(status.code(), Some(130), "event exited {status:?}");
    empty.push((last(&db), "event_latency"));
    let event = last(&db);

    // A controller nobody answers: every block is lost.
    ok(
        &[
            "net",
            "emulate",
            "--host",
            "127.0.0.1:19722",
            "--bind",
            "127.0.0.1:19723",
            "--duration",
            "1s",
            "--warmup",
            "100ms",
        ],
        1,
    );
    empty.push((last(&db), "end_to_end"));
    let emulate = last(&db);
    // A host nobody sends to: nothing answered (a failed run: it measured nothing).
    ok(
        &[
            "net",
            "respond",
            "--bind",
            "127.0.0.1:19724",
            "--peer",
            "127.0.0.1:19725",
            "--duration",
            "1s",
            "--warmup",
            "100ms",
        ],
        1,
    );
    empty.push((last(&db), "response_time"));
    empty.push((last(&db), "after_last_packet"));
    empty.push((last(&db), "synth_time"));
    let respond = last(&db);

    let store = Store::open_existing(&db).unwrap();
    for &(id, metric) in &empty {
        let m = store
            .measurements(id)
            .unwrap()
            .into_iter()
            .find(|m| m.measurement.metric == metric)
            .unwrap_or_else(|| panic!("run {id} has no {metric}"))
            .measurement;
        assert_eq!((m.count(), m.summary), (0, None), "run {id} {metric}");
    }
    // The controller's misses are counted against the blocks it sent, not 0 answers.
    let e2e = store.measurements(emulate).unwrap()[0].measurement.clone();
    let sent = e2e.detail["blocks_sent"].as_u64().unwrap();
    assert!(
        sent > 0 && e2e.misses == Some(sent),
        "{:?} {}",
        e2e.misses,
        e2e.detail
    );
    drop(store);

    // `runs`: the headline of a run that measured nothing is `-`, never 0.
    let runs = ok(&["runs"], 0).stdout;
    for id in [roundtrip, event, emulate, respond] {
        let row: Vec<&str> = runs
            .lines()
            .find(|l| l.split_whitespace().next() == Some(&id.to_string()))
            .unwrap_or_else(|| panic!("run {id} not listed:\n{runs}"))
            .split_whitespace()
            .collect();
        assert_eq!(row[row.len() - 3..], ["-", "-", "-"], "run {id}: {row:?}");
    }
    // The filter flags reach the store's query: a probe and a limit.
    let nets = run_json(&db, &["runs", "--probe", "net", "-n", "1", "--json"]);
    assert_eq!(nets.as_array().unwrap().len(), 1, "{nets}");
    assert_eq!(nets[0]["probe"], "net", "{nets}");
    let listed = run_json(&db, &["runs", "--json"]);
    for r in listed.as_array().unwrap() {
        if r["id"] != jitter.get() {
            assert_eq!(r["summary"]["count"], 0, "{r}");
            assert!(
                r["summary"]["p50"].is_null() && r["summary"]["max"].is_null(),
                "{r}"
            );
        }
    }

    for &(id, metric) in &empty {
        let id_text = id.to_string();
        // `show`: a count of 0 and `-` for every statistic.
        let shown = ok(&["show", &id_text], 0).stdout;
        let row = summary_row(&shown, metric);
        assert_eq!(row[0], "0", "{metric}: {row:?}");
        assert!(
            row[1..row.len() - 1].iter().all(|c| *c == "-"),
            "{metric}: {row:?}"
        );
        assert!(!shown.contains(" of 0 "), "{shown}");
        // `show --json` and `export --format json`: null.
        for args in [
            vec!["show", &id_text, "--json"],
            vec!["export", &id_text, "--format", "json"],
        ] {
            let v = run_json(&db, &args);
            let m = v["measurements"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["metric"] == metric)
                .unwrap();
            assert_eq!(m["summary"]["count"], 0, "{args:?}");
            for k in [
                "min", "mean", "stdev", "p50", "p90", "p99", "p99.9", "p99.99", "max",
            ] {
                assert!(m["summary"][k].is_null(), "{args:?} {metric}.{k}: {m}");
            }
        }
        // CSV: empty cells.
        let csv = ok(&["export", &id_text, "--format", "csv"], 0).stdout;
        let line = csv
            .lines()
            .find(|l| l.split(',').nth(2) == Some(metric))
            .unwrap_or_else(|| panic!("{metric} not in {csv}"));
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[4], "0", "{line}");
        assert!(cells[5..14].iter().all(|c| c.is_empty()), "{line}");
        // HDR log: no interval for a histogram without samples; a comment names it.
        let hdr = ok(&["export", &id_text, "--format", "hdr"], 0).stdout;
        assert!(!hdr.contains(&format!("Tag={metric},")), "{hdr}");
        assert!(
            hdr.contains("no samples, left out:") && hdr.contains(metric),
            "{hdr}"
        );
    }

    // cyclictest's format: jitter runs only, one line otherwise; no made-up statistics.
    for id in [roundtrip, event, emulate, respond] {
        let out = ok(&["export", &id.to_string(), "--format", "cyclictest"], 2);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(
            out.stderr.contains("exports jitter runs only"),
            "{}",
            out.stderr
        );
        assert!(out.stdout.is_empty());
    }
    let cy = ok(
        &["export", &jitter.to_string(), "--format", "cyclictest"],
        0,
    )
    .stdout;
    let parsed = parse_cyclictest_histogram(&cy);
    assert_eq!(parsed.total + parsed.overflows, 1, "{cy}");
    assert!(
        parsed.buckets.len() < 100_000,
        "{} lines",
        parsed.buckets.len()
    );
    // Triggers: an event run without any exports the header alone.
    let tr = ok(&["export", &event.to_string(), "--format", "triggers"], 0).stdout;
    assert_eq!(tr.lines().count(), 1, "{tr}");
    // Series: a window with no signal has no delay (an empty cell, not 0).
    let series = ok(&["export", &roundtrip.to_string(), "--format", "series"], 0).stdout;
    let mut lines = series
        .lines()
        .skip_while(|l| !l.starts_with("# roundtrip_windows"));
    let head: Vec<&str> = lines.nth(1).unwrap().split(',').collect();
    let delay = head.iter().position(|c| *c == "delay_frames").unwrap();
    let window: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(window[delay], "", "{series}");

    // The HTML report: the headline cells of those runs are `-`.
    let html_path = dir.path().join("r.html");
    let ids: Vec<String> = [roundtrip, event, emulate, respond]
        .iter()
        .map(results::RunId::to_string)
        .collect();
    let mut args = vec!["report", "-o", html_path.to_str().unwrap()];
    args.extend(ids.iter().map(String::as_str));
    ok(&args, 0);
    let html = std::fs::read_to_string(&html_path).unwrap();
    for id in &ids {
        let row = html
            .split("<tr>")
            .find(|r| r.contains(&format!("<td>{id}</td>")))
            .unwrap_or_else(|| panic!("run {id} has no row in the report"));
        let cells: Vec<&str> = row.split("<td").skip(5).take(3).collect();
        assert!(
            cells.iter().all(|c| c.ends_with(">-</td>")),
            "run {id}: {cells:?}"
        );
    }
    for zero in [">0 ns<", ">0.0 ns<", ">0 us<", ">0.00 ms<"] {
        assert!(!html.contains(zero), "{zero} in the report");
    }
}
