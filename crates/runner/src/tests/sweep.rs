//! The sweep's control flow on the virtual card (no server, no root needed): every cell
//! on every period in order, a stop flag raised mid-way, a run that ended with an error,
//! a cell the lifecycle could not finish, a period that cannot be opened, the search's
//! stop rule, and the group's status on each path. The cells run the test probe through
//! the lifecycle into the in-memory sink.

use std::sync::atomic::Ordering;

use engine::audio::Backend;
use engine::backend::{BackendSpec, Setup};
use engine::virtual_card::setup::VirtualSpec;
use results::{GroupId, RunId, RunStatus};

use super::{context, MemorySink, ServerExits, TestProbe};
use crate::group::Group;
use crate::sweep::{Sweep, SweepCell, SweepOutcome, SweepRefused, Target};
use crate::{Cell, Context, Observer, RunError, Unobserved, Watch};

/// What a test cell does when it runs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Then {
    /// Measures and completes.
    Completes,
    /// Measures, then the user presses Ctrl-C.
    RaisesStop,
    /// Its server exits mid-run: the run ends with an error to report.
    LosesServer,
    /// The probe breaks: the lifecycle cannot finish the run.
    Breaks,
}

/// A test cell: the test probe, named, doing `then`.
#[derive(Clone)]
struct StepCell<'a> {
    name: &'static str,
    then: Then,
    sink: &'a MemorySink,
}

/// A test cell's run.
#[derive(Debug)]
struct StepRun {
    name: &'static str,
    period_frames: u32,
    run_id: RunId,
    status: RunStatus,
    error: Option<String>,
}

impl SweepCell for StepCell<'_> {
    type Run = StepRun;

    fn on_stream(
        &self,
        _setup: &Setup,
        _granted: Option<results::records::stream::AlsaGrantedRecord>,
    ) -> Self {
        self.clone()
    }

    fn run(
        &self,
        ctx: &Context,
        target: Target<'_>,
        stream: &mut dyn Backend,
        watch: Option<&mut dyn Watch>,
        observer: &dyn Observer,
    ) -> Result<StepRun, RunError> {
        assert!(watch.is_none(), "the virtual card has no server to watch");
        let mut probe = TestProbe::new(3, self.sink);
        probe.fail = self.then == Then::Breaks;
        let mut cell = Cell {
            group: target.group,
            ..Cell::new(probe, load::LoadSpec::none(), target.scratch.to_path_buf())
        };
        let mut exits = ServerExits {
            after: 2,
            looked: 0,
        };
        let watch = (self.then == Then::LosesServer).then_some(&mut exits as &mut dyn Watch);
        let run = crate::run(ctx, target.sink, &mut cell, watch, observer)?;
        if self.then == Then::RaisesStop {
            ctx.stop.store(true, Ordering::Relaxed);
        }
        Ok(StepRun {
            name: self.name,
            period_frames: stream.info().period_frames,
            run_id: run.run_id,
            status: run.status,
            error: run.error,
        })
    }

    fn ended(run: &StepRun) -> (RunStatus, Option<&str>) {
        (run.status, run.error.as_deref())
    }
}

fn virtual_card() -> BackendSpec {
    BackendSpec::Virtual(VirtualSpec {
        rate_hz: None,
        periods: 2,
        cable: None,
        capture: true,
    })
}

