use super::*;
use crate::hist::LatencyHistogram;
use crate::model::{Event, Machine, NewPlanCell, Series, ToolInfo, TriggerRow};
use crate::run::RunInfo;
use rusqlite::params;
use serde_json::json;

#[test]
fn a_half_written_reserve_of_a_dead_process_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let reserve = dir.path().join("a.db-reserve");
    // A pid above pid_max never runs; this process's own is left alone.
    let dead = dir.path().join("a.db-reserve.tmp.4999999.0");
    let mine = dir
        .path()
        .join(format!("a.db-reserve.tmp.{}.7", std::process::id()));
    let other = dir.path().join("a.db-reserve.tmpx");
    for f in [&dead, &mine, &other] {
        std::fs::write(f, b"x").unwrap();
    }
    remove_dead_reserve_tmps(&reserve);
    assert!(!dead.exists());
    assert!(mine.exists() && other.exists());
}

#[test]
fn the_header_says_whether_a_database_keeps_a_write_ahead_log() {
    let dir = tempfile::tempdir().unwrap();
    let wal = dir.path().join("wal.db");
    Connection::open(&wal)
        .unwrap()
        .execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t (x);")
        .unwrap();
    assert!(in_wal_mode(&wal));
    let rollback = dir.path().join("rollback.db");
    Connection::open(&rollback)
        .unwrap()
        .execute_batch("CREATE TABLE t (x);")
        .unwrap();
    assert!(!in_wal_mode(&rollback));
    assert!(!in_wal_mode(&dir.path().join("none.db")));
}

fn info(probe: &str) -> RunInfo {
    RunInfo {
        probe: crate::probe_kind::ProbeKind::stored(probe),
        group_id: None,
        machine: Machine {
            hostname: hostname(),
            ..Machine::default()
        },
        tool: ToolInfo::default(),
        command_line: "audiolat test".into(),
        config: json!({"rate_hz": 2048}),
        load: json!({"spec": "none"}),
        qos_requested: json!({"policy": "fifo"}),
        started_mono_ns: None,
    }
}

#[test]
fn a_version_1_file_gains_the_trigger_table_and_triggers_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(&schema_up_to(1)).unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let id = store.begin_run(&info("event")).unwrap();
    let rows: Vec<TriggerRow> = (0..3)
        .map(|i| TriggerRow {
            seq: i,
            source: "timer".into(),
            trigger_ns: 1_000 + i,
            // A note whose cycle's start was not known has no timing figures.
            latency_ns: (i != 2).then_some(8_000_000 + i as i64),
            measured_ns: (i == 1).then_some(8_100_000),
            late: i == 2,
            timing: if i == 2 { "unknown" } else { "backend" }.into(),
            ..TriggerRow::default()
        })
        .collect();
    store.add_triggers(id, &rows[..2]).unwrap();
    store.add_triggers(id, &rows[2..]).unwrap();
    assert_eq!(store.triggers(id).unwrap(), rows);
}

#[test]
fn a_version_4_files_triggers_become_unchecked_with_their_figures() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v4.db");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(&schema_up_to(4)).unwrap();
    }
    let id = {
        let store = Store::open(&path).unwrap();
        store.begin_run(&info("event")).unwrap()
    };
    // Put the version back to 4 and store a row the way audiolat 4 did.
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE t4 AS SELECT * FROM trigger; DROP TABLE trigger;
             CREATE TABLE trigger (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, seq INTEGER NOT NULL,
                source TEXT NOT NULL, trigger_ns INTEGER NOT NULL, note_frame INTEGER NOT NULL,
                offset_frames INTEGER NOT NULL, cycle INTEGER NOT NULL, dac_ns INTEGER NOT NULL,
                latency_ns INTEGER NOT NULL, wait_ns INTEGER NOT NULL, lateness_ns INTEGER NOT NULL,
                buffer_ns INTEGER NOT NULL, late INTEGER NOT NULL, missed INTEGER NOT NULL,
                measured_ns INTEGER, underruns_before INTEGER NOT NULL);
             DROP TABLE t4; DROP TABLE gate; PRAGMA user_version = 4;",
        )
        .unwrap();
        conn.execute(
            "INSERT INTO trigger (run_id, seq, source, trigger_ns, note_frame, offset_frames, cycle,
                dac_ns, latency_ns, wait_ns, lateness_ns, buffer_ns, late, missed, underruns_before)
             VALUES (?1, 0, 'timer', 5, 6, 7, 8, 9, 10, 11, 12, 13, 0, 0, 0)",
            [id],
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let rows = store.triggers(id).unwrap();
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(
        (r.dac_ns, r.latency_ns, r.wait_ns, r.lateness_ns),
        (Some(9), Some(10), Some(11), Some(12))
    );
    assert_eq!(r.timing, "unchecked");
}

