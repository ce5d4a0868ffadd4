//! The results model of a run just made, built in memory from the values the runner
//! stored (so a run whose storing failed still shows what it measured), for the same
//! renderers `audiolat show` uses on a stored run.

use results::RunView;
use serde_json::json;

use crate::runner::{EventRun, JitterRun, NetEndRun, NetRun, RoundtripRun};

/// The view of a fresh jitter run: what `jitter_run` stored.
pub fn jitter_view(run: &JitterRun) -> RunView {
    let o = &run.outcome;
    let mut config = o.config.to_json();
    config["load"] = run.load["spec"].clone();
    RunView {
        id: run.run_id,
        probe: "jitter".into(),
        status: run.status,
        machine: probes::machine::machine(),
        config,
        load: run.load.clone(),
        qos_requested: serde_json::Value::Null,
        qos_granted: o.qos_granted(),
        flags: run.flags.clone(),
        result: o.result_json(),
        error: run.error.clone(),
        started_mono_ns: o.start_ns,
        measurements: run.measurements.clone(),
        events: o.events(),
        triggers: Vec::new(),
    }
}

/// The view of a fresh round-trip run: what `roundtrip_run` stored (of its
/// configuration, the parts a report reads).
pub fn roundtrip_view(run: &RoundtripRun) -> RunView {
    let o = &run.outcome;
    let config = json!({
        "loop": run.cell.loop_description,
        "load": run.cell.load.to_string(),
        "insert_delay_frames": o.config.insert_delay_frames,
        "granted": run.cell.granted,
    });
    RunView {
        id: run.run_id,
        probe: "roundtrip".into(),
        status: run.status,
        machine: probes::machine::machine(),
        config,
        load: json!({"spec": run.cell.load.to_string()}),
        qos_requested: serde_json::Value::Null,
        qos_granted: o.qos_granted(),
        flags: run.flags.clone(),
        result: o.result_json(),
        error: run.error.clone(),
        started_mono_ns: o.start_ns,
        measurements: o.measurements(),
        events: o.events.clone(),
        triggers: Vec::new(),
    }
}

/// `audiolat jitter`'s text: the run's tables and where it is stored.
pub fn jitter_text(run: &JitterRun, db: &std::path::Path) -> String {
    let mut out = report::view::jitter::text(&jitter_view(run));
    out.push_str(&format!(
        "\nstored as run {} in {}\n",
        run.run_id,
        db.display()
    ));
    out
}

/// `audiolat jitter --json`.
pub fn jitter_json(run: &JitterRun) -> serde_json::Value {
    report::view::jitter::json(&jitter_view(run))
}

/// The view of a fresh event run: what `event_run` stored (of its configuration, the
/// probe's own and the parts of the cell a report reads).
pub fn event_view(run: &EventRun) -> RunView {
    let o = &run.outcome;
    let mut config = o.config.to_json();
    config["load"] = json!(run.load);
    config["granted"] = run.granted.clone().unwrap_or(serde_json::Value::Null);
    RunView {
        id: run.run_id,
        probe: "event".into(),
        status: run.status,
        machine: probes::machine::machine(),
        config,
        load: json!({"spec": run.load}),
        qos_requested: serde_json::Value::Null,
        qos_granted: o.qos_granted(),
        flags: run.flags.clone(),
        result: o.result_json(),
        error: run.error.clone(),
        started_mono_ns: o.start_ns,
        measurements: o.measurements(),
        events: Vec::new(),
        triggers: o.rows.clone(),
    }
}

/// `audiolat event`'s text: the runs' tables, the errors that stopped a run, and where
/// they are stored.
pub fn event_text(group: i64, runs: &[EventRun], db: &std::path::Path) -> String {
    if runs.is_empty() {
        return format!("\nno event runs were made (group {group})\n");
    }
    let views: Vec<RunView> = runs.iter().map(event_view).collect();
    let mut out = report::view::event::text(&views);
    for r in runs {
        if let Some(e) = &r.error {
            out.push_str(&format!("run {}: {e}\n", r.run_id));
        }
    }
    out.push_str(&format!(
        "\nstored in {} (group {group}); `audiolat show <run>` shows one, `audiolat export <run>` every trigger\n",
        db.display()
    ));
    out
}

/// `audiolat roundtrip`'s text: the runs' tables, the errors that stopped a run, and
/// where they are stored.
pub fn roundtrip_text(group: i64, runs: &[RoundtripRun], db: &std::path::Path) -> String {
    if runs.is_empty() {
        return format!("\nno round-trip runs were made (group {group})\n");
    }
    let views: Vec<RunView> = runs.iter().map(roundtrip_view).collect();
    let mut out = report::view::roundtrip::text(&views);
    for r in runs {
        if let Some(e) = &r.error {
            out.push_str(&format!("run {}: {e}\n", r.run_id));
        }
    }
    out.push_str(&format!(
        "\nstored in {} (group {group}); `audiolat show <run>` shows one, `audiolat export <run> --format series` every window\n",
        db.display()
    ));
    out
}

