//! The audio flags as a backend spec: [`spec`] is the one place the binary turns what
//! was typed (`--backend`, `--server`, `--device`, the ports, the cable) into an
//! [`engine::backend::BackendSpec`]; `engine::backend::open` then chooses the backend and
//! starts its server. The spec's refusals (options that belong to another backend, a rate
//! out of range) are worded here, with the flags they were typed as.

use engine::audio::{plug_advice, AlsaRefusal, AudioError, PortRole, ServerSetting, StreamSetting};
use engine::backend::{
    BackendKind, BackendSpec, OptionGroup, ServerChoice, SpecError, StreamPurpose, StreamSettings,
    RATE_RANGE_HZ,
};
use engine::jack::client::JackConfig;
use engine::pipewire::native::NativeError;
use engine::pipewire::{PipewireError, PipewireProcess};

use crate::cli::{AudioArgs, BackendName, EventArgs, RoundtripArgs, UsageError};
use engine::virtual_card::setup::Cable;
use probes::devices::{Setup, SetupBackend};

/// What an event run's streams are for: `--playback`, `--loopback` (a JACK port unless
/// the backend is ALSA, where it names a capture device) and the MIDI port.
pub fn event_purpose(a: &EventArgs) -> StreamPurpose {
    let alsa = a.audio.backend == BackendName::Alsa;
    StreamPurpose::Event {
        jack: JackConfig {
            playback: a.playback.clone(),
            capture: a.loopback.clone().filter(|_| !alsa),
            midi: (a.trigger == probes::event::TriggerSource::Midi)
                .then(|| a.midi_port.clone().unwrap_or_default()),
            ..Default::default()
        },
        loopback_device: a.loopback.clone().filter(|_| alsa),
    }
}

/// What a round trip's streams are for.
pub fn roundtrip_purpose(a: &RoundtripArgs) -> StreamPurpose {
    StreamPurpose::Roundtrip {
        playback: a.playback.clone(),
        capture: a.capture.clone(),
        capture_device: a.capture_device.clone(),
        cable: (!a.no_cable).then_some(Cable {
            delay_frames: a.cable_delay,
            gain: a.cable_gain,
        }),
    }
}

/// The periods of a sweep (`None`: the backend's default).
pub fn periods(audio: &AudioArgs) -> Vec<Option<u32>> {
    match &audio.period {
        Some(list) => list.0.iter().copied().map(Some).collect(),
        None => vec![None],
    }
}

fn usage(m: impl Into<String>) -> anyhow::Error {
    UsageError(m.into()).into()
}

/// The audio flags as a spec, refusing options that belong to another backend and a
/// rate out of range. No side effects (a plan checks every cell with it before the first
/// runs).
pub fn spec(audio: &AudioArgs, purpose: &StreamPurpose) -> anyhow::Result<BackendSpec> {
    let settings = StreamSettings {
        rate_hz: audio.rate,
        periods: audio.periods,
        device: audio.device.clone(),
        format: audio.format,
        server: ServerChoice {
            mode: audio.server,
            name: audio.server_name.clone(),
            jackd: load::find_in_path(load::JACKD.name),
        },
    };
    BackendSpec::build(audio.backend.kind(), settings, purpose.clone())
        .map_err(|e| usage(spec_message(&e)))
}

