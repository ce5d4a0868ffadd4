use super::*;
use crate::spectrum::{magnitude_spectrum, peak_bin};

const RATE: f64 = 44_100.0;

fn fixed() -> MigratorConfig {
    MigratorConfig {
        migrate_every_s: None,
        ..MigratorConfig::default()
    }
}

fn pressed(pressure: f32) -> [Pad; OBJECTS] {
    [Pad {
        x: 0.0,
        y: 0.0,
        pressure,
    }; OBJECTS]
}

fn cents(measured: f64, configured: f64) -> f64 {
    1200.0 * (measured / configured).log2()
}

/// The oscillator's phase from its state: `y = A cos θ`, `y[n-1] = A cos(θ - ω)`.
fn phase(synth: &Migrator, object: usize, index: usize, w: f64) -> f64 {
    let state = &synth.objects[object - synth.first_object];
    let (group, lane) = (index / LANES, index % LANES);
    let y = state.y[group][lane] as f64;
    let previous = y - state.d[group][lane] as f64;
    let sin_theta = (previous - y * w.cos()) / w.sin();
    sin_theta.atan2(y)
}

/// A synth of `objects` on `kernel`, or `None` (and one line on the test's stderr,
/// shown even when the test passes) where this CPU does not run it.
fn on_kernel(kernel: Kernel, config: MigratorConfig, objects: Range<usize>) -> Option<Migrator> {
    let mut synth = Migrator::with_objects(config, objects);
    if synth.force_kernel(kernel) {
        return Some(synth);
    }
    // Written to stderr directly: libtest captures `eprintln!` of a passing test.
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr(),
        "the {kernel} kernel was NOT run: this CPU does not have it"
    );
    None
}

fn wrap(x: f64) -> f64 {
    (x + std::f64::consts::PI).rem_euclid(std::f64::consts::TAU) - std::f64::consts::PI
}

/// Three minutes of audio, 248,063 blocks: every oscillator of the object keeps its
/// amplitude to 1e-6 and its frequency to 1 cent (measured by the phase it gains).
fn hold_for_three_minutes(kernel: Kernel) {
    let Some(mut synth) = on_kernel(kernel, fixed(), 0..2) else {
        return;
    };
    let mut pads = pressed(0.0);
    pads[0].pressure = 1.0;
    pads[1].pressure = 1.0;
    // Low, middle and high frequencies, the lowest where `2 cos ω` would be off by
    // cents in f32.
    for index in 0..OSCILLATORS_PER_OBJECT {
        synth.set_frequency(0, index, 27.5 * 1.05f64.powi(index as i32 % 80));
    }
    let ws: Vec<f64> = (0..OSCILLATORS_PER_OBJECT)
        .map(|i| std::f64::consts::TAU * synth.frequency(0, i).unwrap() / RATE)
        .collect();
    let mut last: Vec<f64> = (0..OSCILLATORS_PER_OBJECT)
        .map(|i| phase(&synth, 0, i, ws[i]))
        .collect();
    let mut deviation = vec![0.0f64; OSCILLATORS_PER_OBJECT];
    let blocks = (180.0 * RATE / BLOCK_FRAMES as f64).ceil() as usize;
    let mut out = [[0.0f32; OUTPUT_CHANNELS]; BLOCK_FRAMES];
    let mut worst_amplitude = 0.0f64;
    for block in 0..blocks {
        synth.process(&pads, &mut out);
        // The phase every 16 blocks is enough to unwrap the small deviation.
        if block % 16 == 15 || block == blocks - 1 {
            let since = if block % 16 == 15 { 16 } else { block % 16 + 1 };
            for i in 0..OSCILLATORS_PER_OBJECT {
                let now = phase(&synth, 0, i, ws[i]);
                let expected_step = ws[i] * (since * BLOCK_FRAMES) as f64;
                deviation[i] += wrap(now - last[i] - expected_step);
                last[i] = now;
            }
        }
        if block % 1024 == 0 || block == blocks - 1 {
            for object in 0..2 {
                for i in 0..OSCILLATORS_PER_OBJECT {
                    let a = synth.amplitude(object, i).unwrap();
                    let nominal = synth.nominal_amplitude(object, i).unwrap();
                    worst_amplitude = worst_amplitude.max((a / nominal - 1.0).abs());
                }
            }
        }
    }
    assert!(
        worst_amplitude < 1e-6,
        "amplitude drifted by {worst_amplitude:e}"
    );
    let samples = (blocks * BLOCK_FRAMES) as f64;
    let worst_cents = (0..OSCILLATORS_PER_OBJECT)
        .map(|i| (1200.0 * (1.0 + deviation[i] / (ws[i] * samples)).log2()).abs())
        .fold(0.0, f64::max);
    eprintln!("3 minutes, {}: amplitude within {worst_amplitude:.2e}, frequency within {worst_cents:.2e} cents", synth.kernel());
    for i in 0..OSCILLATORS_PER_OBJECT {
        let relative = deviation[i] / (ws[i] * samples);
        let error_cents = 1200.0 * (1.0 + relative).log2();
        assert!(
            error_cents.abs() < 1.0,
            "oscillator {i} at {:.2} Hz: {error_cents} cents over 3 minutes",
            synth.frequency(0, i).unwrap()
        );
    }
}

