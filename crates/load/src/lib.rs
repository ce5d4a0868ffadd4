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
//! - **What ran is recorded**: [`RunningLoad::describe`] gives the exact command lines,
//!   tool versions and process ids for the run's record.
//! - Every load process carries `AUDIOLAT_LOAD_TAG` in its environment, so a test (or a
//!   worried user) can find any that survived.
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

pub mod ep;
pub mod spec;
pub mod video;

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub use spec::{LoadItem, LoadSpec, SpecError};

/// The environment variable every load process carries.
pub const TAG_ENV: &str = "AUDIOLAT_LOAD_TAG";
/// The argument that makes the supervisor executable run [`supervise`].
pub const SUPERVISE_ARG: &str = "__supervise";
/// The pid the supervisor must have as its parent (it exits at once if not).
pub const SUPERVISOR_PARENT_ENV: &str = "AUDIOLAT_SUPERVISOR_PARENT";

fn signal_set(signals: &[i32]) -> libc::sigset_t {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

static HURRY: AtomicBool = AtomicBool::new(false);

/// Makes every stop from now on skip the loads' grace period: their groups are killed
/// at once (a second Ctrl-C). Async-signal-safe: one atomic store.
pub fn hurry() {
    HURRY.store(true, Ordering::Relaxed);
}

/// Whether [`hurry`] was called.
pub fn hurried() -> bool {
    HURRY.load(Ordering::Relaxed)
}

/// Kills every other process of the calling process's group and reaps what it can,
/// repeating until the group is empty (a process may fork during a pass) or a second
/// has passed.
fn kill_rest_of_group() {
    // SAFETY: plain queries.
    let (me, pgid) = unsafe { (libc::getpid(), libc::getpgrp()) };
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let mut found = false;
        if let Ok(dir) = std::fs::read_dir("/proc") {
            for pid in dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()) {
                // SAFETY: plain query; signalling members of our own group.
                if pid != me && unsafe { libc::getpgid(pid) } == pgid {
                    let stat =
                        std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                    let zombie = stat
                        .rsplit(')')
                        .next()
                        .and_then(|s| s.split_whitespace().next())
                        == Some("Z");
                    if !zombie {
                        found = true;
                        // SAFETY: as above.
                        unsafe { libc::kill(pid, libc::SIGKILL) };
                    }
                }
            }
        }
        // As a subreaper, orphaned members are our children: reap them.
        // SAFETY: valid out pointer; WNOHANG never blocks.
        while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
        if !found || Instant::now() > deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// How the tool ended, to be passed on as the supervisor's own ending.
enum ToolEnd {
    Exit(i32),
    Signal(i32),
}

impl ToolEnd {
    fn from_status(status: i32) -> ToolEnd {
        if libc::WIFSIGNALED(status) {
            ToolEnd::Signal(libc::WTERMSIG(status))
        } else {
            ToolEnd::Exit(libc::WEXITSTATUS(status))
        }
    }

    /// Exit code for an exit; for a signal, dies of the same signal (so audiolat sees
    /// `signal N`, not an exit code that only looks like one).
    fn pass_on(self) -> i32 {
        match self {
            ToolEnd::Exit(code) => code,
            ToolEnd::Signal(sig) => {
                // SAFETY: restoring the default action and raising the signal on
                // ourselves; nothing runs after it for a fatal signal.
                unsafe {
                    libc::signal(sig, libc::SIG_DFL);
                    let set = signal_set(&[sig]);
                    libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
                    libc::raise(sig);
                }
                128 + sig
            }
        }
    }
}

/// Runs `program` as a load under supervision and returns the exit code to leave
/// with. Meant to be the whole of a short-lived process that audiolat starts as the
/// leader of a load's process group (`<exe> __supervise -- <program> <args>`):
///
/// - it asks the kernel for SIGTERM when audiolat dies (`PR_SET_PDEATHSIG`), and exits
///   at once if audiolat is already gone; it is a child subreaper, so workers the tool
///   leaves behind stay its children;
/// - on SIGTERM, SIGINT or SIGHUP it passes SIGTERM to the group, gives the tool two
///   seconds, then SIGKILLs every process left in the group, forked workers included;
/// - when the tool ends on its own, whatever it left in the group is killed too, and
///   the supervisor ends as the tool did (same exit code, or same signal).
pub fn supervise(program: &Path, args: &[String]) -> i32 {
    let watched = signal_set(&[libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGCHLD]);
    // SAFETY: blocking signals in this (single) thread so sigwaitinfo receives them;
    // plain prctls.
    unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, &watched, std::ptr::null_mut());
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
    }
    let expected: Option<i32> = std::env::var(SUPERVISOR_PARENT_ENV)
        .ok()
        .and_then(|v| v.parse().ok());
    // SAFETY: plain query.
    if expected.is_some_and(|p| p != unsafe { libc::getppid() }) {
        return 1; // audiolat died before the death signal was armed
    }
    let mut command = Command::new(program);
    command.args(args);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.pre_exec(|| {
            let all = signal_set(&[libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGCHLD]);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &all, std::ptr::null_mut());
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 0);
            Ok(())
        });
    }
    let child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("audiolat: cannot start {}: {e}", program.display());
            return 127;
        }
    };
    let child_pid = child.id() as i32;
    let reap = || {
        let mut status = 0;
        // SAFETY: valid out pointer; WNOHANG never blocks.
        (unsafe { libc::waitpid(child_pid, &mut status, libc::WNOHANG) } == child_pid)
            .then(|| ToolEnd::from_status(status))
    };
    loop {
        // SAFETY: valid set; a null info pointer is allowed.
        let sig = unsafe { libc::sigwaitinfo(&watched, std::ptr::null_mut()) };
        if sig == libc::SIGCHLD {
            if let Some(end) = reap() {
                kill_rest_of_group();
                return end.pass_on();
            }
            // Another child (an orphaned worker) ended: reap it.
            // SAFETY: as above.
            while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
            if let Some(end) = reap() {
                kill_rest_of_group();
                return end.pass_on();
            }
            continue;
        }
        if sig < 0 {
            continue;
        }
        // Asked to stop, or audiolat died: the whole group goes.
        // SAFETY: signalling our own process group (we block SIGTERM ourselves).
        unsafe { libc::kill(0, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut end = None;
        while Instant::now() < deadline {
            if let Some(e) = reap() {
                end = Some(e);
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // SAFETY: the tool may still be there if it ignored SIGTERM.
        unsafe { libc::kill(child_pid, libc::SIGKILL) };
        kill_rest_of_group();
        let end = end.or_else(reap).unwrap_or(ToolEnd::Signal(libc::SIGKILL));
        // Stopped as asked: end the way the tool did.
        return end.pass_on();
    }
}

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
        "disk load scratch directory {0} is not a writable directory: pass one with --scratch-dir"
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
    /// A load names a cell that does not exist.
    #[error("{0}")]
    Cell(String),
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

/// A cell as a load process joins it, before it runs its program: the groups it writes
/// itself into, its CPUs and its policy. Children inherit all three.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    /// `cgroup.procs` files (cpuset, cpuacct) the process writes `0` (itself) to.
    pub procs_files: Vec<PathBuf>,
    /// CPUs to pin to (empty: leave the affinity alone).
    pub cpus: Vec<usize>,
    /// `(policy, static priority, nice)` for `sched_setscheduler` and `setpriority`:
    /// SCHED_OTHER, SCHED_BATCH, SCHED_IDLE or SCHED_FIFO.
    pub policy: Option<(i32, i32, i32)>,
    /// SCHED_DEADLINE for each thread of a built-in load (`video`, `ep`). A deadline task
    /// may not fork or create threads, so this is not set between fork and exec: each of
    /// the load's threads takes it once it runs. Loads that run a tool are refused.
    pub deadline: Option<DeadlineShare>,
}

/// A SCHED_DEADLINE reservation for each thread of a built-in load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadlineShare {
    /// CPU time per period, ns.
    pub runtime_ns: u64,
    /// Relative deadline, ns.
    pub deadline_ns: u64,
    /// Period, ns.
    pub period_ns: u64,
    /// Jobs start on period boundaries (a time-triggered cell): a video player shows one
    /// frame per period and yields the rest of it, rather than pacing itself at 30 fps.
    pub time_triggered: bool,
}

impl DeadlineShare {
    /// `RUNTIME,DEADLINE,PERIOD` in ns, with `,tt` when time-triggered: the built-in
    /// load's `--deadline` argument.
    pub fn to_arg(&self) -> String {
        format!(
            "{},{},{}{}",
            self.runtime_ns,
            self.deadline_ns,
            self.period_ns,
            if self.time_triggered { ",tt" } else { "" }
        )
    }

    /// Parses [`DeadlineShare::to_arg`]'s form.
    pub fn from_arg(s: &str) -> Result<DeadlineShare, String> {
        let parts: Vec<&str> = s.split(',').collect();
        let num = |i: usize| -> Result<u64, String> {
            parts
                .get(i)
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| format!("--deadline {s}: expected RUNTIME,DEADLINE,PERIOD in ns"))
        };
        let share = DeadlineShare {
            runtime_ns: num(0)?,
            deadline_ns: num(1)?,
            period_ns: num(2)?,
            time_triggered: match parts.get(3) {
                None => false,
                Some(&"tt") => true,
                Some(other) => return Err(format!("--deadline {s}: unknown flag '{other}'")),
            },
        };
        if parts.len() > 4
            || share.runtime_ns == 0
            || share.runtime_ns > share.deadline_ns
            || share.deadline_ns > share.period_ns
        {
            return Err(format!(
                "--deadline {s}: needs 0 < runtime <= deadline <= period"
            ));
        }
        Ok(share)
    }
}

