//! The plan checked by the real CLI: clap's flags, its parser's refusals.

use clap::Parser;

use super::*;
use crate::cli::Cli;
use runner::plan::CellCommand;

/// Every cell parsed by clap only (the probes' own checks need the machine).
fn clap_only(c: &CellCommand) -> Result<(), runner::plan::CellRefusal> {
    CliCells::parse(c).map(|_| ())
}

fn refusal(text: &str) -> PlanError {
    match parse(text, "p.toml").and_then(|p| p.cells(&clap_only)) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e,
    }
}

#[test]
fn a_plans_keys_are_the_clis_flags() {
    let e = refusal("name = \"x\"\nprobe = \"event\"\n[sweep]\nbakend = [\"alsa\"]\n");
    assert_eq!((e.line, e.column), (4, 1), "{e}");
    assert!(e.message.contains("`bakend` is not a flag"), "{e}");
    assert!(e.fix.contains("did you mean `backend`"), "{e}");
    let e = refusal("name = \"x\"\nprobe = \"event\"\n[set]\nno-mlock = \"yes\"\n");
    assert!(e.message.contains("is a switch"), "{e}");
}

#[test]
fn a_cell_clap_refuses_points_at_its_value() {
    let text =
        "name = \"x\"\nprobe = \"event\"\n[sweep]\nbackend = [\"alsa\"]\nperiod = [64, \"lots\"]\n";
    let e = refusal(text);
    assert_eq!(e.line, 5, "{e}");
    assert!(e.message.contains("cell backend=alsa period=lots"), "{e}");
    assert!(e.message.contains("--period"), "{e}");
}

/// A plan's value reaches the CLI's parser as the plan writes it, so the command
/// line's rules hold for plans too.
#[test]
fn plan_numbers_are_judged_as_written_by_the_clis_parser() {
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
        let e = refusal(&text);
        assert!(e.message.contains(needle), "{text}: {e}");
        // The same value on a command line is refused by the same parser.
        let value = needle.split('\'').nth(1).unwrap();
        let flag = needle.split('\'').nth(3).unwrap();
        assert!(
            Cli::try_parse_from(["audiolat", probe, flag, value]).is_err(),
            "{probe} {flag} {value}"
        );
    }
    // Numbers the command line takes are taken as they are written.
    let p = parse(
        &plan("jitter", "[set]\nduration = 2.5\nrate = 1000"),
        "p.toml",
    )
    .unwrap();
    let cells = p.cells(&clap_only).unwrap();
    assert_eq!(
        cells[0].0.command.argv(),
        ["jitter", "--duration", "2.5", "--rate", "1000"]
    );
}

#[test]
fn only_probes_with_a_status_line_take_quiet() {
    use runner::plan::CellChecker;
    assert!(CliCells::default().takes_quiet("event"));
    assert!(!CliCells::default().takes_quiet("no-such-probe"));
}
