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

mod caveats;
mod render;
mod verdicts;

#[cfg(test)]
mod tests;

use results::{RunId, RunStatus};
use serde_json::Value;

use crate::data::{ReportData, RunData};

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

/// An audio buffer as a backend ran it: its period at its rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Buffer {
    /// Frames per period.
    pub period_frames: u64,
    /// Sample rate, Hz.
    pub rate_hz: f64,
}

impl Buffer {
    /// The period's duration, ns.
    pub fn period_ns(&self) -> f64 {
        self.period_frames as f64 * 1e9 / self.rate_hz
    }
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
    /// The smallest period that held (a run with no under-run), if one did.
    pub smallest_held: Option<Buffer>,
    /// The largest period below `smallest_held` (or any, when none held) that did not
    /// hold, with the most under-runs one of its runs counted.
    pub failed_below: Option<(Buffer, Option<u64>)>,
    /// Of the runs at `smallest_held`'s period, how many held and how many there were
    /// (a noisy machine can hold a setting in one run and not in the next).
    pub runs_held_at_smallest: (usize, usize),
    /// The event latency at `smallest_held` (median of the runs' medians), ns.
    pub event_latency_ns: Option<f64>,
    /// The round trip at `smallest_held` (median of the runs' medians), ns.
    pub roundtrip_ns: Option<f64>,
    /// The periods tried, smallest first.
    pub tried_frames: Vec<u64>,
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
    /// The machine in words (from the first run), `None` without runs.
    pub machine: Option<String>,
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
    let mut a = Answer {
        machine: runs.first().map(|r| machine_words(&r.record.machine)),
        doctor: data.doctor.as_ref().map(|f| doctor_tally(f)),
        ..Answer::default()
    };
    a.verdicts = verdicts::merged(runs.iter().filter_map(|r| verdicts::of(r)).collect());
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
    a.backends = backends(data);
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
    let spec = r.record.config["load"]
        .as_str()
        .or_else(|| r.record.load["spec"].as_str())
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
    let name = r.record.result["backend"]
        .as_str()
        .or_else(|| r.record.config["backend"].as_str())
        .unwrap_or("?");
    match name {
        "jack" => "JACK",
        "alsa" => "ALSA",
        "pipewire" => "PipeWire",
        other => other,
    }
    .to_string()
}

/// The backend an audio run used, in words, with what clocks it when not a card.
pub(crate) fn backend_words(r: &RunData) -> String {
    match caveats::software_clock(r) {
        Some(why) => format!("{} ({why})", short_backend(r)),
        None => short_backend(r),
    }
}

/// An audio run's buffer, when it stored one: on a PipeWire, the quantum and rate its
/// graph was measured to grant (what ran), else the stream's period and rate.
pub(crate) fn buffer_of(r: &RunData) -> Option<Buffer> {
    let res = &r.record.result;
    let cfg = &r.record.config;
    let period_frames = cfg["server"]["quantum_granted_frames"]
        .as_u64()
        .or_else(|| res["period_frames"].as_u64())
        .or_else(|| cfg["period_frames"].as_u64())?;
    let rate_hz = cfg["server"]["rate_granted_hz"]
        .as_f64()
        .or_else(|| res["rate_hz"].as_f64())
        .or_else(|| cfg["rate_hz"].as_f64())
        .filter(|r| *r > 0.0)?;
    Some(Buffer {
        period_frames,
        rate_hz,
    })
}

/// An audio run's under-runs (steady-state xruns and skipped cycles), when it counted.
pub(crate) fn underruns_of(r: &RunData) -> Option<u64> {
    let res = &r.record.result;
    match r.record.probe.as_str() {
        "event" => {
            let u = &res["underruns"];
            Some(u["steady"].as_u64()? + u["skipped_cycles_steady"].as_u64().unwrap_or(0))
        }
        "roundtrip" => Some(res["xruns"].as_u64()? + res["skipped_cycles"].as_u64().unwrap_or(0)),
        _ => None,
    }
}

