//! `audiolat devices`: what can be measured on this machine, and how to ask for it.
//!
//! [`survey`] lists the ALSA cards and PCM devices with what each accepts
//! ([`engine::alsa::devices`]: opened read-only, nothing played), the audio servers that
//! run (a JACK server that answers, with its rate, period and physical ports; PipeWire
//! and PulseAudio by their sockets and processes), and, for each thing that can be
//! measured, the exact `--backend`/`--device` flags to pass ([`Suggestion`]). Without a
//! sound card or a server it still lists what always works: a private `jackd -d dummy`,
//! ALSA's jack PCM into it, and the virtual card.

mod json;

pub use json::{pcm_names_by_card, record};

use std::path::PathBuf;
use std::time::Duration;

use engine::alsa::devices::{
    self as alsa_devices, AlsaInventory, Card, HwCaps, PcmDirection, PcmStream,
};
use engine::jack::server::ServerPorts;
use engine::servers;

/// A JACK server this user's clients may reach.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JackServerEntry {
    /// Its name (`--server-name`).
    pub name: String,
    /// Its process, from jackd2's registry.
    pub pid: Option<i32>,
    /// Whether libjack picks it by default (`$JACK_DEFAULT_SERVER` or `default`).
    pub default: bool,
    /// Its rate, period and ports, when it answered.
    pub ports: Option<ServerPorts>,
    /// Why asking it failed, when it was seen (a registry entry, a socket) but did not
    /// answer, or asking it failed.
    pub error: Option<String>,
}

/// A server known by its socket and process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SocketServer {
    /// Its process runs.
    pub running: bool,
    /// Its socket, when it is there.
    pub socket: Option<PathBuf>,
}

impl SocketServer {
    /// Whether there is any sign of it.
    pub fn present(&self) -> bool {
        self.running || self.socket.is_some()
    }
}

/// Something that can be measured here, and the audio setup that measures it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Suggestion {
    /// The probes it suits: `event`, `roundtrip`.
    pub probes: Vec<&'static str>,
    /// What it measures, in words.
    pub what: String,
    /// The setup; the program words it for its user (as flags).
    pub setup: Setup,
}

/// The backend a [`Setup`] uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetupBackend {
    /// An ALSA device.
    Alsa,
    /// A JACK server.
    Jack,
    /// audiolat's virtual card.
    Virtual,
}

/// An audio setup a [`Suggestion`] measures with: only what differs from the defaults
/// (a private JACK server, 48 kHz, 2 x 256 frames) is set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setup {
    /// The backend.
    pub backend: SetupBackend,
    /// The ALSA device (playback, or both ways).
    pub device: Option<String>,
    /// The ALSA capture device, when it is not `device`.
    pub capture_device: Option<String>,
    /// The name of a running (external) JACK server to use.
    pub external_server: Option<String>,
    /// JACK ports to play into and capture from (a cable between them).
    pub ports: Option<(String, String)>,
    /// The sample rate, in Hz.
    pub rate_hz: Option<u64>,
    /// The period, in frames.
    pub period_frames: Option<u64>,
    /// The periods in the device buffer.
    pub periods: Option<u64>,
}

impl Setup {
    fn with(backend: SetupBackend) -> Setup {
        Setup {
            backend,
            device: None,
            capture_device: None,
            external_server: None,
            ports: None,
            rate_hz: None,
            period_frames: None,
            periods: None,
        }
    }

    fn alsa(device: impl Into<String>) -> Setup {
        Setup {
            device: Some(device.into()),
            ..Setup::with(SetupBackend::Alsa)
        }
    }
}

/// Everything `audiolat devices` shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DevicesReport {
    /// ALSA's cards, devices and PCM names.
    pub alsa: AlsaInventory,
    /// JACK servers seen (answering or not).
    pub jack: Vec<JackServerEntry>,
    /// A `jackd` or `jackdbus` process runs.
    pub jack_running: bool,
    /// PipeWire.
    pub pipewire: SocketServer,
    /// PulseAudio.
    pub pulseaudio: SocketServer,
    /// The `jackd` a private server would be started with.
    pub jackd: Option<PathBuf>,
    /// What to pass for each thing that can be measured.
    pub suggestions: Vec<Suggestion>,
}

impl DevicesReport {
    /// The JACK servers that answered.
    pub fn answering(&self) -> impl Iterator<Item = (&JackServerEntry, &ServerPorts)> {
        self.jack
            .iter()
            .filter_map(|e| e.ports.as_ref().map(|p| (e, p)))
    }
}

