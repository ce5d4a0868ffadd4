use std::collections::BTreeMap;

use engine::rt::Policy;

use super::*;

fn two_cpus() -> Capacity {
    Capacity {
        online: vec![0, 1],
        deadline_share: 0.95,
        link_mbps: Some(1000.0),
        held: Vec::new(),
    }
}

#[test]
fn flags_and_toml_give_the_same_cells() {
    let toml = r#"
        [cell.music]
        kind = "dedicated"
        cpus = "1"
        priority = 70
        bandwidth = "240"

        [cell.video]
        kind = "time-triggered"
        runtime = "2ms"
        period = "33ms"

        [cell.ep]
        kind = "best-effort"
        policy = "batch"
        nice = 5
    "#;
    let from_file = CellSet::from_toml_within(toml, &[0, 1]).unwrap();
    let mut from_flags = CellSet::default();
    for f in [
        "ep=best-effort:policy=batch,nice=5",
        "music=dedicated:cpus=1,priority=70,bandwidth=240M",
        "video=time-triggered:runtime=2ms,period=33ms",
    ] {
        from_flags
            .push(CellSet::parse_flag_within(f, &[0, 1]).unwrap())
            .unwrap();
    }
    // The TOML tables come sorted by name.
    assert_eq!(from_file, from_flags);
    let music = from_file.get("music").unwrap();
    assert_eq!(music.policy, Policy::Fifo { priority: 70 });
    assert_eq!(music.bandwidth_mbps, Some(240.0));
    assert!(music.exclusive());
    let video = from_file.get("video").unwrap();
    assert_eq!(
        video.policy,
        Policy::Deadline {
            runtime_ns: 2_000_000,
            deadline_ns: 33_000_000,
            period_ns: 33_000_000
        }
    );
    assert!(!video.exclusive());
}

#[test]
fn bad_cells_are_refused_with_the_reason() {
    for (flag, says) in [
        ("music", "cell 'music': use NAME=KIND"),
        ("music=exclusive", "unknown cell kind"),
        ("music=dedicated", "needs its CPUs"),
        ("music=dedicated:cpus=", "empty CPU list"),
        ("music=dedicated:cpus=1,policy=batch", "does not apply"),
        ("music=dedicated:cpus=1,priority=100", "priority"),
        (
            "tt=time-triggered:runtime=2ms",
            "cells need runtime= and period=",
        ),
        ("tt=time-triggered:runtime=3ms,period=2ms", "runtime"),
        ("be=best-effort:policy=fifo", "other, batch or idle"),
        ("be=best-effort:colour=red", "unknown key"),
        ("b e=best-effort", "cell name"),
        ("be=best-effort:bandwidth=lots", "not a bandwidth"),
    ] {
        let e = CellSet::parse_flag_within(flag, &[0, 1]).unwrap_err();
        assert!(e.contains(says), "{flag}: {e}");
    }
    assert!(CellSet::from_toml_within(
        "[cell.a]\nkind = \"dedicated\"\ncpus = \"1\"\ncolour = 1\n",
        &[0, 1]
    )
    .unwrap_err()
    .contains("colour"));
    let mut set = CellSet::default();
    set.push(CellSet::parse_flag_within("a=best-effort", &[0, 1]).unwrap())
        .unwrap();
    assert!(set
        .push(CellSet::parse_flag_within("a=best-effort", &[0, 1]).unwrap())
        .unwrap_err()
        .contains("twice"));
}

fn set(flags: &[&str]) -> CellSet {
    let mut s = CellSet::default();
    for f in flags {
        s.push(CellSet::parse_flag_within(f, &[0, 1]).unwrap())
            .unwrap();
    }
    s
}

