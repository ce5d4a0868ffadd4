//! The native PipeWire backend on a real private PipeWire: playback and capture
//! `pw_stream`s on the null sink and its monitor, cycles at the granted quantum timed by
//! the graph (`now` one quantum apart), an impulse back one quantum later, the data thread
//! SCHED_FIFO, and a clean stop.
//!
//! A test binary of its own: the private server loads PipeWire's libjack into the process
//! (to measure the granted quantum), which then is this process's libjack for good.

#![cfg(feature = "pipewire-native")]

mod common;

use assert_no_alloc::AllocDisabler;
#[global_allocator]
static ALLOCATOR: AllocDisabler = AllocDisabler;

use engine::audio::{Cycle, Io, Processor, StreamInfo};
use engine::backend::{self, BackendSpec, ServerChoice, SweepStep};
use engine::jack::server::ServerMode;
use engine::jack::via_pipewire::SERVER_NAME;
use engine::pipewire::config::SINK_NODE_NAME;
use engine::pipewire::graph::GraphRecorder;
use engine::pipewire::native::NativeSpec;
use engine::rt::Policy;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The machine lock the CLI tests take (a flock shared by every worktree), so another
/// engineer's servers do not disturb this one.
fn machine_lock() -> std::fs::File {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(std::env::temp_dir().join("audiolat-tests.lock"))
        .unwrap();
    // SAFETY: flock on a valid fd.
    assert_eq!(
        unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&f), libc::LOCK_EX) },
        0
    );
    f
}

/// Plays an impulse every 8 cycles and finds it in the input: the loop in frames, from
/// the stream positions. Also checks every cycle's frames and start.
#[derive(Default)]
struct Probe {
    quantum: u32,
    impulse_at: Option<u64>,
    last_start: Option<u64>,
    seen: Arc<Seen>,
}

#[derive(Default)]
struct Seen {
    cycles: AtomicU64,
    wrong_frames: AtomicU64,
    /// Cycles whose start was not one quantum after the previous one (to 1 µs).
    uneven_starts: AtomicU64,
    loops: AtomicU64,
    /// The last loop found, in frames.
    loop_frames: AtomicI64,
    wrong_loops: AtomicU64,
}

impl Processor for Probe {
    fn prepare(&mut self, info: &StreamInfo) {
        self.quantum = info.period_frames;
    }

