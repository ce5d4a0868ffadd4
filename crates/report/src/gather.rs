//! Reading what a report or comparison shows from the store: a plan run with its cells,
//! any other group, or a list of runs ([`ReportData`]). Reads only; the store's errors
//! pass through.

use results::records::doctor::DoctorResultRecord;
use std::path::{Path, PathBuf};

use results::model::Finding;
use results::records::{Record, StreamConfigRecord};
use results::run::RunRecord;
use results::{GroupId, Measurement, RunFilter, RunId, RunStatus, Store, StoreError, ToolInfo};

use crate::data::{CellData, ReportData, RunData};

/// What a report is about: one run or one group, by id, or every run of a host or a
/// kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// One run.
    Run(RunId),
    /// A group of runs (a plan run, a suite, a sweep).
    Group(GroupId),
    /// Every complete run made on this host.
    Host(String),
    /// Every complete run made under this kernel release.
    Kernel(String),
}

/// Every complete run `filter` finds (but doctor's), oldest first, one cell each: a
/// configuration run more than once has repeats, whose spread is the noise a
/// comparison judges changes against. Returns how many runs.
fn run_set(store: &Store, filter: RunFilter, data: &mut ReportData) -> Result<usize, StoreError> {
    let runs = store.list_runs(&RunFilter {
        status: Some(RunStatus::Complete),
        ..filter
    })?;
    let mut n = 0;
    for r in runs.iter().rev().filter(|r| r.probe.measures) {
        data.cells.push(single_cell(run_data(store, r.id)?));
        n += 1;
    }
    Ok(n)
}

fn run_data(store: &Store, id: RunId) -> Result<RunData, StoreError> {
    let record = store.run(id)?;
    let triggers = if record.probe.triggers {
        store.triggers(id)?
    } else {
        Vec::new()
    };
    let event_counts = store.event_counts(id)?;
    // Each kind up to its own limit: a flood of one kind does not hide the others.
    let mut events = Vec::new();
    for (kind, _) in &event_counts {
        events.extend(store.events_of_kind(id, kind, Some(crate::data::EVENTS_SHOWN))?);
    }
    events.sort_by_key(|e: &results::Event| e.mono_ns);
    Ok(RunData {
        measurements: store
            .measurements(id)?
            .into_iter()
            .map(|m| m.measurement)
            .collect(),
        series: store.series(id)?,
        event_counts,
        triggers,
        events,
        gates: store.gates(id)?,
        record,
    })
}

fn doctor_of(run: &RunData) -> Option<Vec<Finding>> {
    DoctorResultRecord::from_json(&run.record.result).map(|r| r.findings)
}

/// An empty report made now by `tool`.
fn base(tool: &ToolInfo) -> ReportData {
    ReportData {
        generated_at: results::model::rfc3339_utc(std::time::SystemTime::now()),
        tool_version: format!("{} ({})", tool.version, tool.git_commit),
        ..Default::default()
    }
}

/// What a run outside a plan measured, in a few words for its cell: the probe, its
/// backend and period, and its load (`event, jack 128 frames at 44.1 kHz, cpu load`).
pub(crate) fn describe(r: &RunRecord) -> String {
    let mut words = vec![r.probe.label(&r.config)];
    // An audio stream's (a jitter run has no backend: its rate is its wake-ups').
    let stream = StreamConfigRecord::from_json(&r.config).unwrap_or_default();
    if let Some(b) = stream.backend {
        let mut w = b;
        if let Some(p) = stream.period_frames {
            w.push_str(&format!(" {p} frames"));
        }
        if let Some(rate) = stream.rate_hz {
            w.push_str(&format!(" at {} kHz", rate as f64 / 1000.0));
        }
        words.push(w);
    }
    match r.load_record().map(|l| l.spec) {
        Some(l) if l != "none" => words.push(format!("{l} load")),
        _ => words.push("idle".into()),
    }
    words.join(", ")
}

fn single_cell(run: RunData) -> CellData {
    CellData {
        key: format!("run {}: {}", run.record.id, describe(&run.record)),
        axes: Default::default(),
        profile: run.record.tool.build_profile.clone(),
        status: Some(run.record.status),
        error: None,
        run: Some(run),
        source: None,
    }
}

/// A group's report, made by `tool`: a plan run's cells (each with its latest run), or
/// any group's runs.
pub fn group(store: &Store, id: GroupId, tool: &ToolInfo) -> Result<ReportData, StoreError> {
    let g = store.group(id)?;
    let mut data = base(tool);
    let runs = store.list_runs(&RunFilter {
        group_id: Some(id),
        ..Default::default()
    })?;
    let mut doctor = None;
    // Oldest first.
    for r in runs.iter().rev() {
        if !r.probe.measures {
            doctor = doctor_of(&run_data(store, r.id)?);
        }
    }
    if g.kind == "plan" {
        data.subject = format!(
            "plan run {id} ({}, {})",
            g.detail["name"].as_str().unwrap_or("?"),
            g.status
        );
        data.plan = Some(g.detail.clone());
        for c in store.plan_cells(id)? {
            let run = match c.run_id {
                Some(r) => Some(run_data(store, r)?),
                None => None,
            };
            data.cells.push(CellData {
                key: c.key,
                axes: c
                    .axes
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                            .collect()
                    })
                    .unwrap_or_default(),
                profile: c.profile,
                status: c.status,
                error: c.error,
                run,
                source: None,
            });
        }
    } else {
        data.subject = format!("group {id} ({}, {})", g.kind, g.status);
        for r in runs.iter().rev().filter(|r| r.probe.measures) {
            data.cells.push(single_cell(run_data(store, r.id)?));
        }
    }
    data.doctor = doctor.or_else(|| latest_doctor(store));
    data.group = Some(g);
    Ok(data)
}

