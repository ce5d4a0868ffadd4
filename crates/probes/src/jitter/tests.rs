//! Unit tests of the jitter probe.

use super::*;
use results::records::jitter::JitterResultRecord;
use serde_json::json;

fn cfg(mode: WakeMode, period_ns: u64, loops: u64) -> JitterConfig {
    JitterConfig {
        mode,
        policy: Policy::Other { nice: 0 },
        lock_memory: false,
        dma_latency: false,
        ..JitterConfig::new(period_ns, RunLength::Loops(loops))
    }
}

#[test]
fn fragment_model_arithmetic() {
    // latencytest's "3x128" were bytes of 16-bit stereo: 32 frames, 0.73 ms.
    let f = FragmentModel {
        fragments: 3,
        frames: 32,
        sample_rate: 44_100,
    };
    assert_eq!(f.period_ns(), 725_624);
    assert_eq!(f.headroom_ns(), 2 * 725_624);
}

#[test]
fn a_fragment_model_runs_at_a_sample_rate() {
    assert_eq!(
        FragmentModel::at_rate(3, 32, 44_100.0),
        Ok(FragmentModel {
            fragments: 3,
            frames: 32,
            sample_rate: 44_100,
        })
    );
    assert_eq!(
        FragmentModel::at_rate(3, 32, 44_100.5),
        Err(NotASampleRate(44_100.5))
    );
    assert!(FragmentModel::at_rate(3, 32, 999.0).is_err());
    assert!(FragmentModel::at_rate(3, 32, 768_000.0).is_ok());
    assert!(FragmentModel::at_rate(3, 32, 768_001.0).is_err());
}

#[test]
fn validation_names_the_fix() {
    let mut c = cfg(WakeMode::Nanosleep, 1_000, 10);
    assert!(c.validate().unwrap_err().to_string().contains("rate"));
    c.period_ns = 1_000_000;
    c.busy_percent = 100.0;
    let busy = c.validate().unwrap_err();
    assert!(matches!(
        &busy,
        JitterError::OutOfRange { setting: JitterSetting::Busy, value: Some(v) } if v == "100"
    ));
    assert!(
        busy.to_string()
            .starts_with("the busy share 100 is out of range"),
        "{busy}"
    );
    let flag = |_| "--busy";
    assert!(busy.message(flag).starts_with("--busy 100 is out of range"));
    c.busy_percent = 10.0;
    c.policy = Policy::Fifo { priority: 200 };
    assert!(c.validate().unwrap_err().to_string().contains("1..99"));
    c.policy = Policy::Deadline {
        runtime_ns: 100_000,
        deadline_ns: 1_000_000,
        period_ns: 1_000_000,
    };
    c.cpus = Some(vec![0]);
    let pinned = c.validate().unwrap_err();
    assert!(matches!(pinned, JitterError::DeadlineWithCpus));
    assert!(pinned.to_string().contains("drop the CPU list"), "{pinned}");
    assert!(pinned.message(|_| "--cpu").ends_with("drop --cpu"));
    c.cpus = None;
    c.fragments = Some(FragmentModel {
        fragments: 1,
        frames: 32,
        sample_rate: 44_100,
    });
    let few = c.validate().unwrap_err();
    assert!(few.to_string().contains("headroom"));
    assert!(
        !few.to_string().contains("--"),
        "a library error names no flag: {few}"
    );
    c.fragments = None;
    c.length = RunLength::Loops(0);
    assert_eq!(
        c.validate().unwrap_err().to_string(),
        "the loop count must be positive"
    );
}

#[test]
fn every_mode_measures_plausible_latencies() {
    for mode in [WakeMode::Nanosleep, WakeMode::Timerfd, WakeMode::Signal] {
        let stop = AtomicBool::new(false);
        let out = run(&cfg(mode, 1_000_000, 200), &stop, |_| {}).unwrap();
        assert_eq!(out.end, LoopEnd::Complete, "{mode:?}");
        assert_eq!(out.recorded.cycles, 200, "{mode:?}");
        let s = out.recorded.histograms.latency.summary().unwrap();
        assert_eq!(s.count, 200);
        // A wake-up is never early, and its median is far below a period.
        assert!(s.min >= 0.0 && s.p50 < 1_000_000.0, "{mode:?}: {s:?}");
        // Intervals centre on the period.
        let iv = out.recorded.histograms.interval.summary().unwrap();
        assert!((iv.p50 - 1_000_000.0).abs() < 200_000.0, "{mode:?}: {iv:?}");
        assert!(!out.recorded.blocks.is_empty());
    }
}