/// How long a JACK server may take to answer before it counts as not answering (a
/// stopped jackd never answers).
pub const JACK_TIMEOUT: Duration = Duration::from_secs(3);

/// Lists what can be measured here. Opens each ALSA device read-only (nothing plays) and
/// a short-lived client on each JACK server that may answer.
pub fn survey() -> DevicesReport {
    let alsa = alsa_devices::inventory();
    let running = servers::running_servers();
    let jack = servers::jack_candidates()
        .into_iter()
        .filter_map(|c| {
            let (ports, error) = match engine::jack::server::survey(&c.name, JACK_TIMEOUT) {
                Ok(Some(p)) => (Some(p), None),
                Ok(None) if c.default && c.pid.is_none() => return None,
                Ok(None) => (
                    None,
                    Some("does not answer (a server that is gone?)".into()),
                ),
                Err(e) => (None, Some(e.to_string())),
            };
            Some(JackServerEntry {
                name: c.name,
                pid: c.pid,
                default: c.default,
                ports,
                error,
            })
        })
        .collect();
    let mut report = DevicesReport {
        alsa,
        jack,
        jack_running: running.jack,
        pipewire: SocketServer {
            running: running.pipewire,
            socket: servers::pipewire_socket(),
        },
        pulseaudio: SocketServer {
            running: running.pulseaudio,
            socket: servers::pulse_socket(),
        },
        jackd: load::find_in_path(load::JACKD.name),
        suggestions: Vec::new(),
    };
    report.suggestions = suggestions(&report);
    report
}

/// The name that opens a stream's device: `hw:ID,D`, with the subdevice when the device
/// has several (`hw:Loopback,0,3`).
fn hw_name(plugin: &str, card: &Card, device: u32, stream: &PcmStream, sub: u32) -> String {
    if stream.subdevices_count > 1 {
        format!("{plugin}:{},{device},{sub}", card.id)
    } else {
        format!("{plugin}:{},{device}", card.id)
    }
}

/// The ALSA backend asks for 48 kHz and 2 x 256 frames unless told otherwise: the
/// settings a device needs beyond its name, from what it accepts, set in `setup`.
fn alsa_settings(caps: &HwCaps, setup: &mut Setup) {
    if !caps.standard_rates_hz.contains(&48_000) {
        setup.rate_hz = caps
            .standard_rates_hz
            .iter()
            .find(|r| **r == 44_100)
            .or(caps.standard_rates_hz.first())
            .map(|r| u64::from(*r));
    }
    let period = (4..=13)
        .map(|p| 1u64 << p)
        .find(|p| *p >= 256 && caps.period_frames.contains(*p))
        .or_else(|| {
            (4..=13)
                .map(|p| 1u64 << p)
                .find(|p| caps.period_frames.contains(*p))
        });
    setup.period_frames = period.filter(|p| *p != 256);
    setup.periods = caps.periods.min.filter(|m| *m > 2).map(u64::from);
}

