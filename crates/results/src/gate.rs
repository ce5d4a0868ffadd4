//! Threshold gates: `p99.9 > 200us`, `xruns > 0`, judged on a stored run.
//!
//! A [`Gate`] is `METRIC OP VALUE[UNIT]` with `OP` one of `> >= < <= == !=`. It states
//! when a run FAILS: `p99 > 200us` fails a run whose p99 is above 200 µs. The metric is
//! either a statistic of the probe's main latency (`p50`, `p90`, `p99`, `p99.9`,
//! `p99.99`, `min`, `mean`, `max`, `stdev`; `count`, its samples) or one of the named
//! metrics of the probe ([`ProbeKind::gates`]: under-runs, misses, the round trip, ...,
//! and with the kernel's trace a cause's time: `why.irq`, `why.thread:NAME`, ...). A
//! time takes a unit (`ns`, `us`, `ms`, `s`), a count a plain number, a percentage a
//! plain number or one with `%`.
//!
//! [`Gate::parse`] checks the syntax, the metric's name and the unit against the
//! metric's kind; [`Gate::check_probe`] that the probe has the metric. [`Gate::judge`]
//! evaluates it on a [`RunView`], the run as stored: a metric the run did not measure
//! (absent, not 0) makes the gate [`Outcome::Unknown`], which counts as a failure
//! ([`GateVerdict::failed`]): a gate never passes on a value nobody measured. A cause
//! the trace never saw in a traced run took 0 ns (it was traced, and took nothing); in
//! a run that was not traced every `why.` metric is unmeasured, and the verdict's reason
//! says why it was not traced.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::hist::Stat;
pub use crate::probe_kind::metric::{Kind, Named, Source, WhyFigure, STEAL, WHY};
use crate::probe_kind::ProbeKind;
use crate::view::RunView;

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl Op {
    const ALL: [(&'static str, Op); 6] = [
        (">=", Op::Ge),
        ("<=", Op::Le),
        ("==", Op::Eq),
        ("!=", Op::Ne),
        (">", Op::Gt),
        ("<", Op::Lt),
    ];

    /// Its spelling.
    pub fn as_str(&self) -> &'static str {
        Op::ALL
            .iter()
            .find(|(_, o)| o == self)
            .map_or("?", |(s, _)| s)
    }

    fn parse(s: &str) -> Option<Op> {
        Op::ALL.iter().find(|(t, _)| *t == s).map(|(_, o)| *o)
    }

    fn holds(&self, value: f64, threshold: f64) -> bool {
        match self {
            Op::Gt => value > threshold,
            Op::Ge => value >= threshold,
            Op::Lt => value < threshold,
            Op::Le => value <= threshold,
            Op::Eq => value == threshold,
            Op::Ne => value != threshold,
        }
    }
}

/// A parsed gate: the run fails when `metric op threshold` holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    /// The expression, as written (trimmed).
    pub expr: String,
    /// The metric's canonical name (an alias is resolved: `underruns` for `xruns`...),
    /// with a culprit's name after a `:` when the gate names one (`why.thread:kworker/1:2`).
    pub metric: String,
    /// The comparison.
    pub op: Op,
    /// The threshold in the metric's unit ([`Kind::unit`]: ns, a count, percent).
    pub threshold: f64,
    /// The metric's kind.
    pub kind: Kind,
}

/// Why a gate was refused. Each message names what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    /// Not `METRIC OP VALUE[UNIT]`.
    #[error("'{expr}': {problem}")]
    Syntax {
        /// The expression.
        expr: String,
        /// What is wrong and what to write.
        problem: String,
    },
    /// No probe has a metric of this name.
    #[error("'{expr}': unknown metric '{metric}': use {known}")]
    UnknownMetric {
        /// The expression.
        expr: String,
        /// The name given.
        metric: String,
        /// The names to choose from.
        known: String,
    },
    /// The threshold's unit does not fit the metric's kind.
    #[error("'{expr}': {problem}")]
    Unit {
        /// The expression.
        expr: String,
        /// What is wrong and what to write.
        problem: String,
    },
    /// The metric exists, but not for this probe.
    #[error("'{expr}': {probe} runs have no metric '{metric}': use {known}")]
    NotForProbe {
        /// The expression.
        expr: String,
        /// The metric.
        metric: String,
        /// The probe.
        probe: String,
        /// The probe's metrics.
        known: String,
    },
}

