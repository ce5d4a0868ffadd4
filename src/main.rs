//! audiolat: a real-time audio latency test bench for Linux.
//!
//! This binary parses the command line, runs probes as stored runs, and prints. It is
//! the one place where errors become exit codes:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done |
//! | 1 | a run failed while measuring (status `failed`), or its audio server went away or changed mid-run (status `interrupted`); what was measured is kept |
//! | 2 | refused before anything started: bad input, missing tool, unusable database |
//! | 130 | interrupted by Ctrl-C / SIGTERM (the run is stored as `interrupted`) |

mod audio;
mod cli;
mod min_buffer;
mod plan;
mod presets;
mod report_data;
mod run_views;
mod runner;
mod views;

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use clap::error::ErrorKind;
use clap::Parser;
use results::model::RunRecord;
use results::{RunFilter, RunStatus, Store, StoreError};
use serde_json::json;

use cli::{Cli, Command, ExportFormat, RunRef, UsageError};
use runner::{Context, LiveLine};

const EXIT_FAILED: u8 = 1;
const EXIT_USAGE: u8 = 2;
const EXIT_INTERRUPTED: u8 = 130;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_error(e),
    };
    if let Command::Supervise(a) = &cli.command {
        // A load's supervisor handles its own signals; see load::supervise.
        return ExitCode::from(load::supervise(&a.program, &a.args).clamp(0, 255) as u8);
    }
    // Output piped into `head` ends quietly, as a Unix tool's does, instead of with a
    // broken-pipe panic from println!.
    // SAFETY: setting a signal's disposition to the default before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let stop = install_signal_handlers();
    let db = cli.db.clone();
    match dispatch(cli, stop) {
        Ok(code) => code,
        Err(e) if database_unusable(&e).is_some() => {
            let why = database_unusable(&e).unwrap_or_default();
            eprintln!(
                "audiolat: error: cannot use results database {}: {why}",
                db.display()
            );
            ExitCode::from(EXIT_USAGE)
        }
        Err(e) => {
            let usage = e.downcast_ref::<UsageError>().is_some()
                || e.chain().any(|c| {
                    matches!(
                        c.downcast_ref::<StoreError>(),
                        Some(
                            StoreError::Open { .. }
                                | StoreError::UnsharedLog(_)
                                | StoreError::Missing(_)
                                | StoreError::TooNew { .. }
                                | StoreError::NoSuchRun(_)
                                | StoreError::NoSuchGroup(_)
                        )
                    )
                });
            let msg = format!("{e:#}").replace('\n', " ");
            eprintln!("audiolat: error: {msg}");
            ExitCode::from(if usage { EXIT_USAGE } else { EXIT_FAILED })
        }
    }
}

/// clap's errors, on one line with the way out; help and version as clap prints them.
fn clap_error(e: clap::Error) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::from(EXIT_USAGE)
        }
        _ => {
            let rendered = e.render().to_string();
            // The first paragraph is the error (clap continues lists on indented lines).
            let first = rendered
                .lines()
                .take_while(|l| !l.trim().is_empty())
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" ");
            let first = first.trim_start_matches("error: ");
            let tip = rendered
                .lines()
                .find_map(|l| l.trim().strip_prefix("tip: "))
                .map(|t| format!(" ({t})"))
                .unwrap_or_default();
            let sub = std::env::args()
                .skip(1)
                .find(|a| {
                    [
                        "doctor",
                        "devices",
                        "jitter",
                        "event",
                        "roundtrip",
                        "net",
                        "bench",
                        "suite",
                        "run",
                        "reproduce",
                        "report",
                        "compare",
                        "runs",
                        "show",
                        "export",
                    ]
                    .contains(&a.as_str())
                })
                .map(|s| format!(" {s}"))
                .unwrap_or_default();
            eprintln!("audiolat: error: {first}{tip}; see 'audiolat{sub} --help'");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// Why the database cannot be used, with the fix, when a store error found after the
/// open says so (a damaged page a query found, a disk full before any run was made): the
/// same line as the open's own refusal.
fn database_unusable(e: &anyhow::Error) -> Option<&'static str> {
    let store = e.chain().find_map(|c| c.downcast_ref::<StoreError>())?;
    if store.is_damaged() {
        Some("it is damaged (a corrupt page or a truncated file); restore it from a backup (`sqlite3 FILE .recover` may save its runs), or pass --db with a new file name")
    } else if store.is_disk_full() {
        // A run that filled the disk closes itself with the reason (see runner's
        // Closing); reaching here, nothing was measured yet (a run or group being made).
        Some("its filesystem is full; free space there, or pass --db with a path on another filesystem")
    } else {
        None
    }
}

/// A SIGINT/SIGTERM raises the stop flag: the run ends at its next check, what it
/// measured is printed and stored `interrupted`, loads are stopped, the machine is
/// restored, and the exit code is 130. A second signal only hastens that ([`load::hurry`]:
/// loads are killed without their grace period); no signal exits the process at once,
/// so none can cut short the storing of results or the undoing of system state.
/// SIGKILL stays the user's last resort, and the next run recovers from it.
fn install_signal_handlers() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let flag = Arc::clone(&stop);
        // SAFETY: the action is async-signal-safe: atomic operations only.
        let _ = unsafe {
            signal_hook::low_level::register(sig, move || {
                if flag.swap(true, std::sync::atomic::Ordering::SeqCst) {
                    load::hurry();
                }
            })
        };
    }
    stop
}

