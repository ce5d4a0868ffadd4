//! What ALSA offers on this machine: sound cards, their PCM devices and subdevices in
//! each direction, what each device accepts (sample formats, access modes, channels,
//! rates, period and buffer sizes), who holds a device that is busy, and the PCM names
//! alsa-lib knows (`aplay -L`).
//!
//! Nothing here plays or records: a device is opened non-blocking (`SND_PCM_NONBLOCK`),
//! its full configuration space is read (`snd_pcm_hw_params_any`) and it is closed
//! without being prepared or started. A device another program holds is not opened at
//! all; [`holder`] names the program from `/proc/asound/cardC/pcmDp/subS/status`
//! (`owner_pid`) or, failing that, from the open files in `/proc/*/fd`.
//!
//! A value alsa-lib did not give is `None`, never 0.
//!
//! ```no_run
//! let alsa = engine::alsa::devices::inventory();
//! for card in &alsa.cards {
//!     println!("card {} [{}]: {}", card.index, card.id, card.long_name);
//! }
//! if let Some(h) = engine::alsa::devices::holder(0, 0, engine::alsa::devices::PcmDirection::Playback) {
//!     println!("hw:0,0 is held by {} (pid {})", h.command, h.pid);
//! }
//! ```

use crate::alsa::format::SampleFormat;
use crate::alsa::silence_alsa_lib;
use alsa::pcm::{Access, Format, HwParams, PCM};
use alsa::Direction;

/// Playback or capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PcmDirection {
    /// Output (`p` in `/dev/snd/pcmC0D0p`).
    Playback,
    /// Input (`c`).
    Capture,
}

impl PcmDirection {
    /// Both, playback first.
    pub const BOTH: [PcmDirection; 2] = [PcmDirection::Playback, PcmDirection::Capture];

    /// `p` or `c`, as in `/dev/snd` and `/proc/asound` names.
    pub fn letter(self) -> char {
        match self {
            PcmDirection::Playback => 'p',
            PcmDirection::Capture => 'c',
        }
    }

    /// "playback" or "capture".
    pub fn name(self) -> &'static str {
        match self {
            PcmDirection::Playback => "playback",
            PcmDirection::Capture => "capture",
        }
    }

    fn alsa(self) -> Direction {
        match self {
            PcmDirection::Playback => Direction::Playback,
            PcmDirection::Capture => Direction::Capture,
        }
    }
}

/// A process that has a PCM open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    /// Its process id (the thread group of the thread that opened the device).
    pub pid: u32,
    /// Its command name (`/proc/PID/comm`), or `?` when it could not be read.
    pub command: String,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (pid {})", self.command, self.pid)
    }
}

/// The lowest and highest value of a setting; `None` where alsa-lib gave none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bounds<T> {
    /// Lowest.
    pub min: Option<T>,
    /// Highest.
    pub max: Option<T>,
}

impl<T: Copy + PartialOrd> Bounds<T> {
    /// Whether `v` lies within both known bounds (an unknown bound does not exclude).
    pub fn contains(&self, v: T) -> bool {
        self.min.is_none_or(|m| v >= m) && self.max.is_none_or(|m| v <= m)
    }
}

/// The rates audiolat tries on every device, to say which it takes.
pub const STANDARD_RATES_HZ: [u32; 13] = [
    8_000, 11_025, 16_000, 22_050, 32_000, 44_100, 48_000, 88_200, 96_000, 176_400, 192_000,
    352_800, 384_000,
];

