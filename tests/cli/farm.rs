//! The farm formats of `audiolat export`, each read by an independent reader: the
//! `cyclictest-json` layout against `cyclictest --json` itself and Linaro's rt-tests
//! parser logic, the `hdr` log by HdrHistogram's Python reader (`hdrh`), OpenMetrics by
//! Prometheus' own parser (`prometheus_client`). The Python readers live in the venv
//! `scripts/install-deps` makes.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::*;

/// The venv's Python with `hdrh` and `prometheus_client`.
fn python() -> PathBuf {
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
    let py = Path::new(&home).join(".cache/audiolat/py/bin/python3");
    assert!(
        py.exists(),
        "{} is missing: run scripts/install-deps (it installs hdrhistogram and prometheus_client from PyPI there)",
        py.display()
    );
    py
}

/// Runs `script` with `arg` in the venv's Python; its stdout as JSON.
fn python_json(script: &str, arg: &Path) -> Value {
    let out = Command::new(python())
        .arg("-c")
        .arg(script)
        .arg(arg)
        .output()
        .expect("running python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse_json(&out.stdout)
}

/// Runs `script` in the venv's Python after a prelude that reads the hdr log given as
/// its argument with HdrHistogram's reader (`reader`), each interval by its tag (`hists`).
fn hdr_python(script: &str, log: &Path) -> Value {
    let prelude = "import json, sys\nfrom hdrh.histogram import HdrHistogram\nfrom hdrh.log import HistogramLogReader\nreader = HistogramLogReader(sys.argv[1], HdrHistogram(1, 10**12, 3))\nhists = {}\nwhile True:\n    h = reader.get_next_interval_histogram()\n    if h is None:\n        break\n    hists[h.get_tag()] = h\n";
    python_json(&format!("{prelude}{}", script.trim_start()), log)
}

/// `audiolat export last --format FORMAT -o FILE` on `db`, which must succeed.
fn export_to(db: &Path, format: &str, file: &Path) {
    let out = run(
        db,
        &[
            "export",
            "last",
            "--format",
            format,
            "-o",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
}

/// A short jitter run in a fresh database, and its `show --json`.
fn jitter_run(db: &Path) -> Value {
    let out = run(
        db,
        &["jitter", "--loops", "2000", "--interval", "500us", "-q"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let shown = run_json(db, &["show", "last", "--json"]);
    assert_eq!(summary(&shown, "wakeup_latency")["count"], 2000);
    shown
}

/// The summary of `metric` in a `show --json` document.
fn summary<'a>(shown: &'a Value, metric: &str) -> &'a Value {
    let m = shown["measurements"].as_array().unwrap();
    &m.iter().find(|m| m["metric"] == metric).unwrap()["summary"]
}

/// The JSON type of a value, as a name.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Each key of `a` and `b` with its type, for the objects that hold them.
fn shape(v: &Value) -> Vec<(String, &'static str)> {
    let mut out: Vec<(String, &'static str)> = v
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), kind(v)))
        .collect();
    out.sort();
    out
}

/// Linaro test-definitions' `parse_rt_tests_results.py`, as documented: for each of
/// `num_threads` threads `thread["<n>"]`, a result line `t<n>-<min|avg|max>-latency pass
/// <value> us`, then the test's own line, `pass` when `return_code` is 0.
fn linaro_lines(doc: &Value, test: &str) -> Vec<String> {
    let threads = doc["num_threads"]
        .as_u64()
        .expect("num_threads is an integer");
    let mut lines = Vec::new();
    for t in 0..threads {
        let data = &doc["thread"][t.to_string()];
        for k in ["min", "avg", "max"] {
            let v = data[k]
                .as_f64()
                .unwrap_or_else(|| panic!("{k} is a number"));
            lines.push(format!("t{t}-{k}-latency pass {v:.2} us"));
        }
    }
    let code = doc["return_code"]
        .as_i64()
        .expect("return_code is an integer");
    lines.push(format!(
        "{test} {}",
        if code == 0 { "pass" } else { "fail" }
    ));
    lines
}

/// `export --format cyclictest-json` has the keys and types of `cyclictest --json`
/// (rt-tests 2.4) made in the same test, top level, `sysinfo` and a thread; Linaro's
/// parser logic reads min, avg and max equal to `show`'s, in µs; the histogram's counts
/// add up to the cycles.
#[test]
fn cyclictest_json_has_cyclictests_keys_and_types_and_linaros_parser_reads_it() {
    let _m = machine_lock();
    require_tool("cyclictest", "rt-tests");
    let (dir, db) = temp_db("farm.db");
    let shown = jitter_run(&db);
    let out = run(&db, &["export", "last", "--format", "cyclictest-json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let ours = parse_json(&out.stdout);

    let reference = dir.path().join("cyclictest.json");
    let cy = Command::new(load::find_in_path("cyclictest").unwrap())
        .args(["-q", "-l", "200", "-i", "1000", "-h", "100", "-t", "1"])
        .arg(format!("--json={}", reference.display()))
        .output()
        .expect("running cyclictest");
    assert!(
        cy.status.success(),
        "{}",
        String::from_utf8_lossy(&cy.stderr)
    );
    let theirs: Value = serde_json::from_str(&std::fs::read_to_string(&reference).unwrap())
        .expect("cyclictest's JSON");
    assert_eq!(shape(&ours), shape(&theirs));
    assert_eq!(shape(&ours["sysinfo"]), shape(&theirs["sysinfo"]));
    assert_eq!(shape(&ours["thread"]["0"]), shape(&theirs["thread"]["0"]));
    for (bucket, count) in ours["thread"]["0"]["histogram"].as_object().unwrap() {
        assert!(
            bucket.parse::<u64>().is_ok() && count.is_u64(),
            "{bucket}: {count}"
        );
    }

    let s = summary(&shown, "wakeup_latency");
    let us = |ns: &Value| ns.as_f64().unwrap() / 1_000.0;
    let lines = linaro_lines(&ours, "cyclictest");
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert_eq!(
        lines[0],
        format!("t0-min-latency pass {:.2} us", us(&s["min"]).floor())
    );
    let avg: f64 = lines[1]
        .strip_prefix("t0-avg-latency pass ")
        .and_then(|l| l.strip_suffix(" us"))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{}", lines[1]));
    // cyclictest writes the average to 2 decimals of a µs.
    assert!(
        (avg - us(&s["mean"])).abs() <= 0.0051,
        "{avg} vs {}",
        s["mean"]
    );
    assert_eq!(
        lines[2],
        format!("t0-max-latency pass {:.2} us", us(&s["max"]).floor())
    );
    assert_eq!(lines[3], "cyclictest pass");
    let thread = &ours["thread"]["0"];
    assert_eq!(thread["cycles"], s["count"]);
    let binned: u64 = thread["histogram"]
        .as_object()
        .unwrap()
        .values()
        .map(|c| c.as_u64().unwrap())
        .sum();
    let overflows = shown["measurements"][0]["overflows"].as_u64().unwrap_or(0);
    assert_eq!(binned + overflows, s["count"].as_u64().unwrap());
}

/// The `hdr` log is read by HdrHistogram's Python reader: its start time is the run's,
/// and each tagged interval's count and percentiles are `show`'s.
#[test]
fn hdr_log_is_read_by_hdrhistograms_python_reader_with_shows_percentiles() {
    let _m = machine_lock();
    let (dir, db) = temp_db("farm.db");
    let shown = jitter_run(&db);
    let log = dir.path().join("run.hlog");
    export_to(&db, "hdr", &log);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.starts_with("#[Histogram log format version 1.3]\n"),
        "{text}"
    );
    assert!(text.contains("\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"));
    let read = hdr_python(
        r#"
out = {t: {"count": h.get_total_count(), "max": h.get_max_value(),
    **{str(p): h.get_value_at_percentile(p) for p in (50, 90, 99, 99.9)}} for t, h in hists.items()}
out["start"] = reader.get_start_time_sec()
print(json.dumps(out))
"#,
        &log,
    );
    let started = results::model::epoch_of_rfc3339(shown["run"]["started_at"].as_str().unwrap());
    assert!((read["start"].as_f64().unwrap() - started.unwrap()).abs() < 0.001);
    // HdrHistogram's readers round a percentile's rank, audiolat takes the nearest rank
    // (its ceiling): the two agree where the rank is whole, as every one of these is
    // for the 2000 wake-ups; the 1999 intervals agree on their count and median.
    for (metric, percentiles) in [
        ("wakeup_latency", &["50", "90", "99", "99.9"][..]),
        ("wakeup_interval", &["50"][..]),
    ] {
        let s = summary(&shown, metric);
        let h = &read[metric];
        assert_eq!(h["count"], s["count"], "{metric}");
        for theirs in percentiles {
            let ours = format!("p{theirs}");
            let (theirs, ours) = (h[theirs].as_f64().unwrap(), s[&ours].as_f64().unwrap());
            // The same histogram: equal to its 3 significant digits' bucket.
            assert!(
                (theirs - ours).abs() <= ours * 1e-3 + 1.0,
                "{metric} {theirs} vs show's {ours}"
            );
        }
    }
}

/// The OpenMetrics text passes Prometheus' own strict parser: a histogram per
/// measurement in seconds whose cumulative buckets rise to `show`'s count.
#[test]
fn openmetrics_is_read_by_prometheus_parser_with_shows_counts() {
    let _m = machine_lock();
    let (dir, db) = temp_db("farm.db");
    let shown = jitter_run(&db);
    let file = dir.path().join("run.prom");
    let args = [
        "export",
        "last",
        "-f",
        "openmetrics",
        "-o",
        file.to_str().unwrap(),
    ];
    let out = run(&db, &args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let read = python_json(
        r#"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = {}
for family in text_string_to_metric_families(open(sys.argv[1]).read()):
    out[family.name] = {"type": family.type, "unit": family.unit,
        "samples": [[s.name, s.labels, s.value] for s in family.samples]}
print(json.dumps(out))
"#,
        &file,
    );
    let family = &read["audiolat_wakeup_latency_seconds"];
    assert_eq!(family["type"], "histogram");
    assert_eq!(family["unit"], "seconds");
    let samples = family["samples"].as_array().unwrap();
    let buckets: Vec<f64> = samples
        .iter()
        .filter(|s| s[0] == "audiolat_wakeup_latency_seconds_bucket")
        .map(|s| s[2].as_f64().unwrap())
        .collect();
    assert!(
        buckets.len() > 5 && buckets.windows(2).all(|w| w[0] <= w[1]),
        "{buckets:?}"
    );
    let s = summary(&shown, "wakeup_latency");
    assert_eq!(buckets.last().copied(), s["count"].as_f64());
    // Each `le` bucket holds the samples HdrHistogram's Python reader finds in the
    // run's hdr log at or below it (whole buckets: a bucket reaching past `le` is not).
    let log = dir.path().join("run.hlog");
    export_to(&db, "hdr", &log);
    let counts = hdr_python(
        r#"
h = hists["wakeup_latency"]
les = [k * 10**e for e in range(3, 9) for k in (1, 2, 5)]
print(json.dumps([sum(i.count_added_in_this_iter_step for i in h.get_recorded_iterator()
    if h.get_highest_equivalent_value(i.value_iterated_to) <= le) for le in les]))
"#,
        &log,
    );
    let theirs: Vec<f64> = counts
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_f64().unwrap())
        .collect();
    let finite = &buckets[..buckets.len() - 1];
    assert_eq!(
        finite,
        &theirs[..finite.len()],
        "le buckets against the hdr log"
    );
    let count = samples
        .iter()
        .find(|s| s[0] == "audiolat_wakeup_latency_seconds_count")
        .unwrap();
    assert_eq!(count[2].as_f64(), s["count"].as_f64());
    assert_eq!(count[1]["probe"], "jitter");
}

/// The LAVA test definition's steps, as LAVA runs them (from a copy of the repository's
/// `lava/`, its params in the environment), with a `lava-test-case` that records its
/// calls: one case per metric statistic and per gate, each with its result, measurement
/// and units, the gates' values those `show` has, and audiolat's gate exit not taken
/// for a broken test.
#[test]
fn the_lava_definition_reports_a_case_per_metric_and_gate() {
    let _m = machine_lock();
    let dir = tempdir();
    let lava = dir.path().join("lava");
    std::fs::create_dir_all(&lava).unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("lava");
    for file in ["audiolat.sh", "send-to-lava.sh", "audiolat.yaml"] {
        std::fs::copy(source.join(file), lava.join(file)).unwrap();
    }
    let bin_dir = dir.path().join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let calls = dir.path().join("calls.txt");
    let recorder = bin_dir.join("lava-test-case");
    std::fs::write(
        &recorder,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\t' \"$a\"; done >> '{}'\necho >> '{}'\n",
            calls.display(),
            calls.display()
        ),
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&recorder)
        .status()
        .unwrap();

    // The definition's steps: the lines under `run:` / `steps:`.
    let yaml = std::fs::read_to_string(lava.join("audiolat.yaml")).unwrap();
    assert!(yaml.starts_with("metadata:\n    format: Lava-Test Test Definition 1.0\n"));
    let steps: Vec<&str> = yaml
        .split("\n    steps:\n")
        .nth(1)
        .expect("run steps")
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .collect();
    assert_eq!(steps.len(), 3, "{steps:?}");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .arg("-ec")
        .arg(steps.join("\n"))
        .current_dir(dir.path())
        .env("PATH", path)
        .env("SCENARIO", "jitter")
        .env("DURATION", "1s")
        .env("LOAD", "none")
        .env("GATES", "p99.9 > 1s; p50 > 1ns")
        .env("AUDIOLAT", bin())
        .env("EXTRA", "--interval 500us")
        .output()
        .expect("running the definition's steps");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");

    let calls = std::fs::read_to_string(&calls).unwrap();
    let calls: Vec<Vec<&str>> = calls
        .lines()
        .map(|l| l.trim_end_matches('\t').split('\t').collect())
        .collect();
    let name_ok = |n: &str| {
        !n.is_empty()
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    };
    assert!(
        calls.iter().all(|c| name_ok(c[0]) && c[1] == "--result"),
        "{calls:?}"
    );
    let case = |name: &str| {
        calls
            .iter()
            .find(|c| c[0] == name)
            .unwrap_or_else(|| panic!("no case {name} in {calls:?}"))
    };
    assert_eq!(case("jitter-run")[1..], ["--result", "pass"]);
    let db = lava.join("output/audiolat.db");
    let shown = run_json(&db, &["show", "last", "--json"]);
    let p50_us = summary(&shown, "wakeup_latency")["p50"].as_f64().unwrap() / 1_000.0;
    let gate = case("gate-p50-gt-1ns");
    assert_eq!(
        gate[1..5],
        ["--result", "fail", "--measurement", &format!("{p50_us:.3}")]
    );
    assert_eq!(gate[5..], ["--units", "us"]);
    assert_eq!(case("gate-p99.9-gt-1s")[2], "pass");
    // A case per statistic of each measurement with samples, each with its units.
    let measurements = shown["measurements"].as_array().unwrap();
    let measured = measurements
        .iter()
        .filter(|m| !m["summary"]["p50"].is_null());
    for m in measured.clone() {
        for stat in ["min", "mean", "p50", "p99", "p99.9", "max"] {
            let c = case(&format!("{}-{stat}", m["metric"].as_str().unwrap()));
            assert_eq!((c[2], c[5], c[6]), ("pass", "--units", "us"), "{c:?}");
        }
    }
    assert_eq!(calls.len(), 1 + 6 * measured.count() + 2, "{calls:?}");
}

/// JUnit XML, read by Python's own XML parser: a test case for the run and one per
/// gate, a failure where the run fails a gate, the metrics as properties equal to
/// `show`'s; a format of one jitter run is refused up front on another probe.
#[test]
fn junit_has_a_case_per_gate_and_the_metrics_as_properties() {
    let _m = machine_lock();
    let (dir, db) = temp_db("farm.db");
    let args = ["jitter", "--loops", "500", "--interval", "500us", "-q"];
    let gates = ["--fail-if", "p50 > 1ns", "--fail-if", "max > 10s"];
    let out = run(&db, &[&args[..], &gates[..]].concat());
    assert_eq!(out.code, 3, "a failed gate exits 3: {}", out.stderr);
    let shown = run_json(&db, &["show", "last", "--json"]);
    let file = dir.path().join("junit.xml");
    export_to(&db, "junit", &file);
    let read = python_json(
        r#"
import json, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suite = root.find("testsuite")
print(json.dumps({"tests": root.get("tests"), "failures": root.get("failures"),
    "cases": [[c.get("name"), c.find("failure") is not None] for c in suite.iter("testcase")],
    "properties": {p.get("name"): p.get("value") for p in suite.iter("property")}}))
"#,
        &file,
    );
    assert_eq!(
        (read["tests"].as_str(), read["failures"].as_str()),
        (Some("3"), Some("1"))
    );
    let cases = read["cases"].as_array().unwrap();
    assert_eq!(cases[1], serde_json::json!(["gate p50 > 1ns", true]));
    assert_eq!(cases[2], serde_json::json!(["gate max > 10s", false]));
    let p50 = summary(&shown, "wakeup_latency")["p50"].as_f64().unwrap();
    let property = read["properties"]["wakeup_latency.p50_ns"]
        .as_str()
        .unwrap();
    assert_eq!(property.parse::<f64>().unwrap(), p50);

    let refused = run(&db, &["event", "--output-format", "cyclictest-json"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("is a jitter run's"),
        "{}",
        refused.stderr
    );
    let runs = run_json(&db, &["runs", "--json"]);
    assert_eq!(
        runs.as_array().map(Vec::len),
        Some(1),
        "nothing more was stored"
    );
}

/// A histogram's samples above its bound are not in the hdr log's interval (which
/// holds those within it, read back in full by the Python reader) but named in a
/// comment with their count and the exact max; an interval never holds a made-up 0.
#[test]
fn hdr_log_names_the_overflows_and_logs_only_the_samples_within_the_bound() {
    let _m = machine_lock();
    let (dir, db) = temp_db("farm.db");
    let out = run(
        &db,
        &[
            "jitter",
            "--loops",
            "500",
            "--interval",
            "500us",
            "--hist-bound",
            "12us",
            "-q",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let shown = run_json(&db, &["show", "last", "--json"]);
    let m = &shown["measurements"].as_array().unwrap()[0];
    let (count, overflows) = (
        m["summary"]["count"].as_u64().unwrap(),
        m["overflows"].as_u64().unwrap(),
    );
    let log = dir.path().join("run.hlog");
    export_to(&db, "hdr", &log);
    let text = std::fs::read_to_string(&log).unwrap();
    if overflows == 0 {
        eprintln!("skipped: no wake-up above 12 us here, so no overflow to log");
        return;
    }
    let max = m["summary"]["max"].as_f64().unwrap() as u64;
    let comment = format!("wakeup_latency {overflows} above 12000 ns (max {max} ns)");
    assert!(text.contains(&comment), "{comment} not in\n{text}");
    let read = hdr_python(
        r#"
out = {t: [h.get_total_count(), h.get_max_value()] for t, h in hists.items()}
print(json.dumps(out))
"#,
        &log,
    );
    let logged = &read["wakeup_latency"];
    if count > overflows {
        assert_eq!(logged[0].as_u64(), Some(count - overflows));
        assert!(logged[1].as_u64().unwrap() > 0 && logged[1].as_u64().unwrap() <= 12_100);
    } else {
        assert!(logged.is_null(), "an interval of no samples: {logged}");
    }
}
