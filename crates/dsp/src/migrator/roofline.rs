//! The throughput reference of a Migrator block ([`Roofline`]): the block's arithmetic
//! with no operation waiting on another of the same oscillator and frame.
//!
//! **Method.** For every oscillator lane (the padding lanes too, as the kernel steps
//! them) and every frame, the kernel does one multiply-add and two adds: `d += ε·y`,
//! `y += d`, and the frame's sum. The roofline runs the kernel's own code, compiled with
//! the same target features, on the same loads and stores, except that `y` steps by `ε`
//! instead of by the new `d`: that cuts the chain `y → d → y` through which each
//! oscillator's next sample waits for its last one, so the loop runs at the rate the CPU
//! issues multiply-adds and adds rather than at their latency. It then renormalises and
//! mixes each object into the output as the synth does (at full gain). Its samples are
//! meaningless; every block starts again from the synth's state as it was taken (a copy
//! of `y` and `d`: load and store work, none for the arithmetic units), so they stay
//! bounded and finite. A Migrator block's time over the roofline's, measured in the same
//! run, says how much of the CPU's arithmetic throughput the kernel leaves unused.

use super::kernel::{render_on, FrameLanes, Mix, Phasors};
use super::{Kernel, Lanes, Migrator, BLOCK_FRAMES, GROUPS, LANES, OUTPUT_CHANNELS};

/// One object's state, as the synth lays it out.
#[derive(Clone, Copy)]
struct State {
    y: [Lanes; GROUPS],
    d: [Lanes; GROUPS],
    eps: [Lanes; GROUPS],
    inv_norm: [Lanes; GROUPS],
}

/// The throughput reference of a whole synth's block (see the module's doc).
pub struct Roofline {
    /// Each object's state at the start of every block.
    start: Vec<State>,
    kernel: Kernel,
}

impl Roofline {
    /// The reference for all of `synth`'s objects, at their state now, on the kernel
    /// `synth` runs. Allocates.
    pub fn like(synth: &Migrator) -> Roofline {
        let start = synth
            .objects
            .iter()
            .map(|o| State {
                y: o.y,
                d: o.d,
                eps: o.eps,
                inv_norm: o.inv_norm,
            })
            .collect();
        Roofline {
            start,
            kernel: synth.kernel,
        }
    }

    /// The kernel it runs on (the synth's).
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// One block of every object, mixed into `out` as the synth mixes them (at full
    /// gain). Real-time safe.
    pub fn process(&mut self, out: &mut [[f32; OUTPUT_CHANNELS]; BLOCK_FRAMES]) {
        let mut mix = Mix::new();
        for (object, start) in self.start.iter().enumerate() {
            let (mut y, mut d) = (start.y, start.d);
            let phasors = Phasors {
                y: &mut y,
                d: &mut d,
                eps: &start.eps,
                inv_norm: &start.inv_norm,
            };
            let mut frames: FrameLanes = [[0.0; LANES]; BLOCK_FRAMES];
            render_on::<true>(self.kernel, phasors, &mut frames);
            mix.add_object(self.kernel, &frames, object, 1.0, 0.0);
        }
        mix.add_to(self.kernel, out);
    }
}
