//! The results model of a run just made ([`results::RunView`]), built in memory from the
//! values the runner stored (so a run whose storing failed still shows what it
//! measured), for the same renderers `audiolat show` uses on a stored run
//! (`report::view`).
//!
//! One builder per probe, from the probe's typed outcome and how the run was closed
//! ([`Closed`]); of a run's configuration, each keeps the parts a report reads.

use load::LoadSpec;
use probes::event::EventOutcome;
use probes::jitter::JitterOutcome;
use probes::net::{NetConfig, NetOutcome};
use probes::roundtrip::RoundtripOutcome;
use results::{probe_kind, Measurement, ProbeKind, RunId, RunStatus, RunView};
use serde_json::{json, Value};

use crate::{EndRun, Run};

/// How a run was closed: what every fresh run's view shares, whatever its probe.
#[derive(Debug, Clone, Copy)]
pub struct Closed<'a> {
    /// Run id.
    pub run_id: RunId,
    /// How it ended.
    pub status: RunStatus,
    /// Validity flags as stored.
    pub flags: &'a Value,
    /// The error reported to the user, if any.
    pub error: Option<&'a String>,
}

impl Run {
    /// How this run was closed, for the view builders.
    pub fn closed(&self) -> Closed<'_> {
        Closed {
            run_id: self.run_id,
            status: self.status,
            flags: &self.flags,
            error: self.error.as_ref(),
        }
    }
}

/// A view of probe `probe` with the closing's parts set and nothing else stored.
fn base(closed: Closed, probe: &'static ProbeKind) -> RunView {
    RunView {
        id: closed.run_id,
        probe,
        status: closed.status,
        machine: probes::machine::machine(),
        config: Value::Null,
        load: Value::Null,
        qos_requested: Value::Null,
        qos_granted: Value::Null,
        flags: closed.flags.clone(),
        result: Value::Null,
        error: closed.error.cloned(),
        started_mono_ns: 0,
        measurements: Vec::new(),
        events: Vec::new(),
        triggers: Vec::new(),
    }
}

/// The view of a fresh jitter run: what the lifecycle stored (`measurements` and `load`
/// as the run returned them).
pub fn jitter(
    closed: Closed,
    o: &JitterOutcome,
    measurements: &[Measurement],
    load: &Value,
) -> RunView {
    let mut config = o.config.to_json();
    config["load"] = load["spec"].clone();
    RunView {
        config,
        load: load.clone(),
        qos_granted: o.qos_granted(),
        result: o.result_json(),
        started_mono_ns: o.start_ns,
        measurements: measurements.to_vec(),
        events: o.events(),
        ..base(closed, &probe_kind::JITTER)
    }
}

/// The view of a fresh event run under `load` (its label): the probe's configuration
/// and the parts of the cell a report reads (`granted`: what an ALSA device granted).
pub fn event(closed: Closed, o: &EventOutcome, load: &str, granted: Option<&Value>) -> RunView {
    let mut config = o.config.to_json();
    config["load"] = json!(load);
    config["granted"] = granted.cloned().unwrap_or(Value::Null);
    RunView {
        config,
        load: json!({"spec": load}),
        qos_granted: o.qos_granted(),
        result: o.result_json(),
        started_mono_ns: o.start_ns,
        measurements: o.measurements(),
        triggers: o.rows.clone(),
        ..base(closed, &probe_kind::EVENT)
    }
}

/// The view of a fresh round-trip run over the loop `loop_description` under `load`
/// (its label), of its configuration the parts a report reads.
pub fn roundtrip(
    closed: Closed,
    o: &RoundtripOutcome,
    loop_description: &str,
    load: &str,
    granted: Option<&Value>,
) -> RunView {
    let config = json!({
        "loop": loop_description,
        "load": load,
        "insert_delay_frames": o.config.insert_delay_frames,
        "granted": granted,
        // As the stored run's configuration has it (`--find-min-buffer` names it).
        "server": {"quantum_granted_frames": o.info.server.quantum_granted_frames},
    });
    RunView {
        config,
        load: json!({"spec": load}),
        qos_granted: o.qos_granted(),
        result: o.result_json(),
        started_mono_ns: o.start_ns,
        measurements: o.measurements(),
        events: o.events.clone(),
        ..base(closed, &probe_kind::ROUNDTRIP)
    }
}

