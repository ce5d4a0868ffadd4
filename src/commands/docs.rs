//! `audiolat completions` and `audiolat man`: the shell completion scripts and the
//! manual pages, made from clap's definition of the commands (so they never go stale).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, ManArgs, UsageError};
use crate::commands::output::write_output;
use crate::stdio;

pub(crate) fn completions(a: &CompletionsArgs) -> Result<ExitCode> {
    let mut cmd = Cli::command();
    // Made whole first: clap_complete panics when its writer fails.
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "audiolat", &mut script);
    stdio::print(String::from_utf8_lossy(&script))?;
    Ok(ExitCode::SUCCESS)
}

/// The page of `audiolat` on stdout, or with `--dir` a page per command beside it
/// (written as every output file is, never over the results database `db`).
pub(crate) fn man(a: &ManArgs, db: &Path) -> Result<ExitCode> {
    let cmd = Cli::command();
    let Some(dir) = &a.dir else {
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut page)?;
        stdio::print(String::from_utf8_lossy(&page))?;
        return Ok(ExitCode::SUCCESS);
    };
    if dir.exists() && !dir.is_dir() {
        return Err(UsageError(format!(
            "--dir {}: not a directory; give a directory (it is made when missing)",
            dir.display()
        ))
        .into());
    }
    let mut pages = Vec::new();
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    manual_pages(cmd, &mut pages)?;
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("--dir {}: could not be made: {e}", dir.display()))?;
    for (name, page) in pages {
        write_output(&dir.join(name), "--dir", db, &page)?;
    }
    stdio::say(format_args!("manual pages written into {} (`man -l {}/audiolat.1`, or add the directory's parent to MANPATH)", dir.display(), dir.display()));
    Ok(ExitCode::SUCCESS)
}

/// The page of `cmd` and of each of its visible subcommands, with their file names, as
/// `clap_mangen::generate_to` makes them.
fn manual_pages(cmd: clap::Command, pages: &mut Vec<(String, Vec<u8>)>) -> Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
        manual_pages(sub, pages)?;
    }
    let man = clap_mangen::Man::new(cmd);
    let mut page = Vec::new();
    man.render(&mut page)?;
    pages.push((man.get_filename(), page));
    Ok(())
}
