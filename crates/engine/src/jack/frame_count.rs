//! audiolat's own count of a JACK client's frames, continuous where the server's is not.
//!
//! A JACK client is told each cycle's first frame on the server's 32-bit frame counter
//! (`jack_get_cycle_times`). jackd counts one timeline for the life of the server; only
//! its 32-bit wrap breaks it. PipeWire's libjack (0.3.65) does not: a cycle's frame is
//! the position of the driver that ran it, and a client's first cycles of a session can
//! run on another driver than the sink it links to (PipeWire's `Dummy-Driver`, while the
//! links are made) or on a driver whose graph was stopped and restarted (WirePlumber
//! suspends an idle sink; its position starts again from where it was, or from 0).
//! Measured here on a running PipeWire (null sink, quantum 1024): the first two callbacks
//! of a session both reported frame 25600 and the same cycle start, then the third
//! reported 2048 (a step back); in the next session on that server, 52224 twice, then
//! 319488 (a jump of 267264 frames in 22 ms). A probe that schedules by frames took the
//! jump for 5.6 s of signal and ended its measurement after three cycles.
//!
//! [`FrameCount`] follows the server's count where it advances by the last cycle's
//! frames (the 32-bit wrap included) or jumps forward by no more than the time elapsed
//! (cycles the server really skipped: a gap the probes record). Any other step -- back,
//! by less than a cycle, or forward beyond the elapsed time -- is a restart of the
//! server's count, not audio time: the count goes on from the cycle before by the whole
//! periods that elapsed by the server's cycle starts (at least one), a cycle that repeated
//! the start of the one before dated by its callback.
//!
//! Real-time safe: arithmetic on a few numbers.

/// The last cycle counted.
#[derive(Clone, Copy, Debug)]
struct Last {
    count: u64,
    low: u32,
    frames: u32,
    nominal_ns: u64,
    callback_ns: u64,
    /// When it started, best known: the server's cycle start, or its callback when the
    /// server repeated the cycle before's start (a stale report: see `next`).
    start_ns: u64,
}

/// See the module docs.
#[derive(Clone, Debug)]
pub(crate) struct FrameCount {
    rate_hz: f64,
    last: Option<Last>,
    restarts: u64,
}

impl FrameCount {
    pub(crate) fn new(rate_hz: u32) -> FrameCount {
        FrameCount {
            rate_hz: f64::from(rate_hz),
            last: None,
            restarts: 0,
        }
    }

    /// The restarts of the server's count seen so far.
    pub(crate) fn restarts(&self) -> u64 {
        self.restarts
    }

