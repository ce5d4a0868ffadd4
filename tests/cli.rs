//! The audiolat command line, end to end: the binary cargo built, real tools
//! (cyclictest, stress-ng), a real SQLite file per test.

mod util;

use std::collections::BTreeMap;
use std::time::Duration;

use results::export::parse_cyclictest_histogram;
use results::{RunFilter, RunStatus, Store};
use serde_json::Value;
use util::{machine_lock, require_tool, run, run_json, spawn, tempdir, wait_timeout};

#[test]
fn bad_input_is_one_line_with_the_fix_exit_2_and_writes_nothing() {
    let dir = tempdir();
    let db = dir.path().join("bad.db");
    // (arguments, what the message names, the fix it gives)
    let cases: &[(&[&str], &str, &str)] = &[
        (
            &["jitter", "--rate", "0"],
            "positive number of Hz",
            "e.g. --rate 2048",
        ),
        (
            &["jitter", "--rate", "-5"],
            "positive number of Hz",
            "e.g. --rate 2048",
        ),
        (
            &["jitter", "--rate", "fast"],
            "'fast' is not a number",
            "see 'audiolat jitter --help'",
        ),
        (
            &["jitter", "--priority", "0"],
            "out of range for SCHED_FIFO",
            "use 1..99",
        ),
        (
            &["jitter", "--priority", "100"],
            "out of range for SCHED_FIFO",
            "use 1..99",
        ),
        (
            &["jitter", "--priority", "-3"],
            "out of range for SCHED_FIFO",
            "use 1..99",
        ),
        (
            &["jitter", "--policy", "other", "--priority", "5"],
            "no meaning for SCHED_OTHER",
            "use --policy fifo or rr",
        ),
        (
            &["jitter", "--load", "gpu"],
            "unknown load 'gpu'",
            "loads are none, cpu[:percent]",
        ),
        (
            &["jitter", "--load", "cpu:150"],
            "must be 1..100",
            "loads are none, cpu[:percent]",
        ),
        (
            &["jitter", "--policy", "bogus"],
            "unknown policy 'bogus'",
            "use fifo, rr, other, batch, idle or deadline",
        ),
        (
            &["jitter", "--mode", "rtc"],
            "unknown wake-up mode 'rtc'",
            "use nanosleep, timerfd or signal",
        ),
        (&["jitter", "--busy", "100"], "--busy", "not including, 100"),
        (
            &["jitter", "--interval", "1us"],
            "out of range",
            "use a rate of 0.1..50000 Hz",
        ),
        (
            &["jitter", "--fragments", "1", "--frames", "32"],
            "no headroom",
            "use 2 or more",
        ),
        (
            &["jitter", "--fragments", "3"],
            "not provided: --frames",
            "see 'audiolat jitter --help'",
        ),
        (
            &["jitter", "--cpu", "4095"],
            "CPU 4095 is not online",
            "this machine has CPUs",
        ),
        (
            &["jitter", "--duration", "0"],
            "must be positive",
            "see 'audiolat jitter --help'",
        ),
        (
            &["jitter", "--loops", "0"],
            "--loops",
            "use a whole number of at least 1",
        ),
        (
            &["jitter", "--histfile", "/nonexistent-dir/h.txt"],
            "not a file in an existing directory",
            "give a writable file path",
        ),
        (
            &["jitter", "--frobnicate"],
            "unexpected argument '--frobnicate'",
            "see 'audiolat jitter --help'",
        ),
        (
            &["frobnicate"],
            "unrecognized subcommand 'frobnicate'",
            "see 'audiolat --help'",
        ),
        (
            &["suite", "--scratch-dir", "/nonexistent-dir"],
            "not a directory",
            "give an existing directory",
        ),
    ];
    for (args, names, fix) in cases {
        let out = run(&db, args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: not one line: {:?}", out.stderr);
        assert!(
            lines[0].starts_with("audiolat: error: "),
            "{args:?}: {}",
            lines[0]
        );
        assert!(
            lines[0].contains(names),
            "{args:?}: {:?} does not name {names:?}",
            lines[0]
        );
        assert!(
            lines[0].contains(fix),
            "{args:?}: {:?} lacks the fix {fix:?}",
            lines[0]
        );
        assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
        assert!(!db.exists(), "{args:?} created the database");
    }
}

#[test]
fn an_unwritable_database_is_refused_before_anything_runs() {
    for db in [
        "/nonexistent-dir/x.db",
        "/proc/audiolat-test.db",
        "/dev/null",
    ] {
        let out = run(std::path::Path::new(db), &["jitter", "--loops", "10"]);
        assert_eq!(out.code, 2, "{db}: {out:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{db}: {}", out.stderr);
        assert!(out.stderr.contains("--db"), "{db}: {}", out.stderr);
        assert!(out.stdout.is_empty());
        for written in [db.to_string(), format!("{db}-journal"), format!("{db}-wal")] {
            if written != "/dev/null" {
                assert!(
                    !std::path::Path::new(&written).exists(),
                    "{written} was written"
                );
            }
        }
    }
    // The same for a directory given as the database.
    let dir = tempdir();
    let out = run(dir.path(), &["jitter", "--loops", "10"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("directory"), "{}", out.stderr);
}

#[test]
fn reading_commands_do_not_create_a_database() {
    let dir = tempdir();
    let db = dir.path().join("none.db");
    for args in [&["runs"][..], &["show", "last"], &["export", "1"]] {
        let out = run(&db, args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(out.stderr.contains("no results database"), "{}", out.stderr);
        assert!(!db.exists());
    }
}

#[test]
fn a_jitter_run_is_stored_listed_shown_and_exported() {
    let _m = machine_lock();
    let dir = tempdir();
    let db = dir.path().join("a.db");
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
    let r = store.run(id).unwrap();
    assert_eq!(r.status, RunStatus::Complete);
    assert_eq!(r.probe, "jitter");
    assert!(r.command_line.contains("--mode timerfd"));
    assert!(!r.tool.git_commit.is_empty());
    let ms = store.measurements(id).unwrap();
    assert_eq!(ms[0].measurement.histogram.as_ref().unwrap().count(), 400);
    assert_eq!(store.series(id).unwrap()[0].name, "wakeup_latency_by_block");

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
    let dir = tempdir();
    let db = dir.path().join("f.db");
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

/// Reads the run a background audiolat is making once its load has started.
fn wait_for_load(db: &std::path::Path) -> (i64, Vec<i32>, String) {
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        if let Ok(store) = Store::open_existing(db) {
            if let Some(r) = store
                .list_runs(&RunFilter::default())
                .unwrap()
                .into_iter()
                .next()
            {
                let pids: Vec<i32> = r.load["processes"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|p| p["pgid"].as_i64())
                            .map(|p| p as i32)
                            .collect()
                    })
                    .unwrap_or_default();
                if let (false, Some(tag)) = (pids.is_empty(), r.load["tag"].as_str()) {
                    return (r.id, pids, tag.to_string());
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the run's load never appeared in the database");
}

/// Two signals 10 ms apart (a double Ctrl-C) hasten the stop but never throw the run
/// away: exit 130, the summary printed, the run stored `interrupted` with what it
/// measured (a jitter stopped before its first checkpoint too), no load left.
#[test]
fn two_quick_signals_keep_the_run_printed_and_stored_for_every_audio_probe() {
    let _m = machine_lock();
    require_tool("stress-ng", "stress-ng");
    require_tool("jackd", "jackd2");
    // (arguments, the metric stored, what the printed summary says)
    let probes: [(&[&str], &str, &str); 3] = [
        (
            &["jitter", "-D", "4", "--load", "cpu+io"],
            "wakeup_latency",
            "interrupted after",
        ),
        (
            &["event", "--triggers", "1000", "--load", "cpu+io"],
            "event_latency",
            "stored in",
        ),
        (
            // The cycles the loop ran (the loop's own figure may be withheld as
            // ambiguous when under-runs under this load hide its first click).
            &["roundtrip", "--duration", "30s", "--load", "cpu+io"],
            "dsp_time",
            "stored in",
        ),
    ];
    for (sig, (args, metric, printed)) in [libc::SIGTERM, libc::SIGINT, libc::SIGTERM]
        .into_iter()
        .zip(probes)
    {
        let dir = tempdir();
        let db = dir.path().join("twice.db");
        let mut child = spawn(&db, args);
        let started = std::time::Instant::now();
        let id = loop {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{args:?}: no run was stored"
            );
            std::thread::sleep(Duration::from_millis(100));
            let Ok(store) = Store::open_read_only(&db) else {
                continue;
            };
            // The run's load is stored once it has started: measuring starts next.
            match store.last_run_id() {
                Ok(Some(id))
                    if store
                        .run(id)
                        .is_ok_and(|r| r.load.get("processes").is_some()) =>
                {
                    break id
                }
                _ => {}
            }
        };
        // Measuring for a while, but not yet at a checkpoint (jitter's come every 5 s;
        // event stores each trigger, round trip only at its end).
        std::thread::sleep(Duration::from_millis(2500));
        if args[0] == "event" {
            let store = Store::open_read_only(&db).unwrap();
            while store.triggers(id).unwrap().is_empty() {
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "{args:?}: no trigger"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        std::thread::sleep(Duration::from_millis(10));
        // SAFETY: as above.
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = wait_timeout(&mut child, Duration::from_secs(60));
        let mut stdout = String::new();
        std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut stdout).unwrap();
        assert_eq!(status.code(), Some(130), "{args:?}: {status:?}");
        assert!(stdout.contains(printed), "{args:?}: {stdout}");
        let store = Store::open_read_only(&db).unwrap();
        let r = store.run(id).unwrap();
        assert_eq!(r.status, RunStatus::Interrupted, "{args:?}");
        let ms = store.measurements(id).unwrap();
        let m = ms
            .iter()
            .find(|m| m.measurement.metric == metric)
            .unwrap_or_else(|| panic!("{args:?}: no {metric} stored"));
        assert!(
            m.measurement.count() > 0,
            "{args:?}: nothing kept: {:?}\n{stdout}",
            m.measurement.summary
        );
        let tag = r.load["tag"].as_str().unwrap_or_default();
        assert!(!tag.is_empty(), "{args:?}: {}", r.load);
        for p in r.load["processes"].as_array().into_iter().flatten() {
            let pgid = p["pgid"].as_i64().unwrap() as i32;
            // SAFETY: signal 0 only checks for existence.
            let alive = unsafe { libc::kill(-pgid, 0) } == 0;
            assert!(!alive, "{args:?}: load process group {pgid} survived");
        }
        assert!(load::tagged_processes(tag).is_empty(), "{args:?}");
    }
}

#[test]
fn ctrl_c_stops_the_load_and_keeps_the_run_as_interrupted() {
    let _m = machine_lock();
    require_tool("stress-ng", "stress-ng");
    let dir = tempdir();
    let db = dir.path().join("c.db");
    let mut child = spawn(
        &db,
        &["jitter", "--duration", "120s", "--load", "cpu", "-q"],
    );
    let (id, pids, tag) = wait_for_load(&db);
    assert!(
        !load::tagged_processes(&tag).is_empty(),
        "the load is running"
    );
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_timeout(&mut child, Duration::from_secs(30));
    assert_eq!(status.code(), Some(130), "exit status {status:?}");

    // No load process left: neither the process groups nor anything carrying the tag.
    for pid in pids {
        // SAFETY: signal 0 only checks for existence.
        let alive = unsafe { libc::kill(-pid, 0) } == 0;
        assert!(!alive, "load process group {pid} survived Ctrl-C");
    }
    assert!(
        load::tagged_processes(&tag).is_empty(),
        "tagged load processes survived"
    );

    let store = Store::open_existing(&db).unwrap();
    let r = store.run(id).unwrap();
    assert_eq!(r.status, RunStatus::Interrupted);
    assert!(r.error.unwrap().contains("interrupted"));
    assert_eq!(r.flags["interrupted"], Value::Bool(true));
    let ms = store.measurements(id).unwrap();
    let lat = &ms[0].measurement;
    assert_eq!(lat.metric, "wakeup_latency");
    // About two seconds at 2048 Hz were measured, and kept.
    assert!(lat.count() > 1000, "{} samples kept", lat.count());
    assert_eq!(lat.histogram.as_ref().unwrap().count(), lat.count());
    assert!(r.load["exits"].as_array().is_some_and(|e| !e.is_empty()));
}

#[test]
fn the_ep_load_runs_as_its_own_process_and_is_recorded() {
    let _m = machine_lock();
    let dir = tempdir();
    let db = dir.path().join("ep.db");
    let v = run_json(
        &db,
        &[
            "jitter",
            "--loops",
            "300",
            "--interval",
            "1ms",
            "--load",
            "ep:1",
            "--json",
        ],
    );
    let p = &v["load"]["processes"][0];
    assert!(
        p["command"]
            .as_str()
            .unwrap()
            .ends_with("__load ep --threads 1"),
        "{p}"
    );
    assert!(p["version"].as_str().unwrap().contains("NPB EP"));
    let exit = &v["load"]["exits"][0];
    assert_eq!(exit["early"], Value::Bool(false), "{exit}");
    assert!(load::tagged_processes(v["load"]["tag"].as_str().unwrap()).is_empty());
}

#[test]
fn doctor_json_has_every_finding_with_verdicts() {
    let v = run_json(
        std::path::Path::new("unused.db"),
        &["doctor", "--json", "--steal-window", "100ms"],
    );
    let findings = v["findings"].as_array().unwrap();
    assert!(findings.len() >= 20);
    for f in findings {
        assert!(
            ["ok", "warn", "fail"].contains(&f["verdict"].as_str().unwrap()),
            "{f}"
        );
    }
    let n = |k: &str| v["counts"][k].as_u64().unwrap();
    assert_eq!((n("ok") + n("warn") + n("fail")) as usize, findings.len());
    assert!(v["machine"]["kernel_release"].is_string());
    assert!(
        !std::path::Path::new("unused.db").exists(),
        "doctor must not write a database"
    );
}

#[test]
fn the_suite_runs_doctor_and_every_probe_as_one_group() {
    let _m = machine_lock();
    require_tool("stress-ng", "stress-ng");
    require_tool("jackd", "jackd2");
    let dir = tempdir();
    let db = dir.path().join("s.db");
    let v = run_json(&db, &["suite", "--each", "2s", "--json"]);
    let group = v["group_id"].as_i64().unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 7, "{v}");
    assert_eq!(runs[4]["metric"], "event_latency", "{v}");
    assert_eq!(runs[5]["metric"], "roundtrip", "{v}");
    assert_eq!(runs[6]["metric"], "response_time", "{v}");
    assert!(
        runs[6]["note"]
            .as_str()
            .unwrap()
            .contains("missed the 1.41 ms deadline"),
        "{v}"
    );
    // The software loop in JACK is one period (the feedback edge), found exactly.
    assert!(
        runs[5]["note"].as_str().unwrap().starts_with("loop found"),
        "{v}"
    );
    // Without a sound card or a default JACK server, the event ran on a private dummy
    // server, and its note says where to look for something to measure.
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let default_server = std::path::Path::new(&format!("/dev/shm/jack_default_{uid}_0")).exists();
    if !has_sound_card() && !default_server {
        assert!(
            runs[4]["note"]
                .as_str()
                .unwrap()
                .contains("`audiolat devices`"),
            "{v}"
        );
    }
    assert_eq!(runs[0]["label"], "doctor");
    for r in runs {
        assert_eq!(r["status"], "complete", "{r}");
    }
    // The suite ends by writing its report beside the database.
    let report = std::path::PathBuf::from(v["report"].as_str().unwrap());
    assert_eq!(
        report,
        dir.path()
            .join(format!("audiolat-report-suite-{group}.html"))
    );
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("Doctor's findings") && html.contains("<svg"));
    let listed = run_json(&db, &["runs", "--group", &group.to_string(), "--json"]);
    let probes: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["probe"].as_str().unwrap())
        .collect();
    assert_eq!(
        probes,
        [
            "net",
            "roundtrip",
            "event",
            "jitter",
            "jitter",
            "jitter",
            "doctor"
        ]
    );
    // The loaded runs recorded their load's exact commands and versions.
    let store = Store::open_existing(&db).unwrap();
    let loaded = store
        .list_runs(&RunFilter {
            group_id: Some(group),
            ..RunFilter::default()
        })
        .unwrap();
    let specs: Vec<&str> = loaded
        .iter()
        .filter_map(|r| r.load["spec"].as_str())
        .collect();
    assert_eq!(specs, ["none", "none", "none", "io", "cpu", "none", "none"]);
    let cpu = &loaded[4].load["processes"][0];
    assert!(cpu["command"].as_str().unwrap().contains("stress-ng --cpu"));
    assert!(cpu["version"]
        .as_str()
        .unwrap()
        .starts_with("stress-ng, version"));
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
    let dir = tempdir();
    let db = dir.path().join("cmp.db");
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

#[test]
fn every_load_kind_starts_is_recorded_and_is_gone_afterwards() {
    let _m = machine_lock();
    require_tool("stress-ng", "stress-ng");
    require_tool("hackbench", "rt-tests");
    let dir = tempdir();
    let db = dir.path().join("loads.db");
    let v = run_json(
        &db,
        &[
            "jitter",
            "--loops",
            "1000",
            "--interval",
            "1ms",
            "--load",
            "cpu:10+io+top+mem+ep:1+hackbench+video",
            "--scratch-dir",
            dir.path().to_str().unwrap(),
            "--json",
        ],
    );
    let procs = v["load"]["processes"].as_array().unwrap();
    let items: Vec<&str> = procs.iter().map(|p| p["item"].as_str().unwrap()).collect();
    assert_eq!(
        items,
        ["cpu:10", "io", "top", "mem", "ep:1", "hackbench", "video"]
    );
    for p in procs {
        assert!(p["pgid"].as_i64().unwrap() > 0, "{p}");
        assert_ne!(p["version"], "unknown", "{p}");
    }
    for e in v["load"]["exits"].as_array().unwrap() {
        assert_eq!(
            e["early"],
            Value::Bool(false),
            "a load died during the run: {e}"
        );
    }
    assert_eq!(v["flags"]["load_exited_early"], Value::Bool(false));
    assert!(load::tagged_processes(v["load"]["tag"].as_str().unwrap()).is_empty());
    // The disk load cleaned up after itself.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("stress-ng"))
        .collect();
    assert!(left.is_empty(), "stress-ng left {left:?}");
}

#[test]
fn a_missing_load_tool_is_refused_naming_its_package() {
    let dir = tempdir();
    let db = dir.path().join("m.db");
    // A PATH without the tools: stress-ng and hackbench live in /usr/bin, which is only
    // searched through PATH.
    for (load, package) in [
        ("cpu", "stress-ng"),
        ("hackbench", "rt-tests"),
        ("top", "procps"),
    ] {
        let out = std::process::Command::new(util::bin())
            .env("PATH", dir.path())
            .args([
                "--db",
                db.to_str().unwrap(),
                "jitter",
                "--loops",
                "10",
                "--load",
                load,
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{load}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains(&format!(
                "install the {package} package (apt install {package})"
            )),
            "{load}: {stderr}"
        );
        assert!(!db.exists(), "{load}: a refused run wrote the database");
    }
}

#[test]
fn refused_real_time_priority_still_measures_and_is_flagged() {
    let _m = machine_lock();
    let dir = tempdir();
    let db = dir.path().join("nrt.db");
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
    let r = store.run(v["run_id"].as_i64().unwrap()).unwrap();
    assert_eq!(r.flags["realtime"], Value::Bool(false));
    let shown = run(&db, &["show", "last"]);
    assert!(shown.stdout.contains("NOT REAL-TIME"), "{}", shown.stdout);
}

#[test]
fn a_killed_run_keeps_its_last_checkpoint() {
    let _m = machine_lock();
    let dir = tempdir();
    let db = dir.path().join("k.db");
    let mut child = spawn(&db, &["jitter", "--duration", "120s", "-q"]);
    // Wait for the first checkpoint (every 5 s) to reach the database.
    let start = std::time::Instant::now();
    let (id, count) = loop {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no checkpoint was stored"
        );
        std::thread::sleep(Duration::from_millis(200));
        let Ok(store) = Store::open_existing(&db) else {
            continue;
        };
        let Some(r) = store
            .list_runs(&RunFilter::default())
            .unwrap()
            .into_iter()
            .next()
        else {
            continue;
        };
        let ms = store.measurements(r.id).unwrap();
        if let Some(m) = ms.iter().find(|m| m.measurement.metric == "wakeup_latency") {
            assert_eq!(m.measurement.detail["partial"], Value::Bool(true));
            break (r.id, m.measurement.count());
        }
    };
    assert!(count > 0);
    // SIGKILL: no chance to clean up or write anything more.
    child.kill().unwrap();
    child.wait().unwrap();
    let store = Store::open_existing(&db).unwrap();
    let r = store.run(id).unwrap();
    assert_eq!(
        r.status,
        RunStatus::Interrupted,
        "a vanished run is marked interrupted"
    );
    assert!(r.error.unwrap().contains("without closing"));
    let ms = store.measurements(id).unwrap();
    let lat = ms
        .iter()
        .find(|m| m.measurement.metric == "wakeup_latency")
        .unwrap();
    assert!(lat.measurement.count() >= count);
    assert_eq!(
        lat.measurement.histogram.as_ref().unwrap().count(),
        lat.measurement.count()
    );
}

/// Polls until no live process carries the tag, or panics after `timeout`.
fn assert_tag_gone(tag: &str, timeout: Duration) {
    let start = std::time::Instant::now();
    loop {
        let left = load::tagged_processes(tag);
        if left.is_empty() {
            return;
        }
        assert!(
            start.elapsed() < timeout,
            "load processes left behind: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn loads_die_with_audiolat_even_when_it_is_killed_outright() {
    let _m = machine_lock();
    require_tool("stress-ng", "stress-ng");
    require_tool("hackbench", "rt-tests");
    let dir = tempdir();
    // hackbench forks 160 workers and stress-ng its own: none may outlive audiolat.
    for (name, how) in [
        ("sigkill", &[libc::SIGKILL][..]),
        ("double-ctrl-c", &[libc::SIGINT, libc::SIGINT][..]),
    ] {
        let db = dir.path().join(format!("{name}.db"));
        let mut child = spawn(
            &db,
            &[
                "jitter",
                "--duration",
                "120s",
                "--load",
                "hackbench+cpu",
                "-q",
            ],
        );
        let (_, _, tag) = wait_for_load(&db);
        assert!(
            load::tagged_processes(&tag).len() > 100,
            "{name}: hackbench's workers are running"
        );
        for &sig in how {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(child.id() as i32, sig) };
        }
        wait_timeout(&mut child, Duration::from_secs(30));
        assert_tag_gone(&tag, Duration::from_secs(15));
    }
}

#[test]
fn a_load_that_dies_mid_run_is_recorded_and_its_workers_go_with_it() {
    let _m = machine_lock();
    require_tool("hackbench", "rt-tests");
    let dir = tempdir();
    let db = dir.path().join("d.db");
    let child = spawn(
        &db,
        &[
            "jitter",
            "--duration",
            "6s",
            "--load",
            "hackbench",
            "--json",
        ],
    );
    let (_, pgids, tag) = wait_for_load(&db);
    // hackbench's main process is the supervisor's child; kill it as a crash would.
    let main = load::tagged_processes(&tag)
        .into_iter()
        .find(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| s.rsplit(')').next().map(str::to_string))
                .and_then(|rest| rest.split_whitespace().nth(1).map(str::to_string))
                .is_some_and(|ppid| ppid == pgids[0].to_string())
        })
        .expect("hackbench's main process");
    // SAFETY: signalling a process of our own test's load.
    unsafe { libc::kill(main, libc::SIGKILL) };
    // Its 160 workers go with it, while the run goes on.
    assert_tag_gone(&tag, Duration::from_secs(5));
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let exit = &v["load"]["exits"][0];
    assert_eq!(exit["early"], Value::Bool(true), "{exit}");
    assert_eq!(
        exit["status"], "signal 9",
        "the tool's own ending is recorded: {exit}"
    );
    assert_eq!(v["flags"]["load_exited_early"], Value::Bool(true));
}

/// SIGKILLs an audiolat this test started; its private server `name` goes with it (or
/// is stopped here, not to hold the name).
fn kill_with_its_server(mut child: util::KillOnDrop, name: &str) {
    // SAFETY: killing the audiolat this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.0.wait();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !jackd_pids(name).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    for pid in jackd_pids(name) {
        // SAFETY: the jackd of the audiolat this test killed.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// jackd processes serving a server name, from /proc (so a test can kill the private
/// server audiolat started, and check none is left).
fn jackd_pids(server_name: &str) -> Vec<i32> {
    engine::jack_server::jackd_processes()
        .into_iter()
        .filter(|(_, args)| args.windows(2).any(|w| w[0] == "-n" && w[1] == server_name))
        .map(|(pid, _)| pid)
        .collect()
}

/// A server name per test. Stable, not per process: jackd keeps a registry of at most
/// eight servers, and the entry of one that was killed outright is only reclaimed by the
/// next server of the same name.
fn unique_server(tag: &str) -> String {
    format!("audiolat-test-{tag}")
}

/// The acceptance test against JACK's timing model, on a private `jackd -d dummy`:
/// - fixed: every trigger's latency is one period plus the playback latency the ports
///   report, to within one frame (triggers that reached the audio thread after their
///   frame had passed are flagged `late` and counted; there must be few);
/// - asap: the mean latency is half a period plus the playback latency, within a quarter
///   of a period. The wait is uniform over the period, so 100 triggers put the mean
///   within about 3 % of a period of the model; the rest of the margin is for callbacks
///   that the host's steal makes late (they shorten the wait of the triggers that land
///   in them).
#[test]
fn event_latency_agrees_with_the_jack_timing_model_in_both_policies() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let dir = tempdir();
    let db = dir.path().join("e.db");
    let name = unique_server("model");
    let v = run_json(
        &db,
        &[
            "event",
            "--server",
            "dummy",
            "--server-name",
            &name,
            "--rate",
            "48000",
            "--period",
            "256",
            "--policy",
            "fixed,asap",
            "--triggers",
            "100",
            "--spacing",
            "30ms",
            "--note",
            "15ms",
            "--json",
        ],
    );
    assert!(
        jackd_pids(&name).is_empty(),
        "the private jackd was stopped"
    );
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{v}");
    let frame_ns = 1e9 / 48_000.0;
    let period_ns = 256.0 * frame_ns;
    for r in runs {
        assert_eq!(r["status"], "complete", "{r}");
        let result = &r["result"];
        assert_eq!(result["period_frames"], 256);
        assert_eq!(result["rate_hz"], 48_000);
        assert_eq!(result["server"]["private"], true);
        assert!(result["server"]["command_line"]
            .as_str()
            .unwrap()
            .ends_with(&format!("-n {name} -d dummy -r 48000 -p 256")));
        let playback = result["playback_latency_frames"].as_f64().unwrap();
        assert!(
            playback >= 256.0,
            "dummy reports at least its buffer: {result}"
        );
        let triggers = r["triggers"].as_array().unwrap();
        assert_eq!(triggers.len(), 100);
        // Notes whose callback ran after their cycle's deadline (an under-run, here the
        // host's steal) are flagged `missed`, counted, and left out of the figures; how
        // many is the host's business, but the model needs notes to check.
        let missed = triggers.iter().filter(|t| t["missed"] == true).count();
        assert_eq!(result["missed_triggers"], missed as u64, "{result}");
        assert_eq!(
            result["latency_ms"]["count"],
            (100 - missed) as u64,
            "the figures are over the notes that sounded: {result}"
        );
        assert!(
            missed <= 50,
            "{missed} of 100 notes missed their deadline: too few left to check the model"
        );
        let latencies: Vec<f64> = triggers
            .iter()
            .filter(|t| t["missed"] == false)
            .map(|t| t["latency_ns"].as_f64().unwrap())
            .collect();
        let buffer_ns = playback * frame_ns;
        match r["config"]["policy"].as_str().unwrap() {
            "fixed" => {
                // A trigger that reached the audio thread after its frame had passed is
                // flagged `late` (started at the next cycle), counted, and not held to
                // the fixed latency.
                let late = triggers.iter().filter(|t| t["late"] == true).count();
                assert_eq!(result["late_triggers"], late as u64, "{result}");
                for t in triggers
                    .iter()
                    .filter(|t| t["late"] == false && t["missed"] == false)
                {
                    let l = t["latency_ns"].as_f64().unwrap();
                    assert!(
                        (l - (period_ns + buffer_ns)).abs() <= frame_ns,
                        "fixed latency {l} ns vs one period + playback latency {} ns",
                        period_ns + buffer_ns
                    );
                }
            }
            "asap" => {
                let mean = latencies.iter().sum::<f64>() / latencies.len() as f64;
                let model = period_ns / 2.0 + buffer_ns;
                assert!(
                    (mean - model).abs() <= period_ns / 4.0,
                    "asap mean {mean} ns vs half a period + playback latency {model} ns"
                );
                // The quantisation is sampled: notes land across the whole period.
                let min = latencies.iter().cloned().fold(f64::MAX, f64::min);
                let max = latencies.iter().cloned().fold(f64::MIN, f64::max);
                assert!(max - min > period_ns / 2.0, "spread {} ns", max - min);
            }
            other => panic!("policy {other}"),
        }
        // Every trigger is stored with its decomposition: wait + buffer = latency.
        let store = Store::open_existing(&db).unwrap();
        let rows = store.triggers(r["run_id"].as_i64().unwrap()).unwrap();
        assert_eq!(rows.len(), 100);
        for row in &rows {
            assert_eq!(row.latency_ns, row.wait_ns + row.buffer_ns, "{row:?}");
            assert_eq!(row.source, "timer");
        }
    }
    // Every trigger exports: JSON with the run, CSV one line each.
    let json = run_json(&db, &["export", "last", "--format", "json"]);
    assert_eq!(json["triggers"].as_array().unwrap().len(), 100);
    let csv = run(&db, &["export", "last", "--format", "triggers"]);
    assert_eq!(csv.code, 0, "{}", csv.stderr);
    assert_eq!(csv.stdout.lines().count(), 101);
    let header = csv.stdout.lines().next().unwrap();
    assert!(header.starts_with("run_id,seq,source,trigger_ns"));
    for line in csv.stdout.lines() {
        assert_eq!(line.split(',').count(), header.split(',').count(), "{line}");
    }
}

#[test]
fn the_jack_server_dying_mid_run_keeps_the_triggers_and_marks_the_run_interrupted() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let dir = tempdir();
    let db = dir.path().join("k.db");
    let name = unique_server("kill");
    let mut child = spawn(
        &db,
        &[
            "event",
            "--server",
            "dummy",
            "--server-name",
            &name,
            "--triggers",
            "1000",
            "--spacing",
            "30ms",
            "--note",
            "10ms",
            "-q",
        ],
    );
    // Wait until some triggers are stored, then kill the server.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let run_id = loop {
        assert!(
            std::time::Instant::now() < deadline,
            "no triggers were stored"
        );
        std::thread::sleep(Duration::from_millis(200));
        let Ok(store) = Store::open_existing(&db) else {
            continue;
        };
        if let Ok(Some(id)) = store.last_run_id() {
            if store.triggers(id).map(|t| t.len()).unwrap_or(0) >= 10 {
                break id;
            }
        }
    };
    let pids = jackd_pids(&name);
    assert_eq!(pids.len(), 1, "one private jackd: {pids:?}");
    // SAFETY: killing the jackd this test's audiolat started.
    unsafe { libc::kill(pids[0], libc::SIGKILL) };
    let status = wait_timeout(&mut child, Duration::from_secs(30));
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(1), "{stderr}");
    let error_line = stderr.lines().last().unwrap_or_default();
    assert!(
        error_line.contains("JACK server")
            && error_line.contains("triggers measured before that are kept"),
        "{stderr}"
    );
    let store = Store::open_existing(&db).unwrap();
    let r = store.run(run_id).unwrap();
    assert_eq!(r.status, RunStatus::Interrupted);
    let rows = store.triggers(run_id).unwrap();
    let kept = rows.len();
    assert!(kept >= 10, "{kept} triggers kept");
    assert!(kept < 1000);
    let ms = store.measurements(run_id).unwrap();
    assert_eq!(ms[0].measurement.metric, "event_latency");
    let valid = rows.iter().filter(|r| !r.missed).count();
    assert_eq!(ms[0].measurement.count() as usize, valid);
    assert!(jackd_pids(&name).is_empty());
}

