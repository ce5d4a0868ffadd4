//! A plan run on the terminal: the line that opens it, its progress line, `--dry-run`'s
//! table of cells, and its summary (text and JSON). The caller writes them (the
//! progress line redrawn in place on a terminal); nothing here reads a plan's own types,
//! only what the summary shows.

use std::path::PathBuf;
use std::time::Duration;

use results::RunStatus;
use serde_json::{json, Value};

use crate::data::ReportData;
use crate::terminal::Table;

/// A time left or taken, coarse: `42s`, `3m07s`, `2h05m`.
pub fn fmt_eta(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// The progress line: a bar, cells `done` of `total`, the time left (`None`: not known
/// until a cell has been timed) and the `current` cell.
pub fn progress_line(done: usize, total: usize, left: Option<Duration>, current: &str) -> String {
    let width = 24;
    let filled = (done * width).checked_div(total).unwrap_or(width);
    let eta = left.map_or_else(|| "ETA --".to_string(), |d| format!("ETA {}", fmt_eta(d)));
    format!(
        "[{}{}] {done}/{total} {eta} | {current}",
        "#".repeat(filled),
        "-".repeat(width - filled),
    )
}

/// What opens a plan run: the plan, its group, and how much of it there is to do.
#[derive(Debug, Clone)]
pub struct PlanStart<'a> {
    /// The plan's name.
    pub name: &'a str,
    /// Where the plan came from (a file, `preset NAME`).
    pub source: &'a str,
    /// The plan run (group).
    pub group: results::GroupId,
    /// Cells in the plan run.
    pub cells: usize,
    /// Cells already stored complete (a resume).
    pub already: usize,
    /// Cells to run now.
    pub to_run: usize,
    /// Private JACK server settings the cells need.
    pub servers: usize,
}

/// The line that opens a plan run.
pub fn start_line(s: &PlanStart<'_>) -> String {
    format!(
        "audiolat run: plan `{}` ({}), plan run {}: {} cells{}{}",
        s.name,
        s.source,
        s.group,
        s.cells,
        if s.already > 0 {
            format!(
                ", {} already stored complete, {} to run",
                s.already, s.to_run
            )
        } else {
            String::new()
        },
        if s.servers > 0 {
            format!(", {} private JACK server settings", s.servers)
        } else {
            String::new()
        }
    )
}

/// One cell in `--dry-run`'s table.
#[derive(Debug, Clone)]
pub struct DryRunCell {
    /// The cell's key (its axes' values).
    pub key: String,
    /// Its build profile.
    pub profile: String,
    /// The private server it runs on (rate, period), if any.
    pub server: Option<(u32, u32)>,
    /// Its command line, quoted for a shell.
    pub command: String,
}

/// `--dry-run`: the plan's cells in run order, as a table.
pub fn dry_run_text(name: &str, source: &str, probe: &str, cells: &[DryRunCell]) -> String {
    let mut out = format!(
        "plan `{name}` ({source}): {} cells of `audiolat {probe}`, in run order\n\n",
        cells.len(),
    );
    let mut t =
        Table::new(&["#", "cell", "profile", "server", "command"]).left_align(&[1, 2, 3, 4]);
    for (i, c) in cells.iter().enumerate() {
        t.row(vec![
            (i + 1).to_string(),
            c.key.clone(),
            c.profile.clone(),
            c.server
                .map(|(r, per)| format!("dummy {r} Hz / {per}"))
                .unwrap_or_else(|| "-".into()),
            format!("audiolat {}", c.command),
        ]);
    }
    out.push_str(&t.render());
    out.push_str("\nnothing was run (--dry-run)\n");
    out
}

/// What a plan run came to, as its summary shows it.
#[derive(Debug)]
pub struct PlanSummary {
    /// The plan's name.
    pub plan: String,
    /// The plan run (group).
    pub group: results::GroupId,
    /// Its status as closed.
    pub status: RunStatus,
    /// Cells in the plan run.
    pub cells: usize,
    /// Cells stored complete.
    pub complete: usize,
    /// Cells that ran and did not complete.
    pub failed: usize,
    /// How long this start of it took.
    pub elapsed: Duration,
    /// The HTML report, when written.
    pub report: Option<PathBuf>,
    /// The database.
    pub db: PathBuf,
    /// The command that continues it after `--resume GROUP` (`run FILE`,
    /// `reproduce STUDY`).
    pub resume: String,
    /// The plan run read back (its tables), when it could be.
    pub data: Option<ReportData>,
}

/// `--json`: the summary as one object, with the tables.
pub fn summary_json(s: &PlanSummary) -> Value {
    json!({
        "group_id": s.group,
        "plan": s.plan,
        "status": s.status,
        "cells": s.cells,
        "complete": s.complete,
        "failed": s.failed,
        "elapsed_s": s.elapsed.as_secs_f64(),
        "report": s.report,
        "tables": s.data.as_ref().map(crate::paper::tables_json),
        "gate_failures": s.data.as_ref().map(|d| crate::view::gates::failures(d).into_iter()
            .map(|(cell, run, gates)| json!({"cell": cell, "run_id": run, "gates": gates}))
            .collect::<Vec<_>>()),
    })
}

/// The tables, the answer of the runs ([`crate::summary::text`]), the summary line,
/// where the report is, and how to continue.
pub fn summary_text(s: &PlanSummary) -> String {
    let group = s.group;
    let mut out = s
        .data
        .as_ref()
        .map(|d| crate::paper::tables_text(d) + &crate::summary::text(d))
        .unwrap_or_default();
    out.push_str(&format!(
        "\nplan run {group} ({}): {} of {} cells complete{} in {}; stored in {}\n",
        s.status,
        s.complete,
        s.cells,
        if s.failed > 0 {
            format!(", {} failed", s.failed)
        } else {
            String::new()
        },
        fmt_eta(s.elapsed),
        s.db.display()
    ));
    if let Some(p) = &s.report {
        out.push_str(&format!("report: {}\n", p.display()));
    }
    if s.status != RunStatus::Complete {
        out.push_str(&format!(
            "continue it with: audiolat --db {} {} --resume {group}\n",
            s.db.display(),
            s.resume
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_line_fills_its_bar_and_says_the_time_left() {
        let line = progress_line(1, 4, None, "a=1");
        assert_eq!(line, "[######------------------] 1/4 ETA -- | a=1");
        let line = progress_line(4, 4, Some(Duration::from_secs(3725)), "b");
        assert_eq!(line, "[########################] 4/4 ETA 1h02m | b");
        assert_eq!(progress_line(0, 0, None, "x").matches('#').count(), 24);
        assert_eq!(fmt_eta(Duration::from_secs(187)), "3m07s");
    }
}
