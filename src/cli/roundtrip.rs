//! `audiolat roundtrip` and `audiolat loop`: their flags (stage one), and what
//! `roundtrip` runs, built from them (stage two): its cells, periods and backend.

use std::path::Path;
use std::time::Duration;

use clap::Args;
use engine::virtual_card::setup::Cable;
use load::LoadSpec;
use probes::roundtrip::{RoundtripConfig, RoundtripSetting};
use runner::sweep::{RoundtripCell, SweepShape};

use super::audio::{AudioArgs, SweepRequest};
use super::values::{
    parse_count_u32, parse_f64, parse_loads, parse_seconds, parse_u32_any, ListOf,
};
use super::UsageError;

#[derive(Debug, Clone, Args)]
pub struct RoundtripArgs {
    #[command(flatten)]
    pub audio: AudioArgs,
    /// ALSA capture device (full duplex; default: the playback device).
    #[arg(long, value_name = "DEVICE")]
    pub capture_device: Option<String>,
    /// JACK ports audiolat's output goes to (the start of a cable).
    #[arg(long, value_name = "PORT[,PORT]", value_delimiter = ',')]
    pub playback: Vec<String>,
    /// JACK port audiolat's input listens to (the end of the cable). Without it, audiolat
    /// closes the loop itself with a software loop client in the server.
    #[arg(long, value_name = "PORT")]
    pub capture: Option<String>,
    /// Virtual card: the cable's delay in frames (fractional allowed; 0 to 65536).
    #[arg(long, value_name = "FRAMES", default_value_t = Cable::PLAIN.delay_frames,
          allow_hyphen_values = true, value_parser = parse_f64)]
    pub cable_delay: f64,
    /// Virtual card: the cable's gain (-100 to 100; negative inverts polarity).
    #[arg(long, value_name = "GAIN", default_value_t = Cable::PLAIN.gain, allow_hyphen_values = true,
          value_parser = parse_gain)]
    pub cable_gain: f32,
    /// Virtual card: no cable (the input hears silence).
    #[arg(long)]
    pub no_cable: bool,
    /// Delay audiolat's own output by N frames: a delay element in the loop, so the
    /// method can prove itself (the result must grow by exactly N; 0 to 65536).
    #[arg(long, value_name = "FRAMES", default_value_t = 0, allow_hyphen_values = true,
          value_parser = parse_u32_any)]
    pub insert_delay: u32,
    /// Time to measure with the multi-tone (after the clicks; at most 7 days).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_seconds)]
    pub duration: Duration,
    /// Periods between two multi-tone estimates, 1 to 65536 (default: one per tone
    /// period).
    #[arg(long, value_name = "PERIODS", value_parser = parse_count_u32)]
    pub every: Option<u32>,
    /// Clicks sent first (the study's impulse onset count; 0 to 1000).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = parse_u32_any)]
    pub impulses: u32,
    /// Peak level of the test signals (full scale is 1.0).
    #[arg(long, value_name = "LEVEL", default_value_t = 0.5, value_parser = parse_level)]
    pub level: f32,
    /// The longest loop expected, in frames, 1 to 65536 (default: the stream's latencies
    /// plus 2048).
    #[arg(long, value_name = "FRAMES", allow_hyphen_values = true, value_parser = parse_f64)]
    pub max_delay: Option<f64>,
    /// Background load; a comma list sweeps them.
    #[arg(long, value_name = "SPEC[,SPEC]", default_value = "none", value_parser = parse_loads)]
    pub load: ListOf<LoadSpec>,
    /// Repeat every configuration this many times (1 to 1000).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = parse_count_u32)]
    pub repeat: u32,
    /// Step down through periods (--period's list, or 2048 down to the backend's
    /// smallest), each for --duration under --load, and report the smallest buffer with
    /// no under-run and its round trip (the study's trial of buffer settings, automated).
    #[arg(long)]
    pub find_min_buffer: bool,
    #[command(flatten)]
    pub scratch: super::values::ScratchArgs,
    #[command(flatten)]
    pub why: super::values::WhyArgs,
    #[command(flatten)]
    pub output: super::values::OutputArgs,
    #[command(flatten)]
    pub gates: super::values::GateArgs,
}

