//! Hang-ups, Ctrl-C, Ctrl-\ and `kill` at each phase of a command's life: before the
//! database opens, while a private server (jackd, PipeWire) starts, while the user's
//! PipeWire has its quantum forced, while the load starts, while the namespaces and
//! cells are made, between a network run's phases, while a run is stored, and between
//! the runs of a sweep, a plan, the suite and an experiment. Each phase is reached
//! without timing guesses: the binary's test hold (`engine::phase`, armed by
//! `AUDIOLAT_TEST_HOLD`) writes the phase to a file and waits there for the stop.
//!
//! Whatever the phase, the machine is left as it was (no process of the command left,
//! no cpuset, namespace, state file or temporary file, load balancing and the user's
//! PipeWire quantum as before) and the database holds what was measured: nothing at all
//! (no run, no group, and the command says so) when nothing was measured yet; every run
//! complete (exit 0) when the stop came while the last run was stored, which it stopped
//! nothing of; otherwise no run or group left `running`, and every run kept
//! `interrupted` with something it measured (exit 130). (Stops mid-measurement are
//! `hangups.rs`', `signals.rs`' and `cells.rs`'.)

use std::ffi::OsStr;
use std::path::Path;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use results::{RunFilter, RunStatus, Store};

use crate::util::{
    machine_lock, not_root, require_pipewire, require_tool, temp_db, tempdir, unique_server,
    DummyJackd, OnTerminal,
};

/// How the stop reaches the command, as a user sends it.
#[derive(Clone, Copy, Debug)]
enum Stop {
    /// The terminal closed (a window closed, an ssh session dropped): SIGHUP to its
    /// process group, every write to the terminal failing from then on.
    HangUp,
    /// Ctrl-C typed on the terminal.
    CtrlC,
    /// Ctrl-\ typed on the terminal (SIGQUIT).
    Quit,
    /// `kill PID` (SIGTERM) from elsewhere.
    Term,
}

/// What the command keeps once stopped at its phase.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kept {
    /// Nothing was measured: no run and no group stored, exit 130, and it says so.
    Nothing,
    /// The stop came while its last run was stored, and stopped nothing: every run
    /// complete, exit 0.
    All,
    /// Stopped part way, exit 130: at least `complete` runs complete, the others
    /// `interrupted` with what they measured, no run or group left `running`.
    Part { complete: usize },
}

/// One stop: the command's arguments, the phase it is held at (`PHASE` or `PHASE#N`),
/// how it is stopped and what it must keep.
struct Case<'a> {
    args: &'a [&'a str],
    phase: &'a str,
    stop: Stop,
    kept: Kept,
}

/// What the machine holds that a command could leave behind.
#[derive(Debug)]
struct Machine {
    leftovers: probes::leftovers::Leftovers,
    load_balance: Option<String>,
}

impl Machine {
    fn now() -> Machine {
        Machine {
            leftovers: probes::leftovers::find(),
            load_balance: std::fs::read_to_string(
                "/sys/fs/cgroup/cpuset/cpuset.sched_load_balance",
            )
            .ok(),
        }
    }

    /// What is here now and was not `before`, in words (empty: nothing).
    fn added_since(&self, before: &Machine) -> Vec<String> {
        let (now, was) = (&self.leftovers, &before.leftovers);
        let mut added: Vec<String> = now
            .by_pid
            .iter()
            .filter(|(pid, _)| !was.by_pid.contains_key(pid))
            .map(|(pid, items)| format!("audiolat {pid} left {items:?}"))
            .collect();
        added.extend(
            now.temporary
                .iter()
                .filter(|t| !was.temporary.contains(t))
                .map(|t| t.describe()),
        );
        added.extend(
            now.jack_files
                .iter()
                .filter(|f| !was.jack_files.contains(f))
                .map(|f| f.display().to_string()),
        );
        if self.load_balance != before.load_balance {
            added.push(format!(
                "the root cpuset's load balancing {:?}, {:?} before",
                self.load_balance, before.load_balance
            ));
        }
        added
    }
}