#[test]
fn three_minutes_keep_amplitude_and_frequency_avx512() {
    hold_for_three_minutes(Kernel::Avx512);
}

#[test]
fn three_minutes_keep_amplitude_and_frequency_avx2_fma() {
    hold_for_three_minutes(Kernel::Avx2Fma);
}

#[test]
fn three_minutes_keep_amplitude_and_frequency_portable() {
    hold_for_three_minutes(Kernel::Portable);
}

#[test]
fn every_oscillator_is_found_in_the_spectrum_at_its_frequency_within_a_cent_avx512() {
    spectrum_holds_every_oscillator(Kernel::Avx512);
}

#[test]
fn every_oscillator_is_found_in_the_spectrum_at_its_frequency_within_a_cent_avx2_fma() {
    spectrum_holds_every_oscillator(Kernel::Avx2Fma);
}

#[test]
fn every_oscillator_is_found_in_the_spectrum_at_its_frequency_within_a_cent_portable() {
    spectrum_holds_every_oscillator(Kernel::Portable);
}

fn spectrum_holds_every_oscillator(kernel: Kernel) {
    let Some(mut synth) = on_kernel(kernel, fixed(), 0..OBJECTS) else {
        return;
    };
    // Each channel mixes objects c, c+8, c+16, c+24: 400 oscillators, given distinct
    // frequencies 2.5 Hz apart (7 bins of the analysis), offset per channel.
    for object in 0..OBJECTS {
        let channel = object % OUTPUT_CHANNELS;
        let rank = object / OUTPUT_CHANNELS;
        for index in 0..OSCILLATORS_PER_OBJECT {
            let k = rank * OSCILLATORS_PER_OBJECT + index;
            let hz = 80.0 + 0.3 * channel as f64 + 2.5 * k as f64;
            assert!(synth.set_frequency(object, index, hz));
        }
    }
    let n = 1 << 17;
    let mut channels = vec![vec![0.0f32; n]; OUTPUT_CHANNELS];
    let pads = pressed(1.0);
    // Let the pressure's smoothing settle first.
    for _ in 0..200 {
        let mut out = [[0.0; OUTPUT_CHANNELS]; BLOCK_FRAMES];
        synth.process(&pads, &mut out);
    }
    for block in 0..n / BLOCK_FRAMES {
        let mut out = [[0.0; OUTPUT_CHANNELS]; BLOCK_FRAMES];
        synth.process(&pads, &mut out);
        for (frame, row) in out.iter().enumerate() {
            for (channel, &x) in row.iter().enumerate() {
                channels[channel][block * BLOCK_FRAMES + frame] = x;
            }
        }
    }
    let bin_hz = RATE / n as f64;
    let mut worst = 0.0f64;
    for (channel, signal) in channels.iter().enumerate() {
        let spectrum = magnitude_spectrum(signal);
        for object in (channel..OBJECTS).step_by(OUTPUT_CHANNELS) {
            for index in 0..OSCILLATORS_PER_OBJECT {
                let hz = synth.frequency(object, index).unwrap();
                let bin = peak_bin(&spectrum, hz / bin_hz, 3).unwrap_or_else(|| {
                    panic!("object {object} oscillator {index}: no peak near {hz} Hz")
                });
                let error = cents(bin * bin_hz, hz);
                worst = worst.max(error.abs());
                assert!(
                    error.abs() < 1.0,
                    "object {object} oscillator {index}: {error} cents off {hz} Hz"
                );
            }
        }
    }
    // Far better than the cent asked for.
    assert!(worst < 0.1, "worst {worst} cents");
}

