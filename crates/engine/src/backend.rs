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
//! The backends sit below this module and never use it: each backend's set-up makes a
//! [`Setup`] (the set-up types every backend shares, [`Setup`], [`ServerChoice`],
//! [`SweepStep`], live in a module below the backends and are re-exported here), and a
//! stream's facts carry its [`BackendKind`] (`backend/kind.rs`, a leaf below them all).
//!
//! Adding a backend: a folder beside `jack/`, `alsa/` and `virtual_card/` with its spec
//! and its `open`, one variant of [`BackendSpec`] (`backend/spec.rs`), and its arm in
//! [`open`] and in [`Setup::open_stream`] here.
//!
//! ```no_run
//! use engine::backend::{self, BackendSpec, SweepStep};
//! use engine::virtual_card::setup::VirtualSpec;
//! let spec = BackendSpec::Virtual(VirtualSpec { rate_hz: None, periods: 2, cable: None, capture: true });
//! spec.check_periods(&[Some(256)]).unwrap();
//! let setup = backend::open(&spec, Some(256), SweepStep::First).unwrap();
//! let (stream, _granted) = setup.open_stream().unwrap();
//! ```

use crate::alsa::stream::{AlsaGranted, AlsaStream};
use crate::audio::{AudioError, Backend, StreamInfo};
use crate::jack::client::JackStream;
use crate::setup::StreamKind;
use crate::virtual_card::VirtualStream;

mod build;
pub(crate) mod kind;
mod spec;

pub use crate::setup::{has_sound_card, ServerChoice, Setup, SweepStep, SERVER_START_TIMEOUT};
pub use build::{
    periods_range, OptionGroup, SpecError, StreamPurpose, StreamSettings, DEFAULT_PERIODS,
    MAX_CABLE_GAIN, NATIVE_MONITOR_LOOPBACK, RATE_RANGE_HZ,
};
pub use kind::BackendKind;
pub use spec::BackendSpec;

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
}

impl StreamInfo {
    /// What the audio thread's scheduling is, as requested (not as granted): a JACK
    /// client runs on the server's thread; audiolat's own threads (ALSA's write loop, the
    /// virtual card) run SCHED_FIFO 80, and a duplex stream's hardware clock thread
    /// SCHED_FIFO 90.
    pub fn audio_thread_requested(&self, duplex: bool) -> &'static str {
        match (self.backend, duplex) {
            (BackendKind::Jack, _) => "the JACK server's client thread (its -P/-R settings)",
            (BackendKind::Pipewire, _) => {
                "PipeWire's data thread (client-rt.conf: module-rt, SCHED_FIFO 88)"
            }
            (_, false) => "SCHED_FIFO 80",
            (_, true) => "SCHED_FIFO 80 (hardware clock thread SCHED_FIFO 90)",
        }
    }

    /// Whether the stream is a client of an audio server whose facts (name, command
    /// line, version) describe where it runs (JACK).
    pub fn is_server_client(&self) -> bool {
        self.backend.is_server_client()
    }

    /// Whether the stream is a device that granted its own settings (ALSA: format,
    /// buffer, period, link), which the caller got from [`Setup::open_stream`].
    pub fn has_device_grant(&self) -> bool {
        self.backend.has_device_grant()
    }
}
