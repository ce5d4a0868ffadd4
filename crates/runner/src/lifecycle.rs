//! The run lifecycle, written once: admit and make the cells, begin, start the load,
//! measure through the sink, stop the load, undo the cells, close with the end reason.

use std::path::Path;

use load::{LoadCommand, LoadContext, LoadSpec};
use probes::probe::{Description, End, LiveStatus, Outcome, Probe, Progress, Tally, TriggerRow};
use qos::CellPlan;
use results::records::flags::Flags;
use results::records::Record;
use results::{Event, Measurement, RunId, RunInfo, RunSink, RunStatus, RunView, SinkError};
use serde_json::{json, Value};

use crate::cells::{self, Admitted, CellsRecord, MadeCells};
use crate::load_run::{load_context, RunLoad};
use crate::{Cell, Context, Failure, Kept, Observer, Run, RunError, Watch};

/// Measures `cell` as a stored run in `sink`. `watch`, when given, can end the run (the
/// private JACK server behind the probe's stream); `observer` sees the live status.
///
/// The load is checked, the probe's pinned CPUs checked free of other audiolats' cells,
/// the cells admitted and made before anything is stored (a
/// refusal is [`RunError::Refused`] or [`RunError::CellsRefused`]; cells made before a
/// refusal are undone). Once the run is begun, a failure closes it `failed` with its reason
/// ([`RunError::Failed`]). A run that measured is returned whatever its status; when
/// its summary could not be stored whole (a full disk) its status is `failed` and
/// [`Run::error`] says what was kept.
pub fn run<P: Probe>(
    ctx: &Context,
    sink: &dyn RunSink,
    cell: &mut Cell<P>,
    watch: Option<&mut dyn Watch>,
    observer: &dyn Observer,
) -> Result<Run, RunError> {
    engine::phase::reached(engine::phase::Phase::RunStart);
    if ctx.stopped() {
        return Err(RunError::Stopped);
    }
    let mut lctx = load_context(ctx.load_exe.clone(), &cell.scratch);
    let planned = load::plan(&cell.load, &lctx).map_err(|e| RunError::Refused(e.to_string()))?;
    qos::partition::check_cpus_free(&cell.probe.pinned_cpus())
        .map_err(|e| RunError::Refused(e.to_string()))?;
    let admitted = match &cell.cells {
        Some(plan) => Some(admit(plan, &cell.load, &cell.probe)?),
        None => None,
    };
    let description = cell.probe.describe();
    let mut info = run_info(ctx, cell, &description, &planned);
    let mut made = None;
    if let Some(admitted) = &admitted {
        admitted.describe(&mut info.config, &mut info.qos_requested);
        made = admitted
            .make(cell.make_cells, &mut lctx)
            .map_err(RunError::Refused)?;
        if let Some(m) = &made {
            cell.probe
                .enter_cells(m.placed(), admitted.plan, &cell.load);
        }
    }
    drop(admitted);
    if ctx.stopped() {
        // Stopped while the cells were made: they are undone as `made` drops.
        return Err(RunError::Stopped);
    }
    // Cells made and a failed begin: they are undone as `made` drops.
    info.started_mono_ns = Some(engine::clock::monotonic_ns());
    let run_id = sink.begin_run(&info).map_err(RunError::Begin)?;
    engine::phase::reached(engine::phase::Phase::RunBegun);
    let measured = measure(
        ctx,
        sink,
        run_id,
        cell,
        &description,
        &lctx,
        made,
        watch,
        observer,
    );
    observer.finished();
    match measured {
        Ok(measured) if ctx.stopped() && measured_nothing(&measured) => {
            discard(sink, run_id, &info, &description, measured)
        }
        Ok(measured) => Ok(close(sink, run_id, &info, &description, measured)),
        Err(Failed {
            failure,
            mut flags,
            ended,
        }) => {
            let _ = Closing::new(sink).finish(
                run_id,
                RunStatus::Failed,
                &mut flags,
                &json!({}),
                Some(&failure.reason()),
                ended,
            );
            Err(RunError::Failed {
                run_id,
                failure: *failure,
            })
        }
    }
}

/// Whether a stopped run measured nothing: stopped before the probe began (the lifecycle
/// did not call it), or before its first sample (no measurement counts any, no trigger
/// row was stored).
fn measured_nothing(m: &Measured) -> bool {
    let Some(outcome) = &m.outcome else {
        return true;
    };
    matches!(outcome.end, End::Interrupted | End::InterruptedSaying(_))
        && m.went.rows_stored == 0
        && outcome.measurements.iter().all(|x| x.count() == 0)
}

