//! A probe refused real-time priority: it and a hog the test names are both
//! SCHED_OTHER, pinned to one CPU. The fair scheduler shares the CPU by weight, so the
//! probe's wake-ups wait for the hog's slice, and each late one must name the hog as a
//! `thread` with the time the hog itself saw it held the CPU (its clock's stretches
//! with no gap). Needs root and tracefs, as `--why` does.
//!
//! The hog runs at nice -10 and the probe at nice 19: under EEVDF a hog of similar
//! weight seldom delays a thread waking from sleep by more than ~50 µs (the sleeper's
//! lag lets it preempt at once), too little to tell a breakdown from the clocks' noise,
//! and at nice -10 against nice 0 whether it does depends on what else the machine
//! ran before. At a weight ratio of 9548 to 15 the probe waits out the hog's slice,
//! every time.

mod common;

use std::time::Duration;

use common::{close, probe_cpu, Policy, SpinConfig, Spinner, WakeupProbe};
use trace::{CauseKind, Session, SessionConfig};

#[test]
fn a_normal_hog_delaying_a_normal_probe_is_named_with_its_time() {
    let cpu = probe_cpu();
    let session = Session::start(SessionConfig {
        cpus: Some(vec![cpu]),
        ..SessionConfig::default()
    })
    .expect("tracefs available (run as root)");
    let hog = Spinner::start(SpinConfig {
        name: "why-hog",
        cpu,
        policy: Policy::Nice(-10),
        spin_ns: u64::MAX,
        every_ns: 0,
    });
    let probe = WakeupProbe::start(cpu, Policy::Nice(19), 1_000_000, 300_000, session.sender());
    std::thread::sleep(Duration::from_millis(2000));
    let sent = probe.stop();
    let seen = hog.stop();
    let why = session.finish();

    assert_eq!(why.misses_explained as usize, sent.len());
    assert_eq!(why.misses_dropped, 0);
    let (mut overlapped, mut named_close, mut hogged, mut hog_on_top) = (0, 0, 0, 0);
    for m in &why.misses {
        let total: u64 = m.causes.iter().map(|c| c.ns).sum();
        assert_eq!(total, m.miss.late_ns(), "the parts add up to the lateness");
        let truth = seen.ran_within(m.miss.t_ns, m.miss.end_ns);
        if truth == 0 {
            continue;
        }
        overlapped += 1;
        let named = m.ns_of(CauseKind::Thread, "why-hog");
        if close(named, truth) {
            named_close += 1;
        } else {
            eprintln!("the hog ran {truth} ns of this miss, the trace says {named}: {m:#?}");
        }
        // Other work on the machine shares the CPU too; where the hog held it for most
        // of the lateness, it must be the top cause.
        if truth * 2 >= m.miss.late_ns() {
            hogged += 1;
            let top = &m.causes[0];
            if (top.kind, top.name.as_str()) == (CauseKind::Thread, "why-hog") {
                hog_on_top += 1;
                assert_eq!(
                    (top.policy.as_deref(), top.priority),
                    (Some("other"), Some(-10)),
                    "{top:?}"
                );
            } else {
                eprintln!("the hog ran {truth} ns of this miss, not on top: {m:#?}");
            }
        }
    }
    eprintln!(
        "{} misses, {overlapped} overlapped by the hog, {named_close} with its time; \
         {hogged} mostly the hog's, {hog_on_top} with it on top",
        sent.len()
    );
    assert!(hogged >= 10, "only {hogged} misses were mostly the hog's");
    assert!(
        hog_on_top * 10 >= hogged * 9,
        "the hog is on top in {hog_on_top} of the {hogged} misses it mostly took"
    );
    assert!(
        named_close * 10 >= overlapped * 9,
        "the hog's time is right in {named_close} of the {overlapped} misses it overlapped"
    );
    let top = &why.culprits[0];
    assert_eq!(
        (top.kind, top.name.as_str()),
        (CauseKind::Thread, "why-hog"),
        "{:?}",
        why.culprits
    );
}
