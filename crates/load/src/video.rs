//! The `video` load: the Tessellation study's two video players, each showing 30 frames
//! per second. A player streams one 1920 x 1080 RGBA frame (8.3 MB) per frame period from
//! a 64 MiB "file" in memory into its frame buffer and reads it back, on absolute
//! deadlines: periodic bursts of memory traffic that pollute the shared caches and the
//! memory interconnect, as the study's players did.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Bytes of one frame: 1920 x 1080 pixels x 4 bytes.
pub const FRAME_BYTES: usize = 1920 * 1080 * 4;
/// Frames per second of each player.
pub const FRAMES_PER_SECOND: u32 = 30;
/// The in-memory "file" each player streams from.
pub const FILE_BYTES: usize = 64 << 20;

/// How a player waits for its next frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// Sleeps to the next 30 fps frame time (woken by its timer: an event-triggered or
    /// best-effort player).
    Timer,
    /// `sched_yield`s after each frame: under SCHED_DEADLINE that ends the job, and the
    /// next starts on the next period boundary (a time-triggered player, one frame per
    /// period).
    YieldToPeriod,
}

/// Runs `players` players until `stop` is raised; `frames` counts the frames shown.
/// Each player's thread calls `thread_start` once its buffers are filled (to take its
/// cell's policy).
pub fn run_until(
    players: usize,
    stop: &AtomicBool,
    frames: &AtomicU64,
    pace: Pace,
    thread_start: &(dyn Fn() + Sync),
) {
    std::thread::scope(|scope| {
        for player in 0..players.max(1) {
            scope.spawn(move || {
                let file: Vec<u8> = (0..FILE_BYTES).map(|i| (i * 31 + player) as u8).collect();
                let mut frame = vec![0u8; FRAME_BYTES];
                // The policy once the player is ready: filling its file is not a frame.
                thread_start();
                let period = Duration::from_secs(1) / FRAMES_PER_SECOND;
                let start = Instant::now();
                let mut n: u64 = 0;
                while !stop.load(Ordering::Relaxed) {
                    let offset = (n as usize * FRAME_BYTES) % (FILE_BYTES - FRAME_BYTES);
                    frame.copy_from_slice(&file[offset..offset + FRAME_BYTES]);
                    // Read it back as a display would, so the copy cannot be skipped.
                    let checksum = frame
                        .iter()
                        .step_by(64)
                        .fold(0u8, |a, &b| a.wrapping_add(b));
                    std::hint::black_box(checksum);
                    frames.fetch_add(1, Ordering::Relaxed);
                    n += 1;
                    if pace == Pace::YieldToPeriod {
                        // SAFETY: no preconditions.
                        unsafe { libc::sched_yield() };
                        continue;
                    }
                    let due = start + period * n as u32;
                    let now = Instant::now();
                    if due > now {
                        std::thread::sleep(due - now);
                    }
                }
            });
        }
    });
}
