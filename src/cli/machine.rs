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
    /// How long to sample host steal time.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_seconds)]
    pub steal_window: Duration,
    /// First undo what an audiolat killed outright left changed (cpusets, load
    /// balancing, task affinities, network namespaces, qdiscs, state files); needs root.
    #[arg(long)]
    pub fix: bool,
}

#[derive(Debug, Args)]
pub struct LoadWorkerArgs {
    /// The load to run: `ep` or `video`.
    pub kind: String,
    /// Threads.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// SCHED_DEADLINE for each thread, `RUNTIME,DEADLINE,PERIOD` in ns (`,tt`:
    /// time-triggered), taken by each thread once it runs (a deadline cell).
    #[arg(long, value_parser = load::DeadlineShare::from_arg)]
    pub deadline: Option<load::DeadlineShare>,
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
