//! What the user can do about a database that cannot be used: typed, so the library
//! words it without naming how a database is chosen (the binary's `--db`), and a front
//! end words it in its own terms.

use std::fmt;

/// What to do about a results database that cannot be used ([`super::StoreError::Open`]).
/// `Display` words it without a flag ("use another database file"); the binary says how
/// to choose one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remedy {
    /// Use an audiolat results database or a new file instead. `not_ours`: the file is
    /// another program's, which audiolat never changes (said so).
    ResultsOrNewFile {
        /// The file is another program's database.
        not_ours: bool,
    },
    /// Use a new database file.
    NewFile,
    /// Restore the damaged file from a backup, or use a new database file.
    RestoreOrNewFile,
    /// Free space on its filesystem, or use a database file on another filesystem.
    FreeSpace,
    /// Wait for the process holding it locked, or use another database file.
    WaitForWriter,
    /// Fix the permissions of the file and its -wal/-shm files, run as their owner, or use
    /// a database file that can be written (`writing`) or read.
    FixPermissions {
        /// The database was to be written, not only read.
        writing: bool,
    },
    /// A file beside the database is another user's: run as its owner, fix its
    /// permissions, or use another database file.
    RunAsOwner,
    /// Use a database file that can be written, or fix its permissions.
    WritableFile,
    /// The path is a directory (`directory`) or not a regular file: name a file.
    FilePath {
        /// The path is a directory.
        directory: bool,
    },
    /// Create the missing directory, or use a database file in an existing one.
    ExistingDirectory,
    /// Use a database file on a local filesystem.
    LocalFilesystem,
    /// Record a run into the (empty) file first, or use a results database.
    RecordFirst,
    /// A command that records runs into it upgrades it (`first`: before this command can
    /// use it).
    UpgradeByRecording {
        /// Said as "upgrades it first".
        first: bool,
    },
    /// A name SQLite reads as other than a file (`:memory:`, a `file:` URI): name the
    /// database by its file's path (`./` before a file really so named).
    PlainPath,
    /// A PostgreSQL store that cannot be reached or used: start the server, or fix the
    /// URL (its user, host, port, database) or the user's rights there.
    ReachServer,
}

impl fmt::Display for Remedy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Remedy::ResultsOrNewFile { not_ours } => {
                f.write_str("use an audiolat results database or a new database file instead")?;
                if *not_ours {
                    f.write_str(" (audiolat never changes a database it did not make)")?;
                }
                Ok(())
            }
            Remedy::NewFile => f.write_str("use a new database file"),
            Remedy::RestoreOrNewFile => f.write_str(
                "restore it from a backup (`sqlite3 FILE .recover` may save its runs), or use a new database file",
            ),
            Remedy::FreeSpace => {
                f.write_str("free space there, or use a database file on another filesystem")
            }
            Remedy::WaitForWriter => {
                f.write_str("wait for it to finish (another audiolat?), or use another database file")
            }
            Remedy::FixPermissions { writing } => write!(
                f,
                "fix their permissions, run as their owner, or use a database file you can {}",
                if *writing { "write" } else { "read" }
            ),
            Remedy::RunAsOwner => f.write_str(
                "run as the user who owns it, fix its permissions, or use another database file",
            ),
            Remedy::WritableFile => {
                f.write_str("use a database file you can write, or fix its permissions")
            }
            Remedy::FilePath { directory: true } => f.write_str("give a file path"),
            Remedy::FilePath { directory: false } => f.write_str("give a path to a file"),
            Remedy::ExistingDirectory => {
                f.write_str("create it or use a database file in an existing directory")
            }
            Remedy::LocalFilesystem => f.write_str("use a database file on a local filesystem"),
            Remedy::RecordFirst => {
                f.write_str("record a run into it first, or use a results database")
            }
            Remedy::UpgradeByRecording { first } => write!(
                f,
                "a command that records runs into it upgrades it{}",
                if *first { " first" } else { "" }
            ),
            Remedy::PlainPath => f.write_str(
                "name the database by its file's path (a file really so named: put ./ before it)",
            ),
            Remedy::ReachServer => f.write_str(
                "check that the server runs and that the URL (postgres://USER@HOST[:PORT]/DBNAME) names a database this user may create tables in",
            ),
        }
    }
}
