//! Plan files: one probe, the settings every cell shares, and the axes to sweep, expanded
//! into the cells of a matrix. Everything here is checked before anything runs: a
//! malformed plan is refused with its file, line and column and the fix.
//!
//! ```toml
//! name = "alsa-periods"        # names the plan run
//! probe = "event"              # jitter | event | roundtrip | net
//! repeats = 3                  # every cell this many times (default 1)
//! fail_if = ["p99 > 20ms"]     # gates every cell's run is judged by (--fail-if)
//!
//! [set]                        # flags every cell gets: --triggers 20 --server dummy
//! triggers = 20
//! server = "dummy"
//!
//! [sweep]                      # axes; every combination is a cell, outermost first
//! backend = ["alsa", "jack"]   # a flag's values
//! profile = ["opt1", "opt3"]   # the build profile: target/opt1/audiolat ...
//! buffer = [                   # several flags per value, with a label
//!   { label = "128/64", period = 64, periods = 2 },
//!   { label = "256/128", period = 128, periods = 2 },
//! ]
//!
//! [[exclude]]                  # combinations not to run, by label
//! backend = "jack"
//! buffer = "256/64"
//! reason = "a JACK server's buffer is two periods"
//! ```
//!
//! `[report]` and `[published]` describe the paper-shaped tables of the report and the
//! study's own figures; they are checked against the axes here and passed on as JSON.
//!
//! The files: [`spanned`] (TOML values with their place in the text, and the error
//! helpers), [`axes`] (settings, axes and exclusions), [`parse`] (a plan file),
//! [`cells`] (the expansion into cells, each a typed [`CellCommand`]), [`report_check`]
//! (`[report]`), [`cell_ref`] (the `GROUP:CELL` a cell's process is given, as a
//! [`PlanCellRef`]) and [`run`] (running the cells).
//!
//! What a cell's command line may be is the command-line parser's to say, and this crate
//! has none: the caller's [`CellChecker`] lists a probe's flags, checks a cell's command
//! line and says which private JACK server it needs. Nothing here prints: a plan run's
//! progress and news go to a [`PlanObserver`].

use results::probe_kind::{EVENT, JITTER, NET, ROUNDTRIP};
use results::ProbeKind;
use serde_json::{json, Map, Value};

mod axes;
mod cell_ref;
mod cells;
mod command;
mod parse;
mod report_check;
mod run;
mod spanned;
#[cfg(test)]
mod tests;

pub use axes::Flag;
pub use cell_ref::{BadPlanCellRef, PlanCellRef};
pub use command::CellCommand;
pub use run::{
    binary_for, execute, order, private_server, server_settings, Closed, PlanObserver,
    PlanProgress, PlanRun, PlanRunEnd, PlanRunError, PlanRunSummary, PlanStarted, Planned, Resume,
    ServerKey, Tally,
};

use spanned::Ctx;

/// What the command-line parser says about probes and cells: the plan's parse asks it
/// a probe's flags, the plan run whether a probe takes `--quiet` and whether each cell's
/// command line is one its process would run.
pub trait CellChecker {
    /// The flags of `probe`'s command line, hidden ones left out (empty: `probe` is not
    /// a command).
    fn flags(&self, probe: &str) -> Vec<Flag>;

    /// Whether `probe`'s command takes `--quiet` (no status line of its own).
    fn takes_quiet(&self, probe: &str) -> bool;

    /// Checks a cell's command line as its process would, without side effects: parsed
    /// by the command line's parser, then the probe's own checks. `Ok` with the private
    /// JACK server the cell's process would start for itself (which the plan run starts
    /// once for all the cells that share it), if any.
    fn check(&self, command: &CellCommand) -> Result<Option<ServerKey>, CellRefusal>;
}

/// Why a cell's command line was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CellRefusal {
    /// It is not a command line of the probe (the parser's message, one line).
    #[error("{0}")]
    NotACommandLine(String),
    /// It parses, but the probe refuses to run it (its own checks' message).
    #[error("{0}")]
    CannotRun(String),
}

/// The probes a plan can sweep.
pub const PROBES: [&str; 4] = [JITTER.name, EVENT.name, ROUNDTRIP.name, NET.name];

/// The most values one axis may have.
pub const MAX_AXIS_VALUES: usize = 1000;

/// The most cells a plan may have (every combination of its axes, times its repeats,
/// before exclusions). A cell is a run of seconds at least: this is days of measuring,
/// and the largest study preset has 675.
pub const MAX_CELLS: u64 = 10_000;

/// A refusal, with where it is in the file and what to do.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanError {
    /// The plan's file (or `preset NAME`).
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}; fix: {}",
            self.file, self.line, self.column, self.message, self.fix
        )
    }
}

impl std::error::Error for PlanError {}

/// One flag of a cell: `--name value`, or `--name` for a switch.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// The long flag without dashes.
    pub flag: String,
    /// Its value (`None`: a switch).
    pub value: Option<String>,
    at: usize,
}

