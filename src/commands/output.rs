//! What several commands share on their way out: JSON on stdout, an output path checked
//! before anything runs, a CPU-list flag read against the online CPUs.

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

pub(crate) fn cpu_list(
    flag: &str,
    list: &Option<String>,
) -> Result<Option<Vec<usize>>, UsageError> {
    match list {
        None => Ok(None),
        Some(l) => {
            let parsed = engine::rt::parse_online_cpu_list(l)
                .map_err(|e| UsageError(format!("{flag} {l}: {e}")))?;
            if parsed.is_empty() {
                return Err(UsageError(format!(
                    "{flag} is empty: give CPUs like 1 or 0-3,6, or leave the flag out"
                )));
            }
            Ok(Some(parsed))
        }
    }
}