/// What a forked child needs to place itself, built before the fork so the child only
/// makes system calls.
struct PreparedPlacement {
    files: Vec<std::ffi::CString>,
    cpus: Option<libc::cpu_set_t>,
    policy: Option<(i32, i32, i32)>,
}

impl PreparedPlacement {
    fn new(p: &Placement) -> PreparedPlacement {
        use std::os::unix::ffi::OsStrExt;
        let files = p
            .procs_files
            .iter()
            .filter_map(|f| std::ffi::CString::new(f.as_os_str().as_bytes()).ok())
            .collect();
        let cpus = (!p.cpus.is_empty()).then(|| {
            // SAFETY: zeroed cpu_set_t is a valid empty set.
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            for &c in p.cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
                // SAFETY: c < CPU_SETSIZE.
                unsafe { libc::CPU_SET(c, &mut set) };
            }
            set
        });
        PreparedPlacement {
            files,
            cpus,
            policy: p.policy,
        }
    }

    /// Runs in the child between fork and exec: system calls only.
    fn apply(&self) -> std::io::Result<()> {
        for file in &self.files {
            // SAFETY: a valid C string; open/write/close are async-signal-safe.
            unsafe {
                let fd = libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let rc = libc::write(fd, b"0".as_ptr().cast(), 1);
                libc::close(fd);
                if rc != 1 {
                    return Err(std::io::Error::last_os_error());
                }
            }
        }
        if let Some(set) = &self.cpus {
            // SAFETY: a valid set of the size passed; pid 0 is this process.
            if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) }
                != 0
            {
                return Err(std::io::Error::last_os_error());
            }
        }
        if let Some((policy, priority, nice)) = self.policy {
            let param = libc::sched_param {
                sched_priority: priority,
            };
            // SAFETY: plain system calls on this process.
            unsafe {
                if libc::sched_setscheduler(0, policy, &param) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if policy == libc::SCHED_OTHER || policy == libc::SCHED_BATCH {
                    libc::setpriority(libc::PRIO_PROCESS, 0, nice);
                }
            }
        }
        Ok(())
    }
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

