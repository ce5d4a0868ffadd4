//! Counts and outcomes as every view says them: a run that measured nothing is no
//! complete run, and a run's under-runs, skipped cycles and missed notes, one definition
//! each, are the same in every table, document, export and gate.

use std::time::Duration;

use crate::util::{self, machine_lock, run, run_json, temp_db, wait_timeout};

/// A run that measured nothing is no complete run: a round trip on the virtual card
/// without its cable (nothing comes back) and key triggers whose input ended before the
/// first key are stored `failed` with the reason, exit 1; key triggers from a standard
/// input that can give no key at all (`/dev/null`) are refused up front, exit 2, nothing
/// stored.
#[test]
fn a_run_that_measured_nothing_is_failed_not_complete() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("nothing.db");
    let out = run(
        &db,
        &[
            "roundtrip",
            "--backend",
            "virtual",
            "--no-cable",
            "--duration",
            "1s",
            "--impulses",
            "1",
        ],
    );
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let shown = run_json(&db, &["show", "last", "--json"]);
    assert_eq!(shown["run"]["status"], "failed", "{}", shown["run"]);
    assert!(
        shown["run"]["error"]
            .as_str()
            .unwrap()
            .starts_with("no loop found"),
        "{}",
        shown["run"]
    );

    // Standard input is /dev/null: no key can come; refused before anything runs.
    let refused = run(
        &db,
        &[
            "event",
            "--backend",
            "virtual",
            "--trigger",
            "key",
            "--triggers",
            "3",
        ],
    );
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .starts_with("audiolat: error: --trigger key reads key presses from standard input")
            && refused.stderr.lines().count() == 1,
        "{}",
        refused.stderr
    );
    assert_eq!(
        run_json(&db, &["runs", "--json"]).as_array().unwrap().len(),
        1
    );

    // A pipe that ends before the first key: the run is kept, failed, with the reason.
    let mut child = util::command(
        &db,
        &[
            "event",
            "--backend",
            "virtual",
            "--trigger",
            "key",
            "--triggers",
            "3",
        ],
    )
    .stdin(std::process::Stdio::piped())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    drop(child.stdin.take());
    let status = wait_timeout(&mut child, Duration::from_secs(30));
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = run_json(&db, &["show", "last", "--json"]);
    assert_eq!(shown["run"]["probe"], "event");
    assert_eq!(shown["run"]["status"], "failed", "{}", shown["run"]);
    assert_eq!(
        shown["run"]["error"],
        probes::event::NO_KEY_PRESSED,
        "{}",
        shown["run"]
    );
}

