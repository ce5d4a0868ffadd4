//! A run in progress, as a probe reports it while it measures: the content of a live
//! status line (which `report::view::live` words and the binary draws). Not stored.

/// The largest cause of the misses explained so far (`--why`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LiveCulprit {
    /// Its kind (`thread`, `irq`, ...).
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its time over the misses so far, ns.
    pub ns_total: u64,
    /// The misses it took time in.
    pub misses: u64,
}

/// The jitter probe's counters at one instant.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LiveSnapshot {
    /// Cycles done.
    pub cycles: u64,
    /// Cycles planned.
    pub planned: u64,
    /// Last wake-up latency (ns).
    pub last_ns: u64,
    /// Largest wake-up latency so far (ns).
    pub max_ns: u64,
    /// Overflows so far.
    pub overflows: u64,
    /// Would-be under-runs so far.
    pub underruns: u64,
    /// Deadlines skipped so far.
    pub skipped: u64,
    /// With `--why`: the largest culprit so far (`None`: none yet, or not traced).
    pub culprit: Option<LiveCulprit>,
}

/// A live status line's content.
#[derive(Clone, Debug, PartialEq)]
pub enum LiveStatus {
    /// The jitter probe's counters.
    Jitter(LiveSnapshot),
    /// The event probe's.
    Event {
        /// Triggers measured so far.
        measured: u64,
        /// Triggers wanted.
        wanted: u64,
        /// Cycles so far.
        cycles: u64,
        /// Under-runs so far.
        underruns: u64,
        /// With `--why`: the largest culprit so far.
        culprit: Option<LiveCulprit>,
    },
    /// The round-trip probe's.
    Roundtrip {
        /// Windows estimated so far.
        windows: usize,
        /// The last good window's delay (frames).
        last_delay_frames: Option<f64>,
        /// Cycles so far.
        cycles: u64,
        /// Under-runs so far.
        underruns: u64,
        /// With `--why`: the largest culprit so far.
        culprit: Option<LiveCulprit>,
    },
    /// Another probe's, as words after the run's label.
    Text(String),
}
