//! A plan checked against the command line itself (`audiolat run PLAN --dry-run`): its
//! keys are the probe's flags, and each cell's values pass the same parser a command
//! line does, refused at their place in the file.

use std::path::Path;

use crate::util::{run, temp_db, Output};

/// `text` as `p.toml` in `dir`, checked with `--dry-run`.
fn dry_run(dir: &Path, db: &Path, text: &str) -> Output {
    let file = dir.join("p.toml");
    std::fs::write(&file, text).unwrap();
    run(db, &["run", file.to_str().unwrap(), "--dry-run"])
}

/// The refusal of `text`: a usage error (exit 2), nothing stored; (where and what, the
/// fix).
fn refusal(dir: &Path, db: &Path, text: &str) -> (String, String) {
    let out = dry_run(dir, db, text);
    assert_eq!(out.code, 2, "accepted:\n{text}\n{}", out.stdout);
    assert!(!db.exists(), "nothing was stored for {text}");
    let (message, fix) = out
        .stderr
        .trim_end()
        .split_once("; fix: ")
        .unwrap_or_else(|| panic!("no fix: {}", out.stderr));
    (message.to_string(), fix.to_string())
}

#[test]
fn a_plans_keys_are_the_clis_flags() {
    let (dir, db) = temp_db("p.db");
    let text = "name = \"x\"\nprobe = \"event\"\n[sweep]\nbakend = [\"alsa\"]\n";
    let (message, fix) = refusal(dir.path(), &db, text);
    assert!(message.contains("p.toml:4:1: "), "{message}");
    assert!(message.contains("`bakend` is not a flag"), "{message}");
    assert!(fix.contains("did you mean `backend`"), "{fix}");
    let text = "name = \"x\"\nprobe = \"event\"\n[set]\nno-mlock = \"yes\"\n";
    let (message, _) = refusal(dir.path(), &db, text);
    assert!(message.contains("is a switch"), "{message}");
}

#[test]
fn a_cell_clap_refuses_points_at_its_value() {
    let (dir, db) = temp_db("p.db");
    let text =
        "name = \"x\"\nprobe = \"event\"\n[sweep]\nbackend = [\"alsa\"]\nperiod = [64, \"lots\"]\n";
    let (message, _) = refusal(dir.path(), &db, text);
    assert!(message.contains("p.toml:5:"), "{message}");
    assert!(
        message.contains("cell backend=alsa period=lots"),
        "{message}"
    );
    assert!(message.contains("--period"), "{message}");
}

/// A plan's value reaches the CLI's parser as the plan writes it, so the command
/// line's rules hold for plans too.
#[test]
fn plan_numbers_are_judged_as_written_by_the_clis_parser() {
    let (dir, db) = temp_db("p.db");
    let plan = |probe: &str, body: &str| format!("name = \"x\"\nprobe = \"{probe}\"\n{body}\n");
    for (probe, body, needle) in [
        ("jitter", "[set]\nduration = 1e9", "'1e9' for '--duration"),
        (
            "jitter",
            "[sweep]\nduration = [1, 1e9]",
            "'1e9' for '--duration",
        ),
        ("event", "[set]\nperiod = 64.0", "'64.0' for '--period"),
        (
            "event",
            "[sweep]\nperiod = [64, 128.0]",
            "'128.0' for '--period",
        ),
        (
            "event",
            "[set]\ntriggers = 1_000",
            "'1_000' for '--triggers",
        ),
        ("event", "[set]\ntriggers = 0", "'0' for '--triggers"),
        (
            "event",
            "[sweep]\nb = [{ label = \"a\", period = 6.4e1 }]",
            "'6.4e1' for '--period",
        ),
    ] {
        let text = plan(probe, body);
        let (message, _) = refusal(dir.path(), &db, &text);
        assert!(message.contains(needle), "{text}: {message}");
        // The same value on a command line is refused by the same parser.
        let value = needle.split('\'').nth(1).unwrap();
        let flag = needle.split('\'').nth(3).unwrap();
        let out = run(&db, &[probe, flag, value]);
        assert_eq!(out.code, 2, "{probe} {flag} {value}: {}", out.stderr);
        assert!(
            out.stderr.contains(needle),
            "{probe} {flag} {value}: {}",
            out.stderr
        );
        assert!(!db.exists());
    }
    // Numbers the command line takes are taken as they are written.
    let out = dry_run(
        dir.path(),
        &db,
        &plan("jitter", "[set]\nduration = 2.5\nrate = 1000"),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let commands: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|l| l.split_once("audiolat jitter ").map(|(_, c)| c.trim_end()))
        .collect();
    assert_eq!(commands, ["--duration 2.5 --rate 1000"], "{}", out.stdout);
}
