//! `audiolat doctor`: what in this machine's set-up stands between it and low, steady
//! audio latency, in the spirit of rtcqs. Every finding has a verdict and, when
//! something should change, the fix.
//!
//! The checks read `/proc` and `/sys` and try what can only be known by trying
//! (SCHED_FIFO, SCHED_DEADLINE, `/dev/cpu_dma_latency`) on a short-lived thread, leaving
//! the process as it was. They take about a second, most of it spent sampling host
//! steal time.

use std::time::Duration;

use engine::rt::{self, cap, Policy};
use engine::servers::{self, RunningServers};
use results::{Finding, Machine, Verdict};

use crate::machine::{self, Preemption};
use crate::steal;

/// The machine and every finding.
#[derive(Debug, Clone)]
pub struct DoctorReport {
    /// The machine.
    pub machine: Machine,
    /// Findings, in a stable order.
    pub findings: Vec<Finding>,
}

impl DoctorReport {
    /// Number of findings with each verdict: (ok, warn, fail).
    pub fn counts(&self) -> (usize, usize, usize) {
        let n = |v| self.findings.iter().filter(|f| f.verdict == v).count();
        (n(Verdict::Ok), n(Verdict::Warn), n(Verdict::Fail))
    }

    /// The finding with this check id.
    pub fn finding(&self, check: &str) -> Option<&Finding> {
        self.findings.iter().find(|f| f.check == check)
    }
}

fn finding(
    check: &str,
    verdict: Verdict,
    value: impl Into<String>,
    detail: &str,
    fix: &str,
) -> Finding {
    Finding {
        check: check.into(),
        verdict,
        value: value.into(),
        detail: detail.into(),
        fix: fix.into(),
    }
}

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn cmdline() -> String {
    read_trim("/proc/cmdline").unwrap_or_default()
}

/// Ticks of `/proc/stat` (USER_HZ, 10 ms at 100 Hz) a steal window spans at least:
/// steal is counted in whole ticks, so a window of fewer cannot tell no steal from a
/// host that takes a tenth of the CPU (the verdict's fail threshold).
pub const MIN_STEAL_WINDOW_TICKS: u32 = 10;
/// Longest steal window.
pub const MAX_STEAL_WINDOW: Duration = Duration::from_secs(600);

/// The steal windows this machine can measure: [`MIN_STEAL_WINDOW_TICKS`] of its
/// `/proc/stat` ticks to [`MAX_STEAL_WINDOW`].
pub fn steal_window_range() -> std::ops::RangeInclusive<Duration> {
    let tick = Duration::from_nanos(1_000_000_000 / steal::user_hz().max(1));
    tick * MIN_STEAL_WINDOW_TICKS..=MAX_STEAL_WINDOW
}

/// A steal window outside [`steal_window_range`]: too short to count steal in, or too
/// long.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a steal window of {window:?} is out of range: use {:?} to {:?} (steal is counted in {:?} ticks)", .range.start(), .range.end(), *.range.start() / MIN_STEAL_WINDOW_TICKS)]
pub struct StealWindowOutOfRange {
    /// The window asked for.
    pub window: Duration,
    /// The windows this machine can measure.
    pub range: std::ops::RangeInclusive<Duration>,
}

/// Checks a steal window against [`steal_window_range`], before anything is sampled.
pub fn check_steal_window(window: Duration) -> Result<(), StealWindowOutOfRange> {
    let range = steal_window_range();
    if range.contains(&window) {
        Ok(())
    } else {
        Err(StealWindowOutOfRange { window, range })
    }
}