/// A fresh round-trip run's windows and impulses as JSON (`windows`, `impulses`): the
/// detail `audiolat roundtrip --json` prints beside its view.
pub fn roundtrip_windows(o: &RoundtripOutcome) -> Value {
    json!({
        "windows": o.estimates.iter().map(|e| json!({
            "seq": e.seq, "position": e.position, "time_ns": e.time_ns,
            "delay_frames": e.estimate.delay_frames, "stderr_frames": e.estimate.stderr_frames,
            "snr_db": e.estimate.snr_db, "gain": e.estimate.gain,
            "residual_rad": e.estimate.residual_rad, "inverted": e.estimate.inverted,
            "clipped": e.estimate.clipped, "verdict": e.estimate.verdict.to_string(),
        })).collect::<Vec<_>>(),
        "impulses": o.impulses.iter().map(|i| json!({
            "seq": i.seq, "position": i.position,
            "frames": i.onset.map(|x| x.frames), "peak": i.onset.map(|x| x.peak),
            "inverted": i.onset.map(|x| x.inverted),
        })).collect::<Vec<_>>(),
    })
}

/// The cells of a fresh run as granted (`cells`, when it had any) and whether every
/// one was undone.
#[derive(Debug, Clone, Copy)]
pub struct CellsGranted<'a> {
    /// The cells as granted, if the run had any.
    pub granted: Option<&'a Value>,
    /// Every cell was undone at the end.
    pub undone: bool,
}

/// The view of a fresh net run of `c` under `load`: of its configuration and grants,
/// the parts a report reads.
pub fn net(
    closed: Closed,
    o: &NetOutcome,
    c: &NetConfig,
    load: &LoadSpec,
    cells: CellsGranted,
) -> RunView {
    let pressed: Vec<usize> = (0..c.input.len())
        .filter(|&p| c.input[p].pressure > 0.0)
        .collect();
    let pad = c.input.iter().find(|p| p.pressure > 0.0);
    let config = json!({
        "transport": if c.netns { "UDP over a veth pair between two network namespaces" } else { "UDP over loopback" },
        "pads_pressed": pressed,
        "pad": pad.map(|p| json!({"x": p.x, "y": p.y, "pressure": p.pressure})),
        "workers": c.workers,
        "poll": c.poll.to_string(),
        "load": load.to_string(),
        "link": c.link.map(|l| json!({"mbps": l.mbps, "reserve_mbps": l.reserve_mbps, "by": l.by.to_string()})),
    });
    let mut qos_granted = json!({});
    if let Some(granted) = cells.granted {
        qos_granted["cells"] = granted.clone();
        qos_granted["cells_undone"] = json!(cells.undone);
    }
    RunView {
        config,
        load: json!({"spec": load.to_string()}),
        qos_requested: json!({"threads": c.policy.to_string()}),
        qos_granted,
        result: o.result_json(),
        started_mono_ns: o.start_ns,
        measurements: o.measurements(),
        ..base(closed, &probe_kind::NET)
    }
}

impl EndRun {
    /// The view of a fresh run of one end of a network run: what `end_run` stored.
    pub fn view(&self) -> RunView {
        let closed = Closed {
            run_id: self.run_id,
            status: self.status,
            flags: &self.flags,
            error: self.error.as_ref(),
        };
        RunView {
            result: self.result.clone(),
            measurements: self.measurements.clone(),
            ..base(closed, &probe_kind::NET)
        }
    }
}

impl crate::sweep::EventRun {
    /// The run's view, for the renderers `audiolat show` uses.
    pub fn view(&self) -> RunView {
        let closed = Closed {
            run_id: self.run_id,
            status: self.status,
            flags: &self.flags,
            error: self.error.as_ref(),
        };
        event(closed, &self.outcome, &self.load, self.granted.as_ref())
    }
}

impl crate::sweep::RoundtripRun {
    /// The run's view, for the renderers `audiolat show` uses.
    pub fn view(&self) -> RunView {
        let closed = Closed {
            run_id: self.run_id,
            status: self.status,
            flags: &self.flags,
            error: self.error.as_ref(),
        };
        let load = self.cell.load.to_string();
        let (o, c) = (&self.outcome, &self.cell);
        roundtrip(closed, o, &c.loop_description, &load, c.granted.as_ref())
    }
}
