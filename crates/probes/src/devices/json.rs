//! The survey as JSON, every key always present; `null` for what is not known, never 0.

use results::records::devices::{self as records, AlsaSurvey, Bounds, Card, DevicesSurvey};
use results::records::devices::{Holder, JackServer, PcmDevice, PcmName, PcmStream};
use results::records::devices::{Servers, StreamStatus, Subdevice};

use super::{DevicesReport, Setup, SocketServer};

fn bounds<T: Copy + Into<u64>>(b: &engine::alsa::devices::Bounds<T>) -> Bounds {
    Bounds {
        min: b.min.map(Into::into),
        max: b.max.map(Into::into),
    }
}

fn holder(h: &engine::alsa::devices::Holder) -> Holder {
    Holder {
        pid: h.pid,
        command: h.command.clone(),
    }
}

/// The ALSA PCM names split by whether they name a card (engine's parser): the names
/// that name none, and the plug-ins of those that do, each once, in the order first seen.
pub fn pcm_names_by_card(r: &DevicesReport) -> (Vec<String>, Vec<String>) {
    let (mut plain, mut plugins) = (Vec::new(), Vec::<String>::new());
    for h in &r.alsa.names {
        let parts = engine::alsa::devices::parse_pcm_name(&h.name);
        if parts.card.is_none() {
            plain.push(h.name.clone());
        } else if !plugins.contains(&parts.plugin) {
            plugins.push(parts.plugin);
        }
    }
    (plain, plugins)
}

/// The survey as its record (`audiolat devices --json` prints it as JSON,
/// `report::view::devices` renders it as text). The JSON's shape (every key always present; `null` for what is
/// not known, never 0):
///
/// - `alsa.cards[]`: `index`, `id`, `driver`, `name`, `long_name`, `error`, and `pcm[]`
///   of `device`, `id`, `name`, `playback` and `capture` (each `null` when the device
///   has no such direction, else `name` (`hw:ID,D`), `subdevices`,
///   `subdevices_available`, `subdevice_list[]` (`subdevice`, `name`, `state`, `holder`),
///   `status` (`ok`, `busy` or `failed`), `holders[]` (`pid`, `command`), `error`, and
///   what it accepts: `formats[]`, `audiolat_formats[]`, `access[]`, `channels`,
///   `rate_hz`, `period_frames`, `buffer_frames`, `periods` (each `{min, max}`),
///   `rates_continuous`, `standard_rates_hz[]`, all `null` unless `status` is `ok`);
/// - `alsa.pcm_names[]`: `name`, `description`, `direction` (`playback`, `capture` or
///   `null` for both); `alsa.pcm_names_error`;
/// - `servers.jack[]`: `name`, `pid`, `default`, `answers`, `rate_hz`, `period_frames`,
///   `ports`, `playback_ports[]`, `capture_ports[]`, `error`; `servers.jack_running`,
///   `servers.jackd`; `servers.pipewire` and `servers.pulseaudio`: `running`, `socket`;
/// - `suggestions[]`: `probes[]`, `args` (the setup as `args` words it: the program's
///   flags), `what`.
pub fn record(r: &DevicesReport, args: &dyn Fn(&Setup) -> String) -> DevicesSurvey {
    use engine::alsa::devices::Probe;
    let stream = |card: &engine::alsa::devices::Card,
                  d: &engine::alsa::devices::PcmDevice,
                  s: Option<&engine::alsa::devices::PcmStream>| {
        let s = s?;
        let caps = s.caps();
        let (status, holders, error) = match &s.probe {
            Probe::Caps(_) => (StreamStatus::Ok, Vec::new(), None),
            Probe::Busy(h) => (StreamStatus::Busy, h.iter().map(holder).collect(), None),
            Probe::Failed(why) => (StreamStatus::Failed, Vec::new(), Some(why.clone())),
        };
        Some(PcmStream {
            name: format!("hw:{},{}", card.id, d.device),
            subdevices: s.subdevices_count,
            subdevices_available: s.subdevices_available,
            subdevice_list: s
                .subdevices
                .iter()
                .map(|x| Subdevice {
                    subdevice: x.index,
                    name: x.name.clone(),
                    state: x.state.clone(),
                    holder: x.holder.as_ref().map(holder),
                })
                .collect(),
            status,
            holders,
            error,
            formats: caps.map(|c| c.formats.clone()),
            audiolat_formats: caps.map(|c| {
                c.audiolat_formats()
                    .iter()
                    .map(|f| f.alsa_name().to_string())
                    .collect()
            }),
            access: caps.map(|c| c.access.clone()),
            channels: caps.map(|c| bounds(&c.channels)),
            rate_hz: caps.map(|c| bounds(&c.rate_hz)),
            rates_continuous: caps.and_then(|c| c.rates_continuous),
            standard_rates_hz: caps.map(|c| c.standard_rates_hz.clone()),
            period_frames: caps.map(|c| bounds(&c.period_frames)),
            buffer_frames: caps.map(|c| bounds(&c.buffer_frames)),
            periods: caps.map(|c| bounds(&c.periods)),
        })
    };
    let cards = r
        .alsa
        .cards
        .iter()
        .map(|c| Card {
            index: c.index,
            id: c.id.clone(),
            driver: c.driver.clone(),
            name: c.name.clone(),
            long_name: c.long_name.clone(),
            error: c.error.clone(),
            pcm: c
                .devices
                .iter()
                .map(|d| PcmDevice {
                    device: d.device,
                    id: d.id.clone(),
                    name: d.name.clone(),
                    playback: stream(c, d, d.playback.as_ref()),
                    capture: stream(c, d, d.capture.as_ref()),
                })
                .collect(),
        })
        .collect();
    let jack = r
        .jack
        .iter()
        .map(|e| {
            let p = e.ports.as_ref();
            JackServer {
                name: e.name.clone(),
                pid: e.pid,
                default: e.default,
                answers: p.is_some(),
                rate_hz: p.map(|p| p.facts.rate_hz),
                period_frames: p.map(|p| p.facts.period_frames),
                ports: p.map(|p| p.all_ports as u64),
                playback_ports: p.map(|p| p.playback.clone()),
                capture_ports: p.map(|p| p.capture.clone()),
                error: e.error.clone(),
            }
        })
        .collect();
    let socket_server = |s: &SocketServer| records::SocketServer {
        running: s.running,
        socket: s.socket.as_ref().map(|p| p.display().to_string()),
    };
    DevicesSurvey {
        alsa: AlsaSurvey {
            cards,
            pcm_names: r
                .alsa
                .names
                .iter()
                .map(|h| PcmName {
                    name: h.name.clone(),
                    description: h.description.clone(),
                    direction: h.direction.map(|d| d.name().to_string()),
                })
                .collect(),
            pcm_names_error: r.alsa.names_error.clone(),
        },
        servers: Servers {
            jack,
            jack_running: r.jack_running,
            jackd: r.jackd.as_ref().map(|p| p.display().to_string()),
            pipewire: socket_server(&r.pipewire),
            pulseaudio: socket_server(&r.pulseaudio),
        },
        suggestions: r
            .suggestions
            .iter()
            .map(|s| records::Suggestion {
                probes: s.probes.iter().map(|p| p.to_string()).collect(),
                args: args(&s.setup),
                what: s.what.clone(),
            })
            .collect(),
    }
}
