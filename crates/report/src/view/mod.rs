//! One renderer per probe, for a fresh run and a stored one alike.
//!
//! Every renderer reads a [`results::RunView`] (the run's stored record, measurements
//! and events) and returns text; none reads a probe's own types, so `audiolat <probe>`
//! and `audiolat show <run>` print one run through the same function. Lines that only
//! make sense live ("stored as run N", where to look next) are the caller's.

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::terminal::fmt_ns;
use results::records::flags::Flags;
use results::records::graph::{GraphRecord, ProfilerWindow};
use results::records::stream::{AlsaGrantedRecord, DuplexStartRecord, ServerRecord};
use results::records::{StatsRecord, StreamRecord};
use results::Measurement;

pub mod bench;
pub mod devices;
pub mod doctor;
pub mod event;
pub mod experiment;
pub mod fresh;
pub mod gates;
pub mod jitter;
pub mod live;
pub mod min_buffer;
pub mod net;
pub mod plan;
pub mod roundtrip;
pub mod run;
pub mod stored;
pub mod suite;
pub mod why;

/// A statistic of a measurement in ns, or `-` when it recorded nothing.
pub fn ns_stat(m: Option<&Measurement>, stat: fn(&results::Summary) -> f64) -> String {
    m.and_then(|m| m.summary.as_ref())
        .map_or_else(|| "-".into(), |s| fmt_ns(stat(s)))
}

/// How many of a measurement's values missed its deadline, out of how many: the blocks
/// sent when the measurement counts them (a lost block has no time but missed all the
/// same), else its samples. `None` without a deadline, or with nothing to count.
pub fn deadline_line(m: &Measurement) -> Option<String> {
    let (deadline, misses) = (m.deadline?, m.misses?);
    let of = results::counts::deadline_blocks(m);
    (of > 0).then(|| {
        format!(
            "{}: {misses} of {of} missed the deadline of {}",
            m.metric,
            fmt_ns(deadline)
        )
    })
}

/// A measurement's summary as JSON.
pub fn measurement_summary_json(m: &Measurement) -> Value {
    json!({
        "metric": m.metric, "unit": m.unit, "method": m.method,
        "summary": results::export::summary_json(m.summary.as_ref()), "overflows": m.overflows(),
        "deadline": m.deadline, "misses": m.misses,
    })
}

/// A stored value as text: a number or a string as it is, `-` when it was not stored
/// (a run killed before it stored it): never a 0 or a `null` nobody measured.
pub fn shown(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A stored figure, or `-` when the run has none.
pub fn shown_or_dash<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

/// A stored figure as its JSON read, `null` when the run has none (where a line has
/// always printed it so).
pub fn shown_or_null<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or("null".into(), |v| v.to_string())
}

/// `yes`, `NO`, or `-` when the run never stored whether its thread ran real-time.
pub fn realtime_cell(flags: &Value) -> &'static str {
    match Flags::of(flags).realtime {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "-",
    }
}

/// A host-steal share from a run's flags, or `-` when it was not sampled.
pub fn steal_cell(flags: &Value) -> String {
    Flags::of(flags)
        .steal_percent()
        .map_or("-".into(), |p| format!("{p:.1}%"))
}

/// The JACK server line of an audio run from its stored server (name, private,
/// command line, version, and PipeWire's graph when recorded).
pub fn server_line(server: Option<&ServerRecord>) -> String {
    let Some(server) = server else {
        return "server -".into();
    };
    format!(
        "server `{}`{}{}",
        server.name.as_deref().unwrap_or("-"),
        match server.private {
            Some(true) => format!(
                " (private: {})",
                server.command_line.as_deref().unwrap_or("-")
            ),
            Some(false) => " (external)".into(),
            None => String::new(),
        },
        server
            .version
            .as_deref()
            .map(|v| format!(", {v}"))
            .unwrap_or_default()
    ) + &server.graph.as_ref().map(graph_line).unwrap_or_default()
}