    fn process(&mut self, cycle: &Cycle, io: &mut Io<'_>) {
        let seen = &self.seen;
        seen.cycles.fetch_add(1, Ordering::Relaxed);
        if cycle.frames != self.quantum {
            seen.wrong_frames.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(last) = self.last_start {
            let step = cycle.nominal_ns as f64 - last as f64;
            if (step - cycle.period_ns).abs() > 1_000.0 {
                seen.uneven_starts.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.last_start = Some(cycle.nominal_ns);
        io.output.fill(0.0);
        if let (Some(at), Some(input)) = (self.impulse_at, io.input) {
            if let Some(k) = input.iter().position(|v| v.abs() > 0.25) {
                let frames = (cycle.first_frame + k as u64) as i64 - at as i64;
                seen.loop_frames.store(frames, Ordering::Relaxed);
                seen.loops.fetch_add(1, Ordering::Relaxed);
                if frames != i64::from(self.quantum) {
                    seen.wrong_loops.fetch_add(1, Ordering::Relaxed);
                }
                self.impulse_at = None;
            }
        }
        if self.impulse_at.is_none() && cycle.index.is_multiple_of(8) {
            io.output[0] = 1.0;
            self.impulse_at = Some(cycle.first_frame);
        }
    }
}

/// The capture latency the JACK API (PipeWire's libjack, which the private server's
/// quantum measurement loaded) reports for `port`.
fn jack_capture_latency(port: &str) -> u32 {
    let client = engine::jack::server::open_client(SERVER_NAME, "latency-reader").unwrap();
    let port = client
        .port_by_name(port)
        .unwrap_or_else(|| panic!("no port {port}"));
    port.get_latency_range(jack::LatencyType::Capture).1
}

/// The profiler's window of cycles.
const WINDOW: Duration = Duration::from_millis(300);

fn spec(capture: bool) -> BackendSpec {
    BackendSpec::Pipewire(NativeSpec {
        server: ServerChoice {
            mode: ServerMode::Pipewire,
            name: None,
            jackd: None,
        },
        rate_hz: None,
        capture,
    })
}

#[test]
fn native_streams_run_at_the_granted_quantum_and_loop_one_quantum() {
    common::require_pipewire_jack();
    let _lock = machine_lock();
    let mut setup = backend::open(&spec(true), Some(256), SweepStep::First).expect("a set-up");
    let server = setup.server().expect("the private PipeWire").info().clone();
    assert_eq!(server.quantum_granted_frames, Some(256), "{server:?}");
    let (mut stream, _) = setup.open_stream().expect("the native streams");
    let info = stream.info().clone();
    assert_eq!(info.backend.name(), "pipewire");
    assert_eq!(info.period_frames, 256, "{info:?}");
    assert_eq!(info.sample_rate_hz, 48_000, "{info:?}");
    // The null sink reports no latency: the stream's delay is 0, like its JACK ports.
    assert_eq!(info.playback_latency_frames, 0, "{info:?}");
    // The capture stream's delay is read (not assumed), and it is what the JACK API says
    // of the same monitor port on the same graph.
    let jack_capture = jack_capture_latency(&format!("{SINK_NODE_NAME}:monitor_FL"));
    assert_eq!(info.capture_latency_frames, Some(jack_capture), "{info:?}");
    // The graph's profiler around the run, following our streams' nodes.
    let env = setup.server().unwrap().pipewire().unwrap().client_env();
    let recorder = GraphRecorder::following(env, WINDOW, Some(info.client_name.clone()));
    let probe = Probe::default();
    let seen = probe.seen.clone();
    stream.start(Box::new(probe)).expect("started");
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen.loops.load(Ordering::Relaxed) < 20 && Instant::now() < deadline {
        // Drain the cycle records, as a probe does.
        while stream.cycles().pop().is_ok() {}
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = stream.status();
    assert!(status.is_healthy(), "{status:?}");
    assert_eq!(
        status.alloc_violations, 0,
        "the process callbacks allocated"
    );
    let cycles = seen.cycles.load(Ordering::Relaxed);
    assert!(cycles > 100, "{cycles} cycles");
    // Cycles whose capture had not arrived are counted (few: same graph cycle).
    let unmatched = status.unmatched_captures.expect("counted with a capture");
    assert!(unmatched * 20 <= cycles, "{unmatched} of {cycles}");
    assert_eq!(
        seen.wrong_frames.load(Ordering::Relaxed),
        0,
        "cycles not of the quantum"
    );
    // The graph's own clock: every cycle's `now` one quantum after the previous one, but
    // for the rare stolen cycle on this VM.
    let uneven = seen.uneven_starts.load(Ordering::Relaxed);
    assert!(
        uneven * 100 <= cycles,
        "{uneven} of {cycles} cycles off the quantum"
    );
    let loops = seen.loops.load(Ordering::Relaxed);
    assert!(loops >= 20, "{loops} impulses came back");
    // The loop through the null sink and its monitor: one quantum, as jack_iodelay says.
    assert_eq!(seen.loop_frames.load(Ordering::Relaxed), 256);
    assert!(seen.wrong_loops.load(Ordering::Relaxed) * 10 <= loops);
    match status.audio_thread {
        Some(Policy::Fifo { priority }) => assert!(priority >= 1, "{priority}"),
        other => panic!("the data thread is not SCHED_FIFO: {other:?}"),
    }
    // The stream ends cleanly; then the server.
    stream.stop();
    drop(stream);
    // Our streams followed the sink: its cycles at the granted quantum are the windows'.
    let record = recorder.finish();
    assert_eq!(record.driver.as_deref(), Some(SINK_NODE_NAME), "{record:?}");
    let last = record.profiler_after.as_ref().expect("a last window");
    let driver = last.driver().expect("a driver");
    assert_eq!(last.followed, Some(driver.id), "{record:?}");
    assert_eq!(driver.quantum_frames, Some(256), "{record:?}");
    let pids = setup.server().unwrap().pipewire().unwrap().info().pids;
    assert!(
        setup.server_mut().unwrap().exited().is_none(),
        "the server died"
    );
    drop(setup);
    let gone = |pid: u32| !std::path::Path::new(&format!("/proc/{pid}")).exists();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !(gone(pids.pipewire) && gone(pids.wireplumber)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        gone(pids.pipewire) && gone(pids.wireplumber),
        "{pids:?} left"
    );
}

/// The private server killed under a running stream: the stream says so (its end
/// reason), and stopping it does not hang.
#[test]
fn a_killed_server_ends_the_stream() {
    common::require_pipewire_jack();
    let _lock = machine_lock();
    let setup = backend::open(&spec(false), None, SweepStep::First).expect("a set-up");
    let (mut stream, _) = setup.open_stream().expect("the native streams");
    assert_eq!(stream.info().period_frames, 1024);
    stream.start(Box::new(Probe::default())).expect("started");
    // No capture stream: nothing to match, nothing counted.
    assert_eq!(stream.status().unmatched_captures, None);
    std::thread::sleep(Duration::from_millis(300));
    let pid = setup
        .server()
        .unwrap()
        .pipewire()
        .unwrap()
        .info()
        .pids
        .pipewire;
    // SAFETY: killing the private server this test started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let deadline = Instant::now() + Duration::from_secs(6);
    let reason = loop {
        if let Some(r) = stream.status().shutdown {
            break r;
        }
        assert!(Instant::now() < deadline, "the stream did not end");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(reason.contains("PipeWire"), "{reason}");
    // Stopping returns (its own wait for the main loop is bounded): a stop still running
    // after a generous minute is a hang, not a slow machine, and ends the test binary
    // (the stream is not `Send`, so the watchdog is the other thread).
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if done_rx.recv_timeout(Duration::from_secs(60)).is_err() {
            eprintln!(
                "HANG: NativeStream::stop did not return within 60 s after the server was killed"
            );
            std::process::abort();
        }
    });
    stream.stop();
    done_tx.send(()).unwrap();
    watchdog.join().unwrap();
}
