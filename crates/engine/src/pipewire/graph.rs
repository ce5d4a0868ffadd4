//! What a PipeWire run records of the graph it ran on: `clock.force-quantum` and
//! `clock.force-rate` before and after the run, the driver node, and the profiler's
//! per-node quantum, rate, errors and the driver's xruns in the run's first and last
//! window of cycles ([`profiler`](super::profiler)).
//!
//! # The contract
//!
//! - [`GraphRecorder::start`] reads the settings (`pw-metadata`), then listens to the
//!   profiler on a thread of its own (never an audio thread) while the run goes: the
//!   graph only cycles while a client runs, so "before" is the first `window` of cycles
//!   of the run and "after" its last window; "before" a key this process forced on a
//!   running PipeWire is the value it found (the user's). [`GraphRecorder::finish`] (called when the
//!   run's stream has stopped) reads the settings again and returns a [`GraphRecord`].
//! - Whatever could not be measured is `None`, with the reason in
//!   [`GraphRecord::problems`]; nothing is invented (a build without the
//!   `pipewire-native` feature has no profiler).
//!
//! Usable by any PipeWire path: the JACK API (`--server pipewire`) and native streams.

pub use super::profile::{NodeProfile, NodeRole, ProfilerSnapshot};
use super::quantum::{read_settings, FORCE_QUANTUM_KEY, FORCE_RATE_KEY};
use std::ffi::OsString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The default window of cycles for "before" and "after".
pub const DEFAULT_WINDOW: Duration = Duration::from_millis(300);

/// The settings `clock.force-quantum` / `clock.force-rate` as read (0: not forced).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ForcedSettings {
    /// `clock.force-quantum` (`None`: not read).
    pub force_quantum: Option<u32>,
    /// `clock.force-rate` (`None`: not read).
    pub force_rate: Option<u32>,
}

/// Reads the forced quantum and rate of the PipeWire `env` reaches; a key not set is 0.
pub fn read_forced(env: &[(&'static str, OsString)]) -> Result<ForcedSettings, String> {
    let settings = read_settings(env).map_err(|e| e.to_string())?;
    let get = |key: &str| {
        settings
            .get(key)
            .map_or(Some(0), |v| v.trim().parse::<u32>().ok())
    };
    Ok(ForcedSettings {
        force_quantum: get(FORCE_QUANTUM_KEY),
        force_rate: get(FORCE_RATE_KEY),
    })
}

/// What a PipeWire run recorded of its graph.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GraphRecord {
    /// The settings before the run.
    pub before: ForcedSettings,
    /// The settings after the run.
    pub after: ForcedSettings,
    /// The driver node of the run's cycles (the profiler's), when seen.
    pub driver: Option<String>,
    /// The profiler's first window of the run's cycles.
    pub profiler_before: Option<ProfilerSnapshot>,
    /// The profiler's last window of the run's cycles.
    pub profiler_after: Option<ProfilerSnapshot>,
    /// Why a part is missing, one line each.
    pub problems: Vec<String>,
}

/// Records a run's graph (see the [module docs](self)).
pub struct GraphRecorder {
    env: Vec<(&'static str, OsString)>,
    before: Result<ForcedSettings, String>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Profiled>>,
}

/// The profiler thread's result: (first window, last window, problem).
type Profiled = (
    Option<ProfilerSnapshot>,
    Option<ProfilerSnapshot>,
    Option<String>,
);

impl GraphRecorder {
    /// Reads the settings and starts listening to the profiler of the PipeWire `env`
    /// reaches (an empty `env`: this process's own environment's), in windows of
    /// `window` of cycles.
    pub fn start(env: Vec<(&'static str, OsString)>, window: Duration) -> GraphRecorder {
        GraphRecorder::following(env, window, None)
    }

    /// [`GraphRecorder::start`], our own nodes being named `ours` (or `ours-…`): the
    /// windows count their driver's cycles, and that driver is the record's.
    pub fn following(
        env: Vec<(&'static str, OsString)>,
        window: Duration,
        ours: Option<String>,
    ) -> GraphRecorder {
        // A quantum or rate this process forced on a running PipeWire: the value before
        // it is the user's (`running::held_previous`).
        let before = read_forced(&env).map(|s| {
            let held = |key| super::running::held_previous(key)?.trim().parse().ok();
            ForcedSettings {
                force_quantum: held(FORCE_QUANTUM_KEY).or(s.force_quantum),
                force_rate: held(FORCE_RATE_KEY).or(s.force_rate),
            }
        });
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (env, stop) = (env.clone(), stop.clone());
            std::thread::Builder::new()
                .name("audiolat-pw-profiler".into())
                .spawn(move || profile(&env, window, ours.as_deref(), &stop))
                .ok()
        };
        GraphRecorder {
            env,
            before,
            stop,
            thread,
        }
    }

    /// Stops listening, reads the settings again and returns the record.
    pub fn finish(mut self) -> GraphRecord {
        self.stop.store(true, Ordering::Relaxed);
        let profiled = self.thread.take().and_then(|t| t.join().ok());
        let mut record = GraphRecord::default();
        match &self.before {
            Ok(s) => record.before = *s,
            Err(e) => record
                .problems
                .push(format!("settings before the run: {e}")),
        }
        match read_forced(&self.env) {
            Ok(s) => record.after = s,
            Err(e) => record.problems.push(format!("settings after the run: {e}")),
        }
        let (first, last, problem) =
            profiled.unwrap_or((None, None, Some("the profiler thread did not run".into())));
        // The run's steady state: its last window's driver.
        record.driver = last
            .as_ref()
            .or(first.as_ref())
            .and_then(|s| s.driver())
            .map(|d| d.name.clone());
        record.profiler_before = first;
        record.profiler_after = last;
        record.problems.extend(problem);
        record
    }
}

impl Drop for GraphRecorder {
    fn drop(&mut self) {
        // Not finished (the run failed): the thread ends at its next turn.
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The profiler thread: the first window of cycles, then rotating windows until
/// stopped; the last window with cycles is "after".
#[cfg(feature = "pipewire-native")]
fn profile(
    env: &[(&'static str, OsString)],
    window: Duration,
    ours: Option<&str>,
    stop: &AtomicBool,
) -> Profiled {
    let mut session = match super::profiler::Session::open(env) {
        Ok(s) => s,
        Err(e) => return (None, None, Some(format!("profiler: {e}"))),
    };
    if let Some(ours) = ours {
        session.follow(ours);
    }
    let (mut first, mut last) = (None, None);
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        session.pump(Duration::from_millis(20));
        // Windows of `window` of graph time (the server sends cycles in batches).
        if session.graph_time() >= window || (stopping && session.events() > 0) {
            let snapshot = session.take();
            // A short window at the end only stands in for a missing one.
            if first.is_none() {
                first = Some(snapshot);
            } else if !stopping || last.is_none() {
                last = Some(snapshot);
            }
        }
        if stopping {
            break;
        }
    }
    let problem = first
        .is_none()
        .then(|| "profiler: no cycle of the graph was seen during the run".to_string());
    (first, last, problem)
}

#[cfg(not(feature = "pipewire-native"))]
fn profile(
    _env: &[(&'static str, OsString)],
    _window: Duration,
    _ours: Option<&str>,
    _stop: &AtomicBool,
) -> Profiled {
    let why = "no profiler: audiolat was built without the pipewire-native feature";
    (None, None, Some(why.into()))
}
