//! [`PipewireServer`]: a private headless PipeWire that audiolat starts and stops.
//!
//! See the [module docs](super) for the sequence. Every process runs in one process group
//! of its own (led by the `dbus-daemon`, so a Ctrl-C on the terminal does not reach the
//! server before audiolat has stored its results) with `PR_SET_PDEATHSIG` (so it dies
//! with audiolat even on SIGKILL). Create the server on a thread that outlives it (the
//! main thread): the kernel's parent-death signal follows the thread that forked.

use super::config::{daemon_config, ClockSettings, SINK_NODE_NAME};
pub use super::error::{PipewireError, PipewireProcess};
use super::programs::{library_version, run_bounded, Tools};
use crate::server_process::{signal_group, ServerProcess};
use std::ffi::OsString;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Default rate of a private PipeWire: PipeWire's own default.
pub const DEFAULT_RATE_HZ: u32 = 48_000;
/// Default quantum (`default.clock.quantum`): PipeWire's own default.
pub const DEFAULT_QUANTUM_FRAMES: u32 = 1024;
/// Default minimum quantum. PipeWire's own is 32, raised to 1024 on virtual machines by
/// the stock configuration; audiolat's private server allows 16 everywhere.
pub const DEFAULT_MIN_QUANTUM_FRAMES: u32 = 16;
/// Default maximum quantum: PipeWire's own default.
pub const DEFAULT_MAX_QUANTUM_FRAMES: u32 = 2048;
/// The socket name clients connect to (`PIPEWIRE_REMOTE`), inside the runtime directory.
pub const REMOTE_NAME: &str = crate::servers::PIPEWIRE_REMOTE_NAME;

/// The variable every process of a private PipeWire is started with: the PID of the
/// audiolat that started it (the same variable as a private jackd's).
pub const PRIVATE_SERVER_ENV: &str = crate::servers::PRIVATE_SERVER_ENV;

/// What to start.
#[derive(Clone, Debug)]
pub struct PipewireRequest {
    /// `default.clock.rate`.
    pub rate_hz: u32,
    /// `default.clock.quantum`.
    pub quantum_frames: u32,
    /// `default.clock.min-quantum` (also on virtual machines).
    pub min_quantum_frames: u32,
    /// `default.clock.max-quantum`.
    pub max_quantum_frames: u32,
    /// Where the server's private directory is made (it is removed on stop).
    pub parent_dir: PathBuf,
    /// Where to look for `pipewire`, `wireplumber`, `dbus-daemon` and `pw-link`;
    /// `None` for `$PATH`.
    pub tool_dirs: Option<Vec<PathBuf>>,
    /// How long the server may take until the sink's ports exist.
    pub start_timeout: Duration,
}

impl Default for PipewireRequest {
    fn default() -> Self {
        PipewireRequest {
            rate_hz: DEFAULT_RATE_HZ,
            quantum_frames: DEFAULT_QUANTUM_FRAMES,
            min_quantum_frames: DEFAULT_MIN_QUANTUM_FRAMES,
            max_quantum_frames: DEFAULT_MAX_QUANTUM_FRAMES,
            parent_dir: std::env::temp_dir(),
            tool_dirs: None,
            start_timeout: Duration::from_secs(10),
        }
    }
}

impl PipewireRequest {
    /// Checks the numbers before anything is started: a rate of 8 to 384 kHz, quanta
    /// that are powers of two from 8 to 8192 frames (PipeWire's quantum limit) with
    /// min <= default <= max.
    pub fn validate(&self) -> Result<(), PipewireError> {
        if !(8_000..=384_000).contains(&self.rate_hz) {
            return Err(PipewireError::BadRate(self.rate_hz));
        }
        let (min, quantum, max) = (
            self.min_quantum_frames,
            self.quantum_frames,
            self.max_quantum_frames,
        );
        let ok = |q: u32| q.is_power_of_two() && (8..=8192).contains(&q);
        if !(ok(min) && ok(quantum) && ok(max) && min <= quantum && quantum <= max) {
            return Err(PipewireError::BadQuantum { min, quantum, max });
        }
        Ok(())
    }

