//! A probe declared in one place reaches every view: a test probe (`metronome`), its
//! identity one `static ProbeKind` registered here and its measuring one `impl Probe`,
//! run through the one run lifecycle into a real SQLite store, appears in `show`, in
//! `runs`, in its gates' verdicts, in the JSON and in the HTML report, with nothing else
//! in audiolat edited for it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use probes::probe::{Description, End, Outcome, Probe, ProbeError, Progress, Tally, TriggerRow};
use results::gate::{Gate, Kind, Named, Outcome as Verdict, Source};
use results::{
    Event, LatencyHistogram, Measurement, ProbeKind, RunStatus, RunView, Store, ToolInfo,
};
use serde_json::json;

/// The metronome's identity, declared once: its main latency, its gate metric.
static METRONOME: ProbeKind = ProbeKind {
    main_metric: |_| Some("tick_latency"),
    headline_metric: |_| Some("tick_latency"),
    gates: &[Named {
        name: "ticks",
        aliases: &["beats"],
        kind: Kind::Count,
        about: "ticks counted",
        source: Source::Stat("tick_latency", "count"),
    }],
    triggers: true,
    ..ProbeKind::named("metronome", "a tick's latency, made up by a test")
};

/// The ticks it "measures": what every view must show.
const TICKS_NS: [u64; 5] = [1_000_000, 2_000_000, 3_000_000, 4_000_000, 5_000_000];

struct Metronome;

impl Probe for Metronome {
    fn describe(&self) -> Description {
        Description {
            probe: &METRONOME,
            config: json!({ "bpm": 120 }),
            qos_requested: json!({}),
            result_while_running: None,
        }
    }

    fn measure(
        &mut self,
        _stop: &AtomicBool,
        progress: &mut dyn Progress,
    ) -> Result<Outcome, ProbeError> {
        let mut h = LatencyHistogram::new(1_000_000_000).unwrap();
        for t in TICKS_NS {
            h.record(t);
        }
        // A row and an event handed over as they come, one event at the end.
        progress.triggers(&[TriggerRow {
            seq: 0,
            source: "timer".into(),
            timing: "backend".into(),
            ..TriggerRow::default()
        }]);
        progress.events(&[Event {
            mono_ns: 2,
            kind: "tick".into(),
            detail: json!({"beat": 1}),
        }]);
        let _ = progress.tick();
        Ok(Outcome {
            measurements: vec![Measurement::from_histogram(
                METRONOME.name,
                "tick_latency",
                "made up by the test",
                h,
            )],
            events: vec![Event {
                mono_ns: 1,
                kind: "tock".into(),
                detail: json!({}),
            }],
            series: Vec::new(),
            qos_granted: json!({"metronome": "wound"}),
            flags: json!({}),
            result: json!({ "beats": TICKS_NS.len() }),
            end: End::Complete,
            measured: Some(Tally {
                count: TICKS_NS.len(),
                noun: "ticks",
            }),
        })
    }
}

/// Two views of a run agree in every part a renderer reads.
fn same_view(fresh: &RunView, stored: &RunView) {
    assert_eq!(fresh.id, stored.id);
    assert_eq!(fresh.probe, stored.probe);
    assert_eq!(fresh.status, stored.status);
    assert_eq!(fresh.machine, stored.machine);
    assert_eq!(fresh.config, stored.config);
    assert_eq!(fresh.load, stored.load);
    assert_eq!(fresh.qos_requested, stored.qos_requested);
    assert_eq!(fresh.qos_granted, stored.qos_granted);
    assert_eq!(fresh.flags, stored.flags);
    assert_eq!(fresh.result, stored.result);
    assert_eq!(fresh.error, stored.error);
    assert_eq!(fresh.started_mono_ns, stored.started_mono_ns);
    assert_eq!(fresh.events, stored.events);
    assert_eq!(fresh.triggers, stored.triggers);
    let summaries = |v: &RunView| -> Vec<(String, Option<results::Summary>)> {
        v.measurements
            .iter()
            .map(|m| (m.metric.clone(), m.summary))
            .collect()
    };
    assert_eq!(summaries(fresh), summaries(stored));
    assert_eq!(
        fresh.events.len(),
        2,
        "the handed-over event and the outcome's"
    );
    assert_eq!(fresh.triggers.len(), 1);
}

