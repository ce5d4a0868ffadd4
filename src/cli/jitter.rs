//! `audiolat jitter`: its flags (stage one) and the request built from them (stage two):
//! a validated [`JitterConfig`] plus the load and the output files.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use engine::rt::SchedClass;
use load::LoadSpec;
use probes::jitter::{FragmentModel, JitterConfig, JitterSetting, RunLength, WakeMode};

use super::policy::policy;
use super::values::{
    parse_count_u32, parse_count_u64, parse_load, parse_micros, parse_percent, parse_priority,
    parse_rate, parse_seconds,
};
use super::UsageError;

#[derive(Debug, Clone, Args)]
pub struct JitterArgs {
    /// Wake-up rate in Hz (default 2048, latencytest's RTC rate). With --frames it is the
    /// sample rate instead (default 44100).
    #[arg(long, value_name = "HZ", allow_hyphen_values = true, value_parser = parse_rate)]
    pub rate: Option<f64>,
    /// Wake-up interval instead of a rate (e.g. 1ms, 500us; a bare number is in us, as
    /// cyclictest -i).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = parse_micros,
          conflicts_with_all = ["rate", "frames"])]
    pub interval: Option<Duration>,
    /// How the thread is woken.
    #[arg(long, value_name = "MODE", default_value = "nanosleep", value_parser = str::parse::<WakeMode>)]
    pub mode: WakeMode,
    /// Percent of each period spent computing, 0 to below 100 (latencytest's CPU load
    /// inside the audio thread, e.g. 80).
    #[arg(long, value_name = "PERCENT", default_value_t = 0.0, allow_hyphen_values = true,
          value_parser = parse_percent)]
    pub busy: f64,
    /// Audio fragment model: fragments in the buffer, 2 to 1024 (latencytest used 3).
    #[arg(long, value_name = "N", requires = "frames", allow_hyphen_values = true,
          value_parser = parse_count_u32)]
    pub fragments: Option<u32>,
    /// Audio fragment model: frames per fragment (latencytest's "128" bytes were 32 frames).
    #[arg(long, value_name = "F", requires = "fragments", allow_hyphen_values = true,
          value_parser = parse_count_u32)]
    pub frames: Option<u32>,
    /// Scheduling policy of the measuring thread.
    #[arg(long, value_name = "POLICY", default_value = "fifo", value_parser = str::parse::<SchedClass>)]
    pub policy: SchedClass,
    /// Real-time priority for fifo/rr (1..99).
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = parse_priority)]
    pub priority: Option<i64>,
    /// SCHED_DEADLINE runtime per period (default: busy share + 10% of the period).
    #[arg(long, value_name = "DURATION", value_parser = parse_micros)]
    pub dl_runtime: Option<Duration>,
    /// SCHED_DEADLINE relative deadline (default: the period).
    #[arg(long, value_name = "DURATION", value_parser = parse_micros)]
    pub dl_deadline: Option<Duration>,
    /// Pin the measuring thread to these CPUs (e.g. 1 or 0-3,6).
    #[arg(long, value_name = "CPUS", allow_hyphen_values = true)]
    pub cpu: Option<String>,
    /// How long to run (e.g. 10s, 2m; at most 7 days).
    #[arg(long, short = 'D', value_name = "DURATION", value_parser = parse_seconds,
          conflicts_with = "loops")]
    pub duration: Option<Duration>,
    /// Run this many cycles instead of a duration (at most 7 days of them).
    #[arg(long, short = 'l', value_name = "N", allow_hyphen_values = true, value_parser = parse_count_u64)]
    pub loops: Option<u64>,
    /// Histogram bound: wake-ups later than this are overflows, counted with their cycle
    /// numbers (e.g. 100ms; 1us to 60s).
    #[arg(long, value_name = "DURATION", default_value = "100ms", value_parser = parse_micros)]
    pub hist_bound: Duration,
    /// Also write the histogram in cyclictest's -h text format to this file.
    #[arg(long, value_name = "PATH")]
    pub histfile: Option<PathBuf>,
    /// Background load: none, cpu[:percent], io, top, mem, ep[:threads], hackbench, or
    /// combinations like cpu:80+io.
    #[arg(long, value_name = "SPEC", default_value = "none", value_parser = parse_load)]
    pub load: LoadSpec,
    #[command(flatten)]
    pub scratch: super::values::ScratchArgs,
    /// Do not lock memory (mlockall).
    #[arg(long)]
    pub no_mlock: bool,
    /// Do not hold /dev/cpu_dma_latency at 0.
    #[arg(long)]
    pub no_dma_latency: bool,
    #[command(flatten)]
    pub why: super::values::WhyArgs,
    #[command(flatten)]
    pub output: super::values::OutputArgs,
    #[command(flatten)]
    pub gates: super::values::GateArgs,
}

