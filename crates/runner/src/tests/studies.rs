//! The built-in studies' plans, without root: the experiments' cases as their presets
//! design them, and the suite's choice of what runs given what this machine has.

use std::path::PathBuf;
use std::time::Duration;

use results::GroupId;

use engine::jack::server::{ServerMode, ServerRequest};
use probes::net::ReserveBy;

use crate::experiment::ExperimentDesign;
use crate::suite::{jitter_scenarios, SuitePlan};

const ISOLATION: &str = include_str!("../../../../presets/tessellation2013.toml");
const BANDWIDTH: &str = include_str!("../../../../presets/tessellation2013-bandwidth.toml");

#[test]
fn the_isolation_experiment_reads_its_four_cases_from_the_preset() {
    let d = ExperimentDesign::from_preset(ISOLATION).unwrap();
    assert_eq!(d.name, "tessellation2013");
    assert_eq!(d.metric, "response_time");
    assert!(!d.netns);
    assert_eq!(d.link_mbps, None);
    let labels: Vec<&str> = d.cases.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "alone, no cells",
            "video + EP, no cells",
            "alone, dedicated cell",
            "video + EP in a best-effort cell, dedicated cell"
        ]
    );
    let loads: Vec<&str> = d.cases.iter().map(|c| c.load.as_str()).collect();
    assert_eq!(
        loads,
        ["none", "video+ep", "none", "video@others+ep@others"]
    );
    assert!(d.cases[..2]
        .iter()
        .all(|c| c.cells.is_empty() && c.host_cell.is_none()));
    for c in &d.cases[2..] {
        assert_eq!(
            c.cells,
            ["music=dedicated:cpus=1", "others=best-effort:policy=batch"]
        );
        assert_eq!(c.host_cell.as_deref(), Some("music"));
        assert_eq!((c.reserve_mbps, c.reserve_by), (None, None));
    }
}

#[test]
fn the_isolation_experiment_moves_the_music_cell_to_the_cpu_asked_for() {
    if engine::rt::online_cpus().len() < 2 {
        eprintln!("skipped: the preset's music cell is on CPU 1");
        return;
    }
    let d = ExperimentDesign::from_preset(ISOLATION).unwrap();
    let cases = d.cases(Some(0), None).unwrap();
    assert_eq!(cases.len(), 4);
    let dedicated = &cases[3];
    assert_eq!(dedicated.cells.host_cell.as_deref(), Some("music"));
    let music = dedicated.cells.cells.get("music").unwrap();
    assert_eq!(music.cpus, Some(vec![0]));
    assert!(dedicated.cells.cells.get("others").unwrap().cpus.is_none());
    assert!(cases.iter().all(|c| c.link.is_none()));
    assert_eq!(cases[1].load.to_string(), "video+ep");
}

#[test]
fn the_bandwidth_experiment_reads_its_reservations_from_the_preset() {
    let d = ExperimentDesign::from_preset(BANDWIDTH).unwrap();
    assert_eq!(d.metric, "end_to_end");
    assert!(d.netns);
    assert_eq!(d.link_mbps, Some(1000.0));
    let design: Vec<(Option<f64>, Option<ReserveBy>)> = d
        .cases
        .iter()
        .map(|c| (c.reserve_mbps, c.reserve_by))
        .collect();
    let (tc, service) = (Some(ReserveBy::Tc), Some(ReserveBy::Service));
    assert_eq!(
        design,
        [
            (None, tc),
            (Some(240.0), tc),
            (Some(150.0), tc),
            (None, service),
            (Some(240.0), service),
            (Some(150.0), service)
        ]
    );
    assert_eq!(d.cases[0].label, "no reservation (tc, one FIFO class)");
    assert_eq!(d.cases[4].label, "240 Mbit/s reserved by mclock");
    // The experiment's --link changes the capacity, not the reservations.
    let cases = d.cases(None, Some(500.0)).unwrap();
    let link = cases[1].link.unwrap();
    assert_eq!(
        (link.mbps, link.reserve_mbps, link.by),
        (500.0, Some(240.0), ReserveBy::Tc)
    );
    assert!(cases.iter().all(|c| c.load.stream().is_some()));
    assert_eq!(d.cases(None, None).unwrap()[0].link.unwrap().mbps, 1000.0);
}

#[test]
fn a_preset_without_cases_is_refused_by_name() {
    let e = ExperimentDesign::from_preset(
        "name = \"x\"\nprobe = \"net\"\n[[report.table]]\nvalue = \"end_to_end.mean\"\n",
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "the experiment's preset x: no [sweep] case = [...] list"
    );
    let e = ExperimentDesign::from_preset(
        &ISOLATION.replace("\"music\" }", "\"music\", reserve-by = \"x\" }"),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("reserve-by x: use tc or mclock"),
        "{e}"
    );
    // A case's text is quoted as written, without the file's spacing around it.
    let e = ExperimentDesign::from_preset(
        "name = \"x\"\n[sweep]\ncase = [ \"plain\" ]\n[[report.table]]\nvalue = \"end_to_end.mean\"\n",
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "the experiment's preset x: a case is a table, not \"plain\""
    );
}

