//! A run whose database another process holds locked: its writes wait in memory while
//! it measures, and a close that cannot be made keeps it whole beside the database.

use super::*;
use crate::hist::LatencyHistogram;
use crate::model::{Machine, ToolInfo, TriggerRow};
use crate::run::RunInfo;
use crate::sink::RunSink;
use serde_json::json;
use std::time::Duration;

fn info() -> RunInfo {
    RunInfo {
        probe: &crate::probe_kind::EVENT,
        group_id: None,
        machine: Machine {
            hostname: hostname(),
            ..Machine::default()
        },
        tool: ToolInfo::default(),
        command_line: "audiolat test".into(),
        config: json!({"rate_hz": 48000}),
        load: json!({"spec": "none"}),
        qos_requested: json!({}),
        started_mono_ns: None,
    }
}

fn rows(seqs: std::ops::Range<u64>) -> Vec<TriggerRow> {
    seqs.map(|seq| TriggerRow {
        seq,
        source: "timer".into(),
        trigger_ns: 1_000 * seq,
        latency_ns: Some(5_000_000 + seq as i64),
        timing: "backend".into(),
        ..TriggerRow::default()
    })
    .collect()
}

fn latency(values: &[u64]) -> Measurement {
    let mut h = LatencyHistogram::new(100_000_000).unwrap();
    for v in values {
        h.record(*v);
    }
    Measurement::from_histogram("event", "event_latency", "test", h)
}

/// Another process's write transaction on `path`, held until dropped.
struct Holder(Connection);

impl Holder {
    fn lock(path: &Path) -> Holder {
        let c = Connection::open(path).unwrap();
        c.execute_batch("BEGIN EXCLUSIVE; UPDATE run SET pid = pid;")
            .unwrap();
        Holder(c)
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.execute_batch("COMMIT");
    }
}

fn stored_seqs(path: &Path, id: RunId) -> Vec<u64> {
    Store::open_read_only(path)
        .unwrap()
        .triggers(id)
        .unwrap()
        .iter()
        .map(|t| t.seq)
        .collect()
}

#[test]
fn writes_a_lock_holds_off_while_measuring_are_made_in_order_once_it_goes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    let store = Store::open(&path).unwrap();
    store.set_lock_wait(Duration::from_millis(300));
    let id = RunSink::begin_run(&store, &info()).unwrap();
    RunSink::add_triggers(&store, id, &rows(0..2)).unwrap();
    let held = Holder::lock(&path);
    // Held off: not an error, kept.
    RunSink::add_triggers(&store, id, &rows(2..4)).unwrap();
    RunSink::replace_measurements(&store, id, &[latency(&[1, 2, 3])]).unwrap();
    RunSink::add_triggers(&store, id, &rows(4..5)).unwrap();
    assert_eq!(stored_seqs(&path, id), [0, 1]);
    drop(held);
    // The close makes every write that waited, in order, then its own.
    let mut close = || {
        RunSink::replace_measurements(&store, id, &[latency(&[1, 2, 3, 4, 5])])?;
        RunSink::finish_run(
            &store,
            id,
            RunStatus::Complete,
            &json!({}),
            &json!({}),
            None,
            None,
        )
    };
    RunSink::closing(&store, &mut close).unwrap();
    assert_eq!(stored_seqs(&path, id), [0, 1, 2, 3, 4]);
    let read = Store::open_read_only(&path).unwrap();
    assert_eq!(read.run(id).unwrap().status, RunStatus::Complete);
    let ms = read.measurements(id).unwrap();
    assert_eq!(ms.len(), 1);
    assert_eq!(ms[0].measurement.count(), 5);
    assert_eq!(store.moved(id), None);
    assert!(!dir.path().join(UNPUSHED_DB).exists());
}

