//! Fixtures for the CLI tests: run the built binary, hold the machine, require tools.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The audiolat binary cargo built for these tests.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_audiolat"))
}

/// What a finished command printed.
#[derive(Debug)]
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs audiolat with `--db db` and `args`.
pub fn run(db: &Path, args: &[&str]) -> Output {
    let out = Command::new(bin())
        .arg("--db")
        .arg(db)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("running audiolat");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs audiolat and parses its standard output as JSON; panics with stderr otherwise.
pub fn run_json(db: &Path, args: &[&str]) -> serde_json::Value {
    let out = run(db, args);
    assert!(
        out.code == 0,
        "audiolat {args:?} exited {}: {}",
        out.code,
        out.stderr
    );
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", out.stdout))
}

/// The flags of each of `audiolat devices --json`'s suggestions.
pub fn suggested_args(devices: &serde_json::Value) -> Vec<&str> {
    devices["suggestions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["args"].as_str())
        .collect()
}

/// Starts audiolat in the background.
pub fn spawn(db: &Path, args: &[&str]) -> Child {
    Command::new(bin())
        .arg("--db")
        .arg(db)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting audiolat")
}

/// Waits for a child, killing it after `timeout`.
pub fn wait_timeout(child: &mut Child, timeout: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("waiting") {
            return status;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            panic!("audiolat did not exit within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Exclusive use of the machine for tests that measure or load it. A file lock, so it
/// also holds across processes (cargo nextest).
pub struct MachineLock(std::fs::File);

pub fn machine_lock() -> MachineLock {
    let path = std::env::temp_dir().join("audiolat-tests.lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .expect("lock file");
    // SAFETY: flock on a valid fd; blocks until the lock is ours.
    let rc = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&f), libc::LOCK_EX) };
    assert_eq!(rc, 0, "flock {}", path.display());
    MachineLock(f)
}

/// Panics with the install command when a tool the test needs is missing: the README's
/// test command installs every one of them.
pub fn require_tool(name: &str, package: &str) {
    assert!(
        load::find_in_path(name).is_some(),
        "{name} is not installed: apt install {package} (the README's test command does)"
    );
}

/// A fresh temporary directory.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temporary directory")
}

/// A child process killed (SIGKILL) and reaped when the guard drops, so a failing test
/// leaves no server or client behind for the next one.
pub struct KillOnDrop(pub Child);

impl KillOnDrop {
    /// The child's pid.
    pub fn id(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// A tmpfs of `size_kib` KiB mounted on a fresh directory by the test (root only),
/// unmounted when the guard drops.
pub struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts one; `None` when not root (the caller skips, saying so).
    pub fn mount(size_kib: u64) -> Option<Tmpfs> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return None;
        }
        let dir = tempdir();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size_kib}k"), "tmpfs"])
            .arg(dir.path())
            .status()
            .expect("running mount")
            .success();
        assert!(ok, "mount -t tmpfs on {}", dir.path().display());
        Some(Tmpfs { dir })
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Remounts it read-only.
    pub fn make_read_only(&self) {
        let ok = Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(self.path())
            .status()
            .expect("running mount")
            .success();
        assert!(ok, "remount,ro {}", self.path().display());
    }

    /// Fills it with a file until the filesystem is full, then frees `leave_kib` KiB of
    /// it: what is left is exactly known, whatever the timing of what comes next.
    pub fn fill_leaving(&self, leave_kib: u64) {
        use std::io::Write;
        let filler = self.path().join("filler");
        let mut f = std::fs::File::create(&filler).expect("filler");
        let block = vec![0xa5u8; 4096];
        while f.write_all(&block).is_ok() {}
        let len = f.metadata().unwrap().len();
        f.set_len(len.saturating_sub(leave_kib * 1024)).unwrap();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}
