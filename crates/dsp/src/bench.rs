//! DSP capacity timing for `audiolat bench`: how long each workload's
//! [`process`](crate::Workload::process) takes per period, next to a naive `f32::sin`
//! oscillator timed in the same run, and how many wavetable voices fit in a share of
//! the period.
//!
//! Not real-time: [`run`] allocates and takes seconds. It only times (with
//! [`std::time::Instant`]); it does no I/O and prints nothing.
//!
//! Every figure is the median of several rounds, each round many back-to-back calls on
//! one period-sized buffer, so a few rounds lost to a hypervisor stealing the CPU for
//! milliseconds do not move it. The figures are for a hot cache and a warmed-up core:
//! a lower bound on what one audio callback costs.

use crate::{Workload, WorkloadKind, DEFAULT_FREQUENCY_HZ, MAX_BANK_VOICES};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Timed rounds per kernel; the median is reported.
const ROUNDS: usize = 9;
/// The capacity search stops doubling here and reports this many voices as a lower bound:
/// the largest `bank:N` a workload can be.
pub const MAX_SEARCH_VOICES: usize = MAX_BANK_VOICES;
/// The capacity bisection stops once the gap between a fit and a miss is at most
/// `1/CAPACITY_RESOLUTION` of the fit.
const CAPACITY_RESOLUTION: usize = 32;
/// The workloads timed besides the reference, in report order.
const KERNELS: [WorkloadKind; 4] = [
    WorkloadKind::Sine,
    WorkloadKind::Poly,
    WorkloadKind::Bank(16),
    WorkloadKind::Bank(64),
];

/// What to time and against what budget.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BenchConfig {
    /// Sample rate the oscillators are prepared for (sets the period's duration).
    pub sample_rate_hz: u32,
    /// Frames per `process` call, as one audio period.
    pub period_frames: usize,
    /// Fraction of the period's duration the DSP may use, e.g. 0.5.
    pub load_target: f64,
    /// Time spent on each kernel, e.g. 0.2 s. Each step of the capacity search takes
    /// half of it. The whole run lasts about 15 times this (2.8 s by default on a machine
    /// that fits 8000 voices; more doublings on faster machines take a little longer).
    pub seconds_per_kernel: f64,
    /// Times the Migrator block and its references are timed (at least 1); the report
    /// gives their medians.
    pub migrator_repeats: usize,
}

/// The sample rates a bench times periods at, Hz (those a stream may run at).
pub const RATE_RANGE_HZ: std::ops::RangeInclusive<u32> = 8_000..=384_000;
/// The periods a bench times, frames (those a stream may run).
pub const PERIOD_RANGE_FRAMES: std::ops::RangeInclusive<usize> = 16..=8192;
/// Longest time spent on each kernel, s (a run lasts about 15 times this).
pub const MAX_SECONDS_PER_KERNEL: f64 = 60.0;
/// Most times the Migrator block is timed.
pub const MAX_MIGRATOR_REPEATS: usize = 1000;

/// A [`BenchConfig`] setting, as [`BenchError`] names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchSetting {
    /// The sample rate.
    Rate,
    /// The period.
    Period,
    /// The share of the period the DSP may use.
    LoadTarget,
    /// The time per kernel.
    SecondsPerKernel,
    /// The Migrator block's repeats.
    MigratorRepeats,
}

impl BenchSetting {
    /// The setting's name in the library's own words.
    pub fn name(self) -> &'static str {
        match self {
            BenchSetting::Rate => "the sample rate",
            BenchSetting::Period => "the period",
            BenchSetting::LoadTarget => "the load target",
            BenchSetting::SecondsPerKernel => "the time per kernel",
            BenchSetting::MigratorRepeats => "the Migrator repeats",
        }
    }

    /// What the setting takes.
    pub fn range(self) -> String {
        match self {
            BenchSetting::Rate => format!(
                "use {} to {} Hz",
                RATE_RANGE_HZ.start(),
                RATE_RANGE_HZ.end()
            ),
            BenchSetting::Period => format!(
                "use {} to {} frames",
                PERIOD_RANGE_FRAMES.start(),
                PERIOD_RANGE_FRAMES.end()
            ),
            BenchSetting::LoadTarget => "use a share above 0 and at most all of the period".into(),
            BenchSetting::SecondsPerKernel => {
                format!("use more than 0 and at most {MAX_SECONDS_PER_KERNEL} s")
            }
            BenchSetting::MigratorRepeats => format!("use 1 to {MAX_MIGRATOR_REPEATS}"),
        }
    }
}

