//! A thread's [`Policy`] from what a user chooses: a scheduling class, maybe a priority,
//! and for SCHED_DEADLINE the reservation (its runtime and deadline, or defaults from
//! the period and how busy the thread is). The choices no policy can take are refused
//! with a [`PolicyChoiceError`] that names them.

use std::time::Duration;

use super::policy::{Policy, RtError};

/// A real-time class's priority when none is chosen.
pub const DEFAULT_RT_PRIORITY: u32 = 80;

/// A SCHED_DEADLINE reservation's smallest default runtime, in ns.
const MIN_DEFAULT_RUNTIME_NS: u64 = 20_000;

/// A Linux scheduling class, without its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedClass {
    /// SCHED_FIFO.
    Fifo,
    /// SCHED_RR.
    RoundRobin,
    /// SCHED_OTHER.
    Other,
    /// SCHED_BATCH.
    Batch,
    /// SCHED_IDLE.
    Idle,
    /// SCHED_DEADLINE.
    Deadline,
}

impl SchedClass {
    /// The kernel's name: `SCHED_FIFO` ...
    pub fn kernel_name(self) -> &'static str {
        match self {
            SchedClass::Fifo => "SCHED_FIFO",
            SchedClass::RoundRobin => "SCHED_RR",
            SchedClass::Other => "SCHED_OTHER",
            SchedClass::Batch => "SCHED_BATCH",
            SchedClass::Idle => "SCHED_IDLE",
            SchedClass::Deadline => "SCHED_DEADLINE",
        }
    }
}

/// A scheduling class's name that is none of [`SchedClass`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown policy '{0}': use fifo, rr, other, batch, idle or deadline")]
pub struct UnknownSchedClass(pub String);

impl std::str::FromStr for SchedClass {
    type Err = UnknownSchedClass;

    /// `fifo`, `rr`, `other`, `batch`, `idle` or `deadline`, in any case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "fifo" => SchedClass::Fifo,
            "rr" => SchedClass::RoundRobin,
            "other" => SchedClass::Other,
            "batch" => SchedClass::Batch,
            "idle" => SchedClass::Idle,
            "deadline" => SchedClass::Deadline,
            _ => return Err(UnknownSchedClass(s.to_string())),
        })
    }
}

/// What a SCHED_DEADLINE reservation is made of: the thread's period, how busy it is
/// in each, and the runtime and deadline when chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reservation {
    /// The reservation's period, in ns (the thread's period).
    pub period_ns: u64,
    /// The share of each period the thread is busy, in percent (0 up to 100).
    pub busy_percent: f64,
    /// The runtime (`None`: the busy share plus a tenth of the period, at most 95% of
    /// it, at least 20 us).
    pub runtime: Option<Duration>,
    /// The relative deadline (`None`: the period).
    pub deadline: Option<Duration>,
}

