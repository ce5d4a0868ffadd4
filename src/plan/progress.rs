//! A plan run's start line and progress line (`report::view::plan` renders them),
//! written to stderr.

use std::time::Duration;

use crate::stdio;
use report::view::plan as view;
use runner::plan::{PlanObserver, PlanProgress, PlanStarted};

/// The start line and the progress line on stderr (when `enabled`; warnings always):
/// redrawn in place on a terminal, one line per cell in a log.
pub struct Progress {
    /// Whether anything but warnings is written.
    enabled: bool,
    /// Whether stderr is a terminal (the line is redrawn in place).
    tty: bool,
    /// Cells done of all, and the time left.
    at: PlanProgress,
}

impl Progress {
    /// Nothing done yet; `enabled`: anything but warnings is written; `tty`: stderr is a
    /// terminal.
    pub fn new(enabled: bool, tty: bool) -> Progress {
        Progress {
            enabled,
            tty,
            at: PlanProgress::new(0, 0),
        }
    }

    /// Writes `line` (`redraw`: over the progress line, which stays below).
    fn write(&self, line: &str, redraw: bool) {
        if self.enabled {
            self.put(line, redraw);
        }
    }

    /// Writes `line`, enabled or not; a closed pipe stops the plan run (see
    /// [`stdio::progress`]).
    fn put(&self, line: &str, redraw: bool) {
        match (self.tty, redraw) {
            (true, true) => stdio::progress(format_args!("\r\x1b[K{}", fit_terminal(line))),
            (true, false) => stdio::progress(format_args!("\r\x1b[K{line}\n")),
            (false, _) => stdio::progress(format_args!("{line}\n")),
        }
    }

    /// Clears the progress line at the end.
    pub fn clear(&self) {
        if self.enabled && self.tty {
            stdio::progress("\r\x1b[K");
        }
    }
}

impl PlanObserver for Progress {
    fn started(&mut self, s: &PlanStarted<'_>) {
        self.at = PlanProgress::new(s.cells, s.already);
        if self.enabled {
            let start = view::PlanStart {
                name: s.name,
                source: s.source,
                group: s.group,
                cells: s.cells,
                already: s.already,
                to_run: s.to_run,
                servers: s.servers,
            };
            stdio::progress(format_args!("{}\n", view::start_line(&start)));
        }
    }

    fn note(&mut self, text: &str) {
        self.write(text, false);
    }

    fn warning(&mut self, text: &str) {
        self.put(text, false);
    }

    fn cell_running(&mut self, key: &str, elapsed: Option<Duration>) {
        let current = match elapsed {
            None => key.to_string(),
            // A terminal's line is redrawn every second; a log gets one line per cell.
            Some(e) if self.tty => format!("{} ({:.0} s)", key, e.as_secs_f64()),
            Some(_) => return,
        };
        let at = &self.at;
        let line = view::progress_line(at.done, at.total, at.time_left(), &current);
        self.write(&line, true);
    }

    fn cell_ended(&mut self, took: Option<Duration>, counts: bool) {
        self.at.cell_ended(took, counts);
    }
}

/// `line` cut to the terminal's width less one column (100 when it cannot be read).
fn fit_terminal(line: &str) -> String {
    let mut cols = 100;
    // SAFETY: TIOCGWINSZ fills a winsize; stderr is a terminal here.
    unsafe {
        let mut ws: libc::winsize = std::mem::zeroed();
        if libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut ws) == 0 && ws.ws_col > 0 {
            cols = ws.ws_col as usize;
        }
    }
    line.chars().take(cols - 1).collect()
}