#[test]
fn stop_flag_interrupts_and_keeps_samples() {
    let stop = AtomicBool::new(false);
    let c = JitterConfig {
        length: RunLength::Duration(Duration::from_secs(30)),
        ..cfg(WakeMode::Nanosleep, 1_000_000, 1)
    };
    let mut ticks = 0;
    let out = run(&c, &stop, |p| {
        ticks += 1;
        if p.live.cycles > 50 {
            stop.store(true, Ordering::Relaxed);
        }
    })
    .unwrap();
    assert_eq!(out.end, LoopEnd::Interrupted);
    assert!(out.recorded.cycles > 50 && out.recorded.cycles < 30_000);
    assert_eq!(out.recorded.histograms.latency.count(), out.recorded.cycles);
    assert!(ticks > 0);
}

#[test]
fn stopping_interrupts_a_long_wait_in_every_mode() {
    for mode in [WakeMode::Nanosleep, WakeMode::Timerfd, WakeMode::Signal] {
        let stop = AtomicBool::new(false);
        let c = JitterConfig {
            length: RunLength::Duration(Duration::from_secs(60)),
            ..cfg(mode, 5_000_000_000, 1)
        };
        let mut ticks = 0;
        let out = run(&c, &stop, |_| {
            ticks += 1;
            if ticks == 5 {
                stop.store(true, Ordering::Relaxed);
            }
        })
        .unwrap();
        assert_eq!(out.end, LoopEnd::Interrupted, "{mode:?}");
        // Cycle 0 (10 ms after start) was measured; the stop came long before the
        // next deadline and ended the wait for it without recording anything.
        assert_eq!(out.recorded.cycles, 1, "{mode:?}");
        assert!(out.end_ns < out.start_ns + 5_000_000_000, "{mode:?}");
    }
}

#[test]
fn an_impossible_fragment_budget_counts_underruns() {
    // 90 % busy with 2 fragments of 0.5 ms: any wake-up later than ~50 µs plus
    // calibration error under-runs; make it certain with a 60 µs period and 2
    // fragments, where the work alone (54 µs) nearly fills the headroom, and a
    // histogram bound of 1 µs so overflows are recorded too.
    let c = JitterConfig {
        fragments: Some(FragmentModel {
            fragments: 2,
            frames: 3,
            sample_rate: 48_000,
        }),
        busy_percent: 99.0,
        hist_bound_ns: 1_000,
        ..cfg(WakeMode::Nanosleep, 62_500, 400)
    };
    let stop = AtomicBool::new(false);
    let out = run(&c, &stop, |_| {}).unwrap();
    assert_eq!(out.recorded.cycles, 400);
    let completion = out.recorded.histograms.completion.as_ref().unwrap();
    assert_eq!(completion.count(), 400);
    // Completion is at least the work's calibrated time in the median.
    assert!(completion.summary().unwrap().p50 >= 0.5 * 62_500.0);
    assert_eq!(
        out.recorded.underruns.len() as u64,
        out.recorded.underrun_count.min(MAX_RECORDS as u64)
    );
    assert!(out.recorded.histograms.latency.overflows() > 0);
    assert!(!out.recorded.overflows.is_empty());
    let m = out.measurements();
    assert_eq!(m.last().unwrap().metric, "fragment_completion");
    assert_eq!(m.last().unwrap().misses, Some(out.recorded.underrun_count));
}

#[test]
fn checkpoints_grow_and_the_totals_count_every_cycle() {
    let c = JitterConfig {
        checkpoint_ns: 300_000_000,
        ..cfg(WakeMode::Nanosleep, 1_000_000, 1_500)
    };
    let stop = AtomicBool::new(false);
    let mut seen: Vec<u64> = Vec::new();
    let out = run(&c, &stop, |p| {
        if let Some(cp) = p.checkpoint {
            seen.push(cp.latency.count());
            assert_eq!(
                cp.cycles,
                cp.latency.count(),
                "counts from the same intervals"
            );
            let ms = measurements(&c, cp, &[], true);
            assert_eq!(ms[0].detail["partial"], json!(true));
            assert_eq!(ms[0].detail["cycles_so_far"], json!(cp.cycles));
        }
    })
    .unwrap();
    assert!(seen.len() >= 2, "checkpoints: {seen:?}");
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert!(*seen.last().unwrap() <= 1_500);
    let h = &out.recorded.histograms;
    assert_eq!(h.cycles, 1_500);
    assert_eq!(h.skipped, out.recorded.skipped);
    assert_eq!(h.latency.count(), 1_500);
    assert_eq!(h.interval.count(), 1_499);
    assert_eq!(out.measurements()[0].count(), 1_500);
}

