//! Finding a JACK server, or starting a private `jackd -d dummy` and stopping it again.
//!
//! [`JackServer::connect`] resolves `--server auto|external|dummy`:
//!
//! - `external`: a server must already answer under the name asked for (or
//!   `$JACK_DEFAULT_SERVER`, or "default"). PipeWire's JACK counts as one.
//! - `dummy`: audiolat starts `jackd -n NAME -d dummy -r RATE -p PERIOD` under a name of
//!   its own (`audiolat-dummy`, or `audiolat-dummy-2` ... when that is in use, unless
//!   `--server-name` says otherwise) and refuses a name a server already answers to.
//! - `auto`: `external` when a server answers, otherwise `dummy`. With no name asked, a
//!   jackd comes first, then a running PipeWire ([`crate::pipewire::running`]) through its
//!   JACK API (`external` too), its quantum forced to the period asked for and restored.
//! - `pipewire`: audiolat starts a private headless PipeWire and opens its clients through
//!   PipeWire's libjack ([`super::via_pipewire`]); it is stopped like a private jackd.
//!
//! libjack is never allowed to start a server by itself: every client is opened with
//! `JackNoStartServer` and `JACK_NO_START_SERVER=1` is set.
//!
//! A private server runs in its own process group (so a Ctrl-C on the terminal does not
//! reach it before audiolat has stored its results) with `PR_SET_PDEATHSIG` (so it dies
//! with audiolat even on SIGKILL); [`JackServer`]'s `Drop` stops it with SIGTERM and, after
//! three seconds, SIGKILL. Create the server on a thread that outlives it (the main
//! thread): the kernel's parent-death signal follows the thread that forked.
//!
//! Opening clients changes the process environment (`JACK_DEFAULT_SERVER` is how libjack
//! picks a server, and the `jack` crate cannot pass a server name): do it before other
//! threads read the environment, as the binary does.

use crate::audio::{AudioError, ServerInfo, ServerSetting};
pub use crate::libjack::{
    libjack_messages, open_client, open_client_within, prepare_environment, OPEN_TIMEOUT,
};
use crate::server_process::{signal_group, ServerProcess};
pub use crate::servers::{default_server_name, PRIVATE_SERVER_ENV};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// Which server to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerMode {
    /// A running server if one answers, else a private dummy server.
    Auto,
    /// A running server, or an error.
    External,
    /// Always a private dummy server.
    Dummy,
    /// A private headless PipeWire, through its JACK API.
    Pipewire,
}

impl std::str::FromStr for ServerMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(ServerMode::Auto),
            "external" => Ok(ServerMode::External),
            "dummy" => Ok(ServerMode::Dummy),
            "pipewire" => Ok(ServerMode::Pipewire),
            other => Err(format!(
                "unknown server mode `{other}`: use auto, external, dummy or pipewire"
            )),
        }
    }
}

impl std::fmt::Display for ServerMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ServerMode::Auto => "auto",
            ServerMode::External => "external",
            ServerMode::Dummy => "dummy",
            ServerMode::Pipewire => "pipewire",
        })
    }
}

/// Default rate of a private server: the study's CD rate.
pub const DEFAULT_RATE_HZ: u32 = 44_100;
/// Default period of a private server.
pub const DEFAULT_PERIOD_FRAMES: u32 = 128;

/// What the user asked for.
#[derive(Clone, Debug)]
pub struct ServerRequest {
    /// auto, external or dummy.
    pub mode: ServerMode,
    /// Server name: for `external` the one to use, for `dummy` the one to create.
    pub name: Option<String>,
    /// Required rate (checked against an external server, used for a private one).
    pub rate_hz: Option<u32>,
    /// Required period (likewise).
    pub period_frames: Option<u32>,
    /// Path of `jackd`, when installed.
    pub jackd: Option<PathBuf>,
    /// How long a private server may take to answer.
    pub start_timeout: Duration,
}

impl ServerRequest {
    /// Checks the numbers before anything is started.
    pub fn validate(&self) -> Result<(), AudioError> {
        if self.period_frames == Some(0) {
            return Err(AudioError::BadPeriod(0));
        }
        if let Some(r) = self.rate_hz {
            if !(8_000..=384_000).contains(&r) {
                return Err(AudioError::BadRate(r));
            }
        }
        if let Some(n) = &self.name {
            let ok = !n.is_empty()
                && n.len() <= 60
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
            if !ok {
                return Err(AudioError::BadServerName(n.clone()));
            }
        }
        Ok(())
    }
}

