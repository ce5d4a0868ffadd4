use super::*;

/// The flags of a CLI's probes, as far as these tests need them; every cell parses.
struct Fake;

impl CellChecker for Fake {
    fn flags(&self, probe: &str) -> Vec<Flag> {
        let names: &[&str] = match probe {
            "event" => &[
                "backend",
                "server",
                "server-name",
                "period",
                "periods",
                "triggers",
                "workload",
                "load",
                "no-mlock",
            ],
            "jitter" => &["duration", "rate", "priority", "fragments"],
            _ => &[],
        };
        names
            .iter()
            .map(|n| Flag {
                name: n.to_string(),
                takes_value: *n != "no-mlock",
                repeated: false,
            })
            .collect()
    }

    fn takes_quiet(&self, _: &str) -> bool {
        true
    }

    fn check(&self, _: &CellCommand) -> Result<Option<ServerKey>, CellRefusal> {
        Ok(None)
    }
}

fn parse(text: &str, file: &str) -> Result<Plan, PlanError> {
    Plan::parse(text, file, &Fake)
}

fn ok(_: &CellCommand) -> Result<(), CellRefusal> {
    Ok(())
}

/// As a command line's parser would: a backend is one it knows.
fn parses(c: &CellCommand) -> Result<(), CellRefusal> {
    let argv = c.argv();
    match argv.iter().position(|a| a == "--backend") {
        Some(i) if !["alsa", "jack", "virtual"].contains(&argv[i + 1].as_str()) => {
            Err(CellRefusal::NotACommandLine(format!(
                "invalid value '{}' for '--backend'",
                argv[i + 1]
            )))
        }
        _ => Ok(()),
    }
}

const PLAN: &str = r#"
name = "t"
probe = "event"
repeats = 2

[set]
triggers = 10
no-mlock = true

[sweep]
backend = ["alsa", "virtual"]
buffer = [
  { label = "128/64", period = 64, periods = 2 },
  { label = "256/64", period = 64, periods = 4 },
]
profile = ["current", "opt2"]

[[exclude]]
backend = "virtual"
buffer = ["256/64"]
reason = "example"
"#;

#[test]
fn a_plan_expands_outermost_axis_first_without_the_excluded_cells() {
    let plan = parse(PLAN, "t.toml").unwrap();
    let cells: Vec<Cell> = plan.cells(&ok).unwrap().into_iter().map(|c| c.0).collect();
    // 2 x 2 x 2 = 8 combinations, 2 excluded, 2 repeats each.
    assert_eq!(cells.len(), 12);
    assert_eq!(plan.cell_count(), 8 * 2, "before exclusions");
    assert_eq!(
        cells[0].key,
        "backend=alsa buffer=128/64 profile=current repeat=1"
    );
    assert_eq!(
        cells[0].command.argv(),
        [
            "event",
            "--triggers",
            "10",
            "--no-mlock",
            "--backend",
            "alsa",
            "--period",
            "64",
            "--periods",
            "2"
        ]
    );
    assert_eq!(cells[1].repeat, 2);
    assert_eq!(cells[2].profile, "opt2");
    assert!(cells
        .iter()
        .all(|c| !(c.key.contains("virtual") && c.key.contains("256/64"))));
    let keys: std::collections::HashSet<_> = cells.iter().map(|c| &c.key).collect();
    assert_eq!(keys.len(), cells.len());
}

fn refusal(text: &str) -> PlanError {
    match parse(text, "p.toml").and_then(|p| p.cells(&parses)) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e,
    }
}

