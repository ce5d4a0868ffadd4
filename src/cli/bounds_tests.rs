//! Every number a user types is bounded before anything is allocated, opened or stored:
//! each numeric flag of each command, walked from clap's own definitions (so a new flag
//! is covered as it is added), at its extremes. A value out of range is one line naming
//! the flag and what it takes, exit 2, and nothing stored; a plan's key (the flag's
//! name) is refused the same way. Only `0` and, where a flag takes them, negative
//! numbers may be accepted; nothing accepted is run here.

use std::any::TypeId;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, Parser};

use super::values::ListOf;
use super::{Cli, Command};

/// How a flag's values are written.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// A whole number (or a comma list of them).
    Whole,
    /// A number with a fraction.
    Float,
    /// A duration.
    Duration,
}

/// The kind of value a flag's parser makes, when it is a number; `None` otherwise.
fn kind_of(arg: &clap::Arg) -> Option<Kind> {
    let id = arg.get_value_parser().type_id();
    let is = |t: TypeId| id == t;
    let whole = [
        TypeId::of::<u8>(),
        TypeId::of::<u16>(),
        TypeId::of::<u32>(),
        TypeId::of::<u64>(),
        TypeId::of::<u128>(),
        TypeId::of::<usize>(),
        TypeId::of::<i8>(),
        TypeId::of::<i16>(),
        TypeId::of::<i32>(),
        TypeId::of::<i64>(),
        TypeId::of::<i128>(),
        TypeId::of::<isize>(),
        TypeId::of::<ListOf<u32>>(),
    ];
    if whole.into_iter().any(is) {
        Some(Kind::Whole)
    } else if is(TypeId::of::<f64>()) || is(TypeId::of::<f32>()) {
        Some(Kind::Float)
    } else if is(TypeId::of::<Duration>()) {
        Some(Kind::Duration)
    } else {
        None
    }
}

/// The extremes tried for a kind of value, each with whether it may be accepted (`0`, a
/// negative where `signed`): every other one must be refused.
fn extremes(kind: Kind, signed: bool) -> Vec<(&'static str, bool)> {
    let mut v = vec![
        ("0", true),
        ("-1", signed),
        ("4294967295", false),
        ("18446744073709551615", false),
        ("340282366920938463463374607431768211456", false),
    ];
    if kind != Kind::Whole {
        v.extend([
            ("1e300", false),
            ("-1e300", false),
            ("NaN", false),
            ("inf", false),
            ("-inf", false),
        ]);
    }
    v
}

/// Flags whose range includes negative numbers.
const SIGNED: &[&str] = &["cable-gain"];

/// What a command needs before `flag` (its positional arguments; the backend and the
/// policy the flag is for).
fn base(path: &[&str], flag: &str) -> Vec<String> {
    let extra: &[&str] = match (path, flag) {
        (["net", "experiment"], _) => &["isolation"],
        (["show"] | ["export"], _) => &["1"],
        (["__load"], _) => &["ep"],
        // The virtual card takes every audio flag (a buffer's periods, the cable).
        (["event"] | ["roundtrip"], _) => &["--backend=virtual"],
        (["jitter"], "dl-runtime" | "dl-deadline") => &["--policy=deadline"],
        _ => &[],
    };
    path.iter().chain(extra).map(|s| s.to_string()).collect()
}

/// A flag another one requires, with a value in its range.
fn companion(flag: &str) -> Option<&'static [&'static str]> {
    Some(match flag {
        "--frames" => &["--frames=32"],
        "--fragments" => &["--fragments=3"],
        "--link" => &["--link=1000"],
        "--html" => &["--html"],
        _ => return None,
    })
}

/// Every subcommand path with its numeric flags: (path, long flag, kind).
fn numeric_flags() -> Vec<(Vec<&'static str>, &'static str, Kind)> {
    fn walk(
        cmd: &'static clap::Command,
        path: Vec<&'static str>,
        out: &mut Vec<(Vec<&'static str>, &'static str, Kind)>,
    ) {
        for arg in cmd.get_arguments() {
            if let (Some(long), Some(kind)) = (arg.get_long(), kind_of(arg)) {
                out.push((path.clone(), long, kind));
            }
        }
        for sub in cmd.get_subcommands() {
            let mut p = path.clone();
            p.push(sub.get_name());
            walk(sub, p, out);
        }
    }
    let cmd: &'static clap::Command = Box::leak(Box::new(Cli::command()));
    let mut out = Vec::new();
    walk(cmd, Vec::new(), &mut out);
    out
}

