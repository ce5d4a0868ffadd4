//! The ALSA stream's audio thread: the push loop that waits for a period, runs the
//! processor and writes the period, recovering from under-runs (see the
//! [`stream`](crate::alsa::stream) module docs).

use crate::alsa::format::Sample;
use crate::alsa::silence_alsa_lib;
use crate::audio::{DuplexStart, Io};
use crate::clock::monotonic_ns;
use crate::rt::{Policy, ThreadRt};
use crate::stream::{CycleRunner, CycleTiming, StreamShared};
use alsa::pcm::PCM;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The push loop's state, made by [`AlsaStream`](crate::alsa::stream::AlsaStream) when it
/// starts and moved to the audio thread.
pub(crate) struct Loop {
    /// The playback PCM, configured.
    pub(crate) playback: PCM,
    /// The capture PCM of a duplex stream.
    pub(crate) capture: Option<PCM>,
    /// Whether the two PCMs are linked (start together).
    pub(crate) linked: bool,
    /// Frames per period.
    pub(crate) period: usize,
    /// Frames in the buffer.
    pub(crate) buffer: usize,
    /// Playback channels (the processor's mono output goes to each).
    pub(crate) out_channels: usize,
    /// Capture channels (the first is the processor's input).
    pub(crate) in_channels: usize,
    /// The granted rate.
    pub(crate) rate: u32,
    /// The playback latency the stream reports, in frames.
    pub(crate) latency_frames: i64,
    /// Set by the owner to end the loop.
    pub(crate) stop: Arc<AtomicBool>,
    /// Counters and end reason shared with the owner.
    pub(crate) shared: Arc<StreamShared>,
    /// Under-run times for the owner.
    pub(crate) xruns: Option<rtrb::Producer<u64>>,
}

enum Step {
    Go,
    Xrun,
    Fail(String),
}

impl Loop {
    fn classify(&self, e: alsa::Error, what: &str) -> Step {
        match e.errno() {
            libc::EPIPE | libc::ESTRPIPE => Step::Xrun,
            libc::EAGAIN | libc::EINTR => Step::Go,
            _ => Step::Fail(format!("ALSA {what} failed: {e}")),
        }
    }

    /// Prepares, prefills with silence and starts both directions (in one call when
    /// linked; else the capture first, then the playback).
    fn restart<S: Sample>(&self, out: &alsa::pcm::IO<'_, S>, silence: &[S]) -> Result<(), String> {
        let _ = self.playback.drop();
        if let Some(c) = &self.capture {
            let _ = c.drop();
        }
        self.playback
            .prepare()
            .map_err(|e| format!("ALSA prepare failed: {e}"))?;
        if let Some(c) = &self.capture {
            if !self.linked {
                c.prepare()
                    .map_err(|e| format!("ALSA prepare failed: {e}"))?;
            }
        }
        let mut left = self.buffer;
        while left > 0 {
            let n = left.min(self.period);
            match out.writei(&silence[..n * self.out_channels]) {
                Ok(w) => left -= w,
                Err(e) if e.errno() == libc::EAGAIN => break,
                Err(e) => return Err(format!("ALSA prefill failed: {e}")),
            }
        }
        if let (Some(c), false) = (&self.capture, self.linked) {
            c.start()
                .map_err(|e| format!("ALSA capture start failed: {e}"))?;
        }
        self.playback
            .start()
            .map_err(|e| format!("ALSA start failed: {e}"))?;
        Ok(())
    }

    /// Capture position minus playback position, in frames, on the first period after a
    /// start (nothing read or written since the prefill, which filled the buffer): the
    /// capture's avail is its position, the playback's avail is its position. The
    /// playback is read before and after the capture, and the reading kept only when it
    /// did not move in between.
    fn start_skew(&self) -> Option<i64> {
        let capture = self.capture.as_ref()?;
        for _ in 0..8 {
            let before = self.playback.avail().ok()?;
            let captured = capture.avail().ok()?;
            let after = self.playback.avail().ok()?;
            if before == after {
                #[allow(clippy::unnecessary_cast)]
                return Some(captured as i64 - before as i64);
            }
        }
        None
    }

