//! Running a plan: every cell as a child `audiolat` process (the binary of the cell's
//! build profile) whose one run is filed under the cell, in an order that starts one
//! private JACK server per buffer setting, with a progress line, Ctrl-C that stops the
//! current cell and keeps what is stored, and `--resume` that runs only the cells not yet
//! stored complete.

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command as Process, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use engine::jack_server::{JackServer, ServerMode};
use results::{NewPlanCell, PlanCell, RunStatus, Store};
use serde_json::json;

use crate::cli::{Cli, Command, PlanRunArgs, Resume, UsageError};
use crate::plan::{Cell, Plan};
use crate::runner::{Context, PLAN_CELL_ENV};

/// The private JACK server a cell needs: (rate, period).
type ServerKey = (u32, u32);

/// What a cell needs from the plan runner beyond its arguments.
struct Planned {
    cell: Cell,
    server: Option<ServerKey>,
}

/// The server a cell's process would start for itself, which the runner starts once for
/// all the cells that share it: JACK and ALSA's jack PCM on a private server.
/// `default_running` asks (once per plan) whether a JACK server answers under the
/// default name, which `--server auto` cells use instead.
fn server_key(cli: &Cli, default_running: &OnceCell<bool>) -> Option<ServerKey> {
    let (audio, purpose) = match &cli.command {
        Command::Event(a) => (&a.audio, crate::audio::event_purpose(a)),
        Command::Roundtrip(a) => (&a.audio, crate::audio::roundtrip_purpose(a)),
        _ => return None,
    };
    let spec = crate::audio::spec(audio, &purpose).ok()?;
    let server = spec.jack_server().filter(|s| s.name.is_none())?;
    let private = match server.mode {
        ServerMode::Dummy => true,
        ServerMode::External => false,
        ServerMode::Auto => !*default_running.get_or_init(|| {
            matches!(
                engine::jack_server::probe(&engine::jack_server::default_server_name()),
                Ok(Some(_))
            )
        }),
    };
    if !private {
        return None;
    }
    let (rate, period) = spec.private_server_settings(crate::audio::periods(audio)[0]);
    Some((rate, period))
}

/// The cells in run order: the cells of one server together (first appearance first),
/// plan order within. `None` when `stopped` said so while the cells were checked.
fn order(plan: &Plan, stopped: &dyn Fn() -> bool) -> Result<Option<Vec<Planned>>> {
    let default_running = OnceCell::new();
    let cells = plan.cells(&|cli| {
        if stopped() {
            return Err("interrupted".into());
        }
        crate::check_plan_cell(cli)?;
        Ok(server_key(cli, &default_running))
    });
    if stopped() {
        return Ok(None);
    }
    let mut keyed: Vec<Planned> = cells
        .map_err(|e| UsageError(e.to_string()))?
        .into_iter()
        .map(|(cell, server)| Planned { cell, server })
        .collect();
    let mut first_seen: Vec<Option<ServerKey>> = Vec::new();
    for p in &keyed {
        if !first_seen.contains(&p.server) {
            first_seen.push(p.server);
        }
    }
    keyed.sort_by_key(|p| first_seen.iter().position(|s| *s == p.server));
    Ok(Some(keyed))
}