/// Runs every check. `steal_window` is how long host steal is sampled (checked with
/// [`check_steal_window`] first; a window it refuses is judged on no steal finding).
pub fn run(steal_window: Duration) -> DoctorReport {
    let machine = machine::machine();
    let preemption = machine::preemption();
    let mut f = vec![
        check_preemption(&preemption),
        check_rtprio(),
        check_memlock(),
        check_fifo(),
        check_deadline(),
        check_rt_throttling(),
        check_governor(),
        check_smt(),
        check_isolation(),
        check_clocksource(&machine.clocksource),
        check_timer_resolution(),
        check_threadirqs(&preemption),
        check_swappiness(),
        check_hypervisor(machine.virtualization.as_deref()),
        check_steal(steal_window),
        check_cpuset(),
        check_leftovers(),
        check_dma_latency(),
        check_trace(),
        check_audio_servers(),
        check_jack_registry(),
        check_alsa_cards(),
    ];
    for (tool, why) in [
        (
            load::JACKD,
            "runs the embedded JACK server (event and roundtrip probes)",
        ),
        (load::STRESS_NG, "drives the cpu, io and mem loads"),
        (
            load::CYCLICTEST,
            "the reference the jitter probe is checked against",
        ),
        (load::HACKBENCH, "drives the hackbench load"),
        (load::TC, "bandwidth reservation (net probe)"),
        (load::IP, "network namespaces (net probe)"),
    ] {
        f.push(check_tool(&tool, why));
    }
    f.extend(crate::pipewire_doctor::findings());
    DoctorReport {
        machine,
        findings: f,
    }
}

fn check_preemption(p: &Preemption) -> Finding {
    let id = "kernel.preemption";
    match p.effective() {
        "rt" => finding(
            id,
            Verdict::Ok,
            p.to_string(),
            "fully preemptible kernel",
            "",
        ),
        "full" | "lazy" => finding(
            id,
            Verdict::Ok,
            p.to_string(),
            "the kernel preempts itself for a waking real-time thread",
            if p.effective() == "lazy" {
                "lazy preemption is fine for real-time threads; PREEMPT_RT bounds the worst case further"
            } else {
                "PREEMPT_RT (linux-image-rt-*) bounds the worst case further"
            },
        ),
        "voluntary" => finding(
            id,
            Verdict::Warn,
            p.to_string(),
            "long kernel paths delay a waking real-time thread until a preemption point",
            if matches!(p, Preemption::Dynamic(..)) {
                "boot with preempt=full on the kernel command line, or use a PREEMPT_RT kernel"
            } else {
                "use a kernel built with PREEMPT or PREEMPT_RT (Debian: linux-image-rt-amd64)"
            },
        ),
        "none" => finding(
            id,
            Verdict::Fail,
            p.to_string(),
            "a server kernel: a waking real-time thread waits for the kernel to finish",
            "boot with preempt=full (PREEMPT_DYNAMIC) or install a PREEMPT_RT kernel",
        ),
        _ => finding(
            id,
            Verdict::Warn,
            p.to_string(),
            "the preemption model could not be read",
            "mount debugfs (mount -t debugfs none /sys/kernel/debug) so sched/preempt can be read",
        ),
    }
}

fn fmt_limit(v: Option<u64>) -> String {
    v.map_or("unlimited".into(), |v| v.to_string())
}

fn check_rtprio() -> Finding {
    let id = "limits.rtprio";
    let lim = rt::rlimit(libc::RLIMIT_RTPRIO);
    let sys_nice = rt::has_capability(cap::SYS_NICE);
    let value = format!(
        "RLIMIT_RTPRIO {} (hard {}){}",
        fmt_limit(lim.soft),
        fmt_limit(lim.hard),
        if sys_nice { ", CAP_SYS_NICE held" } else { "" }
    );
    let fix =
        "add '@audio - rtprio 95' to /etc/security/limits.d/audio.conf, add your user to the \
               audio group (usermod -aG audio $USER) and log in again";
    if sys_nice || lim.soft.is_none_or(|v| v >= 80) {
        finding(
            id,
            Verdict::Ok,
            value,
            "real-time priorities up to 80 or more are allowed",
            "",
        )
    } else if lim.soft.unwrap_or(0) > 0 {
        finding(
            id,
            Verdict::Warn,
            value,
            "only low real-time priorities are allowed; audio threads conventionally use 70-95",
            fix,
        )
    } else {
        finding(
            id,
            Verdict::Fail,
            value,
            "no real-time priority is allowed",
            fix,
        )
    }
}

