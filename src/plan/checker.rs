//! The plan's questions answered by clap's own definition of the commands.

use std::cell::OnceCell;

use clap::{CommandFactory, Parser};
use runner::plan::{CellChecker, CellCommand, CellRefusal, Flag, ServerKey};

use crate::cli::{Cli, Command};

/// A plan's cells checked as the CLI would: parsed by clap, then the probe's own checks
/// ([`check_plan_cell`](crate::commands::plans::check_plan_cell)).
#[derive(Debug, Default)]
pub struct CliCells {
    /// Whether a JACK server answers under the default name, asked once per plan.
    default_running: OnceCell<bool>,
    /// The plan run's results database, which no cell's output file may be.
    db: Option<std::path::PathBuf>,
}

impl CliCells {
    /// A checker for a plan run into the results database `db`: a cell's output file
    /// (`histfile`) is refused when it is the database, as its command would refuse it.
    pub fn for_database(db: &std::path::Path) -> CliCells {
        CliCells {
            db: Some(db.to_path_buf()),
            ..CliCells::default()
        }
    }

    /// A cell's command line parsed by clap (its message as one line when refused).
    pub fn parse(command: &CellCommand) -> Result<Cli, CellRefusal> {
        Cli::try_parse_from(std::iter::once("audiolat".to_string()).chain(command.argv()))
            .map_err(|e| CellRefusal::NotACommandLine(crate::process::clap_line(&e)))
    }
}

impl CellChecker for CliCells {
    fn flags(&self, probe: &str) -> Vec<Flag> {
        let cmd = Cli::command();
        let Some(sub) = cmd.find_subcommand(probe) else {
            return Vec::new();
        };
        sub.get_arguments()
            .filter(|a| !a.is_hide_set())
            .filter_map(|a| {
                a.get_long().map(|l| Flag {
                    name: l.to_string(),
                    takes_value: a.get_action().takes_values(),
                    repeated: matches!(a.get_action(), clap::ArgAction::Append),
                })
            })
            .collect()
    }

    fn takes_quiet(&self, probe: &str) -> bool {
        Cli::command()
            .find_subcommand(probe)
            .is_some_and(|c| c.get_arguments().any(|a| a.get_long() == Some("quiet")))
    }

    fn check(&self, command: &CellCommand) -> Result<Option<ServerKey>, CellRefusal> {
        let cli = CliCells::parse(command)?;
        crate::commands::plans::check_plan_cell(&cli, self.db.as_deref())
            .map_err(CellRefusal::CannotRun)?;
        Ok(server_key(&cli, &self.default_running))
    }
}

/// The private JACK server a cell's process would start for itself, which the runner
/// starts once for all the cells that share it (`runner::plan::private_server`).
/// `default_running` asks (once per plan) whether a JACK server answers under the
/// default name, which `--server auto` cells use instead.
fn server_key(cli: &Cli, default_running: &OnceCell<bool>) -> Option<ServerKey> {
    let (audio, purpose) = match &cli.command {
        Command::Event(a) => (&a.audio, crate::audio::event_purpose(a)),
        Command::Roundtrip(a) => (&a.audio, crate::audio::roundtrip_purpose(a)),
        _ => return None,
    };
    let spec = crate::audio::spec(audio, &purpose).ok()?;
    runner::plan::private_server(&spec, crate::audio::periods(audio)[0], || {
        *default_running.get_or_init(|| {
            matches!(
                engine::jack::server::probe(&engine::jack::server::default_server_name()),
                Ok(Some(_))
            )
        })
    })
}