    /// Waits until a whole period can be read (duplex) or written (playback only).
    ///
    /// A partial period is never read: what is missing would then wait for `avail_min`,
    /// a whole period more, and the playback would run dry meanwhile (a driver whose
    /// pointer moves in timer ticks, such as snd-aloop, wakes its reader with more than
    /// a period ready and leaves partial periods behind every time).
    fn wait_period(&self) -> Step {
        let pcm = self.capture.as_ref().unwrap_or(&self.playback);
        let what = if self.capture.is_some() {
            "capture"
        } else {
            "playback"
        };
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Step::Go;
            }
            let step = match pcm.avail_update() {
                Ok(a) if a as usize >= self.period => return Step::Go,
                Ok(_) => match pcm.wait(Some(100)) {
                    Ok(_) => Step::Go,
                    Err(e) => self.classify(e, what),
                },
                Err(e) => self.classify(e, what),
            };
            if !matches!(step, Step::Go) {
                return step;
            }
        }
    }

    /// Reads one period (ready: see [`Loop::wait_period`]).
    fn read_period<S: Sample>(&self, io: &alsa::pcm::IO<'_, S>, raw: &mut [S]) -> Step {
        let ch = self.in_channels;
        let mut got = 0;
        while got < self.period {
            match io.readi(&mut raw[got * ch..self.period * ch]) {
                Ok(n) => got += n,
                Err(e) => match self.classify(e, "capture read") {
                    Step::Go => match self.wait_period() {
                        Step::Go if !self.stop.load(Ordering::Relaxed) => {}
                        Step::Go => return Step::Go,
                        other => return other,
                    },
                    other => return other,
                },
            }
        }
        Step::Go
    }

    /// The audio thread: a real-time loop (set-up before it; inside, waits, reads, the
    /// processor through its runner, conversions and writes, no allocation). Returns the
    /// runner (with its processor) when the stream stops or fails.
    pub(crate) fn run<S: Sample>(mut self, mut runner: CycleRunner, policy: Policy) -> CycleRunner {
        silence_alsa_lib();
        let _rt = ThreadRt::apply(&policy, None, 256 * 1024);
        let Some(mut xruns) = self.xruns.take() else {
            return runner;
        };
        let Ok(out) = self.playback.io_checked::<S>() else {
            self.shared
                .end("ALSA: the playback format changed after it was set");
            return runner;
        };
        let input = match &self.capture {
            Some(c) => match c.io_checked::<S>() {
                Ok(io) => Some(io),
                Err(_) => {
                    self.shared
                        .end("ALSA: the capture format changed after it was set");
                    return runner;
                }
            },
            None => None,
        };
        let p = self.period;
        let silence = vec![S::default(); p * self.out_channels.max(self.in_channels)];
        let mut out_f32 = vec![0.0f32; p];
        let mut in_f32 = vec![0.0f32; p];
        let mut out_raw = vec![S::default(); p * self.out_channels];
        let mut in_raw = vec![S::default(); p * self.in_channels.max(1)];
        let period_ns = p as f64 * 1e9 / f64::from(self.rate);
        if let Err(why) = self.restart(&out, &silence) {
            self.shared.end(&why);
            return runner;
        }
        // The latest start, until its first period has been checked, and the skew of
        // the attempt before it.
        let mut start = Some(DuplexStart {
            linked: self.linked,
            skew_frames: None,
            attempts: 1,
            starts: 1,
            steady_offset: false,
        });
        let mut previous_skew: Option<Option<i64>> = None;
        let mut starts: u32 = 1;
        let mut c: u64 = 0;
        let started_ns = monotonic_ns();
        let mut cycles_run: u64 = 0;
        while !self.stop.load(Ordering::Relaxed) {
            if self.ran_too_fast(started_ns, cycles_run) {
                break;
            }
            let mut step = self.wait_period();
            if matches!(step, Step::Go) && self.stop.load(Ordering::Relaxed) {
                break;
            }
            // The first period of a duplex start: how the two directions stand, and a
            // fresh start while the offset between them is an accident of the start.
            if let (Step::Go, Some(mut s)) = (&step, start) {
                if self.capture.is_some() {
                    s.skew_frames = self.start_skew();
                    if s.start_again(previous_skew) {
                        if let Err(why) = self.restart(&out, &silence) {
                            self.shared.end(&why);
                            break;
                        }
                        previous_skew = Some(s.skew_frames);
                        s.attempts += 1;
                        start = Some(s);
                        continue;
                    }
                    s.steady_offset =
                        s.skew_frames != Some(0) && previous_skew == Some(s.skew_frames);
                    self.shared.note_duplex_start(s);
                }
                previous_skew = None;
                start = None;
            }
            if let (Step::Go, Some(io)) = (&step, &input) {
                step = self.read_period(io, &mut in_raw);
            }
            match step {
                Step::Go => {}
                Step::Xrun => {
                    starts += 1;
                    start = self.xrun(&mut c, &out, &silence, &mut xruns, starts - 1);
                    previous_skew = None;
                    continue;
                }
                Step::Fail(why) => {
                    self.shared.end(&why);
                    break;
                }
            }
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
            // Periods processed (not restarts after under-runs, nor fresh starts).
            cycles_run += 1;
            let callback_ns = monotonic_ns();
            let nominal_ns = self.nominal_start_ns(callback_ns);
            if input.is_some() {
                first_channel_to_f32(&in_raw, self.in_channels, &mut in_f32);
            }
            let timing = CycleTiming {
                first_frame: c * p as u64,
                nominal_ns,
                period_ns,
                callback_ns,
                overran: false,
            };
            let mut io = Io {
                output: &mut out_f32,
                input: input.as_ref().map(|_| &in_f32[..]),
                note_ons: &[],
                midi_dropped: 0,
            };
            runner.run(timing, &mut io);
            f32_to_every_channel(&out_f32, self.out_channels, &mut out_raw);
            let failed = self.write_period(&out, &out_raw);
            c += 1;
            match failed {
                Some(Step::Xrun) => {
                    starts += 1;
                    start = self.xrun(&mut c, &out, &silence, &mut xruns, starts - 1);
                    previous_skew = None;
                }
                Some(Step::Fail(why)) => {
                    self.shared.end(&why);
                    break;
                }
                _ => {}
            }
        }
        let _ = self.playback.drop();
        if let Some(c) = &self.capture {
            let _ = c.drop();
        }
        runner
    }

    /// A device without a clock (the null PCM) takes and gives periods as fast as the
    /// loop can run: no figure from it means anything, and a probe would analyse without
    /// end. Past a second's worth, more than twice real time ends the stream (`true`).
    fn ran_too_fast(&self, started_ns: u64, cycles_run: u64) -> bool {
        let elapsed_ns = monotonic_ns().saturating_sub(started_ns) as f64;
        let frames_done = (cycles_run * self.period as u64) as f64;
        let frames_due = elapsed_ns * 1e-9 * f64::from(self.rate) + self.buffer as f64;
        if frames_done > f64::from(self.rate) && frames_done > 2.0 * frames_due {
            self.shared.end(&format!(
                "ALSA: the device ran {:.0}x faster than real time ({frames_done:.0} frames in {:.0} ms): it has no clock (the null PCM?); use a device that plays in real time",
                frames_done / (frames_due - self.buffer as f64).max(1.0),
                elapsed_ns * 1e-6
            ));
            return true;
        }
        false
    }

    /// Where the new frames land: the cycle's nominal start from the playback queue and
    /// the time it was read (see the module docs' timing model), else `callback_ns`.
    fn nominal_start_ns(&self, callback_ns: u64) -> u64 {
        match self.playback.status() {
            Ok(st) => {
                let ts = st.get_htstamp();
                // time_t and snd_pcm_sframes_t are 32 bits on some targets.
                #[allow(clippy::unnecessary_cast)]
                let (t, delay) = (
                    ts.tv_sec as i64 * 1_000_000_000 + ts.tv_nsec as i64,
                    st.get_delay() as i64,
                );
                let t = if t > 0 { t } else { callback_ns as i64 };
                (t - (self.latency_frames - delay) * 1_000_000_000 / i64::from(self.rate)).max(0)
                    as u64
            }
            Err(_) => callback_ns,
        }
    }

    /// Writes one period, waiting for room: `None` when written (or stopped), else the
    /// step that ended the write (an under-run or a failure).
    fn write_period<S: Sample>(&self, out: &alsa::pcm::IO<'_, S>, raw: &[S]) -> Option<Step> {
        let mut written = 0;
        while written < self.period && !self.stop.load(Ordering::Relaxed) {
            let step = match out.writei(&raw[written * self.out_channels..]) {
                Ok(n) => {
                    written += n;
                    Step::Go
                }
                Err(e) if e.errno() == libc::EAGAIN => match self.playback.wait(Some(100)) {
                    Ok(_) => Step::Go,
                    Err(e) => self.classify(e, "playback wait"),
                },
                Err(e) => self.classify(e, "playback write"),
            };
            if !matches!(step, Step::Go) {
                return Some(step);
            }
        }
        None
    }

    /// An under-run or over-run: counted with its time, then the stream restarts and its
    /// position jumps past the lost buffer. Returns the new start (the stream's
    /// `starts + 1`-th), to check on its first period.
    fn xrun<S: Sample>(
        &self,
        c: &mut u64,
        out: &alsa::pcm::IO<'_, S>,
        silence: &[S],
        xruns: &mut rtrb::Producer<u64>,
        starts: u32,
    ) -> Option<DuplexStart> {
        self.shared.xruns.fetch_add(1, Ordering::Relaxed);
        let _ = xruns.push(monotonic_ns());
        *c += (self.buffer / self.period) as u64 + 1;
        if let Err(why) = self.restart(out, silence) {
            self.shared.end(&why);
            self.stop.store(true, Ordering::SeqCst);
        }
        Some(DuplexStart {
            linked: self.linked,
            skew_frames: None,
            attempts: 1,
            starts: starts + 1,
            steady_offset: false,
        })
    }
}

/// The first channel of interleaved `raw` samples as f32. Real-time safe.
fn first_channel_to_f32<S: Sample>(raw: &[S], channels: usize, mono: &mut [f32]) {
    for (i, x) in mono.iter_mut().enumerate() {
        *x = raw[i * channels].to_f32();
    }
}

/// `mono` converted and copied to each of `channels` interleaved channels. Real-time safe.
fn f32_to_every_channel<S: Sample>(mono: &[f32], channels: usize, raw: &mut [S]) {
    for (i, &x) in mono.iter().enumerate() {
        let s = S::from_f32(x);
        for ch in 0..channels {
            raw[i * channels + ch] = s;
        }
    }
}
