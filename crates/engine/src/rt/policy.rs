//! A Linux scheduling policy with its parameters ([`Policy`]), checked against the
//! kernel's limits, and why a real-time request is refused or invalid ([`RtError`]).
//! Below the rest of [`rt`](super): what sets a policy, chooses one or pins a thread
//! names these, never the reverse.

use std::fmt;

/// A Linux scheduling policy with its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// SCHED_OTHER (CFS/EEVDF) at a nice value (-20..=19).
    Other {
        /// Nice value, -20 (most favoured) to 19.
        nice: i32,
    },
    /// SCHED_BATCH at a nice value: CPU-bound, never preempts on wake-up.
    Batch {
        /// Nice value, -20 to 19.
        nice: i32,
    },
    /// SCHED_IDLE: runs only when nothing else wants the CPU.
    Idle,
    /// SCHED_FIFO at a static priority (1..=99).
    Fifo {
        /// Static priority, 1 (lowest) to 99.
        priority: u32,
    },
    /// SCHED_RR at a static priority (1..=99).
    RoundRobin {
        /// Static priority, 1 (lowest) to 99.
        priority: u32,
    },
    /// SCHED_DEADLINE (EDF with constant-bandwidth servers):
    /// `runtime_ns <= deadline_ns <= period_ns`.
    Deadline {
        /// CPU time reserved per period.
        runtime_ns: u64,
        /// Relative deadline of each job.
        deadline_ns: u64,
        /// Reservation period.
        period_ns: u64,
    },
}

const SCHED_DEADLINE: u32 = 6;

/// The kernel's `struct sched_attr` (SCHED_ATTR_SIZE_VER0, 48 bytes).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct SchedAttr {
    pub(super) size: u32,
    pub(super) sched_policy: u32,
    pub(super) sched_flags: u64,
    pub(super) sched_nice: i32,
    pub(super) sched_priority: u32,
    pub(super) sched_runtime: u64,
    pub(super) sched_deadline: u64,
    pub(super) sched_period: u64,
}

