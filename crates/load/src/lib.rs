//! # load: background load scenarios that always clean up
//!
//! A probe measured on an idle machine says little; the studies audiolat reproduces
//! measured under CPU load (latencytest's 10 % and 80 %, MacMillan's unbounded load),
//! disk load, `top -d 0.1` (BeagleBone) and the EP benchmark (Tessellation). This crate
//! starts such loads as child processes and stops them.
//!
//! Promises:
//!
//! - **Nothing is started unless everything can be.** Every tool a spec needs is looked
//!   up first; a missing one is a [`LoadError::MissingTool`] naming the Debian package.
//! - **Each load runs in its own process group**, so a terminal's Ctrl-C reaches
//!   audiolat (which stops the run cleanly) and not the loads, and a stop reaches every
//!   worker a tool forked. audiolat becomes a child subreaper, so orphaned workers are
//!   reaped, not left as zombies.
//! - **Loads are always stopped**: by [`RunningLoad::stop`], by `Drop` on error and
//!   panic paths, and, when audiolat itself dies (even by SIGKILL), by a supervisor
//!   ([`supervise`], `LoadContext::supervisor`) that leads each load's process group,
//!   gets `PR_SET_PDEATHSIG` and takes the whole group down, forked workers included.
//! - **What ran is recorded**: [`RunningLoad::processes`] gives the exact command lines,
//!   tool versions and process ids for the run's record (which the runner writes).
//! - Every load process carries `AUDIOLAT_LOAD_TAG` in its environment, so a test (or a
//!   worried user) can find any that survived.
//!
//! The built-in loads (EP, video) run in a process of their own, audiolat's hidden
//! `__load` command: [`worker::run`] is that process's body.
//!
//! ```no_run
//! use load::{LoadContext, LoadSpec};
//! let spec: LoadSpec = "cpu:80+io".parse().unwrap();
//! let ctx = LoadContext::new(std::env::temp_dir(), "example".into());
//! let running = load::start(&spec, &ctx).unwrap();   // MissingTool names the package
//! // ... measure ...
//! let report = running.stop();                       // every process group gone
//! # let _ = report;
//! ```
#![deny(missing_docs)]
// A library says nothing on the standard streams (the binary does): `print!` and
// `eprint!` panic when the stream fails.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod ep;
mod placement;
mod plan;
mod running;
pub mod spec;
mod supervisor;
mod tools;
pub mod video;
pub mod worker;

use std::path::PathBuf;

pub use placement::{deadline_threads, DeadlineShare, Placement, VIDEO_PLAYERS};
pub use plan::{plan, shell_quote, LoadCommand};
pub use running::{start, tagged_processes, LoadExit, LoadReport, RunningLoad};
pub use spec::{LoadItem, LoadSpec, SpecError};
pub use supervisor::{hurried, hurry, supervise};
pub use tools::{
    find_in_path, tool_version, Tool, CYCLICTEST, HACKBENCH, IP, JACKD, STRESS_NG, TC, TOP,
};

#[cfg(test)]
use tools::require;

/// The environment variable every load process carries.
pub const TAG_ENV: &str = "AUDIOLAT_LOAD_TAG";
/// The argument that makes the supervisor executable run [`supervise`].
pub const SUPERVISE_ARG: &str = "__supervise";
/// The pid the supervisor must have as its parent (it exits at once if not).
pub const SUPERVISOR_PARENT_ENV: &str = "AUDIOLAT_SUPERVISOR_PARENT";

