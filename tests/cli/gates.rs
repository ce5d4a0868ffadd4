//! Threshold gates (`--fail-if`): refused up front when wrong (exit 2, nothing run or
//! stored), judged on the stored run (exit 3 when one fails), their verdicts stored and
//! shown by `show`, `export` and the report; plans' `fail_if`.

use results::Store;
use serde_json::Value;

use crate::util::{machine_lock, run, run_json, temp_db};

/// The stored wake-up latency's p50, from the run's JSON export (the reference the
/// gate's measured value must equal).
fn stored_p50(export: &Value) -> f64 {
    export["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "wakeup_latency")
        .unwrap()["summary"]["p50"]
        .as_f64()
        .unwrap()
}

#[test]
fn a_jitter_gate_that_holds_exits_0_and_one_that_fails_exits_3_with_its_verdict_stored() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("g.db");
    let pass = run(
        &db,
        &["jitter", "--duration", "300ms", "--fail-if", "p50 > 1s"],
    );
    assert_eq!(pass.code, 0, "{}", pass.stderr);
    assert!(
        pass.stdout.contains("gates of run 1: all 1 passed"),
        "{}",
        pass.stdout
    );

    let fail = run(
        &db,
        &[
            "jitter",
            "--duration",
            "300ms",
            "--hist-bound",
            "1us",
            "--fail-if",
            "p50 > 1ns",
            "--fail-if",
            "p50 < 1s",
            "--json",
        ],
    );
    assert_eq!(fail.code, 3, "{}", fail.stderr);
    let fresh = crate::util::parse_json(&fail.stdout);
    let id = fresh["run_id"].as_i64().unwrap().to_string();
    assert_eq!(fresh["gates"][0]["outcome"], "fail");

    // Read back: the verdicts are the stored ones, the value the stored statistic.
    let export = run_json(&db, &["export", &id, "--format", "json"]);
    assert_eq!(export["gates"], fresh["gates"]);
    let p50 = &export["gates"][0];
    assert_eq!(
        (&p50["expr"], &p50["metric"], &p50["unit"]),
        (
            &Value::from("p50 > 1ns"),
            &Value::from("p50"),
            &Value::from("ns")
        )
    );
    // Every wake-up is above the 1 us bound: the median is "at least 1 us", no measured
    // value (the verdict has none, its reason names the bound), so a gate above it
    // fails, and one below it is unknown (failed), never a pass.
    assert_eq!(stored_p50(&export), 1000.0);
    assert!(p50["value"].is_null(), "{p50}");
    assert_eq!(p50["reason"], "at least 1 us, the histogram's bound");
    let below = &export["gates"][1];
    assert_eq!(below["outcome"], "unknown");
    assert!(below["value"].is_null(), "{below}");
    assert_eq!(
        below["reason"],
        "at least 1 us, the histogram's bound: not known"
    );

    let shown = run(&db, &["show", &id]);
    assert_eq!(shown.code, 0);
    assert!(
        shown
            .stdout
            .contains(&format!("gates of run {id}: 2 of 2 failed")),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("fail     p50 > 1ns"),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("unknown  p50 < 1s"),
        "{}",
        shown.stdout
    );
    let csv = run(&db, &["export", &id, "--format", "gates"]);
    let rows: Vec<&str> = csv.stdout.lines().collect();
    assert_eq!(rows.len(), 3, "{}", csv.stdout);
    assert!(rows[1].starts_with(&format!("{id},\"p50 > 1ns\",p50,\">\",1,ns,")));
    assert!(
        rows[2].ends_with(",ns,,unknown,\"at least 1 us, the histogram's bound: not known\""),
        "{}",
        rows[2]
    );
    // The first run's verdict is its own.
    assert_eq!(
        run_json(&db, &["export", "1"])["gates"][0]["outcome"],
        "pass"
    );
}

