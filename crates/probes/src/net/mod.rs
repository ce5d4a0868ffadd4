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

pub mod wire;
