use super::*;

const RATE: u32 = 48_000;
const FRAMES: u32 = 256;

fn period_ns() -> f64 {
    f64::from(FRAMES) * 1e9 / f64::from(RATE)
}

/// A wake-up delay between 8 and 200 us that is 8 us every 8th cycle: the callbacks of
/// a busy machine, with an on-time one now and then.
fn delay_ns(k: u64) -> u64 {
    if k % 8 == 3 {
        8_000
    } else {
        8_000 + (k * 7_919 % 192_000)
    }
}

/// One cycle of a stream whose cycle `k` really starts at `start_ns`, JACK saying
/// `server_ns`.
fn observe(k: u64, start_ns: f64, server_ns: f64, xruns: u64) -> Observed {
    Observed {
        callback_ns: start_ns as u64 + delay_ns(k),
        first_frame: k * u64::from(FRAMES),
        frames: FRAMES,
        xruns,
        server: Some(ServerStart {
            ns: server_ns as u64,
            period_ns: period_ns(),
        }),
    }
}

/// Asserts the checked start lies between the true start and the callback (a callback
/// never starts before its cycle), within the tolerances JACK's start is taken with
/// (it may lie up to [`BEHIND_TOLERANCE_NS`] before the envelope); once the envelope has seen an
/// on-time callback (`tight`: 8 cycles since it started again), within a microsecond of
/// the true start plus that callback's delay (8 us) and the rate allowance over the 8
/// cycles to the next one.
fn assert_physical(c: &CheckedStart, start_ns: f64, o: &Observed, tight: bool, what: &str) {
    let ns = c.ns as f64;
    let behind = match c.source {
        TimingSource::Backend => BEHIND_TOLERANCE_NS,
        TimingSource::Callbacks | TimingSource::OwnCallback => 0.0,
    };
    assert!(
        ns >= start_ns - behind - 1_000.0 && ns <= o.callback_ns as f64 + AHEAD_TOLERANCE_NS,
        "{what}: checked start {ns} ns, true start {start_ns} ns, callback {} ns ({:?})",
        o.callback_ns,
        c.source
    );
    assert!(
        !tight || ns <= start_ns + 9_000.0 + 8.0 * period_ns() * RATE_ALLOWANCE,
        "{what}: checked start {ns} ns, true start {start_ns} ns ({:?})",
        c.source
    );
}

#[test]
fn jacks_start_is_used_while_it_agrees_and_the_envelope_after_an_xrun_phase_jump() {
    let mut check = StartCheck::new(RATE);
    let p = period_ns();
    let t0 = 1e12;
    // 100 cycles in phase; JACK's DLL sits 3 us after the true start (its jitter).
    for k in 0..100u64 {
        let start = t0 + k as f64 * p;
        let o = observe(k, start, start + 3_000.0, 0);
        let c = check.check(o);
        assert!(!check.overran(), "cycle {k}: on time");
        if (k as usize) < SETTLE_CYCLES - 1 {
            assert_eq!(c, None, "cycle {k}: the start is not known yet");
            continue;
        }
        let c = c.expect("settled");
        assert_eq!(c.source, TimingSource::Backend, "cycle {k}");
        assert_eq!(
            c.ns,
            (start + 3_000.0) as u64,
            "cycle {k}: JACK's own start"
        );
        assert_eq!(c.period_ns, p);
    }
    // An xrun: the driver fell 37 ms behind and restarted its schedule from then; the
    // frame count goes on. JACK's frame timer kept its stale prediction of the next
    // wake-up (the old phase) and converges back slowly, overshooting: model it as an
    // error that starts at -37 ms and swings through +10 ms.
    let jump = 37e6;
    let mut backend_after = 0;
    for k in 100..400u64 {
        let start = t0 + k as f64 * p + jump;
        let n = (k - 100) as f64;
        let jack_error = -jump * (-n / 30.0).exp() * (n / 40.0).cos();
        // The server's xrun notification reaches the client a cycle late.
        let xruns = u64::from(k > 100);
        let o = observe(k, start, start + jack_error, xruns);
        let c = check.check(o);
        // The cycle whose callback broke the phase missed its deadline (an under-run),
        // though its own start is not known; the ones after it did not.
        assert_eq!(check.overran(), k == 100, "cycle {k}");
        // The jump is more than a period: the first cycle after it starts again.
        if k < 100 + SETTLE_CYCLES as u64 - 1 {
            assert_eq!(
                c, None,
                "cycle {k}: just after the xrun the start is unknown"
            );
            continue;
        }
        // The notification resets the envelope once more, one cycle later.
        if k < 101 + SETTLE_CYCLES as u64 - 1 {
            assert_eq!(c, None, "cycle {k}: after the notification");
            continue;
        }
        let c = c.expect("settled after the xrun");
        assert_physical(&c, start, &o, k >= 109, &format!("cycle {k}"));
        if jack_error.abs() > 100_000.0 {
            assert_eq!(c.source, TimingSource::Callbacks, "cycle {k}");
        }
        if c.source == TimingSource::Backend {
            backend_after += 1;
        }
    }
    // JACK's start is taken again once it has agreed for a whole window.
    assert!(backend_after > 0, "JACK's converged start is used again");
}

