//! The oscillator kernel: one object's block of phasor steps and its renormalisation,
//! its mix into the channels, compiled three times from the same source: portable, with
//! AVX2 and FMA, and with AVX-512 (F and VL) and FMA, the last two chosen at run time
//! where the CPU has them. Real-time: no allocation, lock or panic.
//!
//! **Layout of the work.** An object's 13 lane groups are stepped as two chunks of 7 and
//! 6 groups, each chunk's `y` and `d` held in registers across the 32 frames (14 and 12
//! of AVX2's 16 vector registers; `ε` is read as an operand). With AVX-512VL's 32 vector
//! registers the 13 groups are one chunk (26 registers). Within a chunk every
//! frame's multiply-adds and adds of the 6 or 7 groups are independent of each other, so
//! one oscillator's chain `d → y → d` (a multiply-add's latency plus an add's) is hidden
//! behind the others' work. Each frame's oscillators are summed lane-wise (a tree of
//! adds) into one vector per frame; the object's smoothed gain scales that vector into
//! its channel's accumulator ([`Mix`]), and the 8 lanes of each channel are summed
//! horizontally once per block, when the output rows are written ([`Mix::add_to`]).

use super::{Kernel, Lanes, Object, BLOCK_FRAMES, GROUPS, LANES, OUTPUT_CHANNELS};

/// The fastest kernel this CPU runs.
pub(super) fn detect_kernel() -> Kernel {
    Kernel::available().next().unwrap_or(Kernel::Portable)
}

impl Kernel {
    /// Every kernel, the fastest first.
    pub const ALL: [Kernel; 3] = [Kernel::Avx512, Kernel::Avx2Fma, Kernel::Portable];

    /// Whether this CPU runs it (the portable kernel everywhere).
    pub fn is_available(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            match self {
                Kernel::Avx512 => {
                    has!("avx512f") && has!("avx512vl") && has!("avx2") && has!("fma")
                }
                Kernel::Avx2Fma => has!("avx2") && has!("fma"),
                Kernel::Portable => true,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Kernel::Portable
        }
    }

    /// The kernels this CPU runs, the fastest first.
    pub fn available() -> impl Iterator<Item = Kernel> {
        Kernel::ALL.into_iter().filter(|k| k.is_available())
    }
}

/// An object's oscillator state, borrowed from the synth (or the roofline's copy).
pub(super) struct Phasors<'a> {
    pub y: &'a mut [Lanes; GROUPS],
    pub d: &'a mut [Lanes; GROUPS],
    pub eps: &'a [Lanes; GROUPS],
    pub inv_norm: &'a [Lanes; GROUPS],
}

impl Object {
    pub(super) fn phasors(&mut self) -> Phasors<'_> {
        Phasors {
            y: &mut self.y,
            d: &mut self.d,
            eps: &self.eps,
            inv_norm: &self.inv_norm,
        }
    }
}

/// Each frame's lane-wise sum of an object's oscillators.
pub(super) type FrameLanes = [Lanes; BLOCK_FRAMES];

/// The block's channel accumulators, lane-wise: `[frame][channel]`.
pub(super) struct Mix {
    lanes: [[Lanes; OUTPUT_CHANNELS]; BLOCK_FRAMES],
}

impl Mix {
    pub(super) fn new() -> Mix {
        Mix {
            lanes: [[[0.0; LANES]; OUTPUT_CHANNELS]; BLOCK_FRAMES],
        }
    }

