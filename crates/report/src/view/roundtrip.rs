//! Round-trip runs: the stream, one row per run, what each figure means, and a line per
//! run that needs one.

use results::stored_backend::StoredBackend;
use std::fmt::Write as _;

use results::records::{RoundtripConfigRecord, RoundtripResultRecord};
use results::RunView;

use super::{device_line, realtime_cell, server_line, shown_or_dash, steal_cell, Figures};
use crate::terminal::{machine_line, Table};

/// The round-trip runs' tables (one sweep's, or one stored run's), as
/// `audiolat roundtrip` and `audiolat show` print them. Nothing without runs.
pub fn text(runs: &[RunView]) -> String {
    let mut out = String::new();
    let Some(first) = runs.first() else {
        return out;
    };
    stream_lines(
        first,
        &first.config_as().unwrap_or_default(),
        &first.result_as().unwrap_or_default(),
        &mut out,
    );
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
    for r in runs {
        if let Some(why) = r.why() {
            if runs.len() > 1 {
                let _ = write!(out, "\nrun {}:", r.id);
            }
            super::why::text(&why, ("late callback", "late callbacks"), None, &mut out);
        }
    }
    out
}

/// The loop, the backend, its server or device, and the machine (from the first run).
fn stream_lines(
    first: &RunView,
    config: &RoundtripConfigRecord,
    result: &RoundtripResultRecord,
    out: &mut String,
) {
    let s = &result.stream;
    let backend = s.backend.as_deref().unwrap_or("-");
    let _ = writeln!(
        out,
        "\nround trip: a signal out, through {}, and back in; {backend} backend ({} model), {} Hz",
        config.loop_description.as_deref().unwrap_or("-"),
        shown_or_dash(s.model.as_deref()),
        shown_or_dash(s.rate_hz)
    );
    let server = s.server.as_ref();
    let kind = StoredBackend::parse(backend);
    if kind.is_server_client() {
        let _ = writeln!(out, "{}", server_line(server));
    } else if let Some(c) = server.and_then(|s| s.command_line.as_deref()) {
        let _ = writeln!(out, "{c}");
    }
    if let Some(granted) = config
        .stream
        .granted
        .as_ref()
        .filter(|_| kind.has_device_grant())
    {
        let _ = writeln!(out, "{}", device_line(s, granted));
    }
    let _ = writeln!(out, "{}\n", machine_line(&first.machine));
}

/// A figure with `digits` decimals, or `-` when no window measured the loop.
fn figure(m: &Figures, v: f64, digits: usize) -> String {
    if m.count > 0 {
        format!("{v:.digits$}")
    } else {
        "-".into()
    }
}

/// One run's row of the table.
fn row(r: &RunView) -> Vec<String> {
    let s = r.result_as::<RoundtripResultRecord>().unwrap_or_default();
    let m = Figures::of(s.roundtrip_frames.as_ref());
    let frame_ms = s.stream.rate_hz.map(|rate| 1e3 / rate as f64);
    let clicks = Figures::of(s.impulse_frames.as_ref());
    let reported = s.reported_frames;
    vec![
        r.id.to_string(),
        shown_or_dash(s.stream.period_frames),
        format!(
            "{}+{}",
            shown_or_dash(s.stream.playback_latency_frames),
            shown_or_dash(s.stream.capture_latency_frames)
        ),
        r.run_config().load.unwrap_or_else(|| "none".into()),
        format!(
            "{}/{}",
            r.flags_record()
                .windows_ok
                .map_or("-".into(), |n| n.to_string()),
            shown_or_dash(s.windows)
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
                let extra = m.mean - reported as f64 - s.inserted_frames.unwrap_or(0) as f64;
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
    let s = r.result_as::<RoundtripResultRecord>().unwrap_or_default();
    let _ = writeln!(
        out,
        "run {}: {}",
        r.id,
        s.verdict.as_deref().unwrap_or("no verdict stored")
    );
    let inserted = s.inserted_frames.unwrap_or(0);
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
