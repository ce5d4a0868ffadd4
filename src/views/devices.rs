//! `audiolat devices`: the sound cards, what each PCM device accepts, the audio servers.

use std::fmt::Write as _;

use serde_json::{json, Value};

fn bounds<T: std::fmt::Display + PartialEq>(b: &engine::alsa_devices::Bounds<T>) -> String {
    match (&b.min, &b.max) {
        (Some(lo), Some(hi)) if lo == hi => lo.to_string(),
        (Some(lo), Some(hi)) => format!("{lo}-{hi}"),
        (Some(lo), None) => format!("{lo}-?"),
        (None, Some(hi)) => format!("?-{hi}"),
        (None, None) => "-".into(),
    }
}

fn bounds_json<T: serde::Serialize>(b: &engine::alsa_devices::Bounds<T>) -> Value {
    json!({"min": b.min, "max": b.max})
}

fn holder_json(h: &engine::alsa_devices::Holder) -> Value {
    json!({"pid": h.pid, "command": h.command})
}

/// `audiolat devices` as text: the cards and what each PCM device accepts, the audio
/// servers, and the flags that measure each thing.
pub fn devices_text(r: &probes::devices::DevicesReport) -> String {
    let mut out = String::new();
    if r.alsa.cards.is_empty() {
        let _ = writeln!(
            out,
            "ALSA: no sound card here{}: no DAC to time against, audio probes run on a software clock (below)",
            if std::path::Path::new("/dev/snd").exists() {
                ""
            } else {
                " (no /dev/snd)"
            }
        );
    }
    for card in &r.alsa.cards {
        card_text(card, &mut out);
    }
    if !r.alsa.cards.is_empty() {
        let _ = writeln!(
            out,
            "free = subdevices free / all; period and buffer in frames; each device was opened read-only and closed, nothing played\n"
        );
    }
    pcm_names_line(r, &mut out);
    servers_text(r, &mut out);
    let _ = writeln!(
        out,
        "\nwhat can be measured here: audiolat event|roundtrip FLAGS"
    );
    for s in &r.suggestions {
        let _ = writeln!(
            out,
            "  {}\n      {}: {}",
            s.args,
            s.probes.join(", "),
            s.what
        );
    }
    out
}

/// One card: its name, a row per PCM stream with what it accepts, the formats and
/// access each group of streams takes, and the subdevices in use.
fn card_text(card: &engine::alsa_devices::Card, out: &mut String) {
    let _ = writeln!(
        out,
        "card {} [{}]: {}{}",
        card.index,
        card.id,
        card.long_name,
        card.driver
            .as_deref()
            .map_or(String::new(), |d| format!(" (driver {d})"))
    );
    if let Some(e) = &card.error {
        let _ = writeln!(out, "  {e}");
    }
    let mut t = report::terminal::Table::new(&[
        "pcm",
        "name",
        "direction",
        "free",
        "channels",
        "rate Hz",
        "period",
        "buffer",
        "periods",
        "audiolat formats",
    ])
    .left_align(&[1, 2, 9]);
    // (what a stream takes, the streams that take it), and subdevices in use.
    let mut formats: Vec<(String, Vec<String>)> = Vec::new();
    let mut notes = Vec::new();
    for d in &card.devices {
        let pcm = format!("hw:{},{}", card.id, d.device);
        for s in [&d.playback, &d.capture].into_iter().flatten() {
            let mut row = vec![
                pcm.clone(),
                d.name.clone().unwrap_or_else(|| "-".into()),
                s.direction.name().to_string(),
                format!("{}/{}", s.subdevices_available, s.subdevices_count),
            ];
            stream_cells(&pcm, s, &mut row, &mut formats);
            t.row(row);
            for sub in s.subdevices.iter().filter(|x| x.in_use()) {
                notes.push(format!(
                    "  {pcm},{} {}: {}{}",
                    sub.index,
                    s.direction.name(),
                    sub.state.as_deref().unwrap_or("in use"),
                    sub.holder
                        .as_ref()
                        .map_or(String::new(), |h| format!(", held by {h}"))
                ));
            }
        }
    }
    out.push_str(&t.render());
    let streams: usize = formats.iter().map(|(_, who)| who.len()).sum();
    for (takes, who) in formats {
        if who.len() == streams && streams > 1 {
            let _ = writeln!(out, "  every device: {takes}");
        } else {
            let _ = writeln!(out, "  {}: {takes}", who.join(", "));
        }
    }
    for n in notes {
        let _ = writeln!(out, "{n}");
    }
    out.push('\n');
}

