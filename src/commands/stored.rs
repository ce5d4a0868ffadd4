//! The commands that read what is stored: `runs`, `show`, `export`, `report`, `compare`.

use crate::cli::{RunRef, UsageError};
use crate::commands::output::{check_output_path, output_error, print_json, write_output};
use crate::context::{tool_info, Context};
use crate::stdio;
use anyhow::Result;
use results::run::RunRecord;
use results::Store;
use std::process::ExitCode;

pub(crate) fn resolve(store: &Store, r: RunRef) -> Result<RunRecord> {
    let id = match r {
        RunRef::Id(id) => id,
        RunRef::Last => store.last_run_id()?.ok_or_else(|| {
            UsageError("no runs stored yet: run a probe first (e.g. audiolat jitter)".into())
        })?,
    };
    Ok(store.run(id)?)
}

/// The report's subjects by id (`last`: the last run stored).
fn gather(store: &Store, subjects: &[crate::cli::Subject]) -> Result<Vec<report::gather::Subject>> {
    subjects
        .iter()
        .map(|s| {
            Ok(match s.clone() {
                crate::cli::Subject::Host(h) => report::gather::Subject::Host(h),
                crate::cli::Subject::Kernel(k) => report::gather::Subject::Kernel(k),
                crate::cli::Subject::Group(g) => report::gather::Subject::Group(g),
                crate::cli::Subject::Run(RunRef::Id(id)) => report::gather::Subject::Run(id),
                crate::cli::Subject::Run(RunRef::Last) => report::gather::Subject::Run(
                    store
                        .last_run_id()?
                        .ok_or_else(|| UsageError("no runs stored yet".into()))?,
                ),
            })
        })
        .collect()
}

