//! The group lifecycle: a group closed with the one status rule, on every path.

use std::sync::atomic::Ordering;

use results::{GroupId, RunStatus, SinkError};
use serde_json::json;

use super::{context, MemorySink};
use crate::group::{status, Group, GroupEnd};

/// The kind and status of the sink's first group.
fn first_group(sink: &MemorySink) -> (String, RunStatus) {
    sink.groups.borrow()[0].clone()
}

#[test]
fn a_group_whose_runs_all_completed_is_closed_complete() {
    let sink = MemorySink::default();
    let ctx = context(None);
    let group = Group::open(&sink, "suite", "audiolat suite", &json!({})).expect("opened");
    assert_eq!(group.id(), GroupId(1));
    assert_eq!(first_group(&sink), ("suite".into(), RunStatus::Running));
    group
        .close(ctx.group_status(GroupEnd::default()))
        .expect("closed");
    drop(group);
    assert_eq!(first_group(&sink), ("suite".into(), RunStatus::Complete));
    // Closed once: dropping it after its close does not close it again.
    assert_eq!(sink.group_closes.borrow().len(), 1);
}

#[test]
fn a_group_with_a_failed_run_is_closed_failed() {
    let sink = MemorySink::default();
    let ctx = context(None);
    let group = Group::open(&sink, "event", "audiolat event", &json!({})).expect("opened");
    let mut end = GroupEnd::default();
    end.add_run(RunStatus::Complete);
    end.add_run(RunStatus::Failed);
    group.close(ctx.group_status(end)).expect("closed");
    assert_eq!(first_group(&sink).1, RunStatus::Failed);
}

#[test]
fn a_group_with_an_interrupted_run_is_interrupted_without_a_signal() {
    // A run the server's death interrupted (no Ctrl-C): the group did not run to its
    // end either, in a suite or an experiment as in a sweep.
    let sink = MemorySink::default();
    let ctx = context(None);
    let group = Group::open(&sink, "suite", "audiolat suite", &json!({})).expect("opened");
    let mut end = GroupEnd::default();
    end.add_run(RunStatus::Interrupted);
    end.add_run(RunStatus::Failed);
    group.close(ctx.group_status(end)).expect("closed");
    assert_eq!(first_group(&sink).1, RunStatus::Interrupted);
}

#[test]
fn a_stopped_group_is_interrupted_even_with_a_failed_run_unless_an_error_stopped_it() {
    let sink = MemorySink::default();
    let ctx = context(None);
    ctx.stop.store(true, Ordering::Relaxed);
    let group = Group::open(&sink, "suite", "audiolat suite", &json!({})).expect("opened");
    // The stop kept a run from running.
    let failed = GroupEnd {
        run_failed: true,
        interrupted: true,
        ..GroupEnd::default()
    };
    group.close(ctx.group_status(failed)).expect("closed");
    assert_eq!(first_group(&sink).1, RunStatus::Interrupted);
    // The one rule: an error that stopped the group wins, then a stop, then a failed run.
    let end = |stopped_by_error, interrupted, run_failed| {
        status(GroupEnd {
            stopped_by_error,
            interrupted,
            run_failed,
        })
    };
    assert_eq!(end(true, true, false), RunStatus::Failed);
    assert_eq!(end(false, true, true), RunStatus::Interrupted);
    assert_eq!(end(false, false, true), RunStatus::Failed);
    assert_eq!(end(false, false, false), RunStatus::Complete);
}

/// A stop that came after the group's last run (while it was stored) kept nothing from
/// running: the group ends by its runs, as a single run stopped while it is stored
/// ends complete.
#[test]
fn a_stop_after_the_last_run_stopped_nothing() {
    let sink = MemorySink::default();
    let ctx = context(None);
    ctx.stop.store(true, Ordering::Relaxed);
    let group = Group::open(&sink, "event", "audiolat event", &json!({})).expect("opened");
    let mut end = GroupEnd::default();
    end.add_run(RunStatus::Complete);
    group.close(ctx.group_status(end)).expect("closed");
    assert_eq!(first_group(&sink).1, RunStatus::Complete);
}

/// A group a stop ended before any of its runs measured is removed, nothing of it kept;
/// one with a run is closed `interrupted` instead.
#[test]
fn a_group_stopped_before_any_run_measured_is_not_kept() {
    let sink = MemorySink::default();
    let group = Group::open(&sink, "event", "audiolat event", &json!({})).expect("opened");
    assert!(group.discard());
    assert_eq!(*sink.groups_discarded.borrow(), [GroupId(1)]);
    // Closed: dropping it closes nothing.
    drop(group);
    assert!(sink.group_closes.borrow().is_empty());
}

#[test]
fn an_error_mid_group_leaves_the_group_closed_failed() {
    let sink = MemorySink::default();
    let ctx = context(None);
    let mid_group = || -> Result<RunStatus, SinkError> {
        let group = Group::open(&sink, "suite", "audiolat suite", &json!({}))?;
        // A write that fails mid-group returns before the group's close.
        Err(SinkError::Other {
            message: "the doctor's run could not be stored".into(),
            disk_full: false,
        })?;
        let status = ctx.group_status(GroupEnd::default());
        group.close(status)?;
        Ok(status)
    };
    assert!(mid_group().is_err());
    assert_eq!(first_group(&sink), ("suite".into(), RunStatus::Failed));
}

#[test]
fn a_close_the_full_disk_refuses_spends_the_reserve_or_is_returned() {
    let sink = MemorySink::refusing(&["finish_group"], true);
    let group = Group::open(&sink, "event", "audiolat event", &json!({})).expect("opened");
    group
        .close(RunStatus::Complete)
        .expect("closed with the reserve");
    assert_eq!(first_group(&sink).1, RunStatus::Complete);

    let sink = MemorySink::refusing(&["finish_group"], false);
    let group = Group::open(&sink, "event", "audiolat event", &json!({})).expect("opened");
    assert!(group.close(RunStatus::Complete).is_err());
    drop(group);
    // Left running: the next open of a store closes it.
    assert_eq!(first_group(&sink).1, RunStatus::Running);
}
