//! `audiolat devices`: the sound cards, what each PCM device accepts, the audio servers,
//! read from the survey's JSON form (what `audiolat devices --json` prints) and the few
//! facts of this machine the JSON does not hold ([`Local`]).

use std::fmt::Write as _;

use serde_json::Value;

use crate::terminal::Table;

/// What the text says beside the survey's JSON.
#[derive(Debug, Clone, Default)]
pub struct Local {
    /// `/dev/snd` exists.
    pub dev_snd: bool,
    /// The ALSA PCM names that name no card (`default`, `null`, `pulse`).
    pub plain_names: Vec<String>,
    /// The plug-ins of the names that name a card (`plughw`, `sysdefault`), each once,
    /// in the order first seen.
    pub card_plugins: Vec<String>,
}

/// A value's text: a string as is, anything else as JSON.
fn s(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

fn bounds(b: &Value) -> String {
    let (lo, hi) = (&b["min"], &b["max"]);
    match (lo.is_null(), hi.is_null()) {
        (false, false) if lo == hi => s(lo),
        (false, false) => format!("{}-{}", s(lo), s(hi)),
        (false, true) => format!("{}-?", s(lo)),
        (true, false) => format!("?-{}", s(hi)),
        (true, true) => "-".into(),
    }
}

/// A process holding a device: "command (pid N)".
fn holder(h: &Value) -> String {
    format!("{} (pid {})", s(&h["command"]), h["pid"])
}

/// The strings of a JSON array.
fn strings(v: &Value) -> Vec<String> {
    v.as_array().into_iter().flatten().map(s).collect()
}

/// `audiolat devices` as text, from its JSON form `r`: the cards and what each PCM
/// device accepts, the audio servers, and the flags that measure each thing.
pub fn text(r: &Value, local: &Local) -> String {
    let mut out = String::new();
    let cards = r["alsa"]["cards"].as_array().map_or(&[][..], Vec::as_slice);
    if cards.is_empty() {
        let _ = writeln!(
            out,
            "ALSA: no sound card here{}: no DAC to time against, audio probes run on a software clock (below)",
            if local.dev_snd { "" } else { " (no /dev/snd)" }
        );
    }
    for card in cards {
        card_text(card, &mut out);
    }
    if !cards.is_empty() {
        let _ = writeln!(
            out,
            "free = subdevices free / all; period and buffer in frames; each device was opened read-only and closed, nothing played\n"
        );
    }
    pcm_names_line(r, local, &mut out);
    servers_text(&r["servers"], &mut out);
    let _ = writeln!(
        out,
        "\nwhat can be measured here: audiolat event|roundtrip FLAGS"
    );
    for sg in r["suggestions"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "  {}\n      {}: {}",
            s(&sg["args"]),
            strings(&sg["probes"]).join(", "),
            s(&sg["what"])
        );
    }
    out
}

