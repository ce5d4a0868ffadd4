//! The Migrator synthesizer of the Tessellation study: 32 objects of 100 sinusoidal
//! oscillators each, mixed to 8 output channels, one 32-frame block at a time.
//!
//! Each object is played by one pad of a multitouch controller ([`Pad`]): pressure sets
//! its amplitude (silent at zero pressure, and a silent object is not computed at all),
//! `y` selects one of four microtonal pitch tables ([`PITCH_TABLES`]) and `x` the width of
//! the gaussian that table is convolved with. Every oscillator migrates to a new
//! frequency drawn from that distribution every [`MigratorConfig::migrate_every_s`]
//! seconds, staggered so that migrations are spread evenly over time, and glides there
//! over [`MigratorConfig::glide_s`]; pressure changes are smoothed per sample. Neither
//! clicks.
//!
//! **Method.** An oscillator is the second-order recurrence `y[n] = 2 cos ω · y[n-1] -
//! y[n-2]` in its difference form: `d += ε·y; y += d` with `ε = 2 cos ω - 2 = -4 sin²(ω/2)`
//! and `d = y[n] - y[n-1]` (one multiply-add and one add per sample; the sample is `y`).
//! Written this way the coefficient is the small number `ε`, which `f32` holds to 7
//! significant digits however low the frequency, where `2 cos ω` itself would be off by
//! cents below 100 Hz. Oscillators are laid out in lanes of [`LANES`] (structure of
//! arrays, 13 lane groups per object, the last one padded), and a block steps them as
//! two chunks of 7 and 6 lane groups, each chunk's state in registers across the 32
//! frames, so the serial dependency of one oscillator (a multiply-add's latency plus an
//! add's) is hidden behind the other groups' work. Each frame's oscillators are summed
//! lane-wise, scaled by the object's gain into its channel's lanes, and the lanes of the
//! 8 channels are summed horizontally once per block as the output rows are written.
//! The kernel is plain Rust over `[f32; 8]` arrays that the compiler vectorises (the
//! horizontal sums are AVX intrinsics), compiled three times: portable, with AVX2 and
//! FMA, and with AVX-512 (F, VL) and FMA, where all 13 lane groups fit one chunk in its
//! 32 vector registers; the fastest the CPU has is chosen at run time
//! ([`Migrator::kernel`] says which one runs).
//! [`Roofline`] is the same block with each oscillator's chain cut: the throughput the
//! kernel is measured against.
//!
//! **Accuracy.** The recurrence keeps the invariant `d² - ε·y·(y - d) = A² sin² ω` (`A`
//! the amplitude) up to rounding, and every block renormalises each oscillator to its
//! amplitude with one Newton step on it, so the amplitude cannot drift over a long run.
//! A glide moves `ε` by a fixed step each block and ends on the exactly computed target.
//! The tests run 3 minutes of audio and hold the amplitude to 1e-6 and the frequency to
//! 1 cent, and find every oscillator's frequency in the output's spectrum.
//!
//! **Real-time contract.** [`Migrator::new`] allocates (the phasor arrays and the 32
//! cumulative pitch distributions); [`Migrator::process`], [`Migrator::set_frequency`]
//! and every accessor never allocate, lock or block, and do not panic for any pad
//! values (non-finite ones count as zero).
//!
//! A [`Migrator`] can own any subset of the objects ([`Migrator::with_objects`]), so a
//! synth can be split over worker threads; each part adds its objects into the output
//! it is given, and the parts' outputs sum to the whole synth's.

mod kernel;
mod roofline;

use std::ops::Range;

use kernel::{detect_kernel, render, Mix};
pub use roofline::Roofline;

