//! What an audiolat killed outright (SIGKILL, a second Ctrl-C, a crash) left changed on
//! the machine, found and undone by the next one.
//!
//! A run with cells or `--netns` changes the system while it measures: cpusets with
//! every task moved onto the CPUs no cell holds, the root cpuset's load balancing off,
//! `cpuacct` groups, network namespaces with a veth pair and `tc` qdiscs, and a state
//! file in `/run/audiolat` saying what to restore; a run on a running PipeWire forces its
//! `clock.force-quantum`, with a state file too. An audiolat that ends normally undoes
//! all of it; one that is killed cannot. [`find`] lists what audiolats that are gone
//! left (a running audiolat's state is never listed nor touched), `audiolat doctor`
//! reports it as a FAIL, and [`undo`] restores the machine: every measuring command calls
//! it before it measures, and says in one line what it undid.
//!
//!
//! A killed audiolat also leaves temporary files: a plan cell's log, a private PipeWire's
//! directory, the io load's scratch directory ([`engine::temp`]), and its private JACK
//! server's semaphores and socket in `/dev/shm`. [`find`] lists them too (doctor warns),
//! and [`remove_temporary`] removes them: every measuring command does, quietly, and
//! `doctor --fix` says what it removed.
//!
//! ```no_run
//! match probes::leftovers::undo() {
//!     Ok(Some(line)) => eprintln!("audiolat: {line}"),
//!     Ok(None) => {}
//!     Err(left) => eprintln!("audiolat: error: {left}"),
//! }
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;

use netaudio::netns;
use qos::partition;

/// What audiolats that are gone left, by pid.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Leftovers {
    /// What they left changed on the machine: pid -> one phrase per thing left ("cpuset
    /// /sys/fs/cgroup/cpuset/audiolat-7-rest (93 tasks confined to CPU 0)", "network
    /// namespace al-host-7", ...).
    pub by_pid: BTreeMap<i32, Vec<String>>,
    /// For each PipeWire setting left forced (also in `by_pid`), how to put it back by
    /// hand ("pw-metadata -n settings 0 clock.force-quantum 0 (on the PipeWire at
    /// /run/user/1000/pipewire-0)").
    pub pipewire: Vec<String>,
    /// The temporary files and directories they left ([`engine::temp`]).
    pub temporary: Vec<engine::temp::Stale>,
    /// The files of audiolat's private JACK servers that no longer run (semaphores, a
    /// socket in `/dev/shm`), which name no process.
    pub jack_files: Vec<PathBuf>,
}

impl Leftovers {
    /// True when nothing is left.
    pub fn is_empty(&self) -> bool {
        self.by_pid.is_empty() && !self.has_files()
    }

    /// True when temporary files are left (with the machine changed or not).
    pub fn has_files(&self) -> bool {
        !self.temporary.is_empty() || !self.jack_files.is_empty()
    }

    /// True when all that is left is PipeWire settings forced (a quantum, a rate): no
    /// cpuset, namespace or load balancing, nothing that needs root.
    pub fn only_pipewire(&self) -> bool {
        !self.by_pid.is_empty()
            && self.by_pid.values().map(Vec::len).sum::<usize>() == self.pipewire.len()
    }

    /// One line: "audiolat PID 7 (no longer running) left cpuset ..., network namespace
    /// ...".
    pub fn describe(&self) -> String {
        let mut by_pid = self.by_pid.clone();
        for t in &self.temporary {
            by_pid.entry(t.pid).or_default().push(t.describe());
        }
        let mut phrases: Vec<String> = by_pid
            .iter()
            .map(|(pid, items)| {
                format!(
                    "audiolat PID {pid} (no longer running) left {}",
                    items.join(", ")
                )
            })
            .collect();
        if !self.jack_files.is_empty() {
            phrases.push(jack_files_phrase(&self.jack_files));
        }
        phrases.join("; ")
    }

    /// Only what changed the machine (no temporary files).
    fn machine_only(mut self) -> Leftovers {
        self.temporary.clear();
        self.jack_files.clear();
        self
    }
}

