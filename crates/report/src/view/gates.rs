//! A run's threshold gates (`--fail-if`) and their verdicts: as a table under the
//! run (a fresh run and `show` alike), as JSON, as CSV (`export --format gates`), and a
//! plan's or suite's runs that failed one.

use results::gate::{GateVerdict, Judged, Kind};
use results::RunId;
use serde_json::{json, Value};

use crate::data::{ReportData, RunData};
use crate::terminal::{fmt_ns, Table};
use crate::words::escape;

/// A verdict's value (or threshold) for people: a time as the tables show it.
pub fn value_text(v: Option<f64>, kind: Kind) -> String {
    match (v, kind) {
        (None, _) => "-".into(),
        (Some(v), Kind::Time) => fmt_ns(v),
        (Some(v), k) => results::gate::format_value(v, k),
    }
}

/// The gates of run `run` as a table with a heading line; empty without gates.
pub fn text(run: RunId, verdicts: &[GateVerdict]) -> String {
    if verdicts.is_empty() {
        return String::new();
    }
    let failed = verdicts.iter().filter(|v| v.failed()).count();
    let mut t = Table::new(&["verdict", "gate", "measured", "note"]).left_align(&[1, 3]);
    for v in verdicts {
        t.row(vec![
            v.outcome.as_str().into(),
            v.expr.clone(),
            value_text(v.value, v.kind()),
            match (&v.reason, v.outcome) {
                (Some(r), results::gate::Outcome::Unknown) => format!("{r}: counts as failed"),
                (Some(r), _) => r.clone(),
                (None, _) => String::new(),
            },
        ]);
    }
    let head = if failed == 0 {
        format!("gates of run {run}: all {} passed", verdicts.len())
    } else {
        format!("gates of run {run}: {failed} of {} failed", verdicts.len())
    };
    format!("\n{head}\n{}", t.render())
}

/// The verdicts as JSON (`[]` without gates).
pub fn json(verdicts: &[GateVerdict]) -> Value {
    json!(verdicts)
}

/// The tables of runs just judged (a command's, under its own output).
pub fn runs_text(judged: &Judged) -> String {
    let mut out: String = judged.runs.iter().map(|(run, v)| text(*run, v)).collect();
    for expr in &judged.unjudged {
        out.push_str(&format!(
            "gate {expr}: no run here has its metric: counts as failed\n"
        ));
    }
    out
}

/// A command's JSON document with its runs' verdicts as `"gates"`: one run's verdicts,
/// a sweep's one `{"run_id", "gates"}` per run (however many), and the gates that judged
/// no run as `"unjudged"`; the document as it was without gates.
pub fn with_json(mut doc: Value, judged: &Judged) -> Value {
    if judged.given {
        doc["gates"] = match judged.runs.as_slice() {
            [(_, one)] if !judged.sweep => json(one),
            runs => json!(runs
                .iter()
                .map(|(run, v)| json!({"run_id": run, "gates": v}))
                .collect::<Vec<_>>()),
        };
        if !judged.unjudged.is_empty() {
            doc["unjudged_gates"] = json!(judged.unjudged);
        }
    }
    doc
}

/// `export --format gates`: one CSV row per gate (values in `unit`; empty: not measured).
pub fn csv(run: RunId, verdicts: &[GateVerdict]) -> String {
    let mut out = String::from("run_id,gate,metric,op,threshold,unit,value,verdict,reason\n");
    let quote = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    for v in verdicts {
        out.push_str(&format!(
            "{run},{},{},{},{},{},{},{},{}\n",
            quote(&v.expr),
            v.metric,
            quote(&v.op),
            v.threshold,
            v.unit,
            v.value.map_or(String::new(), |x| x.to_string()),
            v.outcome.as_str(),
            v.reason.as_deref().map(quote).unwrap_or_default()
        ));
    }
    out
}

/// The cells of a report whose runs were judged by gates: (cell key, run, verdicts).
fn judged(data: &ReportData) -> Vec<(&str, &RunData)> {
    data.cells
        .iter()
        .filter_map(|c| c.run.as_ref().map(|r| (c.key.as_str(), r)))
        .filter(|(_, r)| !r.gates.is_empty())
        .collect()
}

