//! The ALSA backend for real, through alsa-lib's `jack` PCM plugin on a private
//! `jackd -d dummy`: playback alone, and full duplex through a software loop.
//! Skipped (with a message) when jackd or the plugin is not installed.

use assert_no_alloc::AllocDisabler;
use engine::alsa::stream::{AlsaConfig, AlsaStream, SampleFormat};
use engine::audio::{Backend, Cycle, Io, Processor, StreamInfo};
use engine::jack::loop_client::JackLoop;
use engine::jack::server::{JackServer, ServerMode, ServerRequest};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[global_allocator]
static ALLOCATOR: AllocDisabler = AllocDisabler;

static SERIAL: Mutex<()> = Mutex::new(());

const PLUGIN: &str = "/usr/lib/x86_64-linux-gnu/alsa-lib/libasound_module_pcm_jack.so";

fn server(tag: &str) -> Option<JackServer> {
    let jackd = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("jackd"))
            .find(|p| p.is_file())
    });
    let Some(jackd) = jackd else {
        eprintln!("skipped: jackd is not installed (apt install jackd2)");
        return None;
    };
    if !std::path::Path::new(PLUGIN).exists() {
        eprintln!(
            "skipped: alsa-lib's jack plugin is not installed (apt install libasound2-plugins)"
        );
        return None;
    }
    Some(
        JackServer::connect(&ServerRequest {
            mode: ServerMode::Dummy,
            name: Some(format!("audiolat-engine-{tag}")),
            rate_hz: Some(48_000),
            period_frames: Some(256),
            jackd: Some(jackd),
            start_timeout: Duration::from_secs(10),
        })
        .expect("private jackd starts"),
    )
}

/// Clicks at a position and keeps where the input's largest sample was.
struct Click {
    click_at: u64,
    found: Arc<Mutex<(u64, f32)>>,
    best: (u64, f32),
    stall_in_cycle: Option<u64>,
}

impl Processor for Click {
    fn prepare(&mut self, _: &StreamInfo) {}
    fn process(&mut self, cycle: &Cycle, io: &mut Io<'_>) {
        for (i, x) in io.output.iter_mut().enumerate() {
            *x = if cycle.first_frame + i as u64 == self.click_at {
                0.5
            } else {
                0.0
            };
        }
        if let Some(input) = io.input {
            for (i, &x) in input.iter().enumerate() {
                if x.abs() > self.best.1.abs() {
                    self.best = (cycle.first_frame + i as u64, x);
                }
            }
        }
        if let Ok(mut f) = self.found.try_lock() {
            *f = self.best;
        }
        if self.stall_in_cycle == Some(cycle.index) {
            std::thread::sleep(Duration::from_millis(60));
        }
    }
}

#[test]
fn playback_through_the_jack_pcm_runs_and_records_what_was_granted() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(server) = server("alsa-play") else {
        return;
    };
    let mut stream = AlsaStream::open(AlsaConfig {
        device: "jack".into(),
        sample_rate_hz: 48_000,
        period_frames: 256,
        periods: 3,
        server: Some(server.info().clone()),
        ..AlsaConfig::default()
    })
    .expect("the jack PCM opens");
    let g = stream.granted().clone();
    assert_eq!(g.format, SampleFormat::F32, "the jack PCM is FLOAT");
    assert_eq!((g.period_frames, g.buffer_frames), (256, 768));
    assert_eq!(
        g.playback_channels, 2,
        "one channel per port of the jack PCM"
    );
    assert_eq!(stream.info().playback_latency_frames, 512);
    stream
        .start(Box::new(Click {
            click_at: u64::MAX,
            found: Arc::default(),
            best: (0, 0.0),
            stall_in_cycle: None,
        }))
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let mut records = Vec::new();
    while let Ok(r) = stream.cycles().pop() {
        records.push(r);
    }
    stream.stop();
    let status = stream.status();
    assert!(status.shutdown.is_none(), "{status:?}");
    assert_eq!(status.alloc_violations, 0, "the audio thread allocated");
    assert!(records.len() > 100, "{} cycles in 1 s", records.len());
    // Cycles follow each other by a period, except after a recovered under-run.
    let steady = records
        .windows(2)
        .filter(|w| w[1].cycle.first_frame == w[0].cycle.first_frame + 256)
        .count();
    assert!(steady * 2 > records.len(), "{steady} of {}", records.len());
    // A callback never starts before its cycle: the jack PCM stamps its status after
    // the wake-up, and the start taken from it is checked against the callback.
    let early: Vec<i64> = records
        .iter()
        .filter_map(|r| r.cycle.checked_lateness_ns())
        .filter(|l| *l < 0)
        .collect();
    assert!(
        early.is_empty(),
        "{} cycles started after their callback: {:?}",
        early.len(),
        &early[..early.len().min(5)]
    );
    drop(server);
}

