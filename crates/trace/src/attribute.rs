//! A late interval broken down into what the CPUs did during it.
//!
//! A miss says when the thread should have run (`t_ns`) and when it ran, or for a
//! cycle that overran, when it finished (`end_ns`). The thread's own scheduler events
//! split `[t_ns, end_ns)` into phases: asleep (waiting for its wake-up, or blocked on
//! something it waited for inside the interval), runnable (woken, waiting for its CPU)
//! and running. Each phase is split by what its CPU was doing, replayed from that
//! CPU's events: a hard IRQ or vector, a softirq, another thread, the idle task, the
//! thread itself. A thread's time on the CPU that its scheduler clock did not count
//! (`sched_stat_runtime` runs on the task clock, which leaves out what the host stole)
//! is the host's steal. What no event explains is `unaccounted`. The parts add up to
//! the measured lateness.

use std::collections::{HashMap, VecDeque};

use crate::event::{Comm, Event, Kind, FLAG_HARDIRQ, FLAG_SOFTIRQ};
use crate::state::{CpuState, Interrupt, UNKNOWN_PRIO};

/// What kind of lateness a miss is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MissKind {
    /// The thread woke late: the interval ends when it ran.
    Wakeup,
    /// The thread's cycle finished late: the interval ends when it finished, and its
    /// own running time is part of it.
    Overrun,
}

impl MissKind {
    /// The name stored (`kind_of_miss`).
    pub fn name(self) -> &'static str {
        match self {
            MissKind::Wakeup => "late_wakeup",
            MissKind::Overrun => "overrun",
        }
    }
}

/// A deadline a thread missed, as the probe measured it. `Copy` and small, so a
/// real-time thread can hand it over through a wait-free ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Miss {
    /// When the thread should have run, CLOCK_MONOTONIC ns.
    pub t_ns: u64,
    /// When it ran ([`MissKind::Wakeup`]) or finished ([`MissKind::Overrun`]).
    pub end_ns: u64,
    /// The thread's id (its TID).
    pub tid: i32,
    /// Which lateness.
    pub kind: MissKind,
}

impl Miss {
    /// The lateness measured: `end_ns - t_ns`.
    pub fn late_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.t_ns)
    }
}

/// What took a part of a late interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CauseKind {
    /// A hard IRQ handler or an interrupt vector (local timer, an IPI).
    Irq,
    /// A softirq vector.
    Softirq,
    /// Another thread ran on the CPU.
    Thread,
    /// The thread's own running.
    SelfTime,
    /// The thread was blocked (asleep on something other than its wake-up).
    Blocked,
    /// The CPU was idle and had to come out of it.
    IdleExit,
    /// The host ran something else on the virtual CPU.
    Steal,
    /// No event explains it.
    Unaccounted,
}

impl CauseKind {
    /// The name stored (`kind`).
    pub fn name(self) -> &'static str {
        match self {
            CauseKind::Irq => "irq",
            CauseKind::Softirq => "softirq",
            CauseKind::Thread => "thread",
            CauseKind::SelfTime => "self",
            CauseKind::Blocked => "blocked",
            CauseKind::IdleExit => "idle_exit",
            CauseKind::Steal => "steal",
            CauseKind::Unaccounted => "unaccounted",
        }
    }
}

/// One part of a late interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Cause {
    /// What it was.
    pub kind: CauseKind,
    /// Its name: a handler's, a vector's, a thread's, `idle`, `steal`, ...
    pub name: String,
    /// A thread's id (for `blocked`, the holder that woke it, when a thread did).
    pub pid: Option<i32>,
    /// The CPU it took the time on.
    pub cpu: Option<u32>,
    /// Time it took inside the interval, ns.
    pub ns: u64,
    /// The IRQ's number or the softirq's vector.
    pub number: Option<i64>,
    /// A thread's scheduling policy (`fifo`, `rr`, `other`, ...).
    pub policy: Option<String>,
    /// A thread's priority: real-time priority, or nice for a normal thread.
    pub priority: Option<i32>,
    /// The thread that was running on the CPU when the late thread woke.
    pub at_wakeup: bool,
    /// For `blocked`: the state it slept in (`S`, `D`, ...).
    pub state: Option<String>,
}

