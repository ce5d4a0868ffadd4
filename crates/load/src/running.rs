//! Running loads: started each in its own process group, watched, stopped (also on
//! drop), reaped, and described for the run's record.

use crate::placement::PreparedPlacement;
use crate::plan::{plan, LoadCommand};
use crate::spec::LoadSpec;
use crate::supervisor::HURRY;
use crate::{LoadContext, LoadError, SUPERVISE_ARG, SUPERVISOR_PARENT_ENV, TAG_ENV};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    /// The disk load's directory, in the scratch directory: removed once its processes
    /// are gone (a tool killed without its grace period cannot remove its own files).
    scratch: Option<engine::temp::ScratchDir>,
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

const STDERR_KEEP: usize = 4096;

/// Starts every process of a load. If any fails to start, or exits within its first
/// quarter second, the others are stopped and the error says why.
pub fn start(spec: &LoadSpec, ctx: &LoadContext) -> Result<RunningLoad, LoadError> {
    let mut commands = plan(spec, ctx)?;
    // The disk load writes in a directory of its own, which goes with the load.
    let scratch = if spec.items.iter().any(|i| matches!(i, crate::LoadItem::Io)) {
        let dir = engine::temp::ScratchDir::make(&ctx.scratch_dir, "io")
            .map_err(|_| LoadError::BadScratch(ctx.scratch_dir.clone()))?;
        let inside = LoadContext {
            scratch_dir: dir.path().to_path_buf(),
            ..ctx.clone()
        };
        commands = plan(spec, &inside)?;
        Some(dir)
    } else {
        None
    };
    for item in &spec.items {
        if let Some(cell) = spec.cell_of(item) {
            if !ctx.placements.contains_key(cell) {
                return Err(LoadError::UnknownCell {
                    item: item.name().to_string(),
                    cell: cell.to_string(),
                });
            }
        }
    }
    become_subreaper();
    let mut running = RunningLoad {
        spec: spec.clone(),
        procs: Vec::new(),
        tag: ctx.tag.clone(),
        scratch,
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

    /// The spec it runs.
    pub fn spec(&self) -> &LoadSpec {
        &self.spec
    }

    /// Each process's command and process id (= process group id), in start order: with
    /// the spec and tag, what a run's record says of the load.
    pub fn processes(&self) -> impl Iterator<Item = (&LoadCommand, i32)> {
        self.procs.iter().map(|p| (&p.cmd, p.pid))
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
    /// once after [`hurry`](crate::hurry)), and waits until no process of any group is left.
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
        // SIGKILLed (hurried, or past its grace period), the tool left its files.
        drop(self.scratch.take());
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