impl GateError {
    /// The expression refused.
    pub fn expr(&self) -> &str {
        match self {
            GateError::Syntax { expr, .. }
            | GateError::UnknownMetric { expr, .. }
            | GateError::Unit { expr, .. }
            | GateError::NotForProbe { expr, .. } => expr,
        }
    }

    /// What is wrong and what to write, without the expression (for a caller that
    /// names it already).
    pub fn problem(&self) -> String {
        let text = self.to_string();
        let prefix = format!("'{}': ", self.expr());
        text.strip_prefix(&prefix).unwrap_or(&text).to_string()
    }
}

/// The statistics of the main latency a gate can name, in order.
pub const STATS: [&str; 10] = [
    "p50", "p90", "p99", "p99.9", "p99.99", "min", "mean", "max", "stdev", "count",
];

fn find(probe: &ProbeKind, name: &str) -> Option<&'static Named> {
    probe
        .gates
        .iter()
        .find(|n| n.name == name || n.aliases.contains(&name))
}

fn known_for(probe: &ProbeKind) -> String {
    let named: Vec<String> = probe.gates.iter().map(Named::spelled).collect();
    format!("{} or {}", STATS.join(", "), named.join(", "))
}

/// A metric's canonical name, kind and (a named metric) its declaration, whatever the
/// probe (`None`: no probe has it).
fn any_metric(name: &str) -> Option<(&'static str, Kind, Option<&'static Named>)> {
    if let Some(s) = STATS.iter().find(|s| **s == name) {
        return Some((
            s,
            if *s == "count" {
                Kind::Count
            } else {
                Kind::Time
            },
            None,
        ));
    }
    ProbeKind::gated()
        .into_iter()
        .find_map(|p| find(p, name))
        .map(|n| (n.name, n.kind, Some(n)))
}

/// A gate's metric as written: its name (in lower case) and, after a `:`, a culprit's
/// name as written (a thread's name keeps its case).
fn written_metric(expr: &str) -> (String, Option<&str>) {
    let metric = expr
        .split(['<', '>', '=', '!'])
        .next()
        .unwrap_or_default()
        .trim();
    match metric.split_once(':') {
        Some((m, name)) => (m.trim().to_ascii_lowercase(), Some(name.trim())),
        None => (metric.to_ascii_lowercase(), None),
    }
}

/// A canonical metric's name and the culprit's name it carries (`why.thread:NAME`).
fn split_metric(metric: &str) -> (&str, Option<&str>) {
    match metric.split_once(':') {
        Some((m, name)) => (m, Some(name)),
        None => (metric, None),
    }
}

/// `1.5ms` as (1.5, "ms").
fn split_number(s: &str) -> (&str, &str) {
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == '-' || *c == '+'))
        .map_or(s.len(), |(i, _)| i);
    (&s[..end], s[end..].trim())
}

