//! The commands that read the store (`runs`, `show`, `export`, `report`, `compare`):
//! their flags (stage one) and the queries built from them (stage two).

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use report::compare::MetricChoice;

/// What a report or comparison is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// One run.
    Run(RunRef),
    /// A group of runs (a plan run, a suite, a sweep).
    Group(results::GroupId),
    /// Every complete run of a host (`host:NAME`).
    Host(String),
    /// Every complete run under a kernel release (`kernel:RELEASE`).
    Kernel(String),
}

fn parse_subject(s: &str) -> Result<Subject, String> {
    for (prefix, make) in [
        ("host:", Subject::Host as fn(String) -> Subject),
        ("kernel:", Subject::Kernel),
    ] {
        if let Some(v) = s.strip_prefix(prefix) {
            if v.is_empty() {
                return Err(format!("'{s}': name one, e.g. {prefix}NAME"));
            }
            return Ok(make(v.to_string()));
        }
    }
    if let Some(g) = s.strip_prefix("group:").or_else(|| s.strip_prefix("plan:")) {
        return g
            .parse::<results::GroupId>()
            .map(Subject::Group)
            .map_err(|_| format!("'{s}': give a group id, e.g. group:3"));
    }
    parse_run_ref(s)
        .map(Subject::Run)
        .map_err(|_| format!("'{s}': give a run id, `last`, or group:ID for a plan run or suite"))
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// What to report: run ids, `last`, group:ID (a plan run, suite or sweep), or
    /// host:NAME, kernel:RELEASE (every complete run of one).
    /// Default: the latest group.
    #[arg(value_name = "WHAT", value_parser = parse_subject)]
    pub subjects: Vec<Subject>,
    /// Where to write the HTML (default: NAME-report-....html beside the database NAME.db).
    #[arg(long, short, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Also print the report's tables in the terminal: its answer, a row per run, and a
    /// plan's study tables.
    #[arg(long)]
    pub print: bool,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline: a run id, `last`, group:ID, or every run of a host or kernel
    /// (host:NAME, kernel:RELEASE).
    #[arg(value_parser = parse_subject)]
    pub a: Subject,
    /// The other: a run id, `last`, group:ID, host:NAME or kernel:RELEASE.
    #[arg(value_parser = parse_subject)]
    pub b: Subject,
    /// Compare this metric (repeatable; default: each probe's main one, e.g.
    /// event_latency, wakeup_latency, roundtrip, response_time).
    #[arg(long, value_name = "METRIC", conflicts_with = "all_metrics")]
    pub metric: Vec<String>,
    /// Compare every metric the runs have.
    #[arg(long)]
    pub all_metrics: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write an HTML report: this comparison on top, A and B overlaid on the same
    /// axes below (default: NAME-report-compare-....html beside the database NAME.db).
    #[arg(long)]
    pub html: bool,
    /// Where to write the HTML report (with --html).
    #[arg(long, short, value_name = "PATH", requires = "html")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct PushArgs {
    /// The store to copy into: a PostgreSQL URL, postgres://USER@HOST[:PORT]/DBNAME
    /// (or another SQLite file). Runs it has already are not copied again.
    #[arg(long, value_name = "URL")]
    pub to: PathBuf,
}

#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Only runs of this probe.
    #[arg(long)]
    pub probe: Option<String>,
    /// Only runs with this status (running, complete, interrupted, failed).
    #[arg(long, value_parser = str::parse::<results::RunStatus>)]
    pub status: Option<results::RunStatus>,
    /// Only runs of this group (e.g. one suite).
    #[arg(long)]
    pub group: Option<results::GroupId>,
    /// Only runs made on this host (its hostname).
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// Only runs made under this kernel release (`uname -r`).
    #[arg(long, value_name = "RELEASE")]
    pub kernel: Option<String>,
    /// At most this many (1 to 1000000).
    #[arg(long, short = 'n', default_value_t = 20, allow_hyphen_values = true,
          value_parser = super::values::parse_usize_any)]
    pub limit: usize,
    /// List groups (suites, sweeps, plan runs) instead of runs: the ids `report group:N`
    /// and `compare group:A group:B` take.
    #[arg(long, conflicts_with_all = ["probe", "status", "group", "host", "kernel"])]
    pub groups: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// A count of rows to list, checked against 1 (or 0, `from`) to [`results::MAX_LISTED`].