fn check_memlock() -> Finding {
    let id = "limits.memlock";
    let lim = rt::rlimit(libc::RLIMIT_MEMLOCK);
    let ipc_lock = rt::has_capability(cap::IPC_LOCK);
    let value = format!(
        "RLIMIT_MEMLOCK {}{}",
        lim.soft
            .map_or("unlimited".into(), |v| format!("{} KiB", v / 1024)),
        if ipc_lock { ", CAP_IPC_LOCK held" } else { "" }
    );
    if ipc_lock || lim.soft.is_none() {
        finding(
            id,
            Verdict::Ok,
            value,
            "all memory can be locked (no page faults in the audio path)",
            "",
        )
    } else if lim.soft.unwrap_or(0) >= 256 << 20 {
        finding(
            id,
            Verdict::Ok,
            value,
            "enough memory can be locked for an audio process",
            "",
        )
    } else {
        finding(
            id,
            Verdict::Warn,
            value,
            "too little memory can be locked: a page fault in the audio path costs milliseconds",
            "add '@audio - memlock unlimited' to /etc/security/limits.d/audio.conf and log in again",
        )
    }
}

fn check_fifo() -> Finding {
    let id = "sched.fifo";
    let grant = rt::probe_policy(Policy::Fifo { priority: 80 });
    match &grant.refusal {
        None => finding(
            id,
            Verdict::Ok,
            format!("granted {}", grant.granted),
            "",
            "",
        ),
        Some(why) => finding(
            id,
            Verdict::Fail,
            format!("refused, got {}", grant.granted),
            "probes will run but their results are flagged not real-time",
            why,
        ),
    }
}

fn check_deadline() -> Finding {
    let id = "sched.deadline";
    let grant = rt::probe_policy(Policy::Deadline {
        runtime_ns: 100_000,
        deadline_ns: 1_000_000,
        period_ns: 1_000_000,
    });
    match &grant.refusal {
        None => finding(id, Verdict::Ok, "granted (100us every 1ms)", "", ""),
        Some(why) => finding(
            id,
            Verdict::Warn,
            "refused",
            "SCHED_DEADLINE is needed for time-triggered cells and the deadline scheduling policy",
            why,
        ),
    }
}

fn check_rt_throttling() -> Finding {
    let id = "sched.rt_throttling";
    let runtime = read_trim("/proc/sys/kernel/sched_rt_runtime_us").unwrap_or_default();
    let period = read_trim("/proc/sys/kernel/sched_rt_period_us").unwrap_or_default();
    if runtime == "-1" {
        finding(
            id,
            Verdict::Ok,
            "disabled (sched_rt_runtime_us = -1)",
            "a runaway real-time thread can lock up a CPU",
            "",
        )
    } else {
        finding(
            id,
            Verdict::Ok,
            machine::rt_share_words(&runtime, &period),
            "real-time threads may use this share of each CPU; enough for audio",
            "",
        )
    }
}

fn check_governor() -> Finding {
    let id = "cpu.governor";
    let mut governors: Vec<(usize, String)> = Vec::new();
    for cpu in rt::online_cpus() {
        if let Some(g) = read_trim(&format!(
            "/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"
        )) {
            governors.push((cpu, g));
        }
    }
    if governors.is_empty() {
        return finding(
            id,
            Verdict::Ok,
            "no cpufreq (fixed frequency, or the host controls it)",
            "",
            "",
        );
    }
    let slow: Vec<String> = governors
        .iter()
        .filter(|(_, g)| g != "performance")
        .map(|(c, g)| format!("cpu{c}={g}"))
        .collect();
    if slow.is_empty() {
        finding(id, Verdict::Ok, "performance on every CPU", "", "")
    } else {
        finding(
            id,
            Verdict::Warn,
            slow.join(" "),
            "frequency scaling makes DSP time and wake-ups vary with load",
            "cpupower frequency-set -g performance (package linux-cpupower)",
        )
    }
}

fn check_smt() -> Finding {
    let id = "cpu.smt";
    match read_trim("/sys/devices/system/cpu/smt/active").as_deref() {
        Some("1") => finding(
            id,
            Verdict::Warn,
            "active",
            "hyper-threads share execution units: a sibling's load slows the audio thread",
            "echo off > /sys/devices/system/cpu/smt/control, or boot with nosmt",
        ),
        Some("0") => finding(id, Verdict::Ok, "inactive", "", ""),
        _ => finding(id, Verdict::Ok, "not supported", "", ""),
    }
}

