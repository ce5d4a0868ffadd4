//! Why an audio stream or server could not be set up ([`AudioError`], with an ALSA
//! device's refusals, [`AlsaRefusal`]), and the settings and port roles those errors
//! name. Every message says what to do in the library's terms; the program words the same
//! advice with its own flags.

use std::fmt;

/// Why an audio stream or server could not be set up. Every message says what to do, in
/// the library's terms (a period, a port, a private or external server): the program
/// that took the settings from its user words the same advice in its own terms (its
/// flags), from the data each variant carries.
#[derive(Debug, thiserror::Error)]
pub enum AudioError {
    /// `jackd` is not installed and a private server was needed.
    #[error("jackd not found: install the jackd2 package (apt install jackd2), or run a JACK server yourself and use it as an external server")]
    NoJackd,
    /// libjack could not be loaded.
    #[error("libjack could not be loaded ({0}): install the libjack-jackd2-0 package (it comes with jackd2) or pipewire-jack")]
    NoLibjack(String),
    /// PipeWire's libjack is not installed.
    #[error("PipeWire's JACK library not found (looked for {looked}): install the pipewire-jack package")]
    NoPipewireJack {
        /// The paths looked at.
        looked: String,
    },
    /// Another libjack is already loaded in this process (jackd2's before PipeWire's,
    /// or PipeWire's before a jackd server is used).
    #[error("this process already uses the JACK library {0} (loaded for an earlier JACK client), and one process can use one libjack: measure the other server in a process of its own")]
    OtherLibjackLoaded(String),
    /// The private PipeWire did not start.
    #[error("the private PipeWire did not start: {0}")]
    Pipewire(#[from] crate::pipewire::error::PipewireError),
    /// A quantum could not be set on, or measured from, a PipeWire.
    #[error(transparent)]
    Quantum(#[from] crate::pipewire::error::QuantumError),
    /// The native PipeWire backend could not run.
    #[error("{0}")]
    Native(#[from] crate::pipewire::error::NativeError),
    /// The requested period is not one a JACK server runs.
    #[error("period {0}: audiolat's private JACK server runs periods that are powers of two from 16 to 8192 frames (what JACK clients expect); try 64, 128 or 256")]
    BadPeriod(u32),
    /// The requested rate is outside what audiolat accepts.
    #[error("rate {0}: use a sample rate from 8000 to 384000 Hz, such as 44100 or 48000")]
    BadRate(u32),
    /// A bad server name.
    #[error("server name `{0}`: use letters, digits, '-', '_' or '.', at most 60 characters")]
    BadServerName(String),
    /// A server already runs under the name a private server would take.
    #[error("a JACK server named `{0}` is already running: choose another name for the private server, or use that one as an external server")]
    ServerBusy(String),
    /// No server answers where one was required.
    #[error("no JACK server named `{0}` answers: start one (e.g. jackd -d alsa), or let audiolat start a private one (`audiolat devices` lists the servers that answer)")]
    NoServer(String),
    /// The private server did not come up.
    #[error("the private JACK server `{name}` did not start ({why}); jackd said: {output}")]
    ServerStart {
        /// Server name.
        name: String,
        /// What went wrong.
        why: String,
        /// jackd's last output lines.
        output: String,
    },
    /// The running server does not run at the requested rate or period.
    #[error("the JACK server `{server}` runs {what} {actual} but {what} {wanted} was asked for: ask for none, {change}, or use a private server", change = what.change())]
    Mismatch {
        /// Server name.
        server: String,
        /// The setting that differs.
        what: ServerSetting,
        /// What the server runs.
        actual: u32,
        /// What was asked for.
        wanted: u32,
    },
    /// The server did not answer in time (stopped or hung).
    #[error("the JACK server `{server}` does not answer (no reply in {secs} s): it is stopped or hung; restart it, or use a private one")]
    Unresponsive {
        /// Server name.
        server: String,
        /// How long audiolat waited.
        secs: u64,
    },
    /// An ALSA failure, with the operation and the device.
    #[error("ALSA: {op} on `{device}` failed: {detail}")]
    Alsa {
        /// What was being done.
        op: &'static str,
        /// The device.
        device: String,
        /// The error.
        detail: String,
    },
    /// A stream setting that cannot be used, with what to use instead.
    #[error("{0}")]
    BadSetting(String),
    /// An ALSA device refuses a setting: the device, what was asked and what it takes.
    #[error(
        "ALSA device `{device}` {refusal}{}",
        plug_advice(device, refusal, "the device")
    )]
    AlsaRefused {
        /// The device.
        device: String,
        /// The setting refused, with what was asked and what the device takes.
        refusal: AlsaRefusal,
    },
    /// A stream setting out of what the backend takes: the setting, its value and what
    /// to use instead.
    #[error("{setting} {value}: {problem}")]
    OutOfRange {
        /// The setting.
        setting: StreamSetting,
        /// The value asked for.
        value: u32,
        /// What the backend takes.
        problem: String,
    },
    /// A port to connect to does not exist.
    #[error("JACK port `{0}` does not exist: list them with `audiolat devices` (or jack_lsp), or leave the option out to use the defaults")]
    NoSuchPort(String),
    /// A port exists but cannot be connected the way it was asked for.
    #[error(
        "{role} port {name}: that is {found}, but {role} ports need {needed}; list them with `audiolat devices` (or jack_lsp -t -p)"
    )]
    WrongPort {
        /// The port.
        name: String,
        /// What it was named for.
        role: PortRole,
        /// What the option needs.
        needed: String,
        /// What the port is.
        found: String,
    },
    /// No playback port to connect to.
    #[error(
        "the JACK server `{0}` has no playback ports to connect to; name one (`audiolat devices` lists them)"
    )]
    NoPlayback(String),
    /// Any other JACK failure, with the operation.
    #[error("JACK: {op} failed: {detail}")]
    Jack {
        /// What was being done.
        op: &'static str,
        /// The error.
        detail: String,
    },
    /// An operating-system failure, with the operation.
    #[error("{op}: {source}")]
    Io {
        /// What was being done.
        op: String,
        /// The error.
        source: std::io::Error,
    },
}

