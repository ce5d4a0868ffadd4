//! Facts about the machine, stored with every run and checked by `doctor`.

use results::Machine;

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// `uname` fields: (release, version).
pub fn uname() -> (String, String) {
    let (release, version, _) = uname_all();
    (release, version)
}

/// `uname -r`, `uname -v` and `uname -m`.
pub fn uname_all() -> (String, String, String) {
    // SAFETY: utsname is plain data; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: valid out pointer.
    unsafe { libc::uname(&mut u) };
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).to_string()
    };
    (field(&u.release), field(&u.version), field(&u.machine))
}

/// How the running kernel preempts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Preemption {
    /// PREEMPT_RT: fully preemptible, threaded interrupts.
    Rt,
    /// A PREEMPT_DYNAMIC kernel, with its mode when it could be read
    /// (`none`, `voluntary`, `full`, `lazy`) and where the mode was read from.
    Dynamic(Option<String>, &'static str),
    /// CONFIG_PREEMPT (full) without dynamic switching.
    Full,
    /// CONFIG_PREEMPT_VOLUNTARY.
    Voluntary,
    /// CONFIG_PREEMPT_NONE (server).
    None,
    /// Could not tell.
    Unknown,
}

impl Preemption {
    /// The effective mode: `rt`, `full`, `lazy`, `voluntary`, `none` or `unknown`.
    pub fn effective(&self) -> &str {
        match self {
            Preemption::Rt => "rt",
            Preemption::Dynamic(Some(m), _) => m,
            Preemption::Dynamic(None, _) | Preemption::Unknown => "unknown",
            Preemption::Full => "full",
            Preemption::Voluntary => "voluntary",
            Preemption::None => "none",
        }
    }
}

impl std::fmt::Display for Preemption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Preemption::Rt => f.write_str("PREEMPT_RT"),
            Preemption::Dynamic(Some(m), source) => write!(f, "PREEMPT_DYNAMIC ({m}, {source})"),
            Preemption::Dynamic(None, _) => f.write_str("PREEMPT_DYNAMIC (mode unknown)"),
            Preemption::Full => f.write_str("PREEMPT (full)"),
            Preemption::Voluntary => f.write_str("PREEMPT_VOLUNTARY"),
            Preemption::None => f.write_str("PREEMPT_NONE"),
            Preemption::Unknown => f.write_str("unknown"),
        }
    }
}

/// The mode in brackets in `/sys/kernel/debug/sched/preempt` ("none voluntary (full) lazy").
pub fn parse_bracketed_mode(text: &str) -> Option<String> {
    let start = text.find('(')?;
    let end = text[start..].find(')')? + start;
    Some(text[start + 1..end].to_string())
}

/// The running kernel's build configuration, from `/boot/config-<release>` or
/// `/proc/config.gz`.
pub fn kernel_config() -> Option<String> {
    let (release, _) = uname();
    if let Ok(text) = std::fs::read_to_string(format!("/boot/config-{release}")) {
        return Some(text);
    }
    let gz = std::fs::File::open("/proc/config.gz").ok()?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(gz), &mut text).ok()?;
    Some(text)
}

fn kernel_config_value(key: &str) -> Option<String> {
    let text = kernel_config()?;
    let prefix = format!("{key}=");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix).map(str::to_string))
}

const DEBUGFS: &str = "/sys/kernel/debug";
const PREEMPT_FILE: &str = "/sys/kernel/debug/sched/preempt";

/// The PREEMPT_DYNAMIC mode from debugfs. Where debugfs is not mounted and this process
/// may mount it (root), it is mounted read-only for the reading and unmounted after, so
/// the machine is left as it was.
fn debugfs_preempt_mode() -> Option<String> {
    if let Some(t) = read_trim(PREEMPT_FILE) {
        return parse_bracketed_mode(&t);
    }
    let mounted = std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(DEBUGFS));
    if mounted || !std::path::Path::new(DEBUGFS).is_dir() {
        return None;
    }
    let c = |s: &str| std::ffi::CString::new(s).expect("no NUL in a constant");
    let (source, target, fstype) = (c("debugfs"), c(DEBUGFS), c("debugfs"));
    // SAFETY: valid NUL-terminated strings; no data argument. Fails harmlessly (EPERM)
    // without CAP_SYS_ADMIN.
    let rc = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return None;
    }
    let mode = read_trim(PREEMPT_FILE).and_then(|t| parse_bracketed_mode(&t));
    // SAFETY: unmounts what was mounted just above.
    unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
    mode
}