/// A PipeWire run's graph record (`server.graph`), on a line of its own: the driver,
/// force-quantum before -> after, and the profiler's first and last windows (quantum,
/// driver xruns, follower errors); `-` for what was not measured.
fn graph_line(graph: &GraphRecord) -> String {
    let num = |v: Option<u64>| v.map_or("-".into(), |n| n.to_string());
    let setting = |v: Option<u32>| num(v.map(u64::from));
    let window = |w: &Option<ProfilerWindow>| {
        let Some(w) = w else {
            return "-".to_string();
        };
        let driver = w.driver();
        format!(
            "quantum {}, xruns {}, errors {} in {} ms",
            num(driver.and_then(|d| d.quantum_frames)),
            num(driver.and_then(|d| d.xruns)),
            w.errors(),
            num(w.window_ms)
        )
    };
    format!(
        "\nPipeWire graph: driver {}; force-quantum {} -> {}, force-rate {} -> {}; profiler first window: {}; last: {}",
        graph.driver.as_deref().unwrap_or("-"),
        setting(graph.force_quantum.before),
        setting(graph.force_quantum.after),
        setting(graph.force_rate.before),
        setting(graph.force_rate.after),
        window(&graph.profiler.before),
        window(&graph.profiler.after),
    )
}

/// How a duplex pair's capture stood against its playback at the start.
fn skew(start: &DuplexStartRecord) -> String {
    match start.skew_frames {
        Some(0) => "aligned".to_string(),
        Some(f) if start.steady_offset == Some(true) => format!(
            "with capture {f:+} frames from playback on every start (the device's own offset)"
        ),
        Some(f) => format!(
            "with capture {f:+} frames from playback (it changed from start to start: the round trip includes it)"
        ),
        None => "skew not read".to_string(),
    }
}

/// What an ALSA device granted, for people: the device(s), format, channels, rate,
/// period and buffer as granted (never as asked), access, and how a duplex pair started.
/// `stream` is an audio run's stream as it ran (`client`, `capture_port`,
/// `duplex_start`).
pub fn device_line(stream: &StreamRecord, granted: &AlsaGrantedRecord) -> String {
    let period = granted.period_frames;
    let buffer = granted.buffer_frames;
    let capture = stream.capture_port.as_deref();
    let mut line = format!(
        "device `{}`{}: granted {}, {} channel(s) out{}, {} Hz, period {} frames, buffer {} frames{}, {}",
        stream.client.as_deref().unwrap_or("?"),
        capture.map(|c| format!(" -> `{c}`")).unwrap_or_default(),
        granted.format.as_deref().unwrap_or("-"),
        shown_or_dash(granted.playback_channels),
        granted
            .capture_channels
            .map(|c| format!(", {c} in"))
            .unwrap_or_default(),
        shown_or_dash(granted.rate_hz),
        shown_or_dash(period),
        shown_or_dash(buffer),
        match (period, buffer) {
            (Some(p), Some(b)) if p > 0 && b % p == 0 => format!(" ({} periods)", b / p),
            _ => String::new(),
        },
        granted.access.as_deref().unwrap_or("-"),
    );
    if capture.is_some() {
        let start = stream.duplex_start.as_ref();
        let _ = match (granted.linked, start) {
            (Some(true), Some(start)) => {
                let attempts = start.attempts.unwrap_or(0);
                let starts = start.starts.unwrap_or(0);
                write!(
                    line,
                    "; linked, started {} ({} start{}{})",
                    skew(start),
                    attempts,
                    if attempts == 1 { "" } else { "s" },
                    if starts > 1 {
                        format!(", {} restarts after under-runs", starts - 1)
                    } else {
                        String::new()
                    }
                )
            }
            (Some(false), start) => write!(
                line,
                "; not linked ({}): capture started first, {}",
                granted
                    .link_error
                    .as_deref()
                    .unwrap_or("the device refused"),
                start.map_or_else(|| "skew not read".to_string(), skew)
            ),
            _ => Ok(()),
        };
    }
    line
}

/// Figures of a stored statistics record, every one a number: a figure not stored
/// reads 0 and is shown only when `count > 0`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Figures {
    /// How many values.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
    /// Standard deviation.
    pub stdev: f64,
}

impl Figures {
    /// The figures of `stats`; none stored, a count of 0.
    pub fn of(stats: Option<&StatsRecord>) -> Figures {
        let Some(s) = stats else {
            return Figures::default();
        };
        let f = |v: Option<f64>| v.unwrap_or(0.0);
        Figures {
            count: s.count,
            mean: f(s.mean),
            min: f(s.min),
            max: f(s.max),
            stdev: f(s.stdev),
        }
    }
}

#[cfg(test)]
mod tests;
