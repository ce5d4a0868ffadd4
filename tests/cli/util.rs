//! Fixtures for the CLI tests (and the lab's, `tests/lab/main.rs`, which includes this
//! file): run the built binary on a database of its own, hold the machine, require
//! tools, start a private JACK server ([`DummyJackd`]), and guards that clean up after a
//! test even when it panics (a child, a tmpfs, a jackd).

#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use results::Store;
use serde_json::Value;

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

impl From<std::process::Output> for Output {
    fn from(out: std::process::Output) -> Output {
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// A fresh temporary directory and the path of a database `file` in it (not created):
/// the directory goes when the guard drops.
pub fn temp_db(file: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempdir();
    let db = dir.path().join(file);
    (dir, db)
}

/// audiolat with `--db db` and `args`, standard input closed: for a test that needs
/// more (an environment, pipes) before it runs it.
pub fn command(db: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.arg("--db").arg(db).args(args).stdin(Stdio::null());
    cmd
}

/// Runs a command to its end and keeps what it printed.
pub fn output(cmd: &mut Command) -> Output {
    cmd.output().expect("running audiolat").into()
}

/// Runs audiolat with `--db db` and `args`.
pub fn run(db: &Path, args: &[&str]) -> Output {
    output(&mut command(db, args))
}

/// Parses what a command printed as JSON; panics with the text otherwise.
pub fn parse_json(stdout: impl AsRef<[u8]>) -> Value {
    let text = String::from_utf8_lossy(stdout.as_ref());
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Runs audiolat and parses its standard output as JSON; panics with stderr otherwise.
pub fn run_json(db: &Path, args: &[&str]) -> Value {
    let out = run(db, args);
    assert!(
        out.code == 0,
        "audiolat {args:?} exited {}: {}",
        out.code,
        out.stderr
    );
    parse_json(&out.stdout)
}

/// The flags of each of `audiolat devices --json`'s suggestions.
pub fn suggested_args(devices: &Value) -> Vec<&str> {
    devices["suggestions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["args"].as_str())
        .collect()
}

/// Starts audiolat in the background.
pub fn spawn(db: &Path, args: &[&str]) -> Child {
    command(db, args)
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

/// SIGKILLs an audiolat this test started; its private server `name` goes with it (or
/// is stopped here, not to hold the name).
pub fn kill_with_its_server(mut child: KillOnDrop, name: &str) {
    // SAFETY: killing the audiolat this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.0.wait();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !jackd_pids(name).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    for pid in jackd_pids(name) {
        // SAFETY: the jackd of the audiolat this test killed.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// jackd processes serving a server name, from /proc (so a test can kill the private
/// server audiolat started, and check none is left).
pub fn jackd_pids(server_name: &str) -> Vec<i32> {
    engine::jack::server::jackd_processes()
        .into_iter()
        .filter(|(_, args)| args.windows(2).any(|w| w[0] == "-n" && w[1] == server_name))
        .map(|(pid, _)| pid)
        .collect()
}

/// A server name per test. Stable, not per process: jackd keeps a registry of at most
/// eight servers, and the entry of one that was killed outright is only reclaimed by the
/// next server of the same name.
///
/// Tests kill servers outright on purpose, and each name so killed keeps its entry: when
/// the registry is full of dead servers and no jackd runs, it is removed first, as
/// doctor's fix says (jackd makes a new one), so the next JACK test can start a server.
pub fn unique_server(tag: &str) -> String {
    engine::servers::reclaim_dead_jack_registry();
    format!("audiolat-test-{tag}")
}

/// True (after saying the test is skipped, and why) when this is not root.
pub fn not_root(why: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let not = unsafe { libc::geteuid() } != 0;
    if not {
        eprintln!("skipped: {why}");
    }
    not
}

/// Whether /proc/asound lists a sound card (CI's machines have none).
pub fn has_sound_card() -> bool {
    std::fs::read_to_string("/proc/asound/cards").is_ok_and(|t| {
        t.lines()
            .any(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// Polls `db` read-only (a read-write open would close a dead process's runs itself)
/// until `ready` says so.
pub fn poll_read_only(db: &Path, what: &str, ready: impl Fn(&Store) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(100));
        if let Ok(store) = Store::open_read_only(db) {
            if ready(&store) {
                return;
            }
        }
    }
}

/// A private `jackd -d dummy` for one test, under the test's own server name
/// ([`unique_server`]). [`DummyJackd::start`] returns once it accepts clients (jackd2's
/// `jack_wait`); it is stopped, with anything it started (its process group), when the
/// guard drops, even when the test panics, so no server outlives its test to hold its
/// name. The caller requires the tool first (`require_tool("jackd", "jackd2")`).
pub struct DummyJackd {
    child: Option<Child>,
    name: String,
}

impl DummyJackd {
    /// Starts `jackd -n audiolat-test-<tag> -d dummy -r <rate_hz> -p <period_frames>` and
    /// waits (10 s at most) until it accepts clients; panics when it does not come up.
    pub fn start(tag: &str, rate_hz: u32, period_frames: u32) -> DummyJackd {
        let name = unique_server(tag);
        let child = Command::new("jackd")
            .args(["-n", &name, "-d", "dummy"])
            .args(["-r", &rate_hz.to_string(), "-p", &period_frames.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("starting jackd -n {name}: {e}"));
        let server = DummyJackd {
            child: Some(child),
            name,
        };
        let ready = Command::new("jack_wait")
            .args(["-s", &server.name, "-w", "-t", "10"])
            .output()
            .expect("running jack_wait");
        assert!(
            ready.status.success(),
            "jackd {} did not come up",
            server.name
        );
        server
    }

    /// The server's name, for `--server-name` and `JACK_DEFAULT_SERVER`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The jackd's pid.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Stops it now, cleanly: SIGTERM, then SIGKILL after 10 s. Its exit status, or
    /// `None` when it had to be killed.
    pub fn stop(mut self) -> Option<ExitStatus> {
        self.shut_down()
    }

    fn shut_down(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        let group = child.id() as i32;
        // SAFETY: signalling the process group of the jackd this guard started.
        unsafe { libc::kill(-group, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => break None,
            }
        };
        // SAFETY: as above; whatever of the group is left (nothing, when it stopped).
        unsafe { libc::kill(-group, libc::SIGKILL) };
        let _ = child.wait();
        status
    }
}

impl Drop for DummyJackd {
    fn drop(&mut self) {
        let _ = self.shut_down();
    }
}

/// Panics with the install command when a program a private PipeWire needs, or
/// PipeWire's libjack, is missing (scripts/install-deps installs them).
pub fn require_pipewire() {
    require_tool("pipewire", "pipewire-bin");
    require_tool("wireplumber", "wireplumber");
    require_tool("dbus-daemon", "dbus-daemon");
    require_tool("pw-link", "pipewire-bin");
    assert!(
        engine::jack::via_pipewire::libjack_candidates()
            .iter()
            .any(|p| p.exists()),
        "PipeWire's libjack is not installed: apt install pipewire-jack (the README's test command does)"
    );
}

/// The pids of the private PipeWire processes (pipewire, wireplumber, dbus-daemon) the
/// audiolat of pid `audiolat_pid` started (they carry its pid in
/// `AUDIOLAT_PRIVATE_SERVER`) that still have a /proc entry.
pub fn private_pipewire_pids(audiolat_pid: u32) -> Vec<u32> {
    let marker = format!("AUDIOLAT_PRIVATE_SERVER={audiolat_pid}");
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            ["pipewire", "wireplumber", "dbus-daemon"].contains(&comm.trim())
                && environ.split(|b| *b == 0).any(|v| v == marker.as_bytes())
        })
        .collect()
}

/// The private directories of the PipeWire an audiolat of pid `pid` started.
pub fn private_dirs(pid: u32) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("audiolat-pipewire-{pid}-"))
        })
        .map(|e| e.path())
        .collect()
}

/// audiolat on a terminal of its own, as a command typed in a terminal window or an ssh
/// session is: a pseudo-terminal whose session it leads (so it is its foreground process
/// group), its standard streams on it, what it prints read by a thread. A test can then
/// type keys on it (Ctrl-C, Ctrl-\) and hang it up ([`OnTerminal::hang_up`]). It is
/// SIGKILLed and reaped when the guard drops.
pub struct OnTerminal {
    child: Child,
    master: Option<std::os::fd::OwnedFd>,
    printed: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    reading: std::sync::Arc<std::sync::atomic::AtomicBool>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl OnTerminal {
    /// Starts audiolat with `--db db` and `args` on a new terminal.
    pub fn spawn(db: &Path, args: &[&str]) -> OnTerminal {
        OnTerminal::spawn_with(db, args, &[])
    }

    /// [`OnTerminal::spawn`] with `env` added to its environment.
    pub fn spawn_with(db: &Path, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> OnTerminal {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::{Arc, Mutex};
        let (mut master, mut slave) = (-1, -1);
        // SAFETY: valid out pointers; no name, settings or window size asked for.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: openpty just opened both; each is owned once.
        let (master, slave) =
            unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let mut cmd = Command::new(bin());
        cmd.arg("--db")
            .arg(db)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: only async-signal-safe calls (setsid, ioctl) between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("starting audiolat on a terminal");
        // The terminal's other end is now the child's alone.
        drop(cmd);
        let printed = Arc::new(Mutex::new(Vec::new()));
        let reading = Arc::new(AtomicBool::new(true));
        let fd = master.as_raw_fd();
        let reader = {
            let (printed, reading) = (Arc::clone(&printed), Arc::clone(&reading));
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while reading.load(Ordering::SeqCst) {
                    let mut pfd = libc::pollfd {
                        fd,
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    // SAFETY: one valid pollfd; the fd stays open until this thread is
                    // joined.
                    if unsafe { libc::poll(&mut pfd, 1, 50) } <= 0 {
                        continue;
                    }
                    // SAFETY: reading into a buffer of its length.
                    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
                    if n <= 0 {
                        // EIO: the child closed its end. Nothing more will come.
                        std::thread::sleep(Duration::from_millis(50));
                        continue;
                    }
                    printed
                        .lock()
                        .unwrap()
                        .extend_from_slice(&buf[..n as usize]);
                }
            })
        };
        OnTerminal {
            child,
            master: Some(master),
            printed,
            reading,
            reader: Some(reader),
        }
    }

    /// The pid of audiolat (its process group and its session too).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Types `keys` on the terminal: `b"\x03"` is Ctrl-C, `b"\x1c"` Ctrl-\ (the terminal
    /// sends SIGINT or SIGQUIT to its foreground process group).
    pub fn type_keys(&self, keys: &[u8]) {
        use std::os::fd::AsRawFd;
        let fd = self
            .master
            .as_ref()
            .expect("the terminal is up")
            .as_raw_fd();
        // SAFETY: writing a buffer of its length to our end of the terminal.
        let n = unsafe { libc::write(fd, keys.as_ptr().cast(), keys.len()) };
        assert_eq!(n, keys.len() as isize, "typing on the terminal");
    }

    /// Closes the terminal, as closing its window or losing the ssh session does: the
    /// kernel hangs it up (every write to it fails from then on) and sends SIGHUP to the
    /// session's leader; then, as a shell passes the hang-up on to its job, SIGHUP to the
    /// whole process group.
    pub fn hang_up(&mut self) {
        self.reading
            .store(false, std::sync::atomic::Ordering::SeqCst);
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        drop(self.master.take());
        // SAFETY: signalling the process group of the audiolat this guard started.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGHUP) };
    }

    /// How audiolat ended, once it has.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().expect("waiting")
    }

    /// Waits for audiolat to end (killing it after `timeout`).
    pub fn wait(&mut self, timeout: Duration) -> ExitStatus {
        wait_timeout(&mut self.child, timeout)
    }

    /// What it printed on the terminal so far (before a hang-up: nothing after).
    pub fn printed(&self) -> String {
        String::from_utf8_lossy(&self.printed.lock().unwrap()).into_owned()
    }
}

impl Drop for OnTerminal {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        self.reading
            .store(false, std::sync::atomic::Ordering::SeqCst);
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// The private jackd processes the audiolat of pid `audiolat_pid` started (they carry
/// its pid in `AUDIOLAT_PRIVATE_SERVER`) that still run.
pub fn private_jackd_pids(audiolat_pid: u32) -> Vec<i32> {
    let marker = format!(
        "{}={audiolat_pid}",
        engine::jack::server::PRIVATE_SERVER_ENV
    );
    engine::jack::server::jackd_processes()
        .into_iter()
        .map(|(pid, _)| pid)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .unwrap_or_default()
                .split(|b| *b == 0)
                .any(|v| v == marker.as_bytes())
        })
        .collect()
}

/// Every miss a spin overlapped names `name` with the spin's time inside it (within
/// 10 % or 50 us); the parts of every miss add up to its lateness. Returns how many
/// misses the culprit caused.
pub fn assert_named(why: &serde_json::Value, name: &str, spins: &[(u64, u64)]) -> usize {
    let misses = why["misses"].as_array().expect("why.misses");
    let mut caused = 0;
    for m in misses {
        let (t, late) = (m["t_ns"].as_u64().unwrap(), m["late_ns"].as_u64().unwrap());
        let causes = m["causes"].as_array().unwrap();
        let total: u64 = causes.iter().map(|c| c["ns"].as_u64().unwrap()).sum();
        assert_eq!(total, late, "the parts add up to the lateness: {m}");
        if m["events_lost"] == true {
            // The kernel's buffer overflowed in its window, and the miss says so.
            continue;
        }
        let Some(expected) = spins
            .iter()
            .map(|&(s, e)| e.min(t + late).saturating_sub(s.max(t)))
            .find(|&o| o > 0)
        else {
            continue;
        };
        caused += 1;
        let named: u64 = causes
            .iter()
            .filter(|c| c["kind"] == "thread" && c["name"] == name)
            .map(|c| c["ns"].as_u64().unwrap())
            .sum();
        // The spin's wall time includes the interrupts and the host's steal on its CPU,
        // which the trace tells apart: they are not the culprit's.
        let culprit_cpu = causes
            .iter()
            .find(|c| c["kind"] == "thread" && c["name"] == name)
            .map(|c| c["cpu"].clone());
        let taken: u64 = causes
            .iter()
            .filter(|c| {
                matches!(c["kind"].as_str(), Some("irq" | "softirq" | "steal"))
                    && Some(&c["cpu"]) == culprit_cpu.as_ref()
            })
            .map(|c| c["ns"].as_u64().unwrap())
            .sum();
        let tolerance = (expected / 10).max(50_000);
        assert!(
            named <= expected + tolerance && named + taken + tolerance >= expected,
            "{name} spun {expected} ns of a {late} ns miss; the trace says {named} (and {taken} of interrupts and steal on its CPU): {m}"
        );
    }
    caused
}
