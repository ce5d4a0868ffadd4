//! A PipeWire audiolat did not start: the user's (a desktop's) running server, found by
//! its socket, measured through its JACK API, its quantum forced and always restored.
//!
//! # The contract
//!
//! - [`detect`] finds the socket `$PIPEWIRE_REMOTE` (default `pipewire-0`) in
//!   `$PIPEWIRE_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR`, else `/run/user/<uid>`, and
//!   counts it as running only when a connection to it is accepted and `pw-cli info 0`
//!   answers through it (the daemon's version). A stale socket left by a killed daemon
//!   is not a running PipeWire.
//! - [`RunningPipewire::default_sink`] is the sink WirePlumber made the default
//!   (`pw-metadata -n default 0`, `default.audio.sink`) with its factory: only a null
//!   sink (`support.null-audio-sink`) is a loop audiolat plays into without being told
//!   to; a real device is the caller's to refuse.
//! - [`force_quantum`] sets `clock.force-quantum` with [`ForcedQuantum`] after writing a
//!   state file `/run/audiolat/pipewire-quantum-PID.state` (the server's socket, the key,
//!   the value before and the value forced); the file is removed once the value before is
//!   back. [`restore_stale`] (the next audiolat's undo of what killed audiolats left)
//!   puts the value before back when the file's audiolat is dead and the key still holds
//!   what it forced, and says so in one line. A non-zero value found before is the
//!   user's, and it is what is restored.
//!
//! Nothing here runs on an audio thread.

use super::programs::{library_version, run_bounded};
use super::quantum::{ForcedQuantum, QuantumError, FORCE_QUANTUM_KEY};
use std::ffi::OsString;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Where audiolat, run as root, keeps what the next one must undo if this one is killed.
pub const STATE_DIR: &str = "/run/audiolat";

/// Where this user's audiolat keeps its PipeWire state files: [`STATE_DIR`] for root;
/// for anyone else `$XDG_RUNTIME_DIR/audiolat` (the user's own runtime directory, where
/// the PipeWire socket is too), else a directory of the user's under the temp directory.
/// A desktop user cannot write `/run`.
pub fn state_dir() -> PathBuf {
    // SAFETY: geteuid cannot fail.
    let uid = unsafe { libc::geteuid() };
    if uid == 0 {
        return PathBuf::from(STATE_DIR);
    }
    std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|d| !d.is_empty())
        .map(|d| PathBuf::from(d).join("audiolat"))
        .unwrap_or_else(|| std::env::temp_dir().join(format!("audiolat-{uid}")))
}
/// The factory of a null sink: a sink whose monitor is a loop, not a sound card.
pub const NULL_SINK_FACTORY: &str = "support.null-audio-sink";
const PW_TIMEOUT: Duration = Duration::from_secs(5);

/// A running PipeWire that answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunningPipewire {
    /// The directory holding its socket.
    pub runtime_dir: PathBuf,
    /// The socket's name (`pipewire-0`).
    pub remote: String,
    /// The daemon's version, as it answered `pw-cli info 0`.
    pub version: Option<String>,
    /// The library version of the WirePlumber connected to it (its executable's
    /// `--version`), when one is.
    pub wireplumber_version: Option<String>,
}

/// The default sink of a running PipeWire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefaultSink {
    /// `node.name`.
    pub node_name: String,
    /// `node.description`: the JACK client name of its ports.
    pub description: String,
    /// `factory.name` (`support.null-audio-sink` for a null sink, `api.alsa.pcm.sink`...).
    pub factory: String,
}

impl DefaultSink {
    /// Whether the sink is a null sink (its monitor is a loop, nothing is heard).
    pub fn is_null(&self) -> bool {
        self.factory == NULL_SINK_FACTORY
    }
}

