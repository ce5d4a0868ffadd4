//! The PostgreSQL store against a real throw-away PostgreSQL 15 server: the same run
//! written through the same API to SQLite and to PostgreSQL reads back the same, and a
//! pushed SQLite file is stored once however often it is pushed.

mod common;

use common::pg;
use results::gate::{GateVerdict, Outcome};
use results::model::{MeasurementRecord, TriggerRow};
use results::run::RunRecord;
use results::{
    Event, LatencyHistogram, Machine, Measurement, NewPlanCell, RunFilter, RunInfo, RunStatus,
    Series, Store, ToolInfo,
};
use serde_json::json;
use std::path::Path;

fn info(host: &str, kernel: &str) -> RunInfo {
    RunInfo {
        probe: &results::probe_kind::JITTER,
        group_id: None,
        machine: Machine {
            hostname: host.into(),
            kernel_release: kernel.into(),
            ..Machine::default()
        },
        tool: ToolInfo::default(),
        command_line: "audiolat jitter".into(),
        config: json!({"rate_hz": 2048}),
        load: json!({"spec": "none"}),
        qos_requested: json!({"policy": "fifo"}),
        started_mono_ns: None,
    }
}

/// One run with something in every table, in a plan's group, by its own store handle
/// (a plan cell's process files one run).
fn write_run(db: &Path, host: &str, kernel: &str) -> results::RunId {
    let store = &Store::open(db).unwrap();
    let group = store
        .create_group("plan", "audiolat run p.toml", &json!({"plan": "p"}))
        .unwrap();
    store
        .add_plan_cells(
            group,
            &[NewPlanCell {
                seq: 0,
                key: "a=1".into(),
                axes: json!({"a": 1}),
                argv: vec!["jitter".into()],
                profile: "quick".into(),
            }],
        )
        .unwrap();
    let cell = store.plan_cells(group).unwrap()[0].id;
    store.start_plan_cell(cell).unwrap();
    store.file_runs_under(group, cell).unwrap();
    let id = store.begin_run(&info(host, kernel)).unwrap();
    let mut h = LatencyHistogram::new(1_000_000).unwrap();
    for v in [1_000, 2_000, 3_000, 70_000, 5_000_000] {
        h.record(v);
    }
    let mut m = Measurement::from_histogram("jitter", "wakeup_latency", "clock_nanosleep", h);
    m.deadline = Some(500_000.0);
    m.misses = Some(1);
    store.replace_measurements(id, &[m]).unwrap();
    store
        .add_events(
            id,
            &[Event {
                mono_ns: 5,
                kind: "overflow".into(),
                detail: json!({"cycle": 3}),
            }],
        )
        .unwrap();
    store
        .add_series(
            id,
            &Series {
                name: "s".into(),
                unit: "ns".into(),
                columns: vec!["t".into(), "v".into()],
                rows: vec![vec![0.0, 1.0], vec![1.0, 2.5]],
            },
        )
        .unwrap();
    store
        .add_triggers(
            id,
            &[TriggerRow {
                seq: 0,
                source: "timer".into(),
                trigger_ns: 10,
                note_frame: 11,
                offset_frames: 12,
                cycle: 13,
                dac_ns: None,
                latency_ns: Some(14),
                wait_ns: None,
                lateness_ns: Some(-2),
                buffer_ns: 15,
                late: true,
                missed: false,
                measured_ns: None,
                underruns_before: 0,
                timing: "checked".into(),
            }],
        )
        .unwrap();
    store
        .update_run(id, None, Some(&json!({"policy": "fifo", "priority": 80})))
        .unwrap();
    store
        .finish_run(
            id,
            RunStatus::Complete,
            &json!({"realtime": true}),
            &json!({"n": 5}),
            None,
            None,
        )
        .unwrap();
    store
        .put_gates(
            id,
            &[GateVerdict {
                expr: "p99 > 200us".into(),
                metric: "wakeup_latency".into(),
                op: ">".into(),
                threshold: 200_000.0,
                unit: "ns".into(),
                value: Some(70_000.0),
                outcome: Outcome::Pass,
                reason: None,
            }],
        )
        .unwrap();
    store
        .finish_plan_cell(cell, RunStatus::Complete, None)
        .unwrap();
    store.finish_group(group, RunStatus::Complete).unwrap();
    id
}

