//! The min-buffer search: a round-trip sweep down through the periods, largest first,
//! that stops at the first setting that does not hold ([`holds_without_underruns`]);
//! [`verdict`] then names the smallest that held and the first that failed
//! (`report::view::min_buffer` shows them).

use std::path::Path;

use engine::backend::BackendSpec;
use results::{RunSink, RunStatus};

use crate::group::Group;
use crate::sweep::{RoundtripCell, RoundtripRun, Sweep, SweepObserver, SweepOutcome};
use crate::{Context, RunError};

/// The periods the search tries, largest first, each once: `given`, else the powers of
/// two from 16 to 2048 frames the backend can run.
pub fn search_periods(spec: &BackendSpec, given: Option<&[u32]>) -> Vec<Option<u32>> {
    let smallest = spec.smallest_period();
    let mut list: Vec<u32> = match given {
        Some(p) => p.to_vec(),
        None => (4..=11)
            .map(|k| 1u32 << k)
            .filter(|&p| p >= smallest)
            .collect(),
    };
    list.sort_unstable_by(|x, y| y.cmp(x));
    list.dedup();
    list.into_iter().map(Some).collect()
}

/// Runs `cell` on every period of `sweep` (opened on [`search_periods`]) until a setting
/// does not hold, and closes the group; the runs are in descending buffer order, the
/// last one the first that failed when one did.
pub fn search(
    sweep: Sweep<'_>,
    ctx: &Context,
    sink: &dyn RunSink,
    group: &Group<'_>,
    cell: &RoundtripCell,
    scratch: &Path,
    observer: &dyn SweepObserver<RoundtripCell>,
) -> Result<SweepOutcome<RoundtripRun>, RunError> {
    let cells = std::slice::from_ref(cell);
    sweep.run_until(ctx, sink, group, cells, scratch, observer, &|run| {
        !holds_without_underruns(run)
    })
}

/// A setting holds when its run completed with no under-run, no skipped cycle, no step
/// in the loop's delay (a dropout nobody reported) and a loop found in its windows.
pub fn holds_without_underruns(r: &RoundtripRun) -> bool {
    let o = &r.outcome;
    r.run.status == RunStatus::Complete
        && o.end == probes::roundtrip::RoundtripEnd::Complete
        && o.xruns == 0
        && o.gaps == 0
        && o.delay_changes().is_empty()
        && o.measured_frames().count > 0
}

/// The positions in `runs` (in descending buffer order) of the smallest buffer that
/// held and of the first that did not.
pub fn verdict(runs: &[RoundtripRun]) -> (Option<usize>, Option<usize>) {
    let held = runs
        .iter()
        .take_while(|r| holds_without_underruns(r))
        .count()
        .checked_sub(1);
    let failed = runs.iter().position(|r| !holds_without_underruns(r));
    (held, failed)
}
