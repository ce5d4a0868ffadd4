//! The Tessellation study's experiments (Figures 7 and 8) as a runner plan: the cases are
//! read from the study's preset (its `[sweep] case = [...]`, the one design), and each
//! is measured as a stored network run in one group.
//!
//! Promises: nothing is printed (progress goes to an [`ExperimentObserver`]); a case
//! that fails does not stop the others (its row carries the error); a stop request ends
//! the plan before the next case.

use std::path::PathBuf;

use load::LoadSpec;
use probes::net::{LinkShaping, NetConfig, ReserveBy, StreamConfig};
use probes::probe::NetProbe;
use qos::{CellPlan, CellSet};
use results::{GroupId, RunSink, RunStatus};

use crate::group::GroupEnd;
use crate::{Cell, Context, NetRun, RunError, Unobserved};

/// A preset that does not describe an experiment (a bug in the shipped preset, or a
/// `--cpu` its cells cannot take).
#[derive(Debug, thiserror::Error)]
#[error("the experiment's preset {preset}: {problem}")]
pub struct DesignError {
    /// The preset's name (or `?` before it was read).
    pub preset: String,
    /// What is wrong.
    pub problem: String,
}

/// The study's two experiments, each designed by its shipped preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Study {
    /// Figure 7: the music application alone and beside video players and EP, without
    /// and with a dedicated cell (`tessellation2013`).
    Isolation,
    /// Figure 8: an abusive stream on a shaped link, with and without a reservation
    /// (`tessellation2013-bandwidth`).
    Bandwidth,
}

/// Why this machine cannot run an experiment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StudyRefusal {
    /// The isolation experiment without root or with one CPU.
    #[error(
        "the isolation experiment moves tasks between cpusets: it needs root and at least 2 CPUs"
    )]
    IsolationNeedsRootAndCpus,
    /// The bandwidth experiment without root.
    #[error(
        "the bandwidth experiment shapes a veth link between two network namespaces: it needs root"
    )]
    BandwidthNeedsRoot,
}

impl Study {
    /// Its name: `isolation` or `bandwidth`.
    pub fn name(self) -> &'static str {
        match self {
            Study::Isolation => "isolation",
            Study::Bandwidth => "bandwidth",
        }
    }

    /// Whether a machine with `root` and `cpus` online CPUs can run it.
    pub fn check_machine(self, root: bool, cpus: usize) -> Result<(), StudyRefusal> {
        match self {
            Study::Isolation if !root || cpus < 2 => Err(StudyRefusal::IsolationNeedsRootAndCpus),
            Study::Bandwidth if !root => Err(StudyRefusal::BandwidthNeedsRoot),
            _ => Ok(()),
        }
    }

    /// Its cases from its `design`: isolation's music cell on `host_cpu`; bandwidth's
    /// over a link of `link_mbps`, only those whose reservation `by` keeps (`None`: all;
    /// a case that names nobody is `tc`'s).
    pub fn cases(
        self,
        design: &ExperimentDesign,
        host_cpu: usize,
        link_mbps: f64,
        by: Option<ReserveBy>,
    ) -> Result<Vec<ExperimentCase>, DesignError> {
        match self {
            Study::Isolation => design.cases(Some(host_cpu), None),
            Study::Bandwidth => Ok(design
                .cases(None, Some(link_mbps))?
                .into_iter()
                .filter(|c| by.is_none_or(|by| c.design.reserve_by.unwrap_or(ReserveBy::Tc) == by))
                .collect()),
        }
    }

    /// Its design, read from its shipped preset.
    pub fn design(self) -> Result<ExperimentDesign, DesignError> {
        let preset = match self {
            Study::Isolation => "tessellation2013",
            Study::Bandwidth => "tessellation2013-bandwidth",
        };
        let preset: crate::presets::Preset = preset.parse().expect("a shipped preset");
        ExperimentDesign::from_preset(&preset.text(false))
    }
}

/// An experiment as its preset designs it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentDesign {
    /// The preset's name.
    pub name: String,
    /// The metric its first report table reads (`response_time`, `end_to_end`).
    pub metric: String,
    /// The two ends run in two network namespaces (`[set] netns`).
    pub netns: bool,
    /// The link's capacity, Mbit/s (`[set] link`), when the link is shaped.
    pub link_mbps: Option<f64>,
    /// The cases, in the preset's order.
    pub cases: Vec<CaseDesign>,
}

