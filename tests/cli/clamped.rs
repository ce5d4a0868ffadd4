//! A percentile above the histogram's bound is "at least the bound", never a measured
//! value, in every format a run is shown or exported in.

use crate::util::*;

/// The summary of `metric` in a `show --json` document.
fn summary<'a>(shown: &'a serde_json::Value, metric: &str) -> &'a serde_json::Value {
    let m = shown["measurements"].as_array().unwrap();
    &m.iter().find(|m| m["metric"] == metric).unwrap()["summary"]
}

/// A run whose percentiles all lie above `--hist-bound` (its smallest, 1 us: no wake-up
/// here comes that soon) in every format a run is exported or shown in: no format
/// publishes the bound as a measured percentile. Each leaves it out or says "at least":
/// CSV an empty cell with the bound in `percentiles_clamped_at`, LAVA an `unknown` case
/// without a measurement, JUnit no property but the bound's, JSON the bound beside the
/// summary, the gates no value but the bound in their reason (a `>` gate below it fails,
/// a `<` gate is unknown, never a pass), `show` and the report `>=1.0 us`; the
/// histogram formats (OpenMetrics, cyclictest's text and JSON, the hdr log) count the
/// samples as overflows, above every bucket.
#[test]
fn a_percentile_above_the_histogram_bound_is_at_least_the_bound_in_every_format() {
    let _m = machine_lock();
    let (dir, db) = temp_db("clamped.db");
    let out = run(
        &db,
        &[
            "jitter",
            "--loops",
            "300",
            "--interval",
            "500us",
            "--hist-bound",
            "1us",
            "--fail-if",
            "p50 > 1ns",
            "--fail-if",
            "p50 < 1s",
            "-q",
        ],
    );
    assert_eq!(out.code, 3, "the gates fail: {}", out.stderr);
    let shown = run_json(&db, &["show", "last", "--json"]);
    let s = summary(&shown, "wakeup_latency");
    let count = s["count"].as_u64().unwrap();
    assert!(s["min"].as_f64().unwrap() > 1_000.0, "{s}");
    assert_eq!(s["percentiles_clamped_at"], 1000.0, "{s}");
    let export = |format: &str| {
        let out = run(&db, &["export", "last", "--format", format]);
        assert_eq!(out.code, 0, "{format}: {}", out.stderr);
        out.stdout
    };

    // CSV: the percentiles' cells empty, the bound in its own column.
    let csv = export("csv");
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let row: Vec<&str> = csv
        .lines()
        .find(|l| l.contains(",wakeup_latency,"))
        .unwrap()
        .split(',')
        .collect();
    let cell = |name: &str| row[head.iter().position(|h| *h == name).unwrap()];
    for p in ["p50", "p90", "p99", "p99.9", "p99.99"] {
        assert_eq!(cell(p), "", "{p} in {csv}");
    }
    assert_eq!(cell("percentiles_clamped_at"), "1000", "{csv}");
    assert_eq!(cell("count"), count.to_string());
    assert!(!cell("min").is_empty() && !cell("max").is_empty(), "{csv}");

    // LAVA: an unknown case without a measurement; no "p50 pass 1.000 us".
    let lava = export("lava");
    for p in ["p50", "p99", "p99.9"] {
        assert!(
            lava.lines()
                .any(|l| l == format!("wakeup_latency-{p} unknown")),
            "{p}: {lava}"
        );
    }
    assert!(!lava.contains(" 1.000 us"), "{lava}");
    assert!(lava.lines().any(|l| l == "gate-p50-gt-1ns fail"), "{lava}");
    assert!(lava.lines().any(|l| l == "gate-p50-lt-1s fail"), "{lava}");

    // JUnit: no percentile property, the bound's; no gate "measured" the bound.
    let junit = export("junit");
    assert!(!junit.contains("\"wakeup_latency.p50_ns\""), "{junit}");
    assert!(
        junit.contains(
            "<property name=\"wakeup_latency.percentiles_clamped_at_ns\" value=\"1000\"/>"
        ),
        "{junit}"
    );
    assert!(!junit.contains("measured 1"), "{junit}");
    assert!(
        junit.contains("at least 1 us, the histogram&apos;s bound")
            || junit.contains("at least 1 us, the histogram's bound"),
        "{junit}"
    );

    // The gates: no value, the bound in the reason; as stored, in JSON and CSV.
    let gates = &shown["gates"];
    assert_eq!(gates[0]["outcome"], "fail", "{gates}");
    assert_eq!(gates[1]["outcome"], "unknown", "{gates}");
    for g in gates.as_array().unwrap() {
        assert!(g["value"].is_null(), "{g}");
        assert!(
            g["reason"]
                .as_str()
                .unwrap()
                .starts_with("at least 1 us, the histogram's bound"),
            "{g}"
        );
    }
    let gates_csv = export("gates");
    assert!(
        gates_csv
            .lines()
            .nth(2)
            .unwrap()
            .ends_with(",ns,,unknown,\"at least 1 us, the histogram's bound: not known\""),
        "{gates_csv}"
    );

    // The histogram formats: every sample an overflow, above every bucket.
    let om = export("openmetrics");
    let bucket = |le: &str| {
        om.lines()
            .find(|l| {
                l.starts_with("audiolat_wakeup_latency_seconds_bucket{")
                    && l.contains(&format!("le=\"{le}\""))
            })
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|n| n.parse::<u64>().ok())
    };
    assert_eq!(bucket("0.000001"), Some(0), "{om}");
    assert_eq!(bucket("+Inf"), Some(count), "{om}");
    let ct = results::export::parse_cyclictest_histogram(&export("cyclictest"));
    assert_eq!((ct.total, ct.overflows), (0, count));
    let ctj = parse_json(export("cyclictest-json"));
    assert_eq!(ctj["thread"]["0"]["histogram"], serde_json::json!({}));
    assert_eq!(ctj["thread"]["0"]["cycles"], count);
    let hdr = export("hdr");
    assert!(!hdr.contains("Tag=wakeup_latency,"), "{hdr}");
    assert!(
        hdr.contains(&format!("wakeup_latency {count} above 1000 ns")),
        "{hdr}"
    );

    // What people read: `show`, `runs` and the report say ">=".
    let text = run(&db, &["show", "last"]).stdout;
    let line = text
        .lines()
        .find(|l| l.starts_with("wakeup_latency "))
        .unwrap();
    assert!(line.contains(">=1.0 us"), "{line}");
    let runs = run(&db, &["runs"]).stdout;
    assert!(runs.contains(">=1.0 us"), "{runs}");
    let html = dir.path().join("r.html");
    let report = run(&db, &["report", "last", "-o", html.to_str().unwrap()]);
    assert_eq!(report.code, 0, "{}", report.stderr);
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(html.contains("&gt;=1.0 us"), "the runs table's p99");
}