/// A setting an ALSA device refuses, with what was asked and what the device takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AlsaRefusal {
    /// Interleaved read/write access: the access modes the device takes instead
    /// ("non-interleaved", "mmap interleaved", ...; maybe none).
    Access {
        /// The access modes the device takes.
        takes: Vec<&'static str>,
    },
    /// The sample format: the one asked for and those the device takes (maybe none).
    Format {
        /// The format asked for.
        asked: crate::alsa::format::SampleFormat,
        /// The formats the device takes.
        takes: Vec<crate::alsa::format::SampleFormat>,
    },
    /// No format was asked for, and the device takes none audiolat writes.
    NoFormat,
    /// The sample rate, in Hz: asked and the one the device runs.
    Rate {
        /// The rate asked for.
        asked: u32,
        /// The rate the device runs.
        runs: u32,
    },
    /// The period, in frames: asked and the nearest the device takes.
    Period {
        /// The period asked for.
        asked: u32,
        /// The nearest period the device takes.
        nearest: u32,
    },
    /// The buffer, in frames: the periods asked for, the buffer they make and the
    /// nearest buffer the device takes.
    Buffer {
        /// The periods asked for.
        periods: u32,
        /// The buffer they make, in frames.
        wanted: u32,
        /// The nearest buffer the device takes, in frames.
        nearest: u32,
    },
}

impl AlsaRefusal {
    /// What alsa-lib's plug layer does about this refusal ("converts the format",
    /// "resamples"), if it helps at all.
    pub fn plug_remedy(&self) -> Option<&'static str> {
        match self {
            AlsaRefusal::Access { .. } => Some("interleaves"),
            AlsaRefusal::Format { .. } | AlsaRefusal::NoFormat => Some("converts the format"),
            AlsaRefusal::Rate { .. } => Some("resamples"),
            AlsaRefusal::Period { .. } | AlsaRefusal::Buffer { .. } => None,
        }
    }

    /// The formats the device takes, worded: "s16, s32", or "none of float, ... or s16".
    pub fn takes_words(takes: &[crate::alsa::format::SampleFormat]) -> String {
        if takes.is_empty() {
            format!(
                "none of {}",
                crate::alsa::format::SampleFormat::flag_names()
            )
        } else {
            let names: Vec<&str> = takes.iter().map(|f| f.flag_name()).collect();
            names.join(", ")
        }
    }
}