/// The periods audiolat gives a private server: powers of two from 16 to 8192 frames,
/// what JACK clients expect (jackd's dummy driver would take others; a running server's
/// period, whatever it is, is only compared with `--period`).
pub fn validate_period(frames: u32) -> Result<(), AudioError> {
    if frames.is_power_of_two() && (16..=8192).contains(&frames) {
        Ok(())
    } else {
        Err(AudioError::BadPeriod(frames))
    }
}

/// The first of `audiolat-dummy`, `audiolat-dummy-2` ... `audiolat-dummy-8` no server
/// answers to. (Not plain `audiolat`: with jackd2 1.9.21 a second client named like its
/// server cannot open once the first has closed.)
///
/// The names are stable rather than per process on purpose: jackd2 keeps a registry of
/// at most eight servers (in `/dev/shm/jack-shm-registry`) and reclaims the entry of a
/// server that died without cleaning up only when a server of the same name starts.
/// Per-process names would leak one entry per killed server until no JACK server could
/// start on the machine.
///
/// A name whose last server is still exiting is waited for (at most `timeout`), and a
/// name still held in the registry by a process that does not answer (another audiolat's
/// server starting, a pid reused since) is passed over: jackd would refuse either.
fn free_private_name(timeout: Duration) -> Result<String, AudioError> {
    stop_stale_servers(is_private_name);
    for i in 1..=8 {
        let name = if i == 1 {
            "audiolat-dummy".to_string()
        } else {
            format!("audiolat-dummy-{i}")
        };
        if probe(&name)?.is_none()
            && wait_for_exiting_holder(&name, timeout)
            && crate::servers::jack_registry_holder(&name).is_none()
        {
            return Ok(name);
        }
    }
    Err(AudioError::ServerBusy("audiolat-dummy-8".into()))
}