/// What a PCM device accepts: its whole configuration space, as
/// `aplay --dump-hw-params` prints it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HwCaps {
    /// Every sample format it takes, by alsa-lib's names (`S16_LE`, `FLOAT_LE`, ...).
    pub formats: Vec<String>,
    /// Access modes (`MMAP_INTERLEAVED`, `RW_INTERLEAVED`, `RW_NONINTERLEAVED`, ...).
    pub access: Vec<String>,
    /// Channel counts.
    pub channels: Bounds<u32>,
    /// Sample rates, Hz.
    pub rate_hz: Bounds<u32>,
    /// Whether it takes any rate in its range (`Some(false)`: only some rates, e.g. 44100
    /// and 48000); `None` when its range is one rate or unknown.
    pub rates_continuous: Option<bool>,
    /// Which of [`STANDARD_RATES_HZ`] it takes.
    pub standard_rates_hz: Vec<u32>,
    /// Period sizes, frames.
    pub period_frames: Bounds<u64>,
    /// Buffer sizes, frames.
    pub buffer_frames: Bounds<u64>,
    /// Periods per buffer.
    pub periods: Bounds<u32>,
}

impl HwCaps {
    /// The formats audiolat converts to and from that the device takes, in audiolat's
    /// order of preference ([`SampleFormat::ALL`]).
    pub fn audiolat_formats(&self) -> Vec<SampleFormat> {
        SampleFormat::ALL
            .into_iter()
            .filter(|f| self.formats.iter().any(|n| n == f.alsa_name()))
            .collect()
    }

    /// Whether audiolat can use the device as it is (on `hw:`): it takes one of
    /// audiolat's formats and one of the standard rates audiolat accepts (8 to 384 kHz).
    pub fn usable_by_audiolat(&self) -> bool {
        !self.audiolat_formats().is_empty() && !self.standard_rates_hz.is_empty()
    }
}

/// Whether a device could be opened, and what it accepts when it could.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// Opened and read.
    Caps(HwCaps),
    /// Every subdevice is in use (EBUSY); the holders found.
    Busy(Vec<Holder>),
    /// It could not be opened or read, with alsa-lib's reason.
    Failed(String),
}

/// One subdevice (a PCM device's independent stream).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subdevice {
    /// Its number (the `S` of `hw:C,D,S`).
    pub index: u32,
    /// Its name (`subdevice #0`).
    pub name: Option<String>,
    /// Its state from `/proc/asound`: `closed`, or the state of the stream that has it
    /// open (`RUNNING`, `PREPARED`, `SETUP`, ...); `None` where the kernel does not say.
    pub state: Option<String>,
    /// Who has it open.
    pub holder: Option<Holder>,
}

impl Subdevice {
    /// Whether a program has it open.
    pub fn in_use(&self) -> bool {
        self.holder.is_some() || self.state.as_deref().is_some_and(|s| s != "closed")
    }
}

/// One direction of a PCM device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PcmStream {
    /// Playback or capture.
    pub direction: PcmDirection,
    /// Subdevices in this direction.
    pub subdevices_count: u32,
    /// Subdevices free to open, as the driver counts them.
    pub subdevices_available: u32,
    /// Each subdevice.
    pub subdevices: Vec<Subdevice>,
    /// What opening the device found.
    pub probe: Probe,
}

impl PcmStream {
    /// The first subdevice no program has open.
    pub fn free_subdevice(&self) -> Option<u32> {
        if self.subdevices.is_empty() {
            return (self.subdevices_available > 0).then_some(0);
        }
        self.subdevices
            .iter()
            .find(|s| !s.in_use())
            .map(|s| s.index)
    }

    /// What the device accepts, when it could be read.
    pub fn caps(&self) -> Option<&HwCaps> {
        match &self.probe {
            Probe::Caps(c) => Some(c),
            _ => None,
        }
    }
}

/// A PCM device of a card.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PcmDevice {
    /// Its number (the `D` of `hw:C,D`).
    pub device: u32,
    /// Its id.
    pub id: Option<String>,
    /// Its name.
    pub name: Option<String>,
    /// Playback, when it plays.
    pub playback: Option<PcmStream>,
    /// Capture, when it records.
    pub capture: Option<PcmStream>,
}

impl PcmDevice {
    /// The stream of a direction.
    pub fn stream(&self, direction: PcmDirection) -> Option<&PcmStream> {
        match direction {
            PcmDirection::Playback => self.playback.as_ref(),
            PcmDirection::Capture => self.capture.as_ref(),
        }
    }
}

