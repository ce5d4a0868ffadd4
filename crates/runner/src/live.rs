//! What a caller's live status line says about a run before its probe reports: the
//! label of a round-trip run and the prompt an event run's trigger needs (an event
//! run's label is [`crate::sweep::event_label`]); and [`LabelledRuns`], a sweep's
//! observer made from one observer per run's label and prompt.

use engine::audio::StreamInfo;
use probes::event::{EventConfig, TriggerSource};

use crate::sweep::{event_label, EventCell, RoundtripCell, SweepObserver};
use crate::Observer;

/// Observes each run of a sweep (event or round-trip) through an [`Observer`] made from
/// the run's label and the prompt it needs, if any: every such type is a
/// [`SweepObserver`] of both kinds of cell.
pub trait LabelledRuns {
    /// The observer of a run labelled `label`, which says `prompt` when it starts.
    fn labelled(&self, label: &str, prompt: Option<String>) -> Box<dyn Observer + '_>;
}

impl<T: LabelledRuns> SweepObserver<EventCell> for T {
    fn run(&self, cell: &EventCell, sinfo: &StreamInfo) -> Box<dyn Observer + '_> {
        let label = event_label(&cell.config, &cell.load, sinfo.period_frames);
        let prompt = event_prompt(&label, &cell.config, sinfo);
        self.labelled(&label, prompt)
    }
}

impl<T: LabelledRuns> SweepObserver<RoundtripCell> for T {
    fn run(&self, cell: &RoundtripCell, sinfo: &StreamInfo) -> Box<dyn Observer + '_> {
        self.labelled(&roundtrip_label(cell, sinfo), None)
    }
}

/// What to tell the user when an event run of `config` on the stream `sinfo`, labelled
/// `label`, starts measuring: a key or MIDI trigger needs the user; a timer does not.
pub fn event_prompt(label: &str, config: &EventConfig, sinfo: &StreamInfo) -> Option<String> {
    match config.source {
        TriggerSource::Key => Some(format!(
            "{label}: press a key for each trigger ({} wanted); q ends",
            config.triggers
        )),
        TriggerSource::Midi => Some(format!(
            "{label}: waiting for {} MIDI note-ons on {}:midi_in{}",
            config.triggers,
            sinfo.client_name,
            match &sinfo.midi_port {
                Some(p) if !p.is_empty() => format!(" (connected to {p})"),
                _ => " (connect a MIDI source to it, e.g. with jack_connect)".into(),
            }
        )),
        TriggerSource::Timer => None,
    }
}

/// The live label of a round-trip run of `cell` on the stream `sinfo`.
pub fn roundtrip_label(cell: &RoundtripCell, sinfo: &StreamInfo) -> String {
    format!(
        "roundtrip {} period {} {}",
        sinfo.backend, sinfo.period_frames, cell.load
    )
}
