//! Real-time set-up: scheduling policy, memory locking, stack prefault, CPU affinity and
//! `/dev/cpu_dma_latency`.
//!
//! Each operation returns what the kernel *granted*, read back after the request. None of
//! them panics or aborts when refused: the refusal is part of the grant, so a probe can
//! run anyway and mark its results "not real-time".
//!
//! Process-wide state ([`ProcessRt`]) is set up once, on any thread, before the
//! measuring thread starts, and held for the run. Per-thread state ([`ThreadRt`]) is
//! applied by the measuring thread to itself before its first cycle.
//!
//! A policy is written out as a [`Policy`] (beside this file, `policy`, with the errors
//! [`RtError`]), or chosen from a class, a priority and a reservation with
//! [`Policy::choose`] (`choose`).

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};

mod choose;
mod cpus;
mod policy;
mod schedstat;
pub use choose::{
    PolicyChoiceError, Reservation, SchedClass, UnknownSchedClass, DEFAULT_RT_PRIORITY,
};
pub use cpus::*;
use policy::SchedAttr;
pub use policy::{priority_range, Policy, RtError};
pub use schedstat::{softirq_threads, SchedStat};

/// What the kernel granted for a scheduling request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedGrant {
    /// The policy asked for.
    pub requested: Policy,
    /// The policy the thread has now, read back from the kernel.
    pub granted: Policy,
    /// Why the request was refused, with the fix, if it was.
    pub refusal: Option<String>,
}

impl SchedGrant {
    /// True when the thread now runs in a real-time class.
    pub fn is_realtime(&self) -> bool {
        self.granted.is_realtime()
    }

    /// True when the thread got exactly what was asked for.
    pub fn is_exact(&self) -> bool {
        self.refusal.is_none() && self.requested == self.granted
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// The calling thread's scheduling policy, read from the kernel (`sched_getattr`).
pub fn current_thread_policy() -> Policy {
    let mut attr = SchedAttr::default();
    // SAFETY: `attr` is a writable sched_attr of the size passed; pid 0 is this thread.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            0,
            &mut attr as *mut SchedAttr,
            std::mem::size_of::<SchedAttr>() as u32,
            0u32,
        )
    };
    if rc != 0 {
        // Kernels before 3.14 have no sched_getattr; fall back to the POSIX calls.
        // SAFETY: plain queries about this thread.
        let policy = unsafe { libc::sched_getscheduler(0) };
        let mut param = libc::sched_param { sched_priority: 0 };
        // SAFETY: valid out pointer.
        unsafe { libc::sched_getparam(0, &mut param) };
        attr.sched_policy = policy.max(0) as u32;
        attr.sched_priority = param.sched_priority.max(0) as u32;
    }
    Policy::from_attr(&attr)
}

/// Sets the calling thread's scheduling policy (`sched_setattr`) and reads back what it
/// got. Never fails: a refusal is described in the grant, with the fix.
pub fn set_current_thread_policy(policy: &Policy) -> SchedGrant {
    let refusal = match policy.validate() {
        Err(e) => Some(e.to_string()),
        Ok(()) => {
            let attr = policy.to_attr();
            // SAFETY: `attr` is a valid, initialised sched_attr; pid 0 is this thread.
            let rc = unsafe {
                libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0u32)
            };
            if rc == 0 {
                None
            } else {
                Some(explain_sched_refusal(policy, errno()))
            }
        }
    };
    SchedGrant {
        requested: *policy,
        granted: current_thread_policy(),
        refusal,
    }
}

fn explain_sched_refusal(policy: &Policy, err: i32) -> String {
    let os = std::io::Error::from_raw_os_error(err);
    match (policy, err) {
        (Policy::Deadline { .. }, libc::EBUSY) => format!(
            "{}: admission control refused the bandwidth ({os}); lower the runtime or raise \
             kernel.sched_rt_runtime_us",
            policy.kernel_name()
        ),
        (Policy::Deadline { .. }, libc::EPERM) => format!(
            "{}: not permitted ({os}); it needs root (CAP_SYS_NICE) and a CPU affinity that spans \
             the whole root domain (do not combine it with --cpu)",
            policy.kernel_name()
        ),
        (_, libc::EPERM) => {
            let rtprio = rlimit(libc::RLIMIT_RTPRIO).soft;
            format!(
                "{} {}: not permitted ({os}); RLIMIT_RTPRIO is {} and the process lacks CAP_SYS_NICE. \
                 Fix: add your user to the 'audio' group with '@audio - rtprio 95' in \
                 /etc/security/limits.d/audio.conf, log in again, or run as root",
                policy.kernel_name(),
                policy.priority(),
                rtprio.map_or("unlimited".to_string(), |v| v.to_string())
            )
        }
        _ => format!("{}: {os}", policy.kernel_name()),
    }
}

