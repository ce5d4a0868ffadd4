//! A run a dead process left `running`, summarised from what it stored when the store
//! next opens (the store's `Summarise` hook).

use results::probe_kind::EVENT;
use results::run::RunRecord;
use results::{Measurement, Recovered, Store};

/// Summarises `run`, left `running` by a dead process, from what it stored, with the
/// probe's own code: an event run's trigger rows become its trigger measurements, as
/// the live run would have made them; the other probes' last checkpoint is their
/// measurements already. The result and flags are what its configuration and those
/// measurements hold ([`probes::probe::recovered`]): the stream as described, the counts
/// measured so far; nothing else.
pub fn summarise_abandoned(store: &Store, run: &RunRecord) -> Result<Recovered, String> {
    let stored: Vec<Measurement> = store
        .measurements(run.id)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|m| m.measurement)
        .collect();
    if run.probe != &EVENT {
        return Ok(probes::probe::recovered(
            run.probe,
            &run.config,
            &stored,
            None,
        ));
    }
    let kept = &run.result[probes::probe::RECOVERY_KEY]["event_triggers"];
    let Some(summary) = probes::event::TriggerSummary::from_json(kept) else {
        return Ok(probes::probe::recovered(&EVENT, &run.config, &stored, None));
    };
    let rows = store.triggers(run.id).map_err(|e| e.to_string())?;
    let measurements = if rows.is_empty() {
        Vec::new()
    } else {
        summary.measurements(&rows)
    };
    Ok(Recovered {
        measurements: measurements.clone(),
        ..probes::probe::recovered(
            &EVENT,
            &run.config,
            &measurements,
            kept["buffer_ns"].as_f64(),
        )
    })
}