#[test]
fn a_run_round_trips_with_its_histogram() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("a.db")).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let id = store.begin_run(&info("jitter")).unwrap();
    let mut h = LatencyHistogram::new(1_000_000).unwrap();
    for v in [1_000, 2_000, 3_000, 5_000_000] {
        h.record(v);
    }
    let m = Measurement::from_histogram("jitter", "wakeup_latency", "test", h.clone());
    store.add_measurement(id, &m).unwrap();
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
                rows: vec![vec![0.0, 1.0], vec![1.0, f64::NAN]],
            },
        )
        .unwrap();
    store
        .finish_run(
            id,
            RunStatus::Interrupted,
            &json!({"realtime": true}),
            &json!({}),
            None,
            None,
        )
        .unwrap();

    let run = store.run(id).unwrap();
    assert_eq!(run.status, RunStatus::Interrupted);
    assert_eq!(run.config["rate_hz"], 2048);
    assert!(run.duration_s.unwrap() >= 0.0);
    let ms = store.measurements(id).unwrap();
    assert_eq!(ms.len(), 1);
    let back = ms[0].measurement.histogram.as_ref().unwrap();
    assert_eq!(back.summary(), h.summary());
    assert_eq!(back.overflows(), 1);
    assert_eq!(store.events(id, None).unwrap()[0].detail["cycle"], 3);
    assert_eq!(
        store.event_counts(id).unwrap(),
        vec![("overflow".into(), 1)]
    );
    // NaN goes in as JSON null and comes back as NaN.
    let rows = &store.series(id).unwrap()[0].rows;
    assert_eq!(rows[0], vec![0.0, 1.0]);
    assert_eq!(rows[1][0], 1.0);
    assert!(rows[1][1].is_nan());
    assert_eq!(store.list_runs(&RunFilter::default()).unwrap().len(), 1);

    // A later checkpoint of the same metric replaces the earlier one.
    let mut h2 = h.clone();
    h2.record(4_000);
    let m2 = Measurement::from_histogram("jitter", "wakeup_latency", "test", h2);
    store.replace_measurements(id, &[m2]).unwrap();
    let ms = store.measurements(id).unwrap();
    assert_eq!(ms.len(), 1);
    assert_eq!(ms[0].measurement.count(), 5);
}

#[test]
fn a_measurement_of_nothing_is_stored_as_null_and_read_back_without_summary() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("e.db")).unwrap();
    let id = store.begin_run(&info("roundtrip")).unwrap();
    let empty = LatencyHistogram::new(1_000_000).unwrap();
    let m = Measurement::from_histogram("roundtrip", "roundtrip", "test", empty);
    store.add_measurement(id, &m).unwrap();
    let (count, min, max): (i64, Option<f64>, Option<f64>) = store
        .db
        .lite()
        .query_row(
            "SELECT count, min, max FROM measurement WHERE run_id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!((count, min, max), (0, None, None));
    let back = &store.measurements(id).unwrap()[0].measurement;
    assert_eq!(back.count(), 0);
    assert_eq!(back.summary, None);
}

