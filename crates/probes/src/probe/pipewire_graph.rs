//! A PipeWire run's graph record ([`engine::pipewire::graph`]) around an audio probe's
//! run, stored in the run's result as `server.graph`.

use engine::audio::StreamInfo;
use engine::backend::BackendKind;
use engine::pipewire::graph::{GraphRecorder, NodeRole, ProfilerSnapshot, DEFAULT_WINDOW};
use results::records::graph::{
    BeforeAfter, GraphRecord, NodeRole as StoredRole, ProfiledNode, Profiler, ProfilerWindow,
};

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
pub(crate) fn finish(recorder: Option<GraphRecorder>) -> Option<GraphRecord> {
    recorder.map(|r| record(&r.finish()))
}

fn window(s: &Option<ProfilerSnapshot>) -> Option<ProfilerWindow> {
    let s = s.as_ref()?;
    Some(ProfilerWindow {
        window_ms: Some(s.window_ms),
        events: Some(s.events),
        followed_driver: s.followed,
        nodes: s
            .nodes
            .iter()
            .map(|n| ProfiledNode {
                id: n.id,
                name: n.name.clone(),
                role: match n.role {
                    NodeRole::Driver => StoredRole::Driver,
                    NodeRole::Follower => StoredRole::Follower,
                },
                quantum_frames: n.quantum_frames,
                rate_hz: n.rate_hz,
                cycles: n.cycles,
                errors: n.errors,
                xruns: n.xruns,
            })
            .collect(),
    })
}

/// The stored form: absent values are null, never 0.
pub(crate) fn record(r: &engine::pipewire::graph::GraphRecord) -> GraphRecord {
    GraphRecord {
        driver: r.driver.clone(),
        force_quantum: BeforeAfter {
            before: r.before.force_quantum,
            after: r.after.force_quantum,
        },
        force_rate: BeforeAfter {
            before: r.before.force_rate,
            after: r.after.force_rate,
        },
        profiler: Profiler {
            before: window(&r.profiler_before),
            after: window(&r.profiler_after),
        },
        problems: r.problems.clone(),
    }
}