impl Gate {
    /// Parses `METRIC OP VALUE[UNIT]`, the metric known to some probe and the unit
    /// fitting its kind. A metric an alias names takes its canonical name for this
    /// probe only in [`Gate::check_probe`].
    pub fn parse(text: &str) -> Result<Gate, GateError> {
        let expr = text.trim().to_string();
        let syntax = |problem: String| GateError::Syntax {
            expr: expr.clone(),
            problem,
        };
        let example = "write METRIC OP VALUE, e.g. 'p99 > 200us' or 'xruns > 0'";
        let Some(at) = expr.find(['<', '>', '=', '!']) else {
            return Err(syntax(format!(
                "no comparison (> >= < <= == !=): {example}"
            )));
        };
        let (metric, culprit) = written_metric(&expr[..at]);
        let rest = &expr[at..];
        let op_len = if rest[1..].starts_with('=') { 2 } else { 1 };
        let Some(op) = Op::parse(&rest[..op_len]) else {
            return Err(syntax(format!(
                "'{}' is not a comparison: use > >= < <= == or !=",
                &rest[..op_len]
            )));
        };
        let value = rest[op_len..].trim();
        if metric.is_empty() {
            return Err(syntax(format!(
                "no metric before '{}': {example}",
                op.as_str()
            )));
        }
        if value.is_empty() {
            return Err(syntax(format!(
                "no value after '{}': {example}",
                op.as_str()
            )));
        }
        let Some((name, kind, named)) = any_metric(&metric) else {
            return Err(GateError::UnknownMetric {
                expr: expr.clone(),
                metric,
                known: format!(
                    "a statistic of the main latency ({}) or a probe's metric (`audiolat PROBE --help` lists them)",
                    STATS.join(", ")
                ),
            });
        };
        // A culprit's name, where the metric takes one (`why.thread:NAME`).
        let culprit = match (culprit, named.map(|n| n.source)) {
            (None, _) => None,
            (Some(given), Some(Source::Why(figure))) => Some(
                figure
                    .culprit_name(name, given)
                    .map_err(syntax)?,
            ),
            (Some(_), _) => {
                return Err(syntax(format!(
                    "{metric} takes no name after ':': only a cause of the trace does (why.thread:NAME, why.irq:NAME, ...)"
                )))
            }
        };
        let (number, unit) = split_number(value);
        let Some(number) = number.parse::<f64>().ok().filter(|v| v.is_finite()) else {
            return Err(syntax(format!(
                "'{value}' is not a number with an optional unit: {example}"
            )));
        };
        let unit_error = |problem: String| GateError::Unit {
            expr: expr.clone(),
            problem,
        };
        let threshold = match (kind, unit) {
            (Kind::Time, "") => {
                return Err(unit_error(format!(
                    "{metric} is a time: give a unit (ns, us, ms, s), e.g. '{metric} {} {number}us'",
                    op.as_str()
                )))
            }
            (Kind::Time, u) => {
                let scale = match u {
                    "ns" => 1.0,
                    "us" | "µs" => 1e3,
                    "ms" => 1e6,
                    "s" => 1e9,
                    _ => {
                        return Err(unit_error(format!(
                            "'{u}' is not a unit of time: use ns, us, ms or s"
                        )))
                    }
                };
                number * scale
            }
            (Kind::Count, "") => {
                if number.fract() != 0.0 {
                    return Err(unit_error(format!(
                        "{metric} is a count: give a whole number, e.g. '{metric} > 0'"
                    )));
                }
                number
            }
            (Kind::Count, _) => {
                return Err(unit_error(format!(
                    "{metric} is a count: give a plain number without a unit, e.g. '{metric} > 0'"
                )))
            }
            (Kind::Percent, "" | "%") => number,
            (Kind::Percent, u) => {
                return Err(unit_error(format!(
                    "{metric} is a percentage: give a number or one with %, not '{u}', e.g. '{metric} > 5%'"
                )))
            }
        };
        Ok(Gate {
            expr,
            metric: match culprit {
                Some(culprit) => format!("{name}:{culprit}"),
                None => name.to_string(),
            },
            op,
            threshold,
            kind,
        })
    }

    /// Whether its metric is a figure of the kernel's trace (`why.`): measured only in
    /// a run that was traced.
    pub fn traced(&self) -> bool {
        any_metric(split_metric(&self.metric).0)
            .is_some_and(|(_, _, n)| n.is_some_and(|n| matches!(n.source, Source::Why(_))))
    }

