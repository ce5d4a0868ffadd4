//! # netaudio: the network-audio system
//!
//! Network audio: a multitouch controller that streams gesture data as audio-rate UDP
//! and a host that must answer every block within a hard deadline (the Tessellation
//! study: Colmenares, Peters et al., "A Multicore Operating System with QoS Guarantees
//! for Network Audio Applications", J. Audio Eng. Soc. 61(4), 2013, with the SLABS
//! controller).
//!
//! The controller sends one packet every 2 frames at 44.1 kHz (45.35 µs): 2 frames × 32
//! pads × (x, y, pressure). Sixteen packets make a block of 32 frames (0.7256 ms); the
//! host answers each block with one packet of 32 frames × 8 output channels. Times on
//! one block, as the study names them:
//!
//! - `t0`: the controller hands the block's first packet (index 0) to the network
//!   (its `sender_time_ns`);
//! - `t1`: the host receives the first packet of the block to arrive
//!   ([`wire::AssembledBlock::first_arrival_ns`]);
//! - `t2`: the host hands its answer to the network (the answer's `sender_time_ns`);
//! - `tf`: the answer arrives at the controller.
//!
//! `tf − t0` must stay under [`wire::DEADLINE_NS`] (1.4059 ms, 62 frames); `t2 − t1` is
//! the host's share, what the study measured in its network driver.
//!
//! [`wire`] holds the packet format (normative text: `docs/net-protocol.md`), the
//! host's [`wire::BlockAssembler`] and the controller's [`wire::AnswerMatcher`].
//!
//! Real-time contract: [`wire::parse`], the encoders, [`wire::BlockAssembler::push`] and
//! everything on [`wire::AnswerMatcher`] allocate, lock, print and panic on nothing,
//! whatever bytes arrive; malformed, duplicate and late packets become counters. The
//! constructors (`new`) belong before the stream starts: they do not allocate either, but
//! build about 25 KiB on the stack. Debug-build tests run the hot path under
//! `assert_no_alloc`.
//!
//! The pieces, each usable alone:
//!
//! - [`wire`]: the packet format, block assembly and answer matching;
//! - [`host`]: the host (`audiolat net respond`), a synth responder;
//! - [`controller`]: the controller emulator (`audiolat net emulate`);
//! - [`service`] with [`mclock`]: audiolat's user-level network service, FIFO or mClock
//!   reservations on a shaped link;
//! - [`misses`]: why each late block missed, when both ends run in one process;
//! - [`workers`]: the synth split over its caller and spinning worker threads (the
//!   host's, and the bench's `--workers`), with each block's hand-off times;
//! - [`udp`]: batched receive with kernel timestamps, segmentation offload (GSO);
//! - [`netns`]: two network namespaces joined by a veth pair, `tc` HTB shaping;
//! - [`traffic`]: the abusive flood and data stream the study ran beside the audio.
//!
//! The host's and the controller's loops record their timings into a caller's
//! [`Histogram`] (audiolat's probe passes its fixed-bound HDR histogram); this crate
//! knows nothing of runs or stores.
//!
//! ```no_run
//! use std::sync::atomic::AtomicBool;
//! # struct Counts(u64);
//! # impl netaudio::Histogram for Counts {
//! #     fn with_bound(_: u64) -> Self { Counts(0) }
//! #     fn record(&mut self, _: u64) { self.0 += 1 }
//! # }
//! use netaudio::host::{HostConfig, HostOutcome, PollMode, Warmup};
//! let socket = netaudio::bind("127.0.0.1:9700".parse().unwrap()).unwrap();
//! let config = HostConfig {
//!     peer: None, synth: true, workers: 0, policy: engine::rt::Policy::Fifo { priority: 70 },
//!     cpus: None, groups: Vec::new(), poll: PollMode::Block,
//!     warmup: Warmup::FirstBlocks(netaudio::blocks_in(std::time::Duration::from_secs(1))),
//! };
//! let stop = AtomicBool::new(false);
//! let outcome: HostOutcome<Counts> = netaudio::host::serve(&config, socket, &stop, 1 << 16);
//! println!("{} answers sent, {} past the deadline", outcome.answers_sent, outcome.responses_past_deadline);
//! ```
#![deny(missing_docs)]
// A library says nothing on the standard streams (the binary does): `print!` and
// `eprint!` panic when the stream fails.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod controller;
pub mod ends;
pub mod host;
pub mod mclock;
pub mod misses;
pub mod netns;
pub mod service;
pub mod traffic;
pub mod udp;
pub mod wire;
pub mod workers;

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

/// Where the host's and the controller's loops record a time: a fixed-bound latency
/// histogram of the caller's choosing.
pub trait Histogram: Send {
    /// A histogram for values in `0..=bound_ns`. May allocate: called before the loops
    /// start.
    fn with_bound(bound_ns: u64) -> Self;
    /// Records one value, ns. Called on the real-time threads: must not allocate, lock,
    /// print or panic.
    fn record(&mut self, value_ns: u64);
}

/// Blocks in `duration` at the controller's rate.
pub fn blocks_in(duration: Duration) -> u64 {
    (duration.as_nanos() as u64).div_ceil(wire::BLOCK_PERIOD_NS)
}

/// Why a run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// A socket could not be bound.
    #[error("cannot bind UDP {addr}: {source}{hint}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The system's error.
        source: std::io::Error,
        /// What to do about it.
        hint: &'static str,
    },
    /// A bad setting.
    #[error("{0}")]
    Config(String),
}

/// Binds a UDP socket with a hint for the usual failures.
pub fn bind(addr: SocketAddr) -> Result<UdpSocket, NetError> {
    UdpSocket::bind(addr).map_err(|source| {
        let hint = match source.raw_os_error() {
            Some(libc::EADDRINUSE) => {
                ": the port is in use (another audiolat or program holds it); choose another port"
            }
            Some(libc::EADDRNOTAVAIL) => {
                ": no interface has that address; use one of this machine's addresses (ip -br addr)"
            }
            Some(libc::EACCES) => ": ports below 1024 need root",
            _ => "",
        };
        NetError::Bind { addr, source, hint }
    })
}

#[cfg(all(test, debug_assertions))]
#[global_allocator]
static ALLOCATOR: assert_no_alloc::AllocDisabler = assert_no_alloc::AllocDisabler;
