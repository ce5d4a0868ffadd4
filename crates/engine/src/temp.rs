//! The temporary files and directories audiolat makes while it runs: a plan cell's log,
//! a private PipeWire's directory, the io load's scratch directory. Each is named
//! `audiolat-KIND-PID-...` after the process that made it, and removed by that process
//! on every path it ends by (done, an error, a stop signal). What a process killed
//! outright left is found by name, in the temporary directory, and removed by the next
//! audiolat ([`stale`], [`remove_stale`]; `audiolat doctor` lists it).
//!
//! A directory made elsewhere (the io load's scratch directory sits on the disk it
//! loads) gets a pointer in the temporary directory, a symbolic link of the same name,
//! so that it is found there too ([`ScratchDir`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// What audiolat names its temporary paths for, each `audiolat-KIND-PID-...`.
pub const KINDS: [&str; 3] = ["plan", "pipewire", "io"];

/// The temporary directory audiolat's paths (and pointers) are in.
pub fn dir() -> PathBuf {
    std::env::temp_dir()
}

/// A new name of this process for a path of `kind`: `audiolat-KIND-PID-N`, N counting
/// from 0 within the process.
pub fn name(kind: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "audiolat-{kind}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The kind and process of a name `audiolat-KIND-PID-...` ([`KINDS`]).
pub fn owner(name: &str) -> Option<(&'static str, i32)> {
    let rest = name.strip_prefix("audiolat-")?;
    KINDS.iter().find_map(|&kind| {
        let (pid, tail) = rest
            .strip_prefix(kind)?
            .strip_prefix('-')?
            .split_once('-')?;
        (!tail.is_empty())
            .then(|| pid.parse::<i32>().ok())
            .flatten()
            .filter(|&p| p > 0)
            .map(|p| (kind, p))
    })
}

/// A temporary path a process that no longer runs left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stale {
    /// The process that made it.
    pub pid: i32,
    /// Its path in the temporary directory (a pointer's, for a directory made elsewhere).
    pub path: PathBuf,
    /// Where a pointer leads, when it is one.
    pub target: Option<PathBuf>,
}

impl Stale {
    /// For people: "temporary file /tmp/audiolat-plan-7-0-1-2.log", "temporary directory
    /// /d/audiolat-io-7-0".
    pub fn describe(&self) -> String {
        let path = self.target.as_ref().unwrap_or(&self.path);
        let what = if path.is_dir() { "directory" } else { "file" };
        format!("temporary {what} {}", path.display())
    }
}

/// The temporary paths in [`dir`] that processes which no longer run left.
pub fn stale() -> Vec<Stale> {
    stale_in(&dir())
}

/// [`stale`] in the directory `parent`.
pub fn stale_in(parent: &Path) -> Vec<Stale> {
    let own = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut out: Vec<Stale> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let (_, pid) = owner(name.to_str()?)?;
            if pid == own || crate::servers::process_running(pid) {
                return None;
            }
            let path = e.path();
            // A pointer leads to a directory of the same name: nothing else is followed.
            let target = std::fs::read_link(&path)
                .ok()
                .filter(|t| t.file_name() == path.file_name());
            Some(Stale { pid, path, target })
        })
        .collect();
    out.sort_by(|a, b| (a.pid, &a.path).cmp(&(b.pid, &b.path)));
    out
}

/// Removes what [`stale`] found (a pointer's directory too); the problems, one phrase
/// each ("cannot remove /tmp/x: Permission denied").
pub fn remove_stale(stale: &[Stale]) -> Vec<String> {
    let mut problems = Vec::new();
    for s in stale {
        for path in s.target.iter().chain([&s.path]) {
            if let Err(e) = remove_path(path) {
                problems.push(format!("cannot remove {}: {e}", path.display()));
            }
        }
    }
    problems
}