/// A miss with its breakdown.
#[derive(Debug, Clone, PartialEq)]
pub struct Explained {
    /// The miss as measured.
    pub miss: Miss,
    /// Its parts, the largest first; they add up to [`Miss::late_ns`].
    pub causes: Vec<Cause>,
    /// The ring buffer lost events inside this miss's window.
    pub events_lost: bool,
    /// The window did not reach back far enough (events pruned or not yet traced).
    pub window_short: bool,
    /// Page faults the thread took in the interval.
    pub page_faults: u32,
}

impl Explained {
    /// The part of kind `kind` named `name`, ns (0 when absent).
    pub fn ns_of(&self, kind: CauseKind, name: &str) -> u64 {
        self.causes
            .iter()
            .filter(|c| c.kind == kind && c.name == name)
            .map(|c| c.ns)
            .sum()
    }
}

/// One CPU's recent events: the state before the first of them, and from when that
/// state holds.
#[derive(Debug, Clone, Default)]
pub struct CpuWindow {
    /// The CPU.
    pub cpu: u32,
    /// The state before `events[0]`.
    pub base: CpuState,
    /// From when `base` holds (the last event folded into it); `None` before any.
    pub base_from_ns: Option<u64>,
    /// The events, oldest first.
    pub events: VecDeque<Event>,
}

impl CpuWindow {
    /// An empty window for `cpu`.
    pub fn new(cpu: u32) -> CpuWindow {
        CpuWindow {
            cpu,
            ..CpuWindow::default()
        }
    }

    /// Folds the events older than `before_ns` into the base state.
    pub fn prune(&mut self, before_ns: u64) {
        while let Some(e) = self.events.front() {
            if e.ts_ns >= before_ns {
                break;
            }
            let e = self.events.pop_front().expect("front exists");
            self.base.apply(&e);
            self.base_from_ns = Some(e.ts_ns);
        }
    }

    /// Folds the oldest events into the base state until at most `keep` remain.
    pub fn cap(&mut self, keep: usize) {
        while self.events.len() > keep {
            let e = self.events.pop_front().expect("front exists");
            self.base.apply(&e);
            self.base_from_ns = Some(e.ts_ns);
        }
    }
}

/// Names the explanation needs: IRQ handlers' and vectors' by index, tasks' by pid.
pub trait Names {
    /// An interned name (an IRQ handler's, a vector's).
    fn name(&self, index: u32) -> String;
    /// A task's name, when any event named it.
    fn comm(&self, pid: i32) -> Option<Comm>;
    /// A task's kernel priority, when any event said it.
    fn prio(&self, pid: i32) -> Option<i32>;
}

/// A thread's time on a CPU that its task clock did not count is steal only past this
/// (the clocks' update points differ by a few microseconds).
const STEAL_NOISE_NS: u64 = 20_000;

/// A run of one task on one CPU, with its task-clock time.
#[derive(Debug, Clone, Copy)]
struct Slice {
    start_ns: u64,
    end_ns: u64,
    pid: i32,
    runtime_ns: u64,
    has_runtime: bool,
}

impl Slice {
    /// The share of the slice the host stole (0 when not measurable).
    fn steal_fraction(&self) -> f64 {
        let wall = self.end_ns.saturating_sub(self.start_ns);
        if !self.has_runtime || self.pid == 0 || wall == 0 {
            return 0.0;
        }
        let missing = wall.saturating_sub(self.runtime_ns);
        if missing <= STEAL_NOISE_NS.max(wall / 50) {
            return 0.0;
        }
        missing as f64 / wall as f64
    }
}

/// The completed task slices of a window (those whose start is in it).
fn slices(events: &[Event]) -> Vec<Slice> {
    let mut out = Vec::new();
    let mut open: Option<Slice> = None;
    for e in events {
        match e.kind {
            Kind::Switch { next_pid, .. } => {
                if let Some(mut s) = open.take() {
                    s.end_ns = e.ts_ns;
                    out.push(s);
                }
                open = Some(Slice {
                    start_ns: e.ts_ns,
                    end_ns: u64::MAX,
                    pid: next_pid,
                    runtime_ns: 0,
                    has_runtime: false,
                });
            }
            Kind::Runtime { pid, runtime_ns } => {
                if let Some(s) = open.as_mut().filter(|s| s.pid == pid) {
                    s.runtime_ns += runtime_ns;
                    s.has_runtime = true;
                }
            }
            _ => {}
        }
    }
    out
}

