//! What the kernel's scheduler says of a thread (`/proc/.../schedstat`): its time on a
//! CPU and its time runnable but waiting for one. The wait is what tells a thread that
//! could not run (a busy machine, a higher priority beside it) from one that was slow.

/// One thread's scheduler counters, as `/proc/PID/task/TID/schedstat` gives them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedStat {
    /// Time it ran on a CPU, ns.
    pub on_cpu_ns: u64,
    /// Time it was runnable and waited on a run queue for a CPU, ns.
    pub run_queue_wait_ns: u64,
    /// Times it was given a CPU.
    pub timeslices: u64,
}

impl SchedStat {
    /// The calling thread's counters (`None` where the kernel keeps none). Reads a file:
    /// call it before and after a real-time loop, never inside.
    pub fn current_thread() -> Option<SchedStat> {
        Self::read("/proc/thread-self/schedstat")
    }

    /// The counters of task `tid` (a thread of any process), `None` when it is gone or
    /// the kernel keeps none.
    pub fn of_task(tid: i32) -> Option<SchedStat> {
        Self::read(&format!("/proc/{tid}/schedstat"))
    }

    fn read(path: &str) -> Option<SchedStat> {
        Self::parse(&std::fs::read_to_string(path).ok()?)
    }

    /// `on_cpu wait timeslices`, as the kernel writes them.
    pub fn parse(text: &str) -> Option<SchedStat> {
        let mut fields = text.split_whitespace().map(|f| f.parse::<u64>().ok());
        Some(SchedStat {
            on_cpu_ns: fields.next()??,
            run_queue_wait_ns: fields.next()??,
            timeslices: fields.next()??,
        })
    }

    /// What happened between `earlier` and these counters.
    pub fn since(self, earlier: SchedStat) -> SchedStat {
        SchedStat {
            on_cpu_ns: self.on_cpu_ns.saturating_sub(earlier.on_cpu_ns),
            run_queue_wait_ns: self
                .run_queue_wait_ns
                .saturating_sub(earlier.run_queue_wait_ns),
            timeslices: self.timeslices.saturating_sub(earlier.timeslices),
        }
    }
}

/// The kernel's softirq threads (`ksoftirqd/N`, one per CPU): their ids by CPU. Network
/// work the kernel cannot finish in interrupt context (a shaped queue's packets, a busy
/// veth) is deferred to them, and they run at an ordinary policy.
pub fn softirq_threads() -> Vec<(usize, i32)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        if let Some(cpu) = comm
            .trim()
            .strip_prefix("ksoftirqd/")
            .and_then(|c| c.parse::<usize>().ok())
        {
            out.push((cpu, pid));
        }
    }
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernels_three_fields_are_read_and_differenced() {
        let a = SchedStat::parse("100 20 3\n").unwrap();
        let b = SchedStat::parse("250 70 9").unwrap();
        assert_eq!(
            b.since(a),
            SchedStat {
                on_cpu_ns: 150,
                run_queue_wait_ns: 50,
                timeslices: 6
            }
        );
        assert_eq!(SchedStat::parse("1 2"), None);
        assert_eq!(SchedStat::parse("x 2 3"), None);
    }

    #[test]
    fn this_thread_has_counters_where_the_kernel_keeps_them() {
        if let Some(now) = SchedStat::current_thread() {
            let mut x = 0u64;
            for i in 0..1_000_000u64 {
                x = x.wrapping_add(i * i);
            }
            std::hint::black_box(x);
            // The kernel adds a running thread's time at its next scheduling event (a
            // tick may not have come on a busy or tickless CPU): a sleep is one.
            std::thread::sleep(std::time::Duration::from_millis(1));
            let later = SchedStat::current_thread().unwrap();
            assert!(later.on_cpu_ns > now.on_cpu_ns);
        }
    }
}
