//! The audio servers running on this machine, as far as can be told without talking to
//! them: processes by name (`jackd`, `jackdbus`, `pipewire`, `pulseaudio`), jackd2's
//! server registry (`/dev/shm/jack-shm-registry`) and server sockets
//! (`/dev/shm/jack_NAME_UID_0`), PipeWire's and PulseAudio's sockets in
//! `$XDG_RUNTIME_DIR`. Whether a JACK server really answers, and with which ports, is
//! [`crate::jack::server::survey`]'s to say.

use std::path::PathBuf;

/// Names of running processes (`/proc/*/comm`), sorted, without repeats.
pub fn running_commands() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut names: Vec<String> = dir
        .filter_map(|e| {
            let e = e.ok()?;
            e.file_name().to_str()?.parse::<u32>().ok()?;
            std::fs::read_to_string(e.path().join("comm"))
                .ok()
                .map(|s| s.trim().to_string())
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Which audio servers run, by their processes' names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunningServers {
    /// `jackd` or `jackdbus`.
    pub jack: bool,
    /// `pipewire`.
    pub pipewire: bool,
    /// `pulseaudio`.
    pub pulseaudio: bool,
}

/// Which audio servers run (see [`RunningServers`]).
pub fn running_servers() -> RunningServers {
    let running = running_commands();
    let has = |n: &str| running.iter().any(|c| c == n);
    RunningServers {
        jack: has("jackd") || has("jackdbus"),
        pipewire: has("pipewire"),
        pulseaudio: has("pulseaudio"),
    }
}

/// Servers in jackd2's shared registry: (name, pid). The registry is
/// `/dev/shm/jack-shm-registry`: a 24-byte header, then 8 entries of 264 bytes (a pid,
/// then the NUL-terminated `jack-UID:NAME:` prefix of the server).
pub fn parse_jack_registry(bytes: &[u8]) -> Vec<(String, i32)> {
    parse_registry_entries(bytes)
        .into_iter()
        .map(|(name, pid, _)| (name, pid))
        .collect()
}

/// (name, pid, uid) of each entry.
fn parse_registry_entries(bytes: &[u8]) -> Vec<(String, i32, Option<u32>)> {
    const HEADER: usize = 24;
    const ENTRY: usize = 264;
    if bytes.len() < HEADER + 8 * ENTRY || &bytes[..4] != b"KCAJ" {
        return Vec::new();
    }
    (0..8)
        .filter_map(|i| {
            let e = &bytes[HEADER + i * ENTRY..HEADER + (i + 1) * ENTRY];
            let pid = i32::from_le_bytes([e[0], e[1], e[2], e[3]]);
            if pid == 0 {
                return None;
            }
            let raw = &e[4..];
            let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
            let prefix = String::from_utf8_lossy(&raw[..end]).into_owned();
            // "jack-0:audiolat-dummy:" -> "audiolat-dummy", uid 0
            let (owner, name) = prefix
                .trim_end_matches(':')
                .split_once(':')
                .unwrap_or(("", prefix.as_str()));
            let uid = owner.strip_prefix("jack-").and_then(|u| u.parse().ok());
            Some((name.to_string(), pid, uid))
        })
        .collect()
}

/// Whether the process `pid` is running: it exists and is not a zombie (a killed process
/// its parent has not reaped is gone as far as what it left is concerned).
pub fn process_running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state letter follows the command's closing parenthesis.
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| state != 'Z' && state != 'X')
    })
}

/// Whether a process exists (it may belong to another user).
pub fn process_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Whether the process `pid` exists but is on its way out: a zombie its parent has not
/// reaped yet (an orphan waits for init, which some take a second or two over), or a
/// process whose memory is gone already (its command line reads empty). Other programs
/// that test a pid with `kill(pid, 0)`, as jackd does its registry's, still count it.
pub fn process_exiting(pid: i32) -> bool {
    process_alive(pid)
        && (!process_running(pid)
            || std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.is_empty()))
}

/// The process that holds the server name `name` of this user in jackd2's registry, when
/// it still exists: jackd refuses to start a server under that name while it does
/// ("server already active"), answering or not.
pub fn jack_registry_holder(name: &str) -> Option<i32> {
    let bytes = std::fs::read("/dev/shm/jack-shm-registry").ok()?;
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    parse_registry_entries(&bytes)
        .into_iter()
        .find(|(n, pid, owner)| n == name && owner.is_none_or(|o| o == uid) && process_alive(*pid))
        .map(|(_, pid, _)| pid)
}