/// Removes run `run_id`, which a stop ended before it measured anything: nothing of it
/// is kept ([`RunError::Stopped`]). When the sink cannot remove it (a database locked
/// beyond the wait), it is closed `interrupted` as any stopped run is.
fn discard(
    sink: &dyn RunSink,
    run_id: RunId,
    info: &RunInfo,
    description: &Description,
    measured: Measured,
) -> Result<Run, RunError> {
    match sink.discard_run(run_id) {
        Ok(()) => Err(RunError::Stopped),
        Err(_) => match measured.outcome {
            Some(_) => Ok(close(sink, run_id, info, description, measured)),
            None => {
                let mut flags = json!({});
                let _ = Closing::new(sink).finish(
                    run_id,
                    RunStatus::Interrupted,
                    &mut flags,
                    &json!({}),
                    Some("interrupted by a signal before anything was measured"),
                    Some(measured.ended),
                );
                Err(RunError::Stopped)
            }
        },
    }
}

/// Admission control for a run's cells `plan` under `load` (with the probe's host
/// threads and link), before anything is stored.
fn admit<'a, P: Probe>(
    plan: &'a CellPlan,
    load: &LoadSpec,
    probe: &P,
) -> Result<Admitted<'a>, RunError> {
    let admission = plan
        .admit(load, probe.host_threads(), probe.link_mbps())
        .map_err(RunError::CellsRefused)?;
    Ok(Admitted { plan, admission })
}

/// The run's row: the probe's description with the load, the machine and the tool.
fn run_info<P: Probe>(
    ctx: &Context,
    cell: &Cell<P>,
    description: &Description,
    planned: &[LoadCommand],
) -> RunInfo {
    let mut config = description.config.clone();
    results::records::RunConfig {
        load: Some(cell.load.to_string()),
        repeat: cell.repeat,
    }
    .add_to(&mut config);
    RunInfo {
        probe: description.probe,
        group_id: cell.group,
        machine: probes::machine::machine(),
        tool: ctx.tool.clone(),
        command_line: ctx.command_line.clone(),
        config,
        load: crate::load_run::load_record(&cell.load, planned.iter().map(|c| (c, None))).to_json(),
        qos_requested: description.qos_requested.clone(),
        started_mono_ns: None,
    }
}

/// What was stored as it went, and what could not be.
#[derive(Default)]
struct AsItWent {
    rows_stored: usize,
    /// The trigger rows handed over, stored or not (the run's view shows them).
    rows: Vec<TriggerRow>,
    /// The events handed over, stored or not.
    events: Vec<Event>,
    /// The first trigger rows or events that could not be stored (the run fails).
    store_error: Option<SinkError>,
    /// The first checkpoint that could not be stored (a flag: the end replaces it).
    checkpoint_error: Option<SinkError>,
}

/// A probe's outcome with its load as run.
struct Measured {
    /// `None`: a stop came before the probe began, which was not called.
    outcome: Option<Outcome>,
    /// When the probe stopped measuring (CLOCK_MONOTONIC ns): the end of the run's
    /// duration, whatever its closing writes take.
    ended: u64,
    load: Value,
    load_events: Vec<Event>,
    cells: Option<CellsRecord>,
    went: AsItWent,
}

/// A run that failed once begun, with the flags to close it with (what its load and
/// cells did, when the probe had started).
struct Failed {
    failure: Box<Failure>,
    flags: Value,
    /// When the probe stopped, once it had started (`None`: the close's time).
    ended: Option<u64>,
}

impl From<Failure> for Failed {
    fn from(failure: Failure) -> Failed {
        Failed {
            failure: Box::new(failure),
            flags: json!({}),
            ended: None,
        }
    }
}

/// The probe's [`Progress`]: into the sink as it comes, the status to the observer, the
/// load and the watch polled.
struct Through<'a, 'w> {
    sink: &'a dyn RunSink,
    run_id: RunId,
    load: &'a mut RunLoad,
    watch: Option<&'a mut (dyn Watch + 'w)>,
    observer: &'a dyn Observer,
    went: AsItWent,
}

impl Progress for Through<'_, '_> {
    fn triggers(&mut self, rows: &[TriggerRow]) {
        self.went.rows.extend_from_slice(rows);
        match self.sink.add_triggers(self.run_id, rows) {
            Ok(()) => self.went.rows_stored += rows.len(),
            Err(e) => {
                self.went.store_error.get_or_insert(e);
            }
        }
    }