/// The socket directory and name a client of this process would reach.
pub fn socket_location() -> (PathBuf, String) {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let dir = var("PIPEWIRE_RUNTIME_DIR")
        .or_else(|| var("XDG_RUNTIME_DIR"))
        .map(PathBuf::from)
        // SAFETY: getuid has no preconditions.
        .unwrap_or_else(|| PathBuf::from(format!("/run/user/{}", unsafe { libc::getuid() })));
    let remote = var("PIPEWIRE_REMOTE")
        .and_then(|r| r.into_string().ok())
        .unwrap_or_else(|| super::server::REMOTE_NAME.to_string());
    (dir, remote)
}

/// The running PipeWire this process's clients reach, if one answers (see the module
/// docs).
pub fn detect() -> Option<RunningPipewire> {
    let (runtime_dir, remote) = socket_location();
    let socket = runtime_dir.join(&remote);
    UnixStream::connect(&socket).ok()?;
    let server = RunningPipewire {
        runtime_dir,
        remote,
        version: None,
        wireplumber_version: None,
    };
    let mut info = server.command("pw-cli");
    info.args(["info", "0"]);
    let text = run_bounded(info, PW_TIMEOUT)?;
    let version = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("version: "))
        .map(|v| v.trim_matches('"').to_string());
    let wireplumber_version = server.wireplumber_pid().and_then(|pid| {
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
        library_version(&exe)
    });
    Some(RunningPipewire {
        version,
        wireplumber_version,
        ..server
    })
}

impl RunningPipewire {
    /// Its socket.
    pub fn socket(&self) -> PathBuf {
        self.runtime_dir.join(&self.remote)
    }

    /// The environment that makes a client reach this server and no other.
    pub fn client_env(&self) -> Vec<(&'static str, OsString)> {
        vec![
            ("PIPEWIRE_RUNTIME_DIR", self.runtime_dir.clone().into()),
            ("PIPEWIRE_REMOTE", self.remote.clone().into()),
            ("XDG_RUNTIME_DIR", self.runtime_dir.clone().into()),
        ]
    }

    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_remove("PIPEWIRE_CONFIG_DIR")
            .envs(self.client_env());
        cmd
    }

    /// The pid of the WirePlumber client connected to it.
    fn wireplumber_pid(&self) -> Option<u32> {
        let mut ls = self.command("pw-cli");
        ls.args(["ls", "Client"]);
        let text = run_bounded(ls, PW_TIMEOUT)?;
        let mut pid = None;
        for line in text.lines().map(str::trim) {
            if line.starts_with("id ") {
                pid = None;
            } else if let Some(p) = prop(line, "pipewire.sec.pid") {
                pid = p.parse().ok();
            } else if prop(line, "application.name").as_deref() == Some("WirePlumber") {
                return pid;
            }
        }
        None
    }

    /// The default sink when it is a null sink, the sink audiolat plays its test signal
    /// into when no ports are named. A real device is refused (audiolat never plays into a
    /// sound card it was not told to use, and a round trip through a speaker and a
    /// microphone is not a loop), and so is no default sink.
    pub fn null_default_sink(&self) -> Result<DefaultSink, crate::audio::AudioError> {
        use crate::audio::AudioError;
        let at = self.socket().display().to_string();
        match self.default_sink() {
            Some(sink) if sink.is_null() => Ok(sink),
            Some(sink) => Err(AudioError::BadSetting(format!(
                "the default sink of the running PipeWire at {at} is `{}` ({}), a real device: audiolat plays its test signal only into a null sink unless the ports are named, and a round trip through a speaker is not a loop; name the playback and capture ports of a loop (a null sink's playback_FL and monitor_FL, or a cable), or make a null sink the default",
                sink.node_name, sink.factory
            ))),
            None => Err(AudioError::BadSetting(format!(
                "the running PipeWire at {at} has no default sink (pw-metadata -n default 0 default.audio.sink): name the playback and capture ports to use"
            ))),
        }
    }

    /// The default sink (see the module docs); `None` when there is none or it could not
    /// be read.
    pub fn default_sink(&self) -> Option<DefaultSink> {
        let mut meta = self.command("pw-metadata");
        meta.args(["-n", "default", "0", "default.audio.sink"]);
        let text = run_bounded(meta, PW_TIMEOUT)?;
        let value = text
            .lines()
            .find(|l| l.contains("key:'default.audio.sink'"))?
            .split("value:'")
            .nth(1)?
            .split('\'')
            .next()?
            .to_string();
        let name = value
            .split("\"name\":")
            .nth(1)?
            .trim()
            .trim_start_matches('"')
            .split('"')
            .next()?
            .to_string();
        let mut info = self.command("pw-cli");
        info.args(["info", &name]);
        let text = run_bounded(info, PW_TIMEOUT)?;
        let get = |key: &str| {
            text.lines()
                .find_map(|l| prop(l.trim_start_matches(['*', ' ', '\t']), key))
                .unwrap_or_default()
        };
        Some(DefaultSink {
            description: Some(get("node.description"))
                .filter(|d| !d.is_empty())
                .unwrap_or_else(|| name.clone()),
            factory: get("factory.name"),
            node_name: name,
        })
    }
}

