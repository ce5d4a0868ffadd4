//! `audiolat event`: its flags (stage one) and what it runs, built from them (stage
//! two): the sweep's cells of one period, the periods and the backend.

use std::path::Path;
use std::time::Duration;

use clap::Args;
use dsp::WorkloadKind;
use engine::gpio::{GpioError, GpioSpec};
use load::LoadSpec;
use probes::event::{EventConfig, EventError, EventSetting, NotePolicy, TriggerSource};
use runner::sweep::{EventCell, SweepShape, SweepSizeError};

use super::audio::{AudioArgs, SweepRequest};
use super::values::{
    parse_count_u32, parse_count_u64, parse_list, parse_loads, parse_millis, parse_rate, ListOf,
};
use super::UsageError;

#[derive(Debug, Clone, Args)]
pub struct EventArgs {
    /// What triggers a note: timer (random instants), key (a key press on this terminal;
    /// q ends), midi (note-ons on audiolat's JACK MIDI input).
    #[arg(long, value_name = "SOURCE", default_value = "timer", value_parser = str::parse::<TriggerSource>)]
    pub trigger: TriggerSource,
    /// When a note starts: asap (next cycle, offset 0) or fixed (trigger time + one
    /// period: constant latency). A comma list runs each.
    #[arg(long, value_name = "POLICY[,POLICY]", default_value = "asap", value_parser = parse_note_policies)]
    pub policy: ListOf<NotePolicy>,
    /// Triggers per run (1 to 1000000).
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
    /// Repeat every configuration this many times (1 to 1000).
    #[arg(long, value_name = "N", default_value_t = 1, allow_hyphen_values = true,
          value_parser = parse_count_u32)]
    pub repeat: u32,
    #[command(flatten)]
    pub audio: AudioArgs,
    /// Playback ports to connect to (default: the first two physical playback ports).
    #[arg(long, value_name = "PORT[,PORT]", value_delimiter = ',')]
    pub playback: Vec<String>,
    /// Capture that carries the output back (a cable on real hardware): a JACK port, with
    /// --backend alsa a capture device (e.g. hw:Loopback,1,0), with --backend pipewire
    /// `monitor` (the sink's). The onset is also found in it and the measured latency
    /// shown beside the model's.
    #[arg(long, value_name = "PORT|DEVICE")]
    pub loopback: Option<String>,
    /// With --trigger midi: connect audiolat's MIDI input to this port.
    #[arg(long, value_name = "PORT")]
    pub midi_port: Option<String>,
    /// Also raise this GPIO line at every trigger, for an oscilloscope (CHIP:LINE, e.g.
    /// gpiochip0:17).
    #[arg(long, value_name = "CHIP:LINE", value_parser = parse_gpio)]
    pub gpio: Option<GpioSpec>,
    /// Length of each note (at most 10 s).
    #[arg(long, value_name = "DURATION", default_value = "30ms", value_parser = parse_millis)]
    pub note: Duration,
    /// Least time between timer triggers (a random fraction of a period is added; at
    /// least 1.5 notes, at most 60 s).
    #[arg(long, value_name = "DURATION", default_value = "60ms", value_parser = parse_millis)]
    pub spacing: Duration,
    /// Tone frequency in Hz (20 to 20000, below half the sample rate).
    #[arg(long, value_name = "HZ", default_value_t = 440.0, value_parser = parse_rate)]
    pub frequency: f64,
    #[command(flatten)]
    pub scratch: super::values::ScratchArgs,
    /// Do not lock memory (mlockall).
    #[arg(long)]
    pub no_mlock: bool,
    #[command(flatten)]
    pub why: super::values::WhyArgs,
    #[command(flatten)]
    pub output: super::values::OutputArgs,
    #[command(flatten)]
    pub gates: super::values::GateArgs,
}

fn parse_note_policies(s: &str) -> Result<ListOf<NotePolicy>, String> {
    parse_list(s, "policy", |i| i.parse())
}

fn parse_workloads(s: &str) -> Result<ListOf<WorkloadKind>, String> {
    parse_list(s, "workload", |i| i.parse())
}

fn parse_gpio(s: &str) -> Result<GpioSpec, String> {
    s.parse::<GpioSpec>().map_err(|e| gpio_message(&e))
}

/// An event probe's setting error worded for the command line: the flags that set it.
pub fn event_message(e: &EventError) -> String {
    match e {
        EventError::NoTriggers => "--triggers must be at least 1".into(),
        EventError::GpioWithMidi => "--gpio needs --trigger timer or key: a MIDI note-on arrives inside the audio cycle, with no moment to raise a line at".into(),
        other => other.message(|setting| match setting {
            EventSetting::Triggers => "--triggers",
            EventSetting::Note => "--note",
            EventSetting::Spacing => "--spacing",
            EventSetting::Frequency => "--frequency",
        }),
    }
}