/// The binary of a cargo profile: `current` is this one; others are
/// `<target>/<profile>/audiolat` beside it, built with cargo when missing and the
/// source tree is there.
fn binary_for(profile: &str, quiet: bool) -> Result<PathBuf> {
    let me = std::env::current_exe().context("finding audiolat's own binary")?;
    if profile == "current" {
        return Ok(me);
    }
    let dir = if profile == "dev" { "debug" } else { profile };
    let target = me
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let path = target.join(dir).join("audiolat");
    let root = target.parent().map(Path::to_path_buf).unwrap_or_default();
    let manifest = root.join("Cargo.toml");
    let is_source = std::fs::read_to_string(&manifest)
        .map(|t| t.contains("name = \"audiolat\""))
        .unwrap_or(false);
    if !is_source && path.is_file() {
        // An installed set of binaries: each run records the commit it was built from.
        return Ok(path);
    }
    let build = format!("cargo build --locked --profile {profile} --bin audiolat");
    if !is_source {
        return Err(UsageError(format!(
            "build profile `{profile}` runs {}, which does not exist and there is no audiolat source tree at {} to build it: build it with `{build}` in the source tree, or remove `{profile}` from the plan's profile axis",
            path.display(),
            root.display()
        ))
        .into());
    }
    // From a source tree, cargo builds the profile or finds it up to date, so every
    // profile runs the same code.
    if !quiet {
        eprintln!("audiolat run: the `{profile}` binary: {build}");
    }
    let status = Process::new("cargo")
        .args([
            "build",
            "--locked",
            "--profile",
            profile,
            "--bin",
            "audiolat",
        ])
        .current_dir(&root)
        .env("CARGO_TARGET_DIR", &target)
        .stdout(Stdio::null())
        .stderr(if quiet {
            Stdio::null()
        } else {
            Stdio::inherit()
        })
        .status();
    match status {
        Ok(s) if s.success() && path.is_file() => Ok(path),
        Ok(s) => Err(UsageError(format!(
            "`{build}` failed ({s}) in {}: a profile of the plan's profile axis must be one Cargo.toml defines (opt1, opt2, opt3, release, dev)",
            root.display()
        ))
        .into()),
        Err(e) if path.is_file() => {
            eprintln!(
                "audiolat: warning: cannot run cargo ({e}) to check that {} is built from this source tree; running it as it is (each run records the commit it was built from)",
                path.display()
            );
            Ok(path)
        }
        Err(e) => Err(UsageError(format!(
            "cannot run cargo to build the `{profile}` binary ({e}): install Rust (scripts/install-deps), or build it with `{build}`"
        ))
        .into()),
    }
}

/// The argument vector a cell runs with: its own, the plan's server instead of one of
/// its own, and no status line.
fn child_args(cell: &Cell, server: Option<&str>, quiet_flag: bool) -> Vec<String> {
    let mut out = Vec::with_capacity(cell.argv.len() + 5);
    let mut skip = false;
    for a in &cell.argv {
        if skip {
            skip = false;
            continue;
        }
        if server.is_some() && (a == "--server" || a == "--server-name") {
            skip = true;
            continue;
        }
        out.push(a.clone());
    }
    if let Some(name) = server {
        out.extend([
            "--server".into(),
            "external".into(),
            "--server-name".into(),
            name.into(),
        ]);
    }
    if quiet_flag {
        out.push("--quiet".into());
    }
    out
}

fn takes_quiet(probe: &str) -> bool {
    use clap::CommandFactory;
    Cli::command()
        .find_subcommand(probe)
        .is_some_and(|c| c.get_arguments().any(|a| a.get_long() == Some("quiet")))
}