/// Detects the preemption model from `/sys/kernel/realtime`, debugfs, the kernel
/// command line, `uname -v` and the kernel's build configuration, in that order of
/// authority. A PREEMPT_DYNAMIC kernel without `preempt=` runs in its build default.
/// Read once per process (it may mount debugfs to read it).
pub fn preemption() -> Preemption {
    static ONCE: std::sync::OnceLock<Preemption> = std::sync::OnceLock::new();
    ONCE.get_or_init(detect_preemption).clone()
}

fn detect_preemption() -> Preemption {
    let (_, version) = uname();
    if read_trim("/sys/kernel/realtime").as_deref() == Some("1") || version.contains("PREEMPT_RT") {
        return Preemption::Rt;
    }
    let dynamic = version.contains("PREEMPT_DYNAMIC")
        || kernel_config_value("CONFIG_PREEMPT_DYNAMIC").as_deref() == Some("y");
    if dynamic {
        if let Some(mode) = debugfs_preempt_mode() {
            return Preemption::Dynamic(Some(mode), "debugfs");
        }
        let cmdline = read_trim("/proc/cmdline").unwrap_or_default();
        if let Some(mode) = cmdline
            .split_whitespace()
            .find_map(|w| w.strip_prefix("preempt="))
        {
            return Preemption::Dynamic(Some(mode.to_string()), "preempt= on the command line");
        }
        // Without debugfs or preempt=, the build default applies.
        for (key, mode) in [
            ("CONFIG_PREEMPT", "full"),
            ("CONFIG_PREEMPT_LAZY", "lazy"),
            ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
            ("CONFIG_PREEMPT_NONE", "none"),
        ] {
            if kernel_config_value(key).as_deref() == Some("y") {
                return Preemption::Dynamic(Some(mode.to_string()), "build default");
            }
        }
        return Preemption::Dynamic(None, "");
    }
    if version.contains("PREEMPT") {
        return Preemption::Full;
    }
    match (
        kernel_config_value("CONFIG_PREEMPT_VOLUNTARY").as_deref(),
        kernel_config_value("CONFIG_PREEMPT_NONE").as_deref(),
    ) {
        (Some("y"), _) => Preemption::Voluntary,
        (_, Some("y")) => Preemption::None,
        _ => Preemption::Unknown,
    }
}

/// The CPU model name.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            matches!(k.trim(), "model name" | "Model" | "cpu model").then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// The hypervisor's CPUID vendor signature (x86 leaf 0x40000000), if any.
#[cfg(target_arch = "x86_64")]
fn cpuid_hypervisor() -> Option<String> {
    use std::arch::x86_64::__cpuid;
    #[allow(unused_unsafe)]
    // SAFETY: CPUID exists on every x86_64 CPU; leaf 1 is always valid.
    let leaf1 = unsafe { __cpuid(1) };
    if leaf1.ecx & (1 << 31) == 0 {
        return None;
    }
    #[allow(unused_unsafe)]
    // SAFETY: the hypervisor bit is set, so leaf 0x40000000 is defined.
    let r = unsafe { __cpuid(0x4000_0000) };
    let mut sig = Vec::with_capacity(12);
    for reg in [r.ebx, r.ecx, r.edx] {
        sig.extend_from_slice(&reg.to_le_bytes());
    }
    let sig = String::from_utf8_lossy(&sig)
        .trim_matches(char::from(0))
        .to_string();
    Some(match sig.as_str() {
        "KVMKVMKVM" => "KVM".into(),
        "Microsoft Hv" => "Hyper-V".into(),
        "VMwareVMware" => "VMware".into(),
        "XenVMMXenVMM" => "Xen".into(),
        "TCGTCGTCGTCG" => "QEMU (TCG)".into(),
        "ACRNACRNACRN" => "ACRN".into(),
        "VBoxVBoxVBox" => "VirtualBox".into(),
        "" => "unknown hypervisor".into(),
        other => other.to_string(),
    })
}

