//! `audiolat completions` and `audiolat man`: the shell completion scripts and the
//! manual pages, made from clap's definition of the commands (so they never go stale).

use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, ManArgs};

pub(crate) fn completions(a: &CompletionsArgs) -> Result<ExitCode> {
    let mut cmd = Cli::command();
    clap_complete::generate(a.shell, &mut cmd, "audiolat", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}

/// The page of `audiolat` on stdout, or with `--dir` a page per command beside it.
pub(crate) fn man(a: &ManArgs) -> Result<ExitCode> {
    let cmd = Cli::command();
    match &a.dir {
        None => clap_mangen::Man::new(cmd).render(&mut std::io::stdout())?,
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .and_then(|_| clap_mangen::generate_to(cmd, dir))
                .with_context(|| format!("writing the manual pages into {}", dir.display()))?;
            eprintln!("manual pages written into {} (`man -l {}/audiolat.1`, or add the directory's parent to MANPATH)", dir.display(), dir.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
