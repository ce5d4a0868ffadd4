//! # engine: audiolat's real-time runtime
//!
//! This crate is the part of audiolat that runs next to, or on, a real-time thread.
//! It promises:
//!
//! - **No hidden work on the hot path.** [`clock::monotonic_ns`] and
//!   [`clock::sleep_until_ns`] are single system calls; they do not allocate, lock,
//!   log or print, so a measuring loop may call them every cycle.
//! - **Set-up reports what was granted, never what was hoped for.** Every function in
//!   [`rt`] that changes the scheduling, memory or power state of the process returns a
//!   grant that was read back from the kernel afterwards. When the kernel refuses
//!   (no `CAP_SYS_NICE`, `RLIMIT_RTPRIO` of 0, a full SCHED_DEADLINE admission budget)
//!   the caller still gets a grant, marked not real-time, and can run anyway and flag its
//!   results: a measurement is never silently taken at the wrong priority.
//! - **Set-up happens before the loop.** Memory locking, stack prefaulting and
//!   `/dev/cpu_dma_latency` are process-wide and done once; scheduling policy and
//!   affinity are applied by the thread to itself before its first cycle.
//!
//! - **One guard around every cycle.** Every backend (JACK's callback, ALSA's write loop,
//!   the virtual card's application thread) runs the processor through
//!   [`guard::process_guard`]: denormals flushed to zero (FTZ/DAZ) for the cycle, the
//!   allocation guard in debug builds.
//! - **One place chooses the backend.** [`backend::open`] takes a typed
//!   [`backend::BackendSpec`] and starts (or finds) the JACK server it needs; each backend
//!   lives in its own folder (`jack/`, `alsa/`, `virtual_card/`, `pipewire/native/`),
//!   below [`backend`], which none of them uses (but for the leaf naming a backend's
//!   kind, [`backend::BackendKind`]).
//!
//! The crate depends on no storage, reporting or logging crate, and on no CLI parser.
//!
//! ```no_run
//! use engine::rt::{Policy, ProcessRt, ThreadRt};
//! let process = ProcessRt::setup(true, Some(0)); // mlockall, hold cpu_dma_latency at 0
//! let handle = std::thread::spawn(|| {
//!     let grant = ThreadRt::apply(&Policy::Fifo { priority: 80 }, None, 256 * 1024);
//!     if !grant.is_realtime() {
//!         // run anyway, and flag the results "not real-time"
//!     }
//!     let now = engine::clock::monotonic_ns();
//!     engine::clock::sleep_until_ns(now + 1_000_000);
//! });
//! handle.join().unwrap();
//! drop(process); // releases cpu_dma_latency
//! ```
#![deny(missing_docs)]
// A library says nothing on the standard streams (the binary does): `print!` and
// `eprint!` panic when the stream fails.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod alsa;
pub mod audio;
pub mod backend;
pub mod clock;
pub mod gpio;
pub mod guard;
pub mod jack;
mod libjack;
pub mod phase;
pub mod pipewire;
pub mod rt;
mod server_process;
pub mod servers;
mod setup;
mod stream;
pub mod temp;
pub use stream::panic_message;
pub mod virtual_card;
