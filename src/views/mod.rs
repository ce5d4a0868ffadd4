//! What the commands print that has no renderer in `report` yet: text for people, JSON
//! for machines, read from the probes' own outcomes (bench, devices, net) or composing
//! `report::view`'s renderers with a fresh run's live lines.

use std::fmt::Write as _;

use anyhow::Result;
use results::model::RunRecord;
use results::{Measurement, Store};
use serde_json::Value;

mod bench;
mod devices;


pub use bench::{bench_json, bench_text, BenchFlags};
pub use devices::{devices_json, devices_text};

/// The measurement a run is summarised by in lists: the first one stored.
pub fn headline(store: &Store, run: &RunRecord) -> Result<Option<Measurement>> {
    Ok(store
        .measurements(run.id)?
        .into_iter()
        .next()
        .map(|m| m.measurement))
}

/// A duration for people: "10 s", "500 ms".
pub fn fmt_duration(d: std::time::Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{} s", (s * 1000.0).round() / 1000.0)
    } else {
        format!("{} ms", (s * 1e6).round() / 1e3)
    }
}

pub use report::view::experiment::{
    ExperimentRow, PAPER_FIG7A, PAPER_FIG7B, PAPER_FIG8A, PAPER_FIG8B, PAPER_FIG8_150,
};

/// The experiment row of a finished net run: `metric`'s summary and misses (a block never
/// answered missed all the same), and why a run proves nothing when it does not.
pub fn experiment_row(
    label: &str,
    metric: &str,
    paper: &'static str,
    run: &crate::runner::NetRun,
) -> ExperimentRow {
    let m = run
        .outcome
        .measurements()
        .into_iter()
        .find(|m| m.metric == metric);
    let synth = run.outcome.synth.as_ref();
    let sent = synth.map_or(0, |p| p.controller.blocks_sent);
    // An abusive stream that could not fill the link proves nothing about it.
    let note = match (synth.and_then(|p| p.stream.as_ref()), run.config.link) {
        (Some(st), Some(link)) if st.received_mbps + 148.5 < 0.9 * link.mbps => format!(
            "the stream reached only {:.0} Mbit/s beside the audio's 148.5: this machine cannot fill a {} Mbit/s link; use a lower --link",
            st.received_mbps, link.mbps
        ),
        _ => String::new(),
    };
    ExperimentRow {
        label: label.into(),
        run_id: Some(run.run_id),
        status: run.status.to_string(),
        summary: m.map(|m| {
            // The host's misses are of the blocks it answered; a block never
            // answered missed all the same (end_to_end counts its lost already).
            let lost = match (metric, synth) {
                ("response_time", Some(p)) => p.controller.lost,
                _ => 0,
            };
            let misses = m.misses.unwrap_or(0) + lost;
            (m.summary, if sent > 0 { misses.min(sent) } else { misses })
        }),
        paper,
        note,
        sent,
    }
}

/// An experiment's table, and where its runs are stored.
pub fn experiment_text(
    which: &str,
    metric: &str,
    group: i64,
    rows: &[ExperimentRow],
    db: &std::path::Path,
) -> String {
    let deadline_ns = netaudio::wire::DEADLINE_NS as f64;
    let mut out = report::view::experiment::text(which, metric, group, deadline_ns, rows);
    let _ = writeln!(
        out,
        "
maxima on a virtual machine are the hypervisor's as much as ours: read the counts and the means. Every run is stored in {}; `audiolat show ID` shows one.",
        db.display()
    );
    out
}

/// Doctor as text.
pub fn doctor_text(r: &probes::doctor::DoctorReport) -> String {
    report::view::doctor::text(&r.machine, &r.findings)
}

/// Doctor as JSON.
pub fn doctor_json(r: &probes::doctor::DoctorReport) -> Value {
    report::view::doctor::json(&r.machine, &r.findings)
}
