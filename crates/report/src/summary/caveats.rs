//! The validity caveats that apply to a report's runs, each said once, in words, with
//! the runs it applies to.

use results::model::{Finding, Verdict};
use results::records::flags::Flags;
use results::{RunId, RunStatus};

use super::words::{is_virtual, run_ref, runs_ref, software_clock};
use crate::data::RunData;
use crate::units::{fmt_ns, fmt_percent};

fn flagged(runs: &[&RunData], test: impl Fn(&RunData) -> bool) -> Vec<RunId> {
    runs.iter()
        .filter(|r| test(r))
        .map(|r| r.record.id)
        .collect()
}

/// Whether the run's flag `flag` (a field of its [`Flags`]) is `value`.
fn flag_is(r: &RunData, flag: fn(&Flags) -> Option<bool>, value: bool) -> bool {
    flag(&r.record.flags_record()) == Some(value)
}

/// The caveats of `runs` (and of doctor's failed checks), each once.
pub(super) fn of(runs: &[&RunData], doctor: Option<&[Finding]>) -> Vec<String> {
    let mut out = Vec::new();
    let mut say = |ids: Vec<RunId>, words: &dyn Fn(&str) -> String| {
        if !ids.is_empty() {
            out.push(words(&runs_ref(&ids)));
        }
    };
    say(flagged(runs, |r| flag_is(r, |f| f.realtime, false)), &|l| {
        format!("not real-time priority ({l}): the policy asked for was not granted, so these wake-ups wait behind ordinary threads")
    });
    say(
        flagged(runs, |r| flag_is(r, |f| f.memory_locked, false)),
        &|l| {
            format!("memory not locked ({l}): a page fault in the audio path can add milliseconds")
        },
    );
    say(
        flagged(runs, |r| {
            flag_is(r, |f| f.interrupted, true) || r.record.status == RunStatus::Interrupted
        }),
        &|l| {
            format!(
                "interrupted ({l}): what was measured before the stop is kept, the rest is missing"
            )
        },
    );
    say(
        flagged(runs, |r| {
            r.record
                .flags_record()
                .sender_late_blocks
                .is_some_and(|n| n > 0)
        }),
        &|l| {
            format!("the controller sent blocks late ({l}): its own sender could not keep its schedule, so those blocks' times and misses are the controller's, not the host's or the network's")
        },
    );
    say(
        flagged(runs, |r| flag_is(r, |f| f.load_exited_early, true)),
        &|l| format!("the load ended early ({l}): part of the run had less load than it says"),
    );
    let emulated = flagged(runs, |r| {
        flag_is(r, |f| f.emulated_cpu, true)
            || r.record
                .machine
                .virtualization
                .as_deref()
                .is_some_and(|v| v.to_ascii_lowercase().contains("tcg"))
    });
    say(emulated.clone(), &|l| {
        format!("an emulated CPU ({l}): the times are the emulator's, slower and noisier than any hardware's")
    });
    if emulated.is_empty() {
        if let Some(v) = runs
            .iter()
            .filter_map(|r| r.record.machine.virtualization.as_deref())
            .find(|v| is_virtual(v))
        {
            out.push(format!("a virtual machine ({v}): the host may take a virtual CPU away for milliseconds, so a maximum may be the host's, not this kernel's"));
        }
    }
    if let Some(s) = steal(runs) {
        out.push(s);
    }
    let mut clocks: Vec<(String, Vec<RunId>)> = Vec::new();
    for r in runs {
        if let Some(why) = software_clock(r) {
            match clocks.iter_mut().find(|(w, _)| *w == why) {
                Some((_, ids)) => ids.push(r.record.id),
                None => clocks.push((why, vec![r.record.id])),
            }
        }
    }
    for (why, ids) in clocks {
        out.push(format!(
            "software clock ({}: {why}): the periods are timed by the CPU, not a sound card's crystal, and no converter or driver latency is in these figures",
            runs_ref(&ids)
        ));
    }
    for f in doctor
        .unwrap_or_default()
        .iter()
        .filter(|f| f.verdict == Verdict::Fail)
    {
        let why = if f.detail.is_empty() {
            String::new()
        } else {
            format!(": {}", f.detail)
        };
        out.push(format!("doctor: {} is {}{why}", f.check, f.value));
    }
    out
}

/// The host-steal caveat: how much the hypervisor took, per run that lost any.
fn steal(runs: &[&RunData]) -> Option<String> {
    let parts: Vec<String> = runs
        .iter()
        .filter_map(|r| {
            let flags = r.record.flags_record();
            let ns = flags.host_steal_ns.filter(|&n| n > 0)? as f64;
            let pct = flags
                .steal_percent()
                .map_or(String::new(), |p| format!(" ({})", fmt_percent(p)));
            Some(format!(
                "{}{pct} in run {}",
                fmt_ns(ns),
                run_ref(r.record.id)
            ))
        })
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "host steal: the hypervisor ran something else on these CPUs for {}; a maximum in those runs may be the host's",
            parts.join(", ")
        )
    })
}