/// Threads of the `video` load: the study's two players.
pub const VIDEO_PLAYERS: usize = 2;

/// Threads a load item runs that would each take a SCHED_DEADLINE reservation in a
/// deadline cell (the built-in loads'), for admission control; `None` for a load that
/// runs a tool (it cannot go in such a cell).
pub fn deadline_threads(item: &LoadItem, cpus: usize) -> Option<usize> {
    match item {
        LoadItem::Video => Some(VIDEO_PLAYERS),
        LoadItem::Ep { threads } => Some(threads.unwrap_or(cpus).max(1)),
        _ => None,
    }
}

/// A tool a load runs, and the package it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tool {
    /// Program name.
    pub name: &'static str,
    /// Debian package.
    pub package: &'static str,
}

/// stress-ng.
pub const STRESS_NG: Tool = Tool {
    name: "stress-ng",
    package: "stress-ng",
};
/// top.
pub const TOP: Tool = Tool {
    name: "top",
    package: "procps",
};
/// hackbench.
pub const HACKBENCH: Tool = Tool {
    name: "hackbench",
    package: "rt-tests",
};
/// cyclictest, the reference for the jitter probe.
pub const CYCLICTEST: Tool = Tool {
    name: "cyclictest",
    package: "rt-tests",
};
/// jackd, for the embedded JACK server.
pub const JACKD: Tool = Tool {
    name: "jackd",
    package: "jackd2",
};
/// tc, for bandwidth reservation.
pub const TC: Tool = Tool {
    name: "tc",
    package: "iproute2",
};
/// ip, for network namespaces.
pub const IP: Tool = Tool {
    name: "ip",
    package: "iproute2",
};

