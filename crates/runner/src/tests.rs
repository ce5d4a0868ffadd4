//! The lifecycle with a test probe and an in-memory sink, without root: a complete run,
//! a checkpoint stored as it goes, an interrupted run, a stream that went away, a failed
//! probe, a load that died mid-run, a full disk, and loads stopped on every path.
//!
//! The test probe is defined only here: implementing [`Probe`] and handing it to [`run`]
//! in a [`Cell`] is all a new probe needs.

use std::cell::{Cell as Flag, RefCell};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use load::LoadSpec;
use probes::probe::{
    Description, End, LiveStatus, Outcome, Probe, ProbeError, Progress, Tally, TriggerRow,
};
use results::{
    Event, GroupId, Measurement, RunId, RunInfo, RunSink, RunStatus, Series, SinkError, ToolInfo,
};
use serde_json::{json, Value};

use crate::{run, Cell, Context, Failure, Observer, RunError, Unobserved, Watch};

mod cells;
mod group;
mod studies;
mod sweep;
mod sweep_cells;

/// A run as the in-memory sink holds it.
#[derive(Default)]
struct StoredRun {
    info: Option<RunInfo>,
    status: Option<RunStatus>,
    flags: Value,
    result: Value,
    error: Option<String>,
    load: Value,
    qos_granted: Value,
    triggers: Vec<TriggerRow>,
    events: Vec<Event>,
    series: usize,
    measurements: Vec<Measurement>,
    /// Removed: a stop came before it measured anything.
    discarded: bool,
}

/// A [`RunSink`] in memory. The writes named in `refuse` fail as on a full disk until
/// the reserve is spent by a closing write.
#[derive(Default)]
struct MemorySink {
    runs: RefCell<Vec<StoredRun>>,
    refuse: RefCell<Vec<&'static str>>,
    reserve: Flag<bool>,
    /// Groups created: kind and status.
    groups: RefCell<Vec<(String, RunStatus)>>,
    /// Every group close, in order: the group and its status.
    group_closes: RefCell<Vec<(GroupId, RunStatus)>>,
    /// Groups removed (a stop before any of their runs measured).
    groups_discarded: RefCell<Vec<GroupId>>,
    /// Raised when a run is begun: a stop that comes while the load starts.
    stop_at_begin: Option<Arc<AtomicBool>>,
}

impl MemorySink {
    fn refusing(writes: &[&'static str], reserve: bool) -> MemorySink {
        let sink = MemorySink::default();
        sink.refuse.borrow_mut().extend_from_slice(writes);
        sink.reserve.set(reserve);
        sink
    }

    fn write(
        &self,
        what: &'static str,
        run_id: RunId,
        f: impl FnOnce(&mut StoredRun),
    ) -> Result<(), SinkError> {
        if self.refuse.borrow().contains(&what) {
            return Err(SinkError::Other {
                message: format!("database or disk is full ({what})"),
                disk_full: true,
            });
        }
        f(&mut self.runs.borrow_mut()[run_id.get() as usize - 1]);
        Ok(())
    }

    fn run(&self, run_id: RunId) -> std::cell::Ref<'_, StoredRun> {
        std::cell::Ref::map(self.runs.borrow(), |r| &r[run_id.get() as usize - 1])
    }

    /// The steps a measurement stored now says.
    fn steps_stored(&self, run_id: RunId) -> Option<u64> {
        let run = self.run(run_id);
        run.measurements
            .last()
            .and_then(|m| m.detail["steps"].as_u64())
    }
}

impl RunSink for MemorySink {
    fn path(&self) -> &Path {
        Path::new(":memory:")
    }

    fn begin_run(&self, info: &RunInfo) -> Result<RunId, SinkError> {
        if let Some(stop) = &self.stop_at_begin {
            stop.store(true, Ordering::Relaxed);
        }
        let mut runs = self.runs.borrow_mut();
        runs.push(StoredRun {
            info: Some(info.clone()),
            status: Some(RunStatus::Running),
            ..StoredRun::default()
        });
        Ok(RunId(runs.len() as i64))
    }

