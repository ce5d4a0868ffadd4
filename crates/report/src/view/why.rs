//! Why a run's deadlines were missed (`--why`): the culprits over the run and the
//! worst misses, each with its breakdown, from the run's [`WhyRecord`]. Every probe's
//! view prints it the same way.

use std::fmt::Write as _;

use results::records::why::{CauseRecord, MissRecord, WhyRecord};

use crate::terminal::fmt_ns;

/// Worst misses printed with their breakdown.
const WORST_SHOWN: usize = 3;
/// Culprits printed.
const CULPRITS_SHOWN: usize = 8;

/// The section: `what` names one miss and many (`("late wake-up", "late wake-ups")`),
/// `start_ns` the run's start (misses are placed in seconds from it).
pub fn text(why: &WhyRecord, what: (&str, &str), start_ns: Option<u64>, out: &mut String) {
    let (one, many) = what;
    let named = |n: u64| if n == 1 { one } else { many };
    let _ = writeln!(out);
    if let Some(reason) = &why.unavailable {
        let _ = writeln!(
            out,
            "why: not traced: {reason}; the run was measured without causes"
        );
        return;
    }
    let cpus = cpu_list(&why.cpus);
    let above = why
        .above_ns
        .map(|ns| format!(" later than {}", fmt_ns(ns as f64)))
        .unwrap_or_default();
    let lost = match why.events_lost {
        0 => "no events lost".to_string(),
        n => format!("{n} events lost"),
    };
    if why.misses_explained == 0 && why.misses_dropped == 0 {
        let _ = writeln!(
            out,
            "why: no {many}{above}, nothing to explain (kernel trace of {cpus}: {} events, {lost})",
            why.events_read
        );
        missing(why, out);
        return;
    }
    let dropped = match why.misses_dropped {
        0 => String::new(),
        n => format!(", {n} more not explained (they came faster than the trace was read)"),
    };
    let _ = writeln!(
        out,
        "why: {} {}{above} explained from the kernel trace of {cpus} ({lost}){dropped}",
        why.misses_explained,
        named(why.misses_explained)
    );
    let _ = writeln!(
        out,
        "  {:<24} {:<11} {:>10} {:>14}",
        "culprit", "kind", "total", "misses"
    );
    for c in why.culprits.iter().take(CULPRITS_SHOWN) {
        let _ = writeln!(
            out,
            "  {:<24} {:<11} {:>10} {:>14}",
            c.name,
            c.kind,
            fmt_ns(c.ns_total as f64),
            format!("{} of {}", c.misses, why.misses_explained)
        );
    }
    if why.culprits.len() > CULPRITS_SHOWN {
        let _ = writeln!(out, "  ... {} more", why.culprits.len() - CULPRITS_SHOWN);
    }
    let mut worst: Vec<&MissRecord> = why.misses.iter().collect();
    worst.sort_by_key(|m| std::cmp::Reverse(m.late_ns));
    let _ = writeln!(out, "worst {many}:");
    for m in worst.into_iter().take(WORST_SHOWN) {
        let at = start_ns
            .map(|s| format!("at {:.3} s: ", m.t_ns.saturating_sub(s) as f64 / 1e9))
            .unwrap_or_default();
        let mut flags = Vec::new();
        if m.events_lost {
            flags.push("events lost in its window");
        }
        if m.window_short {
            flags.push("its window began late");
        }
        let flags = if flags.is_empty() {
            String::new()
        } else {
            format!(" [{}]", flags.join(", "))
        };
        let _ = writeln!(
            out,
            "  {at}{} ({}){flags}",
            fmt_ns(m.late_ns as f64),
            m.kind_of_miss.replace('_', " ")
        );
        for c in &m.causes {
            let _ = writeln!(out, "    {:>10}  {}", fmt_ns(c.ns as f64), cause_words(c));
        }
        if m.page_faults > 0 {
            let _ = writeln!(out, "    ({} page faults in the interval)", m.page_faults);
        }
    }
    missing(why, out);
}

/// One cause in words: kind, name and what else is known.
pub fn cause_words(c: &CauseRecord) -> String {
    let mut detail = Vec::new();
    match c.kind.as_str() {
        "irq" => {
            if let Some(n) = c.number {
                detail.push(format!("irq {n}"));
            }
        }
        "softirq" => {}
        "blocked" => {
            if let Some(s) = &c.state {
                detail.push(format!("state {s}"));
            }
            if let Some(p) = c.pid {
                detail.push(format!("woken by pid {p}"));
            }
        }
        _ => {
            if let Some(p) = c.pid {
                detail.push(format!("pid {p}"));
            }
            match (&c.policy, c.priority) {
                (Some(policy), Some(prio))
                    if policy == "other" || policy == "batch" || policy == "idle" =>
                {
                    detail.push(format!("{policy} nice {prio}"))
                }
                (Some(policy), Some(prio)) => detail.push(format!("{policy} {prio}")),
                (Some(policy), None) => detail.push(policy.clone()),
                _ => {}
            }
        }
    }
    if let Some(cpu) = c.cpu {
        detail.push(format!("cpu{cpu}"));
    }
    if c.at_wakeup {
        detail.push("running at the wake-up".into());
    }
    let name = match c.kind.as_str() {
        "blocked" if c.pid.is_none() => String::new(),
        "idle_exit" | "steal" | "unaccounted" => String::new(),
        _ => format!(" {}", c.name),
    };
    let kind = match c.kind.as_str() {
        "idle_exit" => "idle exit",
        "self" => "own running",
        k => k,
    };
    if detail.is_empty() {
        format!("{kind}{name}")
    } else {
        format!("{kind}{name} ({})", detail.join(", "))
    }
}

fn cpu_list(cpus: &[u64]) -> String {
    match cpus {
        [] => "every CPU".into(),
        [one] => format!("cpu{one}"),
        many => format!(
            "cpus {}",
            many.iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
}

fn missing(why: &WhyRecord, out: &mut String) {
    if !why.missing_events.is_empty() {
        let _ = writeln!(
            out,
            "note: this kernel lacks {}: what they would show is in unaccounted",
            why.missing_events.join(", ")
        );
    }
}