/// A [`BenchConfig`] setting out of its range; `value` is what was asked, with its unit.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchError {
    /// The setting.
    pub setting: BenchSetting,
    /// Its value, as asked.
    pub value: String,
}

impl std::fmt::Display for BenchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} is out of range: {}",
            self.setting.name(),
            self.value,
            self.setting.range()
        )
    }
}

impl std::error::Error for BenchError {}

impl BenchConfig {
    /// Checks every setting against its range, before anything is allocated.
    pub fn validate(&self) -> Result<(), BenchError> {
        let out = |setting, value: String| Err(BenchError { setting, value });
        if !RATE_RANGE_HZ.contains(&self.sample_rate_hz) {
            return out(BenchSetting::Rate, format!("{} Hz", self.sample_rate_hz));
        }
        if !PERIOD_RANGE_FRAMES.contains(&self.period_frames) {
            return out(
                BenchSetting::Period,
                format!("{} frames", self.period_frames),
            );
        }
        if !(self.load_target > 0.0 && self.load_target <= 1.0) {
            return out(BenchSetting::LoadTarget, self.load_target.to_string());
        }
        let each = self.seconds_per_kernel;
        if !(each > 0.0 && each <= MAX_SECONDS_PER_KERNEL) {
            return out(BenchSetting::SecondsPerKernel, format!("{each} s"));
        }
        if !(1..=MAX_MIGRATOR_REPEATS).contains(&self.migrator_repeats) {
            return out(
                BenchSetting::MigratorRepeats,
                self.migrator_repeats.to_string(),
            );
        }
        Ok(())
    }
}

impl Default for BenchConfig {
    /// 44100 Hz, 128 frames, half the period, 0.2 s per kernel (a run of about 3 s).
    fn default() -> BenchConfig {
        BenchConfig {
            sample_rate_hz: 44_100,
            period_frames: 128,
            load_target: 0.5,
            seconds_per_kernel: 0.2,
            migrator_repeats: 1,
        }
    }
}

/// One kernel's median cost.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelTiming {
    /// `"sine"`, `"poly"`, `"bank:16"`, ... or `"reference f32::sin"`.
    pub name: String,
    /// Oscillators computed per sample.
    pub voices: usize,
    /// Median nanoseconds per output sample (all voices).
    pub ns_per_sample: f64,
    /// Median nanoseconds per `process` call of one period.
    pub ns_per_period: f64,
    /// `ns_per_sample / voices`: the cost of one oscillator for one sample.
    pub ns_per_voice_sample: f64,
    /// `ns_per_voice_sample` divided by the reference's `ns_per_sample`: below 1 is
    /// cheaper per voice than calling `f32::sin` (1.0 for the reference itself).
    pub ratio_to_reference: f64,
}

/// [`run`] was stopped through its stop flag before it finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interrupted;

/// The result of [`run`].
#[derive(Clone, Debug, PartialEq)]
pub struct BenchReport {
    /// The configuration that was run.
    pub config: BenchConfig,
    /// The naive oscillator calling `f32::sin` per sample ([`ReferenceSine`]).
    pub reference: KernelTiming,
    /// `sine`, `poly`, `bank:16`, `bank:64`, in that order.
    pub kernels: Vec<KernelTiming>,
    /// Duration of one period: `period_frames / sample_rate_hz`, in ns.
    pub period_ns: f64,
    /// The largest `N` found for which `bank:N`'s median `ns_per_period` is at most
    /// `load_target × period_ns`, to within 1/32 of `N` (the search doubles `N`, then
    /// bisects a few steps); 0 if even `bank:1` does not fit. Capped at
    /// [`MAX_SEARCH_VOICES`], a lower bound when reached.
    pub voice_capacity: usize,
    /// Median ns per period of `bank:voice_capacity` (of `bank:1` when the capacity is 0).
    pub capacity_ns_per_period: f64,
    /// The Migrator synth's block, against its naive reference.
    pub migrator: MigratorTiming,
}