/// One case of the design, as the preset writes it.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseDesign {
    /// What the case changes (the row's label).
    pub label: String,
    /// The load spec (`none` when the case and `[set]` give none).
    pub load: String,
    /// The cells, as `--cell` flags.
    pub cells: Vec<String>,
    /// The cell the host runs in.
    pub host_cell: Option<String>,
    /// The bandwidth reserved for the audio, Mbit/s.
    pub reserve_mbps: Option<f64>,
    /// Who shapes the link and keeps the reservation.
    pub reserve_by: Option<ReserveBy>,
}

/// One case ready to run.
#[derive(Debug, Clone)]
pub struct ExperimentCase {
    /// The case's design.
    pub design: CaseDesign,
    /// Its load.
    pub load: LoadSpec,
    /// Its cells and the host's cell.
    pub cells: CellPlan,
    /// Its link shaping, when the link is shaped.
    pub link: Option<LinkShaping>,
}

/// What an experiment runs: its cases, each over `base` (duration, warm-up).
#[derive(Debug, Clone)]
pub struct ExperimentPlan {
    /// The cases, in order.
    pub cases: Vec<ExperimentCase>,
    /// The network configuration every case starts from.
    pub base: NetConfig,
    /// The two ends in two network namespaces.
    pub netns: bool,
    /// The group the runs are stored in.
    pub group: Option<GroupId>,
    /// Where the disk load writes.
    pub scratch: PathBuf,
}

/// A case's row: its design and its run, or why it has none.
#[derive(Debug)]
pub struct CaseResult {
    /// The case.
    pub case: ExperimentCase,
    /// The run, or the error that ended it.
    pub run: Result<NetRun, RunError>,
}

/// Watches an experiment's progress.
pub trait ExperimentObserver {
    /// Case `index` (from 0) of `total` starts.
    fn case_starting(&self, _index: usize, _total: usize, _case: &ExperimentCase) {}
}

impl ExperimentDesign {
    /// Reads the design from a preset's text: `name`, `[set] netns / link / load`, the
    /// `[sweep] case` list (label, load, cell, host-cell, reserve, reserve-by), and the
    /// metric of the first `[[report.table]]`.
    pub fn from_preset(text: &str) -> Result<ExperimentDesign, DesignError> {
        let err = |preset: &str, problem: String| DesignError {
            preset: preset.to_string(),
            problem,
        };
        let doc: toml_edit::DocumentMut = text.parse().map_err(|e| err("?", format!("{e}")))?;
        let name = doc
            .get("name")
            .and_then(toml_edit::Item::as_str)
            .ok_or_else(|| err("?", "no name".into()))?
            .to_string();
        let bad = |problem: String| err(&name, problem);
        let set = |k: &str| doc.get("set").and_then(|s| s.get(k));
        let set_str = |k: &str| set(k).and_then(toml_edit::Item::as_str);
        let netns = set("netns")
            .and_then(toml_edit::Item::as_bool)
            .unwrap_or(false);
        let link_mbps = set_str("link")
            .map(qos::parse_mbps)
            .transpose()
            .map_err(bad)?;
        let metric = doc
            .get("report")
            .and_then(|r| r.get("table"))
            .and_then(|t| t.get(0))
            .and_then(|t| t.get("value"))
            .and_then(toml_edit::Item::as_str)
            .and_then(|v| v.split('.').next())
            .ok_or_else(|| bad("no [[report.table]] value to name its metric".into()))?
            .to_string();
        let cases = doc
            .get("sweep")
            .and_then(|s| s.get("case"))
            .and_then(toml_edit::Item::as_array)
            .ok_or_else(|| bad("no [sweep] case = [...] list".into()))?
            .iter()
            .map(|c| case_design(c, set_str("load").unwrap_or("none")).map_err(bad))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ExperimentDesign {
            name,
            metric,
            netns,
            link_mbps,
            cases,
        })
    }

    /// The cases ready to run: `host_cpu`, when given, is the host cell's CPU (instead of
    /// the preset's); `link_mbps`, when given, the link's capacity.
    pub fn cases(
        &self,
        host_cpu: Option<usize>,
        link_mbps: Option<f64>,
    ) -> Result<Vec<ExperimentCase>, DesignError> {
        let bad = |problem: String| DesignError {
            preset: self.name.clone(),
            problem,
        };
        let link_mbps = link_mbps.or(self.link_mbps);
        self.cases
            .iter()
            .map(|d| {
                let load: LoadSpec = d
                    .load
                    .parse()
                    .map_err(|e: load::SpecError| bad(format!("case {}: {e}", d.label)))?;
                let mut cells = CellSet::default();
                for flag in &d.cells {
                    let mut cell = CellSet::parse_flag(flag).map_err(&bad)?;
                    if d.host_cell.as_deref() == Some(cell.name.as_str()) {
                        if let Some(cpu) = host_cpu {
                            cell.cpus = Some(vec![cpu]);
                        }
                    }
                    cells.push(cell).map_err(&bad)?;
                }
                let link = link_mbps.map(|mbps| LinkShaping {
                    mbps,
                    reserve_mbps: d.reserve_mbps,
                    by: d.reserve_by.unwrap_or(ReserveBy::Tc),
                });
                Ok(ExperimentCase {
                    design: d.clone(),
                    load,
                    cells: CellPlan {
                        cells,
                        host_cell: d.host_cell.clone(),
                    },
                    link,
                })
            })
            .collect()
    }
}

