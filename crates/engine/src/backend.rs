//! Choosing a backend: a typed [`BackendSpec`] and [`open`], the one place a backend is
//! chosen and its server started.
//!
//! A spec says what the streams of one configuration need (which backend, which JACK
//! server, which ports or device, which cable); [`open`] turns it into a [`Setup`] for
//! one period of a sweep: it connects to a running JACK server or starts a private
//! `jackd -d dummy`, starts audiolat's software loop client when the loop is its own,
//! and opens an ALSA device once so that a device or period it refuses is refused before
//! any run. [`Setup::open_stream`] then opens a fresh stream for every run.
//!
//! Everything a set-up can refuse (a bad device, a period the device or server will not
//! run, a port that does not exist) is refused when it is made.
//!
//! A spec is built from typed values with [`BackendSpec::build`] (the backend, the
//! settings every backend shares and what the streams are for), or written out.
//!
//! Adding a backend: a folder beside `jack/`, `alsa/` and `virtual_card/` with its spec
//! and its `open`, and one variant here.
//!
//! ```no_run
//! use engine::backend::{self, BackendSpec, SweepStep};
//! use engine::virtual_card::setup::VirtualSpec;
//! let spec = BackendSpec::Virtual(VirtualSpec { rate_hz: None, periods: 2, cable: None, capture: true });
//! spec.check_periods(&[Some(256)]).unwrap();
//! let setup = backend::open(&spec, Some(256), SweepStep::First).unwrap();
//! let (stream, _granted) = setup.open_stream().unwrap();
//! ```

use crate::alsa::setup::AlsaSpec;
use crate::alsa::stream::{AlsaConfig, AlsaGranted, AlsaStream};
use crate::audio::{AudioError, Backend, StreamInfo, StreamSetting};
use crate::jack::client::{JackConfig, JackStream};
use crate::jack::loop_client::JackLoop;
use crate::jack::server::{JackServer, ServerMode, ServerRequest};
use crate::jack::setup::JackSpec;
use crate::pipewire::native::{NativeConfig, NativeSpec};
use crate::virtual_card::setup::VirtualSpec;
use crate::virtual_card::{VirtualConfig, VirtualStream};
use std::path::PathBuf;
use std::time::Duration;

mod build;

pub use build::{
    periods_range, BackendKind, OptionGroup, SpecError, StreamPurpose, StreamSettings,
    DEFAULT_PERIODS, MAX_CABLE_GAIN, NATIVE_MONITOR_LOOPBACK, RATE_RANGE_HZ,
};

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

/// Whether a running PipeWire (the user's) accepts connections on its socket.
fn pipewire_answers() -> bool {
    let (dir, remote) = crate::servers::pipewire_socket_location();
    std::os::unix::net::UnixStream::connect(dir.join(remote)).is_ok()
}

/// What the streams of one configuration need: the backend and its settings.
#[derive(Clone, Debug)]
pub enum BackendSpec {
    /// A JACK client on a running or private server.
    Jack(JackSpec),
    /// An ALSA device (hardware, or the jack PCM on a JACK server).
    Alsa(AlsaSpec),
    /// The virtual card.
    Virtual(VirtualSpec),
    /// Native PipeWire streams.
    Pipewire(NativeSpec),
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

impl BackendSpec {
    /// The backend's name, as [`StreamInfo::backend`] says it.
    pub fn name(&self) -> &'static str {
        match self {
            BackendSpec::Jack(_) => "jack",
            BackendSpec::Alsa(_) => "alsa",
            BackendSpec::Virtual(_) => "virtual",
            BackendSpec::Pipewire(_) => "pipewire",
        }
    }

    /// The JACK server the streams run on, when one is used: the JACK backend, or ALSA's
    /// jack PCM (the `jack` and `loop` devices, and the default device when there is no
    /// sound card).
    pub fn jack_server(&self) -> Option<&ServerChoice> {
        match self {
            BackendSpec::Jack(spec) => Some(&spec.server),
            BackendSpec::Alsa(spec) => spec.uses_jack_server().then_some(&spec.server),
            BackendSpec::Virtual(_) | BackendSpec::Pipewire(_) => None,
        }
    }