/// One block of the whole Migrator synth (32 objects × 100 oscillators × 32 frames, every
/// pad pressed) on one core, against its throughput reference ([`Roofline`]) and a naive
/// block calling `f32::sin` per oscillator and sample, all timed in the same run: the
/// medians over [`BenchConfig::migrator_repeats`] repeats, each repeat's figures kept.
///
/// [`Roofline`]: crate::migrator::Roofline
#[derive(Clone, Debug, PartialEq)]
pub struct MigratorTiming {
    /// The kernel the synth ran, the fastest the CPU has ("avx512+fma", "avx2+fma" or
    /// "portable").
    pub kernel: String,
    /// The kernels this CPU runs, the fastest first (`kernel` is the first).
    pub available_kernels: Vec<String>,
    /// The kernels compiled in that this CPU does not run (not timed).
    pub unavailable_kernels: Vec<String>,
    /// Median ns per block.
    pub block_ns: f64,
    /// Median ns per block of the portable kernel (the same as `block_ns` where it is
    /// the only one).
    pub portable_block_ns: f64,
    /// Median ns per block of the naive reference.
    pub naive_block_ns: f64,
    /// Median ns per block of the throughput reference, on the synth's kernel.
    pub roofline_ns: f64,
    /// Median ns per block of the throughput reference on the portable kernel (built
    /// like it, for `portable_roofline_ratio`).
    pub portable_roofline_ns: f64,
    /// Median over the repeats of `naive_block_ns / block_ns`.
    pub speedup: f64,
    /// Median over the repeats of `block_ns / roofline_ns`: 1 is the CPU's arithmetic
    /// throughput.
    pub roofline_ratio: f64,
    /// Median over the repeats of `portable_block_ns / portable_roofline_ns`: the
    /// portable kernel against the throughput of the code built as it is (its
    /// target, [`MIGRATOR_TARGET_PORTABLE_ROOFLINE`]).
    pub portable_roofline_ratio: f64,
    /// Median over the repeats of `portable_block_ns / roofline_ns`: the portable kernel
    /// against the roofline of the kernel the synth runs (built with wider vectors and
    /// FMA where the CPU has them). Information, not a target: the portable build
    /// cannot issue the same work in fewer instructions than its own roofline does.
    pub portable_vs_best_roofline: f64,
    /// The block's period at 44.1 kHz, 32 frames: 725.6 µs.
    pub block_period_ns: f64,
    /// Each repeat's figures, in the order they ran.
    pub repeats: Vec<MigratorRepeat>,
}

/// One repeat of the Migrator timings: each the median of 9 timed rounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MigratorRepeat {
    /// ns per block on the synth's kernel.
    pub block_ns: f64,
    /// ns per block on the portable kernel.
    pub portable_block_ns: f64,
    /// ns per block of the naive reference.
    pub naive_block_ns: f64,
    /// ns per block of the throughput reference.
    pub roofline_ns: f64,
    /// ns per block of the throughput reference on the portable kernel.
    pub portable_roofline_ns: f64,
}

/// The study's target for one synth block on this class of machine, in ns.
pub const MIGRATOR_TARGET_NS: f64 = 15_000.0;
/// The target as a ratio to the naive reference timed in the same run.
pub const MIGRATOR_TARGET_SPEEDUP: f64 = 60.0;
/// The target for the kernel against its roofline (block / roofline, same run).
pub const MIGRATOR_TARGET_ROOFLINE: f64 = 1.6;
/// The target for the portable kernel against its own roofline (the roofline built with
/// the same target features as the kernel, as for [`MIGRATOR_TARGET_ROOFLINE`]).
pub const MIGRATOR_TARGET_PORTABLE_ROOFLINE: f64 = 2.5;

/// The reference kernel: a naive oscillator that calls `f32::sin` for every sample, its
/// phase accumulated in f32 radians and wrapped at 2π. Peak 0.5, starting at its peak
/// like the workloads.
#[derive(Clone, Copy, Debug)]
pub struct ReferenceSine {
    phase: f32,
    increment: f32,
}

impl ReferenceSine {
    /// A reference oscillator at `frequency_hz` for `sample_rate_hz`.
    pub fn new(frequency_hz: f32, sample_rate_hz: u32) -> ReferenceSine {
        ReferenceSine {
            phase: std::f32::consts::FRAC_PI_2,
            increment: std::f32::consts::TAU * frequency_hz / sample_rate_hz as f32,
        }
    }