/// Finds a program in `PATH`, then in the sbin directories (where `tc` and `ip` live),
/// which an ordinary user's PATH may lack.
pub fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The first line a tool prints for its version, or its Debian package's version.
pub fn tool_version(tool: &Tool, program: &Path) -> String {
    let flag = match tool.name {
        "stress-ng" | "jackd" => Some("--version"),
        "top" | "ip" | "tc" => Some("-V"),
        _ => None,
    };
    if let Some(flag) = flag {
        if let Ok(out) = Command::new(program)
            .arg(flag)
            .stdin(Stdio::null())
            .output()
        {
            let text = String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr);
            if let Some(line) = text.lines().map(str::trim).find(|l| !l.is_empty()) {
                return line.to_string();
            }
        }
    }
    Command::new("dpkg-query")
        .args(["-W", "-f=${Version}", tool.package])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            format!(
                "{} {}",
                tool.package,
                String::from_utf8_lossy(&o.stdout).trim()
            )
        })
        .unwrap_or_else(|| "unknown".into())
}

/// One process of a load, as planned.
#[derive(Debug, Clone)]
pub struct LoadCommand {
    /// The spec item it implements.
    pub item: LoadItem,
    /// Program to run.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// The tool's version.
    pub version: String,
    /// Discard stdout (top writes its screens there).
    pub discard_stdout: bool,
}

