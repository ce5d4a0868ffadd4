use super::*;
use crate::event::{Comm, Event, Kind, FLAG_HARDIRQ};

struct TestNames;

impl Names for TestNames {
    fn name(&self, index: u32) -> String {
        ["local_timer", "virtio0-input"][index as usize].to_string()
    }
    fn comm(&self, pid: i32) -> Option<Comm> {
        Some(Comm::from_name(match pid {
            100 => "probe",
            200 => "culprit",
            300 => "holder",
            _ => return None,
        }))
    }
    fn prio(&self, pid: i32) -> Option<i32> {
        (pid == 200).then_some(9)
    }
}

fn at(ts_ns: u64, pid: i32, flags: u8, kind: Kind) -> Event {
    Event {
        ts_ns,
        pid,
        flags,
        kind,
    }
}

fn switch(ts: u64, prev: i32, prev_state: i64, next: i32, next_prio: i32) -> Event {
    at(
        ts,
        prev,
        0,
        Kind::Switch {
            prev_pid: prev,
            prev_comm: TestNames.comm(prev).unwrap_or_default(),
            prev_prio: 120,
            prev_state,
            next_pid: next,
            next_comm: TestNames.comm(next).unwrap_or_default(),
            next_prio,
        },
    )
}

fn waking(ts: u64, by: i32, flags: u8, pid: i32, target: i32) -> Event {
    at(
        ts,
        by,
        flags,
        Kind::Waking {
            pid,
            comm: TestNames.comm(pid).unwrap_or_default(),
            prio: 120,
            target_cpu: target,
            done: false,
        },
    )
}

fn window(cpu: u32, events: Vec<Event>) -> CpuWindow {
    CpuWindow {
        events: events.into(),
        ..CpuWindow::new(cpu)
    }
}

fn sum(e: &Explained) -> u64 {
    e.causes.iter().map(|c| c.ns).sum()
}

#[test]
fn a_fifo_thread_holding_the_cpu_is_named_with_its_time_and_the_timer_irq_apart() {
    // The probe (100) sleeps; a FIFO 90 culprit (200) runs from 500; the probe's timer
    // fires at 1005 inside the local timer vector, wakes it at 1010; the culprit keeps
    // the CPU to 3000; the probe reads its clock at 3010.
    let mut w = vec![window(
        1,
        vec![
            switch(100, 100, 1, 0, 120),
            switch(500, 0, 0, 200, 9),
            at(1005, 200, FLAG_HARDIRQ, Kind::VectorEntry { name: 0 }),
            waking(1010, 200, FLAG_HARDIRQ, 100, 1),
            at(1020, 200, FLAG_HARDIRQ, Kind::VectorExit { name: 0 }),
            switch(3000, 200, 0, 100, 19),
        ],
    )];
    let miss = Miss {
        t_ns: 1000,
        end_ns: 3010,
        tid: 100,
        kind: MissKind::Wakeup,
    };
    let e = explain(&miss, &mut w, &TestNames);
    assert_eq!(sum(&e), 2010, "{e:#?}");
    assert_eq!(e.ns_of(CauseKind::Thread, "culprit"), 1985);
    assert_eq!(e.ns_of(CauseKind::Irq, "local_timer"), 15);
    assert_eq!(e.ns_of(CauseKind::SelfTime, "probe"), 10);
    let culprit = e.causes.iter().find(|c| c.name == "culprit").unwrap();
    assert!(culprit.at_wakeup);
    assert_eq!(
        (culprit.pid, culprit.priority, culprit.cpu),
        (Some(200), Some(90), Some(1))
    );
    assert_eq!(e.causes[0].name, "culprit", "largest first");
    assert!(!e.window_short && !e.events_lost);
}

#[test]
fn a_thread_blocked_inside_its_cycle_names_the_holder_that_woke_it() {
    // The probe runs its cycle from 900; at 1100 it sleeps on a lock (S); the holder
    // (300) releases it at 4100 and wakes it; it runs again at 4105, done at 4200.
    let mut w = vec![window(
        0,
        vec![
            switch(900, 0, 0, 100, 19),
            switch(1100, 100, 1, 300, 120),
            waking(4100, 300, 0, 100, 0),
            switch(4105, 300, 0, 100, 19),
        ],
    )];
    let miss = Miss {
        t_ns: 1000,
        end_ns: 4200,
        tid: 100,
        kind: MissKind::Overrun,
    };
    let e = explain(&miss, &mut w, &TestNames);
    assert_eq!(sum(&e), 3200, "{e:#?}");
    let blocked = e
        .causes
        .iter()
        .find(|c| c.kind == CauseKind::Blocked)
        .unwrap();
    assert_eq!(
        (blocked.name.as_str(), blocked.pid, blocked.ns),
        ("holder", Some(300), 3000)
    );
    assert_eq!(blocked.state.as_deref(), Some("S"));
    assert_eq!(e.ns_of(CauseKind::SelfTime, "probe"), 195);
    assert_eq!(e.ns_of(CauseKind::Thread, "holder"), 5);
}

