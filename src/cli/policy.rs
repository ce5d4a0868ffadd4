//! The scheduling policy flags (`--policy`, `--priority`, SCHED_DEADLINE's shares) and
//! the one function that turns them into an [`engine::rt::Policy`] (stage two, shared by
//! jitter and net).

use std::time::Duration;

use clap::ValueEnum;
use engine::rt::Policy;

use super::UsageError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PolicyName {
    /// SCHED_FIFO (real-time, default)
    Fifo,
    /// SCHED_RR (real-time, round robin)
    Rr,
    /// SCHED_OTHER (not real-time)
    Other,
    /// SCHED_BATCH (not real-time)
    Batch,
    /// SCHED_IDLE (not real-time)
    Idle,
    /// SCHED_DEADLINE (EDF reservation)
    Deadline,
}

pub(super) fn parse_policy_name(s: &str) -> Result<PolicyName, String> {
    PolicyName::from_str(s, true)
        .map_err(|_| format!("unknown policy '{s}': use fifo, rr, other, batch, idle or deadline"))
}

/// Builds the scheduling policy from the flags.
pub fn policy(
    name: PolicyName,
    priority: Option<i64>,
    period_ns: u64,
    busy_percent: f64,
    dl_runtime: Option<Duration>,
    dl_deadline: Option<Duration>,
) -> Result<Policy, UsageError> {
    let prio = |default: i64| -> Result<u32, UsageError> {
        let p = priority.unwrap_or(default);
        if !(1..=99).contains(&p) {
            return Err(UsageError(format!(
                "--priority {p} is out of range for {}: use 1..99",
                if name == PolicyName::Rr {
                    "SCHED_RR"
                } else {
                    "SCHED_FIFO"
                }
            )));
        }
        Ok(p as u32)
    };
    let no_prio = |what: &str| -> Result<(), UsageError> {
        match priority {
            Some(p) => Err(UsageError(format!(
                "--priority {p} has no meaning for {what}: use --policy fifo or rr to set a priority"
            ))),
            None => Ok(()),
        }
    };
    if name != PolicyName::Deadline && (dl_runtime.is_some() || dl_deadline.is_some()) {
        return Err(UsageError(
            "--dl-runtime and --dl-deadline need --policy deadline".into(),
        ));
    }
    let policy = match name {
        PolicyName::Fifo => Policy::Fifo {
            priority: prio(80)?,
        },
        PolicyName::Rr => Policy::RoundRobin {
            priority: prio(80)?,
        },
        PolicyName::Other => {
            no_prio("SCHED_OTHER")?;
            Policy::Other { nice: 0 }
        }
        PolicyName::Batch => {
            no_prio("SCHED_BATCH")?;
            Policy::Batch { nice: 0 }
        }
        PolicyName::Idle => {
            no_prio("SCHED_IDLE")?;
            Policy::Idle
        }
        PolicyName::Deadline => {
            no_prio("SCHED_DEADLINE")?;
            let default_runtime = ((period_ns as f64 * (busy_percent / 100.0 + 0.1))
                .min(period_ns as f64 * 0.95)) as u64;
            let runtime_ns =
                dl_runtime.map_or(default_runtime.max(20_000), |d| d.as_nanos() as u64);
            let deadline_ns = dl_deadline.map_or(period_ns, |d| d.as_nanos() as u64);
            Policy::Deadline {
                runtime_ns,
                deadline_ns,
                period_ns,
            }
        }
    };
    policy.validate().map_err(|e| UsageError(e.to_string()))?;
    Ok(policy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::values::parse_rate;

    #[test]
    fn rate_and_priority_validation() {
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("-5").is_err());
        assert_eq!(parse_rate("2048").unwrap(), 2048.0);
        assert!(policy(PolicyName::Fifo, Some(0), 1_000_000, 0.0, None, None).is_err());
        assert!(policy(PolicyName::Fifo, Some(100), 1_000_000, 0.0, None, None).is_err());
        assert!(policy(PolicyName::Other, Some(10), 1_000_000, 0.0, None, None).is_err());
        assert_eq!(
            policy(PolicyName::Deadline, None, 1_000_000, 50.0, None, None).unwrap(),
            Policy::Deadline {
                runtime_ns: 600_000,
                deadline_ns: 1_000_000,
                period_ns: 1_000_000
            }
        );
    }
}
