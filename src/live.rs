//! A run's live status line on the terminal (its text is `report::view::live`'s) and
//! the prompt said when measuring starts.

use std::io::IsTerminal;

use probes::probe::LiveStatus;

use crate::stdio;

/// A one-line live status on stderr, when stderr is a terminal (its text is
/// `report::view::live`'s); and a prompt said when measuring starts (press a key, play
/// MIDI notes), whether or not it is a terminal.
pub struct LiveLine {
    enabled: bool,
    label: String,
    period_ns: u64,
    prompt: Option<String>,
}

impl LiveLine {
    /// A status line for `label`, shown only on a terminal and unless `quiet`;
    /// `period_ns` turns the jitter probe's cycles into seconds.
    pub fn new(label: &str, quiet: bool, period_ns: u64) -> LiveLine {
        LiveLine {
            enabled: !quiet && std::io::stderr().is_terminal(),
            label: label.to_string(),
            period_ns,
            prompt: None,
        }
    }

    fn write(&self, line: &str) {
        if self.enabled {
            stdio::progress(format_args!("\r\x1b[K{line}"));
        }
    }
}

impl runner::Observer for LiveLine {
    fn started(&self, _run_id: results::RunId) {
        if let Some(prompt) = &self.prompt {
            stdio::progress(format_args!("{prompt}\n"));
        }
    }

    fn status(&self, status: &LiveStatus) {
        if self.enabled {
            self.write(&report::view::live::line(
                &self.label,
                self.period_ns,
                status,
            ));
        }
    }

    fn finished(&self) {
        self.write("");
    }
}

/// A sweep's runs each shown on a live line (unless `quiet`).
pub struct SweepLive {
    /// Show nothing.
    pub quiet: bool,
}

impl runner::live::LabelledRuns for SweepLive {
    fn labelled(&self, label: &str, prompt: Option<String>) -> Box<dyn runner::Observer + '_> {
        let line = LiveLine::new(label, self.quiet, 0);
        Box::new(LiveLine { prompt, ..line })
    }
}