/// The runs of a report (a plan run, a suite, runs) that failed a gate, by cell:
/// (cell key, run id, the gates it failed). A plan run exits 3 when there is one.
pub fn failures(data: &ReportData) -> Vec<(String, RunId, Vec<GateVerdict>)> {
    judged(data)
        .into_iter()
        .map(|(key, r)| {
            let failed = r.gates.iter().filter(|v| v.failed()).cloned().collect();
            (key.to_string(), r.record.id, failed)
        })
        .filter(|(_, _, f): &(String, RunId, Vec<GateVerdict>)| !f.is_empty())
        .collect()
}

/// The report's gates as text (after its tables): how many runs were judged and each
/// one that failed, with the gates it failed. Empty when no run had gates.
pub fn report_text(data: &ReportData) -> String {
    let judged = judged(data);
    if judged.is_empty() {
        return String::new();
    }
    let failed = failures(data);
    let mut out = format!(
        "\ngates: {} of {} judged runs failed\n",
        failed.len(),
        judged.len()
    );
    for (key, run, verdicts) in &failed {
        let gates: Vec<String> = verdicts
            .iter()
            .map(|v| {
                format!(
                    "{} ({}: {})",
                    v.expr,
                    v.outcome.as_str(),
                    v.reason
                        .clone()
                        .unwrap_or_else(|| value_text(v.value, v.kind()))
                )
            })
            .collect();
        let label = if key.starts_with(&format!("run {run}")) {
            key.clone()
        } else {
            format!("{key} (run {run})")
        };
        out.push_str(&format!("  {label}: {}\n", gates.join(", ")));
    }
    out
}

/// The report's gates as an HTML section: every judged run's verdicts. Empty when no
/// run had gates.
pub fn report_html(data: &ReportData) -> String {
    let judged = judged(data);
    if judged.is_empty() {
        return String::new();
    }
    let mut out = String::from("<section id=\"gates\"><h2>Gates</h2>\n<p class=\"note\">Each gate states when a run fails (<code>--fail-if</code>); a metric the run did not measure makes it unknown, which counts as failed.</p>\n<table><thead><tr><th class=\"label\">cell</th><th>run</th><th class=\"label\">gate</th><th>measured</th><th>verdict</th></tr></thead><tbody>\n");
    for (key, r) in judged {
        for v in &r.gates {
            let class = if v.failed() { "fail" } else { "ok" };
            out.push_str(&format!(
                "<tr><td class=\"label\">{}</td><td>{}</td><td class=\"label\"><code>{}</code></td><td>{}</td><td class=\"{class}\">{}</td></tr>\n",
                escape(key),
                r.record.id,
                escape(&v.expr),
                escape(&value_text(v.value, v.kind())),
                v.outcome.as_str()
            ));
        }
    }
    out.push_str("</tbody></table></section>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::gate::Outcome;

    fn verdict(expr: &str, value: Option<f64>, outcome: Outcome) -> GateVerdict {
        GateVerdict {
            expr: expr.into(),
            metric: "p50".into(),
            op: ">".into(),
            threshold: 1.0,
            unit: "ns".into(),
            value,
            outcome,
            reason: value.is_none().then(|| "not measured".into()),
        }
    }

    #[test]
    fn a_table_says_which_gates_failed_and_why() {
        let v = [
            verdict("p50 > 1ns", Some(12_500.0), Outcome::Fail),
            verdict("p99 > 1ms", None, Outcome::Unknown),
        ];
        let t = text(RunId(4), &v);
        assert!(t.contains("gates of run 4: 2 of 2 failed"), "{t}");
        assert!(t.contains("12.5 us"), "{t}");
        assert!(t.contains("not measured: counts as failed"), "{t}");
        assert_eq!(text(RunId(4), &[]), "");
        let c = csv(RunId(4), &v);
        assert!(
            c.contains("4,\"p50 > 1ns\",p50,\">\",1,ns,12500,fail,\n"),
            "{c}"
        );
        assert!(c.contains(",,unknown,\"not measured\"\n"), "{c}");
    }
}