    /// This gate for a run of `probe`: refused when the probe has no such metric; the
    /// metric's name made the probe's own (an alias resolved).
    pub fn check_probe(&self, probe: &ProbeKind) -> Result<Gate, GateError> {
        if STATS.contains(&self.metric.as_str()) && probe.main_metric(&Value::Null).is_some() {
            return Ok(self.clone());
        }
        let (given, _) = written_metric(&self.expr);
        let culprit = split_metric(&self.metric).1;
        match find(probe, &given) {
            Some(n) => Ok(Gate {
                metric: match culprit {
                    Some(culprit) => format!("{}:{culprit}", n.name),
                    None => n.name.to_string(),
                },
                ..self.clone()
            }),
            None => Err(GateError::NotForProbe {
                expr: self.expr.clone(),
                metric: given,
                probe: probe.name.to_string(),
                known: known_for(probe),
            }),
        }
    }

    /// The gate's threshold with its unit, as written back (`200 us`, `0`, `5%`).
    pub fn threshold_text(&self) -> String {
        format_value(self.threshold, self.kind)
    }

    /// The verdict of this gate on `run` (as stored). A metric the run did not measure
    /// is [`Outcome::Unknown`]. A percentile among the overflows is only "at least the
    /// histogram's bound": it is no measured value (the verdict has none, its reason
    /// names the bound); a run above a `>`/`>=` threshold even so fails, any other
    /// verdict on it is unknown, never a pass.
    pub fn judge(&self, run: &RunView) -> GateVerdict {
        let above = matches!(self.op, Op::Gt | Op::Ge);
        let at_least = |bound: f64| {
            format!(
                "at least {}, the histogram's bound",
                format_value(bound, Kind::Time)
            )
        };
        let (value, outcome, reason) = match self.value(run) {
            Err(unmeasured) => (None, Outcome::Unknown, Some(unmeasured)),
            Ok(Stat::AtLeast(bound)) if above && self.op.holds(bound, self.threshold) => {
                (None, Outcome::Fail, Some(at_least(bound)))
            }
            Ok(Stat::AtLeast(bound)) => (
                None,
                Outcome::Unknown,
                Some(format!("{}: not known", at_least(bound))),
            ),
            Ok(Stat::Value(v)) if self.op.holds(v, self.threshold) => {
                (Some(v), Outcome::Fail, None)
            }
            Ok(Stat::Value(v)) => (Some(v), Outcome::Pass, None),
        };
        // A verdict on a run whose own sender could not keep its schedule says so.
        let reason = reason.or_else(|| {
            let late = run.flags_record().sender_late_blocks.filter(|&n| n > 0)?;
            (self.metric != "sender_late")
                .then(|| format!("the run's own controller sent {late} blocks late"))
        });
        // A cause's time in a run whose trace missed some of it says so.
        let reason = reason.or_else(|| self.traced().then(|| trace_gaps(run)).flatten());
        GateVerdict {
            expr: self.expr.clone(),
            metric: self.metric.clone(),
            op: self.op.as_str().to_string(),
            threshold: self.threshold,
            unit: self.kind.unit().to_string(),
            value,
            outcome,
            reason,
        }
    }

    /// The gate's value on `run`, or why it was not measured.
    fn value(&self, run: &RunView) -> Result<Stat, String> {
        let (metric, culprit) = split_metric(&self.metric);
        if let Some(Source::Why(figure)) = find(run.probe, metric).map(|n| n.source) {
            return why_value(run, figure, culprit).map(|v| Stat::Value(v as f64));
        }
        self.measured(run).ok_or_else(|| "not measured".to_string())
    }

    fn measured(&self, run: &RunView) -> Option<Stat> {
        if STATS.contains(&self.metric.as_str()) {
            let main = run.probe.main_metric(&run.config)?;
            return stat(run, main, &self.metric);
        }
        let named = find(run.probe, &self.metric)?;
        match named.source {
            Source::Stat(m, s) => stat(run, m, s),
            Source::Misses(m) => {
                let m = if m.is_empty() {
                    run.probe.main_metric(&run.config)?
                } else {
                    m
                };
                run.measurement(m)?.misses.map(|v| Stat::Value(v as f64))
            }
            Source::Result(count) => count(&run.result).map(|v| Stat::Value(v as f64)),
            Source::Dropouts(count) => count(&run.dropouts()).map(|v| Stat::Value(v as f64)),
            Source::Notes(count) => {
                let notes = run.notes();
                (notes.triggers > 0).then(|| Stat::Value(count(&notes) as f64))
            }
            Source::Flag(read) => read(&run.flags_record()).map(Stat::Value),
            Source::Why(figure) => why_value(run, figure, None)
                .ok()
                .map(|v| Stat::Value(v as f64)),
        }
    }
}

