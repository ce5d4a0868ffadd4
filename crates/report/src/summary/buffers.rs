//! The smallest buffer that held, per audio backend and load: which runs judge a buffer
//! (complete runs only), how a buffer is ranked (by its whole buffer's time, then by the
//! latency it gave), and what is said apart (runs not finished or that failed).

use results::probe_kind::{EVENT, ROUNDTRIP};
use results::records::{Record, RoundtripResultRecord, StreamConfigRecord, StreamRecord};
use results::RunStatus;

use super::model::{BackendAnswer, Buffer, FailedBuffer};
use super::words::{backend_words, load_words, median, median_ns};
use crate::audio::AudioResult;
use crate::data::{ReportData, RunData};

/// An audio run's buffer, when it stored one: on a PipeWire, the quantum and rate its
/// graph was measured to grant (what ran), else the stream's period and rate; the whole
/// buffer from what an ALSA device granted, else the frames from a cycle's output to the
/// device (`buffer_frames` of an event run, the ports' playback latency).
pub(crate) fn buffer_of(r: &RunData) -> Option<Buffer> {
    let cfg = StreamConfigRecord::from_json(&r.record.config).unwrap_or_default();
    let res = AudioResult::of(r.record.probe, &r.record.result);
    let stream = res.as_ref().map(AudioResult::stream);
    stream_buffer(
        &cfg,
        stream.unwrap_or(&StreamRecord::default()),
        res.as_ref().and_then(AudioResult::behind_frames),
    )
}

/// [`buffer_of`] from a run's stored stream, as configured (`cfg`) and as it ran
/// (`res`), with the frames an event run's note plays behind (`behind_frames`): the one
/// definition of an audio run's buffer, which the answer and the event tables both show.
pub(crate) fn stream_buffer(
    cfg: &StreamConfigRecord,
    res: &StreamRecord,
    behind_frames: Option<u64>,
) -> Option<Buffer> {
    let server = cfg.server.as_ref();
    let quantum = server.and_then(|s| s.quantum_granted_frames);
    let period_frames = quantum.or(res.period_frames).or(cfg.period_frames)?;
    let rate_hz = server
        .and_then(|s| s.rate_granted_hz)
        .or(res.rate_hz)
        .or(cfg.rate_hz)
        .map(|r| r as f64)
        .filter(|r| *r > 0.0)?;
    // A PipeWire's ports report 0 playback latency: its sink takes a cycle's output in
    // the next cycle, one quantum (as the event probe's `buffer_frames` counts it).
    let playback = res
        .playback_latency_frames
        .or(cfg.playback_latency_frames)
        .map(|p| match p {
            0 => quantum.unwrap_or(0),
            p => p,
        });
    let buffer_frames = cfg
        .granted
        .as_ref()
        .and_then(|g| g.buffer_frames)
        .or(behind_frames)
        .or(playback)
        .filter(|b| *b >= period_frames);
    Some(Buffer {
        period_frames,
        buffer_frames,
        rate_hz,
    })
}

/// An audio run's under-runs ([`results::Dropouts::underruns`]), when it counted them.
pub(crate) fn underruns_of(r: &RunData) -> Option<u64> {
    r.dropouts().underruns
}

/// An audio run's skipped cycles ([`results::Dropouts::skipped_cycles`]), when it
/// counted them: a dropout apart from the under-runs.
pub(crate) fn skipped_of(r: &RunData) -> Option<u64> {
    r.dropouts().skipped_cycles
}

/// How an audio run judges its buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Complete, no under-run, no skipped cycle, (a round trip) its loop steady.
    Held,
    /// Complete, and it under-ran, skipped cycles or lost its loop.
    NotHeld,
    /// Stopped before its end (interrupted): it judges nothing.
    NotFinished,
    /// Failed (refused, its server gone, its processor panicked): it judges nothing.
    Failed,
}

/// Whether a round trip lost its loop: none found, or a step in its delay.
pub(crate) fn lost_loop(r: &RunData) -> bool {
    let Some(res) = AudioResult::of(r.record.probe, &r.record.result) else {
        return false;
    };
    res.roundtrip().is_some_and(|res| {
        res.no_loop == Some(true)
            || delay_stepped(res)
            || r.measurement("roundtrip").is_none_or(|m| m.count() == 0)
    })
}

/// Whether a round trip's delay changed during the run.
pub(crate) fn delay_stepped(res: &RoundtripResultRecord) -> bool {
    res.delay_changes.as_ref().is_some_and(|d| !d.is_empty())
}

/// What an audio run says of its buffer.
pub(crate) fn outcome(r: &RunData) -> Outcome {
    let res = AudioResult::of(r.record.probe, &r.record.result);
    let end = res.as_ref().and_then(AudioResult::end);
    if r.record.status == RunStatus::Failed
        || end.is_some_and(|e| e.starts_with("server gone") || e.starts_with("processor"))
    {
        return Outcome::Failed;
    }
    if r.record.status != RunStatus::Complete
        || end == Some("interrupted")
        || r.record.flags_record().interrupted == Some(true)
    {
        return Outcome::NotFinished;
    }
    let dropped = underruns_of(r).is_none_or(|n| n > 0) || skipped_of(r).is_some_and(|n| n > 0);
    if dropped || lost_loop(r) {
        Outcome::NotHeld
    } else {
        Outcome::Held
    }
}