    /// Fills `out` with the next samples. Real-time safe.
    pub fn process(&mut self, out: &mut [f32]) {
        for sample in out {
            *sample = 0.5 * self.phase.sin();
            self.phase += self.increment;
            if self.phase >= std::f32::consts::TAU {
                self.phase -= std::f32::consts::TAU;
            }
        }
    }
}

/// Times the reference and each workload's `process` on one period, then searches the
/// voice capacity. Takes about 15 × `seconds_per_kernel`, unless `stop` is raised: then it
/// returns [`Interrupted`] within one timed round.
///
/// # Panics
///
/// If the configuration is out of its ranges ([`BenchConfig::validate`] says which).
pub fn run(config: &BenchConfig, stop: &AtomicBool) -> Result<BenchReport, Interrupted> {
    if let Err(e) = config.validate() {
        panic!("bench: {e}");
    }
    let frames = config.period_frames;
    let mut buffer = vec![0.0f32; frames];

    let mut reference_sine = ReferenceSine::new(DEFAULT_FREQUENCY_HZ, config.sample_rate_hz);
    let reference_ns = median_ns_per_call(
        |out| reference_sine.process(out),
        &mut buffer,
        config.seconds_per_kernel,
        stop,
    )?;
    let reference = timing(
        "reference f32::sin".to_string(),
        1,
        reference_ns,
        frames,
        None,
    );
    let reference_ns_per_sample = reference.ns_per_sample;

    let mut kernels = Vec::new();
    for kind in KERNELS {
        let ns = time_workload(kind, config, &mut buffer, config.seconds_per_kernel, stop)?;
        kernels.push(timing(
            kind.to_string(),
            kind.voices(),
            ns,
            frames,
            Some(reference_ns_per_sample),
        ));
    }

    let period_ns = frames as f64 * 1e9 / f64::from(config.sample_rate_hz);
    let budget_ns = config.load_target * period_ns;
    let step_seconds = config.seconds_per_kernel / 2.0;
    let (voice_capacity, capacity_ns_per_period) = search_capacity(budget_ns, |voices| {
        time_workload(
            WorkloadKind::Bank(voices),
            config,
            &mut buffer,
            step_seconds,
            stop,
        )
    })?;

    let migrator = time_migrator(config.seconds_per_kernel, config.migrator_repeats, stop)?;

    Ok(BenchReport {
        config: *config,
        reference,
        kernels,
        period_ns,
        voice_capacity,
        capacity_ns_per_period,
        migrator,
    })
}

