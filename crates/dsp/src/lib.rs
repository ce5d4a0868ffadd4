//! # dsp: audiolat's sound
//!
//! The tones audiolat plays while it measures, the onset detector that finds them again,
//! and the timing of their cost ([`bench`](mod@bench)); the loop-delay estimators of the
//! round-trip probe ([`loopdelay`]); the Tessellation study's Migrator synthesizer, 3,200
//! oscillators per 32-frame block ([`migrator`]); and spectra for self-checks
//! ([`spectrum`]).
//!
//! **Real-time contract.** A [`Workload`] is split the way a plug-in is:
//!
//! - [`Workload::new`] and [`Workload::prepare`] run on a set-up thread before the stream
//!   starts and **may allocate** (the wavetable, one phase per oscillator, increments for
//!   the sample rate);
//! - [`Workload::reset`], [`Workload::note_on`], [`Workload::note_off`] and
//!   [`Workload::process`] are called on the audio thread and **never allocate, lock,
//!   block, print or panic** for valid input (invalid input, such as an offset past the
//!   buffer, is clamped or ignored as each method documents). The crate's tests run every
//!   one of them under `assert_no_alloc` (debug builds). [`first_onset`] is real-time safe too.
//!
//! Notes are sample-exact: a note scheduled at frame `k` of the next buffer makes
//! `out[k]` its first sample, which is the note's peak ([`Workload::onset_amplitude`],
//! every oscillator starts as a cosine), and the frames before `k` are untouched by it.
//!
//! The oscillators read one shared sine table of [`TABLE_SIZE`] points with linear
//! interpolation, driven by a 32-bit fixed-point phase (frequency resolution
//! `rate / 2^32`, about 10 µHz). Measured by the tests: tones from 27.5 Hz to 4186 Hz at
//! 44.1 and 48 kHz come out at most 2.7e-4 cents from the asked frequency (zero crossings
//! over 10 s), and a 1 kHz sine at 48 kHz has a THD of -164 dB and a THD+N of -126 dB.
//!
//! The crate uses only `std`.
//!
//! ```
//! use dsp::{first_onset, Workload, WorkloadKind};
//!
//! // Set-up thread: may allocate.
//! let kind: WorkloadKind = "poly".parse().unwrap();
//! let mut workload = Workload::new(kind, dsp::DEFAULT_FREQUENCY_HZ);
//! workload.prepare(48_000, 256);
//!
//! // Audio thread: no allocation from here on.
//! let mut out = [0.0f32; 256];
//! workload.note_on(17);
//! workload.process(&mut out);
//! assert!(out[..17].iter().all(|&x| x == 0.0));
//! assert_eq!(out[17], workload.onset_amplitude());
//! assert_eq!(first_onset(&out, 0.5 * workload.onset_amplitude()), Some(17));
//! ```
#![deny(missing_docs)]
// A library says nothing on the standard streams (the binary does): `print!` and
// `eprint!` panic when the stream fails.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod bench;
pub mod fractional;
mod kind;
pub mod loopdelay;
pub mod migrator;
mod onset;
pub mod spectrum;
mod wavetable;
mod workload;

pub use kind::{WorkloadKind, MAX_BANK_VOICES};
pub use onset::first_onset;
pub use workload::Workload;

/// The note's frequency when none is given: concert A.
pub const DEFAULT_FREQUENCY_HZ: f32 = 440.0;

/// Points in one cycle of the shared sine table (a guard point follows them).
///
/// A power of two, so the top 11 bits of the 32-bit phase index the table and the other
/// 21 are the interpolation fraction. With linear interpolation, 2048 points keep the
/// error at most (2π/2048)²/8 ≈ 1.2e-6 of full scale. Measured by the tests on `sine` at
/// 48 kHz (2 s, analysed against the exact phase, so without window or leakage):
///
/// | tone | THD (harmonics 2-10) | THD+N |
/// |---|---|---|
/// | 1000 Hz | -164 dB | -126 dB |
/// | 997 Hz | -176 dB | -129 dB |
///
/// The THD+N is the interpolation's images (aliased between harmonics); the harmonics
/// themselves are at the level of f32 rounding. Both are below the noise floor of real
/// 24-bit converters (about -120 dB). The table is 8 KiB, so it stays in L1 cache beside the oscillator state;
/// doubling it would lower the images by 12 dB that nothing downstream can measure.
pub const TABLE_SIZE: usize = 2048;

#[cfg(all(test, debug_assertions))]
mod no_alloc_tests {
    //! `assert_no_alloc` with its `warn_debug` feature counts violations instead of
    //! aborting. The count is per thread (a thread local), so tests running in parallel on
    //! other threads cannot disturb it.

    use crate::{Workload, WorkloadKind};
    use assert_no_alloc::{assert_no_alloc, violation_count, AllocDisabler};

    #[global_allocator]
    static ALLOCATOR: AllocDisabler = AllocDisabler;

    #[test]
    fn real_time_methods_never_allocate() {
        let kinds = [
            WorkloadKind::Sine,
            WorkloadKind::Poly,
            WorkloadKind::Bank(1),
            WorkloadKind::Bank(64),
            WorkloadKind::Bank(4096),
        ];
        for kind in kinds {
            let mut workload = Workload::new(kind, crate::DEFAULT_FREQUENCY_HZ);
            workload.prepare(48_000, 256);
            let mut out = vec![0.0f32; 256];
            let before = violation_count();
            let peak = assert_no_alloc(|| {
                workload.process(&mut out);
                workload.note_on(17);
                workload.process(&mut out);
                let onset = crate::first_onset(&out, 0.5 * workload.onset_amplitude());
                workload.process(&mut out[..100]);
                workload.note_on(0);
                workload.note_off(40);
                workload.process(&mut out[100..]);
                workload.note_on(1000);
                workload.process(&mut out);
                workload.note_off(3);
                workload.process(&mut out);
                workload.note_on(5);
                workload.reset();
                workload.process(&mut out);
                workload.process(&mut []);
                (onset, workload.is_sounding(), workload.kind())
            });
            assert_eq!(
                violation_count(),
                before,
                "{kind} allocated on the audio thread"
            );
            assert_eq!(peak, (Some(17), false, kind));
        }
    }

    #[test]
    fn control_an_allocation_inside_the_guard_is_counted() {
        let before = violation_count();
        let length = assert_no_alloc(|| std::hint::black_box(vec![1u8; 64]).len());
        assert_eq!(length, 64);
        assert!(violation_count() > before, "the guard missed an allocation");
    }
}