/// A sweep too large, worded with the flags whose lists and repeats make it.
pub fn sweep_size_message(e: &SweepSizeError) -> String {
    match e {
        SweepSizeError::Repeats(n) => format!(
            "--repeat {n} is out of range: use 1 to {}",
            runner::sweep::MAX_REPEATS
        ),
        SweepSizeError::TooManyRuns { .. } => {
            format!("--period, --load and --repeat (and event's --policy and --workload): {e}")
        }
    }
}

/// A GPIO error worded for the command line: the flag that named the line.
fn gpio_message(e: &GpioError) -> String {
    match e {
        GpioError::InvalidSpec { text, problem } => format!("--gpio `{text}`: {problem}"),
        GpioError::ChipMissing { path, available } if available.is_empty() => format!(
            "no GPIO chip at {}: this machine exposes none (ls /dev/gpiochip*); drop --gpio or name an existing chip",
            path.display()
        ),
        GpioError::ChipMissing { path, available } => format!(
            "no GPIO chip at {}: this machine has {} (ls /dev/gpiochip*); name one of those or drop --gpio",
            path.display(),
            available.join(", ")
        ),
        other => other.to_string(),
    }
}

impl EventArgs {
    /// The cells of one period, in sweep order: every policy, workload, load and repeat
    /// (each cell's policy and workload replace the base's).
    pub fn cells(&self) -> Result<Vec<EventCell>, UsageError> {
        let mut base = EventConfig::new(self.trigger, NotePolicy::Asap);
        base.triggers = self.triggers;
        base.frequency_hz = self.frequency as f32;
        base.note_ms = self.note.as_secs_f64() * 1e3;
        base.spacing_ms = self.spacing.as_secs_f64() * 1e3;
        base.gpio = self.gpio.clone();
        base.lock_memory = !self.no_mlock;
        base.why = self.why.config()?;
        let (policies, workloads) = (&self.policy.0, &self.workload.0);
        runner::sweep::event_cells(&base, policies, workloads, &self.load.0, self.repeat)
            .map_err(|e| UsageError(event_message(&e)))
    }

    /// Stage two: everything `event` refuses before it starts anything, and what it
    /// runs. `default_scratch` is the database's directory.
    pub fn request(&self, default_scratch: &Path) -> anyhow::Result<SweepRequest<EventCell>> {
        let scratch_dir = self.scratch.or(default_scratch);
        let periods = crate::audio::periods(&self.audio);
        SweepShape {
            periods: periods.len(),
            policies: self.policy.0.len(),
            workloads: self.workload.0.len(),
            loads: self.load.0.len(),
            repeats: self.repeat,
        }
        .check()
        .map_err(|e| UsageError(sweep_size_message(&e)))?;
        let cells = self.cells()?;
        for load in &self.load.0 {
            crate::run_errors::check_load(load, &scratch_dir)?;
        }
        if self.trigger == TriggerSource::Key {
            if let Err(e) = probes::event::check_key_input() {
                return Err(UsageError(format!(
                    "--trigger key reads key presses from standard input, and {e}: run it in a terminal, or pipe the keys in"
                ))
                .into());
            }
        }
        if self.midi_port.is_some() && self.trigger != TriggerSource::Midi {
            return Err(UsageError("--midi-port needs --trigger midi".into()).into());
        }
        let spec =
            crate::audio::sweep_spec(&self.audio, &crate::audio::event_purpose(self), &periods)?;
        // The rate, when it is known before a stream opens (the stream's own is checked
        // when it opens, before anything is stored).
        let rate = self.audio.rate.or(match spec {
            engine::backend::BackendSpec::Virtual(_) => Some(spec.private_server_settings(None).0),
            _ => None,
        });
        if let (Some(rate), Some(cell)) = (rate, cells.first()) {
            cell.config
                .check_rate(rate)
                .map_err(|e| UsageError(event_message(&e)))?;
        }
        if self.trigger == TriggerSource::Midi && !spec.has_midi() {
            return Err(UsageError(format!(
                "--trigger midi reads note-ons from a JACK MIDI port: use --backend jack (with --backend {}, use --trigger timer or key)",
                spec.name()
            ))
            .into());
        }
        if let Some(gpio) = &self.gpio {
            // Open and release the line once now, so a missing chip is refused up front.
            engine::gpio::GpioLine::open(gpio, "audiolat")
                .map_err(|e| UsageError(gpio_message(&e)))?;
        }
        if self.gpio.is_some() && self.trigger == TriggerSource::Midi {
            return Err(UsageError(event_message(&EventError::GpioWithMidi)).into());
        }
        Ok(SweepRequest {
            cells,
            periods,
            spec,
            scratch_dir,
        })
    }
}
