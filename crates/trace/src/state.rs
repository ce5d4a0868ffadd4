//! What one CPU is doing at a moment, replayed from its events: the task current on
//! it and the interrupts nested over that task.

use crate::event::{Comm, Event, Kind};

/// A task as the scheduler's events name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Task {
    /// Its thread id (0: the idle task).
    pub pid: i32,
    /// Its name.
    pub comm: Comm,
    /// Its kernel priority (0..=99 real-time, 100..=139 normal, -1 deadline).
    pub prio: i32,
}

/// An interrupt context over the current task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Interrupt {
    /// A device's hard IRQ: number and the index of its handler's name.
    Irq {
        /// The IRQ's number.
        irq: i32,
        /// Its handler's name (an index into the decoder's names).
        name: u32,
    },
    /// An interrupt vector (local timer, an IPI): the index of its name.
    Vector {
        /// Its name (an index into the decoder's names).
        name: u32,
    },
    /// A softirq vector.
    Softirq {
        /// The vector.
        vec: u32,
    },
}

/// Deepest nesting kept; deeper entries are counted in the innermost kept.
const MAX_NESTING: usize = 8;

/// One CPU's state: the current task (`None` until a switch says) and the interrupts
/// nested over it, innermost last.
#[derive(Debug, Clone, Default)]
pub struct CpuState {
    /// The task current on the CPU, once known.
    pub current: Option<Task>,
    nesting: [Option<Interrupt>; MAX_NESTING],
    depth: usize,
}

impl CpuState {
    /// The innermost interrupt, if any.
    pub fn interrupt(&self) -> Option<Interrupt> {
        self.depth.checked_sub(1).and_then(|d| self.nesting[d])
    }

    fn push(&mut self, i: Interrupt) {
        if self.depth < MAX_NESTING {
            self.nesting[self.depth] = Some(i);
            self.depth += 1;
        }
    }

    /// Pops back to (and including) the innermost interrupt `is` matches; an exit
    /// with no entry seen (the window began inside it) changes nothing.
    fn pop(&mut self, is: impl Fn(&Interrupt) -> bool) {
        if let Some(at) = (0..self.depth)
            .rev()
            .find(|&d| self.nesting[d].as_ref().is_some_and(&is))
        {
            for slot in &mut self.nesting[at..self.depth] {
                *slot = None;
            }
            self.depth = at;
        }
    }

    /// Takes the task `e` names as current (its `common_pid`: in interrupt context,
    /// the task interrupted) when it is not the one the state holds: the switch to it
    /// was not traced (some kernels do not trace a switch out of the idle task), so it
    /// happened after the previous event. Any interrupt open then has ended.
    pub fn implied(&mut self, e: &Event) {
        if e.pid < 0 || matches!(e.kind, Kind::Lost { .. }) {
            return;
        }
        if self.current.is_some_and(|t| t.pid == e.pid) {
            return;
        }
        self.current = Some(Task {
            pid: e.pid,
            comm: Comm::default(),
            prio: UNKNOWN_PRIO,
        });
        self.nesting = [None; MAX_NESTING];
        self.depth = 0;
    }

    /// The state after `e`.
    pub fn apply(&mut self, e: &Event) {
        self.implied(e);
        match e.kind {
            Kind::Switch {
                next_pid,
                next_comm,
                next_prio,
                ..
            } => {
                self.current = Some(Task {
                    pid: next_pid,
                    comm: next_comm,
                    prio: next_prio,
                });
                // A switch happens with no interrupt in progress on this CPU.
                self.nesting = [None; MAX_NESTING];
                self.depth = 0;
            }
            Kind::IrqEntry { irq, name } => self.push(Interrupt::Irq { irq, name }),
            Kind::IrqExit { irq } => {
                self.pop(|i| matches!(i, Interrupt::Irq { irq: n, .. } if *n == irq))
            }
            Kind::VectorEntry { name } => self.push(Interrupt::Vector { name }),
            Kind::VectorExit { name } => {
                self.pop(|i| matches!(i, Interrupt::Vector { name: n } if *n == name))
            }
            Kind::SoftirqEntry { vec } => self.push(Interrupt::Softirq { vec }),
            Kind::SoftirqExit { vec } => {
                self.pop(|i| matches!(i, Interrupt::Softirq { vec: v } if *v == vec))
            }
            _ => {}
        }
    }
}

/// A task's priority not yet seen in a switch.
pub const UNKNOWN_PRIO: i32 = i32::MIN;

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: Kind) -> Event {
        Event {
            ts_ns: 0,
            pid: 5,
            flags: 0,
            kind,
        }
    }

    #[test]
    fn interrupts_nest_and_unwind_and_a_switch_clears_them() {
        let mut s = CpuState::default();
        s.apply(&ev(Kind::VectorEntry { name: 1 }));
        assert_eq!(
            s.current.unwrap().pid,
            5,
            "an event names the task it interrupted"
        );
        s.apply(&ev(Kind::SoftirqEntry { vec: 3 }));
        assert_eq!(s.interrupt(), Some(Interrupt::Softirq { vec: 3 }));
        s.apply(&ev(Kind::IrqExit { irq: 9 })); // never entered: ignored
        assert_eq!(s.interrupt(), Some(Interrupt::Softirq { vec: 3 }));
        s.apply(&ev(Kind::VectorExit { name: 1 })); // unwinds what it left open too
        assert_eq!(s.interrupt(), None);
        s.apply(&ev(Kind::IrqEntry { irq: 4, name: 0 }));
        s.apply(&ev(Kind::Switch {
            prev_pid: 5,
            prev_comm: Comm::from_name("a"),
            prev_prio: 120,
            prev_state: 0,
            next_pid: 6,
            next_comm: Comm::from_name("b"),
            next_prio: 10,
        }));
        assert_eq!(s.interrupt(), None);
        assert_eq!(s.current.unwrap().pid, 6);
        // An event of another task: the switch to it was not traced.
        s.apply(&ev(Kind::IrqEntry { irq: 4, name: 0 }));
        assert_eq!(s.current.unwrap().pid, 5);
    }
}