/// Each bad gate of the acceptance, on each probe: one line naming the fix,
/// exit 2, nothing run and nothing stored.
#[test]
fn bad_gates_are_refused_in_one_line_before_anything_runs() {
    let (_dir, db) = temp_db("bad.db");
    drop(Store::open(&db).unwrap());
    let cases: [(&str, &str, &str); 9] = [
        ("jitter", "p99 >", "no value after '>'"),
        (
            "jitter",
            "why.thread:hog > 1",
            "why.thread is a time: give a unit",
        ),
        ("jitter", "why.softirq:NETRX > 1ms", "'NETRX' is no softirq"),
        (
            "event",
            "why.irq > 1ms",
            "an event run explains its late callbacks from the kernel's trace with --why only",
        ),
        ("jitter", "wobble > 1", "unknown metric 'wobble'"),
        (
            "jitter",
            "xruns > 3ms",
            "xruns is a count: give a plain number",
        ),
        (
            "jitter",
            "roundtrip > 10ms",
            "jitter runs have no metric 'roundtrip'",
        ),
        ("event", "p99 > 200", "p99 is a time: give a unit"),
        ("net", "xruns > 0", "net runs have no metric 'xruns'"),
    ];
    for (probe, gate, says) in cases {
        let out = run(&db, &[probe, "--fail-if", gate]);
        assert_eq!(out.code, 2, "{probe} --fail-if '{gate}': {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains(says), "{gate}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{}", out.stdout);
    }
    assert_eq!(run_json(&db, &["runs", "--json"]), Value::Array(vec![]));
}

#[test]
fn a_plans_gates_judge_every_cell_and_a_failed_one_exits_3_naming_it() {
    let _m = machine_lock();
    let (dir, db) = temp_db("plan.db");
    let plan = dir.path().join("gated.toml");
    let text = |gates: &str| {
        format!(
            "name = \"gated\"\nprobe = \"jitter\"\nfail_if = [{gates}]\n\n[set]\nduration = \"300ms\"\n\n[sweep]\nrate = [1000, 2000]\n"
        )
    };
    // A gate the probe does not have: refused with its place in the file, nothing run.
    std::fs::write(&plan, text("\"p50 > 1s\", \"roundtrip > 1ms\"")).unwrap();
    let bad = run(&db, &["run", plan.to_str().unwrap(), "--no-report"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr
            .contains("gated.toml:3:24: fail_if 'roundtrip > 1ms': jitter runs have no metric"),
        "{}",
        bad.stderr
    );
    assert!(!db.exists());

    std::fs::write(&plan, text("\"p50 > 1s\"")).unwrap();
    let out = run(
        &db,
        &[
            "run",
            plan.to_str().unwrap(),
            "--no-report",
            "--fail-if",
            "p50 > 1ns",
        ],
    );
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(
        out.stdout.contains("gates: 2 of 2 judged runs failed"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("rate=1000 repeat=1 (run ")
            && out.stdout.contains("): p50 > 1ns (fail: "),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("2 of 2 cells complete"),
        "{}",
        out.stdout
    );
    // Every cell was judged by the plan's gate and the command line's, in that order.
    let runs = run_json(&db, &["runs", "--probe", "jitter", "--json"]);
    assert_eq!(runs.as_array().unwrap().len(), 2);
    for r in runs.as_array().unwrap() {
        let id = r["id"].to_string();
        let gates = &run_json(&db, &["export", &id])["gates"];
        let verdicts: Vec<(&str, &str)> = gates
            .as_array()
            .unwrap()
            .iter()
            .map(|g| (g["expr"].as_str().unwrap(), g["outcome"].as_str().unwrap()))
            .collect();
        assert_eq!(verdicts, [("p50 > 1s", "pass"), ("p50 > 1ns", "fail")]);
    }
    let report = run(
        &db,
        &[
            "report",
            "group:1",
            "--print",
            "-o",
            dir.path().join("r.html").to_str().unwrap(),
        ],
    );
    assert_eq!(report.code, 0, "{}", report.stderr);
    assert!(
        report.stdout.contains("gates: 2 of 2 judged runs failed"),
        "{}",
        report.stdout
    );
    let html = std::fs::read_to_string(dir.path().join("r.html")).unwrap();
    assert!(html.contains("<section id=\"gates\">"), "no gates section");
    assert!(html.contains("<code>p50 &gt; 1ns</code>"), "no verdict row");
}

/// A sweep judges each of its runs: on the virtual backend the round trip is exactly
/// the latency the stream reports, so the gate's value is checked against it, and the
/// larger period alone fails `roundtrip > 5ms`.
#[test]
fn a_roundtrip_sweep_judges_each_run_against_its_own_round_trip() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("rt.db");
    let out = run(
        &db,
        &[
            "roundtrip",
            "--backend",
            "virtual",
            "--duration",
            "1s",
            "--period",
            "64,128",
            "--fail-if",
            "roundtrip > 5ms",
            "--fail-if",
            "xruns > 0",
            "--json",
        ],
    );
    assert_eq!(out.code, 3, "{}", out.stderr);
    let fresh = crate::util::parse_json(&out.stdout);
    let judged = fresh["gates"].as_array().unwrap();
    assert_eq!(judged.len(), 2);
    let mut outcomes = Vec::new();
    for j in judged {
        let id = j["run_id"].to_string();
        let export = run_json(&db, &["export", &id]);
        assert_eq!(export["gates"], j["gates"]);
        let r = &export["run"]["result"];
        let reported_ns =
            r["reported_frames"].as_f64().unwrap() * 1e9 / r["rate_hz"].as_f64().unwrap();
        let value = j["gates"][0]["value"].as_f64().unwrap();
        // The histogram keeps three significant digits.
        assert!(
            (value - reported_ns).abs() <= 1e-3 * reported_ns,
            "{value} vs {reported_ns}"
        );
        assert_eq!(j["gates"][1]["value"].as_f64(), r["xruns"].as_f64());
        outcomes.push((
            r["period_frames"].as_u64().unwrap(),
            j["gates"][0]["outcome"].clone(),
        ));
    }
    outcomes.sort_by_key(|(p, _)| *p);
    assert_eq!(
        outcomes,
        [(64, Value::from("pass")), (128, Value::from("fail"))]
    );
}

/// A plan's gate on a cause is checked with its cells, as the command checks it: a
/// jitter cell without `why` is refused with the fix, before anything runs.
#[test]
fn a_plans_gate_on_a_cause_is_refused_when_its_cells_are_not_traced() {
    let (dir, db) = temp_db("why-plan.db");
    let plan = dir.path().join("why.toml");
    std::fs::write(
        &plan,
        "name = \"why\"\nprobe = \"jitter\"\nfail_if = [\"why.misses > 0\"]\n\n[set]\nduration = \"300ms\"\n",
    )
    .unwrap();
    let out = run(&db, &["run", plan.to_str().unwrap(), "--no-report"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("--fail-if 'why.misses > 0': a jitter run explains its misses from the kernel's trace with --why only"),
        "{}",
        out.stderr
    );
    assert!(!db.exists());
}