pub(crate) fn runs(ctx: &Context, a: &crate::cli::RunsArgs) -> Result<ExitCode> {
    let filter = a.filter()?;
    let store = ctx.open_existing_store()?;
    if a.groups {
        return groups(&store, a);
    }
    let rows = report::view::stored::run_rows(&store, &filter)?;
    if a.json {
        print_json(&report::view::stored::runs_json(&rows))?;
    } else if rows.is_empty() {
        stdio::print("no runs match\n")?;
    } else {
        stdio::print(report::terminal::runs_table(&rows))?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn show(ctx: &Context, a: &crate::cli::ShowArgs) -> Result<ExitCode> {
    let events = a.events()?;
    let store = ctx.open_existing_store()?;
    let run = resolve(&store, a.run)?;
    if a.json {
        print_json(&report::view::stored::run_json(&store, &run)?)?;
    } else {
        stdio::print(report::view::stored::run_text(&store, &run, events)?)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn export(ctx: &Context, a: &crate::cli::ExportArgs) -> Result<ExitCode> {
    if let Some(p) = &a.output {
        check_output_path(p, "--output", &ctx.db_path)?;
    }
    let store = ctx.open_existing_store()?;
    let run = resolve(&store, a.run)?;
    use report::view::stored::ExportError as E;
    let kind = a.format.kind();
    let id = run.id;
    let text = match report::view::stored::export(&store, &run, kind) {
        Ok(text) => text,
        Err(E::Store(e)) => return Err(e.into()),
        Err(E::NoTriggers) => return Err(UsageError(format!(
            "run {id} has no triggers: only event runs do (audiolat runs --probe event)"
        ))
        .into()),
        Err(E::NoSeries) => return Err(UsageError(format!(
            "run {id} has no series: jitter and roundtrip runs do (audiolat runs --probe roundtrip)"
        ))
        .into()),
        Err(E::NotJitter) => return Err(UsageError(format!(
            "run {id} is of the {} probe: --format cyclictest (and cyclictest-json) exports jitter runs only (wake-up latency); use --format hdr or csv for this one",
            run.probe
        ))
        .into()),
        Err(E::NoHistogram) => return Err(UsageError(format!(
            "run {id} has no wake-up latency histogram to export"
        ))
        .into()),
        Err(E::OneRunOnly) => unreachable!("an export is of one run"),
    };
    match &a.output {
        Some(p) => write_output(p, "--output", &ctx.db_path, text.as_bytes())?,
        None => stdio::print(text)?,
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn write_report(ctx: &Context, a: &crate::cli::ReportArgs) -> Result<ExitCode> {
    if let Some(p) = &a.output {
        check_output_path(p, "--output", &ctx.db_path)?;
    }
    let store = ctx.open_existing_store()?;
    let subjects = if a.subjects.is_empty() {
        let latest = store.list_groups(None)?.into_iter().next().ok_or_else(|| {
            UsageError(
                "no groups stored yet: name runs (`audiolat report 3 4`), or run a plan or `audiolat suite` first"
                    .into(),
            )
        })?;
        vec![crate::cli::Subject::Group(latest.id)]
    } else {
        a.subjects.clone()
    };
    let data = report::gather::subjects(&store, &gather(&store, &subjects)?, &tool_info())?;
    let group = match subjects.as_slice() {
        [crate::cli::Subject::Group(g)] => Some(*g),
        _ => None,
    };
    let name = report::view::stored::report_name(group, &data);
    let path = report::html::write(&data, a.output.as_deref(), &ctx.db_path, &name)
        .map_err(|e| output_error(report_flag(a.output.is_some()), e))?;
    if a.print {
        stdio::print(report::view::stored::report_text(&data))?;
    }
    stdio::print(format_args!(
        "report: {} ({})\n",
        path.display(),
        data.subject
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// What names a report file in messages: `--output`, or the default path's "the report".
pub(crate) fn report_flag(given: bool) -> &'static str {
    if given {
        "--output"
    } else {
        "the report"
    }
}

/// A subject in a file name: `5`, `last`, `group3`, `host-NAME`, `kernel-RELEASE`.
fn slug(s: &crate::cli::Subject) -> String {
    let text = match s {
        crate::cli::Subject::Run(RunRef::Id(id)) => id.to_string(),
        crate::cli::Subject::Run(RunRef::Last) => "last".into(),
        crate::cli::Subject::Group(g) => format!("group{g}"),
        crate::cli::Subject::Host(h) => format!("host-{h}"),
        crate::cli::Subject::Kernel(k) => format!("kernel-{k}"),
    };
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-._".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

pub(crate) fn compare(ctx: &Context, a: &crate::cli::CompareArgs) -> Result<ExitCode> {
    if let Some(p) = &a.output {
        check_output_path(p, "--output", &ctx.db_path)?;
    }
    let store = ctx.open_existing_store()?;
    let da = report::gather::subjects(
        &store,
        &gather(&store, std::slice::from_ref(&a.a))?,
        &tool_info(),
    )?;
    let db = report::gather::subjects(
        &store,
        &gather(&store, std::slice::from_ref(&a.b))?,
        &tool_info(),
    )?;
    let metrics = a.metrics().metrics(&da, &db);
    let rows = report::compare::compare(&da, &db, &metrics);
    if a.json {
        print_json(&report::compare::json(&da, &db, &rows, &metrics))?;
    } else {
        stdio::print(report::compare::text(&da, &db, &rows, &metrics))?;
    }
    if a.html {
        let both = gather(&store, &[a.a.clone(), a.b.clone()])?;
        let data = report::gather::subjects(&store, &both, &tool_info())?;
        let section = report::compare::html(&da, &db, &rows, &metrics);
        let path = report::html::write_with(
            &data,
            &section,
            a.output.as_deref(),
            &ctx.db_path,
            &format!("compare-{}-{}", slug(&a.a), slug(&a.b)),
        )
        .map_err(|e| output_error(report_flag(a.output.is_some()), e))?;
        stdio::say(format_args!(
            "report: {} (A and B overlaid)",
            path.display()
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// `audiolat runs --groups`: each group with its kind, name, status and runs.
pub(crate) fn groups(store: &Store, a: &crate::cli::RunsArgs) -> Result<ExitCode> {
    let rows = report::view::stored::group_rows(store, a.limit)?;
    if a.json {
        print_json(&report::view::stored::groups_json(&rows))?;
    } else {
        stdio::print(report::view::stored::groups_text(&rows))?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn push(ctx: &Context, a: &crate::cli::PushArgs) -> Result<ExitCode> {
    results::store::plain_path(&ctx.db_path)?;
    if !ctx.db_path.exists() && results::store::postgres_url(&ctx.db_path).is_none() {
        return Err(results::StoreError::Missing(ctx.db_path.clone()).into());
    }
    let from = Store::open_recovering(&ctx.db_path, &runner::summarise_abandoned)?;
    let to = Store::open(&a.to)?;
    let pushed = from.push_to(&to)?;
    stdio::print(report::view::stored::push_text(
        &pushed,
        from.path(),
        to.path(),
    ))?;
    Ok(ExitCode::SUCCESS)
}
