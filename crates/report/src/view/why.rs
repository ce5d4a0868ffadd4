//! Why a run's deadlines were missed (`--why`): the culprits over the run and the
//! worst misses, each with its breakdown, from the run's [`WhyRecord`]. Every probe's
//! view prints it the same way, and the report's answer, its time plot and `compare`
//! word it with the same functions ([`summary_line`], [`culprit_row`],
//! [`culprit_sentence`], [`miss_text`]), so no two views of one run disagree.

use std::fmt::Write as _;

use results::records::why::{CauseRecord, CulpritRecord, MissRecord, WhyRecord};

use crate::terminal::fmt_ns;
use crate::units::fmt_count;
use crate::words::cause_kind;

/// Worst misses printed with their breakdown.
const WORST_SHOWN: usize = 3;
/// Culprits shown, in the terminal and in the report's answer alike.
pub const CULPRITS_SHOWN: usize = 8;

/// The order causes are stacked and keyed in wherever they are drawn: other threads
/// first, the thread's own running and what no event explained last.
pub const KINDS: [&str; 8] = [
    "thread",
    "irq",
    "softirq",
    "blocked",
    "self",
    "idle_exit",
    "steal",
    "unaccounted",
];

/// What a run's misses are called, one and many: a network run's are late blocks, an
/// audio stream's late callbacks, a jitter run's under-runs (`fragments`) or late
/// wake-ups.
pub fn what_missed_by(probe: &results::ProbeKind, fragments: bool) -> (&'static str, &'static str) {
    if *probe == results::probe_kind::NET {
        ("late block", "late blocks")
    } else if *probe == results::probe_kind::EVENT || *probe == results::probe_kind::ROUNDTRIP {
        ("late callback", "late callbacks")
    } else {
        what_missed(fragments)
    }
}

/// A jitter run's misses in words: its under-runs (`fragments`), or its late wake-ups.
pub fn what_missed(fragments: bool) -> (&'static str, &'static str) {
    if fragments {
        ("under-run", "under-runs")
    } else {
        ("late wake-up", "late wake-ups")
    }
}

/// What the trace came to, in one line (the terminal prints it after `why: `, the
/// report's answer as it is): not traced and why, nothing to explain, or how many misses
/// it explained from which CPUs.
pub fn summary_line(why: &WhyRecord, what: (&str, &str)) -> String {
    let (one, many) = what;
    if let Some(reason) = &why.unavailable {
        return format!("not traced: {reason}; the run was measured without causes");
    }
    let cpus = cpu_list(&why.cpus);
    let above = why
        .above_ns
        .map(|ns| format!(" later than {}", fmt_ns(ns as f64)))
        .unwrap_or_default();
    let lost = match why.events_lost {
        0 => "no events lost".to_string(),
        n => format!("{} events lost", fmt_count(n)),
    };
    if why.misses_explained == 0 && why.misses_dropped == 0 {
        return format!(
            "no {many}{above}, nothing to explain (kernel trace of {cpus}: {} events, {lost})",
            fmt_count(why.events_read)
        );
    }
    let dropped = match why.misses_dropped {
        0 => String::new(),
        n => format!(
            ", {} more not explained (they came faster than the trace was read)",
            fmt_count(n)
        ),
    };
    let named = if why.misses_explained == 1 { one } else { many };
    format!(
        "{} {named}{above} explained from the kernel trace of {cpus} ({lost}){dropped}",
        fmt_count(why.misses_explained)
    )
}

/// The culprits a view shows, largest first: at most [`CULPRITS_SHOWN`], and how many
/// more there are.
pub fn shown_culprits(why: &WhyRecord) -> (&[CulpritRecord], usize) {
    let n = why.culprits.len().min(CULPRITS_SHOWN);
    (&why.culprits[..n], why.culprits.len() - n)
}