    /// Add an object's frames into `channel`, frame `f` scaled by
    /// `start_gain + slope·(f + 1)` (the per-sample smoothing of its pressure).
    pub(super) fn add_object(
        &mut self,
        kernel: Kernel,
        frames: &FrameLanes,
        channel: usize,
        start_gain: f32,
        slope: f32,
    ) {
        let channel = channel % OUTPUT_CHANNELS;
        match kernel {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: Kernel::Avx2Fma is only chosen when the CPU reports AVX2 and FMA.
            Kernel::Avx2Fma => unsafe {
                add_object_avx2_fma(&mut self.lanes, frames, channel, start_gain, slope)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: Kernel::Avx512 is only chosen when the CPU reports AVX-512F, VL, FMA.
            Kernel::Avx512 => unsafe {
                add_object_avx512(&mut self.lanes, frames, channel, start_gain, slope)
            },
            _ => add_object::<false>(&mut self.lanes, frames, channel, start_gain, slope),
        }
    }

    /// Sum each channel's lanes and add them to `out`'s rows.
    pub(super) fn add_to(&self, kernel: Kernel, out: &mut [[f32; OUTPUT_CHANNELS]; BLOCK_FRAMES]) {
        match kernel {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above; Kernel::Avx512 is only chosen when the CPU has AVX2 too.
            Kernel::Avx2Fma | Kernel::Avx512 => unsafe { reduce_avx2(&self.lanes, out) },
            _ => reduce_portable(&self.lanes, out),
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn add_object_avx2_fma(
    lanes: &mut [[Lanes; OUTPUT_CHANNELS]; BLOCK_FRAMES],
    frames: &FrameLanes,
    channel: usize,
    start_gain: f32,
    slope: f32,
) {
    add_object::<true>(lanes, frames, channel, start_gain, slope)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,fma")]
unsafe fn add_object_avx512(
    lanes: &mut [[Lanes; OUTPUT_CHANNELS]; BLOCK_FRAMES],
    frames: &FrameLanes,
    channel: usize,
    start_gain: f32,
    slope: f32,
) {
    add_object::<true>(lanes, frames, channel, start_gain, slope)
}

#[inline(always)]
fn add_object<const FMA: bool>(
    lanes: &mut [[Lanes; OUTPUT_CHANNELS]; BLOCK_FRAMES],
    frames: &FrameLanes,
    channel: usize,
    start_gain: f32,
    slope: f32,
) {
    for (frame, (row, sums)) in lanes.iter_mut().zip(frames).enumerate() {
        let gain = start_gain + slope * (frame + 1) as f32;
        let acc = &mut row[channel];
        for lane in 0..LANES {
            acc[lane] = madd::<FMA>(gain, sums[lane], acc[lane]);
        }
    }
}

fn reduce_portable(
    lanes: &[[Lanes; OUTPUT_CHANNELS]; BLOCK_FRAMES],
    out: &mut [[f32; OUTPUT_CHANNELS]; BLOCK_FRAMES],
) {
    for (row, channels) in out.iter_mut().zip(lanes) {
        for (sample, acc) in row.iter_mut().zip(channels) {
            let pairs = [
                acc[0] + acc[4],
                acc[1] + acc[5],
                acc[2] + acc[6],
                acc[3] + acc[7],
            ];
            *sample += (pairs[0] + pairs[2]) + (pairs[1] + pairs[3]);
        }
    }
}

/// [`reduce_portable`] with AVX: per frame, the 8 channels' lane vectors summed by
/// horizontal adds into one vector of 8 channel sums.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn reduce_avx2(
    lanes: &[[Lanes; OUTPUT_CHANNELS]; BLOCK_FRAMES],
    out: &mut [[f32; OUTPUT_CHANNELS]; BLOCK_FRAMES],
) {
    use std::arch::x86_64::*;
    const _: () = assert!(LANES == 8 && OUTPUT_CHANNELS == 8);
    for (row, channels) in out.iter_mut().zip(lanes) {
        let m: [__m256; 8] = std::array::from_fn(|c| _mm256_loadu_ps(channels[c].as_ptr()));
        // hadd(a, b) = [a0+a1, a2+a3, b0+b1, b2+b3 | a4+a5, a6+a7, b4+b5, b6+b7].
        let h01 = _mm256_hadd_ps(m[0], m[1]);
        let h23 = _mm256_hadd_ps(m[2], m[3]);
        let h45 = _mm256_hadd_ps(m[4], m[5]);
        let h67 = _mm256_hadd_ps(m[6], m[7]);
        // [c0 0..3, c1 0..3, c2 0..3, c3 0..3 | the same over lanes 4..7].
        let low = _mm256_hadd_ps(h01, h23);
        let high = _mm256_hadd_ps(h45, h67);
        let sums = _mm256_add_ps(
            _mm256_permute2f128_ps::<0x20>(low, high),
            _mm256_permute2f128_ps::<0x31>(low, high),
        );
        let old = _mm256_loadu_ps(row.as_ptr());
        _mm256_storeu_ps(row.as_mut_ptr(), _mm256_add_ps(old, sums));
    }
}

/// One object's block on `kernel` (see `render_with`): the synth's.
#[inline]
pub(super) fn render(kernel: Kernel, state: Phasors<'_>, frames: &mut FrameLanes) {
    render_on::<false>(kernel, state, frames)
}

/// [`render`] or, with `CUT`, the roofline's block.
#[inline]
pub(super) fn render_on<const CUT: bool>(
    kernel: Kernel,
    state: Phasors<'_>,
    frames: &mut FrameLanes,
) {
    match kernel {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: Kernel::Avx2Fma is only chosen when the CPU reports AVX2 and FMA.
        Kernel::Avx2Fma => unsafe { render_avx2_fma::<CUT>(state, frames) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: Kernel::Avx512 is only chosen when the CPU reports AVX-512F, VL, FMA.
        Kernel::Avx512 => unsafe { render_avx512::<CUT>(state, frames) },
        _ => render_with::<false, CUT, false>(state, frames),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn render_avx2_fma<const CUT: bool>(state: Phasors<'_>, frames: &mut FrameLanes) {
    render_with::<true, CUT, false>(state, frames)
}

/// The same source with AVX-512VL's 32 vector registers: all 13 groups in one chunk.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,fma")]
unsafe fn render_avx512<const CUT: bool>(state: Phasors<'_>, frames: &mut FrameLanes) {
    render_with::<true, CUT, true>(state, frames)
}

/// `a * b + c`, fused where the kernel was compiled with FMA.
#[inline(always)]
pub(super) fn madd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// One object's block: step all its oscillators 32 times, each frame's lane-wise sum
/// into `frames`; then renormalise each oscillator to its amplitude. With `CUT` (the
/// roofline), `y` steps by `ε` instead of by the new `d`: the same operations, none
/// waiting on another of the same oscillator and frame. With `ONE_CHUNK` (32 vector
/// registers) the 13 groups are stepped as one chunk, else as chunks of 7 and 6.
#[inline(always)]
fn render_with<const FMA: bool, const CUT: bool, const ONE_CHUNK: bool>(
    mut state: Phasors<'_>,
    frames: &mut FrameLanes,
) {
    const _: () = assert!(GROUPS == 13);
    if ONE_CHUNK {
        step_chunk::<13, FMA, CUT, false>(&mut state, 0, frames);
    } else {
        step_chunk::<7, FMA, CUT, false>(&mut state, 0, frames);
        step_chunk::<6, FMA, CUT, true>(&mut state, 7, frames);
    }
    for group in 0..GROUPS {
        let (y, d, e) = (state.y[group], state.d[group], state.eps[group]);
        let inv_norm = state.inv_norm[group];
        let mut factor = [0.0f32; LANES];
        for lane in 0..LANES {
            let (y, d, e) = (y[lane], d[lane], e[lane]);
            // d² - ε·y·(y - d), relative to its value at the nominal amplitude.
            // Clamped, so one Newton step can never overshoot (retune keeps the ratio
            // near 1).
            let ratio = (madd::<FMA>(d, d, -(e * y * (y - d))) * inv_norm[lane]).min(2.0);
            factor[lane] = madd::<FMA>(-0.5, ratio, 1.5);
        }
        state.y[group] = std::array::from_fn(|lane| y[lane] * factor[lane]);
        state.d[group] = std::array::from_fn(|lane| d[lane] * factor[lane]);
    }
}

/// Step `G` lane groups from `first` over the block, their `y` and `d` in registers;
/// each frame's sum of them is written into `frames` (added to it with `ADD`).
#[inline(always)]
fn step_chunk<const G: usize, const FMA: bool, const CUT: bool, const ADD: bool>(
    state: &mut Phasors<'_>,
    first: usize,
    frames: &mut FrameLanes,
) {
    let mut y: [Lanes; G] = std::array::from_fn(|g| state.y[first + g]);
    let mut d: [Lanes; G] = std::array::from_fn(|g| state.d[first + g]);
    let e: &[Lanes] = &state.eps[first..first + G];
    // The groups in loops of at most 7, which the compiler unrolls fully, so that `y` and
    // `d` stay in registers (a loop over 13 is left rolled, and vectorised across
    // groups with gathers and scatters under AVX-512).
    let split = G.min(7);
    for row in frames.iter_mut() {
        step_groups::<G, FMA, CUT>(&mut y, &mut d, e, 0..split);
        step_groups::<G, FMA, CUT>(&mut y, &mut d, e, split..G);
        let add = |a: Lanes, b: Lanes| -> Lanes { std::array::from_fn(|l| a[l] + b[l]) };
        let sum = if split < G {
            add(tree_sum(&y[..split]), tree_sum(&y[split..]))
        } else {
            tree_sum(&y)
        };
        for lane in 0..LANES {
            row[lane] = if ADD {
                row[lane] + sum[lane]
            } else {
                sum[lane]
            };
        }
    }
    state.y[first..first + G].copy_from_slice(&y);
    state.d[first..first + G].copy_from_slice(&d);
}

/// One frame's step of groups `range` of a chunk.
#[inline(always)]
fn step_groups<const G: usize, const FMA: bool, const CUT: bool>(
    y: &mut [Lanes; G],
    d: &mut [Lanes; G],
    e: &[Lanes],
    range: std::ops::Range<usize>,
) {
    for g in range {
        for lane in 0..LANES {
            let next_d = madd::<FMA>(e[g][lane], y[g][lane], d[g][lane]);
            let step = if CUT { e[g][lane] } else { next_d };
            d[g][lane] = next_d;
            y[g][lane] += step;
        }
    }
}

/// The lane-wise sum of at most 8 vectors as a balanced tree of adds.
#[inline(always)]
fn tree_sum(v: &[Lanes]) -> Lanes {
    let add = |a: Lanes, b: Lanes| -> Lanes { std::array::from_fn(|l| a[l] + b[l]) };
    match v.len() {
        1 => v[0],
        _ => {
            let mut level: [Lanes; 8] = [[0.0; LANES]; 8];
            level[..v.len()].copy_from_slice(v);
            let mut n = v.len();
            while n > 1 {
                let half = n / 2;
                for i in 0..half {
                    level[i] = add(level[2 * i], level[2 * i + 1]);
                }
                if n % 2 == 1 {
                    level[half] = level[n - 1];
                }
                n = half + n % 2;
            }
            level[0]
        }
    }
}