fn command_line() -> String {
    std::env::args()
        .enumerate()
        .map(|(i, a)| {
            if i == 0 {
                "audiolat".to_string()
            } else {
                load::shell_quote(&a)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn dispatch(cli: Cli, stop: Arc<AtomicBool>) -> Result<ExitCode> {
    let ctx = Context {
        db_path: cli.db.clone(),
        run: ::runner::Context {
            command_line: command_line(),
            tool: runner::tool_info(),
            stop,
            plan_cell: plan::PlanCellRef::from_env()?.map(|c| (c.group, c.cell)),
            load_exe: std::env::current_exe().ok(),
        },
    };
    if let Command::Doctor(a) = &cli.command {
        if a.fix {
            runner::undo_leftovers()?;
        }
    }
    match cli.command {
        Command::Doctor(a) => {
            let report = probes::doctor::run(a.steal_window);
            if a.json {
                print_json(&views::doctor_json(&report))?;
            } else {
                print!("{}", views::doctor_text(&report));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Devices(a) => {
            let report = probes::devices::survey();
            if a.json {
                print_json(&views::devices_json(&report))?;
            } else {
                print!("{}", views::devices_text(&report));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Jitter(a) => jitter(&ctx, &a),
        Command::Event(a) => event(&ctx, &a),
        Command::Roundtrip(a) => roundtrip(&ctx, &a),
        Command::Loop(a) => loop_client(&ctx, &a),
        Command::Bench(a) => bench(&ctx, &a),
        Command::Net(a) => net(&ctx, &a),
        Command::Suite(a) => suite(&ctx, &a),
        Command::Run(a) => run_plan(&ctx, &a),
        Command::Reproduce(a) => reproduce(&ctx, &a),
        Command::Report(a) => write_report(&ctx, &a),
        Command::Compare(a) => compare(&ctx, &a),
        Command::Runs(a) => runs(&ctx, &a),
        Command::Show(a) => show(&ctx, &a),
        Command::Export(a) => export(&ctx, &a),
        Command::Load(a) => load_worker(&ctx, &a),
        Command::Supervise(_) => unreachable!("handled before the signal handlers"),
    }
}

fn print_json(v: &serde_json::Value) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, v)?;
    writeln!(out)?;
    Ok(())
}

fn check_output_path(path: &std::path::Path, flag: &str) -> Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    if path.is_dir() || !parent.is_dir() {
        return Err(UsageError(format!(
            "{flag} {}: not a file in an existing directory; give a writable file path",
            path.display()
        ))
        .into());
    }
    Ok(())
}

fn jitter(ctx: &Context, a: &cli::JitterArgs) -> Result<ExitCode> {
    // Everything is checked before the database is opened: bad input writes nothing.
    let config = cli::jitter_config(a)?;
    let scratch = a
        .scratch_dir
        .clone()
        .unwrap_or_else(|| ctx.default_scratch());
    runner::check_load(&a.load, &scratch)?;
    if let Some(p) = &a.histfile {
        check_output_path(p, "--histfile")?;
    }
    let store = ctx.open_store()?;
    let live = LiveLine::new("jitter", a.quiet || a.json, config.period_ns);
    let run = runner::jitter_run(ctx, &store, None, &config, &a.load, &scratch, &live)?;
    if let Some(path) = &a.histfile {
        let overflow_cycles: Vec<u64> = run
            .outcome
            .recorded
            .overflows
            .iter()
            .map(|o| o.cycle)
            .collect();
        std::fs::write(
            path,
            results::export::cyclictest_histogram(
                &run.outcome.recorded.histograms.latency,
                &overflow_cycles,
            ),
        )
        .with_context(|| format!("writing --histfile {}", path.display()))?;
    }
    if a.json {
        print_json(&run_views::jitter_json(&run))?;
    } else {
        print!("{}", run_views::jitter_text(&run, &ctx.db_path));
    }
    if let Some(e) = &run.error {
        eprintln!("audiolat: error: run {}: {e}", run.run_id);
        return Ok(ExitCode::from(EXIT_FAILED));
    }
    Ok(match run.status {
        RunStatus::Interrupted => ExitCode::from(EXIT_INTERRUPTED),
        _ => ExitCode::SUCCESS,
    })
}

/// The JACK server request for `--server`, `--server-name`, `--rate` and one period.
fn server_request(
    mode: engine::jack_server::ServerMode,
    name: Option<String>,
    rate: Option<u32>,
    period: Option<u32>,
) -> engine::jack_server::ServerRequest {
    engine::jack_server::ServerRequest {
        mode,
        name,
        rate_hz: rate,
        period_frames: period,
        jackd: load::find_in_path(load::JACKD.name),
        start_timeout: std::time::Duration::from_secs(10),
    }
}

/// The event cells of one period, in sweep order.
fn event_cells(a: &cli::EventArgs) -> Result<Vec<runner::EventCell>> {
    use probes::event::EventConfig;
    let mut cells = Vec::new();
    for policy in &a.policy.0 {
        for workload in &a.workload.0 {
            for load in &a.load.0 {
                for repeat in 1..=a.repeat {
                    let mut config = EventConfig::new(a.trigger, *policy);
                    config.triggers = a.triggers;
                    config.workload = *workload;
                    config.frequency_hz = a.frequency as f32;
                    config.note_ms = a.note.as_secs_f64() * 1e3;
                    config.spacing_ms = a.spacing.as_secs_f64() * 1e3;
                    config.gpio = a.gpio.clone();
                    config.lock_memory = !a.no_mlock;
                    config.seed ^= repeat as u64;
                    config.validate().map_err(|e| UsageError(e.to_string()))?;
                    cells.push(runner::EventCell {
                        config,
                        load: load.clone(),
                        repeat,
                        jack: audio::event_jack(a),
                        granted: None,
                    });
                }
            }
        }
    }
    Ok(cells)
}

/// Everything `event` refuses before it starts anything: its cells, in sweep order, and
/// its backend.
fn event_checks(
    a: &cli::EventArgs,
    scratch: &std::path::Path,
) -> Result<(Vec<runner::EventCell>, engine::backend::BackendSpec)> {
    let cells = event_cells(a)?;
    for load in &a.load.0 {
        runner::check_load(load, scratch)?;
    }
    if a.midi_port.is_some() && a.trigger != probes::event::TriggerSource::Midi {
        return Err(UsageError("--midi-port needs --trigger midi".into()).into());
    }
    let spec = audio::sweep_spec(
        &a.audio,
        &audio::event_purpose(a),
        &audio::periods(&a.audio),
    )?;
    if a.trigger == probes::event::TriggerSource::Midi && !spec.has_midi() {
        return Err(UsageError(format!(
            "--trigger midi reads note-ons from a JACK MIDI port: use --backend jack (with --backend {}, use --trigger timer or key)",
            spec.name()
        ))
        .into());
    }
    if let Some(spec) = &a.gpio {
        // Open and release the line once now, so a missing chip is refused up front.
        engine::gpio::GpioLine::open(spec, "audiolat").map_err(|e| UsageError(e.to_string()))?;
    }
    if a.gpio.is_some() && a.trigger == probes::event::TriggerSource::Midi {
        return Err(UsageError(
            "--gpio needs --trigger timer or key: a MIDI note-on arrives inside the audio cycle, with no moment to raise a line at".into(),
        )
        .into());
    }
    Ok((cells, spec))
}

fn event(ctx: &Context, a: &cli::EventArgs) -> Result<ExitCode> {
    // Everything that can be refused is refused before the database is opened.
    let scratch = a
        .scratch_dir
        .clone()
        .unwrap_or_else(|| ctx.default_scratch());
    let (cells, spec) = event_checks(a, &scratch)?;
    let periods = audio::periods(&a.audio);
    let first = audio::setup(&spec, periods[0], true)?;
    check_sweep_server(&first, &periods)?;
    let store = ctx.open_store()?;
    let group = store.create_group(
        "event",
        &ctx.command_line,
        &json!({"backend": spec.name(), "periods": a.audio.period.as_ref().map(|p| p.0.clone()),
                "server": a.audio.server.to_string()}),
    )?;
    let quiet = a.quiet || a.json;
    let mut runs: Vec<runner::EventRun> = Vec::new();
    let mut failure: Option<String> = None;
    let mut setup = Some(first);
    'periods: for (i, period) in periods.iter().enumerate() {
        if i > 0 {
            // Each period is a new set-up: the last one's server goes first (the next
            // takes its name).
            drop(setup.take());
            match audio::setup(&spec, *period, false) {
                Ok(s) => setup = Some(s),
                Err(e) => {
                    failure = Some(e.to_string());
                    break;
                }
            }
        }
        let Some(setup) = setup.as_mut() else { break };
        for cell in &cells {
            if ctx.stopped() {
                break 'periods;
            }
            let (mut stream, granted) = match audio::open_stream(setup) {
                Ok(s) => s,
                Err(e) => {
                    failure = Some(e.to_string());
                    break 'periods;
                }
            };
            let mut cell = cell.clone();
            cell.granted = granted;
            let result = runner::event_run(
                ctx,
                &store,
                Some(group),
                stream.as_mut(),
                setup.server_mut(),
                &cell,
                &scratch,
                quiet,
            );
            drop(stream);
            let run = match result {
                Ok(run) => run,
                Err(e) => {
                    let _ = store.finish_group(group, RunStatus::Failed);
                    return Err(e);
                }
            };
            let stop_sweep = run.error.is_some();
            if let Some(e) = &run.error {
                failure = Some(e.clone());
            }
            runs.push(run);
            if stop_sweep {
                break 'periods;
            }
        }
    }
    drop(setup);
    let status = sweep_status(ctx, &failure, runs.iter().map(|r| r.status));
    finish_group(&store, group, status);
    if a.json {
        print_json(&views::event_json(group, &runs))?;
    } else {
        print!("{}", run_views::event_text(group, &runs, &ctx.db_path));
    }
    sweep_exit(failure, status)
}

/// Several periods need private servers (each period is a new `jackd -d dummy`).
fn check_sweep_server(first: &engine::backend::Setup, periods: &[Option<u32>]) -> Result<()> {
    if let Some(server) = first.server() {
        if periods.len() > 1 && !server.info().private {
            return Err(UsageError(format!(
                "--period with several values needs a private server (each period is a new jackd -d dummy), but `{}` is an external server: use --server dummy, or one --period",
                server.name()
            ))
            .into());
        }
    }
    Ok(())
}

/// Closes a group after its runs, with the reserve a full disk leaves for closing writes;
/// when even that fails, says so and goes on to print what was measured (the next
/// audiolat command closes the group).
fn finish_group(store: &Store, group: i64, status: RunStatus) {
    if let Err(e) = store.closing(|| store.finish_group(group, status)) {
        eprintln!(
            "audiolat: warning: group {group} could not be closed in {} ({e}); the next audiolat command closes it",
            store.path().display()
        );
    }
}

/// A sweep's status from its runs.
fn sweep_status(
    ctx: &Context,
    failure: &Option<String>,
    statuses: impl Iterator<Item = RunStatus>,
) -> RunStatus {
    let statuses: Vec<RunStatus> = statuses.collect();
    if failure.is_some() {
        RunStatus::Failed
    } else if ctx.stopped() || statuses.contains(&RunStatus::Interrupted) {
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    }
}

fn sweep_exit(failure: Option<String>, status: RunStatus) -> Result<ExitCode> {
    if let Some(f) = failure {
        eprintln!("audiolat: error: {f}");
        return Ok(ExitCode::from(EXIT_FAILED));
    }
    Ok(match status {
        RunStatus::Interrupted => ExitCode::from(EXIT_INTERRUPTED),
        _ => ExitCode::SUCCESS,
    })
}

/// What `roundtrip` checks before it starts anything: the base configuration, the
/// periods to run, in order, and the backend.
fn roundtrip_checks(
    a: &cli::RoundtripArgs,
    scratch: &std::path::Path,
) -> Result<(
    probes::roundtrip::RoundtripConfig,
    Vec<Option<u32>>,
    engine::backend::BackendSpec,
)> {
    let spec = audio::spec(&a.audio, &audio::roundtrip_purpose(a))?;
    let base = probes::roundtrip::RoundtripConfig {
        duration_ms: a.duration.as_secs_f64() * 1e3,
        every_periods: a.every,
        impulses: a.impulses,
        insert_delay_frames: a.insert_delay,
        peak: a.level,
        max_delay_frames: a.max_delay,
        loop_hint_frames: spec.loop_hint_frames(),
        ..Default::default()
    };
    base.validate().map_err(|e| UsageError(e.to_string()))?;
    for load in &a.load.0 {
        runner::check_load(load, scratch)?;
    }
    let mut periods = audio::periods(&a.audio);
    if a.find_min_buffer {
        if a.load.0.len() > 1 || a.repeat > 1 {
            return Err(UsageError(
                "--find-min-buffer tries one load once per setting: give one --load and no --repeat".into(),
            )
            .into());
        }
        let smallest = spec.smallest_period();
        let mut list: Vec<u32> = match &a.audio.period {
            Some(p) => p.0.clone(),
            None => (4..=11)
                .map(|k| 1u32 << k)
                .filter(|&p| p >= smallest)
                .collect(),
        };
        list.sort_unstable_by(|x, y| y.cmp(x));
        list.dedup();
        periods = list.into_iter().map(Some).collect();
    }
    spec.check_periods(&periods)
        .map_err(|e| UsageError(e.to_string()))?;
    Ok((base, periods, spec))
}

fn roundtrip(ctx: &Context, a: &cli::RoundtripArgs) -> Result<ExitCode> {
    let scratch = a
        .scratch_dir
        .clone()
        .unwrap_or_else(|| ctx.default_scratch());
    let (base, periods, spec) = roundtrip_checks(a, &scratch)?;
    let first = audio::setup(&spec, periods[0], true)?;
    check_sweep_server(&first, &periods)?;
    let store = ctx.open_store()?;
    let group = store.create_group(
        "roundtrip",
        &ctx.command_line,
        &json!({"backend": spec.name(), "periods": a.audio.period.as_ref().map(|p| p.0.clone())}),
    )?;
    let quiet = a.quiet || a.json;
    let mut runs: Vec<runner::RoundtripRun> = Vec::new();
    let mut failure: Option<String> = None;
    let mut setup = Some(first);
    'periods: for (i, period) in periods.iter().enumerate() {
        if i > 0 {
            drop(setup.take());
            match audio::setup(&spec, *period, false) {
                Ok(s) => setup = Some(s),
                Err(e) => {
                    failure = Some(e.to_string());
                    break;
                }
            }
        }
        let Some(setup) = setup.as_mut() else { break };
        for load in &a.load.0 {
            for repeat in 1..=a.repeat {
                if ctx.stopped() {
                    break 'periods;
                }
                let cell = runner::RoundtripCell {
                    config: base.clone(),
                    load: load.clone(),
                    repeat,
                    loop_description: setup.loop_description().to_string(),
                    granted: None,
                };
                let (mut stream, granted) = match audio::open_stream(setup) {
                    Ok(s) => s,
                    Err(e) => {
                        failure = Some(e.to_string());
                        break 'periods;
                    }
                };
                let cell = runner::RoundtripCell { granted, ..cell };
                let result = runner::roundtrip_run(
                    ctx,
                    &store,
                    Some(group),
                    stream.as_mut(),
                    setup.server_mut(),
                    &cell,
                    &scratch,
                    quiet,
                );
                drop(stream);
                let run = match result {
                    Ok(run) => run,
                    Err(e) => {
                        let _ = store.finish_group(group, RunStatus::Failed);
                        return Err(e);
                    }
                };
                let stop_sweep = run.error.is_some();
                if let Some(e) = &run.error {
                    failure = Some(e.clone());
                }
                // Finding the smallest buffer: the first setting that under-runs (or
                // loses the loop) ends the descent.
                let under_ran = a.find_min_buffer && !min_buffer::holds_without_underruns(&run);
                runs.push(run);
                if stop_sweep || under_ran {
                    break 'periods;
                }
            }
        }
    }
    drop(setup);
    let status = sweep_status(ctx, &failure, runs.iter().map(|r| r.status));
    finish_group(&store, group, status);
    if a.json {
        let mut v = views::roundtrip_json(group, &runs);
        if a.find_min_buffer {
            v["min_buffer"] = run_views::min_buffer_json(&runs);
        }
        print_json(&v)?;
    } else {
        print!("{}", run_views::roundtrip_text(group, &runs, &ctx.db_path));
        if a.find_min_buffer {
            print!("{}", run_views::min_buffer_text(&runs));
        }
    }
    sweep_exit(failure, status)
}

/// `audiolat loop`: a software loop client until Ctrl-C.
fn loop_client(ctx: &Context, a: &cli::LoopArgs) -> Result<ExitCode> {
    let server = a
        .server_name
        .clone()
        .unwrap_or_else(engine::jack_server::default_server_name);
    let lp = engine::jack_loop::JackLoop::start(&server, &a.name, a.delay)
        .map_err(|e| UsageError(e.to_string()))?;
    let connect = |from: &str, to: &str| -> Result<()> {
        let client = engine::jack_server::open_client(&server, "audiolat-connect")
            .map_err(|e| UsageError(e.to_string()))?;
        client
            .connect_ports_by_name(from, to)
            .map_err(|e| UsageError(format!("connecting {from} to {to}: {e}")))?;
        Ok(())
    };
    if let Some(from) = &a.from {
        connect(from, &lp.input_port())?;
    }
    if let Some(to) = &a.to {
        connect(&lp.output_port(), to)?;
    }
    eprintln!(
        "audiolat loop: {} -> {} frames -> {} on JACK server `{server}`; Ctrl-C ends",
        lp.input_port(),
        lp.delay_frames(),
        lp.output_port()
    );
    while !ctx.stopped() {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(lp);
    Ok(ExitCode::SUCCESS)
}

fn bench(ctx: &Context, a: &cli::BenchArgs) -> Result<ExitCode> {
    let config = dsp::bench::BenchConfig {
        sample_rate_hz: a.rate,
        period_frames: a.period as usize,
        load_target: a.target / 100.0,
        seconds_per_kernel: a.each.as_secs_f64(),
    };
    // Bench stores nothing, but measures: on the machine as it should be.
    runner::undo_leftovers()?;
    let steal = probes::steal::StealSampler::start(std::time::Duration::from_millis(50), None);
    let report = dsp::bench::run(&config, &ctx.stop);
    let steal = steal.finish();
    let Ok(report) = report else {
        eprintln!("audiolat: bench interrupted before it finished; nothing is reported");
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    };
    let cpus = engine::rt::online_cpus().len();
    let flags = views::BenchFlags {
        build_profile: ctx.tool.build_profile.clone(),
        policy: engine::rt::current_thread_policy().to_string(),
        host_steal_percent: steal.percent_of_span(steal.total_ns(None), cpus),
    };
    if a.json {
        print_json(&views::bench_json(&report, &flags))?;
    } else {
        print!("{}", views::bench_text(&report, &flags));
    }
    Ok(ExitCode::SUCCESS)
}

/// The `audiolat net` configuration from its flags (checked before anything opens).
fn net_config(
    a: &cli::NetArgs,
    cells: &qos::CellSet,
) -> Result<probes::net::NetConfig, UsageError> {
    use netaudio::host::PollMode;
    use qos::CellKind;
    let cpus = cpu_list;
    let host_kind = a
        .cells
        .host_cell
        .as_deref()
        .and_then(|h| cells.get(h))
        .map(|c| c.kind);
    if host_kind.is_some() && (a.host_cpus.is_some() || a.priority.is_some()) {
        return Err(UsageError(
            "--host-cell gives the host's threads their CPUs and policy: leave out --host-cpus and --priority".into(),
        ));
    }
    // A dedicated cell blocks by default: a SCHED_FIFO thread that spins is stopped
    // for 50 ms a second by the kernel's RT throttling (sched_rt_runtime_us).
    let poll = a.poll.unwrap_or(match host_kind {
        Some(CellKind::TimeTriggered) => PollMode::Periodic,
        _ => PollMode::Block,
    });
    if let (Some(link), Some(reserve)) = (a.link, a.reserve) {
        if reserve > link {
            return Err(UsageError(format!(
                "--reserve {reserve} Mbit/s exceeds --link {link} Mbit/s by {} Mbit/s",
                reserve - link
            )));
        }
    }
    // SAFETY: geteuid has no preconditions.
    if a.netns && unsafe { libc::geteuid() } != 0 {
        return Err(UsageError(
            "--netns makes network namespaces, which needs root: run as root, or leave --netns out to use loopback".into(),
        ));
    }
    let shaped = a.link.is_some() && a.reserve_by == probes::net::ReserveBy::Tc;
    for (tool, wanted) in [("ip", a.netns), ("tc", a.netns && shaped)] {
        if wanted && load::find_in_path(tool).is_none() {
            return Err(UsageError(format!(
                "--netns needs `{tool}`, which is not installed: install the iproute2 package (apt install iproute2)"
            )));
        }
    }
    if a.link.is_some() && a.reserve_by == probes::net::ReserveBy::Tc && !a.netns {
        return Err(UsageError(
            "--link with --reserve-by tc shapes the veth link between two namespaces: add --netns (root), or use --reserve-by mclock".into(),
        ));
    }
    if a.load
        .items
        .iter()
        .any(|i| matches!(i, load::LoadItem::Flood { .. }))
        && a.load
            .cell_of(&load::LoadItem::Flood { mbps: None })
            .is_some()
    {
        return Err(UsageError(
            "flood runs on a thread of audiolat's own, in no cell: leave out its @cell".into(),
        ));
    }
    let stream = a.load.stream().map(|mbps| probes::net::StreamConfig {
        mbps,
        sink_groups: Vec::new(),
    });
    Ok(probes::net::NetConfig {
        duration: a.duration,
        reference_duration: if a.no_reference {
            std::time::Duration::ZERO
        } else {
            a.reference
        },
        warmup: a.warmup,
        input: netaudio::controller::fixed_input(a.pads, a.x, a.y, a.pressure),
        workers: a.workers,
        poll,
        policy: cli::net_policy(a)?,
        host_cpus: cpus("--host-cpus", &a.host_cpus)?,
        controller_cpus: cpus("--controller-cpus", &a.controller_cpus)?,
        flood_mbps: None,
        netns: a.netns,
        host_cell: None,
        link: a.link.map(|mbps| probes::net::LinkShaping {
            mbps,
            reserve_mbps: a.reserve,
            by: a.reserve_by,
        }),
        stream,
    })
}

fn cpu_list(flag: &str, list: &Option<String>) -> Result<Option<Vec<usize>>, UsageError> {
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

fn net_respond(ctx: &Context, a: &cli::RespondArgs) -> Result<ExitCode> {
    use netaudio::host;
    let policy = cli::thread_policy(a.threads.policy, a.threads.priority)?;
    let cpus = cpu_list("--cpus", &a.threads.cpus)?;
    if !a.bind.ip().is_loopback() && a.peer.is_none() {
        return Err(UsageError(format!(
            "--bind {}: away from loopback the host answers only its configured controller: give --peer ADDR:PORT (the address `audiolat net emulate --bind` sends from)",
            a.bind
        ))
        .into());
    }
    let socket = netaudio::bind(a.bind).map_err(|e| UsageError(e.to_string()))?;
    let store = ctx.open_store()?;
    if !(a.threads.quiet || a.threads.json) {
        eprintln!(
            "audiolat net respond: listening on {}{}, {}; Ctrl-C ends",
            a.bind,
            a.peer
                .map(|p| format!(", answering {p} only"))
                .unwrap_or_else(|| ", answering the first sender".into()),
            if a.no_synth {
                "answering silence (no synth)".to_string()
            } else {
                format!("Migrator synth on {} workers", a.workers)
            }
        );
    }
    let config = host::HostConfig {
        peer: a.peer,
        synth: !a.no_synth,
        workers: a.workers,
        policy,
        cpus: cpus.clone(),
        groups: Vec::new(),
        poll: a.poll,
        count_from_ns: 0,
        warmup_after_first_ns: a.warmup.as_nanos() as u64,
    };
    let config_json = json!({"role": "respond", "bind": a.bind.to_string(), "peer": a.peer.map(|p| p.to_string()),
        "synth": !a.no_synth, "workers": a.workers, "poll": a.poll.to_string(), "cpus": cpus,
        "warmup_s": a.warmup.as_secs_f64(), "duration_s": a.duration.map(|d| d.as_secs_f64()),
        "deadline_ns": netaudio::wire::DEADLINE_NS});
    let run = runner::net_end_run(
        ctx,
        &store,
        "respond",
        config_json,
        json!({"threads": policy.to_string()}),
        || {
            let stop = std::sync::atomic::AtomicBool::new(false);
            let done = std::sync::atomic::AtomicBool::new(false);
            let outcome = std::thread::scope(|scope| {
                scope.spawn(|| runner::stop_after(ctx, a.duration, &stop, &done));
                let o = host::serve(&config, socket, &stop, 1 << 20);
                done.store(true, std::sync::atomic::Ordering::Relaxed);
                o
            });
            let suffix = if a.no_synth { "_reference" } else { "" };
            let ms = probes::net::host_measurements(&outcome, suffix);
            let flags = json!({"realtime": outcome.net_thread.is_realtime() && outcome.worker_threads.iter().all(|g| g.is_realtime()),
                           "kernel_timestamps": outcome.kernel_timestamps});
            let d = &outcome.counters.drops;
            let result = json!({"answered": outcome.answered, "misses": outcome.misses,
            "answered_in_warmup": outcome.answered_in_warmup, "kernel_dropped": outcome.kernel_dropped,
            "send_dropped": outcome.send_dropped, "blocks_incomplete": outcome.counters.blocks_incomplete,
            "drops": {"malformed": d.wrong_size + d.bad_magic + d.unknown_version + d.unknown_kind + d.bad_index + d.non_finite,
                      "duplicate": d.duplicate, "stale": d.stale, "foreign": d.foreign},
            "net_thread": outcome.net_thread.granted.to_string()});
            (ms, flags, result, outcome.error)
        },
    )?;
    print_net_end(&run, a.threads.json, &ctx.db_path)
}

fn net_emulate(ctx: &Context, a: &cli::EmulateArgs) -> Result<ExitCode> {
    use netaudio::controller;
    let policy = cli::thread_policy(a.threads.policy, a.threads.priority)?;
    let cpus = cpu_list("--cpus", &a.threads.cpus)?;
    if a.host.ip().is_unspecified() || a.host.port() == 0 {
        return Err(UsageError(format!(
            "--host {}: name the host's address and port, e.g. 127.0.0.1:9700",
            a.host
        ))
        .into());
    }
    let socket = netaudio::bind(a.bind).map_err(|e| UsageError(e.to_string()))?;
    if let Err(e) = socket.connect(a.host) {
        return Err(UsageError(format!("--host {}: unreachable from {} ({e}): check the address and the route (ip route get {})", a.host, a.bind, a.host.ip())).into());
    }
    // Sending goes through send_to; the socket stays unconnected for it.
    let socket = {
        drop(socket);
        netaudio::bind(a.bind).map_err(|e| UsageError(e.to_string()))?
    };
    let store = ctx.open_store()?;
    let config = controller::ControllerConfig {
        host: a.host,
        input: controller::fixed_input(a.pads, a.x, a.y, a.pressure),
        blocks: netaudio::blocks_in(a.duration),
        warmup_blocks: netaudio::blocks_in(a.warmup),
        drain_ns: 100_000_000,
        policy,
        cpus: cpus.clone(),
    };
    if !(a.threads.quiet || a.threads.json) {
        eprintln!(
            "audiolat net emulate: {} pads to {} from {} for {} after {} of warm-up",
            a.pads,
            a.host,
            a.bind,
            views::fmt_duration(a.duration),
            views::fmt_duration(a.warmup)
        );
    }
    let config_json = json!({"role": "emulate", "host": a.host.to_string(), "bind": a.bind.to_string(),
        "pads": a.pads, "x": a.x, "y": a.y, "pressure": a.pressure, "cpus": cpus,
        "duration_s": a.duration.as_secs_f64(), "warmup_s": a.warmup.as_secs_f64(),
        "deadline_ns": netaudio::wire::DEADLINE_NS});
    let run = runner::net_end_run(
        ctx,
        &store,
        "emulate",
        config_json,
        json!({"threads": policy.to_string()}),
        || {
            let o = controller::run(
                &config,
                socket,
                engine::clock::monotonic_ns() + 20_000_000,
                &ctx.stop,
            );
            let ms = probes::net::controller_measurements(&o, "");
            let flags = json!({"realtime": o.sender_thread.is_realtime() && o.receiver_thread.as_ref().is_some_and(|g| g.is_realtime()),
                           "kernel_timestamps": o.kernel_timestamps});
            let result = json!({"blocks_sent": o.blocks_sent, "on_time": o.on_time, "late": o.late, "lost": o.lost,
            "packets_sent": o.packets_sent, "packets_refused": o.packets_refused,
            "duplicate_answers": o.duplicate_answers, "unknown_answers": o.unknown_answers,
            "malformed_answers": o.malformed.total()});
            let error = o.error.clone().or_else(|| {
            (o.blocks_sent > 0 && o.on_time + o.late == 0).then(|| format!(
                "no answer from {}: is `audiolat net respond` running there, and does its --peer name this controller's address ({} as the host sees it)?",
                a.host, a.bind
            ))
        });
            (ms, flags, result, error)
        },
    )?;
    print_net_end(&run, a.threads.json, &ctx.db_path)
}

fn print_net_end(run: &runner::NetEndRun, as_json: bool, db: &std::path::Path) -> Result<ExitCode> {
    let nothing = run.measurements.first().is_none_or(|m| m.summary.is_none());
    if as_json {
        print_json(
            &json!({"run_id": run.run_id, "status": run.status, "flags": run.flags, "result": run.result,
            "error": run.error,
            "measurements": run.measurements.iter().map(views::measurement_summary_json).collect::<Vec<_>>()}),
        )?;
    } else if !(nothing && run.error.is_some()) {
        print!("{}", run_views::net_end_text(run, db));
    }
    if let Some(e) = &run.error {
        eprintln!("audiolat: error: {e}");
    }
    Ok(match run.status {
        RunStatus::Interrupted => ExitCode::from(EXIT_INTERRUPTED),
        RunStatus::Failed => ExitCode::from(EXIT_FAILED),
        _ => ExitCode::SUCCESS,
    })
}

fn net(ctx: &Context, a: &cli::NetArgs) -> Result<ExitCode> {
    match &a.role {
        Some(cli::NetRole::Respond(r)) => return net_respond(ctx, r),
        Some(cli::NetRole::Emulate(e)) => return net_emulate(ctx, e),
        Some(cli::NetRole::Experiment(e)) => return net_experiment(ctx, e),
        None => {}
    }
    let cells = a.cells.cell_set()?;
    let mut config = net_config(a, &cells)?;
    config.flood_mbps = a.load.flood_mbps();
    let scratch = a
        .scratch_dir
        .clone()
        .unwrap_or_else(|| ctx.default_scratch());
    runner::check_net_load(&a.load, &scratch)?;
    let placement = runner::CellPlan {
        cells,
        host_cell: a.cells.host_cell.clone(),
    };
    // Admission control before anything is printed or stored.
    runner::admit_net(&placement, &config, &a.load)?;
    let store = ctx.open_store()?;
    if !(a.quiet || a.json) {
        eprintln!(
            "audiolat net: {} of reference then {} of synth, each after {} of warm-up, over {}",
            views::fmt_duration(config.reference_duration),
            views::fmt_duration(config.duration),
            views::fmt_duration(config.warmup),
            if config.netns {
                "a veth pair between two network namespaces"
            } else {
                "loopback"
            }
        );
    }
    let run = runner::net_run(ctx, &store, None, &config, &a.load, &placement, &scratch)?;
    if a.json {
        print_json(&run_views::net_json(&run))?;
    } else {
        print!("{}", run_views::net_text(&run, &ctx.db_path));
    }
    if let Some(e) = &run.storage_error {
        eprintln!("audiolat: error: run {}: {e}", run.run_id);
    }
    Ok(match run.status {
        RunStatus::Interrupted => ExitCode::from(EXIT_INTERRUPTED),
        RunStatus::Failed => ExitCode::from(EXIT_FAILED),
        _ => ExitCode::SUCCESS,
    })
}

/// One run of an experiment: what it changes from the base, and the study's figure.
struct ExperimentRun {
    label: String,
    load: &'static str,
    cells: Vec<String>,
    host_cell: Option<&'static str>,
    link: Option<probes::net::LinkShaping>,
    paper: &'static str,
}

fn net_experiment(ctx: &Context, a: &cli::ExperimentArgs) -> Result<ExitCode> {
    use probes::net::{LinkShaping, ReserveBy};
    let online = engine::rt::online_cpus();
    let cpu = a.cpu.unwrap_or_else(|| online.last().copied().unwrap_or(0));
    if !online.contains(&cpu) {
        return Err(UsageError(format!("--cpu {cpu} is not online here")).into());
    }
    let root = unsafe { libc::geteuid() } == 0;
    let music = format!("music=dedicated:cpus={cpu}");
    let others = "others=best-effort:policy=batch".to_string();
    let (runs, metric, netns) = match a.which {
        cli::Experiment::Isolation => {
            if !root || online.len() < 2 {
                return Err(UsageError(
                    "the isolation experiment moves tasks between cpusets: it needs root and at least 2 CPUs".into(),
                )
                .into());
            }
            let run =
                |label: &str, load: &'static str, cells: bool, paper: &'static str| ExperimentRun {
                    label: label.into(),
                    load,
                    cells: if cells {
                        vec![music.clone(), others.clone()]
                    } else {
                        Vec::new()
                    },
                    host_cell: cells.then_some("music"),
                    link: None,
                    paper,
                };
            (
                vec![
                    run("alone, no cells", "none", false, "-"),
                    run("video + EP, no cells", "video+ep", false, "-"),
                    run("alone, dedicated cell", "none", true, views::PAPER_FIG7A),
                    run(
                        "video + EP in a best-effort cell, dedicated cell",
                        "video@others+ep@others",
                        true,
                        views::PAPER_FIG7B,
                    ),
                ],
                "response_time",
                false,
            )
        }
        cli::Experiment::Bandwidth => {
            if !root {
                return Err(UsageError(
                    "the bandwidth experiment shapes a veth link between two network namespaces: it needs root".into(),
                )
                .into());
            }
            let mut runs = Vec::new();
            for (by, name) in [(ReserveBy::Tc, "tc"), (ReserveBy::Service, "mclock")] {
                if a.by != "both" && a.by != name {
                    continue;
                }
                for (reserve, paper) in [
                    (None, views::PAPER_FIG8A),
                    (Some(240.0), views::PAPER_FIG8B),
                    (Some(150.0), views::PAPER_FIG8_150),
                ] {
                    let label = match (reserve, by) {
                        (None, ReserveBy::Tc) => "no reservation (tc, one FIFO class)".to_string(),
                        (None, ReserveBy::Service) => "no reservation (service, FIFO)".to_string(),
                        (Some(r), _) => format!("{r:.0} Mbit/s reserved by {name}"),
                    };
                    runs.push(ExperimentRun {
                        label,
                        load: "stream",
                        cells: Vec::new(),
                        host_cell: None,
                        link: Some(LinkShaping {
                            mbps: a.link,
                            reserve_mbps: reserve,
                            by,
                        }),
                        paper,
                    });
                }
            }
            (runs, "end_to_end", true)
        }
    };
    let scratch = a
        .scratch_dir
        .clone()
        .unwrap_or_else(|| ctx.default_scratch());
    let store = ctx.open_store()?;
    let which = match a.which {
        cli::Experiment::Isolation => "isolation",
        cli::Experiment::Bandwidth => "bandwidth",
    };
    let group = store.create_group(
        &format!("net experiment {which}"),
        &ctx.command_line,
        &json!({"duration_s": a.duration.as_secs_f64(), "runs": runs.iter().map(|r| r.label.clone()).collect::<Vec<_>>()}),
    )?;
    let mut rows = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        if ctx.stopped() {
            break;
        }
        if !(a.quiet || a.json) {
            eprintln!(
                "audiolat net experiment {which}: run {} of {}: {} ({} + {} warm-up)",
                i + 1,
                runs.len(),
                r.label,
                views::fmt_duration(a.duration),
                views::fmt_duration(a.warmup)
            );
        }
        let mut cells = qos::CellSet::default();
        for c in &r.cells {
            cells
                .push(qos::CellSet::parse_flag(c).map_err(UsageError)?)
                .map_err(UsageError)?;
        }
        let load: load::LoadSpec = r
            .load
            .parse()
            .map_err(|e: load::SpecError| UsageError(e.to_string()))?;
        let config = probes::net::NetConfig {
            warmup: a.warmup,
            netns,
            link: r.link,
            stream: load.stream().map(|mbps| probes::net::StreamConfig {
                mbps,
                sink_groups: Vec::new(),
            }),
            ..probes::net::NetConfig::new(a.duration)
        };
        let plan = runner::CellPlan {
            cells,
            host_cell: r.host_cell.map(str::to_string),
        };
        match runner::net_run(ctx, &store, Some(group), &config, &load, &plan, &scratch) {
            Ok(run) => rows.push(views::experiment_row(&r.label, metric, r.paper, &run)),
            Err(e) => rows.push(views::ExperimentRow::failed(
                &r.label,
                r.paper,
                format!("{e:#}"),
            )),
        }
    }
    if a.json {
        print_json(&json!({
            "group": group,
            "experiment": which,
            "metric": metric,
            "rows": rows.iter().map(views::ExperimentRow::to_json).collect::<Vec<_>>(),
        }))?;
    } else {
        print!(
            "{}",
            views::experiment_text(which, metric, group, &rows, &ctx.db_path)
        );
    }
    Ok(if ctx.stopped() {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if rows.iter().any(|r| r.status != "complete") {
        ExitCode::from(EXIT_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

impl SuiteEntry {
    /// A scenario that could not run, with the reason.
    fn failed(label: &str, e: &anyhow::Error) -> SuiteEntry {
        SuiteEntry {
            status: "failed".into(),
            note: format!("{e:#}"),
            ..SuiteEntry::not_run(label)
        }
    }

    /// A scenario the suite did not reach because it was interrupted.
    fn not_run(label: &str) -> SuiteEntry {
        SuiteEntry {
            label: label.into(),
            run_id: None,
            status: "not run".into(),
            headline: None,
            underruns: None,
            flags: json!({}),
            note: "interrupted".into(),
        }
    }
}

struct SuiteEntry {
    label: String,
    run_id: Option<i64>,
    status: String,
    headline: Option<results::Measurement>,
    underruns: Option<u64>,
    flags: serde_json::Value,
    note: String,
}

fn suite(ctx: &Context, a: &cli::SuiteArgs) -> Result<ExitCode> {
    let scratch = a
        .scratch_dir
        .clone()
        .unwrap_or_else(|| ctx.default_scratch());
    // Refuse what can be refused before anything is written; a probe whose tool is
    // missing is skipped, by name, later ("every probe that can run here").
    if !scratch.is_dir() {
        return Err(UsageError(format!(
            "--scratch-dir {}: not a directory; give an existing directory on the disk to load",
            scratch.display()
        ))
        .into());
    }
    let store = ctx.open_store()?;
    let group = store.create_group(
        "suite",
        &ctx.command_line,
        &json!({"each_s": a.each.as_secs_f64()}),
    )?;
    let quiet = a.quiet || a.json;
    if !quiet {
        eprintln!(
            "audiolat suite: group {group}; doctor, then each probe for {:.0} s",
            a.each.as_secs_f64()
        );
    }
    let report = probes::doctor::run(std::time::Duration::from_secs(1));
    let doctor_id = runner::doctor_run(ctx, &store, Some(group), &report)?;
    let (ok, warn, fail) = report.counts();
    let mut entries = vec![SuiteEntry {
        label: "doctor".into(),
        run_id: Some(doctor_id),
        status: "complete".into(),
        headline: None,
        underruns: None,
        flags: json!({}),
        note: format!("{ok} ok, {warn} warn, {fail} fail"),
    }];
    let mut failed = false;
    for (label, config, load) in runner::suite_plan(a.each) {
        if ctx.stopped() {
            entries.push(SuiteEntry::not_run(label));
            continue;
        }
        if let Err(e) = runner::check_load(&load, &scratch) {
            entries.push(SuiteEntry {
                label: label.into(),
                run_id: None,
                status: "skipped".into(),
                headline: None,
                underruns: None,
                flags: json!({}),
                note: e.to_string(),
            });
            continue;
        }
        let live = LiveLine::new(label, quiet, config.period_ns);
        match runner::jitter_run(ctx, &store, Some(group), &config, &load, &scratch, &live) {
            Ok(run) => {
                let headline = run
                    .measurements
                    .iter()
                    .find(|m| m.metric == "fragment_completion")
                    .or(run.measurements.first())
                    .cloned();
                entries.push(SuiteEntry {
                    label: label.into(),
                    run_id: Some(run.run_id),
                    status: run.status.to_string(),
                    headline,
                    underruns: config
                        .fragments
                        .map(|_| run.outcome.recorded.underrun_count),
                    flags: run.flags.clone(),
                    note: String::new(),
                });
            }
            Err(e) => {
                failed = true;
                entries.push(SuiteEntry::failed(label, &e));
            }
        }
    }
    // Event-to-audio latency on JACK: a running server, else a private jackd -d dummy.
    let event_label = "event latency, sine, asap";
    if ctx.stopped() {
        entries.push(SuiteEntry::not_run(event_label));
    } else {
        let req = server_request(engine::jack_server::ServerMode::Auto, None, None, None);
        match engine::jack_server::JackServer::connect(&req) {
            Err(e) => entries.push(SuiteEntry {
                label: event_label.into(),
                run_id: None,
                status: "skipped".into(),
                headline: None,
                underruns: None,
                flags: json!({}),
                note: e.to_string(),
            }),
            Ok(mut server) => {
                // Without a card the suite's audio runs on a software clock: say where to
                // look for something with a DAC.
                let no_card = if server.info().private && !audio::has_sound_card() {
                    " (no sound card here: a private jackd -d dummy; `audiolat devices` lists what can be measured)"
                } else {
                    ""
                };
                let mut config = probes::event::EventConfig::new(
                    probes::event::TriggerSource::Timer,
                    probes::event::NotePolicy::Asap,
                );
                let budget_ms = (a.each.as_secs_f64() * 1e3 - config.warmup_ms).max(0.0);
                config.triggers = ((budget_ms / (config.spacing_ms + 3.0)) as u64).max(10);
                let cell = runner::EventCell {
                    config,
                    load: load::LoadSpec::none(),
                    repeat: 1,
                    jack: engine::jack_backend::JackConfig::default(),
                    granted: None,
                };
                let result =
                    engine::jack_backend::JackStream::open(server.info(), cell.jack.clone())
                        .map_err(anyhow::Error::from)
                        .and_then(|mut stream| {
                            runner::event_run(
                                ctx,
                                &store,
                                Some(group),
                                &mut stream,
                                Some(&mut server),
                                &cell,
                                &scratch,
                                quiet,
                            )
                        });
                match result {
                    Ok(run) => {
                        if run.error.is_some() {
                            failed = true;
                        }
                        let headline = store
                            .measurements(run.run_id)?
                            .into_iter()
                            .map(|m| m.measurement)
                            .find(|m| m.metric == "event_latency");
                        entries.push(SuiteEntry {
                            label: event_label.into(),
                            run_id: Some(run.run_id),
                            status: run.status.to_string(),
                            headline,
                            underruns: Some(run.outcome.xruns.0 + run.outcome.xruns.1),
                            flags: run.flags.clone(),
                            note: run.error.clone().unwrap_or_else(|| {
                                format!(
                                    "model: half a period + {} frames playback latency = {}{no_card}",
                                    run.outcome.info.playback_latency_frames,
                                    report::terminal::fmt_ns(run.outcome.model_latency_ns())
                                )
                            }),
                        });
                    }
                    Err(e) => {
                        failed = true;
                        entries.push(SuiteEntry::failed(event_label, &e));
                    }
                }
                // The round trip on the same server, through audiolat's software loop
                // (or nothing but a cable can close a loop on real hardware).
                let rt_label = "round trip, JACK software loop";
                if ctx.stopped() {
                    entries.push(SuiteEntry::not_run(rt_label));
                } else {
                    let outcome =
                        suite_roundtrip(ctx, &store, group, &mut server, a, &scratch, quiet);
                    match outcome {
                        Ok(run) => {
                            if run.error.is_some() {
                                failed = true;
                            }
                            let headline = store
                                .measurements(run.run_id)?
                                .into_iter()
                                .map(|m| m.measurement)
                                .find(|m| m.metric == "roundtrip");
                            let o = &run.outcome;
                            let m = o.measured_frames();
                            entries.push(SuiteEntry {
                                label: rt_label.into(),
                                run_id: Some(run.run_id),
                                status: run.status.to_string(),
                                headline,
                                underruns: Some(o.xruns + o.gaps),
                                flags: run.flags.clone(),
                                note: run.error.clone().unwrap_or_else(|| {
                                    if m.count == 0 {
                                        return o.verdict_line();
                                    }
                                    format!(
                                        "{}; {:.3} frames = {} reported by the ports + {:.3} extra",
                                        o.verdict_line(),
                                        m.mean,
                                        o.reported_frames(),
                                        m.mean - f64::from(o.reported_frames())
                                    )
                                }),
                            });
                        }
                        Err(e) => {
                            failed = true;
                            entries.push(SuiteEntry::failed(rt_label, &e));
                        }
                    }
                }
            }
        }
    }
    // The Tessellation study's network audio, over loopback: needs nothing installed.
    let net_label = "network audio, Migrator synth, loopback";
    if ctx.stopped() {
        entries.push(SuiteEntry::not_run(net_label));
    } else {
        let config = probes::net::NetConfig {
            reference_duration: (a.each / 4).max(std::time::Duration::from_secs(1)),
            ..probes::net::NetConfig::new(a.each)
        };
        match runner::net_run(
            ctx,
            &store,
            Some(group),
            &config,
            &load::LoadSpec::default(),
            &runner::CellPlan::default(),
            &scratch,
        ) {
            Ok(run) => {
                let headline = run.outcome.measurements().into_iter().next();
                let phase = run.outcome.synth.as_ref();
                let note = match phase {
                    Some(p) => format!(
                        "{} of {} blocks missed the 1.41 ms deadline; {} lost{}",
                        p.host.misses,
                        p.host.answered,
                        p.controller.lost,
                        views::synth_adds_ns(p, run.outcome.reference.as_ref()).map_or_else(
                            String::new,
                            |ns| format!(
                                "; the synth adds {} after the last packet",
                                report::terminal::fmt_ns(ns)
                            )
                        )
                    ),
                    None => "interrupted before the synth phase".into(),
                };
                if run.status == RunStatus::Failed {
                    failed = true;
                }
                entries.push(SuiteEntry {
                    label: net_label.into(),
                    run_id: Some(run.run_id),
                    status: run.status.to_string(),
                    headline,
                    underruns: None,
                    flags: run.flags.clone(),
                    note,
                });
            }
            Err(e) => {
                failed = true;
                entries.push(SuiteEntry::failed(net_label, &e));
            }
        }
    }
    let group_status = if ctx.stopped() {
        RunStatus::Interrupted
    } else if failed {
        RunStatus::Failed
    } else {
        RunStatus::Complete
    };
    finish_group(&store, group, group_status);
    // The suite ends with its report, beside the database.
    let report_path = report_data::default_path(&ctx.db_path, &format!("suite-{group}"));
    let report_written = report_data::group(&store, group).and_then(|data| {
        std::fs::write(&report_path, report::html::render(&data))
            .with_context(|| format!("writing the report {}", report_path.display()))
    });
    if let Err(e) = &report_written {
        eprintln!("audiolat: warning: the suite's report was not written: {e:#}");
    }
    let report_path = report_written.is_ok().then_some(report_path);
    if a.json {
        print_json(&json!({
            "group_id": group,
            "status": group_status,
            "report": report_path,
            "doctor": views::doctor_json(&report),
            "runs": entries.iter().map(|e| json!({
                "label": e.label, "run_id": e.run_id, "status": e.status,
                "metric": e.headline.as_ref().map(|m| m.metric.clone()),
                "summary": e.headline.as_ref().map(|m| results::export::summary_json(m.summary.as_ref())),
                "underruns": e.underruns, "flags": e.flags, "note": e.note,
            })).collect::<Vec<_>>(),
        }))?;
    } else {
        print!("{}", suite_text(group, &entries, &ctx.db_path));
        if let Some(p) = &report_path {
            println!("report: {}", p.display());
        }
    }
    Ok(if ctx.stopped() {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if failed {
        ExitCode::from(EXIT_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

/// The suite's round trip: audiolat's software loop in the suite's JACK server, measured
/// for about `--each`.
fn suite_roundtrip(
    ctx: &Context,
    store: &Store,
    group: i64,
    server: &mut engine::jack_server::JackServer,
    a: &cli::SuiteArgs,
    scratch: &std::path::Path,
    quiet: bool,
) -> Result<runner::RoundtripRun> {
    let lp = engine::jack_loop::JackLoop::start(server.name(), "audiolat-loop", 0)?;
    let mut stream = engine::jack_backend::JackStream::open(
        server.info(),
        engine::jack_backend::JackConfig {
            playback: vec![lp.input_port()],
            capture: Some(lp.output_port()),
            ..Default::default()
        },
    )?;
    // The clicks and the first window take about a second before the measuring starts.
    let cell = runner::RoundtripCell {
        config: probes::roundtrip::RoundtripConfig {
            duration_ms: (a.each.as_secs_f64() - 1.5).max(1.0) * 1e3,
            ..Default::default()
        },
        load: load::LoadSpec::none(),
        repeat: 1,
        loop_description: "software loop in the JACK server (audiolat-loop)".into(),
        granted: None,
    };
    let run = runner::roundtrip_run(
        ctx,
        store,
        Some(group),
        &mut stream,
        Some(server),
        &cell,
        scratch,
        quiet,
    );
    drop(stream);
    drop(lp);
    run
}

fn suite_text(group: i64, entries: &[SuiteEntry], db: &std::path::Path) -> String {
    use report::terminal::Table;
    let mut t = Table::new(&[
        "run",
        "scenario",
        "status",
        "metric",
        "p50",
        "p99",
        "max",
        "under-runs",
        "rt",
        "steal",
    ])
    .left_align(&[1, 2, 3, 8]);
    for e in entries {
        let [metric, p50, p99, max] = report::terminal::headline_cells(e.headline.as_ref());
        t.row(vec![
            e.run_id.map_or("-".into(), |i| i.to_string()),
            e.label.clone(),
            e.status.clone(),
            metric,
            p50,
            p99,
            max,
            e.underruns.map_or("-".into(), |u| u.to_string()),
            match e.flags["realtime"].as_bool() {
                Some(true) => "yes".into(),
                Some(false) => "NO".into(),
                None => "-".into(),
            },
            e.flags["host_steal_percent"]
                .as_f64()
                .map_or("-".into(), |p| format!("{p:.1}%")),
        ]);
    }
    let mut out = format!("\naudiolat suite, group {group}\n\n");
    out.push_str(&t.render());
    for e in entries.iter().filter(|e| !e.note.is_empty()) {
        out.push_str(&format!("{}: {}\n", e.label, e.note));
    }
    out.push_str(&format!(
        "\nstored in {}; `audiolat runs --group {group}` lists the runs, `audiolat show <run>` shows one\n",
        db.display()
    ));
    out
}

fn resolve(store: &Store, r: RunRef) -> Result<RunRecord> {
    let id = match r {
        RunRef::Id(id) => id,
        RunRef::Last => store.last_run_id()?.ok_or_else(|| {
            UsageError("no runs stored yet: run a probe first (e.g. audiolat jitter)".into())
        })?,
    };
    Ok(store.run(id)?)
}

fn runs(ctx: &Context, a: &cli::RunsArgs) -> Result<ExitCode> {
    let store = ctx.open_existing_store()?;
    if a.groups {
        return groups(&store, a);
    }
    let list = store.list_runs(&RunFilter {
        probe: a.probe.clone(),
        group_id: a.group,
        status: a.status,
        limit: Some(a.limit),
    })?;
    let mut rows = Vec::new();
    for r in list {
        let h = views::headline(&store, &r)?;
        rows.push((r, h));
    }
    if a.json {
        print_json(&json!(rows
            .iter()
            .map(|(r, h)| json!({
                "id": r.id, "group_id": r.group_id, "probe": r.probe, "status": r.status,
                "started_at": r.started_at, "duration_s": r.duration_s, "flags": r.flags,
                "metric": h.as_ref().map(|m| m.metric.clone()),
                "summary": h.as_ref().map(|m| results::export::summary_json(m.summary.as_ref())),
            }))
            .collect::<Vec<_>>()))?;
    } else if rows.is_empty() {
        println!("no runs match");
    } else {
        print!("{}", report::terminal::runs_table(&rows));
    }
    Ok(ExitCode::SUCCESS)
}

fn show(ctx: &Context, a: &cli::ShowArgs) -> Result<ExitCode> {
    let store = ctx.open_existing_store()?;
    let run = resolve(&store, a.run)?;
    let measurements = store.measurements(run.id)?;
    if a.json {
        let events = store.events(run.id, None)?;
        let series = store.series(run.id)?;
        let triggers = store.triggers(run.id)?;
        print_json(&results::export::run_json(
            &run,
            &measurements,
            &events,
            &series,
            &triggers,
        ))?;
    } else {
        let counts = store.event_counts(run.id)?;
        let events = store.events(run.id, Some(a.events))?;
        let view = results::RunView::from_stored(
            &run,
            &measurements,
            store.events(run.id, None)?,
            store.triggers(run.id)?,
        );
        print!("{}", report::view::run::text(&run, &view, &counts, &events));
    }
    Ok(ExitCode::SUCCESS)
}

fn export(ctx: &Context, a: &cli::ExportArgs) -> Result<ExitCode> {
    if let Some(p) = &a.output {
        check_output_path(p, "--output")?;
    }
    let store = ctx.open_existing_store()?;
    let run = resolve(&store, a.run)?;
    let measurements = store.measurements(run.id)?;
    let text = match a.format {
        ExportFormat::Json => {
            let events = store.events(run.id, None)?;
            let series = store.series(run.id)?;
            let triggers = store.triggers(run.id)?;
            serde_json::to_string_pretty(&results::export::run_json(
                &run,
                &measurements,
                &events,
                &series,
                &triggers,
            ))? + "\n"
        }
        ExportFormat::Triggers => {
            let triggers = store.triggers(run.id)?;
            // An event run that measured no trigger exports the header alone.
            if triggers.is_empty() && run.probe != "event" {
                return Err(UsageError(format!(
                    "run {} has no triggers: only event runs do (audiolat runs --probe event)",
                    run.id
                ))
                .into());
            }
            results::export::triggers_csv(&run, &triggers)
        }
        ExportFormat::Series => {
            let series = store.series(run.id)?;
            if series.is_empty() {
                return Err(UsageError(format!(
                    "run {} has no series: jitter and roundtrip runs do (audiolat runs --probe roundtrip)",
                    run.id
                ))
                .into());
            }
            results::export::series_csv(&run, &series)
        }
        ExportFormat::Csv => results::export::measurements_csv(&run, &measurements),
        ExportFormat::Hdr => results::export::hdr_log(&run, &measurements),
        ExportFormat::Cyclictest => {
            // cyclictest's histogram is of periodic wake-up latency: jitter's, no other.
            if run.probe != "jitter" {
                return Err(UsageError(format!(
                    "run {} is a {} run: --format cyclictest exports jitter runs only (wake-up latency); use --format hdr or csv for this one",
                    run.id, run.probe
                ))
                .into());
            }
            let h = measurements
                .iter()
                .find(|m| m.measurement.metric == "wakeup_latency")
                .and_then(|m| m.measurement.histogram.as_ref())
                .ok_or_else(|| {
                    UsageError(format!(
                        "run {} has no wake-up latency histogram to export",
                        run.id
                    ))
                })?;
            let cycles: Vec<u64> = run.result["overflow_cycles"]
                .as_array()
                .map(|a| a.iter().filter_map(|v| v.as_u64()).collect())
                .unwrap_or_default();
            results::export::cyclictest_histogram(h, &cycles)
        }
    };
    match &a.output {
        Some(p) => std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?,
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}

fn load_worker(ctx: &Context, a: &cli::LoadWorkerArgs) -> Result<ExitCode> {
    // In a deadline cell each thread takes its reservation as it starts (a deadline task
    // may not create threads). The kernel's admission refusing it means audiolat's own
    // admission was wrong: the load ends with the kernel's reason rather than run outside
    // its cell.
    let thread_start = || {
        let Some(share) = a.deadline else {
            return;
        };
        let policy = engine::rt::Policy::Deadline {
            runtime_ns: share.runtime_ns,
            deadline_ns: share.deadline_ns,
            period_ns: share.period_ns,
        };
        let grant = engine::rt::ThreadRt::apply(&policy, None, 0);
        if !grant.sched.is_exact() {
            eprintln!(
                "audiolat: {} load thread: SCHED_DEADLINE {}: {}",
                a.kind,
                share.to_arg(),
                grant
                    .sched
                    .refusal
                    .unwrap_or_else(|| format!("got {}", grant.sched.granted))
            );
            std::process::exit(3);
        }
    };
    match a.kind.as_str() {
        "ep" => {
            let passes = std::sync::atomic::AtomicU64::new(0);
            let failures = std::sync::atomic::AtomicU64::new(0);
            load::ep::run_until(a.threads, &ctx.stop, &passes, &failures, &thread_start);
            Ok(ExitCode::SUCCESS)
        }
        "video" => {
            let frames = std::sync::atomic::AtomicU64::new(0);
            let pace = if a.deadline.is_some_and(|d| d.time_triggered) {
                load::video::Pace::YieldToPeriod
            } else {
                load::video::Pace::Timer
            };
            load::video::run_until(a.threads, &ctx.stop, &frames, pace, &thread_start);
            Ok(ExitCode::SUCCESS)
        }
        other => Err(UsageError(format!("unknown built-in load '{other}': ep or video")).into()),
    }
}

/// A plan cell's probe checks, without side effects: what its command would refuse
/// before starting anything, and that it makes exactly one run.
fn check_plan_cell(cli: &Cli) -> std::result::Result<(), String> {
    let scratch = std::env::temp_dir();
    let one_run = |n: usize, how: &str| {
        if n == 1 {
            Ok(())
        } else {
            Err(format!(
                "this cell would make {n} runs ({how}): a plan's cell is one run, so sweep with an axis in [sweep] instead"
            ))
        }
    };
    let msg = |e: anyhow::Error| format!("{e:#}");
    match &cli.command {
        Command::Jitter(a) => {
            cli::jitter_config(a).map_err(|e| e.to_string())?;
            runner::check_load(&a.load, &scratch).map_err(msg)
        }
        Command::Event(a) => {
            let (cells, _) = event_checks(a, &scratch).map_err(msg)?;
            one_run(
                cells.len() * audio::periods(&a.audio).len(),
                "comma lists in --period, --policy, --workload or --load, or --repeat",
            )
        }
        Command::Roundtrip(a) => {
            if a.find_min_buffer {
                return Err(
                    "--find-min-buffer is a search of its own: sweep `period` as an axis instead, and the report finds the smallest buffer without under-runs".into(),
                );
            }
            let (_, periods, _) = roundtrip_checks(a, &scratch).map_err(msg)?;
            one_run(
                periods.len() * a.load.0.len() * a.repeat as usize,
                "comma lists in --period or --load, or --repeat",
            )
        }
        Command::Net(a) => {
            if a.role.is_some() {
                return Err("a plan runs `audiolat net` itself, not its experiment, respond or emulate roles".into());
            }
            let cells = a.cells.cell_set().map_err(|e| e.to_string())?;
            let config = net_config(a, &cells).map_err(|e| e.to_string())?;
            runner::check_net_load(&a.load, &scratch).map_err(msg)?;
            let placement = runner::CellPlan {
                cells,
                host_cell: a.cells.host_cell.clone(),
            };
            runner::admit_net(&placement, &config, &a.load)
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
        _ => Err("a plan's probe is jitter, event, roundtrip or net".into()),
    }
}

fn run_plan(ctx: &Context, a: &cli::RunPlanArgs) -> Result<ExitCode> {
    let text = std::fs::read_to_string(&a.plan).map_err(|e| {
        UsageError(format!(
            "cannot read plan {}: {e} (`audiolat reproduce bbb2014 --print > plan.toml` writes one to start from)",
            a.plan.display()
        ))
    })?;
    let plan = plan::Plan::parse(&text, &a.plan.display().to_string())
        .map_err(|e| UsageError(e.to_string()))?;
    plan::run(ctx, &plan, &a.run)
}

fn reproduce(ctx: &Context, a: &cli::ReproduceArgs) -> Result<ExitCode> {
    let text = presets::text(&a.study, a.quick).expect("the study name was checked by clap");
    if a.print {
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    let source = format!(
        "preset {}{}",
        a.study,
        if a.quick { " --quick" } else { "" }
    );
    let plan = plan::Plan::parse(&text, &source).map_err(|e| UsageError(e.to_string()))?;
    plan::run(ctx, &plan, &a.run)
}

fn write_report(ctx: &Context, a: &cli::ReportArgs) -> Result<ExitCode> {
    if let Some(p) = &a.output {
        check_output_path(p, "--output")?;
    }
    let store = ctx.open_existing_store()?;
    let subjects = if a.subjects.is_empty() {
        let latest = store.list_groups(None)?.into_iter().next().ok_or_else(|| {
            UsageError(
                "no groups stored yet: name runs (`audiolat report 3 4`), or run a plan or `audiolat suite` first"
                    .into(),
            )
        })?;
        vec![cli::Subject::Group(latest.id)]
    } else {
        a.subjects.clone()
    };
    let data = report_data::subjects(&store, &subjects)?;
    let name = match subjects.as_slice() {
        [cli::Subject::Group(g)] => match &data.group {
            Some(gr) if gr.kind == "plan" => format!("plan-{g}"),
            _ => format!("group-{g}"),
        },
        _ => {
            let ids: Vec<i64> = data.runs().map(|r| r.record.id).collect();
            match ids.as_slice() {
                [] => "empty".into(),
                [one] => format!("run-{one}"),
                [first, .., last] => format!("runs-{first}-to-{last}"),
            }
        }
    };
    let path = a
        .output
        .clone()
        .unwrap_or_else(|| report_data::default_path(&ctx.db_path, &name));
    std::fs::write(&path, report::html::render(&data))
        .with_context(|| format!("writing the report {}", path.display()))?;
    if a.print {
        print!("{}", report::paper::tables_text(&data));
    }
    println!("report: {} ({})", path.display(), data.subject);
    Ok(ExitCode::SUCCESS)
}

fn compare(ctx: &Context, a: &cli::CompareArgs) -> Result<ExitCode> {
    let store = ctx.open_existing_store()?;
    let da = report_data::subjects(&store, &[a.a])?;
    let db = report_data::subjects(&store, &[a.b])?;
    let metrics = if a.all_metrics {
        Vec::new()
    } else if a.metric.is_empty() {
        report::compare::headline_metrics(&da, &db)
    } else {
        a.metric.clone()
    };
    let rows = report::compare::compare(&da, &db, &metrics);
    if a.json {
        print_json(&report::compare::json(&da, &db, &rows, &metrics))?;
    } else {
        print!("{}", report::compare::text(&da, &db, &rows, &metrics));
    }
    Ok(ExitCode::SUCCESS)
}

/// `audiolat runs --groups`: each group with its kind, name, status and runs.
fn groups(store: &Store, a: &cli::RunsArgs) -> Result<ExitCode> {
    let mut rows = Vec::new();
    for g in store.list_groups(None)?.into_iter().take(a.limit) {
        let runs = store.list_runs(&RunFilter {
            group_id: Some(g.id),
            ..Default::default()
        })?;
        let cells = if g.kind == "plan" {
            let cells = store.plan_cells(g.id)?;
            let complete = cells
                .iter()
                .filter(|c| c.status == Some(RunStatus::Complete))
                .count();
            Some((complete, cells.len()))
        } else {
            None
        };
        rows.push((g, runs.len(), cells));
    }
    if a.json {
        print_json(&json!(rows
            .iter()
            .map(|(g, n, cells)| json!({
                "id": g.id, "kind": g.kind, "name": g.detail["name"], "status": g.status,
                "started_at": g.started_at, "ended_at": g.ended_at, "runs": n,
                "cells": cells.map(|(c, t)| json!({"complete": c, "total": t})),
                "command_line": g.command_line,
            }))
            .collect::<Vec<_>>()))?;
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        println!("no groups stored yet (a plan, a sweep or `audiolat suite` makes one)");
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = report::terminal::Table::new(&[
        "group", "kind", "name", "status", "started", "runs", "cells", "command",
    ])
    .left_align(&[1, 2, 3, 4, 7]);
    for (g, n, cells) in &rows {
        t.row(vec![
            g.id.to_string(),
            g.kind.clone(),
            g.detail["name"].as_str().unwrap_or("-").to_string(),
            g.status.to_string(),
            g.started_at.replace('T', " ").chars().take(19).collect(),
            n.to_string(),
            cells
                .map(|(c, t)| format!("{c}/{t}"))
                .unwrap_or_else(|| "-".into()),
            g.command_line.clone(),
        ]);
    }
    print!("{}", t.render());
    println!("`audiolat report group:N` writes a group's report; `audiolat compare group:A group:B` compares two");
    Ok(ExitCode::SUCCESS)
}
