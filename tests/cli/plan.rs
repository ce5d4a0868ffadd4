//! Plans (`audiolat run`, `reproduce`): resumed after an interruption, refused when
//! malformed or oversized, presets, signals and SIGKILL while a plan runs.

use std::collections::BTreeMap;
use std::time::Duration;

use results::{RunFilter, RunStatus, Store};

use crate::util::{
    self, jackd_pids, machine_lock, poll_read_only, require_tool, run, spawn, temp_db, wait_timeout,
};

/// A plan over two backends and two periods, with repeats, on private dummy servers.
const RESUMABLE_PLAN: &str = r#"
name = "resumable"
probe = "event"
repeats = 2

[set]
triggers = 15
spacing = "40ms"
note = "10ms"
rate = 44100
server = "dummy"

[sweep]
period = [128, 64]
backend = ["alsa", "jack"]

[[report.table]]
title = "mean latency (ms)"
value = "event_latency.mean"
scale = 1e-6
rows = ["period"]
columns = ["backend"]
"#;

fn plan_cells(db: &std::path::Path, group: results::GroupId) -> Vec<results::PlanCell> {
    Store::open_existing(db).unwrap().plan_cells(group).unwrap()
}

/// Interrupted after some cells, the plan resumes and ends with every cell stored
/// exactly once: one complete run per cell, the interrupted cell run again, the cells
/// already complete not run again. One private server per period, in period order, and
/// no server left behind.
#[test]
fn a_plan_interrupted_mid_way_resumes_and_stores_every_cell_exactly_once() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let (dir, db) = temp_db("plan.db");
    let plan = dir.path().join("resumable.toml");
    std::fs::write(&plan, RESUMABLE_PLAN).unwrap();
    let mut child = spawn(&db, &["run", plan.to_str().unwrap()]);
    // Wait until three cells are complete, then Ctrl-C.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "cells did not complete"
        );
        std::thread::sleep(Duration::from_millis(100));
        let Ok(store) = Store::open_existing(&db) else {
            continue;
        };
        let Ok(cells) = store.plan_cells(results::GroupId(1)) else {
            continue;
        };
        let complete = cells
            .iter()
            .filter(|c| c.status == Some(RunStatus::Complete))
            .count();
        if complete >= 3 {
            break;
        }
    }
    // SAFETY: signalling our own child. A terminal's Ctrl-C reaches the runner alone
    // (each cell runs in its own process group), which passes it on to its cell.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_timeout(&mut child, Duration::from_secs(60));
    let mut stdout = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut stdout).unwrap();
    assert_eq!(status.code(), Some(130), "{stdout}");
    assert!(stdout.contains("--resume 1"), "{stdout}");
    let store = Store::open_existing(&db).unwrap();
    assert_eq!(
        store.group_status(results::GroupId(1)).unwrap().1,
        RunStatus::Interrupted
    );
    let before = plan_cells(&db, results::GroupId(1));
    assert_eq!(before.len(), 8);
    let complete_before: BTreeMap<String, results::RunId> = before
        .iter()
        .filter(|c| c.status == Some(RunStatus::Complete))
        .map(|c| (c.key.clone(), c.run_id.unwrap()))
        .collect();
    assert!(complete_before.len() >= 3 && complete_before.len() < 8);
    // The cell that was running when Ctrl-C came closed its run as interrupted, with what
    // it had measured (unless Ctrl-C came before it began one), and no run was left
    // `running`.
    for c in before
        .iter()
        .filter(|c| c.status == Some(RunStatus::Interrupted))
    {
        if let Some(id) = c.run_id {
            assert_eq!(
                store.run(id).unwrap().status,
                RunStatus::Interrupted,
                "{}",
                c.key
            );
        }
    }
    assert!(store
        .list_runs(&RunFilter {
            status: Some(RunStatus::Running),
            ..Default::default()
        })
        .unwrap()
        .is_empty());

    let out = run(&db, &["run", plan.to_str().unwrap(), "--resume", "--quiet"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("8 of 8 cells complete"),
        "{}",
        out.stdout
    );
    let after = plan_cells(&db, results::GroupId(1));
    assert_eq!(after.len(), 8, "no cell added");
    let keys: std::collections::BTreeSet<&str> = after.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(keys.len(), 8, "each cell once");
    for c in &after {
        assert_eq!(c.status, Some(RunStatus::Complete), "{}", c.key);
        let run = store.run(c.run_id.unwrap()).unwrap();
        assert_eq!(run.status, RunStatus::Complete, "{}", c.key);
        assert_eq!(run.group_id, Some(results::GroupId(1)));
        if let Some(id) = complete_before.get(&c.key) {
            // Complete cells were not run again.
            assert_eq!(c.run_id, Some(*id), "{}", c.key);
            assert_eq!(c.attempts, 1, "{}", c.key);
        }
    }
    let runs = store
        .list_runs(&RunFilter {
            group_id: Some(results::GroupId(1)),
            probe: Some("event".into()),
            ..Default::default()
        })
        .unwrap();
    let complete_runs = runs
        .iter()
        .filter(|r| r.status == RunStatus::Complete)
        .count();
    assert_eq!(complete_runs, 8, "one complete run per cell");
    // The cells ran on the plan's servers, one per period: 128 first (the plan's order).
    let mut periods = Vec::new();
    for c in &after {
        let r = store.run(c.run_id.unwrap()).unwrap();
        assert!(
            r.command_line
                .contains("--server external --server-name audiolat-dummy"),
            "{}",
            r.command_line
        );
        periods.push(r.config["period_frames"].as_u64().unwrap());
    }
    assert_eq!(periods, [128, 128, 128, 128, 64, 64, 64, 64]);
    assert!(jackd_pids("audiolat-dummy").is_empty(), "no server left");
    assert_eq!(
        store.group_status(results::GroupId(1)).unwrap().1,
        RunStatus::Complete
    );
    // The end of the plan printed its table and wrote its report.
    assert!(out.stdout.contains("mean latency (ms)"), "{}", out.stdout);
    // It ends with the answer: a verdict per run, the smallest buffer per backend, and
    // that the dummy server's clock is not a sound card's.
    let answer = &out.stdout[out.stdout.find("\nThe answer").expect("the answer")..];
    // (The same verdict of several runs is one line, naming its runs.)
    let runs_judged: usize = answer
        .lines()
        .filter(|l| {
            l.contains("-frame periods") && l.contains(" at 44.1 kHz ") && l.contains(" idle on ")
        })
        .map(|l| l.rsplit_once(" (run").unwrap().1.split(',').count())
        .sum();
    assert_eq!(runs_judged, 8, "{answer}");
    for backend in [
        "ALSA (jackd -d dummy), idle: ",
        "JACK (jackd -d dummy), idle: ",
    ] {
        assert!(answer.contains(backend), "{backend} in {answer}");
    }
    assert!(answer.contains("software clock (runs "), "{answer}");
    assert!(dir.path().join("plan-report-plan-1.html").is_file());
    // Resuming a finished plan has nothing to continue.
    let again = run(&db, &["run", plan.to_str().unwrap(), "--resume"]);
    assert_eq!(again.code, 2, "{}", again.stderr);
    assert!(
        again.stderr.contains("no unfinished plan run"),
        "{}",
        again.stderr
    );
}

