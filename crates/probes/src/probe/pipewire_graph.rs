//! A PipeWire run's graph record ([`engine::pipewire::graph`]) around an audio probe's
//! run, stored in the run's result as `server.graph`.

use engine::audio::StreamInfo;
use engine::backend::BackendKind;
use engine::pipewire::graph::{GraphRecord, GraphRecorder, ProfilerSnapshot, DEFAULT_WINDOW};
use serde_json::{json, Value};

/// Starts recording the graph when the stream is on a PipeWire: native streams, or a
/// JACK client through PipeWire's libjack (this process loaded it). The client
/// environment is this process's, as the streams' is.
pub(crate) fn start(info: &StreamInfo) -> Option<GraphRecorder> {
    let on_pipewire = info.backend == BackendKind::Pipewire
        || info.backend == BackendKind::Jack
            && engine::jack::via_pipewire::loaded_libjacks()
                .iter()
                .any(|l| l.to_string_lossy().contains("/pipewire-0.3/"));
    // Our nodes: the streams' (`audiolat`, `audiolat-capture`) or the JACK client's.
    let ours = Some(info.client_name.clone());
    on_pipewire.then(|| GraphRecorder::following(Vec::new(), DEFAULT_WINDOW, ours))
}

/// Stops recording: the record's stored form (`result["server"]["graph"]`).
pub(crate) fn finish(recorder: Option<GraphRecorder>) -> Option<Value> {
    recorder.map(|r| to_json(&r.finish()))
}

fn profiler_json(s: &Option<ProfilerSnapshot>) -> Value {
    let Some(s) = s else { return Value::Null };
    json!({
        "window_ms": s.window_ms,
        "events": s.events,
        "followed_driver": s.followed,
        "nodes": s.nodes.iter().map(|n| json!({
            "id": n.id, "name": n.name,
            "role": format!("{:?}", n.role).to_lowercase(),
            "quantum_frames": n.quantum_frames, "rate_hz": n.rate_hz,
            "cycles": n.cycles, "errors": n.errors, "xruns": n.xruns,
        })).collect::<Vec<_>>(),
    })
}

/// The stored form: absent values are null, never 0.
pub(crate) fn to_json(r: &GraphRecord) -> Value {
    json!({
        "driver": r.driver,
        "force_quantum": {"before": r.before.force_quantum, "after": r.after.force_quantum},
        "force_rate": {"before": r.before.force_rate, "after": r.after.force_rate},
        "profiler": {"before": profiler_json(&r.profiler_before),
                     "after": profiler_json(&r.profiler_after)},
        "problems": r.problems,
    })
}