    fn set_result(&self, run_id: RunId, result: &Value) -> Result<(), SinkError> {
        self.write("set_result", run_id, |r| r.result = result.clone())
    }

    fn update_run(
        &self,
        run_id: RunId,
        load: Option<&Value>,
        qos_granted: Option<&Value>,
    ) -> Result<(), SinkError> {
        self.write("update_run", run_id, |r| {
            if let Some(l) = load {
                r.load = l.clone();
            }
            if let Some(q) = qos_granted {
                r.qos_granted = q.clone();
            }
        })
    }

    fn add_triggers(&self, run_id: RunId, rows: &[TriggerRow]) -> Result<(), SinkError> {
        self.write("add_triggers", run_id, |r| {
            r.triggers.extend_from_slice(rows)
        })
    }

    fn add_events(&self, run_id: RunId, events: &[Event]) -> Result<(), SinkError> {
        self.write("add_events", run_id, |r| r.events.extend_from_slice(events))
    }

    fn add_series(&self, run_id: RunId, _series: &Series) -> Result<(), SinkError> {
        self.write("add_series", run_id, |r| r.series += 1)
    }

    fn replace_measurements(&self, run_id: RunId, ms: &[Measurement]) -> Result<(), SinkError> {
        self.write("replace_measurements", run_id, |r| {
            r.measurements = ms.to_vec()
        })
    }

    fn finish_run(
        &self,
        run_id: RunId,
        status: RunStatus,
        flags: &Value,
        result: &Value,
        error: Option<&str>,
        _ended: Option<u64>,
    ) -> Result<(), SinkError> {
        self.write("finish_run", run_id, |r| {
            r.status = Some(status);
            r.flags = flags.clone();
            r.result = result.clone();
            r.error = error.map(str::to_string);
        })
    }

    fn create_group(
        &self,
        kind: &str,
        _command_line: &str,
        _detail: &Value,
    ) -> Result<GroupId, SinkError> {
        let mut groups = self.groups.borrow_mut();
        groups.push((kind.to_string(), RunStatus::Running));
        Ok(GroupId(groups.len() as i64))
    }

    fn discard_run(&self, run_id: RunId) -> Result<(), SinkError> {
        self.write("discard_run", run_id, |r| r.discarded = true)
    }

    fn discard_group(&self, group_id: GroupId) -> Result<bool, SinkError> {
        let runs = self.runs.borrow();
        let filed = runs.iter().any(|r| {
            !r.discarded
                && r.info
                    .as_ref()
                    .is_some_and(|i| i.group_id == Some(group_id))
        });
        if !filed {
            self.groups_discarded.borrow_mut().push(group_id);
        }
        Ok(!filed)
    }

    fn finish_group(&self, group_id: GroupId, status: RunStatus) -> Result<(), SinkError> {
        if self.refuse.borrow().contains(&"finish_group") {
            return Err(SinkError::Other {
                message: "database or disk is full (finish_group)".into(),
                disk_full: true,
            });
        }
        if let Some(g) = self
            .groups
            .borrow_mut()
            .get_mut(group_id.get() as usize - 1)
        {
            g.1 = status;
        }
        self.group_closes.borrow_mut().push((group_id, status));
        Ok(())
    }

    fn closing(&self, write: &mut dyn FnMut() -> Result<(), SinkError>) -> Result<(), SinkError> {
        match write() {
            Err(e) if e.is_disk_full() && self.reserve.replace(false) => {
                self.refuse.borrow_mut().clear();
                write()
            }
            other => other,
        }
    }
}

/// The test probe's identity: its steps are its main metric.
static TEST_KIND: results::ProbeKind = results::ProbeKind {
    main_metric: |_| Some("steps"),
    headline_metric: |_| Some("steps"),
    triggers: true,
    ..results::ProbeKind::named("test", "steps counted")
};