#[test]
fn admission_refuses_over_commitment_and_says_by_how_much() {
    let none = BTreeMap::new();
    // Every CPU exclusive: nothing left for the system.
    let e = set(&["a=dedicated:cpus=0", "b=dedicated:cpus=1"])
        .admit(&two_cpus(), &none, &[])
        .unwrap_err();
    assert!(
        e.contains("= 2 of the 2 online CPUs") && e.contains("over by 1 CPU"),
        "{e}"
    );
    // Overlapping exclusive sets.
    let e = set(&[
        "a=dedicated:cpus=1",
        "b=time-triggered:cpus=1,runtime=1ms,period=10ms",
    ])
    .admit(&two_cpus(), &none, &[])
    .unwrap_err();
    assert!(e.contains("both want CPU 1"), "{e}");
    // SCHED_DEADLINE: 0.6 + 0.5 on the one shared CPU.
    let e = set(&[
        "m=dedicated:cpus=1",
        "tt=time-triggered:runtime=6ms,period=10ms",
        "et=event-triggered:runtime=5ms,period=10ms",
    ])
    .admit(&two_cpus(), &none, &[])
    .unwrap_err();
    assert!(
        e.contains("tt (1 x 6ms/10ms) + et (1 x 5ms/10ms) = 1.100 CPU of the 0.950")
            && e.contains("over by 0.150 CPU"),
        "{e}"
    );
    // Threads multiply the share.
    let threads = BTreeMap::from([("tt".to_string(), 4)]);
    let e = set(&["tt=time-triggered:runtime=5ms,period=10ms"])
        .admit(&two_cpus(), &threads, &[])
        .unwrap_err();
    assert!(
        e.contains("2.000 CPU of the 1.900") && e.contains("over by 0.100"),
        "{e}"
    );
    // Spinning threads need a CPU each.
    let threads = BTreeMap::from([("m".to_string(), 3)]);
    let e = set(&["m=dedicated:cpus=1"])
        .admit(&two_cpus(), &threads, &["m".to_string()])
        .unwrap_err();
    assert!(e.contains("over by 2 CPU"), "{e}");
    // Bandwidth.
    let e = set(&["m=best-effort:bandwidth=240", "x=best-effort:bandwidth=900"])
        .admit(&two_cpus(), &none, &[])
        .unwrap_err();
    assert!(
        e.contains("m 240 + x 900 = 1140 Mbit/s of the link's 1000 Mbit/s")
            && e.contains("over by 140 Mbit/s"),
        "{e}"
    );
    // Best-effort on an exclusive CPU.
    let e = set(&["m=dedicated:cpus=1", "be=best-effort:cpus=1"])
        .admit(&two_cpus(), &none, &[])
        .unwrap_err();
    assert!(e.contains("use CPU 0"), "{e}");
    // Offline CPU: refused as the cell is read, its range never expanded.
    for (flag, says) in [
        (
            "m=dedicated:cpus=7",
            "cell m: CPU 7 is not online; this machine has CPUs 0-1",
        ),
        (
            "m=dedicated:cpus=0-99999999999",
            "cell m: CPU 99999999999 is not online; this machine has CPUs 0-1",
        ),
    ] {
        assert_eq!(CellSet::parse_flag_within(flag, &[0, 1]).unwrap_err(), says);
    }
    let e = CellSet::from_toml_within(
        "[cell.m]\nkind = \"dedicated\"\ncpus = \"1-99999999999\"\n",
        &[0, 1],
    )
    .unwrap_err();
    assert!(e.contains("CPU 99999999999 is not online"), "{e}");
}

#[test]
fn a_cpu_another_audiolat_holds_is_refused_naming_it() {
    let mut capacity = two_cpus();
    capacity.held = vec![partition::HeldCpu {
        cpu: 1,
        pid: 4242,
        cell: "music".into(),
    }];
    let none = BTreeMap::new();
    for flags in [
        &["m2=dedicated:cpus=1"][..],
        &["be=best-effort:cpus=0-1"][..],
    ] {
        let e = set(flags).admit(&capacity, &none, &[]).unwrap_err();
        assert!(
            e.contains("CPU 1 is held by audiolat PID 4242 (its cell `music`)"),
            "{e}"
        );
    }
    // Its CPU is not left for everything else either.
    let a = set(&["be=best-effort"])
        .admit(&capacity, &none, &[])
        .unwrap();
    assert_eq!(a.shared, vec![0]);
    let e = set(&["m2=dedicated:cpus=0"])
        .admit(&capacity, &none, &[])
        .unwrap_err();
    assert!(
        e.contains("leaving none") && e.contains("held by audiolat PID 4242"),
        "{e}"
    );
}

#[test]
fn a_feasible_set_is_admitted_with_its_arithmetic() {
    let a = set(&[
        "music=dedicated:cpus=1,bandwidth=240",
        "video=time-triggered:runtime=2ms,period=33ms",
        "ep=best-effort:policy=batch",
    ])
    .admit(&two_cpus(), &BTreeMap::new(), &[])
    .unwrap();
    assert_eq!(a.exclusive, vec![("music".to_string(), vec![1])]);
    assert_eq!(a.shared, vec![0]);
    assert!(
        a.checks
            .iter()
            .any(|c| c.contains("video (1 x 2ms/33ms) = 0.061 CPU of the 0.950")),
        "{:?}",
        a.checks
    );
    assert!(a
        .checks
        .iter()
        .any(|c| c.contains("240 Mbit/s of the link's 1000")));
}

#[test]
fn bandwidths_parse() {
    assert_eq!(parse_mbps("240").unwrap(), 240.0);
    assert_eq!(parse_mbps("1G").unwrap(), 1000.0);
    assert_eq!(parse_mbps("150Mbit").unwrap(), 150.0);
    assert_eq!(parse_mbps("500kbit").unwrap(), 0.5);
    assert!(parse_mbps("0").is_err());
    assert!(parse_mbps("-5").is_err());
}
