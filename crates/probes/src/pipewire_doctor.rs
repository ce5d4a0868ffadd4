//! doctor's JACK-library and PipeWire findings: which `libjack.so.0` a JACK client gets,
//! and on a running PipeWire (its socket where a client looks for it:
//! [`engine::servers::pipewire_socket`], `$PIPEWIRE_REMOTE` or `pipewire-0` in
//! `$PIPEWIRE_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR`, else `/run/user/UID`): a forced quantum or rate left set, its
//! data thread's real-time priority (read from `/proc`) against the probe's, and what
//! gives PipeWire that priority.

use std::path::{Path, PathBuf};

use engine::pipewire::graph::read_forced;
use engine::pipewire::server::PipewireProcess;
use results::{Finding, Verdict};

/// The probe's default real-time priority (audiolat's own audio and timer threads,
/// jitter's `--priority` default): SCHED_FIFO 80.
pub const PROBE_DEFAULT_PRIORITY: u32 = 80;

fn finding(check: &str, verdict: Verdict, value: String, detail: &str, fix: &str) -> Finding {
    Finding {
        check: check.into(),
        verdict,
        value,
        detail: detail.into(),
        fix: fix.into(),
    }
}

/// The findings: the libjack one always, the PipeWire ones when one runs.
pub fn findings() -> Vec<Finding> {
    let mut out = vec![check_libjack()];
    if let Some(socket) = engine::servers::pipewire_socket() {
        let dir = socket.parent().map(Path::to_path_buf).unwrap_or_default();
        out.push(check_forced(&socket));
        let pid = pipewire_pid(&dir);
        out.push(check_priority(pid));
        out.push(check_priority_source(pid));
    }
    out
}

/// The `libjack.so.0` the dynamic loader gives a JACK client: the first in
/// `LD_LIBRARY_PATH` (as `pw-jack` sets), else the loader cache's (`ldconfig -p`, where
/// an `/etc/ld.so.conf.d/pipewire-jack-*.conf` alternative shows).
pub fn resolved_libjack() -> Option<PathBuf> {
    let from_env = std::env::var_os("LD_LIBRARY_PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("libjack.so.0"))
            .find(|f| f.exists())
    });
    from_env
        .or_else(|| {
            let out = ["/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"]
                .iter()
                .find_map(|p| std::process::Command::new(p).arg("-p").output().ok())?;
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| l.trim_start().starts_with("libjack.so.0 "))
                .find_map(|l| l.rsplit("=> ").next().map(|p| PathBuf::from(p.trim())))
        })
        .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
}

fn check_libjack() -> Finding {
    let id = "jack.libjack";
    match resolved_libjack() {
        None => finding(
            id,
            Verdict::Warn,
            "none".into(),
            "no libjack.so.0: JACK clients cannot start",
            "install the libjack-jackd2-0 package (or pipewire-jack for PipeWire's)",
        ),
        Some(p) if p.to_string_lossy().contains("/pipewire-") => finding(
            id,
            Verdict::Ok,
            format!("PipeWire's: {}", p.display()),
            "JACK clients reach PipeWire (LD_LIBRARY_PATH, pw-jack or an ld.so.conf.d alternative)",
            "",
        ),
        Some(p) => finding(
            id,
            Verdict::Ok,
            format!("jackd2's: {}", p.display()),
            "JACK clients reach jackd; on PipeWire run them through pw-jack (audiolat --server pipewire or auto loads PipeWire's libjack itself)",
            "",
        ),
    }
}

fn check_forced(socket: &Path) -> Finding {
    let id = "pipewire.force_quantum";
    let dir = socket.parent().unwrap_or(Path::new("/"));
    let env = vec![
        ("PIPEWIRE_RUNTIME_DIR", dir.as_os_str().to_owned()),
        (
            "PIPEWIRE_REMOTE",
            socket.file_name().unwrap_or_default().to_owned(),
        ),
    ];
    match read_forced(&env) {
        Err(e) => finding(
            id,
            Verdict::Warn,
            "not read".into(),
            &e,
            "install the pipewire-bin package (pw-metadata)",
        ),
        Ok(s) => {
            let show = |v: Option<u32>| v.map_or("?".to_string(), |v| v.to_string());
            let value = format!(
                "clock.force-quantum {}, clock.force-rate {}",
                show(s.force_quantum),
                show(s.force_rate)
            );
            let mut clear = Vec::new();
            if s.force_quantum != Some(0) {
                clear.push("pw-metadata -n settings 0 clock.force-quantum 0");
            }
            if s.force_rate != Some(0) {
                clear.push("pw-metadata -n settings 0 clock.force-rate 0");
            }
            if clear.is_empty() {
                finding(
                    id,
                    Verdict::Ok,
                    value,
                    "the graph runs the quantum its clients ask for",
                    "",
                )
            } else {
                finding(
                    id,
                    Verdict::Warn,
                    value,
                    "a forced quantum or rate is left set: every client gets it, whatever it asks for",
                    &clear.join("; "),
                )
            }
        }
    }
}

