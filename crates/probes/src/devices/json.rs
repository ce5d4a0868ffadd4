//! The survey as JSON, every key always present; `null` for what is not known, never 0.

use serde_json::{json, Value};

use super::{DevicesReport, Setup, SocketServer};

fn bounds_json<T: Copy + Into<Value>>(b: &engine::alsa::devices::Bounds<T>) -> Value {
    json!({"min": b.min.map(Into::into), "max": b.max.map(Into::into)})
}

fn holder_json(h: &engine::alsa::devices::Holder) -> Value {
    json!({"pid": h.pid, "command": h.command})
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

/// The survey as JSON (`audiolat devices --json`, which `report::view::devices` renders
/// as text). The shape (every key always present; `null` for what is
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
pub fn to_json(r: &DevicesReport, args: &dyn Fn(&Setup) -> String) -> Value {
    use engine::alsa::devices::Probe;
    let stream = |card: &engine::alsa::devices::Card,
                  d: &engine::alsa::devices::PcmDevice,
                  s: Option<&engine::alsa::devices::PcmStream>| {
        let Some(s) = s else {
            return Value::Null;
        };
        let caps = s.caps();
        let (status, holders, error) = match &s.probe {
            Probe::Caps(_) => ("ok", Vec::new(), None),
            Probe::Busy(h) => ("busy", h.iter().map(holder_json).collect(), None),
            Probe::Failed(why) => ("failed", Vec::new(), Some(why.clone())),
        };
        json!({
            "name": format!("hw:{},{}", card.id, d.device),
            "subdevices": s.subdevices_count,
            "subdevices_available": s.subdevices_available,
            "subdevice_list": s.subdevices.iter().map(|x| json!({
                "subdevice": x.index,
                "name": x.name,
                "state": x.state,
                "holder": x.holder.as_ref().map(holder_json),
            })).collect::<Vec<_>>(),
            "status": status,
            "holders": holders,
            "error": error,
            "formats": caps.map(|c| c.formats.clone()),
            "audiolat_formats": caps.map(|c| c.audiolat_formats().iter().map(|f| f.alsa_name()).collect::<Vec<_>>()),
            "access": caps.map(|c| c.access.clone()),
            "channels": caps.map(|c| bounds_json(&c.channels)),
            "rate_hz": caps.map(|c| bounds_json(&c.rate_hz)),
            "rates_continuous": caps.and_then(|c| c.rates_continuous),
            "standard_rates_hz": caps.map(|c| c.standard_rates_hz.clone()),
            "period_frames": caps.map(|c| bounds_json(&c.period_frames)),
            "buffer_frames": caps.map(|c| bounds_json(&c.buffer_frames)),
            "periods": caps.map(|c| bounds_json(&c.periods)),
        })
    };
    let cards: Vec<Value> = r
        .alsa
        .cards
        .iter()
        .map(|c| {
            json!({
                "index": c.index,
                "id": c.id,
                "driver": c.driver,
                "name": c.name,
                "long_name": c.long_name,
                "error": c.error,
                "pcm": c.devices.iter().map(|d| json!({
                    "device": d.device,
                    "id": d.id,
                    "name": d.name,
                    "playback": stream(c, d, d.playback.as_ref()),
                    "capture": stream(c, d, d.capture.as_ref()),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let jack: Vec<Value> = r
        .jack
        .iter()
        .map(|e| {
            let p = e.ports.as_ref();
            json!({
                "name": e.name,
                "pid": e.pid,
                "default": e.default,
                "answers": p.is_some(),
                "rate_hz": p.map(|p| p.facts.rate_hz),
                "period_frames": p.map(|p| p.facts.period_frames),
                "ports": p.map(|p| p.all_ports),
                "playback_ports": p.map(|p| p.playback.clone()),
                "capture_ports": p.map(|p| p.capture.clone()),
                "error": e.error,
            })
        })
        .collect();
    let socket_server = |s: &SocketServer| json!({"running": s.running, "socket": s.socket.as_ref().map(|p| p.display().to_string())});
    json!({
        "alsa": {
            "cards": cards,
            "pcm_names": r.alsa.names.iter().map(|h| json!({
                "name": h.name,
                "description": h.description,
                "direction": h.direction.map(|d| d.name()),
            })).collect::<Vec<_>>(),
            "pcm_names_error": r.alsa.names_error,
        },
        "servers": {
            "jack": jack,
            "jack_running": r.jack_running,
            "jackd": r.jackd.as_ref().map(|p| p.display().to_string()),
            "pipewire": socket_server(&r.pipewire),
            "pulseaudio": socket_server(&r.pulseaudio),
        },
        "suggestions": r.suggestions.iter().map(|s| json!({
            "probes": s.probes,
            "args": args(&s.setup),
            "what": s.what,
        })).collect::<Vec<_>>(),
    })
}
