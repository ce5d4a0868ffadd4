//! Records the git commit and the cargo profile, so every stored run says what built it.
use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .is_some_and(|o| !o.stdout.is_empty());
    let commit = if dirty && commit != "unknown" {
        format!("{commit}-dirty")
    } else {
        commit
    };
    println!("cargo:rustc-env=AUDIOLAT_GIT_COMMIT={commit}");
    // PROFILE only says "debug" or "release"; the profile's own directory under target/
    // names custom profiles (opt1, opt2, opt3): OUT_DIR is target/<dir>/build/<pkg>/out.
    let profile = std::env::var("OUT_DIR")
        .ok()
        .and_then(|out| {
            let p = std::path::PathBuf::from(out);
            p.ancestors()
                .nth(3)
                .and_then(|d| d.file_name())
                .map(|d| d.to_string_lossy().into_owned())
        })
        .map(|d| if d == "debug" { "dev".to_string() } else { d })
        .or_else(|| std::env::var("PROFILE").ok())
        .unwrap_or_else(|| "unknown".into());
    let opt = std::env::var("OPT_LEVEL").unwrap_or_else(|_| "?".into());
    println!("cargo:rustc-env=AUDIOLAT_BUILD_PROFILE={profile} (opt-level {opt})");
    for path in [".git/HEAD", ".git/index", ".git/refs/heads"] {
        if std::path::Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
