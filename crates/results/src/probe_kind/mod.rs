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
mod kind;
pub mod metric;
mod net;
mod roundtrip;

use std::sync::{Mutex, PoisonError};

use serde_json::Value;

pub use doctor::DOCTOR;
pub use event::EVENT;
pub use jitter::JITTER;
pub use kind::{Need, ProbeKind, Setting};
pub use net::NET;
pub use roundtrip::ROUNDTRIP;

/// audiolat's own probes, in the order help texts and lists give them.
pub const BUILT_IN: [&ProbeKind; 5] = [&JITTER, &EVENT, &ROUNDTRIP, &NET, &DOCTOR];

impl ProbeKind {
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
        let kind: &'static ProbeKind = Box::leak(Box::new(ProbeKind::named(
            name,
            "a probe this release does not know",
        )));
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
}

static REGISTERED: Mutex<Vec<&'static ProbeKind>> = Mutex::new(Vec::new());
static UNKNOWN: Mutex<Vec<&'static ProbeKind>> = Mutex::new(Vec::new());

fn registered() -> Vec<&'static ProbeKind> {
    REGISTERED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

impl<'de> serde::Deserialize<'de> for &'static ProbeKind {
    /// From its name, as [`ProbeKind::stored`] reads it.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(ProbeKind::stored(&name))
    }
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
        static TEST: ProbeKind = ProbeKind::named("kind-test", "a test");
        static IMPOSTOR: ProbeKind = ProbeKind::named("jitter", "not jitter");
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
