//! Real-JACK tests: each starts a private `jackd -d dummy` through `JackServer`.
//! Skipped (with a message) when jackd is not installed.

use assert_no_alloc::AllocDisabler;
use engine::audio::{Backend, Cycle, Io, Processor, StreamInfo};
use engine::jack::client::{JackConfig, JackStream};
use engine::jack::server::{JackServer, ServerMode, ServerRequest};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[global_allocator]
static ALLOCATOR: AllocDisabler = AllocDisabler;

/// One JACK test at a time: they share the machine's two CPUs and the allocation counter.
static SERIAL: Mutex<()> = Mutex::new(());

fn jackd() -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .chain(["/usr/sbin".into(), "/sbin".into()])
            .map(|d| d.join("jackd"))
            .find(|p| p.is_file())
    })
}

fn private_server(tag: &str, period: u32) -> Option<JackServer> {
    let Some(jackd) = jackd() else {
        eprintln!("skipped: jackd is not installed (apt install jackd2)");
        return None;
    };
    let req = ServerRequest {
        mode: ServerMode::Dummy,
        // Stable names: jackd's registry holds eight servers and only reclaims the entry
        // of a killed one for the next server of the same name.
        name: Some(format!("audiolat-engine-{tag}")),
        rate_hz: Some(48_000),
        period_frames: Some(period),
        jackd: Some(jackd),
        start_timeout: Duration::from_secs(10),
    };
    Some(JackServer::connect(&req).expect("private jackd -d dummy starts"))
}

/// Writes a sine, checks the cycle facts it is given, and does things that would
/// allocate if the engine's path allocated.
struct Tone {
    phase: f32,
    frames_seen: Arc<AtomicU64>,
    bad_cycles: Arc<AtomicU64>,
    last: Cycle,
    period: u32,
}

impl Processor for Tone {
    fn prepare(&mut self, info: &StreamInfo) {
        self.period = info.period_frames;
    }
    fn process(&mut self, cycle: &Cycle, io: &mut Io<'_>) {
        for s in io.output.iter_mut() {
            *s = (self.phase * std::f32::consts::TAU).sin() * 0.25;
            self.phase = (self.phase + 440.0 / 48_000.0).fract();
        }
        let continuous =
            cycle.index == 0 || cycle.first_frame == self.last.first_frame + self.period as u64;
        if cycle.frames != self.period || !continuous || io.output.len() != self.period as usize {
            self.bad_cycles.fetch_add(1, Ordering::Relaxed);
        }
        self.frames_seen
            .fetch_add(cycle.frames as u64, Ordering::Relaxed);
        self.last = *cycle;
    }
}