/// An entry of jackd2's registry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistryEntry {
    /// The server's name.
    pub name: String,
    /// The server's process id.
    pub pid: i32,
    /// Whether that process still runs (killed servers' entries stay until a server of
    /// the same name starts).
    pub alive: bool,
}

/// jackd2's registry (`/dev/shm/jack-shm-registry`); `None` when there is none yet.
pub fn jack_registry() -> Option<Vec<RegistryEntry>> {
    let bytes = std::fs::read("/dev/shm/jack-shm-registry").ok()?;
    Some(
        parse_jack_registry(&bytes)
            .into_iter()
            .map(|(name, pid)| RegistryEntry {
                alive: process_alive(pid),
                name,
                pid,
            })
            .collect(),
    )
}

/// Removes jackd2's registry when it is full of dead servers: all eight entries taken,
/// none by a process that exists, and no jackd runs (one starting has no entry yet).
/// jackd reclaims a dead server's entry only when a server of the same name starts, so
/// servers killed outright under eight names leave no room for any other ("Too many
/// servers already active"); jackd makes a new registry when there is none. Returns
/// whether it was removed.
pub fn reclaim_dead_jack_registry() -> bool {
    let Some(entries) = jack_registry() else {
        return false;
    };
    let full_of_dead = entries.len() >= 8 && !entries.iter().any(|e| e.alive);
    full_of_dead
        && !running_commands().iter().any(|c| c == "jackd")
        && std::fs::remove_file("/dev/shm/jack-shm-registry").is_ok()
}

/// The server name in a jackd2 server socket's file name, `jack_NAME_UID_0`, when the
/// socket is this user's.
pub fn jack_socket_server(file_name: &str, uid: u32) -> Option<String> {
    let name = file_name
        .strip_prefix("jack_")?
        .strip_suffix("_0")?
        .strip_suffix(&format!("_{uid}"))?;
    (!name.is_empty()).then(|| name.to_string())
}

/// `$JACK_DEFAULT_SERVER`, or "default".
pub fn default_server_name() -> String {
    std::env::var("JACK_DEFAULT_SERVER")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "default".into())
}

/// A JACK server this user's clients may find: where its name was seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JackCandidate {
    /// The server name.
    pub name: String,
    /// Its pid, from jackd2's registry.
    pub pid: Option<i32>,
    /// Whether the name is the one libjack uses by default (`$JACK_DEFAULT_SERVER` or
    /// `default`).
    pub default: bool,
}

/// Names a JACK server of this user may answer to: the default name, the live servers in
/// jackd2's registry, and the server sockets in `/dev/shm` (PipeWire's JACK answers to
/// the default name and is in neither).
pub fn jack_candidates() -> Vec<JackCandidate> {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let default = default_server_name();
    let mut out = vec![JackCandidate {
        name: default.clone(),
        pid: None,
        default: true,
    }];
    let mut add = |name: String, pid: Option<i32>| match out.iter_mut().find(|c| c.name == name) {
        Some(c) => c.pid = c.pid.or(pid),
        None => out.push(JackCandidate {
            default: name == default,
            name,
            pid,
        }),
    };
    if let Ok(bytes) = std::fs::read("/dev/shm/jack-shm-registry") {
        for (name, pid, owner) in parse_registry_entries(&bytes) {
            if process_alive(pid) && owner.is_none_or(|o| o == uid) {
                add(name, Some(pid));
            }
        }
    }
    if let Ok(dir) = std::fs::read_dir("/dev/shm") {
        let mut names: Vec<String> = dir
            .flatten()
            .filter_map(|e| jack_socket_server(e.file_name().to_str()?, uid))
            .collect();
        names.sort();
        for name in names {
            add(name, None);
        }
    }
    out
}

/// The user's runtime directory: `$XDG_RUNTIME_DIR`, else `/run/user/UID`.
fn runtime_dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        // SAFETY: getuid cannot fail.
        None => PathBuf::from(format!("/run/user/{}", unsafe { libc::getuid() })),
    }
}

fn socket_at(path: PathBuf) -> Option<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(&path)
        .ok()
        .filter(|m| m.file_type().is_socket())
        .map(|_| path)
}

