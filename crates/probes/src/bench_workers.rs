//! `audiolat bench --workers 1,2,...`: the Migrator synth's block split over the calling
//! thread and spinning worker threads ([`netaudio::workers::Workers`], what `audiolat
//! net --workers` runs: `N` workers and the caller render `N + 1` parts), timed per
//! worker count beside the whole synth on the calling thread (0 workers), with each
//! block's hand-off.
//!
//! The 0-worker row is the reference of the speed-ups: the same thread, policy, pinning
//! and loop as the split counts. It is not the single-thread Migrator block of `bench`
//! (`dsp::bench`, timed at SCHED_OTHER on an unpinned thread), which may differ from it.
//!
//! Method: a timing thread (the caller) and the workers run at [`BENCH_POLICY`] (what
//! `net` uses; SCHED_OTHER when the kernel refuses it, said by `realtime`); the caller
//! is pinned to the first online CPU, worker `w` to the `(w + 1)`-th (cycling: with as
//! many workers as CPUs, the caller shares its CPU with the last worker, said by
//! `shares_cpu`; the CLI refuses such counts). Every pad is pressed, as in the single-thread block bench. Each round
//! starts each count's workers, runs [`WARMUP_BLOCKS`] blocks, times [`BLOCKS`] blocks
//! (CLOCK_MONOTONIC around each block: hand the pads over, wait, sum the parts) and
//! stops them; the rounds alternate the counts so a slow stretch of the machine falls
//! on all of them. Between stretches the threads are gone and the caller sleeps at least
//! as long as the stretch took: a spinning real-time thread never runs long enough to be
//! throttled (the kernel's `sched_rt_runtime_us`, reported beside the figures).
//!
//! The hand-off of a block ([`netaudio::workers::Handoff`]): from the caller publishing
//! the block to the last worker starting on it ("to workers"), and from the later of the
//! last worker's finish and the caller's own to the caller having seen every worker done
//! ("back"), timestamps taken inside the threads; the caller's part and the longest part
//! (the caller's or a worker's, start to finish: the block's compute side by side). What
//! a block takes beyond the longest part and the hand-off is the caller's copying the
//! pads to the workers' slots and adding their parts, whose cache lines the workers'
//! CPUs wrote. After each split stretch, with the workers gone, the caller's part is
//! timed alone the same way (per block, same thread): against the same part beside the
//! workers it shows whether the threads slow each other down (a shared core's units, the
//! memory, the hypervisor).
//!
//! Not real-time itself: allocates its series before each stretch, prints nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dsp::migrator::{Migrator, MigratorConfig, Pad, BLOCK_FRAMES, OBJECTS, OUTPUT_CHANNELS};
use engine::clock::monotonic_ns;
use engine::rt::{Policy, ThreadRt};
use netaudio::workers::{WorkerPlacement, Workers};

/// The policy the caller and the workers ask for: `net`'s default.
pub const BENCH_POLICY: Policy = Policy::Fifo { priority: 70 };
/// Blocks timed per count and round.
pub const BLOCKS: usize = 300;
/// Blocks run before timing, per count and round (the workers have set themselves up
/// by the end of the first).
pub const WARMUP_BLOCKS: usize = 30;
/// Rounds over all counts.
pub const ROUNDS: usize = 7;
/// The shortest pause between two stretches.
const MIN_PAUSE: Duration = Duration::from_millis(20);