#[test]
fn a_version_3_file_keeps_its_measurements_and_its_empty_ones_become_null() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v3.db");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(&schema_up_to(3)).unwrap();
        conn.execute_batch(
            "INSERT INTO run (id, probe, status, started_at, started_mono_ns, pid, hostname,
                machine, tool_version, git_commit, build_profile, command_line, config, load,
                qos_requested)
             VALUES (1, 'net', 'complete', 't', 0, 1, 'h', '{}', 'v', 'g', 'p', 'c', '{}',
                '{}', '{}');
             INSERT INTO measurement (run_id, probe, metric, unit, method, count, min, mean,
                stdev, p50, p90, p99, p999, p9999, max, misses)
             VALUES (1, 'net', 'response_time', 'ns', 'm', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1379),
                    (1, 'net', 'end_to_end', 'ns', 'm', 2, 10, 15, 5, 10, 20, 20, 20, 20, 20,
                     NULL);",
        )
        .unwrap();
    }
    // Read as it is by a command that only reads: the same values, the file
    // unchanged.
    let before = std::fs::read(&path).unwrap();
    let reader = Store::open_read_only(&path).unwrap();
    assert_eq!(reader.schema_version().unwrap(), 3);
    let ms = reader.measurements(crate::RunId(1)).unwrap();
    assert_eq!(ms.len(), 2);
    assert_eq!(
        (ms[0].measurement.count(), ms[0].measurement.summary),
        (0, None)
    );
    assert_eq!(ms[0].measurement.misses, Some(1379));
    let s = ms[1].measurement.summary.unwrap();
    assert_eq!((s.count, s.min, s.mean, s.max), (2, 10.0, 15.0, 20.0));
    drop(reader);
    assert_eq!(std::fs::read(&path).unwrap(), before);
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let ms = store.measurements(crate::RunId(1)).unwrap();
    assert_eq!(ms.len(), 2);
    let empty = &ms[0].measurement;
    assert_eq!((empty.count(), empty.summary), (0, None));
    assert_eq!(empty.misses, Some(1379));
    let s = ms[1].measurement.summary.unwrap();
    assert_eq!((s.count, s.min, s.mean, s.max), (2, 10.0, 15.0, 20.0));
    // The rebuilt table still belongs to its run.
    store
        .db
        .lite()
        .execute("DELETE FROM run WHERE id = 1", [])
        .unwrap();
    assert!(store.measurements(crate::RunId(1)).unwrap().is_empty());
}

#[test]
fn groups_are_closed_with_a_status() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("g.db")).unwrap();
    let g = store
        .create_group("suite", "audiolat suite", &json!({}))
        .unwrap();
    assert_eq!(store.group_status(g).unwrap().1, RunStatus::Running);
    store.finish_group(g, RunStatus::Interrupted).unwrap();
    assert_eq!(
        store.group_status(g).unwrap(),
        ("suite".into(), RunStatus::Interrupted)
    );
}

#[test]
fn unwritable_and_missing_paths_are_clear_errors() {
    let err = Store::open(Path::new("/nonexistent-dir/x.db")).unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let err = Store::open(dir.path()).unwrap_err();
    assert!(err.to_string().contains("directory"), "{err}");
    let err = Store::open(Path::new("/dev/null")).unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
    let err = Store::open_existing(&dir.path().join("none.db")).unwrap_err();
    assert!(matches!(err, StoreError::Missing(_)));
    assert!(!dir.path().join("none.db").exists());
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("n.db");
    drop(Store::open(&path).unwrap());
    Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA user_version = 99;")
        .unwrap();
    assert!(matches!(Store::open(&path), Err(StoreError::TooNew { .. })));
}