/// Why a load could not be started.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A tool the load needs is not installed.
    #[error("{tool} not found in PATH: install the {package} package (apt install {package})")]
    MissingTool {
        /// Program name.
        tool: &'static str,
        /// Debian package that provides it.
        package: &'static str,
    },
    /// The EP load re-runs audiolat itself and could not find its executable.
    #[error("the ep load needs audiolat's own executable, which could not be found")]
    NoSelfExe,
    /// The scratch directory for the disk load is unusable.
    #[error(
        "disk load scratch directory {0} is not a writable directory: name a writable one on the disk to load"
    )]
    BadScratch(PathBuf),
    /// A load failed to start.
    #[error("could not start load `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// A load exited as soon as it was started.
    #[error("load `{command}` exited at start ({status}): {stderr}")]
    ExitedAtStart {
        /// The command line.
        command: String,
        /// How it ended.
        status: String,
        /// The end of what it printed.
        stderr: String,
    },
    /// A load is placed in a cell that no cell definition defines.
    #[error("load '{item}' is placed in cell '{cell}', which no cell definition defines")]
    UnknownCell {
        /// The load item, as written (`ep:1`).
        item: String,
        /// The cell it names.
        cell: String,
    },
    /// A load that forks (an external tool) is placed in a SCHED_DEADLINE cell.
    #[error("load {item}@{cell}: {cell} is a SCHED_DEADLINE cell, and a deadline task may not fork: only the built-in loads (video, ep) can run there, each thread taking the reservation itself")]
    ForkInDeadlineCell {
        /// The load item, as written (`cpu:50`).
        item: String,
        /// The cell it names.
        cell: String,
    },
}

/// A deadline share's text ([`DeadlineShare::to_arg`]'s form) that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("deadline share {text}: {problem}")]
pub struct BadDeadlineShare {
    /// The text.
    pub text: String,
    /// What is wrong with it.
    pub problem: String,
}

/// Where and how loads run.
#[derive(Debug, Clone)]
pub struct LoadContext {
    /// audiolat's executable, re-run with `__load ep` for the EP load.
    pub self_exe: Option<PathBuf>,
    /// Directory for the disk load's files (must be on the disk to be measured).
    pub scratch_dir: PathBuf,
    /// Value of `AUDIOLAT_LOAD_TAG` for this run's processes.
    pub tag: String,
    /// Workers per CPU-wide load (default: online CPUs).
    pub cpus: usize,
    /// An executable that runs [`supervise`] as `<exe> __supervise <program> <args>`:
    /// each load then runs under a small supervisor that takes its whole process group
    /// down when audiolat dies, even by SIGKILL (a tool's forked workers do not inherit
    /// `PR_SET_PDEATHSIG`). Without one, loads are started directly.
    pub supervisor: Option<PathBuf>,
    /// Where the items placed in a cell (`ep@others`) go, by cell name.
    pub placements: std::collections::BTreeMap<String, Placement>,
}