#[test]
fn the_suite_skips_by_name_a_scenario_whose_load_cannot_start_here() {
    let each = Duration::from_secs(2);
    let labels: Vec<&str> = jitter_scenarios(each).iter().map(|s| s.0).collect();
    assert_eq!(
        labels,
        [
            "wake-up jitter, 2048 Hz, idle",
            "3x32-frame fragments, 80% busy, CPU load",
            "3x32-frame fragments, 80% busy, disk load"
        ]
    );
    let plan = SuitePlan::new(
        each,
        PathBuf::from("/nonexistent/scratch"),
        Some(GroupId(7)),
        None,
        jack(),
    );
    assert_eq!(plan.jitter.len(), 3);
    assert_eq!(plan.jitter[0].skip, None, "the idle scenario needs nothing");
    let disk = plan.jitter[2]
        .skip
        .as_deref()
        .expect("no scratch directory");
    assert!(disk.contains("/nonexistent/scratch"), "{disk}");
    assert_eq!(plan.group, Some(GroupId(7)));
    assert_eq!(plan.jack.mode, ServerMode::Auto);
    // A usable scratch directory: the disk load is planned when its tool is here.
    let dir = tempfile::tempdir().unwrap();
    let plan = SuitePlan::new(each, dir.path().to_path_buf(), None, None, jack());
    assert_eq!(plan.jitter[0].skip, None);
    if let Some(why) = &plan.jitter[2].skip {
        assert!(!why.contains(&dir.path().display().to_string()), "{why}");
    }
}

/// The suite's server: a running one, else a private dummy (none started here).
fn jack() -> ServerRequest {
    ServerRequest {
        mode: ServerMode::Auto,
        name: None,
        rate_hz: None,
        period_frames: None,
        jackd: None,
        start_timeout: Duration::from_secs(1),
    }
}

#[test]
fn each_experiment_reads_its_shipped_preset_and_says_what_the_machine_lacks() {
    use crate::experiment::{Study, StudyRefusal};
    let isolation = ExperimentDesign::from_preset(ISOLATION).unwrap();
    assert_eq!(Study::Isolation.design().unwrap(), isolation);
    let bandwidth = ExperimentDesign::from_preset(BANDWIDTH).unwrap();
    assert_eq!(Study::Bandwidth.design().unwrap(), bandwidth);
    assert_eq!(
        (Study::Isolation.name(), Study::Bandwidth.name()),
        ("isolation", "bandwidth")
    );
    assert_eq!(
        Study::Isolation.check_machine(true, 1),
        Err(StudyRefusal::IsolationNeedsRootAndCpus)
    );
    assert_eq!(
        Study::Isolation.check_machine(false, 4),
        Err(StudyRefusal::IsolationNeedsRootAndCpus)
    );
    assert_eq!(Study::Isolation.check_machine(true, 2), Ok(()));
    assert_eq!(
        Study::Bandwidth.check_machine(false, 4),
        Err(StudyRefusal::BandwidthNeedsRoot)
    );
    assert_eq!(Study::Bandwidth.check_machine(true, 1), Ok(()));
}

#[test]
fn an_experiment_case_without_a_run_fails_its_group() {
    use crate::experiment::{group_end, CaseResult};
    use crate::group::GroupEnd;
    let design = ExperimentDesign::from_preset(ISOLATION).unwrap();
    let case = design.cases(None, None).unwrap().remove(0);
    assert_eq!(group_end(&[], 0), GroupEnd::default());
    let failed = CaseResult {
        case,
        run: Err(crate::RunError::Refused("no".into())),
    };
    let end = group_end(std::slice::from_ref(&failed), 1);
    assert!(end.run_failed && !end.interrupted && !end.stopped_by_error);
    // A stop that kept the second case from running interrupts the group.
    let end = group_end(&[failed], 2);
    assert!(end.run_failed && end.interrupted && !end.stopped_by_error);
}

#[test]
fn the_bandwidth_experiment_keeps_the_cases_whose_reservation_was_asked_for() {
    use crate::experiment::Study;
    let design = Study::Bandwidth.design().unwrap();
    let labels = |cases: &[crate::experiment::ExperimentCase]| {
        cases
            .iter()
            .map(|c| c.design.label.clone())
            .collect::<Vec<_>>()
    };
    let all = Study::Bandwidth.cases(&design, 0, 500.0, None).unwrap();
    assert_eq!(
        labels(&all),
        labels(&design.cases(None, Some(500.0)).unwrap())
    );
    assert!(all.iter().all(|c| c.link.unwrap().mbps == 500.0));
    let by = |c: &crate::experiment::ExperimentCase| c.design.reserve_by;
    let tc = Study::Bandwidth
        .cases(&design, 0, 500.0, Some(ReserveBy::Tc))
        .unwrap();
    let mclock = Study::Bandwidth
        .cases(&design, 0, 500.0, Some(ReserveBy::Service))
        .unwrap();
    assert!(tc.iter().all(|c| by(c) != Some(ReserveBy::Service)));
    assert!(mclock.iter().all(|c| by(c) == Some(ReserveBy::Service)));
    assert!(!tc.is_empty() && !mclock.is_empty());
    assert_eq!(tc.len() + mclock.len(), all.len());
    // The isolation experiment's music cell goes on the CPU given.
    let design = Study::Isolation.design().unwrap();
    let cases = Study::Isolation
        .cases(&design, 1, 500.0, Some(ReserveBy::Tc))
        .unwrap();
    let expected = design.cases(Some(1), None).unwrap();
    assert_eq!(labels(&cases), labels(&expected));
    let cpus = |cases: &[crate::experiment::ExperimentCase]| {
        cases
            .iter()
            .map(|c| format!("{:?}", c.cells))
            .collect::<Vec<_>>()
    };
    assert_eq!(cpus(&cases), cpus(&expected));
}