    /// The count of the cycle the server numbers `low`, of `frames` frames, that started
    /// at `nominal_ns` by the server's clock and whose callback came at `callback_ns`
    /// (both CLOCK_MONOTONIC).
    pub(crate) fn next(&mut self, low: u32, frames: u32, nominal_ns: u64, callback_ns: u64) -> u64 {
        let count = match self.last {
            None => u64::from(low),
            Some(l) => {
                let step = low.wrapping_sub(l.low);
                let frames_in = |ns: u64| ns as f64 * self.rate_hz / 1e9;
                let by_server = frames_in(nominal_ns.saturating_sub(l.nominal_ns));
                // A jump is believed up to the time elapsed by either clock (a late
                // callback included), and one cycle more.
                let elapsed = by_server.max(frames_in(callback_ns.saturating_sub(l.callback_ns)));
                let forward = step < 1 << 31 && step >= l.frames;
                if forward && f64::from(step) <= elapsed + f64::from(l.frames) {
                    l.count + u64::from(step)
                } else {
                    self.restarts += 1;
                    // The server's own cycle starts, not the callbacks' wake-ups: these
                    // are late by a scheduling delay that is no skipped cycle. From the
                    // cycle before's real start: when that one repeated the start before
                    // it, the stale start would count its distance as cycles skipped.
                    let since = frames_in(nominal_ns.saturating_sub(l.start_ns));
                    let periods = (since / f64::from(l.frames.max(1))).round().max(1.0);
                    l.count + periods as u64 * u64::from(l.frames)
                }
            }
        };
        // PipeWire's libjack can hand a session's second cycle the first one's frame and
        // start again (see the module docs): that cycle ran at its callback.
        let stale = self.last.is_some_and(|l| nominal_ns <= l.nominal_ns);
        self.last = Some(Last {
            count,
            low,
            frames,
            nominal_ns,
            callback_ns,
            start_ns: if stale { callback_ns } else { nominal_ns },
        });
        count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_steady_count_is_the_servers_across_its_32_bit_wrap() {
        let mut c = FrameCount::new(48000);
        let start = u32::MAX - 1023;
        assert_eq!(c.next(start, 1024, 0, 1), u64::from(start));
        // 1024 frames on: the 32-bit counter wrapped to 0.
        assert_eq!(c.next(0, 1024, 21_333_333, 21_333_334), 1 << 32);
        assert_eq!(c.next(1024, 1024, 42_666_666, 42_666_667), (1 << 32) + 1024);
        assert_eq!(c.restarts(), 0);
    }

    #[test]
    fn skipped_cycles_the_time_shows_are_kept_as_a_gap() {
        let mut c = FrameCount::new(48000);
        c.next(1000, 256, 0, 0);
        // Three cycles skipped: 4 x 256 frames in 21.3 ms.
        assert_eq!(c.next(2024, 256, 21_333_333, 21_400_000), 2024);
        assert_eq!(c.restarts(), 0);
    }

    /// What PipeWire 0.3.65's libjack reported to a session on a running PipeWire (see
    /// the module docs): the same cycle twice, then a step back, or a jump far beyond the
    /// time elapsed.
    #[test]
    fn pipewires_restarted_counts_go_on_by_the_time_elapsed() {
        let mut c = FrameCount::new(48000);
        let t0 = 63_997_999_770_226;
        assert_eq!(c.next(25600, 1024, t0, t0 + 42_000), 25600);
        // The same cycle again, 1.7 ms later: one cycle on, at least.
        assert_eq!(c.next(25600, 1024, t0, t0 + 1_710_000), 26624);
        // A step back to the sink's own count, one quantum later.
        let t2 = t0 + 23_004_000;
        assert_eq!(c.next(2048, 1024, t2, t2 + 35_000), 27648);
        assert_eq!(c.next(3072, 1024, t2 + 21_333_000, t2 + 21_370_000), 28672);
        assert_eq!(c.restarts(), 2);

        let mut c = FrameCount::new(48000);
        c.next(52224, 1024, t0, t0);
        c.next(52224, 1024, t0, t0 + MS);
        // 267264 frames on in 22.45 ms.
        assert_eq!(
            c.next(319_488, 1024, t0 + 22_454_000, t0 + 22_495_000),
            54272
        );
        assert_eq!(
            c.next(320_512, 1024, t0 + 43_787_000, t0 + 43_800_000),
            55296
        );
        assert_eq!(c.restarts(), 2);
    }

    /// Seen on a running PipeWire at quantum 2048 (one run in three or so): the second
    /// callback repeats the first one's frame and start 27.7 ms late, and the third,
    /// 42.6 ms after that callback, starts 70.3 ms after the stale start. Dated from the
    /// stale start, the third was counted two periods on: a skipped cycle, and the
    /// min-buffer search called 2048 frames failing on a loop that ran clean.
    #[test]
    fn a_repeated_cycle_is_dated_by_its_callback_and_skips_nothing() {
        let mut c = FrameCount::new(48000);
        let t = 24_463_987_628_188;
        assert_eq!(c.next(4096, 2048, t, t + 73_518), 4096);
        assert_eq!(c.next(4096, 2048, t, t + 27_804_523), 6144);
        assert_eq!(c.next(4096, 2048, t + 70_341_000, t + 70_410_138), 8192);
        assert_eq!(c.next(6144, 2048, t + 113_008_000, t + 113_095_550), 10240);
        assert_eq!(c.next(8192, 2048, t + 155_674_000, t + 155_886_223), 12288);
        assert_eq!(c.restarts(), 2);
    }

    #[test]
    fn a_restart_after_the_graph_stood_still_keeps_the_time_it_stood() {
        let mut c = FrameCount::new(48000);
        c.next(10_000, 128, 0, 0);
        // The graph stopped for 100 ms (37.5 periods) and restarted its count at 0.
        assert_eq!(
            c.next(0, 128, 100 * MS, 100 * MS + 50_000),
            10_000 + 38 * 128
        );
        // A restart whose callback came late by more than a cycle skipped nothing.
        assert_eq!(c.next(7, 128, 102_666_666, 106 * MS), 10_000 + 39 * 128);
        assert_eq!(c.restarts(), 2);
    }
}
