//! The programs a private PipeWire runs: where they are, the Debian package that ships
//! each, their versions, and the tail of their output.

use super::error::{PipewireError, PipewireProcess};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A program and the Debian (bookworm) package that ships it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Tool {
    pub(super) name: &'static str,
    pub(super) package: &'static str,
}

pub(super) const PIPEWIRE: Tool = Tool {
    name: PipewireProcess::Pipewire.program(),
    package: "pipewire-bin",
};
pub(super) const WIREPLUMBER: Tool = Tool {
    name: PipewireProcess::Wireplumber.program(),
    package: "wireplumber",
};
/// `dbus-daemon` is its own package since bookworm; the `dbus` package depends on it
/// (and shipped the program itself before).
pub(super) const DBUS_DAEMON: Tool = Tool {
    name: PipewireProcess::DbusDaemon.program(),
    package: "dbus-daemon",
};
pub(super) const PW_LINK: Tool = Tool {
    name: "pw-link",
    package: "pipewire-bin",
};

/// The resolved paths of the programs.
#[derive(Clone, Debug)]
pub(super) struct Tools {
    pub(super) pipewire: PathBuf,
    pub(super) wireplumber: PathBuf,
    pub(super) dbus_daemon: PathBuf,
    pub(super) pw_link: PathBuf,
}

impl Tools {
    /// Each program's first executable in `dirs` (`None`: `$PATH`), looked for in the
    /// order pipewire, wireplumber, dbus-daemon, pw-link: the first missing one is the
    /// error, with its package.
    pub(super) fn find(dirs: Option<&[PathBuf]>) -> Result<Tools, PipewireError> {
        let path_dirs: Vec<PathBuf> = match dirs {
            Some(dirs) => dirs.to_vec(),
            None => std::env::var_os("PATH")
                .map(|p| std::env::split_paths(&p).collect())
                .unwrap_or_default(),
        };
        let find = |tool: Tool| {
            path_dirs
                .iter()
                .map(|d| d.join(tool.name))
                .find(|p| is_executable(p))
                .ok_or(PipewireError::ToolMissing {
                    tool: tool.name,
                    package: tool.package,
                })
        };
        Ok(Tools {
            pipewire: find(PIPEWIRE)?,
            wireplumber: find(WIREPLUMBER)?,
            dbus_daemon: find(DBUS_DAEMON)?,
            pw_link: find(PW_LINK)?,
        })
    }
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs `cmd` (stdin closed, stderr dropped) and returns its standard output when it
/// exits successfully within `timeout`; it is killed otherwise. The output is read by a
/// thread while the child runs, so an output of any size (`pw-cli ls Client` on a busy
/// desktop) cannot fill the pipe and stall the child.
pub(super) fn run_bounded(mut cmd: Command, timeout: Duration) -> Option<String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    let reader = std::thread::Builder::new()
        .name("audiolat-pw-output".into())
        .spawn(move || {
            let mut text = String::new();
            stdout.read_to_string(&mut text).ok().map(|_| text)
        });
    let Ok(reader) = reader else {
        let _ = child.kill();
        let _ = child.wait();
        return None;
    };
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                // The reader ends when the pipe closes (a child of the child holding
                // it open would keep it: the thread is left, never waited for).
                return None;
            }
        }
    };
    let text = reader.join().ok()??;
    status.success().then_some(text)
}

/// The library version `TOOL --version` reports ("Linked with libpipewire 0.3.65" ->
/// "0.3.65"), or the compiled-with one.
pub(super) fn library_version(tool: &Path) -> Option<String> {
    let mut cmd = Command::new(tool);
    cmd.arg("--version");
    let text = run_bounded(cmd, Duration::from_secs(5))?;
    parse_library_version(&text)
}

fn parse_library_version(text: &str) -> Option<String> {
    let version_after = |prefix: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(prefix))
            .and_then(|l| l.split_whitespace().last())
            .map(str::to_string)
    };
    version_after("Linked with").or_else(|| version_after("Compiled with"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_bigger_than_a_pipe_is_read_whole() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "head -c 300000 /dev/zero | tr '\\0' x"]);
        let text = run_bounded(cmd, Duration::from_secs(20)).expect("the output");
        assert_eq!(text.len(), 300_000);
        assert!(text.bytes().all(|b| b == b'x'));
        let mut slow = Command::new("sleep");
        slow.arg("10");
        assert_eq!(run_bounded(slow, Duration::from_millis(200)), None);
        let mut failed = Command::new("false");
        failed.arg("");
        assert_eq!(run_bounded(failed, Duration::from_secs(5)), None);
    }

    #[test]
    fn versions_come_from_the_linked_library() {
        let text = "pipewire\nCompiled with libpipewire 0.3.65\nLinked with libpipewire 0.3.66\n";
        assert_eq!(parse_library_version(text).as_deref(), Some("0.3.66"));
        let text = "wireplumber\nCompiled with libwireplumber 0.4.13\n";
        assert_eq!(parse_library_version(text).as_deref(), Some("0.4.13"));
        assert_eq!(parse_library_version("something else"), None);
    }
}
