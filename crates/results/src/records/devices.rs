//! `audiolat devices --json`: the survey of sound cards, PCM names, audio servers and
//! suggested set-ups, as `probes::devices` writes it and `report::view::devices` reads it.
//!
//! Every key is always written: `null` for what is not known, never 0 (a `None` here).
//! The survey is printed, not stored, so no field stands for an older release's shape.

use serde::{Deserialize, Serialize};

use super::record::Record;

/// The whole survey.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct DevicesSurvey {
    /// What ALSA has: cards and PCM names.
    pub alsa: AlsaSurvey,
    /// The audio servers.
    pub servers: Servers,
    /// The set-ups that can be measured here.
    pub suggestions: Vec<Suggestion>,
}

impl Record for DevicesSurvey {}

/// ALSA's cards and PCM names.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct AlsaSurvey {
    /// The sound cards.
    pub cards: Vec<Card>,
    /// The PCM names (`aplay -L`).
    pub pcm_names: Vec<PcmName>,
    /// Why the PCM names could not be listed.
    pub pcm_names_error: Option<String>,
}

/// One sound card.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Card {
    /// Its index (`hw:N`).
    pub index: u32,
    /// Its id (`hw:ID`).
    pub id: String,
    /// Its kernel driver.
    pub driver: Option<String>,
    /// Its short name.
    pub name: Option<String>,
    /// Its long name.
    pub long_name: String,
    /// Why it could not be read in full.
    pub error: Option<String>,
    /// Its PCM devices.
    pub pcm: Vec<PcmDevice>,
}

/// One PCM device of a card.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PcmDevice {
    /// Its number (`hw:ID,D`).
    pub device: u32,
    /// Its id.
    pub id: Option<String>,
    /// Its name.
    pub name: Option<String>,
    /// Its playback stream (`None`: it has none).
    pub playback: Option<PcmStream>,
    /// Its capture stream (`None`: it has none).
    pub capture: Option<PcmStream>,
}

/// Whether a stream's capabilities could be read.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum StreamStatus {
    /// Read: what it accepts is known.
    Ok,
    /// Held by another program.
    Busy,
    /// Could not be opened.
    Failed,
}

/// One direction of a PCM device: its subdevices and what it accepts (the capabilities
/// are `None` unless its `status` is `ok`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PcmStream {
    /// Its hardware name (`hw:ID,D`).
    pub name: String,
    /// How many subdevices it has.
    pub subdevices: u32,
    /// How many of them are free.
    pub subdevices_available: u32,
    /// Each subdevice.
    pub subdevice_list: Vec<Subdevice>,
    /// Whether it could be read.
    pub status: StreamStatus,
    /// The processes holding it when busy.
    pub holders: Vec<Holder>,
    /// Why it could not be read.
    pub error: Option<String>,
    /// The sample formats it accepts.
    pub formats: Option<Vec<String>>,
    /// The sample formats among them that audiolat plays.
    pub audiolat_formats: Option<Vec<String>>,
    /// The access types it accepts.
    pub access: Option<Vec<String>>,
    /// Channels.
    pub channels: Option<Bounds>,
    /// Sample rate.
    pub rate_hz: Option<Bounds>,
    /// Whether any rate in `rate_hz` is accepted.
    pub rates_continuous: Option<bool>,
    /// The standard rates it accepts.
    pub standard_rates_hz: Option<Vec<u32>>,
    /// Period in frames.
    pub period_frames: Option<Bounds>,
    /// Buffer in frames.
    pub buffer_frames: Option<Bounds>,
    /// Periods per buffer.
    pub periods: Option<Bounds>,
}

/// A range a stream accepts; either end `None` when not known.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// The least.
    pub min: Option<u64>,
    /// The most.
    pub max: Option<u64>,
}

/// One subdevice of a stream.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Subdevice {
    /// Its number.
    pub subdevice: u32,
    /// Its name.
    pub name: Option<String>,
    /// Its state (`closed`, `RUNNING`, ...).
    pub state: Option<String>,
    /// The process holding it.
    pub holder: Option<Holder>,
}

/// A process holding a device.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Holder {
    /// Its process id.
    pub pid: u32,
    /// Its command.
    pub command: String,
}

/// One ALSA PCM name (`aplay -L`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PcmName {
    /// The name.
    pub name: String,
    /// Its description.
    pub description: Option<String>,
    /// `playback` or `capture`; `None` for both.
    pub direction: Option<String>,
}

/// The audio servers.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Servers {
    /// The JACK servers found.
    pub jack: Vec<JackServer>,
    /// Whether a JACK server runs.
    pub jack_running: bool,
    /// The jackd audiolat can start (`None`: not installed).
    pub jackd: Option<String>,
    /// PipeWire.
    pub pipewire: SocketServer,
    /// PulseAudio.
    pub pulseaudio: SocketServer,
}