#[test]
fn runs_of_dead_processes_become_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = Store::open(&path).unwrap();
    let id = store.begin_run(&info("jitter")).unwrap();
    // Pretend the run belongs to a process that no longer exists.
    store
        .db
        .lite()
        .execute(
            "UPDATE run SET pid = ?2 WHERE id = ?1",
            params![id, i32::MAX as i64 - 1],
        )
        .unwrap();
    drop(store);
    let store = Store::open(&path).unwrap();
    let run = store.run(id).unwrap();
    assert_eq!(run.status, RunStatus::Interrupted);
    assert!(run.error.unwrap().contains("without closing"));
}

#[test]
fn unknown_run_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("u.db")).unwrap();
    let err = store.run(crate::RunId(42)).unwrap_err();
    assert!(err.to_string().contains("audiolat runs"));
}

fn cell(seq: i64, key: &str) -> NewPlanCell {
    NewPlanCell {
        seq,
        key: key.into(),
        axes: json!({"backend": key}),
        argv: vec!["jitter".into(), "-D".into(), "1s".into()],
        profile: "current".into(),
    }
}

#[test]
fn a_plan_cell_takes_the_run_its_process_begins_and_only_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.db");
    let planner = Store::open(&path).unwrap();
    let group = planner
        .create_group("plan", "audiolat run p.toml", &json!({}))
        .unwrap();
    planner
        .add_plan_cells(group, &[cell(0, "a"), cell(1, "b")])
        .unwrap();
    // Adding the same cells again (a resume) keeps one row per key.
    planner
        .add_plan_cells(group, &[cell(1, "a"), cell(0, "b")])
        .unwrap();
    let cells = planner.plan_cells(group).unwrap();
    assert_eq!(
        cells.iter().map(|c| c.key.as_str()).collect::<Vec<_>>(),
        ["b", "a"]
    );
    assert!(cells
        .iter()
        .all(|c| c.status.is_none() && c.run_id.is_none()));
    let b = &cells[0];

    // A pending cell takes no runs.
    let child = Store::open(&path).unwrap();
    assert!(child.file_runs_under(group, b.id).is_err());
    planner.start_plan_cell(b.id).unwrap();
    child.file_runs_under(group, b.id).unwrap();
    // The cell's own sweep group is the plan's.
    assert_eq!(child.create_group("event", "x", &json!({})).unwrap(), group);
    let run = child.begin_run(&info("jitter")).unwrap();
    assert_eq!(child.run(run).unwrap().group_id, Some(group));
    let second = child.begin_run(&info("jitter")).unwrap_err();
    assert!(
        matches!(second, StoreError::PlanCellTaken { .. }),
        "{second}"
    );
    child.finish_group(group, RunStatus::Complete).unwrap();
    assert_eq!(planner.group_status(group).unwrap().1, RunStatus::Running);

    planner
        .finish_plan_cell(b.id, RunStatus::Complete, None)
        .unwrap();
    let cells = planner.plan_cells(group).unwrap();
    assert_eq!(cells[0].run_id, Some(run));
    assert_eq!(cells[0].status, Some(RunStatus::Complete));
    assert_eq!(cells[0].attempts, 1);
    let g = planner.group(group).unwrap();
    assert_eq!(g.kind, "plan");
    assert!(matches!(
        planner.group(crate::GroupId(group.get() + 1)),
        Err(StoreError::NoSuchGroup(_))
    ));
}

#[test]
fn a_version_5_file_gains_the_gate_table_and_verdicts_round_trip() {
    use crate::gate::{Gate, GateVerdict, Outcome};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v5.db");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(&schema_up_to(5)).unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let id = store.begin_run(&info("jitter")).unwrap();
    assert!(store.gates(id).unwrap().is_empty());
    let pass = GateVerdict {
        value: Some(12_500.0),
        ..Gate::parse("p99 > 1ms")
            .unwrap()
            .judge(&crate::RunView::from_stored(
                &store.run(id).unwrap(),
                &[],
                vec![],
                vec![],
            ))
    };
    assert_eq!(pass.outcome, Outcome::Unknown);
    let unknown = pass.clone();
    let pass = GateVerdict {
        outcome: Outcome::Pass,
        reason: None,
        ..pass
    };
    store
        .put_gates(id, &[pass.clone(), unknown.clone()])
        .unwrap();
    assert_eq!(
        store.gates(id).unwrap(),
        vec![pass.clone(), unknown.clone()]
    );
    // Judged again: replaced, not added.
    store.put_gates(id, std::slice::from_ref(&unknown)).unwrap();
    assert_eq!(store.gates(id).unwrap(), vec![unknown]);
}

