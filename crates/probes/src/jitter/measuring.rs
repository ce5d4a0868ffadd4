//! The measuring loop ([`JitterLoop`]) and what it records: histograms per interval, remarkable cycles, blocks, live counters.

use super::*;

/// One remarkable cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CycleRecord {
    /// Cycle number (0-based, counting processed cycles).
    pub cycle: u64,
    /// The cycle's intended deadline, CLOCK_MONOTONIC ns.
    pub deadline_ns: u64,
    /// The value: wake-up latency, or completion time for under-runs (ns).
    pub value_ns: u64,
    /// CPU the thread was on.
    pub cpu: u32,
}

/// Latency statistics of one block of cycles (a point of the latency-against-time
/// series).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Block {
    /// Deadline of the block's first cycle, relative to the start (ns).
    pub offset_ns: u64,
    /// Cycles in the block.
    pub cycles: u32,
    /// Smallest wake-up latency.
    pub min_ns: u64,
    /// Sum of wake-up latencies.
    pub sum_ns: u64,
    /// Largest wake-up latency.
    pub max_ns: u64,
    /// Largest completion time (fragment model), else 0.
    pub completion_max_ns: u64,
}

/// Counters the measuring thread publishes for a live status line.
#[derive(Debug, Default)]
pub struct Live {
    /// Cycles done.
    pub cycles: AtomicU64,
    /// Last wake-up latency (ns).
    pub last_ns: AtomicU64,
    /// Largest wake-up latency so far (ns).
    pub max_ns: AtomicU64,
    /// Overflows so far.
    pub overflows: AtomicU64,
    /// Would-be under-runs so far.
    pub underruns: AtomicU64,
    /// Deadlines skipped so far.
    pub skipped: AtomicU64,
}

/// A copy of [`Live`] at one instant (the results model's live counters).
pub use results::live::LiveSnapshot;

/// The histograms of one stretch of a run. The measuring thread fills one set while the
/// controlling thread merges the sets it was handed into the run's totals and stores
/// them as a checkpoint, so a run is written as it goes (HdrHistogram's interval
/// recorder pattern, over pre-sized lock-free rings).
#[derive(Debug, Clone)]
pub struct IntervalHistograms {
    /// Wake-up latency.
    pub latency: LatencyHistogram,
    /// Interval between wake-ups.
    pub interval: LatencyHistogram,
    /// Completion time (fragment model).
    pub completion: Option<LatencyHistogram>,
    /// Cycles in the interval.
    pub cycles: u64,
    /// Deadlines skipped in the interval.
    pub skipped: u64,
    /// Would-be under-runs in the interval.
    pub underruns: u64,
}

impl IntervalHistograms {
    /// Empty histograms sized for `config`. Allocates.
    pub fn new(config: &JitterConfig) -> Result<IntervalHistograms, JitterError> {
        let hist =
            |b: u64| LatencyHistogram::new(b).map_err(|e| JitterError::Invalid(e.to_string()));
        let wide = config.hist_bound_ns + config.period_ns;
        Ok(IntervalHistograms {
            latency: hist(config.hist_bound_ns)?,
            interval: hist(wide)?,
            completion: match config.fragments {
                Some(_) => Some(hist(wide)?),
                None => None,
            },
            cycles: 0,
            skipped: 0,
            underruns: 0,
        })
    }

    /// Adds another set's samples to this one.
    pub fn add(&mut self, other: &IntervalHistograms) {
        self.latency.add(&other.latency);
        self.interval.add(&other.interval);
        if let (Some(a), Some(b)) = (&mut self.completion, &other.completion) {
            a.add(b);
        }
        self.cycles += other.cycles;
        self.skipped += other.skipped;
        self.underruns += other.underruns;
    }

    /// Empties every histogram, keeping its memory.
    pub fn reset(&mut self) {
        self.latency.reset();
        self.interval.reset();
        if let Some(c) = &mut self.completion {
            c.reset();
        }
        self.cycles = 0;
        self.skipped = 0;
        self.underruns = 0;
    }
}

/// Sets of interval histograms in circulation between the two threads: one being
/// filled, the rest empty or waiting to be merged. The rings hold them all, so a hand-off
/// never fails and never allocates.
pub(super) const HANDOFF_POOL: usize = 4;

/// The measuring thread's ends of the hand-off rings.
pub struct Handoff {
    /// Empty sets, from the controlling thread.
    pub spare: rtrb::Consumer<IntervalHistograms>,
    /// Filled sets, to the controlling thread.
    pub full: rtrb::Producer<IntervalHistograms>,
    /// Cycles per interval.
    pub cycles_per_interval: u64,
}

