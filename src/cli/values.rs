//! Stage one's value parsers shared by several commands: numbers, counts, durations,
//! loads and comma lists. Each checks one flag's value alone and says what to type instead.
//! Also [`cpu_list`], the CPU-list check stage two shares (it reads the online CPUs).

use std::time::Duration;

use clap::Args;
use load::LoadSpec;

/// A comma-separated list of values.
#[derive(Debug, Clone, PartialEq)]
pub struct ListOf<T>(pub Vec<T>);

pub(super) fn parse_list<T>(
    s: &str,
    what: &str,
    f: impl Fn(&str) -> Result<T, String>,
) -> Result<ListOf<T>, String> {
    let items: Vec<&str> = s.split(',').map(str::trim).collect();
    if items.iter().any(|i| i.is_empty()) {
        return Err(format!("'{s}': an empty item in the {what} list"));
    }
    items
        .into_iter()
        .map(f)
        .collect::<Result<Vec<_>, _>>()
        .map(ListOf)
}

pub(super) fn parse_loads(s: &str) -> Result<ListOf<LoadSpec>, String> {
    parse_list(s, "load", parse_load)
}

pub(super) fn parse_millis(s: &str) -> Result<Duration, String> {
    parse_duration(s, "ms")
}

pub(super) fn parse_u32_any(s: &str) -> Result<u32, String> {
    match s.trim().parse::<i128>() {
        Ok(v) if (0..=u32::MAX as i128).contains(&v) => Ok(v as u32),
        Ok(v) if v < 0 => Err("use a whole number of 0 or more".into()),
        _ if is_whole(s) => Err(too_large(s, 0, u32::MAX.into())),
        _ => Err(format!("'{s}' is not a whole number")),
    }
}

/// Whether `s` is written as a whole number (of any size).
fn is_whole(s: &str) -> bool {
    let t = s.trim();
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
}

/// A whole number beyond what a flag's type holds: the type's range (the flag's own
/// may be narrower, and is said when a value inside this one is out of it).
fn too_large(s: &str, min: u64, max: u64) -> String {
    format!(
        "'{}' is too large: use a whole number from {min} to {max}",
        s.trim()
    )
}

pub(super) fn parse_f64(s: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("'{s}' is not a number"))
}

