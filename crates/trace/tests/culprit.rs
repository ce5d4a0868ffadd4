//! A truth the test makes: a SCHED_FIFO thread with a name the test chooses spins a
//! known time on the measured thread's CPU at known moments, and every miss it caused
//! must name it with its time (within 10 % or 50 µs). Needs root and tracefs, as
//! `--why` does.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use trace::{CauseKind, Miss, MissKind, Session, SessionConfig};

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn sleep_until(t_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (t_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (t_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: a valid timespec; EINTR just wakes early.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
}

fn pin_fifo(cpu: usize, priority: i32) {
    // SAFETY: plain structs for the current thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set),
            0
        );
        let p = libc::sched_param {
            sched_priority: priority,
        };
        assert_eq!(
            libc::sched_setscheduler(0, libc::SCHED_FIFO, &p),
            0,
            "needs root"
        );
    }
}

fn tid() -> i32 {
    // SAFETY: no preconditions.
    unsafe { libc::gettid() }
}

#[test]
fn a_fifo_culprit_spinning_on_the_cpu_is_named_with_its_time() {
    let cpu = 1.min(std::thread::available_parallelism().unwrap().get() - 1);
    let session = Session::start(SessionConfig {
        cpus: Some(vec![cpu]),
        ..SessionConfig::default()
    })
    .expect("tracefs available (run as root)");
    let stop = Arc::new(AtomicBool::new(false));
    let spins: Arc<Mutex<Vec<(u64, u64)>>> = Arc::default();
    const SPIN_NS: u64 = 2_000_000;

    let culprit = {
        let (stop, spins) = (Arc::clone(&stop), Arc::clone(&spins));
        std::thread::Builder::new()
            .name("why-culprit".into())
            .spawn(move || {
                pin_fifo(cpu, 80);
                let mut next = now_ns() + 20_000_000;
                while !stop.load(Ordering::Relaxed) {
                    // Off the victim's period grid, so a spin starts between wake-ups.
                    sleep_until(next);
                    let start = now_ns();
                    while now_ns() < start + SPIN_NS {}
                    spins.lock().unwrap().push((start, now_ns()));
                    next += 47_300_000;
                }
            })
            .unwrap()
    };
    let mut sender = session.sender();
    let victim = {
        let stop = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("why-victim".into())
            .spawn(move || -> Vec<Miss> {
                pin_fifo(cpu, 50);
                let me = tid();
                let mut misses = Vec::new();
                let period = 1_000_000;
                let mut deadline = now_ns() + 10_000_000;
                while !stop.load(Ordering::Relaxed) {
                    sleep_until(deadline);
                    let woke = now_ns();
                    if woke - deadline > 300_000 {
                        let m = Miss {
                            t_ns: deadline,
                            end_ns: woke,
                            tid: me,
                            kind: MissKind::Wakeup,
                        };
                        sender.send(m);
                        misses.push(m);
                    }
                    while deadline <= now_ns() {
                        deadline += period;
                    }
                }
                misses
            })
            .unwrap()
    };
    std::thread::sleep(Duration::from_millis(1500));
    stop.store(true, Ordering::Relaxed);
    culprit.join().unwrap();
    let sent = victim.join().unwrap();
    let why = session.finish();
    let spins = spins.lock().unwrap().clone();

    assert!(spins.len() >= 20, "the culprit spun {} times", spins.len());
    assert_eq!(why.misses_explained as usize, sent.len());
    assert_eq!(why.misses_dropped, 0);
    let mut caused = 0;
    let mut culprit_marked = 0;
    for m in &why.misses {
        // The spin that overlaps this miss, if any: its time inside the interval.
        let Some(expected) = spins
            .iter()
            .map(|&(s, e)| e.min(m.miss.end_ns).saturating_sub(s.max(m.miss.t_ns)))
            .find(|&o| o > 0)
        else {
            continue;
        };
        caused += 1;
        let named = m.ns_of(CauseKind::Thread, "why-culprit");
        let tolerance = (expected / 10).max(50_000);
        assert!(
            named.abs_diff(expected) <= tolerance,
            "the culprit took {expected} ns of a {} ns miss, the trace says {named}: {m:#?}",
            m.miss.late_ns()
        );
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
    assert!(
        culprit_marked * 10 >= caused * 8,
        "the culprit ran at {culprit_marked} of {caused} wake-ups"
    );
    // Nearly every spin lands on a wake-up (the hypervisor may take one).
    assert!(
        caused * 10 >= spins.len() * 8,
        "{caused} of {} spins caused a miss",
        spins.len()
    );
    let top = &why.culprits[0];
    assert_eq!(
        (top.kind, top.name.as_str()),
        (CauseKind::Thread, "why-culprit"),
        "{:?}",
        why.culprits
    );
}
