//! The PipeWire profiler read natively on a real private PipeWire, checked against the
//! quantum the graph was measured to run (a JACK client's `nframes`) and the clients
//! known to run; the graph recorder's settings against `pw-metadata`. Requires PipeWire
//! and pipewire-jack (scripts/install-deps).
//!
//! A test binary of its own: it loads PipeWire's libjack for good.

mod common;

use engine::jack::via_pipewire::SERVER_NAME;
use engine::pipewire::config::SINK_NODE_NAME;
use engine::pipewire::graph::{GraphRecorder, NodeRole};
use engine::pipewire::profiler::Session;
use engine::pipewire::profiler::{sample, ProfilerError};
use engine::pipewire::quantum::ForcedQuantum;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A JACK client that, when asked, sleeps far longer than a quantum in its process
/// callback (an overrun), and counts the xruns its server tells it of.
#[derive(Default)]
struct Overrun {
    /// Overruns asked for and not yet made.
    asked: AtomicU64,
    /// Overruns made.
    made: AtomicU64,
    /// The JACK xrun callbacks received.
    xrun_callbacks: AtomicU64,
}

/// How long an overrunning cycle sleeps: 15 quanta of 128 frames at 48 kHz.
const OVERRUN: Duration = Duration::from_millis(40);

struct OverrunningClient(Arc<Overrun>);

impl jack::ProcessHandler for OverrunningClient {
    fn process(&mut self, _: &jack::Client, _: &jack::ProcessScope) -> jack::Control {
        let o = &self.0;
        if o.asked.load(Ordering::Relaxed) > 0 {
            o.asked.fetch_sub(1, Ordering::Relaxed);
            // The point of this client: miss the graph's deadline.
            std::thread::sleep(OVERRUN);
            o.made.fetch_add(1, Ordering::Relaxed);
        }
        jack::Control::Continue
    }
}

struct XrunCounter(Arc<Overrun>);

impl jack::NotificationHandler for XrunCounter {
    fn xrun(&mut self, _: &jack::Client) -> jack::Control {
        self.0.xrun_callbacks.fetch_add(1, Ordering::Relaxed);
        jack::Control::Continue
    }
}

/// Pumps `session` until `done` (at most 10 s, a hang otherwise).
fn pump_until(session: &mut Session, what: &str, mut done: impl FnMut(&Session) -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    while !done(session) {
        assert!(Instant::now() < deadline, "hung waiting for {what}");
        session.pump(Duration::from_millis(20));
    }
}

