//! [`ProbeKind`]: the declaration itself, and what is read of a run through it.

use serde_json::Value;

use super::metric::Named;
use crate::counts::Dropouts;
use crate::model::Measurement;

/// A probe's identity: its name, the metric it is judged and listed by, its gates and
/// what they need, and how its dropouts are counted from what it stored.
///
/// The functions take a run's stored parts (its configuration, its result, its
/// measurements, as JSON and [`Measurement`]s), so that a stored run and a fresh one are
/// read alike.
pub struct ProbeKind {
    /// The name it is typed and stored under (`jitter`).
    pub name: &'static str,
    /// What it measures, in a few words (for lists and help).
    pub about: &'static str,
    /// A run's probe in a few words for its cell in a report, from its configuration
    /// (`wake-ups at 2048 Hz`); `None`: its name.
    pub label: Option<fn(config: &Value) -> String>,
    /// The metric of its main latency, for a run's configuration (`None`: the probe has
    /// none, e.g. doctor). The statistics a gate names (`p99`, ...) are this metric's.
    pub main_metric: fn(config: &Value) -> Option<&'static str>,
    /// The metric a run is summarised by in every list (the suite's table, `audiolat
    /// runs`, the report's runs table): usually [`ProbeKind::main_metric`].
    pub headline_metric: fn(config: &Value) -> Option<&'static str>,
    /// Its named gate metrics (`xruns`, `misses`, ...), beside the main latency's
    /// statistics.
    pub gates: &'static [Named],
    /// Gate metrics measured only with a setting the command may lack.
    pub needs: &'static [Need],
    /// A command of this probe makes one run (not a sweep of several): one run's
    /// formats (an HdrHistogram log) apply to it.
    pub one_run: bool,
    /// Its runs export in cyclictest's formats (wake-up latency).
    pub cyclictest: bool,
    /// It stores one row per trigger (the runs' `triggers`), handed over as it measures
    /// (`Progress::triggers`): a run whose rows could not all be stored fails, and its end
    /// reason counts them.
    pub triggers: bool,
    /// It measures a latency (not a check of the machine, as doctor): its runs are
    /// the report's subject, its failed runs a verdict.
    pub measures: bool,
    /// Its dropouts from a run's stored configuration, result and measurements
    /// (`None` where it counts none of a kind, never 0).
    pub dropouts: fn(config: &Value, result: &Value, measurements: &[Measurement]) -> Dropouts,
}

/// A command's setting some gate metrics need, as the command says it was given
/// ([`ProbeKind::unmeasured`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// A jitter run's fragment model (`--fragments`).
    Fragments,
    /// An event run's loopback (`--loopback`).
    Loopback,
    /// The kernel's trace around a run (`--why`).
    Why,
}

/// A gate metric a probe measures only with a setting: a gate on it without the
/// setting is refused before the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    /// The gate metric (canonical name), or a family's first part: `why` is every
    /// `why.` metric.
    pub metric: &'static str,
    /// The setting it needs.
    pub setting: Setting,
    /// Why, with what to do, for the refusal.
    pub why: &'static str,
}

impl ProbeKind {
    /// A probe named `name` with nothing else declared (no main metric, no gates, no
    /// dropouts, one run per command), for a declaration to fill in the rest of
    /// (`ProbeKind { gates: ..., ..ProbeKind::named("test", "...") }`).
    pub const fn named(name: &'static str, about: &'static str) -> ProbeKind {
        ProbeKind {
            name,
            about,
            ..UNKNOWN_KIND
        }
    }

    /// The metric of its main latency for a run of `config` ([`ProbeKind::main_metric`]).
    pub fn main_metric(&self, config: &Value) -> Option<&'static str> {
        (self.main_metric)(config)
    }

    /// A run of `config` in a few words ([`ProbeKind::label`]'s, else the name).
    pub fn label(&self, config: &Value) -> String {
        self.label
            .map_or_else(|| self.name.to_string(), |label| label(config))
    }

    /// The dropouts of a run of this probe from what it stored: its configuration, its
    /// result and its measurements (the declaration's [`ProbeKind::dropouts`]).
    pub fn dropouts(
        &self,
        config: &Value,
        result: &Value,
        measurements: &[Measurement],
    ) -> Dropouts {
        (self.dropouts)(config, result, measurements)
    }

    /// The metric a run of `config` is summarised by in every list.
    pub fn headline_metric(&self, config: &Value) -> Option<&'static str> {
        (self.headline_metric)(config)
    }

    /// The measurement a run is summarised by: its [`ProbeKind::headline_metric`]'s,
    /// else (a probe without one, a run that stored none of it) its first.
    pub fn headline<'a>(
        &self,
        config: &Value,
        measurements: &'a [Measurement],
    ) -> Option<&'a Measurement> {
        self.headline_metric(config)
            .and_then(|h| measurements.iter().find(|m| m.metric == h))
            .or_else(|| measurements.first())
    }

    /// The gate metrics of `gates` a command given the settings `given` cannot measure,
    /// each with why ([`ProbeKind::needs`]).
    pub fn unmeasured<'g>(
        &self,
        metrics: impl IntoIterator<Item = &'g str>,
        given: &[Setting],
    ) -> Option<(&'g str, &'static str)> {
        metrics.into_iter().find_map(|metric| {
            self.needs
                .iter()
                .find(|n| n.covers(metric) && !given.contains(&n.setting))
                .map(|n| (metric, n.why))
        })
    }
}

impl Need {
    /// Whether it is the need of the gate metric `metric` (a canonical name, with a
    /// culprit's after a `:`): the metric itself, or one of the family it names.
    pub fn covers(&self, metric: &str) -> bool {
        let base = metric.split(':').next().unwrap_or(metric);
        base == self.metric
            || base
                .strip_prefix(self.metric)
                .is_some_and(|rest| rest.starts_with('.'))
    }
}

/// A kind's fields for a probe nobody declared: no metric, no gates, no dropouts.
const UNKNOWN_KIND: ProbeKind = ProbeKind {
    name: "",
    about: "",
    label: None,
    main_metric: |_| None,
    headline_metric: |_| None,
    gates: &[],
    needs: &[],
    one_run: true,
    cyclictest: false,
    triggers: false,
    measures: true,
    dropouts: |_, _, _| Dropouts::default(),
};

impl PartialEq for ProbeKind {
    /// Kinds are the same probe when their names are.
    fn eq(&self, other: &ProbeKind) -> bool {
        self.name == other.name
    }
}

impl Eq for ProbeKind {}

impl std::fmt::Debug for ProbeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ProbeKind({})", self.name)
    }
}

impl std::fmt::Display for ProbeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl serde::Serialize for ProbeKind {
    /// As its name.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name)
    }
}

/// A measurement of `measurements` by metric name.
pub(crate) fn find<'a>(measurements: &'a [Measurement], metric: &str) -> Option<&'a Measurement> {
    measurements.iter().find(|m| m.metric == metric)
}