fn fmt_eta(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// The progress line: a bar, cells done, the current cell and the time left.
struct Progress {
    enabled: bool,
    tty: bool,
    total: usize,
    done: usize,
    started: Instant,
    timed: Vec<f64>,
}

impl Progress {
    fn show(&self, current: &str) {
        if !self.enabled {
            return;
        }
        let done = self.done;
        let width = 24;
        let filled = (done * width).checked_div(self.total).unwrap_or(width);
        let eta = if self.timed.is_empty() {
            "ETA --".to_string()
        } else {
            let mean = self.timed.iter().sum::<f64>() / self.timed.len() as f64;
            format!(
                "ETA {}",
                fmt_eta(Duration::from_secs_f64(mean * (self.total - done) as f64))
            )
        };
        let line = format!(
            "[{}{}] {done}/{} {eta} | {current}",
            "#".repeat(filled),
            "-".repeat(width - filled),
            self.total
        );
        let mut err = std::io::stderr().lock();
        if self.tty {
            let cols = terminal_columns();
            let line: String = line.chars().take(cols.saturating_sub(1)).collect();
            let _ = write!(err, "\r\x1b[K{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }

    fn note(&self, text: &str) {
        if !self.enabled {
            return;
        }
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r\x1b[K");
        }
        let _ = writeln!(err, "{text}");
    }

    fn finish(&self) {
        if self.enabled && self.tty {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
        }
    }
}

fn terminal_columns() -> usize {
    // SAFETY: TIOCGWINSZ fills a winsize; stderr is a terminal here.
    unsafe {
        let mut ws: libc::winsize = std::mem::zeroed();
        if libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut ws) == 0 && ws.ws_col > 0 {
            return ws.ws_col as usize;
        }
    }
    100
}

/// The plan run to continue, checked against the plan's cells.
fn resume_group(store: &Store, plan: &Plan, how: Resume, cells: &[Planned]) -> Result<i64> {
    let group = match how {
        Resume::Group(g) => {
            let rec = store.group(g)?;
            if rec.kind != "plan" {
                return Err(UsageError(format!(
                    "group {g} is a {} group, not a plan run: `audiolat runs` shows groups",
                    rec.kind
                ))
                .into());
            }
            rec
        }
        Resume::Latest => store
            .list_groups(Some("plan"))?
            .into_iter()
            .find(|g| g.detail["name"] == json!(plan.name) && g.status != RunStatus::Complete)
            .ok_or_else(|| {
                UsageError(format!(
                    "no unfinished plan run of `{}` in this database: run it without --resume",
                    plan.name
                ))
            })?,
    };
    if group.detail["name"] != json!(plan.name) {
        return Err(UsageError(format!(
            "group {} is the plan run of `{}`, not `{}`",
            group.id,
            group.detail["name"].as_str().unwrap_or("?"),
            plan.name
        ))
        .into());
    }
    let stored = store.plan_cells(group.id)?;
    let stored_map: BTreeMap<&str, &PlanCell> =
        stored.iter().map(|c| (c.key.as_str(), c)).collect();
    for p in cells {
        match stored_map.get(p.cell.key.as_str()) {
            Some(s) if s.argv == p.cell.argv && s.profile == p.cell.profile => {}
            Some(_) => {
                return Err(UsageError(format!(
                    "the plan changed since plan run {}: cell {} now runs different settings; run the plan anew (without --resume)",
                    group.id, p.cell.key
                ))
                .into())
            }
            None => {
                return Err(UsageError(format!(
                    "the plan changed since plan run {}: cell {} is new; run the plan anew (without --resume)",
                    group.id, p.cell.key
                ))
                .into())
            }
        }
    }
    if stored.len() != cells.len() {
        return Err(UsageError(format!(
            "the plan changed since plan run {}: it had {} cells, now {}; run the plan anew (without --resume)",
            group.id,
            stored.len(),
            cells.len()
        ))
        .into());
    }
    Ok(group.id)
}

/// What happened to one cell.
struct CellOutcome {
    status: RunStatus,
    error: Option<String>,
}

/// Runs one cell's process to its end (SIGINT to it when the plan is stopped).
fn run_cell(
    ctx: &Context,
    store: &Store,
    group: i64,
    stored: &PlanCell,
    binary: &Path,
    args: &[String],
    progress: &mut Progress,
) -> Result<CellOutcome> {
    store.start_plan_cell(stored.id)?;
    let log = std::env::temp_dir().join(format!(
        "audiolat-plan-{group}-cell-{}-{}.log",
        stored.id,
        std::process::id()
    ));
    let log_file = std::fs::File::create(&log)
        .with_context(|| format!("creating the cell's log {}", log.display()))?;
    let mut cmd = Process::new(binary);
    cmd.arg("--db")
        .arg(&ctx.db_path)
        .args(args)
        .env(PLAN_CELL_ENV, format!("{group}:{}", stored.id))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file)
        // Its own process group: a terminal's Ctrl-C reaches the runner only, which
        // passes a SIGINT on (and a second one when the runner got two, to hasten the
        // cell's stop; the cell keeps what it measured either way).
        .process_group(0);
    // If the runner dies, the cell is told to stop.
    // SAFETY: only async-signal-safe calls (prctl, getppid) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
            if libc::getppid() == 1 {
                return Err(std::io::Error::other("the plan runner already exited"));
            }
            Ok(())
        });
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let _ = std::fs::remove_file(&log);
            let error = format!("cannot start {}: {e}", binary.display());
            store.closing(|| store.finish_plan_cell(stored.id, RunStatus::Failed, Some(&error)))?;
            return Ok(CellOutcome {
                status: RunStatus::Failed,
                error: Some(error),
            });
        }
    };
    let started = Instant::now();
    let mut signalled = false;
    let mut hurried = false;
    let mut last_shown = Instant::now();
    let exit = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if ctx.stopped() && !signalled {
            // SAFETY: signalling our own child by its pid.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            signalled = true;
        }
        if signalled && !hurried && load::hurried() {
            // SAFETY: as above.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            hurried = true;
        }
        // A terminal's line is redrawn every second; a log gets one line per cell.
        if progress.tty && last_shown.elapsed() >= Duration::from_secs(1) {
            progress.show(&format!(
                "{} ({:.0} s)",
                stored.key,
                started.elapsed().as_secs_f64()
            ));
            last_shown = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    let cell = store
        .plan_cells(group)?
        .into_iter()
        .find(|c| c.id == stored.id)
        .expect("the cell is stored");
    // The run this attempt made (a new attempt starts with none).
    let run = match cell.run_id {
        Some(id) => Some(store.run(id)?),
        None => None,
    };
    let last_error = stderr
        .lines()
        .rev()
        .find(|l| l.contains("error"))
        .or_else(|| stderr.lines().rev().find(|l| !l.trim().is_empty()))
        .map(|l| l.trim().to_string());
    let outcome = match run {
        Some(r) if r.status == RunStatus::Running => {
            // The process ended without closing its run: stopped (we signalled it) or
            // it crashed. What the run stored is kept.
            let (status, why) = if signalled {
                (
                    RunStatus::Interrupted,
                    format!("the plan was stopped and the cell's process ended ({exit})"),
                )
            } else {
                (
                    RunStatus::Failed,
                    format!(
                        "the cell's process ended ({exit}) without closing its run{}",
                        last_error
                            .as_ref()
                            .map(|e| format!(": {e}"))
                            .unwrap_or_default()
                    ),
                )
            };
            store.closing(|| store.close_abandoned_run(r.id, status, &why))?;
            CellOutcome {
                status,
                error: Some(why),
            }
        }
        Some(r) => CellOutcome {
            status: r.status,
            error: r.error.or(if exit.success() { None } else { last_error }),
        },
        None => CellOutcome {
            status: if signalled {
                RunStatus::Interrupted
            } else {
                RunStatus::Failed
            },
            error: Some(
                last_error
                    .unwrap_or_else(|| format!("the cell's process ended ({exit}) without a run")),
            ),
        },
    };
    store
        .closing(|| store.finish_plan_cell(stored.id, outcome.status, outcome.error.as_deref()))?;
    progress.timed.push(started.elapsed().as_secs_f64());
    Ok(outcome)
}

