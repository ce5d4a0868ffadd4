//! The trace against `perf sched timehist`: the FIFO culprit of `culprit.rs` is
//! provoked again while `perf sched record` records the same CPU on the same clock
//! (CLOCK_MONOTONIC), and for each miss the culprit caused, the thread `timehist` shows
//! running most of the late interval must be the culprit, with the run time
//! `timehist` gives it there within 10 % (or 50 µs) of the trace's. Needs root and
//! tracefs, as `--why` does; without a `perf` that can record (Debian's linux-perf),
//! it says why and passes.

mod common;

use std::ffi::CString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{close, median, probe_cpu, Policy, SpinConfig, Spinner, WakeupProbe};
use trace::{CauseKind, Session, SessionConfig};

/// One line of `perf sched timehist`: a task switched out of a CPU.
#[derive(Debug, Clone)]
struct Switch {
    /// When it switched out, CLOCK_MONOTONIC ns (µs precision).
    out_ns: u64,
    cpu: u32,
    name: String,
    tid: i32,
    /// How long it had run, ns (µs precision).
    run_ns: u64,
}

impl Switch {
    /// Its run's time inside `[a, b)`, ns.
    fn ran_within(&self, a: u64, b: u64) -> u64 {
        let start = self.out_ns.saturating_sub(self.run_ns);
        self.out_ns.min(b).saturating_sub(start.max(a))
    }
}

/// A decimal `seconds.micros` or `millis.micros` figure as ns, with no float rounding.
fn decimal_ns(text: &str, unit_ns: u64) -> Option<u64> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    let mut ns = whole.parse::<u64>().ok()? * unit_ns;
    let mut scale = unit_ns;
    for digit in frac.chars() {
        scale /= 10;
        ns += u64::from(digit.to_digit(10)?) * scale;
    }
    Some(ns)
}

/// Parses `timehist`'s lines: `time [cpu] name[tid/pid] wait sch_delay run`.
fn parse_timehist(text: &str) -> Vec<Switch> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 6 {
                return None;
            }
            let out_ns = decimal_ns(fields[0], 1_000_000_000)?;
            let cpu = fields[1]
                .strip_prefix('[')?
                .strip_suffix(']')?
                .parse()
                .ok()?;
            let run_ns = decimal_ns(fields[fields.len() - 1], 1_000_000)?;
            // The task's name may hold spaces: all between the CPU and the 3 figures.
            let task = fields[2..fields.len() - 3].join(" ");
            let open = task.rfind('[')?;
            let ids = task[open + 1..].strip_suffix(']')?;
            let tid = ids.split('/').next()?.parse().ok()?;
            Some(Switch {
                out_ns,
                cpu,
                name: task[..open].to_string(),
                tid,
                run_ns,
            })
        })
        .collect()
}

/// `perf sched record` on one CPU, started with its events disabled and enabled
/// through its control FIFO, so the test knows when it records.
struct PerfRecord {
    child: Child,
    dir: PathBuf,
}

impl PerfRecord {
    fn data(&self) -> PathBuf {
        self.dir.join("perf.data")
    }

    /// Starts it and waits until it records, or says why it cannot.
    fn start(cpu: usize) -> Result<PerfRecord, String> {
        let dir = std::env::temp_dir().join(format!("audiolat-why-perf-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let (ctl, ack) = (dir.join("ctl"), dir.join("ack"));
        for fifo in [&ctl, &ack] {
            let c = CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: a NUL-terminated path.
            if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
                return Err(format!(
                    "mkfifo {}: {}",
                    fifo.display(),
                    std::io::Error::last_os_error()
                ));
            }
        }
        let control = format!("fifo:{},{}", ctl.display(), ack.display());
        let cpu = cpu.to_string();
        let data = dir.join("perf.data");
        let child = Command::new("perf")
            .args([
                "sched",
                "record",
                "-k",
                "CLOCK_MONOTONIC",
                "-C",
                &cpu,
                "-D",
                "-1",
            ])
            .args(["--control", &control, "-o"])
            .arg(&data)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("perf: {e} (install linux-perf)"))?;
        let mut perf = PerfRecord { child, dir };
        perf.enable(&ctl, &ack)?;
        Ok(perf)
    }

    /// Sends `enable` and waits for perf's `ack`.
    fn enable(&mut self, ctl: &Path, ack: &Path) -> Result<(), String> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut ctl = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Err(self.failed(status));
            }
            // No reader yet (perf has not opened it) fails with ENXIO.
            match std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(ctl)
            {
                Ok(f) => break f,
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        };
        let mut ack = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(ack)
            .map_err(|e| format!("the ack FIFO: {e}"))?;
        ctl.write_all(b"enable\n")
            .map_err(|e| format!("perf's control FIFO: {e}"))?;
        // perf writes "ack\n" and its NUL.
        let mut got = Vec::new();
        let asked = std::time::Instant::now();
        while !got.windows(4).any(|w| w == b"ack\n") {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Err(self.failed(status));
            }
            // A guard against a hang, not a measurement.
            assert!(
                asked.elapsed() < Duration::from_secs(60),
                "perf sched record never acknowledged 'enable' on its control FIFO"
            );
            let mut buf = [0u8; 16];
            match ack.read(&mut buf) {
                Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
                _ => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        Ok(())
    }

    fn failed(&mut self, status: std::process::ExitStatus) -> String {
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        format!("perf sched record exited ({status}): {}", err.trim())
    }

    /// Stops it (SIGINT, as perf expects) and waits until its file is written.
    fn stop(&mut self) {
        // SAFETY: a signal to our own child, not yet reaped.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGINT) };
        let _ = self.child.wait();
    }
}