/// A part before merging: what, on which CPU, how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Part {
    Interrupt(Interrupt),
    Task {
        pid: i32,
        comm: Comm,
        prio: i32,
        at_wakeup: bool,
    },
    SelfTime,
    Idle,
    Steal,
    Blocked {
        state: i64,
        holder: Option<i32>,
    },
    Unaccounted,
}

struct Builder<'n> {
    names: &'n dyn Names,
    victim: i32,
    parts: HashMap<(Part, Option<u32>), u64>,
    window_short: bool,
}

impl Builder<'_> {
    fn add(&mut self, part: Part, cpu: Option<u32>, ns: u64) {
        if ns > 0 {
            *self.parts.entry((part, cpu)).or_insert(0) += ns;
        }
    }

    /// What `window`'s CPU did over `[a, b)`; `mark` marks the first thread that runs
    /// in it (the one running at the wake-up). Returns whether a thread was marked.
    fn decompose(&mut self, window: Option<&mut CpuWindow>, a: u64, b: u64, mark: bool) -> bool {
        if b <= a {
            return false;
        }
        let Some(w) = window else {
            self.add(Part::Unaccounted, None, b - a);
            return false;
        };
        let cpu = Some(w.cpu);
        let events = w.events.make_contiguous();
        let slices = slices(events);
        let mut state = w.base.clone();
        let mut from = w.base_from_ns;
        let mut marked = !mark;
        let mut account = |this: &mut Self, state: &CpuState, s: u64, e: u64| {
            let (s, e) = (s.max(a), e.min(b));
            if e <= s {
                return;
            }
            let ns = e - s;
            let part = match (state.interrupt(), state.current) {
                (Some(i), _) => Part::Interrupt(i),
                (None, None) => {
                    this.window_short = true;
                    Part::Unaccounted
                }
                (None, Some(t)) if t.pid == 0 => Part::Idle,
                (None, Some(t)) if t.pid == this.victim => Part::SelfTime,
                (None, Some(t)) => {
                    let at_wakeup = !marked;
                    marked = true;
                    Part::Task {
                        pid: t.pid,
                        comm: t.comm,
                        prio: t.prio,
                        at_wakeup,
                    }
                }
            };
            let steal = match (&part, state.current) {
                (Part::Task { .. } | Part::SelfTime, Some(t)) => {
                    let i = slices.partition_point(|sl| sl.end_ns <= s);
                    slices
                        .get(i)
                        .filter(|sl| sl.pid == t.pid && sl.start_ns <= s)
                        .map_or(0, |sl| (ns as f64 * sl.steal_fraction()).round() as u64)
                }
                _ => 0,
            };
            this.add(Part::Steal, cpu, steal);
            this.add(part, cpu, ns - steal);
        };
        for e in events.iter() {
            if e.ts_ns >= b {
                break;
            }
            // The task this event names ran since the previous event, even when its
            // switch was not traced.
            state.implied(e);
            match from {
                Some(f) => account(self, &state, f, e.ts_ns),
                None => {
                    if e.ts_ns > a {
                        self.window_short = true;
                        self.add(Part::Unaccounted, cpu, e.ts_ns.min(b) - a);
                    }
                }
            }
            state.apply(e);
            from = Some(e.ts_ns);
        }
        match from {
            Some(f) => account(self, &state, f, b),
            None => {
                self.window_short = true;
                self.add(Part::Unaccounted, cpu, b - a);
            }
        }
        mark && marked
    }
}

/// Where the late thread stood.
#[derive(Debug, Clone, Copy)]
enum Status {
    Unknown,
    Running(u32),
    Runnable(u32),
    Asleep { since_ns: u64, state: i64 },
}

/// The late thread's own events.
#[derive(Debug, Clone, Copy)]
enum Own {
    In(u32),
    Out {
        cpu: u32,
        state: i64,
    },
    Woken {
        cpu: u32,
        target: u32,
        waker: i32,
        by_interrupt: bool,
    },
}

