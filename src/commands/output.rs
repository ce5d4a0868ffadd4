//! What several commands share on their way out: JSON on stdout, the files they write
//! (through `results::output`, the one writer: checked before anything runs, never the
//! database, whole or not at all) and its refusals in the words of their flags.

use crate::cli::UsageError;
use crate::stdio;
use anyhow::Result;
use results::output::OutputError;
use std::path::Path;

pub(crate) fn print_json(v: &serde_json::Value) -> Result<()> {
    let text = serde_json::to_string_pretty(v)?;
    stdio::print(format_args!("{text}\n"))?;
    Ok(())
}

/// Refuses the output file `path` that `flag` names before anything runs: the results
/// database `db` (or one of its files), any SQLite database, a directory, a missing
/// directory (exit 2, in `flag`'s words).
pub(crate) fn check_output_path(path: &Path, flag: &str, db: &Path) -> Result<()> {
    results::output::check(path, db).map_err(|e| output_error(flag, e))
}

/// Writes `contents` to the output file `path` that `flag` names (see
/// [`check_output_path`]): whole, or not at all.
pub(crate) fn write_output(path: &Path, flag: &str, db: &Path, contents: &[u8]) -> Result<()> {
    results::output::write(path, db, contents).map_err(|e| output_error(flag, e))
}

/// An output file's refusal (a usage error, exit 2) or failure (exit 1), in the words of
/// `flag`, the option that named it (or what the file is, for a default path).
pub(crate) fn output_error(flag: &str, e: OutputError) -> anyhow::Error {
    let path = e.path().display().to_string();
    match e {
        OutputError::Database { database, part, .. } => UsageError(format!(
            "{flag} {path}: that is {part} ({}), which audiolat never writes over; give another file name (--db names the database)",
            database.display()
        ))
        .into(),
        OutputError::Sqlite { .. } => UsageError(format!(
            "{flag} {path}: that file is an SQLite database, which audiolat never writes over; give another file name"
        ))
        .into(),
        OutputError::Directory { .. } | OutputError::NoDirectory { .. } => UsageError(format!(
            "{flag} {path}: not a file in an existing directory; give a writable file path"
        ))
        .into(),
        OutputError::Exists { .. } => UsageError(format!(
            "{flag} {path}: it exists; give a new file name"
        ))
        .into(),
        OutputError::Io { source, .. } => {
            anyhow::anyhow!("{flag} {path}: could not be written: {source}")
        }
    }
}

/// A measuring command's gates (`--fail-if`): each one of `probe`'s metrics, measured
/// with the settings `given` (with [`Setting::Why`](results::probe_kind::Setting::Why)
/// when `why` asks for causes), and here: a gate on a cause where the kernel cannot be
/// traced is refused before anything runs.
pub(crate) fn measurable_gates(
    gates: &crate::cli::GateArgs,
    probe: &results::ProbeKind,
    given: &[results::probe_kind::Setting],
    why: bool,
) -> Result<Vec<results::gate::Gate>> {
    let mut given = given.to_vec();
    if why {
        given.push(results::probe_kind::Setting::Why);
    }
    let gates = gates.check_with(probe, &given)?;
    crate::run_errors::check_gates_measurable(&gates)?;
    Ok(gates)
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
    // Each run from where it is kept: its database, or the local file it went to.
    let (mut here, mut moved) = (Vec::new(), Vec::new());
    for id in runs {
        match store.moved(id) {
            Some((path, local_id)) => moved.push((path, local_id)),
            None => here.push(store.run(id)?),
        }
    }
    let mut texts = Vec::new();
    if !here.is_empty() || moved.is_empty() {
        texts.push(report::view::stored::farm_text(store, &here, kind));
    }
    for (path, local_id) in moved {
        let local = results::Store::open(&path)?;
        let run = local.run(local_id)?;
        texts.push(report::view::stored::farm_text(&local, &[run], kind));
    }
    for text in texts {
        match text {
            Ok(text) => stdio::print(text)?,
            Err(e) => anyhow::bail!("--output-format {format:?}: the runs were stored but cannot be printed so ({e:?}); `audiolat export` prints each"),
        }
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