/// A spec's refusal worded with the flags that set it.
fn spec_message(e: &SpecError) -> String {
    let (options, backend) = match e {
        SpecError::RateOutOfRange(r) => return format!(
            "--rate {r}: use a sample rate from {} to {} Hz",
            RATE_RANGE_HZ.start(),
            RATE_RANGE_HZ.end()
        ),
        SpecError::PlaybackWithoutCapture => return "--playback needs --capture: name the port where the cable comes back in (or leave both out for audiolat's software loop)".into(),
        SpecError::PeriodsOutOfRange { periods, backend } => {
            let range = engine::backend::periods_range(*backend);
            return format!(
                "--periods {periods}: --backend {backend} takes {} to {} periods in a buffer (at least two periods: one playing, one being written)",
                range.start(),
                range.end()
            );
        }
        SpecError::CableDelayOutOfRange(d) => return format!(
            "--cable-delay {}: use 0 to {} frames (the longest loop a round trip measures)",
            crate::cli::number(*d),
            dsp::loopdelay::MAX_LOOP_FRAMES
        ),
        SpecError::CableGainOutOfRange(g) => return format!(
            "--cable-gain {}: use -{max} to {max} (1 is unity, negative inverts)",
            crate::cli::number(f64::from(*g)),
            max = engine::backend::MAX_CABLE_GAIN
        ),
        SpecError::ForeignOptions { options, backend } => (options, backend),
    };
    match options {
        OptionGroup::JackPorts => format!(
            "--playback, --capture, --loopback and --midi-port name JACK ports: use them with --backend jack (with --backend {backend}, {})",
            match backend { BackendKind::Alsa => "name the device with --device", BackendKind::Pipewire => "the streams play to the sink and capture its monitor: --loopback monitor for an event run", _ => "the card has one loop: --cable-delay, --cable-gain, --no-cable" }
        ),
        OptionGroup::Cable => "--cable-delay, --cable-gain and --no-cable set the virtual card: use them with --backend virtual".into(),
        OptionGroup::AlsaDevice => "--device, --capture-device and --format name an ALSA device: use them with --backend alsa".into(),
        OptionGroup::BufferPeriods => "--periods sets an ALSA or virtual buffer: a JACK server's buffer is its own (the playback latency its ports report)".into(),
        OptionGroup::JackServer if *backend == BackendKind::Pipewire => "--backend pipewire runs on --server pipewire (a private PipeWire), external (yours) or auto: it takes no --server dummy or --server-name".into(),
        OptionGroup::JackServer => "--server and --server-name choose a JACK server: the virtual card needs none (use --backend jack or alsa)".into(),
        OptionGroup::PipewireServer => format!("--server pipewire runs JACK clients or native streams on a private PipeWire: use it with --backend jack or pipewire, not --backend {backend}"),
    }
}

/// The spec of a sweep whose periods are `periods`: [`spec`], then the periods the
/// backend's servers would refuse.
pub fn sweep_spec(
    audio: &AudioArgs,
    purpose: &StreamPurpose,
    periods: &[Option<u32>],
) -> anyhow::Result<BackendSpec> {
    let spec = spec(audio, purpose)?;
    spec.check_periods(periods)
        .map_err(|e| usage(audio_message(&e)))?;
    Ok(spec)
}

/// An engine error as the user reads it: the engine names the problem (a period, a
/// port's role, a private or external server) and this adds the flags that set it.
/// Errors that name no setting are the engine's own text.
pub fn audio_message(e: &AudioError) -> String {
    match e {
        AudioError::NoJackd => "jackd not found: install the jackd2 package (apt install jackd2), or run a JACK server yourself and use --server external".into(),
        AudioError::Quantum(engine::pipewire::quantum::QuantumError::OutOfRange(p)) => format!("--period {p}: PipeWire's graph runs quanta from 8 to 8192 frames (its quantum limit; a forced quantum is rounded down to a power of two); try 64, 128 or 256"),
        AudioError::BadPeriod(p) => format!("--period {p}: audiolat's private JACK server runs periods that are powers of two from 16 to 8192 frames (what JACK clients expect); try 64, 128 or 256"),
        AudioError::BadRate(r) => format!("--rate {r}: use a sample rate from 8000 to 384000 Hz, such as 44100 or 48000"),
        AudioError::BadServerName(n) => format!("--server-name `{n}`: use letters, digits, '-', '_' or '.', at most 60 characters"),
        AudioError::ServerBusy(n) => format!("a JACK server named `{n}` is already running: choose another --server-name, or use that server with --server external --server-name {n}"),
        AudioError::NoServer(n) => format!("no JACK server named `{n}` answers: start one (e.g. jackd -d alsa), or use --server auto or --server dummy for a private one (`audiolat devices` lists the servers that answer)"),
        AudioError::Mismatch { server, what, actual, wanted } => {
            let flag = match what {
                ServerSetting::Period => "--period",
                ServerSetting::Rate => "--rate",
            };
            format!("the JACK server `{server}` runs {what} {actual} but {flag} {wanted} was asked for: drop {flag}, {}, or use --server dummy for a private server", what.change())
        }
        AudioError::Unresponsive { server, secs } => format!("the JACK server `{server}` does not answer (no reply in {secs} s): it is stopped or hung; restart it, or use --server dummy for a private one"),
        AudioError::WrongPort { name, role, needed, found } => {
            let flag = match role {
                PortRole::Playback => "--playback",
                PortRole::Loopback => "--loopback",
                PortRole::Capture => "--capture",
                PortRole::Midi => "--midi-port",
            };
            format!("{flag} {name}: that is {found}, but {flag} needs {needed}; list them with `audiolat devices` (or jack_lsp -t -p)")
        }
        AudioError::NoPlayback(server) => format!("the JACK server `{server}` has no playback ports to connect to; name one with --playback PORT (`audiolat devices` lists them)"),
        AudioError::OutOfRange {
            setting,
            value,
            problem,
        } => {
            let flag = match setting {
                StreamSetting::Period => "--period",
                StreamSetting::Periods => "--periods",
                StreamSetting::LoopDelay => "--delay",
            };
            format!("{flag} {value}: {problem}")
        }
        AudioError::AlsaRefused { device, refusal } => alsa_refusal_message(device, refusal),
        AudioError::Native(NativeError::QuantumOnExternal(p)) => format!("--period {p}: your PipeWire's quantum is forced and measured through its JACK API, but a jackd answers as the JACK server: stop that jackd, drop --period, or use --server pipewire"),
        AudioError::Native(NativeError::NoUserPipewire(at)) => format!("no PipeWire socket at {at}: start your PipeWire (systemctl --user start pipewire wireplumber), or use --server pipewire for a private one"),
        AudioError::Native(NativeError::NotBuilt) => format!("--backend pipewire is not built in: build audiolat with --features pipewire-native (a default feature), which needs the packages {}", engine::pipewire::native::BUILD_PACKAGES),
        AudioError::Pipewire(PipewireError::Exited { process: PipewireProcess::DbusDaemon, .. }) => format!("{e}; WirePlumber needs a session bus and audiolat starts its own: check that `dbus-daemon --session` runs here (the dbus-daemon package)"),
        other => other.to_string(),
    }
}