/// A culprit's row as every view prints it: its name, its kind in words, its time over
/// the run, and the misses it took time in of those explained (`9 of 12`).
pub fn culprit_row(c: &CulpritRecord, why: &WhyRecord) -> [String; 4] {
    [
        c.name.clone(),
        cause_kind(&c.kind),
        fmt_ns(c.ns_total as f64),
        format!(
            "{} of {}",
            fmt_count(c.misses),
            fmt_count(why.misses_explained)
        ),
    ]
}

/// The largest culprit in a sentence (`9 of 12 late wake-ups: kworker/1:2 ran 9.80
/// ms`), or `None` when nothing was explained.
pub fn culprit_sentence(why: &WhyRecord, what: (&str, &str)) -> Option<String> {
    if why.unavailable.is_some() || why.misses_explained == 0 {
        return None;
    }
    let c = why.culprits.first()?;
    let t = fmt_ns(c.ns_total as f64);
    let did = match c.kind.as_str() {
        "thread" => format!("{} ran {t}", c.name),
        "irq" => format!("interrupt {} took {t}", c.name),
        "softirq" => format!("softirq {} took {t}", c.name),
        "self" => format!("the thread's own running took {t}"),
        "blocked" if !c.name.is_empty() && c.name != "blocked" => {
            format!("waiting on {} took {t}", c.name)
        }
        "blocked" => format!("sleeping blocked took {t}"),
        "idle_exit" => format!("the CPU leaving idle took {t}"),
        "steal" => format!("the hypervisor took {t} (steal)"),
        "unaccounted" => format!("{t} the trace could not account for"),
        _ => format!("{} {} took {t}", cause_kind(&c.kind), c.name),
    };
    let (one, many) = what;
    let named = if why.misses_explained == 1 { one } else { many };
    Some(format!(
        "{} of {} {named}: {did}",
        fmt_count(c.misses),
        fmt_count(why.misses_explained)
    ))
}

/// A miss as its bar's hover reads: when (`start_ns` the run's start), how late, and
/// each cause with its time, a line each.
pub fn miss_text(m: &MissRecord, what: (&str, &str), start_ns: u64) -> String {
    let mut out = format!(
        "{} at {:.3} s: {} late ({})",
        what.0,
        m.t_ns.saturating_sub(start_ns) as f64 / 1e9,
        fmt_ns(m.late_ns as f64),
        m.kind_of_miss.replace('_', " ")
    );
    for c in &m.causes {
        let _ = write!(out, "\n{}: {}", fmt_ns(c.ns as f64), cause_words(c));
    }
    if m.events_lost {
        out.push_str("\n(events lost in its window)");
    }
    if m.window_short {
        out.push_str("\n(its window began late)");
    }
    out
}

