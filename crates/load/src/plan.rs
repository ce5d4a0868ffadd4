//! Planning: a load spec turned into the exact commands that implement it, every tool
//! checked before anything starts.

use crate::placement::VIDEO_PLAYERS;
use crate::spec::{LoadItem, LoadSpec};
use crate::tools::{require, tool_version, Tool, HACKBENCH, STRESS_NG, TOP};
use crate::{LoadContext, LoadError};
use std::path::{Path, PathBuf};

/// One process of a load, as planned.
#[derive(Debug, Clone)]
pub struct LoadCommand {
    /// The spec item it implements.
    pub item: LoadItem,
    /// Program to run.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// The tool's version.
    pub version: String,
    /// Discard stdout (top writes its screens there).
    pub discard_stdout: bool,
}

impl LoadCommand {
    /// The command line, shell-quoted.
    pub fn command_line(&self) -> String {
        std::iter::once(self.program.display().to_string())
            .chain(self.args.iter().cloned())
            .map(|a| shell_quote(&a))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Quotes a word for a POSIX shell when it needs it.
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+%@".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Turns a spec into the commands that implement it, checking every tool first.
pub fn plan(spec: &LoadSpec, ctx: &LoadContext) -> Result<Vec<LoadCommand>, LoadError> {
    let cpus = ctx.cpus.max(1).to_string();
    let mut out = Vec::new();
    for item in &spec.items {
        if matches!(item, LoadItem::Flood { .. } | LoadItem::Stream { .. }) {
            // The network probe sends the flood itself: only it knows the host's address.
            continue;
        }
        let (tool, args, discard_stdout): (Option<Tool>, Vec<String>, bool) = match item {
            LoadItem::Cpu { percent } => (
                Some(STRESS_NG),
                vec![
                    "--cpu".into(),
                    cpus.clone(),
                    "--cpu-load".into(),
                    percent.unwrap_or(100).to_string(),
                    "--cpu-method".into(),
                    "matrixprod".into(),
                    "--timeout".into(),
                    "0".into(),
                ],
                false,
            ),
            LoadItem::Io => {
                if !ctx.scratch_dir.is_dir() || !writable_dir(&ctx.scratch_dir) {
                    return Err(LoadError::BadScratch(ctx.scratch_dir.clone()));
                }
                (
                    Some(STRESS_NG),
                    vec![
                        "--hdd".into(),
                        "1".into(),
                        "--hdd-bytes".into(),
                        "256M".into(),
                        "--temp-path".into(),
                        ctx.scratch_dir.display().to_string(),
                        "--timeout".into(),
                        "0".into(),
                    ],
                    false,
                )
            }
            LoadItem::Mem => (
                Some(STRESS_NG),
                vec![
                    "--stream".into(),
                    cpus.clone(),
                    "--timeout".into(),
                    "0".into(),
                ],
                false,
            ),
            LoadItem::Top => (
                Some(TOP),
                vec!["-b".into(), "-d".into(), "0.1".into()],
                true,
            ),
            LoadItem::Hackbench => (
                Some(HACKBENCH),
                vec!["-g".into(), "4".into(), "-l".into(), "1000000000".into()],
                true,
            ),
            LoadItem::Flood { .. } | LoadItem::Stream { .. } => unreachable!("skipped above"),
            LoadItem::Video => (
                None,
                vec![
                    "__load".into(),
                    "video".into(),
                    "--threads".into(),
                    VIDEO_PLAYERS.to_string(),
                ],
                false,
            ),
            LoadItem::Ep { threads } => (
                None,
                vec![
                    "__load".into(),
                    "ep".into(),
                    "--threads".into(),
                    threads.map_or(cpus.clone(), |t| t.to_string()),
                ],
                false,
            ),
        };
        let mut args = args;
        let deadline = spec
            .cell_of(item)
            .and_then(|cell| ctx.placements.get(cell).map(|p| (cell, p.deadline)));
        if let Some((cell, Some(share))) = deadline {
            if tool.is_some() {
                return Err(LoadError::ForkInDeadlineCell {
                    item: item.name().to_string(),
                    cell: cell.to_string(),
                });
            }
            args.extend(["--deadline".into(), share.to_arg()]);
        }
        let (program, version) = program_and_version(tool, item, ctx)?;
        out.push(LoadCommand {
            item: *item,
            program,
            args,
            version,
            discard_stdout,
        });
    }
    Ok(out)
}

/// The program that runs a load item and its version: the tool, found in `PATH`, or
/// audiolat itself for a built-in load (`tool` is `None`).
fn program_and_version(
    tool: Option<Tool>,
    item: &LoadItem,
    ctx: &LoadContext,
) -> Result<(PathBuf, String), LoadError> {
    Ok(match tool {
    Some(tool) => {
        let program = require(&tool)?;
        let version = tool_version(&tool, &program);
        (program, version)
    }
    None => (
        ctx.self_exe.clone().ok_or(LoadError::NoSelfExe)?,
        match item {
            LoadItem::Video => format!(
                "audiolat {} built-in video players (2 x 30 fps, 1920x1080x4-byte frames streamed through memory)",
                env!("CARGO_PKG_VERSION")
            ),
            _ => format!(
                "audiolat {} built-in NPB EP kernel (class S, verified each pass)",
                env!("CARGO_PKG_VERSION")
            ),
        },
    ),
    })
}

fn writable_dir(p: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: valid NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}