impl Policy {
    /// The policy's name as audiolat's command line spells it.
    pub fn name(&self) -> &'static str {
        match self {
            Policy::Other { .. } => "other",
            Policy::Batch { .. } => "batch",
            Policy::Idle => "idle",
            Policy::Fifo { .. } => "fifo",
            Policy::RoundRobin { .. } => "rr",
            Policy::Deadline { .. } => "deadline",
        }
    }

    /// The kernel's name for the policy.
    pub fn kernel_name(&self) -> &'static str {
        match self {
            Policy::Other { .. } => "SCHED_OTHER",
            Policy::Batch { .. } => "SCHED_BATCH",
            Policy::Idle => "SCHED_IDLE",
            Policy::Fifo { .. } => "SCHED_FIFO",
            Policy::RoundRobin { .. } => "SCHED_RR",
            Policy::Deadline { .. } => "SCHED_DEADLINE",
        }
    }

    /// True for the real-time classes: FIFO, RR and DEADLINE.
    pub fn is_realtime(&self) -> bool {
        matches!(
            self,
            Policy::Fifo { .. } | Policy::RoundRobin { .. } | Policy::Deadline { .. }
        )
    }

    /// The static priority (FIFO/RR), or 0.
    pub fn priority(&self) -> u32 {
        match self {
            Policy::Fifo { priority } | Policy::RoundRobin { priority } => *priority,
            _ => 0,
        }
    }

    /// Checks the parameters against the kernel's limits, before anything is started.
    pub fn validate(&self) -> Result<(), RtError> {
        match *self {
            Policy::Fifo { priority } | Policy::RoundRobin { priority } => {
                let (min, max) = priority_range(self);
                if priority < min || priority > max {
                    return Err(RtError::PriorityOutOfRange {
                        policy: self.kernel_name(),
                        priority: priority as i64,
                        min,
                        max,
                    });
                }
            }
            Policy::Other { nice } | Policy::Batch { nice } => {
                if !(-20..=19).contains(&nice) {
                    return Err(RtError::NiceOutOfRange { nice });
                }
            }
            Policy::Idle => {}
            Policy::Deadline {
                runtime_ns,
                deadline_ns,
                period_ns,
            } => {
                if runtime_ns < 1024 || runtime_ns > deadline_ns || deadline_ns > period_ns {
                    return Err(RtError::BadDeadline {
                        reason: format!(
                            "need 1024 ns <= runtime <= deadline <= period, got runtime {runtime_ns} ns, \
                             deadline {deadline_ns} ns, period {period_ns} ns"
                        ),
                    });
                }
                let min_us =
                    read_u64("/proc/sys/kernel/sched_deadline_period_min_us").unwrap_or(100);
                let max_us =
                    read_u64("/proc/sys/kernel/sched_deadline_period_max_us").unwrap_or(1 << 22);
                if period_ns < min_us * 1000 || period_ns > max_us * 1000 {
                    return Err(RtError::BadDeadline {
                        reason: format!(
                            "period {period_ns} ns is outside the kernel's range {min_us}..{max_us} us \
                             (kernel.sched_deadline_period_min_us / _max_us)"
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    pub(super) fn to_attr(self) -> SchedAttr {
        let mut attr = SchedAttr {
            size: std::mem::size_of::<SchedAttr>() as u32,
            ..SchedAttr::default()
        };
        match self {
            Policy::Other { nice } => {
                attr.sched_policy = libc::SCHED_OTHER as u32;
                attr.sched_nice = nice;
            }
            Policy::Batch { nice } => {
                attr.sched_policy = libc::SCHED_BATCH as u32;
                attr.sched_nice = nice;
            }
            Policy::Idle => attr.sched_policy = libc::SCHED_IDLE as u32,
            Policy::Fifo { priority } => {
                attr.sched_policy = libc::SCHED_FIFO as u32;
                attr.sched_priority = priority;
            }
            Policy::RoundRobin { priority } => {
                attr.sched_policy = libc::SCHED_RR as u32;
                attr.sched_priority = priority;
            }
            Policy::Deadline {
                runtime_ns,
                deadline_ns,
                period_ns,
            } => {
                attr.sched_policy = SCHED_DEADLINE;
                attr.sched_runtime = runtime_ns;
                attr.sched_deadline = deadline_ns;
                attr.sched_period = period_ns;
            }
        }
        attr
    }

    pub(super) fn from_attr(attr: &SchedAttr) -> Policy {
        match attr.sched_policy {
            p if p == libc::SCHED_FIFO as u32 => Policy::Fifo {
                priority: attr.sched_priority,
            },
            p if p == libc::SCHED_RR as u32 => Policy::RoundRobin {
                priority: attr.sched_priority,
            },
            p if p == libc::SCHED_BATCH as u32 => Policy::Batch {
                nice: attr.sched_nice,
            },
            p if p == libc::SCHED_IDLE as u32 => Policy::Idle,
            SCHED_DEADLINE => Policy::Deadline {
                runtime_ns: attr.sched_runtime,
                deadline_ns: attr.sched_deadline,
                period_ns: attr.sched_period,
            },
            _ => Policy::Other {
                nice: attr.sched_nice,
            },
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Policy::Other { nice } | Policy::Batch { nice } => {
                write!(f, "{} nice {}", self.kernel_name(), nice)
            }
            Policy::Idle => write!(f, "SCHED_IDLE"),
            Policy::Fifo { priority } | Policy::RoundRobin { priority } => {
                write!(f, "{} {}", self.kernel_name(), priority)
            }
            Policy::Deadline {
                runtime_ns,
                deadline_ns,
                period_ns,
            } => write!(
                f,
                "SCHED_DEADLINE runtime {runtime_ns} ns / deadline {deadline_ns} ns / period {period_ns} ns"
            ),
        }
    }
}

/// The static priority range the kernel accepts for a policy (1..=99 for FIFO/RR).
pub fn priority_range(policy: &Policy) -> (u32, u32) {
    let id = match policy {
        Policy::Fifo { .. } => libc::SCHED_FIFO,
        Policy::RoundRobin { .. } => libc::SCHED_RR,
        _ => return (0, 0),
    };
    // SAFETY: plain queries with a valid policy id.
    let (min, max) = unsafe {
        (
            libc::sched_get_priority_min(id),
            libc::sched_get_priority_max(id),
        )
    };
    (min.max(0) as u32, max.max(0) as u32)
}

/// Why a real-time request was refused or is invalid. Messages name the fix.
#[derive(Debug, thiserror::Error)]
pub enum RtError {
    /// A FIFO/RR priority outside the kernel's range.
    #[error("priority {priority} is out of range for {policy}: use {min}..{max}")]
    PriorityOutOfRange {
        /// Kernel policy name.
        policy: &'static str,
        /// The priority asked for.
        priority: i64,
        /// Lowest accepted.
        min: u32,
        /// Highest accepted.
        max: u32,
    },
    /// A nice value outside -20..=19.
    #[error("nice {nice} is out of range: use -20..19")]
    NiceOutOfRange {
        /// The nice value asked for.
        nice: i32,
    },
    /// Inconsistent SCHED_DEADLINE parameters.
    #[error("bad SCHED_DEADLINE parameters: {reason}")]
    BadDeadline {
        /// What is wrong.
        reason: String,
    },
    /// A CPU that does not exist or is offline.
    #[error("CPU {cpu} is not online (online CPUs: {online}); pick one of those")]
    NoSuchCpu {
        /// The CPU asked for.
        cpu: usize,
        /// The online CPU list, as the kernel prints it.
        online: String,
    },
    /// A system call failed.
    #[error("{what}: {source}")]
    Os {
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
}

fn read_u64(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}
