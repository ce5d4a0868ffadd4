//! What the real-PipeWire test binaries share: they require PipeWire (scripts/install-deps
//! installs it) and say which package is missing.

#![allow(dead_code)] // each test binary uses part of it

use std::process::Command;

/// Panics with the install command when a program a private PipeWire needs is missing.
pub fn require_pipewire() {
    for (tool, package) in [
        ("pipewire", "pipewire-bin"),
        ("wireplumber", "wireplumber"),
        ("dbus-daemon", "dbus-daemon"),
        ("pw-link", "pipewire-bin"),
    ] {
        let found = Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            found,
            "{tool} is not installed: apt install {package} (scripts/install-deps does)"
        );
    }
}

/// [`require_pipewire`], and PipeWire's libjack (the `pipewire-jack` package).
pub fn require_pipewire_jack() {
    require_pipewire();
    assert!(
        engine::jack::via_pipewire::libjack_candidates()
            .iter()
            .any(|p| p.exists()),
        "PipeWire's libjack is not installed: apt install pipewire-jack (scripts/install-deps does)"
    );
}