/// One value of an axis.
#[derive(Debug, Clone, PartialEq)]
pub struct AxisValue {
    /// How the value is named in keys, tables and exclusions.
    pub label: String,
    /// The flags it sets.
    pub settings: Vec<Setting>,
    /// The build profile it selects (the `profile` axis, or a `profile` key).
    pub profile: Option<String>,
    at: usize,
}

/// An axis to sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Its name.
    pub name: String,
    /// Its values, in order.
    pub values: Vec<AxisValue>,
}

#[derive(Debug, Clone)]
struct Exclude {
    /// (axis index, value indices) that must all match.
    matches: Vec<(usize, Vec<usize>)>,
    reason: String,
    at: usize,
    used: std::cell::Cell<bool>,
}

/// A plan, parsed and checked (not yet expanded).
#[derive(Debug, Clone)]
pub struct Plan {
    /// Names the plan run (and finds it again for --resume).
    pub name: String,
    /// A title for reports.
    pub title: String,
    /// What the plan reproduces, for reports.
    pub description: String,
    /// The probe every cell runs.
    pub probe: String,
    /// Runs per cell.
    pub repeats: u32,
    /// Flags every cell gets.
    pub set: Vec<Setting>,
    /// Axes, outermost first.
    pub axes: Vec<Axis>,
    /// Where the plan came from: a path, or `preset NAME`.
    pub source: String,
    /// The plan's text.
    pub text: String,
    /// `[report]` as JSON (tables to lay out).
    pub report: Value,
    /// `[published]` as JSON (the study's figures).
    pub published: Value,
    excludes: Vec<Exclude>,
}

/// One configuration of the matrix: one run of one binary.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Identity in the plan: axis labels and the repeat.
    pub key: String,
    /// Axis name -> label, in axis order, then `repeat`.
    pub axes: Vec<(String, String)>,
    /// Its command line (`event --backend alsa ...`).
    pub command: CellCommand,
    /// The build profile (`current`: the running binary).
    pub profile: String,
    /// 1-based repeat.
    pub repeat: u32,
    at: usize,
}

impl Cell {
    /// The axes as a JSON object (with the repeat).
    pub fn axes_json(&self) -> Value {
        Value::Object(
            self.axes
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect(),
        )
    }
}

impl Plan {
    /// Its cells before exclusions: every combination of its axes, times its repeats.
    pub fn cell_count(&self) -> u64 {
        let combinations = |n, a: &Axis| n * a.values.len() as u64;
        self.axes.iter().fold(u64::from(self.repeats), combinations)
    }

    /// Where a cell's first axis value is, as `file:line`.
    pub fn location(&self, cell: &Cell) -> String {
        let ctx = Ctx {
            file: &self.source,
            text: &self.text,
        };
        let e = ctx.err(cell.at, "", "");
        format!("{}:{}", e.file, e.line)
    }

    /// The command (after `audiolat --db DB`) that runs this plan again, to which
    /// `--resume GROUP` is added: `run FILE`, or `reproduce STUDY [--quick]` for a preset.
    pub fn rerun_command(&self) -> String {
        match self.source.strip_prefix("preset ") {
            Some(name) => format!(
                "reproduce {}{}",
                name.trim_end_matches(" --quick"),
                if name.ends_with(" --quick") {
                    " --quick"
                } else {
                    ""
                }
            ),
            None => format!("run {}", load::shell_quote(&self.source)),
        }
    }

    /// Adds gates (`--fail-if` given to `run` or `reproduce`) to every cell, after the
    /// plan's own `fail_if`; refused when the probe does not have a gate's metric.
    pub fn add_gates(
        &mut self,
        gates: &[results::gate::Gate],
    ) -> Result<(), results::gate::GateError> {
        for g in gates {
            let g = g.check_probe(ProbeKind::stored(&self.probe))?;
            self.set.push(Setting {
                flag: "fail-if".into(),
                value: Some(g.expr),
                at: 0,
            });
        }
        Ok(())
    }

    /// The gates every cell is judged by (`fail_if`, then `--fail-if`).
    pub fn gates(&self) -> Vec<String> {
        self.set
            .iter()
            .filter(|s| s.flag == "fail-if")
            .filter_map(|s| s.value.clone())
            .collect()
    }

    /// The plan as JSON, stored with its plan run (the report reads its tables here).
    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "probe": self.probe,
            "repeats": self.repeats,
            "source": self.source,
            "text": self.text,
            "axes": self.axes.iter().map(|a| json!({
                "name": a.name,
                "labels": a.values.iter().map(|v| v.label.clone()).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "exclude": self.excludes.iter().map(|x| json!({
                "axes": x.matches.iter().map(|(a, vs)| (
                    self.axes[*a].name.clone(),
                    json!(vs.iter().map(|v| self.axes[*a].values[*v].label.clone()).collect::<Vec<_>>()),
                )).collect::<Map<_, _>>(),
                "reason": x.reason,
            })).collect::<Vec<_>>(),
            "report": self.report,
            "published": self.published,
            "fail_if": self.gates(),
        })
    }
}
