//! The suite as a runner plan: every probe that can run here, with the embedded defaults,
//! as one group of stored runs (`audiolat suite`).
//!
//! [`SuitePlan::new`] decides what runs (the jitter scenarios whose load can start here;
//! a scenario whose tool is missing is skipped, by name, with the reason); [`run`] runs
//! the doctor, then each scenario, then the event latency and the round trip on JACK (a
//! running server, else a private `jackd -d dummy`; none: both skipped) or, on a desktop
//! whose audio server is PipeWire (what `--server auto` finds when no jackd runs), both
//! through PipeWire's JACK API and through native streams, then the network audio over
//! loopback, and hands back one typed [`SuiteEntry`] per scenario.
//!
//! Promises: nothing is printed (live status goes through a [`SuiteObserver`]); a
//! scenario that fails does not stop the others (its entry says why and the suite is
//! marked failed); a stop request leaves the scenarios not reached as `not run`; every
//! load, private server and loop is stopped before [`run`] returns.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use engine::audio::Backend;
use engine::backend::{
    BackendKind, BackendSpec, ServerChoice, StreamPurpose, StreamSettings, SweepStep,
    DEFAULT_PERIODS,
};
use engine::jack::client::{JackConfig, JackStream};
use engine::jack::server::{JackServer, ServerRequest};
use engine::virtual_card::setup::Cable;
use load::LoadSpec;
use probes::doctor::DoctorReport;
use probes::jitter::{FragmentModel, JitterConfig, RunLength};
use probes::probe::{EventProbe, JitterProbe, KeepsOutcome, NetProbe, RoundtripProbe};
use results::records::load::Load;
use results::records::Record;
use results::{GroupId, Measurement, RunId, RunInfo, RunSink, RunStatus, SinkError};
use serde_json::{json, Value};

use crate::{Cell, Context, Observer, Run, RunError, Watch};

/// The event scenario's label.
pub const EVENT_LABEL: &str = "event latency, sine, asap";
/// The round trip's label.
pub const ROUNDTRIP_LABEL: &str = "round trip, JACK software loop";
/// The network audio's label.
pub const NET_LABEL: &str = "network audio, Migrator synth, loopback";
/// On a running PipeWire: the event latency through its JACK API.
pub const PIPEWIRE_JACK_EVENT_LABEL: &str = "event latency, sine, asap, PipeWire (JACK API)";
/// On a running PipeWire: the round trip through its JACK API.
pub const PIPEWIRE_JACK_ROUNDTRIP_LABEL: &str = "round trip, PipeWire sink's monitor (JACK API)";
/// On a running PipeWire: the event latency through native streams.
pub const PIPEWIRE_NATIVE_EVENT_LABEL: &str = "event latency, sine, asap, PipeWire (native)";
/// On a running PipeWire: the round trip through native streams.
pub const PIPEWIRE_NATIVE_ROUNDTRIP_LABEL: &str = "round trip, PipeWire sink's monitor (native)";

/// One jitter scenario of the suite.
#[derive(Debug, Clone)]
pub struct JitterScenario {
    /// Its label.
    pub label: &'static str,
    /// The probe's configuration.
    pub config: JitterConfig,
    /// Its load.
    pub load: LoadSpec,
    /// Why it cannot run here (its load's tool is missing, its scratch directory
    /// unusable), when it cannot: it is skipped with this reason.
    pub skip: Option<String>,
}

/// How long each of the suite's probes may measure: a second at least (less measures
/// next to nothing), an hour at most (its network run keeps every block's response, as
/// [`probes::net::MAX_PHASE`] bounds).
pub const EACH_RANGE: std::ops::RangeInclusive<Duration> =
    Duration::from_secs(1)..=probes::net::MAX_PHASE;

/// The time each probe measures, refused when it is outside [`EACH_RANGE`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} for each probe is out of range: use 1 s to 1 hour")]
pub struct EachOutOfRange(pub Duration);

/// Checks the time each probe measures against [`EACH_RANGE`].
pub fn check_each(each: Duration) -> Result<(), EachOutOfRange> {
    if EACH_RANGE.contains(&each) {
        Ok(())
    } else {
        Err(EachOutOfRange(each))
    }
}

/// What the suite runs.
#[derive(Debug, Clone)]
pub struct SuitePlan {
    /// About how long each probe measures.
    pub each: Duration,
    /// Where the disk load writes.
    pub scratch: PathBuf,
    /// The group the runs are stored in.
    pub group: Option<GroupId>,
    /// The jitter scenarios, in order.
    pub jitter: Vec<JitterScenario>,
    /// The JACK server the event latency and the round trip run on.
    pub jack: ServerRequest,
}