fn latest_doctor(store: &Store) -> Option<Vec<Finding>> {
    let last = store
        .list_runs(&RunFilter {
            probe: Some(results::probe_kind::DOCTOR.name.into()),
            status: Some(RunStatus::Complete),
            limit: Some(1),
            ..Default::default()
        })
        .ok()?
        .into_iter()
        .next()?;
    doctor_of(&run_data(store, last.id).ok()?)
}

/// Runs and groups as one report made by `tool`: one group alone is that group's report.
pub fn subjects(
    store: &Store,
    subjects: &[Subject],
    tool: &ToolInfo,
) -> Result<ReportData, StoreError> {
    if let [Subject::Group(g)] = subjects {
        return group(store, *g, tool);
    }
    let mut data = base(tool);
    let mut names = Vec::new();
    for s in subjects {
        let before = data.cells.len();
        match s.clone() {
            Subject::Host(h) => {
                let filter = RunFilter {
                    host: Some(h.clone()),
                    ..Default::default()
                };
                let n = run_set(store, filter, &mut data)?;
                names.push(format!("host {h} ({n} runs)"));
            }
            Subject::Kernel(k) => {
                let filter = RunFilter {
                    kernel: Some(k.clone()),
                    ..Default::default()
                };
                let n = run_set(store, filter, &mut data)?;
                names.push(format!("kernel {k} ({n} runs)"));
            }
            Subject::Group(g) => {
                let d = group(store, g, tool)?;
                names.push(format!("group {g}"));
                data.cells.extend(d.cells);
                data.doctor = data.doctor.or(d.doctor);
            }
            Subject::Run(id) => {
                names.push(format!("run {id}"));
                let run = run_data(store, id)?;
                if !run.record.probe.measures {
                    data.doctor = doctor_of(&run);
                }
                data.cells.push(single_cell(run));
            }
        }
        // With several subjects, each cell says which it came from (the comparison's
        // series); a name is the subject without its run count.
        if subjects.len() > 1 {
            let name = names.last().map(|n| source_name(n)).unwrap_or_default();
            for c in &mut data.cells[before..] {
                c.source = Some(name.clone());
            }
        }
    }
    data.subject = names.join(", ");
    if data.doctor.is_none() {
        data.doctor = latest_doctor(store);
    }
    Ok(data)
}

/// A subject's name as a series label: `host a (12 runs)` is `host a`.
fn source_name(name: &str) -> String {
    match name.rsplit_once(" (") {
        Some((head, tail)) if tail.ends_with(" runs)") => head.to_string(),
        _ => name.to_string(),
    }
}

/// Where a report goes by default: beside the database `db`, named for the database and
/// `what`: `NAME-report-WHAT.html` beside `NAME.db` (`audiolat-report-plan-3.html` beside
/// `audiolat.db`), so that two databases in one directory never write over each other's
/// reports. A PostgreSQL store is no directory: its reports go in the working one, named
/// for its server and database (`HOST-PORT-DBNAME-report-WHAT.html`).
pub fn default_path(db: &Path, what: &str) -> PathBuf {
    if let Some(url) = results::store::postgres_url(db) {
        return PathBuf::from(".").join(format!("{}-report-{what}.html", url_name(url)));
    }
    let dir = match db.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let file = db
        .file_name()
        .map_or_else(|| "audiolat".into(), |n| n.to_string_lossy().into_owned());
    let name = match file.strip_suffix(".db") {
        Some(stem) if !stem.is_empty() => stem,
        _ => &file,
    };
    dir.join(format!("{name}-report-{what}.html"))
}

/// A PostgreSQL URL as a file name: its host, port and database, without its user,
/// password or parameters (`postgres://u:pw@db.lab:5433/runs?x=1` is `db.lab-5433-runs`).
fn url_name(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let rest = rest.split(['?', '#']).next().unwrap_or(rest);
    let name: String = rest
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    match name.trim_matches('-') {
        "" => "postgres".into(),
        n => n.into(),
    }
}

/// The measurement a run is summarised by in lists, as every view says it
/// ([`results::ProbeKind::headline`]).
pub fn headline(store: &Store, run: &RunRecord) -> Result<Option<Measurement>, StoreError> {
    let measurements: Vec<Measurement> = store
        .measurements(run.id)?
        .into_iter()
        .map(|m| m.measurement)
        .collect();
    Ok(run.probe.headline(&run.config, &measurements).cloned())
}
