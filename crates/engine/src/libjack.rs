//! The JACK library of this process, below [`jack`](crate::jack) and
//! [`pipewire`](crate::pipewire): which libjack is loaded (jackd2's, or PipeWire's loaded
//! in its place by [`load_pipewire_libjack`]: one process gets one), and clients opened
//! through it on a named server ([`open_client`]), never starting one: every client is
//! opened with `JackNoStartServer`, and `JACK_NO_START_SERVER=1` is set
//! ([`prepare_environment`]). JACK clients open here, and so does the client that
//! measures the quantum PipeWire's graph runs ([`crate::pipewire::quantum`]).
//!
//! Opening clients changes the process environment (`JACK_DEFAULT_SERVER` is how libjack
//! picks a server, and the `jack` crate cannot pass a server name): do it before other
//! threads read the environment, as the binary does.

use crate::audio::AudioError;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Where PipeWire's libjack may be: the Debian multiarch directory of this build's
/// architecture, then the `lib64` and plain `lib` layouts of other distributions.
pub fn libjack_candidates() -> Vec<PathBuf> {
    let multiarch = match std::env::consts::ARCH {
        "x86" => "i386-linux-gnu".to_string(),
        "arm" => "arm-linux-gnueabihf".to_string(),
        "powerpc64" if cfg!(target_endian = "little") => "powerpc64le-linux-gnu".to_string(),
        arch => format!("{arch}-linux-gnu"),
    };
    [
        format!("/usr/lib/{multiarch}"),
        "/usr/lib64".into(),
        "/usr/lib".into(),
    ]
    .into_iter()
    .map(|dir| PathBuf::from(dir).join("pipewire-0.3/jack/libjack.so.0"))
    .collect()
}

/// Every libjack this process has loaded (from `/proc/self/maps`).
pub fn loaded_libjacks() -> Vec<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut found: Vec<PathBuf> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|path| {
            Path::new(path)
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libjack.so"))
        })
        .map(PathBuf::from)
        .collect();
    found.dedup();
    found
}

/// Loads PipeWire's libjack (see the module docs) and returns its path. Loading it again
/// is harmless; jackd2's libjack loaded first is [`AudioError::OtherLibjackLoaded`], a
/// missing file [`AudioError::NoPipewireJack`].
pub fn load_pipewire_libjack() -> Result<PathBuf, AudioError> {
    let candidates = libjack_candidates();
    let path = candidates
        .iter()
        .find(|p| p.exists())
        .cloned()
        .ok_or_else(|| AudioError::NoPipewireJack {
            looked: candidates
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        })?;
    // PipeWire's own directory: the soname's file may be a link to a versioned one.
    let pipewire_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    if let Some(other) = loaded_libjacks()
        .into_iter()
        .find(|l| !l.starts_with(&pipewire_dir))
    {
        return Err(AudioError::OtherLibjackLoaded(other.display().to_string()));
    }
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| AudioError::NoLibjack(format!("{} has a NUL in its path", path.display())))?;
    // SAFETY: dlopen with a valid NUL-terminated path. The handle is kept (never
    // dlclose'd): the `jack` crate uses the library for the rest of the process.
    let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    if handle.is_null() {
        // SAFETY: dlerror returns NULL or a NUL-terminated string valid until the next
        // dl call on this thread.
        let why = unsafe {
            let e = libc::dlerror();
            if e.is_null() {
                "dlopen failed".to_string()
            } else {
                std::ffi::CStr::from_ptr(e).to_string_lossy().into_owned()
            }
        };
        return Err(AudioError::NoLibjack(format!("{}: {why}", path.display())));
    }
    Ok(path)
}

static OPEN_LOCK: Mutex<()> = Mutex::new(());
static LIBJACK_MESSAGES: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());

unsafe extern "C" fn keep_message(msg: *const libc::c_char) {
    if msg.is_null() {
        return;
    }
    // SAFETY: libjack passes a NUL-terminated string valid for this call.
    let text = unsafe { std::ffi::CStr::from_ptr(msg) }
        .to_string_lossy()
        .into_owned();
    if let Ok(mut m) = LIBJACK_MESSAGES.try_lock() {
        if m.len() == 20 {
            m.pop_front();
        }
        m.push_back(text);
    }
}

/// libjack's last messages (it reports problems through a callback, which audiolat keeps
/// instead of printing).
pub fn libjack_messages() -> Vec<String> {
    LIBJACK_MESSAGES
        .lock()
        .map(|m| m.iter().cloned().collect())
        .unwrap_or_default()
}

/// Sets `JACK_NO_START_SERVER` and routes libjack's messages to [`libjack_messages`].
pub fn prepare_environment() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::env::set_var("JACK_NO_START_SERVER", "1");
        jack::set_logger(jack::LoggerType::Custom {
            info: keep_message,
            error: keep_message,
        });
    });
}

/// How long opening a client may take before the server counts as not answering: a
/// stopped or hung jackd never answers `jack_client_open`.
pub const OPEN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Opens a client on server `server` without ever starting one. The open runs on a worker
/// thread: a server that does not answer within [`OPEN_TIMEOUT`] is an error
/// ([`AudioError::Unresponsive`]) and the worker is left to libjack.
pub fn open_client(server: &str, client_name: &str) -> Result<jack::Client, AudioError> {
    open_client_within(server, client_name, OPEN_TIMEOUT)
}

/// [`open_client`] with a chosen time limit.
pub fn open_client_within(
    server: &str,
    client_name: &str,
    timeout: std::time::Duration,
) -> Result<jack::Client, AudioError> {
    prepare_environment();
    let (tx, rx) = std::sync::mpsc::channel();
    let (server_name, name) = (server.to_string(), client_name.to_string());
    std::thread::Builder::new()
        .name("jack-open".into())
        .spawn(move || {
            let _guard = OPEN_LOCK.lock().unwrap_or_else(|p| p.into_inner());
            std::env::set_var("JACK_DEFAULT_SERVER", &server_name);
            let opened =
                jack::Client::new(&name, jack::ClientOptions::NO_START_SERVER).map(|(c, _)| c);
            let _ = tx.send(opened);
        })
        .map_err(|e| AudioError::Io {
            op: "starting a thread to open the JACK client".into(),
            source: e,
        })?;
    match rx.recv_timeout(timeout) {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(jack::Error::LibraryError(m))) => Err(AudioError::NoLibjack(m)),
        Ok(Err(jack::Error::ClientError(status)))
            if status.contains(jack::ClientStatus::SERVER_FAILED) =>
        {
            Err(AudioError::NoServer(server.to_string()))
        }
        Ok(Err(other)) => {
            let said = libjack_messages();
            Err(AudioError::Jack {
                op: "opening the client",
                detail: match said.last() {
                    Some(m) => format!("{other} (libjack: {m})"),
                    None => other.to_string(),
                },
            })
        }
        Err(_) => Err(AudioError::Unresponsive {
            server: server.to_string(),
            secs: timeout.as_secs(),
        }),
    }
}
