use super::*;

/// Pads that press, move and release over the blocks, so objects fade in and out and
/// the parts skip silent objects as the whole synth does.
fn pads_at(block: usize) -> [Pad; OBJECTS] {
    std::array::from_fn(|o| {
        let phase = (block + 3 * o) % 40;
        Pad {
            x: ((o * 7 + block) % 11) as f32 / 10.0,
            y: ((o * 5 + block / 9) % 13) as f32 / 12.0,
            pressure: if phase < 25 {
                0.2 + 0.03 * (o % 20) as f32
            } else {
                0.0
            },
        }
    })
}

/// Migrations every 50 ms (about every 69th block), so glides run within the test.
fn config() -> MigratorConfig {
    MigratorConfig {
        migrate_every_s: Some(0.05),
        ..MigratorConfig::default()
    }
}

fn placement(workers: usize) -> WorkerPlacement {
    WorkerPlacement {
        policy: Policy::Other { nice: 0 },
        cpus: vec![None; workers],
        groups: Vec::new(),
    }
}

/// The split synth against the whole synth on the calling thread, block by block.
///
/// With no workers the caller's one part owns every object: the same floats, bit for
/// bit. With `N` workers the `N + 1` parts (the caller's and the workers', splits of 32
/// into 2, 3 and 4, even and uneven) each mix their own objects and the caller adds
/// the parts, so a channel's (at most four) objects and the kernel's lanes are added in
/// another order: f32 reassociation, each sum off by at most a few ulps of its terms.
/// The bound is 64 f32 epsilons of the block's largest magnitude (the terms are each
/// below it); the synth's own accuracy tests hold it to 1e-6 of an amplitude.
#[test]
fn split_synth_matches_the_whole_synth() {
    const BLOCKS: usize = 300;
    let mut whole = Migrator::new(config());
    let expected: Vec<Frames> = (0..BLOCKS)
        .map(|b| {
            let mut out = [[0.0; OUTPUT_CHANNELS]; BLOCK_FRAMES];
            whole.process(&pads_at(b), &mut out);
            out
        })
        .collect();
    let peak = expected
        .iter()
        .flatten()
        .flatten()
        .fold(0f32, |m, x| m.max(x.abs()));
    assert!(peak > 0.1, "the synth sounded: peak {peak}");
    let stop = AtomicBool::new(false);
    for workers in [0, 1, 2, 3] {
        let mut pool = Workers::start(workers, config(), &placement(workers));
        assert_eq!(pool.count(), workers);
        assert_eq!(pool.threads(), workers + 1);
        let mut worst = 0f32;
        for (b, want) in expected.iter().enumerate() {
            let mut got = [[0.0; OUTPUT_CHANNELS]; BLOCK_FRAMES];
            let pads = pads_at(b);
            let done = assert_no_alloc::assert_no_alloc(|| pool.synthesize(&pads, &mut got, &stop));
            assert!(done);
            for (x, y) in got.iter().flatten().zip(want.iter().flatten()) {
                if workers == 0 {
                    assert_eq!(x.to_bits(), y.to_bits(), "{workers} workers, block {b}");
                }
                worst = worst.max((x - y).abs());
            }
        }
        assert!(
            worst <= 64.0 * f32::EPSILON * peak,
            "{workers} workers: off by {worst} (peak {peak})"
        );
        assert_eq!(pool.last_handoff().is_some(), workers > 0);
        assert_eq!(pool.finish().len(), workers);
    }
}

/// The parts cover the objects once each, in order, as evenly as possible (at most one
/// object apart), and never more parts than objects.
#[test]
fn parts_split_the_objects_evenly() {
    for parts in 1..=OBJECTS {
        let ranges: Vec<_> = (0..parts).map(|k| part_objects(k, parts)).collect();
        assert_eq!(ranges[0].start, 0);
        assert_eq!(ranges[parts - 1].end, OBJECTS);
        assert!(
            ranges.windows(2).all(|r| r[0].end == r[1].start),
            "{ranges:?}"
        );
        let sizes: Vec<usize> = ranges.iter().map(|r| r.len()).collect();
        let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
        assert!(*min >= 1 && max - min <= 1, "{parts} parts: {sizes:?}");
    }
}

/// Each block's hand-off times follow the protocol's order: published, every worker
/// started, every worker finished, collected, and the caller's own part between its
/// publication and the collection (one clock, causally ordered reads).
#[test]
fn handoff_times_follow_the_protocol() {
    let stop = AtomicBool::new(false);
    let mut pool = Workers::start(2, config(), &placement(2));
    let mut frames = [[0.0; OUTPUT_CHANNELS]; BLOCK_FRAMES];
    let mut previous = 0;
    for b in 0..50 {
        assert!(pool.synthesize(&pads_at(b), &mut frames, &stop));
        let h = pool.last_handoff().unwrap();
        assert!(h.published_ns > previous, "{h:?}");
        assert!(h.published_ns <= h.last_started_ns, "{h:?}");
        assert!(h.last_started_ns <= h.last_finished_ns, "{h:?}");
        assert!(h.last_finished_ns <= h.collected_ns, "{h:?}");
        assert!(h.published_ns <= h.caller_finished_ns, "{h:?}");
        assert!(h.caller_finished_ns <= h.collected_ns, "{h:?}");
        assert!(h.to_workers_ns() >= 0 && h.back_ns() >= 0, "{h:?}");
        assert!(h.caller_part_ns > 0, "{h:?}");
        assert!(h.longest_part_ns >= h.caller_part_ns, "{h:?}");
        let worker_span = h.last_finished_ns - h.published_ns;
        assert!(
            h.longest_part_ns <= worker_span.max(h.caller_part_ns),
            "{h:?}"
        );
        previous = h.collected_ns;
    }
    let grants = pool.finish();
    assert!(
        grants.iter().all(|g| g.sched.refusal.is_none()),
        "{grants:?}"
    );
}

/// A raised stop ends a wait on workers that will not answer (here: already gone).
#[test]
fn stop_ends_the_wait() {
    let mut pool = Workers::start(1, config(), &placement(1));
    pool.quit.store(true, Ordering::Relaxed);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let stop = AtomicBool::new(true);
    let mut frames = [[0.0; OUTPUT_CHANNELS]; BLOCK_FRAMES];
    assert!(!pool.synthesize(&pads_at(0), &mut frames, &stop));
    pool.finish();
}
