//! The audio thread's side: the [`Processor`] that plays the test signal and hands the captured blocks over.

use super::*;

/// The audio thread's side: sends the signal, hands the capture over.
pub(super) struct LoopProcessor {
    pub(super) tone: Arc<MultiTone>,
    pub(super) warmup_frames: u64,
    pub(super) spacing: u64,
    pub(super) impulses: u64,
    pub(super) insert: u64,
    pub(super) peak: f32,
    pub(super) start: Option<u64>,
    pub(super) shared: Arc<ProcessorShared>,
    pub(super) samples: rtrb::Producer<f32>,
    pub(super) blocks: rtrb::Producer<(u64, u32)>,
}

#[derive(Default)]
pub(super) struct ProcessorShared {
    /// Stream position of the first click (`u64::MAX` until the first cycle).
    pub(super) start: AtomicU64,
    pub(super) blocks_dropped: AtomicU64,
}

impl LoopProcessor {
    /// The reference signal at signal position `q` (from the first click).
    #[inline]
    pub(super) fn signal(&self, q: i64) -> f32 {
        let clicks = (self.impulses * self.spacing) as i64;
        if q < 0 {
            0.0
        } else if q < clicks {
            if q % self.spacing as i64 == 0 {
                self.peak
            } else {
                0.0
            }
        } else {
            self.tone.sample_at(q - clicks)
        }
    }
}

impl Processor for LoopProcessor {
    fn prepare(&mut self, _: &StreamInfo) {}

    fn process(&mut self, cycle: &Cycle, io: &mut Io<'_>) {
        let start = *self.start.get_or_insert_with(|| {
            let s = cycle.first_frame + self.warmup_frames;
            self.shared.start.store(s, Ordering::Release);
            s
        });
        let base = cycle.first_frame as i64 - start as i64 - self.insert as i64;
        for (i, x) in io.output.iter_mut().enumerate() {
            *x = self.signal(base + i as i64);
        }
        if let Some(input) = io.input {
            if self.samples.slots() >= input.len() && self.blocks.slots() >= 1 {
                for &x in input {
                    let _ = self.samples.push(x);
                }
                let _ = self.blocks.push((cycle.first_frame, input.len() as u32));
            } else {
                self.shared.blocks_dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
