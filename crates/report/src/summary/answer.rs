//! The answer computed from a report's stored runs ([`answer`]).

use results::probe_kind::{JITTER, NET};
use results::records::why::WhyPart;
use results::records::Record;

use crate::data::{ReportData, RunData};
use crate::view::why as why_view;

use super::buffers::backends;
use super::model::{Answer, DeadlineAnswer, WakeupAnswer, WhyAnswer};
use super::verdicts::{merged, variant};
use super::words::{
    backend_words, fmt_rate, is_virtual, jitter_condition, jitter_config, load_words,
};

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
    a.verdicts = merged(
        data.cells
            .iter()
            .filter_map(|c| super::verdicts::of(c.run.as_ref()?, &variant(c)))
            .collect(),
    );
    for r in &runs {
        if let Some(w) = wakeup(r) {
            a.wakeups.push(w);
        }
        if let Some(w) = why(r) {
            a.whys.push(w);
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
    a.caveats = super::caveats::of(&runs, data.doctor.as_deref());
    a.not_run = data
        .cells
        .iter()
        .filter(|c| c.run.is_none())
        .filter_map(|c| c.error.as_ref().map(|e| format!("{}: {e}", c.key)))
        .collect();
    a
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

/// Why a run's misses were late, when it asked (any probe whose result has `why`).
fn why(r: &RunData) -> Option<WhyAnswer> {
    let w = WhyPart::from_json(&r.record.result)?.why?;
    let what = why_view::what_missed_by(r.record.probe, jitter_config(r).has_fragments());
    let (shown, more) = why_view::shown_culprits(&w);
    Some(WhyAnswer {
        run_id: r.record.id,
        condition: jitter_condition(r),
        line: why_view::summary_line(&w, what),
        sentence: why_view::culprit_sentence(&w, what),
        culprits: shown.iter().map(|c| why_view::culprit_row(c, &w)).collect(),
        more,
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
