//! The audio backend flags the audio probes (event, roundtrip) share: `--backend`,
//! `--server`, `--period`, `--rate`, `--device`, `--format`; and what their sweeps run,
//! built from their flags ([`SweepRequest`]).

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use engine::alsa::stream::SampleFormat;
use engine::backend::{BackendKind, BackendSpec};
use engine::jack::server::ServerMode;

use super::values::{parse_count_u32, parse_list, ListOf};

/// Audio backends a probe can run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendName {
    /// JACK (pull model): a running server, or a private `jackd -d dummy`
    Jack,
    /// ALSA (push model): a device (hw:X, plughw:X, default, the jack PCM)
    Alsa,
    /// The virtual sound card: a software card with a loopback cable (ground truth)
    Virtual,
    /// Native PipeWire streams (pull model): a private PipeWire (--server pipewire) or
    /// yours (--server external)
    Pipewire,
}

impl BackendName {
    /// The engine's name for the backend.
    pub fn kind(self) -> BackendKind {
        match self {
            BackendName::Jack => BackendKind::Jack,
            BackendName::Alsa => BackendKind::Alsa,
            BackendName::Virtual => BackendKind::Virtual,
            BackendName::Pipewire => BackendKind::Pipewire,
        }
    }
}

/// Where the audio goes: the backend and its settings, shared by the audio probes.
#[derive(Debug, Clone, Args)]
pub struct AudioArgs {
    /// Audio backend: jack (a running server, or a private `jackd -d dummy`), alsa (a
    /// device; without a sound card, the jack PCM on a private dummy server), virtual
    /// (the software card with a loopback cable) or pipewire (native PipeWire streams).
    #[arg(long, value_enum, default_value = "jack")]
    pub backend: BackendName,
    /// JACK server: auto (a running one, else a private `jackd -d dummy`), external (a
    /// running one or an error), dummy (always a private one), pipewire (a private
    /// headless PipeWire: through its JACK API with --backend jack, native streams with
    /// --backend pipewire, where external is your own PipeWire). Also the server behind
    /// ALSA's jack PCM.
    #[arg(long, value_name = "MODE", default_value = "auto", value_parser = str::parse::<ServerMode>)]
    pub server: ServerMode,
    /// JACK server name: the one to use (external/auto), or the private one's (dummy).
    #[arg(long, value_name = "NAME")]
    pub server_name: Option<String>,
    /// Frames per period. JACK: a private server's (a power of two, 16-8192) or the one a
    /// running server must have (default: the server's, or 128); ALSA: what the device
    /// must grant (default 256); virtual: 32-8192 (default 256). A comma list sweeps them.
    #[arg(long, value_name = "FRAMES[,FRAMES]", value_parser = parse_periods)]
    pub period: Option<ListOf<u32>>,
    /// Periods in the buffer (ALSA: 2 to 1024; virtual: 2 to 64).
    #[arg(long, value_name = "N", default_value_t = engine::backend::DEFAULT_PERIODS, value_parser = parse_count_u32)]
    pub periods: u32,
    /// Sample rate (default: a running JACK server's, 44100 for a private one, 48000 for
    /// ALSA and the virtual card).
    #[arg(long, value_name = "HZ", allow_hyphen_values = true, value_parser = parse_count_u32)]
    pub rate: Option<u32>,
    /// ALSA device: hw:X, plughw:X, default, jack (alsa-lib's jack PCM on a JACK server),
    /// or (roundtrip) loop: the jack PCM through audiolat's software loop. Default: default
    /// when there is a sound card, else jack (event) or loop (roundtrip).
    #[arg(long, value_name = "DEVICE")]
    pub device: Option<String>,
    /// ALSA sample format: float, s32, s24 (S24_LE), s24_3 (S24_3LE) or s16 (default: the
    /// first of these the device takes).
    #[arg(long, value_name = "FORMAT", value_parser = str::parse::<SampleFormat>)]
    pub format: Option<SampleFormat>,
}

/// What an audio probe's sweep runs, built once from its flags (stage two).
#[derive(Debug)]
pub struct SweepRequest<C> {
    /// The cells of one period, in sweep order (`runner::sweep::event_cells`,
    /// `runner::sweep::roundtrip_cells`).
    pub cells: Vec<C>,
    /// The periods to run, in order (`None`: the backend's own; with
    /// `--find-min-buffer`, the search's steps).
    pub periods: Vec<Option<u32>>,
    /// The backend.
    pub spec: BackendSpec,
    /// Directory for the io load's files: `--scratch-dir`, else the database's directory.
    pub scratch_dir: PathBuf,
}

fn parse_periods(s: &str) -> Result<ListOf<u32>, String> {
    parse_list(s, "period", parse_count_u32)
}