#[test]
fn a_small_phase_jump_a_frame_gap_and_a_late_callback_restart_the_envelope() {
    let mut check = StartCheck::new(RATE);
    let p = period_ns();
    let t0 = 5e11;
    let mut frame_base = 0;
    let mut phase = 0.0;
    let mut xruns = 0;
    for k in 0..300u64 {
        match k {
            // A phase jump of half a period, reported as an xrun.
            60 => {
                phase += p / 2.0;
                xruns += 1;
            }
            // The dummy driver skips two periods: the frame count jumps with the time.
            120 => frame_base += 2,
            // The phase moves 1.5 periods later, unreported: the callback comes more
            // than a period after the envelope's start.
            200 => phase += 1.5 * p,
            _ => {}
        }
        let start = t0 + (k + frame_base) as f64 * p + phase;
        let o = observe(k + frame_base, start, start, xruns);
        let c = check.check(o);
        let since = [0, 60, 120, 200]
            .iter()
            .filter(|&&b| b <= k)
            .map(|&b| k - b)
            .min()
            .unwrap();
        if since < SETTLE_CYCLES as u64 - 1 {
            assert_eq!(c, None, "cycle {k}");
        } else {
            let c = c.unwrap_or_else(|| panic!("cycle {k} settled"));
            assert_physical(&c, start, &o, since >= 8, &format!("cycle {k}"));
        }
    }
}

#[test]
fn without_jacks_start_the_envelope_alone_gives_the_start() {
    let mut check = StartCheck::new(RATE);
    let p = period_ns();
    for k in 0..50u64 {
        let start = 1e10 + k as f64 * p;
        let mut o = observe(k, start, start, 0);
        o.server = None;
        if let Some(c) = check.check(o) {
            assert_eq!(c.source, TimingSource::Callbacks);
            assert_physical(&c, start, &o, k >= 8, &format!("cycle {k}"));
        }
    }
}

/// A sound card's crystal 200 ppm slow (a `jackd -d alsa` stream: its frame clock is the
/// card's), JACK's start right: the envelope follows the card, JACK's start is used
/// throughout, and no cycle goes unknown or reads as an under-run.
#[test]
fn a_card_clock_slower_than_nominal_keeps_the_start_known_and_jacks() {
    let mut check = StartCheck::new(RATE);
    let p = period_ns() * (1.0 + 200e-6);
    let t0 = 1e12;
    for k in 0..20_000u64 {
        let start = t0 + k as f64 * p;
        let o = observe(k, start, start + 3_000.0, 0);
        let c = check.check(o);
        assert!(!check.overran(), "cycle {k}");
        if (k as usize) < SETTLE_CYCLES - 1 {
            continue;
        }
        let c = c.unwrap_or_else(|| panic!("cycle {k}: start not known"));
        assert_eq!(c.source, TimingSource::Backend, "cycle {k}");
        assert_physical(&c, start, &o, false, &format!("cycle {k}"));
    }
}