/// How an entry ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryStatus {
    /// A stored run, with its status.
    Run(RunStatus),
    /// It could not run (no stored run, or one that failed before it measured).
    Failed,
    /// It cannot run here.
    Skipped,
    /// The suite was stopped before it.
    NotRun,
}

impl fmt::Display for EntryStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EntryStatus::Run(s) => s.fmt(f),
            EntryStatus::Failed => f.write_str("failed"),
            EntryStatus::Skipped => f.write_str("skipped"),
            EntryStatus::NotRun => f.write_str("not run"),
        }
    }
}

/// Why a scenario could not run.
#[derive(Debug)]
pub enum SuiteFailure {
    /// The lifecycle's error.
    Run(RunError),
    /// Its stream or loop could not be opened (the engine's reason; the binary adds the
    /// flags).
    Open(engine::audio::AudioError),
    /// The probe measured but kept no outcome (a bug).
    NoOutcome,
}

/// What to know about an entry, typed; the binary words it.
#[derive(Debug, Default)]
pub enum SuiteNote {
    /// Nothing.
    #[default]
    None,
    /// Why it was skipped.
    Skipped(String),
    /// Skipped: no JACK server could be had (the engine's reason; the binary adds the
    /// flags that choose another).
    NoServer(engine::audio::AudioError),
    /// The suite was interrupted before it.
    Interrupted,
    /// It could not run.
    Failed(SuiteFailure),
    /// The run ended with an error to report (its stream failed, or it could not be
    /// stored whole).
    RunError(String),
    /// The doctor's counts.
    Doctor {
        /// Findings that are fine.
        ok: usize,
        /// Warnings.
        warn: usize,
        /// Failures.
        fail: usize,
    },
    /// The event latency's model.
    EventModel {
        /// The playback latency the ports report.
        playback_latency_frames: u32,
        /// What a PipeWire sink adds that the ports do not report (its quantum).
        unreported_sink_frames: Option<u32>,
        /// Half a period plus that latency, ns.
        model_latency_ns: f64,
        /// A private dummy server on a machine with no sound card.
        no_card: bool,
    },
    /// The round trip's verdict, and its mean against what the ports report when it
    /// measured any window: (mean frames, reported frames).
    Roundtrip {
        /// The verdict line.
        verdict: String,
        /// Measured mean and the ports' reported latency, frames.
        frames: Option<(f64, u32)>,
    },
    /// The network audio's outcome (its synth phase's misses and losses; none when it
    /// ended before that phase).
    Net(Box<probes::net::NetOutcome>),
}

/// One scenario's outcome.
#[derive(Debug)]
pub struct SuiteEntry {
    /// The scenario.
    pub label: String,
    /// Its stored run.
    pub run_id: Option<RunId>,
    /// How it ended.
    pub status: EntryStatus,
    /// The measurement it is summarised by.
    pub headline: Option<Measurement>,
    /// Its dropouts, as every view of the run counts them.
    pub dropouts: results::Dropouts,
    /// Validity flags as stored.
    pub flags: Value,
    /// Why its misses were late, when the kernel was traced.
    pub why: Option<results::records::WhyRecord>,
    /// What to know about it.
    pub note: SuiteNote,
}

/// What the suite measured.
#[derive(Debug)]
pub struct SuiteOutcome {
    /// The doctor's report (stored as the first run).
    pub doctor: DoctorReport,
    /// One entry per scenario, the doctor's first.
    pub entries: Vec<SuiteEntry>,
    /// How its scenarios went, for the group's status: one could not run or failed, or
    /// one was interrupted.
    pub end: crate::group::GroupEnd,
}

/// Shows the suite's live status.
pub trait SuiteObserver {
    /// The live status of a run labelled `label` (`period_ns` turns the jitter probe's
    /// cycles into seconds; 0 for the others).
    fn live(&self, label: &str, period_ns: u64) -> Box<dyn Observer + '_>;
}

impl SuiteEntry {
    fn new(label: &str, status: EntryStatus, note: SuiteNote) -> SuiteEntry {
        SuiteEntry {
            label: label.into(),
            run_id: None,
            status,
            headline: None,
            dropouts: results::Dropouts::default(),
            flags: json!({}),
            why: None,
            note,
        }
    }