/// Malformed plans are refused before anything runs (no database is made), on one line
/// naming the file, line and column, and the fix.
#[test]
fn a_malformed_plan_is_refused_with_its_file_line_and_fix_before_anything_runs() {
    let (dir, db) = temp_db("never.db");
    let cases: [(&str, &str, &str, &str); 6] = [
        (
            "name = \"x\"\nprobe = \"event\"\n[sweep]\nbakend = [\"alsa\"]\n",
            ":4:1:",
            "`bakend` is not a flag of `audiolat event`",
            "did you mean `backend`",
        ),
        (
            "name = \"x\"\nprobe = \"event\"\nrepeats = \"3\"\n",
            ":3:11:",
            "`repeats` must be a whole number",
            "repeats = 5",
        ),
        (
            "name = \"x\"\nprobe = \"event\"\n[sweep]\nperiod = []\n",
            ":4:10:",
            "axis `period` is empty",
            "at least one value",
        ),
        (
            "name = \"x\"\nprobe = \"event\"\n[set]\nserver = \"dummy\"\n[sweep]\nbackend = [\"alsa\", \"jack\"]\nbuffer = [\n  { label = \"2\", periods = 2 },\n  { label = \"4\", periods = 4 },\n]\n",
            ":9:3:",
            "cell backend=jack buffer=4 repeat=1 cannot run: --periods sets an ALSA or virtual buffer",
            "[[exclude]]",
        ),
        (
            "name = \"x\"\nprobe = \"event\"\n[set]\nserver = \"dummy\"\n[sweep]\nperiod = [64, 100]\n",
            ":6:15:",
            "cell period=100 repeat=1 cannot run",
            "[[exclude]]",
        ),
        (
            "name = \"x\"\nprobe = \"event\"\n[set]\nload = \"top,none\"\n",
            ":4:8:",
            "would make 2 runs",
            "",
        ),
    ];
    for (i, (text, at, what, fix)) in cases.iter().enumerate() {
        let plan = dir.path().join(format!("bad{i}.toml"));
        std::fs::write(&plan, text).unwrap();
        let out = run(&db, &["run", plan.to_str().unwrap()]);
        assert_eq!(out.code, 2, "{text}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        let expected = format!("{}{at}", plan.display());
        assert!(
            out.stderr.contains(&expected),
            "{expected} in {}",
            out.stderr
        );
        assert!(out.stderr.contains(what), "{what} in {}", out.stderr);
        assert!(out.stderr.contains("; fix: "), "{}", out.stderr);
        assert!(out.stderr.contains(fix), "{fix} in {}", out.stderr);
        assert!(!db.exists(), "nothing was stored for {text}");
    }
    let out = run(&db, &["run", "/nonexistent/plan.toml"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("cannot read plan"), "{}", out.stderr);
    let out = run(&db, &["reproduce", "bbb2015"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("bbb2014"), "{}", out.stderr);
    assert!(!db.exists());
}

/// The presets print as plans that run as files, and the BeagleBone preset has the
/// study's matrix: both backends, the buffer/period pairs, scenarios and O1-O3.
#[test]
fn the_bbb2014_preset_prints_as_a_plan_and_lays_out_the_studys_matrix() {
    require_tool("top", "procps");
    let (dir, db) = temp_db("p.db");
    let printed = run(&db, &["reproduce", "bbb2014", "--quick", "--print"]);
    assert_eq!(printed.code, 0, "{}", printed.stderr);
    assert!(printed.stdout.contains("[published.fig4]"));
    let file = dir.path().join("bbb.toml");
    std::fs::write(&file, &printed.stdout).unwrap();
    let from_file = run(&db, &["run", file.to_str().unwrap(), "--dry-run"]);
    let preset = run(&db, &["reproduce", "bbb2014", "--quick", "--dry-run"]);
    assert_eq!(from_file.code, 0, "{}", from_file.stderr);
    assert_eq!(preset.code, 0, "{}", preset.stderr);
    // The same cells whether run by name or from the printed file.
    let cells = |s: &str| {
        s.lines()
            .filter(|l| l.contains("backend="))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(cells(&from_file.stdout), cells(&preset.stdout));
    let all = cells(&preset.stdout);
    // 12 ALSA pairs and 3 JACK pairs (two periods per buffer) x 3 scenarios x 3 levels.
    assert_eq!(all.len(), (12 + 3) * 3 * 3, "{}", preset.stdout);
    for needle in [
        "backend=alsa buffer=512/64 profile=opt2 scenario=Mon+bgdproc.",
        "backend=jack buffer=512/256 profile=opt3 scenario=Polyphonic",
    ] {
        assert!(all.iter().any(|c| c.contains(needle)), "{needle}");
    }
    assert!(!all
        .iter()
        .any(|c| c.contains("/8 ") || c.contains("--period 8 ")));
    assert!(!db.exists(), "--dry-run and --print store nothing");
}

/// A plan's values pass the command line's own parsers (a number as the plan writes
/// it), and a plan over the size limits is refused from its axes' lengths, at once:
/// exit 2, one line with the count and the limit, nothing stored.
#[test]
fn plan_values_follow_the_cli_rules_and_oversized_plans_are_refused() {
    let (dir, db) = temp_db("p.db");
    let file = dir.path().join("p.toml");
    let values = |n: usize| (1..=n).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    for (body, needle) in [
        (
            "probe = \"jitter\"\n[set]\nduration = 1e9",
            "invalid value '1e9' for '--duration",
        ),
        (
            "probe = \"event\"\n[sweep]\nperiod = [64, 128.0]",
            "invalid value '128.0' for '--period",
        ),
        (
            "probe = \"event\"\n[set]\ntriggers = 0",
            "invalid value '0' for '--triggers",
        ),
        (
            "probe = \"event\"\n[set]\nspacing = \"1x\"",
            "invalid value '1x' for '--spacing",
        ),
        (
            &format!("probe = \"jitter\"\n[sweep]\nrate = [{}]", values(200_000)),
            "axis `rate` has 200000 values, more than the 1000",
        ),
        (
            &format!(
                "probe = \"jitter\"\n[sweep]\nrate = [{}]\npriority = [{}]\nfragments = [{}]",
                values(100),
                values(99),
                values(30)
            ),
            "the plan has 297000 cells",
        ),
    ] {
        std::fs::write(&file, format!("name = \"p\"\n{body}\n")).unwrap();
        let out = run(&db, &["run", file.to_str().unwrap(), "--dry-run"]);
        assert_eq!(out.code, 2, "{needle}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains(needle), "{needle}: {}", out.stderr);
        assert!(!db.exists());
    }
    // The same values on the command line: the same refusal.
    let out = run(&db, &["jitter", "--duration", "1e9"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("invalid value '1e9' for '--duration"));
    let out = run(&db, &["event", "--period", "128.0"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("invalid value '128.0' for '--period"));
}

/// A SIGTERM while a large plan's cells are being checked stops it there: exit 130,
/// nothing run or stored.
#[test]
fn a_signal_stops_a_plan_while_its_cells_are_checked() {
    let (dir, db) = temp_db("p.db");
    let file = dir.path().join("p.toml");
    let values = |n: usize| (1..=n).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    // 9,900 cells, under the limit: each is parsed and checked as a command line.
    std::fs::write(
        &file,
        format!(
            "name = \"p\"\nprobe = \"jitter\"\n[sweep]\nrate = [{}]\npriority = [{}]\n",
            values(100),
            values(99)
        ),
    )
    .unwrap();
    let mut child = spawn(&db, &["run", file.to_str().unwrap(), "--dry-run"]);
    // Once it says it is checking, it is held still while the signal is sent, so the
    // signal lands among the cells however fast this machine checks them.
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut stderr = String::new();
    std::io::BufRead::read_line(&mut err, &mut stderr).unwrap();
    assert!(
        stderr.contains("checking the plan's 9900 cells"),
        "{stderr}"
    );
    let pid = child.id() as i32;
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(pid, libc::SIGSTOP);
        libc::kill(pid, libc::SIGTERM);
        libc::kill(pid, libc::SIGCONT);
    }
    let status = wait_timeout(&mut child, Duration::from_secs(60));
    std::io::Read::read_to_string(&mut err, &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("nothing was run"), "{stderr}");
    assert!(!db.exists());
}

#[test]
fn a_killed_plan_run_leaves_no_group_or_cell_running() {
    let _m = machine_lock();
    let (dir, db) = temp_db("plan.db");
    let plan = dir.path().join("killed.toml");
    std::fs::write(
        &plan,
        "name = \"killed\"\nprobe = \"jitter\"\n\n[set]\nduration = \"60s\"\n",
    )
    .unwrap();
    let mut child = util::KillOnDrop(spawn(&db, &["run", plan.to_str().unwrap(), "--quiet"]));
    poll_read_only(&db, "the cell did not start its run", |s| {
        s.plan_cells(results::GroupId(1))
            .is_ok_and(|c| c.first().is_some_and(|c| c.run_id.is_some()))
    });
    // SAFETY: killing the plan runner this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.0.wait();
    let cell_run = Store::open_read_only(&db)
        .unwrap()
        .plan_cells(results::GroupId(1))
        .unwrap()[0]
        .run_id
        .unwrap();
    // The cell's process goes with its runner: its run closed, or removed when the stop
    // came before it measured anything.
    poll_read_only(&db, "the cell's process outlived its runner", |s| {
        match s.run(cell_run) {
            Ok(r) => {
                // SAFETY: signal 0 only checks that the process exists.
                let gone = unsafe { libc::kill(r.pid as i32, 0) } != 0;
                r.status != RunStatus::Running || gone
            }
            Err(e) => matches!(e, results::StoreError::NoSuchRun(_)),
        }
    });
    let out = run(&db, &["runs", "--groups", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let store = Store::open_read_only(&db).unwrap();
    let group = store.group(results::GroupId(1)).unwrap();
    assert_eq!(group.status, RunStatus::Interrupted);
    assert!(group.detail["end_reason"]
        .as_str()
        .unwrap()
        .contains("ended without closing"));
    let cell = &store.plan_cells(results::GroupId(1)).unwrap()[0];
    assert_eq!(cell.status, Some(RunStatus::Interrupted), "{cell:?}");
    assert!(cell.error.is_some());
    if let Ok(r) = store.run(cell_run) {
        assert_ne!(r.status, RunStatus::Running);
    }
}

/// `audiolat run PLAN | head -1`, as a user types it: the summary on standard output
/// goes to `head`, which reads its first line and exits, while the progress on standard
/// error (a file here, as `2> log`) goes on. A closed standard output is no progress
/// pipe: every cell runs to its end, the plan run is stored complete, no run is left
/// `running` and no cell log is left; the runner ends without a panic or a death by
/// SIGPIPE: exit 0, or 1 with one line when the rest of the summary found the pipe
/// closed. With the pipe closed before the summary (`| true`), exit 1 and that line.
#[test]
fn a_plan_piped_into_head_runs_to_its_end() {
    use std::io::BufRead;
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::process::ExitStatusExt;
    let _m = machine_lock();
    for reader_reads_a_line in [true, false] {
        let (dir, db) = temp_db("head.db");
        let plan = dir.path().join("p.toml");
        std::fs::write(
            &plan,
            "name = \"head\"\nprobe = \"jitter\"\n\n[set]\nloops = 200\n\n[sweep]\ninterval = [\"1ms\", \"2ms\", \"3ms\", \"4ms\"]\n",
        )
        .unwrap();
        let log = dir.path().join("stderr.log");
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two descriptors, owned here from then on.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: both are fresh descriptors of this process.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let mut child = util::command(&db, &["run", plan.to_str().unwrap()])
            .stdout(std::process::Stdio::from(write))
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let pid = child.id();
        if reader_reads_a_line {
            let mut head = std::io::BufReader::new(std::fs::File::from(read));
            let mut first = String::new();
            head.read_line(&mut first).unwrap();
        } else {
            drop(read);
        }
        let status = wait_timeout(&mut child, Duration::from_secs(120));
        let stderr = std::fs::read_to_string(&log).unwrap();
        let what = format!("read a line first: {reader_reads_a_line}: {status:?}\n{stderr}");
        assert_eq!(status.signal(), None, "{what}");
        assert!(stderr.contains("plan run 1: 4 cells"), "{what}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
        match status.code() {
            Some(0) if reader_reads_a_line => assert!(errors.is_empty(), "{what}"),
            Some(1) => assert_eq!(
                errors,
                ["audiolat: error: cannot write to standard output: Broken pipe (os error 32)"],
                "{what}"
            ),
            _ => panic!("{what}"),
        }
        let store = Store::open_read_only(&db).unwrap();
        let (_, group_status) = store.group_status(results::GroupId(1)).unwrap();
        assert_eq!(group_status, RunStatus::Complete, "{what}");
        let cells = store.plan_cells(results::GroupId(1)).unwrap();
        assert_eq!(cells.len(), 4);
        assert!(
            cells.iter().all(|c| c.status == Some(RunStatus::Complete)),
            "{cells:?}"
        );
        assert!(store
            .list_runs(&RunFilter {
                status: Some(RunStatus::Running),
                ..Default::default()
            })
            .unwrap()
            .is_empty());
        let logs: Vec<_> = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("audiolat-plan-{pid}-"))
            })
            .map(|e| e.path())
            .collect();
        assert!(logs.is_empty(), "cell logs left: {logs:?}");
    }
}