/// The `pipewire` daemon whose runtime directory is `dir` (from its environment), else
/// the only one running.
fn pipewire_pid(dir: &Path) -> Option<u32> {
    let pids: Vec<u32> = std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == PipewireProcess::Pipewire.program())
        })
        .collect();
    let wanted = [
        format!("PIPEWIRE_RUNTIME_DIR={}", dir.display()),
        format!("XDG_RUNTIME_DIR={}", dir.display()),
    ];
    pids.iter()
        .copied()
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                env.split(|b| *b == 0)
                    .any(|v| wanted.iter().any(|w| w.as_bytes() == v))
            })
        })
        .or_else(|| (pids.len() == 1).then(|| pids[0]))
}

/// The highest SCHED_FIFO / SCHED_RR priority among `pid`'s threads (fields 40 and 41
/// of `/proc/PID/task/TID/stat`), with the thread id.
pub fn rt_thread(pid: u32) -> Option<(u32, u32)> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
        .filter_map(|t| {
            let tid: u32 = t.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(t.path().join("stat")).ok()?;
            // Fields after the command's closing parenthesis start at field 3.
            let rest: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            let (prio, policy): (u32, u32) =
                (rest.get(37)?.parse().ok()?, rest.get(38)?.parse().ok()?);
            // SCHED_FIFO 1, SCHED_RR 2.
            (policy == 1 || policy == 2).then_some((prio, tid))
        })
        .max()
        .map(|(prio, tid)| (tid, prio))
}

/// A finding about PipeWire's process that could not be read: no such process found.
fn process_not_found(id: &'static str) -> Finding {
    finding(
        id,
        Verdict::Warn,
        "not read".into(),
        "the pipewire process of this socket was not found in /proc",
        "",
    )
}

fn check_priority(pid: Option<u32>) -> Finding {
    let id = "pipewire.rt_priority";
    let Some(pid) = pid else {
        return process_not_found(id);
    };
    match rt_thread(pid) {
        None => finding(
            id,
            Verdict::Warn,
            "no real-time thread".into(),
            "PipeWire's data thread runs SCHED_OTHER: any busy process delays the graph",
            "give PipeWire real-time rights (see pipewire.rt_source)",
        ),
        Some((tid, prio)) if prio > PROBE_DEFAULT_PRIORITY => finding(
            id,
            Verdict::Warn,
            format!("SCHED_FIFO {prio} (thread {tid}), above the probe's FIFO {PROBE_DEFAULT_PRIORITY}"),
            "PipeWire's data thread preempts audiolat's measuring thread: a busy graph delays the probe's wake-ups (and a jitter run measures PipeWire's load)",
            "run audiolat jitter --priority 89 (above PipeWire's) to measure past it, or lower rt.prio in PipeWire's module-rt arguments",
        ),
        Some((tid, prio)) => finding(
            id,
            Verdict::Ok,
            format!("SCHED_FIFO {prio} (thread {tid}), not above the probe's FIFO {PROBE_DEFAULT_PRIORITY}"),
            "audiolat's measuring thread is not preempted by PipeWire's",
            "",
        ),
    }
}

fn check_priority_source(pid: Option<u32>) -> Finding {
    let id = "pipewire.rt_source";
    let Some(pid) = pid else {
        return process_not_found(id);
    };
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let root = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(2))
        == Some("0");
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap_or_default();
    let rtprio: Option<u32> = limits
        .lines()
        .find(|l| l.starts_with("Max realtime priority"))
        .and_then(|l| l.split_whitespace().nth(3)?.parse().ok());
    let rtkit = engine::servers::running_commands()
        .iter()
        .any(|c| c == "rtkit-daemon");
    let (verdict, value, detail) = if root {
        (
            Verdict::Ok,
            "root".to_string(),
            "as root, module-rt sets the priority itself (no rtkit or limit needed)",
        )
    } else if rtprio.is_some_and(|r| r > 0) {
        (
            Verdict::Ok,
            format!("RLIMIT_RTPRIO {}", rtprio.unwrap_or(0)),
            "module-rt sets the priority itself within the limit",
        )
    } else if rtkit {
        (
            Verdict::Ok,
            "rtkit".to_string(),
            "RLIMIT_RTPRIO is 0: module-rt asks rtkit (which caps the priority it grants)",
        )
    } else {
        (
            Verdict::Warn,
            "none".to_string(),
            "RLIMIT_RTPRIO is 0 and rtkit is not running: PipeWire cannot get real-time priority",
        )
    };
    let fix = if verdict == Verdict::Warn {
        "add the user to the pipewire group (limits.d rtprio 95) or install the rtkit package"
    } else {
        ""
    };
    finding(id, verdict, value, detail, fix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_no_real_time_thread_and_the_libjack_is_named() {
        assert_eq!(rt_thread(std::process::id()), None);
        let f = check_libjack();
        assert_eq!(f.check, "jack.libjack");
        assert!(
            f.value.starts_with("jackd2's")
                || f.value.starts_with("PipeWire's")
                || f.value == "none"
        );
    }
}
