//! The NAS Parallel Benchmarks' EP ("embarrassingly parallel") kernel, written here.
//!
//! EP generates pairs of uniform pseudo-random numbers with NPB's linear congruential
//! generator (x ← 5¹³·x mod 2⁴⁶, seed 271828183), turns those inside the unit circle into
//! Gaussian deviates by the Marsaglia polar method, and tallies their sums and the counts
//! in square annuli. It is the CPU-bound "EP benchmark" interference of the Tessellation
//! study. NPB publishes the sums for each class, so a run checks itself:
//! [`EpClass::verify`].
//!
//! The generator is computed exactly with integers (NPB's `randlc` does the same
//! arithmetic in doubles, split into 23-bit halves); the streams are identical.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const A: u64 = 1_220_703_125; // 5^13
const SEED: u64 = 271_828_183;
const MOD_MASK: u64 = (1 << 46) - 1;
const R46: f64 = 1.0 / (1u64 << 46) as f64;
/// log2 of the pairs per batch (NPB's MK).
const MK: u32 = 16;
const NK: usize = 1 << MK;
/// Annuli counted (NPB's NQ).
pub const NQ: usize = 10;

/// A problem class with NPB's published verification sums.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EpClass {
    /// Class letter.
    pub name: char,
    /// log2 of the number of pairs (NPB's M).
    pub m: u32,
    /// Published sum of the X deviates.
    pub sx: f64,
    /// Published sum of the Y deviates.
    pub sy: f64,
}

/// Class S: 2^24 pairs.
#[allow(clippy::excessive_precision)] // NPB's published digits, as printed
pub const CLASS_S: EpClass = EpClass {
    name: 'S',
    m: 24,
    sx: -3.247_834_652_034_740e3,
    sy: -6.958_407_078_382_297e3,
};
/// Class W: 2^25 pairs.
#[allow(clippy::excessive_precision)] // NPB's published digits, as printed
pub const CLASS_W: EpClass = EpClass {
    name: 'W',
    m: 25,
    sx: -2.863_319_731_645_753e3,
    sy: -6.320_053_679_109_499e3,
};
/// Class A: 2^28 pairs.
#[allow(clippy::excessive_precision)] // NPB's published digits, as printed
pub const CLASS_A: EpClass = EpClass {
    name: 'A',
    m: 28,
    sx: -4.295_875_165_629_892e3,
    sy: -1.580_732_573_678_431e4,
};

/// NPB's relative tolerance for the sums.
pub const EPSILON: f64 = 1e-8;

/// What an EP run computed.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct EpResult {
    /// Sum of X deviates.
    pub sx: f64,
    /// Sum of Y deviates.
    pub sy: f64,
    /// Gaussian pairs accepted.
    pub pairs: u64,
    /// Counts per annulus (max(|x|,|y|) in [l, l+1)).
    pub q: [u64; NQ],
}

impl EpResult {
    fn merge(&mut self, other: &EpResult) {
        self.sx += other.sx;
        self.sy += other.sy;
        self.pairs += other.pairs;
        for (a, b) in self.q.iter_mut().zip(other.q.iter()) {
            *a += b;
        }
    }
}

impl EpClass {
    /// Number of batches of 2^16 pairs in the class.
    pub fn batches(&self) -> u64 {
        1u64 << (self.m - MK)
    }

    /// True when the sums agree with NPB's to a relative 1e-8.
    pub fn verify(&self, r: &EpResult) -> bool {
        let rel = |got: f64, want: f64| ((got - want) / want).abs();
        rel(r.sx, self.sx) <= EPSILON && rel(r.sy, self.sy) <= EPSILON
    }
}

#[inline]
fn mul_mod46(a: u64, x: u64) -> u64 {
    a.wrapping_mul(x) & MOD_MASK
}

fn pow_mod46(mut base: u64, mut exp: u64) -> u64 {
    let mut acc = 1u64;
    while exp > 0 {
        if exp & 1 == 1 {
            acc = mul_mod46(acc, base);
        }
        base = mul_mod46(base, base);
        exp >>= 1;
    }
    acc
}

/// Runs batch `k` (0-based) of 2^16 pairs, using `buf` (2^17 doubles) as scratch.
pub fn batch(k: u64, buf: &mut [f64]) -> EpResult {
    assert!(buf.len() >= 2 * NK, "scratch must hold 2^17 doubles");
    // Seed of batch k: SEED · A^(2·NK·k), by squaring (NPB's `an` loop).
    let an = pow_mod46(A, 2 * NK as u64);
    let mut x = mul_mod46(SEED, pow_mod46(an, k));
    for v in buf.iter_mut().take(2 * NK) {
        x = mul_mod46(A, x);
        *v = x as f64 * R46;
    }
    let mut r = EpResult::default();
    for pair in buf[..2 * NK].chunks_exact(2) {
        let x1 = 2.0 * pair[0] - 1.0;
        let x2 = 2.0 * pair[1] - 1.0;
        let t1 = x1 * x1 + x2 * x2;
        if t1 <= 1.0 {
            let t2 = (-2.0 * t1.ln() / t1).sqrt();
            let t3 = x1 * t2;
            let t4 = x2 * t2;
            let l = t3.abs().max(t4.abs()) as usize;
            if l < NQ {
                r.q[l] += 1;
            }
            r.sx += t3;
            r.sy += t4;
            r.pairs += 1;
        }
    }
    r
}

