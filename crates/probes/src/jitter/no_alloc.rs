//! The loop, run under `assert_no_alloc`.

use super::*;
use assert_no_alloc::{assert_no_alloc, reset_violation_count, violation_count};

/// Runs the loop under the guard with hand-off rings, so the hand-off path runs
/// too (three hand-offs, then a starved controller). Returns the loop and the count
/// of samples that were handed over.
fn run_guarded(config: JitterConfig) -> (JitterLoop, u64) {
    let busy = (config.busy_percent > 0.0).then(|| BusyWork::calibrate(10_000, 3));
    let (mut spare_tx, spare_rx) = rtrb::RingBuffer::new(HANDOFF_POOL);
    let (full_tx, mut full_rx) = rtrb::RingBuffer::new(HANDOFF_POOL);
    for _ in 0..HANDOFF_POOL - 1 {
        spare_tx
            .push(IntervalHistograms::new(&config).unwrap())
            .unwrap();
    }
    let handoff = Handoff {
        spare: spare_rx,
        full: full_tx,
        cycles_per_interval: 50,
    };
    let mut lp =
        JitterLoop::prepare(&config, busy, Arc::new(Live::default()), Some(handoff)).unwrap();
    let stop = AtomicBool::new(false);
    let start = monotonic_ns() + 1_000_000;
    reset_violation_count();
    let end = assert_no_alloc(|| lp.run(start, config.length, &stop));
    assert_eq!(violation_count(), 0, "the jitter loop allocated");
    assert_eq!(end.unwrap(), LoopEnd::Complete);
    let mut handed = 0;
    let mut sets = 0;
    while let Ok(h) = full_rx.pop() {
        handed += h.latency.count();
        sets += 1;
    }
    assert_eq!(sets, HANDOFF_POOL - 1, "every spare set was used");
    assert_eq!(handed, 50 * (HANDOFF_POOL as u64 - 1));
    (lp, handed)
}

#[test]
fn the_guard_is_armed() {
    reset_violation_count();
    assert_no_alloc(|| {
        let v = std::hint::black_box(vec![1u8; 64]);
        drop(v);
    });
    assert!(
        violation_count() > 0,
        "assert_no_alloc did not see an allocation"
    );
    reset_violation_count();
}

fn base(mode: WakeMode) -> JitterConfig {
    JitterConfig {
        mode,
        policy: Policy::Other { nice: 0 },
        lock_memory: false,
        dma_latency: false,
        // A 2 µs bound makes most samples overflow, so the overflow path runs too;
        // small blocks make the series path run many times.
        hist_bound_ns: 2_000,
        block_ns: 1_000_000,
        ..JitterConfig::new(250_000, RunLength::Loops(400))
    }
}

#[test]
fn the_jitter_loop_does_not_allocate_in_any_mode() {
    for mode in [WakeMode::Nanosleep, WakeMode::Timerfd, WakeMode::Signal] {
        let (lp, handed) = run_guarded(base(mode));
        assert_eq!(lp.cycles, 400);
        assert_eq!(
            handed + lp.current.latency.count(),
            400,
            "{mode:?}: samples lost"
        );
        assert!(
            handed > 0 && lp.current.latency.overflows() > 0,
            "{mode:?}: the overflow path must be exercised"
        );
        assert!(lp.blocks.len() > 10);
    }
}

#[test]
fn the_fragment_loop_does_not_allocate_even_when_it_underruns() {
    for mode in [WakeMode::Nanosleep, WakeMode::Timerfd, WakeMode::Signal] {
        let config = JitterConfig {
            fragments: Some(FragmentModel {
                fragments: 2,
                frames: 3,
                sample_rate: 48_000,
            }),
            busy_percent: 99.0,
            ..base(mode)
        };
        let config = JitterConfig {
            period_ns: config.fragments.unwrap().period_ns(),
            ..config
        };
        let (lp, handed) = run_guarded(config);
        assert_eq!(lp.cycles, 400);
        assert_eq!(
            handed + lp.current.completion.as_ref().unwrap().count(),
            400
        );
        // Work of 99 % of a period plus any wake-up latency exceeds one period of
        // headroom: the under-run and re-synchronisation path must be exercised.
        assert!(lp.underrun_count > 0, "{mode:?}");
    }
}