    fn events(&mut self, events: &[Event]) {
        self.went.events.extend_from_slice(events);
        if let Err(e) = self.sink.add_events(self.run_id, events) {
            self.went.store_error.get_or_insert(e);
        }
    }

    fn checkpoint(&mut self, measurements: &[Measurement]) {
        if let Err(e) = self.sink.replace_measurements(self.run_id, measurements) {
            self.went.checkpoint_error.get_or_insert(e);
        }
    }

    fn status(&mut self, status: &LiveStatus) {
        self.observer.status(status);
    }

    fn tick(&mut self) -> Result<(), String> {
        self.load.poll();
        match self.watch.as_mut().and_then(|w| w.ended()) {
            Some(reason) => Err(reason),
            None => Ok(()),
        }
    }
}

/// Starts the load and has the probe measure through the sink; the load is stopped
/// before the outcome is looked at (and by its guard on every other path), then the
/// cells `made` are undone (by their guard too: a parameter drops after the load).
#[allow(clippy::too_many_arguments)]
fn measure<P: Probe>(
    ctx: &Context,
    sink: &dyn RunSink,
    run_id: RunId,
    cell: &mut Cell<P>,
    description: &Description,
    lctx: &LoadContext,
    made: Option<Box<dyn MadeCells>>,
    watch: Option<&mut dyn Watch>,
    observer: &dyn Observer,
) -> Result<Measured, Failed> {
    if let Some(result) = &description.result_while_running {
        sink.set_result(run_id, result).map_err(Failure::Storage)?;
    }
    let mut load = RunLoad::begin(&cell.load, lctx).map_err(Failure::Load)?;
    load.store(sink, run_id)?;
    engine::phase::reached(engine::phase::Phase::LoadStarted);
    if ctx.stopped() {
        // Stopped while the load started: the probe is not begun.
        let ended = engine::clock::monotonic_ns();
        let (load, load_events) = load.stop();
        let cells = cells::undo(made);
        return Ok(Measured {
            outcome: None,
            ended,
            load,
            load_events,
            cells,
            went: AsItWent::default(),
        });
    }
    observer.started(run_id);
    let mut through = Through {
        sink,
        run_id,
        load: &mut load,
        watch,
        observer,
        went: AsItWent::default(),
    };
    // A panic in the probe is a failed run, closed with its message, not a run left
    // `running` (the guards below run either way).
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        cell.probe.measure(&ctx.stop, &mut through)
    }));
    let ended = engine::clock::monotonic_ns();
    let went = through.went;
    // Stop the load before anything else can fail.
    let (load, load_events) = load.stop();
    // The cells once their load is out of them.
    let cells = cells::undo(made);
    let outcome = match outcome {
        Ok(result) => result.map_err(Failure::Probe),
        Err(p) => Err(Failure::Panicked(engine::panic_message(p.as_ref()))),
    };
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(failure) => {
            let flags = keep_load(sink, run_id, &load, &load_events, cells.as_ref());
            return Err(Failed {
                failure: Box::new(failure),
                flags,
                ended: Some(ended),
            });
        }
    };
    Ok(Measured {
        outcome: Some(outcome),
        ended,
        load,
        load_events,
        cells,
        went,
    })
}

/// A failed probe's load and cells as they ran, stored with the closing writes'
/// reserve before the run is closed `failed`; the flags to close it with (with
/// `store_error` when even that could not be stored).
fn keep_load(
    sink: &dyn RunSink,
    run_id: RunId,
    load: &Value,
    load_events: &[Event],
    cells: Option<&CellsRecord>,
) -> Value {
    let mut flags = json!({});
    let mut closing = Closing::new(sink);
    let ran = LoadAsRun {
        load,
        load_events,
        cells,
    };
    let _ = ran.write(&mut closing, run_id, Vec::new(), json!({}), &mut flags);
    if let Some(e) = &closing.failed {
        Flags {
            store_error: Some(e.to_string()),
            ..Flags::default()
        }
        .add_to(&mut flags);
    }
    flags
}

/// What a run's load and cells did, as its closing writes store it.
struct LoadAsRun<'a> {
    load: &'a Value,
    load_events: &'a [Event],
    cells: Option<&'a CellsRecord>,
}

