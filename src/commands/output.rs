//! What several commands share on their way out: JSON on stdout, an output path checked
//! before anything runs.

use crate::cli::UsageError;
use anyhow::Result;
use std::io::Write;

pub(crate) fn print_json(v: &serde_json::Value) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, v)?;
    writeln!(out)?;
    Ok(())
}

pub(crate) fn check_output_path(path: &std::path::Path, flag: &str) -> Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    if path.is_dir() || !parent.is_dir() {
        return Err(UsageError(format!(
            "{flag} {}: not a file in an existing directory; give a writable file path",
            path.display()
        ))
        .into());
    }
    Ok(())
}

/// `code`, or 3 when it is 0 and a gate failed.
pub(crate) fn gated(code: std::process::ExitCode, failed: bool) -> std::process::ExitCode {
    if failed && code == std::process::ExitCode::SUCCESS {
        std::process::ExitCode::from(crate::process::EXIT_GATES)
    } else {
        code
    }
}
