//! The answer as the report's first section and as the terminal's last lines: the same
//! sentences in both.

use std::fmt::Write as _;

use super::answer::answer;
use super::model::{Answer, BackendAnswer, Buffer, DeadlineAnswer, Mark, WakeupAnswer, WhyAnswer};
use super::words::{fmt_rate, run_ref, runs_ref};
use crate::data::ReportData;
use crate::units::{fmt_count, fmt_ns};
use crate::words::{escape, escape_code};

/// What the summary says when no run measured anything it reads.
const NOTHING: &str = "nothing was measured here: no jitter, event, round-trip or network-audio run completed in what this report covers";

/// `JACK (jackd -d dummy), idle: 64/128 frames (2.67 ms buffer at 48 kHz) held, event
/// latency 7.29 ms, round trip 2.90 ms; 32/64 frames did not hold (3 under-runs)`.
fn backend_line(b: &BackendAnswer) -> String {
    let mut out = match &b.source {
        Some(source) => format!("{source}: {}, {}: ", b.backend, b.load),
        None => format!("{}, {}: ", b.backend, b.load),
    };
    let at_least = |clamped: bool| if clamped { ">=" } else { "" };
    match b.smallest_held {
        Some(h) => {
            let what = if h.buffer_frames.is_some() {
                "buffer"
            } else {
                "period"
            };
            let _ = write!(
                out,
                "{} frames ({} {what} at {}) held",
                h.frames_words(),
                fmt_ns(h.buffer_ns()),
                fmt_rate(h.rate_hz)
            );
            let (held, runs) = b.runs_held_at_smallest;
            if held < runs {
                let _ = write!(out, " in {held} of {runs} runs");
            }
            if let Some(ns) = b.event_latency_ns {
                let c = at_least(b.event_latency_clamped);
                let _ = write!(out, ", event latency {c}{}", fmt_ns(ns));
            }
            if let Some(ns) = b.roundtrip_ns {
                let c = at_least(b.roundtrip_clamped);
                let _ = write!(out, ", round trip {c}{}", fmt_ns(ns));
            }
        }
        None if b.failed_below.is_none() => out.push_str("no run finished to judge a buffer"),
        None => out.push_str("no buffer tried held"),
    }
    match &b.failed_below {
        Some(f) => {
            let _ = write!(out, "; {} frames did not hold", f.buffer.frames_words());
            let mut why: Vec<String> = Vec::new();
            if let Some(n) = f.underruns.filter(|n| *n > 0) {
                why.push(format!("{} under-runs", fmt_count(n)));
            }
            if let Some(n) = f.skipped_cycles.filter(|n| *n > 0) {
                why.push(format!("{} skipped cycles", fmt_count(n)));
            }
            if !why.is_empty() {
                let _ = write!(out, " ({})", why.join(", "));
            }
        }
        None if b.smallest_held.is_some() => {
            let tried: Vec<String> = b.tried.iter().map(|f| f.frames_words()).collect();
            let _ = write!(
                out,
                "; nothing with a shorter buffer was tried (tried: {} frames)",
                tried.join(", ")
            );
        }
        None => {}
    }
    let list = |v: &[Buffer]| {
        v.iter()
            .map(|b| b.frames_words())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !b.not_finished.is_empty() {
        let _ = write!(out, "; not finished at {} frames", list(&b.not_finished));
    }
    if !b.failed_runs.is_empty() {
        let _ = write!(out, "; failed at {} frames", list(&b.failed_runs));
    }
    out
}

/// `fragment under-runs (3x32 frames at 44.1 kHz, idle): 0 of 13 782 missed 1.45 ms
/// (run 3)`.
fn deadline_line(d: &DeadlineAnswer) -> String {
    let deadline = if d.deadline_max_ns > d.deadline_min_ns {
        format!(
            "{} to {}",
            fmt_ns(d.deadline_min_ns),
            fmt_ns(d.deadline_max_ns)
        )
    } else {
        fmt_ns(d.deadline_min_ns)
    };
    format!(
        "{}: {} of {} missed {deadline} ({})",
        d.what,
        fmt_count(d.misses),
        fmt_count(d.count),
        runs_ref(&d.run_ids)
    )
}

fn deadline_mark(d: &DeadlineAnswer) -> Mark {
    if d.misses == 0 {
        Mark::Ok
    } else {
        Mark::Fail
    }
}

/// The machines, one line each, doctor's tally after the last.
fn machine_lines(a: &Answer) -> Vec<String> {
    let mut out = a.machines.clone();
    if let Some(d) = &a.doctor {
        match out.last_mut() {
            Some(m) if a.machines.len() == 1 => m.push_str(&format!("; doctor: {d}")),
            _ => out.push(format!("doctor: {d}")),
        }
    }
    out
}

/// The heading of the causes' part, in the HTML and the terminal alike.
const WHY_HEADING: &str = "Why deadlines were missed (`audiolat jitter --why`)";

/// `run 3, idle: 12 late wake-ups later than 100 us explained from ...`.
fn why_line(w: &WhyAnswer) -> String {
    format!("{}, {}: {}", runs_ref(&[w.run_id]), w.condition, w.line)
}

/// A run's causes as HTML: its line, the largest culprit in a sentence, and the
/// culprits' table (names, which the kernel gives, as code).
fn why_html(w: &WhyAnswer, out: &mut String) {
    let _ = writeln!(out, "<p class=\"why\">{}</p>", escape(&why_line(w)));
    if let Some(s) = &w.sentence {
        let _ = writeln!(out, "<p class=\"why-culprit\">{}</p>", escape(s));
    }
    if w.culprits.is_empty() {
        return;
    }
    out.push_str("<div class=\"table-wrap\"><table class=\"why\"><thead><tr><th class=\"label\">culprit</th><th class=\"label\">kind</th><th>total</th><th>misses</th></tr></thead><tbody>\n");
    for [name, kind, total, misses] in &w.culprits {
        let _ = writeln!(
            out,
            "<tr><td class=\"label wrap\"><code>{}</code></td><td class=\"label\">{}</td><td class=\"nowrap\">{}</td><td class=\"nowrap\">{}</td></tr>",
            escape(name),
            escape(kind),
            escape(total),
            escape(misses)
        );
    }
    if w.more > 0 {
        let _ = writeln!(
            out,
            "<tr><td class=\"label\" colspan=\"4\">and {} more</td></tr>",
            w.more
        );
    }
    out.push_str("</tbody></table></div>\n");
}

/// A wake-up percentile as printed: `>=` before a histogram's bound.
fn wakeup_p(w: &WakeupAnswer, v: f64) -> String {
    if w.clamped_at.is_some_and(|b| v >= b) {
        format!(">={}", fmt_ns(v))
    } else {
        fmt_ns(v)
    }
}

/// The report's first section: `<section id="summary" class="summary">`, with the
/// verdicts (`<ul class="verdicts">`, each `<li>` classed `ok`, `warn` or `fail`), the
/// smallest buffer per backend, the wake-up latencies, the deadlines and the caveats
/// (`<ul class="caveats">`). No inline styles; every number in chosen units.
pub fn html(data: &ReportData) -> String {
    let a = answer(data);
    let mut out = String::from("<section id=\"summary\" class=\"summary\">\n<h2>The answer</h2>\n");
    for m in machine_lines(&a) {
        let _ = writeln!(out, "<p class=\"machine\">{}</p>", escape(&m));
    }
    if !a.measured_anything() {
        let _ = writeln!(out, "<p class=\"nothing\">{}</p>", escape(NOTHING));
    }
    if !a.verdicts.is_empty() {
        out.push_str("<ul class=\"verdicts\">\n");
        for v in &a.verdicts {
            let _ = writeln!(
                out,
                "<li class=\"{}\">{} <span class=\"run\">({})</span></li>",
                v.mark.class(),
                escape(&v.text),
                runs_ref(&v.run_ids)
            );
        }
        out.push_str("</ul>\n");
    }
    if !a.backends.is_empty() {
        out.push_str("<h3>The smallest buffer that held</h3>\n<ul class=\"backends\">\n");
        for b in &a.backends {
            let (held, runs) = b.runs_held_at_smallest;
            let mark = match b.smallest_held {
                None if b.failed_below.is_none() => Mark::Warn,
                None => Mark::Fail,
                Some(_) if held < runs => Mark::Warn,
                Some(_) => Mark::Ok,
            };
            let _ = writeln!(
                out,
                "<li class=\"{}\">{}</li>",
                mark.class(),
                escape(&backend_line(b))
            );
        }
        out.push_str("</ul>\n");
    }
    if !a.wakeups.is_empty() {
        out.push_str("<h3>Wake-up latency</h3>\n<table class=\"wakeup\"><thead><tr><th>run</th><th class=\"label\">condition</th><th>p99</th><th>p99.9</th><th>max</th></tr></thead><tbody>\n");
        for w in &a.wakeups {
            let over = w.period_ns.is_some_and(|p| w.max_ns > p);
            let class = |warn: bool| if warn { "warn" } else { "ok" };
            let clamped = |v: f64| w.clamped_at.is_some_and(|b| v >= b);
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td class=\"label\">{}</td><td class=\"{}\">{}</td><td class=\"{}\">{}</td><td class=\"{}\">{}</td></tr>",
                run_ref(w.run_id),
                escape(&w.condition),
                class(clamped(w.p99_ns)),
                escape(&wakeup_p(w, w.p99_ns)),
                class(clamped(w.p999_ns)),
                escape(&wakeup_p(w, w.p999_ns)),
                class(over),
                fmt_ns(w.max_ns)
            );
        }
        out.push_str("</tbody></table>\n");
    }
    if !a.deadlines.is_empty() {
        out.push_str("<h3>Deadlines</h3>\n<ul class=\"deadlines\">\n");
        for d in &a.deadlines {
            let _ = writeln!(
                out,
                "<li class=\"{}\">{}</li>",
                deadline_mark(d).class(),
                escape(&deadline_line(d))
            );
        }
        out.push_str("</ul>\n");
    }
    if !a.whys.is_empty() {
        let _ = writeln!(out, "<h3 id=\"why\">{}</h3>", escape_code(WHY_HEADING));
        for w in &a.whys {
            why_html(w, &mut out);
        }
    }
    if !a.caveats.is_empty() {
        out.push_str("<h3>What to know</h3>\n<ul class=\"caveats\">\n");
        for c in &a.caveats {
            let _ = writeln!(out, "<li>{}</li>", escape(c));
        }
        out.push_str("</ul>\n");
    }
    if !a.not_run.is_empty() {
        out.push_str("<h3>Not run here</h3>\n<ul class=\"not-run\">\n");
        for n in &a.not_run {
            let _ = writeln!(out, "<li>{}</li>", escape(n));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
    out
}

fn mark_word(m: Mark) -> &'static str {
    match m {
        Mark::Ok => "ok  ",
        Mark::Warn => "WARN",
        Mark::Fail => "FAIL",
    }
}

/// The same answer for the terminal: printed at the end of `audiolat suite` and
/// `audiolat run`.
pub fn text(data: &ReportData) -> String {
    let a = answer(data);
    let mut out = String::from("\nThe answer");
    match machine_lines(&a).as_slice() {
        [] => out.push('\n'),
        [m] => {
            let _ = writeln!(out, " ({m})");
        }
        many => {
            out.push('\n');
            for m in many {
                let _ = writeln!(out, "  machine: {m}");
            }
        }
    }
    if !a.measured_anything() {
        let _ = writeln!(out, "  {NOTHING}");
    }
    for v in &a.verdicts {
        let _ = writeln!(
            out,
            "  {} {} ({})",
            mark_word(v.mark),
            v.text,
            runs_ref(&v.run_ids)
        );
    }
    if !a.backends.is_empty() {
        out.push_str("smallest buffer that held:\n");
        for b in &a.backends {
            let _ = writeln!(out, "  {}", backend_line(b));
        }
    }
    if !a.wakeups.is_empty() {
        out.push_str("wake-up latency:\n");
        let mut t = crate::terminal::Table::new(&["  run", "condition", "p99", "p99.9", "max"])
            .left_align(&[1]);
        for w in &a.wakeups {
            t.row(vec![
                format!("  {}", run_ref(w.run_id)),
                w.condition.clone(),
                wakeup_p(w, w.p99_ns),
                wakeup_p(w, w.p999_ns),
                fmt_ns(w.max_ns),
            ]);
        }
        out.push_str(&t.render());
    }
    if !a.deadlines.is_empty() {
        out.push_str("deadlines:\n");
        for d in &a.deadlines {
            let _ = writeln!(
                out,
                "  {} {}",
                mark_word(deadline_mark(d)),
                deadline_line(d)
            );
        }
    }
    if !a.whys.is_empty() {
        let _ = writeln!(out, "{}:", WHY_HEADING.to_lowercase());
        for w in &a.whys {
            let _ = writeln!(out, "  {}", why_line(w));
            if let Some(s) = &w.sentence {
                let _ = writeln!(out, "    {s}");
            }
        }
    }
    if !a.caveats.is_empty() {
        out.push_str("what to know:\n");
        for c in &a.caveats {
            let _ = writeln!(out, "  - {c}");
        }
    }
    for n in &a.not_run {
        let _ = writeln!(out, "  not run here: {n}");
    }
    out
}
