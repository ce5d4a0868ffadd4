//! Event runs: the stream, one row per run, the study's table (mean latency per
//! configuration), how to read them, and a line per run that needs one.

use results::stored_backend::StoredBackend;
use std::collections::BTreeSet;
use std::fmt::Write as _;

use results::model::TriggerRow;
use results::records::{EventConfigRecord, EventResultRecord};
use results::stats::Stats;
use results::RunView;

use super::{device_line, realtime_cell, server_line, shown_or_dash, shown_or_null, steal_cell};
use crate::terminal::{fmt_ns, machine_line, Table};

/// Milliseconds with two decimals.
fn ms(ns: f64) -> String {
    format!("{:.2}", ns / 1e6)
}

/// The triggers whose note could sound at its modelled time (not missed) and whose
/// cycle's start is known.
fn sounded(r: &RunView) -> impl Iterator<Item = &TriggerRow> {
    r.triggers.iter().filter(|t| t.sounded())
}

/// `f` of the sounded triggers, as f64.
fn of_sounded(r: &RunView, f: fn(&TriggerRow) -> Option<i64>) -> impl Iterator<Item = f64> + '_ {
    sounded(r).filter_map(move |t| f(t).map(|v| v as f64))
}

/// An event run with its configuration and result read as their records (a part not
/// stored reads as an empty record).
struct EventRun<'a> {
    view: &'a RunView,
    config: EventConfigRecord,
    result: EventResultRecord,
}