/// The `plughw:` twin of a `hw:` device (`hw:1,0` -> `plughw:1,0`), which does what the
/// bare device cannot (alsa-lib's plug plugin); `None` for other devices.
pub fn plug_twin(device: &str) -> Option<String> {
    device
        .strip_prefix("hw:")
        .map(|rest| format!("plughw:{rest}"))
}

/// The end of a refusal that alsa-lib's plug layer can remedy: the `plughw:` twin of a
/// `hw:` device, named as `name_device` words a device ("the device", or a flag), or a
/// pointer to a plug device; empty when the plug layer does not help.
pub fn plug_advice(device: &str, refusal: &AlsaRefusal, name_device: &str) -> String {
    match (refusal.plug_remedy(), plug_twin(device)) {
        (None, _) => String::new(),
        (Some(what), Some(twin)) => {
            format!(": or use {name_device} {twin} (alsa-lib's plug layer {what})")
        }
        (Some(what), None) => format!(": or use a plughw: device (alsa-lib's plug layer {what})"),
    }
}

/// The library's wording of a refusal (after "ALSA device `X` ", before the plug advice).
impl fmt::Display for AlsaRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AlsaRefusal::Access { takes } => write!(
                f,
                "takes only {} access, and audiolat reads and writes interleaved frames",
                if takes.is_empty() {
                    "other".to_string()
                } else {
                    takes.join(" or ")
                }
            ),
            AlsaRefusal::Format { asked, takes } => write!(
                f,
                "does not take the sample format {}; it takes {}",
                asked.flag_name(),
                Self::takes_words(takes)
            ),
            AlsaRefusal::NoFormat => write!(
                f,
                "takes none of {}",
                crate::alsa::format::SampleFormat::flag_names()
            ),
            AlsaRefusal::Rate { asked, runs } => {
                write!(f, "refuses a rate of {asked} Hz; it runs {runs} Hz")
            }
            AlsaRefusal::Period { asked, nearest } => write!(
                f,
                "refuses a period of {asked} frames; the nearest it takes is {nearest}"
            ),
            AlsaRefusal::Buffer {
                periods,
                wanted,
                nearest,
            } => write!(
                f,
                "refuses a buffer of {periods} periods ({wanted} frames); the nearest it takes is {nearest} frames"
            ),
        }
    }
}

/// A stream setting a running JACK server is compared on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerSetting {
    /// The period, in frames.
    Period,
    /// The sample rate, in Hz.
    Rate,
}

impl ServerSetting {
    /// What changes the server's setting.
    pub fn change(self) -> &'static str {
        match self {
            ServerSetting::Period => "change the server's period (jack_bufsize)",
            ServerSetting::Rate => "restart the server at that rate",
        }
    }
}

impl fmt::Display for ServerSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ServerSetting::Period => "period",
            ServerSetting::Rate => "rate",
        })
    }
}

/// A stream setting a backend may refuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamSetting {
    /// The period, in frames.
    Period,
    /// The periods in the device buffer.
    Periods,
    /// A software loop's delay, in frames.
    LoopDelay,
}

impl fmt::Display for StreamSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StreamSetting::Period => "period",
            StreamSetting::Periods => "buffer periods",
            StreamSetting::LoopDelay => "loop delay",
        })
    }
}

/// What a JACK port was named for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortRole {
    /// A port the output is connected to.
    Playback,
    /// The port that hears the event probe's output (a loopback cable).
    Loopback,
    /// The port a round trip's loop comes back on.
    Capture,
    /// The MIDI port triggers come from.
    Midi,
}

impl fmt::Display for PortRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PortRole::Playback => "playback",
            PortRole::Loopback => "loopback",
            PortRole::Capture => "capture",
            PortRole::Midi => "MIDI",
        })
    }
}