fn jack_files_phrase(files: &[PathBuf]) -> String {
    format!(
        "files of audiolat's private JACK servers that no longer run: {}",
        files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// What audiolats that are gone left on this machine: cpusets (and the tasks they still
/// confine), `cpuacct` groups, cgroup v2 groups, the root cpuset's `sched_load_balance`,
/// network namespaces (with their qdiscs), veth ends, state files.
pub fn find() -> Leftovers {
    let mut left = find_on_machine();
    left.temporary = engine::temp::stale();
    left.jack_files = engine::jack::server::stale_private_files();
    for stale in engine::pipewire::running::stale() {
        left.by_pid
            .entry(stale.pid)
            .or_default()
            .push(stale.describe());
        left.pipewire.push(format!(
            "pw-metadata -n settings 0 {} {} (on the PipeWire at {})",
            stale.key,
            stale.previous,
            stale.socket.display()
        ));
    }
    left
}

/// [`find`] without a running PipeWire's forced quantum.
fn find_on_machine() -> Leftovers {
    let mut by_pid = partition::stale();
    for (pid, items) in netns::stale() {
        by_pid.entry(pid).or_default().extend(items);
    }
    Leftovers {
        by_pid,
        ..Leftovers::default()
    }
}

/// Removes the temporary files audiolats that are gone left, and their private JACK
/// servers' files (see [`find`]); says what it removed in one line (`None`: nothing),
/// and what it could not remove. It changes nothing on the machine but files.
pub fn remove_temporary() -> (Option<String>, Vec<String>) {
    // A killed `--why`'s tracefs instance (removing it frees its ring buffers) and its
    // own mount of tracefs.
    let instances = trace::tracefs::remove_leftover_instances();
    let left = Leftovers {
        temporary: engine::temp::stale(),
        jack_files: engine::jack::server::stale_private_files(),
        ..Leftovers::default()
    };
    if left.is_empty() {
        let said = (!instances.is_empty()).then(|| {
            format!(
                "removed what a killed `audiolat ... --why` left in the kernel's trace: {}",
                instances.join(", ")
            )
        });
        return (said, Vec::new());
    }
    let mut problems = engine::temp::remove_stale(&left.temporary);
    for f in &left.jack_files {
        if let Err(e) = std::fs::remove_file(f) {
            if e.kind() != std::io::ErrorKind::NotFound {
                problems.push(format!("cannot remove {}: {e}", f.display()));
            }
        }
    }
    (
        Some(format!("removed what was left: {}", left.describe())),
        problems,
    )
}

/// Undoes what audiolats that are gone left (see [`find`]), all of it: the root
/// cpuset's load balancing as it was, every confined task back in the root cpuset (and
/// so on every CPU), groups removed, namespaces and their qdiscs deleted, state files
/// removed. It never looks at a stop flag, so a signal during it does not cut it short.
///
/// `Ok(None)` when there was nothing to undo, `Ok(Some(line))` saying what was undone,
/// `Err` naming what is left when something could not be undone (not root, say): a
/// measuring command refuses then, rather than measure a changed machine.
pub fn undo() -> Result<Option<String>, NotUndone> {
    // A running PipeWire's clock.force-quantum first, one phrase per server.
    let (mut undone, mut problems): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    for restored in engine::pipewire::running::restore_stale() {
        match restored {
            Ok(line) => undone.push(line),
            Err(problem) => problems.push(problem),
        }
    }
    let before = find_on_machine();
    if before.is_empty() && problems.is_empty() {
        return Ok((!undone.is_empty()).then(|| undone.join("; ")));
    }
    problems.extend(partition::remove_stale());
    problems.extend(netns::remove_stale());
    let after = find().machine_only();
    if after.is_empty() {
        undone.extend(before.by_pid.iter().map(|(pid, items)| {
            format!(
                "undid what audiolat PID {pid} left when it was killed: {}",
                items.join(", ")
            )
        }));
        return Ok(Some(undone.join("; ")));
    }
    let only_pipewire = after.only_pipewire();
    Err(NotUndone {
        left: Box::new(after),
        problems,
        // SAFETY: geteuid has no preconditions.
        root: unsafe { libc::geteuid() } == 0 || only_pipewire,
    })
}

/// What [`undo`] could not undo, and why; its text ends with what to do, without
/// naming a command (the caller adds how to run the undo again).
#[derive(Debug, Clone, thiserror::Error)]
#[error("the machine is not as it was: {}, which could not be undone{}; {}",
    .left.describe(),
    if .problems.is_empty() { String::new() } else { format!(" ({})", .problems.join("; ")) },
    if .left.only_pipewire() { format!("put it back by hand: {}", .left.pipewire.join("; ")) }
    else if *.root { "undo it by hand (rmdir the cpusets after moving their tasks to the root's tasks file, ip netns del)".to_string() } else { "only root can undo it".to_string() })]