/// Removes a file, a symbolic link or a directory with what it holds; a path that is not
/// there is no error.
fn remove_path(path: &Path) -> std::io::Result<()> {
    let result = match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) => Err(e),
    };
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// A directory of this process, `PARENT/audiolat-KIND-PID-N`, with a pointer to it in the
/// temporary directory when `PARENT` is elsewhere; both are removed, with what the
/// directory holds, when it is dropped.
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
    pointer: Option<PathBuf>,
}

impl ScratchDir {
    /// Makes one in `parent` for `kind` ([`KINDS`]).
    pub fn make(parent: &Path, kind: &str) -> std::io::Result<ScratchDir> {
        let name = name(kind);
        let path = parent.join(&name);
        std::fs::create_dir(&path)?;
        let pointer = dir().join(&name);
        let same_dir = std::fs::canonicalize(parent).ok() == std::fs::canonicalize(dir()).ok();
        let pointer = if same_dir {
            None
        } else {
            let target = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            // Without its pointer, only a process killed outright would leave it unfound.
            std::os::unix::fs::symlink(target, &pointer)
                .ok()
                .map(|()| pointer)
        };
        Ok(ScratchDir { path, pointer })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = remove_path(&self.path);
        if let Some(pointer) = &self.pointer {
            let _ = remove_path(pointer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_say_their_kind_and_process() {
        let n = name("plan");
        assert_eq!(owner(&n), Some(("plan", std::process::id() as i32)));
        assert_eq!(owner("audiolat-pipewire-42-0"), Some(("pipewire", 42)));
        assert_eq!(owner("audiolat-plan-42-1-cell-3.log"), Some(("plan", 42)));
        for other in [
            "audiolat-io-42",
            "audiolat-io--0",
            "audiolat-0",
            "audiolat-tests.lock",
            "audiolat-lab-2iSzDP",
            "audiolat-report-plan-4.html",
            "audiolat-io-x-0",
        ] {
            assert_eq!(owner(other), None, "{other}");
        }
    }

    #[test]
    fn what_a_dead_process_left_is_found_and_removed_with_what_a_pointer_leads_to() {
        let tmp = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        // Above pid_max: never running.
        let dead = 5_000_000;
        let log = tmp
            .path()
            .join(format!("audiolat-plan-{dead}-1-cell-2.log"));
        std::fs::write(&log, "x").unwrap();
        let scratch = elsewhere.path().join(format!("audiolat-io-{dead}-0"));
        std::fs::create_dir(&scratch).unwrap();
        std::fs::write(scratch.join("tmp-stress-ng"), "x").unwrap();
        let pointer = tmp.path().join(format!("audiolat-io-{dead}-0"));
        std::os::unix::fs::symlink(&scratch, &pointer).unwrap();
        // Ours, and another program's: left alone.
        let ours = tmp.path().join(name("plan"));
        std::fs::write(&ours, "x").unwrap();
        std::fs::write(tmp.path().join("other-5000000-0"), "x").unwrap();
        let found = stale_in(tmp.path());
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].describe().starts_with("temporary "), "{found:?}");
        assert!(found.iter().any(|s| s.target.as_deref() == Some(&scratch)));
        assert!(remove_stale(&found).is_empty());
        assert!(!log.exists() && !scratch.exists() && !pointer.exists());
        assert!(ours.exists());
        assert!(stale_in(tmp.path()).is_empty());
    }

    #[test]
    fn a_scratch_dir_and_its_pointer_go_when_it_is_dropped() {
        let elsewhere = tempfile::tempdir().unwrap();
        let scratch = ScratchDir::make(elsewhere.path(), "io").unwrap();
        let path = scratch.path().to_path_buf();
        std::fs::write(path.join("file"), "x").unwrap();
        let pointer = dir().join(path.file_name().unwrap());
        assert!(
            pointer.symlink_metadata().is_ok(),
            "a pointer in {}",
            dir().display()
        );
        drop(scratch);
        assert!(!path.exists());
        assert!(pointer.symlink_metadata().is_err());
    }
}
