//! The results model: runs, measurements, events and series (see ARCHITECTURE.md).
//!
//! A **run** is one probe executed in one configuration: where (machine), what (tool
//! version, command line, configuration, load), the real-time settings requested and
//! granted, validity flags and a status. A run has **measurements** (one metric each,
//! with a histogram and its summary), **events** (things that happened at a monotonic
//! time: an overflow, a would-be under-run, a steal spike) and **series** (small raw
//! tables, such as latency against time).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::hist::{LatencyHistogram, Summary};
use crate::id::{GroupId, PlanCellId, RunId};

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Still running (or its process died without closing it).
    Running,
    /// Ran to its end.
    Complete,
    /// Stopped early (Ctrl-C, a server that died): what was measured is kept.
    Interrupted,
    /// Could not measure.
    Failed,
}

impl RunStatus {
    /// The stored spelling.
    pub fn as_str(&self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(s: &str) -> Option<RunStatus> {
        Some(match s {
            "running" => RunStatus::Running,
            "complete" => RunStatus::Complete,
            "interrupted" => RunStatus::Interrupted,
            "failed" => RunStatus::Failed,
            _ => return None,
        })
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for RunStatus {
    type Err = String;

    /// The stored spelling ([`RunStatus::parse`]), refused with the four to choose from.
    fn from_str(s: &str) -> Result<RunStatus, String> {
        RunStatus::parse(s).ok_or_else(|| {
            format!("unknown status '{s}': use running, complete, interrupted or failed")
        })
    }
}

/// The machine a run was made on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Machine {
    /// Host name.
    pub hostname: String,
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -v` (build string, names PREEMPT / PREEMPT_RT / PREEMPT_DYNAMIC).
    pub kernel_version: String,
    /// Preemption model in force (e.g. `PREEMPT_DYNAMIC (full)`, `PREEMPT_RT`).
    pub preemption: String,
    /// CPU model name.
    pub cpu_model: String,
    /// Online CPUs.
    pub cpus_online: usize,
    /// Hypervisor, when virtualised.
    pub virtualization: Option<String>,
    /// Current clocksource.
    pub clocksource: String,
    /// `uname -m` (e.g. `x86_64`); absent in runs stored before it was kept.
    #[serde(default)]
    pub arch: Option<String>,
}

/// The tool that made a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ToolInfo {
    /// audiolat's version.
    pub version: String,
    /// Git commit it was built from, or `unknown`.
    pub git_commit: String,
    /// Cargo profile and optimisation level (e.g. `release (opt-level 3)`).
    pub build_profile: String,
}

/// One metric of a run.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// Probe that measured it.
    pub probe: String,
    /// Metric name, e.g. `wakeup_latency`.
    pub metric: String,
    /// Unit of the values (`ns`).
    pub unit: String,
    /// How it was measured and against which clock.
    pub method: String,
    /// Summary statistics; `None` when nothing was measured (no samples).
    pub summary: Option<Summary>,
    /// The histogram behind the summary, when there is one.
    pub histogram: Option<LatencyHistogram>,
    /// Deadline the values are judged against, if any.
    pub deadline: Option<f64>,
    /// Values that missed the deadline.
    pub misses: Option<u64>,
    /// Anything else worth keeping (JSON object).
    pub detail: Value,
}

impl Measurement {
    /// A measurement summarised from its histogram.
    pub fn from_histogram(
        probe: &str,
        metric: &str,
        method: &str,
        histogram: LatencyHistogram,
    ) -> Measurement {
        Measurement {
            probe: probe.to_string(),
            metric: metric.to_string(),
            unit: "ns".to_string(),
            method: method.to_string(),
            summary: histogram.summary(),
            histogram: Some(histogram),
            deadline: None,
            misses: None,
            detail: Value::Object(Default::default()),
        }
    }

    /// Samples measured (0 when nothing was: then there is no summary).
    pub fn count(&self) -> u64 {
        self.summary.map_or(0, |s| s.count)
    }

    /// Samples above the histogram's bound.
    pub fn overflows(&self) -> u64 {
        self.histogram
            .as_ref()
            .map_or(0, LatencyHistogram::overflows)
    }
}

/// Something that happened during a run, at a CLOCK_MONOTONIC time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// CLOCK_MONOTONIC ns.
    pub mono_ns: u64,
    /// Kind: `overflow`, `underrun`, `steal`, `load_exit`, `interrupted`, ...
    pub kind: String,
    /// Details (JSON object).
    pub detail: Value,
}

/// A small table of raw values (e.g. latency per block of cycles against time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Name, e.g. `wakeup_latency_by_block`.
    pub name: String,
    /// Unit of the values.
    pub unit: String,
    /// Column names.
    pub columns: Vec<String>,
    /// Rows of values. A value that is not a number (NaN, an infinity) is stored as JSON
    /// `null` and read back as NaN.
    #[serde(deserialize_with = "rows_with_nulls")]
    pub rows: Vec<Vec<f64>>,
}

fn rows_with_nulls<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Vec<f64>>, D::Error> {
    let rows: Vec<Vec<Option<f64>>> = serde::Deserialize::deserialize(d)?;
    Ok(nulls_to_nan(rows))
}

/// Series rows as stored: `null` (a value that was not a number) becomes NaN.
pub(crate) fn nulls_to_nan(rows: Vec<Vec<Option<f64>>>) -> Vec<Vec<f64>> {
    rows.into_iter()
        .map(|r| r.into_iter().map(|v| v.unwrap_or(f64::NAN)).collect())
        .collect()
}

/// A group of runs as stored: one suite, one sweep, one plan run.
#[derive(Debug, Clone, Serialize)]
pub struct GroupRecord {
    /// Group id.
    pub id: GroupId,
    /// What made it: `suite`, `event`, `roundtrip`, `experiment`, `plan`.
    pub kind: String,
    /// Status.
    pub status: RunStatus,
    /// Start, RFC 3339 UTC.
    pub started_at: String,
    /// End, RFC 3339 UTC.
    pub ended_at: Option<String>,
    /// The command line that made it.
    pub command_line: String,
    /// What the group is (a plan run keeps its plan here).
    pub detail: Value,
}

/// A cell of a plan run, before it is stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NewPlanCell {
    /// Position in the run order.
    pub seq: i64,
    /// The cell's identity in its plan: its axis labels (and repeat), e.g.
    /// `backend=alsa buffer=128/64 repeat=1`.
    pub key: String,
    /// Axis name -> the label of its value (JSON object).
    pub axes: Value,
    /// The arguments the cell runs with (after the binary).
    pub argv: Vec<String>,
    /// The build profile whose binary runs it (`current` for the running one).
    pub profile: String,
}

/// A cell of a plan run as stored.
#[derive(Debug, Clone, Serialize)]
pub struct PlanCell {
    /// Cell id.
    pub id: PlanCellId,
    /// The plan run (group).
    pub group_id: GroupId,
    /// Position in the run order.
    pub seq: i64,
    /// Identity in its plan.
    pub key: String,
    /// Axis name -> label.
    pub axes: Value,
    /// Arguments.
    pub argv: Vec<String>,
    /// Build profile.
    pub profile: String,
    /// `None` while pending; then the status of its run (or `failed`).
    pub status: Option<RunStatus>,
    /// The run that measured it (the latest attempt's).
    pub run_id: Option<RunId>,
    /// How many times it was started.
    pub attempts: i64,
    /// Why it failed, when it made no run.
    pub error: Option<String>,
}

/// A measurement as stored.
#[derive(Debug, Clone)]
pub struct MeasurementRecord {
    /// Measurement id.
    pub id: i64,
    /// Run id.
    pub run_id: RunId,
    /// The measurement.
    pub measurement: Measurement,
}

/// A doctor verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Fine for real-time audio.
    Ok,
    /// Works, but costs latency or reliability.
    Warn,
    /// Stands in the way of real-time audio.
    Fail,
}

impl Verdict {
    /// `ok`, `warn` or `fail`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Warn => "warn",
            Verdict::Fail => "fail",
        }
    }
}

/// One finding of `audiolat doctor`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable identifier, e.g. `kernel.preemption`.
    pub check: String,
    /// The verdict.
    pub verdict: Verdict,
    /// What was observed.
    pub value: String,
    /// Why it matters (empty when it does not).
    pub detail: String,
    /// What to do about it (empty when nothing needs doing).
    pub fix: String,
}

/// Formats a `SystemTime` as RFC 3339 UTC with milliseconds.
pub fn rfc3339_utc(time: std::time::SystemTime) -> String {
    let d = time
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since the epoch (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// Seconds since the epoch of a time [`rfc3339_utc`] wrote (`None` for another text).
pub fn epoch_of_rfc3339(text: &str) -> Option<f64> {
    let num = |r: std::ops::Range<usize>| text.get(r)?.parse::<i64>().ok();
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[10] != b'T' || !text.ends_with('Z') {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, min) = (num(11..13)?, num(14..16)?);
    let sec: f64 = text.get(17..text.len() - 1)?.parse().ok()?;
    // Days since the epoch of a civil date (Howard Hinnant's algorithm).
    let y = year - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + hour * 3600 + min * 60) as f64 + sec)
}

/// A time as RFC 2822 in UTC (`Tue, 24 Nov 2026 21:40:08 +0000`, as cyclictest writes
/// its start and end), from seconds since the epoch.
pub fn rfc2822_utc(epoch_s: f64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(epoch_s.max(0.0));
    let iso = rfc3339_utc(t);
    let days = (epoch_s.max(0.0) as i64).div_euclid(86_400);
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month: usize = iso[5..7].parse().unwrap_or(1);
    format!(
        "{}, {} {} {} {} +0000",
        WEEKDAYS[days.rem_euclid(7) as usize],
        &iso[8..10],
        MONTHS[month - 1],
        &iso[0..4],
        &iso[11..19]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn rfc3339_reads_back_and_rfc2822_names_the_weekday() {
        let t = UNIX_EPOCH + Duration::from_millis(1_795_988_408_387);
        let text = rfc3339_utc(t);
        assert_eq!(text, "2026-11-29T21:40:08.387Z");
        assert!((epoch_of_rfc3339(&text).unwrap() - 1_795_988_408.387).abs() < 1e-6);
        assert!(
            (epoch_of_rfc3339("2000-02-29T00:00:00.123Z").unwrap() - 951_782_400.123).abs() < 1e-6
        );
        assert_eq!(epoch_of_rfc3339("yesterday"), None);
        assert_eq!(
            rfc2822_utc(1_795_988_408.387),
            "Sun, 29 Nov 2026 21:40:08 +0000"
        );
        assert_eq!(
            rfc2822_utc(951_782_400.0),
            "Tue, 29 Feb 2000 00:00:00 +0000"
        );
    }

    #[test]
    fn a_status_parses_its_stored_spelling() {
        assert_eq!("interrupted".parse(), Ok(RunStatus::Interrupted));
        assert_eq!(
            "done".parse::<RunStatus>(),
            Err("unknown status 'done': use running, complete, interrupted or failed".into())
        );
    }

    #[test]
    fn rfc3339_known_instants() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(951_782_400_123); // leap day 2000
        assert_eq!(rfc3339_utc(t), "2000-02-29T00:00:00.123Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_316_400);
        assert_eq!(rfc3339_utc(t), "2026-11-22T03:00:00.000Z");
    }

    #[test]
    fn status_spellings_round_trip() {
        for s in [
            RunStatus::Running,
            RunStatus::Complete,
            RunStatus::Interrupted,
            RunStatus::Failed,
        ] {
            assert_eq!(RunStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(RunStatus::parse("bogus"), None);
    }
}

/// One trigger of the `event` probe: when it happened, where its note landed in the
/// stream, and the latency the backend's timing model gives (and a loopback capture
/// measured, when there was one). Times are CLOCK_MONOTONIC ns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TriggerRow {
    /// Trigger number in the run, from 0.
    pub seq: u64,
    /// `timer`, `key` or `midi`.
    pub source: String,
    /// When the trigger happened.
    pub trigger_ns: u64,
    /// Stream position of the note's first frame.
    pub note_frame: u64,
    /// Frame offset of the note inside its cycle.
    pub offset_frames: u32,
    /// Number of the cycle that rendered the note.
    pub cycle: u64,
    /// When the note's first frame reaches the DAC, by the timing model; `None` when the
    /// rendering cycle's start is not known (see `timing`).
    pub dac_ns: Option<u64>,
    /// `dac_ns - trigger_ns`; `None` when the cycle's start is not known.
    pub latency_ns: Option<i64>,
    /// From the trigger to the note's frame position in the stream (the wait for the next
    /// cycle plus the frame offset): `latency_ns - buffer_ns`; `None` when the cycle's
    /// start is not known.
    pub wait_ns: Option<i64>,
    /// How late the callback that rendered the note started after its cycle's start
    /// (scheduling lateness; already inside `wait_ns`'s cycle, not added to it); `None`
    /// when the cycle's start is not known.
    pub lateness_ns: Option<i64>,
    /// The playback latency the backend reports, in ns.
    pub buffer_ns: i64,
    /// Fixed policy only: the trigger reached the audio thread after its frame had
    /// passed, so the note started at offset 0 of the first cycle that saw it.
    pub late: bool,
    /// The callback that rendered the note started after its cycle's deadline (the next
    /// cycle's start, when the server takes the buffer): the note could not sound at its
    /// modelled time (an under-run hit it). Such rows are kept but left out of the
    /// latency statistics.
    pub missed: bool,
    /// Latency measured from the loopback capture's onset, when there is one.
    pub measured_ns: Option<i64>,
    /// Under-runs (server xruns plus skipped cycles) seen before this trigger's note.
    pub underruns_before: u64,
    /// Where the rendering cycle's start came from: `backend` (the backend's own, JACK's
    /// where it agreed with the callbacks), `callbacks` (audiolat's estimate from the
    /// callback times, where JACK's did not agree), `unknown` (just after a
    /// discontinuity such as an xrun: the timing figures are absent and the row is left
    /// out of the figures, like a missed one; `missed` is true only when the rendering
    /// callback started more than a period after the stream's phase predicted, i.e. the
    /// under-run itself) or `unchecked` (stored
    /// before audiolat checked the backend's start).
    pub timing: String,
}

impl TriggerRow {
    /// The note could sound at its modelled time and its timing is known: the rows
    /// every latency figure is over.
    pub fn sounded(&self) -> bool {
        !self.missed && self.latency_ns.is_some()
    }

    /// The rendering cycle's start is not known (see `timing`) and the note is not
    /// known to have missed its deadline either: the two reasons a note is left out of
    /// the figures are counted apart.
    pub fn timing_unknown(&self) -> bool {
        self.latency_ns.is_none() && !self.missed
    }
}

/// What a caller of `Store::open_recovering` keeps of a run a dead process left
/// `running`, made only of what the run stored (its configuration, its last checkpoint,
/// its rows): measurements to store (none: what it stored stays), and the result and
/// validity flags those hold (`null`: the stored ones stay). What it did not store stays
/// out, for the renderers to show as unknown.
#[derive(Debug, Clone, Default)]
pub struct Recovered {
    /// Measurements to store in place of the run's of the same metrics.
    pub measurements: Vec<Measurement>,
    /// The run's result as its stored parts give it (`null`: keep the stored one).
    pub result: Value,
    /// Validity flags its stored parts give (`null`: keep the stored ones).
    pub flags: Value,
}