/// Where the loop hands its misses for `--why`: a wait-free ring to the trace session.
#[derive(Debug)]
pub struct WhyTap {
    /// The session's ring.
    pub sender: crate::why::MissSender,
    /// Wake-ups later than this are misses, ns (0 with the fragment model: its
    /// under-runs are).
    pub above_ns: u64,
    /// The measuring thread's id.
    pub tid: i32,
}

/// The measuring loop with everything it writes to, allocated beforehand.
pub struct JitterLoop {
    why: Option<WhyTap>,
    mode: WakeMode,
    period_ns: u64,
    fragments: Option<FragmentModel>,
    waiter: Waiter,
    busy: Option<BusyWork>,
    busy_iterations: u64,
    pub(super) current: IntervalHistograms,
    handoff: Option<Handoff>,
    cycles_in_interval: u64,
    /// (cycles, skipped, under-runs) when the current interval began.
    interval_mark: (u64, u64, u64),
    overflows: Vec<CycleRecord>,
    underruns: Vec<CycleRecord>,
    pub(super) underrun_count: u64,
    outliers: [CycleRecord; TOP_OUTLIERS],
    outlier_len: usize,
    outlier_min: u64,
    pub(super) blocks: Vec<Block>,
    blocks_dropped: u64,
    block_cycles: u32,
    skipped: u64,
    pub(super) cycles: u64,
    live: Arc<Live>,
}

/// Keeps a remarkable cycle, with the CPU it ran on, while there is room (the vector
/// was sized to [`MAX_RECORDS`] beforehand, so this never allocates).
#[inline]
pub(super) fn keep_record(
    records: &mut Vec<CycleRecord>,
    cycle: u64,
    deadline_ns: u64,
    value_ns: u64,
) {
    if records.len() < MAX_RECORDS {
        records.push(CycleRecord {
            cycle,
            deadline_ns,
            value_ns,
            cpu: engine::rt::current_cpu().unwrap_or(0) as u32,
        });
    }
}

/// How the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopEnd {
    /// It ran its planned length.
    Complete,
    /// The stop flag was raised.
    Interrupted,
}

impl JitterLoop {
    /// Allocates everything the loop will write to and creates its timer. Call on the
    /// measuring thread (the signal mode directs its timer at the calling thread).
    /// With a `handoff`, filled interval histograms are passed to the controlling
    /// thread as the run goes; without one, everything stays in one set.
    pub fn prepare(
        config: &JitterConfig,
        busy: Option<BusyWork>,
        live: Arc<Live>,
        handoff: Option<Handoff>,
    ) -> Result<JitterLoop, JitterError> {
        config.validate()?;
        let block_cycles = (config.block_ns / config.period_ns).clamp(1, u32::MAX as u64) as u32;
        let blocks_planned =
            (config.planned_cycles() / block_cycles as u64 + 2).min(MAX_BLOCKS as u64);
        let busy_iterations = busy.map_or(0, |b| {
            b.iterations_for_ns((config.period_ns as f64 * config.busy_percent / 100.0) as u64)
        });
        Ok(JitterLoop {
            why: None,
            mode: config.mode,
            period_ns: config.period_ns,
            fragments: config.fragments,
            waiter: Waiter::new(config.mode)?,
            busy,
            busy_iterations,
            current: IntervalHistograms::new(config)?,
            handoff,
            cycles_in_interval: 0,
            interval_mark: (0, 0, 0),
            overflows: Vec::with_capacity(MAX_RECORDS),
            underruns: Vec::with_capacity(MAX_RECORDS),
            underrun_count: 0,
            outliers: [CycleRecord::default(); TOP_OUTLIERS],
            outlier_len: 0,
            outlier_min: 0,
            blocks: Vec::with_capacity(blocks_planned as usize),
            blocks_dropped: 0,
            block_cycles,
            skipped: 0,
            cycles: 0,
            live,
        })
    }

    /// Hands the run's misses to a trace session (`--why`): wake-ups later than the
    /// tap's threshold, or with the fragment model, under-runs.
    pub fn trace_misses(&mut self, tap: WhyTap) {
        self.why = Some(tap);
    }

