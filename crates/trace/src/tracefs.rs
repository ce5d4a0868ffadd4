//! tracefs: found or mounted (and unmounted again when audiolat mounted it), and an
//! instance of audiolat's own (`instances/audiolat-PID`), so the user's global trace
//! settings and buffer are never touched.

use std::ffi::CString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Where tracefs is normally mounted.
pub const TRACEFS: &str = "/sys/kernel/tracing";
/// The prefix of audiolat's instances; the rest of the name is the owner's pid.
pub const INSTANCE_PREFIX: &str = "audiolat-";

/// Why the kernel cannot be traced here. Each says what is missing.
#[derive(Debug, thiserror::Error)]
pub enum Unavailable {
    /// The kernel was built without tracefs.
    #[error("this kernel has no tracefs (CONFIG_TRACING off)")]
    NoTracefs,
    /// Not allowed: tracing needs root (or CAP_SYS_ADMIN and access to tracefs).
    #[error("tracing the kernel needs root: {0}")]
    NotAllowed(String),
    /// tracefs is mounted read-only, so no instance can be made.
    #[error("tracefs at {0} is read-only")]
    ReadOnly(PathBuf),
    /// tracefs is not mounted and mounting it failed (a container without the mount).
    #[error("tracefs is not mounted and could not be mounted at {path}: {source}")]
    Mount {
        /// Where the mount was tried.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// A tracepoint the attribution cannot do without is missing.
    #[error("this kernel lacks the tracepoint {0}")]
    MissingEvent(&'static str),
    /// Something else about the instance failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: io::Error,
    },
}

fn is_permission(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::EACCES))
}

/// The tracefs mount audiolat uses, unmounted when dropped if audiolat mounted it.
#[derive(Debug)]
pub struct Tracefs {
    root: PathBuf,
    mounted_here: bool,
}

/// Where tracefs is mounted, from `/proc/self/mounts`.
fn mounted_at() -> Option<PathBuf> {
    let points = tracefs_mounts();
    points
        .iter()
        .find(|p| p.as_os_str() == TRACEFS)
        .or(points.first())
        .cloned()
}

/// Where tracefs is mounted, in `/proc/self/mounts`' order.
fn tracefs_mounts() -> Vec<PathBuf> {
    let mounts = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, point, kind) = (f.next()?, f.next()?, f.next()?);
            (kind == "tracefs").then(|| PathBuf::from(point))
        })
        .collect()
}

fn kernel_has_tracefs() -> bool {
    fs::read_to_string("/proc/filesystems")
        .map(|f| {
            f.lines()
                .any(|l| l.split_whitespace().last() == Some("tracefs"))
        })
        .unwrap_or(false)
}