/// The section: `what` names one miss and many (`("late wake-up", "late wake-ups")`),
/// `start_ns` the run's start (misses are placed in seconds from it).
pub fn text(why: &WhyRecord, what: (&str, &str), start_ns: Option<u64>, out: &mut String) {
    let many = what.1;
    let _ = writeln!(out);
    let _ = writeln!(out, "why: {}", summary_line(why, what));
    if why.unavailable.is_some() {
        return;
    }
    if why.misses_explained == 0 && why.misses_dropped == 0 {
        missing(why, out);
        return;
    }
    let _ = writeln!(
        out,
        "  {:<24} {:<11} {:>10} {:>14}",
        "culprit", "kind", "total", "misses"
    );
    let (shown, more) = shown_culprits(why);
    for c in shown {
        let [name, kind, total, misses] = culprit_row(c, why);
        let _ = writeln!(out, "  {name:<24} {kind:<11} {total:>10} {misses:>14}");
    }
    if more > 0 {
        let _ = writeln!(out, "  ... {more} more");
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
    let kind = cause_kind(&c.kind);
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

/// A run's `why` for tests: three late wake-ups explained, two kept in detail, the
/// largest culprit a thread whose name is markup (names come from the kernel).
#[cfg(test)]
pub(crate) fn test_why() -> serde_json::Value {
    serde_json::json!({
        "above_ns": 100_000,
        "misses": [
            {"t_ns": 1_500_000_000u64, "late_ns": 2_000_000, "kind_of_miss": "late_wakeup", "tid": 9,
             "causes": [
                {"kind": "thread", "name": "<script>x</script>", "pid": 7, "cpu": 1, "ns": 1_500_000,
                 "policy": "fifo", "priority": 90, "at_wakeup": true},
                {"kind": "irq", "name": "nvme0q1", "pid": null, "cpu": 1, "ns": 400_000, "number": 33},
                {"kind": "unaccounted", "name": "unaccounted", "pid": null, "cpu": null, "ns": 100_000}
             ]},
            {"t_ns": 2_200_000_000u64, "late_ns": 300_000, "kind_of_miss": "late_wakeup", "tid": 9,
             "causes": [{"kind": "softirq", "name": "TIMER", "pid": null, "cpu": 1, "ns": 300_000, "number": 1}]}
        ],
        "misses_explained": 3,
        "misses_dropped": 0,
        "culprits": [
            {"kind": "thread", "name": "<script>x</script>", "ns_total": 9_800_000, "misses": 2},
            {"kind": "irq", "name": "nvme0q1", "ns_total": 400_000, "misses": 1},
            {"kind": "softirq", "name": "TIMER", "ns_total": 300_000, "misses": 1},
            {"kind": "unaccounted", "name": "unaccounted", "ns_total": 100_000, "misses": 1}
        ],
        "events_lost": 0,
        "events_read": 123_456,
        "missing_events": [],
        "cpus": [1],
        "threads": [{"role": "jitter thread", "tid": 9}]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::records::Record;

    fn why() -> WhyRecord {
        WhyRecord::from_json(&test_why()).unwrap()
    }

    #[test]
    fn the_largest_culprit_is_said_in_one_sentence_with_its_share_of_the_misses() {
        let w = why();
        let what = what_missed(false);
        assert_eq!(
            culprit_sentence(&w, what).unwrap(),
            "2 of 3 late wake-ups: <script>x</script> ran 9.80 ms"
        );
        assert_eq!(
            summary_line(&w, what),
            "3 late wake-ups later than 100.0 us explained from the kernel trace of cpu1 (no events lost)"
        );
        assert_eq!(
            culprit_row(&w.culprits[1], &w),
            ["nvme0q1", "irq", "400.0 us", "1 of 3"]
        );
        // Nothing explained, or nothing traced: no sentence; counts grouped.
        let quiet = WhyRecord {
            misses_explained: 0,
            culprits: Vec::new(),
            ..w.clone()
        };
        assert_eq!(culprit_sentence(&quiet, what), None);
        assert!(
            summary_line(&quiet, what).contains("123\u{202F}456 events"),
            "{}",
            summary_line(&quiet, what)
        );
        let unavailable = WhyRecord {
            unavailable: Some("tracing the kernel needs root".into()),
            ..WhyRecord::default()
        };
        assert_eq!(culprit_sentence(&unavailable, what), None);
        assert_eq!(
            summary_line(&unavailable, what),
            "not traced: tracing the kernel needs root; the run was measured without causes"
        );
    }

    #[test]
    fn a_miss_s_hover_names_each_cause_with_its_time_from_the_run_s_start() {
        let w = why();
        let text = miss_text(&w.misses[0], what_missed(true), 1_000_000_000);
        assert_eq!(
            text,
            "under-run at 0.500 s: 2.00 ms late (late wakeup)\n1.50 ms: thread <script>x</script> (pid 7, fifo 90, cpu1, running at the wake-up)\n400.0 us: irq nvme0q1 (irq 33, cpu1)\n100.0 us: unaccounted"
        );
    }

    #[test]
    fn the_terminal_section_prints_the_same_line_and_rows() {
        let w = why();
        let what = what_missed(false);
        let mut out = String::new();
        text(&w, what, Some(1_000_000_000), &mut out);
        assert!(
            out.contains(&format!("why: {}", summary_line(&w, what))),
            "{out}"
        );
        for c in &w.culprits {
            for part in culprit_row(c, &w) {
                assert!(out.contains(&part), "{part} not in\n{out}");
            }
        }
    }
}
