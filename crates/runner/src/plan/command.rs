//! A cell's command line, typed: the probe and its flags as the plan sets them, and what
//! the plan runner changes when it starts the cell (the plan's JACK server instead of
//! one of the cell's own, no status line). This is the one place a cell's argument
//! vector is built: the plan's check parses it, the store keeps it, `--dry-run` shows it
//! and the cell's process starts with it.

use std::ffi::OsString;
use std::path::Path;

/// One flag of a cell's command line: `--name value`, or `--name` for a switch.
#[derive(Debug, Clone, PartialEq)]
struct Arg {
    name: String,
    value: Option<String>,
}

/// A cell's command: `audiolat PROBE --flag value ...`, without the binary.
#[derive(Debug, Clone, PartialEq)]
pub struct CellCommand {
    probe: String,
    args: Vec<Arg>,
    /// The plan's JACK server the cell runs on, by name (`None`: its own settings).
    server: Option<String>,
    /// `--quiet`: no status line of its own.
    quiet: bool,
}

impl CellCommand {
    /// A command of `probe` with no flags yet.
    pub fn new(probe: &str) -> CellCommand {
        CellCommand {
            probe: probe.to_string(),
            args: Vec::new(),
            server: None,
            quiet: false,
        }
    }

    /// Adds `--name value` (`--name` when `value` is `None`), after the flags added
    /// before.
    pub fn flag(&mut self, name: &str, value: Option<&str>) {
        self.args.push(Arg {
            name: name.to_string(),
            value: value.map(str::to_string),
        });
    }

    /// The command run on the plan's JACK server `name` (an external server to the
    /// cell) instead of one of its own: its own `--server` and `--server-name` are
    /// replaced by `--server external --server-name NAME`.
    pub fn on_server(mut self, name: &str) -> CellCommand {
        self.server = Some(name.to_string());
        self
    }

    /// The command with `--quiet` (no status line): only for a probe whose command
    /// takes it ([`CellChecker::takes_quiet`](super::CellChecker::takes_quiet)).
    pub fn quiet(mut self) -> CellCommand {
        self.quiet = true;
        self
    }

    /// The arguments after the binary: `event --backend alsa --period 64 ...`. For the
    /// command the plan made (not [`on_server`](Self::on_server), not
    /// [`quiet`](Self::quiet)) these are the cell's stored, checked and shown arguments.
    pub fn argv(&self) -> Vec<String> {
        let mut out = Vec::with_capacity(1 + 2 * self.args.len() + 5);
        out.push(self.probe.clone());
        for a in &self.args {
            if self.server.is_some() && (a.name == "server" || a.name == "server-name") {
                continue;
            }
            match &a.value {
                // A value that starts with a dash is joined to its flag, so the flag's
                // parser reads it (`--cable-gain=-1`), not as a flag of its own.
                Some(v) if v.starts_with('-') => out.push(format!("--{}={v}", a.name)),
                v => {
                    out.push(format!("--{}", a.name));
                    out.extend(v.clone());
                }
            }
        }
        if let Some(name) = &self.server {
            out.extend([
                "--server".into(),
                "external".into(),
                "--server-name".into(),
                name.clone(),
            ]);
        }
        if self.quiet {
            out.push("--quiet".into());
        }
        out
    }

    /// [`argv`](Self::argv) as one line, each argument quoted for a shell.
    pub fn shell_line(&self) -> String {
        self.argv()
            .iter()
            .map(|a| load::shell_quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The arguments a cell's process starts with: the database, then [`argv`](Self::argv).
    pub fn process_args(&self, db: &Path) -> Vec<OsString> {
        let mut out: Vec<OsString> = vec!["--db".into(), db.into()];
        out.extend(self.argv().into_iter().map(OsString::from));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event() -> CellCommand {
        let mut c = CellCommand::new("event");
        c.flag("backend", Some("jack"));
        c.flag("server", Some("dummy"));
        c.flag("no-mlock", None);
        c.flag("server-name", Some("mine"));
        c.flag("period", Some("64"));
        c
    }

    #[test]
    fn a_planned_command_is_its_flags_in_order() {
        assert_eq!(
            event().argv(),
            [
                "event",
                "--backend",
                "jack",
                "--server",
                "dummy",
                "--no-mlock",
                "--server-name",
                "mine",
                "--period",
                "64"
            ]
        );
    }

    #[test]
    fn on_the_plans_server_a_cell_drops_its_own_and_is_quiet_last() {
        let c = event().on_server("audiolat-dummy-2").quiet();
        assert_eq!(
            c.argv(),
            [
                "event",
                "--backend",
                "jack",
                "--no-mlock",
                "--period",
                "64",
                "--server",
                "external",
                "--server-name",
                "audiolat-dummy-2",
                "--quiet"
            ]
        );
        let args = c.process_args(Path::new("/tmp/a b.db"));
        assert_eq!(
            args[..3],
            ["--db", "/tmp/a b.db", "event"].map(OsString::from)
        );
        // Quiet alone keeps the cell's own server.
        assert_eq!(event().quiet().argv()[3..5], ["--server", "dummy"]);
    }
}