/// Breaks `miss` down by the events in `windows` (one per CPU traced).
pub fn explain(miss: &Miss, windows: &mut [CpuWindow], names: &dyn Names) -> Explained {
    let (t0, end) = (miss.t_ns, miss.end_ns.max(miss.t_ns));
    let tid = miss.tid;
    let mut own: Vec<(u64, Own)> = Vec::new();
    let mut events_lost = false;
    let mut page_faults = 0;
    let mut earliest: Option<u64> = None;
    for w in windows.iter() {
        earliest = match (
            earliest,
            w.base_from_ns.or(w.events.front().map(|e| e.ts_ns)),
        ) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        for e in w.events.iter().take_while(|e| e.ts_ns < end) {
            match e.kind {
                Kind::Switch { next_pid, .. } if next_pid == tid => {
                    own.push((e.ts_ns, Own::In(w.cpu)))
                }
                Kind::Switch {
                    prev_pid,
                    prev_state,
                    ..
                } if prev_pid == tid => own.push((
                    e.ts_ns,
                    Own::Out {
                        cpu: w.cpu,
                        state: prev_state,
                    },
                )),
                Kind::Waking {
                    pid, target_cpu, ..
                } if pid == tid => own.push((
                    e.ts_ns,
                    Own::Woken {
                        cpu: w.cpu,
                        target: if target_cpu >= 0 {
                            target_cpu as u32
                        } else {
                            w.cpu
                        },
                        waker: e.pid,
                        by_interrupt: e.flags & (FLAG_HARDIRQ | FLAG_SOFTIRQ) != 0 || e.pid == 0,
                    },
                )),
                Kind::Lost { until_ns, .. } if until_ns >= t0 => events_lost = true,
                Kind::PageFault if e.pid == tid && e.ts_ns >= t0 => page_faults += 1,
                _ => {}
            }
        }
    }
    own.sort_by_key(|(ts, _)| *ts);
    // A wake-up stamped while the thread still ran, before its switch out to sleep,
    // raced with it (`sched_waking` is stamped as the waker begins, before the sleeper's
    // switch out is): it never slept, it was runnable on the CPU it left.
    // Only after a switch in is seen: a switch the kernel did not trace (this kernel
    // writes none out of the idle task on some CPUs) leaves a wake-up before the
    // thread ran, not while it ran.
    let (mut running, mut woken_while_running) = (false, false);
    for (_, ev) in own.iter_mut() {
        match ev {
            Own::In(_) => (running, woken_while_running) = (true, false),
            Own::Woken { .. } => woken_while_running |= running,
            Own::Out { state, .. } => {
                if woken_while_running {
                    *state &= !TASK_REPORT;
                }
                (running, woken_while_running) = (false, false);
            }
        }
    }

    let step = |status: Status, ev: &Own, ts: u64| -> Status {
        match *ev {
            Own::In(cpu) => Status::Running(cpu),
            // Preempted (`R` or `R+`): still runnable on that CPU.
            Own::Out { cpu, state } if state & TASK_REPORT == 0 => Status::Runnable(cpu),
            Own::Out { state, .. } => Status::Asleep {
                since_ns: ts,
                state,
            },
            // A second wake-up event (sched_wakeup after sched_waking) changes nothing.
            Own::Woken { .. } if matches!(status, Status::Runnable(_) | Status::Running(_)) => {
                status
            }
            Own::Woken { target, .. } => Status::Runnable(target),
        }
    };
    let mut status = Status::Unknown;
    let mut i = 0;
    while i < own.len() && own[i].0 <= t0 {
        status = step(status, &own[i].1, own[i].0);
        i += 1;
    }

    let mut b = Builder {
        names,
        victim: tid,
        parts: HashMap::new(),
        window_short: earliest.is_none_or(|e| e > t0),
    };
    let window = |windows: &mut [CpuWindow], cpu: u32| -> Option<usize> {
        windows.iter().position(|w| w.cpu == cpu)
    };
    let mut from = t0;
    let mut woke_in_interval = false;
    loop {
        let next = own.get(i).copied();
        let to = next.map_or(end, |(ts, _)| ts.min(end));
        match status {
            Status::Running(cpu) => {
                let w = window(windows, cpu).map(|x| &mut windows[x]);
                b.decompose(w, from, to, false);
            }
            Status::Runnable(cpu) => {
                // The thread running when it woke is marked, in whichever runnable
                // stretch it first runs (the wake-up may fall inside an interrupt).
                let w = window(windows, cpu).map(|x| &mut windows[x]);
                if b.decompose(w, from, to, woke_in_interval || from == t0) {
                    woke_in_interval = false;
                }
            }
            Status::Asleep { since_ns, state } => match next {
                Some((
                    _,
                    Own::Woken {
                        cpu,
                        waker,
                        by_interrupt,
                        ..
                    },
                )) if to > from => {
                    if since_ns >= t0 {
                        // It went to sleep inside the interval: blocked on what woke it.
                        let holder = (!by_interrupt && waker != tid).then_some(waker);
                        b.add(Part::Blocked { state, holder }, None, to - from);
                    } else {
                        // Asleep since before it was due: its wake-up came late. What
                        // the waking CPU did until then is why.
                        let w = window(windows, cpu).map(|x| &mut windows[x]);
                        b.decompose(w, from, to, false);
                    }
                }
                // It went to sleep inside the interval and next ran with no wake-up
                // traced: what woke it ran on a CPU not traced. Blocked all the same,
                // on a holder not known.
                Some((_, Own::In(_))) if since_ns >= t0 => b.add(
                    Part::Blocked {
                        state,
                        holder: None,
                    },
                    None,
                    to - from,
                ),
                _ => b.add(Part::Unaccounted, None, to.saturating_sub(from)),
            },
            Status::Unknown => match next {
                Some((_, Own::Woken { cpu, .. })) => {
                    let w = window(windows, cpu).map(|x| &mut windows[x]);
                    b.decompose(w, from, to, false);
                }
                Some((_, Own::In(cpu))) | Some((_, Own::Out { cpu, .. })) => {
                    let w = window(windows, cpu).map(|x| &mut windows[x]);
                    b.decompose(w, from, to, true);
                }
                None => {
                    b.window_short = true;
                    b.add(Part::Unaccounted, None, to.saturating_sub(from));
                }
            },
        }
        let Some((ts, ev)) = next.filter(|(ts, _)| *ts < end) else {
            break;
        };
        if matches!(ev, Own::Woken { .. })
            && !matches!(status, Status::Runnable(_) | Status::Running(_))
        {
            woke_in_interval = true;
        }
        status = step(status, &ev, ts);
        from = to;
        i += 1;
    }

    let mut causes = b.causes();
    let accounted: u64 = causes.iter().map(|c| c.ns).sum();
    let rest = miss.late_ns().saturating_sub(accounted);
    if rest > 0 {
        causes.push(cause(
            CauseKind::Unaccounted,
            "unaccounted".into(),
            None,
            rest,
        ));
    }
    causes.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.kind.cmp(&b.kind)));
    Explained {
        miss: *miss,
        causes,
        events_lost,
        window_short: b.window_short,
        page_faults,
    }
}