/// Waits, at most `timeout`, until no process that is exiting holds `name` in jackd2's
/// registry ([`crate::servers::process_exiting`]); whether none does. A server that was
/// just stopped, or whose audiolat was killed (the kernel then stops it), keeps its name
/// there as long as its pid exists: as a zombie until its new parent, init, reaps it
/// (which some take a second or two over). jackd refuses the name meanwhile ("server
/// already active"), so the next run, started at once, would fail.
fn wait_for_exiting_holder(name: &str, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        match crate::servers::jack_registry_holder(name) {
            Some(pid) if crate::servers::process_exiting(pid) => {}
            _ => return true,
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `name` is one audiolat gives its private servers when none is asked for.
fn is_private_name(name: &str) -> bool {
    name == "audiolat-dummy"
        || name
            .strip_prefix("audiolat-dummy-")
            .is_some_and(|n| n.parse::<u8>().is_ok())
}

/// Stops every private server an audiolat that died left behind, under a name `wanted`
/// accepts: a `jackd -n NAME ... -d dummy` carrying [`PRIVATE_SERVER_ENV`] with the PID
/// of an audiolat that no longer runs. Any other server (a user's, a service's, a live
/// audiolat's) is never touched: a name it holds is refused as busy. A dead audiolat's
/// server holds its name and its entry in jackd's registry until it is stopped; the next
/// run would otherwise pick another name, or fail to start one. Returns the pids stopped.
pub fn stop_stale_servers(wanted: impl Fn(&str) -> bool) -> Vec<i32> {
    let mut stopped = Vec::new();
    for (pid, args) in jackd_processes() {
        let is_dummy_jackd = args.windows(2).any(|w| w[0] == "-d" && w[1] == "dummy")
            && args.windows(2).any(|w| w[0] == "-n" && wanted(&w[1]));
        if !is_dummy_jackd || !started_by_dead_audiolat(pid) {
            continue;
        }
        // SAFETY: signalling a jackd audiolat started (its own process group) whose
        // audiolat is gone.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(3);
        while crate::servers::process_running(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        if crate::servers::process_running(pid) {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let deadline = Instant::now() + Duration::from_secs(1);
            while crate::servers::process_running(pid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        stopped.push(pid);
    }
    stopped
}

/// This user's files in `/dev/shm` of audiolat's private JACK servers (`audiolat-dummy`,
/// `audiolat-dummy-N`) that no longer run: the semaphores (`jack_sem.UID_NAME_CLIENT`) and
/// the socket (`jack_NAME_UID_0`) that a server killed outright, or a client closed after
/// its server had gone, leaves behind. A name a jackd serves, or that a process still
/// holds in jackd's registry, is never touched.
pub fn stale_private_files() -> Vec<PathBuf> {
    let names: Vec<String> = std::iter::once("audiolat-dummy".to_string())
        .chain((2..=8).map(|i| format!("audiolat-dummy-{i}")))
        .collect();
    let jackds = jackd_processes();
    let running = |name: &str| {
        jackds
            .iter()
            .any(|(_, args)| args.windows(2).any(|w| w[0] == "-n" && w[1] == name))
            || crate::servers::jack_registry_holder(name).is_some()
    };
    server_files(&names)
        .into_iter()
        .filter(|(name, _)| !running(name))
        .map(|(_, path)| path)
        .collect()
}

/// This user's files in `/dev/shm` of the JACK servers `names` (the semaphores
/// `jack_sem.UID_NAME_CLIENT` and the socket `jack_NAME_UID_0`), each with its server's
/// name, sorted.
fn server_files(names: &[String]) -> Vec<(String, PathBuf)> {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let server_of = |file: &str| -> Option<&String> {
        if let Some(rest) = file
            .strip_prefix("jack_sem.")
            .and_then(|r| r.strip_prefix(&format!("{uid}_")))
        {
            return names.iter().find(|n| {
                rest.strip_prefix(n.as_str())
                    .is_some_and(|c| c.starts_with('_'))
            });
        }
        let name = crate::servers::jack_socket_server(file, uid)?;
        names.iter().find(|n| **n == name)
    };
    let Ok(dir) = std::fs::read_dir("/dev/shm") else {
        return Vec::new();
    };
    let mut out: Vec<(String, PathBuf)> = dir
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str().and_then(server_of)?.clone();
            Some((name, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// Every jackd running on this machine (any user's): its pid and its command line.
pub fn jackd_processes() -> Vec<(i32, Vec<String>)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_string_lossy().parse::<i32>().ok()?;
            let cmd = std::fs::read(entry.path().join("cmdline")).ok()?;
            let args: Vec<String> = cmd
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            args.first()
                .is_some_and(|a| a.ends_with("jackd"))
                .then_some((pid, args))
        })
        .collect()
}

/// Whether `pid` is a private server whose audiolat no longer runs.
fn started_by_dead_audiolat(pid: i32) -> bool {
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let prefix = format!("{PRIVATE_SERVER_ENV}=");
    environ
        .split(|b| *b == 0)
        .filter_map(|v| v.strip_prefix(prefix.as_bytes()))
        .filter_map(|owner| std::str::from_utf8(owner).ok()?.parse::<i32>().ok())
        .any(|owner| owner != std::process::id() as i32 && !crate::servers::process_running(owner))
}

/// A JACK server in use; a private one is stopped when this is dropped.
pub struct JackServer {
    info: ServerInfo,
    /// A private jackd, stopped on drop.
    process: Option<ServerProcess>,
    /// A private PipeWire (`ServerMode::Pipewire`), stopped on drop.
    pipewire: Option<crate::pipewire::PipewireServer>,
    /// A running PipeWire (the user's) and the quantum forced on it, restored on drop.
    running: Option<super::via_pipewire::OnRunning>,
}

impl std::fmt::Debug for JackServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JackServer")
            .field("info", &self.info)
            .field("pid", &self.pid())
            .finish()
    }
}

impl JackServer {
    /// Resolves the request to a server that answers. See the module docs.
    pub fn connect(req: &ServerRequest) -> Result<JackServer, AudioError> {
        req.validate()?;
        if req.mode == ServerMode::Pipewire {
            return Self::start_pipewire(req);
        }
        // The user's server comes first: a jackd, else a running PipeWire (found without
        // loading jackd2's libjack, which would keep PipeWire's out of this process).
        if matches!(req.mode, ServerMode::Auto | ServerMode::External)
            && req.name.is_none()
            && !jackd_listens(&default_server_name())
        {
            if let Some(found) = crate::pipewire::running::detect() {
                return Self::use_running_pipewire(req, found);
            }
        }
        // PipeWire's libjack, loaded for a private PipeWire, would answer for jackd.
        if let Some(pipewire) = super::via_pipewire::loaded_libjacks()
            .into_iter()
            .find(|l| l.to_string_lossy().contains("/pipewire-0.3/"))
        {
            return Err(AudioError::OtherLibjackLoaded(
                pipewire.display().to_string(),
            ));
        }
        prepare_environment();
        match req.mode {
            ServerMode::External | ServerMode::Auto => {
                let name = req.name.clone().unwrap_or_else(default_server_name);
                match probe(&name)? {
                    Some(facts) => {
                        check_matches(&name, facts, req)?;
                        Ok(JackServer {
                            info: ServerInfo {
                                name,
                                private: false,
                                command_line: None,
                                // Not the local jackd's: the running server may be another
                                // build, or PipeWire.
                                version: None,
                                quantum_asked_frames: None,
                                quantum_granted_frames: None,
                                rate_asked_hz: None,
                                rate_granted_hz: None,
                            },
                            process: None,
                            pipewire: None,
                            running: None,
                        })
                    }
                    None if req.mode == ServerMode::External => Err(AudioError::NoServer(name)),
                    // A name the user gave is the private server's name too.
                    None => Self::start_private(req, req.name.clone()),
                }
            }
            ServerMode::Dummy => Self::start_private(req, req.name.clone()),
            ServerMode::Pipewire => Self::start_pipewire(req),
        }
    }

    /// A private PipeWire, once it answers a JACK client (see [`super::via_pipewire`]).
    fn start_pipewire(req: &ServerRequest) -> Result<JackServer, AudioError> {
        let (pipewire, info) =
            super::via_pipewire::start(req.rate_hz, req.period_frames, req.start_timeout)?;
        prepare_environment();
        let server = JackServer {
            info,
            process: None,
            pipewire: Some(pipewire),
            running: None,
        };
        match probe(server.name())? {
            Some(facts) => check_matches(server.name(), facts, req).map(|()| server),
            None => Err(AudioError::ServerStart {
                name: server.info.name.clone(),
                why: "the private PipeWire runs but no JACK client could open on it".into(),
                output: libjack_messages().join(" | "),
            }),
        }
    }

    /// The running PipeWire `found`, through its JACK API, its quantum forced to the
    /// period asked for (see [`super::via_pipewire::use_running`]).
    fn use_running_pipewire(
        req: &ServerRequest,
        found: crate::pipewire::running::RunningPipewire,
    ) -> Result<JackServer, AudioError> {
        let on = super::via_pipewire::use_running(
            found,
            req.period_frames,
            req.rate_hz,
            req.start_timeout,
        )?;
        prepare_environment();
        let server = JackServer {
            info: on.info.clone(),
            process: None,
            pipewire: None,
            running: Some(on),
        };
        match probe(server.name())? {
            Some(facts) => check_matches(server.name(), facts, req).map(|()| server),
            None => Err(AudioError::NoServer(server.info.name.clone())),
        }
    }

    fn start_private(req: &ServerRequest, name: Option<String>) -> Result<JackServer, AudioError> {
        validate_period(req.period_frames.unwrap_or(DEFAULT_PERIOD_FRAMES))?;
        let jackd = req.jackd.clone().ok_or(AudioError::NoJackd)?;
        // A registry full of servers killed under other names leaves no room for ours.
        crate::servers::reclaim_dead_jack_registry();
        let name = match name {
            Some(name) => {
                stop_stale_servers(|n| n == name);
                wait_for_exiting_holder(&name, req.start_timeout);
                if probe(&name)?.is_some() {
                    return Err(AudioError::ServerBusy(name));
                }
                name
            }
            None => free_private_name(req.start_timeout)?,
        };
        let rate = req.rate_hz.unwrap_or(DEFAULT_RATE_HZ);
        let period = req.period_frames.unwrap_or(DEFAULT_PERIOD_FRAMES);
        let args: Vec<String> = vec![
            "-n".into(),
            name.clone(),
            "-d".into(),
            "dummy".into(),
            "-r".into(),
            rate.to_string(),
            "-p".into(),
            period.to_string(),
        ];
        let mut cmd = Command::new(&jackd);
        cmd.args(&args).env_remove("JACK_DEFAULT_SERVER");
        let process =
            ServerProcess::spawn(&mut cmd, None, "jackd-output").map_err(|e| AudioError::Io {
                op: format!("starting {}", jackd.display()),
                source: e,
            })?;
        crate::phase::reached(crate::phase::Phase::ServerStart);
        let command_line = std::iter::once(jackd.display().to_string())
            .chain(args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        let server = JackServer {
            info: ServerInfo {
                name,
                private: true,
                command_line: Some(command_line),
                version: jackd_version(&jackd),
                quantum_asked_frames: None,
                quantum_granted_frames: None,
                rate_asked_hz: None,
                rate_granted_hz: None,
            },
            process: Some(process),
            pipewire: None,
            running: None,
        };
        server.wait_until_it_answers(req.start_timeout)
    }

    /// Waits for a private server just started to answer, at most `timeout`: the server,
    /// or why it did not come up (it exited, or did not answer in time and was stopped).
    fn wait_until_it_answers(mut self, timeout: Duration) -> Result<JackServer, AudioError> {
        let name = self.info.name.clone();
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.exited() {
                if let Some(p) = &self.process {
                    p.await_output(Duration::from_secs(1));
                }
                let mut output = self.output_tail();
                if output.contains("Too many servers already active") {
                    // jackd2's registry holds eight servers and keeps the entries of
                    // servers that were killed outright.
                    output.push_str(
                        " (jackd's registry of 8 servers is full, often of servers that were killed: stop every JACK server, then rm /dev/shm/jack-shm-registry)",
                    );
                }
                if output.contains("already active") {
                    if let Some(pid) = crate::servers::jack_registry_holder(&name) {
                        output.push_str(&format!(
                            " (process {pid} holds the name in jackd's registry{})",
                            if crate::servers::process_exiting(pid) {
                                ": it is exiting, and has not been reaped yet"
                            } else {
                                ""
                            }
                        ));
                    }
                }
                return Err(AudioError::ServerStart {
                    name,
                    why: format!("jackd exited with {status}"),
                    output,
                });
            }
            if probe(&name)?.is_some() {
                return Ok(self);
            }
            if Instant::now() > deadline {
                let output = self.output_tail();
                self.stop();
                return Err(AudioError::ServerStart {
                    name,
                    why: format!("no answer within {timeout:?}"),
                    output,
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The server's facts.
    pub fn info(&self) -> &ServerInfo {
        &self.info
    }

    /// The private PipeWire, when this is one (`ServerMode::Pipewire`).
    pub fn pipewire(&self) -> Option<&crate::pipewire::PipewireServer> {
        self.pipewire.as_ref()
    }

    /// The running PipeWire (not audiolat's), when this is one.
    pub fn running_pipewire(&self) -> Option<&crate::pipewire::running::RunningPipewire> {
        self.running.as_ref().map(|r| &r.server)
    }

    /// The server name to open clients on.
    pub fn name(&self) -> &str {
        &self.info.name
    }

    /// Process id of a private server (a private PipeWire's daemon).
    pub fn pid(&self) -> Option<u32> {
        let pipewire = self.pipewire.as_ref().map(|p| p.info().pids.pipewire);
        self.process.as_ref().map(ServerProcess::pid).or(pipewire)
    }

    /// Whether this server is a private PipeWire (the JACK API through PipeWire's
    /// libjack, or native streams), not a jackd.
    pub fn is_pipewire(&self) -> bool {
        self.pipewire.is_some()
    }

    /// For a private server that has exited: how it ended (a private PipeWire: the
    /// first of its processes that ended).
    pub fn exited(&mut self) -> Option<String> {
        if let Some(pipewire) = self.pipewire.as_mut() {
            let exit = pipewire.exited().into_iter().next()?;
            return Some(format!("{} exited with {}", exit.process, exit.status));
        }
        self.process.as_mut()?.status().map(str::to_string)
    }

    /// The private server's last output lines, joined with " | ".
    pub fn output_tail(&self) -> String {
        let Some(process) = &self.process else {
            return "(nothing)".into();
        };
        process.output_tail(|l| {
            !l.starts_with("Copyright")
                && !l.contains("ABSOLUTELY NO WARRANTY")
                && !l.contains("free software")
                && !l.contains("certain conditions")
                && !l.starts_with("jackdmp ")
        })
    }

    /// Stops a private server (SIGTERM to its group, SIGKILL after 3 s) and reaps it
    /// (a private PipeWire: [`crate::pipewire::PipewireServer::stop`]). Does nothing for
    /// an external one. A jackd that did not shut down cleanly (killed after its grace,
    /// as a busy machine can make it, or dead of a signal) could not remove its
    /// semaphores and socket from `/dev/shm`: they are removed here, the server gone.
    pub fn stop(&mut self) {
        // A running PipeWire's quantum goes back to what it was.
        drop(self.running.take());
        if let Some(mut pipewire) = self.pipewire.take() {
            pipewire.stop();
        }
        let Some(mut process) = self.process.take() else {
            return;
        };
        // Signalled only while unreaped, so that the group signalled is still ours (one
        // reaped already, by `exited`, may have had its number given to another);
        // anything left in it (jackd forks nothing, but be sure) goes with it.
        if !process.reaped() {
            let group = process.pid() as libc::pid_t;
            signal_group(group, libc::SIGTERM);
            process.ends_within(Duration::from_secs(3));
            signal_group(group, libc::SIGKILL);
        }
        process.reap();
        // A jackd that did not shut down cleanly (killed after its grace, or dead of a
        // signal of its own) left its semaphores and socket: it is gone, so are they.
        let name = &self.info.name;
        let served = jackd_processes()
            .iter()
            .any(|(_, args)| args.windows(2).any(|w| w[0] == "-n" && w[1] == *name));
        if !served {
            for (_, file) in server_files(std::slice::from_ref(name)) {
                let _ = std::fs::remove_file(file);
            }
        }
    }
}

impl Drop for JackServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether a jackd answers under `name`: its socket `/dev/shm/jack_NAME_UID_0` accepts a
/// connection. Asked without libjack, so that PipeWire's can still be loaded after.
pub fn jackd_listens(name: &str) -> bool {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    std::os::unix::net::UnixStream::connect(format!("/dev/shm/jack_{name}_{uid}_0")).is_ok()
}

/// `jackd --version`'s version line.
pub fn jackd_version(jackd: &std::path::Path) -> Option<String> {
    let out = Command::new(jackd).arg("--version").output().ok()?;
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    text.lines()
        .find(|l| l.contains("version"))
        .map(|l| l.trim().to_string())
}

/// Rate and period of a server that answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerFacts {
    /// Sample rate.
    pub rate_hz: u32,
    /// Period.
    pub period_frames: u32,
}

/// Asks whether a server answers under `name`; `Ok(None)` when none does.
pub fn probe(name: &str) -> Result<Option<ServerFacts>, AudioError> {
    match open_client(name, "audiolat-probe") {
        Ok(client) => {
            let facts = ServerFacts {
                rate_hz: client.sample_rate(),
                period_frames: client.buffer_size(),
            };
            drop(client);
            Ok(Some(facts))
        }
        Err(e @ (AudioError::NoLibjack(_) | AudioError::Unresponsive { .. })) => Err(e),
        Err(_) => Ok(None),
    }
}

/// What a running server offers: its rate and period, and its physical audio ports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerPorts {
    /// Rate and period.
    pub facts: ServerFacts,
    /// Physical playback ports (audio inputs of the server's driver: `system:playback_1`).
    pub playback: Vec<String>,
    /// Physical capture ports (audio outputs of the driver: `system:capture_1`).
    pub capture: Vec<String>,
    /// Every port, physical or not.
    pub all_ports: usize,
}

/// Asks the server `name` for its rate, period and ports, waiting at most `timeout`;
/// `Ok(None)` when no server answers to that name.
pub fn survey(name: &str, timeout: Duration) -> Result<Option<ServerPorts>, AudioError> {
    match open_client_within(name, "audiolat-devices", timeout) {
        Ok(client) => {
            let physical = |direction| {
                client.ports(
                    None,
                    Some(jack::jack_sys::FLOAT_MONO_AUDIO),
                    direction | jack::PortFlags::IS_PHYSICAL,
                )
            };
            let ports = ServerPorts {
                facts: ServerFacts {
                    rate_hz: client.sample_rate(),
                    period_frames: client.buffer_size(),
                },
                playback: physical(jack::PortFlags::IS_INPUT),
                capture: physical(jack::PortFlags::IS_OUTPUT),
                all_ports: client.ports(None, None, jack::PortFlags::empty()).len(),
            };
            drop(client);
            Ok(Some(ports))
        }
        Err(AudioError::NoServer(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

fn check_matches(name: &str, facts: ServerFacts, req: &ServerRequest) -> Result<(), AudioError> {
    if let Some(p) = req.period_frames {
        if p != facts.period_frames {
            return Err(AudioError::Mismatch {
                server: name.into(),
                what: ServerSetting::Period,
                actual: facts.period_frames,
                wanted: p,
            });
        }
    }
    if let Some(r) = req.rate_hz {
        if r != facts.rate_hz {
            return Err(AudioError::Mismatch {
                server: name.into(),
                what: ServerSetting::Rate,
                actual: facts.rate_hz,
                wanted: r,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