/// One worker count's figures over all rounds.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerCountTiming {
    /// Worker threads (0: the whole synth on the calling thread); the caller renders a
    /// part too, so `workers + 1` threads compute.
    pub workers: usize,
    /// Blocks timed.
    pub blocks: usize,
    /// Median block time, ns.
    pub block_median_ns: f64,
    /// 99th percentile of the block time, ns.
    pub block_p99_ns: f64,
    /// Median of the hand-off to the workers, ns (`None` with 0 workers).
    pub to_workers_median_ns: Option<f64>,
    /// Median of the hand-off back from the workers, ns (`None` with 0 workers).
    pub back_median_ns: Option<f64>,
    /// Median of a block's whole hand-off (to workers plus back), ns.
    pub handoff_median_ns: Option<f64>,
    /// Median of a block's longest part (the caller's or a worker's, start to finish), ns.
    pub part_median_ns: Option<f64>,
    /// Median of the caller's own part, ns (`None` with 0 workers: the block is all its).
    pub caller_part_median_ns: Option<f64>,
    /// Median of the caller's part timed alone, the workers gone, ns (`None` with 0
    /// workers).
    pub caller_part_alone_median_ns: Option<f64>,
    /// Every thread (caller and workers) ran in a real-time class.
    pub realtime: bool,
    /// The policy the workers got (the caller's with 0 workers), as the kernel names it.
    pub policy: String,
    /// The CPUs each worker may run on, read back after pinning.
    pub worker_cpus: Vec<Vec<usize>>,
    /// A worker shares the caller's CPU (more workers than CPUs besides the caller's).
    pub shares_cpu: bool,
}

/// The bench over all worker counts.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkersBench {
    /// 0 first, then the counts asked for, in the order asked.
    pub counts: Vec<WorkerCountTiming>,
    /// The CPUs the caller may run on, read back after pinning.
    pub caller_cpus: Vec<usize>,
    /// Why the real-time policy was refused (the bench then ran SCHED_OTHER).
    pub refusal: Option<String>,
    /// `/proc/sys/kernel/sched_rt_runtime_us` (`None`: unreadable).
    pub rt_runtime_us: Option<i64>,
    /// `/proc/sys/kernel/sched_rt_period_us`.
    pub rt_period_us: Option<i64>,
}

/// The bench was stopped through its stop flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interrupted;

