//! Threshold gates (`--fail-if`) on runs: checked against the probe before anything
//! runs, judged after the run on what the store holds (so a live run's verdicts are the
//! ones `show` reads back), and stored with the run.

use results::gate::{Gate, GateError, GateVerdict, Judged};
use results::{GroupId, ProbeKind, RunId, RunView, Store, StoreError};

/// The exit code of an audiolat whose run was measured and stored but failed a gate
/// (a plan's cell that exits so made its run).
pub const EXIT_FAILED_GATE: i32 = 3;

/// The gates for runs of `probe`: each must name one of its metrics.
pub fn for_probe(gates: &[Gate], probe: &ProbeKind) -> Result<Vec<Gate>, GateError> {
    gates.iter().map(|g| g.check_probe(probe)).collect()
}

/// The first of `gates` whose metric this machine cannot measure, with why in one line:
/// a figure of the kernel's trace (`why.`) where the kernel cannot be traced (no root,
/// tracefs read-only, ...). Such a gate is refused before the run, as a run would be
/// measured without it: the trace is tried only when a gate needs it.
pub fn unmeasurable_here(gates: &[Gate]) -> Option<(&Gate, String)> {
    let traced = gates.iter().find(|g| g.traced())?;
    probes::why::available().err().map(|why| (traced, why))
}

/// Judges `gates` on the run as stored, stores the verdicts with it and returns them
/// as stored. No gates: nothing is read or written.
pub fn judge(store: &Store, run_id: RunId, gates: &[Gate]) -> Result<Vec<GateVerdict>, StoreError> {
    if gates.is_empty() {
        return Ok(Vec::new());
    }
    // A run its database could not take is judged, and its verdicts kept, where it went.
    if let Some((path, local_id)) = store.moved(run_id) {
        return judge(&Store::open(&path)?, local_id, gates);
    }
    let run = store.run(run_id)?;
    let view = RunView::from_stored(&run, &store.measurements(run_id)?, Vec::new(), Vec::new());
    // A gate whose metric the probe does not have (a suite's gate on another probe's
    // metric) is not this run's.
    let verdicts: Vec<GateVerdict> = gates
        .iter()
        .filter_map(|g| g.check_probe(run.probe).ok())
        .map(|g| g.judge(&view))
        .collect();
    store.put_gates(run_id, &verdicts)?;
    store.gates(run_id)
}

/// Whether any verdict fails (an unknown one too).
pub fn any_failed(verdicts: &[GateVerdict]) -> bool {
    verdicts.iter().any(GateVerdict::failed)
}

/// The runs of a group that failed a gate, each with its failed verdicts, in run order.
pub fn failures_in_group(
    store: &Store,
    group: GroupId,
) -> Result<Vec<(RunId, Vec<GateVerdict>)>, StoreError> {
    let mut runs = store.list_runs(&results::RunFilter {
        group_id: Some(group),
        ..Default::default()
    })?;
    runs.reverse();
    let mut out = Vec::new();
    for r in runs {
        let failed: Vec<GateVerdict> = store
            .gates(r.id)?
            .into_iter()
            .filter(GateVerdict::failed)
            .collect();
        if !failed.is_empty() {
            out.push((r.id, failed));
        }
    }
    Ok(out)
}

/// [`judge`] on each of `runs` (a sweep's, a suite's). No gates: nothing is read.
pub fn judge_runs(
    store: &Store,
    runs: impl IntoIterator<Item = RunId>,
    gates: &[Gate],
) -> Result<Judged, StoreError> {
    let mut out = Judged {
        given: !gates.is_empty(),
        ..Judged::default()
    };
    for run in runs.into_iter().filter(|_| out.given) {
        let verdicts = judge(store, run, gates)?;
        if !verdicts.is_empty() {
            out.runs.push((run, verdicts));
        }
    }
    Ok(out)
}

/// [`judge_runs`] on a sweep's runs: the JSON has one object per run however many.
pub fn judge_sweep(
    store: &Store,
    runs: impl IntoIterator<Item = RunId>,
    gates: &[Gate],
) -> Result<Judged, StoreError> {
    let mut judged = judge_runs(store, runs, gates)?;
    judged.sweep = true;
    Ok(judged)
}

/// [`judge_sweep`] on a suite's runs, each gate on the runs that measure its metric:
/// a gate measured on some run is not judged "not measured" on the others (a plain
/// wake-up run has no fragment under-runs), and those verdicts are not stored; a gate
/// measured on none keeps them (and fails); a gate no run's probe has is `unjudged`
/// (and fails).
pub fn judge_suite(
    store: &Store,
    runs: impl IntoIterator<Item = RunId>,
    gates: &[Gate],
) -> Result<Judged, StoreError> {
    let mut judged = judge_sweep(store, runs, gates)?;
    let measured: Vec<String> = judged
        .runs
        .iter()
        .flat_map(|(_, v)| v.iter().filter(|v| v.value.is_some()))
        .map(|v| v.expr.clone())
        .collect();
    for (run, verdicts) in &mut judged.runs {
        let before = verdicts.len();
        verdicts.retain(|v| v.value.is_some() || !measured.contains(&v.expr));
        if verdicts.len() != before {
            store.put_gates(*run, verdicts)?;
        }
    }
    judged.runs.retain(|(_, v)| !v.is_empty());
    judged.unjudged = gates
        .iter()
        .filter(|g| {
            !judged
                .runs
                .iter()
                .any(|(_, v)| v.iter().any(|v| v.expr == g.expr))
        })
        .map(|g| g.expr.clone())
        .collect();
    Ok(judged)
}