impl LoadCommand {
    /// The command line, shell-quoted.
    pub fn command_line(&self) -> String {
        std::iter::once(self.program.display().to_string())
            .chain(self.args.iter().cloned())
            .map(|a| shell_quote(&a))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Quotes a word for a POSIX shell when it needs it.
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+%@".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

fn require(tool: &Tool) -> Result<PathBuf, LoadError> {
    find_in_path(tool.name).ok_or(LoadError::MissingTool {
        tool: tool.name,
        package: tool.package,
    })
}

/// Turns a spec into the commands that implement it, checking every tool first.
pub fn plan(spec: &LoadSpec, ctx: &LoadContext) -> Result<Vec<LoadCommand>, LoadError> {
    let cpus = ctx.cpus.max(1).to_string();
    let mut out = Vec::new();
    for item in &spec.items {
        if matches!(item, LoadItem::Flood { .. } | LoadItem::Stream { .. }) {
            // The network probe sends the flood itself: only it knows the host's address.
            continue;
        }
        let (tool, args, discard_stdout): (Option<Tool>, Vec<String>, bool) = match item {
            LoadItem::Cpu { percent } => (
                Some(STRESS_NG),
                vec![
                    "--cpu".into(),
                    cpus.clone(),
                    "--cpu-load".into(),
                    percent.unwrap_or(100).to_string(),
                    "--cpu-method".into(),
                    "matrixprod".into(),
                    "--timeout".into(),
                    "0".into(),
                ],
                false,
            ),
            LoadItem::Io => {
                if !ctx.scratch_dir.is_dir() || !writable_dir(&ctx.scratch_dir) {
                    return Err(LoadError::BadScratch(ctx.scratch_dir.clone()));
                }
                (
                    Some(STRESS_NG),
                    vec![
                        "--hdd".into(),
                        "1".into(),
                        "--hdd-bytes".into(),
                        "256M".into(),
                        "--temp-path".into(),
                        ctx.scratch_dir.display().to_string(),
                        "--timeout".into(),
                        "0".into(),
                    ],
                    false,
                )
            }
            LoadItem::Mem => (
                Some(STRESS_NG),
                vec![
                    "--stream".into(),
                    cpus.clone(),
                    "--timeout".into(),
                    "0".into(),
                ],
                false,
            ),
            LoadItem::Top => (
                Some(TOP),
                vec!["-b".into(), "-d".into(), "0.1".into()],
                true,
            ),
            LoadItem::Hackbench => (
                Some(HACKBENCH),
                vec!["-g".into(), "4".into(), "-l".into(), "1000000000".into()],
                true,
            ),
            LoadItem::Flood { .. } | LoadItem::Stream { .. } => unreachable!("skipped above"),
            LoadItem::Video => (
                None,
                vec![
                    "__load".into(),
                    "video".into(),
                    "--threads".into(),
                    VIDEO_PLAYERS.to_string(),
                ],
                false,
            ),
            LoadItem::Ep { threads } => (
                None,
                vec![
                    "__load".into(),
                    "ep".into(),
                    "--threads".into(),
                    threads.map_or(cpus.clone(), |t| t.to_string()),
                ],
                false,
            ),
        };
        let mut args = args;
        let deadline = spec
            .cell_of(item)
            .and_then(|cell| ctx.placements.get(cell).map(|p| (cell, p.deadline)));
        if let Some((cell, Some(share))) = deadline {
            if tool.is_some() {
                return Err(LoadError::Cell(format!(
                    "--load {}@{cell}: {cell} is a SCHED_DEADLINE cell, and a deadline task may not fork: only the built-in loads (video, ep) can run there, each thread taking the reservation itself",
                    item.name()
                )));
            }
            args.extend(["--deadline".into(), share.to_arg()]);
        }
        let (program, version) = match tool {
            Some(tool) => {
                let program = require(&tool)?;
                let version = tool_version(&tool, &program);
                (program, version)
            }
            None => (
                ctx.self_exe.clone().ok_or(LoadError::NoSelfExe)?,
                match item {
                    LoadItem::Video => format!(
                        "audiolat {} built-in video players (2 x 30 fps, 1920x1080x4-byte frames streamed through memory)",
                        env!("CARGO_PKG_VERSION")
                    ),
                    _ => format!(
                        "audiolat {} built-in NPB EP kernel (class S, verified each pass)",
                        env!("CARGO_PKG_VERSION")
                    ),
                },
            ),
        };
        out.push(LoadCommand {
            item: *item,
            program,
            args,
            version,
            discard_stdout,
        });
    }
    Ok(out)
}

fn writable_dir(p: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: valid NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

/// How a load process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadExit {
    /// The spec item.
    pub item: String,
    /// Process id (= process group id).
    pub pid: i32,
    /// `exit N` or `signal N`.
    pub status: String,
    /// True when it ended before it was asked to.
    pub early: bool,
    /// The end of its stderr.
    pub stderr_tail: String,
}

struct LoadProcess {
    cmd: LoadCommand,
    pid: i32,
    exit: Option<LoadExit>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl LoadProcess {
    fn stderr_tail(&self) -> String {
        let buf = self.stderr.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&buf).trim().to_string()
    }
}

/// Loads that are running. Stopped by [`RunningLoad::stop`] or on drop.
pub struct RunningLoad {
    spec: LoadSpec,
    procs: Vec<LoadProcess>,
    tag: String,
}

impl std::fmt::Debug for RunningLoad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningLoad")
            .field("spec", &self.spec.to_string())
            .field("pids", &self.pids())
            .finish()
    }
}

/// What happened to the loads, for the run's record.
#[derive(Debug, Clone)]
pub struct LoadReport {
    /// One entry per process.
    pub exits: Vec<LoadExit>,
}

impl LoadReport {
    /// As JSON.
    pub fn to_json(&self) -> Value {
        Value::Array(
            self.exits
                .iter()
                .map(|e| {
                    json!({"item": e.item, "pgid": e.pid, "status": e.status, "early": e.early,
                           "stderr_tail": e.stderr_tail})
                })
                .collect(),
        )
    }
}

const STDERR_KEEP: usize = 4096;