    fn failed(label: &str, failure: SuiteFailure) -> SuiteEntry {
        SuiteEntry::new(label, EntryStatus::Failed, SuiteNote::Failed(failure))
    }

    fn not_run(label: &str) -> SuiteEntry {
        SuiteEntry::new(label, EntryStatus::NotRun, SuiteNote::Interrupted)
    }

    /// The entry of `run`: what it is summarised by, and its dropouts, as every view of
    /// it says them.
    fn of_run(label: &str, run: &Run) -> SuiteEntry {
        SuiteEntry {
            run_id: Some(run.run_id),
            headline: run.view.headline().cloned(),
            dropouts: run.view.dropouts(),
            flags: run.flags.clone(),
            why: run.view.why(),
            ..SuiteEntry::new(label, EntryStatus::Run(run.status), SuiteNote::None)
        }
    }
}

/// The suite's jitter scenarios: (label, config, load), each measured for `each`.
pub fn jitter_scenarios(each: Duration) -> Vec<(&'static str, JitterConfig, LoadSpec)> {
    let length = RunLength::Duration(each);
    let latencytest = FragmentModel {
        fragments: 3,
        frames: 32,
        sample_rate: 44_100,
    };
    let fragments = |load: LoadSpec| {
        (
            JitterConfig {
                fragments: Some(latencytest),
                busy_percent: 80.0,
                ..JitterConfig::new(latencytest.period_ns(), length)
            },
            load,
        )
    };
    let spec = |s: &str| s.parse::<LoadSpec>().expect("built-in load spec");
    let (cpu_cfg, cpu_load) = fragments(spec("cpu"));
    let (io_cfg, io_load) = fragments(spec("io"));
    vec![
        (
            "wake-up jitter, 2048 Hz, idle",
            JitterConfig::new((1e9f64 / 2048.0).round() as u64, length),
            LoadSpec::none(),
        ),
        (
            "3x32-frame fragments, 80% busy, CPU load",
            cpu_cfg,
            cpu_load,
        ),
        ("3x32-frame fragments, 80% busy, disk load", io_cfg, io_load),
    ]
}

/// Causes asked for everywhere: where the kernel cannot be traced, each run says why
/// in one line, and the table says `not traced`.
fn suite_why() -> Option<probes::why::WhyConfig> {
    Some(probes::why::WhyConfig {
        above_ns: probes::why::DEFAULT_ABOVE_NS,
    })
}

impl SuitePlan {
    /// The suite for this machine: each probe for about `each`, the disk load in
    /// `scratch`, the built-in loads run by `load_exe`; a scenario whose load cannot start
    /// here is marked skipped. The event latency and the round trip use the JACK server
    /// `jack` asks for (the suite's: [`engine::jack::server::ServerMode::Auto`], a running server, else a private
    /// `jackd -d dummy`).
    pub fn new(
        each: Duration,
        scratch: PathBuf,
        group: Option<GroupId>,
        load_exe: Option<PathBuf>,
        jack: ServerRequest,
    ) -> SuitePlan {
        let lctx = crate::load_context(load_exe, &scratch);
        let why = suite_why();
        let jitter = jitter_scenarios(each)
            .into_iter()
            .map(|(label, config, load)| JitterScenario {
                skip: load::plan(&load, &lctx).err().map(|e| e.to_string()),
                label,
                config: JitterConfig { why, ..config },
                load,
            })
            .collect();
        SuitePlan {
            each,
            scratch,
            group,
            jitter,
            jack,
        }
    }
}

/// Stores a doctor report as a run of probe `doctor` in `group`.
pub fn store_doctor(
    ctx: &Context,
    sink: &dyn RunSink,
    group: Option<GroupId>,
    report: &DoctorReport,
) -> Result<RunId, SinkError> {
    let info = RunInfo {
        probe: &results::probe_kind::DOCTOR,
        group_id: group,
        machine: report.machine.clone(),
        tool: ctx.tool.clone(),
        command_line: ctx.command_line.clone(),
        config: json!({}),
        load: Load {
            processes: Some(Vec::new()),
            ..Load::none()
        }
        .to_json(),
        qos_requested: json!({}),
        started_mono_ns: None,
    };
    let run_id = sink.begin_run(&info)?;
    let (ok, warn, fail) = report.counts();
    let result = results::records::doctor::DoctorResultRecord {
        findings: report.findings.clone(),
        counts: Some(results::records::doctor::VerdictCounts {
            ok: ok as u64,
            warn: warn as u64,
            fail: fail as u64,
        }),
    };
    sink.finish_run(
        run_id,
        RunStatus::Complete,
        &json!({}),
        &result.to_json(),
        None,
        None,
    )?;
    Ok(run_id)
}

