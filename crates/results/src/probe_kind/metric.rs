//! A probe's named metrics, as a gate names them (`xruns`, `misses`, ...): what each is,
//! its kind (and so its threshold's unit), and where its value is read from in a run.

use serde::{Deserialize, Serialize};

use crate::counts::{Dropouts, Notes};

/// What a metric's values are, and so the units its threshold takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A duration, stored in ns: the threshold needs a unit (`ns`, `us`, `ms`, `s`).
    Time,
    /// A count: a plain whole number.
    Count,
    /// A percentage: a plain number or one with `%`.
    Percent,
}

impl Kind {
    /// The unit values of this kind are stored in: `ns`, `count` or `%`.
    pub fn unit(&self) -> &'static str {
        match self {
            Kind::Time => "ns",
            Kind::Count => "count",
            Kind::Percent => "%",
        }
    }

    pub(crate) fn from_unit(unit: &str) -> Option<Kind> {
        Some(match unit {
            "ns" => Kind::Time,
            "count" => Kind::Count,
            "%" => Kind::Percent,
            _ => return None,
        })
    }
}

/// Where a named metric's value is read from in a stored run.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    /// A statistic (`p50`, `max`, ...) of a measurement, by name.
    Stat(&'static str, &'static str),
    /// A measurement's deadline misses.
    Misses(&'static str),
    /// A figure of the run's validity flags (absent when the run did not flag it).
    Flag(fn(&crate::records::flags::Flags) -> Option<f64>),
    /// A count the probe's record of the run's stored result holds (absent when it does
    /// not).
    Result(fn(&serde_json::Value) -> Option<u64>),
    /// A count of the run's [`Dropouts`], as every view counts it.
    Dropouts(fn(&Dropouts) -> Option<u64>),
    /// A count of an event run's [`Notes`], as every view counts it (absent when the
    /// run stored no trigger).
    Notes(fn(&Notes) -> u64),
    /// A figure of the run's trace (`result.why`): absent when the run was not traced.
    Why(WhyFigure),
}

/// A figure of a run's trace (`--why`) a gate names: `why.thread:NAME`, `why.irq`,
/// `why.misses`, ...
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhyFigure {
    /// The time culprits of a cause's kind (`irq`, `thread`, ...) took over the run's
    /// explained misses, ns; of one culprit when the gate names it (`why.thread:NAME`).
    /// A culprit the trace never saw took 0 ns: it was traced and took nothing.
    Cause(&'static str),
    /// The misses the trace explained.
    Misses,
    /// The events the kernel's ring buffers lost.
    EventsLost,
}

/// The longest name a thread has in the kernel (`comm`: 16 bytes with its NUL), the
/// names the trace gives a thread's culprit.
pub const THREAD_NAME_MAX: usize = 15;

/// The softirq vectors' names, as the trace gives them (`softirq_entry`'s format).
pub const SOFTIRQS: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

impl WhyFigure {
    /// Whether a gate may name one culprit of it (`why.thread:NAME`): a thread's, an
    /// interrupt's or a softirq's time does; idle exits, steal and the unaccounted
    /// have no culprit but themselves.
    pub fn takes_name(self) -> bool {
        matches!(
            self,
            WhyFigure::Cause("irq" | "softirq" | "thread" | "self" | "blocked")
        )
    }

    /// A culprit's name as the trace writes it (a softirq's in capitals), or what is
    /// wrong with it. `NAME*` names every culprit whose name begins with `NAME`.
    pub fn culprit_name(self, metric: &str, name: &str) -> Result<String, String> {
        let WhyFigure::Cause(kind) = self else {
            return Err(format!("{metric} counts the whole run: it takes no name"));
        };
        if !self.takes_name() {
            return Err(format!(
                "{metric} has no culprits but itself: it takes no name, e.g. '{metric} > 1ms'"
            ));
        }
        let prefix = name.strip_suffix('*').unwrap_or(name);
        if prefix.is_empty() {
            return Err(format!(
                "no name after '{metric}:': write {metric}:NAME (NAME* for every name it begins) or {metric} for them all"
            ));
        }
        if prefix.contains('*') {
            return Err(format!(
                "'{name}': only a last * is a wildcard (NAME* for every name it begins)"
            ));
        }
        match kind {
            "softirq" => {
                let upper = name.to_ascii_uppercase();
                let prefix_upper = prefix.to_ascii_uppercase();
                let known = SOFTIRQS.iter().any(|s| {
                    if name.ends_with('*') {
                        s.starts_with(&prefix_upper)
                    } else {
                        *s == prefix_upper
                    }
                });
                if known {
                    Ok(upper)
                } else {
                    Err(format!(
                        "'{name}' is no softirq: use one of {}",
                        SOFTIRQS.join(", ")
                    ))
                }
            }
            "thread" | "self" | "blocked" if prefix.len() > THREAD_NAME_MAX => {
                let mut cut = THREAD_NAME_MAX;
                while !prefix.is_char_boundary(cut) {
                    cut -= 1;
                }
                Err(format!(
                    "'{prefix}' is longer than a thread's name can be (the kernel keeps {THREAD_NAME_MAX} bytes of it): write '{metric}:{}'",
                    &prefix[..cut]
                ))
            }
            _ => Ok(name.to_string()),
        }
    }
}

/// A probe's named metric.
#[derive(Debug, Clone, Copy)]
pub struct Named {
    /// Its name in a gate.
    pub name: &'static str,
    /// Other names it answers to.
    pub aliases: &'static [&'static str],
    /// Its kind.
    pub kind: Kind,
    /// What it is, for `--help` and the README.
    pub about: &'static str,
    /// Where its value is read from.
    pub source: Source,
}

