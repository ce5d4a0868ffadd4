//! How far a plan run is: cells done of all, and the time left, estimated from the cells
//! timed so far. The caller draws it (`report::view::plan::progress_line`).

use std::time::{Duration, Instant};

/// Cells done of all, since when, and how long each cell that ran took.
#[derive(Debug, Clone)]
pub struct PlanProgress {
    /// Cells in the plan run.
    pub total: usize,
    /// Cells done (stored complete before this start, or ended since).
    pub done: usize,
    /// When this start of the plan run began.
    pub started: Instant,
    timed: Vec<Duration>,
}

impl PlanProgress {
    /// `total` cells, `done` of them already.
    pub fn new(total: usize, done: usize) -> PlanProgress {
        PlanProgress {
            total,
            done,
            started: Instant::now(),
            timed: Vec::new(),
        }
    }

    /// A cell ended: its process took `took` (`None`: it did not start), and it
    /// `counts` among the cells done (as [`PlanObserver::cell_ended`](super::PlanObserver::cell_ended)).
    pub fn cell_ended(&mut self, took: Option<Duration>, counts: bool) {
        self.timed.extend(took);
        if counts {
            self.done += 1;
        }
    }

    /// The time left: the mean time of the cells timed so far for each cell not done;
    /// `None` until a cell has been timed.
    pub fn time_left(&self) -> Option<Duration> {
        if self.timed.is_empty() {
            return None;
        }
        let mean =
            self.timed.iter().map(Duration::as_secs_f64).sum::<f64>() / self.timed.len() as f64;
        Some(Duration::from_secs_f64(
            mean * self.total.saturating_sub(self.done) as f64,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_left_is_the_mean_cell_time_per_cell_not_done() {
        let mut p = PlanProgress::new(4, 1);
        assert_eq!(p.time_left(), None, "nothing timed yet");
        p.cell_ended(Some(Duration::from_secs(10)), true);
        p.cell_ended(Some(Duration::from_secs(20)), false);
        p.cell_ended(None, true);
        assert_eq!(p.done, 3);
        assert_eq!(p.time_left(), Some(Duration::from_secs(15)));
    }
}
