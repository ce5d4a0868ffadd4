//! One run, two printings: the tables `audiolat <probe>` prints for a run it just made
//! are the ones `audiolat show <run>` prints for it from the store.

use std::path::Path;

use crate::util::{machine_lock, run, run_json, temp_db};

/// The shared tables of a fresh run's output: everything before its live footer (the
/// line that starts with `footer`, after a blank line).
fn tables<'a>(fresh: &'a str, footer: &str) -> &'a str {
    let end = fresh
        .rfind(&format!("\n{footer}"))
        .unwrap_or_else(|| panic!("no {footer:?} footer in:\n{fresh}"));
    &fresh[..end]
}

/// Runs `args`, then `show` of the run it made, and checks that `show` prints the same
/// tables. Returns the fresh output.
fn same_tables_in_show(db: &Path, args: &[&str], footer: &str) -> String {
    let fresh = run(db, args);
    assert_eq!(fresh.code, 0, "{args:?}: {}", fresh.stderr);
    let shown = run(db, &["show", "last"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let tables = tables(&fresh.stdout, footer);
    assert!(
        tables.lines().count() > 5,
        "{args:?} printed no tables:\n{}",
        fresh.stdout
    );
    assert!(
        shown.stdout.contains(tables),
        "`show` does not print {args:?}'s tables.\nfresh:\n{}\nshown:\n{}",
        fresh.stdout,
        shown.stdout
    );
    fresh.stdout
}

#[test]
fn a_jitter_run_shows_the_tables_it_printed() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("r.db");
    let fresh = same_tables_in_show(
        &db,
        &["jitter", "--loops", "200", "--interval", "1ms", "-q"],
        "stored as run",
    );
    assert!(fresh.contains("wake-up latency"), "{fresh}");
}

#[test]
fn a_roundtrip_run_shows_the_tables_it_printed() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("r.db");
    let fresh = same_tables_in_show(
        &db,
        &[
            "roundtrip",
            "--backend",
            "virtual",
            "--duration",
            "300ms",
            "-q",
        ],
        "stored in",
    );
    assert!(fresh.contains("windows"), "{fresh}");
}

#[test]
fn a_jitter_run_as_json_is_the_stored_run() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("r.db");
    let fresh = run_json(
        &db,
        &["jitter", "--loops", "200", "--interval", "1ms", "--json"],
    );
    let shown = run_json(&db, &["show", "last", "--json"]);
    let stored = &shown["run"];
    assert_eq!(fresh["run_id"], stored["id"]);
    for key in ["status", "qos_granted", "flags", "result", "load"] {
        assert_eq!(fresh[key], stored[key], "{key}:\n{fresh}\n{shown}");
    }
    let metrics = |v: &serde_json::Value| {
        v.as_array()
            .unwrap()
            .iter()
            .map(|m| (m["metric"].clone(), m["summary"]["count"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        metrics(&fresh["measurements"]),
        metrics(&shown["measurements"])
    );
}

#[test]
fn an_event_run_shows_the_tables_it_printed() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("r.db");
    let fresh = same_tables_in_show(
        &db,
        &["event", "--backend", "virtual", "--triggers", "20", "-q"],
        "stored in",
    );
    assert!(fresh.contains("late cb"), "{fresh}");
}

#[test]
fn a_net_run_shows_the_tables_it_printed() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("r.db");
    let fresh = same_tables_in_show(
        &db,
        &[
            "net",
            "--duration",
            "300ms",
            "--warmup",
            "100ms",
            "--reference",
            "200ms",
        ],
        "stored as run",
    );
    assert!(fresh.contains("Figure 7"), "{fresh}");
}

#[test]
fn a_net_run_as_json_is_the_stored_run() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("r.db");
    let fresh = run_json(
        &db,
        &[
            "net",
            "--duration",
            "300ms",
            "--warmup",
            "100ms",
            "--no-reference",
            "--json",
        ],
    );
    let shown = run_json(&db, &["show", "last", "--json"]);
    for key in ["status", "flags", "result"] {
        assert_eq!(fresh[key], shown["run"][key], "{key}:\n{fresh}\n{shown}");
    }
}