/// `--find-min-buffer`'s verdict over a descending sweep: the views of the smallest
/// buffer that held and of the first that did not.
fn min_buffer(runs: &[RoundtripRun]) -> (Option<RunView>, Option<RunView>) {
    let (held, failed) = ::runner::min_buffer::verdict(runs);
    let view = |i: Option<usize>| i.map(|i| roundtrip_view(&runs[i]));
    (view(held), view(failed))
}

/// `--find-min-buffer`'s verdict as text.
pub fn min_buffer_text(runs: &[RoundtripRun]) -> String {
    let (held, failed) = min_buffer(runs);
    report::view::min_buffer::text(held.as_ref(), failed.as_ref())
}

/// `--find-min-buffer`'s verdict as JSON.
pub fn min_buffer_json(runs: &[RoundtripRun]) -> serde_json::Value {
    let (held, failed) = min_buffer(runs);
    report::view::min_buffer::json(held.as_ref(), failed.as_ref())
}

/// The view of a fresh net run: what `net_run` stored (of its configuration and grants,
/// the parts a report reads).
pub fn net_view(run: &NetRun) -> RunView {
    let (o, c) = (&run.outcome, &run.config);
    let pressed: Vec<usize> = (0..c.input.len())
        .filter(|&p| c.input[p].pressure > 0.0)
        .collect();
    let pad = c.input.iter().find(|p| p.pressure > 0.0);
    let config = json!({
        "transport": if c.netns { "UDP over a veth pair between two network namespaces" } else { "UDP over loopback" },
        "pads_pressed": pressed,
        "pad": pad.map(|p| json!({"x": p.x, "y": p.y, "pressure": p.pressure})),
        "workers": c.workers,
        "poll": c.poll.to_string(),
        "load": run.load.to_string(),
        "link": c.link.map(|l| json!({"mbps": l.mbps, "reserve_mbps": l.reserve_mbps, "by": l.by.to_string()})),
    });
    let mut qos_granted = json!({});
    if let Some(cells) = &run.cells {
        qos_granted["cells"] = cells.clone();
        qos_granted["cells_undone"] = json!(run.cells_undone);
    }
    RunView {
        id: run.run_id,
        probe: "net".into(),
        status: run.status,
        machine: probes::machine::machine(),
        config,
        load: json!({"spec": run.load.to_string()}),
        qos_requested: json!({"threads": c.policy.to_string()}),
        qos_granted,
        flags: run.flags.clone(),
        result: o.result_json(),
        error: run.storage_error.clone(),
        started_mono_ns: o.start_ns,
        measurements: o.measurements(),
        events: Vec::new(),
        triggers: Vec::new(),
    }
}

/// `audiolat net --json`.
pub fn net_json(run: &NetRun) -> serde_json::Value {
    report::view::net::json(&net_view(run))
}

/// `audiolat net`'s text: the run's tables and where it is stored.
pub fn net_text(run: &NetRun, db: &std::path::Path) -> String {
    let mut out = report::view::net::text(&net_view(run));
    out.push_str(&format!(
        "\nstored as run {} in {}; `audiolat show {}` shows it, `audiolat export {} --format series` every block\n",
        run.run_id,
        db.display(),
        run.run_id,
        run.run_id
    ));
    out
}

/// The view of a fresh run of one end of `audiolat net`: what `net_end_run` stored.
pub fn net_end_view(run: &NetEndRun) -> RunView {
    RunView {
        id: run.run_id,
        probe: "net".into(),
        status: run.status,
        machine: probes::machine::machine(),
        config: serde_json::Value::Null,
        load: serde_json::Value::Null,
        qos_requested: serde_json::Value::Null,
        qos_granted: serde_json::Value::Null,
        flags: run.flags.clone(),
        result: run.result.clone(),
        error: None,
        started_mono_ns: 0,
        measurements: run.measurements.clone(),
        events: Vec::new(),
        triggers: Vec::new(),
    }
}

/// `audiolat net respond|emulate`'s text: the run's tables and where it is stored.
pub fn net_end_text(run: &NetEndRun, db: &std::path::Path) -> String {
    let mut out = report::view::net::end_text(&net_end_view(run));
    out.push_str(&format!(
        "\nstored as run {} in {}\n",
        run.run_id,
        db.display()
    ));
    out
}
