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

/// Host steal time, a gate metric of every probe that measures.
pub const STEAL: Named = Named {
    name: "steal",
    aliases: &[],
    kind: Kind::Percent,
    about: "host steal time during the run, percent of the run's CPU time",
    source: Source::Flag(|f| f.host_steal_percent.flatten()),
};