#[test]
fn full_duplex_through_a_jack_loop_hears_its_click_at_a_fixed_delay() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(server) = server("alsa-loop") else {
        return;
    };
    let lp = JackLoop::start(server.name(), "audiolat-loop", 0).unwrap();
    let definitions = format!(
        "pcm.audiolat_test_loop {{ type jack playback_ports {{ 0 {} }} capture_ports {{ 0 {} }} }}",
        lp.input_port(),
        lp.output_port()
    );
    let mut delays = Vec::new();
    for _ in 0..2 {
        let found = Arc::new(Mutex::new((0, 0.0)));
        let mut stream = AlsaStream::open(AlsaConfig {
            device: "audiolat_test_loop".into(),
            capture_device: Some("audiolat_test_loop".into()),
            sample_rate_hz: 48_000,
            period_frames: 256,
            periods: 2,
            definitions: Some(definitions.clone()),
            ..AlsaConfig::default()
        })
        .expect("the loop PCM opens in full duplex");
        assert_eq!(stream.granted().capture_channels, Some(1));
        let click_at = 256 * 40 + 7;
        stream
            .start(Box::new(Click {
                click_at,
                found: found.clone(),
                best: (0, 0.0),
                stall_in_cycle: None,
            }))
            .unwrap();
        std::thread::sleep(Duration::from_millis(800));
        stream.stop();
        let status = stream.status();
        let (at, value) = *found.lock().unwrap();
        eprintln!(
            "click back {} frames later ({value}); granted {:?}; xruns {}",
            at as i64 - click_at as i64,
            stream.granted(),
            status.xruns
        );
        assert!(status.shutdown.is_none(), "{status:?}");
        assert_eq!(value, 0.5, "the click came back whole");
        if status.xruns == 0 && status.gaps == 0 {
            delays.push(at - click_at);
        }
    }
    assert!(!delays.is_empty(), "two runs under-ran");
    // The loop is the same every time it is opened: a fixed delay.
    assert!(delays.windows(2).all(|w| w[0] == w[1]), "{delays:?}");
    drop(lp);
    drop(server);
}

#[test]
fn a_device_that_does_not_exist_and_a_refused_period_are_clear_errors() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let err = AlsaStream::open(AlsaConfig {
        device: "hw:97".into(),
        ..AlsaConfig::default()
    })
    .err()
    .expect("no such card")
    .to_string();
    assert!(err.contains("does not exist"), "{err}");
    let err = AlsaStream::open(AlsaConfig {
        periods: 1,
        ..AlsaConfig::default()
    })
    .err()
    .expect("one period")
    .to_string();
    assert!(err.contains("at least two periods"), "{err}");
    let Some(server) = server("alsa-bad") else {
        return;
    };
    // The jack PCM runs the server's period only.
    let err = AlsaStream::open(AlsaConfig {
        device: "jack".into(),
        sample_rate_hz: 48_000,
        period_frames: 100,
        server: Some(server.info().clone()),
        ..AlsaConfig::default()
    })
    .err()
    .expect("a period the server does not run")
    .to_string();
    // The library names the problem and what the device takes; the binary adds the
    // flag's words.
    assert!(
        err.contains("refuses a period of 100 frames")
            && err.contains("the nearest it takes is")
            && !err.contains("--"),
        "{err}"
    );
    drop(server);
}

#[test]
fn a_late_application_underruns_the_device_and_the_stream_recovers() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let Some(server) = server("alsa-xrun") else {
        return;
    };
    let mut stream = AlsaStream::open(AlsaConfig {
        device: "jack".into(),
        sample_rate_hz: 48_000,
        period_frames: 256,
        periods: 2,
        server: Some(server.info().clone()),
        ..AlsaConfig::default()
    })
    .unwrap();
    stream
        .start(Box::new(Click {
            click_at: u64::MAX,
            found: Arc::default(),
            best: (0, 0.0),
            // 60 ms late in cycle 50: the 10.7 ms buffer runs dry.
            stall_in_cycle: Some(50),
        }))
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    let mut records = Vec::new();
    while let Ok(r) = stream.cycles().pop() {
        records.push(r);
    }
    let xruns = stream.take_xruns();
    stream.stop();
    let status = stream.status();
    assert!(status.shutdown.is_none(), "{status:?}");
    assert!(status.xruns >= 1 && !xruns.is_empty(), "{status:?}");
    // The stream went on after the recovery, its position past the lost buffer.
    let after = records
        .iter()
        .find(|r| r.cycle.index == 51)
        .expect("cycle 51 ran");
    assert!(after.gap_frames >= 512, "{after:?}");
    assert!(records.len() > 60, "{} cycles", records.len());
    drop(server);
}

/// Fills the output with silence.
struct Silence;

impl Processor for Silence {
    fn prepare(&mut self, _: &StreamInfo) {}
    fn process(&mut self, _: &Cycle, io: &mut Io<'_>) {
        io.output.fill(0.0);
    }
}

/// alsa-lib's `null` PCM has no clock: it takes periods as fast as they come. The stream
/// ends with the reason instead of measuring something that means nothing.
#[test]
fn a_device_without_a_clock_ends_the_stream_with_the_reason() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut stream = AlsaStream::open(AlsaConfig {
        device: "null".into(),
        period_frames: 256,
        ..AlsaConfig::default()
    })
    .expect("the null PCM opens");
    stream.start(Box::new(Silence)).expect("starts");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let why = loop {
        if let Some(why) = stream.status().shutdown {
            break why;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the null PCM ran 10 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    stream.stop();
    assert!(
        why.contains("faster than real time") && why.contains("no clock"),
        "{why}"
    );
    assert_eq!(stream.status().xruns, 0);
}