/// A figure of the run's trace: a cause's time (0 ns when the trace never saw it), the
/// misses explained or the events lost; or, when the run was not traced, why.
fn why_value(run: &RunView, figure: WhyFigure, culprit: Option<&str>) -> Result<u64, String> {
    let Some(why) = run.why() else {
        return Err(format!(
            "not traced: the run was made without `audiolat {} --why`",
            run.probe
        ));
    };
    if let Some(unavailable) = &why.unavailable {
        return Err(format!("not traced: {unavailable}"));
    }
    Ok(match figure {
        WhyFigure::Cause(kind) => why.culprit_ns(Some(kind), culprit).unwrap_or(0),
        WhyFigure::Misses => why.misses_explained,
        WhyFigure::EventsLost => why.events_lost,
    })
}

/// What a traced run's causes leave out: misses the trace could not take, events the
/// kernel lost (their time is unaccounted). `None`: nothing, or the run was not traced.
fn trace_gaps(run: &RunView) -> Option<String> {
    let why = run.why().filter(|w| w.unavailable.is_none())?;
    let mut gaps = Vec::new();
    if why.misses_dropped > 0 {
        gaps.push(format!(
            "{} misses not explained (the trace could not keep up)",
            why.misses_dropped
        ));
    }
    if why.events_lost > 0 {
        gaps.push(format!(
            "the trace lost {} events (their time is unaccounted)",
            why.events_lost
        ));
    }
    (!gaps.is_empty()).then(|| gaps.join("; "))
}

/// A statistic of a measurement (a percentile above the histogram's bound only "at
/// least" it), absent when the measurement is, or has no samples.
fn stat(run: &RunView, metric: &str, stat: &str) -> Option<Stat> {
    let m = run.measurement(metric)?;
    if stat == "count" {
        return Some(Stat::Value(m.count() as f64));
    }
    m.summary.as_ref()?.stat(stat)
}

/// A value of a kind, for people: `12.5 us`, `3`, `4.2%`.
pub fn format_value(v: f64, kind: Kind) -> String {
    match kind {
        Kind::Count => format!("{v}"),
        Kind::Percent => {
            let text = format!("{v:.2}");
            format!("{}%", text.trim_end_matches('0').trim_end_matches('.'))
        }
        Kind::Time => {
            let a = v.abs();
            let (scaled, unit) = if a >= 1e9 {
                (v / 1e9, "s")
            } else if a >= 1e6 {
                (v / 1e6, "ms")
            } else if a >= 1e3 {
                (v / 1e3, "us")
            } else {
                (v, "ns")
            };
            let text = format!("{scaled:.3}");
            let text = text.trim_end_matches('0').trim_end_matches('.');
            format!("{text} {unit}")
        }
    }
}

/// A gate's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The run is within the gate.
    Pass,
    /// The gate's condition holds: the run fails it.
    Fail,
    /// The metric was not measured; counted as a failure.
    Unknown,
}

impl Outcome {
    /// `pass`, `fail` or `unknown`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Unknown => "unknown",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(s: &str) -> Option<Outcome> {
        Some(match s {
            "pass" => Outcome::Pass,
            "fail" => Outcome::Fail,
            "unknown" => Outcome::Unknown,
            _ => return None,
        })
    }
}