#[test]
fn dummy_server_runs_a_stream_without_allocating_in_the_callback() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(server) = private_server("noalloc", 256) else {
        return;
    };
    let mut stream = JackStream::open(server.info(), JackConfig::default()).expect("stream opens");
    let info = stream.info().clone();
    assert_eq!(info.sample_rate_hz, 48_000);
    assert_eq!(info.period_frames, 256);
    assert_eq!(info.playback_ports.len(), 2, "{:?}", info.playback_ports);
    assert!(
        info.playback_latency_frames >= 256,
        "dummy reports its buffer: {info:?}"
    );
    // jackd2 counts CLOCK_MONOTONIC_RAW: the measured offset must be that clock's.
    let raw_minus_mono = {
        let read = |id| {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: valid clock id and out-pointer.
            unsafe { libc::clock_gettime(id, &mut ts) };
            ts.tv_sec * 1_000_000_000 + ts.tv_nsec
        };
        read(libc::CLOCK_MONOTONIC_RAW) - read(libc::CLOCK_MONOTONIC)
    };
    assert!(
        (info.clock_offset_ns + raw_minus_mono).abs() < 100_000,
        "offset {} ns, CLOCK_MONOTONIC_RAW - CLOCK_MONOTONIC {} ns",
        info.clock_offset_ns,
        raw_minus_mono
    );
    let frames_seen = Arc::new(AtomicU64::new(0));
    let bad_cycles = Arc::new(AtomicU64::new(0));
    let before = assert_no_alloc::violation_count();
    stream
        .start(Box::new(Tone {
            phase: 0.0,
            frames_seen: frames_seen.clone(),
            bad_cycles: bad_cycles.clone(),
            last: Cycle::default(),
            period: 0,
        }))
        .expect("stream starts");
    let mut records = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while std::time::Instant::now() < deadline {
        while let Ok(r) = stream.cycles().pop() {
            records.push(r);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // The engine's timing model against libjack's own conversion: the time of a frame in
    // the latest cycle, read while that cycle is still the current one.
    let mut compared = 0;
    for _ in 0..200 {
        let before = stream.status().cycles;
        let mut latest = None;
        while let Ok(r) = stream.cycles().pop() {
            records.push(r);
            latest = Some(r);
        }
        let Some(r) = latest else {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        };
        let frame = r.cycle.first_frame + 100;
        let libjack = stream.frames_to_time_ns(frame as u32).unwrap() as f64;
        if r.cycle.index + 1 != before || stream.status().cycles != before {
            continue;
        }
        let ours = r.cycle.frame_time_ns(100.0);
        assert!(
            (ours - libjack).abs() < 2_000.0,
            "frame {frame}: engine {ours} ns, libjack {libjack} ns"
        );
        compared += 1;
        if compared == 20 {
            break;
        }
        std::thread::sleep(Duration::from_millis(3));
    }
    assert!(compared >= 5, "only {compared} comparisons with libjack");
    let status = stream.status();
    stream.stop();
    while let Ok(r) = stream.cycles().pop() {
        records.push(r);
    }
    assert_eq!(assert_no_alloc::violation_count(), before);
    assert_eq!(status.alloc_violations, 0, "the process callback allocated");
    assert!(status.is_healthy(), "{status:?}");
    assert!(
        status.cycles > 100,
        "2 s at 48 kHz / 256 is 375 cycles: {status:?}"
    );
    // The dummy driver skips whole periods when its thread wakes late (host steal): the
    // engine must see every such gap, and nothing else may break the frame count.
    let gaps: Vec<(u64, u64)> = records
        .windows(2)
        .filter(|w| w[1].cycle.first_frame != w[0].cycle.first_frame + 256)
        .map(|w| {
            (
                w[1].cycle.first_frame - w[0].cycle.first_frame - 256,
                w[1].gap_frames,
            )
        })
        .collect();
    assert!(
        gaps.iter()
            .all(|(seen, recorded)| seen == recorded && seen % 256 == 0),
        "{gaps:?}"
    );
    assert_eq!(
        bad_cycles.load(Ordering::Relaxed),
        gaps.len() as u64,
        "{gaps:?}"
    );
    assert_eq!(status.gaps, gaps.len() as u64);
    // The nominal cycle times advance by one period: compare medians, never maxima.
    let mut steps: Vec<f64> = records
        .windows(2)
        .map(|w| w[1].cycle.nominal_ns as f64 - w[0].cycle.nominal_ns as f64)
        .collect();
    steps.sort_by(f64::total_cmp);
    let median_step = steps[steps.len() / 2];
    let period_ns = 256.0 / 48_000.0 * 1e9;
    assert!(
        (median_step - period_ns).abs() < period_ns * 0.02,
        "median cycle step {median_step} ns vs period {period_ns} ns"
    );
    let mut lateness: Vec<i64> = records.iter().map(|r| r.cycle.lateness_ns()).collect();
    lateness.sort();
    let median_lateness = lateness[lateness.len() / 2];
    // JACK's cycle start is its DLL's estimate; after the dummy driver skips a period the
    // estimate can trail the callbacks by about a period until it converges again.
    let period_ns = period_ns as i64;
    assert!(
        (-period_ns..2 * period_ns).contains(&median_lateness),
        "the callback runs near its cycle's nominal start: median {median_lateness} ns"
    );
}

struct Panics;
impl Processor for Panics {
    fn prepare(&mut self, _: &StreamInfo) {}
    fn process(&mut self, cycle: &Cycle, io: &mut Io<'_>) {
        io.output.fill(0.5);
        if cycle.index == 10 {
            panic!("synth exploded at cycle 10");
        }
    }
}

#[test]
fn a_panic_in_the_processor_is_caught_and_reported() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(server) = private_server("panic", 128) else {
        return;
    };
    let mut stream = JackStream::open(server.info(), JackConfig::default()).unwrap();
    stream.start(Box::new(Panics)).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while stream.status().panic.is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let status = stream.status();
    assert_eq!(status.panic.as_deref(), Some("synth exploded at cycle 10"));
    std::thread::sleep(Duration::from_millis(100));
    // The stream keeps running (silent) and the server is unharmed.
    assert!(stream.status().cycles > status.cycles);
    assert!(status.shutdown.is_none());
    stream.stop();
}

#[test]
fn a_server_that_dies_is_reported_as_a_shutdown() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(mut server) = private_server("dies", 128) else {
        return;
    };
    let mut stream = JackStream::open(server.info(), JackConfig::default()).unwrap();
    stream
        .start(Box::new(Tone {
            phase: 0.0,
            frames_seen: Arc::default(),
            bad_cycles: Arc::default(),
            last: Cycle::default(),
            period: 0,
        }))
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let pid = server.pid().expect("private server has a pid") as i32;
    // SAFETY: killing the jackd this test started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while stream.status().shutdown.is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(stream.status().shutdown.is_some(), "{:?}", stream.status());
    assert!(server.exited().is_some());
    stream.stop();
}

