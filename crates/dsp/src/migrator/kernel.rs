//! The oscillator kernel: one object's block of phasor steps and its renormalisation,
//! compiled twice (portable, and with AVX2 and FMA where the CPU has them). Real-time:
//! no allocation, lock or panic.

use super::{Kernel, Lanes, Object, BLOCK_FRAMES, GROUPS, LANES};

pub(super) fn detect_kernel() -> Kernel {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return Kernel::Avx2Fma;
        }
    }
    Kernel::Portable
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn render_avx2_fma(state: &mut Object, mono: &mut [f32; BLOCK_FRAMES]) {
    render::<true>(state, mono)
}

pub(super) fn render_portable(state: &mut Object, mono: &mut [f32; BLOCK_FRAMES]) {
    render::<false>(state, mono)
}

/// `a * b + c`, fused where the kernel was compiled with FMA.
#[inline(always)]
fn madd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// One object's block: step all its oscillators 32 times, summing their samples into
/// `mono`; then renormalise each oscillator to its amplitude.
#[inline(always)]
fn render<const FMA: bool>(state: &mut Object, mono: &mut [f32; BLOCK_FRAMES]) {
    let mut acc = [[0.0f32; LANES]; BLOCK_FRAMES];
    // 13 lane groups as 5 + 4 + 4: no group is left to step on its own, where each
    // sample would wait for the previous one's multiply-add.
    const _: () = assert!(GROUPS == 13);
    step_chunk::<5, FMA>(state, 0, &mut acc);
    step_chunk::<4, FMA>(state, 5, &mut acc);
    step_chunk::<4, FMA>(state, 9, &mut acc);
    for (sample, lanes) in mono.iter_mut().zip(acc.iter()) {
        *sample = lanes.iter().sum();
    }
    for group in 0..GROUPS {
        for lane in 0..LANES {
            let (y, d, e) = (
                state.y[group][lane],
                state.d[group][lane],
                state.eps[group][lane],
            );
            // d² - ε·y·(y - d), relative to its value at the nominal amplitude.
            // Clamped, so one Newton step can never overshoot (retune keeps the ratio near 1).
            let ratio =
                (madd::<FMA>(d, d, -(e * y * (y - d))) * state.inv_norm[group][lane]).min(2.0);
            let factor = madd::<FMA>(-0.5, ratio, 1.5);
            state.y[group][lane] = y * factor;
            state.d[group][lane] = d * factor;
        }
    }
}

#[inline(always)]
fn step_chunk<const G: usize, const FMA: bool>(
    state: &mut Object,
    first: usize,
    acc: &mut [[f32; LANES]; BLOCK_FRAMES],
) {
    let mut y: [Lanes; G] = std::array::from_fn(|g| state.y[first + g]);
    let mut d: [Lanes; G] = std::array::from_fn(|g| state.d[first + g]);
    let e: [Lanes; G] = std::array::from_fn(|g| state.eps[first + g]);
    for row in acc.iter_mut() {
        let mut sum = *row;
        for g in 0..G {
            for lane in 0..LANES {
                let next_d = madd::<FMA>(e[g][lane], y[g][lane], d[g][lane]);
                let next_y = y[g][lane] + next_d;
                d[g][lane] = next_d;
                y[g][lane] = next_y;
                sum[lane] += next_y;
            }
        }
        *row = sum;
    }
    state.y[first..first + G].copy_from_slice(&y);
    state.d[first..first + G].copy_from_slice(&d);
}
