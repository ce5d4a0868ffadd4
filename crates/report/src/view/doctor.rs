//! `audiolat doctor`: the machine and the findings.

use results::{Finding, Machine, Verdict};

use crate::terminal::{doctor_table, machine_line};

/// The doctor's findings as text, under the machine they were made on.
pub fn text(machine: &Machine, findings: &[Finding]) -> String {
    let mut out = format!("{}\n\n", machine_line(machine));
    out.push_str(&doctor_table(findings));
    out
}

/// The doctor's findings as JSON, with how many of each verdict.
pub fn json(machine: &Machine, findings: &[Finding]) -> serde_json::Value {
    let n = |v: Verdict| findings.iter().filter(|f| f.verdict == v).count();
    serde_json::json!({"machine": machine, "findings": findings,
           "counts": {"ok": n(Verdict::Ok), "warn": n(Verdict::Warn), "fail": n(Verdict::Fail)}})
}
