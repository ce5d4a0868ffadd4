//! The plan run's flow ([`execute`]) without a cell's process: a resume of a plan run
//! whose cells are all stored complete, and a resume that does not fit.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use results::store::RunFilter;
use results::{RunStatus, Store, ToolInfo};

use super::*;
use crate::plan::{CellCommand, CellRefusal, Flag};

/// Every cell parses; the probe takes `--quiet` and no flags the plan needs.
struct Cells;

impl CellChecker for Cells {
    fn flags(&self, _: &str) -> Vec<Flag> {
        vec![Flag {
            name: "duration".into(),
            takes_value: true,
            repeated: false,
        }]
    }

    fn takes_quiet(&self, _: &str) -> bool {
        true
    }

    fn check(&self, _: &CellCommand) -> Result<Option<ServerKey>, CellRefusal> {
        Ok(None)
    }
}

/// What the plan run told.
#[derive(Default)]
struct Told {
    started: Vec<(GroupId, usize, usize, usize)>,
    news: Vec<String>,
}

impl PlanObserver for Told {
    fn started(&mut self, s: &PlanStarted<'_>) {
        self.started.push((s.group, s.cells, s.already, s.to_run));
    }

    fn note(&mut self, text: &str) {
        self.news.push(text.to_string());
    }
}

fn context() -> Context {
    Context {
        tool: ToolInfo {
            version: "0.0.0".into(),
            git_commit: "test".into(),
            build_profile: "test".into(),
        },
        command_line: "audiolat run t.toml".into(),
        stop: Arc::new(AtomicBool::new(false)),
        plan_cell: None,
        load_exe: None,
    }
}

const PLAN: &str = r#"
name = "t"
probe = "jitter"
repeats = 2

[set]
duration = "1"
"#;

#[test]
fn a_resumed_plan_run_with_every_cell_complete_runs_none_and_closes_complete() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let store = Store::open(&db).unwrap();
    let plan = Plan::parse(PLAN, "t.toml", &Cells).unwrap();
    let planned = order(&plan, &Cells, &|| false).unwrap().unwrap();
    assert_eq!(planned.len(), 2);
    // A plan run left with its cells complete but itself not closed.
    let g = create_group("audiolat run t.toml", &store, &plan, &planned).unwrap();
    store_cells(&store, g, &planned).unwrap();
    for c in store.plan_cells(g).unwrap() {
        store
            .finish_plan_cell(c.id, RunStatus::Complete, None)
            .unwrap();
    }
    let run = PlanRun {
        plan: &plan,
        planned: &planned,
        resume: Some(Resume::Latest),
        quiet: true,
    };
    let mut told = Told::default();
    let end = execute(&context(), &db, &store, &Cells, &run, &mut told).unwrap();
    let PlanRunEnd::Ran(ran) = end else {
        panic!("not run: {end:?}");
    };
    assert_eq!(ran.group, g);
    assert_eq!(ran.closed.status, RunStatus::Complete);
    assert_eq!((ran.closed.cells, ran.closed.complete), (2, 2));
    assert_eq!(ran.tally.failed, 0);
    assert!(ran.tally.plan_error.is_none());
    assert_eq!(told.started, [(g, 2, 2, 0)]);
    assert!(told.news.is_empty(), "{:?}", told.news);
    assert_eq!(store.group(g).unwrap().status, RunStatus::Complete);
    // The doctor run of this start is filed under the plan run.
    let doctor = RunFilter {
        probe: Some("doctor".into()),
        group_id: Some(g),
        ..RunFilter::default()
    };
    assert_eq!(store.list_runs(&doctor).unwrap().len(), 1);
}

#[test]
fn a_resume_with_no_unfinished_plan_run_is_refused_before_anything_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let store = Store::open(&db).unwrap();
    let plan = Plan::parse(PLAN, "t.toml", &Cells).unwrap();
    let planned = order(&plan, &Cells, &|| false).unwrap().unwrap();
    let run = PlanRun {
        plan: &plan,
        planned: &planned,
        resume: Some(Resume::Latest),
        quiet: true,
    };
    let mut told = Told::default();
    let e = execute(&context(), &db, &store, &Cells, &run, &mut told).unwrap_err();
    assert!(
        matches!(&e, PlanRunError::Refused(m) if m.contains("no unfinished plan run of `t`")),
        "{e}"
    );
    assert!(told.started.is_empty());
    assert!(store.list_groups(None).unwrap().is_empty());
}

#[test]
fn a_plan_runs_status_follows_its_cells_as_every_groups_does() {
    use RunStatus::{Complete, Failed, Interrupted, Running};
    let c = Some(Complete);
    assert_eq!(plan_status(&[c, c], false), Complete);
    // A cell whose server went away is interrupted, and so is the plan run.
    assert_eq!(plan_status(&[c, Some(Interrupted)], false), Interrupted);
    assert_eq!(plan_status(&[c, None], false), Interrupted);
    assert_eq!(plan_status(&[c, Some(Failed)], false), Failed);
    assert_eq!(plan_status(&[c, Some(Running)], false), Failed);
    // A stop that kept a cell from running outranks a failed cell; an error that ended
    // the plan run outranks both.
    assert_eq!(plan_status(&[Some(Failed), None], false), Interrupted);
    assert_eq!(plan_status(&[c, Some(Interrupted)], true), Failed);
    // An empty plan run is complete.
    assert_eq!(plan_status(&[], false), Complete);
}