/// A choice of class, priority and reservation no policy can take.
#[derive(Debug, thiserror::Error)]
pub enum PolicyChoiceError {
    /// A real-time priority outside 1..=99.
    #[error("priority {priority} is out of range for {class}: use 1..99", class = .class.kernel_name())]
    PriorityOutOfRange {
        /// The class (FIFO or RR).
        class: SchedClass,
        /// The priority chosen.
        priority: i64,
    },
    /// A priority for a class that has none.
    #[error("priority {priority} has no meaning for {class}: only SCHED_FIFO and SCHED_RR take one", class = .class.kernel_name())]
    PriorityWithoutMeaning {
        /// The class.
        class: SchedClass,
        /// The priority chosen.
        priority: i64,
    },
    /// A deadline reservation's runtime or deadline for another class.
    #[error("a reservation's runtime and deadline are SCHED_DEADLINE's: {class} takes none", class = .0.kernel_name())]
    ReservationWithoutDeadline(SchedClass),
    /// The policy is not one the kernel takes (a reservation out of order).
    #[error(transparent)]
    Invalid(#[from] RtError),
}

impl Policy {
    /// The policy of `class`: at `priority` (`None`: [`DEFAULT_RT_PRIORITY`]) for FIFO
    /// and RR, nice 0 for OTHER and BATCH, and `reservation` for DEADLINE (only its
    /// period and busy share are read for other classes).
    pub fn choose(
        class: SchedClass,
        priority: Option<i64>,
        reservation: &Reservation,
    ) -> Result<Policy, PolicyChoiceError> {
        if class != SchedClass::Deadline
            && (reservation.runtime.is_some() || reservation.deadline.is_some())
        {
            return Err(PolicyChoiceError::ReservationWithoutDeadline(class));
        }
        let rt_priority = || -> Result<u32, PolicyChoiceError> {
            let p = priority.unwrap_or(DEFAULT_RT_PRIORITY as i64);
            if !(1..=99).contains(&p) {
                return Err(PolicyChoiceError::PriorityOutOfRange { class, priority: p });
            }
            Ok(p as u32)
        };
        let no_priority = || match priority {
            Some(priority) => Err(PolicyChoiceError::PriorityWithoutMeaning { class, priority }),
            None => Ok(()),
        };
        let policy = match class {
            SchedClass::Fifo => Policy::Fifo {
                priority: rt_priority()?,
            },
            SchedClass::RoundRobin => Policy::RoundRobin {
                priority: rt_priority()?,
            },
            SchedClass::Other => {
                no_priority()?;
                Policy::Other { nice: 0 }
            }
            SchedClass::Batch => {
                no_priority()?;
                Policy::Batch { nice: 0 }
            }
            SchedClass::Idle => {
                no_priority()?;
                Policy::Idle
            }
            SchedClass::Deadline => {
                no_priority()?;
                reservation.policy()
            }
        };
        policy.validate()?;
        Ok(policy)
    }
}

impl Reservation {
    /// The SCHED_DEADLINE policy of this reservation, defaults filled in.
    fn policy(&self) -> Policy {
        let period = self.period_ns as f64;
        let default_runtime =
            ((period * (self.busy_percent / 100.0 + 0.1)).min(period * 0.95)) as u64;
        Policy::Deadline {
            runtime_ns: self
                .runtime
                .map_or(default_runtime.max(MIN_DEFAULT_RUNTIME_NS), |d| {
                    d.as_nanos() as u64
                }),
            deadline_ns: self
                .deadline
                .map_or(self.period_ns, |d| d.as_nanos() as u64),
            period_ns: self.period_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn period(busy_percent: f64) -> Reservation {
        Reservation {
            period_ns: 1_000_000,
            busy_percent,
            runtime: None,
            deadline: None,
        }
    }

    #[test]
    fn class_names() {
        assert_eq!("fifo".parse(), Ok(SchedClass::Fifo));
        assert_eq!("RR".parse(), Ok(SchedClass::RoundRobin));
        assert_eq!("Deadline".parse(), Ok(SchedClass::Deadline));
        assert_eq!(
            "edf".parse::<SchedClass>().unwrap_err().to_string(),
            "unknown policy 'edf': use fifo, rr, other, batch, idle or deadline"
        );
    }

    #[test]
    fn priorities() {
        let fifo = |p| Policy::choose(SchedClass::Fifo, p, &period(0.0));
        assert_eq!(fifo(None).unwrap(), Policy::Fifo { priority: 80 });
        assert!(matches!(
            fifo(Some(0)),
            Err(PolicyChoiceError::PriorityOutOfRange { priority: 0, .. })
        ));
        assert!(fifo(Some(100)).is_err());
        assert!(matches!(
            Policy::choose(SchedClass::Other, Some(10), &period(0.0)),
            Err(PolicyChoiceError::PriorityWithoutMeaning {
                class: SchedClass::Other,
                priority: 10
            })
        ));
    }

    #[test]
    fn deadline_reservations() {
        assert_eq!(
            Policy::choose(SchedClass::Deadline, None, &period(50.0)).unwrap(),
            Policy::Deadline {
                runtime_ns: 600_000,
                deadline_ns: 1_000_000,
                period_ns: 1_000_000
            }
        );
        // At most 95% of the period, at least 20 us.
        let Policy::Deadline { runtime_ns, .. } =
            Policy::choose(SchedClass::Deadline, None, &period(99.0)).unwrap()
        else {
            panic!("a deadline policy");
        };
        assert_eq!(runtime_ns, 950_000);
        let short = Reservation {
            period_ns: 100_000,
            ..period(0.0)
        };
        let Policy::Deadline { runtime_ns, .. } =
            Policy::choose(SchedClass::Deadline, None, &short).unwrap()
        else {
            panic!("a deadline policy");
        };
        assert_eq!(runtime_ns, 20_000);
        let chosen = Reservation {
            runtime: Some(Duration::from_micros(100)),
            ..period(0.0)
        };
        assert!(matches!(
            Policy::choose(SchedClass::Fifo, None, &chosen),
            Err(PolicyChoiceError::ReservationWithoutDeadline(
                SchedClass::Fifo
            ))
        ));
        let late = Reservation {
            runtime: Some(Duration::from_millis(2)),
            ..period(0.0)
        };
        assert!(matches!(
            Policy::choose(SchedClass::Deadline, None, &late),
            Err(PolicyChoiceError::Invalid(_))
        ));
    }
}
