//! Where triggers come from: a timer thread, key presses on a raw terminal, MIDI, a GPIO line.

use super::*;

pub(super) fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Sleeps until `t_ns` in steps of at most 50 ms; false when `stop` was raised.
pub(super) fn sleep_until_or_stop(t_ns: u64, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = monotonic_ns();
        if now >= t_ns {
            return true;
        }
        sleep_until_ns(t_ns.min(now + 50_000_000));
    }
}

/// Stamps a trigger (raising the GPIO line around the stamp) and hands it over.
pub(super) fn fire(
    seq: u64,
    gpio: Option<&GpioLine>,
    tx: &mut rtrb::Producer<Trigger>,
    counters: &Counters,
) -> u64 {
    let before = monotonic_ns();
    let t_ns = match gpio {
        Some(line) => {
            let _ = line.set(true);
            (before + monotonic_ns()) / 2
        }
        None => before,
    };
    if tx.push(Trigger { seq, t_ns }).is_err() {
        counters.triggers_dropped.fetch_add(1, Ordering::Relaxed);
    }
    t_ns
}

pub(super) struct RawTerminal {
    pub(super) fd: i32,
    pub(super) saved: Option<libc::termios>,
}

impl RawTerminal {
    pub(super) fn new(fd: i32) -> RawTerminal {
        // SAFETY: isatty/tcgetattr/tcsetattr on a file descriptor with valid out-pointers.
        unsafe {
            if libc::isatty(fd) == 0 {
                return RawTerminal { fd, saved: None };
            }
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(fd, &mut t) != 0 {
                return RawTerminal { fd, saved: None };
            }
            let saved = t;
            t.c_lflag &= !(libc::ICANON | libc::ECHO);
            t.c_cc[libc::VMIN] = 1;
            t.c_cc[libc::VTIME] = 0;
            libc::tcsetattr(fd, libc::TCSANOW, &t);
            RawTerminal {
                fd,
                saved: Some(saved),
            }
        }
    }
}

impl Drop for RawTerminal {
    fn drop(&mut self) {
        if let Some(saved) = self.saved {
            // SAFETY: restoring the attributes read in `new`.
            unsafe { libc::tcsetattr(self.fd, libc::TCSANOW, &saved) };
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn trigger_thread(
    config: &EventConfig,
    period_ns: f64,
    start_ns: u64,
    mut tx: rtrb::Producer<Trigger>,
    gpio: Option<GpioLine>,
    counters: &Counters,
    done: &AtomicBool,
    input_ended: &AtomicBool,
) -> ThreadRt {
    let rt = ThreadRt::apply(&config.trigger_policy, None, 64 * 1024);
    let note_ns = (config.note_ms * 1e6) as u64;
    match config.source {
        TriggerSource::Timer => {
            let mut rng = config.seed;
            let mut next = start_ns + (config.warmup_ms * 1e6) as u64;
            for seq in 0..config.triggers {
                let jitter = (splitmix(&mut rng) >> 11) as f64 / (1u64 << 53) as f64;
                next += (config.spacing_ms * 1e6 + jitter * period_ns) as u64;
                if !sleep_until_or_stop(next, done) {
                    break;
                }
                let t = fire(seq, gpio.as_ref(), &mut tx, counters);
                if let Some(line) = gpio.as_ref() {
                    if sleep_until_or_stop(t + note_ns, done) {
                        let _ = line.set(false);
                    }
                }
            }
        }
        TriggerSource::Key => {
            let _raw = RawTerminal::new(0);
            let mut seq = 0;
            while seq < config.triggers && !done.load(Ordering::Relaxed) {
                let mut pfd = libc::pollfd {
                    fd: 0,
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                let ready = unsafe { libc::poll(&mut pfd, 1, 50) };
                if ready <= 0 {
                    continue;
                }
                let mut byte = 0u8;
                // SAFETY: reading one byte into a valid buffer.
                let got = unsafe { libc::read(0, (&mut byte as *mut u8).cast(), 1) };
                if got <= 0 || byte == b'q' || byte == 0x1b || byte == 0x04 {
                    input_ended.store(true, Ordering::SeqCst);
                    break;
                }
                let t = fire(seq, gpio.as_ref(), &mut tx, counters);
                seq += 1;
                if let Some(line) = gpio.as_ref() {
                    if sleep_until_or_stop(t + note_ns, done) {
                        let _ = line.set(false);
                    }
                }
            }
        }
        TriggerSource::Midi => {}
    }
    if let Some(line) = gpio.as_ref() {
        let _ = line.set(false);
    }
    rt
}
