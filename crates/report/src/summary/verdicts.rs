//! One verdict line per run of a measuring probe: did it hold, and what it gives.

use results::RunStatus;

use super::{
    as_count, buffer_of, fmt_rate, held, jitter_condition, load_words, short_backend, underruns_of,
    Mark, VerdictLine,
};
use crate::data::RunData;
use crate::units::{fmt_count, fmt_ns};

/// One run's verdict, before runs with the same one are merged: `head` is the verdict
/// without its numbers (`holds 64-frame periods at 48 kHz idle on JACK`), `value` the
/// number it gives, named (`round trip`, ns).
pub(super) struct Judged {
    line: VerdictLine,
    probe: String,
    head: String,
    value: Option<(&'static str, f64)>,
}

/// A verdict as a probe says it: its mark, its sentence, and the number it gives,
/// named.
type Said = (Mark, String, Option<(&'static str, f64)>);

/// The run's verdict (`None`: a probe the summary does not judge, e.g. doctor).
pub(super) fn of(r: &RunData) -> Option<Judged> {
    let (mark, text, value) = match r.record.probe.as_str() {
        "jitter" | "event" | "roundtrip" | "net" if r.record.status == RunStatus::Failed => (
            Mark::Fail,
            format!(
                "{} did not measure: {}",
                r.record.probe,
                r.record.error.as_deref().unwrap_or("no reason stored")
            ),
            None,
        ),
        "jitter" => jitter(r)?,
        "event" | "roundtrip" => audio(r)?,
        "net" => net(r)?,
        _ => return None,
    };
    let head = text.split(": ").next().unwrap_or_default().to_string();
    Some(Judged {
        line: VerdictLine {
            run_ids: vec![r.record.id],
            mark,
            text,
        },
        probe: r.record.probe.clone(),
        head,
        value,
    })
}

/// The verdicts, those of runs of a probe with the same head and mark said once, in the order
/// first given: `holds 64-frame periods at 48 kHz idle on JACK in 5 runs: round trip
/// 2.65 ms to 2.70 ms`.
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
            let mut text = format!("{} in {} runs", g[0].head, g.len());
            let values: Option<Vec<(&str, f64)>> = g.iter().map(|j| j.value).collect();
            if let Some(values) = values.filter(|v| v.iter().all(|x| x.0 == v[0].0)) {
                let lo = values.iter().map(|v| v.1).fold(f64::INFINITY, f64::min);
                let hi = values.iter().map(|v| v.1).fold(f64::NEG_INFINITY, f64::max);
                let range = if fmt_ns(lo) == fmt_ns(hi) {
                    fmt_ns(lo)
                } else {
                    format!("{} to {}", fmt_ns(lo), fmt_ns(hi))
                };
                text.push_str(&format!(": {} {range}", values[0].0));
            }
            VerdictLine {
                run_ids: g.iter().flat_map(|j| j.line.run_ids.clone()).collect(),
                mark: g[0].line.mark,
                text,
            }
        })
        .collect()
}

/// `in 9.76 s`, when the run's length is stored.
fn in_time(r: &RunData) -> String {
    r.record.result["run_ns"]
        .as_f64()
        .or_else(|| r.record.duration_s.map(|s| s * 1e9))
        .map_or(String::new(), |ns| format!(" in {}", fmt_ns(ns)))
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", fmt_count(n), if n == 1 { one } else { many })
}

fn jitter(r: &RunData) -> Option<Said> {
    let cfg = &r.record.config;
    let cond = jitter_condition(r);
    let f = &cfg["fragments"];
    if let (Some(n), Some(frames), Some(rate)) = (
        f["fragments"].as_u64(),
        f["frames"].as_u64(),
        f["sample_rate"].as_f64(),
    ) {
        let what = format!("{n}x{frames}-frame fragments at {}", fmt_rate(rate));
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
    let period = cfg["period_ns"].as_f64();
    let timer = cfg["rate_hz"]
        .as_f64()
        .map_or(String::new(), |hz| format!(", {hz:.0} Hz timer"));
    let mut text = format!(
        "wakes up {cond}{timer}: p99 {}, p99.9 {}, max {}",
        fmt_ns(s.p99),
        fmt_ns(s.p999),
        fmt_ns(s.max)
    );
    let over = period.filter(|p| s.max > *p);
    if let Some(p) = over {
        text.push_str(&format!(", the max over one {} period", fmt_ns(p)));
        if let Some(k) = as_count(&r.record.result["skipped_deadlines"]).filter(|k| *k > 0) {
            text.push_str(&format!(
                " ({} skipped)",
                plural(k, "deadline", "deadlines")
            ));
        }
    }
    let mark = if over.is_some() { Mark::Warn } else { Mark::Ok };
    Some((mark, text, Some(("max", s.max))))
}

fn audio(r: &RunData) -> Option<Said> {
    let b = buffer_of(r)?;
    let buffer = as_count(&r.record.result["buffer_frames"])
        .filter(|f| *f != 2 * b.period_frames)
        .map_or(String::new(), |f| format!(" ({f}-frame buffer)"));
    let setting = format!(
        "{}-frame periods{buffer} at {}",
        b.period_frames,
        fmt_rate(b.rate_hz)
    );
    let on = format!("{} on {}", load_words(r), short_backend(r));
    if held(r) {
        let (what, value) = if r.record.probe == "event" {
            let s = r.measurement("event_latency")?.summary?;
            let what = format!(
                "{} event latency (median; p99 {})",
                fmt_ns(s.p50),
                fmt_ns(s.p99)
            );
            (what, ("event latency (median)", s.p50))
        } else {
            let s = r.measurement("roundtrip")?.summary?;
            (
                format!("{} round trip", fmt_ns(s.p50)),
                ("round trip", s.p50),
            )
        };
        let text = format!("holds {setting} {on}: {what}");
        return Some((Mark::Ok, text, Some(value)));
    }
    let res = &r.record.result;
    let why = match underruns_of(r) {
        Some(n) if n > 0 => format!("{}{}", plural(n, "under-run", "under-runs"), in_time(r)),
        _ if res["no_loop"].as_bool() == Some(true) => "no loop found".to_string(),
        _ if res["delay_changes"]
            .as_array()
            .is_some_and(|d| !d.is_empty()) =>
        {
            "the loop's delay stepped (a dropout nobody reported)".to_string()
        }
        _ => format!(
            "the run ended {}",
            res["end"].as_str().unwrap_or(r.record.status.as_str())
        ),
    };
    Some((
        Mark::Fail,
        format!("{setting} did not hold {on}: {why}"),
        None,
    ))
}

fn net(r: &RunData) -> Option<Said> {
    let m = r.headline()?;
    let s = m.summary?;
    let deadline = m.deadline?;
    let misses = m.misses?;
    let lost = as_count(&r.record.result["synth"]["controller"]["lost"]).unwrap_or(0);
    let mut text = format!(
        "network audio {}: {} of {} blocks missed the {} deadline",
        load_words(r),
        fmt_count(misses),
        fmt_count(s.count),
        fmt_ns(deadline)
    );
    if lost > 0 {
        text.push_str(&format!(", {} lost", fmt_count(lost)));
    }
    text.push_str(&format!("; p99 response {}", fmt_ns(s.p99)));
    let mark = if misses == 0 && lost == 0 {
        Mark::Ok
    } else {
        Mark::Fail
    };
    Some((mark, text, Some(("p99 response", s.p99))))
}
