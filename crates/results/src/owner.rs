//! Who made a run or a group: a process, known by its pid and told apart from a later
//! process given the same pid (the kernel reuses pids, and a reboot starts them again)
//! by the boot it ran in (`/proc/sys/kernel/random/boot_id`) and the time it started
//! (`/proc/PID/stat`'s field 22, in clock ticks since boot).
//!
//! A run stored before these were kept has its pid alone, and is judged by it alone, as
//! it always was.

/// A process that made a run or a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// Its pid.
    pub pid: i64,
    /// The boot it ran in; `None` for what was stored before it was kept.
    pub boot_id: Option<String>,
    /// When it started, in clock ticks since boot; `None` as for `boot_id`.
    pub start_ticks: Option<i64>,
}

impl Owner {
    /// This process.
    pub fn this_process() -> Owner {
        let pid = std::process::id();
        Owner {
            pid: i64::from(pid),
            boot_id: boot_id(),
            start_ticks: start_ticks(pid as i32),
        }
    }

    /// Whether it still runs: a process of that pid exists (another user's too), in this
    /// boot, started when it did. What cannot be read (no boot id, a `/proc` that hides
    /// other users' processes) is not held against it.
    pub fn is_alive(&self) -> bool {
        if self.pid <= 0 || self.pid > i64::from(i32::MAX) {
            return false;
        }
        let pid = self.pid as i32;
        if let (Some(then), Some(now)) = (&self.boot_id, boot_id()) {
            if *then != now {
                return false; // the machine rebooted since
            }
        }
        // SAFETY: signal 0 only checks for existence.
        let exists = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if !exists {
            return false;
        }
        match (self.start_ticks, start_ticks(pid)) {
            (Some(then), Some(now)) => then == now, // else: its pid went to another
            _ => true,
        }
    }
}

impl Owner {
    /// Writes it into a group's detail, as the group's runner: `runner_pid`,
    /// `runner_boot_id`, `runner_start_ticks`.
    pub fn write_runner(&self, detail: &mut serde_json::Value) {
        if let serde_json::Value::Object(map) = detail {
            map.insert("runner_pid".into(), self.pid.into());
            map.insert("runner_boot_id".into(), self.boot_id.clone().into());
            map.insert("runner_start_ticks".into(), self.start_ticks.into());
        }
    }

    /// A group's runner, from its detail (`None` without a `runner_pid`).
    pub fn runner_of(detail: &serde_json::Value) -> Option<Owner> {
        Some(Owner {
            pid: detail["runner_pid"].as_i64()?,
            boot_id: detail["runner_boot_id"].as_str().map(str::to_string),
            start_ticks: detail["runner_start_ticks"].as_i64(),
        })
    }
}

/// This boot's id, when the kernel says it.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// When process `pid` started, in clock ticks since boot (`/proc/PID/stat`'s field 22),
/// when it exists and can be read.
pub fn start_ticks(pid: i32) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command (field 2) is in parentheses and may hold anything: count after it.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(22 - 3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_known_by_its_boot_and_start() {
        let me = Owner::this_process();
        assert!(
            me.boot_id.as_deref().is_some_and(|b| b.len() == 36),
            "{me:?}"
        );
        assert!(me.start_ticks.is_some_and(|t| t > 0), "{me:?}");
        assert!(me.is_alive());
    }

    #[test]
    fn a_reused_pid_or_another_boot_is_not_the_process_that_made_it() {
        // pid 1 runs; as the owner, it started at another time, or in another boot.
        let init = Owner {
            pid: 1,
            boot_id: boot_id(),
            start_ticks: start_ticks(1),
        };
        assert!(init.is_alive());
        let reused = Owner {
            start_ticks: init.start_ticks.map(|t| t + 1),
            ..init.clone()
        };
        assert!(!reused.is_alive());
        let other_boot = Owner {
            boot_id: Some("00000000-0000-0000-0000-000000000000".into()),
            ..init.clone()
        };
        assert!(!other_boot.is_alive());
        // Stored before either was kept: the pid alone, as before.
        let legacy = Owner {
            pid: 1,
            boot_id: None,
            start_ticks: None,
        };
        assert!(legacy.is_alive());
        for gone in [0, -3, 5_000_000, i64::from(i32::MAX) + 1] {
            let o = Owner {
                pid: gone,
                ..legacy.clone()
            };
            assert!(!o.is_alive(), "{gone}");
        }
    }

    #[test]
    fn a_groups_runner_goes_into_its_detail_and_back() {
        let me = Owner::this_process();
        let mut detail = serde_json::json!({"plan": "p"});
        me.write_runner(&mut detail);
        assert_eq!(Owner::runner_of(&detail), Some(me));
        let legacy = serde_json::json!({"runner_pid": 7});
        assert_eq!(
            Owner::runner_of(&legacy),
            Some(Owner {
                pid: 7,
                boot_id: None,
                start_ticks: None
            })
        );
        assert_eq!(Owner::runner_of(&serde_json::json!({})), None);
    }

    #[test]
    fn the_start_time_is_read_past_a_command_with_spaces_and_parentheses() {
        // `(sd-pam) x)` style names: the last ')' ends the command.
        let me = start_ticks(std::process::id() as i32).unwrap();
        assert!(me > 0);
        assert_eq!(start_ticks(5_000_000), None);
    }
}
