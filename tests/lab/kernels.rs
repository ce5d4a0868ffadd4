//! What the lab says about the kernels themselves: doctor's preemption finding on the
//! stock and PREEMPT_RT kernels, jitter running on both, and the suite on both compared
//! (the lab's answer to "stock or PREEMPT_RT?").

use results::{RunFilter, Store};
use serde_json::Value;

use crate::harness::{enabled, guest, shared, Kernel};

fn preemption_finding(doctor: &Value) -> &Value {
    doctor["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["check"] == "kernel.preemption")
        .expect("a kernel.preemption finding")
}

#[test]
fn doctor_reads_the_preemption_mode_of_each_kernel() {
    if !enabled() {
        return;
    }
    // The stock kernel is PREEMPT_DYNAMIC; the guest has no debugfs mounted and no
    // /boot/config of its kernel: doctor mounts debugfs read-only to read the mode, and
    // leaves it unmounted.
    let g = guest(Kernel::Stock);
    g.ok("10-doctor");
    let f = preemption_finding(&g.json("doctor.json")).clone();
    let value = f["value"].as_str().unwrap();
    assert!(
        value.starts_with("PREEMPT_DYNAMIC (") && value.ends_with(", debugfs)"),
        "{f}"
    );
    assert!(!value.contains("unknown"), "{f}");
    assert_eq!(g.file("debugfs-mounted-after.txt").trim(), "0");
    // PREEMPT_RT is what a real-time audio machine wants.
    let g = guest(Kernel::Rt);
    g.ok("10-doctor");
    let f = preemption_finding(&g.json("doctor.json")).clone();
    assert_eq!(f["value"], "PREEMPT_RT", "{f}");
    assert_eq!(f["verdict"], "ok", "{f}");
    assert_eq!(g.file("debugfs-mounted-after.txt").trim(), "0");
}

#[test]
fn jitter_runs_on_both_kernels() {
    if !enabled() {
        return;
    }
    for kernel in [Kernel::Stock, Kernel::Rt] {
        let g = guest(kernel);
        g.ok("70-jitter");
        let v = g.json("jitter.json");
        let count = v["measurements"]
            .as_array()
            .and_then(|m| m.iter().find(|m| m["metric"] == "wakeup_latency"))
            .and_then(|m| m["summary"]["count"].as_u64())
            .unwrap_or(0);
        // Under TCG the times are the emulator's: only that it measured is asserted.
        assert!(count > 100, "{kernel:?}: {count} wake-ups: {v}");
        assert_eq!(
            v["flags"]["emulated_cpu"],
            g.emulated(),
            "{kernel:?}: {}",
            v["flags"]
        );
    }
}

#[test]
fn the_suite_on_both_kernels_compares_stock_with_preempt_rt() {
    if !enabled() {
        return;
    }
    guest(Kernel::Stock).ok("90-suite");
    guest(Kernel::Rt).ok("90-suite");
    let db = shared().join("suite.db");
    let store = Store::open_existing(&db).expect("the suites' database came back");
    let runs = store.list_runs(&RunFilter::default()).unwrap();
    let kernels: std::collections::BTreeSet<String> = runs
        .iter()
        .map(|r| r.machine.kernel_release.clone())
        .collect();
    assert_eq!(kernels.len(), 2, "{kernels:?}");
    assert!(
        kernels.iter().any(|k| k.ends_with("-rt-amd64")),
        "{kernels:?}"
    );
    // Every run that measured carries the emulated-CPU flag, as the lab booted them.
    let emulated = guest(Kernel::Stock).emulated();
    for r in &runs {
        if r.probe.name != "doctor" && r.status == results::RunStatus::Complete {
            assert_eq!(
                r.flags["emulated_cpu"], emulated,
                "run {}: {}",
                r.id, r.flags
            );
        }
    }
    let groups: std::collections::BTreeSet<results::GroupId> =
        runs.iter().filter_map(|r| r.group_id).collect();
    assert_eq!(groups.len(), 2, "{groups:?}");
    let g: Vec<results::GroupId> = groups.into_iter().collect();
    let out = std::process::Command::new(crate::util::bin())
        .arg("--db")
        .arg(&db)
        .args([
            "compare",
            &format!("group:{}", g[0]),
            &format!("group:{}", g[1]),
        ])
        .output()
        .expect("compare");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("A ran on lab-") && text.contains("PREEMPT_DYNAMIC"),
        "{text}"
    );
    assert!(
        text.contains("B ran on lab-") && text.contains("PREEMPT_RT"),
        "{text}"
    );
    assert!(text.contains("wakeup_latency"), "{text}");
    assert_eq!(text.contains("an emulated CPU"), emulated, "{text}");
}

/// `jitter --why` on both kernels names the FIFO culprit the check starts on the
/// probe's CPU (a process spinning 5 ms every 250 ms), with its time in every late
/// wake-up it overlapped: agreement with a truth made in the same guest.
#[test]
fn why_names_a_fifo_culprit_on_the_stock_and_the_rt_kernel() {
    if !enabled() {
        return;
    }
    for kernel in [Kernel::Stock, Kernel::Rt] {
        let g = guest(kernel);
        g.ok("75-why");
        let v = g.json("why.json");
        let why = &v["result"]["why"];
        assert!(why["unavailable"].is_null(), "{kernel:?}: {why}");
        let spins: Vec<(u64, u64)> = g
            .file("spins.txt")
            .lines()
            .filter_map(|l| {
                let (s, e) = l.split_once(' ')?;
                Some((s.parse().ok()?, e.parse().ok()?))
            })
            .collect();
        assert!(spins.len() >= 8, "{kernel:?}: {} spins", spins.len());
        let caused = crate::util::assert_named(why, "why-labhog", &spins);
        assert!(
            caused * 10 >= spins.len() * 5,
            "{kernel:?}: {caused} late wake-ups named of {} spins: {why}",
            spins.len()
        );
        // Over the run the emulator's own costs (its timer interrupt, its idle exit) may
        // outweigh the culprit: it is named in every miss it made, not first overall.
        let named = why["culprits"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "why-labhog" && c["kind"] == "thread")
            .unwrap_or_else(|| panic!("{kernel:?}: the culprit is not named: {why}"));
        assert!(
            named["misses"].as_u64().unwrap() >= caused as u64,
            "{kernel:?}: {named}"
        );
    }
}
