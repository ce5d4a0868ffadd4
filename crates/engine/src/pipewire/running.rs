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
//! - [`force_settings`] ([`force_quantum`]) sets `clock.force-quantum` (and
//!   `clock.force-rate` when a rate is asked), each key after writing a state file
//!   `pipewire-quantum-PID.state` / `pipewire-rate-PID.state` in [`state_dir`] (the
//!   server's socket, the key, the value before and the value forced), and measures the
//!   quantum granted. When the guard drops (the run's end, an error, Ctrl-C), each key
//!   that still holds the value forced gets the value before back; a key changed during
//!   the run (by the user, or another audiolat) is left as it is, said in one line on
//!   stderr, and so is a key another running audiolat forced to the same value (its
//!   state file holds the user's value: the last one out restores it). The state file
//!   goes unless the restore failed (said in one line naming the `pw-metadata` command
//!   that puts the value back; the next audiolat restores it too). A value found before that another running audiolat forced (its state
//!   file says so) is seen through: the value before is the one that audiolat found.
//! - [`restore_stale`] (the next audiolat's undo of what killed audiolats left) does the
//!   same for the state files of dead audiolats, in one line each: restored, left
//!   (changed since), or nothing said when the key holds the value before (that audiolat
//!   was killed between writing its file and setting the key). A non-zero value found
//!   before is the user's, and it is what is restored.
//!
//! Nothing here runs on an audio thread.

use super::programs::{library_version, run_bounded};
use super::quantum::{
    measure_graph, set_setting, QuantumError, Restore, FORCE_QUANTUM_KEY, FORCE_RATE_KEY,
};
use std::ffi::OsString;
use std::io::Write as _;
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

/// The version text recorded of a running PipeWire: `PipeWire X, WirePlumber Y (running
/// at SOCKET, CLIENTS)`, `CLIENTS` saying how audiolat's clients reach it (the JACK API
/// and native streams record the same text but for it); a version not known is
/// `unknown`.
pub fn running_version(server: &RunningPipewire, clients: &str) -> String {
    let known = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
    format!(
        "PipeWire {}, WirePlumber {} (running at {}, {clients})",
        known(&server.version),
        known(&server.wireplumber_version),
        server.socket().display(),
    )
}

/// The running PipeWire this process's clients reach, if one answers (see the module
/// docs).
pub fn detect() -> Option<RunningPipewire> {
    let (runtime_dir, remote) = crate::servers::pipewire_socket_location();
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

/// The quantum (and rate) forced on a running PipeWire, each key recorded in a state
/// file until restored.
#[derive(Debug)]
pub struct KeptQuantum {
    /// In the order set; restored in the reverse order when dropped.
    settings: Vec<KeptSetting>,
    granted: u32,
    granted_rate_hz: u32,
}

/// One key forced, its state file, and what to put back.
#[derive(Debug)]
struct KeptSetting {
    env: Vec<(&'static str, OsString)>,
    socket: PathBuf,
    key: &'static str,
    previous: String,
    forced: String,
    file: PathBuf,
}

impl KeptQuantum {
    /// The quantum measured.
    pub fn granted(&self) -> u32 {
        self.granted
    }

    /// The rate measured (the JACK client's sample rate), in Hz.
    pub fn granted_rate_hz(&self) -> u32 {
        self.granted_rate_hz
    }

    /// The value `key` held before audiolat forced it (the user's: another running
    /// audiolat's forced value is seen through), `None` when this did not force it.
    pub fn previous(&self, key: &str) -> Option<&str> {
        self.settings
            .iter()
            .find(|s| s.key == key)
            .map(|s| s.previous.as_str())
    }
}

impl KeptSetting {
    /// Restores the value before when the key still holds the value forced (else leaves
    /// it and says so on stderr); the state file goes unless the restore failed, so that
    /// the next audiolat restores it.
    fn restore(&self) {
        // Another running audiolat forced the same value on this server and key: the key
        // is its too, and its state file holds the user's value; the last one out
        // restores it.
        let me = std::process::id() as i32;
        if live_sharer(&state_files(), me, &self.socket, self.key, &self.forced).is_some() {
            let _ = std::fs::remove_file(&self.file);
            return;
        }
        match super::quantum::restore_setting(&self.env, self.key, &self.forced, &self.previous) {
            Ok(Restore::Changed(changed)) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "audiolat: left {} at {} on the PipeWire at {}: it was changed during the run (audiolat forced {} and found {} before)",
                    changed.key,
                    changed.now,
                    self.socket.display(),
                    changed.forced,
                    self.previous
                );
                let _ = std::fs::remove_file(&self.file);
            }
            Ok(_) => {
                let _ = std::fs::remove_file(&self.file);
            }
            Err(e) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "audiolat: could not restore {} {} on the PipeWire at {} ({e}): put it back with `PIPEWIRE_RUNTIME_DIR={} PIPEWIRE_REMOTE={} pw-metadata -n settings 0 {} {}` (the next audiolat will try too)",
                    self.key,
                    self.previous,
                    self.socket.display(),
                    self.socket.parent().unwrap_or(Path::new("/")).display(),
                    self.socket.file_name().unwrap_or_default().to_string_lossy(),
                    self.key,
                    self.previous
                );
            }
        }
    }
}

