//! The commands that run several probes as one group: `suite`, `run` (a plan file) and
//! `reproduce` (a study's preset plan). Their flags (stage one) and what they run
//! (stage two): the suite's settings, the plan checked against the CLI's probes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use runner::plan::{Plan, Resume};
use runner::presets::Preset;

use super::values::parse_seconds;
use super::UsageError;

#[derive(Debug, Args)]
pub struct SuiteArgs {
    /// Time per probe run (1 s to 1 hour).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_seconds)]
    pub each: Duration,
    #[command(flatten)]
    pub scratch: super::values::ScratchArgs,
    #[command(flatten)]
    pub output: super::values::OutputArgs,
    #[command(flatten)]
    pub gates: super::values::GateArgs,
}

/// What `audiolat suite` runs, built once from its flags (stage two).
#[derive(Debug)]
pub struct SuiteRequest {
    /// Time per probe run.
    pub each: Duration,
    /// Directory for the io load's files: `--scratch-dir`, else the database's directory.
    pub scratch_dir: PathBuf,
    /// `--json` and `--quiet`.
    pub output: super::values::OutputArgs,
}

impl SuiteArgs {
    /// Stage two: the scratch directory checked before anything is written (a probe
    /// whose tool is missing is skipped, by name, later: "every probe that can run
    /// here"). `default_scratch` is the database's directory.
    pub fn request(&self, default_scratch: &Path) -> Result<SuiteRequest, UsageError> {
        self.gates.check_many()?;
        runner::suite::check_each(self.each).map_err(|e| {
            UsageError(format!(
                "--each {:?} is out of range: use 1 s to 1 hour (each probe's time)",
                e.0
            ))
        })?;
        let scratch_dir = self.scratch.or(default_scratch);
        if !scratch_dir.is_dir() {
            return Err(UsageError(format!(
                "--scratch-dir {}: not a directory; give an existing directory on the disk to load",
                scratch_dir.display()
            )));
        }
        Ok(SuiteRequest {
            each: self.each,
            scratch_dir,
            output: self.output,
        })
    }
}

/// How a plan runs (shared by `run` and `reproduce`).
#[derive(Debug, Clone, Args)]
pub struct PlanRunArgs {
    /// Continue an interrupted plan run: the latest unfinished one of this plan, or the
    /// plan run (group) given. Cells already stored complete are skipped.
    #[arg(long, value_name = "GROUP", num_args = 0..=1, default_missing_value = "latest",
          value_parser = parse_resume)]
    pub resume: Option<Resume>,
    /// Check the plan and list its cells in run order; run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Write the report here (default: NAME-report-plan-GROUP.html beside the database
    /// NAME.db).
    #[arg(long, value_name = "PATH", conflicts_with = "no_report")]
    pub report: Option<PathBuf>,
    /// Write no HTML report (the terminal tables are still printed).
    #[arg(long)]
    pub no_report: bool,
    #[command(flatten)]
    pub output: super::values::OutputArgs,
    #[command(flatten)]
    pub gates: super::values::GateArgs,
}

fn parse_resume(s: &str) -> Result<Resume, String> {
    if s == "latest" {
        return Ok(Resume::Latest);
    }
    s.parse::<results::GroupId>()
        .map(Resume::Group)
        .map_err(|_| format!("'{s}': give a plan run's group id (`audiolat runs` shows it), or no value for the latest"))
}

#[derive(Debug, Args)]
pub struct RunPlanArgs {
    /// The plan file (TOML; `audiolat reproduce bbb2014 --print` shows one).
    #[arg(value_name = "PLAN")]
    pub plan: PathBuf,
    #[command(flatten)]
    pub run: PlanRunArgs,
}

#[derive(Debug, Args)]
pub struct ReproduceArgs {
    /// The study: bbb2014, macmillan2001, tessellation2013 or latencytest1999.
    #[arg(value_name = "STUDY", value_parser = str::parse::<Preset>)]
    pub study: Preset,
    /// The few-minute variant (fewer repeats and triggers, shorter runs).
    #[arg(long)]
    pub quick: bool,
    /// Print the preset's plan (TOML) and exit: save it, edit it, `audiolat run` it.
    #[arg(long)]
    pub print: bool,
    #[command(flatten)]
    pub run: PlanRunArgs,
}

impl RunPlanArgs {
    /// Stage two: the plan file read, parsed and each cell checked as the CLI would.
    pub fn plan(&self) -> Result<Plan, UsageError> {
        let text = std::fs::read_to_string(&self.plan).map_err(|e| {
            UsageError(format!(
                "cannot read plan {}: {e} (`audiolat reproduce bbb2014 --print > plan.toml` writes one to start from)",
                self.plan.display()
            ))
        })?;
        let plan = crate::plan::parse(&text, &self.plan.display().to_string())
            .map_err(|e| UsageError(e.to_string()))?;
        with_gates(plan, &self.run.gates)
    }
}

impl ReproduceArgs {
    /// Stage two: the preset's plan, parsed and checked against the CLI's probes.
    pub fn plan(&self) -> Result<Plan, UsageError> {
        let (text, source) = (self.study.text(self.quick), self.study.source(self.quick));
        let plan = crate::plan::parse(&text, &source).map_err(|e| UsageError(e.to_string()))?;
        with_gates(plan, &self.run.gates)
    }
}

/// The plan with `--fail-if`'s gates added to its cells' own.
fn with_gates(mut plan: Plan, gates: &super::values::GateArgs) -> Result<Plan, UsageError> {
    gates.check_many()?;
    plan.add_gates(&gates.fail_if)
        .map_err(|e| UsageError(format!("--fail-if {e}")))?;
    Ok(plan)
}
