//! Boots the kernel lab's guests (scripts/kernel-lab) once per test binary and hands the
//! tests what their checks left behind.
//!
//! A kernel's checks are the scripts in `tests/lab/<kernel>/` (`stock`: Debian's
//! `linux-image-amd64`; `rt`: `linux-image-rt-amd64`). One guest boot runs them all, in
//! name order, in `<kernel>/` of a directory on this machine that every guest shares
//! (so checks of both kernels can write one database, `../suite.db`), with `$AUDIOLAT`
//! naming the binary cargo built; each leaves `<name>.out` (its output) and `<name>.rc`
//! (its exit status), and whatever files it writes there. Guests boot one at a time:
//! under TCG a guest's timing is the emulator's, and two guests would share this
//! machine's two CPUs.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// A kernel the lab boots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// Debian's stock kernel (PREEMPT_DYNAMIC).
    Stock,
    /// Debian's PREEMPT_RT kernel.
    Rt,
}

impl Kernel {
    fn flavour(self) -> &'static str {
        match self {
            Kernel::Stock => "amd64",
            Kernel::Rt => "rt-amd64",
        }
    }
    fn checks(self) -> &'static str {
        match self {
            Kernel::Stock => "stock",
            Kernel::Rt => "rt",
        }
    }
}

/// What one guest's checks left in the shared directory.
pub struct Guest {
    pub kernel: Kernel,
    /// The checks' directory, `<shared>/<kernel>`.
    pub share: PathBuf,
    /// The lab's own output (fetching, booting, the checks' names).
    pub log: String,
}

/// The directory every guest shares, for the life of the test binary: removed when it
/// exits (statics are never dropped), unless AUDIOLAT_LAB_KEEP=1 keeps it to look at.
pub fn shared() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("audiolat-lab-")
            .tempdir()
            .expect("temporary directory")
            .keep();
        if std::env::var_os("AUDIOLAT_LAB_KEEP").is_some_and(|v| v == "1") {
            eprintln!("kernel lab: keeping {}", dir.display());
        } else {
            extern "C" fn remove_shared() {
                if let Some(dir) = DIR.get() {
                    let _ = std::fs::remove_dir_all(dir);
                }
            }
            // SAFETY: registers a plain function run at exit; it only removes a directory.
            unsafe { libc::atexit(remove_shared) };
        }
        dir
    })
}

/// One check's output and exit status.
pub struct Check {
    pub name: String,
    pub out: String,
    pub rc: i32,
}

impl Guest {
    /// A file a check wrote; panics (with the lab's log) when it is missing.
    pub fn file(&self, name: &str) -> String {
        std::fs::read_to_string(self.share.join(name)).unwrap_or_else(|e| {
            panic!(
                "{:?} guest: {name} is missing ({e}); the lab said:\n{}",
                self.kernel, self.log
            )
        })
    }

    /// The JSON of a probe run the checks made with `run_clean` (tests/lab/lib.sh),
    /// `base.json`; a first run that under-ran and was made again is said here.
    pub fn clean_run(&self, base: &str) -> serde_json::Value {
        if let Ok(why) = std::fs::read_to_string(self.path(&format!("{base}.retried"))) {
            eprintln!("{:?} guest: {base}: {}", self.kernel, why.trim());
        }
        self.json(&format!("{base}.json"))
    }

    /// A file a check wrote, parsed as JSON.
    pub fn json(&self, name: &str) -> serde_json::Value {
        let text = self.file(name);
        serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!("{:?} guest: {name} is not JSON ({e}):\n{text}", self.kernel)
        })
    }

    /// The check `name` (its script's name without `.sh`), which must have run.
    pub fn check(&self, name: &str) -> Check {
        let out = self.file(&format!("{name}.out"));
        let rc = self
            .file(&format!("{name}.rc"))
            .trim()
            .parse()
            .unwrap_or(-1);
        Check {
            name: name.to_string(),
            out,
            rc,
        }
    }

    /// The check `name`, which must have exited 0.
    pub fn ok(&self, name: &str) -> Check {
        let c = self.check(name);
        assert_eq!(
            c.rc, 0,
            "{:?} guest: check {name} exited {}:\n{}",
            self.kernel, c.rc, c.out
        );
        c
    }

    /// The path of a file in the shared directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.share.join(name)
    }

    /// Whether the guest ran on an emulated CPU (TCG), as the lab recorded (KVM where a
    /// guest boots): its times then describe the emulator.
    pub fn emulated(&self) -> bool {
        let lab = shared().join(format!("{}.lab", self.kernel.checks()));
        let facts = std::fs::read_dir(&lab)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .and_then(|e| std::fs::read_to_string(e.path().join("facts")).ok())
            .unwrap_or_else(|| {
                panic!(
                    "{:?} guest: the lab's facts are missing in {}",
                    self.kernel,
                    lab.display()
                )
            });
        facts.lines().any(|l| l == "accel=tcg")
    }
}