#[test]
fn events_of_one_kind_are_read_past_a_flood_of_another() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("a.db")).unwrap();
    let id = store.begin_run(&info("jitter")).unwrap();
    let mut events: Vec<Event> = (0..50)
        .map(|i| Event {
            mono_ns: i,
            kind: "overflow".into(),
            detail: json!({}),
        })
        .collect();
    events.push(Event {
        mono_ns: 1_000,
        kind: "underrun".into(),
        detail: json!({"cycle": 7}),
    });
    store.add_events(id, &events).unwrap();
    // A total limit loses the late under-run to the early flood; a kind's limit does not.
    assert!(store
        .events(id, Some(10))
        .unwrap()
        .iter()
        .all(|e| e.kind == "overflow"));
    let under = store.events_of_kind(id, "underrun", Some(10)).unwrap();
    assert_eq!(under.len(), 1);
    assert_eq!(under[0].detail["cycle"], 7);
    assert_eq!(
        store
            .events_of_kind(id, "overflow", Some(10))
            .unwrap()
            .len(),
        10
    );
}

/// A run a stop ended before it measured anything is removed with all it wrote; a plan
/// cell that made it is left without a run; its group, once empty, is removed too, but
/// not a group with runs nor a plan run from its cell.
#[test]
fn a_run_and_a_group_stopped_before_measuring_are_removed() {
    use crate::RunSink;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    let store = Store::open(&path).unwrap();
    let g = store
        .create_group("event", "audiolat event", &json!({}))
        .unwrap();
    let kept = store
        .begin_run(&RunInfo {
            group_id: Some(g),
            ..info("event")
        })
        .unwrap();
    let gone = RunSink::begin_run(
        &store,
        &RunInfo {
            group_id: Some(g),
            ..info("event")
        },
    )
    .unwrap();
    RunSink::add_events(
        &store,
        gone,
        &[Event {
            mono_ns: 1,
            kind: "xrun".into(),
            detail: json!({}),
        }],
    )
    .unwrap();
    RunSink::discard_run(&store, gone).unwrap();
    assert!(matches!(store.run(gone), Err(StoreError::NoSuchRun(_))));
    assert!(store.events(gone, None).unwrap().is_empty());
    assert!(store.run(kept).is_ok());
    assert!(!store.discard_group(g).unwrap(), "a group with a run stays");
    store.discard_run(kept).unwrap();
    assert!(store.discard_group(g).unwrap());
    assert!(matches!(store.group(g), Err(StoreError::NoSuchGroup(_))));

    let plan = store
        .create_group("plan", "audiolat run p.toml", &json!({}))
        .unwrap();
    store.add_plan_cells(plan, &[cell(0, "a")]).unwrap();
    let a = store.plan_cells(plan).unwrap()[0].id;
    store.start_plan_cell(a).unwrap();
    let child = Store::open(&path).unwrap();
    child.file_runs_under(plan, a).unwrap();
    let run = RunSink::begin_run(&child, &info("jitter")).unwrap();
    RunSink::discard_run(&child, run).unwrap();
    assert_eq!(store.plan_cells(plan).unwrap()[0].run_id, None);
    assert!(!child.discard_group(plan).unwrap());
    assert!(
        !store.discard_group(plan).unwrap(),
        "a plan run keeps its cells"
    );
    assert!(store.group(plan).is_ok());
}