impl LoadContext {
    /// A context with the current executable, one worker per online CPU.
    pub fn new(scratch_dir: PathBuf, tag: String) -> LoadContext {
        LoadContext {
            self_exe: std::env::current_exe().ok(),
            scratch_dir,
            tag,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            supervisor: None,
            placements: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(tag: &str) -> LoadContext {
        LoadContext::new(std::env::temp_dir(), tag.into())
    }

    #[test]
    fn missing_tool_names_the_package() {
        let err = require(&Tool {
            name: "surely-not-a-real-tool",
            package: "some-package",
        })
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "surely-not-a-real-tool not found in PATH: install the some-package package (apt install some-package)"
        );
    }

    #[test]
    fn plans_exact_command_lines() {
        if find_in_path("stress-ng").is_none() {
            eprintln!("skipped: stress-ng is not installed (apt install stress-ng)");
            return;
        }
        let mut c = ctx("plan");
        c.cpus = 2;
        let cmds = plan(&"cpu:80".parse().unwrap(), &c).unwrap();
        assert_eq!(cmds.len(), 1);
        assert!(cmds[0]
            .command_line()
            .ends_with("stress-ng --cpu 2 --cpu-load 80 --cpu-method matrixprod --timeout 0"));
        assert!(cmds[0].version.contains("stress-ng"), "{}", cmds[0].version);
    }

    #[test]
    fn builtin_loads_take_a_deadline_cell_and_tools_are_refused() {
        let share = DeadlineShare {
            runtime_ns: 2_000_000,
            deadline_ns: 5_000_000,
            period_ns: 10_000_000,
            time_triggered: true,
        };
        assert_eq!(share.to_arg(), "2000000,5000000,10000000,tt");
        assert_eq!(DeadlineShare::from_arg(&share.to_arg()), Ok(share));
        for bad in ["1,2", "3,2,1", "0,1,1", "1,1,1,xx", "1,1,1,tt,1", "a,b,c"] {
            assert!(DeadlineShare::from_arg(bad).is_err(), "{bad}");
        }
        let mut c = ctx("deadline");
        c.cpus = 2;
        c.placements.insert(
            "dl".into(),
            Placement {
                deadline: Some(share),
                ..Placement::default()
            },
        );
        let cmds = plan(&"ep:3@dl+video@dl".parse().unwrap(), &c).unwrap();
        assert!(
            cmds[0]
                .command_line()
                .ends_with("__load ep --threads 3 --deadline 2000000,5000000,10000000,tt"),
            "{}",
            cmds[0].command_line()
        );
        assert!(cmds[1]
            .command_line()
            .contains("__load video --threads 2 --deadline"));
        assert_eq!(
            deadline_threads(&"ep".parse::<LoadSpec>().unwrap().items[0], 4),
            Some(4)
        );
        let err = plan(&"cpu@dl".parse().unwrap(), &c)
            .unwrap_err()
            .to_string();
        assert!(err.contains("may not fork"), "{err}");
    }

    #[test]
    fn top_load_runs_in_its_own_group_and_is_stopped() {
        if find_in_path("top").is_none() {
            eprintln!("skipped: top is not installed (apt install procps)");
            return;
        }
        let tag = format!("unit-top-{}", std::process::id());
        let running = start(&"top".parse().unwrap(), &ctx(&tag)).unwrap();
        let pid = running.pids()[0];
        // SAFETY: querying a child's process group.
        assert_eq!(unsafe { libc::getpgid(pid) }, pid);
        assert_eq!(tagged_processes(&tag), vec![pid]);
        assert_eq!(running.spec().to_string(), "top");
        let (command, pgid) = running.processes().next().unwrap();
        assert!(command.command_line().contains("-d 0.1"));
        assert_eq!(pgid, pid);
        let report = running.stop();
        assert!(!report.exits[0].early);
        assert!(tagged_processes(&tag).is_empty());
    }

    #[test]
    fn drop_stops_loads_too() {
        if find_in_path("top").is_none() {
            eprintln!("skipped: top is not installed (apt install procps)");
            return;
        }
        let tag = format!("unit-drop-{}", std::process::id());
        {
            let _running = start(&"top".parse().unwrap(), &ctx(&tag)).unwrap();
            assert_eq!(tagged_processes(&tag).len(), 1);
        }
        assert!(tagged_processes(&tag).is_empty());
    }

    #[test]
    fn a_load_that_dies_at_start_is_an_error_with_its_output() {
        let c = LoadContext {
            self_exe: Some(PathBuf::from("/bin/false")),
            ..ctx("early")
        };
        let err = start(&"ep".parse().unwrap(), &c).unwrap_err();
        assert!(matches!(err, LoadError::ExitedAtStart { .. }), "{err}");
        assert!(err.to_string().contains("exit 1"), "{err}");
    }

    #[test]
    fn bad_scratch_dir_is_refused_before_starting() {
        if find_in_path("stress-ng").is_none() {
            eprintln!("skipped: stress-ng is not installed (apt install stress-ng)");
            return;
        }
        let c = LoadContext {
            scratch_dir: PathBuf::from("/nonexistent/scratch"),
            ..ctx("scratch")
        };
        let err = plan(&"io".parse().unwrap(), &c).unwrap_err();
        assert!(matches!(err, LoadError::BadScratch(_)), "{err}");
        assert!(!err.to_string().contains("--"), "{err}");
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("abc-1.0"), "abc-1.0");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }
}