/// Whether the lab runs here: Debian on x86_64 (the lab boots Debian's amd64 kernels,
/// fetched from Debian's archive with apt), and not switched off with
/// AUDIOLAT_SKIP_LAB=1 (for a quick local run; CI runs it).
pub fn enabled() -> bool {
    if std::env::var_os("AUDIOLAT_SKIP_LAB").is_some_and(|v| v == "1") {
        eprintln!("kernel lab skipped: AUDIOLAT_SKIP_LAB=1");
        return false;
    }
    if std::env::consts::ARCH != "x86_64" {
        eprintln!("kernel lab skipped: it boots amd64 kernels");
        return false;
    }
    let os = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    if !os.lines().any(|l| l == "ID=debian") {
        eprintln!(
            "kernel lab skipped: it boots Debian's kernels (linux-image-amd64, linux-image-rt-amd64) from Debian's archive; this machine is not Debian"
        );
        return false;
    }
    true
}

/// A database with a write-ahead log that still holds its last write, as a machine with
/// shared memory leaves one (its files copied while it was open), put where the stock
/// guest's checks find it on the 9p share (`80-store.sh` reads it there).
fn leave_a_wal_database(dir: &Path) {
    std::fs::create_dir_all(dir).expect("checks directory");
    let made = shared().join("made-here.db");
    let store = results::Store::open(&made).expect("a database here");
    store
        .create_group(
            "suite",
            "made on the host, left in WAL mode",
            &serde_json::json!({}),
        )
        .expect("a group");
    std::fs::copy(&made, dir.join("prewal.db")).expect("copy");
    std::fs::copy(made.with_extension("db-wal"), dir.join("prewal.db-wal")).expect("copy the log");
}

fn boot(kernel: Kernel) -> Result<Guest, String> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let _machine = crate::util::machine_lock();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shared = shared();
    if kernel == Kernel::Stock {
        leave_a_wal_database(&shared.join(kernel.checks()));
    }
    let out = Command::new(root.join("scripts/kernel-lab"))
        // A guest stopped when it runs far longer than its checks take (about 6 minutes
        // on a busy machine under TCG).
        .args(["--kernel", kernel.flavour(), "--quiet", "--timeout", "600"])
        .arg("--output")
        .arg(shared.join(format!("{}.lab", kernel.checks())))
        .arg("--share")
        .arg(shared)
        .arg("--")
        .arg(root.join("tests/lab/run-checks"))
        .arg(crate::util::bin())
        .arg(root.join("tests/lab").join(kernel.checks()))
        .arg(kernel.checks())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("running scripts/kernel-lab");
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!("{log}");
    if !out.status.success() {
        return Err(format!(
            "scripts/kernel-lab --kernel {} failed ({}):\n{log}{}",
            kernel.flavour(),
            out.status,
            String::from_utf8_lossy(&out.stdout)
        ));
    }
    Ok(Guest {
        kernel,
        share: shared.join(kernel.checks()),
        log,
    })
}

/// The guest of `kernel`, booted (and its checks run) on first use; a boot that failed
/// fails every test that needs it, without booting again.
pub fn guest(kernel: Kernel) -> &'static Guest {
    static STOCK: OnceLock<Result<Guest, String>> = OnceLock::new();
    static RT: OnceLock<Result<Guest, String>> = OnceLock::new();
    let cell = match kernel {
        Kernel::Stock => &STOCK,
        Kernel::Rt => &RT,
    };
    match cell.get_or_init(|| boot(kernel)) {
        Ok(g) => g,
        Err(why) => panic!("{why}"),
    }
}
