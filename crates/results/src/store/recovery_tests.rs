use super::*;
use crate::hist::LatencyHistogram;
use crate::model::{Machine, ToolInfo};
use crate::run::RunInfo;
use rusqlite::params;
use serde_json::json;

/// A database at `r.db` in a new temporary directory, with one `probe` run left
/// `running` by a process that no longer exists.
fn a_dead_processs_run(probe: &str) -> (tempfile::TempDir, std::path::PathBuf, RunId) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let store = Store::open(&path).unwrap();
    let info = RunInfo {
        probe: crate::probe_kind::ProbeKind::stored(probe),
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
        started_mono_ns: None,
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
    let _ = std::fs::remove_file(reserve_path(&path));
    // A reader sees it as stored and changes nothing.
    let reader = Store::open_read_only(&path).unwrap();
    assert_eq!(reader.abandoned_runs().unwrap().len(), 1);
    assert_eq!(reader.run(id).unwrap().status, RunStatus::Running);
    drop(reader);
    let summarise = |_: &Store, run: &RunRecord| {
        let mut h = LatencyHistogram::new(1_000_000).unwrap();
        h.record(run.id.get() as u64 * 1000);
        Ok(Recovered {
            measurements: vec![Measurement::from_histogram(
                "event",
                "event_latency",
                "test",
                h,
            )],
            result: serde_json::json!({"period_frames": 128}),
            ..Recovered::default()
        })
    };
    assert_eq!(Store::close_abandoned(&path, &summarise).unwrap(), 1);
    let store = Store::open_read_only(&path).unwrap();
    let run = store.run(id).unwrap();
    assert_eq!(run.status, RunStatus::Interrupted);
    assert!(run.error.unwrap().contains("summarised"));
    // The result its stored parts give, in place of the one it kept while running.
    assert_eq!(run.result, serde_json::json!({"period_frames": 128}));
    assert_eq!(run.flags, serde_json::json!({}));
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
    let reader = Store::open_reading(&path, &|_, _| Ok(Recovered::default()), &|_| {
        folded.set(true)
    })
    .unwrap();
    assert_eq!(reader.run(id).unwrap().status, RunStatus::Interrupted);
    assert!(reader.abandoned_runs().unwrap().is_empty());
    assert!(!folded.get(), "a local file's log is not folded in");
}

/// A run whose pid the kernel has given to another process since (here pid 1, which
/// runs, with a start time that is not its own), or that was made in another boot, is a
/// dead process's run; one of the live process that made it is not; one stored before
/// boot ids were kept is judged by its pid alone, as it was. A plan run's runner too.
#[test]
fn a_pid_reused_or_from_another_boot_does_not_keep_a_run_or_group_running() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("r.db")).unwrap();
    let run_info = RunInfo {
        probe: &crate::probe_kind::JITTER,
        group_id: None,
        machine: Machine {
            hostname: hostname(),
            ..Machine::default()
        },
        tool: ToolInfo::default(),
        command_line: "audiolat jitter".into(),
        config: json!({}),
        load: json!({}),
        qos_requested: json!({}),
        started_mono_ns: None,
    };
    let init_start = crate::owner::start_ticks(1).unwrap();
    let set = |id: RunId, boot: Option<String>, start: Option<i64>| {
        store
            .db
            .lite()
            .execute(
                "UPDATE run SET pid = 1, boot_id = ?2, pid_start_ticks = ?3 WHERE id = ?1",
                params![id, boot, start],
            )
            .unwrap();
    };
    let boot = crate::owner::boot_id();
    let reused = store.begin_run(&run_info).unwrap();
    set(reused, boot.clone(), Some(init_start + 1));
    let other_boot = store.begin_run(&run_info).unwrap();
    set(
        other_boot,
        Some("00000000-0000-0000-0000-000000000000".into()),
        Some(init_start),
    );
    let live = store.begin_run(&run_info).unwrap();
    set(live, boot.clone(), Some(init_start));
    let legacy = store.begin_run(&run_info).unwrap();
    set(legacy, None, None);
    // A plan run whose runner's pid went to pid 1.
    let mut detail = json!({});
    crate::owner::Owner {
        pid: 1,
        boot_id: boot,
        start_ticks: Some(init_start + 1),
    }
    .write_runner(&mut detail);
    let plan = store
        .create_group("plan", "audiolat run p.toml", &detail)
        .unwrap();
    let abandoned: Vec<RunId> = store
        .abandoned_runs()
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(abandoned, [reused, other_boot]);
    assert_eq!(store.abandoned_groups().unwrap(), [(plan, 1)]);
    assert_eq!(store.recover_stale_runs().unwrap(), 2);
    assert_eq!(store.run(live).unwrap().status, RunStatus::Running);
    assert_eq!(store.run(legacy).unwrap().status, RunStatus::Running);
    assert_eq!(store.group_status(plan).unwrap().1, RunStatus::Interrupted);
}
