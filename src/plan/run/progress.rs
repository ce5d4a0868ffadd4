//! The plan run's progress line.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use runner::plan::PlanObserver;

pub(super) fn fmt_eta(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// The progress line: a bar, cells done, the current cell and the time left.
pub(super) struct Progress {
    pub(super) enabled: bool,
    pub(super) tty: bool,
    pub(super) total: usize,
    pub(super) done: usize,
    pub(super) started: Instant,
    pub(super) timed: Vec<f64>,
}

impl Progress {
    /// A progress line (shown when `enabled`) for `total` cells, `done` of them already.
    pub(super) fn new(enabled: bool, total: usize, done: usize) -> Progress {
        Progress {
            enabled,
            tty: std::io::stderr().is_terminal(),
            total,
            done,
            started: Instant::now(),
            timed: Vec::new(),
        }
    }

    pub(super) fn show(&self, current: &str) {
        if !self.enabled {
            return;
        }
        let done = self.done;
        let width = 24;
        let filled = (done * width).checked_div(self.total).unwrap_or(width);
        let eta = if self.timed.is_empty() {
            "ETA --".to_string()
        } else {
            let mean = self.timed.iter().sum::<f64>() / self.timed.len() as f64;
            format!(
                "ETA {}",
                fmt_eta(Duration::from_secs_f64(mean * (self.total - done) as f64))
            )
        };
        let line = format!(
            "[{}{}] {done}/{} {eta} | {current}",
            "#".repeat(filled),
            "-".repeat(width - filled),
            self.total
        );
        let mut err = std::io::stderr().lock();
        if self.tty {
            let cols = terminal_columns();
            let line: String = line.chars().take(cols.saturating_sub(1)).collect();
            let _ = write!(err, "\r\x1b[K{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }

    pub(super) fn note(&self, text: &str) {
        if !self.enabled {
            return;
        }
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r\x1b[K");
        }
        let _ = writeln!(err, "{text}");
    }

    pub(super) fn finish(&self) {
        if self.enabled && self.tty {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
        }
    }
}

impl PlanObserver for Progress {
    fn note(&mut self, text: &str) {
        Progress::note(self, text);
    }

    fn cell_running(&mut self, key: &str, elapsed: Option<Duration>) {
        match elapsed {
            None => self.show(key),
            // A terminal's line is redrawn every second; a log gets one line per cell.
            Some(e) if self.tty => self.show(&format!("{} ({:.0} s)", key, e.as_secs_f64())),
            Some(_) => {}
        }
    }

    fn cell_ended(&mut self, took: Option<Duration>, counts: bool) {
        if let Some(t) = took {
            self.timed.push(t.as_secs_f64());
        }
        if counts {
            self.done += 1;
        }
    }
}

fn terminal_columns() -> usize {
    // SAFETY: TIOCGWINSZ fills a winsize; stderr is a terminal here.
    unsafe {
        let mut ws: libc::winsize = std::mem::zeroed();
        if libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut ws) == 0 && ws.ws_col > 0 {
            return ws.ws_col as usize;
        }
    }
    100
}
