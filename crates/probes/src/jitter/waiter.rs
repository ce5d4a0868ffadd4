//! How the measuring thread waits for its deadlines: `clock_nanosleep`, a `timerfd` or a POSIX timer's signal.

use super::*;

pub(super) enum Waiter {
    Nanosleep,
    Timerfd {
        fd: i32,
    },
    Signal {
        timer: libc::timer_t,
        set: libc::sigset_t,
    },
}

pub(super) fn timer_signal() -> i32 {
    libc::SIGRTMIN() + 1
}

pub(super) fn itimerspec(start_ns: u64, period_ns: u64) -> libc::itimerspec {
    libc::itimerspec {
        it_interval: engine::clock::timespec_from_ns(period_ns),
        it_value: engine::clock::timespec_from_ns(start_ns),
    }
}

impl Waiter {
    pub(super) fn new(mode: WakeMode) -> Result<Waiter, JitterError> {
        match mode {
            WakeMode::Nanosleep => Ok(Waiter::Nanosleep),
            WakeMode::Timerfd => {
                // SAFETY: plain syscall.
                let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
                if fd < 0 {
                    return Err(JitterError::Timer {
                        what: "timerfd_create",
                        source: std::io::Error::last_os_error(),
                    });
                }
                Ok(Waiter::Timerfd { fd })
            }
            WakeMode::Signal => {
                // SAFETY: sigset_t is plain data; the calls initialise and fill it.
                let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
                // SAFETY: valid set pointer; blocking the timer's signal in this thread
                // so that sigwaitinfo receives it instead of a handler.
                unsafe {
                    libc::sigemptyset(&mut set);
                    libc::sigaddset(&mut set, timer_signal());
                    libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
                }
                // SAFETY: sigevent is plain data.
                let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
                sev.sigev_notify = libc::SIGEV_THREAD_ID;
                sev.sigev_signo = timer_signal();
                // SAFETY: gettid has no preconditions.
                sev.sigev_notify_thread_id = unsafe { libc::gettid() };
                let mut timer: libc::timer_t = std::ptr::null_mut();
                // SAFETY: valid sigevent and out pointer.
                let rc = unsafe { libc::timer_create(libc::CLOCK_MONOTONIC, &mut sev, &mut timer) };
                if rc != 0 {
                    return Err(JitterError::Timer {
                        what: "timer_create",
                        source: std::io::Error::last_os_error(),
                    });
                }
                Ok(Waiter::Signal { timer, set })
            }
        }
    }

    /// Arms the periodic timer with its first expiry at `start_ns`.
    pub(super) fn arm(&mut self, start_ns: u64, period_ns: u64) -> Result<(), JitterError> {
        let spec = itimerspec(start_ns, period_ns);
        match self {
            Waiter::Nanosleep => Ok(()),
            Waiter::Timerfd { fd } => {
                // SAFETY: valid fd and itimerspec.
                let rc = unsafe {
                    libc::timerfd_settime(*fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut())
                };
                if rc != 0 {
                    return Err(JitterError::Timer {
                        what: "timerfd_settime",
                        source: std::io::Error::last_os_error(),
                    });
                }
                Ok(())
            }
            Waiter::Signal { timer, set } => {
                // SAFETY: valid timer and itimerspec.
                let rc = unsafe {
                    libc::timer_settime(*timer, libc::TIMER_ABSTIME, &spec, std::ptr::null_mut())
                };
                if rc != 0 {
                    return Err(JitterError::Timer {
                        what: "timer_settime",
                        source: std::io::Error::last_os_error(),
                    });
                }
                // Discard a signal left pending by an earlier arming.
                let zero = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                // SAFETY: valid set and timeout; a null info pointer is allowed.
                while unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &zero) } > 0 {}
                Ok(())
            }
        }
    }

    /// Waits for the deadline; returns how many timer expirations were consumed (≥ 1),
    /// or `None` when [`wake_signal`] interrupted the wait.
    #[inline]
    pub(super) fn wait(&mut self, deadline_ns: u64) -> Option<u64> {
        match self {
            Waiter::Nanosleep => {
                engine::clock::sleep_until_ns_interruptible(deadline_ns).then_some(1)
            }
            Waiter::Timerfd { fd } => {
                let mut expirations: u64 = 0;
                // SAFETY: reading 8 bytes into a u64 from a timerfd.
                let n = unsafe {
                    libc::read(
                        *fd,
                        (&mut expirations as *mut u64).cast(),
                        std::mem::size_of::<u64>(),
                    )
                };
                if n == 8 {
                    Some(expirations.max(1))
                } else {
                    // EINTR: the wake signal (a valid armed timerfd has no other error).
                    None
                }
            }
            Waiter::Signal { timer, set } => {
                // SAFETY: valid set; a null info pointer is allowed.
                let sig = unsafe { libc::sigwaitinfo(set, std::ptr::null_mut()) };
                if sig == timer_signal() {
                    // SAFETY: valid timer id.
                    let overrun = unsafe { libc::timer_getoverrun(*timer) }.max(0) as u64;
                    Some(1 + overrun)
                } else {
                    None
                }
            }
        }
    }
}

/// The signal a controlling thread sends to interrupt the measuring thread's wait when
/// the run is stopped, so that Ctrl-C takes effect at once even with a long period.
pub fn wake_signal() -> i32 {
    libc::SIGRTMIN() + 2
}

extern "C" fn on_wake_signal(_: libc::c_int) {}

/// Installs a do-nothing handler for [`wake_signal`] without SA_RESTART, so the signal
/// makes the measuring thread's sleep return EINTR.
pub(super) fn install_wake_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: sigaction is plain data; the handler is async-signal-safe (it does
        // nothing).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_wake_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = 0;
            libc::sigaction(wake_signal(), &sa, std::ptr::null_mut());
        }
    });
}

impl Drop for Waiter {
    fn drop(&mut self) {
        match self {
            Waiter::Nanosleep => {}
            // SAFETY: closing our own fd.
            Waiter::Timerfd { fd } => unsafe {
                libc::close(*fd);
            },
            // SAFETY: deleting our own timer.
            Waiter::Signal { timer, .. } => unsafe {
                libc::timer_delete(*timer);
            },
        }
    }
}
