//! `--why`: every miss explained from the kernel's trace. The culprits are made by the
//! test (a SCHED_FIFO thread with a name it chooses, spinning a known time on the
//! probe's CPU at known moments), so the truth is known.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::util::{assert_named, machine_lock, not_root, run, run_json, temp_db, tempdir};

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A thread of this test process, named `name`, pinned to `cpu` at SCHED_FIFO
/// `priority`, spinning `spin_ns` every `every_ns`; it remembers when it spun.
pub struct Culprit {
    stop: Arc<AtomicBool>,
    spins: Arc<Mutex<Vec<(u64, u64)>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Culprit {
    pub fn start(name: &str, cpu: usize, priority: i32, spin_ns: u64, every_ns: u64) -> Culprit {
        let stop = Arc::new(AtomicBool::new(false));
        let spins: Arc<Mutex<Vec<(u64, u64)>>> = Arc::default();
        let (s, sp) = (Arc::clone(&stop), Arc::clone(&spins));
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                // SAFETY: plain structs for the calling thread.
                unsafe {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(cpu, &mut set);
                    assert_eq!(
                        libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set),
                        0
                    );
                    let p = libc::sched_param {
                        sched_priority: priority,
                    };
                    assert_eq!(libc::sched_setscheduler(0, libc::SCHED_FIFO, &p), 0);
                }
                let mut next = now_ns() + 200_000_000;
                while !s.load(Ordering::Relaxed) {
                    while now_ns() < next && !s.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_nanos((next - now_ns()).min(5_000_000)));
                    }
                    let start = now_ns();
                    while now_ns() < start + spin_ns {}
                    sp.lock().unwrap().push((start, now_ns()));
                    next += every_ns;
                }
            })
            .expect("culprit thread");
        Culprit {
            stop,
            spins,
            thread: Some(thread),
        }
    }

    /// Stops it; when it spun.
    pub fn stop(mut self) -> Vec<(u64, u64)> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        self.spins.lock().unwrap().clone()
    }
}