/// A number as a message says it: as typed up to a billion, in scientific notation
/// beyond (never three hundred digits).
pub fn number(v: f64) -> String {
    if v.abs() < 1e9 {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

pub(super) fn parse_rate(s: &str) -> Result<f64, String> {
    let v = parse_f64(s)?;
    if v <= 0.0 {
        return Err("the rate must be a positive number of Hz (e.g. --rate 2048)".into());
    }
    Ok(v)
}

pub(super) fn parse_percent(s: &str) -> Result<f64, String> {
    let v = parse_f64(s)?;
    if !(0.0..100.0).contains(&v) {
        return Err("use a percentage from 0 up to, not including, 100 (e.g. --busy 80)".into());
    }
    Ok(v)
}

/// A real-time priority as typed (its range is the policy's, `Policy::choose`).
pub(super) fn parse_priority(s: &str) -> Result<i64, String> {
    match s.trim().parse() {
        Ok(v) => Ok(v),
        Err(_) if is_whole(s) => Err(format!(
            "'{}' is out of range: a real-time priority is 1..99",
            s.trim()
        )),
        Err(_) => Err(format!("'{s}' is not a whole number")),
    }
}

pub(super) fn parse_count_u64(s: &str) -> Result<u64, String> {
    match s.trim().parse::<i128>() {
        Ok(v) if v >= 1 && v <= u64::MAX as i128 => Ok(v as u64),
        Ok(v) if v < 1 => Err("use a whole number of at least 1".into()),
        _ if is_whole(s) => Err(too_large(s, 1, u64::MAX)),
        _ => Err(format!("'{s}' is not a whole number")),
    }
}

pub(super) fn parse_count_u32(s: &str) -> Result<u32, String> {
    let v = parse_count_u64(s)?;
    u32::try_from(v).map_err(|_| too_large(s, 1, u32::MAX.into()))
}

/// A count of 0 or more, as many as a `usize` holds (its range is checked in stage two).
pub(crate) fn parse_usize_any(s: &str) -> Result<usize, String> {
    match s.trim().parse::<i128>() {
        Ok(v) if (0..=usize::MAX as i128).contains(&v) => Ok(v as usize),
        Ok(v) if v < 0 => Err("use a whole number of 0 or more".into()),
        _ if is_whole(s) => Err(too_large(s, 0, usize::MAX as u64)),
        _ => Err(format!("'{s}' is not a whole number")),
    }
}

pub use engine::clock::parse_duration;

pub(super) fn parse_seconds(s: &str) -> Result<Duration, String> {
    parse_duration(s, "s")
}

pub(super) fn parse_micros(s: &str) -> Result<Duration, String> {
    parse_duration(s, "us")
}

pub(super) fn parse_load(s: &str) -> Result<LoadSpec, String> {
    s.parse::<LoadSpec>().map_err(|e| e.to_string())
}

/// A CPU-list flag's value read against the online CPUs (`None` when the flag is absent).
pub fn cpu_list(
    flag: &str,
    list: &Option<String>,
) -> Result<Option<Vec<usize>>, super::UsageError> {
    use super::UsageError;
    match list {
        None => Ok(None),
        Some(l) => {
            let parsed = engine::rt::parse_online_cpu_list(l)
                .map_err(|e| UsageError(format!("{flag} {l}: {e}")))?;
            if parsed.is_empty() {
                return Err(UsageError(format!(
                    "{flag} is empty: give CPUs like 1 or 0-3,6, or leave the flag out"
                )));
            }
            Ok(Some(parsed))
        }
    }
}

/// Where the io load writes: a flag every measuring command shares.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ScratchArgs {
    /// Directory for the io load's files (default: the database's directory).
    #[arg(long, value_name = "DIR")]
    pub scratch_dir: Option<std::path::PathBuf>,
}

impl ScratchArgs {
    /// `--scratch-dir`, else `default` (the database's directory).
    pub fn or(&self, default: &std::path::Path) -> std::path::PathBuf {
        self.scratch_dir
            .clone()
            .unwrap_or_else(|| default.to_path_buf())
    }
}

/// How a measuring command prints: `--json` and `--quiet`, the same on every command.
#[derive(Debug, Clone, Copy, Args)]
pub struct OutputArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// No live status or progress lines (--json implies it).
    #[arg(long, short)]
    pub quiet: bool,
}

impl OutputArgs {
    /// No live or progress lines: `--quiet`, or `--json` (stdout is the document).
    pub fn quiet(&self) -> bool {
        self.quiet || self.json
    }
}

/// `--why` and `--why-above`, the same on every probe that explains its misses.
#[derive(Debug, Clone, Default, Args)]
pub struct WhyArgs {
    /// Explain every late wake-up, callback or block from the kernel's own trace: which
    /// IRQ, softirq or thread took the time (needs root and tracefs; without them the
    /// run measures and says why).
    #[arg(long)]
    pub why: bool,
    /// Explain those later than this (1us to 60s; implies --why; default 100us); cycles
    /// that overran, under-runs and missed deadlines are explained whatever their size.
    #[arg(long, value_name = "DURATION", value_parser = parse_micros)]
    pub why_above: Option<Duration>,
}

impl WhyArgs {
    /// Whether causes were asked for (`--why`, or `--why-above`, which implies it).
    pub fn asked(&self) -> bool {
        self.why || self.why_above.is_some()
    }

    /// What `--why` asks for, `None` without it.
    pub fn config(&self) -> Result<Option<probes::why::WhyConfig>, super::UsageError> {
        if !self.why && self.why_above.is_none() {
            return Ok(None);
        }
        let above_ns = match self.why_above {
            None => probes::why::DEFAULT_ABOVE_NS,
            Some(d) if (Duration::from_micros(1)..=Duration::from_secs(60)).contains(&d) => {
                d.as_nanos() as u64
            }
            Some(d) => {
                return Err(super::UsageError(format!(
                    "--why-above {d:?} is out of range: use 1us..60s"
                )))
            }
        };
        Ok(Some(probes::why::WhyConfig { above_ns }))
    }
}

