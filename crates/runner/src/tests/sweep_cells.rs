//! The cells of one period of a sweep, built from the lists it is over: their order,
//! their repeats' seeds, and the first configuration refused.

use dsp::WorkloadKind;
use load::LoadSpec;
use probes::event::{EventConfig, EventError, NotePolicy, TriggerSource};
use probes::roundtrip::RoundtripConfig;

use crate::sweep::{event_cells, roundtrip_cells};

fn loads() -> Vec<LoadSpec> {
    ["none", "cpu:80"]
        .iter()
        .map(|l| l.parse().unwrap())
        .collect()
}

/// Every policy, then workload, load and repeat, in that order; each repeat's seed is
/// the base's xor its number, and the rest of the base is kept.
#[test]
fn event_cells_cover_every_combination_in_sweep_order() {
    let mut base = EventConfig::new(TriggerSource::Key, NotePolicy::Asap);
    base.triggers = 7;
    let policies = [NotePolicy::Asap, NotePolicy::Fixed];
    let workloads = [WorkloadKind::Sine, WorkloadKind::Poly];
    let cells = event_cells(&base, &policies, &workloads, &loads(), 2).unwrap();
    assert_eq!(cells.len(), 2 * 2 * 2 * 2);
    let order: Vec<_> = cells
        .iter()
        .map(|c| {
            (
                c.config.policy,
                c.config.workload,
                c.load.to_string(),
                c.repeat,
            )
        })
        .collect();
    assert_eq!(
        order[0],
        (NotePolicy::Asap, WorkloadKind::Sine, "none".into(), 1)
    );
    assert_eq!(
        order[1],
        (NotePolicy::Asap, WorkloadKind::Sine, "none".into(), 2)
    );
    assert_eq!(order[2].2, loads()[1].to_string());
    assert_eq!(order[4].1, WorkloadKind::Poly);
    assert_eq!(order[8].0, NotePolicy::Fixed);
    for c in &cells {
        assert_eq!(c.config.seed, base.seed ^ c.repeat as u64);
        assert_eq!(
            (c.config.source, c.config.triggers),
            (TriggerSource::Key, 7)
        );
        assert!(c.granted.is_none());
    }
}

/// A configuration the probe refuses is the error, and no cells are built.
#[test]
fn an_event_configuration_the_probe_refuses_is_the_error() {
    let mut base = EventConfig::new(TriggerSource::Timer, NotePolicy::Asap);
    base.triggers = 0;
    let e = event_cells(
        &base,
        &[NotePolicy::Asap],
        &[WorkloadKind::Sine],
        &loads(),
        1,
    );
    assert!(matches!(e, Err(EventError::NoTriggers)));
}

/// Every load, then every repeat, of one configuration; the loop is the set-up's to
/// describe.
#[test]
fn roundtrip_cells_cover_every_load_and_repeat() {
    let config = RoundtripConfig {
        impulses: 9,
        ..Default::default()
    };
    let cells = roundtrip_cells(&config, &loads(), 3);
    let order: Vec<_> = cells
        .iter()
        .map(|c| (c.load.to_string(), c.repeat))
        .collect();
    let expected: Vec<_> = loads()
        .iter()
        .flat_map(|l| (1..=3).map(move |r| (l.to_string(), r)))
        .collect();
    assert_eq!(order, expected);
    for c in &cells {
        assert_eq!(c.config.impulses, 9);
        assert!(c.loop_description.is_empty() && c.granted.is_none());
    }
}
