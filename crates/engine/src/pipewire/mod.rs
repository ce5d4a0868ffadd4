//! PipeWire: a private headless PipeWire server that audiolat starts and stops itself
//! ([`server::PipewireServer`]), the PipeWire counterpart of the private `jackd -d dummy`.
//!
//! # The sequence
//!
//! [`PipewireServer::start`] needs no sound card, no user session and no rtkit:
//!
//! 1. makes a fresh private directory `audiolat-pipewire-PID-N` (mode 0700) holding the
//!    runtime directory `runtime/` (mode 0700: the sockets), private `config/`, `state/`
//!    and `data/` directories (WirePlumber's `XDG_CONFIG_HOME`, `XDG_STATE_HOME`,
//!    `XDG_DATA_HOME`, so no stream targets or volumes carry over from a user's session
//!    or an earlier run) and the daemon's self-contained configuration
//!    ([`config::daemon_config`]) with the null sink [`config::SINK_NODE_NAME`] (FL, FR);
//! 2. starts `dbus-daemon --session --nofork` on `runtime/bus` (WirePlumber 0.4 exits
//!    without a session bus) and waits for its socket;
//! 3. starts `pipewire -c <config>` and waits for its socket `runtime/pipewire-0`;
//! 4. starts `wireplumber`, which gives the sink its ports, and waits until `pw-link -o`
//!    lists `audiolat-sink:monitor_FL` and `monitor_FR` (the socket alone is not
//!    readiness).
//!
//! All three run in one process group of their own with `PR_SET_PDEATHSIG`, with
//! `XDG_RUNTIME_DIR` = `PIPEWIRE_RUNTIME_DIR` = the runtime directory and
//! `PIPEWIRE_REMOTE=pipewire-0`. `PIPEWIRE_CONFIG_DIR` is never set (every client would
//! inherit it and then fail to find its own `client.conf`).
//!
//! # The contract
//!
//! - `start` returns a server whose sink's playback and monitor ports exist, or an error
//!   that names the problem ([`PipewireError`]): a missing program with its Debian
//!   package, a process that ended first with its last output, a timeout. On an error
//!   nothing started is left running and the private directory is gone.
//! - A client reaches this server, and no other, with [`PipewireServer::client_env`].
//! - [`PipewireServer::exited`] says which process ended, and how.
//! - [`PipewireServer::stop`] (and `Drop`) ends WirePlumber, then PipeWire, then the bus
//!   (SIGTERM, then SIGKILL to the group), reaps all three and removes the private
//!   directory.
//!
//! The quantum as a setting (`clock.force-quantum`, measured and restored) is
//! [`quantum::ForcedQuantum`]; a running PipeWire audiolat did not start (the user's), with
//! its quantum forced and restored even after a killed audiolat, is [`running`].
//!
//! The native backend (`--backend pipewire`: `pw_stream`s on such a server, or the
//! user's) is [`native`].
//!
//! Nothing here runs on an audio thread, but [`native`]'s process callbacks.

pub mod config;
pub(crate) mod error;
pub mod graph;
pub mod native;
mod profile;
#[cfg(feature = "pipewire-native")]
pub mod profiler;
mod programs;
pub mod quantum;
pub mod running;
pub mod server;

pub use server::{
    PipewireError, PipewireInfo, PipewirePids, PipewireProcess, PipewireRequest, PipewireServer,
    ProcessExit,
};
