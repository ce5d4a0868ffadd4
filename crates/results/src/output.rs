//! The one way audiolat writes a file for its user (an export, a report, a histogram, a
//! manual page, a plan cell's log): never over the results database, its companion
//! files or any other SQLite database, and never a half-written or empty file where the
//! write failed.
//!
//! - [`check`] refuses a path before anything runs (a command checks its output paths
//!   before it measures or stores anything); [`write`] and [`create_new`] check again.
//! - [`write`] writes the whole content to a temporary file in the target's directory
//!   (`.NAME.audiolat-XXXXXX`), flushes it to the disk and renames it over the target:
//!   the target holds either what it held before or all of the new content, and a
//!   failed write (a full disk) removes the temporary file. A replaced file keeps its
//!   permissions; a new one gets `0666` less the umask, as a shell's `>` gives.
//! - A device, a FIFO or a socket (`/dev/full`, a named pipe) is written in place:
//!   there is nothing to rename over. `/dev/stdout`, `/dev/stderr`, `/dev/fd/N` and
//!   `/proc/self/fd/N` are written to that descriptor of this process (appended where
//!   it appends), whatever it is open on.
//! - The database is recognised as the same file (device and inode), not by its name:
//!   a hard link, a symbolic link or `./` in the path changes nothing. Its write-ahead
//!   log (`-wal`), shared-memory index (`-shm`), rollback journal (`-journal`) and
//!   full-disk reserve (`-reserve`) are refused as well; a path that does not exist yet
//!   is compared by its directory and name.
//! - [`check_stream`] says whether an open stream (standard output) is the database
//!   or an SQLite file, so that nothing is appended to one.
//!
//! ```
//! let dir = std::env::temp_dir().join(format!("results-output-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let db = dir.join("audiolat.db");
//! let csv = dir.join("run.csv");
//! results::output::write(&csv, &db, b"run_id\n1\n").unwrap();
//! assert!(matches!(
//!     results::output::write(&db, &db, b"oops"),
//!     Err(results::output::OutputError::Database { .. })
//! ));
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```

use std::fs::{File, Metadata, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The first 16 bytes of every SQLite 3 database file.
pub const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Which of the results database's files a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatabaseFile {
    /// The database file itself.
    Main,
    /// Its write-ahead log (`FILE-wal`).
    WriteAheadLog,
    /// Its write-ahead log's shared-memory index (`FILE-shm`).
    SharedMemory,
    /// Its rollback journal (`FILE-journal`).
    Journal,
    /// Its full-disk reserve (`FILE-reserve`).
    Reserve,
}

impl DatabaseFile {
    const ALL: [(DatabaseFile, &'static str); 5] = [
        (DatabaseFile::Main, ""),
        (DatabaseFile::WriteAheadLog, "-wal"),
        (DatabaseFile::SharedMemory, "-shm"),
        (DatabaseFile::Journal, "-journal"),
        (DatabaseFile::Reserve, "-reserve"),
    ];
}

impl std::fmt::Display for DatabaseFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DatabaseFile::Main => "the results database",
            DatabaseFile::WriteAheadLog => "the results database's write-ahead log",
            DatabaseFile::SharedMemory => "the results database's shared-memory index",
            DatabaseFile::Journal => "the results database's rollback journal",
            DatabaseFile::Reserve => "the results database's full-disk reserve",
        })
    }
}

/// Why an output file was refused or not written. The refusals ([`Self::is_refusal`])
/// come before anything is written; after an [`OutputError::Io`] nothing new is left at
/// the path (a file that was there keeps what it held).
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The path is one of the results database's files.
    #[error("{path} is {part} ({database})")]
    Database {
        /// The output path.
        path: PathBuf,
        /// The results database.
        database: PathBuf,
        /// Which of its files.
        part: DatabaseFile,
    },
    /// The path holds an SQLite database (not this one: another).
    #[error("{path} is an SQLite database")]
    Sqlite {
        /// The output path.
        path: PathBuf,
    },
    /// The path is a directory.
    #[error("{path} is a directory")]
    Directory {
        /// The output path.
        path: PathBuf,
    },
    /// The path's directory does not exist (or is not a directory).
    #[error("{path}: its directory does not exist")]
    NoDirectory {
        /// The output path.
        path: PathBuf,
    },
    /// The file exists and a new one was asked for ([`create_new`]).
    #[error("{path} exists")]
    Exists {
        /// The output path.
        path: PathBuf,
    },
    /// Writing failed (a full disk, no permission, a read-only filesystem).
    #[error("writing {path}: {source}")]
    Io {
        /// The output path.
        path: PathBuf,
        /// The file system's reason.
        source: std::io::Error,
    },
}

impl OutputError {
    /// Whether the path was refused before anything was written (bad input), rather
    /// than failing while it was written.
    pub fn is_refusal(&self) -> bool {
        !matches!(self, OutputError::Io { .. })
    }

    /// The output path.
    pub fn path(&self) -> &Path {
        match self {
            OutputError::Database { path, .. }
            | OutputError::Sqlite { path }
            | OutputError::Directory { path }
            | OutputError::NoDirectory { path }
            | OutputError::Exists { path }
            | OutputError::Io { path, .. } => path,
        }
    }
}

/// Where a checked path's content goes.
#[derive(Debug)]
enum Target {
    /// This process's open file descriptor (`/dev/stdout`, `/dev/fd/N`, ...).
    Descriptor(std::os::fd::RawFd),
    /// Written in place (a device, a FIFO, a socket).
    InPlace,
    /// A regular file (existing or not) replaced by a rename: the file to rename over
    /// (symbolic links resolved) and, when it exists, its metadata (its permissions
    /// and owner are kept).
    Replace {
        file: PathBuf,
        existing: Option<Metadata>,
    },
}

/// Refuses `path` as an output file when it is one of the files of the results
/// database at `database` (see [`DatabaseFile`]), any SQLite database, a directory, or
/// in a directory that does not exist. Reads only.
pub fn check(path: &Path, database: &Path) -> Result<(), OutputError> {
    target(path, database).map(|_| ())
}

/// Writes `contents` to `path` whole, or not at all (see the module's promises),
/// refusing what [`check`] refuses.
pub fn write(path: &Path, database: &Path, contents: &[u8]) -> Result<(), OutputError> {
    let io = |source| OutputError::Io {
        path: path.to_path_buf(),
        source,
    };
    match target(path, database)? {
        Target::Descriptor(fd) => {
            // SAFETY: dup has no memory effects; a fresh descriptor it returns is ours.
            let dup = unsafe { libc::dup(fd) };
            if dup < 0 {
                return Err(io(std::io::Error::last_os_error()));
            }
            // SAFETY: `dup` is a descriptor this process just made and owns alone.
            let mut f = unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(dup) };
            f.write_all(contents).and_then(|()| f.flush()).map_err(io)
        }
        Target::InPlace => {
            let mut f = OpenOptions::new().write(true).open(path).map_err(io)?;
            f.write_all(contents).and_then(|()| f.flush()).map_err(io)
        }
        Target::Replace { file, existing } => {
            replace(&file, existing.as_ref(), contents).map_err(|e| io(plain(e)))
        }
    }
}

/// A new file at `path` (`O_EXCL`: never one that exists), mode `0600`, for a stream
/// another process writes (a plan cell's log), refusing what [`check`] refuses.
pub fn create_new(path: &Path, database: &Path) -> Result<File, OutputError> {
    if let Target::Replace {
        existing: Some(_), ..
    } = target(path, database)?
    {
        return Err(OutputError::Exists {
            path: path.to_path_buf(),
        });
    }
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|source| match source.kind() {
            std::io::ErrorKind::AlreadyExists => OutputError::Exists {
                path: path.to_path_buf(),
            },
            _ => OutputError::Io {
                path: path.to_path_buf(),
                source,
            },
        })
}

/// Refuses an open stream (e.g. standard output, redirected with `>>`) that is one of
/// the results database's files or an SQLite database, as [`check`] refuses a path;
/// `what` names it in the error (e.g. `/dev/stdout`). Anything else, or a stream that
/// cannot be looked at, passes.
pub fn check_stream(
    stream: &impl std::os::fd::AsFd,
    what: &Path,
    database: &Path,
) -> Result<(), OutputError> {
    let Ok(file) = stream.as_fd().try_clone_to_owned().map(File::from) else {
        return Ok(());
    };
    let Ok(meta) = file.metadata() else {
        return Ok(());
    };
    if let Some(part) = database_part(&meta, database) {
        return Err(OutputError::Database {
            path: what.to_path_buf(),
            database: database.to_path_buf(),
            part,
        });
    }
    // The stream's own offset is left alone: the header is read through /proc.
    let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
    if meta.is_file() && has_sqlite_header(Path::new(&format!("/proc/self/fd/{fd}"))) {
        return Err(OutputError::Sqlite {
            path: what.to_path_buf(),
        });
    }
    Ok(())
}

/// Checks `path` and says how it is written.
fn target(path: &Path, database: &Path) -> Result<Target, OutputError> {
    let owned = || path.to_path_buf();
    let meta = std::fs::metadata(path);
    if let Some(part) = DatabaseFile::ALL
        .iter()
        .map(|(part, _)| *part)
        .find(|part| is_database_file(path, meta.as_ref().ok(), database, *part))
    {
        return Err(OutputError::Database {
            path: owned(),
            database: database.to_path_buf(),
            part,
        });
    }
    match meta {
        Ok(m) if m.is_dir() => Err(OutputError::Directory { path: owned() }),
        Ok(m) if m.is_file() && has_sqlite_header(path) => {
            Err(OutputError::Sqlite { path: owned() })
        }
        Ok(m) => match descriptor(path) {
            Some(fd) => Ok(Target::Descriptor(fd)),
            None if !m.is_file() => Ok(Target::InPlace),
            None => Ok(Target::Replace {
                file: std::fs::canonicalize(path).unwrap_or_else(|_| owned()),
                existing: Some(m),
            }),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if !directory_of(path).is_dir() || path.file_name().is_none() {
                return Err(OutputError::NoDirectory { path: owned() });
            }
            Ok(Target::Replace {
                file: owned(),
                existing: None,
            })
        }
        Err(source) => Err(OutputError::Io {
            path: owned(),
            source,
        }),
    }
}

/// The descriptor of this process a path names: `/dev/stdout` (1), `/dev/stderr` (2),
/// `/dev/fd/N`, `/proc/self/fd/N` (and `/proc/PID/fd/N` of this
/// process).
fn descriptor(path: &Path) -> Option<std::os::fd::RawFd> {
    let text = path.to_str()?;
    match text {
        "/dev/stdout" => return Some(1),
        "/dev/stderr" => return Some(2),
        _ => {}
    }
    let me = format!("/proc/{}/fd/", std::process::id());
    let n = text
        .strip_prefix("/dev/fd/")
        .or_else(|| text.strip_prefix("/proc/self/fd/"))
        .or_else(|| text.strip_prefix(me.as_str()))?;
    n.parse().ok()
}

/// The directory a path's file is in (`.` for a bare name).
fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The path of the database's file `part`.
fn database_file(database: &Path, part: DatabaseFile) -> PathBuf {
    let suffix = DatabaseFile::ALL
        .iter()
        .find(|(p, _)| *p == part)
        .map_or("", |(_, s)| s);
    let mut name = database.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Whether `path` (with its metadata when it exists) is the database's file `part`:
/// the same device and inode when both exist, the same directory and name when neither
/// does.
fn is_database_file(
    path: &Path,
    meta: Option<&Metadata>,
    database: &Path,
    part: DatabaseFile,
) -> bool {
    let file = database_file(database, part);
    match (meta, std::fs::metadata(&file)) {
        (Some(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        (None, Err(_)) => normalised(path) == normalised(&file),
        _ => false,
    }
}

/// Which of the database's files the file with `meta` is, if any.
fn database_part(meta: &Metadata, database: &Path) -> Option<DatabaseFile> {
    DatabaseFile::ALL
        .iter()
        .map(|(part, _)| *part)
        .find(|part| {
            std::fs::metadata(database_file(database, *part))
                .is_ok_and(|b| meta.dev() == b.dev() && meta.ino() == b.ino())
        })
}

/// A path that may not exist, as its directory's canonical path and its name.
fn normalised(path: &Path) -> PathBuf {
    let dir = directory_of(path);
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|cwd| cwd.join(dir))
            .unwrap_or_else(|_| dir.to_path_buf())
    });
    match path.file_name() {
        Some(name) => dir.join(name),
        None => dir,
    }
}

/// Whether the file at `path` begins with SQLite's header.
fn has_sqlite_header(path: &Path) -> bool {
    use std::io::Read;
    let mut header = [0u8; 16];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut header))
        .is_ok_and(|()| &header == SQLITE_HEADER)
}

/// The file system's reason alone: tempfile adds its temporary file's name to an
/// error, which the user never named.
fn plain(e: std::io::Error) -> std::io::Error {
    e.raw_os_error()
        .map_or(e, std::io::Error::from_raw_os_error)
}

/// Writes `contents` to a temporary file beside `file`, flushed to the disk, and
/// renames it over `file` (keeping `existing`'s permissions and owner). On any error the
/// temporary file is removed and `file` is as it was.
fn replace(file: &Path, existing: Option<&Metadata>, contents: &[u8]) -> std::io::Result<()> {
    let name = file
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    let mode = existing.map_or(0o666, |m| m.permissions().mode() & 0o7777);
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}.audiolat-"))
        .suffix("")
        .permissions(std::fs::Permissions::from_mode(mode))
        .tempfile_in(directory_of(file))?;
    if let Some(m) = existing {
        // A replaced file keeps its mode exactly (not less the umask) and, where this
        // process may, its owner.
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))?;
        let _ = std::os::unix::fs::fchown(tmp.as_file(), Some(m.uid()), Some(m.gid()));
    }
    tmp.as_file_mut().write_all(contents)?;
    tmp.as_file().sync_all()?;
    // On an error the temporary file comes back in the error and is removed with it.
    tmp.persist(file).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