/// Starts every process of a load. If any fails to start, or exits within its first
/// quarter second, the others are stopped and the error says why.
pub fn start(spec: &LoadSpec, ctx: &LoadContext) -> Result<RunningLoad, LoadError> {
    let commands = plan(spec, ctx)?;
    for item in &spec.items {
        if let Some(cell) = spec.cell_of(item) {
            if !ctx.placements.contains_key(cell) {
                return Err(LoadError::Cell(format!(
                    "load '{}' is placed in cell '{cell}', which no --cell or --cells defines",
                    item.name()
                )));
            }
        }
    }
    become_subreaper();
    let mut running = RunningLoad {
        spec: spec.clone(),
        procs: Vec::new(),
        tag: ctx.tag.clone(),
    };
    for cmd in commands {
        let mut command = match &ctx.supervisor {
            Some(exe) => {
                let mut c = Command::new(exe);
                c.arg(SUPERVISE_ARG)
                    .arg("--")
                    .arg(&cmd.program)
                    .args(&cmd.args)
                    .env(SUPERVISOR_PARENT_ENV, std::process::id().to_string());
                c
            }
            None => {
                let mut c = Command::new(&cmd.program);
                c.args(&cmd.args);
                c
            }
        };
        command
            .env(TAG_ENV, &ctx.tag)
            .stdin(Stdio::null())
            .stdout(if cmd.discard_stdout {
                Stdio::null()
            } else {
                Stdio::piped()
            })
            .stderr(Stdio::piped())
            .process_group(0);
        let placement = spec
            .cell_of(&cmd.item)
            .and_then(|cell| ctx.placements.get(cell))
            .map(PreparedPlacement::new);
        // SAFETY: prctl and the placement's calls are plain system calls; nothing else
        // runs between fork and exec.
        unsafe {
            command.pre_exec(move || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                match &placement {
                    Some(p) => p.apply(),
                    None => Ok(()),
                }
            });
        }
        let mut child = command.spawn().map_err(|source| LoadError::Spawn {
            command: cmd.command_line(),
            source,
        })?;
        let stderr = Arc::new(Mutex::new(Vec::new()));
        for stream in [
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let sink = Arc::clone(&stderr);
            std::thread::spawn(move || drain_tail(stream, &sink));
        }
        running.procs.push(LoadProcess {
            pid: child.id() as i32,
            cmd,
            exit: None,
            stderr,
        });
        // The process is reaped by pid through waitpid; `child` must not wait too.
        drop(child);
    }
    std::thread::sleep(Duration::from_millis(250));
    if let Some(exit) = running.poll_exits().into_iter().next() {
        let command = running
            .procs
            .iter()
            .find(|p| p.pid == exit.pid)
            .map(|p| p.cmd.command_line())
            .unwrap_or_default();
        drop(running);
        return Err(LoadError::ExitedAtStart {
            command,
            status: exit.status,
            stderr: exit.stderr_tail,
        });
    }
    Ok(running)
}

fn drain_tail(mut stream: Box<dyn Read + Send>, sink: &Mutex<Vec<u8>>) {
    let mut chunk = [0u8; 4096];
    while let Ok(n) = stream.read(&mut chunk) {
        if n == 0 {
            break;
        }
        if let Ok(mut buf) = sink.lock() {
            buf.extend_from_slice(&chunk[..n]);
            if buf.len() > STDERR_KEEP {
                let cut = buf.len() - STDERR_KEEP;
                buf.drain(..cut);
            }
        }
    }
}

fn become_subreaper() {
    // SAFETY: plain prctl; makes orphaned descendants ours to reap.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) };
}