/// What a test farm reads of a measuring command: its gates (`--fail-if`) and the
/// format its runs print in (`--output-format`), the same on every measuring command.
#[derive(Debug, Clone, Default, Args)]
pub struct GateArgs {
    /// Exit 3 when EXPR holds on the stored run (repeatable): METRIC OP VALUE[UNIT], e.g.
    /// 'p99.9 > 200us', 'xruns > 0'; an unmeasured metric fails (--help lists metrics).
    #[arg(long = "fail-if", value_name = "EXPR", long_help = results::gate::help(),
          value_parser = |s: &str| results::gate::Gate::parse(s).map_err(|e| e.problem()))]
    pub fail_if: Vec<results::gate::Gate>,
    /// Print the stored runs in a test farm's format instead of the tables (as `audiolat
    /// export --format` does): LAVA result lines, JUnit XML, OpenMetrics, or one run's
    /// HdrHistogram log (jitter, net) or `cyclictest --json` (jitter).
    #[arg(long, value_enum, value_name = "FORMAT", conflicts_with = "json")]
    pub output_format: Option<FarmFormat>,
}

/// The formats of `--output-format` on a measuring command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FarmFormat {
    Lava,
    Junit,
    Openmetrics,
    CyclictestJson,
    Hdr,
}

impl GateArgs {
    /// Stage two: the gates for runs of `probe` (each names one of its metrics), and the
    /// format checked against the probe.
    pub fn check(
        &self,
        probe: &results::ProbeKind,
    ) -> Result<Vec<results::gate::Gate>, super::UsageError> {
        if self.output_format == Some(FarmFormat::Hdr) && !probe.one_run {
            return Err(super::UsageError(format!("--output-format hdr is one run's log: this {probe} command sweeps into several runs, so use lava, junit or openmetrics here, and `audiolat export RUN --format hdr` for each run")));
        }
        if self.output_format == Some(FarmFormat::CyclictestJson) && !probe.cyclictest {
            return Err(super::UsageError(format!("--output-format cyclictest-json is a jitter run's (periodic wake-up latency), not for {probe} runs: use lava, junit or openmetrics")));
        }
        runner::gates::for_probe(&self.fail_if, probe)
            .map_err(|e| super::UsageError(format!("--fail-if {e}")))
    }

    /// [`GateArgs::check`], refusing a gate on a metric the run cannot measure without
    /// a setting it was not given (`given`: the settings it was, of those its
    /// [`results::ProbeKind::needs`] name).
    pub fn check_with(
        &self,
        probe: &results::ProbeKind,
        given: &[results::probe_kind::Setting],
    ) -> Result<Vec<results::gate::Gate>, super::UsageError> {
        let gates = self.check(probe)?;
        match probe.unmeasured(gates.iter().map(|g| g.metric.as_str()), given) {
            Some((metric, why)) => {
                let g = gates
                    .iter()
                    .find(|g| g.metric == metric)
                    .expect("a gate's metric");
                Err(super::UsageError(format!("--fail-if '{}': {why}", g.expr)))
            }
            None => Ok(gates),
        }
    }

    /// Stage two of a command of many runs (a plan, the suite): the formats of many.
    pub fn check_many(&self) -> Result<(), super::UsageError> {
        match self.output_format {
            Some(FarmFormat::Hdr) => Err(super::UsageError("--output-format hdr is one run's log: a plan or the suite makes many runs, so use lava, junit or openmetrics (or `audiolat export RUN --format hdr`)".into())),
            Some(FarmFormat::CyclictestJson) => Err(super::UsageError("--output-format cyclictest-json is one jitter run's: a plan or the suite makes many runs, so use lava, junit or openmetrics (or `audiolat export RUN --format cyclictest-json`)".into())),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_positive() {
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("-5").is_err());
        assert_eq!(parse_rate("2048").unwrap(), 2048.0);
    }
}