fn cells<'a>(sink: &'a MemorySink, steps: &[(&'static str, Then)]) -> Vec<StepCell<'a>> {
    steps
        .iter()
        .map(|&(name, then)| StepCell { name, then, sink })
        .collect()
}

/// The statuses group 7 was closed with, in order.
fn closed_statuses(sink: &MemorySink) -> Vec<RunStatus> {
    sink.group_closes
        .borrow()
        .iter()
        .filter(|(g, _)| *g == GroupId(7))
        .map(|(_, s)| *s)
        .collect()
}

/// Runs `steps` on every period of the virtual card, in group 7; the statuses the group
/// was closed with, in order.
fn sweep(
    ctx: &Context,
    sink: &MemorySink,
    periods: &[u32],
    steps: &[(&'static str, Then)],
    stop_after: Option<&dyn Fn(&StepRun) -> bool>,
) -> (Result<SweepOutcome<StepRun>, RunError>, Vec<RunStatus>) {
    let group = Group::adopt(sink, GroupId(7));
    let spec = virtual_card();
    let opened = Sweep::open(&spec, periods.iter().copied().map(Some).collect())
        .expect("the virtual card opens");
    let cells = cells(sink, steps);
    let scratch = std::env::temp_dir();
    let out = match stop_after {
        Some(stop) => opened.run_until(ctx, sink, &group, &cells, &scratch, &Unobserved, stop),
        None => opened.run(ctx, sink, &group, &cells, &scratch, &Unobserved),
    };
    drop(group);
    (out, closed_statuses(sink))
}

fn names_and_periods(out: &SweepOutcome<StepRun>) -> Vec<(&'static str, u32)> {
    out.runs.iter().map(|r| (r.name, r.period_frames)).collect()
}

#[test]
fn a_sweep_runs_every_cell_on_every_period_in_order_and_closes_its_group_complete() {
    let sink = MemorySink::default();
    let ctx = context(None);
    let steps = [("a", Then::Completes), ("b", Then::Completes)];
    let (out, closed) = sweep(&ctx, &sink, &[64, 128], &steps, None);
    let out = out.expect("the sweep finishes");
    assert_eq!(
        names_and_periods(&out),
        [("a", 64), ("b", 64), ("a", 128), ("b", 128)]
    );
    assert_eq!(out.status, RunStatus::Complete);
    assert_eq!(out.failure, None);
    assert!(out.group_not_closed.is_none());
    assert_eq!(closed, [RunStatus::Complete]);
    for run in &out.runs {
        let stored = sink.run(run.run_id);
        assert_eq!(
            stored.info.as_ref().and_then(|i| i.group_id),
            Some(GroupId(7))
        );
        assert_eq!(stored.status, Some(RunStatus::Complete));
    }
}

#[test]
fn a_stop_flag_raised_mid_way_ends_the_sweep_before_the_next_cell_interrupted() {
    let sink = MemorySink::default();
    let ctx = context(None);
    let steps = [
        ("a", Then::Completes),
        ("b", Then::RaisesStop),
        ("c", Then::Completes),
    ];
    let (out, closed) = sweep(&ctx, &sink, &[64, 128], &steps, None);
    let out = out.expect("the sweep finishes");
    assert_eq!(names_and_periods(&out), [("a", 64), ("b", 64)]);
    assert_eq!(out.status, RunStatus::Interrupted);
    assert_eq!(out.failure, None);
    assert_eq!(closed, [RunStatus::Interrupted]);
    assert_eq!(sink.runs.borrow().len(), 2, "no run begun after the stop");
}

#[test]
fn a_run_that_ended_with_an_error_stops_the_sweep_failed_and_keeps_the_runs() {
    let sink = MemorySink::default();
    let ctx = context(None);
    let steps = [
        ("a", Then::Completes),
        ("b", Then::LosesServer),
        ("c", Then::Completes),
    ];
    let (out, closed) = sweep(&ctx, &sink, &[64, 128], &steps, None);
    let out = out.expect("the sweep finishes");
    assert_eq!(names_and_periods(&out), [("a", 64), ("b", 64)]);
    assert_eq!(out.runs[1].status, RunStatus::Interrupted);
    let failure = out
        .failure
        .as_deref()
        .expect("the run's error is the sweep's");
    assert!(failure.contains("the test server exited"), "{failure}");
    assert_eq!(out.status, RunStatus::Failed);
    assert_eq!(closed, [RunStatus::Failed]);
}

#[test]
fn a_cell_the_lifecycle_cannot_finish_ends_the_sweep_with_its_error_and_the_group_failed() {
    let sink = MemorySink::default();
    let ctx = context(None);
    let steps = [
        ("a", Then::Completes),
        ("b", Then::Breaks),
        ("c", Then::Completes),
    ];
    let (out, closed) = sweep(&ctx, &sink, &[64, 128], &steps, None);
    match out {
        Err(RunError::Failed { run_id, .. }) => {
            assert_eq!(run_id, RunId(2));
            assert_eq!(sink.run(RunId(2)).status, Some(RunStatus::Failed));
        }
        other => panic!("expected the failed run's error, got {other:?}"),
    }
    assert_eq!(closed, [RunStatus::Failed]);
    assert_eq!(
        sink.runs.borrow().len(),
        2,
        "nothing runs after the failure"
    );
}

#[test]
fn a_later_period_that_cannot_be_opened_fails_the_sweep_after_the_runs_before_it() {
    let sink = MemorySink::default();
    let ctx = context(None);
    let steps = [("a", Then::Completes)];
    // The virtual card runs periods of 32 frames and more.
    let (out, closed) = sweep(&ctx, &sink, &[64, 16, 128], &steps, None);
    let out = out.expect("the sweep finishes");
    assert_eq!(names_and_periods(&out), [("a", 64)]);
    let failure = out.failure.as_deref().expect("the period's refusal");
    assert!(failure.contains("16"), "{failure}");
    assert_eq!(out.status, RunStatus::Failed);
    assert_eq!(closed, [RunStatus::Failed]);
}

#[test]
fn a_first_period_that_cannot_be_opened_is_refused_before_anything_is_stored() {
    let spec = virtual_card();
    assert!(matches!(
        Sweep::open(&spec, vec![Some(16), Some(64)]),
        Err(SweepRefused::Setup(_))
    ));
    assert!(matches!(
        Sweep::open(&spec, Vec::new()),
        Err(SweepRefused::NoPeriods)
    ));
}

#[test]
fn a_search_stops_after_the_first_run_its_rule_names_and_closes_the_group_complete() {
    let sink = MemorySink::default();
    let ctx = context(None);
    let steps = [("a", Then::Completes)];
    let stop: &dyn Fn(&StepRun) -> bool = &|r| r.period_frames == 128;
    let (out, closed) = sweep(&ctx, &sink, &[256, 128, 64], &steps, Some(stop));
    let out = out.expect("the search finishes");
    assert_eq!(names_and_periods(&out), [("a", 256), ("a", 128)]);
    assert_eq!(out.status, RunStatus::Complete);
    assert_eq!(closed, [RunStatus::Complete]);
}

#[test]
fn the_search_tries_each_period_once_largest_first_and_none_the_backend_cannot_run() {
    let spec = virtual_card();
    assert_eq!(
        crate::min_buffer::search_periods(&spec, Some(&[64, 256, 64, 128])),
        [Some(256), Some(128), Some(64)]
    );
    assert_eq!(
        crate::min_buffer::search_periods(&spec, None),
        [2048, 1024, 512, 256, 128, 64, 32].map(Some)
    );
}

#[test]
fn a_round_trip_search_on_the_virtual_card_runs_its_cell_on_the_set_up_s_loop() {
    use crate::min_buffer::{holds_without_underruns, search, verdict};
    use crate::sweep::RoundtripCell;
    use engine::virtual_card::setup::Cable;
    let sink = MemorySink::default();
    let ctx = context(None);
    let spec = BackendSpec::Virtual(VirtualSpec {
        rate_hz: None,
        periods: 2,
        cable: Some(Cable {
            delay_frames: 12.5,
            gain: 1.0,
        }),
        capture: true,
    });
    let cell = RoundtripCell {
        config: probes::roundtrip::RoundtripConfig {
            duration_ms: 300.0,
            loop_hint_frames: 12.5,
            ..Default::default()
        },
        load: load::LoadSpec::none(),
        repeat: 1,
        loop_description: String::new(),
        granted: None,
    };
    let group = Group::adopt(&sink, GroupId(7));
    let periods = crate::min_buffer::search_periods(&spec, Some(&[256]));
    let opened = Sweep::open(&spec, periods).expect("the virtual card opens");
    let out = search(
        opened,
        &ctx,
        &sink,
        &group,
        &cell,
        &std::env::temp_dir(),
        &Unobserved,
    )
    .expect("the search finishes");
    // Whether the setting held is the machine's: only the plumbing is asserted.
    assert_eq!(out.runs.len(), 1);
    let run = &out.runs[0];
    assert_eq!(
        run.run.view.config["loop"],
        "virtual cable of 12.5 frames, gain 1"
    );
    assert_eq!(run.outcome.info.period_frames, 256);
    assert_eq!(
        sink.run(run.run.run_id)
            .info
            .as_ref()
            .and_then(|i| i.group_id),
        Some(GroupId(7))
    );
    let held = holds_without_underruns(run);
    assert_eq!(
        verdict(&out.runs),
        (held.then_some(0), (!held).then_some(0))
    );
    drop(group);
    assert_eq!(closed_statuses(&sink), [out.status]);
}

/// A stop that came while the sweep's last run was stored kept nothing from running: the
/// group is complete, as a single run stopped while it is stored is.
#[test]
fn a_stop_while_the_last_run_is_stored_stops_nothing() {
    let sink = MemorySink::default();
    let ctx = context(None);
    let steps = [("a", Then::Completes), ("b", Then::RaisesStop)];
    let (out, closed) = sweep(&ctx, &sink, &[64], &steps, None);
    let out = out.expect("the sweep finishes");
    assert_eq!(names_and_periods(&out), [("a", 64), ("b", 64)]);
    assert_eq!(out.status, RunStatus::Complete);
    assert_eq!(closed, [RunStatus::Complete]);
    assert!(!out.nothing_stored);
}

/// A stop before the sweep's first run measured anything: no run and no group is kept.
#[test]
fn a_stop_before_any_run_measured_stores_no_run_and_no_group() {
    let sink = MemorySink::default();
    let ctx = context(None);
    ctx.stop.store(true, Ordering::Relaxed);
    let steps = [("a", Then::Completes)];
    let (out, closed) = sweep(&ctx, &sink, &[64, 128], &steps, None);
    let out = out.expect("the sweep finishes");
    assert!(out.runs.is_empty());
    assert!(out.nothing_stored);
    assert!(closed.is_empty(), "{closed:?}");
    assert_eq!(*sink.groups_discarded.borrow(), [GroupId(7)]);
}