fn check_isolation() -> Finding {
    let id = "cpu.isolation";
    let isolated = read_trim("/sys/devices/system/cpu/isolated").unwrap_or_default();
    let nohz = read_trim("/sys/devices/system/cpu/nohz_full").unwrap_or_default();
    let nohz = if nohz == "(null)" {
        String::new()
    } else {
        nohz
    };
    if isolated.is_empty() && nohz.is_empty() {
        finding(
            id,
            Verdict::Warn,
            "no isolated or nohz_full CPUs",
            "the audio thread shares every CPU with the rest of the system",
            "boot with isolcpus=N nohz_full=N and pin the audio thread to those CPUs, or use a dedicated cell",
        )
    } else {
        finding(
            id,
            Verdict::Ok,
            format!(
                "isolated: {}; nohz_full: {}",
                if isolated.is_empty() {
                    "none"
                } else {
                    &isolated
                },
                if nohz.is_empty() { "none" } else { &nohz }
            ),
            "pin the measuring thread to those CPUs",
            "",
        )
    }
}

fn check_clocksource(source: &str) -> Finding {
    let id = "clock.source";
    match source {
        "tsc" | "kvm-clock" | "arch_sys_counter" | "hyperv_clocksource_tsc_page" | "xen" => {
            finding(id, Verdict::Ok, source, "reading the clock is cheap", "")
        }
        "hpet" | "acpi_pm" | "jiffies" => finding(
            id,
            Verdict::Warn,
            source,
            "reading this clock costs microseconds, or has tick resolution",
            "check dmesg for 'TSC unstable'; boot with tsc=reliable if the TSC is in fact stable",
        ),
        other => finding(id, Verdict::Ok, other, "", ""),
    }
}

fn check_timer_resolution() -> Finding {
    let id = "clock.resolution";
    let res = engine::clock::monotonic_resolution_ns();
    if res <= 1_000 {
        finding(
            id,
            Verdict::Ok,
            format!("{res} ns (high-resolution timers)"),
            "",
            "",
        )
    } else {
        finding(
            id,
            Verdict::Fail,
            format!("{res} ns"),
            "timers fire on scheduler ticks: no sub-millisecond audio period is possible",
            "use a kernel with CONFIG_HIGH_RES_TIMERS=y and do not boot with highres=off",
        )
    }
}

fn check_threadirqs(p: &Preemption) -> Finding {
    let id = "kernel.threadirqs";
    if matches!(p, Preemption::Rt) {
        return finding(id, Verdict::Ok, "forced by PREEMPT_RT", "", "");
    }
    if cmdline().split_whitespace().any(|w| w == "threadirqs") {
        finding(id, Verdict::Ok, "threadirqs on the command line", "", "")
    } else {
        finding(
            id,
            Verdict::Warn,
            "interrupt handlers are not threaded",
            "the sound card's interrupt cannot be given a priority above other devices'",
            "add threadirqs to the kernel command line (GRUB_CMDLINE_LINUX) and raise the sound card's IRQ thread (rtirq)",
        )
    }
}

fn check_swappiness() -> Finding {
    let id = "vm.swappiness";
    let v: Option<u32> = read_trim("/proc/sys/vm/swappiness").and_then(|s| s.parse().ok());
    match v {
        Some(v) if v <= 10 => finding(id, Verdict::Ok, v.to_string(), "", ""),
        Some(v) => finding(
            id,
            Verdict::Warn,
            v.to_string(),
            "unlocked pages of audio programs may be swapped out under memory pressure",
            "sysctl vm.swappiness=10 (and in /etc/sysctl.d/)",
        ),
        None => finding(id, Verdict::Ok, "unknown", "", ""),
    }
}

fn check_hypervisor(virt: Option<&str>) -> Finding {
    let id = "virt.hypervisor";
    match virt {
        None => finding(id, Verdict::Ok, "bare metal", "", ""),
        Some(hv) => finding(
            id,
            Verdict::Warn,
            hv,
            "a virtual machine: the host may deschedule a virtual CPU for milliseconds; measured \
             maxima include the host's scheduling, and results are flagged with host steal",
            "measure on bare metal for figures that describe the hardware",
        ),
    }
}

