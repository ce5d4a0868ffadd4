//! A calibrated amount of computation: latencytest's "CPU load" inside each period.
//!
//! latencytest made its audio thread compute for a fixed share of each fragment (10 %,
//! 80 %) to model DSP work. The work must be a fixed *amount* of computation, not "spin
//! until a time": when the thread is preempted the work then ends late, which is exactly
//! what a would-be under-run is. [`BusyWork::calibrate`] measures the machine's speed
//! once (the fastest of several trials, so interference in calibration cannot shrink the
//! work), and [`BusyWork::run`] performs N iterations. Each iteration advances an
//! oscillator and evaluates a sine polynomial: the shape of audio DSP work.
//!
//! `run` is real-time safe: no allocation, no system call.

/// The calibrated kernel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BusyWork {
    /// Measured cost of one iteration (ns), the fastest of the calibration trials.
    pub ns_per_iteration: f64,
    phase: f32,
}

/// One iteration: advance a phase and evaluate a 7th-order sine approximation.
#[inline(always)]
fn step(phase: &mut f32, acc: &mut f32) {
    *phase += 0.013_7;
    if *phase > std::f32::consts::PI {
        *phase -= 2.0 * std::f32::consts::PI;
    }
    let x = *phase;
    let x2 = x * x;
    *acc += x * (1.0 - x2 / 6.0 * (1.0 - x2 / 20.0 * (1.0 - x2 / 42.0)));
}

impl BusyWork {
    /// Times `trials` runs of `iterations` and keeps the fastest.
    pub fn calibrate(iterations: u64, trials: u32) -> BusyWork {
        let mut work = BusyWork {
            ns_per_iteration: 1.0,
            phase: 0.0,
        };
        let mut best = f64::MAX;
        for _ in 0..trials.max(1) {
            let t0 = engine::clock::monotonic_ns();
            work.run(iterations);
            let dt = engine::clock::monotonic_ns() - t0;
            best = best.min(dt as f64 / iterations.max(1) as f64);
        }
        work.ns_per_iteration = best.max(1e-3);
        work
    }

    /// Iterations that take `ns` on an undisturbed CPU.
    pub fn iterations_for_ns(&self, ns: u64) -> u64 {
        (ns as f64 / self.ns_per_iteration).round() as u64
    }

    /// Performs `iterations` iterations. Real-time safe.
    #[inline(never)]
    pub fn run(&mut self, iterations: u64) {
        let mut acc = 0.0f32;
        let mut phase = self.phase;
        for _ in 0..iterations {
            step(&mut phase, &mut acc);
        }
        self.phase = std::hint::black_box(phase);
        std::hint::black_box(acc);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_scales_with_the_work() {
        let w = BusyWork::calibrate(20_000, 5);
        assert!(w.ns_per_iteration > 0.0);
        let n = w.iterations_for_ns(1_000_000);
        assert!(n > 0);
        assert_eq!(
            w.iterations_for_ns(2_000_000),
            (2.0 * 1_000_000.0 / w.ns_per_iteration).round() as u64
        );
    }

    #[test]
    fn work_takes_at_least_its_calibrated_time_most_of_the_time() {
        // The fastest trial is the calibration, so the median run cannot be shorter
        // than about that (allow 20 % for frequency changes).
        let mut w = BusyWork::calibrate(50_000, 7);
        let n = w.iterations_for_ns(500_000);
        let mut times: Vec<u64> = (0..9)
            .map(|_| {
                let t0 = engine::clock::monotonic_ns();
                w.run(n);
                engine::clock::monotonic_ns() - t0
            })
            .collect();
        times.sort_unstable();
        assert!(times[4] as f64 >= 0.8 * 500_000.0, "{times:?}");
    }
}