/// Runs the suite: the doctor (a doctor that cannot be stored ends it: the sink is
/// unusable), then every scenario of `plan`, each as a stored run in its group.
pub fn run(
    ctx: &Context,
    sink: &dyn RunSink,
    plan: &SuitePlan,
    observer: &dyn SuiteObserver,
) -> Result<SuiteOutcome, SinkError> {
    let doctor = probes::doctor::run(Duration::from_secs(1));
    let doctor_id = store_doctor(ctx, sink, plan.group, &doctor)?;
    let (ok, warn, fail) = doctor.counts();
    let mut suite = Suite {
        ctx,
        sink,
        plan,
        observer,
        entries: vec![SuiteEntry {
            run_id: Some(doctor_id),
            ..SuiteEntry::new(
                "doctor",
                EntryStatus::Run(RunStatus::Complete),
                SuiteNote::Doctor { ok, warn, fail },
            )
        }],
        end: crate::group::GroupEnd::default(),
    };
    for scenario in &plan.jitter {
        suite.jitter(scenario);
    }
    suite.jack();
    suite.net();
    Ok(SuiteOutcome {
        doctor,
        entries: suite.entries,
        end: suite.end,
    })
}

/// A suite being run: its entries so far.
struct Suite<'a> {
    ctx: &'a Context,
    sink: &'a dyn RunSink,
    plan: &'a SuitePlan,
    observer: &'a dyn SuiteObserver,
    entries: Vec<SuiteEntry>,
    end: crate::group::GroupEnd,
}

