//! The split synth: the Migrator synth's objects split over the calling thread and
//! spinning worker threads, one block at a time, as the Tessellation study's host
//! partitioned its synth over the cell's hardware threads, and as a fork-join pool's
//! submitting thread takes a share of its own work. The host ([`crate::host`]) runs its
//! blocks through it, and `audiolat bench --workers` times it (`probes::bench_workers`);
//! one implementation.
//!
//! Protocol: with `N` workers the block's objects split into `N + 1` contiguous parts;
//! the caller owns the first, worker `w` the `(w + 2)`-th. The caller writes the block's
//! pads into every worker's slot, then publishes the block's generation (Release),
//! renders its own part into the output on its own thread, then spins until every
//! worker is done and adds their parts in worker order. Each worker spins on its
//! generation, runs its part of the synth on the pads into its own output, publishes
//! `done` (Release). With no workers the caller runs the whole synth itself.
//!
//! Every block leaves its [`Handoff`]: CLOCK_MONOTONIC timestamps taken by the caller
//! when it published the generation, when it had rendered its own part and when it had
//! seen every worker done, and by each worker when it saw the generation and before it
//! published done. The timestamps of different threads come from the same clock (the
//! kernel keeps CLOCK_MONOTONIC consistent across CPUs).
//!
//! Summation order: a part mixes its own objects, and the parts are added in object
//! order, so with workers a channel's objects are added in another order than the whole
//! synth adds them; the outputs agree to f32 rounding, not bit for bit. No workers give
//! the whole synth's output exactly.
//!
//! Real-time contract: [`Workers::start`] and [`Workers::finish`] allocate and spawn or
//! join threads; [`Workers::synthesize`] and the workers' loops allocate, lock and print
//! nothing (the synth runs in the audio guard: denormals flushed, and in debug builds the
//! allocation guard).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use dsp::migrator::{Migrator, MigratorConfig, Pad, BLOCK_FRAMES, OBJECTS, OUTPUT_CHANNELS};
use engine::clock::monotonic_ns;
use engine::rt::{Policy, ThreadRt};

/// One block of the synth's output: a row of [`OUTPUT_CHANNELS`] per frame.
pub type Frames = [[f32; OUTPUT_CHANNELS]; BLOCK_FRAMES];

/// Stack each worker prefaults before its loop.
const WORKER_STACK_PREFAULT: usize = 128 * 1024;

/// Shared between the caller and one worker.
struct WorkerSlot {
    /// The worker thread's id, written as it starts (0 before).
    tid: std::sync::atomic::AtomicI32,
    generation: AtomicU64,
    done: AtomicU64,
    /// When the worker saw the generation, monotonic ns (published by `done`).
    started_ns: AtomicU64,
    /// When the worker had rendered its part, monotonic ns (published by `done`).
    finished_ns: AtomicU64,
    pads: std::cell::UnsafeCell<[Pad; OBJECTS]>,
    out: std::cell::UnsafeCell<Frames>,
}

// SAFETY: `pads` is written only by the caller before it publishes a generation
// (Release) and read by the worker after it sees it (Acquire); `out` is written only by
// the worker before it publishes `done` (Release) and read by the caller after it sees
// it (Acquire). The generation protocol keeps the two from overlapping.
unsafe impl Sync for WorkerSlot {}

/// Where and how the workers run.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerPlacement {
    /// Every worker's scheduling policy.
    pub policy: Policy,
    /// The CPUs of worker `w` (0-based); `None`: not pinned.
    pub cpus: Vec<Option<Vec<usize>>>,
    /// Cgroup `tasks` files every worker writes its id to before it starts.
    pub groups: Vec<PathBuf>,
}

/// One block's hand-off between the caller and its workers, CLOCK_MONOTONIC ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Handoff {
    /// The caller published the block's generation (the pads already in every slot);
    /// it starts its own part right after.
    pub published_ns: u64,
    /// The caller had rendered its own part.
    pub caller_finished_ns: u64,
    /// The last worker to start saw the generation.
    pub last_started_ns: u64,
    /// The last worker to finish had rendered its part.
    pub last_finished_ns: u64,
    /// The caller had seen every worker done (before adding their parts).
    pub collected_ns: u64,
    /// The caller's own part, from its start to its finish, ns.
    pub caller_part_ns: u64,
    /// The longest part of the block (the caller's or a worker's, from its start to its
    /// finish), ns: the block's compute when the parts run side by side.
    pub longest_part_ns: u64,
}