#[test]
fn outliers_are_the_largest_wakeups() {
    let stop = AtomicBool::new(false);
    let out = run(&cfg(WakeMode::Nanosleep, 500_000, 300), &stop, |_| {}).unwrap();
    assert_eq!(out.recorded.outliers.len(), TOP_OUTLIERS);
    assert_eq!(
        out.recorded.outliers[0].value_ns,
        out.recorded.histograms.latency.max()
    );
    assert!(out
        .recorded
        .outliers
        .windows(2)
        .all(|w| w[0].value_ns >= w[1].value_ns));
    let p50 = out.recorded.histograms.latency.percentile(50.0).0;
    assert!(out.recorded.outliers.last().unwrap().value_ns >= p50);
}

/// The configuration as stored before it was a record (`json!`, key by key): the
/// record writes the same JSON, and reads it back.
fn config_json_as_before(c: &JitterConfig) -> serde_json::Value {
    serde_json::json!({
        "mode": c.mode.name(),
        "period_ns": c.period_ns,
        "rate_hz": 1e9 / c.period_ns as f64,
        "fragments": c.fragments.map(|f| serde_json::json!({
            "fragments": f.fragments, "frames": f.frames, "sample_rate": f.sample_rate,
            "period_ns": f.period_ns(), "headroom_ns": f.headroom_ns(),
        })),
        "busy_percent": c.busy_percent,
        "policy": c.policy.to_string(),
        "cpus": c.cpus.as_ref().map(|c| engine::rt::format_cpu_list(c)),
        "duration_s": match c.length { RunLength::Duration(d) => Some(d.as_secs_f64()), _ => None },
        "loops": match c.length { RunLength::Loops(n) => Some(n), _ => None },
        "histogram_bound_ns": c.hist_bound_ns,
        "lock_memory": c.lock_memory,
        "dma_latency": c.dma_latency,
    })
}

#[test]
fn the_configuration_record_writes_the_json_stored_before() {
    let plain = cfg(WakeMode::Timerfd, 1_000_000, 10);
    let fragments = JitterConfig {
        fragments: Some(FragmentModel {
            fragments: 3,
            frames: 32,
            sample_rate: 44_100,
        }),
        busy_percent: 12.5,
        cpus: Some(vec![0]),
        length: RunLength::Duration(Duration::from_millis(1500)),
        dma_latency: true,
        ..cfg(WakeMode::Nanosleep, 725_624, 10)
    };
    for c in [plain, fragments] {
        let json = c.to_json();
        assert_eq!(json, config_json_as_before(&c));
        assert_eq!(JitterConfigRecord::from_json(&json).unwrap(), c.record());
    }
}

#[test]
fn the_result_record_writes_the_json_stored_before() {
    let c = JitterConfig {
        fragments: Some(FragmentModel {
            fragments: 2,
            frames: 3,
            sample_rate: 48_000,
        }),
        busy_percent: 50.0,
        hist_bound_ns: 1_000,
        ..cfg(WakeMode::Nanosleep, 62_500, 200)
    };
    let out = run(&c, &AtomicBool::new(false), |_| {}).unwrap();
    let (steal_ns, steal_pct) = out.steal_summary();
    let before = serde_json::json!({
        "cycles": out.recorded.cycles,
        "planned_cycles": out.config.planned_cycles(),
        "skipped_deadlines": out.recorded.skipped,
        "overflows": out.recorded.histograms.latency.overflows(),
        "overflow_cycles": out.recorded.overflows.iter().map(|o| o.cycle).collect::<Vec<_>>(),
        "underruns": out.recorded.underrun_count,
        "underrun_cycles": out.recorded.underruns.iter().map(|o| o.cycle).collect::<Vec<_>>(),
        "run_ns": out.end_ns.saturating_sub(out.start_ns),
        "start_ns": out.start_ns,
        "busy": out.busy.map(|b| {
            let iters = out.recorded.busy_iterations;
            serde_json::json!({
                "percent": out.config.busy_percent,
                "ns_per_iteration": b.ns_per_iteration,
                "iterations_per_cycle": iters,
                "calibrated_ns_per_cycle": b.ns_per_iteration * iters as f64,
            })
        }),
        "steal": {"ns": steal_ns, "percent": steal_pct, "samples": out.steal.samples.len(),
                  "tick_ns": out.steal.tick_ns},
        "outliers": out.attributed_outliers().iter().map(|a| serde_json::json!({
            "cycle": a.record.cycle, "latency_ns": a.record.value_ns, "cpu": a.record.cpu,
            "t_s": a.record.deadline_ns.saturating_sub(out.start_ns) as f64 / 1e9,
            "steal_ns_around": a.steal_ns,
            "steal_window_ns": a.window_ns,
        })).collect::<Vec<_>>(),
        "series_blocks_dropped": out.recorded.blocks_dropped,
    });
    assert!(
        before["busy"].is_object() && before["outliers"].as_array().is_some_and(|o| !o.is_empty())
    );
    let json = out.result_json();
    assert_eq!(json, before);
    assert_eq!(
        JitterResultRecord::from_json(&json).unwrap(),
        out.result_record()
    );
}