/// The command line parsed, a flag another requires added with a value in its range.
fn parse(mut argv: Vec<String>) -> Result<Cli, clap::Error> {
    for _ in 0..3 {
        match Cli::try_parse_from(&argv) {
            Err(e) if e.kind() == ErrorKind::MissingRequiredArgument => {
                let missing: Vec<String> = match e.get(ContextKind::InvalidArg) {
                    Some(ContextValue::Strings(v)) => v.clone(),
                    _ => Vec::new(),
                };
                let added: Vec<&str> = missing
                    .iter()
                    .filter_map(|m| companion(m.split(' ').next().unwrap_or("")))
                    .flatten()
                    .copied()
                    .collect();
                if added.is_empty() {
                    return Err(e);
                }
                argv.extend(added.iter().map(|s| s.to_string()));
            }
            other => return other,
        }
    }
    Cli::try_parse_from(&argv)
}

/// Stage two of every command, as its code runs it before anything is opened.
fn stage_two(cli: &Cli, scratch: &Path) -> anyhow::Result<()> {
    use super::NetRole;
    match &cli.command {
        Command::Doctor(a) => a.checked_steal_window().map(|_| ())?,
        Command::Jitter(a) => a.request(scratch).map(|_| ())?,
        Command::Event(a) => a.request(scratch).map(|_| ())?,
        Command::Roundtrip(a) => a.request(scratch).map(|_| ())?,
        Command::Loop(a) => a.check()?,
        Command::Bench(a) => a.config().map(|_| ())?,
        Command::Net(a) => match &a.role {
            None => a.request(scratch).map(|_| ())?,
            Some(NetRole::Experiment(e)) => crate::commands::experiment::cases(e).map(|_| ())?,
            Some(NetRole::Respond(r)) => r.host_config().map(|_| ())?,
            Some(NetRole::Emulate(m)) => m.controller_config().map(|_| ())?,
        },
        Command::Suite(a) => a.request(scratch).map(|_| ())?,
        Command::Run(a) => a.plan().map(|_| ())?,
        Command::Reproduce(a) => a.plan().map(|_| ())?,
        Command::Runs(a) => a.filter().map(|_| ())?,
        Command::Show(a) => a.events().map(|_| ())?,
        Command::Load(a) => a.check()?,
        Command::Devices(_)
        | Command::Report(_)
        | Command::Compare(_)
        | Command::Export(_)
        | Command::Push(_)
        | Command::Completions(_)
        | Command::Man(_)
        | Command::Supervise(_) => {}
    }
    Ok(())
}

/// Whether a refusal gives what the flag takes (a range, a bound, the values here).
fn gives_a_range(line: &str) -> bool {
    let words = [
        " to ",
        "..",
        "at most",
        "at least",
        "or more",
        "up to",
        "from ",
        "above",
        "positive",
        "online CPUs",
        "<=",
    ];
    line.chars().any(|c| c.is_ascii_digit()) && words.iter().any(|w| line.contains(w))
}

/// Checks one refusal: one line, naming `flag`, with what it takes (`value` that is no
/// number at all is only said to be none).
fn check_refusal(what: &str, line: &str, flag: &str, value: &str, problems: &mut Vec<String>) {
    let not_a_number = matches!(value, "NaN" | "inf" | "-inf");
    if line.contains('\n') {
        problems.push(format!("{what}: not one line: {line:?}"));
    } else if !line.contains(flag) {
        problems.push(format!("{what}: does not name {flag}: {line}"));
    } else if !not_a_number && !gives_a_range(line) {
        problems.push(format!("{what}: says no range: {line}"));
    }
}

