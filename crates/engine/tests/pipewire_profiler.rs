//! The PipeWire profiler read natively on a real private PipeWire, checked against the
//! quantum the graph was measured to run (a JACK client's `nframes`) and the clients
//! known to run; the graph recorder's settings against `pw-metadata`. Requires PipeWire
//! and pipewire-jack (scripts/install-deps).
//!
//! A test binary of its own: it loads PipeWire's libjack for good.

mod common;

use engine::jack::via_pipewire::SERVER_NAME;
use engine::pipewire::graph::{GraphRecorder, NodeRole};
use engine::pipewire::profiler::{sample, ProfilerError};
use engine::pipewire::quantum::ForcedQuantum;
use std::time::Duration;

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
    let handler = jack::contrib::ClosureProcessHandler::new(|_, _| jack::Control::Continue);
    let active = client.activate_async((), handler).unwrap();
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
    assert!(follower.errors <= follower.cycles);
    std::thread::sleep(Duration::from_millis(700));
    drop(active);
    let record = recorder.finish();
    drop(forced);
    assert_eq!(record.before.force_quantum, Some(0), "{record:?}");
    assert_eq!(record.after.force_quantum, Some(128), "{record:?}");
    assert_eq!(record.before.force_rate, Some(0), "{record:?}");
    assert_eq!(record.driver.as_deref(), Some(driver.name.as_str()));
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