fn listed(flag: &str, n: usize, from: usize) -> Result<usize, super::UsageError> {
    if (from..=results::MAX_LISTED).contains(&n) {
        return Ok(n);
    }
    Err(super::UsageError(format!(
        "{flag} {n} is out of range: use {from} to {}",
        results::MAX_LISTED
    )))
}

impl RunsArgs {
    /// Stage two: the store query the filter flags ask for, `--limit` in its range.
    pub fn filter(&self) -> Result<results::RunFilter, super::UsageError> {
        Ok(results::RunFilter {
            probe: self.probe.clone(),
            group_id: self.group,
            status: self.status,
            host: self.host.clone(),
            kernel: self.kernel.clone(),
            limit: Some(listed("--limit", self.limit, 1)?),
        })
    }
}

impl ShowArgs {
    /// Stage two: the events to list, in their range.
    pub fn events(&self) -> Result<usize, super::UsageError> {
        listed("--events", self.events, 0)
    }
}

impl CompareArgs {
    /// Stage two: which metrics to compare (`--all-metrics`, no `--metric`: the
    /// headlines, or each `--metric`).
    pub fn metrics(&self) -> MetricChoice {
        if self.all_metrics {
            MetricChoice::All
        } else if self.metric.is_empty() {
            MetricChoice::Headline
        } else {
            MetricChoice::These(self.metric.clone())
        }
    }
}

/// A run id, or `last`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunRef {
    Id(results::RunId),
    Last,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Run id, or `last`.
    #[arg(value_parser = parse_run_ref)]
    pub run: RunRef,
    /// Events to list.
    #[arg(long, default_value_t = 10, allow_hyphen_values = true,
          value_parser = super::values::parse_usize_any)]
    pub events: usize,
    /// Print JSON (the same document as `export --format json`).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// The whole run: metadata, measurements with histogram buckets, events, series.
    Json,
    /// One row per measurement with its summary.
    Csv,
    /// HdrHistogram interval log v1.3 (one tagged histogram per measurement).
    Hdr,
    /// cyclictest's -h histogram text of a jitter run's wake-up latency, up to its last
    /// used µs bucket.
    Cyclictest,
    /// A jitter run as `cyclictest --json` writes it (rt-tests 2.4), for KernelCI's and
    /// Linaro's parsers.
    CyclictestJson,
    /// Histograms as OpenMetrics text (node_exporter's textfile collector).
    Openmetrics,
    /// LAVA result lines, a line per statistic and per gate (Linaro's result.txt).
    Lava,
    /// JUnit XML: a test case for the run and one per gate, the metrics as properties.
    Junit,
    /// One CSV row per trigger of an event run, with its latency decomposition.
    Triggers,
    /// The run's series (e.g. a round trip's every window and click) as CSV blocks.
    Series,
    /// One CSV row per --fail-if gate: expression, measured value, pass/fail/unknown.
    Gates,
}

impl ExportFormat {
    /// The export this value names.
    pub fn kind(self) -> report::view::stored::ExportKind {
        use report::view::stored::ExportKind as K;
        match self {
            ExportFormat::Json => K::Json,
            ExportFormat::Csv => K::Csv,
            ExportFormat::Hdr => K::Hdr,
            ExportFormat::Cyclictest => K::Cyclictest,
            ExportFormat::CyclictestJson => K::CyclictestJson,
            ExportFormat::Openmetrics => K::OpenMetrics,
            ExportFormat::Lava => K::Lava,
            ExportFormat::Junit => K::Junit,
            ExportFormat::Triggers => K::Triggers,
            ExportFormat::Series => K::Series,
            ExportFormat::Gates => K::Gates,
        }
    }
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Run id, or `last`.
    #[arg(value_parser = parse_run_ref)]
    pub run: RunRef,
    /// Output format.
    #[arg(long, short, value_enum, default_value = "json")]
    pub format: ExportFormat,
    /// Write here instead of standard output.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

fn parse_run_ref(s: &str) -> Result<RunRef, String> {
    if s == "last" {
        return Ok(RunRef::Last);
    }
    s.parse::<results::RunId>()
        .map(RunRef::Id)
        .map_err(|_| format!("'{s}' is not a run id: use a number from `audiolat runs`, or last"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Adding an output format: every export the report crate makes has one `--format`
    /// value, in the same order (a new `ExportKind` fails here until it has its value).
    #[test]
    fn every_export_has_its_format_value() {
        let kinds: Vec<_> = ExportFormat::value_variants()
            .iter()
            .map(|f| f.kind())
            .collect();
        assert_eq!(kinds, report::view::stored::ExportKind::ALL);
    }
}