#[test]
fn every_numeric_flag_is_bounded_at_its_extremes_before_anything_is_stored() {
    let flags = numeric_flags();
    // The walk sees the flags the issue named, so it sees the rest.
    for (path, flag) in [
        ("bench", "period"),
        ("jitter", "fragments"),
        ("jitter", "loops"),
        ("event", "repeat"),
        ("event", "frequency"),
        ("event", "spacing"),
        ("roundtrip", "cable-delay"),
        ("roundtrip", "max-delay"),
        ("doctor", "steal-window"),
    ] {
        assert!(
            flags
                .iter()
                .any(|(p, f, _)| p.join(" ") == path && *f == flag),
            "{path} --{flag} is not seen as a number"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let store = dir.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let db = store.join("bounds.db");
    let mut problems = Vec::new();
    let mut refused = 0;
    for (path, flag, kind) in &flags {
        let long = format!("--{flag}");
        for (value, may_accept) in extremes(*kind, SIGNED.contains(flag)) {
            let mut argv = vec!["audiolat".to_string(), format!("--db={}", db.display())];
            argv.extend(base(path, flag));
            argv.push(format!("{long}={value}"));
            let what = argv[2..].join(" ");
            let cli = match parse(argv) {
                Err(e) => {
                    let help =
                        matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion);
                    if help || e.kind() == ErrorKind::MissingRequiredArgument {
                        problems.push(format!("{what}: clap says {:?}: {e}", e.kind()));
                    } else {
                        // Exit 2 (`process::clap_error`), its first paragraph as one line.
                        let line = crate::process::clap_line(&e);
                        check_refusal(&what, &line, &long, value, &mut problems);
                        refused += 1;
                    }
                    continue;
                }
                Ok(cli) => cli,
            };
            match stage_two(&cli, &scratch) {
                Ok(()) if may_accept => continue,
                Ok(()) => {
                    problems.push(format!("{what}: accepted"));
                    continue;
                }
                Err(_) => {}
            }
            // Refused by stage two: the command itself refuses it the same way, before
            // anything is stored (a stop already raised ends whatever would start).
            let stop = Arc::new(AtomicBool::new(true));
            match crate::dispatch(cli, stop) {
                Ok(code) => problems.push(format!("{what}: the command ran ({code:?})")),
                Err(e) => {
                    let (code, line) = crate::failure(&e, &db);
                    if code != crate::process::EXIT_USAGE {
                        problems.push(format!("{what}: exit {code}: {line}"));
                    }
                    check_refusal(&what, &line, &long, value, &mut problems);
                    refused += 1;
                }
            }
            let left: Vec<_> = std::fs::read_dir(&store).unwrap().flatten().collect();
            if !left.is_empty() {
                problems.push(format!("{what}: left {left:?}"));
                for f in left {
                    let _ = std::fs::remove_file(f.path());
                }
            }
        }
    }
    assert!(refused > 100, "only {refused} refusals seen");
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// A plan's keys are its probe's flags, so a value out of range in a plan is refused
/// where the plan is checked, naming the flag, before any cell runs.
#[test]
fn a_plans_numbers_are_bounded_as_the_flags_are() {
    let mut problems = Vec::new();
    for (path, flag, kind) in numeric_flags() {
        let [probe] = path.as_slice() else { continue };
        if !runner::plan::PROBES.contains(probe) {
            continue;
        }
        for (value, may_accept) in extremes(kind, SIGNED.contains(&flag)) {
            if may_accept {
                continue;
            }
            let mut set = format!("{flag} = \"{value}\"\n");
            if matches!(*probe, "event" | "roundtrip") {
                set.push_str("backend = \"virtual\"\n");
            }
            if matches!(flag, "dl-runtime" | "dl-deadline") {
                set.push_str("policy = \"deadline\"\n");
            }
            for needed in [("fragments", "frames = 32"), ("frames", "fragments = 3")] {
                if flag == needed.0 {
                    set.push_str(needed.1);
                    set.push('\n');
                }
            }
            if flag == "reserve" {
                set.push_str("link = 1000\n");
            }
            let text = format!("name = \"b\"\nprobe = \"{probe}\"\n[set]\n{set}");
            let what = format!("plan {probe} {flag} = {value}");
            let refusal = match crate::plan::parse(&text, "b.toml") {
                Err(e) => e.to_string(),
                Ok(plan) => {
                    let checker = crate::plan::CliCells::default();
                    match runner::plan::order(&plan, &checker, &|| false) {
                        Err(e) => e.to_string(),
                        Ok(_) => {
                            problems.push(format!("{what}: accepted"));
                            continue;
                        }
                    }
                }
            };
            check_refusal(&what, &refusal, &format!("--{flag}"), value, &mut problems);
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}