#[test]
fn a_thread_blocked_by_a_holder_on_a_cpu_not_traced_is_blocked_on_no_one_named() {
    // As above, but the holder runs on a CPU not traced: the probe's wake-up is not in
    // the trace, only that it slept (S) at 1100 and ran again at 4105.
    let mut w = vec![window(
        0,
        vec![
            switch(900, 0, 0, 100, 19),
            switch(1100, 100, 1, 0, 120),
            switch(4105, 0, 0, 100, 19),
        ],
    )];
    let miss = Miss {
        t_ns: 1000,
        end_ns: 4200,
        tid: 100,
        kind: MissKind::Overrun,
    };
    let e = explain(&miss, &mut w, &TestNames);
    assert_eq!(sum(&e), 3200, "{e:#?}");
    let blocked = e
        .causes
        .iter()
        .find(|c| c.kind == CauseKind::Blocked)
        .unwrap();
    assert_eq!(
        (blocked.name.as_str(), blocked.pid, blocked.ns),
        ("blocked", None, 3005)
    );
    assert_eq!(blocked.state.as_deref(), Some("S"));
    assert_eq!(e.ns_of(CauseKind::SelfTime, "probe"), 195);
    assert_eq!(e.ns_of(CauseKind::Unaccounted, "unaccounted"), 0);
}

#[test]
fn a_softirq_and_an_irq_nested_in_a_thread_are_taken_out_of_its_time() {
    let mut w = vec![window(
        0,
        vec![
            switch(10, 100, 1, 200, 120),
            waking(1000, 200, FLAG_HARDIRQ, 100, 0),
            at(1100, 200, FLAG_HARDIRQ, Kind::IrqEntry { irq: 25, name: 1 }),
            at(1300, 200, FLAG_HARDIRQ, Kind::IrqExit { irq: 25 }),
            at(1300, 200, FLAG_SOFTIRQ, Kind::SoftirqEntry { vec: 3 }),
            at(1800, 200, FLAG_SOFTIRQ, Kind::SoftirqExit { vec: 3 }),
            switch(2000, 200, 0, 100, 19),
        ],
    )];
    let miss = Miss {
        t_ns: 1000,
        end_ns: 2000,
        tid: 100,
        kind: MissKind::Wakeup,
    };
    let e = explain(&miss, &mut w, &TestNames);
    assert_eq!(sum(&e), 1000, "{e:#?}");
    assert_eq!(e.ns_of(CauseKind::Irq, "virtio0-input"), 200);
    assert_eq!(e.ns_of(CauseKind::Softirq, "NET_RX"), 500);
    assert_eq!(e.ns_of(CauseKind::Thread, "culprit"), 300);
    let irq = e.causes.iter().find(|c| c.kind == CauseKind::Irq).unwrap();
    assert_eq!(irq.number, Some(25));
}

#[test]
fn time_a_thread_held_the_cpu_that_its_task_clock_did_not_count_is_steal() {
    // The culprit's slice 500..3000 (2500 ns of wall time) advanced its task clock by
    // 1500 ns: 40 % of what it seemed to run, the host ran something else.
    let us = 1000;
    let mut w = vec![window(
        0,
        vec![
            switch(100 * us, 100, 1, 0, 120),
            switch(500 * us, 0, 0, 200, 9),
            waking(1000 * us, 200, FLAG_HARDIRQ, 100, 0),
            at(
                2000 * us,
                200,
                0,
                Kind::Runtime {
                    pid: 200,
                    runtime_ns: 1000 * us,
                },
            ),
            at(
                2999 * us,
                200,
                0,
                Kind::Runtime {
                    pid: 200,
                    runtime_ns: 500 * us,
                },
            ),
            switch(3000 * us, 200, 0, 100, 19),
        ],
    )];
    let miss = Miss {
        t_ns: 1000 * us,
        end_ns: 3000 * us,
        tid: 100,
        kind: MissKind::Wakeup,
    };
    let e = explain(&miss, &mut w, &TestNames);
    assert_eq!(sum(&e), 2000 * us, "{e:#?}");
    assert_eq!(e.ns_of(CauseKind::Steal, "steal"), 800 * us);
    assert_eq!(e.ns_of(CauseKind::Thread, "culprit"), 1200 * us);
}

#[test]
fn what_no_event_covers_is_unaccounted_and_a_short_window_says_so() {
    let mut w = vec![window(0, vec![switch(2000, 200, 0, 100, 19)])];
    let miss = Miss {
        t_ns: 1000,
        end_ns: 2500,
        tid: 100,
        kind: MissKind::Wakeup,
    };
    let e = explain(&miss, &mut w, &TestNames);
    assert_eq!(sum(&e), 1500, "{e:#?}");
    assert!(e.window_short);
    assert_eq!(e.ns_of(CauseKind::Unaccounted, "unaccounted"), 1000);
    assert_eq!(e.ns_of(CauseKind::SelfTime, "probe"), 500);
}