/// One definition per count, every view saying it: an event sweep on the virtual card
/// whose workload (`bank:65536`, far more than a period of work) makes every cycle late,
/// so the runs under-run, skip cycles and miss notes. Each run's under-runs (the xruns
/// after the first trigger; the warm-up's apart), skipped cycles and missed notes are
/// the same in the fresh table, `show`, its JSON, the `xruns` gate, the report's runs
/// table and `report --print`; the study table counts the same missed notes as the run
/// table. A jitter run with fragments is summarised by its fragments' completion in
/// `runs`, as in the suite's table and the report.
#[test]
fn every_view_of_a_run_counts_its_under_runs_skipped_cycles_and_missed_notes_alike() {
    let _m = machine_lock();
    let (dir, db) = temp_db("counts.db");
    let out = run(
        &db,
        &[
            "event",
            "--backend",
            "virtual",
            "--period",
            "64,128",
            "--workload",
            "bank:65536",
            "--triggers",
            "8",
            "--fail-if",
            "xruns > 1000000",
        ],
    );
    assert!(
        out.code == 0 || out.code == 3,
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    let fresh = out.stdout;
    let runs = run_json(&db, &["runs", "--json"]);
    let ids: Vec<i64> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .rev()
        .collect();
    assert_eq!(ids.len(), 2, "{runs}");
    let header = |text: &str| {
        text.lines()
            .find(|l| l.starts_with("run ") && l.contains("under-runs"))
            .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .unwrap_or_else(|| panic!("no run table in {text}"))
    };
    // The table's last columns, counted from its end (the columns before them may hold
    // spaces: "10.0 us").
    let cell = |text: &str, id: i64, name: &str| {
        let head = header(text);
        let tail: Vec<&str> = ["missed", "unknown", "under-runs", "rt", "steal"]
            .into_iter()
            .filter(|c| head.iter().any(|h| h == c))
            .collect();
        let row: Vec<&str> = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(&id.to_string()))
            .unwrap_or_else(|| panic!("no row {id} in {text}"))
            .split_whitespace()
            .collect();
        let from_end = tail.len() - tail.iter().position(|c| *c == name).unwrap();
        row[row.len() - from_end].to_string()
    };
    let mut dropouts = 0;
    let mut missed_total = 0;
    for id in &ids {
        let shown = run_json(&db, &["show", &id.to_string(), "--json"]);
        let result = &shown["run"]["result"];
        let (start, steady, skipped) = (
            result["underruns"]["start"].as_u64().unwrap(),
            result["underruns"]["steady"].as_u64().unwrap(),
            result["underruns"]["skipped_cycles_steady"]
                .as_u64()
                .unwrap(),
        );
        let missed = shown["triggers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["missed"] == true)
            .count();
        dropouts += steady + skipped;
        missed_total += missed;
        // The fresh table and `show`'s say the same: start/steady under-runs, missed notes.
        let text = run(&db, &["show", &id.to_string()]).stdout;
        for t in [&fresh, &text] {
            assert_eq!(
                cell(t, *id, "under-runs"),
                format!("{start}/{steady}"),
                "{t}"
            );
            assert_eq!(cell(t, *id, "missed"), missed.to_string(), "{t}");
        }
        // The gate on xruns reads the same count.
        assert_eq!(
            shown["gates"][0]["value"].as_f64(),
            Some(steady as f64),
            "{}",
            shown["gates"]
        );
        // The report's row of the run, in the terminal: the under-runs, the skipped
        // cycles said apart.
        let printed = run(
            &db,
            &[
                "report",
                &id.to_string(),
                "--print",
                "-o",
                dir.path().join(format!("r{id}.html")).to_str().unwrap(),
            ],
        );
        assert_eq!(printed.code, 0, "{}", printed.stderr);
        let want = if skipped > 0 {
            format!("{steady}, {skipped} skipped")
        } else {
            steady.to_string()
        };
        assert!(
            printed
                .stdout
                .lines()
                .any(|l| l.starts_with(&format!("run {id}:")) && l.trim_end().ends_with(&want)),
            "{want} not in\n{}",
            printed.stdout
        );
        let html = std::fs::read_to_string(dir.path().join(format!("r{id}.html"))).unwrap();
        assert!(
            html.contains(&format!("\">{want}</td>")),
            "{want} not in the runs table"
        );
    }
    assert!(dropouts > 0, "the workload made no cycle late: {fresh}");
    // The study's table counts the same missed notes as the run table.
    if missed_total > 0 {
        let in_study: usize = fresh
            .lines()
            .flat_map(|l| l.split('(').skip(1))
            .filter_map(|p| p.split('/').next()?.parse::<usize>().ok())
            .sum();
        assert_eq!(in_study, missed_total, "{fresh}");
    }

    // A jitter run with fragments: its headline is its fragments' completion everywhere.
    let out = run(
        &db,
        &[
            "jitter",
            "--fragments",
            "3",
            "--frames",
            "32",
            "--duration",
            "300ms",
            "-q",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let listed = run_json(&db, &["runs", "--json"]);
    assert_eq!(listed[0]["metric"], "fragment_completion", "{}", listed[0]);
    let listed = run(&db, &["runs"]).stdout;
    assert!(
        listed
            .lines()
            .nth(1)
            .unwrap()
            .contains("fragment_completion"),
        "{listed}"
    );
}