    #[inline]
    fn note_outlier(&mut self, rec: CycleRecord) {
        if self.outlier_len == TOP_OUTLIERS && rec.value_ns <= self.outlier_min {
            return;
        }
        if self.outlier_len < TOP_OUTLIERS {
            self.outliers[self.outlier_len] = rec;
            self.outlier_len += 1;
        } else {
            // Replace the smallest.
            let mut idx = 0;
            for i in 1..TOP_OUTLIERS {
                if self.outliers[i].value_ns < self.outliers[idx].value_ns {
                    idx = i;
                }
            }
            self.outliers[idx] = rec;
        }
        if self.outlier_len == TOP_OUTLIERS {
            self.outlier_min = self.outliers.iter().map(|o| o.value_ns).min().unwrap_or(0);
        }
    }

    #[inline]
    fn push_block(&mut self, block: Block) {
        if block.cycles == 0 {
            return;
        }
        if self.blocks.len() < self.blocks.capacity() {
            self.blocks.push(block);
        } else {
            self.blocks_dropped += 1;
        }
    }

    /// Runs cycles from deadline `start_ns` until `length` is done or `stop` is raised.
    /// Real-time safe: allocates nothing, takes no lock, prints nothing. This is a
    /// real-time loop, kept whole as cyclictest's timer thread is (wait, measure, record).
    pub fn run(
        &mut self,
        start_ns: u64,
        length: RunLength,
        stop: &AtomicBool,
    ) -> Result<LoopEnd, JitterError> {
        self.waiter.arm(start_ns, self.period_ns)?;
        let period = self.period_ns;
        let end_ns = match length {
            RunLength::Duration(d) => Some(start_ns + d.as_nanos() as u64),
            RunLength::Loops(_) => None,
        };
        let max_cycles = match length {
            RunLength::Loops(n) => n,
            RunLength::Duration(_) => u64::MAX,
        };
        let headroom = self.fragments.map(|f| f.headroom_ns());
        let mut k: u64 = 0; // index of the next deadline
        let mut backlog: u64 = 0; // expirations consumed but not yet processed
        let mut prev_wake: Option<u64> = None;
        let mut block = Block::default();
        let live = Arc::clone(&self.live);
        loop {
            if stop.load(Ordering::Relaxed) {
                self.push_block(block);
                return Ok(LoopEnd::Interrupted);
            }
            let deadline = start_ns + k * period;
            if self.cycles >= max_cycles || end_ns.is_some_and(|e| deadline >= e) {
                self.push_block(block);
                return Ok(LoopEnd::Complete);
            }
            let consumed = if backlog > 0 {
                backlog -= 1;
                1
            } else {
                match self.waiter.wait(deadline) {
                    Some(n) => n,
                    // Interrupted by the wake signal: nothing woke on time, so nothing
                    // is recorded; the top of the loop sees the stop flag.
                    None => continue,
                }
            };
            let now = monotonic_ns();
            let latency = now.saturating_sub(deadline);
            let cycle = self.cycles;
            self.cycles += 1;

            if let Some(w) = self.why.as_mut().filter(|_| headroom.is_none()) {
                if latency > w.above_ns {
                    w.sender.send(crate::why::Miss {
                        t_ns: deadline,
                        end_ns: now,
                        tid: w.tid,
                        kind: crate::why::MissKind::Wakeup,
                    });
                }
            }
            let in_bound = self.current.latency.record(latency);
            if !in_bound {
                keep_record(&mut self.overflows, cycle, deadline, latency);
                live.overflows.fetch_add(1, Ordering::Relaxed);
            }
            if self.outlier_len < TOP_OUTLIERS || latency > self.outlier_min {
                self.note_outlier(CycleRecord {
                    cycle,
                    deadline_ns: deadline,
                    value_ns: latency,
                    cpu: engine::rt::current_cpu().unwrap_or(0) as u32,
                });
            }
            if let Some(prev) = prev_wake {
                self.current.interval.record(now.saturating_sub(prev));
            }
            prev_wake = Some(now);

            if let Some(busy) = &mut self.busy {
                busy.run(self.busy_iterations);
            }

            // Series block.
            if block.cycles == 0 {
                block = Block {
                    offset_ns: deadline - start_ns,
                    min_ns: latency,
                    ..Block::default()
                };
            }
            block.cycles += 1;
            block.min_ns = block.min_ns.min(latency);
            block.max_ns = block.max_ns.max(latency);
            block.sum_ns += latency;

            live.cycles.store(self.cycles, Ordering::Relaxed);
            live.skipped.store(self.skipped, Ordering::Relaxed);
            live.last_ns.store(latency, Ordering::Relaxed);
            live.max_ns.fetch_max(latency, Ordering::Relaxed);

            match headroom {
                Some(headroom) => {
                    let done = monotonic_ns();
                    let completion = done.saturating_sub(deadline);
                    if let Some(h) = &mut self.current.completion {
                        h.record(completion);
                    }
                    block.completion_max_ns = block.completion_max_ns.max(completion);
                    if completion > headroom {
                        if let Some(w) = self.why.as_mut() {
                            w.sender.send(crate::why::Miss {
                                t_ns: deadline,
                                end_ns: done,
                                tid: w.tid,
                                kind: crate::why::MissKind::Overrun,
                            });
                        }
                        self.underrun_count += 1;
                        keep_record(&mut self.underruns, cycle, deadline, completion);
                        live.underruns.fetch_add(1, Ordering::Relaxed);
                        // Re-synchronise to the next boundary, as a driver restarting
                        // after an xrun would.
                        let next = (done - start_ns).div_ceil(period);
                        self.skipped += next.saturating_sub(k + 1);
                        k = next;
                        backlog = 0;
                        if !matches!(self.waiter, Waiter::Nanosleep) {
                            self.waiter.arm(start_ns + k * period, period)?;
                        }
                    } else {
                        // Every fragment must be produced: catch up, skip nothing.
                        k += 1;
                        backlog += consumed - 1;
                    }
                }
                None => {
                    if matches!(self.mode, WakeMode::Nanosleep) {
                        k += 1;
                        let after = monotonic_ns();
                        while start_ns + k * period < after {
                            k += 1;
                            self.skipped += 1;
                        }
                    } else {
                        self.skipped += consumed - 1;
                        k += consumed;
                    }
                }
            }

            if block.cycles >= self.block_cycles {
                self.push_block(block);
                block = Block::default();
            }
            self.hand_off();
        }
    }

