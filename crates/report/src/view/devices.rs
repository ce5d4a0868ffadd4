//! `audiolat devices`: the sound cards, what each PCM device accepts, the audio servers,
//! read from the survey's record (what `audiolat devices --json` prints as JSON) and the
//! few facts of this machine the survey does not hold ([`Local`]).

use std::fmt::Write as _;

use results::records::devices::{
    Bounds, Card, DevicesSurvey, Holder, PcmStream, Servers, SocketServer, StreamStatus,
};

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

/// A range: `min-max`, one number when they are equal, `?` for an end not known, `-`
/// when neither is (or the range itself is not known).
fn bounds(b: Option<&Bounds>) -> String {
    match b.map_or((None, None), |b| (b.min, b.max)) {
        (Some(lo), Some(hi)) if lo == hi => lo.to_string(),
        (Some(lo), Some(hi)) => format!("{lo}-{hi}"),
        (Some(lo), None) => format!("{lo}-?"),
        (None, Some(hi)) => format!("?-{hi}"),
        (None, None) => "-".into(),
    }
}

/// A process holding a device: "command (pid N)".
fn holder(h: &Holder) -> String {
    format!("{} (pid {})", h.command, h.pid)
}

/// A list's items as text (none when it is not known).
fn strings<T: ToString>(v: Option<&Vec<T>>) -> Vec<String> {
    v.into_iter().flatten().map(T::to_string).collect()
}

/// `audiolat devices` as text, from its JSON form `r`: the cards and what each PCM
/// device accepts, the audio servers, and the flags that measure each thing.
pub fn text(r: &DevicesSurvey, local: &Local) -> String {
    let mut out = String::new();
    let cards = &r.alsa.cards;
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
    servers_text(&r.servers, &mut out);
    let _ = writeln!(
        out,
        "\nwhat can be measured here: audiolat event|roundtrip FLAGS"
    );
    for sg in &r.suggestions {
        let _ = writeln!(
            out,
            "  {}\n      {}: {}",
            sg.args,
            sg.probes.join(", "),
            sg.what
        );
    }
    out
}

/// One card: its name, a row per PCM stream with what it accepts, the formats and
/// access each group of streams takes, and the subdevices in use.
fn card_text(card: &Card, out: &mut String) {
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
    for d in &card.pcm {
        let pcm = format!("hw:{},{}", card.id, d.device);
        for (direction, st) in [("playback", &d.playback), ("capture", &d.capture)] {
            let Some(st) = st else {
                continue;
            };
            let mut row = vec![
                pcm.clone(),
                d.name.as_deref().unwrap_or("-").to_string(),
                direction.to_string(),
                format!("{}/{}", st.subdevices_available, st.subdevices),
            ];
            stream_cells(&format!("{pcm} {direction}"), st, &mut row, &mut formats);
            t.row(row);
            for sub in &st.subdevice_list {
                let state = sub.state.as_deref();
                let in_use = sub.holder.is_some() || state.is_some_and(|x| x != "closed");
                if in_use {
                    notes.push(format!(
                        "  {pcm},{} {direction}: {}{}",
                        sub.subdevice,
                        state.unwrap_or("in use"),
                        match &sub.holder {
                            None => String::new(),
                            Some(h) => format!(", held by {}", holder(h)),
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
    st: &PcmStream,
    row: &mut Vec<String>,
    formats: &mut Vec<(String, Vec<String>)>,
) {
    match st.status {
        StreamStatus::Ok => {
            let rates = match st.rates_continuous {
                Some(true) => format!("{} (any)", bounds(st.rate_hz.as_ref())),
                _ => strings(st.standard_rates_hz.as_ref()).join(","),
            };
            let ours = strings(st.audiolat_formats.as_ref());
            row.extend([
                bounds(st.channels.as_ref()),
                if rates.is_empty() { "-".into() } else { rates },
                bounds(st.period_frames.as_ref()),
                bounds(st.buffer_frames.as_ref()),
                bounds(st.periods.as_ref()),
                if ours.is_empty() {
                    "none: use plughw:".into()
                } else {
                    ours.join(" ")
                },
            ]);
            let takes = format!(
                "formats {}; access {}",
                strings(st.formats.as_ref()).join(" "),
                strings(st.access.as_ref()).join(" ")
            );
            match formats.iter_mut().find(|(t, _)| *t == takes) {
                Some((_, who)) => who.push(name.to_string()),
                None => formats.push((takes, vec![name.to_string()])),
            }
        }
        StreamStatus::Busy => {
            let who: Vec<String> = st.holders.iter().map(holder).collect();
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
        StreamStatus::Failed => {
            row.extend(std::iter::repeat_n("-".to_string(), 5));
            row.push(format!(
                "not readable: {}",
                st.error.as_deref().unwrap_or("null")
            ));
        }
    }
}

/// The ALSA PCM names (aplay -L), by their plug-in only for each card's devices.
fn pcm_names_line(r: &DevicesSurvey, local: &Local, out: &mut String) {
    if let Some(e) = &r.alsa.pcm_names_error {
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
fn servers_text(servers: &Servers, out: &mut String) {
    let _ = writeln!(out, "\naudio servers:");
    let jack = &servers.jack;
    for e in jack {
        let pid = e.pid.map_or(String::new(), |p| format!(" (pid {p})"));
        let name = &e.name;
        if e.answers {
            // What a server that answers always has; "null" were it missing, as ever.
            let known = |v: Option<String>| v.unwrap_or_else(|| "null".into());
            let list = |v: Option<&Vec<String>>| {
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
                known(e.rate_hz.map(|r| r.to_string())),
                known(e.period_frames.map(|p| p.to_string())),
                known(e.ports.map(|p| p.to_string())),
                list(e.playback_ports.as_ref()),
                list(e.capture_ports.as_ref())
            );
        } else if let Some(why) = &e.error {
            let _ = writeln!(out, "  JACK `{name}`{pid}: {why}");
        }
    }
    if jack.is_empty() {
        let _ = writeln!(
            out,
            "  JACK: no server answers{}",
            match &servers.jackd {
                Some(j) => format!(" (audiolat can start a private one: {j})"),
                None => " and jackd is not installed (apt install jackd2)".into(),
            }
        );
    }
    let named: [(&str, &SocketServer); 2] = [
        ("PipeWire", &servers.pipewire),
        ("PulseAudio", &servers.pulseaudio),
    ];
    for (name, sv) in named {
        let _ = writeln!(
            out,
            "  {name}: {}",
            match (sv.running, sv.socket.as_deref()) {
                (true, Some(p)) => format!("running, socket {p}"),
                (true, None) => "running (no socket for this user)".into(),
                (false, Some(p)) => format!("socket {p} (its process is not visible)"),
                (false, None) => "not running".into(),
            }
        );
    }
}
