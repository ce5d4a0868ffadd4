//! `audiolat bench`: every workload timed against `f32::sin`, voices counted, Ctrl-C.

use std::time::Duration;

use crate::util::{self, machine_lock, run, run_json, spawn, temp_db};

#[test]
fn bench_times_every_workload_against_f32_sin_and_counts_voices() {
    let (_dir, db) = temp_db("b.db");
    let v = run_json(
        &db,
        &["bench", "--each", "20ms", "--period", "64", "--json"],
    );
    assert_eq!(v["reference"]["name"], "reference f32::sin");
    assert!(v["reference"]["ns_per_sample"].as_f64().unwrap() > 0.0);
    let names: Vec<&str> = v["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    for w in ["sine", "poly"] {
        assert!(names.contains(&w), "{names:?}");
    }
    assert!(names.iter().any(|n| n.starts_with("bank:")), "{names:?}");
    for k in v["kernels"].as_array().unwrap() {
        assert!(k["ns_per_sample"].as_f64().unwrap() > 0.0, "{k}");
        assert!(k["ratio_to_reference"].as_f64().unwrap() > 0.0, "{k}");
    }
    assert!(v["voice_capacity"].as_u64().unwrap() >= 1, "{v}");
    assert_eq!(v["period_frames"], 64);
    assert!(v.get("workers").is_none(), "--workers is not run unasked");
    let m = &v["migrator"];
    assert_eq!(m["repeats"].as_array().unwrap().len(), 1);
    for key in [
        "block_ns",
        "roofline_ns",
        "roofline_ratio",
        "portable_roofline_ratio",
        "portable_vs_best_roofline",
    ] {
        assert!(m[key].as_f64().unwrap() > 0.0, "{key}: {m}");
    }
    // The kernel timed is the fastest this CPU runs; every kernel compiled in is named.
    assert_eq!(m["available_kernels"][0], m["kernel"], "{m}");
    let text = run(&db, &["bench", "--each", "20ms"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(text.stdout.contains("voice capacity:"));
    assert!(text.stdout.contains("ns/sample"));
    assert!(text.stdout.contains("roofline"), "{}", text.stdout);
    assert!(
        text.stdout.contains("kernels this CPU runs:"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains("built ") && text.stdout.contains("host steal"),
        "the figures carry their build profile and validity: {}",
        text.stdout
    );
    assert!(v["build_profile"].as_str().unwrap().contains("opt-level"));
    assert!(v["host_steal_percent"].as_f64().is_some());
    let v = run_json(&db, &["bench", "--each", "10ms", "--repeat", "3", "--json"]);
    assert_eq!(v["migrator"]["repeats"].as_array().unwrap().len(), 3, "{v}");
    let zero = run(&db, &["bench", "--repeat", "0"]);
    assert_eq!(zero.code, 2, "{}", zero.stderr);
    // Ctrl-C ends it at once (within a round), exit 130, nothing half-measured printed.
    let mut child = spawn(&db, &["bench", "--each", "10s"]);
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = util::wait_timeout(&mut child, Duration::from_secs(30));
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted"));
    assert!(!db.exists(), "bench stores nothing");
}

/// `bench --workers`: the split synth per worker count beside the whole synth on the
/// calling thread, with its hand-off; counts and relations that no noise can break (no
/// time is compared with another). Workers and the caller at most the online CPUs.
#[test]
fn bench_workers_times_the_split_synth_and_its_hand_off() {
    // Its workers spin at SCHED_FIFO: not beside another test's measurement.
    let _m = machine_lock();
    let (_dir, db) = temp_db("b.db");
    let cpus = engine::rt::online_cpus().len().max(1);
    if cpus < 2 {
        eprintln!("skipped: one CPU, no worker fits beside the caller");
        return;
    }
    let v = run_json(
        &db,
        &["bench", "--each", "10ms", "--workers", "1,1,0", "--json"],
    );
    let w = &v["workers"];
    let counts = w["counts"].as_array().unwrap();
    let workers: Vec<u64> = counts
        .iter()
        .map(|c| c["workers"].as_u64().unwrap())
        .collect();
    assert_eq!(workers, [0, 1], "0 first, each count once: {w}");
    let blocks = w["rounds"].as_u64().unwrap() * w["blocks_per_round"].as_u64().unwrap();
    assert!(blocks >= 1000, "{w}");
    let granted = w["realtime_refused"].is_null();
    for c in counts {
        let n = c["workers"].as_u64().unwrap();
        assert_eq!(c["blocks"].as_u64(), Some(blocks), "{c}");
        let (p50, p99) = (
            c["block_median_ns"].as_f64().unwrap(),
            c["block_p99_ns"].as_f64().unwrap(),
        );
        assert!(p50 > 0.0 && p99 >= p50, "{c}");
        assert!(c["speedup_vs_zero"].as_f64().unwrap() > 0.0, "{c}");
        assert_eq!(c["realtime"].as_bool(), Some(granted), "{c}");
        assert_eq!(
            c["threads"].as_u64(),
            Some(n + 1),
            "the caller computes too: {c}"
        );
        assert_eq!(c["worker_cpus"].as_array().unwrap().len() as u64, n, "{c}");
        assert_eq!(c["shares_cpu"].as_bool(), Some(false), "{c}");
        if n == 0 {
            assert_eq!(c["speedup_vs_zero"].as_f64(), Some(1.0), "{c}");
            for key in [
                "speedup_vs_one",
                "handoff_to_workers_ns",
                "handoff_back_ns",
                "handoff_ns",
                "longest_part_ns",
                "caller_part_ns",
                "caller_part_alone_ns",
            ] {
                assert!(
                    c[key].is_null(),
                    "not measured with 0 workers, so absent: {key}: {c}"
                );
            }
        } else {
            for key in [
                "handoff_to_workers_ns",
                "handoff_back_ns",
                "handoff_ns",
                "longest_part_ns",
                "caller_part_ns",
                "caller_part_alone_ns",
            ] {
                // Measured (not null); a median hand-off may read 0 on a coarse clock.
                assert!(c[key].as_f64().unwrap() >= 0.0, "{key}: {c}");
            }
            // Medians of per-block values where each block's longest part is at least
            // its caller's part: the order holds for the medians too.
            let (longest, caller) = (c["longest_part_ns"].as_f64(), c["caller_part_ns"].as_f64());
            assert!(longest >= caller, "{c}");
            assert!(c["speedup_vs_one"].as_f64().unwrap() > 0.0, "{c}");
        }
    }
    assert_eq!(counts[1]["speedup_vs_one"].as_f64(), Some(1.0));
    let text = run(&db, &["bench", "--each", "10ms", "--workers", "1"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    for needle in [
        "worker CPUs",
        "1 worker (2 threads): ",
        "hand-off",
        "block time",
        "vs 0 is against the 0 row",
    ] {
        assert!(text.stdout.contains(needle), "{needle}: {}", text.stdout);
    }
    let too_many = cpus.to_string();
    for bad in ["1000", too_many.as_str(), "x", "1,,2", "-1"] {
        let out = run(&db, &["bench", "--workers", bad]);
        assert_eq!(out.code, 2, "{bad}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{bad}: {}", out.stderr);
        assert!(out.stderr.contains("--workers"), "{bad}: {}", out.stderr);
    }
    // As many workers as CPUs leave none for the caller: refused, with the reason and
    // the range, in bench and net alike (one parser).
    for cmd in ["bench", "net"] {
        let out = run(&db, &[cmd, "--workers", too_many.as_str()]);
        assert_eq!(out.code, 2, "{cmd}: {}", out.stderr);
        let want = format!(
            "use 0 to {} (the calling thread renders a part too",
            cpus - 1
        );
        assert!(out.stderr.contains(&want), "{cmd}: {}", out.stderr);
    }
    assert!(!db.exists(), "bench stores nothing");
}