/// The pid of another running audiolat (not `me`) whose state file says it forced
/// `forced` on `key` of the server at `socket`, if any: while it runs the key is its too.
fn live_sharer(
    files: &[StaleQuantum],
    me: i32,
    socket: &Path,
    key: &str,
    forced: &str,
) -> Option<i32> {
    files
        .iter()
        .filter(|s| s.pid != me && s.socket == socket && s.key == key && s.forced == forced)
        .map(|s| s.pid)
        .find(|&pid| crate::servers::process_running(pid))
}

impl Drop for KeptQuantum {
    fn drop(&mut self) {
        for setting in self.settings.iter().rev() {
            setting.restore();
            forget_held(setting.key);
        }
    }
}

/// (key, value before) of each key this process holds forced on a running PipeWire.
static HELD: std::sync::Mutex<Vec<(&'static str, String)>> = std::sync::Mutex::new(Vec::new());

fn forget_held(key: &str) {
    if let Ok(mut held) = HELD.lock() {
        if let Some(at) = held.iter().rposition(|(k, _)| *k == key) {
            held.remove(at);
        }
    }
}

/// The value `key` held before this process forced it on a running PipeWire (the
/// user's), while it holds it forced; `None` when it does not.
pub fn held_previous(key: &str) -> Option<String> {
    let held = HELD.lock().ok()?;
    held.iter()
        .rev()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.clone())
}

/// This process's state file for `key`.
fn state_file(key: &str) -> PathBuf {
    let what = if key == FORCE_RATE_KEY {
        "rate"
    } else {
        "quantum"
    };
    state_dir().join(format!("pipewire-{what}-{}.state", std::process::id()))
}

/// Writes a state file whole or not at all (a kill mid-write leaves no half file).
fn write_state(file: &Path, text: &str) -> Result<(), QuantumError> {
    let partial = file.with_extension("partial");
    std::fs::create_dir_all(state_dir())
        .and_then(|()| std::fs::write(&partial, text))
        .and_then(|()| std::fs::rename(&partial, file))
        .map_err(|e| QuantumError::NotMeasured(format!("writing {}: {e}", file.display())))
}

/// Forces `quantum` on `server` (JACK server name `jack_server`) as [`ForcedQuantum`]
/// does, keeping a state file while it is forced (see the module docs).
///
/// [`ForcedQuantum`]: super::quantum::ForcedQuantum
pub fn force_quantum(
    server: &RunningPipewire,
    jack_server: &str,
    quantum: u32,
    timeout: Duration,
) -> Result<KeptQuantum, QuantumError> {
    force_settings(server, jack_server, Some(quantum), None, timeout)
}

/// Forces `quantum` (`clock.force-quantum`) and `rate_hz` (`clock.force-rate`), those
/// given, on `server`, each key's state file written before it is set, and measures the
/// quantum and rate the graph then runs (a JACK client of `jack_server`); a quantum
/// other than asked is [`QuantumError::NotGranted`], a rate
/// [`QuantumError::RateNotGranted`]. On an error what was set is restored as when
/// the guard drops.
pub fn force_settings(
    server: &RunningPipewire,
    jack_server: &str,
    quantum: Option<u32>,
    rate_hz: Option<u32>,
    timeout: Duration,
) -> Result<KeptQuantum, QuantumError> {
    let env = server.client_env();
    let settings = super::quantum::read_settings(&env)?;
    let socket = server.socket();
    let others: Vec<StaleQuantum> = state_files()
        .into_iter()
        .filter(|s| s.pid != std::process::id() as i32 && s.socket == socket)
        .filter(|s| crate::servers::process_running(s.pid))
        .collect();
    let mut kept = KeptQuantum {
        settings: Vec::new(),
        granted: 0,
        granted_rate_hz: 0,
    };
    let force = |kept: &mut KeptQuantum, key: &'static str, value: u32| {
        let now = settings.get(key).cloned().unwrap_or_else(|| "0".into());
        // Another running audiolat's forced value: the user's is the one it found.
        let previous = others
            .iter()
            .find(|s| s.key == key && s.forced == now)
            .map_or(now, |s| s.previous.clone());
        let file = state_file(key);
        let forced = value.to_string();
        write_state(
            &file,
            &format!(
                "pid={}\nsocket={}\nkey={key}\nprevious={previous}\nforced={forced}\n",
                std::process::id(),
                socket.display()
            ),
        )?;
        if let Ok(mut held) = HELD.lock() {
            held.push((key, previous.clone()));
        }
        kept.settings.push(KeptSetting {
            env: env.clone(),
            socket: socket.clone(),
            key,
            previous,
            forced: forced.clone(),
            file,
        });
        // On an error from here on, dropping `kept` restores what it holds.
        set_setting(&env, key, &forced)
    };
    if let Some(rate) = rate_hz {
        force(&mut kept, FORCE_RATE_KEY, rate)?;
    }
    if let Some(q) = quantum {
        force(&mut kept, FORCE_QUANTUM_KEY, q)?;
    }
    crate::phase::reached(crate::phase::Phase::QuantumForced);
    (kept.granted, kept.granted_rate_hz) = measure_graph(jack_server, quantum, timeout)?;
    if quantum.is_none() && rate_hz.is_some() {
        // A JACK client's buffer size is clock.force-quantum, else the default
        // clock.quantum, not the quantum the graph runs at the forced rate (512 at
        // 44100 Hz by default): force the one measured so that they agree.
        let measured = kept.granted;
        force(&mut kept, FORCE_QUANTUM_KEY, measured)?;
        (kept.granted, kept.granted_rate_hz) =
            measure_graph(jack_server, Some(kept.granted), timeout)?;
    }
    match (quantum, rate_hz) {
        (_, Some(asked)) if asked != kept.granted_rate_hz => Err(QuantumError::RateNotGranted {
            asked,
            granted: kept.granted_rate_hz,
        }),
        (Some(asked), _) if asked != kept.granted => Err(QuantumError::NotGranted {
            asked,
            granted: kept.granted,
        }),
        _ => Ok(kept),
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

/// Every PipeWire state file in [`state_dir`], by pid.
fn state_files() -> Vec<StaleQuantum> {
    let mut out: Vec<StaleQuantum> = std::fs::read_dir(state_dir())
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("pipewire-") && name.ends_with(".state")
        })
        .filter_map(|e| parse_state(&e.path(), &std::fs::read_to_string(e.path()).ok()?))
        .collect();
    out.sort_by(|a, b| (a.pid, &a.key).cmp(&(b.pid, &b.key)));
    out
}