#[test]
fn silent_pads_are_not_computed_and_give_silence() {
    let mut synth = Migrator::new(MigratorConfig::default());
    let mut out = [[0.0f32; OUTPUT_CHANNELS]; BLOCK_FRAMES];
    for _ in 0..100 {
        synth.process(&pressed(0.0), &mut out);
    }
    assert_eq!(synth.active_objects(), 0);
    assert!(out.iter().flatten().all(|&x| x == 0.0));
    let mut pads = pressed(0.0);
    pads[3].pressure = 0.5;
    pads[20].pressure = 1.0;
    synth.process(&pads, &mut out);
    assert_eq!(synth.active_objects(), 2);
    // Object 3 and 20 play on channels 3 and 4 only.
    for (channel, _) in out[0].iter().enumerate() {
        let energy: f32 = out.iter().map(|row| row[channel].abs()).sum();
        assert_eq!(
            energy > 0.0,
            channel == 3 || channel == 4,
            "channel {channel}"
        );
    }
    // Released, an object fades out and then stops being computed.
    for _ in 0..200 {
        out = [[0.0; OUTPUT_CHANNELS]; BLOCK_FRAMES];
        synth.process(&pressed(0.0), &mut out);
    }
    assert_eq!(synth.active_objects(), 0);
    assert!(out.iter().flatten().all(|&x| x == 0.0));
}

/// The largest step between neighbouring samples of channel 0.
fn largest_step(blocks: &[[[f32; OUTPUT_CHANNELS]; BLOCK_FRAMES]]) -> f32 {
    let samples: Vec<f32> = blocks
        .iter()
        .flat_map(|b| b.iter().map(|row| row[0]))
        .collect();
    samples
        .windows(2)
        .map(|w| (w[1] - w[0]).abs())
        .fold(0.0, f32::max)
}

fn render(
    synth: &mut Migrator,
    pads: &[Pad; OBJECTS],
    blocks: usize,
) -> Vec<[[f32; OUTPUT_CHANNELS]; BLOCK_FRAMES]> {
    (0..blocks)
        .map(|_| {
            let mut out = [[0.0f32; OUTPUT_CHANNELS]; BLOCK_FRAMES];
            synth.process(pads, &mut out);
            out
        })
        .collect()
}

#[test]
fn pressing_releasing_and_migrating_never_click() {
    // Migrations every 0.3 s with 50 ms glides: many in flight during the test.
    let config = MigratorConfig {
        migrate_every_s: Some(0.3),
        glide_s: 0.05,
        ..MigratorConfig::default()
    };
    let mut synth = Migrator::with_objects(config, 0..1);
    let mut steady_pads = pressed(0.0);
    steady_pads[0] = Pad {
        x: 0.5,
        y: 0.6,
        pressure: 1.0,
    };
    // The steady tone's own largest step, with glides running, is the yardstick...
    let mut reference = Migrator::with_objects(config, 0..1);
    let warm = render(&mut reference, &steady_pads, 50);
    let steady = render(&mut reference, &steady_pads, 2000);
    let _ = warm;
    let yardstick = largest_step(&steady);
    let before: Vec<f64> = (0..OSCILLATORS_PER_OBJECT)
        .map(|i| reference.frequency(0, i).unwrap())
        .collect();
    let _ = before;
    // ...and pressing and releasing the pad must not step further than it.
    let mut blocks = render(&mut synth, &pressed(0.0), 10);
    blocks.extend(render(&mut synth, &steady_pads, 600));
    blocks.extend(render(&mut synth, &pressed(0.0), 600));
    blocks.extend(render(&mut synth, &steady_pads, 600));
    assert!(
        largest_step(&blocks) <= yardstick * 1.01,
        "onsets step {} against {yardstick} steady",
        largest_step(&blocks)
    );
    // Over 1800 blocks (1.3 s) each oscillator migrated: the frequencies moved.
    let initial = Migrator::with_objects(config, 0..1);
    let moved = (0..OSCILLATORS_PER_OBJECT)
        .filter(|&i| synth.frequency(0, i) != initial.frequency(0, i))
        .count();
    assert!(moved > 90, "{moved} of 100 oscillators migrated");
    assert!(blocks
        .iter()
        .flatten()
        .flatten()
        .all(|x| x.is_finite() && x.abs() <= 1.0));
}

