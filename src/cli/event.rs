//! `audiolat event`'s flags (stage one). Its sweep of cells is built in
//! `commands::event` for now (see this module's parent for what stage two would be).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use dsp::WorkloadKind;
use engine::gpio::GpioSpec;
use load::LoadSpec;
use probes::event::{NotePolicy, TriggerSource};

use super::audio::AudioArgs;
use super::values::{
    parse_count_u32, parse_count_u64, parse_list, parse_loads, parse_millis, parse_rate, ListOf,
};

#[derive(Debug, Clone, Args)]
pub struct EventArgs {
    /// What triggers a note: timer (random instants), key (a key press on this terminal;
    /// q ends), midi (note-ons on audiolat's JACK MIDI input).
    #[arg(long, value_name = "SOURCE", default_value = "timer", value_parser = parse_trigger)]
    pub trigger: TriggerSource,
    /// When a note starts: asap (next cycle, offset 0) or fixed (trigger time + one
    /// period: constant latency). A comma list runs each.
    #[arg(long, value_name = "POLICY[,POLICY]", default_value = "asap", value_parser = parse_note_policies)]
    pub policy: ListOf<NotePolicy>,
    /// Triggers per run.
    #[arg(long, short = 'n', value_name = "N", default_value_t = 100, allow_hyphen_values = true,
          value_parser = parse_count_u64)]
    pub triggers: u64,
    /// Synth workload: sine, poly (three harmonics) or bank:N (N oscillators). A comma list
    /// sweeps them.
    #[arg(long, value_name = "W[,W]", default_value = "sine", value_parser = parse_workloads)]
    pub workload: ListOf<WorkloadKind>,
    /// Background load (as for jitter; e.g. top is the study's "Mon+bgdproc."). A comma
    /// list sweeps them.
    #[arg(long, value_name = "SPEC[,SPEC]", default_value = "none", value_parser = parse_loads)]
    pub load: ListOf<LoadSpec>,
    /// Repeat every configuration this many times.
    #[arg(long, value_name = "N", default_value_t = 1, allow_hyphen_values = true,
          value_parser = parse_count_u32)]
    pub repeat: u32,
    #[command(flatten)]
    pub audio: AudioArgs,
    /// Playback ports to connect to (default: the first two physical playback ports).
    #[arg(long, value_name = "PORT[,PORT]", value_delimiter = ',')]
    pub playback: Vec<String>,
    /// Capture that carries the output back (a cable on real hardware): a JACK port, or
    /// with --backend alsa a capture device (e.g. hw:Loopback,1,0). The onset is also
    /// found in it and the measured latency shown beside the model's.
    #[arg(long, value_name = "PORT|DEVICE")]
    pub loopback: Option<String>,
    /// With --trigger midi: connect audiolat's MIDI input to this port.
    #[arg(long, value_name = "PORT")]
    pub midi_port: Option<String>,
    /// Also raise this GPIO line at every trigger, for an oscilloscope (CHIP:LINE, e.g.
    /// gpiochip0:17).
    #[arg(long, value_name = "CHIP:LINE", value_parser = parse_gpio)]
    pub gpio: Option<GpioSpec>,
    /// Length of each note.
    #[arg(long, value_name = "DURATION", default_value = "30ms", value_parser = parse_millis)]
    pub note: Duration,
    /// Least time between timer triggers (a random fraction of a period is added).
    #[arg(long, value_name = "DURATION", default_value = "60ms", value_parser = parse_millis)]
    pub spacing: Duration,
    /// Tone frequency in Hz.
    #[arg(long, value_name = "HZ", default_value_t = 440.0, value_parser = parse_rate)]
    pub frequency: f64,
    /// Background-load scratch directory for io (default: the database's directory).
    #[arg(long, value_name = "DIR")]
    pub scratch_dir: Option<PathBuf>,
    /// Do not lock memory (mlockall).
    #[arg(long)]
    pub no_mlock: bool,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// No live status line.
    #[arg(long, short)]
    pub quiet: bool,
}

fn parse_trigger(s: &str) -> Result<TriggerSource, String> {
    s.parse()
}

fn parse_note_policies(s: &str) -> Result<ListOf<NotePolicy>, String> {
    parse_list(s, "policy", |i| i.parse())
}

fn parse_workloads(s: &str) -> Result<ListOf<WorkloadKind>, String> {
    parse_list(s, "workload", |i| i.parse())
}

fn parse_gpio(s: &str) -> Result<GpioSpec, String> {
    s.parse::<GpioSpec>().map_err(|e| e.to_string())
}
