//! The answer on top: what a report's stored runs say about the machine they ran on, in
//! the words a musician or an engineer came for. Per audio backend and load, the
//! smallest buffer that held with no under-run and the latency it gives (from event and
//! round-trip runs, and so from a `--find-min-buffer` search's runs); the wake-up latency
//! of each jitter run (p99, p99.9, max); every deadline judged and its misses; one
//! verdict line per run ("holds 128-frame periods at 44.1 kHz idle on JACK: 2.90 ms round
//! trip"); and the caveats that apply, each once (not real-time, host steal, a virtual
//! machine or an emulator, a software clock, interrupted runs).
//!
//! [`answer`] computes it from the stored runs only; [`html`] and [`text`] say the same
//! thing, the one as the report's first section, the other at the end of `audiolat
//! suite` and `audiolat run`. A value nobody measured is absent, never 0; a probe that
//! did not run is not in the answer.

mod buffers;
mod caveats;
mod render;
mod verdicts;

#[cfg(test)]
mod tests;

use results::probe_kind::{JITTER, NET};
use results::records::{JitterConfigRecord, Record};
use results::stored_backend::StoredBackend;
use results::{RunId, Summary};

use crate::data::{ReportData, RunData};

pub(crate) use buffers::{buffer_of, skipped_of, stream_buffer, underruns_of};
pub use buffers::{Buffer, FailedBuffer};
pub use render::{html, text};

/// How a verdict reads: the class it gets in the HTML (`ok`, `warn`, `fail`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// It held: no under-run, no deadline missed.
    Ok,
    /// It held, with something to know (a maximum past a period, a late block).
    Warn,
    /// It did not hold, or the run did not measure.
    Fail,
}

impl Mark {
    /// The HTML class: `ok`, `warn`, `fail`.
    pub fn class(self) -> &'static str {
        match self {
            Mark::Ok => "ok",
            Mark::Warn => "warn",
            Mark::Fail => "fail",
        }
    }
}

/// A verdict, in words: one run's, or the same verdict of several runs at the same
/// setting (a plan's repeats and variants) said once.
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictLine {
    /// The runs it is about.
    pub run_ids: Vec<RunId>,
    /// Held, held with a caveat, or did not.
    pub mark: Mark,
    /// The sentence, e.g. `holds 64-frame periods at 48 kHz under cpu load: 2.90 ms round
    /// trip`.
    pub text: String,
}

/// What one audio backend under one load came to.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendAnswer {
    /// The subject its runs came from in a report of several (`run 3`, `group 2`, `host
    /// a`), `None` in a one-subject report.
    pub source: Option<String>,
    /// The backend in words, e.g. `JACK (jackd -d dummy)`.
    pub backend: String,
    /// The load, e.g. `idle`, `under cpu load`.
    pub load: String,
    /// The shortest buffer in time that held (a complete run with no under-run), if
    /// one did; of two as short, the one that gave the lower latency.
    pub smallest_held: Option<Buffer>,
    /// The longest buffer shorter than `smallest_held` (or any, when none held) whose
    /// complete runs did not hold, with the most under-runs one of them counted.
    pub failed_below: Option<FailedBuffer>,
    /// Of the complete runs at `smallest_held`, how many held and how many there were
    /// (a noisy machine can hold a setting in one run and not in the next).
    pub runs_held_at_smallest: (usize, usize),
    /// The event latency at `smallest_held` (median of the runs' medians), ns.
    pub event_latency_ns: Option<f64>,
    /// Whether a median in `event_latency_ns` is a histogram's bound ("at least").
    pub event_latency_clamped: bool,
    /// The round trip at `smallest_held` (median of the runs' medians), ns.
    pub roundtrip_ns: Option<f64>,
    /// Whether a median in `roundtrip_ns` is a histogram's bound ("at least").
    pub roundtrip_clamped: bool,
    /// Settings whose runs were stopped before their end: they judge nothing.
    pub not_finished: Vec<Buffer>,
    /// Settings whose runs failed (refused, the server gone): they judge nothing.
    pub failed_runs: Vec<Buffer>,
    /// The settings tried, shortest buffer first.
    pub tried: Vec<Buffer>,
}

/// The wake-up latency of one jitter run.
#[derive(Debug, Clone, PartialEq)]
pub struct WakeupAnswer {
    /// The run.
    pub run_id: RunId,
    /// The condition, e.g. `idle`, `under cpu load, 80 % busy`.
    pub condition: String,
    /// Its timer period, ns.
    pub period_ns: Option<f64>,
    /// Wake-ups measured.
    pub count: u64,
    /// 99th percentile, ns.
    pub p99_ns: f64,
    /// 99.9th percentile, ns.
    pub p999_ns: f64,
    /// The largest, ns.
    pub max_ns: f64,
    /// When a percentile fell among the histogram's overflows, its bound: a percentile
    /// at it means "at least".
    pub clamped_at: Option<f64>,
}

impl WakeupAnswer {
    /// Whether a percentile of this run is only a bound ("at least").
    pub fn clamped(&self) -> bool {
        self.clamped_at
            .is_some_and(|b| self.p99_ns >= b || self.p999_ns >= b)
    }
}