    /// At the end of an interval, swaps the filled histograms for empty ones from the
    /// controlling thread. Real-time safe: two wait-free ring operations and a swap.
    /// When no empty set is waiting (the controller is starved), recording continues in
    /// the current set: nothing is lost, the interval is just longer.
    #[inline]
    fn hand_off(&mut self) {
        self.cycles_in_interval += 1;
        let Some(mut h) = self.handoff.take() else {
            return;
        };
        if self.cycles_in_interval >= h.cycles_per_interval {
            if let Ok(fresh) = h.spare.pop() {
                self.close_interval();
                let filled = std::mem::replace(&mut self.current, fresh);
                // Cannot fail: the ring has room for every set in circulation.
                let pushed = h.full.push(filled);
                debug_assert!(pushed.is_ok(), "hand-off ring sized below the pool");
                self.cycles_in_interval = 0;
            }
        }
        self.handoff = Some(h);
    }
}

/// What a finished loop recorded, without its timer (which belongs to the measuring
/// thread).
#[derive(Debug)]
pub struct LoopResults {
    /// Cycles processed.
    pub cycles: u64,
    /// Deadlines skipped.
    pub skipped: u64,
    /// Wake-up latency, interval and completion histograms (the run's totals once
    /// [`run`] has merged the intervals).
    pub histograms: IntervalHistograms,
    /// Overflows with cycle numbers.
    pub overflows: Vec<CycleRecord>,
    /// Would-be under-runs with cycle numbers.
    pub underruns: Vec<CycleRecord>,
    /// All would-be under-runs.
    pub underrun_count: u64,
    /// Largest wake-ups, largest first.
    pub outliers: Vec<CycleRecord>,
    /// Latency against time.
    pub blocks: Vec<Block>,
    /// Blocks not kept.
    pub blocks_dropped: u64,
    /// Busy iterations per cycle.
    pub busy_iterations: u64,
}

impl JitterLoop {
    /// Writes the counts of the interval that ends now into its histogram set.
    #[inline]
    fn close_interval(&mut self) {
        let (cycles, skipped, underruns) = self.interval_mark;
        self.current.cycles = self.cycles - cycles;
        self.current.skipped = self.skipped - skipped;
        self.current.underruns = self.underrun_count - underruns;
        self.interval_mark = (self.cycles, self.skipped, self.underrun_count);
    }

    /// Ends the loop: deletes its timer and hands over what it recorded.
    pub fn into_results(mut self) -> LoopResults {
        self.close_interval();
        let mut outliers: Vec<CycleRecord> = self.outliers[..self.outlier_len].to_vec();
        outliers.sort_by_key(|o| std::cmp::Reverse(o.value_ns));
        LoopResults {
            cycles: self.cycles,
            skipped: self.skipped,
            histograms: self.current,
            overflows: self.overflows,
            underruns: self.underruns,
            underrun_count: self.underrun_count,
            outliers,
            blocks: self.blocks,
            blocks_dropped: self.blocks_dropped,
            busy_iterations: self.busy_iterations,
        }
    }
}