/// The test probe: `steps` steps, each a trigger row, a checkpoint and a tick.
struct TestProbe<'a> {
    steps: u64,
    sink: &'a MemorySink,
    /// Fails (after its steps) instead of returning an outcome.
    fail: bool,
    /// Panics after its steps.
    panic: bool,
    /// At this step, has the load die (the file its script waits for) and ticks until
    /// it was reaped.
    load_dies_at: Option<(u64, PathBuf)>,
    /// The steps each checkpoint had stored when the probe looked.
    seen_stored: Vec<Option<u64>>,
    /// Raised as the probe begins: a stop before its first step.
    stop_on_entry: Option<Arc<AtomicBool>>,
    /// Whether the lifecycle called it.
    measured: bool,
}

impl<'a> TestProbe<'a> {
    fn new(steps: u64, sink: &'a MemorySink) -> TestProbe<'a> {
        TestProbe {
            steps,
            sink,
            fail: false,
            panic: false,
            load_dies_at: None,
            seen_stored: Vec::new(),
            stop_on_entry: None,
            measured: false,
        }
    }

    fn steps_measurement(steps: u64) -> Measurement {
        Measurement {
            probe: "test".into(),
            metric: "steps".into(),
            unit: "count".into(),
            method: "counted".into(),
            summary: None,
            histogram: None,
            deadline: None,
            misses: None,
            detail: json!({ "steps": steps }),
        }
    }

    /// Makes the load's script exit and ticks until the lifecycle reaped it.
    fn kill_load(&self, die: &Path, progress: &mut dyn Progress) {
        let pgid = self.sink.run(RunId(1)).load["processes"][0]["pgid"]
            .as_i64()
            .expect("the load's process group is stored");
        std::fs::write(die, b"").expect("the die file is written");
        for _ in 0..2000 {
            let _ = progress.tick();
            if !Path::new(&format!("/proc/{pgid}")).exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("the load's script did not exit");
    }
}

impl Probe for TestProbe<'_> {
    fn describe(&self) -> Description {
        Description {
            probe: &TEST_KIND,
            config: json!({ "steps": self.steps }),
            qos_requested: json!({ "policy": "none" }),
            result_while_running: Some(json!({ "recovery": { "steps": self.steps } })),
        }
    }

    fn measure(
        &mut self,
        stop: &AtomicBool,
        progress: &mut dyn Progress,
    ) -> Result<Outcome, ProbeError> {
        self.measured = true;
        if let Some(stop) = &self.stop_on_entry {
            stop.store(true, Ordering::Relaxed);
        }
        let mut end = End::Complete;
        let mut done = 0;
        for step in 0..self.steps {
            if stop.load(Ordering::Relaxed) {
                end = End::Interrupted;
                break;
            }
            progress.triggers(&[TriggerRow {
                seq: step,
                source: "timer".into(),
                ..TriggerRow::default()
            }]);
            progress.checkpoint(&[Self::steps_measurement(step + 1)]);
            self.seen_stored.push(self.sink.steps_stored(RunId(1)));
            progress.status(&LiveStatus::Text(format!("step {step}")));
            if let Some((at, die)) = &self.load_dies_at {
                if *at == step {
                    self.kill_load(die, progress);
                }
            }
            done += 1;
            if let Err(reason) = progress.tick() {
                end = End::StreamGone(reason);
                break;
            }
        }
        if self.fail {
            return Err(ProbeError::new(std::io::Error::other(
                "the test probe broke",
            )));
        }
        assert!(!self.panic, "the test probe panicked");
        Ok(Outcome {
            measurements: vec![Self::steps_measurement(done)],
            events: Vec::new(),
            series: vec![Series {
                name: "steps".into(),
                unit: "count".into(),
                columns: vec!["step".into()],
                rows: (0..done).map(|s| vec![s as f64]).collect(),
            }],
            qos_granted: json!({ "policy": "none" }),
            flags: json!({ "test_flag": true }),
            result: json!({ "steps": done }),
            end,
            measured: Some(Tally {
                count: done as usize,
                noun: "steps",
            }),
        })
    }
}

fn context(load_exe: Option<PathBuf>) -> Context {
    Context {
        tool: ToolInfo {
            version: "0.0.0".into(),
            git_commit: "test".into(),
            build_profile: "test".into(),
        },
        command_line: "audiolat test".into(),
        stop: Arc::new(AtomicBool::new(false)),
        plan_cell: None,
        load_exe,
    }
}

fn test_cell<'a>(probe: TestProbe<'a>, load: &str) -> Cell<TestProbe<'a>> {
    Cell {
        group: Some(GroupId(7)),
        repeat: Some(2),
        ..Cell::new(
            probe,
            load.parse::<LoadSpec>().expect("a load spec"),
            std::env::temp_dir(),
        )
    }
}

