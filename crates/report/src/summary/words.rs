//! Runs in words and the small readings every part of the answer shares: which run,
//! which load, which backend (and what clocks it), a rate, a percentile, a median. A leaf:
//! it imports no other module of the summary.

use results::records::{JitterConfigRecord, Record, StreamConfigRecord};
use results::stored_backend::StoredBackend;
use results::{RunId, Summary};

use crate::audio::AudioResult;
use crate::data::RunData;

/// A run's id as printed: grouped from 10,000 on, like every count.
pub(crate) fn run_ref(id: RunId) -> String {
    crate::units::fmt_count(id.get().max(0) as u64)
}

/// `run 4`, `runs 4, 5`.
pub(crate) fn runs_ref(ids: &[RunId]) -> String {
    let list: Vec<String> = ids.iter().map(|i| run_ref(*i)).collect();
    match list.len() {
        1 => format!("run {}", list[0]),
        _ => format!("runs {}", list.join(", ")),
    }
}

/// Whether a stored `virtualization` names a hypervisor (not `none`).
pub(super) fn is_virtual(v: &str) -> bool {
    !v.is_empty() && !v.eq_ignore_ascii_case("none")
}

/// The load a run ran under, in words: `idle`, `under cpu load`, `under disk load`.
pub(crate) fn load_words(r: &RunData) -> String {
    let load = r.record.load_record();
    let given = results::records::RunConfig::of(&r.record.config).load;
    let spec = given
        .as_deref()
        .or_else(|| load.as_ref().map(|l| l.spec.as_str()))
        .unwrap_or("none");
    match spec {
        "" | "none" => "idle".into(),
        "io" | "hdd" => "under disk load".into(),
        s => format!("under {s} load"),
    }
}

/// A rate for people: `44.1 kHz`, `48 kHz`.
pub(crate) fn fmt_rate(rate_hz: f64) -> String {
    let k = rate_hz / 1e3;
    if (k - k.round()).abs() < 1e-9 {
        format!("{k:.0} kHz")
    } else {
        format!("{k:.1} kHz")
    }
}

/// The backend an audio run used: `JACK`, `ALSA`, `PipeWire`, `virtual`.
pub(crate) fn short_backend(r: &RunData) -> String {
    StoredBackend::of(&r.record.result, &r.record.config)
        .map_or_else(|| "?".into(), |b| b.display_name().to_string())
}

/// The backend an audio run used, in words, with what clocks it when not a card.
pub(crate) fn backend_words(r: &RunData) -> String {
    match software_clock(r) {
        Some(why) => format!("{} ({why})", short_backend(r)),
        None => short_backend(r),
    }
}

/// A percentile as printed: `>=1.00 s` when it is only the histogram's bound, like
/// [`crate::terminal::fmt_percentile`].
pub(crate) fn fmt_p(s: &Summary, v: f64) -> String {
    crate::terminal::fmt_percentile(s, v, "ns")
}

/// The median of a run's main metric, ns.
pub(super) fn median_ns(r: &RunData, metric: &str) -> Option<f64> {
    r.measurement(metric)?.summary.map(|s| s.p50)
}

pub(super) fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The condition a jitter run ran under, in words.
pub(crate) fn jitter_condition(r: &RunData) -> String {
    let mut c = load_words(r);
    if let Some(b) = jitter_config(r).busy_percent.filter(|b| *b > 0.0) {
        c.push_str(&format!(", {b:.0} % of each period busy"));
    }
    c
}

/// A jitter run's configuration as its record (empty when not stored, or another
/// probe's).
pub(crate) fn jitter_config(r: &RunData) -> JitterConfigRecord {
    JitterConfigRecord::from_json(&r.record.config).unwrap_or_default()
}

/// What clocks an audio run's backend when it is not a sound card (`None`: a card, or
/// not known to be otherwise).
pub(crate) fn software_clock(r: &RunData) -> Option<String> {
    let backend = StoredBackend::of(&r.record.result, &r.record.config)?;
    // The server as it ran, else as described before the run (a killed run's result may
    // have none).
    let ran = AudioResult::of(r.record.probe, &r.record.result)
        .and_then(|res| res.stream().server.clone());
    let (command, name, private, driver) = match ran {
        Some(s) => {
            let driver = s.graph.and_then(|g| g.driver);
            (s.command_line, s.name, s.private, driver)
        }
        None => {
            let c = StreamConfigRecord::from_json(&r.record.config)
                .and_then(|c| c.server)
                .unwrap_or_default();
            (c.command_line, c.name, c.private, None)
        }
    };
    let command = command.as_deref().unwrap_or("");
    // A plan's shared server is stored by name only: audiolat names the ones it starts.
    let name = name.as_deref().unwrap_or("");
    if backend == StoredBackend::Virtual {
        Some("the virtual backend, no device".into())
    } else if command.contains("-d dummy") || name.starts_with("audiolat-dummy") {
        Some("jackd -d dummy".into())
    } else if driver.as_deref() == Some("audiolat-sink")
        || (private == Some(true)
            && (backend == StoredBackend::Pipewire || command.contains("pipewire")))
    {
        Some("a private PipeWire's null sink".into())
    } else {
        None
    }
}
