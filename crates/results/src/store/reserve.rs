//! The full-disk reserve: a file of [`RESERVE_BYTES`] kept beside the database, removed
//! when the filesystem fills so a run can still be closed with its summary and reason.

use super::error::StoreError;
use super::handle::Store;
use super::system::process_alive;
use std::path::{Path, PathBuf};

/// The space kept beside a database for its runs' closing writes (`FILE-reserve`): when
/// the filesystem fills mid-run, [`Store::closing`] removes it so the run's summary and
/// its real end reason can still be written.
pub const RESERVE_BYTES: u64 = 1 << 20;

/// Free space a command that records runs needs at open, besides the reserve.
pub(super) const MIN_FREE_BYTES: u64 = 256 << 10;

/// Bytes free for an unprivileged writer on the filesystem of `dir` (`None`: unknown).
pub(super) fn free_bytes(dir: &Path) -> Option<u64> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: an all-zero statvfs is a valid out value; `c` is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid path and out pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_bavail as u64 * st.f_frsize as u64)
}

/// The reserve file of the database at `path`.
pub(super) fn reserve_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-reserve");
    PathBuf::from(name)
}

/// Makes the reserve at `reserve` unless it is there whole, written first to `tmp` (this
/// process's own name) and renamed over, so another process's reserve is never truncated
/// or removed: only `tmp` is, when it could not be written. Not made when `free` (the
/// filesystem's free bytes) leaves no room for it beside what an open needs: a running
/// process's [`Store::closing`] may just have freed that space for its retry.
pub(super) fn make_reserve(reserve: &Path, tmp: &Path, free: Option<u64>) -> std::io::Result<bool> {
    if std::fs::metadata(reserve).is_ok_and(|m| m.len() >= RESERVE_BYTES) {
        return Ok(false);
    }
    if free.is_some_and(|f| f < RESERVE_BYTES + MIN_FREE_BYTES) {
        return Ok(false);
    }
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(tmp)?;
    let made = (|| {
        // Written, not sized: a sparse file would free nothing when removed.
        let block = vec![0u8; 64 << 10];
        for _ in 0..RESERVE_BYTES / block.len() as u64 {
            f.write_all(&block)?;
        }
        f.sync_all()?;
        std::fs::rename(tmp, reserve)
    })();
    if made.is_err() {
        let _ = std::fs::remove_file(tmp);
    }
    made.map(|()| true)
}

/// Removes the half-written reserves (`<reserve>.tmp.<pid>.<n>`) of processes killed
/// while they wrote them.
pub(super) fn remove_dead_reserve_tmps(reserve: &Path) {
    let (Some(dir), Some(name)) = (reserve.parent(), reserve.file_name()) else {
        return;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let prefix = format!("{}.tmp.", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(pid) = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|rest| rest.split('.').next())
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        if !process_alive(i64::from(pid)) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

impl Store {
    /// Makes the reserve beside the database when it is missing (the last run that
    /// needed it used it), once per handle: when the database takes its first run or
    /// group, so a database audiolat refuses gets none. Best effort: without room for
    /// it, runs go on without one.
    pub(super) fn keep_reserve(&self) {
        if self.db.is_postgres() || self.reserve_kept.replace(true) {
            return;
        }
        let dir = self
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let mut tmp = reserve_path(&self.path).into_os_string();
        tmp.push(format!(
            ".tmp.{}.{}",
            std::process::id(),
            MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        remove_dead_reserve_tmps(&reserve_path(&self.path));
        let _ = make_reserve(&reserve_path(&self.path), Path::new(&tmp), free_bytes(dir));
    }

    /// A write that closes a run (its summary, its status and end reason). When the
    /// filesystem is full, the reserve beside the database is removed to make room and
    /// the write is tried once more; the reserve is made again by the next open that
    /// finds room for it. A run's closing write that still cannot be made (no reserve
    /// left, a lock held past [`LOCK_WAIT`](super::unpushed::LOCK_WAIT)) moves the run to a local
    /// file (see `unpushed`).
    pub fn closing<T>(
        &self,
        mut write: impl FnMut() -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let was = self.closing.replace(true);
        let out = match write() {
            Err(e) if e.is_disk_full() => {
                if std::fs::remove_file(reserve_path(&self.path)).is_ok() {
                    write()
                } else {
                    Err(e)
                }
            }
            other => other,
        };
        self.closing.set(was);
        out
    }
}
