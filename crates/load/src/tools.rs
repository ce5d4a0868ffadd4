//! The tools loads run (stress-ng, top, hackbench, ...), the Debian package each comes
//! from, and how one is found and its version read.

use crate::LoadError;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A tool a load runs, and the package it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tool {
    /// Program name.
    pub name: &'static str,
    /// Debian package.
    pub package: &'static str,
}

/// stress-ng.
pub const STRESS_NG: Tool = Tool {
    name: "stress-ng",
    package: "stress-ng",
};

/// top.
pub const TOP: Tool = Tool {
    name: "top",
    package: "procps",
};

/// hackbench.
pub const HACKBENCH: Tool = Tool {
    name: "hackbench",
    package: "rt-tests",
};

/// cyclictest, the reference for the jitter probe.
pub const CYCLICTEST: Tool = Tool {
    name: "cyclictest",
    package: "rt-tests",
};

/// jackd, for the embedded JACK server.
pub const JACKD: Tool = Tool {
    name: "jackd",
    package: "jackd2",
};

/// tc, for bandwidth reservation.
pub const TC: Tool = Tool {
    name: "tc",
    package: "iproute2",
};

/// ip, for network namespaces.
pub const IP: Tool = Tool {
    name: "ip",
    package: "iproute2",
};

/// Finds a program in `PATH`, then in the sbin directories (where `tc` and `ip` live),
/// which an ordinary user's PATH may lack.
pub fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The first line a tool prints for its version, or its Debian package's version.
pub fn tool_version(tool: &Tool, program: &Path) -> String {
    let flag = match tool.name {
        "stress-ng" | "jackd" => Some("--version"),
        "top" | "ip" | "tc" => Some("-V"),
        _ => None,
    };
    if let Some(flag) = flag {
        if let Ok(out) = Command::new(program)
            .arg(flag)
            .stdin(Stdio::null())
            .output()
        {
            let text = String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr);
            if let Some(line) = text.lines().map(str::trim).find(|l| !l.is_empty()) {
                return line.to_string();
            }
        }
    }
    Command::new("dpkg-query")
        .args(["-W", "-f=${Version}", tool.package])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            format!(
                "{} {}",
                tool.package,
                String::from_utf8_lossy(&o.stdout).trim()
            )
        })
        .unwrap_or_else(|| "unknown".into())
}

pub(crate) fn require(tool: &Tool) -> Result<PathBuf, LoadError> {
    find_in_path(tool.name).ok_or(LoadError::MissingTool {
        tool: tool.name,
        package: tool.package,
    })
}
