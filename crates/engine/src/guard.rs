//! The one guard around [`Processor::process`](crate::audio::Processor::process), as
//! nih-plug's `process_wrapper`: denormals off for the cycle, and (debug builds) the
//! allocation guard.
//!
//! [`process_guard`] is what every backend's audio thread goes through: JACK's process
//! callback, ALSA's write loop and the virtual card's application thread all run a
//! cycle through the crate's one cycle runner (`stream::CycleRunner::run`), which wraps
//! the processor in it.
//!
//! # Denormals
//!
//! A filter or reverb tail that decays towards zero reaches subnormal floats, which cost
//! tens to hundreds of cycles each on x86 CPUs: a DSP load that spikes when the signal
//! goes quiet. Inside the guard the FPU flushes them to zero:
//!
//! - x86_64: MXCSR's FTZ (bit 15, flush-to-zero results) and DAZ (bit 6, read subnormal
//!   inputs as zero);
//! - aarch64: FPCR's FZ (bit 24);
//! - elsewhere: nothing changes.
//!
//! The previous mode is restored when the guard's closure returns, and also when it
//! unwinds (the restore lives in a drop guard). Nothing else in the crate touches the
//! floating-point mode. Setting and restoring it are two register moves each: no
//! allocation, lock or system call.

/// MXCSR bit 15: results that would be subnormal are flushed to zero.
#[cfg(target_arch = "x86_64")]
const MXCSR_FTZ: u32 = 1 << 15;
/// MXCSR bit 6: subnormal inputs are read as zero.
#[cfg(target_arch = "x86_64")]
const MXCSR_DAZ: u32 = 1 << 6;
/// FPCR bit 24: flush-to-zero.
#[cfg(target_arch = "aarch64")]
const FPCR_FZ: u64 = 1 << 24;

/// The floating-point control register's value before the guard set it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FpMode(u64);

#[cfg(target_arch = "x86_64")]
fn read_mode() -> FpMode {
    let mut mxcsr: u32 = 0;
    // SAFETY: stmxcsr stores the 32-bit MXCSR into the local we point at; SSE is part of
    // every x86_64 CPU.
    unsafe {
        std::arch::asm!("stmxcsr [{}]", in(reg) &mut mxcsr, options(nostack, preserves_flags));
    }
    FpMode(u64::from(mxcsr))
}

#[cfg(target_arch = "x86_64")]
fn write_mode(mode: FpMode) {
    let mxcsr = mode.0 as u32;
    // SAFETY: ldmxcsr loads a value read by stmxcsr (possibly with the FTZ/DAZ bits set,
    // both defined on every x86_64 CPU) from a local: no reserved bit is set.
    unsafe {
        std::arch::asm!("ldmxcsr [{}]", in(reg) &mxcsr, options(nostack, preserves_flags, readonly));
    }
}

#[cfg(target_arch = "x86_64")]
fn flush_mode(mode: FpMode) -> FpMode {
    FpMode(mode.0 | u64::from(MXCSR_FTZ | MXCSR_DAZ))
}

#[cfg(target_arch = "aarch64")]
fn read_mode() -> FpMode {
    let fpcr: u64;
    // SAFETY: reading FPCR has no side effect.
    unsafe {
        std::arch::asm!("mrs {}, fpcr", out(reg) fpcr, options(nomem, nostack, preserves_flags));
    }
    FpMode(fpcr)
}

#[cfg(target_arch = "aarch64")]
fn write_mode(mode: FpMode) {
    // SAFETY: writes back a value read from FPCR, possibly with FZ (a defined bit) set.
    unsafe {
        std::arch::asm!("msr fpcr, {}", in(reg) mode.0, options(nomem, nostack, preserves_flags));
    }
}

#[cfg(target_arch = "aarch64")]
fn flush_mode(mode: FpMode) -> FpMode {
    FpMode(mode.0 | FPCR_FZ)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn read_mode() -> FpMode {
    FpMode(0)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn write_mode(_: FpMode) {}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn flush_mode(mode: FpMode) -> FpMode {
    mode
}

/// Restores the floating-point mode it saved when dropped (a return or an unwind).
struct RestoreMode(FpMode);

impl Drop for RestoreMode {
    fn drop(&mut self) {
        write_mode(self.0);
    }
}

/// Runs `f` with subnormal floats flushed to zero, restoring the previous mode after it
/// (also when `f` panics). Real-time safe.
pub fn denormals_flushed<R>(f: impl FnOnce() -> R) -> R {
    let previous = read_mode();
    let _restore = RestoreMode(previous);
    write_mode(flush_mode(previous));
    f()
}

/// The guard around one cycle of a processor, called on the audio thread: `f` runs with
/// denormals flushed ([`denormals_flushed`]) and, in debug builds, under
/// `assert_no_alloc` (a test binary that installs its `AllocDisabler` counts any
/// allocation made inside). Real-time safe.
pub fn process_guard<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(debug_assertions)]
    {
        denormals_flushed(|| assert_no_alloc::assert_no_alloc(f))
    }
    #[cfg(not(debug_assertions))]
    {
        denormals_flushed(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hint::black_box;

    fn half_of_smallest_normal() -> f32 {
        black_box(f32::MIN_POSITIVE) * black_box(0.5f32)
    }

    #[test]
    fn a_denormal_product_is_zero_inside_the_guard_only() {
        assert!(half_of_smallest_normal() > 0.0, "outside: subnormal kept");
        let inside = process_guard(half_of_smallest_normal);
        if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            assert_eq!(inside, 0.0, "inside: flushed to zero");
        }
        assert!(half_of_smallest_normal() > 0.0, "after: the mode is back");
    }

    #[test]
    fn the_previous_mode_comes_back_after_a_nested_guard_and_an_early_return() {
        let before = read_mode();
        let nested = denormals_flushed(|| {
            let inner = denormals_flushed(|| {
                if black_box(true) {
                    return half_of_smallest_normal();
                }
                1.0
            });
            // The inner guard restored the outer guard's mode, which still flushes.
            (inner, half_of_smallest_normal())
        });
        if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            assert_eq!(nested, (0.0, 0.0));
        }
        assert_eq!(read_mode(), before);
        assert!(half_of_smallest_normal() > 0.0);
    }

    #[test]
    fn the_previous_mode_comes_back_after_a_panic() {
        let before = read_mode();
        let caught = std::panic::catch_unwind(|| {
            denormals_flushed(|| {
                if black_box(true) {
                    panic!("inside the guard");
                }
            })
        });
        assert!(caught.is_err());
        assert_eq!(read_mode(), before);
        assert!(half_of_smallest_normal() > 0.0);
    }

    #[test]
    fn a_mode_already_flushing_stays_flushing_after_the_guard() {
        let before = read_mode();
        write_mode(flush_mode(before));
        denormals_flushed(|| ());
        assert_eq!(read_mode(), flush_mode(before));
        write_mode(before);
    }
}
