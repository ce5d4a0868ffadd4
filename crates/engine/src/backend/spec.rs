//! What the streams of one configuration need ([`BackendSpec`]): the backend and its
//! settings, and what follows from them before anything is opened (the backend's name,
//! its JACK server, a private server's settings, the periods it runs).

use crate::alsa::setup::AlsaSpec;
use crate::audio::{AudioError, StreamSetting};
use crate::jack::server::ServerMode;
use crate::jack::setup::JackSpec;
use crate::pipewire::native::NativeSpec;
use crate::setup::ServerChoice;
use crate::virtual_card::setup::VirtualSpec;

use super::kind::BackendKind;

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

impl BackendSpec {
    /// Which backend the spec is for.
    pub fn kind(&self) -> BackendKind {
        match self {
            BackendSpec::Jack(_) => BackendKind::Jack,
            BackendSpec::Alsa(_) => BackendKind::Alsa,
            BackendSpec::Virtual(_) => BackendKind::Virtual,
            BackendSpec::Pipewire(_) => BackendKind::Pipewire,
        }
    }

    /// The backend's name, as [`StreamInfo::backend`](crate::audio::StreamInfo::backend)
    /// says it.
    pub fn name(&self) -> &'static str {
        self.kind().name()
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

/// Whether a running PipeWire (the user's) accepts connections on its socket.
fn pipewire_answers() -> bool {
    let (dir, remote) = crate::servers::pipewire_socket_location();
    std::os::unix::net::UnixStream::connect(dir.join(remote)).is_ok()
}