/// Times the Migrator synth's block on its best kernel and on the portable one, its
/// throughput reference and the naive reference, each for about `seconds`, `repeats`
/// times (at least once).
pub fn time_migrator(
    seconds: f64,
    repeats: usize,
    stop: &AtomicBool,
) -> Result<MigratorTiming, Interrupted> {
    use crate::migrator::{Kernel, Migrator, MigratorConfig, BLOCK_FRAMES};
    let config = MigratorConfig::default();
    let kernel = Migrator::new(config).kernel();
    let repeats = (0..repeats.max(1))
        .map(|_| time_migrator_once(config, seconds, stop))
        .collect::<Result<Vec<_>, _>>()?;
    let median = |f: &dyn Fn(&MigratorRepeat) -> f64| {
        let mut v: Vec<f64> = repeats.iter().map(f).collect();
        v.sort_unstable_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let portable_block_ns = if kernel == Kernel::Portable {
        median(&|r| r.block_ns)
    } else {
        median(&|r| r.portable_block_ns)
    };
    Ok(MigratorTiming {
        kernel: kernel.to_string(),
        available_kernels: Kernel::available().map(|k| k.to_string()).collect(),
        unavailable_kernels: Kernel::ALL
            .into_iter()
            .filter(|k| !k.is_available())
            .map(|k| k.to_string())
            .collect(),
        block_ns: median(&|r| r.block_ns),
        portable_block_ns,
        naive_block_ns: median(&|r| r.naive_block_ns),
        roofline_ns: median(&|r| r.roofline_ns),
        portable_roofline_ns: median(&|r| r.portable_roofline_ns),
        speedup: median(&|r| r.naive_block_ns / r.block_ns),
        roofline_ratio: median(&|r| r.block_ns / r.roofline_ns),
        portable_roofline_ratio: median(&|r| r.portable_block_ns / r.portable_roofline_ns),
        portable_vs_best_roofline: median(&|r| r.portable_block_ns / r.roofline_ns),
        block_period_ns: BLOCK_FRAMES as f64 * 1e9 / config.sample_rate_hz,
        repeats,
    })
}

/// One repeat of [`time_migrator`].
fn time_migrator_once(
    config: crate::migrator::MigratorConfig,
    seconds: f64,
    stop: &AtomicBool,
) -> Result<MigratorRepeat, Interrupted> {
    use crate::migrator::{
        Kernel, Migrator, NaiveReference, Pad, Roofline, BLOCK_FRAMES, OBJECTS, OUTPUT_CHANNELS,
    };
    let pads = [Pad {
        x: 0.5,
        y: 0.5,
        pressure: 1.0,
    }; OBJECTS];
    let mut out = [[0.0f32; OUTPUT_CHANNELS]; BLOCK_FRAMES];
    let mut unused = [0.0f32; 1];
    let mut synth = Migrator::new(config);
    let mut time = |f: &mut dyn FnMut(&mut [[f32; OUTPUT_CHANNELS]; BLOCK_FRAMES])| {
        median_ns_per_call(|_| f(black_box(&mut out)), &mut unused, seconds, stop)
    };
    let block_ns = time(&mut |out| synth.process(&pads, out))?;
    let mut roofline = Roofline::like(&synth);
    let roofline_ns = time(&mut |out| roofline.process(out))?;
    let (portable_block_ns, portable_roofline_ns) = if synth.kernel() == Kernel::Portable {
        (block_ns, roofline_ns)
    } else {
        let mut portable = Migrator::new(config);
        portable.force_portable_kernel();
        let mut roofline = Roofline::like(&portable);
        (
            time(&mut |out| portable.process(&pads, out))?,
            time(&mut |out| roofline.process(out))?,
        )
    };
    let mut naive = NaiveReference::like(&synth);
    let naive_block_ns = time(&mut |out| naive.process(out))?;
    Ok(MigratorRepeat {
        block_ns,
        portable_block_ns,
        naive_block_ns,
        roofline_ns,
        portable_roofline_ns,
    })
}

fn timing(
    name: String,
    voices: usize,
    ns_per_period: f64,
    frames: usize,
    reference_ns_per_sample: Option<f64>,
) -> KernelTiming {
    let ns_per_sample = ns_per_period / frames as f64;
    let ns_per_voice_sample = ns_per_sample / voices as f64;
    KernelTiming {
        name,
        voices,
        ns_per_sample,
        ns_per_period,
        ns_per_voice_sample,
        ratio_to_reference: reference_ns_per_sample
            .map_or(1.0, |reference| ns_per_voice_sample / reference),
    }
}

/// Median ns per `process` call of a sounding `kind` on `buffer`.
fn time_workload(
    kind: WorkloadKind,
    config: &BenchConfig,
    buffer: &mut [f32],
    seconds: f64,
    stop: &AtomicBool,
) -> Result<f64, Interrupted> {
    let mut workload = Workload::new(kind, DEFAULT_FREQUENCY_HZ);
    workload.prepare(config.sample_rate_hz, buffer.len());
    workload.note_on(0);
    median_ns_per_call(|out| workload.process(out), buffer, seconds, stop)
}

/// Runs `kernel` on `buffer` for about `seconds`: one calibration round (which also warms
/// up caches and the branch predictor) that counts how many calls fill a round, then
/// `ROUNDS` timed rounds of that many calls. Returns the median round's ns per call, or
/// [`Interrupted`] once `stop` is raised (checked between calls and between rounds).
fn median_ns_per_call(
    mut kernel: impl FnMut(&mut [f32]),
    buffer: &mut [f32],
    seconds: f64,
    stop: &AtomicBool,
) -> Result<f64, Interrupted> {
    let round_ns = seconds * 1e9 / (ROUNDS + 1) as f64;
    let start = Instant::now();
    let mut calls_per_round = 0u64;
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(Interrupted);
        }
        kernel(black_box(&mut *buffer));
        black_box(&*buffer);
        calls_per_round += 1;
        if start.elapsed().as_nanos() as f64 >= round_ns {
            break;
        }
    }
    let mut rounds = [0.0f64; ROUNDS];
    for round in &mut rounds {
        if stop.load(Ordering::Relaxed) {
            return Err(Interrupted);
        }
        let start = Instant::now();
        for _ in 0..calls_per_round {
            kernel(black_box(&mut *buffer));
            black_box(&*buffer);
        }
        *round = start.elapsed().as_nanos() as f64 / calls_per_round as f64;
    }
    rounds.sort_unstable_by(f64::total_cmp);
    Ok(rounds[ROUNDS / 2])
}