/// A load program (audiolat's `__load` and `__supervise` stand-in) that stays until
/// `die` exists, then exits 3.
fn load_script(dir: &Path) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let die = dir.join("die");
    let script = dir.join("test-load");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nwhile [ ! -e '{}' ]; do sleep 0.05; done\nexit 3\n",
            die.display()
        ),
    )
    .expect("the script is written");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
        .expect("the script is made executable");
    (script, die)
}

/// The run's load processes are all gone.
fn load_stopped(sink: &MemorySink, run_id: RunId) -> bool {
    let tag = sink.run(run_id).load["tag"]
        .as_str()
        .expect("the load's tag is stored")
        .to_string();
    load::tagged_processes(&tag).is_empty()
}

/// Remembers what the lifecycle showed it.
#[derive(Default)]
struct Seen {
    calls: RefCell<Vec<String>>,
    /// Raised at the second status: the user's Ctrl-C.
    stop_at_second: Option<Arc<AtomicBool>>,
}

impl Observer for Seen {
    fn started(&self, run_id: RunId) {
        self.calls.borrow_mut().push(format!("started {run_id}"));
    }

    fn status(&self, status: &LiveStatus) {
        let mut calls = self.calls.borrow_mut();
        calls.push(format!("{status:?}"));
        if let Some(stop) = self.stop_at_second.as_ref().filter(|_| calls.len() == 3) {
            stop.store(true, Ordering::Relaxed);
        }
    }

    fn finished(&self) {
        self.calls.borrow_mut().push("finished".into());
    }
}

#[test]
fn a_complete_run_is_stored_with_its_description_outcome_and_flags() {
    let sink = MemorySink::default();
    let seen = Seen::default();
    let mut cell = test_cell(TestProbe::new(3, &sink), "none");
    let run = run(&context(None), &sink, &mut cell, None, &seen).expect("the run");
    assert_eq!(
        (run.run_id, run.status, run.error),
        (RunId(1), RunStatus::Complete, None)
    );
    assert_eq!(run.measurements[0].detail["steps"], 3);
    let stored = sink.run(RunId(1));
    let info = stored.info.as_ref().expect("begun");
    assert_eq!(info.probe.name, "test");
    assert_eq!(info.group_id, Some(GroupId(7)));
    assert_eq!(info.command_line, "audiolat test");
    assert_eq!(
        info.config,
        json!({"steps": 3, "load": "none", "repeat": 2})
    );
    assert_eq!(info.qos_requested, json!({"policy": "none"}));
    assert_eq!(stored.status, Some(RunStatus::Complete));
    assert_eq!(stored.error, None);
    assert_eq!(stored.triggers.len(), 3);
    assert_eq!(stored.series, 1);
    // The end replaced the result kept for recovery.
    assert_eq!(stored.result, json!({"steps": 3}));
    assert_eq!(stored.qos_granted, json!({"policy": "none"}));
    assert_eq!(stored.load["spec"], "none");
    assert_eq!(stored.flags["test_flag"], true);
    assert_eq!(stored.flags["load_exited_early"], false);
    assert!(stored.flags["emulated_cpu"].is_boolean());
    assert_eq!(
        seen.calls.borrow().as_slice(),
        [
            "started 1",
            "Text(\"step 0\")",
            "Text(\"step 1\")",
            "Text(\"step 2\")",
            "finished"
        ]
    );
}

