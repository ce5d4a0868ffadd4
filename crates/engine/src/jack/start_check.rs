//! The JACK client's own estimate of each cycle's start, and the check of JACK's.
//!
//! JACK reports a cycle's start (`jack_get_cycle_times`: `current_usecs`) from its
//! delay-locked loop, and jackd2 1.9.21 does not restart that loop after an xrun: the
//! driver (`JackTimedDriver::ProcessWait` for the dummy driver; ALSA restarts the device)
//! calls `JackEngine::NotifyXRun` -> `JackEngineControl::ResetFrameTime` ->
//! `JackFrameTimer::ResetFrameTime`, which moves the current wake-up to "now" but keeps
//! the stale predicted next wake-up, and the next `IncFrameTimeAux` takes that stale
//! prediction as the cycle's start and corrects it by a loop whose bandwidth is 1/8 Hz.
//! The driver meanwhile restarts its schedule from "now". So after every xrun JACK's
//! cycle start is off by the time the driver fell behind (tens of milliseconds under
//! load) and swings back over seconds, overshooting: callbacks appear to start long after
//! their cycle, or before it.
//!
//! [`StartCheck`] keeps an estimate that needs nothing from JACK but the frame count: on
//! the frame clock every cycle starts one period after the one before, and a callback
//! never starts before its cycle, so each callback bounds every cycle's start from above:
//! cycle `k` started at most `callback_j + (frames_k - frames_j) * frame_period`. The
//! least of these bounds over the cycles since the last discontinuity (the lower envelope
//! of the callbacks, let advance slightly faster than the nominal rate to follow the two
//! clocks' drift: [`RATE_ALLOWANCE`]) is the estimate: it is the start plus the least
//! wake-up delay among those cycles, so lateness measured on it is short by that. It only
//! holds between discontinuities (the stream's phase moves at an xrun, a jump in the
//! frame count, or wherever a callback comes more than a period after the estimate), so
//! it starts again at each one and the start is not known until [`SETTLE_CYCLES`] cycles
//! have been seen. JACK's start is used where it agrees with the estimate (it is what
//! `jack_frames_to_time` gives, and smoother); where it does not, the estimate is, and
//! [`TimingSource`] says which one each cycle got.
//!
//! Real-time safe: arithmetic on a few numbers, no allocation.

use crate::audio::{CheckedStart, TimingSource};

/// How much faster than the nominal rate the envelope's start may advance, as a
/// fraction. The frame clock is the driver's: CLOCK_MONOTONIC itself for `-d dummy`, a
/// sound card's crystal for `-d alsa` (commonly within 100 ppm of its nominal rate, a
/// cheap one further off), and CLOCK_MONOTONIC is slewed by NTP by up to 500 ppm. A
/// frame clock running slower than nominal by more than the allowance would leave the
/// envelope ahead of the cycles' starts (lateness overstated, growing); 1000 ppm covers
/// both. The price: a callback's bound goes stale by the allowance (1 us per ms), so the
/// envelope is the least wake-up delay over the last stretch of cycles rather than over
/// all since the last discontinuity (a stretch of 40 ms when the delays vary by 40 us).
pub(crate) const RATE_ALLOWANCE: f64 = 1e-3;

/// Cycles JACK's start must agree in a row before it is taken again once it disagreed:
/// a source that flips from cycle to cycle would move the notes a fixed policy placed on
/// one cycle's time line and rendered on the next.
pub(crate) const RETRUST_CYCLES: usize = 32;

/// Cycles after a discontinuity before a start is known: the envelope of fewer is mostly
/// one callback's own time.
pub(crate) const SETTLE_CYCLES: usize = 4;

/// How far JACK's start may lie after the envelope and still agree, ns: JACK's clock is
/// read in whole microseconds and its offset to CLOCK_MONOTONIC is measured to about a
/// microsecond. A start later than that would put a callback before its cycle.
pub(crate) const AHEAD_TOLERANCE_NS: f64 = 5_000.0;

/// How far JACK's start may lie before the envelope and still agree, ns. The envelope
/// is the start plus the least wake-up delay among its recent callbacks (the client is
/// woken by the driver after the driver's own wake-up, which is JACK's start), a few to
/// some tens of microseconds on an idle machine; JACK's loop, just started, trails by a
/// few tens more for a second or two. A wake-up delay is a time, whatever the rate.
pub(crate) const BEHIND_TOLERANCE_NS: f64 = 100_000.0;

/// JACK's view of one cycle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ServerStart {
    /// JACK's start of the cycle, CLOCK_MONOTONIC ns.
    pub(crate) ns: u64,
    /// The time JACK says the cycle spans, ns.
    pub(crate) period_ns: f64,
}