/// What `audiolat jitter` runs, built once from its flags (stage two).
#[derive(Debug, Clone)]
pub struct JitterRequest {
    /// The validated measurement.
    pub config: JitterConfig,
    /// The background load.
    pub load: LoadSpec,
    /// Directory for the io load's files: `--scratch-dir`, else the database's directory.
    pub scratch_dir: PathBuf,
    /// Where to also write the histogram in cyclictest's `-h` text format.
    pub histfile: Option<PathBuf>,
    /// `--json` and `--quiet`.
    pub output: super::values::OutputArgs,
}

impl JitterArgs {
    /// Stage two: the checked request. `default_scratch` is the database's directory.
    pub fn request(&self, default_scratch: &Path) -> Result<JitterRequest, UsageError> {
        Ok(JitterRequest {
            config: jitter_config(self)?,
            load: self.load.clone(),
            scratch_dir: self.scratch.or(default_scratch),
            histfile: self.histfile.clone(),
            output: self.output,
        })
    }
}

/// Builds and validates the jitter configuration from the flags: the measurement part of
/// [`JitterArgs::request`].
fn jitter_config(a: &JitterArgs) -> Result<JitterConfig, UsageError> {
    let (period_ns, fragments) = match (a.fragments, a.frames) {
        (Some(fragments), Some(frames)) => {
            let rate = a.rate.unwrap_or(44_100.0);
            let f = FragmentModel::at_rate(fragments, frames, rate).map_err(|_| {
                UsageError(format!(
                    "--rate {rate} is not a sample rate: with --frames, --rate is the sample rate in Hz (1000..768000, e.g. 44100)"
                ))
            })?;
            (f.period_ns(), Some(f))
        }
        _ => {
            let period_ns = match (a.interval, a.rate) {
                (Some(i), _) => i.as_nanos() as u64,
                (None, rate) => (1e9 / rate.unwrap_or(2048.0)).round() as u64,
            };
            (period_ns, None)
        }
    };
    let cpus = match &a.cpu {
        None => None,
        Some(list) => Some(
            engine::rt::parse_online_cpu_list(list)
                .map_err(|e| UsageError(format!("--cpu {list}: {e}")))?,
        ),
    };
    let length = match (a.loops, a.duration) {
        (Some(n), _) => RunLength::Loops(n),
        (None, d) => RunLength::Duration(d.unwrap_or(Duration::from_secs(10))),
    };
    let config = JitterConfig {
        mode: a.mode,
        period_ns,
        fragments,
        busy_percent: a.busy,
        policy: policy(
            a.policy,
            a.priority,
            period_ns,
            a.busy,
            a.dl_runtime,
            a.dl_deadline,
        )?,
        cpus,
        length,
        hist_bound_ns: a.hist_bound.as_nanos().min(u64::MAX as u128) as u64,
        lock_memory: !a.no_mlock,
        dma_latency: !a.no_dma_latency,
        why: a.why.config()?,
        ..JitterConfig::new(period_ns, length)
    };
    config
        .validate()
        .map_err(|e| UsageError(e.message(|s| jitter_flag(a, s))))?;
    Ok(config)
}

/// The flag that sets each setting the jitter probe refuses by name (the period: the
/// flag that gave it).
fn jitter_flag(a: &JitterArgs, setting: JitterSetting) -> &'static str {
    match setting {
        JitterSetting::Period if a.frames.is_some() => "--frames",
        JitterSetting::Period if a.interval.is_some() => "--interval",
        JitterSetting::Period => "--rate",
        JitterSetting::HistBound => "--hist-bound",
        JitterSetting::Busy => "--busy",
        JitterSetting::Fragments => "--fragments",
        JitterSetting::Frames => "--frames",
        JitterSetting::Cpus => "--cpu",
        JitterSetting::Duration => "--duration",
        JitterSetting::Loops => "--loops",
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command};

    fn request(args: &[&str]) -> Result<super::JitterRequest, crate::cli::UsageError> {
        let cli = Cli::try_parse_from(args).expect("the flags parse");
        match cli.command {
            Command::Jitter(a) => a.request(std::path::Path::new("/db/dir")),
            other => panic!("not jitter: {other:?}"),
        }
    }

    #[test]
    fn request_builds_the_config_and_resolves_defaults() {
        let req = request(&["audiolat", "jitter", "--rate", "1000", "--json"]).unwrap();
        assert_eq!(req.config.period_ns, 1_000_000);
        assert_eq!(req.scratch_dir, std::path::PathBuf::from("/db/dir"));
        let quiet = req.output.quiet();
        assert!(req.output.json && quiet, "--json implies no live line");
        let req = request(&["audiolat", "jitter", "--scratch-dir", "/s"]).unwrap();
        assert_eq!(req.scratch_dir, std::path::PathBuf::from("/s"));
        assert!(!req.output.quiet());
    }
}