impl Handoff {
    /// From the publication to the last worker's start, ns (negative only if the CPUs'
    /// clocks disagree).
    pub fn to_workers_ns(&self) -> i64 {
        self.last_started_ns as i64 - self.published_ns as i64
    }

    /// From the later of the last worker's finish and the caller's own to the caller
    /// having seen every worker done, ns: what the wait costs beyond the compute.
    pub fn back_ns(&self) -> i64 {
        self.collected_ns as i64 - self.last_finished_ns.max(self.caller_finished_ns) as i64
    }
}

/// The synth split over the caller and worker threads (or, with none, run by the caller).
pub struct Workers {
    slots: Vec<Arc<WorkerSlot>>,
    handles: Vec<std::thread::JoinHandle<()>>,
    quit: Arc<AtomicBool>,
    grants: std::sync::mpsc::Receiver<(usize, ThreadRt)>,
    generation: u64,
    /// The caller's part: the first (the whole synth with no workers).
    own: Migrator,
    last: Option<Handoff>,
}

/// Part `k` of `parts`: a contiguous range of the objects, as evenly split as possible
/// (the caller's is part 0).
pub fn part_objects(k: usize, parts: usize) -> std::ops::Range<usize> {
    k * OBJECTS / parts..(k + 1) * OBJECTS / parts
}

impl Workers {
    /// Starts `workers` threads (at most [`OBJECTS`] - 1): the objects split into
    /// `workers + 1` contiguous parts, as evenly as possible; the caller will render the
    /// first, worker `w` the `(w + 2)`-th. Each worker joins `placement`'s groups and
    /// takes its policy and CPUs first. With 0 workers the caller will run the whole
    /// synth. Allocates.
    pub fn start(workers: usize, synth: MigratorConfig, placement: &WorkerPlacement) -> Workers {
        let workers = workers.min(OBJECTS - 1);
        let parts = workers + 1;
        let slots: Vec<Arc<WorkerSlot>> = (0..workers)
            .map(|_| {
                Arc::new(WorkerSlot {
                    tid: std::sync::atomic::AtomicI32::new(0),
                    generation: AtomicU64::new(0),
                    done: AtomicU64::new(0),
                    started_ns: AtomicU64::new(0),
                    finished_ns: AtomicU64::new(0),
                    pads: std::cell::UnsafeCell::new([Pad::default(); OBJECTS]),
                    out: std::cell::UnsafeCell::new([[0.0; OUTPUT_CHANNELS]; BLOCK_FRAMES]),
                })
            })
            .collect();
        let quit = Arc::new(AtomicBool::new(false));
        let (grants_tx, grants) = std::sync::mpsc::channel();
        let mut handles = Vec::new();
        for (w, slot) in slots.iter().enumerate() {
            let part = Migrator::with_objects(synth, part_objects(w + 1, parts));
            let (slot, quit, grants_tx) = (slot.clone(), quit.clone(), grants_tx.clone());
            let policy = placement.policy;
            let cpus = placement.cpus.get(w).cloned().flatten();
            let groups = placement.groups.clone();
            let spawned = std::thread::Builder::new().name(format!("audiolat-synth{}", w + 1));
            handles.push(
                spawned
                    .spawn(move || {
                        // SAFETY: gettid has no preconditions.
                        slot.tid.store(unsafe { libc::gettid() }, Ordering::Release);
                        qos::join_groups(&groups);
                        let rt = ThreadRt::apply(&policy, cpus.as_deref(), WORKER_STACK_PREFAULT);
                        let _ = grants_tx.send((w, rt));
                        worker_loop(&slot, part, &quit);
                    })
                    .expect("spawning a synth worker"),
            );
        }
        Workers {
            slots,
            handles,
            quit,
            grants,
            generation: 0,
            own: Migrator::with_objects(synth, part_objects(0, parts)),
            last: None,
        }
    }

    /// The worker threads' ids, of those that have started.
    pub fn tids(&self) -> Vec<i32> {
        self.slots
            .iter()
            .map(|s| s.tid.load(Ordering::Acquire))
            .filter(|&t| t > 0)
            .collect()
    }

    /// The worker threads (0: the caller runs the synth).
    pub fn count(&self) -> usize {
        self.slots.len()
    }

    /// The threads computing a block: the caller and its workers.
    pub fn threads(&self) -> usize {
        self.slots.len() + 1
    }

