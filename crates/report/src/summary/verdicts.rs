//! One verdict line per run of a measuring probe: did it hold, and what it gives.

use results::counts::NetBlocks;
use results::probe_kind::{EVENT, JITTER, NET, ROUNDTRIP};
use results::records::net::NetResultRecord;
use results::records::{JitterResultRecord, Record};
use results::ProbeKind;
use results::RunStatus;

use super::buffers::{buffer_of, skipped_of, underruns_of};
use super::buffers::{delay_stepped, lost_loop, outcome, Outcome};
use super::model::{Mark, VerdictLine};
use super::words::{fmt_p, fmt_rate, jitter_condition, jitter_config, load_words, short_backend};
use crate::audio::AudioResult;
use crate::data::{CellData, RunData};
use crate::units::{fmt_count, fmt_ns};

/// One run's verdict, before runs with the same one are merged: `head` is the verdict
/// without its numbers (`holds 64-frame periods at 48 kHz idle on JACK`), `value` the
/// number it gives, named (`round trip`, ns).
pub(super) struct Judged {
    line: VerdictLine,
    probe: &'static ProbeKind,
    head: String,
    /// The sentence after the head (a failure's reason).
    reason: String,
    value: Option<(&'static str, f64)>,
    /// The plan axes (and profile, source) of its cell, `name` -> value.
    variant: Vec<(String, String)>,
}

/// A cell's plan variant: its axes but the repeat, its profile, its source.
pub(super) fn variant(c: &CellData) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = c
        .axes
        .iter()
        .filter(|(k, _)| k.as_str() != "repeat")
        .map(|(k, x)| (k.clone(), x.clone()))
        .collect();
    if !c.profile.is_empty() {
        v.push(("profile".into(), c.profile.clone()));
    }
    if let Some(s) = &c.source {
        v.push(("source".into(), s.clone()));
    }
    v
}