#[test]
fn malformed_plans_are_refused_with_their_line_and_a_fix() {
    let e = refusal("name = \"x\"\nprobe = \"event\"\n[sweep]\nbakend = [\"alsa\"]\n");
    assert_eq!((e.line, e.column), (4, 1), "{e}");
    assert!(e.message.contains("`bakend` is not a flag"), "{e}");
    assert!(e.fix.contains("did you mean `backend`"), "{e}");

    let e = refusal("name = \"x\"\nprobe = \"event\"\nrepets = 3\n");
    assert_eq!(e.line, 3);
    assert!(e.fix.contains("`repeats`"), "{e}");

    let e = refusal("name = \"x\"\nprobe = \"event\"\n[set]\ntriggers = [\n]\n");
    assert_eq!(e.line, 4, "{e}");
    assert!(e.message.contains("empty list"), "{e}");

    let e = refusal("name = \"x\"\nprobe = \"event\"\n[sweep]\nperiod = []\n");
    assert_eq!(e.line, 4, "{e}");
    assert!(e.message.contains("axis `period` is empty"), "{e}");

    let e = refusal("name = \"x\"\nprobe = \"event\"\nrepeats = \"five\"\n");
    assert_eq!(e.line, 3, "{e}");
    assert!(e.message.contains("whole number"), "{e}");

    let e = refusal("name = \"x\"\nprobe = \"event\"\n[set]\nno-mlock = \"yes\"\n");
    assert!(e.message.contains("is a switch"), "{e}");

    let e = refusal("name = \"x\"\nprobe = \"event\"\n[set]\ndb = \"a.db\"\n");
    assert!(e.message.contains("cannot be set in a plan"), "{e}");

    let e = refusal("name = \"x\"\nprobe = \"evnt\"\n");
    assert!(e.fix.contains("did you mean `event`"), "{e}");

    let e = refusal(
        "name = \"x\"\nprobe = \"event\"\n[set]\nload = \"top\"\n[sweep]\nload = [\"none\"]\n",
    );
    assert_eq!(e.line, 6, "{e}");

    let e = refusal("name = \"x\"\nprobe = \"event\"\n[sweep]\nbackend = [\"alsa\"]\n[[exclude]]\nbackend = \"jack\"\n");
    assert_eq!(e.line, 6, "{e}");
    assert!(e.message.contains("no value `jack`"), "{e}");

    let e = refusal("name = \"x\"\nprobe = [1\n");
    assert!(e.message.contains("not valid TOML"), "{e}");
    assert!(e.line >= 2, "{e}");
}

#[test]
fn the_probe_check_refuses_an_impossible_combination_at_its_line() {
    let text = "name = \"x\"\nprobe = \"event\"\n[sweep]\nbackend = [\"alsa\", \"jack\"]\nbuffer = [{ label = \"a\", periods = 2 }, { label = \"b\", periods = 4 }]\n";
    let plan = parse(text, "p.toml").unwrap();
    let check = |c: &CellCommand| {
        let argv = c.argv().join(" ");
        if argv.contains("--backend jack") && !argv.contains("--periods 2") {
            Err(CellRefusal::CannotRun(
                "--periods sets an ALSA buffer".into(),
            ))
        } else {
            Ok(())
        }
    };
    let e = plan.cells(&check).unwrap_err();
    assert_eq!(e.line, 5, "{e}");
    assert!(
        e.message
            .contains("cell backend=jack buffer=b repeat=1 cannot run"),
        "{e}"
    );
    assert!(e.fix.contains("[[exclude]]"), "{e}");
}

#[test]
fn report_tables_must_name_axes_and_fit_their_published_figures() {
    let base = "name = \"x\"\nprobe = \"event\"\n[sweep]\nbackend = [\"alsa\", \"jack\"]\nworkload = [\"sine\"]\n";
    let good = format!("{base}[[report.table]]\nvalue = \"event_latency.mean\"\nrows = [\"workload\"]\ncolumns = [\"backend\"]\npublished = \"f\"\n[published.f]\nrows = {{ sine = [1.0, 2.0] }}\n");
    parse(&good, "p.toml").unwrap();
    let e = refusal(&good.replace("[1.0, 2.0]", "[1.0]"));
    assert!(
        e.message
            .contains("has 1 values, but the table has 2 columns"),
        "{e}"
    );
    let e = refusal(&good.replace("rows = [\"workload\"]", "rows = [\"buffer\"]"));
    assert!(e.message.contains("`buffer` is not an axis"), "{e}");
    let e = refusal(&good.replace("published = \"f\"", "published = \"g\""));
    assert!(e.message.contains("no [published.g]"), "{e}");
    let e = refusal(&good.replace("rows = { sine", "rows = { sin"));
    assert!(
        e.message.contains("published row `sin` is not a label"),
        "{e}"
    );
    assert!(e.fix.contains("`sine`"), "{e}");
    let e = refusal(&good.replace("value = \"event", "scale = \"1e-6\"\nvalue = \"event"));
    assert!(e.message.contains("`scale` must be a number"), "{e}");
}

