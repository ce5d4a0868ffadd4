//! The kernel lab: audiolat on real kernel sound drivers. Debian's stock and PREEMPT_RT
//! kernels boot under QEMU (scripts/kernel-lab) with snd-aloop (a loopback card: real
//! hw_params, hardware pointers, timestamps, xruns) and snd-dummy; the checks in
//! `tests/lab/stock/` and `tests/lab/rt/` run audiolat beside the reference tools
//! (alsa_delay, aplay, arecord) in the same guest, and these tests assert that they agree.
//! Under TCG the guest's times are the emulator's: the tests assert agreement with the
//! references and counts, never absolute times.
//!
//! `AUDIOLAT_SKIP_LAB=1` skips them (for a quick local run; CI runs them).

#[path = "../cli/util.rs"]
mod util;

mod alsa;
mod devices;
mod harness;
mod kernels;
mod store;

use harness::{enabled, guest, Kernel};

#[test]
fn guests_run_the_kernels_they_were_asked_for_with_the_sound_drivers() {
    if !enabled() {
        return;
    }
    for (kernel, preempt) in [
        (Kernel::Stock, "PREEMPT_DYNAMIC"),
        (Kernel::Rt, "PREEMPT_RT"),
    ] {
        let g = guest(kernel);
        let facts = g.ok("00-facts").out;
        assert!(facts.contains(preempt), "{kernel:?}: {facts}");
        assert!(
            facts.contains("[Loopback"),
            "{kernel:?}: no snd-aloop card: {facts}"
        );
        assert!(
            facts.contains("[Dummy"),
            "{kernel:?}: no snd-dummy card: {facts}"
        );
    }
}