/// A verdict as a probe says it: its mark, its sentence, and the number it gives,
/// named.
type Said = (Mark, String, Option<(&'static str, f64)>);

/// What a run of a probe the summary has no verdict for measured (its headline's median
/// and p99), said as measured and not judged: a warning, never a pass.
fn measured(r: &RunData) -> Option<Said> {
    let m = r.headline()?;
    let s = m.summary?;
    let name = crate::words::metric_name(&m.metric);
    Some((
        Mark::Warn,
        format!(
            "{} measured, not judged: {name} {} median, p99 {} (audiolat has no verdict for this probe)",
            r.record.probe,
            fmt_p(&s, s.p50),
            fmt_p(&s, s.p99)
        ),
        Some(("median", s.p50)),
    ))
}

/// The run's verdict (`None`: a probe the summary does not judge, e.g. doctor).
pub(super) fn of(r: &RunData, variant: &[(String, String)]) -> Option<Judged> {
    let probe = r.record.probe;
    let (mark, text, value) = if !probe.measures {
        return None;
    } else if r.record.status == RunStatus::Failed {
        (
            Mark::Fail,
            format!(
                "{probe} did not measure: {}",
                r.record.error.as_deref().unwrap_or("no reason stored")
            ),
            None,
        )
    } else if probe == &JITTER {
        jitter(r)?
    } else if probe == &EVENT || probe == &ROUNDTRIP {
        audio(r)?
    } else if probe == &NET {
        net(r)?
    } else {
        measured(r)?
    };
    let (head, reason) = match text.split_once(": ") {
        Some((h, rest)) => (h.to_string(), rest.to_string()),
        None => (text.clone(), String::new()),
    };
    Some(Judged {
        reason,
        variant: variant.to_vec(),
        line: VerdictLine {
            run_ids: vec![r.record.id],
            mark,
            text,
        },
        probe: r.record.probe,
        head,
        value,
    })
}

/// The verdicts, those of runs of a probe with the same head and mark said once, in the
/// order first given: `holds 64-frame periods at 48 kHz idle on JACK in 5 runs
/// (workload: fm, sine): round trip 2.65 ms to 2.70 ms`, naming the plan axes whose
/// values vary among them. Failures and warnings said together keep each reason, with its runs.
pub(super) fn merged(judged: Vec<Judged>) -> Vec<VerdictLine> {
    let mut groups: Vec<Vec<Judged>> = Vec::new();
    for j in judged {
        match groups
            .iter_mut()
            .find(|g| g[0].probe == j.probe && g[0].head == j.head && g[0].line.mark == j.line.mark)
        {
            Some(g) => g.push(j),
            None => groups.push(vec![j]),
        }
    }
    groups
        .into_iter()
        .map(|mut g| {
            if g.len() == 1 {
                return g.remove(0).line;
            }
            let mut text = format!("{} in {} runs{}", g[0].head, g.len(), varying(&g));
            if g[0].line.mark != Mark::Ok {
                text.push_str(&format!(": {}", reasons(&g)));
            } else if let Some(range) = value_range(&g) {
                text.push_str(&format!(": {range}"));
            }
            VerdictLine {
                run_ids: g.iter().flat_map(|j| j.line.run_ids.clone()).collect(),
                mark: g[0].line.mark,
                text,
            }
        })
        .collect()
}

/// ` (workload: fm, sine; profile: debug, release)`: the axes whose values differ
/// among `g`, each value once in order first given; empty when none does.
fn varying(g: &[Judged]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for (k, _) in g.iter().flat_map(|j| &j.variant) {
        if !names.contains(&k.as_str()) {
            names.push(k);
        }
    }
    let parts: Vec<String> = names
        .into_iter()
        .filter_map(|name| {
            let mut values: Vec<&str> = Vec::new();
            for j in g {
                let v = j
                    .variant
                    .iter()
                    .find(|(k, _)| k == name)
                    .map_or("-", |(_, v)| v.as_str());
                if !values.contains(&v) {
                    values.push(v);
                }
            }
            (values.len() > 1).then(|| format!("{name}: {}", values.join(", ")))
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join("; "))
    }
}

/// Each distinct reason of failures said together, with its runs: `3 under-runs in
/// 10.00 s (run 7); no loop found (runs 9, 10)`.
fn reasons(g: &[Judged]) -> String {
    let mut said: Vec<(&str, Vec<results::RunId>)> = Vec::new();
    for j in g {
        match said.iter_mut().find(|(r, _)| *r == j.reason) {
            Some((_, ids)) => ids.extend(j.line.run_ids.iter().copied()),
            None => said.push((&j.reason, j.line.run_ids.clone())),
        }
    }
    said.iter()
        .map(|(r, ids)| format!("{r} ({})", super::words::runs_ref(ids)))
        .collect::<Vec<_>>()
        .join("; ")
}

/// `round trip 2.65 ms to 2.70 ms`: the range of the value every run of `g` gives,
/// when they all give the same one.
fn value_range(g: &[Judged]) -> Option<String> {
    let values: Vec<(&str, f64)> = g.iter().map(|j| j.value).collect::<Option<_>>()?;
    if !values.iter().all(|x| x.0 == values[0].0) {
        return None;
    }
    let lo = values.iter().map(|v| v.1).fold(f64::INFINITY, f64::min);
    let hi = values.iter().map(|v| v.1).fold(f64::NEG_INFINITY, f64::max);
    let range = if fmt_ns(lo) == fmt_ns(hi) {
        fmt_ns(lo)
    } else {
        format!("{} to {}", fmt_ns(lo), fmt_ns(hi))
    };
    Some(format!("{} {range}", values[0].0))
}

/// `in 9.76 s`, when the run's length is stored.
fn in_time(r: &RunData) -> String {
    let run_ns = if r.record.probe == &JITTER {
        JitterResultRecord::from_json(&r.record.result).and_then(|j| j.run_ns)
    } else {
        AudioResult::of(r.record.probe, &r.record.result).and_then(|a| a.run_ns())
    };
    run_ns
        .map(|ns| ns as f64)
        .or_else(|| r.record.duration_s.map(|s| s * 1e9))
        .map_or(String::new(), |ns| format!(" in {}", fmt_ns(ns)))
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", fmt_count(n), if n == 1 { one } else { many })
}

fn jitter(r: &RunData) -> Option<Said> {
    let cfg = jitter_config(r);
    let cond = jitter_condition(r);
    let f = cfg.fragments.unwrap_or_default();
    if let (Some(n), Some(frames), Some(rate)) = (f.fragments, f.frames, f.sample_rate) {
        let what = format!("{n}x{frames}-frame fragments at {}", fmt_rate(rate as f64));
        let m = r.measurement("fragment_completion")?;
        let s = m.summary?;
        let misses = m.misses?;
        let complete = r.record.status == RunStatus::Complete;
        return Some(if misses == 0 && complete {
            let room = m
                .deadline
                .map_or(String::new(), |d| format!(" of the {} it had", fmt_ns(d)));
            (
                Mark::Ok,
                format!(
                    "holds {what} {cond}: worst fragment done {}{room}",
                    fmt_ns(s.max)
                ),
                Some(("worst fragment done", s.max)),
            )
        } else {
            (
                Mark::Fail,
                format!(
                    "{what} did not hold {cond}: {}{}",
                    plural(misses, "under-run", "under-runs"),
                    in_time(r)
                ),
                None,
            )
        });
    }
    let s = r.measurement("wakeup_latency")?.summary?;
    let period = cfg.period_ns.map(|p| p as f64);
    let timer = cfg
        .rate_hz
        .map_or(String::new(), |hz| format!(", {hz:.0} Hz timer"));
    let mut text = format!(
        "wakes up {cond}{timer}: p99 {}, p99.9 {}, max {}",
        fmt_p(&s, s.p99),
        fmt_p(&s, s.p999),
        fmt_ns(s.max)
    );
    let clamped = s.is_clamped(s.p99) || s.is_clamped(s.p999);
    if clamped {
        text.push_str(", percentiles past the histogram's bound");
    }
    let over = period.filter(|p| s.max > *p);
    if let Some(p) = over {
        text.push_str(&format!(", the max over one {} period", fmt_ns(p)));
        let skipped = JitterResultRecord::from_json(&r.record.result)
            .and_then(|j| j.skipped_deadlines)
            .filter(|k| *k > 0);
        if let Some(k) = skipped {
            text.push_str(&format!(
                " ({} skipped)",
                plural(k, "deadline", "deadlines")
            ));
        }
    }
    let mark = if over.is_some() || clamped {
        Mark::Warn
    } else {
        Mark::Ok
    };
    Some((mark, text, Some(("max", s.max))))
}

fn audio(r: &RunData) -> Option<Said> {
    let b = buffer_of(r)?;
    let buffer = b
        .buffer_frames
        .filter(|f| *f != 2 * b.period_frames)
        .map_or(String::new(), |f| format!(" ({f}-frame buffer)"));
    let setting = format!(
        "{}-frame periods{buffer} at {}",
        b.period_frames,
        fmt_rate(b.rate_hz)
    );
    let on = format!("{} on {}", load_words(r), short_backend(r));
    let res = AudioResult::of(r.record.probe, &r.record.result)?;
    match outcome(r) {
        Outcome::Held => {
            let metric = if r.record.probe == &EVENT {
                "event_latency"
            } else {
                "roundtrip"
            };
            let s = r.measurement(metric)?.summary?;
            let (what, value) = if r.record.probe == &EVENT {
                let what = format!(
                    "{} event latency (median; p99 {})",
                    fmt_p(&s, s.p50),
                    fmt_p(&s, s.p99)
                );
                (what, ("event latency (median)", s.p50))
            } else {
                (
                    format!("{} round trip", fmt_p(&s, s.p50)),
                    ("round trip", s.p50),
                )
            };
            let text = format!("holds {setting} {on}: {what}");
            if s.is_clamped(s.p50) || s.is_clamped(s.p99) {
                let text = format!("{text}, past the histogram's bound");
                return Some((Mark::Warn, text, None));
            }
            Some((Mark::Ok, text, Some(value)))
        }
        Outcome::NotHeld => {
            let mut why: Vec<String> = Vec::new();
            if let Some(n) = underruns_of(r).filter(|n| *n > 0) {
                why.push(plural(n, "under-run", "under-runs"));
            }
            if let Some(n) = skipped_of(r).filter(|n| *n > 0) {
                why.push(plural(n, "skipped cycle", "skipped cycles"));
            }
            let why = if !why.is_empty() {
                format!("{}{}", why.join(", "), in_time(r))
            } else if !lost_loop(r) {
                "its under-runs were not counted".to_string()
            } else if res.roundtrip().is_some_and(delay_stepped) {
                "the loop's delay stepped (a dropout nobody reported)".to_string()
            } else {
                "no loop found".to_string()
            };
            Some((
                Mark::Fail,
                format!("{setting} did not hold {on}: {why}"),
                None,
            ))
        }
        Outcome::NotFinished => Some((
            Mark::Warn,
            format!(
                "{setting} not finished {on}: stopped{}, so it judges nothing",
                in_time(r).replacen(" in ", " after ", 1)
            ),
            None,
        )),
        Outcome::Failed => Some((
            Mark::Fail,
            format!(
                "{setting} did not run to its end {on}: {}",
                res.end()
                    .or(r.record.error.as_deref())
                    .unwrap_or(r.record.status.as_str())
            ),
            None,
        )),
    }
}

fn net(r: &RunData) -> Option<Said> {
    let m = r.headline()?;
    let s = m.summary?;
    let deadline = m.deadline?;
    let misses = m.misses?;
    let unanswered = NetResultRecord::from_json(&r.record.result)
        .and_then(|result| result.synth)
        .and_then(|synth| NetBlocks::of(&synth).controller.unanswered_in_run())
        .unwrap_or(0);
    let mut text = format!(
        "network audio {}: {} of {} blocks missed the {} deadline",
        load_words(r),
        fmt_count(misses),
        fmt_count(s.count),
        fmt_ns(deadline)
    );
    if unanswered > 0 {
        text.push_str(&format!(
            ", {} without an answer by the run's end",
            fmt_count(unanswered)
        ));
    }
    text.push_str(&format!("; p99 response {}", fmt_p(&s, s.p99)));
    let mark = if misses > 0 || unanswered > 0 {
        Mark::Fail
    } else if s.is_clamped(s.p99) {
        Mark::Warn
    } else {
        Mark::Ok
    };
    Some((mark, text, Some(("p99 response", s.p99))))
}
