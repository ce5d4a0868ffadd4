//! A run's cells in the lifecycle, with fake cells (no cgroups, no root): admitted and
//! described before anything is stored, a refusal storing nothing, recorded as granted,
//! and undone after the load stops on every path (complete, failed, panicked).

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use qos::partition::PlacedCell;
use qos::{Admission, CellPlan, CellSet};
use serde_json::{json, Value};

use super::{context, load_script, test_cell, MemorySink, TestProbe};
use results::{RunId, RunStatus};

use crate::{run, MadeCells, RunError, Unobserved};

thread_local! {
    /// What the fake cells saw, in order, on this test's thread.
    static CELLS_SEEN: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    /// The load script whose processes must be gone when the cells are undone.
    static LOAD_SCRIPT: RefCell<Option<PathBuf>> = const { RefCell::new(None) };
}

fn seen(line: String) {
    CELLS_SEEN.with(|s| s.borrow_mut().push(line));
}

fn cells_seen() -> Vec<String> {
    CELLS_SEEN.with(|s| std::mem::take(&mut *s.borrow_mut()))
}

/// Live (not zombie) processes running `script`.
fn running(script: &Path) -> usize {
    let needle = script.as_os_str().as_encoded_bytes();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit(')')
                .next()
                .and_then(|s| s.split_whitespace().next())
                == Some("Z");
            !zombie
                && std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c.split(|b| *b == 0).any(|arg| arg == needle))
        })
        .count()
}

/// Cells placed nowhere (no cpuset, no cpuacct) that only say what is done to them.
struct FakeCells(Vec<PlacedCell>);

impl MadeCells for FakeCells {
    fn placed(&self) -> &[PlacedCell] {
        &self.0
    }

    fn granted(&self) -> Value {
        json!({"cells": "fake"})
    }

    fn undo(self: Box<Self>) -> Vec<String> {
        vec!["one cgroup stayed".to_string()]
    }
}

impl Drop for FakeCells {
    fn drop(&mut self) {
        let alive = LOAD_SCRIPT
            .with(|s| s.borrow().as_deref().map(running))
            .unwrap_or(0);
        seen(format!("undone with {alive} load processes running"));
    }
}

fn make_fake(set: &CellSet, admission: &Admission) -> Result<Box<dyn MadeCells>, String> {
    seen(format!(
        "made {} cells, {} exclusive",
        set.cells.len(),
        admission.exclusive.len()
    ));
    let placed = set
        .cells
        .iter()
        .map(|cell| PlacedCell {
            cell: cell.clone(),
            cpus: Vec::new(),
            cpuset: None,
            cpuacct: None,
            cpuset_v2: false,
            exclusive_granted: false,
        })
        .collect();
    Ok(Box::new(FakeCells(placed)))
}

fn refuse_to_make(_: &CellSet, _: &Admission) -> Result<Box<dyn MadeCells>, String> {
    Err("not root".to_string())
}

/// One best-effort cell (no CPUs of its own: admitted anywhere, without root).
fn plan() -> CellPlan {
    let mut cells = CellSet::default();
    cells
        .push(CellSet::parse_flag("ep=best-effort:policy=batch,nice=5").expect("a cell"))
        .expect("one cell");
    CellPlan {
        cells,
        host_cell: None,
    }
}

#[test]
fn cells_are_described_granted_and_undone_with_the_run() {
    let sink = MemorySink::default();
    let mut cell = test_cell(TestProbe::new(2, &sink), "none");
    cell.cells = Some(plan());
    cell.make_cells = make_fake;
    let run = run(&context(None), &sink, &mut cell, None, &Unobserved).expect("the run");
    assert_eq!(run.status, RunStatus::Complete);
    assert_eq!(
        cells_seen(),
        [
            "made 1 cells, 0 exclusive",
            "undone with 0 load processes running"
        ]
    );
    let record = run.cells.expect("the cells' record");
    assert!(!record.undone());
    assert_eq!(run.flags["cells_undone"], false);
    let stored = sink.run(RunId(1));
    let info = stored.info.as_ref().expect("begun");
    assert_eq!(info.config["cells"], plan().cells.to_json());
    assert_eq!(info.config["host_cell"], Value::Null);
    assert_eq!(info.qos_requested["cells"], plan().cells.to_json());
    assert!(info.qos_requested["admission"].is_array());
    assert_eq!(stored.qos_granted["cells"], json!({"cells": "fake"}));
    assert_eq!(
        stored.qos_granted["cells_undo_problems"],
        json!(["one cgroup stayed"])
    );
    assert_eq!(stored.flags["cells_undone"], false);
}