/// A command other than the audio probes that words engine errors: the probes (`event`,
/// `roundtrip`) have every flag [`audio_message`] names; `loop` names its server with
/// `--server-name` only, and `suite` takes the running server or starts a private one
/// itself, without flags for either.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wording {
    /// `audiolat loop`.
    Loop,
    /// `audiolat suite`.
    Suite,
}

/// An engine error as the command `wording` names words it: with only the flags it has,
/// else in the engine's own words (which name no flag).
pub fn audio_message_in(e: &AudioError, wording: Wording) -> String {
    match (wording, e) {
        (Wording::Loop, AudioError::NoServer(n)) => format!("no JACK server named `{n}` answers: start one (e.g. jackd -d dummy -n {n}), or name a running one with --server-name (`audiolat devices` lists the servers that answer)"),
        (Wording::Loop, AudioError::BadServerName(_))
        | (Wording::Loop, AudioError::OutOfRange { setting: StreamSetting::LoopDelay, .. }) => audio_message(e),
        (_, other) => other.to_string(),
    }
}

/// A suggested audio setup (`audiolat devices`) as the flags that ask for it, typed after
/// `audiolat event` or `audiolat roundtrip`.
pub fn setup_args(setup: &Setup) -> String {
    let mut out = String::from(match setup.backend {
        SetupBackend::Alsa => "--backend alsa",
        SetupBackend::Jack => "--backend jack",
        SetupBackend::Virtual => "--backend virtual",
    });
    let mut flag = |name: &str, value: &dyn std::fmt::Display| {
        out.push_str(&format!(" --{name} {value}"));
    };
    if let Some(d) = &setup.device {
        flag("device", d);
    }
    if let Some(d) = &setup.capture_device {
        flag("capture-device", d);
    }
    if let Some(name) = &setup.external_server {
        flag("server", &"external");
        flag("server-name", name);
    }
    if let Some((playback, capture)) = &setup.ports {
        flag("playback", playback);
        flag("capture", capture);
    }
    if let Some(r) = setup.rate_hz {
        flag("rate", &r);
    }
    if let Some(p) = setup.period_frames {
        flag("period", &p);
    }
    if let Some(p) = setup.periods {
        flag("periods", &p);
    }
    out
}

