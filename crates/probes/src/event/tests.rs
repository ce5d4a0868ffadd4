//! Unit tests of the event probe.

use super::*;

#[test]
fn names_parse_and_print() {
    for s in ["timer", "key", "midi"] {
        assert_eq!(s.parse::<TriggerSource>().unwrap().to_string(), s);
    }
    for s in ["asap", "fixed"] {
        assert_eq!(s.parse::<NotePolicy>().unwrap().to_string(), s);
    }
    assert!("gpio"
        .parse::<TriggerSource>()
        .unwrap_err()
        .contains("timer, key or midi"));
    assert!("late"
        .parse::<NotePolicy>()
        .unwrap_err()
        .contains("asap or fixed"));
}

#[test]
fn configs_are_checked() {
    let mut c = EventConfig::new(TriggerSource::Timer, NotePolicy::Asap);
    assert!(c.validate().is_ok());
    c.triggers = 0;
    assert!(matches!(c.validate(), Err(EventError::NoTriggers)));
    c.triggers = 5;
    c.spacing_ms = 10.0;
    assert!(c.validate().unwrap_err().to_string().contains("silence"));
}

#[test]
fn stats_are_exact() {
    let s = Stats::of([1.0, 2.0, 3.0, 4.0]);
    assert_eq!(
        (s.count, s.mean, s.min, s.max, s.median),
        (4, 2.5, 1.0, 4.0, 3.0)
    );
    assert!((s.stdev - 1.2909944).abs() < 1e-6);
    assert_eq!(Stats::of([]).count, 0);
}

#[test]
fn trigger_times_are_spread_over_the_period() {
    // The fractional part added to each spacing is uniform: its deciles are filled.
    let mut rng = 7;
    let mut bins = [0u32; 10];
    for _ in 0..10_000 {
        let u = (splitmix(&mut rng) >> 11) as f64 / (1u64 << 53) as f64;
        bins[(u * 10.0) as usize] += 1;
    }
    assert!(bins.iter().all(|&b| (900..1100).contains(&b)), "{bins:?}");
}
