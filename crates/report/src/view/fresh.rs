//! A run just made, as `audiolat <probe>` prints it: the probe's renderer (the same
//! function `audiolat show` uses) followed by the lines that only make sense live (the
//! errors that stopped a run, where it is stored, where to look next), and the JSON of a
//! sweep. Every function reads [`RunView`]s the runner built from the values it stored.

use std::path::Path;

use results::records::{EventConfigRecord, RoundtripConfigRecord};
use results::{GroupId, Kept, RunView};
use serde_json::{json, Value};

/// Where run `run` is kept, as a fresh run's last line says it: "stored as run N in
/// DB" only once it is closed there (`shows`: the commands that show it, by run id).
fn stored_line(run: &RunView, db: &Path, kept: &Kept, shows: &dyn Fn(&str) -> String) -> String {
    match kept {
        Kept::Stored => format!(
            "\nstored as run {} in {}{}\n",
            run.id,
            db.display(),
            shows(&run.id.to_string())
        ),
        Kept::Moved { path, run_id, .. } => format!(
            "\nnot stored in {}: kept in {} as run {run_id} (the error below says why and how to put it back)\n",
            db.display(),
            path.display()
        ),
        Kept::NotClosed(_) => format!(
            "\nrun {} could not be stored whole in {} (the error below says what is kept)\n",
            run.id,
            db.display()
        ),
    }
}

/// Where a sweep's runs are kept: "stored in DB (group N)" when every run closed there;
/// else a line for each run that did not (moved to a local file, or not closed), and
/// where the others are. `export`: what `audiolat export` gives for one run.
fn sweep_stored(
    group: GroupId,
    runs: &[RunView],
    kept: &[Kept],
    db: &Path,
    export: &str,
) -> String {
    let shows = format!("; `audiolat show <run>` shows one, {export}");
    let elsewhere: Vec<_> = runs
        .iter()
        .zip(kept)
        .filter(|(_, k)| **k != Kept::Stored)
        .collect();
    if elsewhere.is_empty() {
        return format!("\nstored in {} (group {group}){shows}\n", db.display());
    }
    let mut out: String = elsewhere
        .iter()
        .map(|(r, k)| stored_line(r, db, k, &|_| String::new()))
        .collect();
    let stored = runs.len().saturating_sub(elsewhere.len());
    if stored > 0 {
        let others = if stored == 1 {
            "the other run is".to_string()
        } else {
            format!("the other {stored} runs are")
        };
        out.push_str(&format!(
            "{others} stored in {} (group {group}){shows}\n",
            db.display()
        ));
    }
    out
}

/// `audiolat jitter`'s text: the run's tables and where it is kept (`db`, `kept`).
pub fn jitter_text(run: &RunView, db: &Path, kept: &Kept) -> String {
    let mut out = super::jitter::text(run);
    out.push_str(&stored_line(run, db, kept, &|_| String::new()));
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
/// run, and where they are kept (`kept`, in the order of `runs`).
pub fn event_text(group: GroupId, runs: &[RunView], kept: &[Kept], db: &Path) -> String {
    if runs.is_empty() {
        return format!("\nno event runs were made (group {group})\n");
    }
    let mut out = super::event::text(runs);
    run_errors(runs, &mut out);
    out.push_str(&sweep_stored(
        group,
        runs,
        kept,
        db,
        "`audiolat export <run>` every trigger",
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
                "load": r.run_config().load,
                "config": config,
                "granted": r.config_as::<EventConfigRecord>().and_then(|c| c.stream.granted),
                "result": r.result,
                "flags": r.flags,
                "error": r.error,
                "triggers": r.triggers,
            })
        }).collect::<Vec<_>>(),
    })
}

/// `audiolat roundtrip`'s text: the runs' tables (sweep `group`), the errors that
/// stopped a run, and where they are kept (`kept`, in the order of `runs`).
pub fn roundtrip_text(group: GroupId, runs: &[RunView], kept: &[Kept], db: &Path) -> String {
    if runs.is_empty() {
        return format!("\nno round-trip runs were made (group {group})\n");
    }
    let mut out = super::roundtrip::text(runs);
    run_errors(runs, &mut out);
    out.push_str(&sweep_stored(
        group,
        runs,
        kept,
        db,
        "`audiolat export <run> --format series` every window",
    ));
    out
}

/// One round trip of [`roundtrip_json`].
fn roundtrip_run_json(r: &RunView, detail: &Value) -> Value {
    let c = r.config_as::<RoundtripConfigRecord>().unwrap_or_default();
    json!({
        "run_id": r.id,
        "status": r.status,
        "load": r.run_config().load,
        "loop": c.loop_description,
        "granted": c.stream.granted,
        "result": r.result,
        "flags": r.flags,
        "error": r.error,
        "windows": detail["windows"],
        "impulses": detail["impulses"],
    })
}

/// `audiolat roundtrip --json`: the runs of sweep `group`, each with its `windows` and
/// `impulses` (`details`, in the same order: an object holding both, as the runner
/// gives them).
pub fn roundtrip_json(group: GroupId, runs: &[RunView], details: &[Value]) -> Value {
    json!({
        "group_id": group,
        "runs": runs.iter().zip(details).map(|(r, detail)| roundtrip_run_json(r, detail))
            .collect::<Vec<_>>(),
    })
}

/// `audiolat net`'s text: the run's tables and where it is kept.
pub fn net_text(run: &RunView, db: &Path, kept: &Kept) -> String {
    let mut out = super::net::text(run);
    out.push_str(&stored_line(run, db, kept, &|id| {
        format!(
            "; `audiolat show {id}` shows it, `audiolat export {id} --format series` every block"
        )
    }));
    out
}

/// `audiolat net respond|emulate`'s text: the run's tables and where it is kept.
pub fn net_end_text(run: &RunView, db: &Path, kept: &Kept) -> String {
    let mut out = super::net::end_text(run);
    out.push_str(&stored_line(run, db, kept, &|_| String::new()));
    out
}