/// The figures of the kernel's trace, gate metrics of a probe that traces it
/// (`--why`): each cause's time over the explained misses (of one culprit with
/// `:NAME`), the misses explained and the events lost.
pub const WHY: [Named; 10] = [
    why_cause("why.irq", "irq", "hard interrupts' time in the explained misses (:NAME one handler's or vector's)"),
    why_cause("why.softirq", "softirq", "softirqs' time in the explained misses (:NAME one vector's, e.g. NET_RX)"),
    why_cause("why.thread", "thread", "other threads' time in the explained misses (:NAME one thread's, as the kernel names it)"),
    why_cause("why.self", "self", "the late thread's own running in the explained misses"),
    why_cause("why.blocked", "blocked", "time the late thread was blocked in the explained misses (:NAME by the thread that woke it)"),
    why_cause("why.idle_exit", "idle_exit", "time its CPU took to leave idle in the explained misses"),
    why_cause("why.steal", "steal", "host steal in the explained misses"),
    why_cause("why.unaccounted", "unaccounted", "time no traced event explains in the explained misses"),
    Named {
        name: "why.misses",
        aliases: &[],
        kind: Kind::Count,
        about: "misses the trace explained",
        source: Source::Why(WhyFigure::Misses),
    },
    Named {
        name: "why.events_lost",
        aliases: &[],
        kind: Kind::Count,
        about: "events the kernel's trace buffers lost (their time is unaccounted)",
        source: Source::Why(WhyFigure::EventsLost),
    },
];

const fn why_cause(name: &'static str, kind: &'static str, about: &'static str) -> Named {
    Named {
        name,
        aliases: &[],
        kind: Kind::Time,
        about,
        source: Source::Why(WhyFigure::Cause(kind)),
    }
}

impl Named {
    /// Its name as a gate writes it: `why.thread[:NAME]` for a metric that takes a
    /// culprit's name.
    pub fn spelled(&self) -> String {
        match self.source {
            Source::Why(figure) if figure.takes_name() => format!("{}[:NAME]", self.name),
            _ => self.name.to_string(),
        }
    }
}

/// Host steal time, a gate metric of every probe that measures.
pub const STEAL: Named = Named {
    name: "steal",
    aliases: &[],
    kind: Kind::Percent,
    about: "host steal time during the run, percent of the run's CPU time",
    source: Source::Flag(|f| f.host_steal_percent.flatten()),
};