/// What a store gives back of a run, without what differs by store (ids, times).
fn read_back(store: &Store, id: results::RunId) -> serde_json::Value {
    let run: RunRecord = store.run(id).unwrap();
    let ms: Vec<MeasurementRecord> = store.measurements(id).unwrap();
    let hist: Vec<_> = ms
        .iter()
        .map(|m| {
            let h = m.measurement.histogram.as_ref().unwrap();
            (h.summary(), h.overflows(), h.to_stored().v2)
        })
        .collect();
    let group = store.group(run.group_id.unwrap()).unwrap();
    let cells = store.plan_cells(group.id).unwrap();
    json!({
        "probe": run.probe, "status": run.status.as_str(), "machine": run.machine,
        "config": run.config, "qos_granted": run.qos_granted, "flags": run.flags,
        "result": run.result, "error": run.error, "pid": run.pid,
        "duration_known": run.duration_s.is_some(),
        "measurements": ms.iter().map(|m| json!({
            "metric": m.measurement.metric, "summary": m.measurement.summary,
            "deadline": m.measurement.deadline, "misses": m.measurement.misses,
        })).collect::<Vec<_>>(),
        "histograms": format!("{hist:?}"),
        "events": store.events(id, None).unwrap(),
        "event_counts": store.event_counts(id).unwrap(),
        "series": format!("{:?}", store.series(id).unwrap()),
        "triggers": format!("{:?}", store.triggers(id).unwrap()),
        "gates": format!("{:?}", store.gates(id).unwrap()),
        "gate_count": store.gates(id).unwrap().len(),
        "group": [group.kind, group.status.as_str().to_string()],
        "cells": cells.iter().map(|c| json!([c.key, c.status.map(|s| s.as_str()), c.run_id == Some(id)])).collect::<Vec<_>>(),
    })
}

#[test]
fn a_run_written_to_postgresql_reads_back_as_from_sqlite() {
    let Some(server) = pg::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let lite = Store::open(&dir.path().join("a.db")).unwrap();
    let shared = Store::open(Path::new(&server.url())).unwrap();
    assert!(shared.is_shared() && !lite.is_shared());
    assert_eq!(
        shared.schema_version().unwrap(),
        results::store::SCHEMA_VERSION
    );
    let a = write_run(&dir.path().join("a.db"), "board-a", "6.1.0-1");
    let b = write_run(Path::new(&server.url()), "board-a", "6.1.0-1");
    let back = read_back(&lite, a);
    assert_eq!(back["gate_count"], 1);
    assert_eq!(back, read_back(&shared, b));
    // A second writer's open finds the schema made; a reader's open reads it.
    drop(shared);
    let again = Store::open(Path::new(&server.url())).unwrap();
    let reader = Store::open_read_only(Path::new(&server.url())).unwrap();
    assert_eq!(again.list_runs(&RunFilter::default()).unwrap().len(), 1);
    assert_eq!(reader.last_run_id().unwrap(), Some(b));
}

#[test]
fn a_pushed_sqlite_file_is_stored_once_and_filters_find_hosts_and_kernels() {
    let Some(server) = pg::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let board = dir.path().join("board.db");
    let first = write_run(&board, "board-b", "6.1.0-2");
    let second = write_run(&board, "board-b", "6.1.0-2");
    let lite = Store::open(&board).unwrap();
    let running = lite.begin_run(&info("board-b", "6.1.0-2")).unwrap();
    let here = write_run(Path::new(&server.url()), "board-a", "6.1.0-1");
    let shared = Store::open(Path::new(&server.url())).unwrap();

    let pushed = lite.push_to(&shared).unwrap();
    assert_eq!(pushed.copied.len(), 2);
    assert_eq!(pushed.running, vec![running]);
    let again = lite.push_to(&shared).unwrap();
    assert!(again.copied.is_empty());
    assert_eq!(again.already, vec![first, second]);
    assert_eq!(shared.list_runs(&RunFilter::default()).unwrap().len(), 3);
    assert_eq!(shared.list_groups(None).unwrap().len(), 3);
    for (src, dst) in pushed.copied {
        assert_eq!(read_back(&lite, src), read_back(&shared, dst));
    }

    let host = |h: &str| RunFilter {
        host: Some(h.into()),
        ..RunFilter::default()
    };
    assert_eq!(shared.list_runs(&host("board-b")).unwrap().len(), 2);
    let mine = shared.list_runs(&host("board-a")).unwrap();
    assert_eq!(mine.iter().map(|r| r.id).collect::<Vec<_>>(), vec![here]);
    let kernel = RunFilter {
        kernel: Some("6.1.0-2".into()),
        ..RunFilter::default()
    };
    assert_eq!(shared.list_runs(&kernel).unwrap().len(), 2);
    assert_eq!(lite.list_runs(&kernel).unwrap().len(), 3);
}

#[test]
fn another_programs_database_and_a_dead_server_are_refused_in_one_line() {
    let Some(mut server) = pg::start() else {
        return;
    };
    server.create_db("other");
    {
        let mut c = postgres::Client::connect(&server.url_of("other"), postgres::NoTls).unwrap();
        c.batch_execute("CREATE TABLE accounts (id INT)").unwrap();
    }
    let e = Store::open(Path::new(&server.url_of("other"))).unwrap_err();
    assert!(
        e.to_string().contains("not an audiolat results database"),
        "{e}"
    );
    let url = server.url();
    server.stop();
    let e = Store::open(Path::new(&url)).unwrap_err();
    assert!(
        e.to_string().contains("cannot connect") && !e.to_string().contains('\n'),
        "{e}"
    );
}
