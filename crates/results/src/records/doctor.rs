//! A doctor run's result ([`DoctorResultRecord`]): its findings and their tally.

use serde::{Deserialize, Serialize};

use super::record::Record;
use crate::model::Finding;

/// What a doctor run found.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct DoctorResultRecord {
    /// Every finding, in the order checked (required: a result without it is no
    /// doctor's).
    pub findings: Vec<Finding>,
    /// How many of each verdict.
    #[serde(default)]
    pub counts: Option<VerdictCounts>,
}

impl Record for DoctorResultRecord {}

/// Findings by verdict.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VerdictCounts {
    /// Fine.
    pub ok: u64,
    /// Worth a look.
    pub warn: u64,
    /// Wrong for real-time audio.
    pub fail: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::test_support::round_trips;
    use serde_json::json;

    #[test]
    fn a_doctor_result_round_trips_with_its_tally() {
        let finding = |check: &str, verdict: &str| json!({"check": check, "verdict": verdict, "value": "v", "detail": "", "fix": ""});
        let r: DoctorResultRecord = round_trips(json!({
            "findings": [finding("kernel.preemption", "warn"), finding("rt.limits", "ok")],
            "counts": {"ok": 1, "warn": 1, "fail": 0},
        }));
        assert_eq!(
            r.counts,
            Some(VerdictCounts {
                ok: 1,
                warn: 1,
                fail: 0
            })
        );
        let jitter = json!({"start_ns": 1, "end": "complete"});
        assert_eq!(
            DoctorResultRecord::from_json(&jitter),
            None,
            "no findings, no doctor"
        );
    }
}