fn check_steal(window: Duration) -> Finding {
    let id = "virt.steal";
    if let Err(e) = check_steal_window(window) {
        // Too short to count steal in: nothing was measured, so no verdict of "ok".
        let fix = format!("sample for {:?} at least", e.range.start());
        return finding(id, Verdict::Warn, "-", &e.to_string(), &fix);
    }
    let a = steal::sample();
    std::thread::sleep(window);
    let b = steal::sample();
    let ns: u64 = b
        .per_cpu_ns
        .iter()
        .zip(a.per_cpu_ns.iter().chain(std::iter::repeat(&0)))
        .map(|(x, y)| x.saturating_sub(*y))
        .sum();
    let span = (b.mono_ns - a.mono_ns).max(1) * b.per_cpu_ns.len().max(1) as u64;
    let pct = 100.0 * ns as f64 / span as f64;
    let value = format!(
        "{:.1}% over {:.1} s ({} ms)",
        pct,
        window.as_secs_f64(),
        ns / 1_000_000
    );
    if ns == 0 {
        finding(id, Verdict::Ok, value, "", "")
    } else if pct < 10.0 {
        finding(
            id,
            Verdict::Warn,
            value,
            "the host takes the CPU away now and then: expect millisecond outliers",
            "give the VM dedicated (pinned) host CPUs, or measure on bare metal",
        )
    } else {
        finding(
            id,
            Verdict::Fail,
            value,
            "the host takes the CPU away often: latency figures describe the host, not this system",
            "give the VM dedicated (pinned) host CPUs, or measure on bare metal",
        )
    }
}

fn check_cpuset() -> Finding {
    use qos::partition::{cpuset_hierarchy, CpusetHierarchy};
    let id = "cgroup.cpuset";
    match cpuset_hierarchy() {
        Some(CpusetHierarchy::V2(root)) => finding(
            id,
            Verdict::Ok,
            format!("cgroup v2 with the cpuset controller at {}", root.display()),
            "dedicated cells use remote cpuset partitions (Linux 6.7 and later)",
            "",
        ),
        Some(CpusetHierarchy::V1(root)) => finding(
            id,
            Verdict::Ok,
            format!("cgroup v1 cpuset hierarchy at {}", root.display()),
            "dedicated cells use exclusive v1 cpusets",
            "",
        ),
        None => finding(
            id,
            Verdict::Warn,
            "no cpuset controller mounted",
            "dedicated cells (exclusive CPUs) are not available",
            "mount the cgroup v2 hierarchy with the cpuset controller available (systemd does by default)",
        ),
    }
}

/// What an audiolat killed outright left changed (see [`crate::leftovers`]).
fn check_leftovers() -> Finding {
    let left = crate::leftovers::find();
    if left.is_empty() {
        return finding(
            "system.leftovers",
            Verdict::Ok,
            "nothing left by an audiolat that was killed",
            "",
            "",
        );
    }
    if left.by_pid.is_empty() {
        return finding(
            "system.leftovers",
            Verdict::Warn,
            left.describe(),
            "an audiolat killed outright left temporary files behind (they take space; nothing on the machine is changed)",
            "run `audiolat doctor --fix`; any measuring command (jitter, event, roundtrip, net, suite, run) also removes them before it measures",
        );
    }
    if left.only_pipewire() {
        let fix = format!(
            "any measuring command (jitter, event, roundtrip, net, suite, run) puts the value before back before it measures, as the PipeWire's own user (no root needed); by hand: {}",
            left.pipewire.join("; ")
        );
        return finding(
            "system.leftovers",
            Verdict::Fail,
            left.describe(),
            "an audiolat killed outright left a PipeWire setting forced (clock.force-quantum or clock.force-rate): every client of that PipeWire runs it, whatever it asks for",
            &fix,
        );
    }
    finding(
        "system.leftovers",
        Verdict::Fail,
        left.describe(),
        "an audiolat killed outright could not undo what it changed: tasks stay confined to the CPUs it left them, load balancing stays off, its namespaces stay",
        "run `audiolat doctor --fix` as root; any measuring command (jitter, event, roundtrip, net, suite, run) also undoes it before it measures",
    )
}

fn check_dma_latency() -> Finding {
    let id = "power.cpu_dma_latency";
    let grant = rt::DmaLatencyGrant::hold(0);
    if grant.is_held() {
        finding(
            id,
            Verdict::Ok,
            "can be held at 0 us",
            "probes keep CPUs out of deep idle states during a run",
            "",
        )
    } else {
        finding(
            id,
            Verdict::Warn,
            "cannot be held",
            "deep CPU idle states add their exit latency to wake-ups",
            grant.refusal.as_deref().unwrap_or(""),
        )
    }
}

