//! A cell's command line as the plan runner starts it.

use crate::cli::Cli;
use crate::plan::Cell;

/// The argument vector a cell runs with: its own, the plan's server instead of one of
/// its own, and no status line.
pub(super) fn child_args(cell: &Cell, server: Option<&str>, quiet_flag: bool) -> Vec<String> {
    let mut out = Vec::with_capacity(cell.argv.len() + 5);
    let mut skip = false;
    for a in &cell.argv {
        if skip {
            skip = false;
            continue;
        }
        if server.is_some() && (a == "--server" || a == "--server-name") {
            skip = true;
            continue;
        }
        out.push(a.clone());
    }
    if let Some(name) = server {
        out.extend([
            "--server".into(),
            "external".into(),
            "--server-name".into(),
            name.into(),
        ]);
    }
    if quiet_flag {
        out.push("--quiet".into());
    }
    out
}

pub(super) fn takes_quiet(probe: &str) -> bool {
    use clap::CommandFactory;
    Cli::command()
        .find_subcommand(probe)
        .is_some_and(|c| c.get_arguments().any(|a| a.get_long() == Some("quiet")))
}