/// PipeWire's socket, where a client of this process looks for it
/// ([`pipewire_socket_location`]: `$PIPEWIRE_REMOTE`, default `pipewire-0`, in
/// `$PIPEWIRE_RUNTIME_DIR` or the runtime directory), when it is there.
pub fn pipewire_socket() -> Option<PathBuf> {
    let (dir, remote) = pipewire_socket_location();
    socket_at(dir.join(remote))
}

/// The socket name a PipeWire's clients connect to unless `$PIPEWIRE_REMOTE` names
/// another, inside its runtime directory.
pub const PIPEWIRE_REMOTE_NAME: &str = "pipewire-0";

/// The socket directory and name a PipeWire client of this process would reach:
/// `$PIPEWIRE_REMOTE` (default [`PIPEWIRE_REMOTE_NAME`]) in `$PIPEWIRE_RUNTIME_DIR`, else
/// `$XDG_RUNTIME_DIR`, else `/run/user/UID`.
pub fn pipewire_socket_location() -> (PathBuf, String) {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let dir = var("PIPEWIRE_RUNTIME_DIR")
        .or_else(|| var("XDG_RUNTIME_DIR"))
        .map(PathBuf::from)
        // SAFETY: getuid has no preconditions.
        .unwrap_or_else(|| PathBuf::from(format!("/run/user/{}", unsafe { libc::getuid() })));
    let remote = var("PIPEWIRE_REMOTE")
        .and_then(|r| r.into_string().ok())
        .unwrap_or_else(|| PIPEWIRE_REMOTE_NAME.to_string());
    (dir, remote)
}

/// PulseAudio's socket (`pulse/native` in the runtime directory; PipeWire's
/// pipewire-pulse makes one too), when it is there.
pub fn pulse_socket() -> Option<PathBuf> {
    socket_at(runtime_dir().join("pulse").join("native"))
}

/// The variable every private server's process is started with (a jackd, each process
/// of a PipeWire): the PID of the audiolat that started it. Only a server carrying it,
/// whose audiolat is gone, is ever stopped by another audiolat; a server a user or a
/// service started is never touched.
pub const PRIVATE_SERVER_ENV: &str = "AUDIOLAT_PRIVATE_SERVER";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_jack_registry_lists_servers_by_name_and_pid() {
        let mut bytes = vec![0u8; 24 + 8 * 264 + 100];
        bytes[..4].copy_from_slice(b"KCAJ");
        for (i, (pid, name)) in [
            (6180i32, "jack-0:audiolat-dummy:"),
            (42, "jack-1000:default:"),
        ]
        .iter()
        .enumerate()
        {
            let at = 24 + i * 264;
            bytes[at..at + 4].copy_from_slice(&pid.to_le_bytes());
            bytes[at + 4..at + 4 + name.len()].copy_from_slice(name.as_bytes());
        }
        assert_eq!(
            parse_jack_registry(&bytes),
            vec![
                ("audiolat-dummy".to_string(), 6180),
                ("default".to_string(), 42)
            ]
        );
        assert_eq!(
            parse_registry_entries(&bytes)[1],
            ("default".to_string(), 42, Some(1000))
        );
        assert!(parse_jack_registry(b"nonsense").is_empty());
    }

    #[test]
    fn jack_sockets_name_their_server() {
        // `ls /dev/shm` with jackd2 1.9.21 servers `default` and `audiolat-dummy` of root.
        assert_eq!(
            jack_socket_server("jack_default_0_0", 0).as_deref(),
            Some("default")
        );
        assert_eq!(
            jack_socket_server("jack_audiolat-dummy_0_0", 0).as_deref(),
            Some("audiolat-dummy")
        );
        assert_eq!(jack_socket_server("jack_default_1000_0", 0), None);
        assert_eq!(jack_socket_server("jack-shm-registry", 0), None);
        assert_eq!(jack_socket_server("jack_sem.0_default_system", 0), None);
    }

    #[test]
    fn a_zombie_is_exiting_and_a_running_process_is_not() {
        assert!(!process_exiting(std::process::id() as i32));
        assert!(!process_exiting(5_000_000));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        // Not reaped: a zombie once it has exited.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while process_running(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(process_exiting(pid), "an unreaped child is exiting");
        child.wait().unwrap();
        assert!(!process_exiting(pid), "a reaped child is gone");
    }

    #[test]
    fn this_process_is_alive_and_pid_0_is_not_a_server() {
        assert!(process_alive(std::process::id() as i32));
        assert!(!process_alive(0));
        assert!(jack_candidates().iter().any(|c| c.default));
    }
}