impl Tracefs {
    /// Finds tracefs, mounting it at [`TRACEFS`] when it is not mounted (unmounted when
    /// this is dropped).
    pub fn open() -> Result<Tracefs, Unavailable> {
        if let Some(root) = mounted_at() {
            return Ok(Tracefs {
                root,
                mounted_here: false,
            });
        }
        if !kernel_has_tracefs() {
            return Err(Unavailable::NoTracefs);
        }
        // Mounted at the system's place, and unmounted when done. (A mount of its own
        // elsewhere, detached after, is suspected of a soft lockup seen now and then in
        // the lab's guests of Debian's 6.1 kernel: see the notes of issue 32.)
        let root = PathBuf::from(TRACEFS);
        let c = |s: &str| CString::new(s).expect("no NUL");
        let target = c(TRACEFS);
        let (src, kind) = (c("nodev"), c("tracefs"));
        // SAFETY: the strings are NUL-terminated and outlive the call.
        let rc = unsafe {
            libc::mount(
                src.as_ptr(),
                target.as_ptr(),
                kind.as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        if rc != 0 {
            let source = io::Error::last_os_error();
            if is_permission(&source) {
                return Err(Unavailable::NotAllowed(format!(
                    "mounting tracefs: {source}"
                )));
            }
            return Err(Unavailable::Mount { path: root, source });
        }
        Ok(Tracefs {
            root,
            mounted_here: true,
        })
    }

    /// tracefs's root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether audiolat mounted it (and so unmounts it when done).
    pub fn mounted_here(&self) -> bool {
        self.mounted_here
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        if self.mounted_here {
            if let Ok(target) = CString::new(self.root.as_os_str().as_encoded_bytes()) {
                // SAFETY: a NUL-terminated path. Another process still using the mount
                // makes this fail (EBUSY), which leaves it mounted for that user.
                unsafe { libc::umount2(target.as_ptr(), 0) };
            }
        }
    }
}

/// The events audiolat asks for: (system, event, needed). The attribution cannot
/// work without a needed one; without another it explains less and says so.
pub const EVENTS: &[(&str, &str, bool)] = &[
    ("sched", "sched_switch", true),
    ("sched", "sched_waking", true),
    ("sched", "sched_wakeup", false),
    ("sched", "sched_stat_runtime", false),
    ("irq", "irq_handler_entry", false),
    ("irq", "irq_handler_exit", false),
    ("irq", "softirq_entry", false),
    ("irq", "softirq_exit", false),
    ("irq", "softirq_raise", false),
    ("power", "cpu_idle", false),
    ("exceptions", "page_fault_user", false),
    ("timer", "hrtimer_expire_entry", false),
    ("snd_pcm", "xrun", false),
];

/// The systems whose every `*_entry`/`*_exit` (or every event) is asked for where the
/// kernel has it: interrupt vectors (local timer, IPIs) and osnoise.
pub const EVENT_SYSTEMS: &[&str] = &["irq_vectors", "osnoise"];

/// An instance of tracefs of audiolat's own, removed when dropped.
#[derive(Debug)]
pub struct Instance {
    dir: PathBuf,
    /// The events enabled: (system, name).
    pub enabled: Vec<(String, String)>,
    /// Events asked for that this kernel lacks, as `system:name`.
    pub missing: Vec<String>,
    // Dropped after the instance's directory is removed.
    tracefs: Tracefs,
}

/// A CPU list as tracefs's `tracing_cpumask` takes it: hex words of 32 CPUs,
/// comma-separated, the highest first.
pub fn cpumask(cpus: &[usize]) -> String {
    let top = cpus.iter().copied().max().unwrap_or(0);
    let words = top / 32 + 1;
    let mut mask = vec![0u32; words];
    for &c in cpus {
        mask[c / 32] |= 1 << (c % 32);
    }
    mask.iter()
        .rev()
        .map(|w| format!("{w:08x}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A tracefs file's text. Some (`events/header_page`) answer only the first read, so
/// the first read asks for far more than they hold.
pub fn read_whole(path: &Path) -> io::Result<String> {
    use std::io::Read;
    let mut file = fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 16];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match file.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

fn write(path: &Path, value: &str) -> io::Result<()> {
    fs::write(path, value)
}

impl Instance {
    /// Makes `instances/audiolat-PID`, with the trace clock CLOCK_MONOTONIC (`mono`),
    /// `buffer_kb` per CPU, tracing only `cpus` (all when `None`), and every event of
    /// [`EVENTS`] and [`EVENT_SYSTEMS`] the kernel has enabled. Tracing is on when
    /// this returns.
    pub fn create(
        tracefs: Tracefs,
        cpus: Option<&[usize]>,
        buffer_kb: u32,
    ) -> Result<Instance, Unavailable> {
        let root = tracefs.root().to_path_buf();
        let instances = root.join("instances");
        let dir = instances.join(format!("{INSTANCE_PREFIX}{}", std::process::id()));
        if let Err(e) = fs::create_dir(&dir) {
            return Err(match e.raw_os_error() {
                _ if is_permission(&e) => {
                    Unavailable::NotAllowed(format!("making {}: {e}", dir.display()))
                }
                Some(libc::EROFS) => Unavailable::ReadOnly(root),
                Some(libc::EEXIST) => {
                    // A previous session of this very process was not removed.
                    let _ = fs::remove_dir(&dir);
                    match fs::create_dir(&dir) {
                        Ok(()) => return Self::set_up(tracefs, dir, cpus, buffer_kb),
                        Err(e) => Unavailable::Io {
                            what: format!("making {}", dir.display()),
                            source: e,
                        },
                    }
                }
                _ if !instances.exists() => Unavailable::Io {
                    what: format!("{} is missing", instances.display()),
                    source: e,
                },
                _ => Unavailable::Io {
                    what: format!("making {}", dir.display()),
                    source: e,
                },
            });
        }
        Self::set_up(tracefs, dir, cpus, buffer_kb)
    }

    fn set_up(
        tracefs: Tracefs,
        dir: PathBuf,
        cpus: Option<&[usize]>,
        buffer_kb: u32,
    ) -> Result<Instance, Unavailable> {
        let mut inst = Instance {
            dir,
            enabled: Vec::new(),
            missing: Vec::new(),
            tracefs,
        };
        let io = |what: &str, dir: &Path| {
            let what = format!("{what} in {}", dir.display());
            move |source| Unavailable::Io { what, source }
        };
        write(&inst.dir.join("tracing_on"), "0").map_err(io("stopping the trace", &inst.dir))?;
        write(&inst.dir.join("trace_clock"), "mono")
            .map_err(io("setting the trace clock to mono", &inst.dir))?;
        write(&inst.dir.join("buffer_size_kb"), &buffer_kb.to_string())
            .map_err(io("sizing the buffer", &inst.dir))?;
        if let Some(cpus) = cpus.filter(|c| !c.is_empty()) {
            write(&inst.dir.join("tracing_cpumask"), &cpumask(cpus))
                .map_err(io("choosing the CPUs traced", &inst.dir))?;
        }
        let events = inst.dir.join("events");
        for &(system, name, needed) in EVENTS {
            let enable = events.join(system).join(name).join("enable");
            if enable.exists() && write(&enable, "1").is_ok() {
                inst.enabled.push((system.to_string(), name.to_string()));
            } else if needed {
                return Err(Unavailable::MissingEvent(match name {
                    "sched_switch" => "sched:sched_switch",
                    _ => "sched:sched_waking",
                }));
            } else {
                inst.missing.push(format!("{system}:{name}"));
            }
        }
        for &system in EVENT_SYSTEMS {
            let Ok(entries) = fs::read_dir(events.join(system)) else {
                inst.missing.push(format!("{system}:*"));
                continue;
            };
            let mut names: Vec<String> = entries
                .filter_map(|e| e.ok())
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| crate::event::known(system, n))
                .collect();
            names.sort();
            for name in names {
                if write(&events.join(system).join(&name).join("enable"), "1").is_ok() {
                    inst.enabled.push((system.to_string(), name));
                }
            }
        }
        write(&inst.dir.join("tracing_on"), "1").map_err(io("starting the trace", &inst.dir))?;
        Ok(inst)
    }

    /// The instance's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The tracefs it lives in.
    pub fn tracefs(&self) -> &Tracefs {
        &self.tracefs
    }

    /// The text of one of the instance's files (`events/header_page`, a format).
    pub fn read(&self, relative: &str) -> io::Result<String> {
        read_whole(&self.dir.join(relative))
    }

    /// Stops writing to the buffer (the readers may still drain it).
    pub fn stop(&self) {
        let _ = write(&self.dir.join("tracing_on"), "0");
    }

    /// Events the kernel dropped or overwrote on `cpu` (`per_cpu/cpuN/stats`:
    /// `overrun` plus `dropped events`).
    pub fn lost_on(&self, cpu: usize) -> Option<u64> {
        let stats = self.read(&format!("per_cpu/cpu{cpu}/stats")).ok()?;
        let value = |key: &str| -> u64 {
            stats
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0)
        };
        Some(value("overrun:") + value("dropped events:"))
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.stop();
        // Disabling the events first is not needed: removing an instance removes them.
        let _ = fs::remove_dir(&self.dir);
    }
}

/// Removes the instances a killed audiolat left (`audiolat-PID` whose process is
/// gone); returns the names removed. Nothing when tracefs is not mounted.
pub fn remove_leftover_instances() -> Vec<String> {
    let mut removed = Vec::new();
    if let Some(root) = mounted_at() {
        remove_dead_instances(&root, &mut removed);
    }
    removed
}

/// Removes the instances of processes that are gone, under tracefs at `root`.
fn remove_dead_instances(root: &Path, removed: &mut Vec<String>) {
    let Ok(entries) = fs::read_dir(root.join("instances")) else {
        return;
    };
    for e in entries.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(INSTANCE_PREFIX)
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let alive = Path::new(&format!("/proc/{pid}")).exists();
        if !alive && fs::remove_dir(e.path()).is_ok() {
            removed.push(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_without_a_needed_tracepoint_says_which_in_one_line() {
        // A tracefs whose instances have no `sched` events (a directory standing in for
        // one: the kernel makes an instance's files, here `fs::write` does).
        let root =
            std::env::temp_dir().join(format!("audiolat-fake-tracefs-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("instances")).unwrap();
        let tracefs = Tracefs {
            root: root.clone(),
            mounted_here: false,
        };
        let Err(e) = Instance::create(tracefs, Some(&[1]), 1024) else {
            panic!("an instance without sched_switch was made");
        };
        let _ = fs::remove_dir_all(&root);
        assert!(
            matches!(e, Unavailable::MissingEvent("sched:sched_switch")),
            "{e:?}"
        );
        let line = e.to_string();
        assert_eq!(line, "this kernel lacks the tracepoint sched:sched_switch");
        assert!(!line.contains('\n'));
    }

    #[test]
    fn cpumasks_are_hex_words_highest_first() {
        assert_eq!(cpumask(&[0]), "00000001");
        assert_eq!(cpumask(&[1, 3]), "0000000a");
        assert_eq!(cpumask(&[0, 33]), "00000002,00000001");
    }
}
