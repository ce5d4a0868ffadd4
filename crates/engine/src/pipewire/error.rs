//! Why a PipeWire path failed: a private PipeWire that did not start
//! ([`PipewireError`], naming its [`PipewireProcess`]), a quantum that could not be set,
//! measured or restored ([`QuantumError`]), the native backend that could not run
//! ([`NativeError`]). Plain values, a leaf: [`AudioError`](crate::audio::AudioError)
//! carries each, and the modules that fail with them re-export them
//! ([`server`](super::server), [`quantum`](super::quantum), [`native`](super::native)).

use std::time::Duration;

/// How long one `pw-metadata` may take (it takes about 100 ms).
pub(super) const METADATA_TIMEOUT: Duration = Duration::from_secs(5);

/// The Debian packages the feature `pipewire-native` needs to build.
pub const BUILD_PACKAGES: &str = "libpipewire-0.3-dev, libspa-0.2-dev, clang, libclang-dev";

/// Why a private PipeWire did not start.
#[derive(Debug, thiserror::Error)]
pub enum PipewireError {
    /// A program the server needs is not installed.
    #[error("{tool} not found: install the {package} package")]
    ToolMissing {
        /// The program.
        tool: &'static str,
        /// The Debian package that ships it.
        package: &'static str,
    },
    /// The rate is out of range.
    #[error("a private PipeWire cannot run at {0} Hz: the rate must be 8000 to 384000 Hz")]
    BadRate(u32),
    /// The quanta are not powers of two in range, or not in order.
    #[error("a private PipeWire cannot run with quanta min {min}, default {quantum}, max {max}: each must be a power of two from 8 to 8192 frames, with min <= default <= max")]
    BadQuantum {
        /// `default.clock.min-quantum`.
        min: u32,
        /// `default.clock.quantum`.
        quantum: u32,
        /// `default.clock.max-quantum`.
        max: u32,
    },
    /// A file system or process operation failed.
    #[error("{op}: {source}")]
    Io {
        /// What was being done.
        op: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// One of the server's processes ended before the server was ready.
    #[error("{process} exited with {status} before the private PipeWire was ready; its last output: {output}")]
    Exited {
        /// The process that ended.
        process: PipewireProcess,
        /// How it ended.
        status: String,
        /// Its last lines of output.
        output: String,
    },
    /// The server did not become ready in time (it was stopped).
    #[error("the private PipeWire was not ready within {timeout:?}: {waiting_for}; last output: {output}")]
    NotReady {
        /// What was still missing.
        waiting_for: String,
        /// The time allowed.
        timeout: Duration,
        /// The processes' last lines of output.
        output: String,
    },
}

/// The three processes of a private PipeWire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PipewireProcess {
    /// The session bus WirePlumber needs.
    DbusDaemon,
    /// The PipeWire daemon.
    Pipewire,
    /// The session manager, which gives the sink its ports.
    Wireplumber,
}

impl PipewireProcess {
    /// The program's name.
    pub const fn program(self) -> &'static str {
        match self {
            PipewireProcess::DbusDaemon => "dbus-daemon",
            PipewireProcess::Pipewire => "pipewire",
            PipewireProcess::Wireplumber => "wireplumber",
        }
    }
}

impl std::fmt::Display for PipewireProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.program())
    }
}

/// Why a quantum could not be set, measured or restored.
#[derive(Debug, thiserror::Error)]
pub enum QuantumError {
    /// `pw-metadata` is not installed.
    #[error("pw-metadata not found: install the pipewire-bin package")]
    NoPwMetadata,
    /// `pw-metadata` failed or did not return.
    #[error("pw-metadata could not {what} on the PipeWire (it failed or did not return within {METADATA_TIMEOUT:?})")]
    Metadata {
        /// What it was asked to do.
        what: String,
    },
    /// The graph runs another quantum than the one asked for.
    #[error("PipeWire does not run a quantum of {asked} frames: the graph granted {granted} (a forced quantum is rounded down to a power of two and capped at 8192 frames); ask for {granted}")]
    NotGranted {
        /// The quantum asked for.
        asked: u32,
        /// The quantum the graph ran.
        granted: u32,
    },
    /// The graph runs another rate than the one forced.
    #[error("PipeWire does not run a rate of {asked} Hz: its graph runs {granted} Hz with clock.force-rate {asked} set; ask for {granted}, or for a rate the graph allows (default.clock.allowed-rates)")]
    RateNotGranted {
        /// The rate asked for.
        asked: u32,
        /// The rate the graph ran.
        granted: u32,
    },
    /// A quantum outside what PipeWire's graph runs.
    #[error("a quantum of {0} frames: PipeWire's graph runs quanta from 8 to 8192 frames (its quantum limit; a forced quantum is rounded down to a power of two); try 64, 128 or 256")]
    OutOfRange(u32),
    /// No cycle of the graph was seen.
    #[error("the quantum of the PipeWire graph could not be measured: {0}")]
    NotMeasured(String),
}

/// Why the native backend could not run.
#[derive(Debug, thiserror::Error)]
pub enum NativeError {
    /// audiolat was built without the `pipewire-native` feature.
    #[error("the native PipeWire backend is not built in: build audiolat with the feature pipewire-native (the default), which needs the packages {BUILD_PACKAGES}")]
    NotBuilt,
    /// A quantum was asked for on the user's PipeWire, but its socket's JACK server (the
    /// one that forces and measures the quantum) is a jackd, not that PipeWire.
    #[error("a quantum of {0} frames is forced on the user's PipeWire through its JACK API, but a jackd answers as the JACK server: stop that jackd, ask for no quantum, or use a private PipeWire")]
    QuantumOnExternal(u32),
    /// No PipeWire of the user's answers.
    #[error("no PipeWire socket at {0}: start PipeWire (systemctl --user start pipewire wireplumber), or use a private PipeWire")]
    NoUserPipewire(String),
    /// The streams failed or did not run.
    #[error("the native PipeWire streams did not run: {0}")]
    Stream(String),
}