/// Objects (voices, one per pad) in the whole synth.
pub const OBJECTS: usize = 32;
/// Sinusoidal oscillators per object.
pub const OSCILLATORS_PER_OBJECT: usize = 100;
/// Output channels the objects are mixed to (object `o` plays on channel `o % 8`).
pub const OUTPUT_CHANNELS: usize = 8;
/// Frames per block, the controller's block of 16 packets × 2 frames.
pub const BLOCK_FRAMES: usize = 32;
/// Oscillators per lane group.
pub const LANES: usize = 8;
/// Lane groups per object (100 oscillators padded to 104).
const GROUPS: usize = OSCILLATORS_PER_OBJECT.div_ceil(LANES);
/// Cents per bin of the pitch distributions.
const CENTS_PER_BIN: usize = 1;
/// Octaves the pitch distributions span, from [`MigratorConfig::lowest_hz`].
pub const OCTAVES: usize = 4;
const BINS: usize = OCTAVES * 1200 / CENTS_PER_BIN;
/// Gaussian widths `x` chooses between (x = 0 the narrowest, x = 1 the widest).
pub const WIDTHS: usize = 8;
/// Standard deviation of the widest gaussian, in cents (the narrowest is 0: the table's
/// own pitches).
pub const WIDEST_SIGMA_CENTS: f64 = 100.0;
/// Glides in flight per object at most; a migration due while they are all busy waits
/// for the next free one.
const MAX_GLIDES: usize = 8;
/// Time constant of the pressure smoothing.
const PRESSURE_SMOOTHING_S: f64 = 0.005;

/// The four microtonal pitch tables `y` chooses between: for each, the scale degrees in
/// cents above the octave's root with their relative probability, repeated in every
/// octave.
pub const PITCH_TABLES: [(&str, &[(f64, f64)]); 4] = [
    (
        "just major (5-limit)",
        &[
            (0.0, 4.0),
            (203.91, 1.0),
            (386.31, 2.0),
            (498.04, 1.0),
            (701.96, 3.0),
            (884.36, 1.0),
            (1088.27, 1.0),
        ],
    ),
    (
        "harmonics 8-15",
        &[
            (0.0, 3.0),
            (203.91, 1.0),
            (386.31, 2.0),
            (551.32, 1.0),
            (701.96, 2.0),
            (840.53, 1.0),
            (968.83, 2.0),
            (1088.27, 1.0),
        ],
    ),
    (
        "19-tone equal",
        &[
            (0.0, 2.0),
            (63.16, 1.0),
            (126.32, 1.0),
            (189.47, 1.0),
            (252.63, 1.0),
            (315.79, 1.0),
            (378.95, 1.0),
            (442.11, 1.0),
            (505.26, 1.0),
            (568.42, 1.0),
            (631.58, 1.0),
            (694.74, 2.0),
            (757.89, 1.0),
            (821.05, 1.0),
            (884.21, 1.0),
            (947.37, 1.0),
            (1010.53, 1.0),
            (1073.68, 1.0),
            (1136.84, 1.0),
        ],
    ),
    (
        "quarter-tone neutral",
        &[
            (0.0, 3.0),
            (150.0, 2.0),
            (350.0, 2.0),
            (500.0, 1.0),
            (700.0, 3.0),
            (850.0, 2.0),
            (1050.0, 2.0),
        ],
    ),
];

/// One pad's controls for a block, each in 0..=1 (values outside are clamped; non-finite
/// ones count as 0).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Pad {
    /// Horizontal position: the width of the gaussian, 0 narrow to 1 wide.
    pub x: f32,
    /// Vertical position: which of the four pitch tables (quarters of the pad).
    pub y: f32,
    /// Pressure: the object's amplitude; 0 is silent and not computed.
    pub pressure: f32,
}

/// How the synth is built.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MigratorConfig {
    /// Sample rate, 44100 Hz in the study.
    pub sample_rate_hz: f64,
    /// Each oscillator migrates this often (staggered over all oscillators); `None`
    /// never migrates (a fixed spectrum, for tests).
    pub migrate_every_s: Option<f64>,
    /// Length of a migration's glide.
    pub glide_s: f64,
    /// The root of the lowest octave of the pitch tables.
    pub lowest_hz: f64,
    /// Seed of the migrations' random draws (each object has its own stream derived
    /// from it, so a split synth draws what the whole one does).
    pub seed: u64,
}

impl Default for MigratorConfig {
    /// 44.1 kHz, a migration every 6 s gliding for 0.25 s, tables from 65.41 Hz (C2)
    /// over four octaves.
    fn default() -> MigratorConfig {
        MigratorConfig {
            sample_rate_hz: 44_100.0,
            migrate_every_s: Some(6.0),
            glide_s: 0.25,
            lowest_hz: 65.406_391_325_149_66,
            seed: 0x5eed_1e55_a11d_0c75,
        }
    }
}