#[test]
fn y_selects_the_table_and_narrow_x_keeps_its_exact_pitches() {
    let config = MigratorConfig {
        migrate_every_s: Some(0.2),
        glide_s: 0.01,
        ..MigratorConfig::default()
    };
    for (table, (_, degrees)) in PITCH_TABLES.iter().enumerate() {
        let mut synth = Migrator::with_objects(config, 0..1);
        let mut pads = pressed(0.0);
        pads[0] = Pad {
            x: 0.0,
            y: (table as f32 + 0.5) / 4.0,
            pressure: 1.0,
        };
        render(&mut synth, &pads, 600);
        for i in 0..OSCILLATORS_PER_OBJECT {
            let above = 1200.0 * (synth.frequency(0, i).unwrap() / config.lowest_hz).log2();
            let in_octave = above.rem_euclid(1200.0);
            let nearest = degrees
                .iter()
                .map(|&(c, _)| (in_octave - c).abs().min((in_octave - c - 1200.0).abs()))
                .fold(f64::INFINITY, f64::min);
            assert!(
                nearest <= 0.5,
                "table {table}: {above} cents is not a degree"
            );
        }
    }
    // A wide x spreads them off the degrees.
    let mut synth = Migrator::with_objects(config, 0..1);
    let mut pads = pressed(0.0);
    pads[0] = Pad {
        x: 1.0,
        y: 0.1,
        pressure: 1.0,
    };
    render(&mut synth, &pads, 600);
    let degrees = PITCH_TABLES[0].1;
    let off = (0..OSCILLATORS_PER_OBJECT)
        .filter(|&i| {
            let c = (1200.0 * (synth.frequency(0, i).unwrap() / config.lowest_hz).log2())
                .rem_euclid(1200.0);
            degrees
                .iter()
                .all(|&(d, _)| (c - d).abs() > 5.0 && (c - d - 1200.0).abs() > 5.0)
        })
        .count();
    assert!(
        off > 30,
        "only {off} of 100 off the degrees with the widest gaussian"
    );
}

#[test]
fn parts_of_the_synth_add_up_to_the_whole() {
    let config = MigratorConfig {
        migrate_every_s: Some(0.5),
        ..MigratorConfig::default()
    };
    let mut whole = Migrator::new(config);
    let mut parts = [
        Migrator::with_objects(config, 0..11),
        Migrator::with_objects(config, 11..20),
        Migrator::with_objects(config, 20..32),
    ];
    let mut pads = pressed(0.7);
    for (o, pad) in pads.iter_mut().enumerate() {
        pad.x = o as f32 / 31.0;
        pad.y = (o % 4) as f32 / 4.0 + 0.1;
    }
    for _ in 0..300 {
        let mut a = [[0.0f32; OUTPUT_CHANNELS]; BLOCK_FRAMES];
        whole.process(&pads, &mut a);
        let mut b = [[0.0f32; OUTPUT_CHANNELS]; BLOCK_FRAMES];
        for part in &mut parts {
            part.process(&pads, &mut b);
        }
        for (x, y) in a.iter().flatten().zip(b.iter().flatten()) {
            assert!((x - y).abs() < 1e-6, "{x} against {y}");
        }
    }
    assert_eq!(parts[1].objects(), 11..20);
    assert_eq!(parts[1].frequency(5, 0), None);
}

#[test]
fn non_finite_and_out_of_range_pads_are_harmless() {
    let mut synth = Migrator::new(MigratorConfig::default());
    let mut pads = pressed(1.0);
    pads[0] = Pad {
        x: f32::NAN,
        y: f32::INFINITY,
        pressure: f32::NAN,
    };
    pads[1] = Pad {
        x: -3.0,
        y: 7.0,
        pressure: 40.0,
    };
    for block in render(&mut synth, &pads, 400) {
        assert!(block
            .iter()
            .flatten()
            .all(|x| x.is_finite() && x.abs() <= 1.0));
    }
    assert!(!synth.set_frequency(OBJECTS, 0, 100.0));
    assert!(!synth.set_frequency(0, OSCILLATORS_PER_OBJECT, 100.0));
    assert!(synth.set_frequency(0, 0, f64::NAN));
    assert_eq!(synth.frequency(0, 0), Some(1.0));
}

