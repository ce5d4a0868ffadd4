//! Where a load's processes go: a cell's groups, CPUs and scheduling policy, joined by
//! the child between fork and exec, and the SCHED_DEADLINE share of the built-in loads.

use crate::spec::LoadItem;
use crate::BadDeadlineShare;
use std::path::PathBuf;

/// A cell as a load process joins it, before it runs its program: the groups it writes
/// itself into, its CPUs and its policy. Children inherit all three.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    /// `cgroup.procs` files (cpuset, cpuacct) the process writes `0` (itself) to.
    pub procs_files: Vec<PathBuf>,
    /// CPUs to pin to (empty: leave the affinity alone).
    pub cpus: Vec<usize>,
    /// `(policy, static priority, nice)` for `sched_setscheduler` and `setpriority`:
    /// SCHED_OTHER, SCHED_BATCH, SCHED_IDLE or SCHED_FIFO.
    pub policy: Option<(i32, i32, i32)>,
    /// SCHED_DEADLINE for each thread of a built-in load (`video`, `ep`). A deadline task
    /// may not fork or create threads, so this is not set between fork and exec: each of
    /// the load's threads takes it once it runs. Loads that run a tool are refused.
    pub deadline: Option<DeadlineShare>,
}

/// A SCHED_DEADLINE reservation for each thread of a built-in load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadlineShare {
    /// CPU time per period, ns.
    pub runtime_ns: u64,
    /// Relative deadline, ns.
    pub deadline_ns: u64,
    /// Period, ns.
    pub period_ns: u64,
    /// Jobs start on period boundaries (a time-triggered cell): a video player shows one
    /// frame per period and yields the rest of it, rather than pacing itself at 30 fps.
    pub time_triggered: bool,
}

impl DeadlineShare {
    /// `RUNTIME,DEADLINE,PERIOD` in ns, with `,tt` when time-triggered: the built-in
    /// load's `--deadline` argument.
    pub fn to_arg(&self) -> String {
        format!(
            "{},{},{}{}",
            self.runtime_ns,
            self.deadline_ns,
            self.period_ns,
            if self.time_triggered { ",tt" } else { "" }
        )
    }

    /// Parses [`DeadlineShare::to_arg`]'s form.
    pub fn from_arg(s: &str) -> Result<DeadlineShare, BadDeadlineShare> {
        let bad = |problem: &str| BadDeadlineShare {
            text: s.to_string(),
            problem: problem.to_string(),
        };
        let parts: Vec<&str> = s.split(',').collect();
        let num = |i: usize| -> Result<u64, BadDeadlineShare> {
            parts
                .get(i)
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| bad("expected RUNTIME,DEADLINE,PERIOD in ns"))
        };
        let share = DeadlineShare {
            runtime_ns: num(0)?,
            deadline_ns: num(1)?,
            period_ns: num(2)?,
            time_triggered: match parts.get(3) {
                None => false,
                Some(&"tt") => true,
                Some(other) => return Err(bad(&format!("unknown flag '{other}'"))),
            },
        };
        if parts.len() > 4
            || share.runtime_ns == 0
            || share.runtime_ns > share.deadline_ns
            || share.deadline_ns > share.period_ns
        {
            return Err(bad("needs 0 < runtime <= deadline <= period"));
        }
        Ok(share)
    }
}

/// What a forked child needs to place itself, built before the fork so the child only
/// makes system calls.
pub(crate) struct PreparedPlacement {
    files: Vec<std::ffi::CString>,
    cpus: Option<libc::cpu_set_t>,
    policy: Option<(i32, i32, i32)>,
}

impl PreparedPlacement {
    pub(crate) fn new(p: &Placement) -> PreparedPlacement {
        use std::os::unix::ffi::OsStrExt;
        let files = p
            .procs_files
            .iter()
            .filter_map(|f| std::ffi::CString::new(f.as_os_str().as_bytes()).ok())
            .collect();
        let cpus = (!p.cpus.is_empty()).then(|| {
            // SAFETY: zeroed cpu_set_t is a valid empty set.
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            for &c in p.cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
                // SAFETY: c < CPU_SETSIZE.
                unsafe { libc::CPU_SET(c, &mut set) };
            }
            set
        });
        PreparedPlacement {
            files,
            cpus,
            policy: p.policy,
        }
    }

    /// Runs in the child between fork and exec: system calls only.
    pub(crate) fn apply(&self) -> std::io::Result<()> {
        for file in &self.files {
            // SAFETY: a valid C string; open/write/close are async-signal-safe.
            unsafe {
                let fd = libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let rc = libc::write(fd, b"0".as_ptr().cast(), 1);
                libc::close(fd);
                if rc != 1 {
                    return Err(std::io::Error::last_os_error());
                }
            }
        }
        if let Some(set) = &self.cpus {
            // SAFETY: a valid set of the size passed; pid 0 is this process.
            if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) }
                != 0
            {
                return Err(std::io::Error::last_os_error());
            }
        }
        if let Some((policy, priority, nice)) = self.policy {
            let param = libc::sched_param {
                sched_priority: priority,
            };
            // SAFETY: plain system calls on this process.
            unsafe {
                if libc::sched_setscheduler(0, policy, &param) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if policy == libc::SCHED_OTHER || policy == libc::SCHED_BATCH {
                    libc::setpriority(libc::PRIO_PROCESS, 0, nice);
                }
            }
        }
        Ok(())
    }
}

/// Threads of the `video` load: the study's two players.
pub const VIDEO_PLAYERS: usize = 2;

/// Threads a load item runs that would each take a SCHED_DEADLINE reservation in a
/// deadline cell (the built-in loads'), for admission control; `None` for a load that
/// runs a tool (it cannot go in such a cell).
pub fn deadline_threads(item: &LoadItem, cpus: usize) -> Option<usize> {
    match item {
        LoadItem::Video => Some(VIDEO_PLAYERS),
        LoadItem::Ep { threads } => Some(threads.unwrap_or(cpus).max(1)),
        _ => None,
    }
}
