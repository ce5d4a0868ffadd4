//! # probes: turning a configuration into measurements
//!
//! Each probe takes a validated configuration, sets up the real-time runtime
//! ([`engine::rt`]), measures, and returns an outcome that converts to the results model
//! (measurements, events, series, validity flags). Probes never print: the binary does.
//!
//! - [`jitter`]: periodic wake-up latency (latencytest, cyclictest) and latencytest's
//!   audio-fragment deadline model.
//! - [`event`]: event-to-audio latency, from a trigger to the first sample at the DAC,
//!   on an [`engine::audio::Backend`] (the BeagleBone Black study).
//! - [`roundtrip`]: full-duplex input-to-output latency through a loop, by impulse onset
//!   and multi-tone phase (the desktop OS study).
//! - [`net`]: network audio: the wire protocol of a 32-pad controller streaming gesture
//!   data as audio-rate UDP, block assembly and answer deadlines (the Tessellation study).
//! - [`probe`]: the [`probe::Probe`] trait every probe offers a run's lifecycle (the
//!   `runner` crate), its [`probe::Outcome`] and [`probe::Progress`].
//! - [`leftovers`]: what an audiolat killed outright left changed (cpusets, load
//!   balancing, namespaces, qdiscs, state files), found and undone by the next one.
//! - [`doctor`]: the machine's set-up, finding by finding.
//! - [`devices`]: what can be measured here (sound cards, audio servers) and the flags
//!   that measure it, and the survey as JSON.
//! - [`bench`]: the DSP kernels' bench ([`dsp::bench`]) as JSON, with what its figures
//!   depend on (build profile, thread policy, host steal).
//! - [`bench_workers`]: the synth block split over worker threads (`bench --workers`),
//!   its speed-ups and hand-off per worker count.
//! - [`machine`]: facts stored with every run.
//! - [`steal`]: host steal time sampled beside a run, to tell a hypervisor's outlier
//!   from the kernel's.
//! - [`busy`]: a calibrated amount of DSP-like work.
//!
//! Cells (exclusive cpusets, SCHED_DEADLINE, best-effort), admission control and undoing
//! them live in the `qos` crate; the network-audio system the [`net`] probe drives, in
//! `netaudio`.
//!
//! Real-time contract: the measuring loops ([`jitter::JitterLoop::run`]) allocate,
//! lock and print nothing; debug-build tests run them under `assert_no_alloc`.
//!
//! ```no_run
//! use std::sync::atomic::AtomicBool;
//! use std::time::Duration;
//! use probes::jitter::{self, JitterConfig, RunLength};
//! let config = JitterConfig::new(488_281, RunLength::Duration(Duration::from_secs(5)));
//! let stop = AtomicBool::new(false);
//! let outcome = jitter::run(&config, &stop, |_live| {}).unwrap();
//! println!("p99 {} ns, real-time: {}", outcome.recorded.histograms.latency.percentile(99.0).0, outcome.realtime());
//! ```
#![deny(missing_docs)]
// A library says nothing on the standard streams (the binary does): `print!` and
// `eprint!` panic when the stream fails.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod bench;
pub mod bench_workers;
pub mod busy;
pub mod devices;
pub mod doctor;
pub mod event;
pub mod jitter;
pub mod leftovers;
pub mod machine;
pub mod net;
pub mod pipewire_doctor;
pub mod probe;
pub mod roundtrip;
pub mod stats;
pub mod steal;
pub mod why;

#[cfg(all(test, debug_assertions))]
#[global_allocator]
static ALLOCATOR: assert_no_alloc::AllocDisabler = assert_no_alloc::AllocDisabler;