/// One suggestion per card for playback (event), one for a loop (round trip) where the
/// card has one: snd-aloop's own, or a cable between a device's output and input.
fn card_suggestions(card: &Card, out: &mut Vec<Suggestion>) {
    let driver = card.driver.as_deref().unwrap_or("");
    let usable = |direction: PcmDirection| {
        card.devices.iter().filter_map(move |d| {
            let s = d.stream(direction)?;
            let sub = s.free_subdevice()?;
            Some((d.device, s, sub))
        })
    };
    // Playback: the first device with a free subdevice.
    if let Some((device, stream, sub)) = usable(PcmDirection::Playback).next() {
        let (plugin, why, caps) = match stream.caps() {
            Some(c) if c.usable_by_audiolat() => ("hw", String::new(), Some(c)),
            Some(c) if c.audiolat_formats().is_empty() => (
                "plughw",
                " (hw: takes none of FLOAT, S32, S24, S24_3, S16: plughw converts)".to_string(),
                None,
            ),
            Some(_) => (
                "plughw",
                " (hw: takes none of the standard rates: plughw resamples)".to_string(),
                None,
            ),
            None => ("hw", String::new(), None),
        };
        let mut setup = Setup::alsa(hw_name(plugin, card, device, stream, sub));
        if let Some(c) = caps {
            alsa_settings(c, &mut setup);
        }
        out.push(Suggestion {
            probes: vec!["event"],
            what: format!("playback on card {} device {device}{why}", card.id),
            setup,
        });
    }
    // A loop.
    if driver == "Loopback" {
        // snd-aloop: what plays on device 0 subdevice S is captured on device 1
        // subdevice S, and the other way round.
        let free = |device: u32, direction| {
            card.devices
                .iter()
                .find(|d| d.device == device)
                .and_then(|d| d.stream(direction))
        };
        let looped = [(0, 1), (1, 0)].into_iter().find_map(|(from, to)| {
            let p = free(from, PcmDirection::Playback)?;
            let c = free(to, PcmDirection::Capture)?;
            let sub = p.subdevices.iter().map(|s| s.index).find(|s| {
                p.subdevices.iter().any(|x| x.index == *s && !x.in_use())
                    && c.subdevices.iter().any(|x| x.index == *s && !x.in_use())
            })?;
            Some(loop_suggestion(
                card,
                format!(
                    "round trip through snd-aloop's loop (card {} device {from} plays into device {to})",
                    card.id
                ),
                (from, p, sub),
                (to, c, sub),
            ))
        });
        out.extend(looped);
    } else if driver != "Dummy" {
        // Any other card: a device that plays and records, closed by a cable.
        let both = card.devices.iter().find_map(|d| {
            let p = d.playback.as_ref()?;
            let c = d.capture.as_ref()?;
            Some((d.device, p, p.free_subdevice()?, c, c.free_subdevice()?))
        });
        if let Some((device, p, ps, c, cs)) = both {
            out.push(loop_suggestion(
                card,
                format!(
                    "round trip through a cable from an output of card {} device {device} to an input",
                    card.id
                ),
                (device, p, ps),
                (device, c, cs),
            ));
        }
    }
}

/// A round trip from (device, stream, subdevice) `out` back in through `back`.
fn loop_suggestion(
    card: &Card,
    what: String,
    out: (u32, &PcmStream, u32),
    back: (u32, &PcmStream, u32),
) -> Suggestion {
    let mut setup = Setup {
        capture_device: Some(hw_name("hw", card, back.0, back.1, back.2)),
        ..Setup::alsa(hw_name("hw", card, out.0, out.1, out.2))
    };
    if let Some(c) = out.1.caps() {
        alsa_settings(c, &mut setup);
    }
    Suggestion {
        probes: vec!["roundtrip"],
        what,
        setup,
    }
}