impl Drop for Culprit {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn jitter_why_names_a_fifo_culprit_with_its_time() {
    if not_root("jitter --why traces the kernel: needs root") {
        return;
    }
    let _m = machine_lock();
    let (_d, db) = temp_db("why.db");
    let culprit = Culprit::start("why-hog", 1, 90, 2_000_000, 97_300_000);
    let out = run_json(&db, &["jitter", "--why", "--cpu", "1", "-D", "3", "--json"]);
    let spins = culprit.stop();
    let why = &out["result"]["why"];
    assert!(why["unavailable"].is_null(), "{why}");
    let caused = assert_named(why, "why-hog", &spins);
    assert!(
        caused * 10 >= spins.len() * 8 && caused > 0,
        "{caused} misses of {} spins: {why}",
        spins.len()
    );
    assert_eq!(why["culprits"][0]["name"], "why-hog", "{why}");
    assert_eq!(why["culprits"][0]["kind"], "thread");
    let roles: Vec<&str> = why["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["role"].as_str())
        .collect();
    assert_eq!(roles, ["jitter thread"]);

    // The stored run shows the same culprits as the run printed.
    let id = out["run_id"].as_i64().unwrap().to_string();
    let shown = run(&db, &["show", &id]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(shown.stdout.contains("why-hog"), "{}", shown.stdout);
    // The thread running when the probe was woken is marked: the culprit, in most of
    // its misses (not where the CPU was idle when both timers fired at once); `show`
    // marks it in the worst misses it prints when the trace did.
    let misses = why["misses"].as_array().unwrap();
    let marked = misses
        .iter()
        .filter(|m| {
            m["causes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["at_wakeup"] == true && c["name"] == "why-hog")
        })
        .count();
    assert!(marked * 2 >= caused, "{marked} of {caused}: {why}");
    let mut worst: Vec<&Value> = misses.iter().collect();
    worst.sort_by_key(|m| std::cmp::Reverse(m["late_ns"].as_u64()));
    let worst_marked = worst.iter().take(3).any(|m| {
        m["causes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["at_wakeup"] == true)
    });
    assert_eq!(
        shown.stdout.contains("running at the wake-up"),
        worst_marked,
        "{}",
        shown.stdout
    );
}

#[test]
fn without_root_or_with_tracefs_read_only_why_says_so_in_one_line_and_the_run_measures() {
    if not_root("switching to an unprivileged user needs root") {
        return;
    }
    let _m = machine_lock();
    let dir = tempdir();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let db = dir.path().join("nobody.db");
    let bin = crate::util::bin();
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .args(["jitter", "--why", "-D", "1", "--db"])
        .arg(&db)
        .output()
        .expect("setpriv (util-linux)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("why:")).collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    assert!(lines[0].contains("needs root"), "{stdout}");
    assert!(lines[0].contains("measured without causes"), "{stdout}");
    assert!(stdout.contains("wakeup_latency"), "{stdout}");

    // tracefs read-only, in a mount namespace of its own.
    let (_d, db) = temp_db("ro.db");
    let script = format!(
        "umount /sys/kernel/tracing 2>/dev/null; mount -t tracefs -o ro nodev /sys/kernel/tracing && exec {} jitter --why -D 1 --db {}",
        bin.display(),
        db.display()
    );
    let out = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .output()
        .expect("unshare (util-linux)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("why:")).collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    assert!(lines[0].contains("read-only"), "{stdout}");
}

/// audiolat pinned (with every thread and process it starts) to CPU 1, printing JSON.
fn run_on_cpu1(db: &std::path::Path, args: &[&str]) -> Value {
    let out = std::process::Command::new("taskset")
        .args(["-c", "1"])
        .arg(crate::util::bin())
        .arg("--db")
        .arg(db)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("taskset (util-linux)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "audiolat {args:?}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    crate::util::parse_json(stdout.as_bytes())
}

/// A probe whose audio thread a FIFO culprit on its CPU holds off: the culprit is named
/// with its time in every late callback it overlapped, and is the run's first culprit.
fn assert_audio_culprit(why: &Value, name: &str, spins: &[(u64, u64)]) {
    assert!(why["unavailable"].is_null(), "{why}");
    let caused = assert_named(why, name, spins);
    assert!(caused > 0, "no late callback overlapped a spin: {why}");
    assert_eq!(why["culprits"][0]["name"], name, "{why}");
    assert_eq!(why["culprits"][0]["kind"], "thread", "{why}");
    let roles: Vec<&str> = why["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["role"].as_str())
        .collect();
    assert!(roles.contains(&"audio thread"), "{roles:?}");
}

#[test]
fn event_why_names_a_fifo_culprit_holding_off_the_jack_client() {
    if not_root("event --why traces the kernel: needs root") {
        return;
    }
    let _m = machine_lock();
    crate::util::require_tool("jackd", "jackd2");
    let (_d, db) = temp_db("why-event.db");
    let name = crate::util::unique_server("why");
    let culprit = Culprit::start("why-evhog", 1, 90, 2_000_000, 97_300_000);
    let out = run_on_cpu1(
        &db,
        &[
            "event",
            "--server",
            "dummy",
            "--server-name",
            &name,
            "--period",
            "256",
            "--triggers",
            "60",
            "--spacing",
            "30ms",
            "--note",
            "15ms",
            "--why",
            "--json",
        ],
    );
    let spins = culprit.stop();
    let run = &out["runs"][0];
    let why = &run["result"]["why"];
    assert_audio_culprit(why, "why-evhog", &spins);
    // The private server's driver thread is known by its role.
    assert!(
        why["threads"].as_array().unwrap().iter().any(|t| t["role"]
            .as_str()
            .is_some_and(|r| r.starts_with("jackd driver"))),
        "{why}"
    );
    let id = run["run_id"].as_i64().expect("run_id").to_string();
    let shown = run_cmd(&db, &["show", &id]);
    assert!(shown.contains("why-evhog"), "{shown}");
}

#[test]
fn roundtrip_why_names_a_fifo_culprit_holding_off_the_audio_thread() {
    if not_root("roundtrip --why traces the kernel: needs root") {
        return;
    }
    let _m = machine_lock();
    let (_d, db) = temp_db("why-roundtrip.db");
    let culprit = Culprit::start("why-rthog", 1, 90, 2_000_000, 97_300_000);
    let out = run_on_cpu1(
        &db,
        &[
            "roundtrip",
            "--backend",
            "virtual",
            "--period",
            "256",
            "--duration",
            "4s",
            "--why",
            "--json",
        ],
    );
    let spins = culprit.stop();
    let run = &out["runs"][0];
    assert_audio_culprit(&run["result"]["why"], "why-rthog", &spins);
}

fn run_cmd(db: &std::path::Path, args: &[&str]) -> String {
    let out = run(db, args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.stdout
}

#[test]
fn net_why_names_a_fifo_culprit_holding_off_the_host() {
    if not_root("net --why traces the kernel: needs root") {
        return;
    }
    let _m = machine_lock();
    let (_d, db) = temp_db("why-net.db");
    let culprit = Culprit::start("why-nethog", 1, 90, 2_000_000, 97_300_000);
    let out = run_json(
        &db,
        &[
            "net",
            "-D",
            "4",
            "--no-reference",
            "--host-cpus",
            "1",
            "--controller-cpus",
            "0",
            "--why",
            "--json",
        ],
    );
    let spins = culprit.stop();
    let why = &out["result"]["why"];
    assert!(why["unavailable"].is_null(), "{why}");
    let caused = assert_named(why, "why-nethog", &spins);
    assert!(
        caused * 10 >= spins.len() * 5 && caused > 0,
        "{caused} late blocks of {} spins: {why}",
        spins.len()
    );
    assert_eq!(why["culprits"][0]["name"], "why-nethog", "{why}");
    let roles: Vec<&str> = why["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["role"].as_str())
        .collect();
    assert_eq!(roles, ["host network thread (synth phase)"], "{why}");
    let id = out["run_id"].as_i64().expect("run_id").to_string();
    assert!(run_cmd(&db, &["show", &id]).contains("why-nethog"));
}

/// A traced run's culprits reach the places a user looks, the same in each: the report's
/// answer and its time plot (a bar per explained miss, the causes on hover), `compare`
/// beside a run that was not traced (`-`, never 0) and its JSON, and the JSON export.
#[test]
fn a_traced_run_s_culprit_is_in_the_report_compare_and_the_export() {
    if not_root("jitter --why traces the kernel: needs root") {
        return;
    }
    let _m = machine_lock();
    let (dir, db) = temp_db("why-report.db");
    let culprit = Culprit::start("why-report", 1, 90, 2_000_000, 97_300_000);
    let traced = run_json(&db, &["jitter", "--why", "--cpu", "1", "-D", "3", "--json"]);
    culprit.stop();
    let why = &traced["result"]["why"];
    // On a busy machine another thread may take more: the culprit is named, not first.
    let named = why["culprits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "why-report")
        .unwrap_or_else(|| panic!("why-report not a culprit: {}", why["culprits"]))
        .clone();
    let plain = run_json(&db, &["jitter", "--cpu", "1", "-D", "1", "--json"]);
    let (a, b) = (
        traced["run_id"].as_i64().unwrap().to_string(),
        plain["run_id"].as_i64().unwrap().to_string(),
    );

    // The terminal's view of the run: its culprit's row.
    let shown = run(&db, &["show", &a]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let row = shown
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("why-report"))
        .unwrap_or_else(|| panic!("no culprit row in\n{}", shown.stdout));
    let parts: Vec<&str> = row.split_whitespace().collect();
    // why-report thread 9.80 ms 9 of 12
    let (total, misses) = (format!("{} {}", parts[2], parts[3]), parts[4..].join(" "));

    // The report: the answer has the same row, the time plot a bar naming the culprit.
    let html = dir.path().join("why.html");
    let out = run(&db, &["report", &a, "-o", html.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let page = std::fs::read_to_string(&html).unwrap();
    let summary = &page[page.find("id=\"summary\"").unwrap()..];
    let summary = &summary[..summary.find("</section>").unwrap()];
    let culprit_row = format!(
        "<code>why-report</code></td><td class=\"label\">thread</td><td class=\"nowrap\">{total}</td><td class=\"nowrap\">{misses}</td>"
    );
    assert!(
        summary.contains(&culprit_row),
        "{culprit_row} not in\n{summary}"
    );
    let top = &why["culprits"][0];
    if top["kind"] == "thread" {
        let sentence = format!("late wake-ups: {} ran ", top["name"].as_str().unwrap());
        assert!(summary.contains(&sentence), "{sentence} not in {summary}");
    }
    let bars = page.matches("<g class=\"bar\"><title>").count();
    assert!(bars > 0, "no bar on the time plot");
    assert!(
        page.contains("thread why-report (pid "),
        "no bar names the culprit"
    );

    // compare: the culprit's time beside the untraced run's `-`.
    let out = run(&db, &["compare", &a, &b]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let line = out
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("why-report"))
        .unwrap_or_else(|| panic!("no culprit row in\n{}", out.stdout));
    assert!(
        line.contains(&format!("{total} ({misses})")),
        "{}",
        out.stdout
    );
    assert!(line.trim_end().ends_with(" -"), "{}", out.stdout);
    let v = run_json(&db, &["compare", &a, &b, "--json"]);
    let rows = v["culprits"]["rows"].as_array().expect("culprits in JSON");
    let hog = rows.iter().find(|r| r["name"] == "why-report").unwrap();
    assert_eq!(hog["runs"][0]["ns_total"], named["ns_total"]);
    assert!(hog["runs"][1].is_null(), "{hog}");

    // The JSON export carries the run's why as stored.
    let out = run(&db, &["export", &a, "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let exported = crate::util::parse_json(&out.stdout);
    assert!(
        exported["run"]["result"]["why"] == *why,
        "the export's why is not the run's: {}",
        exported["run"]["result"]["why"]
    );
}

#[test]
fn a_gate_on_a_culprit_fires_and_one_on_a_culprit_never_seen_passes_at_0() {
    if not_root("jitter --why traces the kernel: needs root") {
        return;
    }
    let _m = machine_lock();
    let (_d, db) = temp_db("why-gates.db");
    let culprit = Culprit::start("gate-hog", 1, 90, 2_000_000, 97_300_000);
    let out = run(
        &db,
        &[
            "jitter",
            "--why",
            "--cpu",
            "1",
            "-D",
            "2",
            "--fail-if",
            "why.thread:gate-hog > 1ms",
            "--fail-if",
            "why.thread:no-such-thread > 0ns",
            "--fail-if",
            "why.softirq:hrtimer > 1s",
            "--json",
        ],
    );
    culprit.stop();
    assert_eq!(out.code, 3, "{}", out.stderr);
    let fresh = crate::util::parse_json(&out.stdout);
    let why = &fresh["result"]["why"];
    let hog_ns = why["culprits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "thread" && c["name"] == "gate-hog")
        .unwrap_or_else(|| panic!("gate-hog among the culprits: {why}"))["ns_total"]
        .as_f64()
        .unwrap();
    let gates = fresh["gates"].as_array().unwrap();
    let hog = &gates[0];
    assert_eq!(
        (&hog["metric"], &hog["outcome"], &hog["unit"]),
        (
            &Value::from("why.thread:gate-hog"),
            &Value::from("fail"),
            &Value::from("ns")
        ),
        "{hog}"
    );
    assert_eq!(hog["value"].as_f64(), Some(hog_ns), "{hog}");
    let absent = &gates[1];
    assert_eq!(
        (&absent["outcome"], absent["value"].as_f64()),
        (&Value::from("pass"), Some(0.0)),
        "{absent}"
    );
    // A softirq's name as the kernel writes it, whatever its case in the gate.
    assert_eq!(gates[2]["metric"], "why.softirq:HRTIMER");
    assert_eq!(gates[2]["outcome"], "pass");

    // The verdicts are stored with the run, and show prints them.
    let id = fresh["run_id"].as_i64().unwrap().to_string();
    assert_eq!(run_json(&db, &["export", &id])["gates"], fresh["gates"]);
    let shown = run(&db, &["show", &id]);
    assert!(
        shown.stdout.contains("fail     why.thread:gate-hog > 1ms"),
        "{}",
        shown.stdout
    );
}

/// A gate on a cause where the kernel cannot be traced (no root, tracefs read-only) or
/// without `--why` is refused in one line before anything runs: never judged on a run
/// measured without causes.
#[test]
fn a_gate_on_a_cause_that_cannot_be_traced_is_refused_in_one_line_before_anything_runs() {
    let (_d, db) = temp_db("no-why.db");
    let out = run(&db, &["jitter", "--fail-if", "why.thread:kworker* > 1ms"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(
        out.stderr,
        "audiolat: error: --fail-if 'why.thread:kworker* > 1ms': a jitter run explains its misses from the kernel's trace with --why only: add --why, or drop the gate\n"
    );
    assert!(!db.exists(), "nothing stored");

    if not_root("switching to an unprivileged user needs root") {
        return;
    }
    let dir = tempdir();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let db = dir.path().join("nobody.db");
    let bin = crate::util::bin();
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .args([
            "jitter",
            "--why",
            "-D",
            "1",
            "--fail-if",
            "why.thread:kworker* > 1ms",
            "--db",
        ])
        .arg(&db)
        .output()
        .expect("setpriv (util-linux)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("audiolat: error: --fail-if 'why.thread:kworker* > 1ms': its cause cannot be measured: the run would not be traced (tracing the kernel needs root"),
        "{stderr}"
    );
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!db.exists(), "nothing stored");

    // tracefs read-only, in a mount namespace of its own.
    let (_d, db) = temp_db("ro-gate.db");
    let script = format!(
        "umount /sys/kernel/tracing 2>/dev/null; mount -t tracefs -o ro nodev /sys/kernel/tracing && exec {} jitter --why -D 1 --fail-if 'why.irq > 500us' --db {}",
        bin.display(),
        db.display()
    );
    let out = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .output()
        .expect("unshare (util-linux)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr,
        "audiolat: error: --fail-if 'why.irq > 500us': its cause cannot be measured: the run would not be traced (tracefs at /sys/kernel/tracing is read-only)\n"
    );
    assert!(!db.exists(), "nothing stored");
}

/// A gate on a cause judges a round-trip run as a jitter run: the culprit holding off
/// its audio thread fails `why.thread:NAME > 0ns` with its stored time, and a culprit
/// the trace never saw passes at 0 ns.
#[test]
fn a_gate_on_a_culprit_judges_a_roundtrip_run_too() {
    if not_root("roundtrip --why traces the kernel: needs root") {
        return;
    }
    let _m = machine_lock();
    let (_d, db) = temp_db("why-gate-roundtrip.db");
    let culprit = Culprit::start("gate-rthog", 1, 90, 2_000_000, 97_300_000);
    let out = std::process::Command::new("taskset")
        .args(["-c", "1"])
        .arg(crate::util::bin())
        .arg("--db")
        .arg(&db)
        .args([
            "roundtrip",
            "--backend",
            "virtual",
            "--period",
            "256",
            "--duration",
            "3s",
            "--why",
            "--fail-if",
            "why.thread:gate-rthog > 0ns",
            "--fail-if",
            "why.thread:never-seen > 0ns",
            "--json",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("taskset (util-linux)");
    culprit.stop();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fresh = crate::util::parse_json(stdout.as_bytes());
    let run = &fresh["runs"][0];
    let hog_ns = run["result"]["why"]["culprits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "thread" && c["name"] == "gate-rthog")
        .unwrap_or_else(|| panic!("gate-rthog among the culprits: {run}"))["ns_total"]
        .as_f64();
    let verdicts = &fresh["gates"][0]["gates"];
    assert_eq!(verdicts[0]["outcome"], "fail", "{verdicts}");
    assert_eq!(verdicts[0]["value"].as_f64(), hog_ns, "{verdicts}");
    assert_eq!(
        (&verdicts[1]["outcome"], verdicts[1]["value"].as_f64()),
        (&Value::from("pass"), Some(0.0)),
        "{verdicts}"
    );
}
