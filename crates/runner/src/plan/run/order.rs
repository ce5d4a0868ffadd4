//! The order cells run in: the cells that share a private JACK server together.

use std::cell::OnceCell;

use anyhow::Result;
use engine::jack_server::ServerMode;

use crate::cli::{Cli, Command, UsageError};
use crate::plan::{Cell, Plan};

/// The private JACK server a cell needs: (rate, period).
pub(super) type ServerKey = (u32, u32);

/// What a cell needs from the plan runner beyond its arguments.
pub(super) struct Planned {
    pub(super) cell: Cell,
    pub(super) server: Option<ServerKey>,
}

/// The server a cell's process would start for itself, which the runner starts once for
/// all the cells that share it: JACK and ALSA's jack PCM on a private server.
/// `default_running` asks (once per plan) whether a JACK server answers under the
/// default name, which `--server auto` cells use instead.
fn server_key(cli: &Cli, default_running: &OnceCell<bool>) -> Option<ServerKey> {
    let (audio, purpose) = match &cli.command {
        Command::Event(a) => (&a.audio, crate::audio::event_purpose(a)),
        Command::Roundtrip(a) => (&a.audio, crate::audio::roundtrip_purpose(a)),
        _ => return None,
    };
    let spec = crate::audio::spec(audio, &purpose).ok()?;
    let server = spec.jack_server().filter(|s| s.name.is_none())?;
    let private = match server.mode {
        ServerMode::Dummy => true,
        ServerMode::External => false,
        ServerMode::Auto => !*default_running.get_or_init(|| {
            matches!(
                engine::jack_server::probe(&engine::jack_server::default_server_name()),
                Ok(Some(_))
            )
        }),
    };
    if !private {
        return None;
    }
    let (rate, period) = spec.private_server_settings(crate::audio::periods(audio)[0]);
    Some((rate, period))
}

/// The cells in run order: the cells of one server together (first appearance first),
/// plan order within. `None` when `stopped` said so while the cells were checked.
pub(super) fn order(plan: &Plan, stopped: &dyn Fn() -> bool) -> Result<Option<Vec<Planned>>> {
    let default_running = OnceCell::new();
    let cells = plan.cells(&|cli| {
        if stopped() {
            return Err("interrupted".into());
        }
        crate::commands::plans::check_plan_cell(cli)?;
        Ok(server_key(cli, &default_running))
    });
    if stopped() {
        return Ok(None);
    }
    let mut keyed: Vec<Planned> = cells
        .map_err(|e| UsageError(e.to_string()))?
        .into_iter()
        .map(|(cell, server)| Planned { cell, server })
        .collect();
    let mut first_seen: Vec<Option<ServerKey>> = Vec::new();
    for p in &keyed {
        if !first_seen.contains(&p.server) {
            first_seen.push(p.server);
        }
    }
    keyed.sort_by_key(|p| first_seen.iter().position(|s| *s == p.server));
    Ok(Some(keyed))
}