/// A gate judged on a run, as stored with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateVerdict {
    /// The expression as written.
    pub expr: String,
    /// The metric (canonical name).
    pub metric: String,
    /// The comparison.
    pub op: String,
    /// The threshold, in `unit`.
    pub threshold: f64,
    /// `ns`, `count` or `%`.
    pub unit: String,
    /// The measured value in `unit`; `None` when it was not measured.
    pub value: Option<f64>,
    /// The verdict.
    pub outcome: Outcome,
    /// Why, when the value is not there: `not measured`, or (a percentile among the
    /// overflows) `at least <bound>, the histogram's bound`.
    pub reason: Option<String>,
}

impl GateVerdict {
    /// The run fails this gate: its condition holds, or its metric was not measured.
    pub fn failed(&self) -> bool {
        self.outcome != Outcome::Pass
    }

    /// The kind of the value, from its unit.
    pub fn kind(&self) -> Kind {
        Kind::from_unit(&self.unit).unwrap_or(Kind::Count)
    }

    /// The measured value for people (`12.5 us`), or `-` when not measured.
    pub fn value_text(&self) -> String {
        self.value
            .map_or_else(|| "-".to_string(), |v| format_value(v, self.kind()))
    }
}

/// Runs judged by gates: each run's verdicts (a run none of the gates applies to is
/// left out), and whether gates were given at all.
#[derive(Debug, Clone, Default)]
pub struct Judged {
    /// Whether any gate was given (a command's JSON has `"gates"` only then).
    pub given: bool,
    /// Each judged run with its verdicts, in the order of the runs.
    pub runs: Vec<(crate::RunId, Vec<GateVerdict>)>,
    /// The runs are a sweep's or a suite's (their JSON is one object per run, however
    /// many there are), not one run's.
    pub sweep: bool,
    /// The gates that judged no run (a suite's gate whose metric none of its probes
    /// has): each counts as failed.
    pub unjudged: Vec<String>,
}

impl Judged {
    /// Whether a run failed a gate (an unknown verdict too).
    pub fn failed(&self) -> bool {
        !self.unjudged.is_empty()
            || self
                .runs
                .iter()
                .any(|(_, v)| v.iter().any(GateVerdict::failed))
    }
}

/// The help text listing every probe's gate metrics (for `--help` and the README).
pub fn help() -> String {
    let mut out = format!(
        "Exit 3 when EXPR holds on the run as stored (repeatable; the verdicts are stored \
         with the run). EXPR is METRIC OP VALUE[UNIT], OP one of > >= < <= == !=, e.g. \
         'p99.9 > 200us', 'xruns > 0'. A metric the run did not measure makes its gate \
         unknown, which fails. METRIC: {} of the probe's main latency (a time: ns, us, ms, \
         s), or one of the probe's own (a time takes a unit, a count a plain number, \
         steal's percentage 5 or 5%):",
        STATS.join(", ")
    );
    let is_why = |n: &&Named| matches!(n.source, Source::Why(_));
    for p in ProbeKind::gated() {
        let mut names: Vec<String> = p
            .gates
            .iter()
            .filter(|n| !is_why(n))
            .map(|n| {
                let aliases = if n.aliases.is_empty() {
                    String::new()
                } else {
                    format!(" (or {})", n.aliases.join(", "))
                };
                format!("{}{aliases}", n.spelled())
            })
            .collect();
        if p.gates.iter().any(|n| is_why(&n)) {
            names.push("why.*".into());
        }
        out.push_str(&format!(" {p}: {};", names.join(", ")));
    }
    out.pop();
    let why: Vec<String> = WHY.iter().map(Named::spelled).collect();
    out + &format!(
        ". why.* ({}) read the kernel's trace of a run made with --why (`audiolat PROBE \
         --why`): a cause's time over the misses it explained (a time), the misses \
         explained and the events lost (counts); :NAME is one culprit (a thread's name as \
         the kernel keeps it, 15 bytes at most; a softirq's such as NET_RX), NAME* every \
         one it begins. A culprit the trace never saw took 0 ns; a gate on a cause where \
         the kernel cannot be traced is refused before anything runs.",
        why.join(", ")
    )
}

#[cfg(test)]
#[path = "gate_tests.rs"]
mod tests;