fn cause(kind: CauseKind, name: String, cpu: Option<u32>, ns: u64) -> Cause {
    Cause {
        kind,
        name,
        pid: None,
        cpu,
        ns,
        number: None,
        policy: None,
        priority: None,
        at_wakeup: false,
        state: None,
    }
}

/// The bits of `sched_switch`'s `prev_state` that say what the task was doing
/// (`TASK_REPORT`: S, D, T, t, X, Z, P, I). Above them the kernel marks a task switched
/// out while runnable by preemption (`TASK_REPORT_MAX`, printed `R+`): runnable all
/// the same.
pub const TASK_REPORT: i64 = 0xff;

/// A task state's letters, as `sched_switch` prints `prev_state`.
pub fn state_letters(state: i64) -> String {
    const LETTERS: [(i64, char); 8] = [
        (0x01, 'S'),
        (0x02, 'D'),
        (0x04, 'T'),
        (0x08, 't'),
        (0x10, 'X'),
        (0x20, 'Z'),
        (0x40, 'P'),
        (0x80, 'I'),
    ];
    let s: String = LETTERS
        .iter()
        .filter(|(bit, _)| state & bit != 0)
        .map(|(_, c)| *c)
        .collect();
    if s.is_empty() && state & !TASK_REPORT != 0 {
        "R+".into()
    } else if s.is_empty() {
        "R".into()
    } else {
        s
    }
}