impl LoadAsRun<'_> {
    /// Writes the probe's `events` and the load's, the load as run, and the granted QoS
    /// (`qos_granted`, with the cells' record); sets the cells' and the load's flags.
    /// Returns the granted QoS as written.
    fn write(
        &self,
        closing: &mut Closing<'_>,
        run_id: RunId,
        mut events: Vec<Event>,
        mut qos_granted: Value,
        flags: &mut Value,
    ) -> Value {
        if let Some(c) = self.cells {
            c.record(&mut qos_granted, flags);
        }
        events.extend(self.load_events.iter().cloned());
        if !events.is_empty() {
            closing.write(|s| s.add_events(run_id, &events));
        }
        closing.write(|s| s.update_run(run_id, Some(self.load), Some(&qos_granted)));
        Flags {
            load_exited_early: Some(!self.load_events.is_empty()),
            ..Flags::default()
        }
        .add_to(flags);
        qos_granted
    }
}

/// Stores the outcome with the closing writes and closes the run with its end reason;
/// the run's view is made of what was stored (`info` at its begin, then the outcome and
/// the load), so that it is the view `show` reads back (its `error` is the one to
/// report, see [`Run::error`]).
fn close(
    sink: &dyn RunSink,
    run_id: RunId,
    info: &RunInfo,
    description: &Description,
    m: Measured,
) -> Run {
    let Measured {
        outcome,
        ended,
        load,
        load_events,
        cells,
        went,
    } = m;
    let outcome = outcome.expect("a run is closed once its probe measured");
    engine::phase::reached(engine::phase::Phase::Storing);
    let mut flags = outcome.flags.clone();
    let mut closing = Closing::new(sink);
    closing.write(|s| s.replace_measurements(run_id, &outcome.measurements));
    for series in &outcome.series {
        closing.write(|s| s.add_series(run_id, series));
    }
    let ran = LoadAsRun {
        load: &load,
        load_events: &load_events,
        cells: cells.as_ref(),
    };
    let qos_granted = ran.write(
        &mut closing,
        run_id,
        outcome.events.clone(),
        outcome.qos_granted.clone(),
        &mut flags,
    );
    // A checkpoint that could not be stored lost nothing once the end is stored: it
    // stays a flag. Rows or a summary that could not be stored fail the run.
    Flags {
        checkpoint_error: went.checkpoint_error.as_ref().map(ToString::to_string),
        store_error: went.store_error.as_ref().map(ToString::to_string),
        ..Flags::default()
    }
    .add_to(&mut flags);
    let (mut status, mut error, mut report) = end_reason(&outcome.end, outcome.measured, run_id);
    if let Some(e) = closing.failed.as_ref().or(went.store_error.as_ref()) {
        let kept = match outcome.measured.filter(|_| description.probe.triggers) {
            Some(tally) => format!(
                "{} of {} trigger rows stored; {}",
                went.rows_stored,
                tally.count,
                if closing.failed.is_some() {
                    "the summary could not be stored"
                } else {
                    "the stored summary covers all of them"
                }
            ),
            None => "its measurements could not all be stored".to_string(),
        };
        let why = storage_failure(e, sink.path(), &kept);
        (status, error, report) = (RunStatus::Failed, Some(why), true);
    }
    let mut reported = error.clone().filter(|_| report);
    let kept = closing.finish(
        run_id,
        status,
        &mut flags,
        &outcome.result,
        error.as_deref(),
        Some(ended),
    );
    if let Some(e) = kept.error() {
        // A run kept in a local file closed there as it ended; one not closed failed.
        if matches!(kept, Kept::NotClosed(_)) {
            status = RunStatus::Failed;
        }
        reported = Some(reported.map_or(e.clone(), |w| format!("{w}; {e}")));
    }
    let mut events = went.events;
    events.extend(outcome.events.iter().cloned());
    events.extend(load_events);
    // In time order, as the store gives them.
    events.sort_by_key(|e| e.mono_ns);
    // Rows by trigger number, as the store gives them (a row that waited for its
    // loopback onset is handed over after later ones).
    let mut rows = went.rows;
    rows.sort_by_key(|r| r.seq);
    let view = RunView {
        id: run_id,
        probe: info.probe,
        status,
        machine: info.machine.clone(),
        config: info.config.clone(),
        load: load.clone(),
        qos_requested: info.qos_requested.clone(),
        qos_granted,
        flags: flags.clone(),
        result: outcome.result.clone(),
        // The error to report (a stream that failed, a run its store could not keep),
        // not an interruption's stored note: as the command words the run.
        error: reported.clone(),
        started_mono_ns: info.started_mono_ns.unwrap_or_default(),
        measurements: outcome.measurements.clone(),
        events,
        triggers: rows,
    };
    error = reported;
    Run {
        run_id,
        status,
        measurements: outcome.measurements,
        load,
        flags,
        error,
        cells,
        kept,
        view,
    }
}

