//! Where audiolat's output goes (issue 30's sweep): every command with what it prints
//! going to a full disk (`/dev/full`) and to a pipe nobody reads, and every file it
//! writes pointed at the results database itself. Never a panic (exit 101) or a death
//! by signal; the exit code the README's table gives (1: printing failed, 2: an output
//! path refused before anything ran, nothing stored); one error line; the database
//! whole, every run in it still readable. The commands come from `audiolat --help` and
//! their subcommands' help, so a new command fails here until it has its case; so does
//! a new option that takes a path, until it is said to be an output or an input.
//!
//! The one writer's own promises (the database by identity, its companion files, any
//! SQLite file, no temporary file left) are `results::output`'s unit tests; a full
//! filesystem is tested here on a small tmpfs.

use std::fs::File;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use results::{RunFilter, Store};

use crate::util::{self, machine_lock, require_tool, run, temp_db, wait_timeout, Tmpfs};

/// Where a standard stream goes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Sink {
    /// `/dev/full`: every write fails with ENOSPC.
    Full,
    /// A pipe whose reading end is closed: every write fails with EPIPE.
    ClosedPipe,
    /// A file the test reads afterwards.
    Kept,
}

/// What a command prints on standard output in its case's short run.
#[derive(Debug, Clone, Copy)]
enum Prints {
    /// Something: a stdout that cannot take it fails the command (exit 1).
    Yes,
    /// Maybe nothing: the command fails anyway, with this code (`loop` with no server,
    /// the ends of a net run with nobody at the other end), in one error line.
    Nothing(i32),
}

/// One command of the sweep.
struct Case {
    /// Its words (`["net", "respond"]`).
    command: &'static [&'static str],
    /// Its arguments for a short run; `{plan}` is a plan file of one short jitter cell,
    /// `{other}` a second database.
    args: &'static [&'static str],
    prints: Prints,
    /// Its options that name a file it writes: each is pointed at the database.
    outputs: &'static [&'static str],
    /// Its options that name a path it reads (or a directory for a load's files), and
    /// `--to`, the store `push` copies into (pointed at the database: nothing lost).
    inputs: &'static [&'static str],
    /// Runs for seconds (the suite, an experiment): its stdout is tried at a closed pipe
    /// only (the same writing path as `/dev/full`, which every other command tries).
    long: bool,
}