impl Drop for PerfRecord {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            self.stop();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Whether tracefs was mounted at `/sys/kernel/tracing`; unmounts it when dropped if
/// it was not (perf mounts it there and leaves it).
struct SystemTracefs {
    was_mounted: bool,
}

impl SystemTracefs {
    fn as_it_is() -> SystemTracefs {
        SystemTracefs {
            was_mounted: system_tracefs_mounted(),
        }
    }
}

fn system_tracefs_mounted() -> bool {
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(trace::tracefs::TRACEFS))
}

impl Drop for SystemTracefs {
    fn drop(&mut self) {
        if !self.was_mounted && system_tracefs_mounted() {
            let target = std::ffi::CString::new(trace::tracefs::TRACEFS).unwrap();
            // SAFETY: a NUL-terminated path.
            unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
        }
    }
}

#[test]
fn perf_sched_timehist_agrees_on_the_culprit_and_its_time() {
    let cpu = probe_cpu();
    let session = Session::start(SessionConfig {
        cpus: Some(vec![cpu]),
        ..SessionConfig::default()
    })
    .expect("tracefs available (run as root)");
    // perf reads tracefs at the system's place, and mounts it there (for good) where
    // it is not: put back as it was when the test ends.
    let _tracefs = SystemTracefs::as_it_is();
    let mut perf = match PerfRecord::start(cpu) {
        Ok(p) => p,
        Err(why) => {
            eprintln!("SKIPPED: perf cannot record here: {why}");
            return;
        }
    };
    const SPIN_NS: u64 = 2_000_000;
    let culprit = Spinner::start(SpinConfig {
        name: "why-perfculprit",
        cpu,
        policy: Policy::Fifo(80),
        spin_ns: SPIN_NS,
        every_ns: 47_300_000,
    });
    let culprit_tid = culprit.tid();
    let probe = WakeupProbe::start(cpu, Policy::Fifo(50), 1_000_000, 300_000, session.sender());
    std::thread::sleep(Duration::from_millis(1500));
    let spins = culprit.stop();
    let sent = probe.stop();
    perf.stop();
    let timehist = Command::new("perf")
        .args(["sched", "timehist", "-C", &cpu.to_string(), "-i"])
        .arg(perf.data())
        .stderr(Stdio::null())
        .output()
        .expect("perf sched timehist");
    assert!(timehist.status.success(), "perf sched timehist failed");
    let switches = parse_timehist(&String::from_utf8_lossy(&timehist.stdout));
    let why = session.finish();
    drop(perf);

    assert_eq!(why.misses_explained as usize, sent.len());
    assert!(
        switches.iter().any(|s| s.tid == culprit_tid),
        "timehist never shows the culprit ({culprit_tid}) among {} switches",
        switches.len()
    );
    let (mut caused, mut same_top, mut same_time) = (0, 0, 0);
    let mut differences = Vec::new();
    for m in &why.misses {
        if spins.spin_within(m.miss.t_ns, m.miss.end_ns).is_none() {
            continue;
        }
        caused += 1;
        let (a, b) = (m.miss.t_ns, m.miss.end_ns);
        // timehist's thread with the most time in the late interval on the probe's CPU.
        let mut by_task: Vec<(i32, &str, u64)> = Vec::new();
        for s in switches.iter().filter(|s| s.cpu as usize == cpu) {
            let ns = s.ran_within(a, b);
            if ns == 0 {
                continue;
            }
            match by_task.iter_mut().find(|t| t.0 == s.tid) {
                Some(t) => t.2 += ns,
                None => by_task.push((s.tid, &s.name, ns)),
            }
        }
        by_task.sort_by_key(|t| std::cmp::Reverse(t.2));
        let perf_culprit_ns = by_task
            .iter()
            .find(|t| t.0 == culprit_tid)
            .map_or(0, |t| t.2);
        // By its id: another test's culprit on a busy machine may share a name.
        let ours: u64 = m
            .causes
            .iter()
            .filter(|c| c.kind == CauseKind::Thread && c.pid == Some(culprit_tid))
            .map(|c| c.ns)
            .sum();
        let our_top_thread = m
            .causes
            .iter()
            .find(|c| c.kind == CauseKind::Thread)
            .and_then(|c| c.pid);
        if by_task.first().map(|t| t.0) == Some(culprit_tid) && our_top_thread == Some(culprit_tid)
        {
            same_top += 1;
        }
        differences.push(ours.abs_diff(perf_culprit_ns));
        if close(ours, perf_culprit_ns) {
            same_time += 1;
        } else {
            eprintln!(
                "the culprit ran {perf_culprit_ns} ns of this miss by timehist \
                 ({by_task:?}), {ours} by the trace: {m:#?}"
            );
        }
    }
    eprintln!(
        "{} misses, {caused} caused by the culprit's {} spins; timehist agrees on the \
         culprit in {same_top}, on its time in {same_time} (by {} ns, the median)",
        sent.len(),
        spins.spins.len(),
        median(differences)
    );
    assert!(caused >= 20, "only {caused} misses were the culprit's");
    assert!(
        same_top * 10 >= caused * 9,
        "timehist and the trace name the same top thread in {same_top} of {caused}"
    );
    assert!(
        same_time * 10 >= caused * 9,
        "timehist and the trace agree on the culprit's time in {same_time} of {caused}"
    );
}