/// One JACK server; its figures `None` unless it answers.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct JackServer {
    /// Its name.
    pub name: String,
    /// Its process id.
    pub pid: Option<i32>,
    /// Whether it is the default server.
    pub default: bool,
    /// Whether it answered.
    pub answers: bool,
    /// Its sample rate.
    pub rate_hz: Option<u32>,
    /// Its period.
    pub period_frames: Option<u32>,
    /// How many ports it has.
    pub ports: Option<u64>,
    /// Its physical playback ports.
    pub playback_ports: Option<Vec<String>>,
    /// Its physical capture ports.
    pub capture_ports: Option<Vec<String>>,
    /// Why it could not be asked.
    pub error: Option<String>,
}

/// A server found by its socket (PipeWire, PulseAudio).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct SocketServer {
    /// Whether its process runs.
    pub running: bool,
    /// Its socket for this user.
    pub socket: Option<String>,
}

/// A set-up that can be measured here.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Suggestion {
    /// The probes that measure it.
    pub probes: Vec<String>,
    /// The set-up as the program's flags.
    pub args: String,
    /// What it measures.
    pub what: String,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::records::test_support::round_trips;

    /// A survey with a readable stream, a busy one, a failed one, a JACK server that
    /// answers and one that does not: every key `probes::devices::record` writes.
    #[test]
    fn a_survey_round_trips() {
        let ok = json!({"name": "hw:Dummy,0", "subdevices": 2, "subdevices_available": 2,
            "subdevice_list": [{"subdevice": 0, "name": "subdevice #0", "state": "closed", "holder": null}],
            "status": "ok", "holders": [], "error": null,
            "formats": ["S16_LE", "U8"], "audiolat_formats": ["S16_LE"], "access": ["MMAP_INTERLEAVED"],
            "channels": {"min": 1, "max": 2}, "rate_hz": {"min": 5500, "max": 48000},
            "rates_continuous": true, "standard_rates_hz": [8000, 48000],
            "period_frames": {"min": 1, "max": null}, "buffer_frames": {"min": null, "max": 65536},
            "periods": {"min": 1, "max": 1024}});
        let busy = json!({"name": "hw:Dummy,0", "subdevices": 1, "subdevices_available": 0,
            "subdevice_list": [{"subdevice": 0, "name": null, "state": "RUNNING",
                "holder": {"pid": 42, "command": "jackd"}}],
            "status": "busy", "holders": [{"pid": 42, "command": "jackd"}], "error": null,
            "formats": null, "audiolat_formats": null, "access": null, "channels": null,
            "rate_hz": null, "rates_continuous": null, "standard_rates_hz": null,
            "period_frames": null, "buffer_frames": null, "periods": null});
        let mut failed = busy.clone();
        failed["status"] = json!("failed");
        failed["holders"] = json!([]);
        failed["error"] = json!("Permission denied");
        let survey = json!({
            "alsa": {"cards": [{"index": 0, "id": "Dummy", "driver": "snd_dummy", "name": "Dummy",
                "long_name": "Dummy 1", "error": null, "pcm": [
                    {"device": 0, "id": "Dummy PCM", "name": "Dummy PCM", "playback": ok, "capture": busy},
                    {"device": 1, "id": null, "name": null, "playback": failed, "capture": null}]}],
                "pcm_names": [{"name": "null", "description": "Discard all samples", "direction": null},
                    {"name": "plughw:CARD=Dummy,DEV=0", "description": null, "direction": "playback"}],
                "pcm_names_error": null},
            "servers": {"jack": [
                    {"name": "default", "pid": 7, "default": true, "answers": true, "rate_hz": 48000,
                     "period_frames": 256, "ports": 4, "playback_ports": ["system:playback_1"],
                     "capture_ports": [], "error": null},
                    {"name": "other", "pid": null, "default": false, "answers": false, "rate_hz": null,
                     "period_frames": null, "ports": null, "playback_ports": null,
                     "capture_ports": null, "error": "no answer"}],
                "jack_running": true, "jackd": "/usr/bin/jackd",
                "pipewire": {"running": false, "socket": null},
                "pulseaudio": {"running": true, "socket": "/run/pulse/native"}},
            "suggestions": [{"probes": ["event", "roundtrip"], "args": "--backend virtual",
                "what": "a virtual card"}],
        });
        let r: DevicesSurvey = round_trips(survey);
        let stream = r.alsa.cards[0].pcm[0].playback.as_ref().unwrap();
        assert_eq!(stream.status, StreamStatus::Ok);
        assert_eq!(
            stream.period_frames,
            Some(Bounds {
                min: Some(1),
                max: None
            })
        );
        assert_eq!(r.servers.jack[1].error.as_deref(), Some("no answer"));
    }
}
