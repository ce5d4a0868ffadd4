//! The binary each build profile runs.

use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};

use super::{PlanObserver, PlanRunError};

/// The binary of a cargo profile: `current` is this one; others are
/// `<target>/<profile>/audiolat` beside it, built with cargo when missing and the
/// source tree is there (cargo's output shown unless `quiet`, what is built told to
/// `observer`).
pub fn binary_for(
    profile: &str,
    quiet: bool,
    observer: &mut dyn PlanObserver,
) -> Result<PathBuf, PlanRunError> {
    let me = std::env::current_exe().map_err(PlanRunError::OwnBinary)?;
    if profile == "current" {
        return Ok(me);
    }
    let dir = if profile == "dev" { "debug" } else { profile };
    let target = me
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let path = target.join(dir).join("audiolat");
    let root = target.parent().map(Path::to_path_buf).unwrap_or_default();
    let manifest = root.join("Cargo.toml");
    let is_source = std::fs::read_to_string(&manifest)
        .map(|t| t.contains("name = \"audiolat\""))
        .unwrap_or(false);
    if !is_source && path.is_file() {
        // An installed set of binaries: each run records the commit it was built from.
        return Ok(path);
    }
    let build = format!("cargo build --locked --profile {profile} --bin audiolat");
    if !is_source {
        return Err(PlanRunError::Refused(format!(
            "build profile `{profile}` runs {}, which does not exist and there is no audiolat source tree at {} to build it: build it with `{build}` in the source tree, or remove `{profile}` from the plan's profile axis",
            path.display(),
            root.display()
        )));
    }
    // From a source tree, cargo builds the profile or finds it up to date, so every
    // profile runs the same code.
    if !quiet {
        observer.note(&format!("audiolat run: the `{profile}` binary: {build}"));
    }
    let status = Process::new("cargo")
        .args([
            "build",
            "--locked",
            "--profile",
            profile,
            "--bin",
            "audiolat",
        ])
        .current_dir(&root)
        .env("CARGO_TARGET_DIR", &target)
        .stdout(Stdio::null())
        .stderr(if quiet {
            Stdio::null()
        } else {
            Stdio::inherit()
        })
        .status();
    match status {
        Ok(s) if s.success() && path.is_file() => Ok(path),
        Ok(s) => Err(PlanRunError::Refused(format!(
            "`{build}` failed ({s}) in {}: a profile of the plan's profile axis must be one Cargo.toml defines (opt1, opt2, opt3, release, dev)",
            root.display()
        ))),
        Err(e) if path.is_file() => {
            observer.warning(&format!(
                "audiolat: warning: cannot run cargo ({e}) to check that {} is built from this source tree; running it as it is (each run records the commit it was built from)",
                path.display()
            ));
            Ok(path)
        }
        Err(e) => Err(PlanRunError::Refused(format!(
            "cannot run cargo to build the `{profile}` binary ({e}): install Rust (scripts/install-deps), or build it with `{build}`"
        ))),
    }
}