pub struct NotUndone {
    /// What is still left (of what changed the machine).
    pub left: Box<Leftovers>,
    /// Why each removal failed.
    pub problems: Vec<String>,
    /// Whether only a hand can undo it: this process was root, or all that is left is
    /// PipeWire settings (which root undoes no better than their user).
    pub root: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leftovers_are_described_in_one_line_by_pid() {
        let l = Leftovers {
            by_pid: BTreeMap::from([
                (
                    7,
                    vec![
                        "cpuset /c/audiolat-7-rest (3 tasks confined to CPU 0)".to_string(),
                        "network namespace al-host-7".to_string(),
                    ],
                ),
                (9, vec!["state file /run/audiolat/cells-9.json".to_string()]),
            ]),
            ..Leftovers::default()
        };
        assert_eq!(
            l.describe(),
            "audiolat PID 7 (no longer running) left cpuset /c/audiolat-7-rest (3 tasks confined to CPU 0), network namespace al-host-7; audiolat PID 9 (no longer running) left state file /run/audiolat/cells-9.json"
        );
        assert!(!l.describe().contains('\n'));
        assert!(Leftovers::default().is_empty());
        assert!(!l.only_pipewire());
    }

    #[test]
    fn temporary_files_are_named_with_their_process_and_are_no_change_to_the_machine() {
        let l = Leftovers {
            temporary: vec![engine::temp::Stale {
                pid: 7,
                path: "/tmp/audiolat-plan-7-0-group-1-cell-2.log".into(),
                target: None,
            }],
            jack_files: vec!["/dev/shm/jack_sem.0_audiolat-dummy_audiolat-loop".into()],
            ..Leftovers::default()
        };
        assert!(!l.is_empty() && l.has_files() && !l.only_pipewire());
        assert_eq!(
            l.describe(),
            "audiolat PID 7 (no longer running) left temporary file /tmp/audiolat-plan-7-0-group-1-cell-2.log; files of audiolat's private JACK servers that no longer run: /dev/shm/jack_sem.0_audiolat-dummy_audiolat-loop"
        );
        assert!(l.machine_only().is_empty());
    }

    #[test]
    fn a_pipewire_setting_left_is_put_back_by_hand_without_root() {
        let fix =
            "pw-metadata -n settings 0 clock.force-quantum 0 (on the PipeWire at /p/pipewire-0)";
        let left = Leftovers {
            by_pid: BTreeMap::from([(
                7,
                vec!["clock.force-quantum 128 on the PipeWire at /p/pipewire-0 (was 0)".into()],
            )]),
            pipewire: vec![fix.into()],
            ..Leftovers::default()
        };
        assert!(left.only_pipewire());
        let e = NotUndone {
            left: Box::new(left),
            problems: vec!["pw-metadata could not set it".into()],
            root: true,
        }
        .to_string();
        assert!(e.ends_with(&format!("put it back by hand: {fix}")), "{e}");
        assert!(!e.contains("cpuset") && !e.contains("root"), "{e}");
    }

    #[test]
    fn this_process_is_alive_and_a_gone_pid_is_not() {
        assert!(engine::servers::process_running(std::process::id() as i32));
        // Above pid_max (4194304 at most).
        assert!(!engine::servers::process_running(5_000_000));
    }
}