const CASES: &[Case] = &[
    Case {
        command: &["doctor"],
        args: &[],
        prints: Prints::Yes,
        outputs: &[],
        inputs: &[],
        long: false,
    },
    Case {
        command: &["devices"],
        args: &[],
        prints: Prints::Yes,
        outputs: &[],
        inputs: &[],
        long: false,
    },
    Case {
        command: &["jitter"],
        args: &["-D", "0.1s"],
        prints: Prints::Yes,
        outputs: &["--histfile"],
        inputs: &["--scratch-dir"],
        long: false,
    },
    Case {
        command: &["event"],
        args: &["--backend", "virtual", "-n", "3"],
        prints: Prints::Yes,
        outputs: &[],
        inputs: &["--scratch-dir"],
        long: false,
    },
    Case {
        command: &["roundtrip"],
        args: &["--backend", "virtual", "--duration", "0.3s"],
        prints: Prints::Yes,
        outputs: &[],
        inputs: &["--scratch-dir"],
        long: false,
    },
    // A loop client runs until Ctrl-C and prints nothing on stdout; with no server to
    // join it is refused at once.
    Case {
        command: &["loop"],
        args: &["--server-name", "audiolat-test-outputs-none"],
        prints: Prints::Nothing(2),
        outputs: &[],
        inputs: &[],
        long: false,
    },
    Case {
        command: &["bench"],
        args: &["--each", "5ms", "--repeat", "1"],
        prints: Prints::Yes,
        outputs: &[],
        inputs: &[],
        long: false,
    },
    Case {
        command: &["net"],
        args: &["-D", "0.2s", "--no-reference", "--warmup", "10ms"],
        prints: Prints::Yes,
        outputs: &[],
        inputs: &["--cells", "--scratch-dir"],
        long: false,
    },
    // With no controller, the host measures nothing and says so (exit 1, whatever it
    // prints); the controller, with no host, the same.
    Case {
        command: &["net", "respond"],
        args: &["-D", "0.3s", "--warmup", "10ms", "--bind", "127.0.0.1:0"],
        prints: Prints::Nothing(1),
        outputs: &[],
        inputs: &[],
        long: false,
    },
    Case {
        command: &["net", "emulate"],
        args: &["--host", "127.0.0.1:9", "-D", "0.2s", "--warmup", "10ms"],
        prints: Prints::Nothing(1),
        outputs: &[],
        inputs: &[],
        long: false,
    },
    Case {
        command: &["net", "experiment"],
        args: &["isolation", "-D", "0.2s", "--warmup", "10ms"],
        prints: Prints::Yes,
        outputs: &[],
        inputs: &["--scratch-dir"],
        long: true,
    },
    Case {
        command: &["suite"],
        args: &["--each", "1s"],
        prints: Prints::Yes,
        outputs: &[],
        inputs: &["--scratch-dir"],
        long: true,
    },
    Case {
        command: &["run"],
        args: &["{plan}"],
        prints: Prints::Yes,
        outputs: &["--report"],
        inputs: &[],
        long: false,
    },
    Case {
        command: &["reproduce"],
        args: &["latencytest1999", "--quick", "--dry-run"],
        prints: Prints::Yes,
        outputs: &["--report"],
        inputs: &[],
        long: false,
    },
    Case {
        command: &["report"],
        args: &["1"],
        prints: Prints::Yes,
        outputs: &["--output"],
        inputs: &[],
        long: false,
    },
    Case {
        command: &["compare"],
        args: &["1", "2", "--html"],
        prints: Prints::Yes,
        outputs: &["--output"],
        inputs: &[],
        long: false,
    },
    Case {
        command: &["runs"],
        args: &[],
        prints: Prints::Yes,
        outputs: &[],
        inputs: &[],
        long: false,
    },
    Case {
        command: &["show"],
        args: &["1"],
        prints: Prints::Yes,
        outputs: &[],
        inputs: &[],
        long: false,
    },
    Case {
        command: &["export"],
        args: &["1", "-f", "csv"],
        prints: Prints::Yes,
        outputs: &["--output"],
        inputs: &[],
        long: false,
    },
    Case {
        command: &["push"],
        args: &["--to", "{other}"],
        prints: Prints::Yes,
        outputs: &[],
        inputs: &["--to"],
        long: false,
    },
    Case {
        command: &["completions"],
        args: &["bash"],
        prints: Prints::Yes,
        outputs: &[],
        inputs: &[],
        long: false,
    },
    Case {
        command: &["man"],
        args: &[],
        prints: Prints::Yes,
        outputs: &["--dir"],
        inputs: &[],
        long: false,
    },
];

/// A plan of one short jitter cell.
const PLAN: &str = "name = \"outputs\"\nprobe = \"jitter\"\n\n[set]\nduration = \"0.1s\"\n";

/// The words of every command `audiolat --help` lists, with their subcommands' (`net
/// respond`), parents included.
fn listed_commands() -> Vec<Vec<String>> {
    fn below(words: &[String], all: &mut Vec<Vec<String>>) {
        let help = help_of(words);
        let mut in_commands = false;
        for line in help.lines() {
            if line.trim_end() == "Commands:" {
                in_commands = true;
                continue;
            }
            if in_commands && line.trim().is_empty() {
                break;
            }
            // A command's line has its name after two spaces; its description's
            // continuation lines are indented further.
            let Some(rest) = line.strip_prefix("  ") else {
                continue;
            };
            if !in_commands || rest.starts_with(' ') {
                continue;
            }
            let name = rest.split_whitespace().next().unwrap_or_default();
            if name == "help" {
                continue;
            }
            let mut sub = words.to_vec();
            sub.push(name.to_string());
            all.push(sub.clone());
            below(&sub, all);
        }
    }
    let mut all = Vec::new();
    below(&[], &mut all);
    all
}