#[test]
fn a_probe_declared_in_one_place_reaches_show_runs_gates_json_and_the_report() {
    ProbeKind::register(&METRONOME);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("audiolat.db");
    let store = Store::open(&db).unwrap();
    let tool = ToolInfo {
        version: "0.0.0".into(),
        git_commit: "test".into(),
        build_profile: "test".into(),
    };
    let ctx = runner::Context {
        tool: tool.clone(),
        command_line: "audiolat metronome".into(),
        stop: Arc::new(AtomicBool::new(false)),
        plan_cell: None,
        load_exe: None,
    };
    let mut cell = runner::Cell::new(Metronome, load::LoadSpec::none(), dir.path().to_path_buf());
    let run = runner::run(&ctx, &store, &mut cell, None, &runner::Unobserved).unwrap();
    assert_eq!(run.status, RunStatus::Complete);
    assert!(!ctx.stop.load(Ordering::Relaxed));

    // Stored under its name, read back as its kind.
    let record = store.run(run.run_id).unwrap();
    assert!(std::ptr::eq(record.probe, &METRONOME));

    // The run's view is the one `show` reads back: one producer, what was stored.
    let stored = RunView::from_stored(
        &record,
        &store.measurements(run.run_id).unwrap(),
        store.events(run.run_id, None).unwrap(),
        store.triggers(run.run_id).unwrap(),
    );
    same_view(&run.view, &stored);

    // Gates: a statistic of its main latency and its own metric, by name and alias.
    let gates: Vec<Gate> = ["p50 > 2ms", "beats < 5"]
        .iter()
        .map(|g| Gate::parse(g).unwrap().check_probe(&METRONOME).unwrap())
        .collect();
    assert_eq!(gates[1].metric, "ticks");
    let verdicts = runner::gates::judge(&store, run.run_id, &gates).unwrap();
    let stored = store.measurements(run.run_id).unwrap();
    let p50 = stored[0].measurement.summary.unwrap().p50;
    assert!(
        (p50 - 3e6).abs() < 3e6 * 1e-3,
        "the median tick, at HDR's precision: {p50}"
    );
    let outcomes: Vec<(Verdict, Option<f64>)> =
        verdicts.iter().map(|v| (v.outcome, v.value)).collect();
    assert_eq!(
        outcomes,
        [
            (Verdict::Fail, Some(p50)),
            (Verdict::Pass, Some(TICKS_NS.len() as f64))
        ]
    );
    assert!(results::gate::help().contains(" metronome: ticks (or beats)"));

    // `show`: its measurement and its verdicts.
    let show = report::view::stored::run_text(&store, &record, 10).unwrap();
    assert!(show.contains("metronome"), "{show}");
    assert!(show.contains("tick_latency"), "{show}");
    assert!(show.contains("p50 > 2ms"), "{show}");

    // `runs`: its row, headlined by its main latency.
    let rows = report::view::stored::run_rows(&store, &Default::default()).unwrap();
    let table = report::terminal::runs_table(&rows);
    let line = table
        .lines()
        .find(|l| l.contains("metronome"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(line.contains("tick_latency"), "{table}");
    assert!(
        line.contains("3.00 ms") || line.contains("3.0 ms"),
        "{table}"
    );

    // JSON: the probe's name, its measurement and its gates.
    let doc = report::view::stored::run_json(&store, &record).unwrap();
    assert_eq!(doc["run"]["probe"], "metronome", "{doc}");
    let text = doc.to_string();
    assert!(
        text.contains("tick_latency") && text.contains("beats < 5"),
        "{doc}"
    );
    let listed = report::view::stored::runs_json(&rows);
    assert_eq!(listed[0]["probe"], "metronome", "{listed}");

    // Every export: its data, or the refusal that fits a run of no series and no
    // wake-up latency.
    use report::view::stored::{export, ExportError, ExportKind};
    for kind in ExportKind::ALL {
        match (kind, export(&store, &record, kind)) {
            (ExportKind::Series, Err(ExportError::NoSeries)) => {}
            (ExportKind::Cyclictest | ExportKind::CyclictestJson, Err(ExportError::NotJitter)) => {}
            (ExportKind::Triggers | ExportKind::Gates, Ok(text)) => {
                assert!(text.lines().count() >= 2, "{kind:?}: {text}")
            }
            (_, Ok(text)) => assert!(
                text.contains("metronome") || text.contains("tick_latency"),
                "{kind:?}: {text}"
            ),
            (kind, Err(e)) => panic!("{kind:?}: {e:?}"),
        }
    }

    // The HTML report of the run.
    let data = report::gather::subjects(&store, &[report::gather::Subject::Run(run.run_id)], &tool)
        .unwrap();
    let path = report::html::write(&data, Some(&dir.path().join("r.html")), &db, "run").unwrap();
    let html = std::fs::read_to_string(path).unwrap();
    assert!(html.contains("metronome"), "the report names the probe");
    assert!(
        html.contains("metronome measured, not judged: tick latency 3.00 ms median"),
        "the report's answer says what it measured, unjudged"
    );
    assert!(
        html.contains("beats &lt; 5") || html.contains("beats < 5"),
        "and its gates"
    );
}