#[test]
fn the_vector_kernels_and_the_portable_one_agree() {
    for kernel in [Kernel::Avx512, Kernel::Avx2Fma] {
        let Some(mut vector) = on_kernel(kernel, MigratorConfig::default(), 0..OBJECTS) else {
            continue;
        };
        let mut portable = Migrator::new(MigratorConfig::default());
        portable.force_portable_kernel();
        let pads = pressed(0.8);
        for _ in 0..500 {
            let mut a = [[0.0f32; OUTPUT_CHANNELS]; BLOCK_FRAMES];
            let mut b = [[0.0f32; OUTPUT_CHANNELS]; BLOCK_FRAMES];
            vector.process(&pads, &mut a);
            portable.process(&pads, &mut b);
            for (x, y) in a.iter().flatten().zip(b.iter().flatten()) {
                assert!((x - y).abs() < 1e-4, "{kernel}: {x} against {y}");
            }
        }
    }
}

#[test]
fn the_fastest_kernel_the_cpu_has_is_chosen() {
    let available: Vec<Kernel> = Kernel::available().collect();
    assert_eq!(available.last(), Some(&Kernel::Portable));
    assert_eq!(Migrator::new(fixed()).kernel(), available[0]);
    let mut synth = Migrator::new(fixed());
    for kernel in Kernel::ALL {
        assert_eq!(synth.force_kernel(kernel), available.contains(&kernel));
        let expected = if available.contains(&kernel) {
            kernel
        } else {
            synth.kernel()
        };
        assert_eq!(synth.kernel(), expected);
    }
    #[cfg(target_arch = "x86_64")]
    assert_eq!(
        Kernel::Avx512.is_available(),
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
    );
}

#[cfg(debug_assertions)]
#[test]
fn process_and_set_frequency_never_allocate() {
    use assert_no_alloc::{assert_no_alloc, violation_count};
    let config = MigratorConfig {
        migrate_every_s: Some(0.1),
        glide_s: 0.02,
        ..MigratorConfig::default()
    };
    // Every kernel this CPU runs (a line says which it does not), and each one's
    // roofline.
    let mut synths: Vec<Migrator> = Kernel::ALL
        .into_iter()
        .filter_map(|kernel| on_kernel(kernel, config, 0..OBJECTS))
        .collect();
    let mut rooflines: Vec<Roofline> = synths.iter().map(Roofline::like).collect();
    assert_eq!(synths.len(), Kernel::available().count());
    let mut pads = pressed(0.9);
    pads[2].pressure = 0.0;
    let mut out = [[0.0f32; OUTPUT_CHANNELS]; BLOCK_FRAMES];
    let before = violation_count();
    assert_no_alloc(|| {
        for block in 0..400 {
            pads[5].x = (block % 7) as f32 / 7.0;
            for synth in synths.iter_mut() {
                synth.process(&pads, &mut out);
                synth.set_frequency(block % OBJECTS, block % OSCILLATORS_PER_OBJECT, 300.0);
            }
            for roofline in rooflines.iter_mut() {
                roofline.process(&mut out);
            }
        }
    });
    assert_eq!(
        violation_count(),
        before,
        "the synth allocated on the audio thread"
    );
    assert!(out.iter().flatten().all(|x| x.is_finite()));
}

/// The roofline runs the synth's kernel, starts every block from the state it was
/// taken from (so every block is the same, finite and bounded), and mixes every object
/// into its channel.
#[test]
fn the_roofline_repeats_one_bounded_block_on_the_synths_kernel() {
    for kernel in Kernel::ALL {
        let Some(synth) = on_kernel(kernel, MigratorConfig::default(), 0..OBJECTS) else {
            continue;
        };
        let mut roofline = Roofline::like(&synth);
        assert_eq!(roofline.kernel(), synth.kernel());
        let mut first = [[0.0f32; OUTPUT_CHANNELS]; BLOCK_FRAMES];
        roofline.process(&mut first);
        for _ in 0..20_000 {
            let mut out = [[0.0f32; OUTPUT_CHANNELS]; BLOCK_FRAMES];
            roofline.process(&mut out);
            assert_eq!(out, first, "{kernel}");
        }
        assert!(first
            .iter()
            .flatten()
            .all(|x| x.is_finite() && x.abs() < 100.0));
        for channel in 0..OUTPUT_CHANNELS {
            assert!(first.iter().any(|row| row[channel] != 0.0), "{channel}");
        }
    }
}