/// Times the split synth with 0 workers and each of `counts` (duplicates and 0 taken
/// once), on a timing thread of its own; about a second and a half for two counts.
pub fn run(counts: &[usize], stop: &AtomicBool) -> Result<WorkersBench, Interrupted> {
    let mut all = vec![0];
    for &c in counts {
        if !all.contains(&c) {
            all.push(c);
        }
    }
    std::thread::scope(|s| s.spawn(|| run_here(&all, stop)).join())
        .unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// One count's samples gathered so far.
#[derive(Default)]
struct Samples {
    block: Vec<u64>,
    to_workers: Vec<i64>,
    back: Vec<i64>,
    handoff: Vec<i64>,
    part: Vec<i64>,
    caller_part: Vec<i64>,
    caller_part_alone: Vec<i64>,
    grants: Vec<ThreadRt>,
}

/// [`run`] on the calling thread, which it pins and raises.
fn run_here(counts: &[usize], stop: &AtomicBool) -> Result<WorkersBench, Interrupted> {
    let cpus = engine::rt::online_cpus();
    let cpu = |k: usize| (!cpus.is_empty()).then(|| vec![cpus[k % cpus.len()]]);
    let caller = ThreadRt::apply(&BENCH_POLICY, cpu(0).as_deref(), 256 * 1024);
    let (policy, refusal) = if caller.is_realtime() {
        (BENCH_POLICY, None)
    } else {
        let refusal = caller
            .sched
            .refusal
            .clone()
            .unwrap_or_else(|| "not granted".into());
        (Policy::Other { nice: 0 }, Some(refusal))
    };
    let mut samples: Vec<Samples> = counts.iter().map(|_| Samples::default()).collect();
    for _ in 0..ROUNDS {
        for (&workers, into) in counts.iter().zip(samples.iter_mut()) {
            let placement = WorkerPlacement {
                policy,
                cpus: (1..=workers).map(cpu).collect(),
                groups: Vec::new(),
            };
            let took = stretch(workers, &placement, into, stop);
            if stop.load(Ordering::Relaxed) {
                return Err(Interrupted);
            }
            std::thread::sleep(took.max(MIN_PAUSE));
        }
    }
    let realtime = caller.is_realtime();
    Ok(WorkersBench {
        counts: counts
            .iter()
            .zip(samples)
            .map(|(&w, s)| summarize(w, s, realtime, &caller, cpus.len()))
            .collect(),
        caller_cpus: caller.cpus_granted.clone(),
        refusal,
        rt_runtime_us: read_i64("/proc/sys/kernel/sched_rt_runtime_us"),
        rt_period_us: read_i64("/proc/sys/kernel/sched_rt_period_us"),
    })
}

/// One stretch: starts `workers`, warms up, times [`BLOCKS`] blocks into `into`, stops
/// them. Returns how long it took.
fn stretch(
    workers: usize,
    placement: &WorkerPlacement,
    into: &mut Samples,
    stop: &AtomicBool,
) -> Duration {
    let begun = monotonic_ns();
    let pads = [Pad {
        x: 0.5,
        y: 0.5,
        pressure: 1.0,
    }; OBJECTS];
    into.block.reserve(BLOCKS);
    into.to_workers.reserve(BLOCKS);
    into.back.reserve(BLOCKS);
    into.handoff.reserve(BLOCKS);
    into.part.reserve(BLOCKS);
    into.caller_part.reserve(BLOCKS);
    let mut pool = Workers::start(workers, MigratorConfig::default(), placement);
    for b in 0..WARMUP_BLOCKS + BLOCKS {
        let mut frames = [[0.0f32; OUTPUT_CHANNELS]; BLOCK_FRAMES];
        let t0 = monotonic_ns();
        if !pool.synthesize(&pads, &mut frames, stop) {
            break;
        }
        let t1 = monotonic_ns();
        std::hint::black_box(&frames);
        if b < WARMUP_BLOCKS {
            continue;
        }
        into.block.push(t1 - t0);
        if let Some(h) = pool.last_handoff() {
            into.to_workers.push(h.to_workers_ns());
            into.back.push(h.back_ns());
            into.handoff.push(h.to_workers_ns() + h.back_ns());
            into.part.push(h.longest_part_ns as i64);
            into.caller_part.push(h.caller_part_ns as i64);
        }
    }
    let grants = pool.finish();
    if into.grants.is_empty() {
        into.grants = grants;
    }
    if workers > 0 && !stop.load(Ordering::Relaxed) {
        let objects = netaudio::workers::part_objects(0, pool_threads(workers));
        let mut alone = Migrator::with_objects(MigratorConfig::default(), objects);
        into.caller_part_alone.reserve(BLOCKS);
        for b in 0..WARMUP_BLOCKS + BLOCKS {
            let mut frames = [[0.0f32; OUTPUT_CHANNELS]; BLOCK_FRAMES];
            let t0 = monotonic_ns();
            engine::guard::process_guard(|| alone.process(&pads, &mut frames));
            let t1 = monotonic_ns();
            std::hint::black_box(&frames);
            if b >= WARMUP_BLOCKS {
                into.caller_part_alone.push((t1 - t0) as i64);
            }
        }
    }
    Duration::from_nanos(monotonic_ns() - begun)
}

/// The threads computing a block split over `workers` (as [`Workers`] caps it).
fn pool_threads(workers: usize) -> usize {
    workers.min(OBJECTS - 1) + 1
}

/// One count's figures from its samples.
fn summarize(
    workers: usize,
    mut s: Samples,
    caller_realtime: bool,
    caller: &ThreadRt,
    cpus: usize,
) -> WorkerCountTiming {
    s.block.sort_unstable();
    let median_of = |v: &mut Vec<i64>| {
        v.sort_unstable();
        percentile(v, 0.5)
    };
    let policy = s
        .grants
        .first()
        .map_or(&caller.sched.granted, |g| &g.sched.granted)
        .kernel_name()
        .to_string();
    WorkerCountTiming {
        workers,
        blocks: s.block.len(),
        block_median_ns: percentile(&s.block, 0.5).unwrap_or(f64::NAN),
        block_p99_ns: percentile(&s.block, 0.99).unwrap_or(f64::NAN),
        to_workers_median_ns: median_of(&mut s.to_workers),
        back_median_ns: median_of(&mut s.back),
        handoff_median_ns: median_of(&mut s.handoff),
        part_median_ns: median_of(&mut s.part),
        caller_part_median_ns: median_of(&mut s.caller_part),
        caller_part_alone_median_ns: median_of(&mut s.caller_part_alone),
        realtime: caller_realtime && s.grants.iter().all(ThreadRt::is_realtime),
        policy,
        worker_cpus: s.grants.iter().map(|g| g.cpus_granted.clone()).collect(),
        shares_cpu: workers + 1 > cpus,
    }
}

/// The `q` quantile of sorted values (nearest rank); `None` when there are none.
fn percentile<T: Copy + Into<i128>>(sorted: &[T], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, last + 1) - 1;
    Some(sorted[rank].into() as f64)
}

