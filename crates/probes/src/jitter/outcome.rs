//! What a jitter run measured ([`JitterOutcome`]) as the results model has it: measurements, events, series, flags.

use super::*;
use results::records::flags::Flags;
use results::records::jitter::{BusyRecord, JitterResultRecord, OutlierRecord, StealRecord};
use results::records::qos::{DmaLatency, MemoryLock, MemoryLocked, QosGranted};
use results::records::Record;
use serde_json::json;

/// Everything a jitter run measured.
#[derive(Debug)]
pub struct JitterOutcome {
    /// The configuration.
    pub config: JitterConfig,
    /// How it ended.
    pub end: LoopEnd,
    /// Deadline of cycle 0 (CLOCK_MONOTONIC ns).
    pub start_ns: u64,
    /// When the loop returned.
    pub end_ns: u64,
    /// What the loop recorded: histograms, remarkable cycles, the series.
    pub recorded: LoopResults,
    /// The busy kernel's calibration, when there was work.
    pub busy: Option<BusyWork>,
    /// What the measuring thread got.
    pub thread: ThreadRt,
    /// Memory lock granted.
    pub memory: engine::rt::MemoryLockGrant,
    /// /dev/cpu_dma_latency granted: (held, value read back, refusal).
    pub dma_latency: Option<(bool, Option<i32>, Option<String>)>,
    /// Host steal through the run.
    pub steal: StealTimeline,
    /// What the kernel's trace said of the late wake-ups (`--why`), or why it could not.
    pub why: Option<crate::why::WhyOutcome>,
}

/// The measurements of a jitter run from its histograms and counts. `partial` marks a
/// checkpoint taken while the run goes on; overflowed values not passed in are carried
/// uncorrected by the coordinated-omission correction.
pub fn measurements(
    config: &JitterConfig,
    h: &IntervalHistograms,
    overflow_values: &[u64],
    partial: bool,
) -> Vec<Measurement> {
    let (skipped, underruns) = (h.skipped, h.underruns);
    let mode = config.mode;
    let mut out = Vec::new();
    let mut lat = Measurement::from_histogram(
        "jitter",
        "wakeup_latency",
        &format!(
            "{}: CLOCK_MONOTONIC time on waking minus the absolute deadline start + k*period \
             (cyclictest's method); deadlines already past are skipped{}",
            mode.mechanism(),
            if config.fragments.is_some() {
                " only after an under-run"
            } else {
                ""
            }
        ),
        h.latency.clone(),
    );
    lat.detail = json!({"skipped_deadlines": skipped, "period_ns": config.period_ns});
    out.push(lat);
    let mut co = Measurement::from_histogram(
        "jitter",
        "wakeup_latency_co_corrected",
        "wakeup_latency corrected for coordinated omission off the real-time thread: a wake-up \
         late by L also stands for the skipped deadlines, at L - period, L - 2*period, ...",
        h.latency
            .corrected_for_omission(config.period_ns, overflow_values),
    );
    co.detail = json!({"expected_interval_ns": config.period_ns});
    out.push(co);
    let mut iv = Measurement::from_histogram(
        "jitter",
        "wakeup_interval",
        "CLOCK_MONOTONIC time between consecutive wake-ups (nominally one period)",
        h.interval.clone(),
    );
    iv.detail = json!({"nominal_ns": config.period_ns});
    out.push(iv);
    if let (Some(c), Some(f)) = (&h.completion, &config.fragments) {
        let mut m = Measurement::from_histogram(
            "jitter",
            "fragment_completion",
            &format!(
                "fragment model {}x{} frames at {} Hz: time from a fragment's deadline to the \
                 end of its work; above (fragments-1)*period the card would have under-run",
                f.fragments, f.frames, f.sample_rate
            ),
            c.clone(),
        );
        m.deadline = Some(f.headroom_ns() as f64);
        m.misses = Some(underruns);
        out.push(m);
    }
    if partial {
        for m in &mut out {
            m.detail["partial"] = json!(true);
            m.detail["cycles_so_far"] = json!(h.cycles);
        }
    }
    out
}

/// An outlier with the host steal around it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttributedOutlier {
    /// The cycle.
    pub record: CycleRecord,
    /// Steal on the thread's CPU in the window around it (ns).
    pub steal_ns: u64,
    /// Length of that window (ns): the steal samples place steal no more precisely.
    pub window_ns: u64,
}

impl JitterOutcome {
    /// The wake-up latency histogram in cyclictest's `-h` text format, with the cycle
    /// numbers of its overflows.
    pub fn cyclictest_histogram(&self) -> String {
        let overflow_cycles: Vec<u64> = self.recorded.overflows.iter().map(|o| o.cycle).collect();
        results::export::cyclictest_histogram(&self.recorded.histograms.latency, &overflow_cycles)
    }