/// Tries a policy on a short-lived thread and reports the grant, leaving the caller's
/// threads untouched. This is how `doctor` tells whether SCHED_FIFO can really be had.
pub fn probe_policy(policy: Policy) -> SchedGrant {
    std::thread::spawn(move || set_current_thread_policy(&policy))
        .join()
        .unwrap_or(SchedGrant {
            requested: policy,
            granted: Policy::Other { nice: 0 },
            refusal: Some("probe thread panicked".into()),
        })
}

/// A soft and hard resource limit; `None` is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rlimit {
    /// The limit in force.
    pub soft: Option<u64>,
    /// The ceiling the soft limit may be raised to without privilege.
    pub hard: Option<u64>,
}

/// Reads a resource limit (`RLIMIT_RTPRIO`, `RLIMIT_MEMLOCK`, ...).
pub fn rlimit(resource: libc::__rlimit_resource_t) -> Rlimit {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid out pointer.
    unsafe { libc::getrlimit(resource, &mut lim) };
    let conv = |v: libc::rlim_t| (v != libc::RLIM_INFINITY).then_some(v);
    Rlimit {
        soft: conv(lim.rlim_cur),
        hard: conv(lim.rlim_max),
    }
}

/// Linux capability numbers audiolat cares about.
pub mod cap {
    /// CAP_IPC_LOCK: lock memory beyond RLIMIT_MEMLOCK.
    pub const IPC_LOCK: u32 = 14;
    /// CAP_SYS_NICE: real-time priorities beyond RLIMIT_RTPRIO, SCHED_DEADLINE.
    pub const SYS_NICE: u32 = 23;
    /// CAP_SYS_ADMIN: cpusets, namespaces.
    pub const SYS_ADMIN: u32 = 21;
    /// CAP_NET_ADMIN: traffic control, veth.
    pub const NET_ADMIN: u32 = 12;
}

/// True when the process holds the capability in its effective set.
pub fn has_capability(cap: u32) -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|mask| mask & (1u64 << cap) != 0)
}

/// What `mlockall` granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryLockGrant {
    /// Pages mapped now are locked.
    pub current: bool,
    /// Pages mapped later are locked too.
    pub future: bool,
    /// Why less than both was granted.
    pub refusal: Option<String>,
}

impl MemoryLockGrant {
    /// Nothing was asked for.
    pub fn not_requested() -> Self {
        MemoryLockGrant {
            current: false,
            future: false,
            refusal: Some("not requested".into()),
        }
    }
}

/// Locks the process's memory (`mlockall`).
///
/// `MCL_FUTURE` is only asked for when the process may lock without limit
/// (`CAP_IPC_LOCK` or an unlimited `RLIMIT_MEMLOCK`): with a small limit it would make
/// later allocations fail. Otherwise only the pages mapped now are locked, and the grant
/// says so.
pub fn lock_memory() -> MemoryLockGrant {
    let memlock = rlimit(libc::RLIMIT_MEMLOCK);
    let unlimited = memlock.soft.is_none() || has_capability(cap::IPC_LOCK);
    let flags = if unlimited {
        libc::MCL_CURRENT | libc::MCL_FUTURE
    } else {
        libc::MCL_CURRENT
    };
    // SAFETY: mlockall has no memory-safety preconditions.
    let rc = unsafe { libc::mlockall(flags) };
    if rc == 0 {
        MemoryLockGrant {
            current: true,
            future: unlimited,
            refusal: (!unlimited).then(|| {
                format!(
                    "only memory mapped now is locked: RLIMIT_MEMLOCK is {} KiB; raise it \
                     ('@audio - memlock unlimited' in /etc/security/limits.d/audio.conf)",
                    memlock.soft.unwrap_or(0) / 1024
                )
            }),
        }
    } else {
        MemoryLockGrant {
            current: false,
            future: false,
            refusal: Some(format!(
                "mlockall failed ({}); RLIMIT_MEMLOCK is {} KiB: raise it \
                 ('@audio - memlock unlimited' in /etc/security/limits.d/audio.conf) or run as root",
                std::io::Error::last_os_error(),
                memlock.soft.map_or("unlimited".into(), |v| (v / 1024).to_string())
            )),
        }
    }
}

/// Touches `bytes` of the calling thread's stack so that its pages are resident (and,
/// after `mlockall`, locked) before the real-time loop: a first touch in the loop would
/// be a page fault. The thread's stack must be larger than `bytes`.
pub fn prefault_stack(bytes: usize) {
    const CHUNK: usize = 16 * 1024;
    #[inline(never)]
    fn touch(depth: usize) {
        let mut chunk = [0u8; CHUNK];
        std::hint::black_box(&mut chunk);
        if depth > 1 {
            touch(depth - 1);
        }
        std::hint::black_box(&chunk);
    }
    if bytes > 0 {
        touch(bytes.div_ceil(CHUNK));
    }
}

