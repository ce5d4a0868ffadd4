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
            PolicyChoiceError::Invalid(e @ engine::rt::RtError::BadDeadline { .. }) => format!(
                "--dl-runtime and --dl-deadline (and the period --rate or --interval gives): {e}"
            ),
            PolicyChoiceError::Invalid(e) => e.to_string(),
        })
    })
}
