//! The virtual sound card: its loop returns a click exactly where the stream's latencies
//! say, its audio thread does not allocate, and a late application under-runs it.

use assert_no_alloc::AllocDisabler;
use engine::audio::{Backend, Cycle, Io, Processor, StreamInfo};
use engine::virtual_card::{VirtualConfig, VirtualStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[global_allocator]
static ALLOCATOR: AllocDisabler = AllocDisabler;

/// One test at a time: they share two CPUs and the allocation counter.
static SERIAL: Mutex<()> = Mutex::new(());

/// Sends a click at stream position `click_at` and keeps where the input's largest sample
/// was (position and value), and optionally sleeps in one cycle.
struct Click {
    click_at: u64,
    found: Arc<Mutex<(u64, f32)>>,
    best: (u64, f32),
    stall_in_cycle: Option<(u64, Duration)>,
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
        if let Some((index, d)) = self.stall_in_cycle {
            if cycle.index == index {
                std::thread::sleep(d);
            }
        }
    }
}

fn run_click(config: VirtualConfig, click_at: u64, for_ms: u64) -> (VirtualStream, (u64, f32)) {
    let found = Arc::new(Mutex::new((0, 0.0)));
    let mut stream = VirtualStream::open(config).expect("the card opens");
    stream
        .start(Box::new(Click {
            click_at,
            found: found.clone(),
            best: (0, 0.0),
            stall_in_cycle: None,
        }))
        .unwrap();
    std::thread::sleep(Duration::from_millis(for_ms));
    stream.stop();
    let f = *found.lock().unwrap();
    (stream, f)
}

#[test]
fn a_click_comes_back_after_playback_plus_capture_latency_plus_the_cable() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    for (period, periods, delay, gain) in [
        (64, 2, 0.0, 1.0),
        (128, 3, 37.0, -0.5),
        (256, 2, 1000.0, 1.0),
    ] {
        let config = VirtualConfig {
            period_frames: period,
            periods,
            loop_delay_frames: Some(delay),
            loop_gain: gain,
            ..VirtualConfig::default()
        };
        let click_at = 10 * u64::from(period) + 5;
        // A run the host's steal under-ran proves nothing about the loop: up to three
        // tries for a clean one.
        let (stream, (at, value)) = (0..3)
            .map(|_| run_click(config.clone(), click_at, 300))
            .find(|(s, _)| s.status().xruns == 0 && s.status().gaps == 0)
            .expect("a run without under-runs in three tries");
        let expected = stream.expected_roundtrip_frames().unwrap();
        assert_eq!(expected, f64::from(period * periods + period) + delay);
        let status = stream.status();
        assert_eq!(status.alloc_violations, 0, "the audio thread allocated");
        assert!(status.cycles > 20, "{status:?}");
        assert_eq!(
            at,
            click_at + expected as u64,
            "{period}x{periods} loop {delay}"
        );
        assert_eq!(value, 0.5 * gain);
        let info = stream.info();
        assert_eq!(info.backend.name(), "virtual");
        assert_eq!(info.playback_latency_frames, period * periods);
        assert_eq!(info.capture_latency_frames, Some(period));
    }
}

#[test]
fn no_cable_means_silence_at_the_input() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let config = VirtualConfig {
        loop_delay_frames: None,
        ..VirtualConfig::default()
    };
    let (stream, (_, value)) = run_click(config, 1000, 200);
    assert_eq!(value, 0.0);
    assert_eq!(stream.expected_roundtrip_frames(), None);
}

#[test]
fn a_late_application_underruns_and_skips_ahead() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let config = VirtualConfig {
        period_frames: 64,
        periods: 2,
        ..VirtualConfig::default()
    };
    let found = Arc::new(Mutex::new((0, 0.0)));
    let mut stream = VirtualStream::open(config).unwrap();
    stream
        .start(Box::new(Click {
            click_at: u64::MAX,
            found,
            best: (0, 0.0),
            // 20 ms late in cycle 50: the 2.7 ms buffer runs dry.
            stall_in_cycle: Some((50, Duration::from_millis(20))),
        }))
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let mut records = Vec::new();
    while let Ok(r) = stream.cycles().pop() {
        records.push(r);
    }
    let xruns = stream.take_xruns();
    stream.stop();
    let status = stream.status();
    assert!(status.xruns >= 1, "{status:?}");
    assert!(!xruns.is_empty());
    // The cycle after the stall jumped ahead: a gap of whole periods.
    let after = records
        .iter()
        .find(|r| r.cycle.index == 51)
        .expect("cycle 51 ran");
    assert!(after.gap_frames >= 64 * 5, "{after:?}");
    assert_eq!(after.gap_frames % 64, 0);
    assert!(after.cycle.first_frame > 51 * 64);
}

#[test]
fn bad_settings_are_refused_with_the_fix() {
    for (config, needle) in [
        (
            VirtualConfig {
                periods: 1,
                ..VirtualConfig::default()
            },
            "at least two periods",
        ),
        (
            VirtualConfig {
                period_frames: 16,
                ..VirtualConfig::default()
            },
            "32 to 8192",
        ),
        (
            VirtualConfig {
                loop_delay_frames: Some(-1.0),
                ..VirtualConfig::default()
            },
            "0 to 65536",
        ),
    ] {
        let err = VirtualStream::open(config)
            .err()
            .expect("refused")
            .to_string();
        assert!(err.contains(needle), "{err}");
    }
}