    /// The rate and period a private server of this spec would run at, for a period of
    /// `period` (`None`: the backend's default).
    pub fn private_server_settings(&self, period: Option<u32>) -> (u32, u32) {
        match self {
            BackendSpec::Alsa(spec) => (
                spec.rate_hz.unwrap_or(crate::alsa::setup::DEFAULT_RATE_HZ),
                period.unwrap_or(crate::alsa::setup::DEFAULT_PERIOD_FRAMES),
            ),
            BackendSpec::Jack(spec) => (
                spec.rate_hz.unwrap_or(crate::jack::server::DEFAULT_RATE_HZ),
                period.unwrap_or(crate::jack::server::DEFAULT_PERIOD_FRAMES),
            ),
            BackendSpec::Virtual(spec) => (
                spec.rate_hz
                    .unwrap_or(crate::virtual_card::setup::DEFAULT_RATE_HZ),
                period.unwrap_or(crate::virtual_card::setup::DEFAULT_PERIOD_FRAMES),
            ),
            BackendSpec::Pipewire(spec) => (
                spec.rate_hz
                    .unwrap_or(crate::pipewire::native::DEFAULT_RATE_HZ),
                period.unwrap_or(crate::pipewire::server::DEFAULT_QUANTUM_FRAMES),
            ),
        }
    }

    /// The smallest period worth trying when a search steps down through periods.
    pub fn smallest_period(&self) -> u32 {
        match self {
            BackendSpec::Virtual(_) => crate::virtual_card::MIN_PERIOD_FRAMES,
            BackendSpec::Jack(_) | BackendSpec::Alsa(_) | BackendSpec::Pipewire(_) => 16,
        }
    }

    /// Whether the streams can read note-ons from a MIDI port (JACK only).
    pub fn has_midi(&self) -> bool {
        matches!(self, BackendSpec::Jack(_))
    }

    /// The loop the round trip is expected to measure, in frames, when the backend knows
    /// it before measuring (the virtual card's cable), else 0.
    pub fn loop_hint_frames(&self) -> f64 {
        match self {
            BackendSpec::Virtual(VirtualSpec {
                cable: Some(cable), ..
            }) => cable.delay_frames,
            _ => 0.0,
        }
    }

    /// Checks the periods of a sweep before anything starts (no side effects): several
    /// JACK periods are each a private server's, and a private server (JACK, or behind
    /// ALSA's jack PCM) runs only the periods [`validate_period`] accepts.
    ///
    /// [`validate_period`]: crate::jack::server::validate_period
    pub fn check_periods(&self, periods: &[Option<u32>]) -> Result<(), AudioError> {
        if let BackendSpec::Pipewire(spec) = self {
            return spec.check_periods(periods);
        }
        let (range, runs) = match self {
            BackendSpec::Alsa(_) => (
                crate::alsa::setup::PERIOD_RANGE_FRAMES,
                "audiolat asks an ALSA device for periods",
            ),
            BackendSpec::Virtual(_) => (
                crate::virtual_card::MIN_PERIOD_FRAMES..=crate::virtual_card::MAX_PERIOD_FRAMES,
                "the virtual card runs periods",
            ),
            // What any JACK server runs: jackd's 16 to 8192, a PipeWire graph's quanta
            // from 8 (a private server's are checked further below).
            BackendSpec::Jack(_) => (8..=8192, "a JACK server runs periods"),
            BackendSpec::Pipewire(_) => unreachable!("checked above"),
        };
        if let Some(p) = periods.iter().flatten().find(|p| !range.contains(p)) {
            // A JACK server that is PipeWire (asked for, or the one that answers) says
            // its range in PipeWire's words: its graph's quanta.
            if let Some(server) = self.jack_server() {
                if server.mode == ServerMode::Pipewire
                    || (matches!(server.mode, ServerMode::Auto | ServerMode::External)
                        && pipewire_answers())
                {
                    crate::pipewire::quantum::validate_quantum(*p)?;
                }
            }
            return Err(AudioError::OutOfRange {
                setting: StreamSetting::Period,
                value: *p,
                problem: format!("{runs} of {} to {} frames", range.start(), range.end()),
            });
        }
        if self
            .jack_server()
            .is_some_and(|s| s.mode == ServerMode::Pipewire)
        {
            // PipeWire's graph decides which quanta it runs: it is asked, and measured.
            for p in periods.iter().flatten() {
                crate::pipewire::quantum::validate_quantum(*p)?;
            }
            return Ok(());
        }
        // A sweep on a running PipeWire is checked when each quantum is forced.
        if periods.len() > 1 && matches!(self, BackendSpec::Jack(_)) && !pipewire_answers() {
            for p in periods.iter().flatten() {
                crate::jack::server::validate_period(*p)?;
            }
        }
        if self
            .jack_server()
            .is_some_and(|s| matches!(s.mode, ServerMode::Dummy | ServerMode::Pipewire))
        {
            for p in periods {
                let (_, period) = self.private_server_settings(*p);
                crate::jack::server::validate_period(period)?;
            }
        }
        Ok(())
    }
}

