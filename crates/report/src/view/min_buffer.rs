//! `--find-min-buffer`'s verdict: the smallest buffer that held and the first that did
//! not, as the binary's search found them (the search and its rule are not rendering).

use std::fmt::Write as _;

use results::RunView;
use serde_json::{json, Value};

use super::JsonStats;

/// A round-trip run's buffer: its period and the latencies the stream reports.
/// On a PipeWire, the quantum its graph was measured to grant.
fn buffer_label(r: &RunView) -> String {
    let s = &r.result;
    let granted = match r.config["server"]["quantum_granted_frames"].as_u64() {
        Some(q) => format!("PipeWire quantum granted {q}; "),
        None => String::new(),
    };
    format!(
        "period {} frames ({granted}latency {} + {} frames)",
        s["period_frames"],
        s["playback_latency_frames"],
        s["capture_latency_frames"]
            .as_u64()
            .map_or("-".into(), |f| f.to_string())
    )
}

/// The verdict as text: `held` is the smallest setting that held, `failed` the first
/// that did not.
pub fn text(held: Option<&RunView>, failed: Option<&RunView>) -> String {
    let mut out = String::from("\n");
    match held {
        Some(r) => {
            let m = JsonStats::of(&r.result["roundtrip_frames"]);
            let rate = r.result["rate_hz"].as_f64().unwrap_or(f64::NAN);
            let _ = writeln!(
                out,
                "smallest buffer without under-runs: {} (run {}): round trip {:.3} frames = {:.3} ms, under load {}",
                buffer_label(r),
                r.id,
                m.mean,
                m.mean * 1e3 / rate,
                r.config["load"].as_str().unwrap_or("none")
            );
        }
        None => {
            let _ = writeln!(out, "no setting ran without under-runs: try larger periods (--period 4096,2048) or less load");
        }
    }
    if let Some(r) = failed {
        let s = &r.result;
        let _ = writeln!(
            out,
            "the next one down failed: {} (run {}): {} xruns, {} skipped cycles, {}",
            buffer_label(r),
            r.id,
            s["xruns"],
            s["skipped_cycles"],
            s["verdict"].as_str().unwrap_or("no verdict stored")
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
        let s = &r.result;
        json!({"run_id": r.id, "period_frames": s["period_frames"],
               "quantum_granted_frames": r.config["server"]["quantum_granted_frames"],
               "playback_latency_frames": s["playback_latency_frames"],
               "capture_latency_frames": s["capture_latency_frames"],
               "roundtrip_frames": s["roundtrip_frames"]["mean"],
               "xruns": s["xruns"], "skipped_cycles": s["skipped_cycles"]})
    };
    json!({"smallest_holding": held.map(describe), "first_failing": failed.map(describe)})
}