#[test]
fn an_idle_cpu_slow_to_wake_is_idle_exit_and_lost_events_are_flagged() {
    let mut w = vec![window(
        0,
        vec![
            switch(10, 100, 1, 0, 120),
            at(20, 0, 0, Kind::Idle { state: 1 }),
            at(
                1400,
                0,
                0,
                Kind::Lost {
                    count: Some(3),
                    until_ns: 1450,
                },
            ),
            at(
                1500,
                0,
                0,
                Kind::Idle {
                    state: crate::event::IDLE_EXIT,
                },
            ),
            waking(1600, 0, FLAG_HARDIRQ, 100, 0),
            switch(1700, 0, 0, 100, 19),
        ],
    )];
    let miss = Miss {
        t_ns: 1000,
        end_ns: 1700,
        tid: 100,
        kind: MissKind::Wakeup,
    };
    let e = explain(&miss, &mut w, &TestNames);
    assert_eq!(e.ns_of(CauseKind::IdleExit, "idle"), 700, "{e:#?}");
    assert!(e.events_lost);
}

#[test]
fn a_switch_the_kernel_did_not_trace_is_read_from_the_task_its_events_name() {
    // Some kernels write no sched_switch out of the idle task: the culprit's events
    // after the idle CPU's timer interrupt are what say it runs.
    let mut w = vec![window(
        1,
        vec![
            switch(100, 100, 1, 0, 120),
            at(900, 0, FLAG_HARDIRQ, Kind::VectorEntry { name: 0 }),
            waking(905, 0, FLAG_HARDIRQ, 200, 1),
            at(910, 0, FLAG_HARDIRQ, Kind::VectorExit { name: 0 }),
            at(1010, 200, FLAG_HARDIRQ, Kind::VectorEntry { name: 0 }),
            waking(1015, 200, FLAG_HARDIRQ, 100, 1),
            at(1020, 200, FLAG_HARDIRQ, Kind::VectorExit { name: 0 }),
            switch(3000, 200, 1, 100, 49),
        ],
    )];
    let miss = Miss {
        t_ns: 1000,
        end_ns: 3005,
        tid: 100,
        kind: MissKind::Wakeup,
    };
    let e = explain(&miss, &mut w, &TestNames);
    assert_eq!(sum(&e), 2005, "{e:#?}");
    assert_eq!(e.ns_of(CauseKind::Thread, "culprit"), 1990);
    let c = e.causes.iter().find(|c| c.name == "culprit").unwrap();
    assert_eq!(c.priority, Some(90), "the priority from an earlier event");
}

#[test]
fn state_letters_read_as_sched_switch_prints_them() {
    assert_eq!(state_letters(0), "R");
    assert_eq!(state_letters(0x100), "R+");
    assert_eq!(state_letters(1), "S");
    assert_eq!(state_letters(2), "D");
    assert_eq!(state_letters(0x82), "DI");
}

#[test]
fn a_thread_preempted_while_running_stays_runnable_and_the_preempting_thread_is_named() {
    // The probe (100) runs on CPU 1 from 0; the culprit (200, FIFO) preempts it at 1000
    // (`prev_state` R+: 0x100) and runs to 3000; the probe's interval is [1500, 3100).
    let mut w = vec![window(
        1,
        vec![
            switch(0, 0, 0, 100, 120),
            waking(990, 0, FLAG_HARDIRQ, 200, 1),
            switch(1000, 100, 0x100, 200, 9),
            switch(3000, 200, 1, 100, 120),
        ],
    )];
    let miss = Miss {
        t_ns: 1500,
        end_ns: 3100,
        tid: 100,
        kind: MissKind::Overrun,
    };
    let e = explain(&miss, &mut w, &TestNames);
    assert_eq!(sum(&e), 1600);
    assert_eq!(e.ns_of(CauseKind::Thread, "culprit"), 1500, "{e:?}");
    assert_eq!(e.ns_of(CauseKind::SelfTime, "probe"), 100, "{e:?}");
}

#[test]
fn a_wake_up_stamped_before_the_switch_out_it_raced_with_leaves_the_thread_runnable() {
    // The probe (100) goes to sleep on CPU 1 while a packet's softirq on CPU 0 wakes
    // it: `sched_waking` at 990, before its switch out (S) at 995 to the culprit (200),
    // which runs to 3000; the probe's interval is [1500, 3100).
    let mut w = vec![
        window(0, vec![waking(990, 0, crate::event::FLAG_SOFTIRQ, 100, 1)]),
        window(
            1,
            vec![
                switch(0, 0, 0, 100, 120),
                switch(995, 100, 1, 200, 9),
                switch(3000, 200, 1, 100, 120),
            ],
        ),
    ];
    let miss = Miss {
        t_ns: 1500,
        end_ns: 3100,
        tid: 100,
        kind: MissKind::Overrun,
    };
    let e = explain(&miss, &mut w, &TestNames);
    assert_eq!(sum(&e), 1600);
    assert_eq!(e.ns_of(CauseKind::Thread, "culprit"), 1500, "{e:?}");
    assert_eq!(e.ns_of(CauseKind::Unaccounted, "unaccounted"), 0, "{e:?}");
}
