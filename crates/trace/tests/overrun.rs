//! The audio callback's own overload: a probe whose cycle now and then takes longer
//! than its period. Each overrun (from the period's start to when the cycle finished)
//! must name the probe's own running (`self`) on top, with the CPU time its own clock
//! counted (within 10 % or 50 µs). Needs root and tracefs, as `--why` does.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{close, now_ns, pin, probe_cpu, sleep_until, thread_cpu_ns, tid, Policy};
use trace::{CauseKind, Miss, MissKind, Session, SessionConfig};

/// The probe's period.
const PERIOD_NS: u64 = 2_000_000;
/// The overloaded cycle's work, CPU time: one and a half periods.
const WORK_NS: u64 = 3_000_000;

#[test]
fn a_cycle_longer_than_its_period_is_the_threads_own_time() {
    let cpu = probe_cpu();
    let session = Session::start(SessionConfig {
        cpus: Some(vec![cpu]),
        ..SessionConfig::default()
    })
    .expect("tracefs available (run as root)");
    let stop = Arc::new(AtomicBool::new(false));
    let mut sender = session.sender();
    let probe = {
        let stop = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("why-probe".into())
            .spawn(move || -> Vec<(Miss, u64)> {
                pin(cpu, Policy::Fifo(50));
                let me = tid();
                let mut overruns = Vec::with_capacity(1024);
                let mut deadline = now_ns() + 10_000_000;
                let mut cycle = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    sleep_until(deadline);
                    cycle += 1;
                    if cycle.is_multiple_of(7) {
                        let cpu_start = thread_cpu_ns();
                        while thread_cpu_ns() < cpu_start + WORK_NS {}
                        let finished = now_ns();
                        let ran = thread_cpu_ns() - cpu_start;
                        let m = Miss {
                            t_ns: deadline,
                            end_ns: finished,
                            tid: me,
                            kind: MissKind::Overrun,
                        };
                        sender.send(m);
                        overruns.push((m, ran));
                    }
                    while deadline <= now_ns() {
                        deadline += PERIOD_NS;
                    }
                }
                overruns
            })
            .unwrap()
    };
    std::thread::sleep(Duration::from_millis(1500));
    stop.store(true, Ordering::Relaxed);
    let overruns = probe.join().unwrap();
    let why = session.finish();

    assert!(overruns.len() >= 20, "only {} overruns", overruns.len());
    assert_eq!(why.misses_explained as usize, overruns.len());
    assert_eq!(why.misses_dropped, 0);
    let (mut self_on_top, mut self_close) = (0, 0);
    for m in &why.misses {
        assert_eq!(m.miss.kind, MissKind::Overrun);
        let total: u64 = m.causes.iter().map(|c| c.ns).sum();
        assert_eq!(total, m.miss.late_ns(), "the parts add up to the lateness");
        let ran = overruns
            .iter()
            .find(|(o, _)| o.t_ns == m.miss.t_ns)
            .map(|(_, ran)| *ran)
            .expect("an overrun sent");
        let own = m.ns_of(CauseKind::SelfTime, "why-probe");
        if m.causes[0].kind == CauseKind::SelfTime && m.causes[0].name == "why-probe" {
            self_on_top += 1;
        }
        if close(own, ran) {
            self_close += 1;
        } else {
            eprintln!("the probe ran {ran} ns of its cycle, the trace says {own}: {m:#?}");
        }
    }
    let n = why.misses.len();
    eprintln!("{n} overruns, {self_on_top} with self on top, {self_close} with its time");
    assert!(
        self_on_top * 10 >= n * 9,
        "self is on top in {self_on_top} of {n} overruns"
    );
    assert!(
        self_close * 10 >= n * 9,
        "the probe's own time is right in {self_close} of {n} overruns"
    );
    let top = &why.culprits[0];
    assert_eq!(
        (top.kind, top.name.as_str()),
        (CauseKind::SelfTime, "why-probe"),
        "{:?}",
        why.culprits
    );
}