    /// Stops and joins the workers; what each got of its placement, in worker order.
    pub fn finish(self) -> Vec<ThreadRt> {
        self.quit.store(true, Ordering::Relaxed);
        for h in self.handles {
            let _ = h.join();
        }
        let mut grants: Vec<(usize, ThreadRt)> = self.grants.try_iter().collect();
        grants.sort_by_key(|(w, _)| *w);
        grants.into_iter().map(|(_, g)| g).collect()
    }

    /// The last block's hand-off (`None` with no workers, or before the first block).
    pub fn last_handoff(&self) -> Option<Handoff> {
        self.last
    }

    /// Renders one block of the synth driven by `pads`, adding it into `frames`: hands
    /// `pads` to every worker, renders the caller's part here, waits for the workers and
    /// adds their parts (with no workers, runs the whole synth here). Returns false when
    /// `stop` was raised while waiting. Real-time safe: spins, allocates nothing.
    pub fn synthesize(
        &mut self,
        pads: &[Pad; OBJECTS],
        frames: &mut Frames,
        stop: &AtomicBool,
    ) -> bool {
        let own = &mut self.own;
        if self.slots.is_empty() {
            engine::guard::process_guard(|| own.process(pads, frames));
            return true;
        }
        self.generation += 1;
        let generation = self.generation;
        for slot in &self.slots {
            // SAFETY: see WorkerSlot; the worker is idle (its done equals the
            // previous generation).
            unsafe { *slot.pads.get() = *pads };
        }
        let published_ns = monotonic_ns();
        for slot in &self.slots {
            slot.generation.store(generation, Ordering::Release);
        }
        engine::guard::process_guard(|| own.process(pads, frames));
        let caller_finished_ns = monotonic_ns();
        for slot in &self.slots {
            let mut waited = 0u32;
            while slot.done.load(Ordering::Acquire) != generation {
                if stop.load(Ordering::Relaxed) {
                    return false;
                }
                waited += 1;
                if waited.is_multiple_of(4096) {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
        }
        let collected_ns = monotonic_ns();
        let caller_part_ns = caller_finished_ns.saturating_sub(published_ns);
        let mut handoff = Handoff {
            published_ns,
            caller_finished_ns,
            collected_ns,
            caller_part_ns,
            longest_part_ns: caller_part_ns,
            ..Handoff::default()
        };
        for slot in &self.slots {
            let started = slot.started_ns.load(Ordering::Relaxed);
            let finished = slot.finished_ns.load(Ordering::Relaxed);
            handoff.last_started_ns = handoff.last_started_ns.max(started);
            handoff.last_finished_ns = handoff.last_finished_ns.max(finished);
            handoff.longest_part_ns = handoff
                .longest_part_ns
                .max(finished.saturating_sub(started));
            // SAFETY: the worker published done for this generation.
            let part = unsafe { &*slot.out.get() };
            for (row, add) in frames.iter_mut().zip(part.iter()) {
                for (x, y) in row.iter_mut().zip(add.iter()) {
                    *x += y;
                }
            }
        }
        self.last = Some(handoff);
        true
    }
}

/// A worker's real-time loop: spins on the next generation, runs its part of the synth
/// on the published pads (in the audio guard: denormals flushed, no allocation),
/// publishes `done` with its start and finish times; until `quit`. Allocates nothing.
fn worker_loop(slot: &WorkerSlot, mut part: Migrator, quit: &AtomicBool) {
    let mut seen = 0u64;
    let mut idle = 0u32;
    while !quit.load(Ordering::Relaxed) {
        let generation = slot.generation.load(Ordering::Acquire);
        if generation == seen {
            // Spin (the study's workers never sleep), but after ~50 µs of nothing
            // let other threads of the same priority, or any at SCHED_OTHER, run.
            idle += 1;
            if idle.is_multiple_of(4096) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
            continue;
        }
        slot.started_ns.store(monotonic_ns(), Ordering::Relaxed);
        idle = 0;
        seen = generation;
        // SAFETY: see WorkerSlot: the caller wrote pads before publishing this
        // generation and waits for `done` before touching out.
        unsafe {
            let pads = &*slot.pads.get();
            let out = &mut *slot.out.get();
            *out = [[0.0; OUTPUT_CHANNELS]; BLOCK_FRAMES];
            engine::guard::process_guard(|| part.process(pads, out));
        }
        slot.finished_ns.store(monotonic_ns(), Ordering::Relaxed);
        slot.done.store(generation, Ordering::Release);
    }
}

#[cfg(test)]
mod tests;