/// The run's own latency at its buffer (event latency, else round trip; median), ns.
fn latency_ns(r: &RunData) -> Option<f64> {
    median_ns(r, "event_latency").or_else(|| median_ns(r, "roundtrip"))
}

pub(super) fn backends(data: &ReportData) -> Vec<BackendAnswer> {
    // In a report of several subjects (`report A B`), each subject's runs apart.
    let audio: Vec<(&RunData, Option<&str>)> = data
        .cells
        .iter()
        .filter_map(|c| c.run.as_ref().map(|r| (r, c.source.as_deref())))
        .filter(|(r, _)| [&EVENT, &ROUNDTRIP].contains(&r.record.probe))
        .filter(|(r, _)| buffer_of(r).is_some())
        .collect();
    let key = |r: &RunData, source: Option<&str>| {
        (source.map(str::to_string), backend_words(r), load_words(r))
    };
    let mut keys: Vec<(Option<String>, String, String)> = Vec::new();
    for (r, source) in &audio {
        let k = key(r, *source);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|k| {
            let mine: Vec<&RunData> = audio
                .iter()
                .filter(|(r, source)| key(r, *source) == k)
                .map(|(r, _)| *r)
                .collect();
            let (source, backend, load) = k;
            BackendAnswer {
                source,
                ..one_backend(backend, load, &mine)
            }
        })
        .collect()
}

/// Each run with its buffer, a buffer the run did not store taken from another run at
/// the same period and rate that did (a round trip's loop ports report no playback
/// latency; the event run beside it stores the server's buffer): one setting, one
/// buffer.
fn with_buffers<'a>(runs: &[&'a RunData]) -> Vec<(&'a RunData, Buffer)> {
    let stored: Vec<Buffer> = runs.iter().filter_map(|r| buffer_of(r)).collect();
    runs.iter()
        .filter_map(|r| {
            let mut b = buffer_of(r)?;
            if b.buffer_frames.is_none() {
                b.buffer_frames = stored
                    .iter()
                    .find(|s| s.period_frames == b.period_frames && s.rate_hz == b.rate_hz)
                    .and_then(|s| s.buffer_frames);
            }
            Some((*r, b))
        })
        .collect()
}

/// The settings of `runs`, each once, shortest buffer first.
fn distinct<'a>(runs: impl Iterator<Item = &'a (&'a RunData, Buffer)>) -> Vec<Buffer> {
    let mut out: Vec<Buffer> = Vec::new();
    for (_, b) in runs {
        if !out.contains(b) {
            out.push(*b);
        }
    }
    out.sort_by(|a, b| a.buffer_ns().total_cmp(&b.buffer_ns()));
    out
}

fn one_backend(backend: String, load: String, runs: &[&RunData]) -> BackendAnswer {
    let runs = with_buffers(runs);
    let of = |o: Outcome| runs.iter().filter(move |(r, _)| outcome(r) == o);
    // The shortest buffer in time, then the lowest latency it gave.
    let smallest_held = of(Outcome::Held)
        .map(|(r, b)| (*b, latency_ns(r).unwrap_or(f64::INFINITY)))
        .min_by(|(a, la), (b, lb)| {
            a.buffer_ns()
                .total_cmp(&b.buffer_ns())
                .then(la.total_cmp(lb))
        })
        .map(|(b, _)| b);
    let complete_fails: Vec<&(&RunData, Buffer)> = of(Outcome::NotHeld)
        .filter(|(_, b)| smallest_held.is_none_or(|h| b.buffer_ns() < h.buffer_ns()))
        .collect();
    // The largest that failed, with the most under-runs any of its runs counted.
    let failed_below = complete_fails
        .iter()
        .map(|(_, b)| *b)
        .max_by(|a, b| a.buffer_ns().total_cmp(&b.buffer_ns()))
        .map(|worst| {
            let at_worst = complete_fails.iter().filter(|(_, b)| *b == worst);
            FailedBuffer {
                buffer: worst,
                underruns: at_worst.clone().filter_map(|(r, _)| underruns_of(r)).max(),
                skipped_cycles: at_worst.filter_map(|(r, _)| skipped_of(r)).max(),
            }
        });
    let held_at: Vec<&RunData> = of(Outcome::Held)
        .filter(|(_, b)| Some(*b) == smallest_held)
        .map(|(r, _)| *r)
        .collect();
    let at_held = |metric: &str| {
        median(
            held_at
                .iter()
                .filter_map(|r| median_ns(r, metric))
                .collect(),
        )
    };
    let at_held_clamped = |metric: &str| {
        held_at.iter().any(|r| {
            r.measurement(metric)
                .and_then(|m| m.summary)
                .is_some_and(|s| s.is_clamped(s.p50))
        })
    };
    // Runs that judge the setting: complete ones.
    let judging = of(Outcome::NotHeld)
        .filter(|(_, b)| Some(*b) == smallest_held)
        .count()
        + held_at.len();
    BackendAnswer {
        source: None,
        runs_held_at_smallest: (held_at.len(), judging),
        event_latency_ns: at_held("event_latency"),
        event_latency_clamped: at_held_clamped("event_latency"),
        roundtrip_ns: at_held("roundtrip"),
        roundtrip_clamped: at_held_clamped("roundtrip"),
        backend,
        load,
        smallest_held,
        failed_below,
        not_finished: distinct(of(Outcome::NotFinished)),
        failed_runs: distinct(of(Outcome::Failed)),
        tried: distinct(runs.iter()),
    }
}