/// `key = "value"` in pw-cli's property listing.
fn prop(line: &str, key: &str) -> Option<String> {
    let rest = line
        .trim()
        .strip_prefix(key)?
        .trim_start()
        .strip_prefix('=')?;
    Some(rest.trim().trim_matches('"').to_string())
}

/// A quantum forced on a running PipeWire, recorded in a state file until restored.
#[derive(Debug)]
pub struct KeptQuantum {
    // Dropped first: restores the value before, then the state file goes.
    forced: Option<ForcedQuantum>,
    state_file: PathBuf,
}

impl KeptQuantum {
    /// The quantum measured.
    pub fn granted(&self) -> u32 {
        self.forced.as_ref().map_or(0, ForcedQuantum::granted)
    }
}

impl Drop for KeptQuantum {
    fn drop(&mut self) {
        if let Some(mut forced) = self.forced.take() {
            if forced.restore().is_ok() {
                let _ = std::fs::remove_file(&self.state_file);
            }
        }
    }
}

/// This process's state file.
fn state_file() -> PathBuf {
    state_dir().join(format!("pipewire-quantum-{}.state", std::process::id()))
}

/// Forces `quantum` on `server` (JACK server name `jack_server`) as [`ForcedQuantum`]
/// does, keeping a state file while it is forced (see the module docs).
pub fn force_quantum(
    server: &RunningPipewire,
    jack_server: &str,
    quantum: u32,
    timeout: Duration,
) -> Result<KeptQuantum, QuantumError> {
    let before = super::quantum::read_settings(&server.client_env())?
        .get(FORCE_QUANTUM_KEY)
        .cloned()
        .unwrap_or_else(|| "0".into());
    let file = state_file();
    let text = format!(
        "pid={}\nsocket={}\nkey={FORCE_QUANTUM_KEY}\nprevious={before}\nforced={quantum}\n",
        std::process::id(),
        server.socket().display()
    );
    std::fs::create_dir_all(state_dir())
        .and_then(|()| std::fs::write(&file, text))
        .map_err(|e| QuantumError::NotMeasured(format!("writing {}: {e}", file.display())))?;
    match ForcedQuantum::apply(server.client_env(), jack_server, quantum, None, timeout) {
        Ok(forced) => Ok(KeptQuantum {
            forced: Some(forced),
            state_file: file,
        }),
        Err(e) => {
            // apply restored the value before on its errors.
            let _ = std::fs::remove_file(&file);
            Err(e)
        }
    }
}

/// A state file of an audiolat that is gone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaleQuantum {
    /// The file.
    pub file: PathBuf,
    /// The audiolat that wrote it.
    pub pid: i32,
    /// The server's socket.
    pub socket: PathBuf,
    /// The key forced.
    pub key: String,
    /// Its value before.
    pub previous: String,
    /// The value forced.
    pub forced: String,
}

fn parse_state(file: &Path, text: &str) -> Option<StaleQuantum> {
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
            .map(str::to_string)
    };
    Some(StaleQuantum {
        file: file.to_path_buf(),
        pid: get("pid")?.parse().ok()?,
        socket: PathBuf::from(get("socket")?),
        key: get("key")?,
        previous: get("previous")?,
        forced: get("forced")?,
    })
}

