use super::*;

#[test]
fn fifo_priority_is_range_checked() {
    assert!(Policy::Fifo { priority: 0 }.validate().is_err());
    assert!(Policy::Fifo { priority: 100 }.validate().is_err());
    assert!(Policy::Fifo { priority: 80 }.validate().is_ok());
    let msg = Policy::RoundRobin { priority: 120 }
        .validate()
        .unwrap_err()
        .to_string();
    assert!(msg.contains("1..99"), "{msg}");
}

#[test]
fn deadline_parameters_are_ordered() {
    let bad = Policy::Deadline {
        runtime_ns: 2_000_000,
        deadline_ns: 1_000_000,
        period_ns: 1_000_000,
    };
    assert!(bad.validate().is_err());
    let good = Policy::Deadline {
        runtime_ns: 200_000,
        deadline_ns: 1_000_000,
        period_ns: 1_000_000,
    };
    assert!(good.validate().is_ok());
}

#[test]
fn attr_round_trip() {
    for p in [
        Policy::Other { nice: 5 },
        Policy::Batch { nice: -3 },
        Policy::Idle,
        Policy::Fifo { priority: 42 },
        Policy::RoundRobin { priority: 7 },
        Policy::Deadline {
            runtime_ns: 1,
            deadline_ns: 2,
            period_ns: 3,
        },
    ] {
        assert_eq!(Policy::from_attr(&p.to_attr()), p);
    }
}

#[test]
fn cpu_lists_round_trip() {
    assert_eq!(
        parse_cpu_list("0-3,6,8-9").unwrap(),
        vec![0, 1, 2, 3, 6, 8, 9]
    );
    assert_eq!(format_cpu_list(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
    assert!(parse_cpu_list("3-1").is_err());
    assert!(parse_cpu_list("x").is_err());
    assert_eq!(parse_cpu_list("").unwrap(), Vec::<usize>::new());
    // Refused before the range is expanded (it would take 800 GB).
    assert!(parse_cpu_list("0-99999999999")
        .unwrap_err()
        .contains("CPU 99999999999 is beyond"));
}

#[test]
fn a_users_cpu_list_is_checked_against_the_online_cpus_unexpanded() {
    let online = [0, 1];
    assert_eq!(parse_cpu_list_within("1,0-1", &online).unwrap(), vec![0, 1]);
    assert_eq!(
        parse_cpu_list_within("0-99999999999", &online).unwrap_err(),
        "CPU 99999999999 is not online; this machine has CPUs 0-1"
    );
    assert_eq!(
        parse_cpu_list_within("7", &online).unwrap_err(),
        "CPU 7 is not online; this machine has CPUs 0-1"
    );
    // A hole inside a range whose ends are online.
    assert_eq!(
        parse_cpu_list_within("0-2", &[0, 2]).unwrap_err(),
        "CPU 1 is not online; this machine has CPUs 0,2"
    );
    assert!(parse_cpu_list_within("0-99999999999999999999999", &online)
        .unwrap_err()
        .contains("bad CPU list"));
    assert!(parse_cpu_list_within("", &online).unwrap().is_empty());
}

#[test]
fn policy_grant_is_read_back() {
    // Whatever this machine allows, the grant must describe the thread's real state.
    let grant = probe_policy(Policy::Fifo { priority: 10 });
    match &grant.refusal {
        None => {
            assert_eq!(grant.granted, Policy::Fifo { priority: 10 });
            assert!(grant.is_realtime());
        }
        Some(why) => {
            assert!(!grant.is_realtime());
            assert!(why.contains("SCHED_FIFO"));
        }
    }
}

#[test]
fn other_policy_is_always_granted() {
    let grant = probe_policy(Policy::Other { nice: 0 });
    assert!(grant.is_exact(), "{grant:?}");
    assert!(!grant.is_realtime());
}

#[test]
fn pinning_to_an_offline_cpu_is_refused_with_the_online_list() {
    let err = std::thread::spawn(|| set_current_thread_affinity(&[4095]))
        .join()
        .unwrap()
        .unwrap_err();
    assert!(err.to_string().contains("online CPUs"), "{err}");
}

#[test]
fn pinning_reads_back_the_cpu() {
    let online = online_cpus();
    let cpu = *online.last().unwrap();
    let got = std::thread::spawn(move || set_current_thread_affinity(&[cpu]))
        .join()
        .unwrap()
        .unwrap();
    assert_eq!(got, vec![cpu]);
}

#[test]
fn prefault_runs_within_a_sized_stack() {
    std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(|| prefault_stack(512 * 1024))
        .unwrap()
        .join()
        .unwrap();
}