/// The largest voice count whose cost fits `budget_ns` (to within 1/32), and its cost:
/// doubles from 1 until a miss, then bisects between the last fit and the first miss.
fn search_capacity(
    budget_ns: f64,
    mut cost_ns: impl FnMut(usize) -> Result<f64, Interrupted>,
) -> Result<(usize, f64), Interrupted> {
    let mut fit: Option<(usize, f64)> = None;
    let mut voices = 1;
    let (miss, miss_ns) = loop {
        let ns = cost_ns(voices)?;
        if ns > budget_ns {
            break (voices, ns);
        }
        fit = Some((voices, ns));
        if voices >= MAX_SEARCH_VOICES {
            return Ok((voices, ns));
        }
        voices = (voices * 2).min(MAX_SEARCH_VOICES);
    };
    let Some((mut low, mut low_ns)) = fit else {
        return Ok((0, miss_ns));
    };
    let mut high = miss;
    while high - low > (low / CAPACITY_RESOLUTION).max(1) {
        let middle = low + (high - low) / 2;
        let ns = cost_ns(middle)?;
        if ns <= budget_ns {
            (low, low_ns) = (middle, ns);
        } else {
            high = middle;
        }
    }
    Ok((low, low_ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_reports_every_kernel_with_positive_timings() {
        let config = BenchConfig {
            seconds_per_kernel: 0.005,
            load_target: 1.0,
            migrator_repeats: 3,
            ..BenchConfig::default()
        };
        let report = run(&config, &AtomicBool::new(false)).unwrap();
        assert_eq!(report.config, config);
        assert_eq!(report.reference.name, "reference f32::sin");
        assert_eq!(report.reference.voices, 1);
        assert_eq!(report.reference.ratio_to_reference, 1.0);
        let names: Vec<&str> = report.kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["sine", "poly", "bank:16", "bank:64"]);
        let voices: Vec<usize> = report.kernels.iter().map(|k| k.voices).collect();
        assert_eq!(voices, [1, 3, 16, 64]);
        for kernel in std::iter::once(&report.reference).chain(&report.kernels) {
            let name = &kernel.name;
            assert!(
                kernel.ns_per_sample > 0.0 && kernel.ns_per_sample.is_finite(),
                "{name}"
            );
            let per_period = kernel.ns_per_sample * 128.0;
            assert!(
                (kernel.ns_per_period - per_period).abs() <= 1e-9 * per_period,
                "{name}"
            );
            let per_voice = kernel.ns_per_sample / kernel.voices as f64;
            assert!(
                (kernel.ns_per_voice_sample - per_voice).abs() <= 1e-9 * per_voice,
                "{name}"
            );
            let ratio = kernel.ns_per_voice_sample / report.reference.ns_per_sample;
            assert!(
                (kernel.ratio_to_reference - ratio).abs() <= 1e-9 * ratio,
                "{name}"
            );
        }
        let period_ns = 128.0 * 1e9 / 44_100.0;
        assert!((report.period_ns - period_ns).abs() < 1e-6);
        assert!(
            report.voice_capacity >= 1,
            "bank:1 fits a whole 2.9 ms period"
        );
        assert!(report.capacity_ns_per_period > 0.0);
        assert!(report.capacity_ns_per_period <= report.period_ns);
        // The Migrator's figures are the medians of its repeats, each ratio the median
        // of the repeats' own ratios (a ratio within one repeat, never across them).
        let m = &report.migrator;
        assert_eq!(m.repeats.len(), 3);
        // Every kernel compiled in is named, as run here or not.
        assert_eq!(m.available_kernels[0], m.kernel);
        assert_eq!(m.available_kernels.last().unwrap(), "portable");
        assert_eq!(
            m.available_kernels.len() + m.unavailable_kernels.len(),
            crate::migrator::Kernel::ALL.len()
        );
        let median = |f: fn(&MigratorRepeat) -> f64| {
            let mut v: Vec<f64> = m.repeats.iter().map(f).collect();
            v.sort_unstable_by(f64::total_cmp);
            v[1]
        };
        assert_eq!(m.block_ns, median(|r| r.block_ns));
        assert_eq!(m.roofline_ns, median(|r| r.roofline_ns));
        assert_eq!(m.naive_block_ns, median(|r| r.naive_block_ns));
        assert_eq!(m.roofline_ratio, median(|r| r.block_ns / r.roofline_ns));
        assert_eq!(m.speedup, median(|r| r.naive_block_ns / r.block_ns));
        assert_eq!(
            m.portable_roofline_ratio,
            median(|r| r.portable_block_ns / r.portable_roofline_ns)
        );
        assert_eq!(
            m.portable_vs_best_roofline,
            median(|r| r.portable_block_ns / r.roofline_ns)
        );
        for r in &m.repeats {
            let all = [
                r.block_ns,
                r.portable_block_ns,
                r.roofline_ns,
                r.naive_block_ns,
            ];
            for ns in all.into_iter().chain([r.portable_roofline_ns]) {
                assert!(ns > 0.0 && ns.is_finite(), "{r:?}");
            }
        }
    }

    #[test]
    fn default_config_is_the_documented_one() {
        let config = BenchConfig::default();
        assert_eq!(config.sample_rate_hz, 44_100);
        assert_eq!(config.period_frames, 128);
        assert_eq!(config.load_target, 0.5);
        assert_eq!(config.seconds_per_kernel, 0.2);
        assert_eq!(config.migrator_repeats, 1);
    }

    #[test]
    fn capacity_search_finds_the_largest_fit_within_resolution() {
        for (ns_per_voice, budget) in [(100.0, 12_345.0), (1.0, 5_000.0), (7.0, 7.0), (3.0, 1e5)] {
            let exact = (budget / ns_per_voice) as usize;
            let mut calls = 0;
            let (capacity, ns) = search_capacity(budget, |voices| {
                calls += 1;
                Ok(voices as f64 * ns_per_voice)
            })
            .unwrap();
            assert!(capacity <= exact, "{capacity} > {exact}");
            assert!(
                capacity >= exact - exact / CAPACITY_RESOLUTION,
                "{capacity} << {exact}"
            );
            assert_eq!(ns, capacity as f64 * ns_per_voice);
            assert!(
                calls <= 2 * exact.ilog2() as usize + 8,
                "{calls} steps for {exact}"
            );
        }
    }

    #[test]
    fn capacity_is_zero_when_one_voice_misses_and_capped_at_the_search_limit() {
        assert_eq!(
            search_capacity(50.0, |v| Ok(100.0 * v as f64)),
            Ok((0, 100.0))
        );
        let (capacity, _) = search_capacity(f64::INFINITY, |v| Ok(v as f64)).unwrap();
        assert_eq!(capacity, MAX_SEARCH_VOICES);
        // Every capacity it can report is a workload `--workload bank:N` accepts.
        assert_eq!(
            format!("bank:{capacity}").parse::<WorkloadKind>(),
            Ok(WorkloadKind::Bank(capacity))
        );
    }

    #[test]
    fn a_raised_stop_flag_interrupts_the_run() {
        let stop = AtomicBool::new(true);
        assert_eq!(run(&BenchConfig::default(), &stop), Err(Interrupted));
    }

    #[test]
    fn reference_sine_starts_at_its_peak_and_stays_bounded() {
        let mut reference = ReferenceSine::new(440.0, 48_000);
        let mut out = vec![0.0f32; 48_000];
        reference.process(&mut out);
        assert_eq!(out[0], 0.5 * std::f32::consts::FRAC_PI_2.sin());
        assert!(out.iter().all(|x| x.abs() <= 0.5));
        let rising = out.windows(2).filter(|w| w[0] < 0.0 && w[1] >= 0.0).count();
        assert!((439..=441).contains(&rising), "{rising} cycles in 1 s");
    }
}
