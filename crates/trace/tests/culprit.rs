//! A truth the test makes: a SCHED_FIFO thread with a name the test chooses spins a
//! known time on the measured thread's CPU at known moments, and the misses it caused
//! must name it with its time (within 10 % or 50 µs of the stretches its own clock
//! ran without a gap, so what the host took is not counted as its), every one of
//! them. Needs root and tracefs, as
//! `--why` does.

mod common;

use std::time::Duration;

use common::{close, probe_cpu, Policy, SpinConfig, Spinner, WakeupProbe};
use trace::{CauseKind, Session, SessionConfig};

#[test]
fn a_fifo_culprit_spinning_on_the_cpu_is_named_with_its_time() {
    let cpu = probe_cpu();
    let session = Session::start(SessionConfig {
        cpus: Some(vec![cpu]),
        ..SessionConfig::default()
    })
    .expect("tracefs available (run as root)");
    const SPIN_NS: u64 = 2_000_000;
    let culprit = Spinner::start(SpinConfig {
        name: "why-culprit",
        cpu,
        policy: Policy::Fifo(80),
        spin_ns: SPIN_NS,
        // Off the probe's period grid, so a spin starts between wake-ups.
        every_ns: 47_300_000,
    });
    let probe = WakeupProbe::start(cpu, Policy::Fifo(50), 1_000_000, 300_000, session.sender());
    std::thread::sleep(Duration::from_millis(1500));
    let spins = culprit.stop();
    let sent = probe.stop();
    let why = session.finish();

    assert!(
        spins.spins.len() >= 20,
        "the culprit spun {} times",
        spins.spins.len()
    );
    assert_eq!(why.misses_explained as usize, sent.len());
    assert_eq!(why.misses_dropped, 0);
    let mut caused = 0;
    let mut culprit_marked = 0;
    let mut timed = 0;
    for m in &why.misses {
        // A spin overlaps this miss: the culprit's running inside the interval.
        if spins.spin_within(m.miss.t_ns, m.miss.end_ns).is_none() {
            continue;
        }
        let expected = spins.ran_within(m.miss.t_ns, m.miss.end_ns);
        caused += 1;
        let named = m.ns_of(CauseKind::Thread, "why-culprit");
        if close(named, expected) {
            timed += 1;
        } else {
            eprintln!(
                "the culprit took {expected} ns of a {} ns miss, the trace says {named}: {m:#?}",
                m.miss.late_ns()
            );
        }
        let c = m.causes.iter().find(|c| c.name == "why-culprit").unwrap();
        assert_eq!(
            (c.policy.as_deref(), c.priority),
            (Some("fifo"), Some(80)),
            "{c:?}"
        );
        // One thread is marked as running at the wake-up: the culprit, unless another
        // thread still held the CPU at that instant (the culprit itself just woken).
        let marked: Vec<_> = m.causes.iter().filter(|c| c.at_wakeup).collect();
        assert_eq!(marked.len(), 1, "{m:#?}");
        if c.at_wakeup {
            culprit_marked += 1;
        }
        let total: u64 = m.causes.iter().map(|c| c.ns).sum();
        assert_eq!(total, m.miss.late_ns(), "the parts add up to the lateness");
    }
    assert_eq!(
        timed, caused,
        "the culprit's time is right in {timed} of {caused} misses"
    );
    assert!(
        culprit_marked * 10 >= caused * 8,
        "the culprit ran at {culprit_marked} of {caused} wake-ups"
    );
    // Nearly every spin lands on a wake-up (the hypervisor may take one).
    assert!(
        caused * 10 >= spins.spins.len() * 8,
        "{caused} of {} spins caused a miss",
        spins.spins.len()
    );
    let top = &why.culprits[0];
    assert_eq!(
        (top.kind, top.name.as_str()),
        (CauseKind::Thread, "why-culprit"),
        "{:?}",
        why.culprits
    );
}
