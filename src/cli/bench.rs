//! `audiolat bench`: its flags (stage one) and the [`BenchConfig`] built from them
//! (stage two).

use std::time::Duration;

use clap::Args;
use dsp::bench::{BenchConfig, BenchSetting};

use super::values::{parse_count_u32, parse_f64, parse_millis};
use super::UsageError;

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Sample rate the period is timed at (8000 to 384000).
    #[arg(long, value_name = "HZ", default_value_t = 44_100, value_parser = parse_count_u32)]
    pub rate: u32,
    /// Frames per period (16 to 8192).
    #[arg(long, value_name = "FRAMES", default_value_t = 128, value_parser = parse_count_u32)]
    pub period: u32,
    /// Share of the period the DSP may use when counting voices (e.g. 50%).
    #[arg(long, value_name = "PERCENT", default_value = "50", value_parser = parse_load_target)]
    pub target: f64,
    /// Time spent on each kernel (at most 60 s; the run takes about 15 times it).
    #[arg(long, value_name = "DURATION", default_value = "200ms", value_parser = parse_millis)]
    pub each: Duration,
    /// Time the Migrator block this many times (1 to 1000) and report the medians.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = parse_count_u32)]
    pub repeat: u32,
    /// Also time the synth block split over the calling thread and these counts of
    /// spinning worker threads (as net --workers; at most the online CPUs minus one), e.g. 1.
    #[arg(long, value_name = "N,...", value_delimiter = ',', allow_hyphen_values = true, value_parser = super::net::parse_workers)]
    pub workers: Vec<usize>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

impl BenchArgs {
    /// Stage two: the benchmark's configuration, each setting checked against its range
    /// (`BenchConfig::validate`) before anything is allocated.
    pub fn config(&self) -> Result<BenchConfig, UsageError> {
        let config = BenchConfig {
            sample_rate_hz: self.rate,
            period_frames: self.period as usize,
            load_target: self.target / 100.0,
            seconds_per_kernel: self.each.as_secs_f64(),
            migrator_repeats: self.repeat as usize,
        };
        config.validate().map_err(|e| {
            let flag = match e.setting {
                BenchSetting::Rate => "--rate",
                BenchSetting::Period => "--period",
                BenchSetting::LoadTarget => "--target",
                BenchSetting::SecondsPerKernel => "--each",
                BenchSetting::MigratorRepeats => "--repeat",
            };
            UsageError(format!(
                "{flag} {} is out of range: {}",
                e.value,
                e.setting.range()
            ))
        })?;
        Ok(config)
    }
}

fn parse_load_target(s: &str) -> Result<f64, String> {
    let v = parse_f64(s.trim_end_matches('%'))?;
    if !(v > 0.0 && v <= 100.0) {
        return Err(
            "use a percentage of the period above 0 and at most 100 (e.g. --target 50)".into(),
        );
    }
    Ok(v)
}
