//! A thread blocked on a lock: a holder thread the test names takes a `std` mutex
//! just before the probe's deadline and keeps it a known time; the probe, woken on
//! time, blocks on it (a futex) until the holder lets go. Each late cycle must name
//! the time `blocked`, in the state the probe slept in, within 10 % or 50 µs of what
//! the two threads' clocks say. The holder runs on another CPU: traced, it is named as
//! the thread that woke the probe; not traced, the time is still `blocked`, on no one
//! named. Needs root and tracefs, as `--why` does.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{close, exclusive, now_ns, other_cpu, pin, probe_cpu, sleep_until, tid, Policy};
use trace::{CauseKind, Miss, MissKind, Session, SessionConfig, Why};

const PERIOD_NS: u64 = 2_000_000;
/// The holder takes the lock every this many periods, this long before the deadline,
/// and lets go this long after it.
const EVERY: u64 = 5;
const TAKE_BEFORE_NS: u64 = 300_000;
const HOLD_AFTER_NS: u64 = 1_500_000;

/// What a run made and what the trace said of it.
struct Run {
    why: Why,
    /// Each late cycle, with when the probe tried the lock.
    late: Vec<(Miss, u64)>,
    holder_tid: i32,
    /// Each hold: the deadline it covered and when the holder let go.
    releases: Vec<(u64, u64)>,
}

/// The holder on [`other_cpu`], the probe on [`probe_cpu`], `cpus` traced.
fn run(cpus: Option<Vec<usize>>) -> Run {
    let cpu = probe_cpu();
    let session = Session::start(SessionConfig {
        cpus,
        ..SessionConfig::default()
    })
    .expect("tracefs available (run as root)");
    let lock = Arc::new(Mutex::new(0u64));
    let stop = Arc::new(AtomicBool::new(false));
    let first_deadline = now_ns() + 50_000_000;

    let holder = {
        let (lock, stop) = (Arc::clone(&lock), Arc::clone(&stop));
        std::thread::Builder::new()
            .name("why-holder".into())
            .spawn(move || -> (i32, Vec<(u64, u64)>) {
                pin(other_cpu(), Policy::Fifo(60));
                let mut releases = Vec::with_capacity(1024);
                let mut deadline = first_deadline + EVERY * PERIOD_NS;
                while !stop.load(Ordering::Relaxed) {
                    sleep_until(deadline - TAKE_BEFORE_NS);
                    let mut held = lock.lock().unwrap();
                    *held += 1;
                    sleep_until(deadline + HOLD_AFTER_NS);
                    releases.push((deadline, now_ns()));
                    drop(held);
                    deadline += EVERY * PERIOD_NS;
                }
                (tid(), releases)
            })
            .unwrap()
    };
    let mut sender = session.sender();
    let probe = {
        let (lock, stop) = (Arc::clone(&lock), Arc::clone(&stop));
        std::thread::Builder::new()
            .name("why-probe".into())
            .spawn(move || -> Vec<(Miss, u64)> {
                pin(cpu, Policy::Fifo(50));
                let me = tid();
                let mut late = Vec::with_capacity(1024);
                let mut deadline = first_deadline;
                while !stop.load(Ordering::Relaxed) {
                    sleep_until(deadline);
                    let tried = now_ns();
                    *lock.lock().unwrap() += 1;
                    let done = now_ns();
                    if done - deadline > 300_000 {
                        let m = Miss {
                            t_ns: deadline,
                            end_ns: done,
                            tid: me,
                            kind: MissKind::Overrun,
                        };
                        sender.send(m);
                        late.push((m, tried));
                    }
                    while deadline <= now_ns() {
                        deadline += PERIOD_NS;
                    }
                }
                late
            })
            .unwrap()
    };
    std::thread::sleep(Duration::from_millis(1500));
    stop.store(true, Ordering::Relaxed);
    let late = probe.join().unwrap();
    let (holder_tid, releases) = holder.join().unwrap();
    let why = session.finish();
    assert!(
        releases.len() >= 20,
        "the holder held the lock {} times",
        releases.len()
    );
    assert_eq!(why.misses_explained as usize, late.len());
    assert_eq!(why.misses_dropped, 0);
    Run {
        why,
        late,
        holder_tid,
        releases,
    }
}

/// Checks each late cycle the holder caused names `blocked` as `name` (with `pid`)
/// with its time, on top.
fn check(r: &Run, name: &str, pid: Option<i32>) {
    let (mut held, mut named, mut timed) = (0, 0, 0);
    for m in &r.why.misses {
        let total: u64 = m.causes.iter().map(|c| c.ns).sum();
        assert_eq!(total, m.miss.late_ns(), "the parts add up to the lateness");
        let tried = r
            .late
            .iter()
            .find(|(l, _)| l.t_ns == m.miss.t_ns)
            .unwrap()
            .1;
        // The probe tried the lock in this cycle while the holder held it.
        let Some(&(_, released)) = r.releases.iter().find(|(d, _)| *d == m.miss.t_ns) else {
            continue;
        };
        held += 1;
        let expected = released.saturating_sub(tried);
        let blocked: Vec<_> = m
            .causes
            .iter()
            .filter(|c| c.kind == CauseKind::Blocked)
            .collect();
        if let [b] = blocked[..] {
            if (b.name.as_str(), b.pid, b.state.as_deref()) == (name, pid, Some("S")) {
                named += 1;
            }
            if close(b.ns, expected) && m.causes[0].kind == CauseKind::Blocked {
                timed += 1;
                continue;
            }
        }
        eprintln!("blocked {expected} ns on the holder's lock: {m:#?}");
    }
    eprintln!(
        "{} late cycles, {held} on the held lock, {named} naming {name}, {timed} with its time",
        r.late.len()
    );
    assert!(
        held * 10 >= r.releases.len() * 8,
        "{held} of the holder's {} holds made a late cycle",
        r.releases.len()
    );
    assert!(
        named * 10 >= held * 9,
        "{name} is named in {named} of {held}"
    );
    assert!(
        timed * 10 >= held * 9,
        "the time blocked is right in {timed} of {held}"
    );
}

#[test]
fn a_probe_blocked_on_a_lock_names_the_holder_with_the_time() {
    let _one = exclusive();
    let r = run(None);
    check(&r, "why-holder", Some(r.holder_tid));
}

#[test]
fn a_probe_blocked_by_a_holder_on_a_cpu_not_traced_is_still_blocked() {
    let _one = exclusive();
    let r = run(Some(vec![probe_cpu()]));
    check(&r, "blocked", None);
}
