//! `--find-min-buffer`'s rule: which settings of a descending sweep held, and where the
//! descent stops. Measurement logic, not rendering (`report::view::min_buffer` shows
//! the verdict).

use crate::runner::RoundtripRun;

/// A setting holds when its run completed with no under-run, no skipped cycle, no step
/// in the loop's delay (a dropout nobody reported) and a loop found in its windows.
pub fn holds_without_underruns(r: &RoundtripRun) -> bool {
    let o = &r.outcome;
    r.status == results::RunStatus::Complete
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
