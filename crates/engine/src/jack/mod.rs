//! The JACK backend (pull model): the client that runs a probe's processor in the
//! server's process callback ([`client`]), the server it runs on, a running one or a
//! private `jackd -d dummy` that audiolat starts and stops ([`server`]), and audiolat's
//! software loop client that closes a round trip inside the server ([`loop_client`]);
//! with `--server pipewire`, a private PipeWire reached through its libjack
//! ([`via_pipewire`]).

pub mod client;
mod frame_count;
pub mod loop_client;
pub mod server;
pub mod setup;
mod start_check;
pub mod via_pipewire;