impl<'a> EventRun<'a> {
    fn of(view: &'a RunView) -> EventRun<'a> {
        EventRun {
            view,
            config: view.config_as().unwrap_or_default(),
            result: view.result_as().unwrap_or_default(),
        }
    }
}

/// The event runs' tables (one sweep's, or one stored run's), as `audiolat event` and
/// `audiolat show` print them. Nothing without runs.
pub fn text(runs: &[RunView]) -> String {
    let mut out = String::new();
    let runs: Vec<EventRun> = runs.iter().map(EventRun::of).collect();
    let Some(first) = runs.first() else {
        return out;
    };
    stream_lines(first, &mut out);
    out.push_str(&run_table(&runs));
    if runs.len() > 1 {
        study_table(&runs, &mut out);
    }
    legend(&mut out);
    for r in &runs {
        run_notes(r, &mut out);
    }
    for r in &runs {
        if let Some(why) = &r.result.why {
            if runs.len() > 1 {
                let _ = write!(out, "\nrun {}:", r.view.id);
            }
            super::why::text(why, ("late callback", "late callbacks"), None, &mut out);
        }
    }
    out
}

/// The trigger, the backend, its device or server, and the machine (from the first run).
fn stream_lines(first: &EventRun, out: &mut String) {
    let s = &first.result.stream;
    let backend = s.backend.as_deref().unwrap_or("-");
    let _ = writeln!(
        out,
        "\nevent latency: {} trigger -> first sample at the DAC, {backend} backend ({} model), {} Hz",
        shown_or_dash(first.config.trigger.as_deref()),
        shown_or_dash(s.model.as_deref()),
        shown_or_dash(s.rate_hz)
    );
    let server = s.server.as_ref();
    match &first.config.stream.granted {
        Some(granted) if StoredBackend::parse(backend).has_device_grant() => {
            let _ = writeln!(out, "{}", device_line(s, granted));
            // The jack PCM's server; a hardware device has none.
            if server.and_then(|s| s.name.as_ref()) != s.client.as_ref() {
                let _ = writeln!(out, "{}", server_line(server));
            }
        }
        _ => {
            let _ = writeln!(out, "{}", server_line(server));
        }
    }
    let _ = writeln!(out, "{}\n", machine_line(&first.view.machine));
}

/// A figure of `s`, or `-` when no note sounded (the model's latency is the stream's).
fn stat(s: Stats, f: fn(&Stats) -> f64, show: fn(f64) -> String) -> String {
    s.measured()
        .map_or_else(|| "-".to_string(), |s| show(f(&s)))
}

/// One row per run.
fn run_table(runs: &[EventRun]) -> String {
    let loopback = runs
        .iter()
        .any(|r| r.view.triggers.iter().any(|t| t.measured_ns.is_some()));
    let mut head = vec![
        "run",
        "period",
        "buffer",
        "workload",
        "load",
        "policy",
        "n",
        "mean ms",
        "min",
        "max",
        "stdev",
        "model",
        "wait",
        "late cb",
        "dsp",
        "missed",
        "under-runs",
        "rt",
        "steal",
    ];
    // Notes of unknown timing are counted apart from the missed ones, as in the study's
    // table and the run's note.
    let unknown = runs.iter().any(|r| r.view.notes().timing_unknown > 0);
    if unknown {
        head.insert(16, "unknown");
    }
    if loopback {
        head.insert(12, "loopback");
    }
    let mut t = Table::new(&head).left_align(&[3, 4, 5]);
    for r in runs {
        let mut row = run_row(r);
        if unknown {
            row.insert(16, r.view.notes().timing_unknown.to_string());
        }
        if loopback {
            let m = Stats::of(
                r.view
                    .triggers
                    .iter()
                    .filter_map(|t| t.measured_ns.map(|m| m as f64)),
            );
            row.insert(12, if m.count > 0 { ms(m.mean) } else { "-".into() });
        }
        t.row(row);
    }
    t.render()
}

/// One run's row, without the loopback column.
fn run_row(run: &EventRun) -> Vec<String> {
    let (r, s, c) = (run.view, &run.result, &run.config);
    let l = Stats::of(of_sounded(r, |t| t.latency_ns));
    let wait = Stats::of(of_sounded(r, |t| t.wait_ns));
    let cb = Stats::of(of_sounded(r, |t| t.lateness_ns));
    vec![
        r.id.to_string(),
        shown_or_dash(s.stream.period_frames),
        shown_or_dash(stream_buffer_frames(run)),
        shown_or_dash(c.workload.as_deref()),
        shown_or_dash(r.run_config().load),
        shown_or_dash(c.policy.as_deref()),
        l.count.to_string(),
        stat(l, |s| s.mean, ms),
        stat(l, |s| s.min, ms),
        stat(l, |s| s.max, ms),
        stat(l, |s| s.stdev, ms),
        s.model_latency_ms
            .map_or_else(|| "-".into(), |m| format!("{m:.2}")),
        stat(wait, |s| s.mean, ms),
        stat(cb, |s| s.mean, fmt_ns),
        s.dsp_load_percent_mean
            .map_or_else(|| "-".into(), |p| format!("{p:.1}%")),
        {
            // Counted over the stored triggers: none stored (a run killed before its
            // first), none counted.
            let notes = r.notes();
            if notes.triggers == 0 {
                "-".into()
            } else {
                notes.missed.to_string()
            }
        },
        {
            let d = r.dropouts();
            let n = |v: Option<u64>| v.map_or("-".into(), |n| n.to_string());
            format!("{}/{}", n(d.underruns_at_start), n(d.underruns))
        },
        realtime_cell(&r.flags).into(),
        steal_cell(&r.flags),
    ]
}

/// Whether the audio thread (and the trigger thread, if any) ran real-time (`None`:
/// not stored, a killed run).
fn realtime(r: &RunView) -> Option<bool> {
    r.flags_record().realtime
}

/// A run's column in the study's table: its workload, its load, and its policy when
/// the runs differ in it.
fn column(r: &EventRun, runs: &[EventRun]) -> String {
    let text = |v: Option<&str>| v.unwrap_or("?").to_string();
    let mut c = text(r.config.workload.as_deref());
    let load = text(r.view.run_config().load.as_deref());
    if load != "none" {
        c.push('+');
        c.push_str(&load);
    }
    let policies: BTreeSet<String> = runs
        .iter()
        .map(|r| text(r.config.policy.as_deref()))
        .collect();
    if policies.len() > 1 {
        c = format!("{c} {}", text(r.config.policy.as_deref()));
    }
    c
}

/// A run's row in the study's table: (buffer, period) in frames (`None`: not stored).
fn buffer_period(r: &EventRun) -> (Option<u64>, Option<u64>) {
    (stream_buffer_frames(r), r.result.stream.period_frames)
}

/// The buffer the run's stream ran with, as the answer says it (what an ALSA device
/// granted; else the frames a note plays behind, [`buffer_frames`]).
fn stream_buffer_frames(r: &EventRun) -> Option<u64> {
    crate::summary::stream_buffer(&r.config.stream, &r.result.stream, r.result.buffer_frames)
        .and_then(|b| b.buffer_frames)
}

/// The frames from a cycle's output to the DAC or sink the model used: the playback
/// latency the ports report, plus on PipeWire the sink's quantum they do not report
/// (`buffer_frames`, stored since that was measured). `None`: not stored.
fn buffer_frames(s: &EventResultRecord) -> Option<u64> {
    s.buffer_frames.or(s.stream.playback_latency_frames)
}

/// The study's shape: rows are (buffer, period), columns the scenarios, each cell the
/// mean latency of its runs' sounded notes.
fn study_table(runs: &[EventRun], out: &mut String) {
    let mut columns: Vec<String> = Vec::new();
    let mut rows: Vec<(Option<u64>, Option<u64>)> = Vec::new();
    for r in runs {
        let c = column(r, runs);
        if !columns.contains(&c) {
            columns.push(c);
        }
        let k = buffer_period(r);
        if !rows.contains(&k) {
            rows.push(k);
        }
    }
    let mut head: Vec<&str> = vec!["buffer", "period"];
    head.extend(columns.iter().map(String::as_str));
    let mut t = Table::new(&head);
    let mut any_missed = false;
    for &(buffer, period) in &rows {
        let frames = |f: Option<u64>| f.map_or("-".into(), |f| f.to_string());
        let mut cells = vec![frames(buffer), frames(period)];
        for c in &columns {
            let cell_runs: Vec<&RunView> = runs
                .iter()
                .filter(|r| buffer_period(r) == (buffer, period) && column(r, runs) == *c)
                .map(|r| r.view)
                .collect();
            let values: Vec<f64> = cell_runs
                .iter()
                .flat_map(|r| of_sounded(r, |t| t.latency_ns))
                .collect();
            let notes = results::Notes::sum(cell_runs.iter().map(|r| r.notes()));
            let mean = if values.is_empty() {
                "-".to_string()
            } else {
                format!(
                    "{:.1}",
                    values.iter().sum::<f64>() / values.len() as f64 / 1e6
                )
            };
            let all = notes.triggers;
            let apart = match (notes.missed, notes.timing_unknown) {
                (0, 0) => String::new(),
                (m, 0) => format!(" ({m}/{all} missed)"),
                (0, u) => format!(" ({u}/{all} timing unknown)"),
                (m, u) => format!(" ({m}/{all} missed, {u} timing unknown)"),
            };
            any_missed |= !apart.is_empty();
            cells.push(format!("{mean}{apart}"));
        }
        t.row(cells);
    }
    let _ = writeln!(
        out,
        "\naverage latency (ms), as in the BeagleBone study's Figures 4-7:"
    );
    out.push_str(&t.render());
    if any_missed {
        let _ = writeln!(
            out,
            "(n/m missed: n of the m notes were rendered after their cycle's deadline, an under-run; timing unknown: rendered just after one, when their cycle's start was not known; the mean is over the others)"
        );
    }
}

/// What the figures mean.
fn legend(out: &mut String) {
    let _ = writeln!(
        out,
        "\nlatency = wait (trigger -> the note's frame in the stream) + playback latency (what the stream reports, plus what a PipeWire sink adds that it does not: see the run's note); buffer = the frames the stream holds (an ALSA device's granted buffer, a period more than its playback latency: see the run's note)."
    );
    let _ = writeln!(
        out,
        "model: asap = half a period + playback latency on average (up to a period of jitter); fixed = one period + playback latency, exactly."
    );
    let _ = writeln!(
        out,
        "late cb = mean lateness of the callback that rendered the note after its cycle's start; dsp = mean DSP time per cycle, in % of the period; missed = notes rendered after their cycle's deadline (an under-run: left out of n and every mean); timing unknown = notes rendered just after an under-run, before the cycles' start was known again (left out the same way); under-runs = xruns the server reported before the first trigger / after it."
    );
}

/// What a reader of one run's row must know: onsets the loopback missed, notes an
/// under-run hit, DSP overloads, late triggers, threads that were not real-time.
fn run_notes(run: &EventRun, out: &mut String) {
    let (r, s) = (run.view, &run.result);
    let n = |v: Option<u64>| v.unwrap_or(0);
    if let Some(port) = s.stream.capture_port.as_deref() {
        let missing = r
            .triggers
            .iter()
            .filter(|t| t.measured_ns.is_none())
            .count();
        if s.stream.capture_latency_frames.is_none() {
            let _ = writeln!(
                out,
                "run {}: the stream did not report the capture latency of {port}: no loopback latency was measured (it would include it)",
                r.id
            );
        } else if missing > 0 {
            let _ = writeln!(
                out,
                "run {}: no onset found in the loopback capture from {port} for {missing} of {} triggers: is the output connected back to it?",
                r.id,
                r.triggers.len()
            );
        }
    }
    if let (Some(buffer), Some(behind)) = (stream_buffer_frames(run), buffer_frames(s)) {
        if buffer != behind {
            let _ = writeln!(
                out,
                "run {}: buffer {buffer} frames, as the device granted; a note plays behind {behind} of them, the playback latency the stream reports (the period being written is not queued yet)",
                r.id,
            );
        }
    }
    if let Some(sink) = s.unreported_sink_frames {
        let _ = writeln!(
            out,
            "run {}: buffer {} = {} frames the ports report + {sink} frames the PipeWire sink's quantum adds, which they do not report (the sink takes a cycle's output in the next cycle: measured, the loop through its monitor is one quantum)",
            r.id,
            buffer_frames(s).map_or("-".into(), |b| b.to_string()),
            shown_or_dash(s.stream.playback_latency_frames)
        );
    }
    let notes = r.notes();
    let missed = notes.missed;
    if missed > 0 {
        let _ = writeln!(
            out,
            "run {}: {missed} notes were rendered by a callback that started after its cycle's deadline (an under-run); they are left out of n and the figures",
            r.id
        );
    }
    let unknown = notes.timing_unknown;
    if unknown > 0 {
        let _ = writeln!(
            out,
            "run {}: {unknown} notes were rendered just after an under-run, before audiolat knew again when the cycles started (the server's own estimate is off after an xrun); nothing about their timing was measured and they are left out of n and the figures",
            r.id
        );
    }
    let overloads = n(s.dsp_overload_cycles);
    if overloads > 0 {
        let _ = writeln!(
            out,
            "run {}: DSP overload: {overloads} of {} cycles took longer than their period to process (a lighter workload or a larger period fits: `audiolat event --workload W --period P`)",
            r.id,
            shown_or_null(s.cycles)
        );
    }
    let late = n(s.late_triggers);
    if late > 0 {
        let _ = writeln!(
            out,
            "run {}: {late} of the triggers reached the audio thread after their frame had passed (started at offset 0 of the next cycle)",
            r.id
        );
    }
    let moved = s.fixed_replacement.unwrap_or_default();
    if let Some(over) = moved.moved_over_half_frame.filter(|&n| n > 0) {
        let _ = writeln!(
            out,
            "run {}: {over} of {} fixed-policy notes moved by more than half a frame when placed again on the time line of the cycle that rendered them (median shift {} frames, largest {}): the cycles' time line moved between the trigger and its note",
            r.id,
            shown_or_null(moved.notes),
            moved.shift_median_frames.map_or("-".into(), |v| format!("{v:.1}")),
            moved.shift_abs_max_frames.map_or("-".into(), |v| format!("{v:.1}"))
        );
    }
    if realtime(r) == Some(false) {
        let q = r.qos_granted_record();
        let audio = q
            .audio_thread
            .flatten()
            .unwrap_or_else(|| "unknown (no cycle ran)".into());
        let trigger = match q.trigger_thread.flatten() {
            None => "none".to_string(),
            Some(t) => match t.refusal {
                Some(why) => format!("{} (refused: {why})", t.policy),
                None => t.policy,
            },
        };
        let _ = writeln!(
            out,
            "run {}: NOT REAL-TIME: the audio thread ran {audio}, the trigger thread {trigger}; a JACK server's client threads are real-time when it runs with -R and may (audiolat doctor checks the limits)",
            r.id
        );
    }
}