#[test]
fn event_setup_errors_are_one_line_with_the_fix() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let dir = tempdir();
    let db = dir.path().join("x.db");
    let one_line = |out: &util::Output, needle: &str| {
        assert_eq!(out.code, 2, "{needle}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains(needle), "{needle}: {}", out.stderr);
        assert!(!db.exists(), "a refused run wrote the database");
    };
    // A period JACK does not run.
    let out = run(&db, &["event", "--period", "100"]);
    one_line(&out, "powers of two");
    // A busy server name: a private server is already running under it.
    let name = unique_server("busy");
    let mut jackd = std::process::Command::new("jackd")
        .args(["-n", &name, "-d", "dummy", "-r", "44100", "-p", "128"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let ready = std::process::Command::new("jack_wait")
        .args(["-s", &name, "-w", "-t", "10"])
        .output()
        .unwrap();
    assert!(ready.status.success(), "jackd {name} did not come up");
    let out = run(
        &db,
        &[
            "event",
            "--server",
            "dummy",
            "--server-name",
            &name,
            "--triggers",
            "1",
        ],
    );
    one_line(&out, "already running");
    assert!(out.stderr.contains("--server external"));
    // The same server as an external one, with the wrong period.
    let out = run(
        &db,
        &[
            "event",
            "--server",
            "external",
            "--server-name",
            &name,
            "--period",
            "256",
        ],
    );
    one_line(&out, "--period 256");
    // Ports that do not exist or cannot be connected as asked: refused before anything
    // is stored.
    for (args, needle) in [
        (&["--playback", "nosuch:port"][..], "does not exist"),
        (
            &["--playback", "system:capture_1"][..],
            "needs an audio input",
        ),
        (
            &["--loopback", "system:playback_1"][..],
            "needs an audio output",
        ),
        (
            &["--trigger", "midi", "--midi-port", "system:capture_1"][..],
            "needs a MIDI output",
        ),
    ] {
        let mut all = vec!["event", "--server", "external", "--server-name", &name];
        all.extend_from_slice(args);
        let out = run(&db, &all);
        one_line(&out, needle);
    }
    // SAFETY: a clean stop (SIGTERM) of the jackd this test started.
    unsafe { libc::kill(jackd.id() as i32, libc::SIGTERM) };
    let _ = jackd.wait();
    // No server to use.
    let out = run(
        &db,
        &[
            "event",
            "--server",
            "external",
            "--server-name",
            &unique_server("none"),
        ],
    );
    one_line(&out, "no JACK server named");
    // No jackd installed: a PATH without it.
    let out = std::process::Command::new(util::bin())
        .env("PATH", dir.path())
        .args([
            "--db",
            db.to_str().unwrap(),
            "event",
            "--server",
            "dummy",
            "--triggers",
            "1",
        ])
        .output()
        .unwrap();
    let out = util::Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    one_line(&out, "install the jackd2 package");
    // No GPIO chip on this machine.
    let out = run(&db, &["event", "--gpio", "gpiochip9:3"]);
    one_line(&out, "gpiochip9");
    // Workload and trigger typos.
    one_line(
        &run(&db, &["event", "--workload", "saw"]),
        "sine, poly or bank:N",
    );
    one_line(
        &run(&db, &["event", "--trigger", "pedal"]),
        "timer, key or midi",
    );
}

#[test]
fn event_sweeps_workloads_and_loads_like_the_study_and_key_presses_trigger() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    require_tool("top", "procps");
    let dir = tempdir();
    let db = dir.path().join("s.db");
    let out = run(
        &db,
        &[
            "event",
            "--server",
            "dummy",
            "--server-name",
            &unique_server("sweep"),
            "--period",
            "64,128",
            "--workload",
            "sine,poly",
            "--load",
            "none,top",
            "--triggers",
            "8",
            "--spacing",
            "30ms",
            "--note",
            "10ms",
            "-q",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("average latency (ms), as in the BeagleBone study"),
        "{}",
        out.stdout
    );
    for column in ["sine", "sine+top", "poly", "poly+top"] {
        assert!(out.stdout.contains(column), "{column}: {}", out.stdout);
    }
    let store = Store::open_existing(&db).unwrap();
    let runs = store
        .list_runs(&RunFilter {
            probe: Some("event".into()),
            ..RunFilter::default()
        })
        .unwrap();
    assert_eq!(runs.len(), 8);
    assert!(runs.iter().all(|r| r.status == RunStatus::Complete));
    assert!(runs.iter().all(|r| r.tool.build_profile.starts_with("dev")));

    // Key presses: every byte on stdin is a key press, `q` ends.
    let mut child = std::process::Command::new(util::bin())
        .args([
            "--db",
            db.to_str().unwrap(),
            "event",
            "--trigger",
            "key",
            "--server",
            "dummy",
            "--triggers",
            "5",
            "--json",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    for _ in 0..5 {
        use std::io::Write;
        stdin.write_all(b" ").unwrap();
        stdin.flush().unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = wait_timeout(&mut child, Duration::from_secs(30));
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let triggers = v["runs"][0]["triggers"].as_array().unwrap();
    assert_eq!(triggers.len(), 5);
    assert!(triggers.iter().all(|t| t["source"] == "key"));
}

/// MIDI triggers from jackd2's own sequencer client (`jack_midiseq`) on an external
/// server: `fixed` places each note at its event's frame one period later, so every
/// latency is one period plus the playback latency; `asap` starts it at the next cycle's
/// first frame, so the latency lies between the playback latency and one period more.
#[test]
fn midi_note_ons_trigger_notes_at_their_frame() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    require_tool("jack_midiseq", "jackd2");
    let dir = tempdir();
    let db = dir.path().join("midi.db");
    let name = unique_server("midi");
    let mut jackd = std::process::Command::new("jackd")
        .args(["-n", &name, "-d", "dummy", "-r", "48000", "-p", "256"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // Two notes per half-second loop.
    let mut seq = std::process::Command::new("jack_midiseq")
        .env("JACK_DEFAULT_SERVER", &name)
        .args([
            "audiolat-seq",
            "24000",
            "0",
            "60",
            "2000",
            "12000",
            "64",
            "2000",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let out = run(
        &db,
        &[
            "event",
            "--server",
            "external",
            "--server-name",
            &name,
            "--trigger",
            "midi",
            "--midi-port",
            "audiolat-seq:out",
            "--policy",
            "fixed,asap",
            "--triggers",
            "6",
            "--note",
            "10ms",
            "--json",
        ],
    );
    // SAFETY: clean stops (SIGTERM) of the processes this test started.
    unsafe {
        libc::kill(seq.id() as i32, libc::SIGTERM);
        libc::kill(jackd.id() as i32, libc::SIGTERM);
    }
    let _ = seq.wait();
    let _ = jackd.wait();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let frame_ns = 1e9 / 48_000.0;
    for r in v["runs"].as_array().unwrap() {
        assert_eq!(r["result"]["server"]["private"], false);
        let playback_ns = r["result"]["playback_latency_frames"].as_f64().unwrap() * frame_ns;
        let period_ns = 256.0 * frame_ns;
        let triggers = r["triggers"].as_array().unwrap();
        assert_eq!(triggers.len(), 6, "{r}");
        for t in triggers {
            assert_eq!(t["source"], "midi");
            let l = t["latency_ns"].as_f64().unwrap();
            match r["config"]["policy"].as_str().unwrap() {
                "fixed" => assert!(
                    (l - (period_ns + playback_ns)).abs() <= frame_ns,
                    "fixed midi latency {l} ns"
                ),
                _ => assert!(
                    l > playback_ns - frame_ns && l <= period_ns + playback_ns + frame_ns,
                    "asap midi latency {l} ns"
                ),
            }
        }
        // jack_midiseq counts its own frames: its note-ons are 12000 frames apart. In fixed
        // mode each note starts at its note-on's frame (a period later), so the notes are
        // 12000 frames apart too, plus whole periods where the dummy driver skipped cycles
        // (its frame count jumps, the sequencer's does not). 12000 is not a multiple of
        // the period, so a note off its frame shows.
        if r["config"]["policy"] == "fixed" {
            let frames: Vec<i64> = triggers
                .iter()
                .map(|t| t["note_frame"].as_i64().unwrap())
                .collect();
            let mut gaps: Vec<i64> = frames.windows(2).map(|w| w[1] - w[0]).collect();
            for g in &gaps {
                assert!(
                    *g >= 12000 && (g - 12000) % 256 == 0,
                    "note frames {frames:?}: a gap of {g} frames"
                );
            }
            gaps.sort_unstable();
            assert_eq!(gaps[gaps.len() / 2], 12000, "note frames {frames:?}");
        }
    }
}

/// A callback far heavier than its period (64k oscillators in 16 frames) on the private
/// server: the run ends, is printed and stored `complete` with its DSP overloads counted,
/// and closing the client never aborts the process (libjack cancels its process thread
/// asynchronously: it used to land inside the callback, "FATAL: exception not rethrown",
/// exit 134, the private jackd left behind).
#[test]
fn an_overloaded_jack_callback_is_reported_and_closes_cleanly() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let dir = tempdir();
    let db = dir.path().join("o.db");
    let name = unique_server("overload");
    for _ in 0..3 {
        let out = run(
            &db,
            &[
                "event",
                "--server",
                "dummy",
                "--server-name",
                &name,
                "--workload",
                "bank:65536",
                "--period",
                "16",
                "--triggers",
                "10",
            ],
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stdout.contains("stored in"), "{}", out.stdout);
        assert!(out.stdout.contains("DSP overload"), "{}", out.stdout);
        assert!(
            jackd_pids(&name).is_empty(),
            "the private jackd was stopped"
        );
    }
    let store = Store::open_read_only(&db).unwrap();
    let id = store.last_run_id().unwrap().unwrap();
    let r = store.run(id).unwrap();
    assert_eq!(r.status, RunStatus::Complete);
    // 64k oscillators cannot be computed in 16 frames: every cycle is one.
    assert!(
        r.flags["dsp_overload_cycles"].as_u64() > Some(0),
        "{}",
        r.flags
    );
    assert!(
        r.result["dsp_overload_cycles"].as_u64() > Some(0),
        "{}",
        r.result
    );
    assert_eq!(store.triggers(id).unwrap().len(), 10);
}

/// A private server left by an audiolat that died (adopted by init) holds its name: the
/// next run stops it and starts its own under that name.
#[test]
fn a_private_server_left_by_a_dead_audiolat_is_stopped_by_the_next_run() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let dir = tempdir();
    let db = dir.path().join("s.db");
    // A jackd whose parent exits at once. `tag` marks it as an audiolat's private server
    // (the PID of its audiolat, the shell, dead by the time it is looked at).
    let orphan = |name: &str, tag: bool| {
        let env = if tag {
            "AUDIOLAT_PRIVATE_SERVER=$$ "
        } else {
            ""
        };
        let status = std::process::Command::new("sh")
            .args([
                "-c",
                &format!("{env}jackd -n {name} -d dummy -r 44100 -p 128 >/dev/null 2>&1 &"),
            ])
            .status()
            .unwrap();
        assert!(status.success());
        let ready = std::process::Command::new("jack_wait")
            .args(["-s", name, "-w", "-t", "10"])
            .output()
            .unwrap();
        assert!(ready.status.success(), "jackd {name} did not come up");
        let pids = jackd_pids(name);
        assert_eq!(pids.len(), 1);
        pids[0]
    };
    let event = |name: &str| {
        run(
            &db,
            &[
                "event",
                "--server",
                "dummy",
                "--server-name",
                name,
                "--triggers",
                "3",
            ],
        )
    };
    let name = unique_server("stale");
    orphan(&name, true);
    let out = event(&name);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        jackd_pids(&name).is_empty(),
        "the stale jackd and the run's own were stopped"
    );
    // A jackd a user started the same way is theirs: the name is refused as busy and
    // their server keeps running.
    let users = unique_server("users");
    let pid = orphan(&users, false);
    let out = event(&users);
    let left = jackd_pids(&users);
    // SAFETY: stops the jackd this test started.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains(&users), "{}", out.stderr);
    assert_eq!(left, [pid], "the user's jackd was stopped");
    for _ in 0..250 {
        if jackd_pids(&users).is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_ends_an_event_run_with_its_triggers_and_stops_the_server_and_load() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    require_tool("top", "procps");
    let dir = tempdir();
    let db = dir.path().join("i.db");
    let name = unique_server("ctrlc");
    let mut child = spawn(
        &db,
        &[
            "event",
            "--server",
            "dummy",
            "--server-name",
            &name,
            "--triggers",
            "1000",
            "--spacing",
            "30ms",
            "--note",
            "10ms",
            "--load",
            "top",
            "-q",
        ],
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let (run_id, tag) = loop {
        assert!(
            std::time::Instant::now() < deadline,
            "no triggers were stored"
        );
        std::thread::sleep(Duration::from_millis(200));
        let Ok(store) = Store::open_existing(&db) else {
            continue;
        };
        if let Ok(Some(id)) = store.last_run_id() {
            if store.triggers(id).map(|t| t.len()).unwrap_or(0) >= 5 {
                let r = store.run(id).unwrap();
                break (id, r.load["tag"].as_str().unwrap_or_default().to_string());
            }
        }
    };
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_timeout(&mut child, Duration::from_secs(30));
    assert_eq!(status.code(), Some(130));
    let store = Store::open_existing(&db).unwrap();
    let r = store.run(run_id).unwrap();
    assert_eq!(r.status, RunStatus::Interrupted);
    assert!(store.triggers(run_id).unwrap().len() >= 5);
    assert!(
        jackd_pids(&name).is_empty(),
        "the private jackd was stopped"
    );
    assert!(!tag.is_empty());
    assert!(
        load::tagged_processes(&tag).is_empty(),
        "the top load was stopped"
    );
}

#[test]
fn bench_times_every_workload_against_f32_sin_and_counts_voices() {
    let dir = tempdir();
    let db = dir.path().join("b.db");
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
    let text = run(&db, &["bench", "--each", "20ms"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(text.stdout.contains("voice capacity:"));
    assert!(text.stdout.contains("ns/sample"));
    assert!(
        text.stdout.contains("built ") && text.stdout.contains("host steal"),
        "the figures carry their build profile and validity: {}",
        text.stdout
    );
    assert!(v["build_profile"].as_str().unwrap().contains("opt-level"));
    assert!(v["host_steal_percent"].as_f64().is_some());
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

/// The round trip on its ground truth, through the CLI: the virtual card's loop is its
/// playback latency (periods × period) + its capture latency (a period) + the cable,
/// exactly; continuous windows through the run show no spread; an inserted delay adds
/// exactly its frames; and every run is stored with its windows.
#[test]
fn roundtrip_on_the_virtual_card_is_exact_and_the_inserted_delay_adds_its_frames() {
    let _m = machine_lock();
    let dir = tempdir();
    let db = dir.path().join("rt.db");
    for (cable, insert) in [("7.25", "0"), ("0", "0"), ("7.25", "50")] {
        let v = run_json(
            &db,
            &[
                "roundtrip",
                "--backend",
                "virtual",
                "--period",
                "128",
                "--periods",
                "3",
                "--cable-delay",
                cable,
                "--insert-delay",
                insert,
                "--duration",
                "1s",
                "--every",
                "16",
                "--impulses",
                "2",
                "--json",
            ],
        );
        let r = &v["runs"][0];
        assert_eq!(r["status"], "complete", "{r}");
        let result = &r["result"];
        let expected =
            128.0 * 3.0 + 128.0 + cable.parse::<f64>().unwrap() + insert.parse::<f64>().unwrap();
        let frames = &result["roundtrip_frames"];
        assert!(frames["count"].as_u64().unwrap() >= 5, "{result}");
        let mean = frames["mean"].as_f64().unwrap();
        assert!(
            (mean - expected).abs() <= 0.05,
            "cable {cable}, inserted {insert}: {mean} frames against {expected}"
        );
        let spread = frames["max"].as_f64().unwrap() - frames["min"].as_f64().unwrap();
        assert!(
            spread < 1e-3,
            "continuous windows spread by {spread} frames"
        );
        assert_eq!(result["reported_frames"], 512);
        assert!(
            result["verdict"]
                .as_str()
                .unwrap()
                .starts_with("loop found"),
            "{result}"
        );
        let store = Store::open_existing(&db).unwrap();
        let run_id = r["run_id"].as_i64().unwrap();
        let series = store.series(run_id).unwrap();
        let windows = series
            .iter()
            .find(|s| s.name == "roundtrip_windows")
            .unwrap();
        assert_eq!(
            windows.rows.len(),
            r["windows"].as_array().unwrap().len(),
            "every window is stored"
        );
    }
}

/// No cable: "no loop found", never a number; the run is kept and says so.
#[test]
fn roundtrip_without_a_loop_says_no_loop_found() {
    let _m = machine_lock();
    let dir = tempdir();
    let db = dir.path().join("none.db");
    let out = run(
        &db,
        &[
            "roundtrip",
            "--backend",
            "virtual",
            "--no-cable",
            "--duration",
            "5s",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("no loop found"), "{}", out.stdout);
    let v = run_json(&db, &["show", "last", "--json"]);
    assert_eq!(v["run"]["flags"]["no_loop"], true, "{v}");
    assert!(v["run"]["result"]["roundtrip_frames"]["count"] == 0, "{v}");
}

/// jack_iodelay's last settled reading of a loop, in frames.
fn jack_iodelay_frames(server: &str, loop_in: &str, loop_out: &str) -> f64 {
    // Line-buffered: jack_iodelay prints with stdio, and a pipe would hold its lines.
    let iodelay = std::process::Command::new("stdbuf")
        .args(["-oL", "jack_iodelay"])
        .env("JACK_DEFAULT_SERVER", server)
        .env("JACK_NO_START_SERVER", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("jack_iodelay starts");
    let connect = |from: &str, to: &str| {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let ok = std::process::Command::new("jack_connect")
                .env("JACK_DEFAULT_SERVER", server)
                .env("JACK_NO_START_SERVER", "1")
                .args([from, to])
                .output()
                .is_ok_and(|o| o.status.success());
            if ok {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "jack_connect {from} {to}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    connect("jack_delay:out", loop_in);
    connect(loop_out, "jack_delay:in");
    std::thread::sleep(Duration::from_secs(4));
    // SAFETY: stopping the jack_iodelay this test started.
    unsafe { libc::kill(iodelay.id() as i32, libc::SIGTERM) };
    let out = iodelay.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // "   256.000 frames      5.333 ms total roundtrip latency": the last settled one.
    text.lines()
        .rev()
        .filter(|l| l.contains("total roundtrip latency"))
        .find_map(|l| l.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no reading from jack_iodelay: {text}"))
}

/// The independent reference for JACK: jackd2's jack_iodelay and audiolat measure the
/// same software loop (`audiolat loop`, a client copying its input to its output N frames
/// later) and must agree; a loop of N more frames reads N more in both.
#[test]
fn roundtrip_on_a_jack_software_loop_equals_jack_iodelay() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    require_tool("jack_iodelay", "jackd2");
    require_tool("jack_connect", "jackd2");
    let dir = tempdir();
    let db = dir.path().join("io.db");
    let name = unique_server("iodelay");
    let jackd = util::KillOnDrop(
        std::process::Command::new("jackd")
            .args(["-n", &name, "-d", "dummy", "-r", "48000", "-p", "256"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let ready = std::process::Command::new("jack_wait")
        .args(["-s", &name, "-w", "-t", "10"])
        .output()
        .unwrap();
    assert!(ready.status.success(), "jackd {name} did not come up");
    let mut readings = Vec::new();
    for delay in ["0", "100"] {
        let mut lp = util::KillOnDrop(spawn(
            &db,
            &["loop", "--server-name", &name, "--delay", delay],
        ));
        std::thread::sleep(Duration::from_millis(700));
        let reference = jack_iodelay_frames(&name, "audiolat-loop:in", "audiolat-loop:out");
        let v = run_json(
            &db,
            &[
                "roundtrip",
                "--server",
                "external",
                "--server-name",
                &name,
                "--playback",
                "audiolat-loop:in",
                "--capture",
                "audiolat-loop:out",
                "--duration",
                "2s",
                "--impulses",
                "2",
                "--json",
            ],
        );
        // SAFETY: a clean stop (SIGINT) of the loop client this test started.
        unsafe { libc::kill(lp.id() as i32, libc::SIGINT) };
        let status = util::wait_timeout(&mut lp.0, Duration::from_secs(10));
        assert!(status.success(), "audiolat loop exited {status}");
        let result = &v["runs"][0]["result"];
        let ours = result["roundtrip_frames"]["mean"].as_f64().unwrap();
        eprintln!("loop delay {delay}: audiolat {ours} frames, jack_iodelay {reference} frames");
        assert!(
            (ours - reference).abs() <= 0.05,
            "loop delay {delay}: audiolat {ours} frames, jack_iodelay {reference}"
        );
        // A software loop in JACK: one period for the feedback edge, plus the loop's own.
        assert!(
            (ours - 256.0 - delay.parse::<f64>().unwrap()).abs() <= 0.05,
            "{result}"
        );
        readings.push(ours);
    }
    assert!(
        (readings[1] - readings[0] - 100.0).abs() <= 0.05,
        "{readings:?}"
    );
    // SAFETY: a clean stop (SIGTERM) of the jackd this test started.
    unsafe { libc::kill(jackd.id() as i32, libc::SIGTERM) };
    let mut jackd = jackd;
    util::wait_timeout(&mut jackd.0, Duration::from_secs(10));
}

#[test]
fn roundtrip_bad_input_is_one_line_with_the_fix() {
    let _m = machine_lock();
    let dir = tempdir();
    let db = dir.path().join("bad.db");
    for (args, needle) in [
        (
            &["roundtrip", "--backend", "virtual", "--periods", "1"][..],
            "at least two periods",
        ),
        (
            &["roundtrip", "--backend", "virtual", "--period", "16"][..],
            "32 to 8192",
        ),
        (
            &["roundtrip", "--backend", "virtual", "--capture", "x:y"][..],
            "name JACK ports: use them with --backend jack",
        ),
        (
            &["roundtrip", "--backend", "jack", "--cable-delay", "3"][..],
            "set the virtual card: use them with --backend virtual",
        ),
        (
            &["roundtrip", "--playback", "system:playback_1"][..],
            "--playback needs --capture",
        ),
        (&["roundtrip", "--level", "2"][..], "full scale"),
        (&["roundtrip", "--every", "0"][..], "at least 1"),
        (
            &["roundtrip", "--server", "dummy", "--capture", "nosuch:port"][..],
            "does not exist",
        ),
    ] {
        let out = run(&db, args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(needle), "{args:?}: {}", out.stderr);
        assert!(!db.exists(), "{args:?}: a refused run wrote the database");
    }
}

/// ALSA for real, through alsa-lib's jack PCM on a private dummy server (what audiolat
/// uses without a sound card): the event probe and the round trip run under CPU load,
/// with the granted buffer and period stored with each run and the under-runs counted.
#[test]
fn alsa_through_the_jack_pcm_runs_event_and_roundtrip_under_load() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    require_tool("stress-ng", "stress-ng");
    if !std::path::Path::new("/usr/lib/x86_64-linux-gnu/alsa-lib/libasound_module_pcm_jack.so")
        .exists()
    {
        eprintln!(
            "skipped: alsa-lib's jack plugin is not installed (apt install libasound2-plugins)"
        );
        return;
    }
    let dir = tempdir();
    let db = dir.path().join("alsa.db");
    let name = unique_server("alsa");
    let v = run_json(
        &db,
        &[
            "event",
            "--backend",
            "alsa",
            "--server",
            "dummy",
            "--server-name",
            &name,
            "--period",
            "256",
            "--periods",
            "3",
            "--triggers",
            "20",
            "--load",
            "cpu",
            "--json",
        ],
    );
    let r = &v["runs"][0];
    assert_eq!(r["status"], "complete", "{r}");
    assert_eq!(r["result"]["backend"], "alsa");
    assert_eq!(r["result"]["model"], "push");
    assert!(
        r["result"]["underruns"]["start"].is_u64() && r["result"]["underruns"]["steady"].is_u64()
    );
    assert_eq!(r["triggers"].as_array().unwrap().len(), 20);
    let store = Store::open_existing(&db).unwrap();
    let run = store.run(r["run_id"].as_i64().unwrap()).unwrap();
    let granted = &run.config["granted"];
    assert_eq!(granted["period_frames"], 256, "{granted}");
    assert_eq!(granted["buffer_frames"], 768, "{granted}");
    assert_eq!(granted["format"], "FLOAT_LE");
    assert_eq!(granted["access"], "RW_INTERLEAVED");
    assert_eq!(run.load["spec"], "cpu");
    assert!(
        jackd_pids(&name).is_empty(),
        "the private jackd was stopped"
    );

    let v = run_json(
        &db,
        &[
            "roundtrip",
            "--backend",
            "alsa",
            "--server",
            "dummy",
            "--server-name",
            &name,
            "--period",
            "128",
            "--duration",
            "2s",
            "--impulses",
            "2",
            "--load",
            "cpu",
            "--json",
        ],
    );
    let r = &v["runs"][0];
    assert_eq!(r["status"], "complete", "{r}");
    let result = &r["result"];
    assert!(
        result["verdict"]
            .as_str()
            .unwrap()
            .starts_with("loop found"),
        "{result}"
    );
    assert!(result["xruns"].is_u64() && result["skipped_cycles"].is_u64());
    // The loop through the jack PCM and audiolat's loop client is a whole number of
    // periods, the same in every valid window, unless the path itself changed: the jack
    // PCM can run dry under load and come back a period later without an under-run
    // reported. Then the probe must say so: a step between windows, a whole number of
    // periods, in the result, the flags, the events and the verdict.
    let frames = &result["roundtrip_frames"];
    let (min, max) = (
        frames["min"].as_f64().unwrap(),
        frames["max"].as_f64().unwrap(),
    );
    let whole_periods = |f: f64| (f / 128.0 - (f / 128.0).round()).abs() < 1e-3;
    assert!(whole_periods(min) && whole_periods(max), "{frames}");
    let changes = result["delay_changes"].as_array().unwrap();
    let run = store.run(r["run_id"].as_i64().unwrap()).unwrap();
    assert_eq!(run.flags["delay_changes"], changes.len(), "{result}");
    if changes.is_empty() {
        assert!(max - min < 1e-3, "{frames}");
    } else {
        eprintln!("the loop's delay changed mid-run: {changes:?}");
        for c in changes {
            let (from, to) = (
                c["from_frames"].as_f64().unwrap(),
                c["to_frames"].as_f64().unwrap(),
            );
            assert!(whole_periods(from) && whole_periods(to), "{c}");
        }
        assert!(
            result["verdict"]
                .as_str()
                .unwrap()
                .contains("the loop's delay changed"),
            "{result}"
        );
        let steps = store
            .event_counts(run.id)
            .unwrap()
            .into_iter()
            .find(|(k, _)| k == "delay_change")
            .map_or(0, |(_, n)| n);
        assert_eq!(steps as usize, changes.len());
    }
    assert_eq!(run.config["granted"]["period_frames"], 128);
    assert_eq!(run.config["granted"]["capture_channels"], 1);
    // The jack PCM cannot be linked: it says so, and how the two directions started is
    // measured instead (their skew read from the pointers on the first period).
    assert_eq!(r["granted"]["linked"], false, "{}", r["granted"]);
    assert!(r["granted"]["link_error"].is_string(), "{}", r["granted"]);
    let start = &result["duplex_start"];
    assert_eq!(start["linked"], false, "{start}");
    assert!(start["starts"].as_u64().unwrap() >= 1, "{start}");
    assert!(
        jackd_pids(&name).is_empty(),
        "the private jackd was stopped"
    );
}

#[test]
fn alsa_and_backend_bad_input_is_one_line_with_the_fix() {
    let _m = machine_lock();
    let dir = tempdir();
    let db = dir.path().join("bad.db");
    for (args, needle) in [
        (
            &["event", "--backend", "alsa", "--device", "hw:97"][..],
            "does not exist",
        ),
        (
            &["roundtrip", "--backend", "alsa", "--device", "hw:97"][..],
            "does not exist",
        ),
        (
            &["event", "--backend", "alsa", "--periods", "1"][..],
            "at least two periods",
        ),
        (
            &["roundtrip", "--backend", "alsa", "--periods", "1"][..],
            "at least two periods",
        ),
        (
            &["event", "--backend", "alsa", "--format", "u8"][..],
            "float, s32, s24, s24_3 or s16",
        ),
        (
            &["event", "--device", "hw:0"][..],
            "use them with --backend alsa",
        ),
        (
            // With ALSA, --loopback names the capture device.
            &["event", "--backend", "alsa", "--loopback", "x:y"][..],
            "`x:y` does not exist",
        ),
        (
            &["event", "--backend", "virtual", "--loopback", "x:y"][..],
            "with --backend jack",
        ),
        (
            &["event", "--backend", "alsa", "--trigger", "midi"][..],
            "use --backend jack",
        ),
        (
            &["event", "--periods", "3"][..],
            "a JACK server's buffer is its own",
        ),
        (
            &["roundtrip", "--backend", "virtual", "--server", "dummy"][..],
            "needs none",
        ),
    ] {
        let out = run(&db, args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(needle), "{args:?}: {}", out.stderr);
        assert!(!db.exists(), "{args:?}: a refused run wrote the database");
    }
}

/// --find-min-buffer steps down through the periods and stops at the first that
/// under-runs; the verdict names the smallest that held and its round trip.
#[test]
fn find_min_buffer_steps_down_and_reports_the_smallest_that_held() {
    let _m = machine_lock();
    let dir = tempdir();
    let db = dir.path().join("min.db");
    let v = run_json(
        &db,
        &[
            "roundtrip",
            "--backend",
            "virtual",
            "--find-min-buffer",
            "--period",
            "64,256,128",
            "--duration",
            "500ms",
            "--impulses",
            "1",
            "--json",
        ],
    );
    let runs = v["runs"].as_array().unwrap();
    let periods: Vec<u64> = runs
        .iter()
        .map(|r| r["result"]["period_frames"].as_u64().unwrap())
        .collect();
    assert_eq!(
        periods,
        [256, 128, 64][..periods.len()].to_vec(),
        "descending: {periods:?}"
    );
    let holds = |r: &Value| {
        r["status"] == "complete"
            && r["result"]["xruns"] == 0
            && r["result"]["skipped_cycles"] == 0
            && r["result"]["roundtrip_frames"]["count"].as_u64().unwrap() > 0
    };
    let first_fail = runs.iter().position(|r| !holds(r));
    let min = &v["min_buffer"];
    match first_fail {
        // The descent stops at the first failure.
        Some(i) => {
            assert_eq!(i, runs.len() - 1, "{v}");
            assert_eq!(min["first_failing"]["run_id"], runs[i]["run_id"]);
        }
        None => {
            assert_eq!(runs.len(), 3);
            assert!(min["first_failing"].is_null());
        }
    }
    let held = first_fail.unwrap_or(runs.len());
    if held > 0 {
        let last = &runs[held - 1];
        assert_eq!(min["smallest_holding"]["run_id"], last["run_id"], "{v}");
        // On the virtual card the round trip is exactly its buffer plus a period.
        let p = last["result"]["period_frames"].as_f64().unwrap();
        let rt = min["smallest_holding"]["roundtrip_frames"]
            .as_f64()
            .unwrap();
        assert!((rt - 3.0 * p).abs() < 0.05, "{v}");
    } else {
        assert!(min["smallest_holding"].is_null());
    }
    let out = run(
        &db,
        &["roundtrip", "--find-min-buffer", "--load", "none,cpu"],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("one load"), "{}", out.stderr);
}

/// The network-audio probe end to end: both ends in one process over loopback, stored
/// with the study's figure (response time against the 1.4059 ms deadline).
#[test]
fn net_runs_over_loopback_and_stores_the_response_time_against_the_deadline() {
    let _m = machine_lock();
    let dir = tempdir();
    let db = dir.path().join("net.db");
    let out = run_json(
        &db,
        &[
            "net",
            "--duration",
            "2s",
            "--reference",
            "1s",
            "--warmup",
            "500ms",
            "--json",
        ],
    );
    assert_eq!(out["status"], "complete", "{out}");
    let ms = out["measurements"].as_array().unwrap();
    let metric = |name: &str| {
        ms.iter()
            .find(|m| m["metric"] == name)
            .unwrap_or_else(|| panic!("{name} in {out}"))
    };
    let response = metric("response_time");
    assert_eq!(response["deadline"], 1_405_896.0);
    assert!(
        response["summary"]["count"].as_u64().unwrap() > 1000,
        "{response}"
    );
    assert!(response["misses"].as_u64().unwrap() <= response["summary"]["count"].as_u64().unwrap());
    for name in [
        "after_last_packet",
        "synth_time",
        "end_to_end",
        "pacing_error",
        "response_time_reference",
    ] {
        assert!(
            metric(name)["summary"]["count"].as_u64().unwrap() > 0,
            "{name}"
        );
    }
    let synth = &out["result"]["synth"];
    let c = &synth["controller"];
    // The two ends' books agree: what the host answered is what the controller got.
    let received = c["on_time"].as_u64().unwrap() + c["late"].as_u64().unwrap();
    assert!(
        synth["host"]["answered"]
            .as_u64()
            .unwrap()
            .abs_diff(received)
            <= 1,
        "{synth}"
    );
    // Stored: listed, and its per-block series exported.
    let runs = run(&db, &["runs"]);
    assert!(runs.stdout.contains("net"), "{}", runs.stdout);
    let series = run(&db, &["export", "last", "--format", "series"]);
    assert_eq!(series.code, 0, "{}", series.stderr);
    assert!(
        series.stdout.contains("response_time"),
        "{}",
        &series.stdout[..series.stdout.len().min(400)]
    );
    // Interference: an abusive UDP stream at the host and the video players. The flood
    // reaches the host and is dropped as foreign; the controller's blocks still balance.
    let out = run_json(
        &db,
        &[
            "net",
            "--duration",
            "1s",
            "--no-reference",
            "--warmup",
            "300ms",
            "--load",
            "flood:200+video",
            "--json",
        ],
    );
    assert_eq!(out["status"], "complete", "{out}");
    let synth = &out["result"]["synth"];
    assert!(
        synth["flood"]["datagrams"].as_u64().unwrap() > 1000,
        "{synth}"
    );
    assert!(
        synth["host"]["drops"]["foreign"].as_u64().unwrap() > 0,
        "{synth}"
    );
    assert!(out["result"]["reference"].is_null());
    let c = &synth["controller"];
    let received = c["on_time"].as_u64().unwrap() + c["late"].as_u64().unwrap();
    assert!(
        synth["host"]["answered"]
            .as_u64()
            .unwrap()
            .abs_diff(received)
            <= 1,
        "{synth}"
    );
    // A flood aimed at nothing is refused for the other probes.
    let out = run(&db, &["jitter", "--load", "flood"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("use them with audiolat net"),
        "{}",
        out.stderr
    );
}

/// True (after saying the test is skipped, and why) when this is not root.
fn not_root(why: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let not = unsafe { libc::geteuid() } != 0;
    if not {
        eprintln!("skipped: {why}");
    }
    not
}

/// Across two network namespaces joined by a veth pair (root only): the link is real,
/// the namespaces are gone afterwards.
#[test]
fn net_runs_across_two_network_namespaces_and_removes_them() {
    let _m = machine_lock();
    if not_root("network namespaces need root") {
        return;
    }
    require_tool("ip", "iproute2");
    let dir = tempdir();
    let db = dir.path().join("ns.db");
    let out = run_json(
        &db,
        &[
            "net",
            "--netns",
            "--duration",
            "1s",
            "--no-reference",
            "--warmup",
            "300ms",
            "--json",
        ],
    );
    assert_eq!(out["status"], "complete", "{out}");
    let c = &out["result"]["synth"]["controller"];
    assert!(c["on_time"].as_u64().unwrap() > 500, "{c}");
    let store = Store::open_existing(&db).unwrap();
    let stored = store.run(out["run_id"].as_i64().unwrap()).unwrap();
    assert!(
        stored.config["transport"]
            .as_str()
            .unwrap()
            .contains("veth"),
        "{}",
        stored.config
    );
    let left = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let left = String::from_utf8_lossy(&left.stdout);
    assert!(
        !left.contains("al-host-") && !left.contains("al-ctl-"),
        "left behind: {left}"
    );
}

#[test]
fn net_respond_and_emulate_talk_across_processes() {
    let _m = machine_lock();
    let dir = tempdir();
    let db = dir.path().join("ends.db");
    let mut host = spawn(
        &db,
        &[
            "net",
            "respond",
            "--bind",
            "127.0.0.1:19700",
            "--peer",
            "127.0.0.1:19701",
            "--duration",
            "4s",
            "--warmup",
            "200ms",
            "--json",
        ],
    );
    std::thread::sleep(Duration::from_millis(300));
    let emulate = run_json(
        &db,
        &[
            "net",
            "emulate",
            "--host",
            "127.0.0.1:19700",
            "--bind",
            "127.0.0.1:19701",
            "--duration",
            "2s",
            "--warmup",
            "200ms",
            "--json",
        ],
    );
    let status = wait_timeout(&mut host, Duration::from_secs(20));
    assert!(status.success(), "respond exited {status:?}");
    let r = &emulate["result"];
    assert!(r["blocks_sent"].as_u64().unwrap() > 2000, "{r}");
    // The host's own run agrees with what the controller received.
    let hosted = store_result(&db, "respond");
    let received = r["on_time"].as_u64().unwrap() + r["late"].as_u64().unwrap();
    assert!(
        hosted["answered"].as_u64().unwrap().abs_diff(received) <= 2,
        "host {hosted} against controller {r}"
    );
    // Loopback answers everything it is sent at this rate.
    assert!(
        r["lost"].as_u64().unwrap() * 100 <= r["blocks_sent"].as_u64().unwrap(),
        "{r}"
    );
    // Nothing answers: the controller says so instead of a number.
    let out = run(
        &db,
        &[
            "net",
            "emulate",
            "--host",
            "127.0.0.1:19702",
            "--bind",
            "127.0.0.1:19703",
            "--duration",
            "1s",
            "--warmup",
            "100ms",
        ],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("no answer from 127.0.0.1:19702"),
        "{}",
        out.stderr
    );
}

#[test]
fn net_bad_input_is_one_line_with_the_fix() {
    let _m = machine_lock();
    let dir = tempdir();
    let db = dir.path().join("bad.db");
    let held = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port().to_string();
    let in_use = format!("127.0.0.1:{port}");
    for (args, needle) in [
        (
            vec!["net", "respond", "--bind", in_use.as_str()],
            "the port is in use",
        ),
        (
            vec!["net", "respond", "--bind", "0.0.0.0:19710"],
            "give --peer",
        ),
        (
            vec!["net", "--workers", "1000"],
            "would spin against each other",
        ),
        (
            vec!["net", "--host-cpus", "999"],
            "is not online; this machine has CPUs",
        ),
        (vec!["net", "--controller-cpus", ""], "is empty"),
        (vec!["net", "--pads", "33"], "0 to 32 pads"),
        (vec!["net", "--pressure", "2"], "from 0 to 1"),
        (vec!["net", "--policy", "deadline"], "use fifo, rr or other"),
        (vec!["net", "--priority", "0"], "1..99"),
        (
            vec!["net", "emulate", "--host", "0.0.0.0:0"],
            "name the host's address",
        ),
    ] {
        let out = run(&db, &args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(needle), "{args:?}: {}", out.stderr);
        assert!(!db.exists(), "{args:?}: a refused run wrote the database");
    }
}

/// The stored result of the newest net run of `role`.
fn store_result(db: &std::path::Path, role: &str) -> Value {
    let store = Store::open_existing(db).unwrap();
    let runs = store.list_runs(&RunFilter::default()).unwrap();
    let run = runs
        .iter()
        .find(|r| r.config["role"] == role)
        .unwrap_or_else(|| panic!("no {role} run stored"));
    run.result.clone()
}

/// Cells and reservations that do not fit are refused before anything starts, with the
/// arithmetic; nothing is stored.
#[test]
fn net_refuses_cells_and_reservations_that_do_not_fit() {
    let dir = tempdir();
    let db = dir.path().join("admission.db");
    let online = engine::rt::online_cpus();
    let all = online
        .iter()
        .map(|c| format!("--cell=c{c}=dedicated:cpus={c}"))
        .collect::<Vec<_>>();
    let mut cases: Vec<(Vec<String>, &str)> = vec![
        (all, "over by 1 CPU"),
        (
            vec![
                "--cell=tt=time-triggered:runtime=900us,period=1ms".into(),
                "--cell=et=event-triggered:runtime=900us,period=1ms".into(),
                format!("--cell=pad=time-triggered:runtime={}ms,period=1ms", 0),
            ],
            "",
        ),
        (vec!["--host-cell=nope".into()], "no such cell"),
        (vec!["--load=ep@nowhere".into()], "no such cell"),
        (
            vec![
                "--cell=dl=time-triggered:runtime=1ms,period=10ms".into(),
                "--load=cpu@dl".into(),
            ],
            "may not fork",
        ),
        // Each thread of a built-in load takes the cell's reservation: 4 x 0.6 CPU.
        (
            vec![
                "--cell=dl=event-triggered:runtime=6ms,period=10ms".into(),
                "--load=ep:4@dl".into(),
            ],
            "over by",
        ),
        (
            vec![
                "--link=1000".into(),
                "--reserve=2000".into(),
                "--reserve-by=mclock".into(),
            ],
            "exceeds --link 1000 Mbit/s by 1000 Mbit/s",
        ),
        (vec!["--link=300".into()], "add --netns"),
        (
            vec![
                "--link=300".into(),
                "--reserve-by=mclock".into(),
                "--cell=a=best-effort:bandwidth=200".into(),
                "--cell=b=best-effort:bandwidth=150".into(),
            ],
            "over by 50 Mbit/s",
        ),
        (vec!["--cell=x=dedicated".into()], "needs its CPUs"),
    ];
    // SCHED_DEADLINE over-commitment on the CPUs: 2 x 0.9 per CPU.
    let n = online.len();
    cases[1] = (
        (0..n + 1)
            .map(|i| format!("--cell=d{i}=event-triggered:runtime=900us,period=1ms"))
            .collect(),
        "over by",
    );
    for (args, says) in cases {
        let mut all: Vec<&str> = vec!["net", "--duration", "1s"];
        all.extend(args.iter().map(String::as_str));
        let out = run(&db, &all);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{args:?}: {}", out.stderr);
        assert_eq!(
            out.stderr.trim().lines().count(),
            1,
            "{args:?}: {}",
            out.stderr
        );
    }
    assert!(
        !db.exists()
            || Store::open_existing(&db)
                .unwrap()
                .list_runs(&RunFilter::default())
                .unwrap()
                .is_empty(),
        "a refused run was stored"
    );
}

/// `audiolat net experiment isolation`: four stored runs (alone and with video + EP,
/// without and with a dedicated cell), the study's Figure 7 beside ours, and the
/// machine's cpusets as found afterwards (root only).
#[test]
fn net_experiment_isolation_runs_the_four_cases_and_leaves_no_cpuset() {
    let _m = machine_lock();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || engine::rt::online_cpus().len() < 2 {
        eprintln!("skipped: cells need root and two CPUs");
        return;
    }
    let dir = tempdir();
    let db = dir.path().join("iso.db");
    let out = run_json(
        &db,
        &[
            "net",
            "experiment",
            "isolation",
            "--duration",
            "1s",
            "--warmup",
            "300ms",
            "--json",
        ],
    );
    let rows = out["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{out}");
    for r in rows {
        assert_eq!(r["status"], "complete", "{r}");
        assert!(r["blocks"].as_u64().unwrap() > 1000, "{r}");
        assert!(r["mean_ns"].as_f64().is_some_and(|m| m > 0.0), "{r}");
    }
    assert!(rows[2]["paper"].as_str().unwrap().contains("Fig. 7a"));
    let store = Store::open_existing(&db).unwrap();
    let run = store.run(rows[3]["run_id"].as_i64().unwrap()).unwrap();
    let cells = &run.qos_granted["cells"];
    assert_eq!(cells["cells"][0]["exclusive"], true, "{cells}");
    assert_eq!(run.qos_granted["cells_undone"], true);
    // The best-effort cell's loads never ran on the music cell's CPU.
    let music_cpu: usize = cells["cells"][0]["cpus"].as_str().unwrap().parse().unwrap();
    let others = &cells["cells"][1]["usage_ns_per_cpu"];
    assert_eq!(others[music_cpu], 0, "{cells}");
    let left: Vec<_> = std::fs::read_dir("/sys/fs/cgroup/cpuset")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("audiolat-"))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// A reservation by the user-level mClock service, end to end from the command line:
/// the stream and the service's counters are stored (root only: namespaces).
#[test]
fn net_keeps_a_builtin_load_in_a_deadline_cell_to_its_share() {
    let _m = machine_lock();
    if not_root("SCHED_DEADLINE needs root") {
        return;
    }
    let dir = tempdir();
    let db = dir.path().join("dl.db");
    // EP never sleeps: only the kernel's CBS holds each of its two threads to
    // 2 ms per 10 ms, 0.4 CPU together.
    let out = run_json(
        &db,
        &[
            "net",
            "--cell",
            "ep=event-triggered:runtime=2ms,period=10ms",
            "--load",
            "ep:2@ep",
            "--duration",
            "2s",
            "--no-reference",
            "--warmup",
            "300ms",
            "--json",
        ],
    );
    assert_eq!(out["status"], "complete", "{out}");
    let exported = run(&db, &["export", "last"]);
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    let run_record = &serde_json::from_str::<serde_json::Value>(&exported.stdout).unwrap()["run"];
    let cell = &run_record["qos_granted"]["cells"]["cells"][0];
    assert_eq!(cell["name"], "ep", "{run_record}");
    assert!(
        cell["policy"]
            .as_str()
            .unwrap()
            .starts_with("SCHED_DEADLINE"),
        "{cell}"
    );
    // The kernel's accounting of the cell against its share over the run, which the
    // load's whole life lies within: never more (a tenth for the CBS's per-tick
    // overrun, paid back the next period), and it did run under the reservation.
    let used_s = cell["usage_ns"].as_f64().unwrap() / 1e9;
    let run_s = run_record["duration_s"].as_f64().unwrap();
    let share = 2.0 * 2.0 / 10.0;
    assert!(
        used_s <= share * run_s * 1.1,
        "the cell used {used_s:.3} s of CPU in {run_s:.3} s: over its {share} CPU"
    );
    assert!(
        used_s >= share * 2.0 * 0.25,
        "the cell used only {used_s:.3} s of CPU in {run_s:.3} s"
    );
}

#[test]
fn net_reserves_bandwidth_with_mclock_beside_an_abusive_stream() {
    let _m = machine_lock();
    if not_root("network namespaces need root") {
        return;
    }
    require_tool("ip", "iproute2");
    let dir = tempdir();
    let db = dir.path().join("bw.db");
    let out = run_json(
        &db,
        &[
            "net",
            "--netns",
            "--link",
            "300",
            "--reserve",
            "240",
            "--reserve-by",
            "mclock",
            "--load",
            "stream",
            "--duration",
            "1s",
            "--no-reference",
            "--warmup",
            "300ms",
            "--json",
        ],
    );
    assert_eq!(out["status"], "complete", "{out}");
    let synth = &out["result"]["synth"];
    assert_eq!(synth["service"]["discipline"], "mclock", "{synth}");
    assert!(synth["stream"]["sent"].as_u64().unwrap() > 1000, "{synth}");
    let audio = &synth["service"]["flows"][0];
    assert!(audio["by_reservation"].as_u64().unwrap() > 1000, "{audio}");
}

/// A plan over two backends and two periods, with repeats, on private dummy servers.
const RESUMABLE_PLAN: &str = r#"
name = "resumable"
probe = "event"
repeats = 2

[set]
triggers = 15
spacing = "40ms"
note = "10ms"
rate = 44100
server = "dummy"

[sweep]
period = [128, 64]
backend = ["alsa", "jack"]

[[report.table]]
title = "mean latency (ms)"
value = "event_latency.mean"
scale = 1e-6
rows = ["period"]
columns = ["backend"]
"#;

fn plan_cells(db: &std::path::Path, group: i64) -> Vec<results::PlanCell> {
    Store::open_existing(db).unwrap().plan_cells(group).unwrap()
}

/// Interrupted after some cells, the plan resumes and ends with every cell stored
/// exactly once: one complete run per cell, the interrupted cell run again, the cells
/// already complete not run again. One private server per period, in period order, and
/// no server left behind.
#[test]
fn a_plan_interrupted_mid_way_resumes_and_stores_every_cell_exactly_once() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let dir = tempdir();
    let db = dir.path().join("plan.db");
    let plan = dir.path().join("resumable.toml");
    std::fs::write(&plan, RESUMABLE_PLAN).unwrap();
    let mut child = spawn(&db, &["run", plan.to_str().unwrap()]);
    // Wait until three cells are complete, then Ctrl-C.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "cells did not complete"
        );
        std::thread::sleep(Duration::from_millis(100));
        let Ok(store) = Store::open_existing(&db) else {
            continue;
        };
        let Ok(cells) = store.plan_cells(1) else {
            continue;
        };
        let complete = cells
            .iter()
            .filter(|c| c.status == Some(RunStatus::Complete))
            .count();
        if complete >= 3 {
            break;
        }
    }
    // SAFETY: signalling our own child. A terminal's Ctrl-C reaches the runner alone
    // (each cell runs in its own process group), which passes it on to its cell.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_timeout(&mut child, Duration::from_secs(60));
    let mut stdout = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut stdout).unwrap();
    assert_eq!(status.code(), Some(130), "{stdout}");
    assert!(stdout.contains("--resume 1"), "{stdout}");
    let store = Store::open_existing(&db).unwrap();
    assert_eq!(store.group_status(1).unwrap().1, RunStatus::Interrupted);
    let before = plan_cells(&db, 1);
    assert_eq!(before.len(), 8);
    let complete_before: BTreeMap<String, i64> = before
        .iter()
        .filter(|c| c.status == Some(RunStatus::Complete))
        .map(|c| (c.key.clone(), c.run_id.unwrap()))
        .collect();
    assert!(complete_before.len() >= 3 && complete_before.len() < 8);
    // The cell that was running when Ctrl-C came closed its run as interrupted, with what
    // it had measured (unless Ctrl-C came before it began one), and no run was left
    // `running`.
    for c in before
        .iter()
        .filter(|c| c.status == Some(RunStatus::Interrupted))
    {
        if let Some(id) = c.run_id {
            assert_eq!(
                store.run(id).unwrap().status,
                RunStatus::Interrupted,
                "{}",
                c.key
            );
        }
    }
    assert!(store
        .list_runs(&RunFilter {
            status: Some(RunStatus::Running),
            ..Default::default()
        })
        .unwrap()
        .is_empty());

    let out = run(&db, &["run", plan.to_str().unwrap(), "--resume", "--quiet"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("8 of 8 cells complete"),
        "{}",
        out.stdout
    );
    let after = plan_cells(&db, 1);
    assert_eq!(after.len(), 8, "no cell added");
    let keys: std::collections::BTreeSet<&str> = after.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(keys.len(), 8, "each cell once");
    for c in &after {
        assert_eq!(c.status, Some(RunStatus::Complete), "{}", c.key);
        let run = store.run(c.run_id.unwrap()).unwrap();
        assert_eq!(run.status, RunStatus::Complete, "{}", c.key);
        assert_eq!(run.group_id, Some(1));
        if let Some(id) = complete_before.get(&c.key) {
            // Complete cells were not run again.
            assert_eq!(c.run_id, Some(*id), "{}", c.key);
            assert_eq!(c.attempts, 1, "{}", c.key);
        }
    }
    let runs = store
        .list_runs(&RunFilter {
            group_id: Some(1),
            probe: Some("event".into()),
            ..Default::default()
        })
        .unwrap();
    let complete_runs = runs
        .iter()
        .filter(|r| r.status == RunStatus::Complete)
        .count();
    assert_eq!(complete_runs, 8, "one complete run per cell");
    // The cells ran on the plan's servers, one per period: 128 first (the plan's order).
    let mut periods = Vec::new();
    for c in &after {
        let r = store.run(c.run_id.unwrap()).unwrap();
        assert!(
            r.command_line
                .contains("--server external --server-name audiolat-dummy"),
            "{}",
            r.command_line
        );
        periods.push(r.config["period_frames"].as_u64().unwrap());
    }
    assert_eq!(periods, [128, 128, 128, 128, 64, 64, 64, 64]);
    assert!(jackd_pids("audiolat-dummy").is_empty(), "no server left");
    assert_eq!(store.group_status(1).unwrap().1, RunStatus::Complete);
    // The end of the plan printed its table and wrote its report.
    assert!(out.stdout.contains("mean latency (ms)"), "{}", out.stdout);
    assert!(dir.path().join("audiolat-report-plan-1.html").is_file());
    // Resuming a finished plan has nothing to continue.
    let again = run(&db, &["run", plan.to_str().unwrap(), "--resume"]);
    assert_eq!(again.code, 2, "{}", again.stderr);
    assert!(
        again.stderr.contains("no unfinished plan run"),
        "{}",
        again.stderr
    );
}

/// Malformed plans are refused before anything runs (no database is made), on one line
/// naming the file, line and column, and the fix.
#[test]
fn a_malformed_plan_is_refused_with_its_file_line_and_fix_before_anything_runs() {
    let dir = tempdir();
    let db = dir.path().join("never.db");
    let cases: [(&str, &str, &str, &str); 6] = [
        (
            "name = \"x\"\nprobe = \"event\"\n[sweep]\nbakend = [\"alsa\"]\n",
            ":4:1:",
            "`bakend` is not a flag of `audiolat event`",
            "did you mean `backend`",
        ),
        (
            "name = \"x\"\nprobe = \"event\"\nrepeats = \"3\"\n",
            ":3:11:",
            "`repeats` must be a whole number",
            "repeats = 5",
        ),
        (
            "name = \"x\"\nprobe = \"event\"\n[sweep]\nperiod = []\n",
            ":4:10:",
            "axis `period` is empty",
            "at least one value",
        ),
        (
            "name = \"x\"\nprobe = \"event\"\n[set]\nserver = \"dummy\"\n[sweep]\nbackend = [\"alsa\", \"jack\"]\nbuffer = [\n  { label = \"2\", periods = 2 },\n  { label = \"4\", periods = 4 },\n]\n",
            ":9:3:",
            "cell backend=jack buffer=4 repeat=1 cannot run: --periods sets an ALSA or virtual buffer",
            "[[exclude]]",
        ),
        (
            "name = \"x\"\nprobe = \"event\"\n[set]\nserver = \"dummy\"\n[sweep]\nperiod = [64, 100]\n",
            ":6:15:",
            "cell period=100 repeat=1 cannot run",
            "[[exclude]]",
        ),
        (
            "name = \"x\"\nprobe = \"event\"\n[set]\nload = \"top,none\"\n",
            ":4:8:",
            "would make 2 runs",
            "",
        ),
    ];
    for (i, (text, at, what, fix)) in cases.iter().enumerate() {
        let plan = dir.path().join(format!("bad{i}.toml"));
        std::fs::write(&plan, text).unwrap();
        let out = run(&db, &["run", plan.to_str().unwrap()]);
        assert_eq!(out.code, 2, "{text}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        let expected = format!("{}{at}", plan.display());
        assert!(
            out.stderr.contains(&expected),
            "{expected} in {}",
            out.stderr
        );
        assert!(out.stderr.contains(what), "{what} in {}", out.stderr);
        assert!(out.stderr.contains("; fix: "), "{}", out.stderr);
        assert!(out.stderr.contains(fix), "{fix} in {}", out.stderr);
        assert!(!db.exists(), "nothing was stored for {text}");
    }
    let out = run(&db, &["run", "/nonexistent/plan.toml"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("cannot read plan"), "{}", out.stderr);
    let out = run(&db, &["reproduce", "bbb2015"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("bbb2014"), "{}", out.stderr);
    assert!(!db.exists());
}

/// The presets print as plans that run as files, and the BeagleBone preset has the
/// study's matrix: both backends, the buffer/period pairs, scenarios and O1-O3.
#[test]
fn the_bbb2014_preset_prints_as_a_plan_and_lays_out_the_studys_matrix() {
    require_tool("top", "procps");
    let dir = tempdir();
    let db = dir.path().join("p.db");
    let printed = run(&db, &["reproduce", "bbb2014", "--quick", "--print"]);
    assert_eq!(printed.code, 0, "{}", printed.stderr);
    assert!(printed.stdout.contains("[published.fig4]"));
    let file = dir.path().join("bbb.toml");
    std::fs::write(&file, &printed.stdout).unwrap();
    let from_file = run(&db, &["run", file.to_str().unwrap(), "--dry-run"]);
    let preset = run(&db, &["reproduce", "bbb2014", "--quick", "--dry-run"]);
    assert_eq!(from_file.code, 0, "{}", from_file.stderr);
    assert_eq!(preset.code, 0, "{}", preset.stderr);
    // The same cells whether run by name or from the printed file.
    let cells = |s: &str| {
        s.lines()
            .filter(|l| l.contains("backend="))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(cells(&from_file.stdout), cells(&preset.stdout));
    let all = cells(&preset.stdout);
    // 12 ALSA pairs and 3 JACK pairs (two periods per buffer) x 3 scenarios x 3 levels.
    assert_eq!(all.len(), (12 + 3) * 3 * 3, "{}", preset.stdout);
    for needle in [
        "backend=alsa buffer=512/64 profile=opt2 scenario=Mon+bgdproc.",
        "backend=jack buffer=512/256 profile=opt3 scenario=Polyphonic",
    ] {
        assert!(all.iter().any(|c| c.contains(needle)), "{needle}");
    }
    assert!(!all
        .iter()
        .any(|c| c.contains("/8 ") || c.contains("--period 8 ")));
    assert!(!db.exists(), "--dry-run and --print store nothing");
}

/// Headless Chromium, as a user's browser would show a report.
fn chromium() -> std::path::PathBuf {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|n| load::find_in_path(n))
        .expect("chromium is not installed: apt install chromium (the README's test command does)")
}

fn run_chromium(args: &[&str]) -> std::process::Output {
    std::process::Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("running chromium")
}

/// A plan's report is one self-contained HTML file that a browser loads without errors
/// or fetching anything, showing the plan's table with its headers, the plots as SVG,
/// the runs with their validity flags and the machine; its screenshot is not blank.
#[test]
fn the_html_report_renders_in_headless_chromium_with_its_tables_and_plots() {
    let dir = tempdir();
    let db = dir.path().join("r.db");
    let plan = dir.path().join("virtual.toml");
    std::fs::write(
        &plan,
        r#"
name = "report-check"
title = "Report check: virtual card"
probe = "event"
repeats = 2
[set]
backend = "virtual"
triggers = 12
spacing = "20ms"
note = "5ms"
[sweep]
period = [64, 256]
workload = ["sine", "poly"]
[[report.table]]
title = "Mean latency by period and workload (ms)"
value = "event_latency.mean"
scale = 1e-6
rows = ["period"]
columns = ["workload"]
published = "made_up"
[published.made_up]
caption = "numbers to show beside ours"
rows = { "64" = [1.5, 1.6], "256" = [5.5, "-"] }
"#,
    )
    .unwrap();
    let out = run(&db, &["run", plan.to_str().unwrap(), "--no-report", "-q"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let html = dir.path().join("report.html");
    let out = run(&db, &["report", "group:1", "-o", html.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("report.html"), "{}", out.stdout);
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(!text.contains("src=\"http") && !text.contains("href=\"http"));

    let url = format!("file://{}", html.display());
    let dom = run_chromium(&["--dump-dom", &url]);
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let dom_text = String::from_utf8_lossy(&dom.stdout);
    let log = String::from_utf8_lossy(&dom.stderr);
    for bad in [
        "Uncaught",
        "net::ERR_",
        "Failed to load resource",
        "Refused to",
    ] {
        assert!(!log.contains(bad), "the page logged `{bad}`: {log}");
    }
    // The paper-shaped table, its headers and the published value beside ours.
    assert!(dom_text.contains("Mean latency by period and workload (ms)"));
    assert!(
        dom_text.contains("<table class=\"paper\">"),
        "no paper table"
    );
    for header in [">period<", ">sine<", ">poly<"] {
        assert!(dom_text.contains(header), "header {header} missing");
    }
    assert!(dom_text.contains("class=\"published\""));
    // Plots: inline SVG drawn by the plotting library, one with a log count axis.
    assert!(dom_text.matches("<svg").count() >= 3, "plots missing");
    assert!(dom_text.contains("count (log)"));
    // Runs with validity flags, and the machine with doctor's findings.
    assert!(dom_text.contains("memory locked") && dom_text.contains("realtime"));
    assert!(dom_text.contains("Doctor's findings"));

    let shot = dir.path().join("shot.png");
    let out = run_chromium(&[
        &format!("--screenshot={}", shot.display()),
        "--window-size=1200,1600",
        &url,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let decoder = png::Decoder::new(std::fs::File::open(&shot).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let pixels = buf[..info.buffer_size()].chunks(channels);
    let total = pixels.len();
    let inked = pixels.filter(|p| p[..3].iter().any(|&c| c < 200)).count();
    assert!(
        inked * 100 > total,
        "the screenshot is blank: {inked} of {total} pixels have ink"
    );
}

/// `compare` puts two plan runs side by side: a change far beyond the repeats' spread
/// exceeds the noise, a plan run against itself is within it, and two single runs have
/// no noise estimate.
#[test]
fn compare_says_whether_a_change_exceeds_the_noise_of_the_repeats() {
    let dir = tempdir();
    let db = dir.path().join("c.db");
    let plan = |period: u32| {
        let p = dir.path().join(format!("p{period}.toml"));
        std::fs::write(
            &p,
            format!(
                "name = \"cmp{period}\"\nprobe = \"event\"\nrepeats = 3\n[set]\nbackend = \"virtual\"\nperiod = {period}\ntriggers = 12\nspacing = \"20ms\"\nnote = \"5ms\"\n[sweep]\nworkload = [\"sine\"]\n"
            ),
        )
        .unwrap();
        let out = run(&db, &["run", p.to_str().unwrap(), "--no-report", "-q"]);
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    };
    plan(64); // group 1
    plan(1024); // group 2
    let v = run_json(&db, &["compare", "group:1", "group:2", "--json"]);
    let rows = v["rows"].as_array().unwrap();
    let mean = rows
        .iter()
        .find(|r| r["metric"] == "event_latency" && r["statistic"] == "mean")
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(mean["configuration"], "event workload=sine");
    assert_eq!(mean["runs"], serde_json::json!([3, 3]));
    // 960 more frames of period at 48 kHz: the buffer alone adds 40 ms.
    assert!(mean["delta"].as_f64().unwrap() > 20e6, "{mean}");
    assert_eq!(mean["verdict"], "exceeds noise", "{mean}");
    let same = run_json(&db, &["compare", "group:1", "group:1", "--json"]);
    for r in same["rows"].as_array().unwrap() {
        assert_eq!(r["verdict"], "within noise", "{r}");
    }
    let text = run(&db, &["compare", "2", "6"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(text.stdout.contains("noise unknown"), "{}", text.stdout);
    // The groups list gives the ids `report` and `compare` take.
    let groups = run_json(&db, &["runs", "--groups", "--json"]);
    let groups = groups.as_array().unwrap();
    assert_eq!(groups.len(), 2, "{groups:?}");
    assert_eq!(groups[0]["id"], 2);
    assert_eq!(groups[0]["kind"], "plan");
    assert_eq!(groups[0]["name"], "cmp1024");
    assert_eq!(
        groups[0]["cells"],
        serde_json::json!({"complete": 3, "total": 3})
    );
    let bad = run(&db, &["compare", "group:99", "1"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("no group with id 99"), "{}", bad.stderr);
}

/// Whether /proc/asound lists a sound card (CI's machines have none).
fn has_sound_card() -> bool {
    std::fs::read_to_string("/proc/asound/cards").is_ok_and(|t| {
        t.lines()
            .any(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// `audiolat devices` here: no sound card on CI's machines (it says so, and still lists
/// the private JACK server, ALSA's jack PCM and the virtual card), and a JACK server this
/// test starts is listed with its rate, period and ports, and the flags that use it.
#[test]
fn devices_lists_what_can_be_measured_here() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let dir = tempdir();
    let db = dir.path().join("devices.db");
    let has_card = has_sound_card();
    let out = run(&db, &["devices"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for flags in ["--backend virtual", "--backend jack"] {
        assert!(
            out.stdout.lines().any(|l| l.trim() == flags),
            "{flags}:\n{}",
            out.stdout
        );
    }
    let v = run_json(&db, &["devices", "--json"]);
    let cards = v["alsa"]["cards"].as_array().expect("a list of cards");
    if !has_card {
        assert!(out.stdout.contains("no sound card"), "{}", out.stdout);
        assert!(cards.is_empty(), "{v}");
        let args = util::suggested_args(&v);
        assert!(args.contains(&"--backend alsa --device jack"), "{args:?}");
    }
    for s in v["suggestions"].as_array().unwrap() {
        assert!(s["args"].as_str().unwrap().starts_with("--backend "), "{s}");
        assert!(!s["probes"].as_array().unwrap().is_empty(), "{s}");
    }
    assert!(v["servers"]["pipewire"]["running"].is_boolean(), "{v}");

    // A JACK server: listed with what it runs and its physical ports.
    let name = unique_server("devices");
    let jackd = std::process::Command::new("jackd")
        .args(["-n", &name, "-d", "dummy", "-r", "48000", "-p", "256"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut jackd = util::KillOnDrop(jackd);
    let ready = std::process::Command::new("jack_wait")
        .args(["-s", &name, "-w", "-t", "10"])
        .output()
        .unwrap();
    assert!(ready.status.success(), "jackd {name} did not come up");
    let v = run_json(&db, &["devices", "--json"]);
    let server = v["servers"]["jack"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name.as_str())
        .unwrap_or_else(|| panic!("{name} is not listed: {v}"));
    assert_eq!(server["answers"], true, "{server}");
    assert_eq!(server["rate_hz"], 48000, "{server}");
    assert_eq!(server["period_frames"], 256, "{server}");
    assert_eq!(
        server["pid"].as_u64(),
        Some(u64::from(jackd.id())),
        "{server}"
    );
    assert_eq!(
        server["playback_ports"],
        serde_json::json!(["system:playback_1", "system:playback_2"])
    );
    assert_eq!(
        server["capture_ports"],
        serde_json::json!(["system:capture_1", "system:capture_2"])
    );
    let args = util::suggested_args(&v);
    let external = format!("--backend jack --server external --server-name {name}");
    assert!(args.contains(&external.as_str()), "{args:?}");
    let text = run(&db, &["devices"]).stdout;
    assert!(
        text.contains(&format!("JACK `{name}`")) && text.contains("system:playback_1"),
        "{text}"
    );
    // The flags it gives work: an event run on that server.
    let mut flags: Vec<&str> = vec!["event"];
    flags.extend(external.split(' '));
    flags.extend(["--triggers", "3", "--quiet"]);
    let out = run(&db, &flags);
    assert_eq!(out.code, 0, "{flags:?}: {}", out.stderr);
    // SAFETY: a clean stop (SIGTERM) of the jackd this test started.
    unsafe { libc::kill(jackd.id() as i32, libc::SIGTERM) };
    let _ = jackd.0.wait();
    // Listing stores nothing.
    let other = dir.path().join("untouched.db");
    assert_eq!(run(&other, &["devices"]).code, 0);
    assert!(!other.exists(), "devices wrote a database");
}

/// Runs `audiolat --db db args` and checks it refused with exit 2 and one line that names
/// the database, carries `needle`, and repeats no raw SQLite error.
fn refused_in_one_line(db: &std::path::Path, args: &[&str], needle: &str) {
    let out = run(db, args);
    assert_eq!(out.code, 2, "{args:?}: {}{}", out.stdout, out.stderr);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: {}", out.stderr);
    assert!(lines[0].contains(&db.display().to_string()), "{}", lines[0]);
    assert!(lines[0].contains(needle), "{args:?}: {}", lines[0]);
    assert!(!lines[0].contains("Error code"), "{}", lines[0]);
}

#[test]
fn a_database_that_is_not_audiolats_is_refused_and_never_changed() {
    let dir = tempdir();
    let db = dir.path().join("other.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine');")
        .unwrap();
    drop(conn);
    let before = std::fs::read(&db).unwrap();
    for args in [
        &["runs"][..],
        &["show", "last"],
        &["export", "last", "--format", "csv"],
        &["compare", "1", "2"],
        &["jitter", "-D", "100ms", "-q"],
    ] {
        refused_in_one_line(&db, args, "not an audiolat results database");
    }
    assert_eq!(std::fs::read(&db).unwrap(), before, "the file was changed");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["other.db"], "nothing made beside it");
    // Read-only commands create nothing where there is no database.
    let none = dir.path().join("none.db");
    for args in [&["runs"][..], &["show", "last"], &["report", "last"]] {
        let out = run(&none, args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("no results database"), "{}", out.stderr);
        assert!(!none.exists());
    }
}

#[test]
fn open_time_failures_are_exit_2_in_one_line_with_the_fix() {
    let _m = machine_lock();
    let dir = tempdir();
    refused_in_one_line(dir.path(), &["runs"], "it is a directory");
    refused_in_one_line(
        dir.path(),
        &["jitter", "-D", "100ms", "-q"],
        "it is a directory",
    );
    // A corrupt page deep in a good file: the open succeeds, the query finds it.
    let db = dir.path().join("c.db");
    for _ in 0..3 {
        assert_eq!(run(&db, &["jitter", "-D", "100ms", "-q"]).code, 0);
    }
    let mut bytes = std::fs::read(&db).unwrap();
    assert!(bytes.len() >= 4 * 4096);
    let tail = bytes.len() - 4096;
    bytes[tail..].fill(0x5a);
    bytes[2 * 4096..3 * 4096].fill(0x5a);
    std::fs::write(&db, &bytes).unwrap();
    for args in [
        &["runs"][..],
        &["show", "last"],
        &["jitter", "-D", "100ms", "-q"],
    ] {
        refused_in_one_line(&db, args, "damaged");
    }
    // A full filesystem, for a command that records runs.
    let Some(fs) = util::Tmpfs::mount(1024) else {
        eprintln!("skipped the full filesystem: it needs root to mount a tmpfs");
        return;
    };
    fs.fill_leaving(0);
    let full = fs.path().join("full.db");
    refused_in_one_line(
        &full,
        &["jitter", "-D", "100ms", "-q"],
        "filesystem is full",
    );
    assert!(!full.exists());
}

#[test]
fn read_only_commands_read_a_database_on_a_read_only_mount() {
    let _m = machine_lock();
    let Some(fs) = util::Tmpfs::mount(8 * 1024) else {
        eprintln!("skipped: it needs root to mount a tmpfs read-only");
        return;
    };
    let db = fs.path().join("ro.db");
    assert_eq!(run(&db, &["jitter", "-D", "200ms", "-q"]).code, 0);
    fs.make_read_only();
    let runs = run_json(&db, &["runs", "--json"]);
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    let shown = run_json(&db, &["show", "last", "--json"]);
    assert_eq!(shown["run"]["status"], "complete", "{shown}");
    let out = run(&db, &["export", "last", "--format", "csv"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = tempdir();
    let html = report.path().join("r.html");
    let out = run(&db, &["report", "last", "-o", html.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // A command that records runs says why it cannot, in one line.
    refused_in_one_line(&db, &["jitter", "-D", "100ms", "-q"], "not writable");
}

#[test]
fn first_runs_racing_to_create_one_database_all_succeed() {
    let _m = machine_lock();
    for round in 0..3 {
        let dir = tempdir();
        let db = dir.path().join("new.db");
        let children: Vec<_> = (0..4)
            .map(|_| util::KillOnDrop(spawn(&db, &["jitter", "-D", "100ms", "-q", "--json"])))
            .collect();
        for mut c in children {
            let status = wait_timeout(&mut c.0, Duration::from_secs(60));
            let mut stderr = String::new();
            std::io::Read::read_to_string(c.0.stderr.as_mut().unwrap(), &mut stderr).unwrap();
            assert!(status.success(), "round {round}: {stderr}");
        }
        let runs = run_json(&db, &["runs", "--json"]);
        assert_eq!(
            runs.as_array().map(Vec::len),
            Some(4),
            "round {round}: {runs}"
        );
    }
}

/// Polls `db` read-only (a read-write open would close a dead process's runs itself)
/// until `ready` says so.
fn poll_read_only(db: &std::path::Path, what: &str, ready: impl Fn(&Store) -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        assert!(std::time::Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(100));
        if let Ok(store) = Store::open_read_only(db) {
            if ready(&store) {
                return;
            }
        }
    }
}

#[test]
fn a_killed_event_run_is_summarised_from_its_stored_triggers_on_the_next_open() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let dir = tempdir();
    let db = dir.path().join("k.db");
    let name = unique_server("sigkill");
    let child = util::KillOnDrop(spawn(
        &db,
        &[
            "event",
            "--server",
            "dummy",
            "--server-name",
            &name,
            "--triggers",
            "80",
            "-q",
        ],
    ));
    poll_read_only(&db, "no triggers were stored", |s| {
        s.last_run_id()
            .ok()
            .flatten()
            .is_some_and(|id| s.triggers(id).map_or(0, |t| t.len()) >= 10)
    });
    kill_with_its_server(child, &name);
    let stored = Store::open_read_only(&db).unwrap();
    let run_id = stored.last_run_id().unwrap().unwrap();
    let rows = stored.triggers(run_id).unwrap();
    assert!(
        rows.len() >= 10 && rows.len() < 80,
        "{} triggers",
        rows.len()
    );
    assert_eq!(stored.run(run_id).unwrap().status, RunStatus::Running);
    drop(stored);
    // `show` (a read-only command) finds it left by a dead process, and it is closed
    // with what it stored summarised, as the live run would have.
    let shown = run_json(&db, &["show", &run_id.to_string(), "--json"]);
    assert_eq!(shown["run"]["status"], "interrupted", "{}", shown["run"]);
    let error = shown["run"]["error"].as_str().unwrap();
    assert!(
        error.contains("ended without closing the run") && error.contains("summarised"),
        "{error}"
    );
    let latency = shown["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "event_latency")
        .unwrap_or_else(|| panic!("no event_latency: {shown}"));
    let sounded = rows.iter().filter(|r| !r.missed).count();
    assert_eq!(
        latency["summary"]["count"].as_u64(),
        Some(sounded as u64),
        "{latency}"
    );
    let group = Store::open_read_only(&db)
        .unwrap()
        .run(run_id)
        .unwrap()
        .group_id
        .unwrap();
    let store = Store::open_read_only(&db).unwrap();
    assert_eq!(store.group_status(group).unwrap().1, RunStatus::Interrupted);
}

#[test]
fn a_killed_plan_run_leaves_no_group_or_cell_running() {
    let _m = machine_lock();
    let dir = tempdir();
    let db = dir.path().join("plan.db");
    let plan = dir.path().join("killed.toml");
    std::fs::write(
        &plan,
        "name = \"killed\"\nprobe = \"jitter\"\n\n[set]\nduration = \"60s\"\n",
    )
    .unwrap();
    let mut child = util::KillOnDrop(spawn(&db, &["run", plan.to_str().unwrap(), "--quiet"]));
    poll_read_only(&db, "the cell did not start its run", |s| {
        s.plan_cells(1)
            .is_ok_and(|c| c.first().is_some_and(|c| c.run_id.is_some()))
    });
    // SAFETY: killing the plan runner this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.0.wait();
    let cell_run = Store::open_read_only(&db).unwrap().plan_cells(1).unwrap()[0]
        .run_id
        .unwrap();
    // The cell's process goes with its runner.
    poll_read_only(&db, "the cell's process outlived its runner", |s| {
        s.run(cell_run).is_ok_and(|r| {
            // SAFETY: signal 0 only checks that the process exists.
            let gone = unsafe { libc::kill(r.pid as i32, 0) } != 0;
            r.status != RunStatus::Running || gone
        })
    });
    let out = run(&db, &["runs", "--groups", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let store = Store::open_read_only(&db).unwrap();
    let group = store.group(1).unwrap();
    assert_eq!(group.status, RunStatus::Interrupted);
    assert!(group.detail["end_reason"]
        .as_str()
        .unwrap()
        .contains("ended without closing"));
    let cell = &store.plan_cells(1).unwrap()[0];
    assert_eq!(cell.status, Some(RunStatus::Interrupted), "{cell:?}");
    assert!(cell.error.is_some());
    assert_ne!(store.run(cell_run).unwrap().status, RunStatus::Running);
}

#[test]
fn a_disk_filling_mid_run_keeps_what_was_measured_and_says_disk_full() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let Some(fs) = util::Tmpfs::mount(4 * 1024) else {
        eprintln!("skipped: it needs root to mount a small tmpfs");
        return;
    };
    let db = fs.path().join("full.db");
    let name = unique_server("diskfull");
    let args = [
        "event",
        "--server",
        "dummy",
        "--server-name",
        &name,
        "--triggers",
        "80",
        "--spacing",
        "30ms",
        "--note",
        "10ms",
        "-q",
        "--json",
    ];
    // The database and its reserve exist; then the filesystem keeps only enough for the
    // open (the run's trigger rows need more).
    assert_eq!(run(&db, &["jitter", "-D", "100ms", "-q"]).code, 0);
    fs.fill_leaving(320);
    let out = run(&db, &args);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let last = out.stderr.lines().last().unwrap_or_default();
    assert!(last.contains("disk full"), "{}", out.stderr);
    // What was measured is printed.
    let printed: Value =
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    let printed = &printed["runs"][0];
    assert_eq!(printed["status"], "failed", "{}", printed["error"]);
    assert_eq!(printed["result"]["triggers"], 80, "{}", printed["result"]);
    assert!(printed["result"]["latency_ms"]["count"].as_u64().unwrap() > 0);
    let store = Store::open_read_only(&db).unwrap();
    let run_id = store.last_run_id().unwrap().unwrap();
    let r = store.run(run_id).unwrap();
    assert_eq!(r.status, RunStatus::Failed);
    assert!(
        r.error.as_deref().unwrap().starts_with("disk full: "),
        "{:?}",
        r.error
    );
    let stored = store.triggers(run_id).unwrap().len();
    assert!(stored < 80, "the disk never filled ({stored} rows stored)");
    let ms = store.measurements(run_id).unwrap();
    let latency = ms
        .iter()
        .find(|m| m.measurement.metric == "event_latency")
        .expect("the summary is stored");
    // The summary is the whole run's, not only the rows the disk took.
    assert!(
        latency.measurement.count() as usize > stored,
        "{} in the summary, {stored} rows stored",
        latency.measurement.count()
    );
    assert!(jackd_pids(&name).is_empty());
}

/// The cells of `metric`'s row in a summary table (after the metric's name).
fn summary_row<'a>(text: &'a str, metric: &str) -> Vec<&'a str> {
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(metric))
        .unwrap_or_else(|| panic!("no {metric} row in:\n{text}"))
        .split_whitespace()
        .skip(1)
        .collect()
}

/// Every probe made to measure nothing (a round trip without a cable, an event run
/// stopped before its first trigger, a controller nobody answers, a host nobody sends
/// to, a jitter run of one cycle with no interval): `runs`, `show`, `show --json`, every
/// export and the HTML report say so (`-`, `null`, an empty cell) and never print 0 for
/// a statistic nobody measured.
#[test]
fn a_probe_that_measured_nothing_prints_no_made_up_zero() {
    let _m = machine_lock();
    let dir = tempdir();
    let db = dir.path().join("nothing.db");
    let ok = |args: &[&str], code: i32| {
        let out = run(&db, args);
        assert_eq!(out.code, code, "{args:?}: {}", out.stderr);
        out
    };
    // (run id, metric that measured nothing)
    let mut empty: Vec<(i64, &str)> = Vec::new();
    let last = |db: &std::path::Path| {
        Store::open_existing(db)
            .unwrap()
            .list_runs(&RunFilter::default())
            .unwrap()[0]
            .id
    };

    ok(&["jitter", "--loops", "1", "--quiet"], 0);
    empty.push((last(&db), "wakeup_interval"));
    let jitter = last(&db);

    ok(
        &[
            "roundtrip",
            "--backend",
            "virtual",
            "--no-cable",
            "--duration",
            "2s",
            "--quiet",
        ],
        0,
    );
    empty.push((last(&db), "roundtrip"));
    empty.push((last(&db), "roundtrip_impulse"));
    let roundtrip = last(&db);

    // The first trigger is due after the warm-up and 30 s: Ctrl-C comes long before.
    let mut ev = spawn(
        &db,
        &[
            "event",
            "--backend",
            "virtual",
            "--triggers",
            "5",
            "--spacing",
            "30s",
            "--quiet",
        ],
    );
    std::thread::sleep(Duration::from_millis(1_500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(ev.id() as i32, libc::SIGINT) };
    let status = wait_timeout(&mut ev, Duration::from_secs(30));
    assert_eq!(status.code(), Some(130), "event exited {status:?}");
    empty.push((last(&db), "event_latency"));
    let event = last(&db);

    // A controller nobody answers: every block is lost.
    ok(
        &[
            "net",
            "emulate",
            "--host",
            "127.0.0.1:19722",
            "--bind",
            "127.0.0.1:19723",
            "--duration",
            "1s",
            "--warmup",
            "100ms",
        ],
        1,
    );
    empty.push((last(&db), "end_to_end"));
    let emulate = last(&db);
    // A host nobody sends to: nothing answered.
    ok(
        &[
            "net",
            "respond",
            "--bind",
            "127.0.0.1:19724",
            "--peer",
            "127.0.0.1:19725",
            "--duration",
            "1s",
            "--warmup",
            "100ms",
        ],
        0,
    );
    empty.push((last(&db), "response_time"));
    empty.push((last(&db), "after_last_packet"));
    empty.push((last(&db), "synth_time"));
    let respond = last(&db);

    let store = Store::open_existing(&db).unwrap();
    for &(id, metric) in &empty {
        let m = store
            .measurements(id)
            .unwrap()
            .into_iter()
            .find(|m| m.measurement.metric == metric)
            .unwrap_or_else(|| panic!("run {id} has no {metric}"))
            .measurement;
        assert_eq!((m.count(), m.summary), (0, None), "run {id} {metric}");
    }
    // The controller's misses are counted against the blocks it sent, not 0 answers.
    let e2e = store.measurements(emulate).unwrap()[0].measurement.clone();
    let sent = e2e.detail["sent"].as_u64().unwrap();
    assert!(
        sent > 0 && e2e.misses == Some(sent),
        "{:?} {}",
        e2e.misses,
        e2e.detail
    );
    drop(store);

    // `runs`: the headline of a run that measured nothing is `-`, never 0.
    let runs = ok(&["runs"], 0).stdout;
    for id in [roundtrip, event, emulate, respond] {
        let row: Vec<&str> = runs
            .lines()
            .find(|l| l.split_whitespace().next() == Some(&id.to_string()))
            .unwrap_or_else(|| panic!("run {id} not listed:\n{runs}"))
            .split_whitespace()
            .collect();
        assert_eq!(row[row.len() - 3..], ["-", "-", "-"], "run {id}: {row:?}");
    }
    let listed = run_json(&db, &["runs", "--json"]);
    for r in listed.as_array().unwrap() {
        if r["id"] != jitter {
            assert_eq!(r["summary"]["count"], 0, "{r}");
            assert!(
                r["summary"]["p50"].is_null() && r["summary"]["max"].is_null(),
                "{r}"
            );
        }
    }

    for &(id, metric) in &empty {
        let id_text = id.to_string();
        // `show`: a count of 0 and `-` for every statistic.
        let shown = ok(&["show", &id_text], 0).stdout;
        let row = summary_row(&shown, metric);
        assert_eq!(row[0], "0", "{metric}: {row:?}");
        assert!(
            row[1..row.len() - 1].iter().all(|c| *c == "-"),
            "{metric}: {row:?}"
        );
        assert!(!shown.contains(" of 0 "), "{shown}");
        // `show --json` and `export --format json`: null.
        for args in [
            vec!["show", &id_text, "--json"],
            vec!["export", &id_text, "--format", "json"],
        ] {
            let v = run_json(&db, &args);
            let m = v["measurements"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["metric"] == metric)
                .unwrap();
            assert_eq!(m["summary"]["count"], 0, "{args:?}");
            for k in [
                "min", "mean", "stdev", "p50", "p90", "p99", "p99.9", "p99.99", "max",
            ] {
                assert!(m["summary"][k].is_null(), "{args:?} {metric}.{k}: {m}");
            }
        }
        // CSV: empty cells.
        let csv = ok(&["export", &id_text, "--format", "csv"], 0).stdout;
        let line = csv
            .lines()
            .find(|l| l.split(',').nth(2) == Some(metric))
            .unwrap_or_else(|| panic!("{metric} not in {csv}"));
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[4], "0", "{line}");
        assert!(cells[5..14].iter().all(|c| c.is_empty()), "{line}");
        // HDR log: no interval for a histogram without samples; a comment names it.
        let hdr = ok(&["export", &id_text, "--format", "hdr"], 0).stdout;
        assert!(!hdr.contains(&format!("Tag={metric},")), "{hdr}");
        assert!(
            hdr.contains("no samples, left out:") && hdr.contains(metric),
            "{hdr}"
        );
    }

    // cyclictest's format: jitter runs only, one line otherwise; no made-up statistics.
    for id in [roundtrip, event, emulate, respond] {
        let out = ok(&["export", &id.to_string(), "--format", "cyclictest"], 2);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(
            out.stderr.contains("exports jitter runs only"),
            "{}",
            out.stderr
        );
        assert!(out.stdout.is_empty());
    }
    let cy = ok(
        &["export", &jitter.to_string(), "--format", "cyclictest"],
        0,
    )
    .stdout;
    let parsed = parse_cyclictest_histogram(&cy);
    assert_eq!(parsed.total + parsed.overflows, 1, "{cy}");
    assert!(
        parsed.buckets.len() < 100_000,
        "{} lines",
        parsed.buckets.len()
    );
    // Triggers: an event run without any exports the header alone.
    let tr = ok(&["export", &event.to_string(), "--format", "triggers"], 0).stdout;
    assert_eq!(tr.lines().count(), 1, "{tr}");
    // Series: a window with no signal has no delay (an empty cell, not 0).
    let series = ok(&["export", &roundtrip.to_string(), "--format", "series"], 0).stdout;
    let mut lines = series
        .lines()
        .skip_while(|l| !l.starts_with("# roundtrip_windows"));
    let head: Vec<&str> = lines.nth(1).unwrap().split(',').collect();
    let delay = head.iter().position(|c| *c == "delay_frames").unwrap();
    let window: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(window[delay], "", "{series}");

    // The HTML report: the headline cells of those runs are `-`.
    let html_path = dir.path().join("r.html");
    let ids: Vec<String> = [roundtrip, event, emulate, respond]
        .iter()
        .map(i64::to_string)
        .collect();
    let mut args = vec!["report", "-o", html_path.to_str().unwrap()];
    args.extend(ids.iter().map(String::as_str));
    ok(&args, 0);
    let html = std::fs::read_to_string(&html_path).unwrap();
    for id in &ids {
        let row = html
            .split("<tr>")
            .find(|r| r.contains(&format!("<td>{id}</td>")))
            .unwrap_or_else(|| panic!("run {id} has no row in the report"));
        let cells: Vec<&str> = row.split("<td").skip(5).take(3).collect();
        assert!(
            cells.iter().all(|c| c.ends_with(">-</td>")),
            "run {id}: {cells:?}"
        );
    }
    for zero in [">0 ns<", ">0.0 ns<", ">0 us<", ">0.00 ms<"] {
        assert!(!html.contains(zero), "{zero} in the report");
    }
}

/// Every CPU list (`--cpu`, `--host-cpus`, `--controller-cpus`, `--cpus` of net's ends, a
/// cell's `cpus=` in a flag or a file, a plan's `cpu` under `--dry-run`) is checked
/// against the online CPUs without expanding its range: `0-99999999999` is refused at
/// once with one line, exit 2, and nothing stored.
#[test]
fn a_huge_cpu_range_is_refused_in_every_cpu_list_without_expanding_it() {
    let dir = tempdir();
    let db = dir.path().join("cpus.db");
    let huge = "0-99999999999";
    let online = engine::rt::format_cpu_list(&engine::rt::online_cpus());
    let says = format!("CPU 99999999999 is not online; this machine has CPUs {online}");
    let cells = dir.path().join("cells.toml");
    std::fs::write(
        &cells,
        format!("[cell.music]\nkind = \"dedicated\"\ncpus = \"{huge}\"\n"),
    )
    .unwrap();
    let jitter_plan = dir.path().join("jitter.toml");
    std::fs::write(
        &jitter_plan,
        format!("name = \"j\"\nprobe = \"jitter\"\n[set]\ncpu = \"{huge}\"\n"),
    )
    .unwrap();
    let net_plan = dir.path().join("net.toml");
    std::fs::write(
        &net_plan,
        format!("name = \"n\"\nprobe = \"net\"\n[set]\nhost-cpus = \"{huge}\"\n"),
    )
    .unwrap();
    let cell_flag = format!("music=dedicated:cpus={huge}");
    let cases: Vec<Vec<&str>> = vec![
        vec!["jitter", "--cpu", huge],
        vec!["net", "--host-cpus", huge],
        vec!["net", "--controller-cpus", huge],
        vec!["net", "--cell", &cell_flag],
        vec!["net", "--cells", cells.to_str().unwrap()],
        vec!["net", "respond", "--cpus", huge],
        vec!["net", "emulate", "--host", "127.0.0.1:9", "--cpus", huge],
        vec!["run", jitter_plan.to_str().unwrap(), "--dry-run"],
        vec!["run", net_plan.to_str().unwrap(), "--dry-run"],
    ];
    for args in &cases {
        let out = run(&db, args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(&says), "{args:?}: {}", out.stderr);
    }
    assert!(!db.exists(), "a refusal stored something");
}

/// The CPUs a new process may run on (its `Cpus_allowed_list`).
fn new_process_cpus() -> String {
    let out = std::process::Command::new("grep")
        .args(["Cpus_allowed_list", "/proc/self/status"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string()
}

fn root_load_balance() -> String {
    std::fs::read_to_string("/sys/fs/cgroup/cpuset/cpuset.sched_load_balance")
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Nothing of audiolat `pid` left: no cpuset, cpuacct group, namespace (and so no
/// qdisc), veth or state file.
fn assert_nothing_left_by(pid: u32) {
    let named = |dir: &str, prefix: &str| -> Vec<String> {
        std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with(prefix))
                    .collect()
            })
            .unwrap_or_default()
    };
    for (dir, prefix) in [
        ("/sys/fs/cgroup/cpuset", format!("audiolat-{pid}-")),
        ("/sys/fs/cgroup/cpuacct", format!("audiolat-{pid}-")),
        ("/sys/fs/cgroup", format!("audiolat-{pid}")),
        ("/run/audiolat", format!("cells-{pid}.")),
        ("/var/run/netns", format!("al-host-{pid}")),
        ("/var/run/netns", format!("al-ctl-{pid}")),
        ("/sys/class/net", format!("alh{pid}")),
        ("/sys/class/net", format!("alc{pid}")),
    ] {
        let left = named(dir, &prefix);
        assert!(left.is_empty(), "left in {dir}: {left:?}");
    }
}

/// Starts a net run with a dedicated cell, a best-effort cell, namespaces and a shaped
/// link, and waits until it has changed the machine (cpusets made, load balancing off,
/// namespaces and the qdisc there).
fn start_cells_and_netns_run(db: &std::path::Path) -> util::KillOnDrop {
    let child = util::KillOnDrop(spawn(
        db,
        &[
            "net",
            "--netns",
            "--cell",
            "music=dedicated:cpus=1",
            "--cell",
            "others=best-effort",
            "--host-cell",
            "music",
            "--link",
            "100",
            "--reserve",
            "20",
            "--duration",
            "30s",
            "--no-reference",
            "--warmup",
            "300ms",
            "--quiet",
        ],
    ));
    let pid = child.id();
    let start = std::time::Instant::now();
    loop {
        let qdisc = std::process::Command::new("tc")
            .args(["-n", &format!("al-ctl-{pid}"), "qdisc", "show"])
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("htb"));
        if qdisc
            && std::path::Path::new(&format!("/sys/fs/cgroup/cpuset/audiolat-{pid}-rest")).exists()
            && root_load_balance() == "0"
        {
            return child;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the net run never set up its cells and namespaces"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn cells_and_netns_possible() -> bool {
    if not_root("cells and namespaces need root") {
        return false;
    }
    if engine::rt::online_cpus().len() < 2
        || !std::path::Path::new("/sys/fs/cgroup/cpuset/cpuset.sched_load_balance").exists()
    {
        eprintln!("skipped: needs two CPUs and the cgroup v1 cpuset hierarchy");
        return false;
    }
    require_tool("ip", "iproute2");
    require_tool("tc", "iproute2");
    true
}

/// SIGKILL during a net run with cells and namespaces leaves the machine changed:
/// `doctor` says so (FAIL, with the fix), and the next measuring command undoes all of
/// it first and says so in one line: no cpuset, namespace, qdisc or state file left,
/// the root's load balancing and every new process's CPUs as they were.
#[test]
fn a_killed_runs_cpusets_namespaces_and_state_are_undone_by_the_next_measuring_command() {
    let _m = machine_lock();
    if !cells_and_netns_possible() {
        return;
    }
    let balance_before = root_load_balance();
    let cpus_before = new_process_cpus();
    let online = engine::rt::format_cpu_list(&engine::rt::online_cpus());
    assert_eq!(cpus_before, online);
    // A task pinned to CPU 1 is moved onto CPU 0 by the run; it gets CPU 1 back.
    let pinned = util::KillOnDrop(
        std::process::Command::new("taskset")
            .args(["-c", "1", "sleep", "120"])
            .spawn()
            .unwrap(),
    );
    let pinned_cpus = || {
        probes::cell::partition::task_affinity(pinned.id() as i32)
            .map(|a| engine::rt::format_cpu_list(&a))
    };
    let start = std::time::Instant::now();
    while pinned_cpus().as_deref() != Some("1")
        || std::fs::read_to_string(format!("/proc/{}/comm", pinned.id())).unwrap_or_default()
            != "sleep\n"
    {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "taskset did not pin"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let dir = tempdir();
    let db = dir.path().join("killed.db");
    let mut child = start_cells_and_netns_run(&db);
    let pid = child.id();
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    // Left as the kill found it.
    assert_eq!(root_load_balance(), "0");
    assert_ne!(new_process_cpus(), online, "new processes are not confined");
    assert_eq!(pinned_cpus().as_deref(), Some("0"));
    assert!(std::path::Path::new(&format!("/run/audiolat/cells-{pid}.json")).exists());
    assert!(std::path::Path::new(&format!("/var/run/netns/al-host-{pid}")).exists());
    let doctor = run_json(&db, &["doctor", "--json", "--steal-window", "10ms"]);
    let finding = doctor["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "system.leftovers")
        .unwrap()
        .clone();
    assert_eq!(finding["verdict"], "fail", "{finding}");
    let value = finding["value"].as_str().unwrap();
    for needle in [
        format!("audiolat PID {pid} (no longer running) left"),
        format!("audiolat-{pid}-rest"),
        "sched_load_balance 0".to_string(),
        format!("network namespace al-ctl-{pid} (with 1 tc HTB qdisc)"),
        format!("cells-{pid}.json"),
    ] {
        assert!(value.contains(&needle), "{needle}: {value}");
    }
    assert!(finding["fix"].as_str().unwrap().contains("doctor --fix"));
    // The next measuring command undoes it first, and says so.
    let out = run(&db, &["jitter", "--loops", "50", "--quiet"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let said: Vec<&str> = out.stderr.lines().filter(|l| l.contains("undid")).collect();
    assert_eq!(said.len(), 1, "{}", out.stderr);
    assert!(
        said[0].starts_with(&format!(
            "audiolat: undid what audiolat PID {pid} left when it was killed: "
        )),
        "{}",
        said[0]
    );
    assert_nothing_left_by(pid);
    assert_eq!(root_load_balance(), balance_before);
    assert_eq!(new_process_cpus(), cpus_before);
    let own = engine::rt::format_cpu_list(&probes::cell::partition::task_affinity(0).unwrap());
    assert_eq!(own, online, "this test's own affinity");
    assert_eq!(
        pinned_cpus().as_deref(),
        Some("1"),
        "a pinned task's affinity"
    );
    // Nothing left to say the next time.
    let again = run(&db, &["jitter", "--loops", "10", "--quiet"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(!again.stderr.contains("undid"), "{}", again.stderr);
    let doctor = run_json(&db, &["doctor", "--json", "--steal-window", "10ms"]);
    assert!(doctor["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["check"] == "system.leftovers" && f["verdict"] == "ok"));
}

/// Two SIGTERMs in quick succession during the same run: whether the run undoes its
/// own state or is cut short, nothing is left once the next measuring command has run,
/// and the machine's CPUs are as they were.
#[test]
fn two_sigterms_during_a_cells_and_netns_run_leave_nothing_behind() {
    let _m = machine_lock();
    if !cells_and_netns_possible() {
        return;
    }
    let balance_before = root_load_balance();
    let cpus_before = new_process_cpus();
    let dir = tempdir();
    let db = dir.path().join("twice.db");
    let mut child = start_cells_and_netns_run(&db);
    let pid = child.id();
    for _ in 0..2 {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = wait_timeout(&mut child.0, Duration::from_secs(60));
    assert_eq!(status.code(), Some(130), "{status:?}");
    // The run put the machine back itself, the second signal notwithstanding.
    assert_nothing_left_by(pid);
    assert_eq!(root_load_balance(), balance_before);
    assert_eq!(new_process_cpus(), cpus_before);
    let out = run(&db, &["jitter", "--loops", "10", "--quiet"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("undid"), "{}", out.stderr);
    // Killed outright, its state is undone by `doctor --fix` as well.
    let mut child = start_cells_and_netns_run(&db);
    let pid = child.id();
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    assert_eq!(root_load_balance(), "0");
    let fix = run(&db, &["doctor", "--fix", "--steal-window", "10ms"]);
    assert!(
        fix.stderr
            .contains(&format!("undid what audiolat PID {pid} left")),
        "{fix:?}"
    );
    assert_nothing_left_by(pid);
    assert_eq!(root_load_balance(), balance_before);
    assert_eq!(new_process_cpus(), cpus_before);
}

/// A leftover that cannot be undone (here: a state file naming a root cpuset that is
/// not there) makes a measuring command refuse, naming it, before it stores anything;
/// `doctor --fix` says the same.
#[test]
fn a_leftover_that_cannot_be_undone_is_named_and_nothing_measures() {
    let _m = machine_lock();
    if not_root("/run/audiolat is root's") {
        return;
    }
    // A pid above pid_max: never running.
    let file = std::path::Path::new("/run/audiolat/cells-4999999.json");
    std::fs::create_dir_all("/run/audiolat").unwrap();
    let dir = tempdir();
    let missing = dir.path().join("no-such-cpuset");
    std::fs::write(
        file,
        serde_json::json!({"cpuset_root": missing, "sched_load_balance": "1"}).to_string(),
    )
    .unwrap();
    let db = dir.path().join("refused.db");
    let out = run(&db, &["jitter", "--loops", "10", "--quiet"]);
    let fix = run(&db, &["doctor", "--fix", "--steal-window", "10ms"]);
    let _ = std::fs::remove_file(file);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("audiolat PID 4999999 (no longer running) left")
            && out.stderr.contains("could not be undone"),
        "{}",
        out.stderr
    );
    assert!(!db.exists(), "a refusal stored something");
    assert_eq!(fix.code, 2, "{fix:?}");
    assert!(fix.stderr.contains("4999999"), "{}", fix.stderr);
}

/// A second `net` wanting a CPU another running audiolat's dedicated cell holds is
/// refused before anything starts, naming the holder (exit 2, one line, no run stored);
/// a measuring command meanwhile leaves the running audiolat's cells alone.
#[test]
fn a_cpu_another_audiolat_holds_is_refused_naming_it_and_nothing_is_stored() {
    let _m = machine_lock();
    if !cells_and_netns_possible() {
        return;
    }
    let dir = tempdir();
    let first_db = dir.path().join("first.db");
    let mut first = util::KillOnDrop(spawn(
        &first_db,
        &[
            "net",
            "--cell",
            "music=dedicated:cpus=1",
            "--host-cell",
            "music",
            "--duration",
            "30s",
            "--no-reference",
            "--warmup",
            "300ms",
            "--quiet",
        ],
    ));
    let pid = first.id();
    let music = format!("/sys/fs/cgroup/cpuset/audiolat-{pid}-music");
    let start = std::time::Instant::now();
    while std::fs::read_to_string(format!("{music}/cpuset.cpu_exclusive"))
        .map(|s| s.trim() != "1")
        .unwrap_or(true)
        || root_load_balance() != "0"
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no cell appeared"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let second_db = dir.path().join("second.db");
    let out = run(
        &second_db,
        &[
            "net",
            "--cell",
            "m2=dedicated:cpus=1",
            "--duration",
            "1s",
            "--no-reference",
        ],
    );
    // A measuring command while the first runs: its cells are not a dead audiolat's.
    let jitter = run(&second_db, &["jitter", "--loops", "10", "--quiet"]);
    let still_there = std::path::Path::new(&music).exists() && root_load_balance() == "0";
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let status = wait_timeout(&mut first.0, Duration::from_secs(60));
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "CPU 1 is held by audiolat PID {pid} (its cell `music`)"
        )),
        "{}",
        out.stderr
    );
    assert_eq!(jitter.code, 0, "{}", jitter.stderr);
    assert!(!jitter.stderr.contains("undid"), "{}", jitter.stderr);
    assert!(still_there, "a running audiolat's cells were touched");
    // Only the jitter run was stored: the refusal stored nothing.
    let store = Store::open_existing(&second_db).unwrap();
    let runs = store.list_runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].probe, "jitter");
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert_nothing_left_by(pid);
}

/// Refusals of an ordinary user store nothing: `--netns` (namespaces need root) is
/// refused before the database opens, and a dedicated cell (moving other tasks needs
/// root) before a run is begun.
#[test]
fn refusals_for_want_of_root_store_no_run() {
    if not_root("this test drops root itself, with setpriv") {
        return;
    }
    let dir = tempdir();
    // The user `nobody` writes the database here.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let db = dir.path().join("user.db");
    let as_nobody = |args: &[&str]| {
        let out = std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(util::bin())
            .arg("--db")
            .arg(&db)
            .args(args)
            .output()
            .expect("running audiolat under setpriv (util-linux)");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stderr) = as_nobody(&["net", "--netns", "--duration", "1s"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("--netns makes network namespaces, which needs root"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!db.exists(), "a refusal opened the database");
    if engine::rt::online_cpus().len() >= 2 {
        let (code, stderr) = as_nobody(&[
            "net",
            "--cell",
            "music=dedicated:cpus=1",
            "--duration",
            "1s",
            "--no-reference",
        ]);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains("needs root"), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        if db.exists() {
            let runs = Store::open_existing(&db)
                .unwrap()
                .list_runs(&RunFilter::default())
                .unwrap();
            assert!(runs.is_empty(), "a refusal stored {runs:?}");
        }
    }
}

/// A plan's values pass the command line's own parsers (a number as the plan writes
/// it), and a plan over the size limits is refused from its axes' lengths, at once:
/// exit 2, one line with the count and the limit, nothing stored.
#[test]
fn plan_values_follow_the_cli_rules_and_oversized_plans_are_refused() {
    let dir = tempdir();
    let db = dir.path().join("p.db");
    let file = dir.path().join("p.toml");
    let values = |n: usize| (1..=n).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    for (body, needle) in [
        (
            "probe = \"jitter\"\n[set]\nduration = 1e9",
            "invalid value '1e9' for '--duration",
        ),
        (
            "probe = \"event\"\n[sweep]\nperiod = [64, 128.0]",
            "invalid value '128.0' for '--period",
        ),
        (
            "probe = \"event\"\n[set]\ntriggers = 0",
            "invalid value '0' for '--triggers",
        ),
        (
            "probe = \"event\"\n[set]\nspacing = \"1x\"",
            "invalid value '1x' for '--spacing",
        ),
        (
            &format!("probe = \"jitter\"\n[sweep]\nrate = [{}]", values(200_000)),
            "axis `rate` has 200000 values, more than the 1000",
        ),
        (
            &format!(
                "probe = \"jitter\"\n[sweep]\nrate = [{}]\npriority = [{}]\nfragments = [{}]",
                values(100),
                values(99),
                values(30)
            ),
            "the plan has 297000 cells",
        ),
    ] {
        std::fs::write(&file, format!("name = \"p\"\n{body}\n")).unwrap();
        let out = run(&db, &["run", file.to_str().unwrap(), "--dry-run"]);
        assert_eq!(out.code, 2, "{needle}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains(needle), "{needle}: {}", out.stderr);
        assert!(!db.exists());
    }
    // The same values on the command line: the same refusal.
    let out = run(&db, &["jitter", "--duration", "1e9"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("invalid value '1e9' for '--duration"));
    let out = run(&db, &["event", "--period", "128.0"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("invalid value '128.0' for '--period"));
}

/// A SIGTERM while a large plan's cells are being checked stops it there: exit 130,
/// nothing run or stored.
#[test]
fn a_signal_stops_a_plan_while_its_cells_are_checked() {
    let dir = tempdir();
    let db = dir.path().join("p.db");
    let file = dir.path().join("p.toml");
    let values = |n: usize| (1..=n).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    // 9,900 cells, under the limit: each is parsed and checked as a command line.
    std::fs::write(
        &file,
        format!(
            "name = \"p\"\nprobe = \"jitter\"\n[sweep]\nrate = [{}]\npriority = [{}]\n",
            values(100),
            values(99)
        ),
    )
    .unwrap();
    let mut child = spawn(&db, &["run", file.to_str().unwrap(), "--dry-run"]);
    // Once it says it is checking, it is held still while the signal is sent, so the
    // signal lands among the cells however fast this machine checks them.
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut stderr = String::new();
    std::io::BufRead::read_line(&mut err, &mut stderr).unwrap();
    assert!(
        stderr.contains("checking the plan's 9900 cells"),
        "{stderr}"
    );
    let pid = child.id() as i32;
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(pid, libc::SIGSTOP);
        libc::kill(pid, libc::SIGTERM);
        libc::kill(pid, libc::SIGCONT);
    }
    let status = wait_timeout(&mut child, Duration::from_secs(60));
    std::io::Read::read_to_string(&mut err, &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("nothing was run"), "{stderr}");
    assert!(!db.exists());
}

/// A round trip is written as it goes: a SIGKILLed run keeps, on the next open, the
/// measurements of its last checkpoint.
#[test]
fn a_killed_roundtrip_run_keeps_its_last_checkpoint_on_the_next_open() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let dir = tempdir();
    let db = dir.path().join("rk.db");
    let name = unique_server("rtkill");
    let child = util::KillOnDrop(spawn(
        &db,
        &[
            "roundtrip",
            "--server",
            "dummy",
            "--server-name",
            &name,
            "--duration",
            "60s",
        ],
    ));
    // The cycles the loop ran are always measured (the loop's own figure may be
    // withheld as ambiguous on this noisy machine).
    let cycles = |s: &Store| -> Option<u64> {
        let id = s.last_run_id().ok().flatten()?;
        s.measurements(id)
            .ok()?
            .iter()
            .find(|m| m.measurement.metric == "dsp_time")
            .and_then(|m| m.measurement.summary.as_ref())
            .map(|s| s.count)
    };
    poll_read_only(&db, "no checkpoint was stored", |s| {
        cycles(s).is_some_and(|c| c > 0)
    });
    kill_with_its_server(child, &name);
    let stored = Store::open_read_only(&db).unwrap();
    let run_id = stored.last_run_id().unwrap().unwrap();
    assert_eq!(stored.run(run_id).unwrap().status, RunStatus::Running);
    let checkpointed = cycles(&stored).unwrap();
    drop(stored);
    let shown = run_json(&db, &["show", &run_id.to_string(), "--json"]);
    assert_eq!(shown["run"]["status"], "interrupted", "{}", shown["run"]);
    let error = shown["run"]["error"].as_str().unwrap();
    assert!(error.contains("ended without closing the run"), "{error}");
    let dsp = shown["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "dsp_time")
        .unwrap_or_else(|| panic!("no dsp_time: {shown}"));
    assert_eq!(
        dsp["summary"]["count"].as_u64(),
        Some(checkpointed),
        "{dsp}"
    );
    let names: Vec<&str> = shown["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["metric"].as_str())
        .collect();
    assert!(names.contains(&"roundtrip"), "{names:?}");
}