    fn clock(&self) -> ClockSettings {
        ClockSettings {
            rate_hz: self.rate_hz,
            quantum_frames: self.quantum_frames,
            min_quantum_frames: self.min_quantum_frames,
            max_quantum_frames: self.max_quantum_frames,
        }
    }
}

/// The pids of a private PipeWire's processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipewirePids {
    /// The session bus.
    pub dbus_daemon: u32,
    /// The PipeWire daemon.
    pub pipewire: u32,
    /// The session manager.
    pub wireplumber: u32,
    /// The process group all three run in (the `dbus-daemon`'s pid).
    pub group: u32,
}

/// What a private PipeWire is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipewireInfo {
    /// `pipewire --version`'s library version ("0.3.65"), when it said one.
    pub pipewire_version: Option<String>,
    /// `wireplumber --version`'s library version ("0.4.13"), when it said one.
    pub wireplumber_version: Option<String>,
    /// The private directory (`audiolat-pipewire-PID-N`, mode 0700) holding everything
    /// below; removed on stop.
    pub private_dir: PathBuf,
    /// The runtime directory holding the sockets (`XDG_RUNTIME_DIR`, mode 0700).
    pub runtime_dir: PathBuf,
    /// The daemon's configuration file.
    pub config_file: PathBuf,
    /// The null sink's node name ([`SINK_NODE_NAME`]).
    pub sink_node: String,
    /// The clock the daemon was configured with.
    pub rate_hz: u32,
    /// The default quantum the daemon was configured with.
    pub quantum_frames: u32,
    /// The processes.
    pub pids: PipewirePids,
}

/// How one of the server's processes ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessExit {
    /// Which process.
    pub process: PipewireProcess,
    /// Its pid.
    pub pid: u32,
    /// How it ended ("exit status 70", "signal 9").
    pub status: String,
}

/// One process of the server.
struct Member {
    process: PipewireProcess,
    started: ServerProcess,
}

/// A private headless PipeWire + WirePlumber with a null sink; stopped when dropped.
pub struct PipewireServer {
    tools: Tools,
    /// The private directory, removed on stop (then `dir_removed`).
    dir: PathBuf,
    dir_removed: bool,
    runtime_dir: PathBuf,
    config_file: PathBuf,
    clock: ClockSettings,
    versions: (Option<String>, Option<String>),
    members: Vec<Member>,
    group: Option<libc::pid_t>,
}