fn describe_status(status: i32) -> String {
    if libc::WIFEXITED(status) {
        format!("exit {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("signal {}", libc::WTERMSIG(status))
    } else {
        format!("status {status}")
    }
}

/// Reaps every child in process group `pgid` that has ended; returns the leader's status
/// if it was among them.
fn reap_group(pgid: i32) -> Option<i32> {
    let mut leader = None;
    loop {
        let mut status = 0;
        // SAFETY: valid out pointer; WNOHANG never blocks.
        let pid = unsafe { libc::waitpid(-pgid, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return leader;
        }
        if pid == pgid {
            leader = Some(status);
        }
    }
}

fn group_exists(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

impl RunningLoad {
    /// Process ids (each the id of its process group).
    pub fn pids(&self) -> Vec<i32> {
        self.procs.iter().map(|p| p.pid).collect()
    }

    /// The tag in the processes' environment.
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// The spec, commands, versions, process ids and tag, for the run's record.
    pub fn describe(&self) -> Value {
        let mut v = describe(&self.spec, self.procs.iter().map(|p| (&p.cmd, Some(p.pid))));
        v["tag"] = json!(self.tag);
        v
    }

    /// Loads that ended since the last call (a load dying mid-run is worth an event).
    pub fn poll_exits(&mut self) -> Vec<LoadExit> {
        let mut out = Vec::new();
        for p in &mut self.procs {
            if p.exit.is_some() {
                continue;
            }
            if let Some(status) = reap_group(p.pid) {
                let exit = LoadExit {
                    item: p.cmd.item.to_string(),
                    pid: p.pid,
                    status: describe_status(status),
                    early: true,
                    stderr_tail: p.stderr_tail(),
                };
                p.exit = Some(exit.clone());
                out.push(exit);
            }
        }
        out
    }

    /// Stops every load: SIGTERM to each process group, SIGKILL after two seconds (at
    /// once after [`hurry`]), and waits until no process of any group is left.
    pub fn stop(mut self) -> LoadReport {
        self.stop_all()
    }

    fn stop_all(&mut self) -> LoadReport {
        for p in &self.procs {
            // SAFETY: signalling our own child's process group.
            unsafe { libc::kill(-p.pid, libc::SIGTERM) };
        }
        let start = Instant::now();
        let mut killed = false;
        loop {
            let mut alive = false;
            for p in &mut self.procs {
                if let Some(status) = reap_group(p.pid) {
                    if p.exit.is_none() {
                        p.exit = Some(LoadExit {
                            item: p.cmd.item.to_string(),
                            pid: p.pid,
                            status: describe_status(status),
                            early: false,
                            stderr_tail: String::new(),
                        });
                    }
                }
                alive |= group_exists(p.pid);
            }
            if !alive {
                break;
            }
            if !killed
                && (start.elapsed() > Duration::from_secs(2) || HURRY.load(Ordering::Relaxed))
            {
                for p in &self.procs {
                    // SAFETY: as above.
                    unsafe { libc::kill(-p.pid, libc::SIGKILL) };
                }
                killed = true;
            }
            if start.elapsed() > Duration::from_secs(10) {
                break; // unkillable (D state); reported below as still present
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let exits = self
            .procs
            .iter_mut()
            .map(|p| {
                let mut e = p.exit.clone().unwrap_or(LoadExit {
                    item: p.cmd.item.to_string(),
                    pid: p.pid,
                    status: "still running after SIGKILL".into(),
                    early: false,
                    stderr_tail: String::new(),
                });
                if e.stderr_tail.is_empty() && e.early {
                    e.stderr_tail = p.stderr_tail();
                }
                e
            })
            .collect();
        self.procs.clear();
        LoadReport { exits }
    }
}

impl Drop for RunningLoad {
    fn drop(&mut self) {
        if !self.procs.is_empty() {
            self.stop_all();
        }
    }
}

/// Describes a planned or running load as JSON.
pub fn describe<'a>(
    spec: &LoadSpec,
    commands: impl Iterator<Item = (&'a LoadCommand, Option<i32>)>,
) -> Value {
    json!({
        "spec": spec.to_string(),
        "processes": commands
            .map(|(c, pid)| json!({
                "item": c.item.to_string(),
                "command": c.command_line(),
                "version": c.version,
                "pgid": pid,
            }))
            .collect::<Vec<_>>(),
    })
}

/// Pids of live processes whose environment carries `AUDIOLAT_LOAD_TAG=tag`.
pub fn tagged_processes(tag: &str) -> Vec<i32> {
    let needle = format!("{TAG_ENV}={tag}");
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // Zombies have exited; they are not load left running.
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|s| s.split_whitespace().next());
            state != Some("Z")
                && std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
        })
        .collect()
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
        let desc = running.describe();
        assert_eq!(desc["spec"], "top");
        assert!(desc["processes"][0]["command"]
            .as_str()
            .unwrap()
            .contains("-d 0.1"));
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
        assert!(err.to_string().contains("--scratch-dir"), "{err}");
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("abc-1.0"), "abc-1.0");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }
}
