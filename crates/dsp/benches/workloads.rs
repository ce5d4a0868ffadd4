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

criterion_group!(benches, process_one_period);
criterion_main!(benches);
