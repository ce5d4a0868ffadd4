//! Host steal time, sampled from `/proc/stat` through a run.
//!
//! On a virtual machine the hypervisor may run something else on the physical CPU
//! while a virtual CPU wants to run: the guest's kernel counts that time as *steal*. A
//! wake-up that is late because the host stole the CPU says nothing about the guest
//! kernel. The sampler records per-CPU steal every few milliseconds on an ordinary
//! thread, so each outlier can be put beside the steal around it.
//!
//! `/proc/stat` reports steal in USER_HZ ticks (10 ms on most systems): a window with no
//! tick may still hold a few milliseconds of steal, which is why [`StealTimeline::steal_ns_in`]
//! widens the window by one tick on each side.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Per-CPU steal counters (ns) at one CLOCK_MONOTONIC instant.
#[derive(Debug, Clone, PartialEq)]
pub struct StealSample {
    /// When it was read.
    pub mono_ns: u64,
    /// Steal per CPU, in ns (USER_HZ ticks × tick length).
    pub per_cpu_ns: Vec<u64>,
}

/// Ticks per second of `/proc/stat` (USER_HZ).
pub fn user_hz() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as u64
    } else {
        100
    }
}

/// Reads per-CPU steal from `/proc/stat` text.
pub fn parse_proc_stat(text: &str, tick_ns: u64) -> Vec<u64> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("cpu") else {
            continue;
        };
        // Skip the aggregate "cpu " line; keep "cpuN".
        if !rest.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let mut fields = rest.split_whitespace();
        let Some(id) = fields.next().and_then(|f| f.parse::<usize>().ok()) else {
            continue;
        };
        // user nice system idle iowait irq softirq steal ...
        let steal = fields
            .nth(7)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0);
        if out.len() <= id {
            out.resize(id + 1, 0);
        }
        out[id] = steal * tick_ns;
    }
    out
}

/// One sample now.
pub fn sample() -> StealSample {
    let tick_ns = 1_000_000_000 / user_hz();
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    StealSample {
        mono_ns: engine::clock::monotonic_ns(),
        per_cpu_ns: parse_proc_stat(&text, tick_ns),
    }
}

/// Steal samples over a run.
#[derive(Debug, Clone, Default)]
pub struct StealTimeline {
    /// Samples in time order.
    pub samples: Vec<StealSample>,
    /// Length of one `/proc/stat` tick (ns).
    pub tick_ns: u64,
}

impl StealTimeline {
    fn cpu_sum(sample: &StealSample, cpus: Option<&[usize]>) -> u64 {
        match cpus {
            Some(cpus) => cpus
                .iter()
                .map(|&c| sample.per_cpu_ns.get(c).copied().unwrap_or(0))
                .sum(),
            None => sample.per_cpu_ns.iter().sum(),
        }
    }

    /// Steal (ns) between the first and last sample, on `cpus` (all when `None`).
    pub fn total_ns(&self, cpus: Option<&[usize]>) -> u64 {
        match (self.samples.first(), self.samples.last()) {
            (Some(a), Some(b)) => Self::cpu_sum(b, cpus).saturating_sub(Self::cpu_sum(a, cpus)),
            _ => 0,
        }
    }

    /// `steal_ns` as a percentage of the time sampled on `cpus` CPUs; `None` when the
    /// samples cover no time (fewer than two): nothing to set it against, not 0 %.
    pub fn percent_of_span(&self, steal_ns: u64, cpus: usize) -> Option<f64> {
        let span = self.span_ns() * cpus.max(1) as u64;
        (span > 0).then(|| 100.0 * steal_ns as f64 / span as f64)
    }

    /// Wall time covered (ns).
    pub fn span_ns(&self) -> u64 {
        match (self.samples.first(), self.samples.last()) {
            (Some(a), Some(b)) => b.mono_ns - a.mono_ns,
            _ => 0,
        }
    }

    /// Steal (ns) on `cpus` that the samples place within `[from_ns - tick, to_ns + tick]`.
    pub fn steal_ns_in(&self, cpus: Option<&[usize]>, from_ns: u64, to_ns: u64) -> u64 {
        self.steal_window(cpus, from_ns, to_ns).0
    }

    /// Steal (ns) on `cpus` between the last sample before `from_ns - tick` and the
    /// first after `to_ns + tick`, with the length of that window (ns): the samples
    /// cannot place steal more precisely than that.
    pub fn steal_window(&self, cpus: Option<&[usize]>, from_ns: u64, to_ns: u64) -> (u64, u64) {
        let from = from_ns.saturating_sub(self.tick_ns);
        let to = to_ns.saturating_add(self.tick_ns);
        let before = self
            .samples
            .iter()
            .rev()
            .find(|s| s.mono_ns <= from)
            .or(self.samples.first());
        let after = self
            .samples
            .iter()
            .find(|s| s.mono_ns >= to)
            .or(self.samples.last());
        match (before, after) {
            (Some(a), Some(b)) => (
                Self::cpu_sum(b, cpus).saturating_sub(Self::cpu_sum(a, cpus)),
                b.mono_ns.saturating_sub(a.mono_ns),
            ),
            _ => (0, 0),
        }
    }