#[cfg(not(target_arch = "x86_64"))]
fn cpuid_hypervisor() -> Option<String> {
    None
}

/// Whether the CPU is emulated (QEMU's TCG: CPUID's hypervisor signature
/// `TCGTCGTCGTCG`): every time measured on it describes the emulator, not hardware.
pub fn emulated_cpu() -> bool {
    cpuid_hypervisor().as_deref() == Some("QEMU (TCG)")
}

/// The hypervisor this machine runs under, if it is virtual.
pub fn virtualization() -> Option<String> {
    if let Some(hv) = cpuid_hypervisor() {
        let product = read_trim("/sys/class/dmi/id/product_name").unwrap_or_default();
        let vendor = read_trim("/sys/class/dmi/id/sys_vendor").unwrap_or_default();
        let extra = [vendor, product]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        return Some(if extra.is_empty() {
            hv
        } else {
            format!("{hv} ({extra})")
        });
    }
    if let Some(t) = read_trim("/sys/hypervisor/type") {
        return Some(t);
    }
    let flags = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    flags
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"))
        .then(|| "unknown hypervisor".to_string())
}

/// The current clocksource (`tsc`, `kvm-clock`, `hpet`, ...).
pub fn clocksource() -> String {
    read_trim("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .unwrap_or_else(|| "unknown".into())
}

/// Everything stored about the machine with a run.
pub fn machine() -> Machine {
    let (kernel_release, kernel_version, arch) = uname_all();
    Machine {
        arch: Some(arch),
        hostname: read_trim("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into()),
        kernel_release,
        kernel_version,
        preemption: preemption().to_string(),
        cpu_model: cpu_model(),
        cpus_online: engine::rt::online_cpus().len(),
        virtualization: virtualization(),
        clocksource: clocksource(),
    }
}

/// The real-time share (`sched_rt_runtime_us` of every `sched_rt_period_us`) in words:
/// `95 % (0.95 s of every 1 s)`; as read when either is not a number.
pub(crate) fn rt_share_words(runtime_us: &str, period_us: &str) -> String {
    let seconds = |us: f64| {
        let text = format!("{:.6}", us * 1e-6);
        format!("{} s", text.trim_end_matches('0').trim_end_matches('.'))
    };
    match (runtime_us.parse::<f64>(), period_us.parse::<f64>()) {
        (Ok(r), Ok(p)) if p > 0.0 => format!(
            "{:.0} % ({} of every {})",
            100.0 * r / p,
            seconds(r),
            seconds(p)
        ),
        _ => format!("{runtime_us} us of every {period_us} us"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_time_share_reads_as_a_share_not_as_raw_microseconds() {
        assert_eq!(
            rt_share_words("950000", "1000000"),
            "95 % (0.95 s of every 1 s)"
        );
        assert_eq!(
            rt_share_words("500", "1000"),
            "50 % (0.0005 s of every 0.001 s)"
        );
        assert_eq!(rt_share_words("x", "1000"), "x us of every 1000 us");
    }

    #[test]
    fn bracketed_mode() {
        assert_eq!(
            parse_bracketed_mode("none voluntary (full) lazy").as_deref(),
            Some("full")
        );
        assert_eq!(parse_bracketed_mode("nothing"), None);
    }

    #[test]
    fn machine_facts_are_filled() {
        let m = machine();
        assert!(!m.kernel_release.is_empty());
        assert!(m.cpus_online >= 1);
        assert!(!m.cpu_model.is_empty());
        assert_ne!(m.preemption, "");
    }
}