    /// True when the thread ran at a real-time policy.
    pub fn realtime(&self) -> bool {
        self.thread.is_realtime()
    }

    /// Steal around a cycle, on the CPU it ran on, from its deadline to its deadline plus
    /// its value, as the steal samples can place it: (steal ns, window ns).
    pub fn steal_around(&self, rec: &CycleRecord) -> (u64, u64) {
        self.steal.steal_window(
            Some(&[rec.cpu as usize]),
            rec.deadline_ns,
            rec.deadline_ns + rec.value_ns,
        )
    }

    /// The largest wake-ups with the steal around each.
    pub fn attributed_outliers(&self) -> Vec<AttributedOutlier> {
        self.recorded
            .outliers
            .iter()
            .map(|r| {
                let (steal_ns, window_ns) = self.steal_around(r);
                AttributedOutlier {
                    record: *r,
                    steal_ns,
                    window_ns,
                }
            })
            .collect()
    }

    /// The share of windows placed evenly through the run, each as wide as one of the
    /// outliers' windows and on its CPU, that saw host steal: what "had steal around it"
    /// means by chance alone. Compare the outliers' share with it. `None` without
    /// outliers (no windows to place).
    pub fn steal_baseline_fraction(&self) -> Option<f64> {
        const POSITIONS: u64 = 64;
        let (start, end) = (self.start_ns, self.end_ns.max(self.start_ns + 1));
        let mut hits = 0u64;
        let mut total = 0u64;
        for o in &self.recorded.outliers {
            let width = o.value_ns.min(end - start);
            for i in 0..POSITIONS {
                let t = start + (end - start - width) * i / (POSITIONS - 1);
                total += 1;
                if self
                    .steal
                    .steal_ns_in(Some(&[o.cpu as usize]), t, t + width)
                    > 0
                {
                    hits += 1;
                }
            }
        }
        (total > 0).then(|| hits as f64 / total as f64)
    }

    /// CPUs the thread could run on.
    fn cpus(&self) -> Vec<usize> {
        self.thread.cpus_granted.clone()
    }

    /// The measurements to store.
    pub fn measurements(&self) -> Vec<Measurement> {
        let overflow_values: Vec<u64> =
            self.recorded.overflows.iter().map(|o| o.value_ns).collect();
        measurements(
            &self.config,
            &self.recorded.histograms,
            &overflow_values,
            false,
        )
    }

    /// Overflows, would-be under-runs and steal spikes, as events.
    pub fn events(&self) -> Vec<Event> {
        let mut out = Vec::new();
        for o in &self.recorded.overflows {
            out.push(Event {
                mono_ns: o.deadline_ns,
                kind: "overflow".into(),
                detail: json!({"cycle": o.cycle, "latency_ns": o.value_ns, "cpu": o.cpu,
                               "steal_ns_around": self.steal_around(o).0,
                               "steal_window_ns": self.steal_around(o).1}),
            });
        }
        for u in &self.recorded.underruns {
            out.push(Event {
                mono_ns: u.deadline_ns,
                kind: "underrun".into(),
                detail: json!({"cycle": u.cycle, "completion_ns": u.value_ns, "cpu": u.cpu,
                               "headroom_ns": self.config.fragments.map(|f| f.headroom_ns()),
                               "steal_ns_around": self.steal_around(u).0,
                               "steal_window_ns": self.steal_around(u).1}),
            });
        }
        let cpus = self.cpus();
        for (t, ns) in self.steal.spikes(Some(&cpus)) {
            out.push(Event {
                mono_ns: t,
                kind: "steal".into(),
                detail: json!({"steal_ns": ns, "cpus": engine::rt::format_cpu_list(&cpus)}),
            });
        }
        out.sort_by_key(|e| e.mono_ns);
        out
    }

    /// Latency against time, one row per block.
    pub fn series(&self) -> Series {
        let frag = self.config.fragments.is_some();
        let mut columns = vec!["t_s", "cycles", "min_ns", "mean_ns", "max_ns"];
        if frag {
            columns.push("completion_max_ns");
        }
        Series {
            name: "wakeup_latency_by_block".into(),
            unit: "ns".into(),
            columns: columns.into_iter().map(String::from).collect(),
            rows: self
                .recorded
                .blocks
                .iter()
                .map(|b| {
                    let mut row = vec![
                        b.offset_ns as f64 / 1e9,
                        b.cycles as f64,
                        b.min_ns as f64,
                        b.sum_ns as f64 / b.cycles.max(1) as f64,
                        b.max_ns as f64,
                    ];
                    if frag {
                        row.push(b.completion_max_ns as f64);
                    }
                    row
                })
                .collect(),
        }
    }

    /// Host steal during the run on the thread's CPUs: (ns, percent of the run).
    pub fn steal_summary(&self) -> (u64, Option<f64>) {
        let cpus = self.cpus();
        let ns = self.steal.total_ns(Some(&cpus));
        (ns, self.steal.percent_of_span(ns, cpus.len()))
    }

