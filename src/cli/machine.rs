//! The commands about the machine rather than a run (`doctor`, `devices`), the
//! documents made from these definitions (`completions`, `man`) and the hidden workers
//! the binary starts itself (`__load`, `__supervise`): their flags.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::values::parse_seconds;

#[derive(Debug, Args)]
pub struct SuperviseArgs {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

#[derive(Debug, Args)]
pub struct DevicesArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// How long to sample host steal time (100 ms to 10 min: steal is counted in 10 ms
    /// ticks).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_seconds)]
    pub steal_window: Duration,
    /// First undo what an audiolat killed outright left changed (cpusets, load
    /// balancing, task affinities, network namespaces, qdiscs, state files); needs root.
    #[arg(long)]
    pub fix: bool,
}

impl DoctorArgs {
    /// Stage two: the steal window, long enough to count steal in
    /// (`probes::doctor::check_steal_window`).
    pub fn checked_steal_window(&self) -> Result<Duration, super::UsageError> {
        probes::doctor::check_steal_window(self.steal_window).map_err(|e| {
            super::UsageError(format!(
                "--steal-window {:?} is out of range: use {:?} to {:?} (steal is counted in {:?} ticks: a shorter window cannot tell none from a host that takes a tenth of the CPU)",
                e.window,
                e.range.start(),
                e.range.end(),
                *e.range.start() / probes::doctor::MIN_STEAL_WINDOW_TICKS
            ))
        })?;
        Ok(self.steal_window)
    }
}

#[derive(Debug, Args)]
pub struct LoadWorkerArgs {
    /// The load to run: `ep` or `video`.
    pub kind: String,
    /// Threads.
    #[arg(long, default_value_t = 1, allow_hyphen_values = true,
          value_parser = super::values::parse_usize_any)]
    pub threads: usize,
    /// SCHED_DEADLINE for each thread, `RUNTIME,DEADLINE,PERIOD` in ns (`,tt`:
    /// time-triggered), taken by each thread once it runs (a deadline cell).
    #[arg(long, value_parser = load::DeadlineShare::from_arg)]
    pub deadline: Option<load::DeadlineShare>,
}

impl LoadWorkerArgs {
    /// Stage two: a built-in load and threads in their range, before it runs.
    pub fn check(&self) -> Result<(), super::UsageError> {
        load::worker::check(&self.kind, self.threads).map_err(|e| {
            super::UsageError(match e {
                load::worker::WorkerError::Threads(_) => format!("--threads {e}"),
                other => other.to_string(),
            })
        })
    }
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish (or elvish, powershell).
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write audiolat.1 and a page per command (audiolat-jitter.1, ...) into DIR
    /// instead of printing audiolat.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}
