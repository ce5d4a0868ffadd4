//! `cargo bench -p probes --bench why_cost`: what `--why` costs the thread it watches.
//!
//! The jitter probe (2048 Hz, SCHED_FIFO, CPU 1 where there is one) runs in alternating
//! rounds with and without the kernel trace, the same machine and load in both arms; a
//! round's p50 and p99 wake-up latency with the trace over the round before's without
//! is one ratio, and the figures are the medians of those ratios (target: at most 1.10
//! each). Rounds alternate so a drift of the machine (another tenant of the host, a
//! frequency change) falls on both arms alike. Needs root and tracefs.
//!
//! `WHY_COST_ROUNDS` (default 6) and `WHY_COST_SECS` (default 5) set the rounds and
//! their length; `WHY_COST_LONG_SECS` (default 0, off) adds one traced run that long
//! (600: the ten-minute run), which must lose no event.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use probes::jitter::{run, JitterConfig, RunLength};
use probes::why::{WhyConfig, WhyOutcome, DEFAULT_ABOVE_NS};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One run's p50 and p99 wake-up latency (ns), and the trace's events lost and read.
fn round(secs: u64, why: bool) -> (u64, u64, Option<(u64, u64)>) {
    let mut config = JitterConfig::new(488_281, RunLength::Duration(Duration::from_secs(secs)));
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    config.cpus = Some(vec![cpus.min(2) - 1]);
    config.why = why.then_some(WhyConfig {
        above_ns: DEFAULT_ABOVE_NS,
    });
    let stop = AtomicBool::new(false);
    let out = run(&config, &stop, |_| {}).expect("the jitter probe runs (as root)");
    let h = &out.recorded.histograms.latency;
    let traced = match &out.why {
        Some(WhyOutcome::Traced(w)) => Some((w.events_lost, w.events_read)),
        Some(WhyOutcome::Unavailable(why)) => panic!("--why cannot trace here: {why}"),
        None => None,
    };
    (h.percentile(50.0).0, h.percentile(99.0).0, traced)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    // `cargo bench` passes `--bench`; a filter that is not ours skips the run.
    if std::env::args()
        .skip(1)
        .any(|a| !a.starts_with('-') && !"why_cost".contains(&a))
    {
        return;
    }
    let rounds = env_u64("WHY_COST_ROUNDS", 6).max(1);
    let secs = env_u64("WHY_COST_SECS", 5).max(1);
    let (mut p50, mut p99, mut lost) = (Vec::new(), Vec::new(), 0);
    println!("round  p50 without  p50 with  p99 without  p99 with  events read  lost");
    for r in 1..=rounds {
        let (a50, a99, _) = round(secs, false);
        let (b50, b99, traced) = round(secs, true);
        let (l, read) = traced.unwrap_or((0, 0));
        lost += l;
        p50.push(b50 as f64 / a50.max(1) as f64);
        p99.push(b99 as f64 / a99.max(1) as f64);
        println!(
            "{r:>5}  {:>8.1} us  {:>5.1} us  {:>8.1} us  {:>5.1} us  {read:>11}  {l:>4}",
            a50 as f64 / 1e3,
            b50 as f64 / 1e3,
            a99 as f64 / 1e3,
            b99 as f64 / 1e3,
        );
    }
    let (r50, r99) = (median(p50), median(p99));
    let verdict = |r: f64| if r <= 1.10 { "within" } else { "OVER" };
    println!(
        "--why costs the jitter thread: p50 x{r50:.3} ({} the 1.10 target), p99 x{r99:.3} ({} the 1.10 target); {lost} events lost in {rounds} traced rounds",
        verdict(r50),
        verdict(r99)
    );
    let long = env_u64("WHY_COST_LONG_SECS", 0);
    if long > 0 {
        let (_, _, traced) = round(long, true);
        let (l, read) = traced.unwrap_or((0, 0));
        println!(
            "a traced run of {long} s: {read} events read, {l} lost ({} the target of 0)",
            if l == 0 { "meets" } else { "MISSES" }
        );
    }
}
