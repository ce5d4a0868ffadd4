//! The phases of a command's life, named, where a test can hold the command until a stop
//! signal reaches it: so a hang-up, a Ctrl-C or a `kill` can be sent at a known phase
//! (while a private server starts, while the load starts, while a run is stored, between
//! two runs of a group) without guessing how long each takes.
//!
//! Nothing happens unless the process was started with [`HOLD_ENV`] set (tests only):
//! [`reached`] is then one atomic load. With `AUDIOLAT_TEST_HOLD=storing` (or
//! `storing#2`: its second time) and `AUDIOLAT_TEST_HOLD_FILE=PATH`, the process appends
//! `storing PID` to the file when it reaches the phase, and waits there until its stop
//! flag is raised (60 s at most), then goes on as it would have with the signal come at
//! that moment. A plan's cells inherit the variables: a cell's phase holds the cell, and
//! the plan runner's stop, passed on, releases it.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The phase to hold at, `PHASE` or `PHASE#N` (its N-th time, from 1).
pub const HOLD_ENV: &str = "AUDIOLAT_TEST_HOLD";

/// The file a held process appends `PHASE PID` to.
pub const HOLD_FILE_ENV: &str = "AUDIOLAT_TEST_HOLD_FILE";

/// The named phases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// A measuring command's input is checked; the results database is about to open
    /// (what killed audiolats left is undone first). Nothing was begun.
    StoreOpen,
    /// A private server's process was started (jackd, or PipeWire's daemon) and does not
    /// answer yet.
    ServerStart,
    /// The user's running PipeWire has its quantum (or rate) forced for the run.
    QuantumForced,
    /// A run is about to begin (its load checked): once per run, so `run-start#2` is
    /// between a group's first and second runs.
    RunStart,
    /// A run is begun in the store (and its cells made); its load is not started.
    RunBegun,
    /// A run's load runs; the probe is about to measure.
    LoadStarted,
    /// A network run's namespaces and link are set up; nothing is measured yet.
    Netns,
    /// A network run's reference phase is over; its synth phase is about to start.
    NetSynth,
    /// A run's measuring is over, its load stopped and its cells undone; its end is
    /// about to be stored.
    Storing,
    /// A plan run is about to run a cell (`plan-cell#2`: between its first two cells).
    PlanCell,
    /// `audiolat loop` is about to open its JACK client.
    LoopStart,
}

impl Phase {
    /// The phase's name, as [`HOLD_ENV`] names it.
    pub fn name(self) -> &'static str {
        match self {
            Phase::StoreOpen => "store-open",
            Phase::ServerStart => "server-start",
            Phase::QuantumForced => "quantum-forced",
            Phase::RunStart => "run-start",
            Phase::RunBegun => "run-begun",
            Phase::LoadStarted => "load-started",
            Phase::Netns => "netns",
            Phase::NetSynth => "net-synth",
            Phase::Storing => "storing",
            Phase::PlanCell => "plan-cell",
            Phase::LoopStart => "loop-start",
        }
    }
}

struct Hold {
    phase: String,
    nth: u32,
    seen: AtomicU32,
    file: PathBuf,
    stop: Arc<AtomicBool>,
}

static HOLD: OnceLock<Hold> = OnceLock::new();

/// Arms the hold [`HOLD_ENV`] asks for, released by `stop` (the flag the stop signals
/// raise); nothing when it is unset.
pub fn arm_from_env(stop: &Arc<AtomicBool>) {
    let Some(spec) = std::env::var_os(HOLD_ENV) else {
        return;
    };
    let Some(file) = std::env::var_os(HOLD_FILE_ENV) else {
        return;
    };
    let spec = spec.to_string_lossy();
    let (phase, nth) = match spec.split_once('#') {
        Some((p, n)) => (p, n.parse().unwrap_or(1)),
        None => (&*spec, 1),
    };
    let _ = HOLD.set(Hold {
        phase: phase.to_string(),
        nth,
        seen: AtomicU32::new(0),
        file: file.into(),
        stop: Arc::clone(stop),
    });
}

/// The command reached `phase`: held there when a test asked (see the module docs).
pub fn reached(phase: Phase) {
    let Some(hold) = HOLD.get() else {
        return;
    };
    if hold.phase != phase.name() || hold.seen.fetch_add(1, Ordering::SeqCst) + 1 != hold.nth {
        return;
    }
    let said = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&hold.file)
        .and_then(|mut f| writeln!(f, "{} {}", phase.name(), std::process::id()));
    if said.is_err() {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while !hold.stop.load(Ordering::SeqCst) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
}
