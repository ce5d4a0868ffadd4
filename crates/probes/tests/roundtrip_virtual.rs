//! The round-trip probe against its ground truth: the virtual card, whose loop is
//! playback latency + capture latency + a cable of known (fractional) delay, exactly.

use assert_no_alloc::AllocDisabler;
use engine::virtual_card::{VirtualConfig, VirtualStream};
use probes::roundtrip::{self, RoundtripConfig, RoundtripEnd, RoundtripOutcome};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

#[global_allocator]
static ALLOCATOR: AllocDisabler = AllocDisabler;

static SERIAL: Mutex<()> = Mutex::new(());

/// One run on a virtual card; a run the host's steal made under-run (a lost click or
/// window is then expected, not a fault of the method) is tried again, up to three times.
fn measure(card: VirtualConfig, config: &RoundtripConfig) -> (RoundtripOutcome, Option<f64>) {
    let mut attempt = 0;
    loop {
        let mut stream = VirtualStream::open(card.clone()).expect("the card opens");
        let expected = stream.expected_roundtrip_frames();
        let stop = AtomicBool::new(false);
        let outcome = roundtrip::run(&mut stream, config, &stop, |_| Ok(())).expect("runs");
        attempt += 1;
        if outcome.xruns + outcome.gaps == 0 || attempt == 3 {
            return (outcome, expected);
        }
    }
}

fn quick() -> RoundtripConfig {
    RoundtripConfig {
        duration_ms: 1500.0,
        impulses: 2,
        warmup_ms: 50.0,
        ..RoundtripConfig::default()
    }
}

#[test]
fn integer_and_fractional_loops_are_found_to_a_twentieth_of_a_frame_with_no_spread() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    for (period, periods, delay) in [
        (128, 2, 0.0),
        (256, 2, 37.0),
        (64, 3, 12.5),
        (128, 2, 100.25),
        (256, 4, 3.75),
    ] {
        let card = VirtualConfig {
            period_frames: period,
            periods,
            loop_delay_frames: Some(delay),
            ..VirtualConfig::default()
        };
        // Continuous mode: a window every 8 periods, overlapping.
        let config = RoundtripConfig {
            every_periods: Some(8),
            ..quick()
        };
        let (o, expected) = measure(card, &config);
        let expected = expected.unwrap();
        let label = format!("{period} x {periods}, cable {delay}");
        assert_eq!(o.end, RoundtripEnd::Complete, "{label}");
        assert_eq!(o.alloc_violations, 0, "{label}: the audio thread allocated");
        assert_eq!(o.reported_frames(), Some(period * periods + period));
        let valid: Vec<f64> = o.valid().map(|e| e.estimate.delay_frames).collect();
        assert!(
            valid.len() >= 5,
            "{label}: {} valid windows of {}",
            valid.len(),
            o.estimates.len()
        );
        for d in &valid {
            assert!(
                (d - expected).abs() <= 0.05,
                "{label}: {d} against {expected}"
            );
        }
        let m = o.measured_frames();
        assert!(
            m.max - m.min < 1e-3,
            "{label}: spread {} frames",
            m.max - m.min
        );
        // A constant path reads no change of delay.
        assert!(
            o.delay_changes().is_empty(),
            "{label}: {:?}",
            o.delay_changes()
        );
        assert!(!o.inverted() && o.clipped() == 0 && !o.no_loop());
        // The study's click count: whole frames, the onset at or just after the delay.
        for i in &o.impulses {
            let f = i.onset.expect("click found").frames as f64;
            assert!(
                f == expected.floor() || f == expected.ceil(),
                "{label}: click {f}"
            );
        }
        assert!(
            o.verdict_line().starts_with("loop found"),
            "{label}: {}",
            o.verdict_line()
        );
    }
}

#[test]
fn an_inserted_delay_adds_exactly_its_frames() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let card = VirtualConfig {
        period_frames: 128,
        loop_delay_frames: Some(10.5),
        ..VirtualConfig::default()
    };
    let (plain, expected) = measure(card.clone(), &quick());
    let inserted = RoundtripConfig {
        insert_delay_frames: 100,
        ..quick()
    };
    let (delayed, _) = measure(card, &inserted);
    let (a, b) = (plain.measured_frames(), delayed.measured_frames());
    assert!(a.count > 0 && b.count > 0);
    assert!((a.mean - expected.unwrap()).abs() <= 0.05, "{a:?}");
    assert!((b.mean - a.mean - 100.0).abs() <= 0.05, "{a:?} then {b:?}");
    for i in &delayed.impulses {
        let f = i.onset.expect("click found").frames;
        assert!(f == 100 + 128 * 3 + 10 || f == 100 + 128 * 3 + 11, "{f}");
    }
}

#[test]
fn no_cable_is_no_loop_found_not_a_number() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let card = VirtualConfig {
        loop_delay_frames: None,
        ..VirtualConfig::default()
    };
    let (o, _) = measure(card, &quick());
    assert_eq!(o.end, RoundtripEnd::NoSignal);
    assert!(o.no_loop());
    assert_eq!(o.measured_frames().count, 0);
    assert_eq!(o.impulse_frames().count, 0);
    assert!(
        o.verdict_line().starts_with("no loop found"),
        "{}",
        o.verdict_line()
    );
}