fn suggestions(r: &DevicesReport) -> Vec<Suggestion> {
    let mut out = Vec::new();
    for card in &r.alsa.cards {
        card_suggestions(card, &mut out);
    }
    let jack_pcm = r.alsa.knows("jack");
    let mut answering = false;
    for (server, ports) in r.answering() {
        answering = true;
        let name = &server.name;
        let facts = ports.facts;
        out.push(Suggestion {
            probes: vec!["event", "roundtrip"],
            what: format!(
                "the running JACK server `{name}` ({} Hz, {} frames); a round trip goes through audiolat's software loop in it",
                facts.rate_hz, facts.period_frames
            ),
            setup: Setup {
                external_server: Some(name.clone()),
                ..Setup::with(SetupBackend::Jack)
            },
        });
        if let (Some(p), Some(c)) = (ports.playback.first(), ports.capture.first()) {
            out.push(Suggestion {
                probes: vec!["roundtrip"],
                what: format!("round trip through a cable from {p} to {c} on `{name}`"),
                setup: Setup {
                    external_server: Some(name.clone()),
                    ports: Some((p.clone(), c.clone())),
                    ..Setup::with(SetupBackend::Jack)
                },
            });
        }
        if jack_pcm {
            out.push(Suggestion {
                probes: vec!["event", "roundtrip"],
                what: format!("ALSA's jack PCM playing into `{name}`"),
                setup: Setup {
                    external_server: Some(name.clone()),
                    rate_hz: Some(u64::from(facts.rate_hz)),
                    period_frames: Some(u64::from(facts.period_frames)),
                    ..Setup::alsa("jack")
                },
            });
        }
    }
    if !answering && r.jackd.is_some() {
        out.push(Suggestion {
            probes: vec!["event", "roundtrip"],
            what: "a private JACK server audiolat starts and stops (jackd -d dummy: a software clock, no sound card)".into(),
            setup: Setup::with(SetupBackend::Jack),
        });
        if jack_pcm {
            out.push(Suggestion {
                probes: vec!["event"],
                what: "ALSA's jack PCM playing into a private jackd -d dummy".into(),
                setup: Setup::alsa("jack"),
            });
            out.push(Suggestion {
                probes: vec!["roundtrip"],
                what: "ALSA's jack PCM through a software loop in a private jackd -d dummy".into(),
                setup: Setup::alsa("loop"),
            });
        }
    }
    if r.pipewire.present() && r.alsa.knows("pipewire") {
        out.push(Suggestion {
            probes: vec!["event"],
            what: "PipeWire through its ALSA plug-in".into(),
            setup: Setup::alsa("pipewire"),
        });
    }
    if r.pulseaudio.present() && r.alsa.knows("pulse") {
        out.push(Suggestion {
            probes: vec!["event"],
            what: "PulseAudio through its ALSA plug-in (adds the server's buffering)".into(),
            setup: Setup::alsa("pulse"),
        });
    }
    out.push(Suggestion {
        probes: vec!["event", "roundtrip"],
        what: "audiolat's virtual card (a software clock and loopback cable: exact ground truth, needs nothing)".into(),
        setup: Setup::with(SetupBackend::Virtual),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::alsa::devices::{Bounds, PcmDevice, Probe, Subdevice};
    use engine::jack::server::ServerFacts;

    fn caps(formats: &[&str], rates: &[u32]) -> HwCaps {
        HwCaps {
            formats: formats.iter().map(|f| f.to_string()).collect(),
            access: vec!["MMAP_INTERLEAVED".into(), "RW_INTERLEAVED".into()],
            channels: Bounds {
                min: Some(1),
                max: Some(2),
            },
            rate_hz: Bounds {
                min: rates.first().copied(),
                max: rates.last().copied(),
            },
            rates_continuous: Some(false),
            standard_rates_hz: rates.to_vec(),
            period_frames: Bounds {
                min: Some(64),
                max: Some(65536),
            },
            buffer_frames: Bounds {
                min: Some(64),
                max: Some(65536),
            },
            periods: Bounds {
                min: Some(1),
                max: Some(1024),
            },
        }
    }

    fn stream(direction: PcmDirection, subs: u32, busy: &[u32], caps: HwCaps) -> PcmStream {
        PcmStream {
            direction,
            subdevices_count: subs,
            subdevices_available: subs - busy.len() as u32,
            subdevices: (0..subs)
                .map(|s| Subdevice {
                    index: s,
                    name: Some(format!("subdevice #{s}")),
                    state: Some(
                        if busy.contains(&s) {
                            "RUNNING"
                        } else {
                            "closed"
                        }
                        .into(),
                    ),
                    holder: None,
                })
                .collect(),
            probe: Probe::Caps(caps),
        }
    }

    /// Device 0 with one subdevice: playback, and capture when `duplex`.
    fn one_subdevice(caps: HwCaps, duplex: bool) -> PcmDevice {
        PcmDevice {
            device: 0,
            id: None,
            name: None,
            playback: Some(stream(PcmDirection::Playback, 1, &[], caps.clone())),
            capture: duplex.then(|| stream(PcmDirection::Capture, 1, &[], caps)),
        }
    }

    fn card(id: &str, driver: &str, devices: Vec<PcmDevice>) -> Card {
        Card {
            index: 0,
            id: id.into(),
            driver: Some(driver.into()),
            name: Some(id.into()),
            long_name: id.into(),
            devices,
            error: None,
        }
    }

    fn report(cards: Vec<Card>) -> DevicesReport {
        DevicesReport {
            alsa: AlsaInventory {
                cards,
                names: vec![alsa_devices::NameHint {
                    name: "jack".into(),
                    description: Some("JACK Audio Connection Kit".into()),
                    direction: None,
                }],
                names_error: None,
            },
            jack: Vec::new(),
            jack_running: false,
            pipewire: SocketServer::default(),
            pulseaudio: SocketServer::default(),
            jackd: Some("/usr/bin/jackd".into()),
            suggestions: Vec::new(),
        }
    }

    /// A setup in a compact test form: the settings it sets, as `key value` words in a
    /// fixed order (the binary words them as its flags).
    fn words(setup: &Setup) -> String {
        let mut out = vec![format!("{:?}", setup.backend).to_lowercase()];
        let mut put = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                out.push(format!("{k} {v}"));
            }
        };
        put("device", setup.device.clone());
        put("capture-device", setup.capture_device.clone());
        put("external", setup.external_server.clone());
        put(
            "ports",
            setup.ports.as_ref().map(|(p, c)| format!("{p} {c}")),
        );
        put("rate", setup.rate_hz.map(|r| r.to_string()));
        put("period", setup.period_frames.map(|p| p.to_string()));
        put("periods", setup.periods.map(|p| p.to_string()));
        out.join(" ")
    }

    fn args(r: &DevicesReport) -> Vec<String> {
        suggestions(r)
            .into_iter()
            .map(|s| words(&s.setup))
            .collect()
    }

    #[test]
    fn no_card_and_no_server_leave_the_private_server_the_jack_pcm_and_the_virtual_card() {
        let r = report(Vec::new());
        assert_eq!(
            args(&r),
            ["jack", "alsa device jack", "alsa device loop", "virtual"]
        );
        let mut r = r;
        r.jackd = None;
        assert_eq!(args(&r), ["virtual"]);
    }

    /// snd-aloop's card: two devices of `subs` subdevices each way, subdevice 0 of
    /// device 0's playback in use by another program.
    fn loopback_playing_on_0_0_0(subs: u32) -> Card {
        let all = caps(&["S16_LE", "S32_LE", "FLOAT_LE"], &[8000, 44100, 48000]);
        card(
            "Loopback",
            "Loopback",
            (0..2)
                .map(|d| PcmDevice {
                    device: d,
                    id: Some("Loopback PCM".into()),
                    name: Some("Loopback PCM".into()),
                    playback: Some(stream(
                        PcmDirection::Playback,
                        subs,
                        if d == 0 { &[0] } else { &[] },
                        all.clone(),
                    )),
                    capture: Some(stream(PcmDirection::Capture, subs, &[], all.clone())),
                })
                .collect(),
        )
    }

    #[test]
    fn the_loopback_card_is_played_and_looped_on_a_free_subdevice() {
        let a = args(&report(vec![loopback_playing_on_0_0_0(8)]));
        assert_eq!(a[0], "alsa device hw:Loopback,0,1");
        assert_eq!(
            a[1],
            "alsa device hw:Loopback,0,1 capture-device hw:Loopback,1,1"
        );
    }

    #[test]
    fn a_loopback_card_whose_only_subdevice_plays_loops_the_other_way() {
        let a = args(&report(vec![loopback_playing_on_0_0_0(1)]));
        assert_eq!(a[0], "alsa device hw:Loopback,1");
        assert_eq!(
            a[1],
            "alsa device hw:Loopback,1 capture-device hw:Loopback,0"
        );
    }

    #[test]
    fn a_device_without_audiolats_formats_or_rates_is_offered_through_plughw() {
        let odd = card(
            "USB",
            "USB-Audio",
            vec![one_subdevice(caps(&["S24_3BE"], &[44100, 48000]), true)],
        );
        let s = suggestions(&report(vec![odd]));
        assert_eq!(words(&s[0].setup), "alsa device plughw:USB,0");
        assert!(
            s[0].what.contains("none of FLOAT, S32, S24, S24_3, S16"),
            "{}",
            s[0].what
        );
        assert_eq!(
            words(&s[1].setup),
            "alsa device hw:USB,0 capture-device hw:USB,0"
        );
        // A device that does not run 48 kHz gets the rate it runs.
        let cd = card(
            "CD",
            "HDA-Intel",
            vec![one_subdevice(caps(&["S16_LE"], &[44100]), false)],
        );
        assert_eq!(args(&report(vec![cd]))[0], "alsa device hw:CD,0 rate 44100");
    }

    #[test]
    fn a_running_jack_server_is_used_by_name_with_its_rate_and_period() {
        let mut r = report(Vec::new());
        r.jack.push(JackServerEntry {
            name: "studio".into(),
            pid: Some(42),
            default: false,
            ports: Some(ServerPorts {
                facts: ServerFacts {
                    rate_hz: 44100,
                    period_frames: 128,
                },
                playback: vec!["system:playback_1".into()],
                capture: vec!["system:capture_1".into()],
                all_ports: 4,
            }),
            error: None,
        });
        assert_eq!(
            args(&r),
            [
                "jack external studio",
                "jack external studio ports system:playback_1 system:capture_1",
                "alsa device jack external studio rate 44100 period 128",
                "virtual"
            ]
        );
    }
}