/// `audiolat run` / `audiolat reproduce`: check, order, run, summarise, report.
pub fn run(ctx: &Context, plan: &Plan, opts: &PlanRunArgs) -> Result<ExitCode> {
    let quiet = opts.quiet || opts.json;
    // Each cell is checked as a command line before any runs; thousands take seconds.
    let cells = plan
        .axes
        .iter()
        .fold(u64::from(plan.repeats), |n, a| n * a.values.len() as u64);
    if cells >= 1000 && !quiet {
        eprintln!("audiolat run: checking the plan's {cells} cells...");
    }
    let Some(planned) = order(plan, &|| ctx.stopped())? else {
        eprintln!("audiolat run: interrupted while checking the plan's cells: nothing was run");
        return Ok(ExitCode::from(130));
    };
    if opts.dry_run {
        print!("{}", dry_run_text(plan, &planned));
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(p) = &opts.report {
        crate::check_output_path(p, "--report")?;
    }
    let store = ctx.open_store()?;
    let group = match opts.resume {
        Some(how) => {
            let g = resume_group(&store, plan, how, &planned)?;
            let mut detail = store.group(g)?.detail;
            if let Some(pid) = detail["runner_pid"].as_i64() {
                // SAFETY: signal 0 only checks that the process exists.
                let alive = pid > 0
                    && pid != std::process::id() as i64
                    && unsafe { libc::kill(pid as i32, 0) } == 0;
                if alive {
                    return Err(UsageError(format!(
                        "plan run {g} is being run by process {pid}: wait for it, or stop it (Ctrl-C) and resume"
                    ))
                    .into());
                }
            }
            detail["runner_pid"] = json!(std::process::id());
            detail["runner_host"] = json!(results::store::hostname());
            store.set_group_detail(g, &detail)?;
            store.reopen_group(g)?;
            g
        }
        None => {
            let mut detail = plan.to_json();
            detail["cells"] = json!(planned.len());
            detail["runner_pid"] = json!(std::process::id());
            // With the pid, how the next open knows the plan run was left by a dead process.
            detail["runner_host"] = json!(results::store::hostname());
            store.create_group("plan", &ctx.command_line, &detail)?
        }
    };
    let new_cells: Vec<NewPlanCell> = planned
        .iter()
        .enumerate()
        .map(|(i, p)| NewPlanCell {
            seq: i as i64,
            key: p.cell.key.clone(),
            axes: p.cell.axes_json(),
            argv: p.cell.argv.clone(),
            profile: p.cell.profile.clone(),
        })
        .collect();
    store.add_plan_cells(group, &new_cells)?;
    // The machine as the plan found it, for the report (each start of a resumed plan
    // run adds one: the machine may have changed in between).
    let doctor = probes::doctor::run(Duration::from_secs(1));
    crate::runner::doctor_run(ctx, &store, Some(group), &doctor)?;
    let stored = store.plan_cells(group)?;
    // Each stored cell with its planned cell (same key), in run order.
    let by_key: BTreeMap<&str, usize> = planned
        .iter()
        .enumerate()
        .map(|(i, p)| (p.cell.key.as_str(), i))
        .collect();
    let to_run: Vec<(usize, &PlanCell)> = stored
        .iter()
        .filter(|c| c.status != Some(RunStatus::Complete))
        .map(|c| {
            let i = by_key
                .get(c.key.as_str())
                .copied()
                .ok_or_else(|| anyhow::anyhow!("plan cell {} is not in the plan", c.key))?;
            Ok((i, c))
        })
        .collect::<Result<_>>()?;
    let already = stored.len() - to_run.len();
    if !quiet {
        let servers = {
            let mut s: Vec<ServerKey> = planned.iter().filter_map(|p| p.server).collect();
            s.dedup();
            s.len()
        };
        eprintln!(
            "audiolat run: plan `{}` ({}), plan run {group}: {} cells{}{}",
            plan.name,
            plan.source,
            stored.len(),
            if already > 0 {
                format!(
                    ", {already} already stored complete, {} to run",
                    to_run.len()
                )
            } else {
                String::new()
            },
            if servers > 0 {
                format!(", {servers} private JACK server settings")
            } else {
                String::new()
            }
        );
    }
    // Binaries first: a build that fails fails before any cell runs.
    let mut binaries: BTreeMap<String, PathBuf> = BTreeMap::new();
    for (_, c) in &to_run {
        if !binaries.contains_key(&c.profile) {
            let b = match binary_for(&c.profile, quiet) {
                Ok(b) => b,
                Err(_) if ctx.stopped() => {
                    store.closing(|| store.finish_group(group, RunStatus::Interrupted))?;
                    eprintln!("audiolat run: stopped while building the `{}` binary; plan run {group} kept, --resume {group} continues it", c.profile);
                    return Ok(ExitCode::from(130));
                }
                Err(e) => {
                    store.closing(|| store.finish_group(group, RunStatus::Failed))?;
                    return Err(e);
                }
            };
            binaries.insert(c.profile.clone(), b);
        }
    }
    let quiet_flag = takes_quiet(&plan.probe);
    let mut server: Option<(ServerKey, JackServer)> = None;
    let mut progress = Progress {
        enabled: !quiet,
        tty: std::io::stderr().is_terminal(),
        total: stored.len(),
        done: already,
        started: Instant::now(),
        timed: Vec::new(),
    };
    let mut failed = 0usize;
    let mut plan_error: Option<String> = None;
    for (index, cell) in &to_run {
        if ctx.stopped() {
            break;
        }
        let want = planned[*index].server;
        // One private server per setting: restart only when the setting changes (or the
        // server died).
        let dead = match server.as_mut() {
            Some((_, s)) => s.exited().is_some(),
            None => false,
        };
        if server.as_ref().map(|(k, _)| Some(*k)) != Some(want) || dead {
            if let Some((_, mut s)) = server.take() {
                s.stop();
            }
            if let Some((rate, period)) = want {
                let req = engine::jack_server::ServerRequest {
                    mode: ServerMode::Dummy,
                    // A free private name (audiolat-dummy, -2, ...): jackd keeps a short
                    // registry of names, so names are reused, not made per plan run.
                    name: None,
                    rate_hz: Some(rate),
                    period_frames: Some(period),
                    jackd: load::find_in_path(load::JACKD.name),
                    start_timeout: Duration::from_secs(10),
                };
                match JackServer::connect(&req) {
                    Ok(s) => {
                        progress.note(&format!(
                            "audiolat run: JACK server `{}`: jackd -d dummy -r {rate} -p {period}",
                            s.name()
                        ));
                        server = Some(((rate, period), s));
                    }
                    Err(e) => {
                        plan_error = Some(format!(
                            "the plan's JACK server (rate {rate}, period {period}) did not start: {e}"
                        ));
                        break;
                    }
                }
            }
        }
        let args = child_args(
            &planned[*index].cell,
            server.as_ref().map(|(_, s)| s.name()),
            quiet_flag,
        );
        progress.show(&cell.key);
        let outcome = match run_cell(
            ctx,
            &store,
            group,
            cell,
            &binaries[&cell.profile],
            &args,
            &mut progress,
        ) {
            Ok(o) => o,
            Err(e) => {
                let _ = store.finish_plan_cell(cell.id, RunStatus::Failed, Some(&format!("{e:#}")));
                plan_error = Some(format!("running cell {}: {e:#}", cell.key));
                break;
            }
        };
        match outcome.status {
            RunStatus::Complete => progress.done += 1,
            RunStatus::Interrupted if ctx.stopped() => {}
            s => {
                failed += 1;
                progress.done += 1;
                progress.note(&format!(
                    "audiolat run: cell {} {s}: {} ({})",
                    cell.key,
                    outcome.error.as_deref().unwrap_or("no reason given"),
                    plan.location(&planned[*index].cell)
                ));
            }
        }
    }
    if let Some((_, mut s)) = server.take() {
        s.stop();
    }
    progress.finish();
    let cells = store.plan_cells(group)?;
    let complete = cells
        .iter()
        .filter(|c| c.status == Some(RunStatus::Complete))
        .count();
    let status = if complete == cells.len() {
        RunStatus::Complete
    } else if plan_error.is_some() {
        RunStatus::Failed
    } else if ctx.stopped() || cells.iter().any(|c| c.status.is_none()) {
        RunStatus::Interrupted
    } else {
        RunStatus::Failed
    };
    // Closing writes may use the reserve a full disk leaves (see Store::closing).
    store.closing(|| store.finish_group(group, status))?;
    let elapsed = progress.started.elapsed();
    let data = match crate::report_data::group(&store, group) {
        Ok(d) => Some(d),
        Err(e) => {
            eprintln!(
                "audiolat: warning: reading plan run {group} back for its tables and report: {e:#}"
            );
            None
        }
    };
    let report_path = match (&data, opts.no_report) {
        (Some(data), false) => {
            let path = opts.report.clone().unwrap_or_else(|| {
                crate::report_data::default_path(&ctx.db_path, &format!("plan-{group}"))
            });
            match std::fs::write(&path, report::html::render(data)) {
                Ok(()) => Some(path),
                Err(e) => {
                    eprintln!(
                        "audiolat: warning: the report was not written to {}: {e} (`audiolat report group:{group} -o PATH` writes it)",
                        path.display()
                    );
                    None
                }
            }
        }
        _ => None,
    };
    if opts.json {
        crate::print_json(&json!({
            "group_id": group,
            "plan": plan.name,
            "status": status,
            "cells": cells.len(),
            "complete": complete,
            "failed": failed,
            "elapsed_s": elapsed.as_secs_f64(),
            "report": report_path,
            "tables": data.as_ref().map(report::paper::tables_json),
        }))?;
    } else {
        if let Some(d) = &data {
            print!("{}", report::paper::tables_text(d));
        }
        println!(
            "\nplan run {group} ({}): {complete} of {} cells complete{} in {}; stored in {}",
            status,
            cells.len(),
            if failed > 0 {
                format!(", {failed} failed")
            } else {
                String::new()
            },
            fmt_eta(elapsed),
            ctx.db_path.display()
        );
        if let Some(p) = &report_path {
            println!("report: {}", p.display());
        }
        if status != RunStatus::Complete {
            println!(
                "continue it with: audiolat --db {} {} --resume {group}",
                ctx.db_path.display(),
                resume_hint(plan)
            );
        }
    }
    if let Some(e) = plan_error {
        eprintln!("audiolat: error: {e}");
        return Ok(ExitCode::from(1));
    }
    Ok(match status {
        RunStatus::Complete => ExitCode::SUCCESS,
        RunStatus::Interrupted => ExitCode::from(130),
        _ => ExitCode::from(1),
    })
}

fn resume_hint(plan: &Plan) -> String {
    match plan.source.strip_prefix("preset ") {
        Some(name) => format!(
            "reproduce {}{}",
            name.trim_end_matches(" --quick"),
            if name.ends_with(" --quick") {
                " --quick"
            } else {
                ""
            }
        ),
        None => format!("run {}", load::shell_quote(&plan.source)),
    }
}

fn dry_run_text(plan: &Plan, planned: &[Planned]) -> String {
    let mut out = format!(
        "plan `{}` ({}): {} cells of `audiolat {}`, in run order\n\n",
        plan.name,
        plan.source,
        planned.len(),
        plan.probe
    );
    let mut t = report::terminal::Table::new(&["#", "cell", "profile", "server", "command"])
        .left_align(&[1, 2, 3, 4]);
    for (i, p) in planned.iter().enumerate() {
        t.row(vec![
            (i + 1).to_string(),
            p.cell.key.clone(),
            p.cell.profile.clone(),
            p.server
                .map(|(r, per)| format!("dummy {r} Hz / {per}"))
                .unwrap_or_else(|| "-".into()),
            format!(
                "audiolat {}",
                p.cell
                    .argv
                    .iter()
                    .map(|a| load::shell_quote(a))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        ]);
    }
    out.push_str(&t.render());
    out.push_str("\nnothing was run (--dry-run)\n");
    out
}