/// The processes whose environment holds `var=value`: every process the command
/// started inherits its hold file's variable (a zombie's environment reads empty).
fn processes_with(var: &str, value: &OsStr) -> Vec<u32> {
    let mut needle = format!("{var}=").into_bytes();
    needle.extend_from_slice(value.as_encoded_bytes());
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .filter(|pid| {
                    std::fs::read(format!("/proc/{pid}/environ"))
                        .unwrap_or_default()
                        .split(|b| *b == 0)
                        .any(|v| v == needle.as_slice())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// How a held command ended.
struct Ended {
    status: ExitStatus,
    /// What it printed on its terminal (up to the hang-up, for one).
    printed: String,
}

/// Runs audiolat `args` (with `--db db` and `env`) on a terminal, held at `phase`, stops
/// it with `stop` there and waits for its end; checks that every process it started is
/// gone and that it left nothing on the machine.
fn stopped_at(db: &Path, args: &[&str], phase: &str, stop: Stop, env: &[(&str, &OsStr)]) -> Ended {
    let what = format!("{args:?} at {phase} ({stop:?})");
    let dir = tempdir();
    let hold_file = dir.path().join("held");
    let before = Machine::now();
    let mut env = env.to_vec();
    env.push((engine::phase::HOLD_ENV, OsStr::new(phase)));
    env.push((engine::phase::HOLD_FILE_ENV, hold_file.as_os_str()));
    let mut term = OnTerminal::spawn_with(db, args, &env);
    let name = phase.split('#').next().unwrap_or(phase);
    let started = Instant::now();
    loop {
        let held = std::fs::read_to_string(&hold_file).unwrap_or_default();
        if held.lines().any(|l| l.starts_with(&format!("{name} "))) {
            break;
        }
        if let Some(status) = term.try_wait() {
            panic!(
                "{what}: ended ({status}) before the phase\n{}",
                term.printed()
            );
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{what}: never reached its phase\n{}",
            term.printed()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut printed = String::new();
    match stop {
        Stop::HangUp => {
            printed = term.printed();
            term.hang_up();
        }
        Stop::CtrlC => term.type_keys(b"\x03"),
        Stop::Quit => term.type_keys(b"\x1c"),
        // SAFETY: signalling the audiolat this test started.
        Stop::Term => unsafe {
            libc::kill(term.id() as i32, libc::SIGTERM);
        },
    }
    let status = term.wait(Duration::from_secs(90));
    if !matches!(stop, Stop::HangUp) {
        // What it printed last, once the terminal's reader has it.
        std::thread::sleep(Duration::from_millis(200));
        printed = term.printed();
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let left = processes_with(engine::phase::HOLD_FILE_ENV, hold_file.as_os_str());
        if left.is_empty() {
            break;
        }
        let names: Vec<String> = left
            .iter()
            .map(|p| std::fs::read_to_string(format!("/proc/{p}/cmdline")).unwrap_or_default())
            .collect();
        assert!(
            Instant::now() < deadline,
            "{what}: processes left: {left:?} {names:?}\n{printed}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let added = Machine::now().added_since(&before);
    assert!(added.is_empty(), "{what}: left {added:?}\n{printed}");
    Ended { status, printed }
}

/// Checks that `db` holds what `kept` says, and the exit code that goes with it.
fn assert_kept(db: &Path, kept: Kept, ended: &Ended, what: &str) {
    let printed = &ended.printed;
    let (code, group) = match kept {
        Kept::Nothing => (130, None),
        Kept::All => (0, Some(RunStatus::Complete)),
        Kept::Part { .. } => (130, Some(RunStatus::Interrupted)),
    };
    assert_eq!(ended.status.code(), Some(code), "{what}: {printed}");
    if !db.exists() {
        assert_eq!(kept, Kept::Nothing, "{what}: no database\n{printed}");
        return;
    }
    let store = Store::open_read_only(db).unwrap();
    let runs = store.list_runs(&RunFilter::default()).unwrap();
    let groups = store.list_groups(None).unwrap();
    let complete = runs.iter().filter(|r| r.status == RunStatus::Complete);
    match kept {
        Kept::Nothing => assert!(
            runs.is_empty() && groups.is_empty(),
            "{what}: stored {runs:?} {groups:?}\n{printed}"
        ),
        Kept::All => assert!(
            !runs.is_empty() && complete.count() == runs.len(),
            "{what}: {runs:?}\n{printed}"
        ),
        Kept::Part { complete: n } => assert!(complete.count() >= n, "{what}: {runs:?}"),
    }
    for g in &groups {
        assert_eq!(Some(g.status), group, "{what}: {g:?}");
    }
    for r in runs.iter().filter(|r| r.status != RunStatus::Complete) {
        assert_eq!(r.status, RunStatus::Interrupted, "{what}: run {}", r.id);
        let measured = store
            .measurements(r.id)
            .unwrap()
            .iter()
            .any(|m| m.measurement.count() > 0)
            || !store.triggers(r.id).unwrap().is_empty();
        assert!(measured, "{what}: run {} kept with nothing measured", r.id);
    }
}

/// A command line's words.
fn words(line: &str) -> Vec<&str> {
    line.split(' ').collect()
}

/// A case: `args` held at `phase`, stopped by `stop`, keeping `kept`.
fn at<'a>(args: &'a [&'a str], phase: &'a str, stop: Stop, kept: Kept) -> Case<'a> {
    Case {
        args,
        phase,
        stop,
        kept,
    }
}

/// Each case on a database of its own.
fn each(cases: &[Case<'_>], env: &[(&str, &OsStr)]) {
    for case in cases {
        let (_dir, db) = temp_db("phase.db");
        let what = format!("{:?} at {} ({:?})", case.args, case.phase, case.stop);
        let started = Instant::now();
        let ended = stopped_at(&db, case.args, case.phase, case.stop, env);
        eprintln!("{what}: {:.1} s", started.elapsed().as_secs_f64());
        assert_kept(&db, case.kept, &ended, &what);
        if case.kept == Kept::Nothing && !matches!(case.stop, Stop::HangUp) {
            assert!(
                ended
                    .printed
                    .contains("interrupted before anything was measured: nothing was stored"),
                "{what}: {}",
                ended.printed
            );
        }
    }
}

#[test]
fn jitter_stopped_at_each_phase() {
    let _m = machine_lock();
    require_tool("stress-ng", "stress-ng");
    let args = &["jitter", "-D", "1", "--load", "cpu"];
    each(
        &[
            at(args, "store-open", Stop::HangUp, Kept::Nothing),
            at(args, "run-begun", Stop::CtrlC, Kept::Nothing),
            at(args, "load-started", Stop::HangUp, Kept::Nothing),
            at(args, "storing", Stop::HangUp, Kept::All),
        ],
        &[],
    );
}

#[test]
fn event_stopped_at_each_phase() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    require_tool("stress-ng", "stress-ng");
    let name = unique_server("phases-event");
    let one: &[&str] = &[
        "event",
        "--server",
        "dummy",
        "--server-name",
        &name,
        "--triggers",
        "10",
        "--load",
        "cpu",
    ];
    let twice = [one, &["--repeat", "2"]].concat();
    each(
        &[
            at(one, "server-start", Stop::HangUp, Kept::Nothing),
            at(one, "load-started", Stop::Quit, Kept::Nothing),
            at(one, "storing", Stop::HangUp, Kept::All),
            // Between the sweep's two runs.
            at(
                &twice,
                "run-start#2",
                Stop::HangUp,
                Kept::Part { complete: 1 },
            ),
        ],
        &[],
    );
}

#[test]
fn roundtrip_stopped_at_each_phase() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let name = unique_server("phases-rt");
    let args: &[&str] = &[
        "roundtrip",
        "--server",
        "dummy",
        "--server-name",
        &name,
        "--period",
        "128,256",
        "--duration",
        "1s",
    ];
    each(
        &[
            at(args, "server-start", Stop::CtrlC, Kept::Nothing),
            // The second period's server starting, the first period's run stored.
            at(
                args,
                "server-start#2",
                Stop::HangUp,
                Kept::Part { complete: 1 },
            ),
            // The sweep's last run stored: the stop kept nothing from running.
            at(args, "storing#2", Stop::Term, Kept::All),
        ],
        &[],
    );
}

#[test]
fn net_stopped_at_each_phase() {
    let _m = machine_lock();
    require_tool("stress-ng", "stress-ng");
    let args = &["net", "-D", "1s", "--warmup", "300ms", "--load", "cpu"];
    each(
        &[
            at(args, "load-started", Stop::CtrlC, Kept::Nothing),
            at(args, "netns", Stop::HangUp, Kept::Nothing),
            // The reference phase measured: kept, the synth phase never run.
            at(args, "net-synth", Stop::Term, Kept::Part { complete: 0 }),
            at(args, "storing", Stop::HangUp, Kept::All),
        ],
        &[],
    );
}

/// A net run with a dedicated cell, a best-effort cell, namespaces and a shaped link
/// (root): stopped once its cells are made (load balancing off, every task confined),
/// once its namespaces and qdisc are there, and while it is stored.
#[test]
fn a_celled_net_run_stopped_at_each_phase() {
    let _m = machine_lock();
    if not_root("cells and namespaces need root")
        || engine::rt::online_cpus().len() < 2
        || !Path::new("/sys/fs/cgroup/cpuset/cpuset.sched_load_balance").exists()
    {
        eprintln!("skipped: needs root, two CPUs and the cgroup v1 cpuset hierarchy");
        return;
    }
    require_tool("ip", "iproute2");
    require_tool("tc", "iproute2");
    let args = &words(concat!(
        "net --netns --cell music=dedicated:cpus=1 --cell others=best-effort --host-cell music",
        " --link 100 --reserve 20 --duration 1s --no-reference --warmup 300ms"
    ));
    each(
        &[
            at(args, "run-begun", Stop::HangUp, Kept::Nothing),
            at(args, "netns", Stop::Quit, Kept::Nothing),
            at(args, "storing", Stop::HangUp, Kept::All),
        ],
        &[],
    );
}

/// A plan's runner holds its terminal; its cells run in process groups of their own and
/// are held at their own phases (they inherit the hold), the runner passing the stop on.
#[test]
fn a_plan_stopped_at_each_phase() {
    let _m = machine_lock();
    require_tool("stress-ng", "stress-ng");
    require_tool("jackd", "jackd2");
    let dir = tempdir();
    let jitter = dir.path().join("jitter.toml");
    std::fs::write(
        &jitter,
        "name = \"j\"\nprobe = \"jitter\"\nrepeats = 2\n\n[set]\nduration = \"1s\"\nload = \"cpu\"\n",
    )
    .unwrap();
    let event = dir.path().join("event.toml");
    std::fs::write(
        &event,
        "name = \"e\"\nprobe = \"event\"\nrepeats = 2\n\n[set]\nserver = \"dummy\"\ntriggers = 5\n",
    )
    .unwrap();
    let jitter: &[&str] = &["run", jitter.to_str().unwrap()];
    let event: &[&str] = &["run", event.to_str().unwrap()];
    // A plan run is kept for `--resume` even when none of its cells measured.
    each(
        &[
            at(
                jitter,
                "plan-cell#2",
                Stop::HangUp,
                Kept::Part { complete: 1 },
            ),
            // The first cell's run, begun: removed, the cell not run.
            at(jitter, "run-begun", Stop::CtrlC, Kept::Part { complete: 0 }),
            at(jitter, "storing", Stop::Term, Kept::Part { complete: 1 }),
            // The plan's own private JACK server starting.
            at(
                event,
                "server-start",
                Stop::HangUp,
                Kept::Part { complete: 0 },
            ),
        ],
        &[],
    );
}

#[test]
fn the_suite_stopped_at_each_phase() {
    let _m = machine_lock();
    require_tool("stress-ng", "stress-ng");
    require_tool("jackd", "jackd2");
    let args = &["suite", "--each", "1s"];
    each(
        &[
            // The doctor and the idle jitter run stored, the next not begun.
            at(
                args,
                "run-start#2",
                Stop::HangUp,
                Kept::Part { complete: 2 },
            ),
            // Its JACK server starting, the jitter runs done.
            at(
                args,
                "server-start",
                Stop::CtrlC,
                Kept::Part { complete: 2 },
            ),
        ],
        &[],
    );
}

/// `net experiment isolation` (root, two CPUs): stopped before its first run measured,
/// between two runs, and once the dedicated cell of its third run is made.
#[test]
fn an_experiment_stopped_at_each_phase() {
    let _m = machine_lock();
    if not_root("the experiment's cells need root") || engine::rt::online_cpus().len() < 2 {
        eprintln!("skipped: needs root and two CPUs");
        return;
    }
    let args = &words("net experiment isolation --duration 1s --warmup 300ms");
    each(
        &[
            at(args, "netns", Stop::HangUp, Kept::Nothing),
            at(args, "run-start#2", Stop::Term, Kept::Part { complete: 1 }),
            at(
                args,
                "run-begun#3",
                Stop::HangUp,
                Kept::Part { complete: 2 },
            ),
        ],
        &[],
    );
}

/// The user's running PipeWire: stopped once its quantum is forced (restored, nothing
/// stored) and while the run is stored (restored, the run complete); a private PipeWire
/// stopped while it starts leaves none of its processes or its directory.
#[test]
fn pipewire_runs_stopped_at_each_phase() {
    require_pipewire();
    let _m = machine_lock();
    let desktop = crate::pipewire_running::DesktopPipewire::start();
    desktop.metadata(&["clock.force-quantum", "512"]);
    desktop.wait_for("512");
    let env = desktop.server().client_env();
    let env: Vec<(&str, &OsStr)> = env.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
    let args = &words("roundtrip --server auto --period 256 --duration 1s");
    for case in [
        at(args, "quantum-forced", Stop::HangUp, Kept::Nothing),
        at(args, "storing", Stop::CtrlC, Kept::All),
    ] {
        each(std::slice::from_ref(&case), &env);
        let phase = case.phase;
        assert_eq!(desktop.force_quantum(), "512", "after a stop at {phase}");
    }
    let (_dir, db) = temp_db("private.db");
    let args = &["event", "--server", "pipewire", "--triggers", "5"];
    let ended = stopped_at(&db, args, "server-start", Stop::HangUp, &[]);
    assert_kept(&db, Kept::Nothing, &ended, "a private PipeWire starting");
}

/// `audiolat loop` hung up while its client opens and while it runs: it ends as Ctrl-C
/// ends it (exit 0), its client gone from the server.
#[test]
fn the_loop_client_hung_up_at_each_phase() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    require_tool("jack_lsp", "jackd2");
    let jackd = DummyJackd::start("phases-loop", 48000, 256);
    let name = jackd.name().to_string();
    let (_dir, db) = temp_db("loop.db");
    let args = &["loop", "--server-name", &name];
    let ended = stopped_at(&db, args, "loop-start", Stop::HangUp, &[]);
    assert_eq!(ended.status.code(), Some(0), "{}", ended.printed);
    assert!(!loop_ports(&name), "the loop's ports are left");
    // Running: its line printed, its ports on the server.
    let mut term = OnTerminal::spawn(&db, args);
    let started = Instant::now();
    while !term.printed().contains("Ctrl-C ends") || !loop_ports(&name) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{}",
            term.printed()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    term.hang_up();
    let status = term.wait(Duration::from_secs(30));
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(!loop_ports(&name), "the loop's ports are left");
    assert!(!db.exists(), "a loop stores nothing");
}

/// Whether the server `name` has audiolat's loop client's ports.
fn loop_ports(name: &str) -> bool {
    let out = std::process::Command::new("jack_lsp")
        .args(["-s", name])
        .output()
        .expect("jack_lsp");
    String::from_utf8_lossy(&out.stdout).contains("audiolat-loop:")
}