#[test]
fn a_checkpoint_is_stored_as_it_goes() {
    let sink = MemorySink::default();
    let mut cell = test_cell(TestProbe::new(3, &sink), "none");
    run(&context(None), &sink, &mut cell, None, &Unobserved).expect("the run");
    assert_eq!(cell.probe.seen_stored, [Some(1), Some(2), Some(3)]);
}

#[test]
fn a_stop_flag_interrupts_the_run_and_keeps_what_was_measured() {
    let sink = MemorySink::default();
    let ctx = context(None);
    let seen = Seen {
        stop_at_second: Some(ctx.stop.clone()),
        ..Seen::default()
    };
    let mut cell = test_cell(TestProbe::new(10, &sink), "none");
    let run = run(&ctx, &sink, &mut cell, None, &seen).expect("the run");
    assert_eq!(run.status, RunStatus::Interrupted);
    // An interruption is a note, not an error to report.
    assert_eq!(run.error, None);
    let stored = sink.run(RunId(1));
    assert_eq!(stored.status, Some(RunStatus::Interrupted));
    assert_eq!(
        stored.error.as_deref(),
        Some("interrupted by a signal (Ctrl-C, SIGTERM, a hang-up or SIGQUIT); the measured steps are kept")
    );
    assert_eq!(stored.triggers.len(), 2);
    assert_eq!(sink.steps_stored(RunId(1)), Some(2));
}

/// A stop before a run begins stores nothing; one while its load starts removes the run
/// it began, with its load stopped and the probe never called; one before the probe's
/// first sample removes it too. No run says it measured "0 steps" of nothing.
#[test]
fn a_stop_before_anything_was_measured_stores_nothing() {
    let ctx = context(None);
    ctx.stop.store(true, Ordering::Relaxed);
    let sink = MemorySink::default();
    let mut cell = test_cell(TestProbe::new(3, &sink), "none");
    let e = run(&ctx, &sink, &mut cell, None, &Unobserved).expect_err("stopped");
    assert!(matches!(e, RunError::Stopped), "{e:?}");
    assert!(sink.runs.borrow().is_empty());
    assert!(!cell.probe.measured);

    let dir = tempfile::tempdir().expect("a temporary directory");
    let (script, _die) = load_script(dir.path());
    let ctx = context(Some(script));
    let sink = MemorySink {
        stop_at_begin: Some(ctx.stop.clone()),
        ..MemorySink::default()
    };
    let mut cell = test_cell(TestProbe::new(3, &sink), "ep:1");
    let e = run(&ctx, &sink, &mut cell, None, &Unobserved).expect_err("stopped");
    assert!(matches!(e, RunError::Stopped), "{e:?}");
    assert!(sink.run(RunId(1)).discarded);
    assert!(load_stopped(&sink, RunId(1)));
    assert!(!cell.probe.measured);

    let ctx = context(None);
    let sink = MemorySink::default();
    let mut probe = TestProbe::new(3, &sink);
    probe.stop_on_entry = Some(ctx.stop.clone());
    let mut cell = test_cell(probe, "none");
    let e = run(&ctx, &sink, &mut cell, None, &Unobserved).expect_err("stopped");
    assert!(matches!(e, RunError::Stopped), "{e:?}");
    assert!(sink.run(RunId(1)).discarded);
    assert!(cell.probe.measured);
}

/// Ends the run at its `after`th look.
struct ServerExits {
    after: usize,
    looked: usize,
}

impl Watch for ServerExits {
    fn ended(&mut self) -> Option<String> {
        self.looked += 1;
        (self.looked >= self.after).then(|| "the test server exited".to_string())
    }
}