/// A sound card.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Card {
    /// Its index (`hw:0`).
    pub index: u32,
    /// Its id (`Loopback`: `hw:Loopback` names it too).
    pub id: String,
    /// Its driver (`Loopback`, `Dummy`, `HDA-Intel`, ...).
    pub driver: Option<String>,
    /// Its short name.
    pub name: Option<String>,
    /// Its long name.
    pub long_name: String,
    /// Its PCM devices.
    pub devices: Vec<PcmDevice>,
    /// Why its control device could not be read, when it could not.
    pub error: Option<String>,
}

/// A PCM name alsa-lib knows from its configuration (`aplay -L`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameHint {
    /// The name to open (`default`, `plughw:CARD=Loopback,DEV=0`, `jack`, ...).
    pub name: String,
    /// The first line of its description.
    pub description: Option<String>,
    /// The direction it is limited to; `None`: both.
    pub direction: Option<PcmDirection>,
}

/// Everything ALSA offers here.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AlsaInventory {
    /// Sound cards, by index.
    pub cards: Vec<Card>,
    /// PCM names from alsa-lib's configuration.
    pub names: Vec<NameHint>,
    /// Why the PCM names could not be listed, when they could not.
    pub names_error: Option<String>,
}

impl AlsaInventory {
    /// Whether alsa-lib knows a PCM of this name (`jack`, `pulse`, `pipewire`, ...).
    pub fn knows(&self, name: &str) -> bool {
        self.names.iter().any(|h| h.name == name)
    }
}