    /// Windows of `window_ns` with any steal on `cpus`: (start, steal ns), for events.
    pub fn spikes(&self, cpus: Option<&[usize]>) -> Vec<(u64, u64)> {
        self.samples
            .windows(2)
            .filter_map(|w| {
                let d = Self::cpu_sum(&w[1], cpus).saturating_sub(Self::cpu_sum(&w[0], cpus));
                (d > 0).then_some((w[0].mono_ns, d))
            })
            .collect()
    }
}

/// Samples steal on its own (ordinary, non-real-time) thread until stopped.
pub struct StealSampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<StealTimeline>>,
}

impl StealSampler {
    /// Starts sampling every `interval`. When `avoid` names the measuring thread's
    /// CPUs and others are online, the sampler is kept off them.
    pub fn start(interval: Duration, avoid: Option<&[usize]>) -> StealSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let elsewhere: Option<Vec<usize>> = avoid.map(|avoid| {
            engine::rt::online_cpus()
                .into_iter()
                .filter(|c| !avoid.contains(c))
                .collect()
        });
        let handle = std::thread::Builder::new()
            .name("steal-sampler".into())
            .spawn(move || {
                if let Some(cpus) = elsewhere.filter(|c| !c.is_empty()) {
                    // Best effort: sampling on the measured CPU is still correct, only
                    // slightly intrusive.
                    let _ = engine::rt::set_current_thread_affinity(&cpus);
                }
                let mut timeline = StealTimeline {
                    samples: Vec::with_capacity(4096),
                    tick_ns: 1_000_000_000 / user_hz(),
                };
                // Keep a sample only when the counters changed, plus the last unchanged
                // one before each change (it bounds where the change happened), so a
                // long run does not grow without bound.
                let mut unchanged: Option<StealSample> = None;
                loop {
                    let s = sample();
                    let stopping = flag.load(Ordering::Relaxed);
                    let changed = timeline
                        .samples
                        .last()
                        .is_none_or(|last| last.per_cpu_ns != s.per_cpu_ns);
                    if changed || stopping {
                        if let Some(u) = unchanged.take() {
                            timeline.samples.push(u);
                        }
                        timeline.samples.push(s);
                    } else {
                        unchanged = Some(s);
                    }
                    if stopping {
                        return timeline;
                    }
                    std::thread::sleep(interval);
                }
            })
            .expect("spawning the steal sampler");
        StealSampler {
            stop,
            handle: Some(handle),
        }
    }

    /// Stops sampling and returns the timeline.
    pub fn finish(mut self) -> StealTimeline {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for StealSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  3415 0 1345 41003 451 0 175 3528 0 0\n\
                        cpu0 1834 0 709 20176 358 0 54 1751 0 0\n\
                        cpu1 1581 0 635 20826 93 0 120 1777 0 0\n\
                        intr 181743 0 0\n";

    #[test]
    fn parses_per_cpu_steal() {
        assert_eq!(
            parse_proc_stat(STAT, 10_000_000),
            vec![17_510_000_000, 17_770_000_000]
        );
    }

    fn tl(points: &[(u64, u64, u64)]) -> StealTimeline {
        StealTimeline {
            samples: points
                .iter()
                .map(|&(t, a, b)| StealSample {
                    mono_ns: t,
                    per_cpu_ns: vec![a, b],
                })
                .collect(),
            tick_ns: 10,
        }
    }

    #[test]
    fn windows_and_totals() {
        let t = tl(&[
            (0, 0, 0),
            (100, 0, 0),
            (200, 10, 0),
            (300, 10, 20),
            (400, 10, 20),
        ]);
        assert_eq!(t.total_ns(None), 30);
        assert_eq!(t.total_ns(Some(&[1])), 20);
        assert_eq!(t.span_ns(), 400);
        // A window around t=150..190 (widened by a tick) sees CPU 0's steal.
        assert_eq!(t.steal_ns_in(Some(&[0]), 150, 190), 10);
        assert_eq!(t.steal_ns_in(Some(&[1]), 150, 190), 0);
        assert_eq!(t.steal_window(Some(&[0]), 150, 190), (10, 100));
        assert_eq!(t.spikes(None), vec![(100, 10), (200, 20)]);
    }

    #[test]
    fn a_share_of_no_time_is_absent() {
        let none = StealTimeline::default();
        assert_eq!(none.percent_of_span(0, 2), None);
        let one = StealTimeline {
            samples: vec![StealSample {
                mono_ns: 5,
                per_cpu_ns: vec![0, 0],
            }],
            tick_ns: 10,
        };
        assert_eq!(one.percent_of_span(0, 2), None);
        let two = StealTimeline {
            samples: vec![
                StealSample {
                    mono_ns: 0,
                    per_cpu_ns: vec![0, 0],
                },
                StealSample {
                    mono_ns: 1_000,
                    per_cpu_ns: vec![20, 0],
                },
            ],
            tick_ns: 10,
        };
        assert_eq!(two.percent_of_span(20, 2), Some(1.0));
        assert_eq!(two.percent_of_span(0, 2), Some(0.0));
    }

    #[test]
    fn sampler_returns_a_timeline() {
        let s = StealSampler::start(Duration::from_millis(5), Some(&[0]));
        std::thread::sleep(Duration::from_millis(40));
        let t = s.finish();
        assert!(t.samples.len() >= 2, "{t:?}");
        assert!(t.span_ns() >= 30_000_000);
        assert_eq!(t.tick_ns, 1_000_000_000 / user_hz());
    }
}
