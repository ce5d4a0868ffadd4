use super::*;
use crate::{LatencyHistogram, Measurement, RunId, RunStatus};
use serde_json::json;

fn parsed(s: &str) -> Gate {
    Gate::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn refused(s: &str) -> String {
    match Gate::parse(s) {
        Ok(g) => panic!("{s} parsed as {g:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn good_expressions_parse_with_their_units() {
    let g = parsed("p99.9 > 200us");
    assert_eq!(
        (g.metric.as_str(), g.op, g.threshold),
        ("p99.9", Op::Gt, 200_000.0)
    );
    assert_eq!(g.kind, Kind::Time);
    assert_eq!(parsed("p50>=1.5ms").threshold, 1_500_000.0);
    assert_eq!(parsed("max < 2s").threshold, 2e9);
    assert_eq!(parsed("mean <= 10 ns").threshold, 10.0);
    assert_eq!(parsed("p99 != 3µs").op, Op::Ne);
    let x = parsed("xruns == 0");
    assert_eq!((x.kind, x.threshold, x.op), (Kind::Count, 0.0, Op::Eq));
    assert_eq!(parsed("steal > 5%").threshold, 5.0);
    assert_eq!(parsed("steal > 5").kind, Kind::Percent);
    assert_eq!(parsed("roundtrip > 10ms").threshold, 1e7);
    assert_eq!(parsed("  MISSES > 0 ").expr, "MISSES > 0");
    assert_eq!(parsed("count < 100").kind, Kind::Count);
}

#[test]
fn bad_expressions_are_refused_saying_what_to_write() {
    assert_eq!(
        refused("p99 >"),
        "'p99 >': no value after '>': write METRIC OP VALUE, e.g. 'p99 > 200us' or 'xruns > 0'"
    );
    assert!(refused("p99 200us").contains("no comparison"));
    assert!(refused("> 3ms").contains("no metric before '>'"));
    assert!(refused("p99 = 3ms").contains("'=' is not a comparison"));
    assert!(refused("p99 > fast").contains("is not a number"));
    assert!(refused("p95 > 1ms").contains("unknown metric 'p95'"));
    assert!(refused("wobble > 1").contains("unknown metric 'wobble'"));
}

#[test]
fn units_must_fit_the_metric() {
    assert_eq!(
        refused("xruns > 3ms"),
        "'xruns > 3ms': xruns is a count: give a plain number without a unit, e.g. 'xruns > 0'"
    );
    assert!(refused("p99 > 200").contains("p99 is a time: give a unit"));
    assert!(refused("p99 > 200 furlongs").contains("not a unit of time"));
    assert!(refused("misses > 0.5").contains("whole number"));
    assert!(refused("steal > 5ms").contains("percentage"));
}

#[test]
fn a_metric_must_belong_to_the_probe() {
    let g = parsed("roundtrip > 10ms");
    assert!(g.check_probe(&crate::probe_kind::ROUNDTRIP).is_ok());
    let e = g
        .check_probe(&crate::probe_kind::JITTER)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("'roundtrip > 10ms': jitter runs have no metric 'roundtrip': use p50"),
        "{e}"
    );
    assert!(e.contains("underruns"), "{e}");
    // Aliases resolve to the probe's own name.
    assert_eq!(
        parsed("xruns > 0")
            .check_probe(&crate::probe_kind::JITTER)
            .unwrap()
            .metric,
        "underruns"
    );
    assert_eq!(
        parsed("xruns > 0")
            .check_probe(&crate::probe_kind::EVENT)
            .unwrap()
            .metric,
        "xruns"
    );
    assert_eq!(
        parsed("misses > 0")
            .check_probe(&crate::probe_kind::JITTER)
            .unwrap()
            .metric,
        "underruns"
    );
    assert!(parsed("p99 > 1ms")
        .check_probe(&crate::probe_kind::NET)
        .is_ok());
    assert!(parsed("p99 > 1ms")
        .check_probe(&crate::probe_kind::DOCTOR)
        .is_err());
}

fn jitter_view(latencies: &[u64], fragments: Option<u64>) -> RunView {
    let mut h = LatencyHistogram::new(100_000_000).unwrap();
    for v in latencies {
        h.record(*v);
    }
    let mut measurements = vec![Measurement::from_histogram(
        "jitter",
        "wakeup_latency",
        "test",
        h.clone(),
    )];
    if let Some(misses) = fragments {
        let mut m = Measurement::from_histogram("jitter", "fragment_completion", "test", h);
        m.misses = Some(misses);
        measurements.push(m);
    }
    RunView {
        id: RunId(1),
        probe: &crate::probe_kind::JITTER,
        status: RunStatus::Complete,
        machine: Default::default(),
        // As a run stores it: the fragment model in its configuration.
        config: match fragments {
            // (the rate an integer, as the probe writes it: `JitterConfigRecord`)
            Some(_) => json!({"fragments": {"fragments": 3, "frames": 32, "sample_rate": 44100}}),
            None => json!({"fragments": null}),
        },
        load: json!({}),
        qos_requested: json!({}),
        qos_granted: json!({}),
        flags: json!({"host_steal_percent": 0.5}),
        result: json!({"overflows": 2, "skipped_deadlines": 0}),
        error: None,
        started_mono_ns: 0,
        measurements,
        events: vec![],
        triggers: vec![],
    }
}

fn judged(expr: &str, run: &RunView) -> GateVerdict {
    parsed(expr).check_probe(run.probe).unwrap().judge(run)
}

#[test]
fn gates_are_judged_on_the_stored_values() {
    let run = jitter_view(&[10_000, 20_000, 30_000], Some(0));
    let v = judged("max > 25us", &run);
    assert_eq!(v.outcome, Outcome::Fail);
    assert!((v.value.unwrap() - 30_000.0).abs() < 100.0, "{v:?}");
    assert_eq!(v.unit, "ns");
    assert_eq!(judged("min < 5us", &run).outcome, Outcome::Pass);
    assert_eq!(judged("count == 3", &run).outcome, Outcome::Fail);
    assert_eq!(judged("count != 3", &run).outcome, Outcome::Pass);
    assert_eq!(judged("overflows > 1", &run).outcome, Outcome::Fail);
    assert_eq!(judged("overflows >= 3", &run).outcome, Outcome::Pass);
    assert_eq!(judged("skipped > 0", &run).outcome, Outcome::Pass);
    assert_eq!(judged("xruns > 0", &run).outcome, Outcome::Pass);
    let s = judged("steal > 0.4%", &run);
    assert_eq!(
        (s.outcome, s.value, s.unit.as_str()),
        (Outcome::Fail, Some(0.5), "%")
    );
    assert!(!judged("p50 > 1ms", &run).failed());
    assert!(judged("p50 > 1ns", &run).failed());
}

#[test]
fn an_unmeasured_metric_is_unknown_and_fails() {
    // No fragment model: under-runs were not measured, not zero.
    let run = jitter_view(&[10_000], None);
    let v = judged("underruns > 0", &run);
    assert_eq!(v.outcome, Outcome::Unknown);
    assert_eq!(v.value, None);
    assert_eq!(v.reason.as_deref(), Some("not measured"));
    assert!(v.failed());
    assert_eq!(v.value_text(), "-");
    // No samples: no statistic.
    let empty = jitter_view(&[], Some(0));
    assert_eq!(judged("p99 > 1ms", &empty).outcome, Outcome::Unknown);
    assert_eq!(judged("count < 1", &empty).outcome, Outcome::Fail);
}

#[test]
fn values_print_in_their_units() {
    assert_eq!(format_value(12_500.0, Kind::Time), "12.5 us");
    assert_eq!(format_value(200_000.0, Kind::Time), "200 us");
    assert_eq!(format_value(3.0, Kind::Count), "3");
    assert_eq!(format_value(4.25, Kind::Percent), "4.25%");
    assert_eq!(parsed("p99 > 1.5ms").threshold_text(), "1.5 ms");
}

#[test]
fn the_help_names_every_probes_metrics() {
    let h = help();
    for p in crate::probe_kind::ProbeKind::gated() {
        assert!(h.contains(&format!(" {p}: ")), "{h}");
    }
    assert!(h.contains("xruns"), "{h}");
}

/// A percentile among the overflows is "at least the bound": a `>` gate below the
/// bound fails all the same; one above it, or a `<` gate, is unknown, never a pass.
#[test]
fn a_percentile_above_the_histogram_bound_is_at_least_the_bound() {
    // Three samples of four above the 100 ms bound: p99 is among the overflows.
    let run = jitter_view(&[10_000, 200_000_000, 300_000_000, 400_000_000], None);
    let p99 = run.measurement("wakeup_latency").unwrap().summary.unwrap();
    assert!(p99.is_clamped(p99.p99), "{p99:?}");
    let verdict = |expr: &str| Gate::parse(expr).unwrap().judge(&run);
    let below = verdict("p99 > 1ms");
    assert_eq!(below.outcome, Outcome::Fail);
    // The bound is no measurement: the verdict has no value, its reason names it.
    assert_eq!(below.value, None);
    assert_eq!(
        below.reason.as_deref(),
        Some("at least 100 ms, the histogram's bound")
    );
    let above = verdict("p99 > 1s");
    assert_eq!(above.outcome, Outcome::Unknown);
    assert_eq!(above.value, None);
    assert_eq!(
        above.reason.as_deref(),
        Some("at least 100 ms, the histogram's bound: not known")
    );
    assert_eq!(verdict("p99 < 1s").outcome, Outcome::Unknown);
    assert_eq!(verdict("p50 > 1ms").outcome, Outcome::Fail);
    assert_eq!(verdict("p50 <= 1ms").outcome, Outcome::Unknown);
    // The median of 10 us, 10 us, 10 us and one overflow is in range: judged as measured.
    let run = jitter_view(&[10_000, 10_000, 10_000, 200_000_000], None);
    let verdict = Gate::parse("p50 > 1ms").unwrap().judge(&run);
    assert_eq!((verdict.outcome, verdict.reason), (Outcome::Pass, None));
}

#[test]
fn why_metrics_parse_with_a_culprits_name_in_its_own_case() {
    let g = parsed("why.thread:KWorker/1:2 > 1ms");
    assert_eq!(
        (g.metric.as_str(), g.kind, g.threshold),
        ("why.thread:KWorker/1:2", Kind::Time, 1e6)
    );
    assert!(g.traced());
    assert_eq!(parsed("WHY.IRQ > 500us").metric, "why.irq");
    assert_eq!(parsed("why.irq > 500us").threshold, 500_000.0);
    // A softirq's name is the kernel's, in capitals.
    assert_eq!(
        parsed("why.softirq:net_rx > 1ms").metric,
        "why.softirq:NET_RX"
    );
    assert_eq!(parsed("why.softirq:NET* > 1ms").metric, "why.softirq:NET*");
    assert_eq!(
        parsed("why.thread:kworker* >= 1ms").metric,
        "why.thread:kworker*"
    );
    for kind in ["self", "blocked", "idle_exit", "steal", "unaccounted"] {
        let g = parsed(&format!("why.{kind} > 1ms"));
        assert_eq!((g.metric, g.kind), (format!("why.{kind}"), Kind::Time));
    }
    let m = parsed("why.misses > 0");
    assert_eq!((m.kind, m.metric.as_str()), (Kind::Count, "why.misses"));
    assert_eq!(parsed("why.events_lost > 0").kind, Kind::Count);
    assert!(!parsed("p99 > 1ms").traced());
    assert!(!parsed("xruns > 0").traced());
}

#[test]
fn bad_why_metrics_are_refused_saying_what_to_write() {
    assert!(refused("why.thread > 1").contains("why.thread is a time: give a unit"));
    assert!(refused("why.misses > 1ms").contains("why.misses is a count"));
    assert!(refused("why.thread: > 1ms").contains("no name after 'why.thread:'"));
    assert!(
        refused("why.softirq:NETRX > 1ms").contains("'NETRX' is no softirq: use one of HI, TIMER")
    );
    assert!(refused("why.steal:host > 1ms").contains("why.steal has no culprits but itself"));
    assert!(refused("why.misses:x > 0").contains("takes no name"));
    assert!(refused("p99:x > 1ms").contains("p99 takes no name after ':'"));
    assert!(refused("why.thread:a*b > 1ms").contains("only a last * is a wildcard"));
    assert!(refused("why.wobble > 1ms").contains("unknown metric 'why.wobble'"));
    // The kernel keeps 15 bytes of a thread's name: a longer one never matches.
    assert_eq!(
        refused("why.thread:pipewire-pulse-helper > 1ms"),
        "'why.thread:pipewire-pulse-helper > 1ms': 'pipewire-pulse-helper' is longer than a thread's name can be (the kernel keeps 15 bytes of it): write 'why.thread:pipewire-pulse-'"
    );
}

#[test]
fn why_metrics_belong_to_every_probe_that_traces_and_need_why() {
    use crate::probe_kind::{DOCTOR, EVENT, JITTER, NET, ROUNDTRIP};
    let g = parsed("why.thread:Hog > 1ms");
    for probe in [&JITTER, &EVENT, &ROUNDTRIP, &NET] {
        let checked = g.check_probe(probe).unwrap();
        assert_eq!(checked.metric, "why.thread:Hog");
        let (metric, why) = probe.unmeasured(["p99", "why.thread:Hog"], &[]).unwrap();
        assert_eq!(metric, "why.thread:Hog");
        assert!(why.contains("with --why only: add --why"), "{why}");
        assert_eq!(
            probe.unmeasured(["why.misses"], &[crate::probe_kind::Setting::Why]),
            None
        );
    }
    let e = g.check_probe(&DOCTOR).unwrap_err().to_string();
    assert!(e.contains("doctor runs have no metric 'why.thread'"), "{e}");
    // The family is `why.`'s, no other metric that begins so.
    assert_eq!(JITTER.unmeasured(["whyever"], &[]), None);
    assert!(help().contains("why.thread[:NAME]"), "{}", help());
    assert!(
        help().contains(" net: misses, sender_late, steal, why.*. why.* (why.irq[:NAME], "),
        "{}",
        help()
    );
}

fn traced_view(why: serde_json::Value) -> RunView {
    let mut run = jitter_view(&[10_000], None);
    run.result["why"] = why;
    run
}

fn traced() -> RunView {
    traced_view(json!({
        "above_ns": 100000,
        "misses": [],
        "misses_explained": 3,
        "misses_dropped": 0,
        "culprits": [
            {"kind": "thread", "name": "why-hog", "ns_total": 1_500_000, "misses": 3},
            {"kind": "thread", "name": "kworker/1:2", "ns_total": 200_000, "misses": 1},
            {"kind": "irq", "name": "local_timer", "ns_total": 30_000, "misses": 3},
            {"kind": "unaccounted", "name": "unaccounted", "ns_total": 5_000, "misses": 1}
        ],
        "events_lost": 0
    }))
}

#[test]
fn a_cause_is_judged_on_its_time_and_one_the_trace_never_saw_took_0_ns() {
    let run = traced();
    let hog = judged("why.thread:why-hog > 1ms", &run);
    assert_eq!(
        (hog.outcome, hog.value, hog.unit.as_str(), hog.reason),
        (Outcome::Fail, Some(1_500_000.0), "ns", None)
    );
    assert_eq!(hog.metric, "why.thread:why-hog");
    // A kind alone sums its culprits.
    assert_eq!(judged("why.thread > 1ms", &run).value, Some(1_700_000.0));
    assert_eq!(
        judged("why.thread:kworker* > 1ms", &run).value,
        Some(200_000.0)
    );
    assert_eq!(judged("why.irq > 500us", &run).outcome, Outcome::Pass);
    // Traced, and never a cause: measured as 0, so the gate passes.
    for expr in [
        "why.thread:absent > 1ms",
        "why.softirq:NET_RX > 1ms",
        "why.steal > 0ns",
    ] {
        let v = judged(expr, &run);
        assert_eq!(
            (v.outcome, v.value, v.reason),
            (Outcome::Pass, Some(0.0), None),
            "{expr}"
        );
    }
    assert_eq!(judged("why.misses >= 3", &run).outcome, Outcome::Fail);
    assert_eq!(judged("why.events_lost > 0", &run).outcome, Outcome::Pass);
}

#[test]
fn a_cause_of_a_run_that_was_not_traced_is_unknown_and_says_why() {
    let untraced = jitter_view(&[10_000], None);
    let v = judged("why.thread:x > 1ms", &untraced);
    assert_eq!((v.outcome, v.value), (Outcome::Unknown, None));
    assert_eq!(
        v.reason.as_deref(),
        Some("not traced: the run was made without `audiolat jitter --why`")
    );
    let unavailable = traced_view(json!({"unavailable": "tracing the kernel needs root: EPERM"}));
    let v = judged("why.misses < 1", &unavailable);
    assert_eq!(v.outcome, Outcome::Unknown);
    assert_eq!(
        v.reason.as_deref(),
        Some("not traced: tracing the kernel needs root: EPERM")
    );
}

#[test]
fn a_cause_in_a_run_whose_trace_missed_some_says_so() {
    let run = traced_view(json!({
        "misses_explained": 1, "misses_dropped": 2, "events_lost": 7,
        "culprits": [{"kind": "thread", "name": "hog", "ns_total": 10, "misses": 1}]
    }));
    let v = judged("why.thread:hog > 1ms", &run);
    assert_eq!((v.outcome, v.value), (Outcome::Pass, Some(10.0)));
    assert_eq!(
        v.reason.as_deref(),
        Some("2 misses not explained (the trace could not keep up); the trace lost 7 events (their time is unaccounted)")
    );
    assert_eq!(judged("p50 > 1s", &run).reason, None);
}