/// One cycle as the process callback sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Observed {
    /// When the callback started, CLOCK_MONOTONIC ns.
    pub(crate) callback_ns: u64,
    /// Stream position of the cycle's first frame.
    pub(crate) first_frame: u64,
    /// Frames in the cycle.
    pub(crate) frames: u32,
    /// Xruns the server had reported when the callback started.
    pub(crate) xruns: u64,
    /// JACK's start, when it gave one.
    pub(crate) server: Option<ServerStart>,
}

/// The per-stream estimator; see the module's documentation.
pub(crate) struct StartCheck {
    frame_ns: f64,
    /// The envelope: the start of the cycle at this frame, CLOCK_MONOTONIC ns; `None`
    /// just after a discontinuity.
    envelope: Option<(f64, u64)>,
    /// Cycles seen since the last discontinuity.
    seen: usize,
    xruns: u64,
    next_frame: Option<u64>,
    /// JACK's start is used: it agreed at the last check.
    server_agrees: bool,
    /// Consecutive cycles JACK's start agreed while the envelope was used.
    agreeing_run: usize,
    /// The last cycle's callback came more than a period after the start the stream's
    /// phase predicted for it: see [`StartCheck::overran`].
    overran: bool,
}

impl StartCheck {
    /// An estimator for a stream at `rate_hz`.
    pub(crate) fn new(rate_hz: u32) -> StartCheck {
        StartCheck {
            frame_ns: 1e9 / f64::from(rate_hz.max(1)),
            envelope: None,
            seen: 0,
            xruns: 0,
            next_frame: None,
            server_agrees: true,
            agreeing_run: 0,
            overran: false,
        }
    }

    /// Whether the cycle last checked had its callback start more than a period after
    /// the start the stream's phase predicted for it: its buffer was late (an under-run)
    /// even though, the phase having moved, its own start is not known.
    pub(crate) fn overran(&self) -> bool {
        self.overran
    }

    /// The envelope's start of the cycle at `frame` from the callbacks before it: the
    /// least bound they put on it, let advance by [`RATE_ALLOWANCE`] faster than the
    /// nominal rate.
    fn predicted(&self, frame: u64) -> Option<f64> {
        let (ns, at) = self.envelope?;
        Some(ns + (frame as f64 - at as f64) * self.frame_ns * (1.0 + RATE_ALLOWANCE))
    }

    /// Whether the callback is more than a period after the start the envelope
    /// predicts for its cycle: the driver restarted its schedule later, or (in an
    /// unbroken stream) an under-run the server reports.
    fn late_past_phase(&self, o: &Observed) -> bool {
        let period_ns = f64::from(o.frames) * self.frame_ns;
        self.predicted(o.first_frame)
            .is_some_and(|e| o.callback_ns as f64 > e + period_ns)
    }

    /// Whether the stream's phase may have moved before this cycle, besides a late
    /// callback ([`StartCheck::late_past_phase`]): an xrun or a jump in the frame count.
    fn broken(&self, o: &Observed) -> bool {
        o.xruns != self.xruns || self.next_frame.is_some_and(|f| f != o.first_frame)
    }

    /// Takes one cycle and returns its checked start, `None` while it is not known.
    pub(crate) fn check(&mut self, o: Observed) -> Option<CheckedStart> {
        self.overran = self.late_past_phase(&o);
        if self.overran || self.broken(&o) {
            self.envelope = None;
            self.seen = 0;
            // Just after a discontinuity JACK's start is least to be trusted (its loop
            // keeps the old phase): it must agree RETRUST_CYCLES times first.
            self.server_agrees = false;
            self.agreeing_run = 0;
        }
        self.xruns = o.xruns;
        self.next_frame = Some(o.first_frame + u64::from(o.frames));
        // This callback bounds its own cycle's start too.
        let callback = o.callback_ns as f64;
        let envelope = self
            .predicted(o.first_frame)
            .map_or(callback, |p| p.min(callback));
        self.envelope = Some((envelope, o.first_frame));
        self.seen += 1;
        if self.seen < SETTLE_CYCLES {
            return None;
        }
        let agrees = o.server.filter(|s| {
            let d = s.ns as f64 - envelope;
            (-BEHIND_TOLERANCE_NS..=AHEAD_TOLERANCE_NS).contains(&d)
        });
        if agrees.is_some() && !self.server_agrees {
            self.agreeing_run += 1;
            if self.agreeing_run >= RETRUST_CYCLES {
                self.server_agrees = true;
            }
        } else if agrees.is_none() {
            self.server_agrees = false;
            self.agreeing_run = 0;
        }
        Some(match agrees {
            Some(s) if self.server_agrees => CheckedStart {
                ns: s.ns,
                period_ns: s.period_ns,
                source: TimingSource::Backend,
            },
            _ => CheckedStart {
                ns: envelope.round() as u64,
                period_ns: f64::from(o.frames) * self.frame_ns,
                source: TimingSource::Callbacks,
            },
        })
    }
}

#[cfg(test)]
mod tests;