impl Suite<'_> {
    /// Folds a scenario's run into the group's end: by its status, and a run that ended
    /// with an error to report counts as failed.
    fn tally(&mut self, run: &Run) {
        self.end.add_run(run.status);
        self.end.run_failed |= run.error.is_some();
    }

    /// A run's cell in the suite's group.
    fn cell<P>(&self, probe: P, load: LoadSpec, repeat: Option<u32>) -> Cell<P> {
        Cell {
            group: self.plan.group,
            repeat,
            ..Cell::new(probe, load, self.plan.scratch.clone())
        }
    }

    /// Records a scenario a stop kept from running: the suite did not run to its end.
    fn not_run(&mut self, label: &str) {
        self.end.interrupted = true;
        self.entries.push(SuiteEntry::not_run(label));
    }

    /// Records a scenario that could not run.
    fn fail(&mut self, label: &str, failure: SuiteFailure) {
        if matches!(failure, SuiteFailure::Run(RunError::Stopped)) {
            // A stop before the run measured anything: nothing of it was stored.
            return self.not_run(label);
        }
        self.end.run_failed = true;
        self.entries.push(SuiteEntry::failed(label, failure));
    }

    fn jitter(&mut self, s: &JitterScenario) {
        if self.ctx.stopped() {
            return self.not_run(s.label);
        }
        if let Some(why) = &s.skip {
            let note = SuiteNote::Skipped(why.clone());
            return self
                .entries
                .push(SuiteEntry::new(s.label, EntryStatus::Skipped, note));
        }
        let live = self.observer.live(s.label, s.config.period_ns);
        let mut cell = self.cell(JitterProbe::new(s.config.clone()), s.load.clone(), None);
        let run = match crate::run(self.ctx, self.sink, &mut cell, None, &*live) {
            Ok(run) => run,
            Err(e) => return self.fail(s.label, SuiteFailure::Run(e)),
        };
        self.tally(&run);
        self.entries.push(SuiteEntry::of_run(s.label, &run));
    }

    /// The event latency and the round trip, on one JACK server; on a running PipeWire
    /// (the server `auto` found is the user's PipeWire), both through its JACK API and
    /// through native streams instead ([`Suite::pipewire`]).
    fn jack(&mut self) {
        if self.ctx.stopped() {
            return self.not_run(EVENT_LABEL);
        }
        let mut server = match JackServer::connect(&self.plan.jack) {
            Ok(server) => server,
            Err(e) => {
                let note = SuiteNote::NoServer(e);
                return self
                    .entries
                    .push(SuiteEntry::new(EVENT_LABEL, EntryStatus::Skipped, note));
            }
        };
        if server.running_pipewire().is_some() {
            drop(server);
            return self.pipewire();
        }
        // Without a card the suite's audio runs on a software clock: the note says so.
        let no_card = server.info().private && !engine::backend::has_sound_card();
        match JackStream::open(server.info(), JackConfig::default()) {
            Ok(mut stream) => self.event(EVENT_LABEL, &mut stream, Some(&mut server), no_card),
            Err(e) => self.fail(EVENT_LABEL, SuiteFailure::Open(e)),
        }
        if self.ctx.stopped() {
            return self.not_run(ROUNDTRIP_LABEL);
        }
        let lp = match engine::jack::loop_client::JackLoop::start(server.name(), "audiolat-loop", 0)
        {
            Ok(lp) => lp,
            Err(e) => return self.fail(ROUNDTRIP_LABEL, SuiteFailure::Open(e)),
        };
        let ports = JackConfig {
            playback: vec![lp.input_port()],
            capture: Some(lp.output_port()),
            ..Default::default()
        };
        let mut stream = match JackStream::open(server.info(), ports) {
            Ok(stream) => stream,
            Err(e) => return self.fail(ROUNDTRIP_LABEL, SuiteFailure::Open(e)),
        };
        let loop_description = "software loop in the JACK server (audiolat-loop)".to_string();
        self.roundtrip(
            ROUNDTRIP_LABEL,
            &mut stream,
            Some(&mut server),
            loop_description,
        );
    }

    /// On the user's running PipeWire: the event latency and the round trip through its
    /// JACK API, then through native streams, each set up as `audiolat event` and
    /// `audiolat roundtrip` set them up (the loop through the default sink's monitor when
    /// it is a null sink; a real device is skipped, with the reason). The graph's own
    /// quantum: nothing is forced.
    fn pipewire(&mut self) {
        let settings = StreamSettings {
            rate_hz: None,
            periods: DEFAULT_PERIODS,
            device: None,
            format: None,
            server: ServerChoice {
                mode: self.plan.jack.mode,
                name: None,
                jackd: None,
            },
        };
        let event = StreamPurpose::Event {
            jack: JackConfig::default(),
            loopback_device: None,
        };
        let roundtrip = StreamPurpose::Roundtrip {
            playback: Vec::new(),
            capture: None,
            capture_device: None,
            cable: Some(Cable::PLAIN),
        };
        for (kind, event_label, roundtrip_label) in [
            (
                BackendKind::Jack,
                PIPEWIRE_JACK_EVENT_LABEL,
                PIPEWIRE_JACK_ROUNDTRIP_LABEL,
            ),
            (
                BackendKind::Pipewire,
                PIPEWIRE_NATIVE_EVENT_LABEL,
                PIPEWIRE_NATIVE_ROUNDTRIP_LABEL,
            ),
        ] {
            for (label, purpose) in [(event_label, &event), (roundtrip_label, &roundtrip)] {
                let is_roundtrip = matches!(purpose, StreamPurpose::Roundtrip { .. });
                if self.ctx.stopped() {
                    self.not_run(label);
                    continue;
                }
                let spec = BackendSpec::build(kind, settings.clone(), purpose.clone())
                    .expect("the suite's PipeWire specs take no foreign options");
                self.on_backend(label, &spec, is_roundtrip);
            }
        }
    }

    /// One run of `spec` (a round trip, else an event) on a fresh set-up: what the
    /// set-up refuses is a skipped entry with the reason.
    fn on_backend(&mut self, label: &str, spec: &BackendSpec, roundtrip: bool) {
        let mut setup = match engine::backend::open(spec, None, SweepStep::First) {
            Ok(setup) => setup,
            Err(e) => {
                let note = SuiteNote::Skipped(e.to_string());
                return self
                    .entries
                    .push(SuiteEntry::new(label, EntryStatus::Skipped, note));
            }
        };
        let mut stream = match setup.open_stream() {
            Ok((stream, _)) => stream,
            Err(e) => return self.fail(label, SuiteFailure::Open(e)),
        };
        let loop_description = setup.loop_description().to_string();
        let watch = setup.server_mut().map(|s| s as &mut dyn Watch);
        if roundtrip {
            self.roundtrip(label, stream.as_mut(), watch, loop_description);
        } else {
            self.event(label, stream.as_mut(), watch, false);
        }
    }

    /// Event-to-audio latency, timer triggers, for about `each`, on `stream`.
    fn event(
        &mut self,
        label: &str,
        stream: &mut dyn Backend,
        watch: Option<&mut dyn Watch>,
        no_card: bool,
    ) {
        let mut config = probes::event::EventConfig::new(
            probes::event::TriggerSource::Timer,
            probes::event::NotePolicy::Asap,
        );
        let budget_ms = (self.plan.each.as_secs_f64() * 1e3 - config.warmup_ms).max(0.0);
        config.triggers = ((budget_ms / (config.spacing_ms + 3.0)) as u64).max(10);
        config.why = suite_why();
        let load = LoadSpec::none();
        let live_label = crate::sweep::event_label(&config, &load, stream.info().period_frames);
        let live = self.observer.live(&live_label, 0);
        let mut cell = self.cell(EventProbe::new(stream, config, None), load, Some(1));
        let run = match crate::run(self.ctx, self.sink, &mut cell, watch, &*live) {
            Ok(run) => run,
            Err(e) => return self.fail(label, SuiteFailure::Run(e)),
        };
        let Some(o) = cell.probe.take_outcome() else {
            return self.fail(label, no_outcome());
        };
        self.tally(&run);
        self.entries.push(SuiteEntry {
            note: match &run.error {
                Some(e) => SuiteNote::RunError(e.clone()),
                None => SuiteNote::EventModel {
                    playback_latency_frames: o.info.playback_latency_frames,
                    unreported_sink_frames: o.info.unreported_sink_frames(),
                    model_latency_ns: o.model_latency_ns(),
                    no_card,
                },
            },
            ..SuiteEntry::of_run(label, &run)
        });
    }

    /// The round trip through the loop `stream` is connected to, measured for about
    /// `each` (the clicks and the first window take about a second before).
    fn roundtrip(
        &mut self,
        label: &str,
        stream: &mut dyn Backend,
        watch: Option<&mut dyn Watch>,
        loop_description: String,
    ) {
        let config = probes::roundtrip::RoundtripConfig {
            duration_ms: (self.plan.each.as_secs_f64() - 1.5).max(1.0) * 1e3,
            why: suite_why(),
            ..Default::default()
        };
        let load = LoadSpec::none();
        let info = stream.info();
        let live_label = format!(
            "roundtrip {} period {} {load}",
            info.backend, info.period_frames
        );
        let live = self.observer.live(&live_label, 0);
        let probe = RoundtripProbe::new(stream, config, loop_description, None);
        let mut cell = self.cell(probe, load, Some(1));
        let run = crate::run(self.ctx, self.sink, &mut cell, watch, &*live);
        let outcome = cell.probe.take_outcome();
        let run = match run {
            Ok(run) => run,
            Err(e) => return self.fail(label, SuiteFailure::Run(e)),
        };
        let Some(o) = outcome else {
            return self.fail(label, no_outcome());
        };
        self.tally(&run);
        let m = o.measured_frames();
        self.entries.push(SuiteEntry {
            note: match &run.error {
                Some(e) => SuiteNote::RunError(e.clone()),
                None => SuiteNote::Roundtrip {
                    verdict: o.verdict_line(),
                    frames: (m.count > 0).then_some(m.mean).zip(o.reported_frames()),
                },
            },
            ..SuiteEntry::of_run(label, &run)
        });
    }

    /// The Tessellation study's network audio, over loopback: needs nothing installed.
    fn net(&mut self) {
        if self.ctx.stopped() {
            return self.not_run(NET_LABEL);
        }
        let config = probes::net::NetConfig {
            reference_duration: (self.plan.each / 4).max(Duration::from_secs(1)),
            why: suite_why(),
            ..probes::net::NetConfig::new(self.plan.each)
        };
        let mut cell = Cell {
            cells: Some(qos::CellPlan::default()),
            ..self.cell(NetProbe::new(config), LoadSpec::default(), None)
        };
        let run = match crate::run(self.ctx, self.sink, &mut cell, None, &crate::Unobserved) {
            Ok(run) => run,
            Err(e) => return self.fail(NET_LABEL, SuiteFailure::Run(e)),
        };
        let Some(o) = cell.probe.take_outcome() else {
            return self.fail(NET_LABEL, no_outcome());
        };
        // The suite's network run is both ends in one process: its headline and misses
        // are those of the host's response time.
        self.tally(&run);
        self.entries.push(SuiteEntry {
            note: SuiteNote::Net(Box::new(o)),
            ..SuiteEntry::of_run(NET_LABEL, &run)
        });
    }
}

/// A probe that measured and kept no outcome (a bug).
fn no_outcome() -> SuiteFailure {
    SuiteFailure::NoOutcome
}