#[test]
fn a_run_without_cells_stores_no_cells() {
    let sink = MemorySink::default();
    let mut cell = test_cell(TestProbe::new(1, &sink), "none");
    cell.make_cells = make_fake;
    let run = run(&context(None), &sink, &mut cell, None, &Unobserved).expect("the run");
    assert!(run.cells.is_none());
    assert!(cells_seen().is_empty());
    let stored = sink.run(RunId(1));
    assert!(stored
        .info
        .as_ref()
        .expect("begun")
        .config
        .get("cells")
        .is_none());
    assert!(stored.flags.get("cells_undone").is_none());
}

#[test]
fn cells_that_cannot_be_made_or_admitted_store_nothing() {
    let sink = MemorySink::default();
    let mut cell = test_cell(TestProbe::new(1, &sink), "none");
    cell.cells = Some(plan());
    cell.make_cells = refuse_to_make;
    let err = run(&context(None), &sink, &mut cell, None, &Unobserved).expect_err("refused");
    assert!(
        matches!(&err, RunError::Refused(why) if why == "not root"),
        "{err}"
    );
    // A load placed in a cell the plan does not have.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (script, _die) = load_script(dir.path());
    let mut cell = test_cell(TestProbe::new(1, &sink), "ep:1@video");
    cell.cells = Some(plan());
    cell.make_cells = make_fake;
    let err =
        run(&context(Some(script)), &sink, &mut cell, None, &Unobserved).expect_err("refused");
    assert!(
        matches!(&err, RunError::CellsRefused(qos::PlanError::NoSuchCell { cell, .. }) if cell == "video"),
        "{err}"
    );
    assert!(sink.runs.borrow().is_empty());
    assert!(cells_seen().is_empty());
}

#[test]
fn cells_are_undone_after_the_load_stops_on_every_path() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (script, _die) = load_script(dir.path());
    LOAD_SCRIPT.with(|s| *s.borrow_mut() = Some(script.clone()));
    let ctx = context(Some(script));
    let undone = "undone with 0 load processes running";
    // Complete.
    let sink = MemorySink::default();
    let mut cell = test_cell(TestProbe::new(2, &sink), "ep:1@ep");
    cell.cells = Some(plan());
    cell.make_cells = make_fake;
    run(&ctx, &sink, &mut cell, None, &Unobserved).expect("the run");
    assert_eq!(cells_seen(), ["made 1 cells, 0 exclusive", undone]);
    // A failed probe.
    let sink = MemorySink::default();
    let mut probe = TestProbe::new(2, &sink);
    probe.fail = true;
    let mut cell = test_cell(probe, "ep:1@ep");
    cell.cells = Some(plan());
    cell.make_cells = make_fake;
    run(&ctx, &sink, &mut cell, None, &Unobserved).expect_err("a failure");
    assert_eq!(cells_seen(), ["made 1 cells, 0 exclusive", undone]);
    // The failed run keeps what its cells were granted and what could not be undone
    // (the fake's cgroup that stayed).
    assert_eq!(sink.run(RunId(1)).flags["cells_undone"], false);
    assert_eq!(
        sink.run(RunId(1)).qos_granted["cells_undo_problems"],
        json!(["one cgroup stayed"])
    );
    // A panicking probe: a failed run, the cells undone all the same.
    let sink = MemorySink::default();
    let mut probe = TestProbe::new(2, &sink);
    probe.panic = true;
    let mut cell = test_cell(probe, "ep:1@ep");
    cell.cells = Some(plan());
    cell.make_cells = make_fake;
    let e = run(&ctx, &sink, &mut cell, None, &Unobserved).expect_err("a panic");
    assert!(
        matches!(
            &e,
            RunError::Failed {
                failure: crate::Failure::Panicked(_),
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(sink.run(RunId(1)).status, Some(RunStatus::Failed));
    assert_eq!(sink.run(RunId(1)).flags["cells_undone"], false);
    assert_eq!(cells_seen(), ["made 1 cells, 0 exclusive", undone]);
    LOAD_SCRIPT.with(|s| *s.borrow_mut() = None);
}
