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

/// Prints `runs` in `--output-format`'s farm format, when one was given (else false: the
/// command prints its own tables or JSON).
pub(crate) fn print_farm(
    store: &results::Store,
    format: Option<crate::cli::FarmFormat>,
    runs: impl IntoIterator<Item = results::RunId>,
) -> Result<bool> {
    use crate::cli::FarmFormat as F;
    use report::view::stored::ExportKind as K;
    let Some(format) = format else {
        return Ok(false);
    };
    let kind = match format {
        F::Lava => K::Lava,
        F::Junit => K::Junit,
        F::Openmetrics => K::OpenMetrics,
        F::CyclictestJson => K::CyclictestJson,
        F::Hdr => K::Hdr,
    };
    let runs = runs
        .into_iter()
        .map(|id| store.run(id))
        .collect::<Result<Vec<_>, _>>()?;
    match report::view::stored::farm_text(store, &runs, kind) {
        Ok(text) => std::io::stdout().lock().write_all(text.as_bytes())?,
        Err(e) => anyhow::bail!("--output-format {format:?}: the runs were stored but cannot be printed so ({e:?}); `audiolat export` prints each"),
    }
    Ok(true)
}

/// The runs of `group`, oldest first.
pub(crate) fn group_runs(
    store: &results::Store,
    group: results::GroupId,
) -> Result<Vec<results::RunId>> {
    let filter = results::RunFilter {
        group_id: Some(group),
        ..Default::default()
    };
    Ok(store
        .list_runs(&filter)?
        .iter()
        .rev()
        .map(|r| r.id)
        .collect())
}