impl std::fmt::Debug for PipewireServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipewireServer")
            .field("dir", &self.dir)
            .field("group", &self.group)
            .field(
                "members",
                &self
                    .members
                    .iter()
                    .map(|m| (m.process, m.started.pid()))
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl PipewireServer {
    /// Starts a private PipeWire as the [module docs](super) describe, and returns once
    /// the null sink's monitor ports exist. On any error, whatever was started is stopped
    /// and the private directory removed.
    pub fn start(req: &PipewireRequest) -> Result<PipewireServer, PipewireError> {
        req.validate()?;
        let tools = Tools::find(req.tool_dirs.as_deref())?;
        let versions = (
            library_version(&tools.pipewire),
            library_version(&tools.wireplumber),
        );
        let dir = make_private_dir(&req.parent_dir)?;
        let runtime_dir = dir.join("runtime");
        let config_file = dir.join("audiolat-pipewire.conf");
        // From here on, dropping `server` stops what was started and removes `dir`.
        let mut server = PipewireServer {
            tools,
            dir: dir.clone(),
            dir_removed: false,
            runtime_dir: runtime_dir.clone(),
            config_file: config_file.clone(),
            clock: req.clock(),
            versions,
            members: Vec::new(),
            group: None,
        };
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&runtime_dir)
            .map_err(|e| io_error(format!("creating {}", runtime_dir.display()), e))?;
        for sub in ["config", "state", "data"] {
            let path = dir.join(sub);
            std::fs::create_dir(&path)
                .map_err(|e| io_error(format!("creating {}", path.display()), e))?;
        }
        std::fs::write(&config_file, daemon_config(&server.clock))
            .map_err(|e| io_error(format!("writing {}", config_file.display()), e))?;
        server.start_processes(Instant::now() + req.start_timeout, req.start_timeout)?;
        Ok(server)
    }

    /// Starts the bus, the daemon and the session manager, each once the one before
    /// answers, and waits for the sink's monitor ports.
    fn start_processes(
        &mut self,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<(), PipewireError> {
        let bus = self.runtime_dir.join("bus");
        let bus_address = format!("unix:path={}", bus.display());
        let dbus = self.tools.dbus_daemon.clone();
        let mut cmd = Command::new(&dbus);
        cmd.args(["--session", "--nofork", "--nopidfile"])
            .arg(format!("--address={bus_address}"));
        self.spawn(PipewireProcess::DbusDaemon, cmd)?;
        self.wait_for(
            &format!("the session bus {}", bus.display()),
            deadline,
            timeout,
            |s| s.runtime_dir.join("bus").exists(),
        )?;

        let mut cmd = Command::new(&self.tools.pipewire);
        cmd.arg("-c")
            .arg(&self.config_file)
            .env("DBUS_SESSION_BUS_ADDRESS", &bus_address);
        self.spawn(PipewireProcess::Pipewire, cmd)?;
        crate::phase::reached(crate::phase::Phase::ServerStart);
        let socket = self.runtime_dir.join(REMOTE_NAME);
        self.wait_for(
            &format!("the socket {}", socket.display()),
            deadline,
            timeout,
            |s| s.runtime_dir.join(REMOTE_NAME).exists(),
        )?;

        let mut cmd = Command::new(&self.tools.wireplumber);
        cmd.env("DBUS_SESSION_BUS_ADDRESS", &bus_address);
        self.spawn(PipewireProcess::Wireplumber, cmd)?;
        let what = format!("the ports {SINK_NODE_NAME}:monitor_FL and monitor_FR (pw-link -o)");
        let mut last_poll: Option<Instant> = None;
        self.wait_for(&what, deadline, timeout, |s| {
            // pw-link takes some milliseconds of its own: ask every 50 ms at most.
            if last_poll.is_some_and(|t| t.elapsed() < Duration::from_millis(50)) {
                return false;
            }
            last_poll = Some(Instant::now());
            s.sink_monitor_ports_exist()
        })
    }

    /// Starts one process of the server in the server's process group (a new one, led by
    /// the first process) with the server's environment, keeping its output's tail.
    fn spawn(&mut self, process: PipewireProcess, mut cmd: Command) -> Result<(), PipewireError> {
        let set_here: Vec<OsString> = cmd.get_envs().map(|(k, _)| k.to_owned()).collect();
        for var in DAEMON_ENV_REMOVED {
            if !set_here.iter().any(|k| k == var) {
                cmd.env_remove(var);
            }
        }
        cmd.envs(self.client_env())
            .env("XDG_CONFIG_HOME", self.dir.join("config"))
            .env("XDG_STATE_HOME", self.dir.join("state"))
            .env("XDG_DATA_HOME", self.dir.join("data"))
            .current_dir(&self.dir);
        let started = ServerProcess::spawn(&mut cmd, self.group, &format!("{process}-output"))
            .map_err(|e| io_error(format!("starting {process}"), e))?;
        if self.group.is_none() {
            self.group = Some(started.pid() as libc::pid_t);
        }
        self.members.push(Member { process, started });
        Ok(())
    }

    /// Waits (at most a second) until `process`'s output readers reached the end of its
    /// streams, so its last lines are in its tail.
    fn await_output(&self, process: PipewireProcess) {
        for member in self.members.iter().filter(|m| m.process == process) {
            member.started.await_output(Duration::from_secs(1));
        }
    }

    /// Polls `ready` until it holds; an error if a process ends first or `deadline`
    /// passes (the caller's drop then stops the server).
    fn wait_for(
        &mut self,
        waiting_for: &str,
        deadline: Instant,
        timeout: Duration,
        mut ready: impl FnMut(&Self) -> bool,
    ) -> Result<(), PipewireError> {
        loop {
            if let Some(exit) = self.exited().into_iter().next() {
                self.await_output(exit.process);
                return Err(PipewireError::Exited {
                    process: exit.process,
                    status: exit.status,
                    output: self.output_tail(exit.process),
                });
            }
            if ready(self) {
                return Ok(());
            }
            if Instant::now() > deadline {
                let output = self
                    .members
                    .iter()
                    .map(|m| format!("{}: {}", m.process, m.started.output_tail(|_| true)))
                    .collect::<Vec<_>>()
                    .join("; ");
                return Err(PipewireError::NotReady {
                    waiting_for: waiting_for.to_string(),
                    timeout,
                    output,
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Whether `pw-link -o`, run as a client of this server, lists both monitor ports.
    fn sink_monitor_ports_exist(&self) -> bool {
        let mut cmd = Command::new(&self.tools.pw_link);
        for var in DAEMON_ENV_REMOVED {
            cmd.env_remove(var);
        }
        cmd.arg("-o").envs(self.client_env());
        let Some(listing) = run_bounded(cmd, Duration::from_secs(2)) else {
            return false;
        };
        ["monitor_FL", "monitor_FR"].iter().all(|port| {
            let wanted = format!("{SINK_NODE_NAME}:{port}");
            listing.lines().any(|l| l.trim() == wanted)
        })
    }

    fn pid_of(&self, process: PipewireProcess) -> u32 {
        self.members
            .iter()
            .find(|m| m.process == process)
            .map_or(0, |m| m.started.pid())
    }

    /// What this server is: versions, runtime directory, sink, pids.
    pub fn info(&self) -> PipewireInfo {
        PipewireInfo {
            pipewire_version: self.versions.0.clone(),
            wireplumber_version: self.versions.1.clone(),
            private_dir: self.dir.clone(),
            runtime_dir: self.runtime_dir.clone(),
            config_file: self.config_file.clone(),
            sink_node: SINK_NODE_NAME.to_string(),
            rate_hz: self.clock.rate_hz,
            quantum_frames: self.clock.quantum_frames,
            pids: PipewirePids {
                dbus_daemon: self.pid_of(PipewireProcess::DbusDaemon),
                pipewire: self.pid_of(PipewireProcess::Pipewire),
                wireplumber: self.pid_of(PipewireProcess::Wireplumber),
                group: self.group.map_or(0, |g| g as u32),
            },
        }
    }

    /// The environment a client process needs to reach this server (and no other):
    /// `PIPEWIRE_RUNTIME_DIR`, `PIPEWIRE_REMOTE` and `XDG_RUNTIME_DIR`. (A client that
    /// inherits a `PIPEWIRE_CONFIG_DIR` looks for its `client.conf` there, and fails
    /// unless the directory has one.)
    pub fn client_env(&self) -> Vec<(&'static str, OsString)> {
        vec![
            ("PIPEWIRE_RUNTIME_DIR", self.runtime_dir.clone().into()),
            ("PIPEWIRE_REMOTE", REMOTE_NAME.into()),
            ("XDG_RUNTIME_DIR", self.runtime_dir.clone().into()),
        ]
    }

    /// Which of the server's processes have ended, and how (reaping them). Empty while
    /// all three run. A process stays listed once it has ended.
    pub fn exited(&mut self) -> Vec<ProcessExit> {
        self.members
            .iter_mut()
            .filter_map(|m| {
                let status = m.started.status()?.to_string();
                Some(ProcessExit {
                    process: m.process,
                    pid: m.started.pid(),
                    status,
                })
            })
            .collect()
    }

    /// The last lines `process` printed (stdout and stderr), joined with " | ".
    pub fn output_tail(&self, process: PipewireProcess) -> String {
        self.members
            .iter()
            .find(|m| m.process == process)
            .map_or_else(
                || "(not started)".into(),
                |m| m.started.output_tail(|_| true),
            )
    }

    /// Stops the server: SIGTERM to WirePlumber, then PipeWire, then the bus, each given
    /// two seconds to end; SIGKILL to the process group for anything left; every process
    /// reaped; the private directory removed. Does nothing the second time.
    pub fn stop(&mut self) {
        for process in [
            PipewireProcess::Wireplumber,
            PipewireProcess::Pipewire,
            PipewireProcess::DbusDaemon,
        ] {
            if let Some(member) = self.members.iter_mut().find(|m| m.process == process) {
                member.started.terminate(Duration::from_secs(2));
            }
        }
        // A member not yet reaped keeps the group's id from being reused, so the group
        // signalled is still ours.
        if let Some(group) = self.group {
            if self.members.iter().any(|m| !m.started.reaped()) {
                signal_group(group, libc::SIGKILL);
            }
        }
        for member in &mut self.members {
            member.started.reap();
        }
        if !self.dir_removed {
            let _ = std::fs::remove_dir_all(&self.dir);
            self.dir_removed = true;
        }
    }
}

impl Drop for PipewireServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Variables a user's session may carry that would make the private daemon, its
/// session manager or `pw-link` read another configuration or join another bus: never
/// passed on (the bus address is set anew for the daemon and WirePlumber).
const DAEMON_ENV_REMOVED: [&str; 8] = [
    "PIPEWIRE_CONFIG_DIR",
    "PIPEWIRE_CONFIG_NAME",
    "PIPEWIRE_CONFIG_PREFIX",
    "PIPEWIRE_PROPS",
    "WIREPLUMBER_CONFIG_DIR",
    "WIREPLUMBER_DATA_DIR",
    "DBUS_SESSION_BUS_ADDRESS",
    "DISPLAY",
];

/// The prefix of every private directory: `audiolat-pipewire-PID-N`, PID the audiolat
/// that made it.
const PRIVATE_DIR_PREFIX: &str = "audiolat-pipewire-";

/// Makes `parent/audiolat-pipewire-PID-N`, mode 0700, for the first N not in use, after
/// removing the private directories in `parent` of audiolats that no longer run (one
/// killed outright leaves its directory behind; its server died with it).
fn make_private_dir(parent: &Path) -> Result<PathBuf, PipewireError> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    remove_stale_dirs(parent);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = parent.join(format!("{PRIVATE_DIR_PREFIX}{}-{n}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_error(format!("creating {}", dir.display()), e)),
        }
    }
}

/// Removes `parent/audiolat-pipewire-PID-N` for every PID that no longer runs.
/// A directory that cannot be removed (another user's) is left alone.
fn remove_stale_dirs(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let owner = name
            .to_str()
            .and_then(|n| n.strip_prefix(PRIVATE_DIR_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .filter(|(_, n)| n.parse::<u32>().is_ok())
            .and_then(|(pid, _)| pid.parse::<i32>().ok());
        if owner.is_some_and(|pid| !crate::servers::process_alive(pid)) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn io_error(op: String, source: std::io::Error) -> PipewireError {
    PipewireError::Io { op, source }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_checked() {
        assert!(PipewireRequest::default().validate().is_ok());
        let bad_rate = PipewireRequest {
            rate_hz: 1000,
            ..Default::default()
        };
        assert!(bad_rate
            .validate()
            .unwrap_err()
            .to_string()
            .contains("8000 to 384000"));
        for (min, quantum, max) in [
            (16, 100, 2048),
            (256, 128, 2048),
            (16, 1024, 512),
            (4, 64, 128),
        ] {
            let req = PipewireRequest {
                min_quantum_frames: min,
                quantum_frames: quantum,
                max_quantum_frames: max,
                ..Default::default()
            };
            let e = req.validate().unwrap_err().to_string();
            assert!(
                e.contains("power of two") && e.contains(&quantum.to_string()),
                "{e}"
            );
        }
    }

    #[test]
    fn a_missing_program_names_its_package() {
        let none: Vec<PathBuf> = Vec::new();
        let e = Tools::find(Some(&none)).unwrap_err().to_string();
        assert_eq!(e, "pipewire not found: install the pipewire-bin package");
        let req = PipewireRequest {
            tool_dirs: Some(none),
            ..Default::default()
        };
        assert!(matches!(
            PipewireServer::start(&req),
            Err(PipewireError::ToolMissing {
                tool: "pipewire",
                package: "pipewire-bin"
            })
        ));
    }
}