/// Runs a whole class on `threads` threads (batches interleaved) and returns the sums.
pub fn run(class: &EpClass, threads: usize) -> EpResult {
    let threads = threads.max(1);
    let batches = class.batches();
    let partials: Vec<EpResult> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads as u64)
            .map(|t| {
                s.spawn(move || {
                    let mut buf = vec![0.0; 2 * NK];
                    let mut acc = EpResult::default();
                    let mut k = t;
                    while k < batches {
                        acc.merge(&batch(k, &mut buf));
                        k += threads as u64;
                    }
                    acc
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("EP worker panicked"))
            .collect()
    });
    let mut total = EpResult::default();
    for p in &partials {
        total.merge(p);
    }
    total
}

/// Runs class S over and over on `threads` threads until `stop` is set: the EP
/// interference load. Each completed pass is verified; `passes` counts the good ones and
/// `failures` the bad (a bad pass means the CPU or the build is broken). Each thread
/// calls `thread_start` first (to take its cell's policy).
pub fn run_until(
    threads: usize,
    stop: &AtomicBool,
    passes: &AtomicU64,
    failures: &AtomicU64,
    thread_start: &(dyn Fn() + Sync),
) {
    let threads = threads.max(1);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                thread_start();
                let mut buf = vec![0.0; 2 * NK];
                while !stop.load(Ordering::Relaxed) {
                    // One thread's share is a whole pass: threads run independent passes.
                    let mut acc = EpResult::default();
                    for k in 0..CLASS_S.batches() {
                        if stop.load(Ordering::Relaxed) {
                            return;
                        }
                        acc.merge(&batch(k, &mut buf));
                    }
                    if CLASS_S.verify(&acc) {
                        passes.fetch_add(1, Ordering::Relaxed);
                    } else {
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_matches_npb_randlc() {
        // NPB's randlc in doubles, transcribed, for a few steps from the seed.
        fn randlc(x: &mut f64, a: f64) -> f64 {
            let r23 = 0.5f64.powi(23);
            let r46 = r23 * r23;
            let t23 = 2.0f64.powi(23);
            let t46 = t23 * t23;
            let t1 = r23 * a;
            let a1 = t1.trunc();
            let a2 = a - t23 * a1;
            let t1 = r23 * *x;
            let x1 = t1.trunc();
            let x2 = *x - t23 * x1;
            let t1 = a1 * x2 + a2 * x1;
            let t2 = (r23 * t1).trunc();
            let z = t1 - t23 * t2;
            let t3 = t23 * z + a2 * x2;
            let t4 = (r46 * t3).trunc();
            *x = t3 - t46 * t4;
            r46 * *x
        }
        let mut xf = SEED as f64;
        let mut xi = SEED;
        for _ in 0..1000 {
            let rf = randlc(&mut xf, A as f64);
            xi = mul_mod46(A, xi);
            assert_eq!(xf, xi as f64);
            assert_eq!(rf, xi as f64 * R46);
        }
    }

    #[test]
    fn class_s_matches_npb_published_results() {
        let r = run(&CLASS_S, 2);
        assert!(CLASS_S.verify(&r), "sums {} {}", r.sx, r.sy);
        // NPB 3.3 class S output: 13176389 pairs and these annulus counts.
        assert_eq!(r.pairs, 13_176_389);
        assert_eq!(
            &r.q[..6],
            &[6_140_517, 5_865_300, 1_100_361, 68_546, 1_648, 17]
        );
    }

    #[test]
    fn wrong_sums_fail_verification() {
        let mut r = EpResult {
            sx: CLASS_S.sx,
            sy: CLASS_S.sy,
            ..Default::default()
        };
        assert!(CLASS_S.verify(&r));
        r.sx *= 1.0 + 1e-6;
        assert!(!CLASS_S.verify(&r));
    }

    #[test]
    fn thread_count_does_not_change_the_result() {
        let tiny = EpClass {
            name: 'T',
            m: 18,
            sx: 0.0,
            sy: 0.0,
        };
        let a = run(&tiny, 1);
        let b = run(&tiny, 3);
        assert_eq!(a.pairs, b.pairs);
        assert_eq!(a.q, b.q);
        assert!((a.sx - b.sx).abs() < 1e-9 * a.sx.abs().max(1.0));
    }
}