/// A thread's policy and priority from its kernel priority, refined from
/// `/proc/PID/stat` while the thread lives (FIFO or RR, BATCH or IDLE).
pub fn policy_of(pid: i32, prio: i32) -> (Option<String>, Option<i32>) {
    if prio == UNKNOWN_PRIO {
        return (None, None);
    }
    let live = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let rest = &s[s.rfind(')')? + 2..];
            rest.split_whitespace().nth(38)?.parse::<u32>().ok()
        });
    let named = |p: u32| -> Option<&'static str> {
        Some(match p {
            0 => "other",
            1 => "fifo",
            2 => "rr",
            3 => "batch",
            5 => "idle",
            6 => "deadline",
            _ => return None,
        })
    };
    match prio {
        p if p < 0 => (Some("deadline".into()), None),
        p if p < 100 => {
            let policy = live.and_then(named).filter(|n| matches!(*n, "fifo" | "rr"));
            (Some(policy.unwrap_or("rt").into()), Some(99 - p))
        }
        p => {
            let policy = live
                .and_then(named)
                .filter(|n| matches!(*n, "other" | "batch" | "idle"));
            (Some(policy.unwrap_or("other").into()), Some(p - 120))
        }
    }
}

impl Builder<'_> {
    fn causes(&self) -> Vec<Cause> {
        let mut out: Vec<Cause> = Vec::new();
        for (&(part, cpu), &ns) in &self.parts {
            let c = match part {
                Part::Interrupt(Interrupt::Irq { irq, name }) => Cause {
                    number: Some(i64::from(irq)),
                    ..cause(CauseKind::Irq, self.names.name(name), cpu, ns)
                },
                Part::Interrupt(Interrupt::Vector { name }) => {
                    cause(CauseKind::Irq, self.names.name(name), cpu, ns)
                }
                Part::Interrupt(Interrupt::Softirq { vec }) => Cause {
                    number: Some(i64::from(vec)),
                    ..cause(
                        CauseKind::Softirq,
                        crate::event::softirq_name(vec).into(),
                        cpu,
                        ns,
                    )
                },
                Part::Task {
                    pid,
                    comm,
                    prio,
                    at_wakeup,
                } => {
                    let comm = if comm == Comm::default() {
                        self.names.comm(pid).unwrap_or_default()
                    } else {
                        comm
                    };
                    let prio = if prio == UNKNOWN_PRIO {
                        self.names.prio(pid).unwrap_or(UNKNOWN_PRIO)
                    } else {
                        prio
                    };
                    let (policy, priority) = policy_of(pid, prio);
                    Cause {
                        pid: Some(pid),
                        policy,
                        priority,
                        at_wakeup,
                        ..cause(CauseKind::Thread, comm.as_str().into_owned(), cpu, ns)
                    }
                }
                Part::SelfTime => {
                    let name = self.names.comm(self.victim).unwrap_or_default();
                    Cause {
                        pid: Some(self.victim),
                        ..cause(CauseKind::SelfTime, name.as_str().into_owned(), cpu, ns)
                    }
                }
                Part::Idle => cause(CauseKind::IdleExit, "idle".into(), cpu, ns),
                Part::Steal => cause(CauseKind::Steal, "steal".into(), cpu, ns),
                Part::Blocked { state, holder } => {
                    let name = holder
                        .and_then(|h| self.names.comm(h))
                        .map(|c| c.as_str().into_owned());
                    Cause {
                        pid: holder,
                        state: Some(state_letters(state)),
                        ..cause(
                            CauseKind::Blocked,
                            name.unwrap_or_else(|| "blocked".into()),
                            cpu,
                            ns,
                        )
                    }
                }
                Part::Unaccounted => cause(CauseKind::Unaccounted, "unaccounted".into(), cpu, ns),
            };
            // Parts of one thread at and after the wake-up are one cause, marked.
            if let Some(same) = out.iter_mut().find(|o| {
                o.kind == c.kind
                    && o.name == c.name
                    && o.pid == c.pid
                    && o.number == c.number
                    && o.cpu == c.cpu
            }) {
                same.ns += c.ns;
                same.at_wakeup |= c.at_wakeup;
            } else {
                out.push(c);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