#[test]
fn polarity_and_a_quiet_loop_are_reported() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let card = VirtualConfig {
        loop_delay_frames: Some(20.0),
        loop_gain: -1.0,
        ..VirtualConfig::default()
    };
    let (o, expected) = measure(card, &quick());
    assert!(o.inverted(), "{}", o.verdict_line());
    assert!(o.verdict_line().contains("inverts polarity"));
    assert!((o.measured_frames().mean - expected.unwrap()).abs() <= 0.05);
    assert!(o.impulses.iter().all(|i| i.onset.unwrap().inverted));
    let card = VirtualConfig {
        loop_delay_frames: Some(20.0),
        loop_gain: 0.005,
        ..VirtualConfig::default()
    };
    let (o, expected) = measure(card, &quick());
    assert!((o.measured_frames().mean - expected.unwrap()).abs() <= 0.05);
    assert!(o.verdict_line().contains("gain is"), "{}", o.verdict_line());
    let card = VirtualConfig {
        loop_delay_frames: Some(20.0),
        loop_gain: 3.0,
        ..VirtualConfig::default()
    };
    // Three times a peak of 0.5 is over full scale: a real converter would clip.
    let (o, _) = measure(card, &quick());
    assert!(o.clipped() > 0);
    assert!(
        o.verdict_line()
            .contains("at full scale: lower the signal's level or the gain in the loop"),
        "{}",
        o.verdict_line()
    );
}

#[test]
fn loops_longer_than_the_default_margin_are_measured_when_the_cable_is_known() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    for delay in [8000.0, 20000.5] {
        let card = VirtualConfig {
            loop_delay_frames: Some(delay),
            ..VirtualConfig::default()
        };
        let config = RoundtripConfig {
            loop_hint_frames: delay,
            ..quick()
        };
        let (o, expected) = measure(card, &config);
        let expected = expected.unwrap();
        let m = o.measured_frames();
        assert!(m.count > 0, "cable {delay}: {}", o.verdict_line());
        assert!(
            (m.mean - expected).abs() <= 0.05,
            "cable {delay}: {m:?} against {expected}"
        );
        assert!(o.impulses.iter().all(|i| {
            let f = i.onset.expect("click found").frames as f64;
            f == expected.floor() || f == expected.ceil()
        }));
    }
}

#[test]
fn a_loop_longer_than_the_tone_period_is_ambiguous_not_a_number() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // 768 frames of reported latency and a 5000-frame cable, with a tone period sized for
    // 800: the loop is longer than the 4096-frame period.
    let card = VirtualConfig {
        loop_delay_frames: Some(5000.0),
        ..VirtualConfig::default()
    };
    let config = RoundtripConfig {
        max_delay_frames: Some(800.0),
        ..quick()
    };
    let (o, _) = measure(card, &config);
    assert_eq!(o.tone_period, 4096);
    assert!(o.ambiguous());
    assert_eq!(o.measured_frames().count, 0);
    assert_eq!(o.impulse_frames().count, 0);
    assert!(
        o.verdict_line().starts_with("ambiguous"),
        "{}",
        o.verdict_line()
    );
    // It names the setting to raise (as the flag and the plan key spell it, `--` aside).
    assert!(
        o.verdict_line()
            .ends_with("measure again with a max-delay above the loop's length"),
        "{}",
        o.verdict_line()
    );
    // A loop of 3768 frames with the same period is below it, and measured.
    let card = VirtualConfig {
        loop_delay_frames: Some(3000.0),
        ..VirtualConfig::default()
    };
    let (o, expected) = measure(card, &config);
    assert!(!o.ambiguous());
    assert!((o.measured_frames().mean - expected.unwrap()).abs() <= 0.05);
}

#[test]
fn a_max_delay_below_the_reported_latency_is_refused() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut stream = VirtualStream::open(VirtualConfig::default()).expect("the card opens");
    let config = RoundtripConfig {
        max_delay_frames: Some(10.0),
        ..quick()
    };
    let stop = AtomicBool::new(false);
    let error = roundtrip::run(&mut stream, &config, &stop, |_| Ok(())).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("shorter than the latency the stream reports"),
        "{error}"
    );
}

#[test]
fn a_run_stopped_before_anything_was_analysed_says_so_not_no_loop() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut stream = VirtualStream::open(VirtualConfig::default()).expect("the card opens");
    let stop = AtomicBool::new(true);
    let o = roundtrip::run(&mut stream, &quick(), &stop, |_| Ok(())).expect("runs");
    assert_eq!(o.end, RoundtripEnd::Interrupted);
    assert!(o.nothing_measured());
    assert!(!o.no_loop());
    assert!(
        o.verdict_line().starts_with("nothing measured"),
        "{}",
        o.verdict_line()
    );
}

/// Checkpoints hand over what was measured so far, as the end's own measurements, and
/// grow through the run.
#[test]
fn checkpoints_carry_the_measurements_so_far_and_grow() {
    let _s = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut stream = VirtualStream::open(VirtualConfig::default()).expect("the card opens");
    let stop = AtomicBool::new(false);
    let config = RoundtripConfig {
        checkpoint_ms: 200.0,
        ..quick()
    };
    let count = |ms: &[results::Measurement], metric: &str| {
        ms.iter()
            .find(|m| m.metric == metric)
            .and_then(|m| m.summary.as_ref())
            .map_or(0, |s| s.count)
    };
    let mut seen = Vec::new();
    let o = roundtrip::run(&mut stream, &config, &stop, |p| {
        if let Some(so_far) = p.checkpoint {
            assert_eq!(so_far.end, RoundtripEnd::Interrupted);
            let ms = so_far.measurements();
            seen.push((count(&ms, "dsp_time"), so_far.estimates.len()));
        }
        Ok(())
    })
    .expect("runs");
    assert!(seen.len() >= 2, "checkpoints: {seen:?}");
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    let (cycles, windows) = *seen.last().unwrap();
    assert!(cycles > 0, "{seen:?}");
    assert!(cycles <= count(&o.measurements(), "dsp_time"), "{seen:?}");
    assert!(windows <= o.estimates.len(), "{seen:?}");
}
