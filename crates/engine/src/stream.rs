//! What every backend shares: the audio thread's per-cycle accounting around
//! [`Processor::process`] ([`CycleRunner`]), and the counters and end reason the stream's
//! owner reads from another thread ([`StreamShared`]).
//!
//! [`CycleRunner::run`] is the one place the engine calls a processor. On the audio thread
//! it reads the clock, calls the processor inside `catch_unwind` and the
//! [`process_guard`](crate::guard::process_guard) (denormals flushed to zero; in debug
//! builds, `assert_no_alloc`), pushes one [`CycleRecord`] into a pre-sized ring and bumps
//! atomic counters: no allocation, lock or print. A panic is caught, its message kept
//! (with a `try_lock`, never a wait) and the stream outputs silence from then on.

use crate::audio::{
    CheckedStart, Cycle, CycleRecord, DuplexStart, Io, Processor, StreamStatus, TimingSource,
    XrunRecord,
};
use crate::clock::monotonic_ns;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A running stream with no cycle for this long (or 16 periods, if longer) is reported as
/// stalled.
pub const STALL_AFTER_MS: u64 = 2000;

/// Counters and state shared by a stream's audio thread and the thread that owns it.
#[derive(Default)]
pub(crate) struct StreamShared {
    pub(crate) cycles: AtomicU64,
    /// CLOCK_MONOTONIC ns of the latest cycle's start.
    pub(crate) last_callback_ns: AtomicU64,
    /// The audio thread's scheduling, read by that thread in its first cycle.
    pub(crate) audio_thread: std::sync::OnceLock<crate::rt::Policy>,
    /// The audio thread's id (its TID), read by that thread in its first cycle; 0 before.
    pub(crate) audio_tid: std::sync::atomic::AtomicI32,
    pub(crate) xruns: AtomicU64,
    pub(crate) gaps: AtomicU64,
    pub(crate) dropped: AtomicU64,
    pub(crate) ended_flag: AtomicBool,
    ended: Mutex<Option<String>>,
    pub(crate) panicked: AtomicBool,
    panic: Mutex<Option<String>>,
    pub(crate) alloc_violations: AtomicU64,
    xrun_log: Mutex<Vec<XrunRecord>>,
    /// The latest duplex start (see [`DuplexStart`]), written by the audio thread.
    duplex_start: DuplexStartCell,
}

/// A [`DuplexStart`] the audio thread writes and any thread reads, in atomics (a
/// sequence count makes a read that overlaps a write try again): never lost, never a
/// lock on the audio thread.
#[derive(Default)]
struct DuplexStartCell {
    /// Even when stable; odd while being written. 0: never written.
    seq: AtomicU64,
    skew: std::sync::atomic::AtomicI64,
    attempts: std::sync::atomic::AtomicU32,
    starts: std::sync::atomic::AtomicU32,
    /// Bit 0: linked; bit 1: the skew was known; bit 2: steady offset.
    bits: std::sync::atomic::AtomicU32,
}

impl DuplexStartCell {
    fn store(&self, d: DuplexStart) {
        self.seq.fetch_add(1, Ordering::AcqRel);
        self.skew
            .store(d.skew_frames.unwrap_or(0), Ordering::Relaxed);
        self.attempts.store(d.attempts, Ordering::Relaxed);
        self.starts.store(d.starts, Ordering::Relaxed);
        self.bits.store(
            u32::from(d.linked)
                | u32::from(d.skew_frames.is_some()) << 1
                | u32::from(d.steady_offset) << 2,
            Ordering::Relaxed,
        );
        self.seq.fetch_add(1, Ordering::AcqRel);
    }

    fn load(&self) -> Option<DuplexStart> {
        loop {
            let before = self.seq.load(Ordering::Acquire);
            if before == 0 {
                return None;
            }
            let bits = self.bits.load(Ordering::Relaxed);
            let d = DuplexStart {
                linked: bits & 1 != 0,
                skew_frames: (bits & 2 != 0).then(|| self.skew.load(Ordering::Relaxed)),
                attempts: self.attempts.load(Ordering::Relaxed),
                starts: self.starts.load(Ordering::Relaxed),
                steady_offset: bits & 4 != 0,
            };
            if before.is_multiple_of(2) && self.seq.load(Ordering::Acquire) == before {
                return Some(d);
            }
            std::hint::spin_loop();
        }
    }
}

impl StreamShared {
    /// Marks the stream as ended (the server went away, the device failed), keeping the
    /// first reason. Never waits: safe from a notification thread.
    pub(crate) fn end(&self, reason: &str) {
        if let Ok(mut e) = self.ended.try_lock() {
            if e.is_none() {
                *e = Some(reason.to_string());
            }
        }
        self.ended_flag.store(true, Ordering::SeqCst);
    }

