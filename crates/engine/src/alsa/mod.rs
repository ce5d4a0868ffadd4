//! The ALSA backend (push model): a device opened for playback (and capture), written
//! from audiolat's own real-time loop ([`stream`]), and the inventory of the machine's
//! cards and PCM devices with who holds them ([`devices`]).

pub mod devices;
pub(crate) mod format;
pub mod setup;
pub mod stream;
mod write_loop;