#[test]
fn a_watch_ends_the_run_as_its_stream_gone() {
    let sink = MemorySink::default();
    let mut server = ServerExits {
        after: 2,
        looked: 0,
    };
    let mut cell = test_cell(TestProbe::new(10, &sink), "none");
    let run = run(
        &context(None),
        &sink,
        &mut cell,
        Some(&mut server),
        &Unobserved,
    )
    .expect("the run");
    let why = "the audio stream ended mid-run: the test server exited; 2 steps measured before that are kept in run 1";
    assert_eq!(run.status, RunStatus::Interrupted);
    assert_eq!(run.error.as_deref(), Some(why));
    assert_eq!(sink.run(RunId(1)).error.as_deref(), Some(why));
    assert_eq!(sink.run(RunId(1)).triggers.len(), 2);
}

#[test]
fn a_failed_probe_closes_the_run_failed_and_keeps_its_checkpoint() {
    let sink = MemorySink::default();
    let mut probe = TestProbe::new(2, &sink);
    probe.fail = true;
    let mut cell = test_cell(probe, "none");
    let err = run(&context(None), &sink, &mut cell, None, &Unobserved).expect_err("a failure");
    match &err {
        RunError::Failed {
            run_id: RunId(1),
            failure: Failure::Probe(e),
        } => assert_eq!(e.reason(), "the test probe broke"),
        other => panic!("not a failed probe: {other}"),
    }
    assert_eq!(err.to_string(), "run 1 failed: the test probe broke");
    let stored = sink.run(RunId(1));
    assert_eq!(stored.status, Some(RunStatus::Failed));
    assert_eq!(stored.error.as_deref(), Some("the test probe broke"));
    assert_eq!(stored.triggers.len(), 2);
    assert_eq!(sink.steps_stored(RunId(1)), Some(2));
}

#[test]
fn a_load_that_cannot_run_here_is_refused_before_anything_is_stored() {
    let sink = MemorySink::default();
    // The built-in loads need audiolat's own program to run them.
    let mut cell = test_cell(TestProbe::new(1, &sink), "ep");
    let err = run(&context(None), &sink, &mut cell, None, &Unobserved).expect_err("refused");
    assert!(matches!(err, RunError::Refused(_)), "{err}");
    assert!(sink.runs.borrow().is_empty());
}

#[test]
fn a_load_that_dies_mid_run_is_an_event_and_a_flag() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (script, die) = load_script(dir.path());
    let sink = MemorySink::default();
    let mut probe = TestProbe::new(3, &sink);
    probe.load_dies_at = Some((1, die));
    let mut cell = test_cell(probe, "ep:1");
    let run = run(&context(Some(script)), &sink, &mut cell, None, &Unobserved).expect("the run");
    assert_eq!(run.status, RunStatus::Complete);
    assert_eq!(run.flags["load_exited_early"], true);
    assert!(run.load["exits"].is_array(), "{}", run.load);
    let stored = sink.run(RunId(1));
    assert_eq!(stored.events.len(), 1);
    assert_eq!(stored.events[0].kind, "load_exit");
    assert_eq!(stored.events[0].detail["item"], "ep:1");
    assert!(load_stopped(&sink, RunId(1)));
}

#[test]
fn a_full_disk_at_the_end_fails_the_run_and_keeps_what_was_measured() {
    let sink = MemorySink::refusing(&["update_run"], false);
    let mut cell = test_cell(TestProbe::new(3, &sink), "none");
    let run = run(&context(None), &sink, &mut cell, None, &Unobserved).expect("the run");
    let why = "disk full: the filesystem of :memory: filled while the run was stored (3 of 3 trigger rows stored; the summary could not be stored); free space there, or store into a database on another filesystem";
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(run.error.as_deref(), Some(why));
    assert_eq!(run.measurements[0].detail["steps"], 3);
    let stored = sink.run(RunId(1));
    assert_eq!(stored.status, Some(RunStatus::Failed));
    assert_eq!(stored.error.as_deref(), Some(why));
    assert_eq!(sink.steps_stored(RunId(1)), Some(3));
}