    /// Records how a duplex stream started. For a push backend's own thread, between
    /// cycles (atomics only).
    pub(crate) fn note_duplex_start(&self, start: DuplexStart) {
        self.duplex_start.store(start);
    }

    /// Records an under-run (or over-run) the backend saw now. Not for the audio thread of
    /// a pull backend (it locks); a push backend's own thread may call it after its cycle.
    pub(crate) fn note_xrun(&self, mono_ns: u64) {
        let record = XrunRecord {
            mono_ns,
            cycles_done: self.cycles.load(Ordering::Relaxed),
        };
        self.xruns.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut log) = self.xrun_log.lock() {
            log.push(record);
        }
    }

    /// Under-runs recorded since the last call.
    pub(crate) fn take_xruns(&self) -> Vec<XrunRecord> {
        self.xrun_log
            .lock()
            .map(|mut l| std::mem::take(&mut *l))
            .unwrap_or_default()
    }

    /// The status without a backend's own reasons for ending.
    pub(crate) fn status(&self) -> StreamStatus {
        let shutdown = self.ended_flag.load(Ordering::SeqCst).then(|| {
            self.ended
                .lock()
                .ok()
                .and_then(|r| r.clone())
                .unwrap_or_else(|| "the stream ended".into())
        });
        let panic = self.panicked.load(Ordering::SeqCst).then(|| {
            self.panic
                .lock()
                .ok()
                .and_then(|p| p.clone())
                .unwrap_or_else(|| "a panic".into())
        });
        StreamStatus {
            cycles: self.cycles.load(Ordering::Relaxed),
            xruns: self.xruns.load(Ordering::Relaxed),
            gaps: self.gaps.load(Ordering::Relaxed),
            records_dropped: self.dropped.load(Ordering::Relaxed),
            shutdown,
            panic,
            audio_thread: self.audio_thread.get().copied(),
            audio_tid: Some(self.audio_tid.load(Ordering::Relaxed)).filter(|&t| t > 0),
            alloc_violations: self.alloc_violations.load(Ordering::Relaxed),
            duplex_start: self.duplex_start.load(),
            unmatched_captures: None,
            frame_count_restarts: None,
        }
    }

    /// How long the stream has had no cycle, when that is longer than the stall limit
    /// ([`STALL_AFTER_MS`] or 16 periods): `(silent ns, cycles so far)`.
    pub(crate) fn stall(&self, started_ns: u64, period_ns: f64) -> Option<(u64, u64)> {
        let limit_ns = (STALL_AFTER_MS * 1_000_000).max((16.0 * period_ns) as u64);
        let last_ns = self
            .last_callback_ns
            .load(Ordering::Relaxed)
            .max(started_ns);
        let silent_ns = monotonic_ns().saturating_sub(last_ns);
        (silent_ns > limit_ns).then(|| (silent_ns, self.cycles.load(Ordering::Relaxed)))
    }
}

/// The text a panic carried (`"a panic without a message"` when it was not a string).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".into()
    }
}

thread_local! {
    /// Set while this thread runs a processor: the panic hook stays silent there
    /// (printing allocates and blocks; the message is kept through `catch_unwind`).
    static IN_CALLBACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Installs, once, a panic hook that is silent on an audio thread and otherwise defers
/// to the hook that was there before.
pub(crate) fn install_quiet_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_CALLBACK.with(|c| c.get()) {
                previous(info);
            }
        }));
    });
}

/// The audio thread's side of a stream: runs the processor once per cycle with the
/// engine's accounting. Owned by the audio thread.
pub(crate) struct CycleRunner {
    processor: Box<dyn Processor>,
    records: rtrb::Producer<CycleRecord>,
    shared: Arc<StreamShared>,
    index: u64,
    next_frame: u64,
}

/// A cycle as the backend sees it, before the runner numbers it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CycleTiming {
    /// Stream position of the cycle's first frame.
    pub(crate) first_frame: u64,
    /// Nominal start of the cycle, CLOCK_MONOTONIC ns.
    pub(crate) nominal_ns: u64,
    /// Time the cycle spans, ns.
    pub(crate) period_ns: f64,
    /// When the cycle's processing really started (the callback or the wake-up).
    pub(crate) callback_ns: u64,
    /// The callback started more than a period after the start the stream's phase
    /// predicted ([`Cycle::overran`]); only a backend that checks its starts knows.
    pub(crate) overran: bool,
}

impl CycleRunner {
    /// Wraps a prepared processor. Call on the thread that starts the stream.
    pub(crate) fn new(
        processor: Box<dyn Processor>,
        records: rtrb::Producer<CycleRecord>,
        shared: Arc<StreamShared>,
    ) -> CycleRunner {
        install_quiet_panic_hook();
        CycleRunner {
            processor,
            records,
            shared,
            index: 0,
            next_frame: 0,
        }
    }

