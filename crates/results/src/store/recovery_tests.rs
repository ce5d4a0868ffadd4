use super::*;
use crate::hist::LatencyHistogram;
use crate::model::{Machine, RunInfo, ToolInfo};
use rusqlite::params;
use serde_json::json;

/// A database at `r.db` in a new temporary directory, with one `probe` run left
/// `running` by a process that no longer exists.
fn a_dead_processs_run(probe: &str) -> (tempfile::TempDir, std::path::PathBuf, RunId) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let store = Store::open(&path).unwrap();
    let info = RunInfo {
        probe: probe.into(),
        group_id: None,
        machine: Machine {
            hostname: hostname(),
            ..Machine::default()
        },
        tool: ToolInfo::default(),
        command_line: format!("audiolat {probe}"),
        config: json!({}),
        load: json!({}),
        qos_requested: json!({}),
    };
    let id = store.begin_run(&info).unwrap();
    store
        .db
        .lite()
        .execute(
            "UPDATE run SET pid = ?2 WHERE id = ?1",
            params![id, i32::MAX as i64 - 1],
        )
        .unwrap();
    (dir, path, id)
}

#[test]
fn a_dead_processs_run_gets_the_summarisers_measurements_and_the_reason() {
    let (_dir, path, id) = a_dead_processs_run("event");
    std::fs::remove_file(reserve_path(&path)).unwrap();
    // A reader sees it as stored and changes nothing.
    let reader = Store::open_read_only(&path).unwrap();
    assert_eq!(reader.abandoned_runs().unwrap().len(), 1);
    assert_eq!(reader.run(id).unwrap().status, RunStatus::Running);
    drop(reader);
    let summarise = |_: &Store, run: &RunRecord| {
        let mut h = LatencyHistogram::new(1_000_000).unwrap();
        h.record(run.id.get() as u64 * 1000);
        Ok(vec![Measurement::from_histogram(
            "event",
            "event_latency",
            "test",
            h,
        )])
    };
    assert_eq!(Store::close_abandoned(&path, &summarise).unwrap(), 1);
    let store = Store::open_read_only(&path).unwrap();
    let run = store.run(id).unwrap();
    assert_eq!(run.status, RunStatus::Interrupted);
    assert!(run.error.unwrap().contains("summarised"));
    assert!(run.ended_at.is_some());
    let ms = store.measurements(id).unwrap();
    assert_eq!(ms.len(), 1);
    assert_eq!(ms[0].measurement.count(), 1);
    assert!(
        !reserve_path(&path).exists(),
        "closing runs for a reader makes nothing new"
    );
}

#[test]
fn opening_for_reading_closes_a_dead_processs_run_and_folds_nothing_locally() {
    let (_dir, path, id) = a_dead_processs_run("jitter");
    let folded = std::cell::Cell::new(false);
    let reader = Store::open_reading(&path, &|_, _| Ok(Vec::new()), &|_| folded.set(true)).unwrap();
    assert_eq!(reader.run(id).unwrap().status, RunStatus::Interrupted);
    assert!(reader.abandoned_runs().unwrap().is_empty());
    assert!(!folded.get(), "a local file's log is not folded in");
}
