//! Round-trip runs: the stream, one row per run, what each figure means, and a line per
//! run that needs one.

use results::stored_backend::StoredBackend;
use std::fmt::Write as _;

use results::RunView;
use serde_json::Value;

use super::{device_line, realtime_cell, server_line, shown, steal_cell, JsonStats};
use crate::terminal::{machine_line, Table};

/// The round-trip runs' tables (one sweep's, or one stored run's), as
/// `audiolat roundtrip` and `audiolat show` print them. Nothing without runs.
pub fn text(runs: &[RunView]) -> String {
    let mut out = String::new();
    let Some(first) = runs.first() else {
        return out;
    };
    stream_lines(first, &mut out);
    let mut t = Table::new(&[
        "run",
        "period",
        "latency",
        "load",
        "windows",
        "frames",
        "ms",
        "stdev",
        "min",
        "max",
        "clicks",
        "reported",
        "extra",
        "under-runs",
        "rt",
        "steal",
    ])
    .left_align(&[3]);
    for r in runs {
        t.row(row(r));
    }
    out.push_str(&t.render());
    let _ = writeln!(
        out,
        "\nframes = the round trip by the multi-tone's phase slope (mean of the valid windows; stdev, min, max over them), ms the same in time;"
    );
    let _ = writeln!(
        out,
        "clicks = the study's count of frames from a sent to a returned click onset; latency = playback + capture latency the stream reports;"
    );
    let _ = writeln!(
        out,
        "reported = their sum; extra = what the loop adds beyond it (less the delay `audiolat roundtrip --insert-delay` inserts); under-runs = xruns / skipped cycles."
    );
    for r in runs {
        run_lines(r, &mut out);
    }
    out
}

/// The loop, the backend, its server or device, and the machine (from the first run).
fn stream_lines(first: &RunView, out: &mut String) {
    let s = &first.result;
    let backend = s["backend"].as_str().unwrap_or("-");
    let _ = writeln!(
        out,
        "\nround trip: a signal out, through {}, and back in; {backend} backend ({} model), {} Hz",
        first.config["loop"].as_str().unwrap_or("-"),
        shown(&s["model"]),
        shown(&s["rate_hz"])
    );
    let server = &s["server"];
    let kind = StoredBackend::parse(backend);
    if kind.is_server_client() {
        let _ = writeln!(out, "{}", server_line(server));
    } else if let Some(c) = server["command_line"].as_str() {
        let _ = writeln!(out, "{c}");
    }
    let granted = &first.config["granted"];
    if !granted.is_null() && kind.has_device_grant() {
        let _ = writeln!(out, "{}", device_line(s, granted));
    }
    let _ = writeln!(out, "{}\n", machine_line(&first.machine));
}

/// A figure with `digits` decimals, or `-` when no window measured the loop.
fn figure(m: &JsonStats, v: f64, digits: usize) -> String {
    if m.count > 0 {
        format!("{v:.digits$}")
    } else {
        "-".into()
    }
}

/// One run's row of the table.
fn row(r: &RunView) -> Vec<String> {
    let s = &r.result;
    let m = JsonStats::of(&s["roundtrip_frames"]);
    let frame_ms = s["rate_hz"].as_f64().map(|rate| 1e3 / rate);
    let clicks = JsonStats::of(&s["impulse_frames"]);
    let reported = s["reported_frames"].as_u64();
    let u = |v: &Value| v.as_u64().unwrap_or(0);
    vec![
        r.id.to_string(),
        shown(&s["period_frames"]),
        format!(
            "{}+{}",
            shown(&s["playback_latency_frames"]),
            shown(&s["capture_latency_frames"])
        ),
        r.config["load"].as_str().unwrap_or("none").to_string(),
        format!(
            "{}/{}",
            r.flags_record()
                .windows_ok
                .map_or("-".into(), |n| n.to_string()),
            shown(&s["windows"])
        ),
        figure(&m, m.mean, 3),
        frame_ms.map_or("-".into(), |f| figure(&m, m.mean * f, 3)),
        figure(&m, m.stdev, 3),
        figure(&m, m.min, 3),
        figure(&m, m.max, 3),
        if clicks.count > 0 {
            if clicks.min == clicks.max {
                format!("{:.0}", clicks.min)
            } else {
                format!("{:.0}-{:.0}", clicks.min, clicks.max)
            }
        } else {
            "-".into()
        },
        reported.map_or("-".into(), |r| r.to_string()),
        match reported.filter(|_| m.count > 0) {
            Some(reported) => {
                // No "-0.000" for a difference of rounding noise.
                let extra = m.mean - reported as f64 - u(&s["inserted_frames"]) as f64;
                format!("{:.3}", if extra.abs() < 5e-4 { 0.0 } else { extra })
            }
            None => "-".into(),
        },
        {
            let d = r.dropouts();
            let n = |v: Option<u64>| v.map_or("-".into(), |n| n.to_string());
            format!("{}/{}", n(d.underruns), n(d.skipped_cycles))
        },
        realtime_cell(&r.flags).into(),
        steal_cell(&r.flags),
    ]
}

/// Whether the audio thread ran real-time (`None`: not stored, a killed run).
fn realtime(r: &RunView) -> Option<bool> {
    r.flags_record().realtime
}

/// The verdict of one run, and what else a reader of its row must know.
fn run_lines(r: &RunView, out: &mut String) {
    let s = &r.result;
    let _ = writeln!(
        out,
        "run {}: {}",
        r.id,
        s["verdict"].as_str().unwrap_or("no verdict stored")
    );
    let inserted = s["inserted_frames"].as_u64().unwrap_or(0);
    if inserted > 0 {
        let _ = writeln!(
            out,
            "run {}: audiolat delayed its own output by {inserted} frames (`audiolat roundtrip --insert-delay`); they are in frames, not in extra",
            r.id
        );
    }
    if realtime(r) == Some(false) {
        let _ = writeln!(
            out,
            "run {}: NOT REAL-TIME: the audio thread ran {}",
            r.id,
            r.qos_granted_record()
                .audio_thread
                .flatten()
                .unwrap_or_else(|| "unknown (no cycle ran)".into())
        );
    }
}
