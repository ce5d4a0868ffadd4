//! A run's events marked on a latency-against-time figure, each kind counted instead
//! when there are too many.

use super::figure::MAX_MARKS_PER_KIND;
use crate::data::RunData;
use crate::plots::{Mark, Plot, Window};
use crate::units::fmt_ns;

/// How long a host-steal event's window is when the event does not say (its
/// `window_ns`): the probes sample steal every 50 ms (`probes::steal::StealSampler`,
/// `jitter::STEAL_SAMPLE_INTERVAL`), and an event is one sampling window with steal in it,
/// starting at the event's time.
pub const STEAL_WINDOW_NS: f64 = 50e6;

/// The run's events as marks and windows on a time axis whose 0 is `origin_ns`
/// (CLOCK_MONOTONIC). Returns how many events have a mark, and the kinds too many to
/// mark (more than [`MAX_MARKS_PER_KIND`]) with their counts, for the caption. Counts
/// come from the run's whole counts (`event_counts`), not from the events loaded.
pub(crate) fn event_marks(
    plot: &mut Plot,
    r: &RunData,
    origin_ns: u64,
) -> (usize, Vec<(&'static str, u64)>) {
    let start = origin_ns;
    let mut marked = 0;
    let count = |kind: &str| -> u64 {
        let whole = r
            .event_counts
            .iter()
            .find(|(k, _)| k == kind)
            .map_or(0, |(_, n)| *n);
        whole.max(r.events.iter().filter(|e| e.kind == kind).count() as u64)
    };
    let crowded: Vec<(&'static str, u64)> = [
        ("underrun", "deadline misses"),
        ("xrun", "xruns"),
        ("overflow", "wake-ups above the histogram's bound"),
        ("skipped_cycles", "skipped cycles"),
        ("load_exit", "load exits"),
    ]
    .into_iter()
    .filter(|(kind, _)| count(kind) > MAX_MARKS_PER_KIND as u64)
    .map(|(kind, name)| (name, count(kind)))
    .collect();
    for e in &r.events {
        if e.kind != "steal" && count(&e.kind) > MAX_MARKS_PER_KIND as u64 {
            continue;
        }
        let x = e.mono_ns.saturating_sub(start) as f64;
        let at = fmt_ns(x);
        let (kind, text) = match e.kind.as_str() {
            "steal" => {
                plot.windows.push(steal_window(e, x));
                continue;
            }
            "underrun" => (
                "underrun",
                format!("deadline missed (the card would under-run) at {at}"),
            ),
            "xrun" => ("xrun", format!("xrun at {at}")),
            "overflow" => (
                "overflow",
                match e.detail["latency_ns"].as_f64() {
                    Some(l) => format!("{} above the histogram's bound at {at}", fmt_ns(l)),
                    None => format!("above the histogram's bound at {at}"),
                },
            ),
            "skipped_cycles" => ("skipped", format!("skipped cycles at {at}")),
            "load_exit" => ("load_exit", format!("the load exited at {at}")),
            _ => continue,
        };
        plot.marks.push(Mark {
            x,
            kind: kind.into(),
            text,
        });
        marked += 1;
    }
    plot.mark_names = [
        ("underrun", "deadline miss"),
        ("xrun", "xrun"),
        ("overflow", "above the bound"),
        ("skipped", "skipped cycles"),
        ("load_exit", "load exited"),
    ]
    .map(|(k, n)| (k.to_string(), n.to_string()))
    .to_vec();
    (marked, crowded)
}

/// A host-steal event as the sampling window it covers, with the steal (summed over
/// the CPUs sampled) on hover.
fn steal_window(e: &results::Event, x: f64) -> Window {
    let window_ns = e.detail["window_ns"]
        .as_f64()
        .filter(|w| *w > 0.0)
        .unwrap_or(STEAL_WINDOW_NS);
    let cpus = match e.detail["cpus"].as_str() {
        Some(c) if !c.is_empty() => format!("CPUs {c}"),
        _ => "the CPUs".to_string(),
    };
    let steal = e.detail["steal_ns"]
        .as_f64()
        .map_or_else(|| "-".to_string(), fmt_ns);
    Window {
        x0: x,
        x1: x + window_ns,
        kind: "steal".into(),
        text: format!(
            "host steal {steal} (summed over {cpus}) in the {} window from {}",
            fmt_ns(window_ns),
            fmt_ns(x)
        ),
    }
}