fn read_i64(path: &str) -> Option<i64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The bench as its record (`bench --json`'s `workers`; `report::view::bench` renders
/// it): speed-ups against this bench's 0-worker row and against 1 worker (`None` when 1
/// was not run); hand-offs and parts `None` with 0 workers; a figure that is not finite
/// NaN or `None`, as it reads back from its JSON (`null`).
pub fn record(b: &WorkersBench) -> results::records::bench::WorkersBench {
    use crate::bench::finite_or_nan;
    let finite = |v: Option<f64>| v.filter(|x| x.is_finite());
    let median = |w: usize| {
        b.counts
            .iter()
            .find(|c| c.workers == w)
            .map(|c| c.block_median_ns)
    };
    let (zero, one) = (median(0), median(1));
    let cpus = |v: &[usize]| v.iter().map(|&c| c as u64).collect::<Vec<_>>();
    results::records::bench::WorkersBench {
        method: "each count's median and p99 over its timed blocks (CLOCK_MONOTONIC around a block: hand-off, the caller's part and the workers' side by side, sum); hand-off times taken inside the threads, medians per block; speed-ups against the 0-worker row of this bench (same thread, policy and pinning), not against migrator.block_ns (SCHED_OTHER, unpinned)".into(),
        policy_requested: BENCH_POLICY.kernel_name().into(),
        realtime_refused: b.refusal.clone(),
        caller_cpus: cpus(&b.caller_cpus),
        rounds: ROUNDS as u64,
        blocks_per_round: BLOCKS as u64,
        sched_rt_runtime_us: b.rt_runtime_us,
        sched_rt_period_us: b.rt_period_us,
        counts: b
            .counts
            .iter()
            .map(|c| results::records::bench::WorkerCount {
                workers: c.workers as u64,
                threads: c.workers as u64 + 1,
                blocks: c.blocks as u64,
                block_median_ns: finite_or_nan(c.block_median_ns),
                block_p99_ns: finite_or_nan(c.block_p99_ns),
                speedup_vs_zero: finite(zero.map(|k| k / c.block_median_ns)),
                speedup_vs_one: finite(
                    one.filter(|_| c.workers > 0)
                        .map(|o| o / c.block_median_ns),
                ),
                handoff_to_workers_ns: finite(c.to_workers_median_ns),
                handoff_back_ns: finite(c.back_median_ns),
                handoff_ns: finite(c.handoff_median_ns),
                longest_part_ns: finite(c.part_median_ns),
                caller_part_ns: finite(c.caller_part_median_ns),
                caller_part_alone_ns: finite(c.caller_part_alone_median_ns),
                realtime: c.realtime,
                policy: c.policy.clone(),
                worker_cpus: c.worker_cpus.iter().map(|l| cpus(l)).collect(),
                shares_cpu: c.shares_cpu,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), Some(50.0));
        assert_eq!(percentile(&v, 0.99), Some(99.0));
        assert_eq!(percentile(&[7u64], 0.99), Some(7.0));
        assert_eq!(percentile::<u64>(&[], 0.5), None);
    }
}