#[test]
fn rows_that_could_not_be_stored_fail_the_run_with_the_count() {
    let sink = MemorySink::refusing(&["add_triggers"], false);
    let mut cell = test_cell(TestProbe::new(3, &sink), "none");
    let run = run(&context(None), &sink, &mut cell, None, &Unobserved).expect("the run");
    assert_eq!(run.status, RunStatus::Failed);
    let why = run.error.expect("an error to report");
    assert!(
        why.contains("(0 of 3 trigger rows stored; the stored summary covers all of them)"),
        "{why}"
    );
    assert_eq!(
        run.flags["store_error"],
        "database or disk is full (add_triggers)"
    );
}

#[test]
fn a_checkpoint_that_could_not_be_stored_is_a_flag_once_the_end_is() {
    let sink = MemorySink::refusing(&["replace_measurements"], true);
    let mut cell = test_cell(TestProbe::new(2, &sink), "none");
    let run = run(&context(None), &sink, &mut cell, None, &Unobserved).expect("the run");
    // The closing write spent the reserve and was stored.
    assert_eq!(run.status, RunStatus::Complete);
    assert_eq!(run.error, None);
    assert!(!sink.reserve.get());
    assert_eq!(sink.steps_stored(RunId(1)), Some(2));
    assert_eq!(
        run.flags["checkpoint_error"],
        "database or disk is full (replace_measurements)"
    );
}

#[test]
fn the_load_is_stopped_on_every_path() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (script, _die) = load_script(dir.path());
    let ctx = context(Some(script));
    // Complete.
    let sink = MemorySink::default();
    let mut cell = test_cell(TestProbe::new(2, &sink), "ep:1");
    run(&ctx, &sink, &mut cell, None, &Unobserved).expect("the run");
    assert!(load_stopped(&sink, RunId(1)));
    assert_eq!(sink.run(RunId(1)).load["exits"][0]["early"], false);
    // A failed probe.
    let sink = MemorySink::default();
    let mut probe = TestProbe::new(2, &sink);
    probe.fail = true;
    let mut cell = test_cell(probe, "ep:1");
    run(&ctx, &sink, &mut cell, None, &Unobserved).expect_err("a failure");
    assert!(load_stopped(&sink, RunId(1)));
    // What the load did is kept with the failed run.
    assert_eq!(sink.run(RunId(1)).load["exits"][0]["early"], false);
    assert_eq!(sink.run(RunId(1)).flags["load_exited_early"], false);
    // A panicking probe.
    let sink = MemorySink::default();
    let mut probe = TestProbe::new(2, &sink);
    probe.panic = true;
    let mut cell = test_cell(probe, "ep:1");
    match run(&ctx, &sink, &mut cell, None, &Unobserved) {
        Err(RunError::Failed {
            run_id,
            failure: Failure::Panicked(text),
        }) => {
            assert_eq!(run_id, RunId(1));
            assert_eq!(text, "the test probe panicked");
        }
        other => panic!("not a panicked run: {other:?}"),
    }
    assert!(load_stopped(&sink, RunId(1)));
    let stored = sink.run(RunId(1));
    assert_eq!(stored.load["exits"][0]["early"], false);
    assert_eq!(stored.status, Some(RunStatus::Failed));
    assert_eq!(
        stored.error.as_deref(),
        Some("the probe panicked: the test probe panicked")
    );
}

#[test]
fn a_load_that_needs_a_network_host_or_cells_is_refused_by_what_it_needs() {
    let scratch = Path::new(".");
    let net: LoadSpec = "flood".parse().unwrap();
    let celled: LoadSpec = "cpu@others".parse().unwrap();
    assert!(matches!(
        crate::check_load(&net, scratch),
        Err(crate::LoadRefusal::NetItems)
    ));
    assert!(matches!(
        crate::check_load(&celled, scratch),
        Err(crate::LoadRefusal::Cells)
    ));
    // The network probe runs the streams itself: only the tools are checked.
    assert!(crate::check_net_load(&net, scratch).is_ok());
    assert!(crate::check_load(&LoadSpec::none(), scratch).is_ok());
}
