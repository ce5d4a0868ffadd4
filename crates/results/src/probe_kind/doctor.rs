//! doctor: the machine checked for real-time audio (findings, no latency).

use super::kind::ProbeKind;

/// `audiolat doctor` (and the suite's check of the machine).
pub static DOCTOR: ProbeKind = ProbeKind {
    measures: false,
    ..ProbeKind::named("doctor", "the machine checked for real-time audio")
};