/// A deadline the runs judged their values against, and how many missed it: one per
/// kind of deadline and condition, over every run that judged it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadlineAnswer {
    /// The runs.
    pub run_ids: Vec<RunId>,
    /// What missing it means, e.g. `fragment under-runs (3x32 frames, under cpu load)`.
    pub what: String,
    /// The shortest deadline of those runs, ns.
    pub deadline_min_ns: f64,
    /// The longest deadline of those runs, ns (the same as the shortest when one).
    pub deadline_max_ns: f64,
    /// Values that missed it, over the runs.
    pub misses: u64,
    /// Values judged, over the runs.
    pub count: u64,
}

/// Everything the summary says, computed from the stored runs only.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Answer {
    /// The machines in words, each distinct one once, in run order (none without runs).
    pub machines: Vec<String>,
    /// Doctor's tally (`22 ok, 5 warn, 1 fail`), when the report has its findings.
    pub doctor: Option<String>,
    /// Per audio backend and load, in the order first run.
    pub backends: Vec<BackendAnswer>,
    /// Per jitter run.
    pub wakeups: Vec<WakeupAnswer>,
    /// Per judged deadline.
    pub deadlines: Vec<DeadlineAnswer>,
    /// One per run of a measuring probe, in run order.
    pub verdicts: Vec<VerdictLine>,
    /// The caveats that apply, each once, in words.
    pub caveats: Vec<String>,
    /// Cells that made no run, with why (`cell: why`).
    pub not_run: Vec<String>,
}

impl Answer {
    /// Whether any run measured anything the summary reports.
    pub fn measured_anything(&self) -> bool {
        !(self.backends.is_empty()
            && self.wakeups.is_empty()
            && self.deadlines.is_empty()
            && self.verdicts.is_empty())
    }
}

/// The answer of a report's runs.
pub fn answer(data: &ReportData) -> Answer {
    let runs: Vec<&RunData> = data.runs().collect();
    let mut machines: Vec<String> = Vec::new();
    for m in runs.iter().map(|r| machine_words(&r.record.machine)) {
        if !machines.contains(&m) {
            machines.push(m);
        }
    }
    let mut a = Answer {
        machines,
        doctor: data.doctor.as_ref().map(|f| doctor_tally(f)),
        ..Answer::default()
    };
    a.verdicts = verdicts::merged(
        data.cells
            .iter()
            .filter_map(|c| verdicts::of(c.run.as_ref()?, &verdicts::variant(c)))
            .collect(),
    );
    for r in &runs {
        if let Some(w) = wakeup(r) {
            a.wakeups.push(w);
        }
        for d in deadlines(r) {
            match a.deadlines.iter_mut().find(|x| x.what == d.what) {
                Some(x) => {
                    x.run_ids.extend(d.run_ids);
                    x.deadline_min_ns = x.deadline_min_ns.min(d.deadline_min_ns);
                    x.deadline_max_ns = x.deadline_max_ns.max(d.deadline_max_ns);
                    x.misses += d.misses;
                    x.count += d.count;
                }
                None => a.deadlines.push(d),
            }
        }
    }
    a.backends = buffers::backends(data);
    a.caveats = caveats::of(&runs, data.doctor.as_deref());
    a.not_run = data
        .cells
        .iter()
        .filter(|c| c.run.is_none())
        .filter_map(|c| c.error.as_ref().map(|e| format!("{}: {e}", c.key)))
        .collect();
    a
}

fn machine_words(m: &results::model::Machine) -> String {
    let mut out = String::new();
    if !m.hostname.is_empty() {
        out.push_str(&format!("{}: ", m.hostname));
    }
    if !m.cpu_model.is_empty() {
        out.push_str(&m.cpu_model);
    }
    if m.cpus_online > 0 {
        out.push_str(&format!(", {} CPUs", m.cpus_online));
    }
    if let Some(a) = &m.arch {
        out.push_str(&format!(" ({a})"));
    }
    if !m.kernel_release.is_empty() {
        out.push_str(&format!(", Linux {}", m.kernel_release));
    }
    if !m.preemption.is_empty() {
        out.push_str(&format!(", {}", m.preemption));
    }
    if let Some(v) = m.virtualization.as_deref().filter(|v| is_virtual(v)) {
        out.push_str(&format!(", virtual machine ({v})"));
    }
    out
}

fn doctor_tally(findings: &[results::model::Finding]) -> String {
    use results::model::Verdict;
    let n = |v: Verdict| findings.iter().filter(|f| f.verdict == v).count();
    format!(
        "{} ok, {} warn, {} fail",
        n(Verdict::Ok),
        n(Verdict::Warn),
        n(Verdict::Fail)
    )
}

/// A run's id as printed: grouped from 10,000 on, like every count.
pub(crate) fn run_ref(id: RunId) -> String {
    crate::units::fmt_count(id.get().max(0) as u64)
}

/// `run 4`, `runs 4, 5`.
pub(crate) fn runs_ref(ids: &[RunId]) -> String {
    let list: Vec<String> = ids.iter().map(|i| run_ref(*i)).collect();
    match list.len() {
        1 => format!("run {}", list[0]),
        _ => format!("runs {}", list.join(", ")),
    }
}

