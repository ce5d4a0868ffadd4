//! One end of a two-machine network run (`respond`, `emulate`) as a stored run.
//!
//! Not a [`crate::Probe`] given to [`crate::run`], on purpose: an end has no load (its
//! stored load is `{"spec": "none"}`, its configuration has no `load`, it stores no
//! granted QoS and no load flags), it samples the host's steal time around the whole
//! measurement, and its error (no answer from the other end) is reported to the user.
//! Forcing it through the probe lifecycle would change what is stored. It closes the
//! same way ([`Closing`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use results::records::flags::Flags;
use results::records::load::Load;
use results::records::net::NetEndConfig;
use results::records::qos::QosRequested;
use results::records::Record;
use results::{Measurement, RunId, RunInfo, RunSink, RunStatus, RunView};
use serde_json::{json, Value};

use crate::net_ends::Measured;
use crate::{storage_failure, Closing, Context, Kept, RunError};

/// What an end stores before it measures.
#[derive(Debug, Clone)]
pub struct EndRunInfo {
    /// Its configuration, by its role (`respond` or `emulate`, also stored as the flag
    /// `role`).
    pub config: NetEndConfig,
    /// The QoS it asks for.
    pub qos_requested: Value,
    /// The CPUs its threads are pinned to (checked free of other audiolats' cells when
    /// it was made).
    pub pinned_cpus: Vec<usize>,
}

impl EndRunInfo {
    /// The end `config` describes, its threads asking for `threads` on `cpus`; refused
    /// (nothing stored yet) when another running audiolat's exclusive cell holds one of
    /// those CPUs.
    pub fn new(
        config: NetEndConfig,
        threads: engine::rt::Policy,
        cpus: Option<&[usize]>,
    ) -> Result<EndRunInfo, RunError> {
        let pinned_cpus = cpus.map(<[usize]>::to_vec).unwrap_or_default();
        qos::partition::check_cpus_free(&pinned_cpus)
            .map_err(|e| RunError::Refused(e.to_string()))?;
        Ok(EndRunInfo {
            config,
            qos_requested: QosRequested {
                threads: Some(threads.to_string()),
                ..QosRequested::default()
            }
            .to_json(),
            pinned_cpus,
        })
    }
}

/// One end of a network run, stored.
#[derive(Debug, Clone)]
pub struct EndRun {
    /// Run id.
    pub run_id: RunId,
    /// How it ended.
    pub status: RunStatus,
    /// What was measured.
    pub measurements: Vec<Measurement>,
    /// Validity flags as stored.
    pub flags: Value,
    /// Counters and grants.
    pub result: Value,
    /// Why it did not complete, if so.
    pub error: Option<String>,
    /// Where it is kept.
    pub kept: Kept,
    /// The run as stored, for the renderers `audiolat show` uses.
    pub view: RunView,
}

/// Stops `stop` when `ctx` is stopped or after `limit`, polling every 20 ms, until
/// `done` is raised.
pub fn stop_after(ctx: &Context, limit: Option<Duration>, stop: &AtomicBool, done: &AtomicBool) {
    let start = std::time::Instant::now();
    while !done.load(Ordering::Relaxed) {
        if ctx.stopped() || limit.is_some_and(|l| start.elapsed() >= l) {
            stop.store(true, Ordering::Relaxed);
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs one end of the network probe as a stored run of probe `net` (its CPUs were
/// checked when its [`EndRunInfo`] was made). `measure` does the work; the run is
/// `interrupted` when the stop flag was raised, `failed` on an error (or when it could
/// not be stored whole). A stop before anything was exchanged with the other end stores
/// nothing ([`RunError::Stopped`]), as the probe lifecycle's does.
pub fn end_run(
    ctx: &Context,
    sink: &dyn RunSink,
    info: EndRunInfo,
    measure: impl FnOnce() -> Measured,
) -> Result<EndRun, RunError> {
    if ctx.stopped() {
        return Err(RunError::Stopped);
    }
    let run_info = RunInfo {
        probe: &results::probe_kind::NET,
        group_id: None,
        machine: probes::machine::machine(),
        tool: ctx.tool.clone(),
        command_line: ctx.command_line.clone(),
        config: info.config.to_json(),
        load: Load::none().to_json(),
        qos_requested: info.qos_requested,
        started_mono_ns: Some(engine::clock::monotonic_ns()),
    };
    let run_id = sink.begin_run(&run_info).map_err(RunError::Begin)?;
    let memory = engine::rt::lock_memory();
    let steal = probes::steal::StealSampler::start(Duration::from_millis(50), None);
    let Measured {
        measurements,
        mut flags,
        result,
        error,
        nothing_exchanged,
    } = measure();
    let ended = engine::clock::monotonic_ns();
    let steal = steal.finish();
    if ctx.stopped() && nothing_exchanged && sink.discard_run(run_id).is_ok() {
        return Err(RunError::Stopped);
    }
    let cpus = engine::rt::online_cpus().len();
    let steal_ns = steal.total_ns(None);
    Flags {
        host_steal_ns: Some(steal_ns),
        host_steal_percent: Some(steal.percent_of_span(steal_ns, cpus)),
        memory_locked: Some(memory.current && memory.future),
        interrupted: Some(ctx.stopped()),
        role: Some(info.config.role().to_string()),
        ..Flags::default()
    }
    .add_to(&mut flags);
    let mut closing = Closing::new(sink);
    closing.write(|s| s.replace_measurements(run_id, &measurements));
    let (mut status, mut error) = if error.is_some() {
        (RunStatus::Failed, error)
    } else if ctx.stopped() {
        (RunStatus::Interrupted, None)
    } else {
        (RunStatus::Complete, None)
    };
    if let Some(e) = &closing.failed {
        status = RunStatus::Failed;
        error = Some(storage_failure(
            e,
            sink.path(),
            "its measurements could not all be stored",
        ));
    }
    let kept = closing.finish(
        run_id,
        status,
        &mut flags,
        &result,
        error.as_deref(),
        Some(ended),
    );
    if let Some(e) = kept.error() {
        if matches!(kept, Kept::NotClosed(_)) {
            status = RunStatus::Failed;
        }
        error = Some(error.map_or(e.clone(), |w| format!("{w}; {e}")));
    }
    // What was stored: no load ran and no QoS was granted beside the flags.
    let view = RunView {
        id: run_id,
        probe: run_info.probe,
        status,
        machine: run_info.machine,
        config: run_info.config,
        load: run_info.load,
        qos_requested: run_info.qos_requested,
        qos_granted: json!({}),
        flags: flags.clone(),
        result: result.clone(),
        error: error.clone(),
        started_mono_ns: run_info.started_mono_ns.unwrap_or_default(),
        measurements: measurements.clone(),
        events: Vec::new(),
        triggers: Vec::new(),
    };
    Ok(EndRun {
        run_id,
        status,
        measurements,
        flags,
        result,
        error,
        kept,
        view,
    })
}