/// One card: its name, a row per PCM stream with what it accepts, the formats and
/// access each group of streams takes, and the subdevices in use.
fn card_text(card: &Value, out: &mut String) {
    let _ = writeln!(
        out,
        "card {} [{}]: {}{}",
        card["index"],
        s(&card["id"]),
        s(&card["long_name"]),
        card["driver"]
            .as_str()
            .map_or(String::new(), |d| format!(" (driver {d})"))
    );
    if let Some(e) = card["error"].as_str() {
        let _ = writeln!(out, "  {e}");
    }
    let mut t = Table::new(&[
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
    for d in card["pcm"].as_array().into_iter().flatten() {
        let pcm = format!("hw:{},{}", s(&card["id"]), d["device"]);
        for direction in ["playback", "capture"] {
            let st = &d[direction];
            if st.is_null() {
                continue;
            }
            let mut row = vec![
                pcm.clone(),
                d["name"].as_str().unwrap_or("-").to_string(),
                direction.to_string(),
                format!("{}/{}", st["subdevices_available"], st["subdevices"]),
            ];
            stream_cells(&format!("{pcm} {direction}"), st, &mut row, &mut formats);
            t.row(row);
            for sub in st["subdevice_list"].as_array().into_iter().flatten() {
                let state = sub["state"].as_str();
                let in_use = !sub["holder"].is_null() || state.is_some_and(|x| x != "closed");
                if in_use {
                    notes.push(format!(
                        "  {pcm},{} {direction}: {}{}",
                        sub["subdevice"],
                        state.unwrap_or("in use"),
                        if sub["holder"].is_null() {
                            String::new()
                        } else {
                            format!(", held by {}", holder(&sub["holder"]))
                        }
                    ));
                }
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
/// takes, added to `formats` under `name`), or why it could not be read.
fn stream_cells(
    name: &str,
    st: &Value,
    row: &mut Vec<String>,
    formats: &mut Vec<(String, Vec<String>)>,
) {
    match st["status"].as_str() {
        Some("ok") => {
            let rates = match st["rates_continuous"].as_bool() {
                Some(true) => format!("{} (any)", bounds(&st["rate_hz"])),
                _ => strings(&st["standard_rates_hz"]).join(","),
            };
            let ours = strings(&st["audiolat_formats"]);
            row.extend([
                bounds(&st["channels"]),
                if rates.is_empty() { "-".into() } else { rates },
                bounds(&st["period_frames"]),
                bounds(&st["buffer_frames"]),
                bounds(&st["periods"]),
                if ours.is_empty() {
                    "none: use plughw:".into()
                } else {
                    ours.join(" ")
                },
            ]);
            let takes = format!(
                "formats {}; access {}",
                strings(&st["formats"]).join(" "),
                strings(&st["access"]).join(" ")
            );
            match formats.iter_mut().find(|(t, _)| *t == takes) {
                Some((_, who)) => who.push(name.to_string()),
                None => formats.push((takes, vec![name.to_string()])),
            }
        }
        Some("busy") => {
            let who: Vec<String> = st["holders"]
                .as_array()
                .into_iter()
                .flatten()
                .map(holder)
                .collect();
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
        _ => {
            row.extend(std::iter::repeat_n("-".to_string(), 5));
            row.push(format!("not readable: {}", s(&st["error"])));
        }
    }
}

/// The ALSA PCM names (aplay -L), by their plug-in only for each card's devices.
fn pcm_names_line(r: &Value, local: &Local, out: &mut String) {
    if let Some(e) = r["alsa"]["pcm_names_error"].as_str() {
        let _ = writeln!(out, "ALSA PCM names: {e}");
        return;
    }
    // The names of each card's devices (`plughw:CARD=Dummy,DEV=0`) by their plug-in
    // only; --json lists them all.
    let _ = writeln!(
        out,
        "ALSA PCM names (aplay -L): {}{}",
        if local.plain_names.is_empty() {
            "none".to_string()
        } else {
            local.plain_names.join(", ")
        },
        if local.card_plugins.is_empty() {
            String::new()
        } else {
            format!("; for each card: {}", local.card_plugins.join(", "))
        }
    );
}

/// The audio servers: JACK (or how to start one), PipeWire, PulseAudio.
fn servers_text(servers: &Value, out: &mut String) {
    let _ = writeln!(out, "\naudio servers:");
    let jack = servers["jack"].as_array().map_or(&[][..], Vec::as_slice);
    for e in jack {
        let pid = if e["pid"].is_null() {
            String::new()
        } else {
            format!(" (pid {})", e["pid"])
        };
        let name = s(&e["name"]);
        if e["answers"].as_bool() == Some(true) {
            let list = |v: &Value| {
                let v = strings(v);
                if v.is_empty() {
                    "none".to_string()
                } else {
                    v.join(" ")
                }
            };
            let _ = writeln!(
                out,
                "  JACK `{name}`{pid}: {} Hz, {} frames a period, {} ports; physical playback {}; physical capture {}",
                e["rate_hz"],
                e["period_frames"],
                e["ports"],
                list(&e["playback_ports"]),
                list(&e["capture_ports"])
            );
        } else if let Some(why) = e["error"].as_str() {
            let _ = writeln!(out, "  JACK `{name}`{pid}: {why}");
        }
    }
    if jack.is_empty() {
        let _ = writeln!(
            out,
            "  JACK: no server answers{}",
            match servers["jackd"].as_str() {
                Some(j) => format!(" (audiolat can start a private one: {j})"),
                None => " and jackd is not installed (apt install jackd2)".into(),
            }
        );
    }
    for (name, key) in [("PipeWire", "pipewire"), ("PulseAudio", "pulseaudio")] {
        let sv = &servers[key];
        let _ = writeln!(
            out,
            "  {name}: {}",
            match (sv["running"].as_bool() == Some(true), sv["socket"].as_str()) {
                (true, Some(p)) => format!("running, socket {p}"),
                (true, None) => "running (no socket for this user)".into(),
                (false, Some(p)) => format!("socket {p} (its process is not visible)"),
                (false, None) => "not running".into(),
            }
        );
    }
}