impl RoundtripArgs {
    /// Stage two: everything `roundtrip` refuses before it starts anything, and what it
    /// runs. `default_scratch` is the database's directory.
    pub fn request(&self, default_scratch: &Path) -> anyhow::Result<SweepRequest<RoundtripCell>> {
        let scratch_dir = self.scratch.or(default_scratch);
        let given_periods = self.audio.period.as_ref().map_or(1, |p| p.0.len());
        SweepShape {
            periods: given_periods,
            policies: 1,
            workloads: 1,
            loads: self.load.0.len(),
            repeats: self.repeat,
        }
        .check()
        .map_err(|e| UsageError(super::event::sweep_size_message(&e)))?;
        let spec = crate::audio::spec(&self.audio, &crate::audio::roundtrip_purpose(self))?;
        let base = RoundtripConfig {
            duration_ms: self.duration.as_secs_f64() * 1e3,
            every_periods: self.every,
            impulses: self.impulses,
            insert_delay_frames: self.insert_delay,
            peak: self.level,
            max_delay_frames: self.max_delay,
            loop_hint_frames: spec.loop_hint_frames(),
            why: self.why.config()?,
            ..Default::default()
        };
        base.validate()
            .map_err(|e| UsageError(e.message(roundtrip_flag)))?;
        for load in &self.load.0 {
            crate::run_errors::check_load(load, &scratch_dir)?;
        }
        let mut periods = crate::audio::periods(&self.audio);
        if self.find_min_buffer {
            if self.load.0.len() > 1 || self.repeat > 1 {
                return Err(UsageError(
                    "--find-min-buffer tries one load once per setting: give one --load and no --repeat".into(),
                )
                .into());
            }
            let given = self.audio.period.as_ref().map(|p| p.0.as_slice());
            periods = runner::min_buffer::search_periods(&spec, given);
        }
        spec.check_periods(&periods)
            .map_err(|e| UsageError(crate::audio::audio_message(&e)))?;
        Ok(SweepRequest {
            cells: runner::sweep::roundtrip_cells(&base, &self.load.0, self.repeat),
            periods,
            spec,
            scratch_dir,
        })
    }
}

/// The flag that sets each setting the round-trip probe refuses by name.
pub fn roundtrip_flag(setting: RoundtripSetting) -> &'static str {
    match setting {
        RoundtripSetting::Duration => "--duration",
        RoundtripSetting::Every => "--every",
        RoundtripSetting::Level => "--level",
        RoundtripSetting::InsertDelay => "--insert-delay",
        RoundtripSetting::MaxDelay => "--max-delay",
        RoundtripSetting::Impulses => "--impulses",
        RoundtripSetting::LoopHint => "--cable-delay",
        // Not a flag: the probe's own warm-up, set by audiolat.
        RoundtripSetting::Warmup => "warm-up",
    }
}

#[derive(Debug, Clone, Args)]
pub struct LoopArgs {
    /// Frames the loop adds.
    #[arg(long, value_name = "FRAMES", default_value_t = 0, value_parser = parse_u32_any)]
    pub delay: u32,
    /// JACK server name (default: $JACK_DEFAULT_SERVER or "default").
    #[arg(long, value_name = "NAME")]
    pub server_name: Option<String>,
    /// The loop client's name.
    #[arg(long, value_name = "NAME", default_value = "audiolat-loop")]
    pub name: String,
    /// Connect the loop's input from this port.
    #[arg(long, value_name = "PORT")]
    pub from: Option<String>,
    /// Connect the loop's output to this port.
    #[arg(long, value_name = "PORT")]
    pub to: Option<String>,
}

impl LoopArgs {
    /// Stage two: the delay in its range, before the loop client is started.
    pub fn check(&self) -> Result<(), UsageError> {
        engine::jack::loop_client::JackLoop::check_delay(self.delay)
            .map_err(|e| UsageError(crate::audio::audio_message(&e)))
    }
}

/// A gain as typed (its range is the cable's: `engine::backend::MAX_CABLE_GAIN`).
fn parse_gain(s: &str) -> Result<f32, String> {
    let v = parse_f64(s)?;
    if v.abs() > f64::from(f32::MAX) {
        let max = engine::backend::MAX_CABLE_GAIN;
        return Err(format!(
            "use a gain from -{max} to {max} (1 is unity, negative inverts)"
        ));
    }
    Ok(v as f32)
}

fn parse_level(s: &str) -> Result<f32, String> {
    let v = parse_f64(s)?;
    if !(v > 0.0 && v <= 1.0) {
        return Err("use a peak level above 0 and at most 1.0 (full scale), e.g. 0.5".into());
    }
    Ok(v as f32)
}