/// One `{ label = ..., ... }` of `[sweep] case`; `load` is `[set]`'s.
fn case_design(case: &toml_edit::Value, load: &str) -> Result<CaseDesign, String> {
    let shown = case.to_string();
    let shown = shown.trim();
    let table = case
        .as_inline_table()
        .ok_or_else(|| format!("a case is a table, not {shown}"))?;
    let text = |k: &str| table.get(k).and_then(toml_edit::Value::as_str);
    let label = text("label").ok_or_else(|| format!("case {shown} has no label"))?;
    let cells = match table.get("cell") {
        None => Vec::new(),
        Some(toml_edit::Value::Array(a)) => a
            .iter()
            .map(|c| c.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| format!("case {label}: cell is a list of strings"))?,
        Some(other) => {
            return Err(format!(
                "case {label}: cell is a list, not {}",
                other.to_string().trim()
            ))
        }
    };
    let reserve_by = text("reserve-by")
        .map(|by| {
            by.parse::<ReserveBy>()
                .map_err(|e| format!("case {label}: reserve-by {by}: {e}"))
        })
        .transpose()?;
    Ok(CaseDesign {
        label: label.to_string(),
        load: text("load").unwrap_or(load).to_string(),
        cells,
        host_cell: text("host-cell").map(str::to_string),
        reserve_mbps: text("reserve").map(qos::parse_mbps).transpose()?,
        reserve_by,
    })
}

/// How an experiment's runs went, for its group's status: each case by its stored
/// status, a case without a run as failed, and interrupted when a stop kept some of its
/// `cases` from running.
pub fn group_end(results: &[CaseResult], cases: usize) -> GroupEnd {
    let mut end = GroupEnd {
        interrupted: results.len() < cases,
        ..GroupEnd::default()
    };
    for r in results {
        match r.run.as_ref().map(|c| c.run.status) {
            Ok(RunStatus::Complete) => {}
            Ok(RunStatus::Interrupted) => end.interrupted = true,
            _ => end.run_failed = true,
        }
    }
    end
}

/// Runs the plan's cases in order as stored network runs, until a stop is requested.
pub fn run(
    ctx: &Context,
    sink: &dyn RunSink,
    plan: &ExperimentPlan,
    observer: &dyn ExperimentObserver,
) -> Vec<CaseResult> {
    let mut rows = Vec::new();
    for (i, case) in plan.cases.iter().enumerate() {
        if ctx.stopped() {
            break;
        }
        observer.case_starting(i, plan.cases.len(), case);
        match run_case(ctx, sink, plan, case) {
            // A stop before the run measured anything: nothing of it was stored.
            Err(RunError::Stopped) => break,
            run => rows.push(CaseResult {
                case: case.clone(),
                run,
            }),
        }
    }
    rows
}

/// One case as a stored network run.
fn run_case(
    ctx: &Context,
    sink: &dyn RunSink,
    plan: &ExperimentPlan,
    case: &ExperimentCase,
) -> Result<NetRun, RunError> {
    let config = NetConfig {
        netns: plan.netns,
        link: case.link,
        stream: case.load.stream().map(|mbps| StreamConfig {
            mbps,
            sink_groups: Vec::new(),
        }),
        ..plan.base.clone()
    };
    let mut cell = Cell {
        group: plan.group,
        cells: Some(case.cells.clone()),
        ..Cell::new(
            NetProbe::new(config),
            case.load.clone(),
            plan.scratch.clone(),
        )
    };
    let run = crate::run(ctx, sink, &mut cell, None, &Unobserved)?;
    Ok(crate::with_outcome(run, &mut cell.probe))
}