#[test]
fn repeat_is_the_plans_own_axis_and_keys_are_unique() {
    let e = refusal("name = \"x\"\nprobe = \"event\"\n[sweep]\nrepeat = [1, 2]\n");
    assert!(e.fix.contains("repeats = N"), "{e}");
    let e = refusal(
        "name = \"x\"\nprobe = \"event\"\n[sweep]\nperiod = [{ label = \"a workload=b\", period = 64 }, { label = \"a\", period = 128 }]\nworkload = [{ label = \"c\", workload = \"sine\" }, { label = \"b workload=c\", workload = \"poly\" }]\n",
    );
    assert!(e.message.contains("two cells have the key"), "{e}");
    // Columns count characters, not bytes.
    let e = refusal("name = \"é\"\nprobe = \"event\"\n[sweep]\nbackend = [\"é\", 1]\n");
    assert_eq!(e.line, 4, "{e}");
}

/// Size limits are checked on the axes' lengths, before any cell is made.
#[test]
fn plans_over_the_size_limits_are_refused_with_their_count() {
    let values = |n: usize| {
        (0..n)
            .map(|i| (1000 + i).to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let text = format!(
        "name = \"x\"\nprobe = \"jitter\"\n[sweep]\nrate = [{}]\n",
        values(MAX_AXIS_VALUES + 1)
    );
    let e = refusal(&text);
    assert!(
        e.message.contains(&format!(
            "has {} values, more than the {MAX_AXIS_VALUES}",
            MAX_AXIS_VALUES + 1
        )),
        "{e}"
    );
    // 100 x 99 x 30 = 297,000 cells: refused at once, with the count and the limit.
    let text = format!(
        "name = \"x\"\nprobe = \"jitter\"\n[sweep]\nrate = [{}]\npriority = [{}]\nfragments = [{}]\n",
        values(100),
        (1..=99).map(|i| i.to_string()).collect::<Vec<_>>().join(","),
        (1..=30).map(|i| i.to_string()).collect::<Vec<_>>().join(","),
    );
    let e = parse(&text, "p.toml").unwrap_err();
    assert!(
        e.message.contains(&format!("has 297000 cells (100 rate x 99 priority x 30 fragments x 1 repeats), more than the {MAX_CELLS}")),
        "{e}"
    );
    // Repeats count too.
    let text = format!(
        "name = \"x\"\nprobe = \"jitter\"\nrepeats = 1000\n[sweep]\nrate = [{}]\n",
        values(11)
    );
    let e = parse(&text, "p.toml").unwrap_err();
    assert!(e.message.contains("has 11000 cells"), "{e}");
}

#[test]
fn a_plans_gates_go_to_every_cell_and_a_wrong_one_is_refused_where_it_is() {
    let plan = parse(
        "name = \"g\"\nprobe = \"jitter\"\nfail_if = [\"p99 > 5ms\", \"xruns > 0\"]\n[sweep]\nrate = [1000, 2000]\n",
        "g.toml",
    )
    .unwrap();
    assert_eq!(plan.gates(), ["p99 > 5ms", "xruns > 0"]);
    assert_eq!(plan.to_json()["fail_if"], json!(["p99 > 5ms", "xruns > 0"]));
    let mut one = parse(
        "name = \"g\"\nprobe = \"jitter\"\nfail_if = \"max > 1ms\"\n",
        "g.toml",
    )
    .unwrap();
    one.add_gates(&[results::gate::Gate::parse("overflows > 0").unwrap()])
        .unwrap();
    assert_eq!(one.gates(), ["max > 1ms", "overflows > 0"]);
    assert!(one
        .add_gates(&[results::gate::Gate::parse("roundtrip > 1ms").unwrap()])
        .is_err());

    let e = parse(
        "name = \"g\"\nprobe = \"jitter\"\nfail_if = [\"p99 > 5\"]\n",
        "g.toml",
    )
    .unwrap_err();
    assert_eq!((e.line, e.column), (3, 12));
    assert!(
        e.message.contains("p99 is a time: give a unit"),
        "{}",
        e.message
    );
    let e = parse(
        "name = \"g\"\nprobe = \"jitter\"\nfail_if = [3]\n",
        "g.toml",
    )
    .unwrap_err();
    assert_eq!(e.message, "a gate must be a string, but it is an integer");
    let e = parse(
        "name = \"g\"\nprobe = \"event\"\nfail_if = \"skipped > 0\"\n",
        "g.toml",
    )
    .unwrap_err();
    assert!(
        e.message.contains("event runs have no metric 'skipped'"),
        "{}",
        e.message
    );
}