/// `audiolat WORDS --help`.
fn help_of(words: &[String]) -> String {
    let out = Command::new(util::bin())
        .args(words)
        .arg("--help")
        .stdin(Stdio::null())
        .output()
        .expect("audiolat --help");
    assert!(out.status.success(), "{words:?} --help: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The long names of a command's options that take a path (their value is a PATH, a
/// FILE, a DIR, a URL or an OUTPUT), `--db` aside.
fn path_options(words: &[String]) -> Vec<String> {
    let mut names = Vec::new();
    for line in help_of(words).lines() {
        let line = line.trim_start();
        let line = match line.strip_prefix('-') {
            Some(short) if !short.starts_with('-') => {
                short.split_once(", ").map_or(line, |(_, long)| long)
            }
            _ => line,
        };
        let Some(rest) = line.strip_prefix("--") else {
            continue;
        };
        let Some((name, value)) = rest.split_once(" <") else {
            continue;
        };
        let value = value.split('>').next().unwrap_or_default();
        let takes_path = ["PATH", "FILE", "DIR", "URL", "OUTPUT"]
            .iter()
            .any(|k| value.split('|').any(|v| v == *k));
        if takes_path && name != "db" {
            names.push(format!("--{name}"));
        }
    }
    names
}

/// Every listed command has its case, and every option of it that takes a path is said
/// to be an output or an input: what the sweep below does not try is a failure here.
#[test]
fn every_command_and_every_path_option_has_its_case() {
    let listed = listed_commands();
    assert!(listed.len() >= 20, "{listed:?}");
    for words in &listed {
        let case = CASES
            .iter()
            .find(|c| c.command.iter().eq(words.iter()))
            .unwrap_or_else(|| {
                panic!(
                    "`audiolat {}` has no case in tests/cli/outputs.rs: add one (its short run, its output options)",
                    words.join(" ")
                )
            });
        for option in path_options(words) {
            assert!(
                case.outputs.contains(&option.as_str()) || case.inputs.contains(&option.as_str()),
                "`audiolat {} {option}` takes a path: say in its case whether it is an output (pointed at the database by the sweep) or an input",
                words.join(" ")
            );
        }
    }
    for case in CASES {
        assert!(
            listed.iter().any(|w| case.command.iter().eq(w.iter())),
            "{:?} is no longer a command",
            case.command
        );
    }
}

/// A finished command: its exit code (`None`: killed by a signal) and its stderr (when
/// kept).
#[derive(Debug)]
struct Ended {
    code: Option<i32>,
    stderr: String,
}

/// A stream's end for a child.
fn sink(s: Sink, kept: &Path) -> Stdio {
    match s {
        Sink::Full => Stdio::from(
            File::options()
                .write(true)
                .open("/dev/full")
                .expect("/dev/full"),
        ),
        Sink::ClosedPipe => {
            let mut fds = [0; 2];
            // SAFETY: pipe2 fills two descriptors, owned here from then on.
            assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
            // SAFETY: both are fresh descriptors of this process.
            let (read, write) =
                unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            drop(read);
            Stdio::from(write)
        }
        Sink::Kept => Stdio::from(File::create(kept).expect("a file for the stream")),
    }
}

/// Runs `audiolat --db DB WORDS ARGS EXTRA` with its streams at `stdout` and `stderr`.
fn run_to(
    db: &Path,
    words: &[&str],
    args: &[String],
    extra: &[&str],
    stdout: Sink,
    stderr: Sink,
) -> Ended {
    let dir = util::tempdir();
    let (out, err) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = Command::new(util::bin())
        .arg("--db")
        .arg(db)
        .args(words)
        .args(args)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(sink(stdout, &out))
        .stderr(sink(stderr, &err))
        .spawn()
        .expect("starting audiolat");
    let status = wait_timeout(&mut child, Duration::from_secs(120));
    Ended {
        code: status.code(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
    }
}

/// The runs of `db`, each read back whole (its record and its measurements): the
/// database is intact.
fn readable_runs(db: &Path, what: &str) -> usize {
    let store = Store::open_read_only(db).unwrap_or_else(|e| panic!("{what}: the database: {e}"));
    let runs = store
        .list_runs(&RunFilter::default())
        .unwrap_or_else(|e| panic!("{what}: listing runs: {e}"));
    for r in &runs {
        store
            .run(r.id)
            .and_then(|_| store.measurements(r.id))
            .unwrap_or_else(|e| panic!("{what}: run {}: {e}", r.id));
    }
    runs.len()
}

/// No panic, no death by signal, an exit code of the README's table.
fn assert_sane(what: &str, e: &Ended) {
    assert!(
        !e.stderr.contains("panicked"),
        "{what}: panicked: {}",
        e.stderr
    );
    let code = e
        .code
        .unwrap_or_else(|| panic!("{what}: killed by a signal: {}", e.stderr));
    assert!(
        [0, 1, 2, 3, 130].contains(&code),
        "{what}: exit {code}: {}",
        e.stderr
    );
}

/// Exactly one error line, saying `needle`.
fn assert_one_error(what: &str, e: &Ended, needle: &str) {
    let errors: Vec<&str> = e
        .stderr
        .lines()
        .filter(|l| l.starts_with("audiolat: error: "))
        .collect();
    assert_eq!(errors.len(), 1, "{what}: {}", e.stderr);
    assert!(errors[0].contains(needle), "{what}: {}", e.stderr);
}

/// The sweep: every command's stdout at `/dev/full` and at a closed pipe (exit 1 when
/// it prints; one line saying so), its stderr there too (never a panic: a message
/// nobody can read is lost, a progress line's closed pipe stops the run), and each of
/// its output files pointed at the database (exit 2, one line naming the option,
/// nothing stored). After each, every run of the database reads back whole.
#[test]
fn every_command_survives_a_full_or_closed_output_and_never_writes_over_its_database() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let (dir, db) = temp_db("outputs.db");
    let plan = dir.path().join("outputs.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let other = dir.path().join("other.db");
    // Runs 1 and 2 (jitter) and 3 (event) for the commands that read runs (stored
    // whatever a busy machine made of them).
    for args in [
        &["jitter", "-D", "0.1s"][..],
        &["jitter", "-D", "0.1s"],
        &["event", "--backend", "virtual", "-n", "3"],
    ] {
        let out = run(&db, args);
        assert!(out.code == 0 || out.code == 1, "{args:?}: {}", out.stderr);
    }
    let mut runs = readable_runs(&db, "filled");
    assert_eq!(runs, 3);
    for case in CASES {
        let args: Vec<String> = case
            .args
            .iter()
            .map(|a| match *a {
                "{plan}" => plan.display().to_string(),
                "{other}" => other.display().to_string(),
                a => a.to_string(),
            })
            .collect();
        let name = case.command.join(" ");
        // A long command's stdout at /dev/full and at a closed pipe; its stderr is
        // tried on the short ones.
        let streams: &[(Sink, Sink)] = if case.long {
            &[(Sink::Full, Sink::Kept), (Sink::ClosedPipe, Sink::Kept)]
        } else {
            &[
                (Sink::Full, Sink::Kept),
                (Sink::ClosedPipe, Sink::Kept),
                (Sink::Kept, Sink::Full),
                (Sink::Kept, Sink::ClosedPipe),
            ]
        };
        for &(stdout, stderr) in streams {
            let what = format!("audiolat {name} with stdout {stdout:?}, stderr {stderr:?}");
            let ended = run_to(&db, case.command, &args, &[], stdout, stderr);
            assert_sane(&what, &ended);
            if stderr == Sink::Kept {
                let expected = match case.prints {
                    Prints::Yes => 1,
                    Prints::Nothing(code) => code,
                };
                assert_eq!(ended.code, Some(expected), "{what}: {}", ended.stderr);
                match case.prints {
                    Prints::Yes => {
                        assert_one_error(&what, &ended, "cannot write to standard output")
                    }
                    Prints::Nothing(_) => assert_one_error(&what, &ended, ""),
                }
            }
            let now = readable_runs(&db, &what);
            assert!(
                now >= runs,
                "{what}: runs lost ({runs} before, {now} after)"
            );
            runs = now;
        }
        for option in case.outputs {
            let what = format!("audiolat {name} {option} DB");
            let db_arg = db.display().to_string();
            let ended = run_to(
                &db,
                case.command,
                &args,
                &[option, &db_arg],
                Sink::Kept,
                Sink::Kept,
            );
            assert_sane(&what, &ended);
            assert_eq!(ended.code, Some(2), "{what}: {}", ended.stderr);
            assert_one_error(&what, &ended, option);
            assert_eq!(
                readable_runs(&db, &what),
                runs,
                "{what}: something was stored"
            );
        }
    }
}

/// `export 1 -f csv -o X.db --db X.db`, `report 1 -o X.db`, `jitter --histfile X.db`: the
/// issue's commands, each refused in one line (exit 2) with nothing measured or stored,
/// and X.db still the database with its run. A plan whose cell writes its histogram into
/// the plan run's database is refused before any cell runs.
#[test]
fn an_output_path_that_is_the_database_is_refused_before_anything_runs() {
    let _m = machine_lock();
    let (dir, db) = temp_db("X.db");
    let out = run(&db, &["jitter", "-D", "0.1s"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let x = db.display().to_string();
    let plan = dir.path().join("h.toml");
    std::fs::write(
        &plan,
        format!(
            "name = \"h\"\nprobe = \"jitter\"\n\n[set]\nduration = \"0.1s\"\nhistfile = \"{x}\"\n"
        ),
    )
    .unwrap();
    let plan = plan.display().to_string();
    for (args, names) in [
        (&["export", "1", "-f", "csv", "-o", &x][..], "--output"),
        (&["report", "1", "-o", &x], "--output"),
        (&["jitter", "-D", "0.1s", "--histfile", &x], "--histfile"),
        (&["run", &plan], "histfile"),
    ] {
        let out = run(&db, args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.starts_with("audiolat: error: ")
                && out.stderr.contains(names)
                && out.stderr.contains("results database"),
            "{args:?}: {}",
            out.stderr
        );
        assert_eq!(readable_runs(&db, &format!("{args:?}")), 1);
    }
    let store = Store::open_read_only(&db).unwrap();
    assert!(
        store.list_groups(None).unwrap().is_empty(),
        "a plan run was opened"
    );
}

/// `jitter --histfile /dev/full`: the table printed, the run stored, then one line saying
/// the histogram could not be written (exit 1).
#[test]
fn a_histogram_file_that_cannot_be_written_costs_the_file_not_the_table() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("h.db");
    let out = run(&db, &["jitter", "-D", "0.1s", "--histfile", "/dev/full"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stdout.contains("wakeup_latency"), "{}", out.stdout);
    assert!(out.stdout.contains("stored as run 1"), "{}", out.stdout);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("run 1 is stored, but not its histogram")
            && out.stderr.contains("--histfile /dev/full")
            && out.stderr.contains("No space left on device"),
        "{}",
        out.stderr
    );
    assert_eq!(readable_runs(&db, "after /dev/full"), 1);
}

/// A filesystem that fills while an export or a report is written: exit 1 in one line,
/// no temporary file and no empty file left, and a file that was there keeps what it
/// held.
#[test]
fn a_full_filesystem_leaves_no_temporary_or_empty_file_behind() {
    let Some(fs) = Tmpfs::mount(256) else {
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    };
    let (_dir, db) = temp_db("full.db");
    let _m = machine_lock();
    let out = run(&db, &["jitter", "-D", "0.2s"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let kept = fs.path().join("kept.csv");
    std::fs::write(&kept, b"an older export\n").unwrap();
    fs.fill_leaving(0);
    for (args, file) in [
        (vec!["export", "1", "-f", "csv", "-o"], "new.csv"),
        (vec!["export", "1", "-f", "hdr", "-o"], "kept.csv"),
        (vec!["report", "1", "-o"], "report.html"),
    ] {
        let path = fs.path().join(file);
        let mut args: Vec<String> = args.into_iter().map(String::from).collect();
        args.push(path.display().to_string());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&db, &args);
        assert_eq!(out.code, 1, "{args:?}: {out:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("could not be written")
                && out.stderr.contains("No space left on device"),
            "{args:?}: {}",
            out.stderr
        );
        let mut names: Vec<String> = std::fs::read_dir(fs.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["filler", "kept.csv"], "{args:?}");
        assert_eq!(std::fs::read(&kept).unwrap(), b"an older export\n");
    }
    assert_eq!(readable_runs(&db, "after the full filesystem"), 1);
}

/// `audiolat run PLAN 2>&1 | head -1`: the pipe its progress goes to closes after the
/// first line. That is a stop, as Ctrl-C is: the plan run is kept `interrupted`
/// (`--resume` continues it) with no run left `running` and no cell's log left behind,
/// not a death by SIGPIPE.
#[test]
fn a_plan_whose_progress_pipe_closes_stops_and_keeps_its_run() {
    let _m = machine_lock();
    let (dir, db) = temp_db("pipe.db");
    let plan = dir.path().join("p.toml");
    std::fs::write(
        &plan,
        "name = \"pipe\"\nprobe = \"jitter\"\n\n[set]\nduration = \"1s\"\n\n[sweep]\ninterval = [\"1ms\", \"2ms\", \"3ms\", \"4ms\"]\n",
    )
    .unwrap();
    // `2>&1 | head -1`: stdout and stderr are one pipe, read for one line and closed.
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors, owned here from then on.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both are fresh descriptors of this process.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let mut child = Command::new(util::bin())
        .arg("--db")
        .arg(&db)
        .arg("run")
        .arg(&plan)
        .stdin(Stdio::null())
        .stdout(Stdio::from(write.try_clone().unwrap()))
        .stderr(Stdio::from(write))
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut reader = std::io::BufReader::new(File::from(read));
    let mut first = String::new();
    std::io::BufRead::read_line(&mut reader, &mut first).unwrap();
    assert!(first.contains("plan run 1"), "{first}");
    drop(reader);
    let status = wait_timeout(&mut child, Duration::from_secs(120));
    // Its summary could not be printed either: exit 1 (its line went to the same pipe).
    assert_eq!(status.code(), Some(1), "{status:?}");
    let store = Store::open_read_only(&db).unwrap();
    let (_, status) = store.group_status(results::GroupId(1)).unwrap();
    assert_eq!(status, results::RunStatus::Interrupted);
    let cells = store.plan_cells(results::GroupId(1)).unwrap();
    assert!(
        cells
            .iter()
            .any(|c| c.status != Some(results::RunStatus::Complete)),
        "every cell ran: {cells:?}"
    );
    assert!(store
        .list_runs(&RunFilter {
            status: Some(results::RunStatus::Running),
            ..Default::default()
        })
        .unwrap()
        .is_empty());
    assert!(
        plan_logs(pid).is_empty(),
        "cell logs left: {:?}",
        plan_logs(pid)
    );
}

/// The logs of the plan runner `pid`'s cells in the temporary directory.
fn plan_logs(pid: u32) -> Vec<PathBuf> {
    let suffix = format!("-{pid}.log");
    std::fs::read_dir(std::env::temp_dir())
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name().is_some_and(|n| {
                        let n = n.to_string_lossy();
                        n.starts_with("audiolat-plan-") && n.ends_with(&suffix)
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `audiolat runs >> X.db` (standard output appended to the database, or to any SQLite
/// file): refused before anything is written, exit 2 in one line, the database whole.
#[test]
fn standard_output_appended_to_the_database_is_refused() {
    let _m = machine_lock();
    let (dir, db) = temp_db("appended.db");
    let out = run(&db, &["event", "--backend", "virtual", "-n", "2"]);
    assert!(out.code == 0 || out.code == 1, "{}", out.stderr);
    let other = dir.path().join("other.db");
    let out = run(&other, &["event", "--backend", "virtual", "-n", "2"]);
    assert!(out.code == 0 || out.code == 1, "{}", out.stderr);
    for target in [&db, &other] {
        let before = std::fs::read(target).unwrap();
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(target)
            .unwrap();
        let ended = Command::new(util::bin())
            .arg("--db")
            .arg(&db)
            .args(["runs"])
            .stdin(Stdio::null())
            .stdout(file)
            .output()
            .expect("starting audiolat");
        let stderr = String::from_utf8_lossy(&ended.stderr);
        assert_eq!(
            ended.status.code(),
            Some(2),
            "{}: {stderr}",
            target.display()
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("audiolat: error: "), "{stderr}");
        assert_eq!(
            std::fs::read(target).unwrap(),
            before,
            "{} written",
            target.display()
        );
    }
    assert_eq!(readable_runs(&db, "appended"), 1);
}