    /// Runs one cycle on the audio thread: `io.output` is `frames` long. Real-time safe.
    ///
    /// Every backend's audio thread calls this, and this is where the processor runs
    /// inside [`process_guard`](crate::guard::process_guard): denormals flushed to zero
    /// and, in debug builds, the allocation guard (a test binary that installs
    /// `assert_no_alloc::AllocDisabler` counts any allocation made here).
    ///
    /// The cycle's start is the backend's ([`TimingSource::Backend`]), checked as
    /// [`CheckedStart`] promises: a callback never starts before its cycle, so a start
    /// the backend puts after the callback that runs it is the callback's time
    /// ([`TimingSource::OwnCallback`]: ALSA's jack PCM stamps its status when the
    /// callback reads it, after the wake-up, and its queue moves by whole periods; its
    /// start would otherwise come out a few hundred ns after the callback, a negative
    /// lateness). A backend that checks its starts itself calls
    /// [`CycleRunner::run_checked`].
    pub(crate) fn run(&mut self, timing: CycleTiming, io: &mut Io<'_>) {
        let checked = if timing.nominal_ns > timing.callback_ns {
            CheckedStart {
                ns: timing.callback_ns,
                period_ns: timing.period_ns,
                source: TimingSource::OwnCallback,
            }
        } else {
            CheckedStart {
                ns: timing.nominal_ns,
                period_ns: timing.period_ns,
                source: TimingSource::Backend,
            }
        };
        self.run_checked(timing, Some(checked), io);
    }

    /// [`CycleRunner::run`] with the cycle's start as the backend checked it (`None`:
    /// not known). Real-time safe.
    pub(crate) fn run_checked(
        &mut self,
        timing: CycleTiming,
        checked: Option<CheckedStart>,
        io: &mut Io<'_>,
    ) {
        crate::guard::process_guard(|| self.run_guarded(timing, checked, io));
        // The count is per thread: publish the audio thread's for readers elsewhere.
        #[cfg(debug_assertions)]
        self.shared
            .alloc_violations
            .store(assert_no_alloc::violation_count() as u64, Ordering::Relaxed);
    }

    fn run_guarded(&mut self, timing: CycleTiming, checked: Option<CheckedStart>, io: &mut Io<'_>) {
        IN_CALLBACK.with(|c| c.set(true));
        self.run_inner(timing, checked, io);
        IN_CALLBACK.with(|c| c.set(false));
    }

    fn run_inner(&mut self, timing: CycleTiming, checked: Option<CheckedStart>, io: &mut Io<'_>) {
        let shared = &*self.shared;
        shared
            .last_callback_ns
            .store(timing.callback_ns, Ordering::Relaxed);
        if self.index == 0 {
            // Two system calls, once: what the audio thread really runs at.
            let _ = shared.audio_thread.set(crate::rt::current_thread_policy());
            // SAFETY: gettid has no preconditions.
            shared
                .audio_tid
                .store(unsafe { libc::gettid() }, Ordering::Relaxed);
        }
        if shared.panicked.load(Ordering::Relaxed) {
            io.output.fill(0.0);
            shared.cycles.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let frames = io.output.len() as u32;
        let gap_frames = if self.index > 0 {
            timing.first_frame.saturating_sub(self.next_frame)
        } else {
            0
        };
        if gap_frames > 0 {
            shared.gaps.fetch_add(1, Ordering::Relaxed);
        }
        self.next_frame = timing.first_frame + u64::from(frames);
        let cycle = Cycle {
            index: self.index,
            frames,
            first_frame: timing.first_frame,
            nominal_ns: timing.nominal_ns,
            period_ns: timing.period_ns,
            callback_ns: timing.callback_ns,
            checked,
            overran: timing.overran,
        };
        let started = monotonic_ns();
        let processor = &mut self.processor;
        let result = catch_unwind(AssertUnwindSafe(|| processor.process(&cycle, io)));
        let dsp_ns = monotonic_ns().saturating_sub(started);
        if let Err(payload) = result {
            io.output.fill(0.0);
            shared.panicked.store(true, Ordering::SeqCst);
            if let Ok(mut p) = shared.panic.try_lock() {
                *p = Some(panic_message(payload.as_ref()));
            }
        }
        let record = CycleRecord {
            cycle,
            dsp_ns,
            gap_frames,
        };
        if self.records.push(record).is_err() {
            shared.dropped.fetch_add(1, Ordering::Relaxed);
        }
        self.index += 1;
        shared.cycles.fetch_add(1, Ordering::Relaxed);
    }
}
