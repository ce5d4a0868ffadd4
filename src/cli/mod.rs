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
#[cfg(test)]
mod bounds_tests;
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
pub use self::event::{event_message, EventArgs};
pub use self::jitter::JitterArgs;
pub use self::machine::{
    CompletionsArgs, DevicesArgs, DoctorArgs, LoadWorkerArgs, ManArgs, SuperviseArgs,
};
pub use self::net::{net_usage, NetArgs, NetRequest};
pub use self::net_roles::{EmulateArgs, Experiment, ExperimentArgs, NetRole, RespondArgs};
pub use self::plans::{PlanRunArgs, ReproduceArgs, RunPlanArgs, SuiteArgs, SuiteRequest};
pub use self::roundtrip::{roundtrip_flag, LoopArgs, RoundtripArgs};
pub use self::stored::{
    CompareArgs, ExportArgs, PushArgs, ReportArgs, RunRef, RunsArgs, ShowArgs, Subject,
};
pub use self::values::{number, FarmFormat, GateArgs};

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

/// What the tests of the binary's messages check them against: clap's definition of each
/// command.
#[cfg(test)]
pub(crate) mod flag_check {
    use std::collections::BTreeSet;

    /// The long flags of the command at `path` (`["net", "respond"]`), the global ones
    /// included.
    pub(crate) fn flags_of(path: &[&str]) -> BTreeSet<String> {
        let mut cmd = <super::Cli as clap::CommandFactory>::command();
        cmd.build();
        let mut out: BTreeSet<String> = cmd
            .get_arguments()
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .collect();
        let mut at = &cmd;
        for name in path {
            at = at
                .find_subcommand(name)
                .unwrap_or_else(|| panic!("no command {path:?}"));
            out.extend(
                at.get_arguments()
                    .filter_map(|a| a.get_long().map(|l| format!("--{l}"))),
            );
        }
        out.extend(["--help".to_string(), "--version".to_string()]);
        out
    }

    /// Each `--flag` a message names, with the command it belongs to when the message
    /// names that command in a backquoted `audiolat CMD ...` (`None`: the command that
    /// prints the message).
    pub(crate) fn named_flags(message: &str) -> Vec<(Option<Vec<String>>, String)> {
        let mut out = Vec::new();
        for (i, quoted) in message.split('`').enumerate() {
            let command: Option<Vec<String>> = (i % 2 == 1)
                .then(|| quoted.strip_prefix("audiolat "))
                .flatten()
                .map(|rest| {
                    let words: Vec<String> = rest
                        .split_whitespace()
                        .take_while(|w| !w.starts_with('-') && !w.starts_with('<'))
                        .take(2)
                        .map(str::to_string)
                        .collect();
                    // `audiolat net respond`, not `audiolat show 3`.
                    match words.as_slice() {
                        [first, second]
                            if first == results::probe_kind::NET.name
                                && ["respond", "emulate", "experiment"]
                                    .contains(&second.as_str()) =>
                        {
                            words
                        }
                        [first, ..] => vec![first.clone()],
                        [] => Vec::new(),
                    }
                });
            let mut rest = quoted;
            while let Some(at) = rest.find("--") {
                let before = rest[..at].chars().last();
                let flag: String = rest[at + 2..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
                    .collect();
                rest = &rest[at + 2 + flag.len()..];
                if flag.is_empty() || before.is_some_and(|c| c.is_alphanumeric() || c == '-') {
                    continue;
                }
                out.push((command.clone(), format!("--{flag}")));
            }
        }
        out
    }

    /// The flags `message`, printed by the command at `path`, names that are not that
    /// command's (or, in a backquoted `audiolat CMD ...`, not CMD's); other tools' flags
    /// (`foreign`) aside.
    pub(crate) fn unknown_flags(path: &[&str], message: &str, foreign: &[&str]) -> Vec<String> {
        named_flags(message)
            .into_iter()
            .filter(|(_, f)| !foreign.contains(&f.as_str()))
            .filter(|(cmd, f)| {
                let path: Vec<&str> = match cmd {
                    Some(c) => c.iter().map(String::as_str).collect(),
                    None => path.to_vec(),
                };
                !flags_of(&path).contains(f)
            })
            .map(|(_, f)| f)
            .collect()
    }

    #[test]
    fn flags_are_read_from_clap_and_from_messages() {
        assert!(flags_of(&["event"]).contains("--loopback"));
        assert!(!flags_of(&["loop"]).contains("--server"));
        assert!(flags_of(&["loop"]).contains("--db"));
        assert_eq!(
            named_flags("use --server dummy, or `audiolat show 3 --json`"),
            [
                (None, "--server".to_string()),
                (Some(vec!["show".to_string()]), "--json".to_string())
            ]
        );
        assert_eq!(
            unknown_flags(&["loop"], "use --server dummy", &[]),
            ["--server"]
        );
    }
}
