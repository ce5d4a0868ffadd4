//! A run just made, as `audiolat <probe>` prints it: the probe's renderer (the same
//! function `audiolat show` uses) followed by the lines that only make sense live (the
//! errors that stopped a run, where it is stored, where to look next), and the JSON of a
//! sweep. Every function reads [`RunView`]s the runner built from the values it stored.

use std::path::Path;

use results::{GroupId, RunView};
use serde_json::{json, Value};

/// `audiolat jitter`'s text: the run's tables and where it is stored (`db`).
pub fn jitter_text(run: &RunView, db: &Path) -> String {
    let mut out = super::jitter::text(run);
    out.push_str(&format!("\nstored as run {} in {}\n", run.id, db.display()));
    out
}

/// The errors that stopped some of `runs`, a line each.
fn run_errors(runs: &[RunView], out: &mut String) {
    for r in runs {
        if let Some(e) = &r.error {
            out.push_str(&format!("run {}: {e}\n", r.id));
        }
    }
}

/// `audiolat event`'s text: the runs' tables (sweep `group`), the errors that stopped a
/// run, and where they are stored.
pub fn event_text(group: GroupId, runs: &[RunView], db: &Path) -> String {
    if runs.is_empty() {
        return format!("\nno event runs were made (group {group})\n");
    }
    let mut out = super::event::text(runs);
    run_errors(runs, &mut out);
    out.push_str(&format!(
        "\nstored in {} (group {group}); `audiolat show <run>` shows one, `audiolat export <run>` every trigger\n",
        db.display()
    ));
    out
}

/// `audiolat event --json`: the runs of sweep `group`, each with the probe's own
/// configuration (the view's, without the `load` and `granted` of its cell, which have
/// their own keys) and every trigger.
pub fn event_json(group: GroupId, runs: &[RunView]) -> Value {
    json!({
        "group_id": group,
        "runs": runs.iter().map(|r| {
            let mut config = r.config.clone();
            if let Some(c) = config.as_object_mut() {
                c.remove("load");
                c.remove("granted");
            }
            json!({
                "run_id": r.id,
                "status": r.status,
                "load": r.config["load"],
                "config": config,
                "granted": r.config["granted"],
                "result": r.result,
                "flags": r.flags,
                "error": r.error,
                "triggers": r.triggers,
            })
        }).collect::<Vec<_>>(),
    })
}

/// `audiolat roundtrip`'s text: the runs' tables (sweep `group`), the errors that
/// stopped a run, and where they are stored.
pub fn roundtrip_text(group: GroupId, runs: &[RunView], db: &Path) -> String {
    if runs.is_empty() {
        return format!("\nno round-trip runs were made (group {group})\n");
    }
    let mut out = super::roundtrip::text(runs);
    run_errors(runs, &mut out);
    out.push_str(&format!(
        "\nstored in {} (group {group}); `audiolat show <run>` shows one, `audiolat export <run> --format series` every window\n",
        db.display()
    ));
    out
}

/// `audiolat roundtrip --json`: the runs of sweep `group`, each with its `windows` and
/// `impulses` (`details`, in the same order: an object holding both, as the runner
/// gives them).
pub fn roundtrip_json(group: GroupId, runs: &[RunView], details: &[Value]) -> Value {
    json!({
        "group_id": group,
        "runs": runs.iter().zip(details).map(|(r, detail)| json!({
            "run_id": r.id,
            "status": r.status,
            "load": r.config["load"],
            "loop": r.config["loop"],
            "granted": r.config["granted"],
            "result": r.result,
            "flags": r.flags,
            "error": r.error,
            "windows": detail["windows"],
            "impulses": detail["impulses"],
        })).collect::<Vec<_>>(),
    })
}

/// `audiolat net`'s text: the run's tables and where it is stored.
pub fn net_text(run: &RunView, db: &Path) -> String {
    let mut out = super::net::text(run);
    out.push_str(&format!(
        "\nstored as run {} in {}; `audiolat show {}` shows it, `audiolat export {} --format series` every block\n",
        run.id,
        db.display(),
        run.id,
        run.id
    ));
    out
}

/// `audiolat net respond|emulate`'s text: the run's tables and where it is stored.
pub fn net_end_text(run: &RunView, db: &Path) -> String {
    let mut out = super::net::end_text(run);
    out.push_str(&format!("\nstored as run {} in {}\n", run.id, db.display()));
    out
}
