//! `audiolat jitter`: stored, shown and exported, the fragment model, refused real-time
//! priority, and the acceptance test against cyclictest.

use std::collections::BTreeMap;

use results::export::parse_cyclictest_histogram;
use results::{RunStatus, Store};
use serde_json::Value;

use crate::util::{self, machine_lock, require_tool, run, run_json, temp_db};

#[test]
fn a_jitter_run_is_stored_listed_shown_and_exported() {
    let _m = machine_lock();
    let (dir, db) = temp_db("a.db");
    let hist = dir.path().join("hist.txt");
    let v = run_json(
        &db,
        &[
            "jitter",
            "--loops",
            "400",
            "--interval",
            "1ms",
            "--mode",
            "timerfd",
            "--json",
            "--hist-bound",
            "20ms",
            "--histfile",
            hist.to_str().unwrap(),
        ],
    );
    let id = v["run_id"].as_i64().unwrap();
    assert_eq!(v["status"], "complete");
    let metrics: Vec<&str> = v["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["metric"].as_str().unwrap())
        .collect();
    assert_eq!(
        metrics,
        [
            "wakeup_latency",
            "wakeup_latency_co_corrected",
            "wakeup_interval"
        ]
    );
    assert_eq!(v["measurements"][0]["summary"]["count"], 400);
    assert!(v["measurements"][0]["method"]
        .as_str()
        .unwrap()
        .contains("timerfd"));
    // The realtime flag says what the kernel granted, whatever that was.
    let fifo = engine::rt::probe_policy(engine::rt::Policy::Fifo { priority: 80 });
    assert_eq!(v["flags"]["realtime"], Value::Bool(fifo.refusal.is_none()));
    assert!(v["flags"]["host_steal_percent"].is_number());

    // --histfile is cyclictest's format, every sample accounted for, up to the last
    // used µs bucket (below the 20 ms bound).
    let h = parse_cyclictest_histogram(&std::fs::read_to_string(&hist).unwrap());
    assert!(h.buckets.len() <= 20_000, "{}", h.buckets.len());
    assert!(h.buckets.last().is_some_and(|b| b.1 > 0) || h.total == 0);
    assert_eq!(h.total + h.overflows, 400);

    // The store has it all, as written.
    let store = Store::open_existing(&db).unwrap();
    let r = store.run(results::RunId(id)).unwrap();
    assert_eq!(r.status, RunStatus::Complete);
    assert_eq!(r.probe.name, "jitter");
    assert!(r.command_line.contains("--mode timerfd"));
    assert!(!r.tool.git_commit.is_empty());
    let ms = store.measurements(results::RunId(id)).unwrap();
    assert_eq!(ms[0].measurement.histogram.as_ref().unwrap().count(), 400);
    assert_eq!(
        store.series(results::RunId(id)).unwrap()[0].name,
        "wakeup_latency_by_block"
    );

    let runs = run_json(&db, &["runs", "--json"]);
    assert_eq!(runs[0]["id"], id);
    assert_eq!(runs[0]["metric"], "wakeup_latency");

    let shown = run(&db, &["show", &id.to_string()]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    for want in [
        "jitter complete",
        "wakeup_latency",
        "p99.99",
        "command    audiolat",
    ] {
        assert!(
            shown.stdout.contains(want),
            "show lacks {want:?}:\n{}",
            shown.stdout
        );
    }
    let last = run(&db, &["show", "last"]);
    assert_eq!(last.stdout, shown.stdout);

    let csv = run(&db, &["export", &id.to_string(), "--format", "csv"]);
    assert_eq!(csv.code, 0);
    let lines: Vec<&str> = csv.stdout.lines().collect();
    assert!(lines[0].starts_with("run_id,probe,metric,unit,count,min,mean"));
    assert_eq!(lines.len(), 4);
    assert!(lines[1].contains(",wakeup_latency,ns,400,"));

    let json = run_json(&db, &["export", "last", "--format", "json"]);
    assert_eq!(json["run"]["id"], id);
    let buckets = json["measurements"][0]["histogram"]["value_count"]
        .as_array()
        .unwrap();
    let total: u64 = buckets.iter().map(|b| b[1].as_u64().unwrap()).sum();
    assert_eq!(
        total + json["measurements"][0]["overflows"].as_u64().unwrap(),
        400
    );

    let hdr = run(&db, &["export", "last", "--format", "hdr"]);
    assert!(hdr.stdout.contains("Tag=wakeup_latency,"), "{}", hdr.stdout);

    let out = dir.path().join("c.txt");
    let cy = run(
        &db,
        &[
            "export",
            "last",
            "--format",
            "cyclictest",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(cy.code, 0, "{}", cy.stderr);
    let h2 = parse_cyclictest_histogram(&std::fs::read_to_string(out).unwrap());
    assert_eq!(h2.total + h2.overflows, 400);
}

#[test]
fn the_fragment_model_counts_would_be_underruns_against_its_headroom() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("f.db");
    let v = run_json(
        &db,
        &[
            "jitter",
            "--fragments",
            "3",
            "--frames",
            "32",
            "--rate",
            "44100",
            "--busy",
            "50",
            "--loops",
            "500",
            "--json",
        ],
    );
    let m = v["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "fragment_completion")
        .expect("fragment_completion measured");
    // latencytest's 3 x 128 bytes: 32 frames at 44.1 kHz, two periods of headroom.
    assert_eq!(m["deadline"], 2.0 * 725_624.0);
    assert_eq!(m["misses"], v["result"]["underruns"]);
    assert_eq!(m["summary"]["count"], 500);
    // The work is half a period: completion can never be shorter than the calibrated
    // work in the median.
    let calibrated = v["result"]["busy"]["calibrated_ns_per_cycle"]
        .as_f64()
        .unwrap();
    assert!(
        (calibrated - 362_812.0).abs() < 362_812.0 * 0.05,
        "{calibrated}"
    );
    assert!(m["summary"]["p50"].as_f64().unwrap() >= 0.8 * calibrated);
}

#[test]
fn refused_real_time_priority_still_measures_and_is_flagged() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("nrt.db");
    // As root, drop CAP_SYS_NICE from the bounding set and RLIMIT_RTPRIO to 0, so the
    // kernel refuses SCHED_FIFO as it would for an ordinary user.
    // SAFETY: getuid has no preconditions.
    let root = unsafe { libc::getuid() } == 0;
    let mut cmd = if root {
        let mut c = std::process::Command::new("setpriv");
        c.args([
            "--bounding-set=-sys_nice",
            "--inh-caps=-sys_nice",
            "prlimit",
            "--rtprio=0",
        ]);
        c.arg(util::bin());
        c
    } else {
        std::process::Command::new(util::bin())
    };
    let out = cmd
        .args([
            "--db",
            db.to_str().unwrap(),
            "jitter",
            "--loops",
            "300",
            "--interval",
            "1ms",
            "--json",
        ])
        .output()
        .expect("running audiolat under setpriv (util-linux)");
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    if !root && v["flags"]["realtime"] == Value::Bool(true) {
        eprintln!("skipped: this user may use SCHED_FIFO, so a refusal cannot be shown");
        return;
    }
    assert_eq!(v["status"], "complete");
    assert_eq!(v["measurements"][0]["summary"]["count"], 300);
    assert_eq!(v["flags"]["realtime"], Value::Bool(false));
    assert_eq!(v["qos_granted"]["policy"], "SCHED_OTHER nice 0");
    let refusal = v["qos_granted"]["policy_refusal"].as_str().unwrap();
    assert!(
        refusal.contains("rtprio 95"),
        "the refusal names the fix: {refusal}"
    );
    let store = Store::open_existing(&db).unwrap();
    let r = store
        .run(results::RunId(v["run_id"].as_i64().unwrap()))
        .unwrap();
    assert_eq!(r.flags["realtime"], Value::Bool(false));
    let shown = run(&db, &["show", "last"]);
    assert!(shown.stdout.contains("NOT REAL-TIME"), "{}", shown.stdout);
}

/// Pooled cyclictest-format histograms: µs bucket -> count, plus overflows.
#[derive(Default)]
struct Pool {
    buckets: BTreeMap<u64, u64>,
    overflows: u64,
}

impl Pool {
    fn add(&mut self, text: &str) {
        let h = parse_cyclictest_histogram(text);
        for (us, n) in h.buckets {
            *self.buckets.entry(us).or_default() += n;
        }
        self.overflows += h.overflows;
    }

    fn percentile_us(&self, q: f64) -> u64 {
        let n: u64 = self.buckets.values().sum::<u64>() + self.overflows;
        let rank = ((q / 100.0) * n as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (&us, &c) in &self.buckets {
            seen += c;
            if seen >= rank {
                return us;
            }
        }
        u64::MAX
    }
}

/// The acceptance test against the reference: audiolat jitter and cyclictest (rt-tests)
/// under the same conditions (SCHED_FIFO 80, 1 ms period, clock_nanosleep on absolute
/// deadlines, memory locked, cpu_dma_latency held at 0), in ten short rounds that
/// alternate which tool goes first, so both see the same slices of this machine's
/// (hypervisor's) noise.
///
/// Tolerances, stated. Every statistic is compared round by round (the two tools ran
/// back to back) and the median over the ten rounds is asserted, never a pooled tail: one
/// burst of host steal (here up to ~12 ms, sometimes for long stretches) can fill the
/// pooled 99th percentile of whichever tool it lands on, and a CI machine once showed
/// cyclictest at 630 µs pooled p99 against audiolat's 210 µs with equal medians.
/// - agreement: the medians within 5 µs + 25 % (pooled and median round), the 90th
///   percentiles within 10 µs + 50 % in the median round, either way;
/// - not worse because of its own overhead: in the median round, audiolat's 99th
///   percentile exceeds cyclictest's from the same round by at most 25 µs + 50 % of it.
///   A probe with real overhead on the wake-up path would exceed it in most rounds.
///
/// The pooled 99th percentiles are printed, not asserted.
#[test]
fn jitter_agrees_with_cyclictest() {
    let _m = machine_lock();
    require_tool("cyclictest", "rt-tests");
    if engine::rt::probe_policy(engine::rt::Policy::Fifo { priority: 80 })
        .refusal
        .is_some()
    {
        // cyclictest itself refuses to run without real-time priority.
        eprintln!(
            "skipped: SCHED_FIFO is refused here and cyclictest cannot run; run the tests as root"
        );
        return;
    }
    let (dir, db) = temp_db("cmp.db");
    let hist = dir.path().join("a.txt");
    let cyclictest = load::find_in_path("cyclictest").unwrap();
    let run_reference = || {
        let cy = std::process::Command::new(&cyclictest)
            .args([
                "-m", "-p", "80", "-i", "1000", "-l", "1500", "-q", "-h", "50000",
            ])
            .output()
            .expect("running cyclictest");
        assert!(
            cy.status.success(),
            "cyclictest: {}",
            String::from_utf8_lossy(&cy.stderr)
        );
        String::from_utf8_lossy(&cy.stdout).into_owned()
    };
    let run_ours = || {
        let out = run(
            &db,
            &[
                "jitter",
                "--loops",
                "1500",
                "--interval",
                "1000us",
                "--hist-bound",
                "50ms",
                "--histfile",
                hist.to_str().unwrap(),
                "-q",
            ],
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        std::fs::read_to_string(&hist).unwrap()
    };
    let mut ours = Pool::default();
    let mut reference = Pool::default();
    let (mut excess_p50, mut excess_p90, mut excess_p99) = (Vec::new(), Vec::new(), Vec::new());
    let (mut reference_p90, mut reference_p99) = (Vec::new(), Vec::new());
    for round in 0..10 {
        let (a, c) = if round % 2 == 0 {
            let c = run_reference();
            (run_ours(), c)
        } else {
            let a = run_ours();
            (a, run_reference())
        };
        let (mut pa, mut pc) = (Pool::default(), Pool::default());
        pa.add(&a);
        pc.add(&c);
        excess_p50.push(pa.percentile_us(50.0) as f64 - pc.percentile_us(50.0) as f64);
        excess_p90.push(pa.percentile_us(90.0) as f64 - pc.percentile_us(90.0) as f64);
        reference_p90.push(pc.percentile_us(90.0) as f64);
        excess_p99.push(pa.percentile_us(99.0) as f64 - pc.percentile_us(99.0) as f64);
        reference_p99.push(pc.percentile_us(99.0) as f64);
        ours.add(&a);
        reference.add(&c);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    };
    let (a50, c50) = (
        ours.percentile_us(50.0) as f64,
        reference.percentile_us(50.0) as f64,
    );
    let (a99, c99) = (
        ours.percentile_us(99.0) as f64,
        reference.percentile_us(99.0) as f64,
    );
    let excess = median(&mut excess_p99);
    let round_c99 = median(&mut reference_p99);
    let (round_excess50, round_excess90) = (median(&mut excess_p50), median(&mut excess_p90));
    let round_c90 = median(&mut reference_p90);
    eprintln!(
        "pooled p50: audiolat {a50} us, cyclictest {c50} us; pooled p99: audiolat {a99} us, \
         cyclictest {c99} us; median round: p50 excess {round_excess50} us, p90 excess \
         {round_excess90} us (cyclictest {round_c90} us), p99 excess {excess} us (cyclictest \
         {round_c99} us)"
    );
    let median_tol = 5.0 + 0.25 * c50;
    assert!(
        (a50 - c50).abs() <= median_tol && round_excess50.abs() <= median_tol,
        "medians disagree: audiolat {a50} us, cyclictest {c50} us pooled, {round_excess50} us \
         apart in the median round (tolerance {median_tol:.0} us)"
    );
    let p90_tol = 10.0 + 0.5 * round_c90;
    assert!(
        round_excess90.abs() <= p90_tol,
        "90th percentiles disagree: {round_excess90} us apart in the median round, cyclictest's \
         {round_c90} us (tolerance {p90_tol:.0} us)"
    );
    assert!(
        excess <= 25.0 + 0.5 * round_c99,
        "audiolat measures worse than cyclictest: its 99th percentile exceeds the reference's by \
         {excess} us in the median round (cyclictest's {round_c99} us)"
    );
}