/// The set-up for one period of a sweep (`None`: the backend's default period): the
/// server started or connected to, the loop client, the configuration every stream is
/// opened with. `step` says whether it is the sweep's first period.
pub fn open(spec: &BackendSpec, period: Option<u32>, step: SweepStep) -> Result<Setup, AudioError> {
    match spec {
        BackendSpec::Jack(spec) => crate::jack::setup::open(spec, period, step),
        BackendSpec::Alsa(spec) => crate::alsa::setup::open(spec, period, step),
        BackendSpec::Virtual(spec) => crate::virtual_card::setup::open(spec, period),
        BackendSpec::Pipewire(spec) => crate::pipewire::native::open(spec, period, step),
    }
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
    /// A fresh stream, and what an ALSA device granted.
    pub fn open_stream(&self) -> Result<(Box<dyn Backend>, Option<AlsaGranted>), AudioError> {
        match &self.kind {
            StreamKind::Jack(config) => {
                let server = self.server.as_ref().expect("a JACK set-up has its server");
                Ok((
                    Box::new(JackStream::open(server.info(), config.clone())?),
                    None,
                ))
            }
            StreamKind::Alsa(config) => {
                let stream = AlsaStream::open(config.clone())?;
                let granted = stream.granted().clone();
                Ok((Box::new(stream), Some(granted)))
            }
            StreamKind::Virtual(config) => {
                Ok((Box::new(VirtualStream::open(config.clone())?), None))
            }
            #[cfg(feature = "pipewire-native")]
            StreamKind::Pipewire(config) => Ok((
                Box::new(crate::pipewire::native::stream::NativeStream::open(
                    config.clone(),
                )?),
                None,
            )),
            #[cfg(not(feature = "pipewire-native"))]
            StreamKind::Pipewire(_) => Err(crate::pipewire::native::NativeError::NotBuilt.into()),
        }
    }

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

impl StreamInfo {
    /// What the audio thread's scheduling is, as requested (not as granted): a JACK
    /// client runs on the server's thread; audiolat's own threads (ALSA's write loop, the
    /// virtual card) run SCHED_FIFO 80, and a duplex stream's hardware clock thread
    /// SCHED_FIFO 90.
    pub fn audio_thread_requested(&self, duplex: bool) -> &'static str {
        match (self.backend, duplex) {
            ("jack", _) => "the JACK server's client thread (its -P/-R settings)",
            ("pipewire", _) => "PipeWire's data thread (client-rt.conf: module-rt, SCHED_FIFO 88)",
            (_, false) => "SCHED_FIFO 80",
            (_, true) => "SCHED_FIFO 80 (hardware clock thread SCHED_FIFO 90)",
        }
    }

    /// Whether the stream is a client of an audio server whose facts (name, command
    /// line, version) describe where it runs (JACK).
    pub fn is_server_client(&self) -> bool {
        self.backend == "jack" || self.backend == "pipewire"
    }

    /// Whether the stream is a device that granted its own settings (ALSA: format,
    /// buffer, period, link), which the caller got from [`Setup::open_stream`].
    pub fn has_device_grant(&self) -> bool {
        self.backend == "alsa"
    }
}