/// A stream's cells after its name and direction: what it accepts (and the formats it
/// takes, added to `formats`), or why it could not be read.
fn stream_cells(
    pcm: &str,
    s: &engine::alsa_devices::PcmStream,
    row: &mut Vec<String>,
    formats: &mut Vec<(String, Vec<String>)>,
) {
    use engine::alsa_devices::Probe;
    match &s.probe {
        Probe::Caps(c) => {
            let rates = match c.rates_continuous {
                Some(true) => format!("{} (any)", bounds(&c.rate_hz)),
                _ => c
                    .standard_rates_hz
                    .iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            };
            let ours: Vec<&str> = c.audiolat_formats().iter().map(|f| f.alsa_name()).collect();
            row.extend([
                bounds(&c.channels),
                if rates.is_empty() { "-".into() } else { rates },
                bounds(&c.period_frames),
                bounds(&c.buffer_frames),
                bounds(&c.periods),
                if ours.is_empty() {
                    "none: use plughw:".into()
                } else {
                    ours.join(" ")
                },
            ]);
            let takes = format!(
                "formats {}; access {}",
                c.formats.join(" "),
                c.access.join(" ")
            );
            match formats.iter_mut().find(|(t, _)| *t == takes) {
                Some((_, who)) => who.push(format!("{pcm} {}", s.direction.name())),
                None => formats.push((takes, vec![format!("{pcm} {}", s.direction.name())])),
            }
        }
        Probe::Busy(holders) => {
            let who: Vec<String> = holders.iter().map(|h| h.to_string()).collect();
            row.extend(std::iter::repeat_n("-".to_string(), 5));
            row.push(format!(
                "busy: {}",
                if who.is_empty() {
                    "held by another program".to_string()
                } else {
                    format!("held by {}", who.join(", "))
                }
            ));
        }
        Probe::Failed(why) => {
            row.extend(std::iter::repeat_n("-".to_string(), 5));
            row.push(format!("not readable: {why}"));
        }
    }
}

/// The ALSA PCM names (aplay -L), by their plug-in only for each card's devices.
fn pcm_names_line(r: &probes::devices::DevicesReport, out: &mut String) {
    match &r.alsa.names_error {
        Some(e) => {
            let _ = writeln!(out, "ALSA PCM names: {e}");
        }
        None => {
            // The names of each card's devices (`plughw:CARD=Dummy,DEV=0`) by their
            // plug-in only; --json lists them all.
            let mut names: Vec<&str> = Vec::new();
            let mut per_card: Vec<String> = Vec::new();
            for h in &r.alsa.names {
                let parts = engine::alsa_devices::parse_pcm_name(&h.name);
                if parts.card.is_some() {
                    if !per_card.contains(&parts.plugin) {
                        per_card.push(parts.plugin);
                    }
                } else {
                    names.push(&h.name);
                }
            }
            let _ = writeln!(
                out,
                "ALSA PCM names (aplay -L): {}{}",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                },
                if per_card.is_empty() {
                    String::new()
                } else {
                    format!("; for each card: {}", per_card.join(", "))
                }
            );
        }
    }
}

/// The audio servers: JACK (or how to start one), PipeWire, PulseAudio.
fn servers_text(r: &probes::devices::DevicesReport, out: &mut String) {
    let _ = writeln!(out, "\naudio servers:");
    let mut any_jack = false;
    for e in &r.jack {
        any_jack = true;
        let pid = e.pid.map_or(String::new(), |p| format!(" (pid {p})"));
        match (&e.ports, &e.error) {
            (Some(p), _) => {
                let list = |v: &[String]| {
                    if v.is_empty() {
                        "none".to_string()
                    } else {
                        v.join(" ")
                    }
                };
                let _ = writeln!(
                    out,
                    "  JACK `{}`{pid}: {} Hz, {} frames a period, {} ports; physical playback {}; physical capture {}",
                    e.name,
                    p.facts.rate_hz,
                    p.facts.period_frames,
                    p.all_ports,
                    list(&p.playback),
                    list(&p.capture)
                );
            }
            (None, Some(why)) => {
                let _ = writeln!(out, "  JACK `{}`{pid}: {why}", e.name);
            }
            (None, None) => {}
        }
    }
    if !any_jack {
        let _ = writeln!(
            out,
            "  JACK: no server answers{}",
            match &r.jackd {
                Some(j) => format!(" (audiolat can start a private one: {})", j.display()),
                None => " and jackd is not installed (apt install jackd2)".into(),
            }
        );
    }
    for (name, s) in [("PipeWire", &r.pipewire), ("PulseAudio", &r.pulseaudio)] {
        let _ = writeln!(
            out,
            "  {name}: {}",
            match (s.running, &s.socket) {
                (true, Some(p)) => format!("running, socket {}", p.display()),
                (true, None) => "running (no socket for this user)".into(),
                (false, Some(p)) => format!("socket {} (its process is not visible)", p.display()),
                (false, None) => "not running".into(),
            }
        );
    }
}

/// `audiolat devices --json`. The shape (every key always present; `null` for what is
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
/// - `suggestions[]`: `probes[]`, `args`, `what`.
pub fn devices_json(r: &probes::devices::DevicesReport) -> Value {
    use engine::alsa_devices::Probe;
    let stream = |card: &engine::alsa_devices::Card,
                  d: &engine::alsa_devices::PcmDevice,
                  s: Option<&engine::alsa_devices::PcmStream>| {
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
    let socket_server = |s: &probes::devices::SocketServer| json!({"running": s.running, "socket": s.socket.as_ref().map(|p| p.display().to_string())});
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
            "args": s.args,
            "what": s.what,
        })).collect::<Vec<_>>(),
    })
}
