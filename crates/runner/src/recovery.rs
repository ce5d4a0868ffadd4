//! A run a dead process left `running`, summarised from what it stored when the store
//! next opens (the store's `Summarise` hook).

use results::model::RunRecord;
use results::{Measurement, Store};

/// Summarises `run`, left `running` by a dead process, from what it stored, with the
/// probe's own code: an event run's trigger rows become its trigger measurements, as
/// the live run would have made them. A jitter run's checkpoints are its measurements
/// already; the other probes store theirs only at the end, so there is nothing to
/// summarise.
pub fn summarise_abandoned(store: &Store, run: &RunRecord) -> Result<Vec<Measurement>, String> {
    if run.probe != "event" {
        return Ok(Vec::new());
    }
    let Some(summary) = probes::event::TriggerSummary::from_json(
        &run.result[probes::probe::RECOVERY_KEY]["event_triggers"],
    ) else {
        return Ok(Vec::new());
    };
    let rows = store.triggers(run.id).map_err(|e| e.to_string())?;
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    Ok(summary.measurements(&rows))
}