/// The state files of audiolats that are no longer running.
pub fn stale() -> Vec<StaleQuantum> {
    state_files()
        .into_iter()
        .filter(|s| s.pid != std::process::id() as i32 && !crate::servers::process_running(s.pid))
        .collect()
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
    /// file and says what was done in one phrase (`None`: nothing was to do, the key
    /// holds the value before: that audiolat was killed before it set it, or after it
    /// restored it); `Err` when the server answers but the value could not be set (the
    /// file is kept).
    pub fn restore(&self) -> Result<Option<String>, String> {
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
        let (socket, key, pid) = (self.socket.display(), &self.key, self.pid);
        let said = if UnixStream::connect(&self.socket).is_err() {
            Some(format!(
                "the PipeWire at {socket} where audiolat pid {pid} (which died) left {key} at {} no longer runs: nothing to restore",
                self.forced
            ))
        } else {
            let done = super::quantum::restore_setting(
                &server.client_env(),
                key,
                &self.forced,
                &self.previous,
            )
            .map_err(|e| {
                format!(
                    "could not restore {key} {} on the PipeWire at {socket}: {e}",
                    self.previous
                )
            })?;
            match done {
                Restore::Restored => Some(format!(
                    "restored {key} {} on the PipeWire at {socket} (left at {} by audiolat pid {pid}, which died)",
                    self.previous, self.forced
                )),
                Restore::AlreadyPrevious => None,
                Restore::Changed(c) => Some(format!(
                    "left {key} at {} on the PipeWire at {socket}: it was changed after audiolat pid {pid} (which died) forced {}",
                    c.now, self.forced
                )),
            }
        };
        let _ = std::fs::remove_file(&self.file);
        Ok(said)
    }
}

/// Restores what every audiolat that is gone left forced ([`StaleQuantum::restore`]):
/// one phrase per state file that had something to say, `Err` for those that could not
/// be restored.
pub fn restore_stale() -> Vec<Result<String, String>> {
    stale()
        .iter()
        .filter_map(|s| s.restore().transpose())
        .collect()
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
    fn a_key_another_running_audiolat_forced_to_the_same_value_is_left_to_it() {
        let file = |pid: i32, socket: &str, key: &str, forced: &str| StaleQuantum {
            file: PathBuf::from("/x"),
            pid,
            socket: PathBuf::from(socket),
            key: key.into(),
            previous: "0".into(),
            forced: forced.into(),
        };
        let me = std::process::id() as i32;
        // SAFETY: getppid cannot fail.
        let parent = unsafe { libc::getppid() };
        let dead = i32::MAX; // above any pid_max: no such process
        let sock = "/run/user/0/pipewire-0";
        let q = FORCE_QUANTUM_KEY;
        let at = Path::new(sock);
        let files = [
            file(me, sock, q, "128"),
            file(dead, sock, q, "128"),
            file(parent, "/run/user/0/pipewire-1", q, "128"),
            file(parent, sock, FORCE_RATE_KEY, "128"),
            file(parent, sock, q, "256"),
        ];
        // Only itself, a dead one, or a live one on another server, key or value.
        assert_eq!(live_sharer(&files, me, at, q, "128"), None);
        let files = [&files[..], &[file(parent, sock, q, "128")]].concat();
        assert_eq!(live_sharer(&files, me, at, q, "128"), Some(parent));
        assert_eq!(live_sharer(&files, me, at, q, "256"), Some(parent));
        assert_eq!(live_sharer(&files, me, at, q, "64"), None);
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
