//! What every backend's set-up makes, below the backends: the JACK server a backend's
//! streams run on ([`ServerChoice`], connected once for each period of a sweep,
//! [`SweepStep`]) and one period's set-up ([`Setup`]: the server, audiolat's loop client,
//! how the period's streams are opened). Each backend's set-up (`jack/setup.rs`,
//! `alsa/setup.rs`, `virtual_card/setup.rs`, `pipewire/native`) makes a [`Setup`];
//! [`backend`](crate::backend), which re-exports this, chooses the backend and opens the
//! streams (`Setup::open_stream`).

use crate::alsa::stream::AlsaConfig;
use crate::audio::AudioError;
use crate::jack::client::JackConfig;
use crate::jack::loop_client::JackLoop;
use crate::jack::server::{JackServer, ServerMode, ServerRequest};
use crate::pipewire::native::config::NativeConfig;
use crate::virtual_card::VirtualConfig;
use std::path::PathBuf;
use std::time::Duration;

/// How long a private JACK server may take to answer after it was started.
pub const SERVER_START_TIMEOUT: Duration = Duration::from_secs(10);

/// The JACK server a backend's streams run on (JACK, or ALSA's jack PCM).
#[derive(Clone, Debug)]
pub struct ServerChoice {
    /// A running server, a private one, or a running one else a private one.
    pub mode: ServerMode,
    /// The running server's name, or the private one's.
    pub name: Option<String>,
    /// Path of `jackd`, when installed (a private server needs it).
    pub jackd: Option<PathBuf>,
}

impl ServerChoice {
    /// The server for one period of a sweep: the one asked for on the first period, a
    /// private one (under the same name) on later ones.
    pub(crate) fn connect(
        &self,
        step: SweepStep,
        rate_hz: Option<u32>,
        period_frames: Option<u32>,
    ) -> Result<JackServer, AudioError> {
        let req = ServerRequest {
            mode: match step {
                SweepStep::First => self.mode,
                SweepStep::Later if self.mode == ServerMode::Pipewire => ServerMode::Pipewire,
                // The first period ran on a running PipeWire (its libjack is loaded): the
                // same server, its quantum forced to the next period.
                SweepStep::Later if on_running_pipewire() => self.mode,
                SweepStep::Later => ServerMode::Dummy,
            },
            name: self.name.clone(),
            rate_hz,
            period_frames,
            jackd: self.jackd.clone(),
            start_timeout: SERVER_START_TIMEOUT,
        };
        req.validate()?;
        JackServer::connect(&req)
    }
}

/// Whether this process's JACK clients go to a PipeWire audiolat did not start (its
/// libjack loaded, no private PipeWire asked for).
fn on_running_pipewire() -> bool {
    crate::libjack::loaded_libjacks()
        .iter()
        .any(|l| l.to_string_lossy().contains("/pipewire-0.3/"))
}

/// Which period of a sweep a set-up is for: the first uses the server asked for, each
/// later one a new private server (the last one's is stopped first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepStep {
    /// The sweep's first period.
    First,
    /// Any later period.
    Later,
}

/// How a period's streams are opened.
#[derive(Clone, Debug)]
pub(crate) enum StreamKind {
    /// A JACK client with these ports.
    Jack(JackConfig),
    /// An ALSA device.
    Alsa(AlsaConfig),
    /// The virtual card.
    Virtual(VirtualConfig),
    /// Native PipeWire streams.
    #[allow(dead_code)] // opened only with the `pipewire-native` feature
    Pipewire(NativeConfig),
}

/// One period's set-up, kept alive while its runs go: dropping it stops the loop client
/// and a private server.
pub struct Setup {
    /// audiolat's software loop client, when the loop is audiolat's own: held so it runs
    /// as long as the set-up. Declared before the server, so it is closed (dropped) while
    /// the server still runs: a client closed after its server is gone leaves its
    /// semaphore (`/dev/shm/jack_sem.*`) behind.
    pub(crate) _loop_client: Option<JackLoop>,
    pub(crate) server: Option<JackServer>,
    pub(crate) kind: StreamKind,
    pub(crate) loop_description: String,
}

impl Setup {
    /// The JACK server the streams run on, when one is used.
    pub fn server(&self) -> Option<&JackServer> {
        self.server.as_ref()
    }

    /// The JACK server whose exit ends a run.
    pub fn server_mut(&mut self) -> Option<&mut JackServer> {
        self.server.as_mut()
    }

    /// How the loop is closed, for people (round trip).
    pub fn loop_description(&self) -> &str {
        &self.loop_description
    }
}

/// A machine with a sound card has a first line in /proc/asound/cards that is not
/// "--- no soundcards ---".
pub fn has_sound_card() -> bool {
    std::fs::read_to_string("/proc/asound/cards")
        .map(|t| {
            t.lines()
                .any(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        })
        .unwrap_or(false)
}