/// Whether an audio run held its buffer: it completed, counted no under-run, and (a
/// round trip) found its loop with no step in its delay.
pub(crate) fn held(r: &RunData) -> bool {
    let res = &r.record.result;
    let complete = r.record.status == RunStatus::Complete
        && res["end"].as_str().is_none_or(|e| e == "complete");
    let steady_loop = r.record.probe != "roundtrip"
        || (res["no_loop"].as_bool() != Some(true)
            && res["delay_changes"].as_array().is_none_or(|d| d.is_empty())
            && r.measurement("roundtrip").is_some_and(|m| m.count() > 0));
    complete && steady_loop && underruns_of(r) == Some(0)
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

fn backends(data: &ReportData) -> Vec<BackendAnswer> {
    // In a report of several subjects (`report A B`), each subject's runs apart.
    let audio: Vec<(&RunData, Option<&str>)> = data
        .cells
        .iter()
        .filter_map(|c| c.run.as_ref().map(|r| (r, c.source.as_deref())))
        .filter(|(r, _)| matches!(r.record.probe.as_str(), "event" | "roundtrip"))
        .filter(|(r, _)| buffer_of(r).is_some())
        .collect();
    let key = |r: &RunData, source: Option<&str>| {
        (source.map(str::to_string), backend_words(r), load_words(r))
    };
    let mut keys: Vec<(Option<String>, String, String)> = Vec::new();
    for (r, source) in &audio {
        let k = key(r, *source);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|k| {
            let mine: Vec<&RunData> = audio
                .iter()
                .filter(|(r, source)| key(r, *source) == k)
                .map(|(r, _)| *r)
                .collect();
            let (source, backend, load) = k;
            BackendAnswer {
                source,
                ..one_backend(backend, load, &mine)
            }
        })
        .collect()
}

fn one_backend(backend: String, load: String, runs: &[&RunData]) -> BackendAnswer {
    let mut tried_frames: Vec<u64> = runs
        .iter()
        .filter_map(|r| buffer_of(r).map(|b| b.period_frames))
        .collect();
    tried_frames.sort_unstable();
    tried_frames.dedup();
    let smallest_held = runs
        .iter()
        .filter(|r| held(r))
        .filter_map(|r| buffer_of(r))
        .min_by_key(|b| b.period_frames);
    let failed: Vec<(Buffer, Option<u64>)> = runs
        .iter()
        .filter(|r| !held(r))
        .filter_map(|r| buffer_of(r).map(|b| (b, underruns_of(r))))
        .filter(|(b, _)| smallest_held.is_none_or(|h| b.period_frames < h.period_frames))
        .collect();
    // The largest that failed, with the most under-runs any of its runs counted.
    let failed_below = failed
        .iter()
        .map(|(b, _)| b.period_frames)
        .max()
        .and_then(|frames| {
            let at: Vec<&(Buffer, Option<u64>)> = failed
                .iter()
                .filter(|(b, _)| b.period_frames == frames)
                .collect();
            let most = at.iter().filter_map(|(_, n)| *n).max();
            at.first().map(|(b, _)| (*b, most))
        });
    let at_held = |metric: &str| {
        let h = smallest_held?;
        median(
            runs.iter()
                .filter(|r| {
                    held(r) && buffer_of(r).map(|b| b.period_frames) == Some(h.period_frames)
                })
                .filter_map(|r| median_ns(r, metric))
                .collect(),
        )
    };
    let at_smallest: Vec<&&RunData> = runs
        .iter()
        .filter(|r| {
            smallest_held.is_some()
                && buffer_of(r).map(|b| b.period_frames) == smallest_held.map(|h| h.period_frames)
        })
        .collect();
    BackendAnswer {
        source: None,
        runs_held_at_smallest: (
            at_smallest.iter().filter(|r| held(r)).count(),
            at_smallest.len(),
        ),
        event_latency_ns: at_held("event_latency"),
        roundtrip_ns: at_held("roundtrip"),
        backend,
        load,
        smallest_held,
        failed_below,
        tried_frames,
    }
}

/// The condition a jitter run ran under, in words.
pub(crate) fn jitter_condition(r: &RunData) -> String {
    let mut c = load_words(r);
    if let Some(b) = r.record.config["busy_percent"]
        .as_f64()
        .filter(|b| *b > 0.0)
    {
        c.push_str(&format!(", {b:.0} % of each period busy"));
    }
    c
}

fn wakeup(r: &RunData) -> Option<WakeupAnswer> {
    if r.record.probe != "jitter" {
        return None;
    }
    let m = r.measurement("wakeup_latency")?;
    let s = m.summary?;
    Some(WakeupAnswer {
        run_id: r.record.id,
        condition: jitter_condition(r),
        period_ns: r.record.config["period_ns"].as_f64(),
        count: s.count,
        p99_ns: s.p99,
        p999_ns: s.p999,
        max_ns: s.max,
    })
}

/// What missing a metric's deadline means, in words (`None`: not reported on top).
fn deadline_words(r: &RunData, metric: &str) -> Option<String> {
    let cfg = &r.record.config;
    Some(match metric {
        "fragment_completion" => {
            let f = &cfg["fragments"];
            format!(
                "fragment under-runs ({}x{} frames at {}, {})",
                f["fragments"],
                f["frames"],
                f["sample_rate"].as_f64().map_or("?".into(), fmt_rate),
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
    let host_side = r.record.probe == "net" && r.main_metric() == Some("response_time");
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

/// A JSON number as u64, also when stored as a float.
pub(crate) fn as_count(v: &Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
}