/// An ALSA device's refusal, worded with the flags that asked for the setting.
fn alsa_refusal_message(device: &str, refusal: &AlsaRefusal) -> String {
    let plug = plug_advice(device, refusal, "--device");
    match refusal {
        AlsaRefusal::Access { .. } | AlsaRefusal::NoFormat => {
            format!("ALSA device `{device}` {refusal}{plug}")
        }
        AlsaRefusal::Format { asked, takes } => format!(
            "--format {}: ALSA device `{device}` does not take it; it takes {}{plug}",
            asked.flag_name(),
            AlsaRefusal::takes_words(takes)
        ),
        AlsaRefusal::Rate { asked, runs } => format!(
            "--rate {asked}: ALSA device `{device}` runs {runs} Hz instead: use --rate {runs}{plug}"
        ),
        AlsaRefusal::Period { asked, nearest } => format!(
            "--period {asked}: ALSA device `{device}` refuses that period (the nearest it takes is {nearest} frames): use --period {nearest}"
        ),
        AlsaRefusal::Buffer {
            periods,
            wanted,
            nearest,
        } => format!(
            "--periods {periods}: ALSA device `{device}` refuses a buffer of {wanted} frames (the nearest it takes is {nearest}): use a buffer it takes"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::alsa::stream::SampleFormat;

    /// A suggested setup is worded as the flags `audiolat devices` always printed.
    #[test]
    fn a_setup_is_worded_as_its_flags() {
        let setup = Setup {
            backend: SetupBackend::Alsa,
            device: Some("jack".into()),
            capture_device: None,
            external_server: Some("studio".into()),
            ports: None,
            rate_hz: Some(44_100),
            period_frames: Some(128),
            periods: Some(3),
        };
        assert_eq!(
            setup_args(&setup),
            "--backend alsa --device jack --server external --server-name studio --rate 44100 --period 128 --periods 3"
        );
        let cable = Setup {
            backend: SetupBackend::Jack,
            device: None,
            rate_hz: None,
            period_frames: None,
            periods: None,
            ports: Some(("a:out".into(), "b:in".into())),
            ..setup
        };
        assert_eq!(
            setup_args(&cable),
            "--backend jack --server external --server-name studio --playback a:out --capture b:in"
        );
    }

    /// The flag words the engine's messages had before they named the problem instead.
    #[test]
    fn audio_messages_keep_the_flag_words() {
        let cases = [
            (
                AudioError::Mismatch {
                    server: "s".into(),
                    what: ServerSetting::Period,
                    actual: 128,
                    wanted: 256,
                },
                "the JACK server `s` runs period 128 but --period 256 was asked for: drop --period, change the server's period (jack_bufsize), or use --server dummy for a private server",
            ),
            (
                AudioError::Mismatch {
                    server: "s".into(),
                    what: ServerSetting::Rate,
                    actual: 48000,
                    wanted: 44100,
                },
                "the JACK server `s` runs rate 48000 but --rate 44100 was asked for: drop --rate, restart the server at that rate, or use --server dummy for a private server",
            ),
            (
                AudioError::WrongPort {
                    name: "system:playback_1".into(),
                    role: PortRole::Loopback,
                    needed: "an audio output".into(),
                    found: "32 bit float mono audio input".into(),
                },
                "--loopback system:playback_1: that is 32 bit float mono audio input, but --loopback needs an audio output; list them with `audiolat devices` (or jack_lsp -t -p)",
            ),
            (
                AudioError::NoPlayback("s".into()),
                "the JACK server `s` has no playback ports to connect to; name one with --playback PORT (`audiolat devices` lists them)",
            ),
            (
                AudioError::ServerBusy("s".into()),
                "a JACK server named `s` is already running: choose another --server-name, or use that server with --server external --server-name s",
            ),
            (
                AudioError::OutOfRange {
                    setting: StreamSetting::Periods,
                    value: 1,
                    problem: "a buffer holds at least two periods (one playing, one being written)".into(),
                },
                "--periods 1: a buffer holds at least two periods (one playing, one being written)",
            ),
            (
                AudioError::OutOfRange {
                    setting: StreamSetting::LoopDelay,
                    value: 9_000_000,
                    problem: "a loop delays by at most 1048576 frames".into(),
                },
                "--delay 9000000: a loop delays by at most 1048576 frames",
            ),
            (
                AudioError::AlsaRefused {
                    device: "hw:1,0".into(),
                    refusal: AlsaRefusal::Period {
                        asked: 100,
                        nearest: 128,
                    },
                },
                "--period 100: ALSA device `hw:1,0` refuses that period (the nearest it takes is 128 frames): use --period 128",
            ),
            (
                AudioError::AlsaRefused {
                    device: "hw:1,0".into(),
                    refusal: AlsaRefusal::Rate {
                        asked: 44100,
                        runs: 48000,
                    },
                },
                "--rate 44100: ALSA device `hw:1,0` runs 48000 Hz instead: use --rate 48000: or use --device plughw:1,0 (alsa-lib's plug layer resamples)",
            ),
            (
                AudioError::AlsaRefused {
                    device: "hw:1,0".into(),
                    refusal: AlsaRefusal::Format {
                        asked: SampleFormat::S16,
                        takes: vec![SampleFormat::S32],
                    },
                },
                "--format s16: ALSA device `hw:1,0` does not take it; it takes s32: or use --device plughw:1,0 (alsa-lib's plug layer converts the format)",
            ),
            (
                AudioError::AlsaRefused {
                    device: "default".into(),
                    refusal: AlsaRefusal::Buffer {
                        periods: 3,
                        wanted: 384,
                        nearest: 512,
                    },
                },
                "--periods 3: ALSA device `default` refuses a buffer of 384 frames (the nearest it takes is 512): use a buffer it takes",
            ),
        ];
        for (error, text) in cases {
            assert_eq!(audio_message(&error), text);
            assert!(!error.to_string().contains("--"), "{error}");
        }
    }

    /// Every flag an engine error names, as each command that words engine errors words
    /// it, is a flag of that command in clap's definition (`loop` and `suite` have none of
    /// the audio probes' server, period or port flags; a flag of another command is named
    /// with that command). Other tools' flags aside.
    #[test]
    fn each_command_words_an_engine_error_with_its_own_flags() {
        use crate::cli::flag_check::unknown_flags;
        let foreign = ["--user", "--session", "--features"];
        let errors = vec![
            AudioError::NoJackd,
            AudioError::BadPeriod(100),
            AudioError::BadRate(1),
            AudioError::BadServerName("a b".into()),
            AudioError::ServerBusy("s".into()),
            AudioError::NoServer("s".into()),
            AudioError::Mismatch {
                server: "s".into(),
                what: ServerSetting::Period,
                actual: 128,
                wanted: 256,
            },
            AudioError::Mismatch {
                server: "s".into(),
                what: ServerSetting::Rate,
                actual: 48000,
                wanted: 44100,
            },
            AudioError::Unresponsive {
                server: "s".into(),
                secs: 5,
            },
            AudioError::NoPlayback("s".into()),
            AudioError::WrongPort {
                name: "p".into(),
                role: PortRole::Playback,
                needed: "an input".into(),
                found: "an output".into(),
            },
            AudioError::WrongPort {
                name: "p".into(),
                role: PortRole::Loopback,
                needed: "an output".into(),
                found: "an input".into(),
            },
            AudioError::NoSuchPort("p".into()),
            AudioError::OutOfRange {
                setting: StreamSetting::Period,
                value: 1,
                problem: "too small".into(),
            },
            AudioError::OutOfRange {
                setting: StreamSetting::Periods,
                value: 1,
                problem: "too few".into(),
            },
            AudioError::OutOfRange {
                setting: StreamSetting::LoopDelay,
                value: 9_000_000,
                problem: "too long".into(),
            },
            AudioError::AlsaRefused {
                device: "hw:1,0".into(),
                refusal: AlsaRefusal::Period {
                    asked: 100,
                    nearest: 128,
                },
            },
            AudioError::Native(NativeError::NoUserPipewire("/run/user/0/pipewire-0".into())),
            AudioError::Native(NativeError::NotBuilt),
            AudioError::Native(NativeError::QuantumOnExternal(128)),
        ];
        for e in &errors {
            // A loop's delay is `audiolat loop`'s alone: the probes never make that error.
            let loop_only = matches!(
                e,
                AudioError::OutOfRange {
                    setting: StreamSetting::LoopDelay,
                    ..
                }
            );
            let probe = if loop_only {
                String::new()
            } else {
                audio_message(e)
            };
            let in_either = |cmd: &str| unknown_flags(&[cmd], &probe, &foreign);
            let unknown: Vec<String> = in_either("event")
                .into_iter()
                .filter(|f| in_either("roundtrip").contains(f))
                .collect();
            assert!(
                unknown.is_empty(),
                "{unknown:?} in event's and roundtrip's: {probe}"
            );
            for (cmd, wording) in [("loop", Wording::Loop), ("suite", Wording::Suite)] {
                let text = audio_message_in(e, wording);
                let unknown = unknown_flags(&[cmd], &text, &foreign);
                assert!(unknown.is_empty(), "{unknown:?} not {cmd}'s: {text}");
            }
        }
    }
}