fn check_trace() -> Finding {
    let id = "trace.available";
    let detail = "`audiolat jitter --why` explains each late wake-up from the kernel's trace, and `audiolat jitter --why --fail-if 'why.thread:NAME > 1ms'` judges a run on a cause";
    match crate::why::check() {
        Ok(missing) if missing.is_empty() => finding(
            id,
            Verdict::Ok,
            "the kernel can be traced, with every tracepoint --why reads",
            detail,
            "",
        ),
        Ok(missing) => finding(
            id,
            Verdict::Ok,
            format!(
                "the kernel can be traced; it lacks {} (what they would show is unaccounted)",
                missing.join(", ")
            ),
            detail,
            "",
        ),
        Err(e) => finding(id, Verdict::Warn, e.to_string(), detail, trace_fix(&e)),
    }
}

/// What makes the kernel traceable again, for each reason it is not.
fn trace_fix(e: &crate::why::Unavailable) -> &'static str {
    use crate::why::Unavailable;
    match e {
        Unavailable::NotAllowed(_) => "run audiolat as root (tracing the kernel needs CAP_SYS_ADMIN and write access to tracefs)",
        Unavailable::ReadOnly(_) => "remount tracefs read-write: mount -o remount,rw /sys/kernel/tracing (a container: have its tracefs mounted read-write)",
        Unavailable::Mount { .. } => "mount tracefs as root: mount -t tracefs nodev /sys/kernel/tracing (a container: have it mounted in, read-write)",
        Unavailable::NoTracefs => "boot a kernel built with CONFIG_FTRACE and CONFIG_TRACING (every distribution kernel is)",
        Unavailable::MissingEvent(_) => "boot a kernel with the scheduler's and interrupts' tracepoints (CONFIG_TRACEPOINTS, as distribution kernels are built)",
        Unavailable::Io { .. } => "run audiolat as root with tracefs mounted read-write at /sys/kernel/tracing",
    }
}

fn check_audio_servers() -> Finding {
    let id = "audio.servers";
    let RunningServers {
        jack,
        pipewire,
        pulseaudio: pulse,
    } = servers::running_servers();
    let mut list = Vec::new();
    if jack {
        list.push("JACK");
    }
    if pipewire {
        list.push("PipeWire");
    }
    if pulse {
        list.push("PulseAudio");
    }
    if list.is_empty() {
        finding(
            id,
            Verdict::Ok,
            "none running",
            "audiolat will start a private `jackd -d dummy` server for JACK probes",
            "",
        )
    } else if pulse && !jack && !pipewire {
        finding(
            id,
            Verdict::Warn,
            list.join(", "),
            "PulseAudio holds the sound card and adds buffering",
            "use PipeWire (pipewire-jack) or suspend PulseAudio while measuring (pasuspender -- audiolat ...)",
        )
    } else {
        finding(
            id,
            Verdict::Ok,
            list.join(", "),
            "JACK probes use the running server (PipeWire's JACK counts)",
            "",
        )
    }
}

fn check_jack_registry() -> Finding {
    let id = "audio.jack_registry";
    let Some(entries) = servers::jack_registry() else {
        return finding(id, Verdict::Ok, "no JACK server registry yet", "", "");
    };
    let dead: Vec<&str> = entries
        .iter()
        .filter(|e| !e.alive)
        .map(|e| e.name.as_str())
        .collect();
    let value = format!(
        "{} of 8 slots used, {} by servers that are gone{}",
        entries.len(),
        dead.len(),
        if dead.is_empty() {
            String::new()
        } else {
            format!(" ({})", dead.join(", "))
        }
    );
    let fix = "stop every JACK server, then rm /dev/shm/jack-shm-registry (jackd makes a new one)";
    if entries.len() == 8 {
        finding(
            id,
            Verdict::Fail,
            value,
            "jackd2's registry is full: no new JACK server can start (\"Too many servers already active\")",
            fix,
        )
    } else if entries.len() >= 6 && !dead.is_empty() {
        finding(
            id,
            Verdict::Warn,
            value,
            "jackd2 keeps the entries of servers that were killed until a server of the same name starts; at 8 no server can start",
            fix,
        )
    } else {
        finding(
            id,
            Verdict::Ok,
            value,
            "room for new JACK servers (audiolat's private servers reuse their names)",
            "",
        )
    }
}