/// Cards, their PCM devices and what each accepts, and alsa-lib's PCM names. Each device
/// is opened non-blocking and closed again without being prepared: nothing plays.
pub fn inventory() -> AlsaInventory {
    silence_alsa_lib();
    let cards = alsa::card::Iter::new()
        .filter_map(Result::ok)
        .map(|c| read_card(c.get_index().max(0) as u32))
        .collect();
    let (names, names_error) = match name_hints() {
        Ok(n) => (n, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    AlsaInventory {
        cards,
        names,
        names_error,
    }
}

fn read_card(index: u32) -> Card {
    let card = alsa::card::Card::new(index as i32);
    let mut out = Card {
        index,
        id: index.to_string(),
        driver: None,
        name: card.get_name().ok(),
        long_name: card.get_longname().unwrap_or_default(),
        devices: Vec::new(),
        error: None,
    };
    let ctl = match alsa::ctl::Ctl::new(&format!("hw:{index}"), true) {
        Ok(ctl) => ctl,
        Err(e) => {
            out.error = Some(format!("opening its control device hw:{index}: {e}"));
            return out;
        }
    };
    if let Ok(info) = ctl.card_info() {
        if let Ok(id) = info.get_id() {
            out.id = id.to_string();
        }
        out.driver = info.get_driver().ok().map(str::to_string);
        out.name = info.get_name().ok().map(str::to_string).or(out.name);
        if let Ok(l) = info.get_longname() {
            out.long_name = l.to_string();
        }
    }
    for device in alsa::ctl::DeviceIter::new(&ctl) {
        let device = device.max(0) as u32;
        let mut d = PcmDevice {
            device,
            id: None,
            name: None,
            playback: None,
            capture: None,
        };
        for direction in PcmDirection::BOTH {
            let Ok(info) = ctl.pcm_info(device, 0, direction.alsa()) else {
                continue;
            };
            d.id = d.id.or_else(|| info.get_id().ok().map(str::to_string));
            d.name = d.name.or_else(|| info.get_name().ok().map(str::to_string));
            let count = info.get_subdevices_count();
            let subdevices = (0..count)
                .map(|s| {
                    let name = ctl
                        .pcm_info(device, s, direction.alsa())
                        .ok()
                        .and_then(|i| i.get_subdevice_name().ok().map(str::to_string));
                    let status = std::fs::read_to_string(status_path(index, device, s, direction))
                        .ok()
                        .map(|t| parse_pcm_status(&t));
                    Subdevice {
                        index: s,
                        name,
                        state: status.as_ref().and_then(|s| s.state.clone()),
                        holder: status.and_then(|s| s.owner_pid).map(holder_of_pid),
                    }
                })
                .collect();
            let stream = PcmStream {
                direction,
                subdevices_count: count,
                subdevices_available: info.get_subdevices_avail(),
                subdevices,
                // Read below, once every subdevice of the card is known.
                probe: Probe::Failed("not read".into()),
            };
            match direction {
                PcmDirection::Playback => d.playback = Some(stream),
                PcmDirection::Capture => d.capture = Some(stream),
            }
        }
        out.devices.push(d);
    }
    // Subdevices in use anywhere on the card: a free subdevice with the same number may be
    // tied to them (snd-aloop's capture subdevice S takes the format and rate of the
    // playback on S), so what a device accepts is read on another where there is one.
    let mut in_use: Vec<u32> = out
        .devices
        .iter()
        .flat_map(|d| [&d.playback, &d.capture])
        .flatten()
        .flat_map(|s| s.subdevices.iter().filter(|x| x.in_use()).map(|x| x.index))
        .collect();
    in_use.sort_unstable();
    in_use.dedup();
    for d in &mut out.devices {
        for stream in [&mut d.playback, &mut d.capture].into_iter().flatten() {
            stream.probe = probe_device(index, d.device, stream, &in_use);
        }
    }
    out
}

/// Opens `hw:C,D,S` non-blocking on a free subdevice (one whose number is not in use on
/// the card where there is one), reads what it accepts and closes it.
fn probe_device(card: u32, device: u32, stream: &PcmStream, in_use_on_card: &[u32]) -> Probe {
    let direction = stream.direction;
    let mut free: Vec<u32> = stream
        .subdevices
        .iter()
        .filter(|s| !s.in_use())
        .map(|s| s.index)
        .collect();
    free.sort_by_key(|s| (in_use_on_card.contains(s), *s));
    let name = match free.first() {
        Some(s) if stream.subdevices_count > 1 => format!("hw:{card},{device},{s}"),
        _ => format!("hw:{card},{device}"),
    };
    let pcm = match PCM::new(&name, direction.alsa(), true) {
        Ok(pcm) => pcm,
        Err(e) if e.errno() == libc::EBUSY => {
            let mut holders: Vec<Holder> = stream
                .subdevices
                .iter()
                .filter_map(|s| s.holder.clone())
                .collect();
            if holders.is_empty() {
                holders.extend(holder(card, device, direction));
            }
            return Probe::Busy(holders);
        }
        Err(e) => return Probe::Failed(format!("opening {name}: {e}")),
    };
    // Closed when `pcm` drops, never prepared or started.
    let caps = HwParams::any(&pcm).map(|hwp| read_caps(&hwp));
    match caps {
        Ok(caps) => Probe::Caps(caps),
        Err(e) => Probe::Failed(format!("reading what {name} accepts: {e}")),
    }
}

fn read_caps(hwp: &HwParams<'_>) -> HwCaps {
    // Not SND_PCM_FORMAT_UNKNOWN (-1): alsa-lib asserts on a format outside its mask.
    let formats = Format::all()
        .iter()
        .filter(|f| **f as i32 >= 0 && hwp.test_format(**f).is_ok())
        .filter_map(|f| format_name(*f))
        .collect();
    let access = Access::all()
        .iter()
        .filter(|a| hwp.test_access(**a).is_ok())
        .filter_map(|a| access_name(*a))
        .collect();
    let rate_hz = Bounds {
        min: hwp.get_rate_min().ok(),
        max: hwp.get_rate_max().ok(),
    };
    let standard_rates_hz: Vec<u32> = STANDARD_RATES_HZ
        .into_iter()
        .filter(|r| hwp.test_rate(*r).is_ok())
        .collect();
    // A rate that is no standard one, inside the range: a device with a list of rates
    // refuses it, one with a continuous range takes it.
    let rates_continuous = match (rate_hz.min, rate_hz.max) {
        (Some(lo), Some(hi)) if hi > lo => Some(hwp.test_rate(lo + 1).is_ok()),
        _ => None,
    };
    HwCaps {
        formats,
        access,
        channels: Bounds {
            min: hwp.get_channels_min().ok(),
            max: hwp.get_channels_max().ok(),
        },
        rate_hz,
        rates_continuous,
        standard_rates_hz,
        period_frames: Bounds {
            min: hwp.get_period_size_min().ok().map(|v| v as u64),
            max: hwp.get_period_size_max().ok().map(|v| v as u64),
        },
        buffer_frames: Bounds {
            min: hwp.get_buffer_size_min().ok().map(|v| v as u64),
            max: hwp.get_buffer_size_max().ok().map(|v| v as u64),
        },
        periods: Bounds {
            min: hwp.get_periods_min().ok(),
            max: hwp.get_periods_max().ok(),
        },
    }
}

fn c_name(p: *const std::ffi::c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: alsa-lib's name tables hold static NUL-terminated strings.
    Some(
        unsafe { std::ffi::CStr::from_ptr(p) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// alsa-lib's name of a sample format (`S16_LE`), as `aplay --dump-hw-params` prints it.
fn format_name(f: Format) -> Option<String> {
    // SAFETY: returns a static string, or NULL for a value it does not know.
    c_name(unsafe { alsa_sys::snd_pcm_format_name(f as alsa_sys::snd_pcm_format_t) })
}

/// alsa-lib's name of an access mode (`RW_INTERLEAVED`).
fn access_name(a: Access) -> Option<String> {
    // SAFETY: as above.
    c_name(unsafe { alsa_sys::snd_pcm_access_name(a as alsa_sys::snd_pcm_access_t) })
}

fn name_hints() -> Result<Vec<NameHint>, String> {
    let hints = alsa::device_name::HintIter::new_str(None, "pcm")
        .map_err(|e| format!("listing alsa-lib's PCM names: {e}"))?;
    Ok(hints
        .filter_map(|h| {
            Some(NameHint {
                name: h.name?,
                description: h.desc.as_deref().and_then(first_line),
                direction: h.direction.map(|d| match d {
                    Direction::Playback => PcmDirection::Playback,
                    Direction::Capture => PcmDirection::Capture,
                }),
            })
        })
        .collect())
}

fn first_line(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

/// A PCM name split into its parts: `plughw:CARD=Loopback,DEV=1` is plug-in `plughw`,
/// card `Loopback`, device 1; `hw:0,1,2` is card `0`, device 1, subdevice 2.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PcmName {
    /// The plug-in or definition (`hw`, `plughw`, `default`, `jack`, ...).
    pub plugin: String,
    /// The card, by index or id, when the name gives one.
    pub card: Option<String>,
    /// The device, when the name gives one.
    pub device: Option<u32>,
    /// The subdevice, when the name gives one.
    pub subdevice: Option<u32>,
}

/// Splits a PCM name as alsa-lib's configuration reads its arguments: positional
/// (`hw:1,0`) or by key (`hw:CARD=1,DEV=0`, `sysdefault:CARD=Loopback`).
pub fn parse_pcm_name(name: &str) -> PcmName {
    let (plugin, args) = name.split_once(':').unwrap_or((name, ""));
    let mut out = PcmName {
        plugin: plugin.to_string(),
        ..PcmName::default()
    };
    let args = args.trim_matches(|c| c == '{' || c == '}');
    for (i, arg) in args.split(',').filter(|a| !a.is_empty()).enumerate() {
        let (key, value) = match arg.split_once('=') {
            Some((k, v)) => (k.trim().to_ascii_uppercase(), v.trim().trim_matches('"')),
            None => (
                ["CARD", "DEV", "SUBDEV"].get(i).unwrap_or(&"").to_string(),
                arg.trim().trim_matches('"'),
            ),
        };
        match key.as_str() {
            "CARD" => out.card = Some(value.to_string()),
            "DEV" => out.device = value.parse().ok(),
            "SUBDEV" => out.subdevice = value.parse().ok(),
            _ => {}
        }
    }
    out
}

/// A card's index from its index or id (`0`, `Loopback`), when such a card is here.
pub fn card_index(card: &str) -> Option<u32> {
    if let Ok(i) = card.parse::<u32>() {
        return Some(i);
    }
    let name = std::ffi::CString::new(card).ok()?;
    alsa::card::Card::from_str(&name)
        .ok()
        .map(|c| c.get_index().max(0) as u32)
}

/// What `/proc/asound/cardC/pcmDp/subS/status` says of a subdevice.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PcmStatus {
    /// `closed`, or the open stream's state (`RUNNING`, `PREPARED`, `XRUN`, ...).
    pub state: Option<String>,
    /// The process (thread) that opened it.
    pub owner_pid: Option<u32>,
}

/// Reads a subdevice's `status` file: `closed`, or `state: RUNNING` followed by
/// `owner_pid   : 1234` and the stream's pointers.
pub fn parse_pcm_status(text: &str) -> PcmStatus {
    let mut out = PcmStatus::default();
    for line in text.lines() {
        let line = line.trim();
        if line == "closed" {
            out.state = Some("closed".into());
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        match key.trim() {
            "state" => out.state = Some(value.trim().to_string()),
            "owner_pid" => out.owner_pid = value.trim().parse().ok().filter(|p| *p > 0),
            _ => {}
        }
    }
    out
}

fn status_path(card: u32, device: u32, subdevice: u32, direction: PcmDirection) -> String {
    format!(
        "/proc/asound/card{card}/pcm{device}{}/sub{subdevice}/status",
        direction.letter()
    )
}

/// The process of a thread id (`Tgid` in `/proc/TID/status`) and its command name.
fn holder_of_pid(tid: u32) -> Holder {
    let pid = std::fs::read_to_string(format!("/proc/{tid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Tgid:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(tid);
    let command = std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| c.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    Holder { pid, command }
}

/// Who holds subdevice `subdevice` of PCM device `device` of card `card`: the
/// `owner_pid` of its `/proc/asound` status.
pub fn subdevice_holder(
    card: u32,
    device: u32,
    subdevice: u32,
    direction: PcmDirection,
) -> Option<Holder> {
    let text = std::fs::read_to_string(status_path(card, device, subdevice, direction)).ok()?;
    parse_pcm_status(&text).owner_pid.map(holder_of_pid)
}

/// Who holds a PCM device in a direction: the owner of its first subdevice in use (from
/// `/proc/asound`), or, where the kernel does not say, the first process with
/// `/dev/snd/pcmC{card}D{device}{p|c}` open (only processes this one may inspect).
pub fn holder(card: u32, device: u32, direction: PcmDirection) -> Option<Holder> {
    for subdevice in 0.. {
        let path = status_path(card, device, subdevice, direction);
        let Ok(text) = std::fs::read_to_string(&path) else {
            break;
        };
        if let Some(pid) = parse_pcm_status(&text).owner_pid {
            return Some(holder_of_pid(pid));
        }
    }
    let node = format!("/dev/snd/pcmC{card}D{device}{}", direction.letter());
    let me = std::process::id();
    let procs = std::fs::read_dir("/proc").ok()?;
    for entry in procs.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        let holds = fds
            .flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|t| t.as_os_str() == node.as_str()));
        if holds {
            return Some(holder_of_pid(pid));
        }
    }
    None
}

/// Who holds the device an ALSA PCM name opens, when the name names a card and device
/// (`hw:0,0`, `plughw:Loopback,1,0`, `hw:CARD=Dummy,DEV=0`).
pub fn holder_of_name(name: &str, direction: PcmDirection) -> Option<Holder> {
    let parts = parse_pcm_name(name);
    let card = card_index(parts.card.as_deref()?)?;
    let device = parts.device.unwrap_or(0);
    match parts.subdevice {
        Some(s) => subdevice_holder(card, device, s, direction),
        None => holder(card, device, direction),
    }
}

#[cfg(test)]
mod tests;