    /// The real-time settings granted, as stored with the run.
    pub fn qos_granted(&self) -> Value {
        let t = &self.thread;
        QosGranted {
            policy: Some(t.sched.granted.to_string()),
            policy_refusal: Some(t.sched.refusal.clone()),
            cpus: Some(engine::rt::format_cpu_list(&t.cpus_granted)),
            affinity_refusal: Some(t.affinity_refusal.clone()),
            memory_locked: Some(MemoryLocked::Detail(MemoryLock {
                current: self.memory.current,
                future: self.memory.future,
                refusal: self.memory.refusal.clone(),
            })),
            cpu_dma_latency: Some(self.dma_latency.as_ref().map(|(held, us, refusal)| {
                DmaLatency {
                    held: *held,
                    value_us: *us,
                    refusal: refusal.clone(),
                }
            })),
            stack_prefaulted_bytes: Some(t.stack_prefaulted as u64),
            tid: Some(t.tid),
            ..QosGranted::default()
        }
        .to_json()
    }

    /// Validity flags: what a reader must know before trusting the numbers.
    pub fn flags(&self) -> Value {
        let (steal_ns, steal_pct) = self.steal_summary();
        let attributed = self.attributed_outliers();
        let with_steal = attributed.iter().filter(|a| a.steal_ns > 0).count();
        let latency = &self.recorded.histograms.latency;
        Flags {
            realtime: Some(self.realtime()),
            policy_as_requested: Some(self.thread.sched.is_exact()),
            affinity_as_requested: Some(self.thread.affinity_refusal.is_none()),
            memory_locked: Some(self.memory.current),
            cpu_dma_latency_held: Some(self.dma_latency.as_ref().is_some_and(|d| d.0)),
            interrupted: Some(self.end == LoopEnd::Interrupted),
            host_steal_ns: Some(steal_ns),
            host_steal_percent: Some(steal_pct),
            outliers_with_host_steal: Some(with_steal as u64),
            outliers_examined: Some(attributed.len() as u64),
            random_windows_with_host_steal_percent: Some(
                self.steal_baseline_fraction().map(|f| 100.0 * f),
            ),
            histogram_overflows: Some(latency.overflows()),
            percentiles_clamped: Some(latency.summary().is_some_and(|s| s.clamped_at.is_some())),
            ..Flags::default()
        }
        .to_json()
    }

    /// Probe-specific results: counts, calibration, outliers with steal.
    pub fn result_json(&self) -> Value {
        self.result_record().to_json()
    }

    /// The results as their record ([`JitterResultRecord`]).
    pub fn result_record(&self) -> JitterResultRecord {
        let (steal_ns, steal_pct) = self.steal_summary();
        JitterResultRecord {
            cycles: Some(self.recorded.cycles),
            planned_cycles: Some(self.config.planned_cycles()),
            skipped_deadlines: Some(self.recorded.skipped),
            overflows: Some(self.recorded.histograms.latency.overflows()),
            overflow_cycles: Some(self.recorded.overflows.iter().map(|o| o.cycle).collect()),
            underruns: Some(self.recorded.underrun_count),
            underrun_cycles: Some(self.recorded.underruns.iter().map(|o| o.cycle).collect()),
            run_ns: Some(self.end_ns.saturating_sub(self.start_ns)),
            start_ns: Some(self.start_ns),
            busy: self.busy.map(|b| {
                let iters = self.recorded.busy_iterations;
                BusyRecord {
                    percent: self.config.busy_percent,
                    ns_per_iteration: b.ns_per_iteration,
                    iterations_per_cycle: iters,
                    calibrated_ns_per_cycle: b.ns_per_iteration * iters as f64,
                }
            }),
            steal: Some(StealRecord {
                ns: steal_ns,
                percent: steal_pct,
                samples: self.steal.samples.len() as u64,
                tick_ns: self.steal.tick_ns,
            }),
            outliers: Some(
                self.attributed_outliers()
                    .iter()
                    .map(|a| OutlierRecord {
                        cycle: Some(a.record.cycle),
                        latency_ns: Some(a.record.value_ns),
                        cpu: Some(u64::from(a.record.cpu)),
                        t_s: Some(a.record.deadline_ns.saturating_sub(self.start_ns) as f64 / 1e9),
                        steal_ns_around: Some(a.steal_ns),
                        steal_window_ns: Some(a.window_ns),
                    })
                    .collect(),
            ),
            series_blocks_dropped: Some(self.recorded.blocks_dropped),
            why: self.why.as_ref().map(|w| {
                let above = self
                    .config
                    .fragments
                    .is_none()
                    .then(|| self.config.why.map(|c| c.above_ns))
                    .flatten();
                w.record(above)
            }),
        }
    }
}