/// A server that stops calling the client without telling it (here: stopped with SIGSTOP;
/// jackd2 can also leave a client unwoken) ends the stream with the reason, instead of a
/// wait without end.
#[test]
fn a_server_that_stops_calling_is_reported_as_stalled() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(server) = private_server("stalls", 128) else {
        return;
    };
    let mut stream = JackStream::open(server.info(), JackConfig::default()).unwrap();
    stream
        .start(Box::new(Tone {
            phase: 0.0,
            frames_seen: Arc::default(),
            bad_cycles: Arc::default(),
            last: Cycle::default(),
            period: 0,
        }))
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(stream.status().cycles > 0);
    assert!(stream.status().shutdown.is_none(), "{:?}", stream.status());
    let pid = server.pid().expect("private server has a pid") as i32;
    // SAFETY: pausing the jackd this test started; it is resumed below.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let deadline = std::time::Instant::now()
        + Duration::from_millis(engine::jack::client::STALL_AFTER_MS + 5000);
    while stream.status().shutdown.is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = stream.status();
    let reason = status.shutdown.expect("the stall is reported");
    assert!(
        reason.contains("stopped running audiolat's process callback"),
        "{reason}"
    );
    // Stopping must not wait on the silent server (jack_deactivate would never return).
    stream.stop();
    // A new client on the stopped server: an error, not a wait without end.
    let opened = engine::jack::server::open_client_within(
        server.name(),
        "audiolat-late",
        Duration::from_secs(2),
    );
    // SAFETY: resuming it.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let err = opened.expect_err("no client opens on a stopped server");
    assert!(err.to_string().contains("does not answer"), "{err}");
}

#[test]
fn a_busy_server_name_and_a_period_mismatch_are_clear_errors() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(server) = private_server("busy", 128) else {
        return;
    };
    let again = ServerRequest {
        mode: ServerMode::Dummy,
        name: Some(server.name().to_string()),
        rate_hz: None,
        period_frames: None,
        jackd: jackd(),
        start_timeout: Duration::from_secs(5),
    };
    let e = JackServer::connect(&again).unwrap_err().to_string();
    assert!(
        e.contains("already running") && e.contains(server.name()),
        "{e}"
    );
    let external = ServerRequest {
        mode: ServerMode::External,
        period_frames: Some(256),
        ..again.clone()
    };
    let e = JackServer::connect(&external).unwrap_err().to_string();
    assert!(
        e.contains("period 128") && e.contains("period 256 was asked for"),
        "{e}"
    );
    let ok = ServerRequest {
        mode: ServerMode::Auto,
        period_frames: Some(128),
        ..again
    };
    let found = JackServer::connect(&ok).expect("auto finds the running server");
    assert!(!found.info().private);
}

struct Allocates;
impl Processor for Allocates {
    fn prepare(&mut self, _: &StreamInfo) {}
    fn process(&mut self, _: &Cycle, io: &mut Io<'_>) {
        let v = std::hint::black_box(vec![0.0f32; 16]);
        io.output.fill(v[0]);
    }
}

/// The control for the no-allocation test: the guard on the audio thread does see an
/// allocation made in the processor.
#[test]
fn an_allocating_processor_is_caught_by_the_guard() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(server) = private_server("alloc", 128) else {
        return;
    };
    let mut stream = JackStream::open(server.info(), JackConfig::default()).unwrap();
    stream.start(Box::new(Allocates)).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while stream.status().alloc_violations == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        stream.status().alloc_violations > 0,
        "{:?}",
        stream.status()
    );
    stream.stop();
}

/// A private jackd that does not shut down cleanly leaves its semaphores and socket in
/// /dev/shm, which it cannot remove itself: one that does not exit within its grace after
/// SIGTERM (here: stopped with SIGSTOP; a busy machine can hold it off as long) and is
/// killed, and one that died of a signal. Its stop removes them for it, so a clean run
/// leaves no file there (seen under stress-ng: a round trip's semaphores left one run in
/// five, jackd killed after its grace or dead of the SIGTERM itself).
#[test]
fn a_private_server_that_did_not_shut_down_cleanly_leaves_no_files() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let files = || -> Vec<String> {
        std::fs::read_dir("/dev/shm")
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("_audiolat-engine-unclean_"))
            .collect()
    };
    for signal in [libc::SIGSTOP, libc::SIGKILL] {
        let Some(mut server) = private_server("unclean", 128) else {
            return;
        };
        let stream = JackStream::open(server.info(), JackConfig::default()).unwrap();
        drop(stream);
        assert!(!files().is_empty(), "the running server has its files");
        let pid = server.pid().expect("private server has a pid") as i32;
        // SAFETY: signalling the jackd this test started.
        unsafe { libc::kill(pid, signal) };
        if signal == libc::SIGKILL {
            while server.exited().is_none() {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        server.stop();
        assert!(files().is_empty(), "signal {signal}: left {:?}", files());
    }
}
