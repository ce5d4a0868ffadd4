//! The plan's private JACK server: one per setting, shared by the cells that need it.

use std::time::Duration;

use engine::backend::BackendSpec;
use engine::jack::server::{JackServer, ServerMode};

use super::order::ServerKey;
use super::PlanObserver;

/// The private JACK server a cell of `spec` at `period` would start for itself, which
/// the plan run starts once for all the cells that share it (JACK, and ALSA through the
/// jack PCM). `default_running` says whether a JACK server answers under the default
/// name, which `--server auto` cells use instead; it is asked only for those.
pub fn private_server(
    spec: &BackendSpec,
    period: Option<u32>,
    default_running: impl FnOnce() -> bool,
) -> Option<ServerKey> {
    let server = spec.jack_server().filter(|s| s.name.is_none())?;
    let private = match server.mode {
        ServerMode::Dummy => true,
        // A private PipeWire is each cell's own (through PipeWire's libjack).
        ServerMode::External | ServerMode::Pipewire => false,
        ServerMode::Auto => !default_running(),
    };
    private.then(|| spec.private_server_settings(period))
}

/// The private JACK server the cells run on now, if any, with its setting.
#[derive(Default)]
pub(super) struct PlanServer {
    current: Option<(ServerKey, JackServer)>,
}

impl PlanServer {
    /// The name of the server a cell that wants `want` runs on (`None`: the cell needs
    /// none). One private server per setting: it is restarted only when the setting
    /// changes (or the server died). `Err`: the server did not start, which stops the
    /// plan run.
    pub(super) fn serve(
        &mut self,
        want: Option<ServerKey>,
        progress: &mut dyn PlanObserver,
    ) -> Result<Option<&str>, String> {
        let dead = match self.current.as_mut() {
            Some((_, s)) => s.exited().is_some(),
            None => false,
        };
        if self.current.as_ref().map(|(k, _)| Some(*k)) != Some(want) || dead {
            self.stop();
            if let Some((rate, period)) = want {
                let req = engine::jack::server::ServerRequest {
                    mode: ServerMode::Dummy,
                    // A free private name (audiolat-dummy, -2, ...): jackd keeps a short
                    // registry of names, so names are reused, not made per plan run.
                    name: None,
                    rate_hz: Some(rate),
                    period_frames: Some(period),
                    jackd: load::find_in_path(load::JACKD.name),
                    start_timeout: Duration::from_secs(10),
                };
                match JackServer::connect(&req) {
                    Ok(s) => {
                        progress.note(&format!(
                            "audiolat run: JACK server `{}`: jackd -d dummy -r {rate} -p {period}",
                            s.name()
                        ));
                        self.current = Some(((rate, period), s));
                    }
                    Err(e) => {
                        return Err(format!(
                            "the plan's JACK server (rate {rate}, period {period}) did not start: {}",
                            e
                        ));
                    }
                }
            }
        }
        Ok(self.current.as_ref().map(|(_, s)| s.name()))
    }

    /// Stops the server, if one runs.
    pub(super) fn stop(&mut self) {
        if let Some((_, mut s)) = self.current.take() {
            s.stop();
        }
    }
}