#[test]
fn a_lock_held_through_the_close_keeps_the_run_whole_beside_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    let store = Store::open(&path).unwrap();
    store.set_lock_wait(Duration::from_millis(200));
    let group = store
        .create_group("sweep", "audiolat test", &json!({}))
        .unwrap();
    let id = RunSink::begin_run(
        &store,
        &RunInfo {
            group_id: Some(group),
            ..info()
        },
    )
    .unwrap();
    RunSink::add_triggers(&store, id, &rows(0..3)).unwrap();
    let held = Holder::lock(&path);
    RunSink::add_triggers(&store, id, &rows(3..6)).unwrap();
    let mut close = || {
        RunSink::replace_measurements(&store, id, &[latency(&[1, 2, 3, 4, 5, 6])])?;
        RunSink::finish_run(
            &store,
            id,
            RunStatus::Complete,
            &json!({"realtime": true}),
            &json!({"n": 6}),
            None,
            None,
        )
    };
    let err = RunSink::closing(&store, &mut close).unwrap_err();
    let spool = dir.path().join(UNPUSHED_DB);
    let (kept_in, local_id) = store.moved(id).expect("moved");
    assert_eq!(kept_in, spool);
    let msg = err.to_string();
    assert!(
        matches!(
            &err,
            crate::SinkError::Store(StoreError::KeptLocally { .. })
        ),
        "{msg}"
    );
    assert!(msg.contains("locked"), "{msg}");
    assert!(
        msg.contains(&format!(
            "audiolat push --db {} --to {}",
            spool.display(),
            path.display()
        )),
        "{msg}"
    );
    drop(held);
    drop(store);
    // Kept there whole, ended as it would have, with the same identity and start.
    let local = Store::open_read_only(&spool).unwrap();
    let kept = local.run(local_id).unwrap();
    assert_eq!(kept.status, RunStatus::Complete);
    assert_eq!(kept.group_id, None);
    assert_eq!(stored_seqs(&spool, local_id), [0, 1, 2, 3, 4, 5]);
    assert_eq!(
        local.measurements(local_id).unwrap()[0].measurement.count(),
        6
    );
    let main = Store::open_read_only(&path).unwrap();
    let copy = main.run(id).unwrap();
    assert_eq!(copy.status, RunStatus::Running);
    assert_eq!(copy.started_mono_ns, kept.started_mono_ns);
    drop((local, main));

    // Its process gone, the next open closes the copy naming where the run is.
    Connection::open(&path)
        .unwrap()
        .execute("UPDATE run SET pid = 4999999 WHERE id = ?1", [id.0])
        .unwrap();
    let main = Store::open(&path).unwrap();
    let copy = main.run(id).unwrap();
    assert_eq!(copy.status, RunStatus::Interrupted);
    let why = copy.error.unwrap();
    assert!(
        why.contains(&format!("kept it in {} as run {local_id}", spool.display())),
        "{why}"
    );
    // Pushed back, it replaces the copy in its group.
    let pushed = Store::open(&spool).unwrap().push_to(&main).unwrap();
    assert_eq!(pushed.copied.len(), 1, "{pushed:?}");
    let back = main.run(pushed.copied[0].1).unwrap();
    assert_eq!(back.status, RunStatus::Complete);
    assert_eq!(back.group_id, Some(group));
    assert_eq!(stored_seqs(&path, back.id), [0, 1, 2, 3, 4, 5]);
    assert_eq!(main.list_runs(&RunFilter::default()).unwrap().len(), 1);
}

#[test]
fn a_checkpoint_replaces_the_ones_before_it_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    let store = Store::open(&path).unwrap();
    let id = RunSink::begin_run(&store, &info()).unwrap();
    for n in 1..50u64 {
        let values: Vec<u64> = (1..=n).collect();
        RunSink::replace_measurements(&store, id, &[latency(&values)]).unwrap();
    }
    let shadow = store.shadow.borrow();
    assert_eq!(shadow.runs[&id].writes.len(), 1);
}

/// A run's duration (`secs`) is what it measured: from its start once it holds the
/// database to the end its lifecycle gives, not the waits for a lock around them.
#[test]
fn a_runs_duration_leaves_out_the_waits_for_its_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    let store = Store::open(&path).unwrap();
    // Begun while another process holds the database: its start is stamped after.
    let held = Holder::lock(&path);
    let released = std::thread::scope(|s| {
        let release = s.spawn(|| {
            std::thread::sleep(Duration::from_millis(300));
            let at = now_mono_ns();
            drop(held);
            at
        });
        let id = RunSink::begin_run(&store, &info()).unwrap();
        (release.join().unwrap(), id)
    });
    let (released_at, id) = released;
    let started = store.run(id).unwrap().started_mono_ns;
    assert!(
        started as i64 >= released_at,
        "stamped at {started}, the lock went at {released_at}"
    );
    // Ended where the lifecycle says, however long its closing writes then wait.
    let ended = started + 1_500_000_000;
    let held = Holder::lock(&path);
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(300));
            drop(held);
        });
        let mut close = || {
            RunSink::finish_run(
                &store,
                id,
                RunStatus::Complete,
                &json!({}),
                &json!({}),
                None,
                Some(ended),
            )
        };
        RunSink::closing(&store, &mut close).unwrap();
    });
    assert_eq!(store.run(id).unwrap().duration_s, Some(1.5));
}
