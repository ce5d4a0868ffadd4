//! The scheduling policy flags (`--policy`, `--priority`, SCHED_DEADLINE's shares) and
//! the one function that turns them into an [`engine::rt::Policy`] (stage two, shared by
//! jitter and net): the engine chooses the policy, this words its refusals with the flags.

use std::time::Duration;

use engine::rt::{Policy, PolicyChoiceError, Reservation, SchedClass};

use super::UsageError;

/// Builds the scheduling policy from the flags ([`Policy::choose`], its refusals worded
/// with the flags).
pub fn policy(
    class: SchedClass,
    priority: Option<i64>,
    period_ns: u64,
    busy_percent: f64,
    dl_runtime: Option<Duration>,
    dl_deadline: Option<Duration>,
) -> Result<Policy, UsageError> {
    let reservation = Reservation {
        period_ns,
        busy_percent,
        runtime: dl_runtime,
        deadline: dl_deadline,
    };
    Policy::choose(class, priority, &reservation).map_err(|e| {
        UsageError(match e {
            PolicyChoiceError::PriorityOutOfRange { class, priority } => format!(
                "--priority {priority} is out of range for {}: use 1..99",
                class.kernel_name()
            ),
            PolicyChoiceError::PriorityWithoutMeaning { class, priority } => format!(
                "--priority {priority} has no meaning for {}: use --policy fifo or rr to set a priority",
                class.kernel_name()
            ),
            PolicyChoiceError::ReservationWithoutDeadline(_) => {
                "--dl-runtime and --dl-deadline need --policy deadline".into()
            }
            PolicyChoiceError::Invalid(e) => e.to_string(),
        })
    })
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
        assert_eq!(
            policy(SchedClass::RoundRobin, Some(0), 1_000_000, 0.0, None, None)
                .unwrap_err()
                .to_string(),
            "--priority 0 is out of range for SCHED_RR: use 1..99"
        );
        assert_eq!(
            policy(SchedClass::Idle, Some(5), 1_000_000, 0.0, None, None)
                .unwrap_err()
                .to_string(),
            "--priority 5 has no meaning for SCHED_IDLE: use --policy fifo or rr to set a priority"
        );
        assert!(policy(SchedClass::Fifo, Some(100), 1_000_000, 0.0, None, None).is_err());
        assert!(policy(SchedClass::Other, Some(10), 1_000_000, 0.0, None, None).is_err());
        assert_eq!(
            policy(SchedClass::Deadline, None, 1_000_000, 50.0, None, None).unwrap(),
            Policy::Deadline {
                runtime_ns: 600_000,
                deadline_ns: 1_000_000,
                period_ns: 1_000_000
            }
        );
    }
}