fn check_alsa_cards() -> Finding {
    let id = "audio.alsa_cards";
    let text = read_trim("/proc/asound/cards").unwrap_or_default();
    let cards: Vec<String> = text
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let (num, rest) = l.split_once(' ')?;
            num.parse::<u32>().ok()?;
            Some(format!("{num}: {}", rest.trim()))
        })
        .collect();
    if cards.is_empty() {
        finding(
            id,
            Verdict::Warn,
            "no sound card",
            "no DAC to time against: audio probes run on a private dummy JACK server (software clock)",
            "for hardware figures, run on a machine with a sound card (check /proc/asound/cards)",
        )
    } else {
        finding(id, Verdict::Ok, cards.join("; "), "", "")
    }
}

fn check_tool(tool: &load::Tool, why: &str) -> Finding {
    let id = format!("tools.{}", tool.name);
    match load::find_in_path(tool.name) {
        Some(path) => finding(
            &id,
            Verdict::Ok,
            format!("{} ({})", path.display(), load::tool_version(tool, &path)),
            why,
            "",
        ),
        None => finding(
            &id,
            Verdict::Warn,
            "not found",
            why,
            &format!("apt install {}", tool.package),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steal_window_too_short_to_count_a_tick_in_is_refused_not_judged_ok() {
        // Before: 1 ns of sampling saw no tick, and "0.0% over 0.0 s" was judged ok.
        let shortest = *steal_window_range().start();
        assert!(check_steal_window(Duration::from_nanos(1)).is_err());
        assert!(check_steal_window(shortest - Duration::from_nanos(1)).is_err());
        assert!(check_steal_window(shortest).is_ok());
        assert!(check_steal_window(MAX_STEAL_WINDOW + Duration::from_secs(1)).is_err());
        let f = check_steal(Duration::from_nanos(1));
        assert_ne!(f.verdict, Verdict::Ok, "{f:?}");
        assert_eq!(f.value, "-", "{f:?}");
        assert!(!f.fix.is_empty(), "{f:?}");
    }

    #[test]
    fn doctor_covers_every_area_with_a_fix_for_every_problem() {
        let report = run(Duration::from_millis(200));
        for id in [
            "kernel.preemption",
            "limits.rtprio",
            "limits.memlock",
            "sched.fifo",
            "sched.deadline",
            "cpu.governor",
            "cpu.smt",
            "cpu.isolation",
            "clock.source",
            "clock.resolution",
            "kernel.threadirqs",
            "vm.swappiness",
            "virt.hypervisor",
            "virt.steal",
            "cgroup.cpuset",
            "system.leftovers",
            "trace.available",
            "audio.servers",
            "audio.jack_registry",
            "audio.alsa_cards",
            "tools.jackd",
            "tools.stress-ng",
            "tools.cyclictest",
        ] {
            assert!(report.finding(id).is_some(), "missing {id}");
        }
        for f in &report.findings {
            assert!(!f.value.is_empty(), "{f:?}");
            if f.verdict != Verdict::Ok {
                assert!(
                    !f.fix.is_empty(),
                    "{:?} verdict without a fix: {f:?}",
                    f.verdict
                );
            }
        }
        let (ok, warn, fail) = report.counts();
        assert_eq!(ok + warn + fail, report.findings.len());
    }

    #[test]
    fn trace_finding_agrees_with_a_real_attempt() {
        let f = check_trace();
        assert_eq!(f.check, "trace.available");
        match crate::why::check() {
            Ok(missing) => {
                assert_eq!(f.verdict, Verdict::Ok, "{f:?}");
                assert!(
                    missing.iter().all(|m| f.value.contains(m.as_str())),
                    "{f:?}"
                );
            }
            Err(e) => {
                assert_eq!(
                    (f.verdict, f.value.as_str()),
                    (Verdict::Warn, e.to_string().as_str())
                );
                assert!(!f.fix.is_empty(), "{f:?}");
            }
        }
    }

    #[test]
    fn fifo_finding_agrees_with_a_real_attempt() {
        let report = run(Duration::from_millis(10));
        let f = report.finding("sched.fifo").unwrap();
        let grant = rt::probe_policy(Policy::Fifo { priority: 80 });
        assert_eq!(f.verdict == Verdict::Ok, grant.refusal.is_none());
    }
}
