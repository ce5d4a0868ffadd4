//! `--find-min-buffer`'s verdict: the smallest buffer that held and the first that did
//! not, as the binary's search found them (the search and its rule are not rendering).

use std::fmt::Write as _;

use results::records::{RoundtripConfigRecord, RoundtripResultRecord};
use results::RunView;
use serde_json::{json, Value};

use super::{shown_or_dash, shown_or_null, Figures};

/// A round trip's configuration and result, as their records.
fn records(r: &RunView) -> (RoundtripConfigRecord, RoundtripResultRecord) {
    (
        r.config_as().unwrap_or_default(),
        r.result_as().unwrap_or_default(),
    )
}

/// The quantum a PipeWire graph was measured to grant the run.
fn quantum_granted(c: &RoundtripConfigRecord) -> Option<u64> {
    c.stream
        .server
        .as_ref()
        .and_then(|s| s.quantum_granted_frames)
}

/// A round-trip run's buffer: its period and the latencies the stream reports.
/// On a PipeWire, the quantum its graph was measured to grant.
fn buffer_label(c: &RoundtripConfigRecord, s: &RoundtripResultRecord) -> String {
    let granted = match quantum_granted(c) {
        Some(q) => format!("PipeWire quantum granted {q}; "),
        None => String::new(),
    };
    format!(
        "period {} frames ({granted}latency {} + {} frames)",
        shown_or_null(s.stream.period_frames),
        shown_or_null(s.stream.playback_latency_frames),
        shown_or_dash(s.stream.capture_latency_frames)
    )
}

/// The verdict as text: `held` is the smallest setting that held, `failed` the first
/// that did not.
pub fn text(held: Option<&RunView>, failed: Option<&RunView>) -> String {
    let mut out = String::from("\n");
    match held {
        Some(r) => {
            let (c, s) = records(r);
            let m = Figures::of(s.roundtrip_frames.as_ref());
            let rate = s.stream.rate_hz.map_or(f64::NAN, |r| r as f64);
            let _ = writeln!(
                out,
                "smallest buffer without under-runs: {} (run {}): round trip {:.3} frames = {:.3} ms, under load {}",
                buffer_label(&c, &s),
                r.id,
                m.mean,
                m.mean * 1e3 / rate,
                r.run_config().load.as_deref().unwrap_or("none")
            );
        }
        None => {
            let _ = writeln!(out, "no setting ran without under-runs: try larger periods (--period 4096,2048) or less load");
        }
    }
    if let Some(r) = failed {
        let (c, s) = records(r);
        let _ = writeln!(
            out,
            "the next one down failed: {} (run {}): {} xruns, {} skipped cycles, {}",
            buffer_label(&c, &s),
            r.id,
            shown_or_null(s.xruns),
            shown_or_null(s.skipped_cycles),
            s.verdict.as_deref().unwrap_or("no verdict stored")
        );
    } else if held.is_some() {
        let _ = writeln!(
            out,
            "every setting tried held: the smallest tried is the answer as far as it goes"
        );
    }
    out
}

/// The verdict as JSON.
pub fn json(held: Option<&RunView>, failed: Option<&RunView>) -> Value {
    let describe = |r: &RunView| {
        let (c, s) = records(r);
        json!({"run_id": r.id, "period_frames": s.stream.period_frames,
               "quantum_granted_frames": quantum_granted(&c),
               "playback_latency_frames": s.stream.playback_latency_frames,
               "capture_latency_frames": s.stream.capture_latency_frames,
               "roundtrip_frames": s.roundtrip_frames.and_then(|m| m.mean),
               "xruns": s.xruns, "skipped_cycles": s.skipped_cycles})
    };
    json!({"smallest_holding": held.map(describe), "first_failing": failed.map(describe)})
}
