//! What a probe is, declared once: [`ProbeKind`].
//!
//! Every side of audiolat reads a probe's identity from here: the store (a run's
//! `probe` column is its [`ProbeKind::name`], parsed back by [`ProbeKind::stored`]), the
//! gates ([`ProbeKind::gates`], [`ProbeKind::needs`]), every list's headline
//! ([`ProbeKind::headline_metric`]), the dropouts every view counts
//! ([`ProbeKind::dropouts`]), the report and the command line. A probe declares these as
//! one `static` (as a nih-plug plug-in declares its `NAME` and layouts as constants),
//! listed in [`BUILT_IN`]; a probe from outside audiolat's own (a test's) is made known
//! with [`ProbeKind::register`], and reaches `show`, `runs`, the gates, the JSON and the
//! HTML report through the same declaration.
//!
//! A run stored by a probe this build does not know (a newer release's) still opens: its
//! kind is [`ProbeKind::stored`]'s unknown one, with its name, no metrics and no gates,
//! and its measurements are listed as they are.
//!
//! No code outside this module compares a probe's name: it compares kinds
//! (`run.probe == &probe_kind::JITTER`).

mod doctor;
mod event;
mod jitter;
mod net;
mod roundtrip;

use std::sync::{Mutex, PoisonError};

use serde_json::Value;

use crate::counts::Dropouts;
use crate::gate::Named;
use crate::model::Measurement;

pub use doctor::DOCTOR;
pub use event::EVENT;
pub use jitter::JITTER;
pub use net::NET;
pub use roundtrip::ROUNDTRIP;

/// audiolat's own probes, in the order help texts and lists give them.
pub const BUILT_IN: [&ProbeKind; 5] = [&JITTER, &EVENT, &ROUNDTRIP, &NET, &DOCTOR];

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
    /// It stores one row per trigger (the runs' `triggers`).
    pub triggers: bool,
    /// It measures a latency (not a check of the machine, as doctor): its runs are
    /// the report's subject, its failed runs a verdict.
    pub measures: bool,
    /// Its dropouts from a run's stored configuration, result and measurements
    /// (`None` where it counts none of a kind, never 0).
    pub dropouts: fn(config: &Value, result: &Value, measurements: &[Measurement]) -> Dropouts,
}

/// A gate metric a probe measures only with a setting: a gate on it without the
/// setting is refused before the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    /// The gate metric (canonical name).
    pub metric: &'static str,
    /// The setting it needs, by the name a command says it was given with
    /// ([`ProbeKind::unmeasured`]), e.g. `fragments`.
    pub setting: &'static str,
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

    /// The kind of a known probe's name: a built-in's or a registered one's.
    pub fn of(name: &str) -> Option<&'static ProbeKind> {
        BUILT_IN
            .iter()
            .copied()
            .find(|k| k.name == name)
            .or_else(|| registered().into_iter().find(|k| k.name == name))
    }

    /// The kind of a stored run's probe: a known one's, else (a probe of a release this
    /// one does not know) one with that name, no metrics and no gates.
    pub fn stored(name: &str) -> &'static ProbeKind {
        if let Some(kind) = ProbeKind::of(name) {
            return kind;
        }
        let mut unknown = UNKNOWN.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(kind) = unknown.iter().find(|k| k.name == name) {
            return kind;
        }
        // One allocation per distinct unknown name, kept for the process's life.
        let name: &'static str = Box::leak(name.to_string().into_boxed_str());
        let kind: &'static ProbeKind = Box::leak(Box::new(ProbeKind {
            name,
            about: "a probe this release does not know",
            ..UNKNOWN_KIND
        }));
        unknown.push(kind);
        kind
    }

    /// Every known probe: the built-in ones in order, then the registered ones.
    pub fn all() -> Vec<&'static ProbeKind> {
        let mut all = BUILT_IN.to_vec();
        all.extend(registered());
        all
    }

    /// The probes that take gates, in order.
    pub fn gated() -> Vec<&'static ProbeKind> {
        ProbeKind::all()
            .into_iter()
            .filter(|k| !k.gates.is_empty() || (k.main_metric)(&Value::Null).is_some())
            .collect()
    }

    /// Makes a probe declared outside audiolat's own known to every side (a test
    /// probe's). Registering a name twice keeps the first.
    pub fn register(kind: &'static ProbeKind) {
        let mut extra = REGISTERED.lock().unwrap_or_else(PoisonError::into_inner);
        if ProbeKind::of_built_in(kind.name).is_none() && !extra.iter().any(|k| k.name == kind.name)
        {
            extra.push(kind);
        }
    }

    fn of_built_in(name: &str) -> Option<&'static ProbeKind> {
        BUILT_IN.iter().copied().find(|k| k.name == name)
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
        given: &[&str],
    ) -> Option<(&'g str, &'static str)> {
        metrics.into_iter().find_map(|metric| {
            self.needs
                .iter()
                .find(|n| n.metric == metric && !given.contains(&n.setting))
                .map(|n| (metric, n.why))
        })
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

static REGISTERED: Mutex<Vec<&'static ProbeKind>> = Mutex::new(Vec::new());
static UNKNOWN: Mutex<Vec<&'static ProbeKind>> = Mutex::new(Vec::new());

fn registered() -> Vec<&'static ProbeKind> {
    REGISTERED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

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

impl<'de> serde::Deserialize<'de> for &'static ProbeKind {
    /// From its name, as [`ProbeKind::stored`] reads it.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(ProbeKind::stored(&name))
    }
}

/// A measurement of `measurements` by metric name.
fn find<'a>(measurements: &'a [Measurement], metric: &str) -> Option<&'a Measurement> {
    measurements.iter().find(|m| m.metric == metric)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_to_their_kind_and_unknown_ones_keep_their_name() {
        for kind in BUILT_IN {
            assert_eq!(ProbeKind::of(kind.name), Some(kind));
            assert_eq!(ProbeKind::stored(kind.name), kind);
        }
        assert_eq!(ProbeKind::of("theremin"), None);
        let unknown = ProbeKind::stored("theremin");
        assert_eq!(unknown.name, "theremin");
        assert!(unknown.gates.is_empty());
        assert_eq!(unknown.main_metric(&Value::Null), None);
        assert!(std::ptr::eq(unknown, ProbeKind::stored("theremin")));
    }

    #[test]
    fn a_registered_probe_is_known_and_a_built_in_name_is_not_taken_twice() {
        static TEST: ProbeKind = ProbeKind {
            name: "kind-test",
            ..UNKNOWN_KIND
        };
        static IMPOSTOR: ProbeKind = ProbeKind {
            name: "jitter",
            ..UNKNOWN_KIND
        };
        ProbeKind::register(&TEST);
        ProbeKind::register(&IMPOSTOR);
        assert!(std::ptr::eq(ProbeKind::of("kind-test").unwrap(), &TEST));
        assert!(std::ptr::eq(ProbeKind::of("jitter").unwrap(), &JITTER));
        assert_eq!(
            ProbeKind::all()
                .iter()
                .filter(|k| k.name == "jitter")
                .count(),
            1
        );
    }

    #[test]
    fn a_kind_serialises_as_its_name() {
        assert_eq!(serde_json::to_string(&JITTER).unwrap(), "\"jitter\"");
        let back: &'static ProbeKind = serde_json::from_str("\"net\"").unwrap();
        assert_eq!(back, &NET);
    }
}