/// Which compiled kernel rotates the phasors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// AVX-512 (F and VL: 32 vector registers) and FMA, chosen at run time first.
    Avx512,
    /// AVX2 and FMA, chosen at run time.
    Avx2Fma,
    /// The portable build (the compiler's baseline vector width).
    Portable,
}

impl std::fmt::Display for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Kernel::Avx512 => "avx512+fma",
            Kernel::Avx2Fma => "avx2+fma",
            Kernel::Portable => "portable",
        })
    }
}

type Lanes = [f32; LANES];

/// A glide in flight: oscillator `index` of the object moves its `ε` by `step_eps` a
/// block and ends on `target_eps` after `blocks_left` more blocks.
#[derive(Clone, Copy, Debug, Default)]
struct Glide {
    index: usize,
    blocks_left: u32,
    step_eps: f32,
    target_eps: f32,
}

/// One object's state: its phasors in lane groups and its controls.
struct Object {
    /// The last sample of each oscillator.
    y: [Lanes; GROUPS],
    /// The last sample minus the one before it.
    d: [Lanes; GROUPS],
    /// `ε = 2 cos ω - 2` of each oscillator.
    eps: [Lanes; GROUPS],
    /// `1 / (A² sin² ω)`, the invariant's value to renormalise to (0 in padding lanes).
    inv_norm: [Lanes; GROUPS],
    /// Each oscillator's amplitude `A`.
    amplitude: [f64; OSCILLATORS_PER_OBJECT],
    /// Configured frequency of each oscillator (the glide's target while gliding).
    frequency_hz: [f64; OSCILLATORS_PER_OBJECT],
    glides: [Glide; MAX_GLIDES],
    gliding: usize,
    /// Smoothed amplitude at the end of the last block.
    gain: f32,
    pad: Pad,
    /// Next oscillator to migrate and when (in blocks since the start, fractional).
    next_migrant: usize,
    next_migration_block: f64,
    rng: u64,
}

impl Object {
    /// Give oscillator `index` the coefficient `eps`, keeping its phase and amplitude:
    /// the same `(y, d)` under another `ε` would be another amplitude, so the state is
    /// rescaled to the nominal one (which also renormalises a silent object's oscillator
    /// that has not been computed meanwhile).
    fn retune(&mut self, index: usize, eps: f32) {
        let (group, lane) = (index / LANES, index % LANES);
        self.eps[group][lane] = eps;
        self.inv_norm[group][lane] = inv_norm(eps, self.amplitude[index]);
        let (y, d, e) = (
            self.y[group][lane] as f64,
            self.d[group][lane] as f64,
            eps as f64,
        );
        let now = ((d * d - e * y * (y - d)) / (-e * (1.0 + e / 4.0))).sqrt();
        if now > 0.0 && now.is_finite() {
            let scale = self.amplitude[index] / now;
            self.y[group][lane] = (y * scale) as f32;
            self.d[group][lane] = (d * scale) as f32;
        }
    }
}

/// The Migrator synthesizer, or the part of it that owns some of its objects.
pub struct Migrator {
    config: MigratorConfig,
    first_object: usize,
    objects: Vec<Object>,
    /// `WIDTHS × tables` cumulative distributions over [`BINS`] pitch bins.
    cdfs: Vec<f32>,
    block: u64,
    blocks_per_migration_slot: f64,
    glide_blocks: u32,
    smoothing: f32,
    kernel: Kernel,
    /// Objects computed in the last block.
    active: usize,
}

impl Migrator {
    /// The whole synth: all [`OBJECTS`] objects. Allocates.
    pub fn new(config: MigratorConfig) -> Migrator {
        Migrator::with_objects(config, 0..OBJECTS)
    }