/// What `/dev/cpu_dma_latency` granted.
#[derive(Debug)]
pub struct DmaLatencyGrant {
    file: Option<File>,
    /// The value asked for, in microseconds.
    pub requested_us: i32,
    /// The system-wide PM QoS target read back while held, in microseconds.
    pub granted_us: Option<i32>,
    /// Why it could not be held.
    pub refusal: Option<String>,
}

impl DmaLatencyGrant {
    /// True while the request is held.
    pub fn is_held(&self) -> bool {
        self.file.is_some()
    }

    /// Holds `/dev/cpu_dma_latency` open at `us` microseconds, which keeps the CPUs out
    /// of deep idle states (their exit latency would add to every wake-up) until the
    /// grant is dropped.
    pub fn hold(us: i32) -> DmaLatencyGrant {
        let path = "/dev/cpu_dma_latency";
        let opened = OpenOptions::new().read(true).write(true).open(path);
        let mut file = match opened {
            Ok(f) => f,
            Err(e) => {
                return DmaLatencyGrant {
                    file: None,
                    requested_us: us,
                    granted_us: None,
                    refusal: Some(format!(
                        "{path}: {e}; deep CPU idle states stay allowed (run as root to hold it)"
                    )),
                }
            }
        };
        if let Err(e) = file.write_all(&us.to_ne_bytes()) {
            return DmaLatencyGrant {
                file: None,
                requested_us: us,
                granted_us: None,
                refusal: Some(format!("{path}: write failed: {e}")),
            };
        }
        let mut buf = [0u8; 4];
        let granted = File::open(path)
            .and_then(|mut f| f.read_exact(&mut buf))
            .ok()
            .map(|_| i32::from_ne_bytes(buf));
        DmaLatencyGrant {
            file: Some(file),
            requested_us: us,
            granted_us: granted,
            refusal: None,
        }
    }
}

/// Process-wide real-time state, held for the duration of a run.
#[derive(Debug)]
pub struct ProcessRt {
    /// What `mlockall` granted.
    pub memory: MemoryLockGrant,
    /// The `/dev/cpu_dma_latency` request, if one was made.
    pub dma_latency: Option<DmaLatencyGrant>,
}

impl ProcessRt {
    /// Locks memory (when `lock`) and holds `/dev/cpu_dma_latency` at `dma_latency_us`
    /// (when given). Released on drop.
    pub fn setup(lock: bool, dma_latency_us: Option<i32>) -> ProcessRt {
        let memory = if lock {
            lock_memory()
        } else {
            MemoryLockGrant::not_requested()
        };
        ProcessRt {
            memory,
            dma_latency: dma_latency_us.map(DmaLatencyGrant::hold),
        }
    }
}

impl Drop for ProcessRt {
    fn drop(&mut self) {
        if self.memory.current {
            // SAFETY: no preconditions.
            unsafe { libc::munlockall() };
        }
        // The DmaLatencyGrant's file closes itself, which drops the PM QoS request.
    }
}

/// What a thread got when it set itself up for real-time work.
#[derive(Debug, Clone)]
pub struct ThreadRt {
    /// Scheduling policy requested and granted.
    pub sched: SchedGrant,
    /// CPUs requested, if any.
    pub cpus_requested: Option<Vec<usize>>,
    /// CPUs the thread may run on now.
    pub cpus_granted: Vec<usize>,
    /// Why pinning failed, if it did.
    pub affinity_refusal: Option<String>,
    /// Bytes of stack touched before the loop.
    pub stack_prefaulted: usize,
    /// The thread's kernel id.
    pub tid: i32,
}

impl ThreadRt {
    /// Pins the calling thread (when `cpus` is given), sets its policy, and prefaults
    /// `prefault_bytes` of its stack. Affinity comes first: SCHED_DEADLINE refuses a
    /// thread whose affinity is narrower than its root domain, and the grant says so.
    pub fn apply(policy: &Policy, cpus: Option<&[usize]>, prefault_bytes: usize) -> ThreadRt {
        let affinity_refusal =
            cpus.and_then(|c| set_current_thread_affinity(c).err().map(|e| e.to_string()));
        let sched = set_current_thread_policy(policy);
        prefault_stack(prefault_bytes);
        ThreadRt {
            sched,
            cpus_requested: cpus.map(<[usize]>::to_vec),
            cpus_granted: current_thread_affinity(),
            affinity_refusal,
            stack_prefaulted: prefault_bytes,
            // SAFETY: gettid has no preconditions.
            tid: unsafe { libc::gettid() },
        }
    }

    /// True when the thread runs in a real-time class and got the CPUs it asked for.
    pub fn is_realtime(&self) -> bool {
        self.sched.is_realtime()
    }
}

#[cfg(test)]
mod tests;
