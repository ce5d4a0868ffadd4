//! `cargo bench -p dsp`: each workload's `process` on one 128-frame period at 44.1 kHz,
//! next to the naive oscillator that calls `f32::sin` per sample. Throughput is in
//! output samples (frames), so the per-sample costs compare directly; divide by the
//! voice count for the cost of one oscillator.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dsp::bench::ReferenceSine;
use dsp::{Workload, WorkloadKind, DEFAULT_FREQUENCY_HZ};
use std::hint::black_box;

const SAMPLE_RATE_HZ: u32 = 44_100;
const PERIOD_FRAMES: usize = 128;

fn process_one_period(c: &mut Criterion) {
    let mut group = c.benchmark_group("process_128_frames");
    group.throughput(Throughput::Elements(PERIOD_FRAMES as u64));
    let mut out = vec![0.0f32; PERIOD_FRAMES];

    let mut reference = ReferenceSine::new(DEFAULT_FREQUENCY_HZ, SAMPLE_RATE_HZ);
    group.bench_function("reference f32::sin", |b| {
        b.iter(|| {
            reference.process(black_box(&mut out));
            black_box(&out);
        })
    });

    for kind in [
        WorkloadKind::Sine,
        WorkloadKind::Poly,
        WorkloadKind::Bank(16),
        WorkloadKind::Bank(64),
    ] {
        let mut workload = Workload::new(kind, DEFAULT_FREQUENCY_HZ);
        workload.prepare(SAMPLE_RATE_HZ, PERIOD_FRAMES);
        workload.note_on(0);
        group.bench_function(kind.to_string(), |b| {
            b.iter(|| {
                workload.process(black_box(&mut out));
                black_box(&out);
            })
        });
    }
    group.finish();
}

/// One block of the whole Migrator synth (3,200 oscillators × 32 frames, every pad
/// pressed) on every kernel this CPU runs (the others are named on stderr, not run),
/// each beside its throughput reference (the roofline: the same operations built with
/// the same target features, none waiting on another; the kernel's time over it shows as
/// a ratio), and the naive block calling `f32::sin` per oscillator and sample.
fn migrator_block(c: &mut Criterion) {
    use dsp::migrator::*;
    let mut group = c.benchmark_group("migrator_block");
    group.throughput(Throughput::Elements(
        (OBJECTS * OSCILLATORS_PER_OBJECT * BLOCK_FRAMES) as u64,
    ));
    let pads = [Pad {
        x: 0.5,
        y: 0.5,
        pressure: 1.0,
    }; OBJECTS];
    let mut out = [[0.0f32; OUTPUT_CHANNELS]; BLOCK_FRAMES];
    let synth = Migrator::new(MigratorConfig::default());
    for kernel in Kernel::ALL {
        let mut on_kernel = Migrator::new(MigratorConfig::default());
        if !on_kernel.force_kernel(kernel) {
            eprintln!("migrator_block: the {kernel} kernel is not run, this CPU does not have it");
            continue;
        }
        group.bench_function(kernel.to_string(), |b| {
            b.iter(|| on_kernel.process(&pads, black_box(&mut out)))
        });
        let mut roofline = Roofline::like(&on_kernel);
        group.bench_function(format!("roofline ({kernel})"), |b| {
            b.iter(|| roofline.process(black_box(&mut out)))
        });
    }
    let mut naive = NaiveReference::like(&synth);
    group.bench_function("naive f32::sin", |b| {
        b.iter(|| naive.process(black_box(&mut out)))
    });
    group.finish();
}

criterion_group!(benches, process_one_period, migrator_block);
criterion_main!(benches);