    /// The part of the synth that owns `objects` (a sub-range of `0..OBJECTS`, clamped
    /// to it). Parts built from the same config draw the same migrations as the whole
    /// synth does for those objects. Allocates.
    pub fn with_objects(config: MigratorConfig, objects: Range<usize>) -> Migrator {
        let start = objects.start.min(OBJECTS);
        let end = objects.end.clamp(start, OBJECTS);
        let rate = config.sample_rate_hz;
        let block_s = BLOCK_FRAMES as f64 / rate;
        let blocks_per_migration_slot = config
            .migrate_every_s
            .map(|every| every / block_s / (OBJECTS * OSCILLATORS_PER_OBJECT) as f64)
            .unwrap_or(f64::INFINITY);
        let glide_blocks = (config.glide_s / block_s).round().max(1.0) as u32;
        let smoothing = (1.0 - (-block_s / PRESSURE_SMOOTHING_S).exp()) as f32;
        let cdfs = pitch_cdfs();
        let mut synth = Migrator {
            config,
            first_object: start,
            objects: Vec::with_capacity(end - start),
            cdfs,
            block: 0,
            blocks_per_migration_slot,
            glide_blocks,
            smoothing,
            kernel: detect_kernel(),
            active: 0,
        };
        for object in start..end {
            let mut rng =
                splitmix(config.seed ^ (object as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let mut state = Object {
                y: [[0.0; LANES]; GROUPS],
                d: [[0.0; LANES]; GROUPS],
                eps: [[0.0; LANES]; GROUPS],
                inv_norm: [[0.0; LANES]; GROUPS],
                amplitude: [0.0; OSCILLATORS_PER_OBJECT],
                frequency_hz: [0.0; OSCILLATORS_PER_OBJECT],
                glides: [Glide::default(); MAX_GLIDES],
                gliding: 0,
                gain: 0.0,
                pad: Pad::default(),
                next_migrant: 0,
                // Oscillator j of object o has global slot j × OBJECTS + o: each object
                // migrates one oscillator every OBJECTS slots, the objects interleaved.
                next_migration_block: object as f64 * blocks_per_migration_slot,
                rng: 0,
            };
            for index in 0..OSCILLATORS_PER_OBJECT {
                let (group, lane) = (index / LANES, index % LANES);
                // Amplitudes fall gently with the oscillator's index, 1/100 on average
                // so a fully pressed object peaks below full scale.
                let amplitude = 0.015 - 0.01 * index as f64 / OSCILLATORS_PER_OBJECT as f64;
                let phase = uniform(&mut rng) * std::f64::consts::TAU;
                let cents = synth.draw_cents(&mut rng, 0, 0);
                let hz = config.lowest_hz * (cents / 1200.0).exp2();
                let w = std::f64::consts::TAU * hz / rate;
                state.amplitude[index] = amplitude;
                state.frequency_hz[index] = hz;
                state.eps[group][lane] = epsilon(hz, rate);
                state.inv_norm[group][lane] = inv_norm(state.eps[group][lane], amplitude);
                let y = amplitude * phase.cos();
                state.y[group][lane] = y as f32;
                state.d[group][lane] = (y - amplitude * (phase - w).cos()) as f32;
            }
            state.rng = rng;
            synth.objects.push(state);
        }
        synth
    }

    /// The objects this part owns.
    pub fn objects(&self) -> Range<usize> {
        self.first_object..self.first_object + self.objects.len()
    }

    /// The kernel [`process`](Migrator::process) runs on this CPU.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Use the portable kernel even where AVX2 and FMA are available (for comparisons).
    pub fn force_portable_kernel(&mut self) {
        self.kernel = Kernel::Portable;
    }

    /// Use `kernel` if this CPU runs it ([`Kernel::is_available`]); false (and the
    /// kernel unchanged) if not.
    pub fn force_kernel(&mut self, kernel: Kernel) -> bool {
        let available = kernel.is_available();
        if available {
            self.kernel = kernel;
        }
        available
    }

    /// Objects computed in the last block (those with pressure, or still fading out).
    pub fn active_objects(&self) -> usize {
        self.active
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &MigratorConfig {
        &self.config
    }

    /// Oscillator `index` of `object`'s configured frequency (a glide's target while it
    /// glides), or `None` outside this part.
    pub fn frequency(&self, object: usize, index: usize) -> Option<f64> {
        let state = self.objects.get(object.checked_sub(self.first_object)?)?;
        state.frequency_hz.get(index).copied()
    }

    /// Oscillator `index` of `object`'s current amplitude, from the recurrence's
    /// invariant `d² - ε·y·(y - d) = A² sin² ω`, or `None` outside this part.
    pub fn amplitude(&self, object: usize, index: usize) -> Option<f64> {
        let state = self.objects.get(object.checked_sub(self.first_object)?)?;
        if index >= OSCILLATORS_PER_OBJECT {
            return None;
        }
        let (group, lane) = (index / LANES, index % LANES);
        let (y, d, e) = (
            state.y[group][lane] as f64,
            state.d[group][lane] as f64,
            state.eps[group][lane] as f64,
        );
        let sin_sq = -e * (1.0 + e / 4.0);
        Some(((d * d - e * y * (y - d)) / sin_sq).sqrt())
    }

    /// Oscillator `index` of `object`'s last sample, or `None` outside this part.
    pub fn sample(&self, object: usize, index: usize) -> Option<f64> {
        let state = self.objects.get(object.checked_sub(self.first_object)?)?;
        if index >= OSCILLATORS_PER_OBJECT {
            return None;
        }
        Some(state.y[index / LANES][index % LANES] as f64)
    }

    /// Oscillator `index` of `object`'s nominal amplitude (what it is renormalised to).
    pub fn nominal_amplitude(&self, object: usize, index: usize) -> Option<f64> {
        let state = self.objects.get(object.checked_sub(self.first_object)?)?;
        state.amplitude.get(index).copied()
    }

    /// Set oscillator `index` of `object` to `hz` at once (no glide), cancelling a glide
    /// in flight. Frequencies are clamped to 1 Hz .. a quarter of the rate. Real-time
    /// safe. Returns false outside this part.
    pub fn set_frequency(&mut self, object: usize, index: usize, hz: f64) -> bool {
        let rate = self.config.sample_rate_hz;
        let Some(local) = object.checked_sub(self.first_object) else {
            return false;
        };
        let Some(state) = self.objects.get_mut(local) else {
            return false;
        };
        if index >= OSCILLATORS_PER_OBJECT {
            return false;
        }
        let hz = if hz.is_finite() {
            hz.clamp(1.0, rate / 4.0)
        } else {
            1.0
        };
        let (group, lane) = (index / LANES, index % LANES);
        state.frequency_hz[index] = hz;
        state.retune(index, epsilon(hz, rate));
        let _ = (group, lane);
        if let Some(at) = state.glides[..state.gliding]
            .iter()
            .position(|g| g.index == index)
        {
            state.glides.copy_within(at + 1..state.gliding, at);
            state.gliding -= 1;
        }
        true
    }

    /// Render one block: add this part's objects into `out` (frame-major, one row of
    /// [`OUTPUT_CHANNELS`] per frame; `out` is not cleared). `pads[o]` controls object
    /// `o` for this block (a whole synth's pad array; a part reads its own entries).
    /// Objects without pressure that have faded out are skipped. Real-time safe.
    pub fn process(
        &mut self,
        pads: &[Pad; OBJECTS],
        out: &mut [[f32; OUTPUT_CHANNELS]; BLOCK_FRAMES],
    ) {
        let block = self.block;
        self.block += 1;
        let mut active = 0;
        let mut mix = Mix::new();
        for local in 0..self.objects.len() {
            let object = self.first_object + local;
            let pad = sanitize(pads[object]);
            self.objects[local].pad = pad;
            self.migrate(local, block);
            let state = &mut self.objects[local];
            let target = pad.pressure;
            let start_gain = state.gain;
            let mut end_gain = start_gain + (target - start_gain) * self.smoothing;
            if target == 0.0 && end_gain < 1e-5 {
                end_gain = 0.0;
            }
            state.gain = end_gain;
            if start_gain == 0.0 && end_gain == 0.0 {
                continue;
            }
            active += 1;
            let mut frames = [[0.0f32; LANES]; BLOCK_FRAMES];
            render(self.kernel, state.phasors(), &mut frames);
            let slope = (end_gain - start_gain) / BLOCK_FRAMES as f32;
            mix.add_object(self.kernel, &frames, object, start_gain, slope);
        }
        if active > 0 {
            mix.add_to(self.kernel, out);
        }
        self.active = active;
    }

    /// Start the migrations of object `local` due at `block`, and advance its glides.
    fn migrate(&mut self, local: usize, block: u64) {
        let per_slot = self.blocks_per_migration_slot;
        let glide_blocks = self.glide_blocks;
        let rate = self.config.sample_rate_hz;
        let lowest_hz = self.config.lowest_hz;
        let slots_per_object_turn = OBJECTS as f64 * per_slot;
        // Finish or advance the glides in flight.
        {
            let state = &mut self.objects[local];
            let mut kept = 0;
            for at in 0..state.gliding {
                let mut glide = state.glides[at];
                glide.blocks_left = glide.blocks_left.saturating_sub(1);
                let (group, lane) = (glide.index / LANES, glide.index % LANES);
                if glide.blocks_left == 0 {
                    state.retune(glide.index, glide.target_eps);
                } else {
                    // A small step: the block's renormalisation absorbs the change of
                    // amplitude it implies (a fraction of a percent), cheaper than a
                    // retune for every gliding oscillator every block.
                    let eps = state.eps[group][lane] + glide.step_eps;
                    state.eps[group][lane] = eps;
                    state.inv_norm[group][lane] = inv_norm(eps, state.amplitude[glide.index]);
                }
                if glide.blocks_left > 0 {
                    state.glides[kept] = glide;
                    kept += 1;
                }
            }
            state.gliding = kept;
        }
        if !per_slot.is_finite() {
            return;
        }
        while self.objects[local].next_migration_block <= block as f64 {
            if self.objects[local].gliding == MAX_GLIDES {
                break;
            }
            let (table, width) = pad_choice(self.objects[local].pad);
            let mut rng = self.objects[local].rng;
            let cents = self.draw_cents(&mut rng, table, width);
            let state = &mut self.objects[local];
            state.rng = rng;
            let index = state.next_migrant;
            state.next_migrant = (index + 1) % OSCILLATORS_PER_OBJECT;
            state.next_migration_block += slots_per_object_turn;
            let hz = (lowest_hz * (cents / 1200.0).exp2()).clamp(1.0, rate / 4.0);
            state.frequency_hz[index] = hz;
            let target_eps = epsilon(hz, rate);
            let (group, lane) = (index / LANES, index % LANES);
            // Replace a glide already in flight on this oscillator.
            if let Some(at) = state.glides[..state.gliding]
                .iter()
                .position(|g| g.index == index)
            {
                state.glides.copy_within(at + 1..state.gliding, at);
                state.gliding -= 1;
            }
            let step_eps = (target_eps - state.eps[group][lane]) / glide_blocks as f32;
            let slot = state.gliding;
            state.glides[slot] = Glide {
                index,
                blocks_left: glide_blocks,
                step_eps,
                target_eps,
            };
            state.gliding += 1;
        }
    }

    /// Draw a pitch in cents above `lowest_hz` from table `table` convolved with width
    /// `width`.
    fn draw_cents(&self, rng: &mut u64, table: usize, width: usize) -> f64 {
        let cdf = &self.cdfs[(table * WIDTHS + width) * BINS..][..BINS];
        let u = uniform(rng) as f32;
        let bin = cdf.partition_point(|&p| p < u).min(BINS - 1);
        (bin * CENTS_PER_BIN) as f64
    }
}

/// Which pitch table and gaussian width a pad selects.
fn pad_choice(pad: Pad) -> (usize, usize) {
    let table = ((pad.y * PITCH_TABLES.len() as f32) as usize).min(PITCH_TABLES.len() - 1);
    let width = ((pad.x * (WIDTHS - 1) as f32).round() as usize).min(WIDTHS - 1);
    (table, width)
}

fn sanitize(pad: Pad) -> Pad {
    let clean = |v: f32| {
        if v.is_finite() {
            v.clamp(0.0, 1.0)
        } else {
            0.0
        }
    };
    Pad {
        x: clean(pad.x),
        y: clean(pad.y),
        pressure: clean(pad.pressure),
    }
}

/// The recurrence's coefficient for `hz`: `ε = 2 cos ω - 2 = -4 sin²(ω/2)`, computed in
/// `f64` and rounded once.
fn epsilon(hz: f64, rate: f64) -> f32 {
    let half_w = std::f64::consts::PI * hz / rate;
    (-4.0 * half_w.sin().powi(2)) as f32
}

/// `1 / (A² sin² ω)` for an oscillator of coefficient `eps` and amplitude `A` (0 for a
/// silent padding lane).
fn inv_norm(eps: f32, amplitude: f64) -> f32 {
    let e = eps as f64;
    let sin_sq = -e * (1.0 + e / 4.0);
    if amplitude == 0.0 || sin_sq <= 0.0 {
        0.0
    } else {
        (1.0 / (amplitude * amplitude * sin_sq)) as f32
    }
}

/// The cumulative pitch distributions: for each table and width, the table's degrees
/// over [`OCTAVES`] octaves, convolved with a gaussian of that width, summed up and
/// normalised to end at 1.
fn pitch_cdfs() -> Vec<f32> {
    let mut cdfs = Vec::with_capacity(PITCH_TABLES.len() * WIDTHS * BINS);
    for (_, degrees) in PITCH_TABLES {
        for width in 0..WIDTHS {
            let sigma = WIDEST_SIGMA_CENTS * width as f64 / (WIDTHS - 1) as f64;
            let mut density = vec![0.0f64; BINS];
            for octave in 0..OCTAVES {
                for &(cents, weight) in degrees {
                    let centre = octave as f64 * 1200.0 + cents;
                    if sigma == 0.0 {
                        let bin = (centre / CENTS_PER_BIN as f64).round() as usize;
                        if bin < BINS {
                            density[bin] += weight;
                        }
                        continue;
                    }
                    let reach = (4.0 * sigma / CENTS_PER_BIN as f64).ceil() as isize;
                    let middle = (centre / CENTS_PER_BIN as f64).round() as isize;
                    for bin in (middle - reach).max(0)..=(middle + reach).min(BINS as isize - 1) {
                        let d = bin as f64 * CENTS_PER_BIN as f64 - centre;
                        density[bin as usize] += weight * (-0.5 * (d / sigma).powi(2)).exp();
                    }
                }
            }
            let total: f64 = density.iter().sum();
            let mut running = 0.0;
            for p in density {
                running += p;
                cdfs.push((running / total) as f32);
            }
        }
    }
    cdfs
}

fn splitmix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A uniform draw in `[0, 1)` (xorshift64*).
fn uniform(state: &mut u64) -> f64 {
    if *state == 0 {
        *state = 0x2545_f491_4f6c_dd1d;
    }
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    let bits = state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11;
    bits as f64 / (1u64 << 53) as f64
}

/// A naive Migrator block for reference: every oscillator calls `f32::sin` on its own
/// phase for every sample. [`crate::bench`] times it beside the real synth.
pub struct NaiveReference {
    phase: Vec<f32>,
    increment: Vec<f32>,
    amplitude: Vec<f32>,
}

impl NaiveReference {
    /// All oscillators of the synth, at the frequencies `synth` has now. Allocates.
    pub fn like(synth: &Migrator) -> NaiveReference {
        let rate = synth.config.sample_rate_hz;
        let mut reference = NaiveReference {
            phase: Vec::new(),
            increment: Vec::new(),
            amplitude: Vec::new(),
        };
        for object in synth.objects() {
            for index in 0..OSCILLATORS_PER_OBJECT {
                let hz = synth.frequency(object, index).unwrap_or(440.0);
                reference.phase.push(0.0);
                reference
                    .increment
                    .push((std::f64::consts::TAU * hz / rate) as f32);
                reference
                    .amplitude
                    .push(synth.amplitude(object, index).unwrap_or(0.01) as f32);
            }
        }
        reference
    }

    /// One block of every oscillator, mixed as the synth mixes them.
    pub fn process(&mut self, out: &mut [[f32; OUTPUT_CHANNELS]; BLOCK_FRAMES]) {
        for (oscillator, phase) in self.phase.iter_mut().enumerate() {
            let channel = (oscillator / OSCILLATORS_PER_OBJECT) % OUTPUT_CHANNELS;
            for row in out.iter_mut() {
                *phase += self.increment[oscillator];
                if *phase > std::f32::consts::TAU {
                    *phase -= std::f32::consts::TAU;
                }
                row[channel] += self.amplitude[oscillator] * phase.sin();
            }
        }
    }
}

#[cfg(test)]
mod tests;