/// The stored status and message of a run that ended so, having measured `measured`,
/// and whether the message is an error to report (the stream failed) rather than a
/// note (the user interrupted it).
fn end_reason(
    end: &End,
    measured: Option<Tally>,
    run_id: RunId,
) -> (RunStatus, Option<String>, bool) {
    let (count, what) = match measured {
        Some(t) => (t.count.to_string(), t.noun),
        None => ("what was".to_string(), "measured"),
    };
    match end {
        End::Complete => (RunStatus::Complete, None, false),
        End::Interrupted => (
            RunStatus::Interrupted,
            Some(match measured {
                Some(t) => format!("interrupted by a signal (Ctrl-C, SIGTERM, a hang-up or SIGQUIT); the measured {} are kept", t.noun),
                None => "interrupted by a signal (Ctrl-C, SIGTERM, a hang-up or SIGQUIT); the measured part is kept".to_string(),
            }),
            false,
        ),
        End::StreamGone(reason) => (
            RunStatus::Interrupted,
            Some(format!(
                "the audio stream ended mid-run: {reason}; {count} {what} measured before that are kept in run {run_id}"
            )),
            true,
        ),
        End::Panicked(p) => (
            RunStatus::Failed,
            Some(format!("the audio callback panicked ({p}); {count} {what} kept in run {run_id}")),
            true,
        ),
        End::InterruptedSaying(reason) => (RunStatus::Interrupted, Some(reason.clone()), false),
        End::Failed(reason) => (RunStatus::Failed, Some(reason.clone()), false),
    }
}

/// A run's end reason when storing it failed (`what` says what was kept):
/// `disk full: ...` for a full filesystem.
pub fn storage_failure(e: &SinkError, db: &Path, what: &str) -> String {
    let db = db.display();
    if e.is_disk_full() {
        format!("disk full: the filesystem of {db} filled while the run was stored ({what}); free space there, or store into a database on another filesystem")
    } else {
        format!("storing the run in {db} failed: {e} ({what})")
    }
}

/// A run's closing writes, each allowed the sink's reserve ([`RunSink::closing`]). The
/// first failure is kept for the run's end reason instead of ending the command, so what
/// was measured is still returned; the writes after it are skipped.
pub struct Closing<'a> {
    sink: &'a dyn RunSink,
    /// The first closing write that failed.
    pub failed: Option<SinkError>,
}

impl<'a> Closing<'a> {
    /// Closing writes to `sink`.
    pub fn new(sink: &'a dyn RunSink) -> Closing<'a> {
        Closing { sink, failed: None }
    }

    /// Makes one closing write, unless one failed before.
    pub fn write(&mut self, mut f: impl FnMut(&dyn RunSink) -> Result<(), SinkError>) {
        if self.failed.is_none() {
            let sink = self.sink;
            if let Err(e) = sink.closing(&mut || f(sink)) {
                self.failed = Some(e);
            }
        }
    }

    /// Closes the run, with the machine's validity flag `emulated_cpu` (an emulated
    /// CPU's times describe the emulator, not the hardware); `ended`: when it stopped
    /// measuring (`None`: now). Where it is kept: in the sink; in a local file the
    /// store moved it to (its database could not take it); or not closed (left
    /// `running` for the next open to close and summarise), with the error for the user.
    pub fn finish(
        self,
        run_id: RunId,
        status: RunStatus,
        flags: &mut Value,
        result: &Value,
        error: Option<&str>,
        ended: Option<u64>,
    ) -> Kept {
        let sink = self.sink;
        if flags.is_object() {
            Flags {
                emulated_cpu: Some(probes::machine::emulated_cpu()),
                ..Flags::default()
            }
            .add_to(flags);
        }
        match sink.closing(&mut || sink.finish_run(run_id, status, flags, result, error, ended)) {
            Ok(()) => Kept::Stored,
            // Closed where it was moved: said so.
            Err(SinkError::Store(
                ref e @ results::StoreError::KeptLocally {
                    local_id, ref path, ..
                },
            )) => Kept::Moved {
                path: path.clone(),
                run_id: local_id,
                message: e.to_string(),
            },
            Err(SinkError::Store(e @ results::StoreError::NotKept { .. })) => Kept::NotClosed(format!(
                "{e}; what was measured is printed above, and its copy in {} keeps what it stored before (the next audiolat command there closes it)",
                sink.path().display()
            )),
            Err(e) => Kept::NotClosed(format!("run {run_id} could not be closed in {} ({e}); the next audiolat command closes it with what it stored", sink.path().display())),
        }
    }
}