/// Provokes `OVERRUNS` overruns of the running client (a quantum of 128) and checks the
/// profiler's counts against them: the follower's errors (pw-top's ERR) rise by at least
/// the cycles each overrun spans, less one (measured on 0.3.65: 120 errors for 4
/// overruns of 15 quanta, about two per cycle spanned; none in the window before). The
/// driver's xrun count is checked against the JACK client's own xrun callbacks
/// (PipeWire's libjack calls it when the driver's count changed: the same counter read
/// another way): 0.3.65's null sink counts no xrun for a late follower (it keeps its
/// timer and skips the follower), so both stay 0, and neither may rise without the other.
fn check_provoked_xruns(env: &[(&'static str, std::ffi::OsString)], overrun: &Overrun) {
    const OVERRUNS: u64 = 4;
    let mut session = Session::open(env).expect("the profiler");
    pump_until(&mut session, "a first window", |s| s.graph_time() >= WINDOW);
    let before = session.take();
    let xruns_before = before.driver().and_then(|d| d.xruns).expect("xruns");
    let callbacks_before = overrun.xrun_callbacks.load(Ordering::Relaxed);
    for n in 1..=OVERRUNS {
        overrun.asked.fetch_add(1, Ordering::Relaxed);
        pump_until(&mut session, "an overrun", |_| {
            overrun.made.load(Ordering::Relaxed) >= n
        });
        // Ten quanta of normal cycles between two overruns.
        let next = session.graph_time() + Duration::from_millis(30);
        pump_until(&mut session, "cycles after an overrun", |s| {
            s.graph_time() >= next
        });
    }
    pump_until(&mut session, "a last window", |s| s.graph_time() >= WINDOW);
    let after = session.take();
    let driver = after.driver().expect("a driver");
    let xruns = driver.xruns.expect("xruns") - xruns_before;
    let errors: u64 = after
        .nodes
        .iter()
        .filter(|n| n.role == NodeRole::Follower)
        .map(|n| n.errors)
        .sum();
    let callbacks = overrun.xrun_callbacks.load(Ordering::Relaxed) - callbacks_before;
    let spanned = (OVERRUN.as_secs_f64() * 48_000.0 / 128.0).floor() as u64;
    assert!(
        errors >= OVERRUNS * (spanned - 1),
        "{errors} follower errors for {OVERRUNS} overruns of {spanned} quanta: {before:?} {after:?}"
    );
    assert!(
        callbacks <= xruns && (xruns == 0) == (callbacks == 0),
        "{callbacks} JACK xrun callbacks against the driver's {xruns} xruns: {after:?}"
    );
}

const TIMEOUT: Duration = Duration::from_secs(10);
const WINDOW: Duration = Duration::from_millis(300);

/// One test: one private PipeWire, one libjack for the process.
#[test]
fn the_profiler_sees_the_granted_quantum_and_the_running_client() {
    common::require_pipewire_jack();
    let (server, info) = engine::jack::via_pipewire::start(None, Some(256), TIMEOUT).unwrap();
    let granted = u64::from(info.quantum_granted_frames.unwrap());
    // An idle graph runs no cycle: nothing is reported, nothing invented.
    assert!(matches!(
        sample(&server.client_env(), WINDOW),
        Err(ProfilerError::NoCycle(_))
    ));

    let recorder = GraphRecorder::start(server.client_env(), WINDOW);
    let forced = ForcedQuantum::apply(server.client_env(), SERVER_NAME, 128, None, TIMEOUT)
        .expect("force-quantum 128");
    let client = engine::jack::server::open_client(SERVER_NAME, "profiled").unwrap();
    let overrun = Arc::new(Overrun::default());
    let out = client
        .register_port("out", jack::AudioOut::default())
        .unwrap();
    let out = out.name().unwrap();
    let active = client
        .activate_async(
            XrunCounter(overrun.clone()),
            OverrunningClient(overrun.clone()),
        )
        .unwrap();
    let s = sample(&server.client_env(), WINDOW).expect("a running graph");
    assert!(s.events >= 1 && s.window_ms >= 300, "{s:?}");
    let driver = s.driver().expect("a driver");
    assert_eq!(driver.quantum_frames, Some(128), "{s:?}");
    assert_eq!(driver.rate_hz, Some(48_000), "{s:?}");
    assert!(driver.xruns.is_some(), "{s:?}");
    // The running JACK client follows the driver (PipeWire's libjack may name its node
    // after the process's first client).
    let follower = s
        .nodes
        .iter()
        .find(|n| n.role == NodeRole::Follower)
        .unwrap_or_else(|| panic!("the running client: {s:?}"));
    assert!(follower.cycles.abs_diff(driver.cycles) <= 1, "{s:?}");
    // Linked to the sink, so the sink drives it (unlinked, it runs on Dummy-Driver,
    // which counts no xruns).
    active
        .as_client()
        .connect_ports_by_name(&out, &format!("{SINK_NODE_NAME}:playback_FL"))
        .unwrap();
    check_provoked_xruns(&server.client_env(), &overrun);
    std::thread::sleep(Duration::from_millis(700));
    drop(active);
    let record = recorder.finish();
    drop(forced);
    assert_eq!(record.before.force_quantum, Some(0), "{record:?}");
    assert_eq!(record.after.force_quantum, Some(128), "{record:?}");
    assert_eq!(record.before.force_rate, Some(0), "{record:?}");
    // The run's last window: the client linked to the sink, which drives it.
    assert_eq!(record.driver.as_deref(), Some(SINK_NODE_NAME), "{record:?}");
    let first = record.profiler_before.as_ref().expect("a first window");
    let last = record.profiler_after.as_ref().expect("a last window");
    assert_eq!(
        last.driver().unwrap().quantum_frames,
        Some(128),
        "{record:?}"
    );
    let first_quantum = first.driver().unwrap().quantum_frames.unwrap();
    assert!([granted, 128].contains(&first_quantum), "{record:?}");
    assert!(record.problems.is_empty(), "{record:?}");
}
