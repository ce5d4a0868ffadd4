//! CPU lists and affinity: which CPUs are online, which ones the calling thread may run
//! on, and the kernel's list syntax (`0-3,6`).

use super::policy::RtError;

/// The CPUs the calling thread may run on.
pub fn current_thread_affinity() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; zeroed is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid out pointer of the size passed; pid 0 is this thread.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: index below CPU_SETSIZE.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

/// The online CPUs, from `/sys/devices/system/cpu/online`.
pub fn online_cpus() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| parse_cpu_list(s.trim()).ok())
        .unwrap_or_else(|| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (0..n).collect()
        })
}

/// The most CPUs a Linux kernel numbers (`NR_CPUS` of its largest configuration): a
/// list naming a CPU at or beyond it is refused before any range is expanded.
pub const MAX_CPUS: usize = 8192;

/// The ranges of a CPU list (`0-3,6` gives `(0, 3), (6, 6)`), not expanded.
fn cpu_ranges(list: &str) -> Result<Vec<(usize, usize)>, String> {
    let mut ranges = Vec::new();
    if list.trim().is_empty() {
        return Ok(ranges);
    }
    let bad = || format!("bad CPU list '{list}': use numbers and ranges like 0-3,6");
    for part in list.split(',') {
        let part = part.trim();
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let a: usize = a.parse().map_err(|_| bad())?;
        let b: usize = b.parse().map_err(|_| bad())?;
        if a > b {
            return Err(bad());
        }
        ranges.push((a, b));
    }
    Ok(ranges)
}

/// Parses a kernel CPU list such as `0-3,6,8-9` (the kernel's own files). A CPU at or
/// beyond [`MAX_CPUS`] is refused before anything is expanded. A list a user gives is
/// parsed with [`parse_online_cpu_list`], which checks it against this machine.
pub fn parse_cpu_list(list: &str) -> Result<Vec<usize>, String> {
    let ranges = cpu_ranges(list)?;
    if let Some(&(_, b)) = ranges.iter().find(|(_, b)| *b >= MAX_CPUS) {
        return Err(format!(
            "CPU {b} is beyond the {MAX_CPUS} CPUs a Linux kernel numbers"
        ));
    }
    let mut cpus: Vec<usize> = ranges.into_iter().flat_map(|(a, b)| a..=b).collect();
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Parses a CPU list a user gave (`--cpu`, `--host-cpus`, a cell's `cpus=`, a plan's
/// `cpu`) and checks every CPU in it is online here, without expanding a range first:
/// `0-99999999999` is refused at once with "CPU 99999999999 is not online; this
/// machine has CPUs 0-1". The one parser for every CPU list audiolat is given.
pub fn parse_online_cpu_list(list: &str) -> Result<Vec<usize>, String> {
    parse_cpu_list_within(list, &online_cpus())
}

/// [`parse_online_cpu_list`] against the given online CPUs (sorted).
pub fn parse_cpu_list_within(list: &str, online: &[usize]) -> Result<Vec<usize>, String> {
    let ranges = cpu_ranges(list)?;
    let not_online = |cpu: usize| {
        format!(
            "CPU {cpu} is not online; this machine has CPUs {}",
            format_cpu_list(online)
        )
    };
    let mut cpus = Vec::new();
    for (a, b) in ranges {
        // The range's last CPU first: when it is online, the range is no longer than
        // the online list, and is walked.
        if !online.contains(&b) {
            return Err(not_online(b));
        }
        for cpu in a..=b {
            if !online.contains(&cpu) {
                return Err(not_online(cpu));
            }
            cpus.push(cpu);
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Formats CPUs as a kernel CPU list (`0-3,6`).
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}-{end}"));
        }
        i += 1;
    }
    out
}

/// Pins the calling thread to `cpus` and returns the affinity read back.
pub fn set_current_thread_affinity(cpus: &[usize]) -> Result<Vec<usize>, RtError> {
    let online = online_cpus();
    if let Some(&cpu) = cpus.iter().find(|c| !online.contains(c)) {
        return Err(RtError::NoSuchCpu {
            cpu,
            online: format_cpu_list(&online),
        });
    }
    // SAFETY: zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        // SAFETY: cpu < CPU_SETSIZE because it is online.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: valid set of the size passed; pid 0 is this thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(RtError::Os {
            what: format!("sched_setaffinity to CPUs {}", format_cpu_list(cpus)),
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(current_thread_affinity())
}

/// The CPU the calling thread is running on now.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: no preconditions.
    let cpu = unsafe { libc::sched_getcpu() };
    (cpu >= 0).then_some(cpu as usize)
}
