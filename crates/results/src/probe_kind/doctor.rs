//! doctor: the machine checked for real-time audio (findings, no latency).

use super::ProbeKind;

/// `audiolat doctor` (and the suite's check of the machine).
pub static DOCTOR: ProbeKind = ProbeKind {
    name: "doctor",
    about: "the machine checked for real-time audio",
    measures: false,
    ..super::UNKNOWN_KIND
};
