//! The command line, in two stages, as ripgrep's `lowargs` and `hiargs`.
//!
//! **Stage one: what was typed.** [`Cli`] and the `*Args` types of each command, parsed
//! by clap. Stage one knows syntax and single values only: a flag's type, its range, its
//! default, a list's items, and the conflicts and requirements clap can state
//! (`conflicts_with`, `requires`). A value parser checks one value alone and says what to
//! type instead (`'x' is not a number`); it never looks at another flag.
//!
//! **Stage two: typed configs.** A method on a command's args (e.g.
//! [`JitterArgs::request`], [`EventArgs::request`], [`NetArgs::config`],
//! [`BenchArgs::config`], [`RunsArgs::filter`]) checks what needs several flags together
//! or the machine (a priority the policy has no use for, `--reserve` above `--link`, a
//! CPU list against the online CPUs, `--netns` without root) and builds the library's
//! typed objects once (`JitterConfig`, the sweep's `EventCell`s, `NetConfig`,
//! `BenchConfig`, `RunFilter`, a checked `Plan`). Its errors are [`UsageError`]s naming
//! the flags (exit 2). The command's code in `commands/` calls it first, before anything
//! is opened, started or written, and reads the typed objects, not the flags. Nothing
//! below the binary sees a clap type.
//!
//! Neither stage has side effects: bad input is refused before anything starts.
//!
//! **A new command's flags** go in a module of their own here (or its family's: the net
//! roles, the stored-run commands), with its value parsers beside it unless another
//! command shares them ([`values`]); its variant goes in [`Command`], and what the rest
//! of the binary names is re-exported below (nothing else). Its stage two is a method
//! on its args in the same module.
//!
//! Every measuring command has its stage two: [`JitterArgs::request`],
//! [`EventArgs::request`], [`RoundtripArgs::request`], [`NetArgs::config`],
//! [`SuiteArgs::request`], [`RunPlanArgs::plan`] / [`ReproduceArgs::plan`] (the plan
//! checked cell by cell against these very definitions). The stored-run commands
//! resolve `last` and the default group against the store, so that part of their stage
//! two waits for the store.

mod audio;
mod bench;
mod event;
mod jitter;
mod machine;
mod net;
mod net_roles;
mod plans;
mod policy;
mod roundtrip;
mod stored;
mod values;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

// What the rest of the binary names (the command's args and stage-two results it
// destructures); callers import what they use.
pub use self::audio::{AudioArgs, BackendName, SweepRequest};
pub use self::bench::BenchArgs;
pub use self::event::EventArgs;
pub use self::jitter::JitterArgs;
pub use self::machine::{
    CompletionsArgs, DevicesArgs, DoctorArgs, LoadWorkerArgs, ManArgs, SuperviseArgs,
};
pub use self::net::{NetArgs, NetRequest};
pub use self::net_roles::{EmulateArgs, Experiment, ExperimentArgs, NetRole, RespondArgs};
pub use self::plans::{PlanRunArgs, ReproduceArgs, RunPlanArgs, SuiteArgs, SuiteRequest};
pub use self::roundtrip::{LoopArgs, RoundtripArgs};
pub use self::stored::{
    CompareArgs, ExportArgs, ExportFormat, PushArgs, ReportArgs, RunRef, RunsArgs, ShowArgs,
    Subject,
};
pub use self::values::FarmFormat;

/// A usage error: refused before anything started. Exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

#[derive(Debug, Parser)]
#[command(
    name = "audiolat",
    version,
    about = "Real-time audio latency test bench for Linux",
    long_about = "audiolat measures how responsive a Linux machine is for real-time audio: \
                  wake-up jitter, event-to-audio and round-trip latency, network-audio deadlines. \
                  Every run is stored in SQLite (--db, default ./audiolat.db).",
    propagate_version = true
)]
pub struct Cli {
    /// Results database: an SQLite file, created when a probe first writes to it, or a
    /// shared PostgreSQL store, postgres://USER@HOST[:PORT]/DBNAME.
    #[arg(
        long,
        global = true,
        value_name = "PATH|URL",
        env = "AUDIOLAT_DB",
        default_value = "audiolat.db"
    )]
    pub db: PathBuf,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check this machine's set-up for real-time audio (verdict and fix per finding).
    Doctor(DoctorArgs),
    /// List what can be measured here: ALSA cards and PCM devices with the formats, rates,
    /// channels and period/buffer sizes each accepts (opened read-only, nothing played),
    /// the running audio servers and their ports, and the --backend/--device to pass.
    Devices(DevicesArgs),
    /// Periodic wake-up latency and audio-fragment deadlines (latencytest, cyclictest).
    Jitter(JitterArgs),
    /// Event-to-audio latency: a trigger starts a tone; time to its first sample at the DAC.
    Event(EventArgs),
    /// Full-duplex round trip: a signal out, through a loop, back in (impulse onset and
    /// multi-tone phase).
    Roundtrip(RoundtripArgs),
    /// Run a JACK client that loops its input to its output N frames later, until Ctrl-C
    /// (a software loop any tool can measure, e.g. jack_iodelay).
    Loop(LoopArgs),
    /// DSP capacity: ns per sample of every workload and how many voices fit in a period.
    Bench(BenchArgs),
    /// Network audio against a hard deadline: a controller streaming gesture data at
    /// audio rate and a host answering each block with the Migrator synth (Tessellation).
    Net(NetArgs),
    /// Run doctor and every probe with short defaults, stored as one group of runs.
    Suite(SuiteArgs),
    /// Run a plan file: one probe over a matrix of settings (TOML), each cell a run of
    /// one plan run, then print its tables and write its report.
    Run(RunPlanArgs),
    /// Run a published study's design, scaled to this machine: bbb2014, macmillan2001,
    /// tessellation2013 or latencytest1999 (--print shows the plan, to edit and `run`).
    Reproduce(ReproduceArgs),
    /// Write a self-contained HTML report of runs, a plan run or a group.
    Report(ReportArgs),
    /// Two runs or plan runs side by side: each statistic's change, and whether it
    /// exceeds the run-to-run noise the repeats show.
    Compare(CompareArgs),
    /// List stored runs, newest first.
    Runs(RunsArgs),
    /// Print one stored run.
    Show(ShowArgs),
    /// Export a stored run.
    Export(ExportArgs),
    /// Copy the closed runs of --db (a board's SQLite file) into a shared store, with
    /// their measurements, events, series, triggers and groups; pushing twice stores
    /// nothing twice.
    Push(PushArgs),
    /// Print the shell's completion script (e.g. `audiolat completions bash >
    /// ~/.local/share/bash-completion/completions/audiolat`).
    Completions(CompletionsArgs),
    /// Print the manual page (`audiolat man | man -l -`), or write one per command.
    Man(ManArgs),
    /// Run a built-in load in this process (used by --load ep).
    #[command(name = "__load", hide = true)]
    Load(LoadWorkerArgs),
    /// Run a load under supervision (how every load is started).
    #[command(name = "__supervise", hide = true)]
    Supervise(SuperviseArgs),
}