/// Whether a stored `virtualization` names a hypervisor (not `none`).
fn is_virtual(v: &str) -> bool {
    !v.is_empty() && !v.eq_ignore_ascii_case("none")
}

/// The load a run ran under, in words: `idle`, `under cpu load`, `under disk load`.
pub(crate) fn load_words(r: &RunData) -> String {
    let load = r.record.load_record();
    let given = results::records::RunConfig::of(&r.record.config).load;
    let spec = given
        .as_deref()
        .or_else(|| load.as_ref().map(|l| l.spec.as_str()))
        .unwrap_or("none");
    match spec {
        "" | "none" => "idle".into(),
        "io" | "hdd" => "under disk load".into(),
        s => format!("under {s} load"),
    }
}

/// A rate for people: `44.1 kHz`, `48 kHz`.
pub(crate) fn fmt_rate(rate_hz: f64) -> String {
    let k = rate_hz / 1e3;
    if (k - k.round()).abs() < 1e-9 {
        format!("{k:.0} kHz")
    } else {
        format!("{k:.1} kHz")
    }
}

/// The backend an audio run used: `JACK`, `ALSA`, `PipeWire`, `virtual`.
pub(crate) fn short_backend(r: &RunData) -> String {
    StoredBackend::of(&r.record.result, &r.record.config)
        .map_or_else(|| "?".into(), |b| b.display_name().to_string())
}

/// The backend an audio run used, in words, with what clocks it when not a card.
pub(crate) fn backend_words(r: &RunData) -> String {
    match caveats::software_clock(r) {
        Some(why) => format!("{} ({why})", short_backend(r)),
        None => short_backend(r),
    }
}

/// A percentile as printed: `>=1.00 s` when it is only the histogram's bound, like
/// [`crate::terminal::fmt_percentile`].
pub(crate) fn fmt_p(s: &Summary, v: f64) -> String {
    crate::terminal::fmt_percentile(s, v, "ns")
}

/// The median of a run's main metric, ns.
fn median_ns(r: &RunData, metric: &str) -> Option<f64> {
    r.measurement(metric)?.summary.map(|s| s.p50)
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The condition a jitter run ran under, in words.
pub(crate) fn jitter_condition(r: &RunData) -> String {
    let mut c = load_words(r);
    if let Some(b) = jitter_config(r).busy_percent.filter(|b| *b > 0.0) {
        c.push_str(&format!(", {b:.0} % of each period busy"));
    }
    c
}

fn wakeup(r: &RunData) -> Option<WakeupAnswer> {
    if r.record.probe != &JITTER {
        return None;
    }
    let m = r.measurement("wakeup_latency")?;
    let s = m.summary?;
    Some(WakeupAnswer {
        run_id: r.record.id,
        condition: jitter_condition(r),
        period_ns: jitter_config(r).period_ns.map(|p| p as f64),
        count: s.count,
        p99_ns: s.p99,
        p999_ns: s.p999,
        max_ns: s.max,
        clamped_at: s.clamped_at,
    })
}

/// What missing a metric's deadline means, in words (`None`: not reported on top).
fn deadline_words(r: &RunData, metric: &str) -> Option<String> {
    Some(match metric {
        "fragment_completion" => {
            let f = jitter_config(r).fragments.unwrap_or_default();
            // A figure not stored reads `null`, as its JSON did.
            let shown_or_null = |v: Option<u64>| v.map_or("null".into(), |v| v.to_string());
            format!(
                "fragment under-runs ({}x{} frames at {}, {})",
                shown_or_null(f.fragments),
                shown_or_null(f.frames),
                f.sample_rate.map_or("?".into(), |r| fmt_rate(r as f64)),
                jitter_condition(r)
            )
        }
        "response_time" => format!("network audio blocks answered late ({})", load_words(r)),
        "end_to_end" => format!("blocks back late at the controller ({})", load_words(r)),
        "dsp_time" => format!(
            "cycles whose processing overran the period ({})",
            backend_words(r)
        ),
        _ => return None,
    })
}

fn deadlines(r: &RunData) -> Vec<DeadlineAnswer> {
    // The net host run keeps its controller's view too; the host's answer is the one.
    let host_side = r.record.probe == &NET && r.main_metric() == Some("response_time");
    r.measurements
        .iter()
        .filter(|m| !(host_side && m.metric == "end_to_end"))
        .filter_map(|m| {
            let what = deadline_words(r, &m.metric)?;
            let deadline_ns = m.deadline?;
            Some(DeadlineAnswer {
                run_ids: vec![r.record.id],
                what,
                deadline_min_ns: deadline_ns,
                deadline_max_ns: deadline_ns,
                misses: m.misses?,
                count: m.count(),
            })
        })
        .filter(|d| d.count > 0)
        .collect()
}

/// A jitter run's configuration as its record (empty when not stored, or another
/// probe's).
pub(crate) fn jitter_config(r: &RunData) -> JitterConfigRecord {
    JitterConfigRecord::from_json(&r.record.config).unwrap_or_default()
}