/// The state files of audiolats that are no longer running.
pub fn stale() -> Vec<StaleQuantum> {
    let mut out: Vec<StaleQuantum> = std::fs::read_dir(state_dir())
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("pipewire-quantum-") && name.ends_with(".state")
        })
        .filter_map(|e| parse_state(&e.path(), &std::fs::read_to_string(e.path()).ok()?))
        .filter(|s| s.pid != std::process::id() as i32 && !crate::servers::process_running(s.pid))
        .collect();
    out.sort_by_key(|s| s.pid);
    out
}

impl StaleQuantum {
    /// What it left, for a list of leftovers.
    pub fn describe(&self) -> String {
        format!(
            "{} {} on the PipeWire at {} (was {})",
            self.key,
            self.forced,
            self.socket.display(),
            self.previous
        )
    }

    /// Restores the value before when the key still holds the value forced, removes the
    /// file and says what was done in one phrase; `Err` when the server answers but the
    /// value could not be set (the file is kept).
    pub fn restore(&self) -> Result<String, String> {
        let runtime_dir = self.socket.parent().unwrap_or(Path::new("/")).to_path_buf();
        let remote = self
            .socket
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let server = RunningPipewire {
            runtime_dir,
            remote,
            version: None,
            wireplumber_version: None,
        };
        let gone = UnixStream::connect(&self.socket).is_err();
        let said = if gone {
            format!(
                "the PipeWire at {} where audiolat pid {} (which died) left {} at {} no longer runs: nothing to restore",
                self.socket.display(),
                self.pid,
                self.key,
                self.forced
            )
        } else {
            let now = super::quantum::read_settings(&server.client_env())
                .map_err(|e| e.to_string())?
                .get(&self.key)
                .cloned()
                .unwrap_or_else(|| "0".into());
            if now == self.forced {
                let mut cmd = server.command("pw-metadata");
                cmd.args(["-n", "settings", "0", &self.key, &self.previous]);
                run_bounded(cmd, PW_TIMEOUT).ok_or_else(|| {
                    format!(
                        "could not restore {} {} on the PipeWire at {}",
                        self.key,
                        self.previous,
                        self.socket.display()
                    )
                })?;
                format!(
                    "restored {} {} on the PipeWire at {} (left at {} by audiolat pid {}, which died)",
                    self.key,
                    self.previous,
                    self.socket.display(),
                    self.forced,
                    self.pid
                )
            } else {
                format!(
                    "left {} at {} on the PipeWire at {}: it was changed after audiolat pid {} (which died) forced {}",
                    self.key,
                    now,
                    self.socket.display(),
                    self.pid,
                    self.forced
                )
            }
        };
        let _ = std::fs::remove_file(&self.file);
        Ok(said)
    }
}

/// Restores what every audiolat that is gone left forced ([`StaleQuantum::restore`]):
/// one phrase per state file, `Err` for those that could not be restored.
pub fn restore_stale() -> Vec<Result<String, String>> {
    stale().iter().map(StaleQuantum::restore).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_file_is_read_back() {
        let text = "pid=7\nsocket=/run/user/0/pipewire-0\nkey=clock.force-quantum\nprevious=512\nforced=128\n";
        let s = parse_state(Path::new("/x"), text).unwrap();
        assert_eq!(
            (s.pid, s.previous.as_str(), s.forced.as_str()),
            (7, "512", "128")
        );
        assert_eq!(
            s.describe(),
            "clock.force-quantum 128 on the PipeWire at /run/user/0/pipewire-0 (was 512)"
        );
        assert!(parse_state(Path::new("/x"), "pid=7\n").is_none());
    }

    #[test]
    fn properties_are_read_from_pw_cli_lines() {
        assert_eq!(
            prop("factory.name = \"support.null-audio-sink\"", "factory.name").as_deref(),
            Some(NULL_SINK_FACTORY)
        );
        assert_eq!(prop("factory.names = \"x\"", "factory.name"), None);
    }
}
