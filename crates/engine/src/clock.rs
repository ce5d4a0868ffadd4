//! CLOCK_MONOTONIC nanoseconds, the one time base of audiolat.
//!
//! Every timestamp audiolat stores is CLOCK_MONOTONIC in nanoseconds. Clocks that are
//! not monotonic (CLOCK_REALTIME, used by kernel packet timestamps and wall-clock
//! labels) are converted at the edge with [`realtime_to_monotonic_ns`].
//!
//! All functions here are real-time safe: one system call, no allocation; except
//! [`parse_duration`], which reads configuration and belongs before a stream starts.

/// Nanoseconds per second.
pub const NS_PER_SEC: u64 = 1_000_000_000;

/// The longest time audiolat measures for, and so the longest duration it takes: a
/// week-long soak. Every duration [`parse_duration`] reads is at most this, and every
/// run's length is checked against it before anything is started.
pub const LONGEST_RUN: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// [`LONGEST_RUN`] as people say it.
pub const LONGEST_RUN_WORDS: &str = "7 days (168h)";

fn read(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock ids used here always exist
    // on Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * NS_PER_SEC + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC now, in nanoseconds.
#[inline]
pub fn monotonic_ns() -> u64 {
    read(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME now, in nanoseconds since the Unix epoch.
#[inline]
pub fn realtime_ns() -> u64 {
    read(libc::CLOCK_REALTIME)
}

/// Maps a CLOCK_REALTIME timestamp (ns) to CLOCK_MONOTONIC (ns).
///
/// The offset between the clocks is read as the midpoint of two monotonic reads around
/// one realtime read, so its error is at most half of that bracket (well under a
/// microsecond). Call it near the time being converted: NTP may slew CLOCK_REALTIME.
pub fn realtime_to_monotonic_ns(realtime_ns_value: u64) -> u64 {
    let before = monotonic_ns();
    let real = realtime_ns();
    let after = monotonic_ns();
    let mono_mid = before + (after - before) / 2;
    let offset = real as i128 - mono_mid as i128;
    (realtime_ns_value as i128 - offset).max(0) as u64
}

/// The resolution the kernel reports for CLOCK_MONOTONIC, in nanoseconds
/// (1 with high-resolution timers, a jiffy without).
pub fn monotonic_resolution_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out pointer; CLOCK_MONOTONIC exists.
    unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * NS_PER_SEC + ts.tv_nsec as u64
}

/// Converts nanoseconds to a `timespec`.
#[inline]
pub fn timespec_from_ns(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / NS_PER_SEC) as libc::time_t,
        tv_nsec: (ns % NS_PER_SEC) as libc::c_long,
    }
}

/// Sleeps until CLOCK_MONOTONIC reaches `deadline_ns` (clock_nanosleep with
/// TIMER_ABSTIME), restarting after signals. Returns at once if the deadline has passed.
/// Real-time safe.
#[inline]
pub fn sleep_until_ns(deadline_ns: u64) {
    while !sleep_until_ns_interruptible(deadline_ns) {}
}

/// Sleeps until CLOCK_MONOTONIC reaches `deadline_ns`, unless a signal handler runs
/// first: returns true when the deadline was reached (or had passed), false when a
/// signal interrupted the sleep. This is how a controlling thread stops a measuring
/// thread that sleeps for a long period. Real-time safe.
#[inline]
pub fn sleep_until_ns_interruptible(deadline_ns: u64) -> bool {
    let ts = timespec_from_ns(deadline_ns);
    // SAFETY: `ts` is a valid timespec; a null remainder is allowed with TIMER_ABSTIME.
    let rc = unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
    rc != libc::EINTR
}

/// Parses a duration with a unit (ns, us, ms, s, m, h); a bare number is in `default_unit`.
pub fn parse_duration(s: &str, default_unit: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    // The number: digits, a point, signs, and an exponent (`1e3ms`) when digits follow.
    let bytes = t.as_bytes();
    let mut split = 0;
    while split < bytes.len() {
        let c = bytes[split];
        let exponent = matches!(c, b'e' | b'E')
            && split > 0
            && bytes[split + 1..]
                .iter()
                .find(|b| !matches!(b, b'+' | b'-'))
                .is_some_and(u8::is_ascii_digit);
        if c.is_ascii_digit() || matches!(c, b'.' | b'-' | b'+') || exponent {
            split += 1;
        } else {
            break;
        }
    }
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| format!("'{s}' is not a duration: use e.g. 10s, 500ms, 250us"))?;
    let unit = if unit.is_empty() {
        default_unit
    } else {
        unit.trim()
    };
    let scale = match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => return Err(format!("unknown unit '{other}': use ns, us, ms, s, m or h")),
    };
    let secs = value * scale;
    if secs <= 0.0 {
        return Err("a duration must be positive".into());
    }
    if secs > LONGEST_RUN.as_secs_f64() {
        return Err(format!(
            "'{s}' is too long: use at most {LONGEST_RUN_WORDS}, the longest audiolat measures for"
        ));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        use std::time::Duration;
        assert_eq!(parse_duration("10s", "s").unwrap(), Duration::from_secs(10));
        assert_eq!(
            parse_duration("500ms", "s").unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(
            parse_duration("488", "us").unwrap(),
            Duration::from_micros(488)
        );
        assert_eq!(
            parse_duration("1.5m", "s").unwrap(),
            Duration::from_secs(90)
        );
        assert!(parse_duration("-1s", "s").is_err());
        assert!(parse_duration("0", "s").is_err());
        assert!(parse_duration("10 parsecs", "s").is_err());
        assert!(parse_duration("abc", "s").is_err());
        assert_eq!(
            parse_duration("1e3ms", "s").unwrap(),
            Duration::from_secs(1)
        );
        assert!(parse_duration("1e300", "s").unwrap_err().contains("7 days"));
        assert!(parse_duration("2e-3", "s").is_ok());
    }

    #[test]
    fn monotonic_never_goes_back() {
        let mut last = monotonic_ns();
        for _ in 0..10_000 {
            let now = monotonic_ns();
            assert!(now >= last);
            last = now;
        }
    }

    #[test]
    fn sleep_until_reaches_its_deadline() {
        let start = monotonic_ns();
        let deadline = start + 2_000_000;
        sleep_until_ns(deadline);
        assert!(monotonic_ns() >= deadline);
        // A deadline in the past returns at once.
        sleep_until_ns(start);
    }

    #[test]
    fn realtime_maps_to_monotonic_now() {
        let mono = monotonic_ns();
        let mapped = realtime_to_monotonic_ns(realtime_ns());
        // Both are "now": they agree far better than a millisecond, unless the machine
        // stalls between the reads; allow for a hypervisor stall.
        assert!((mapped as i128 - mono as i128).abs() < 50_000_000);
    }

    #[test]
    fn timespec_round_trip() {
        let ts = timespec_from_ns(3 * NS_PER_SEC + 17);
        assert_eq!(ts.tv_sec, 3);
        assert_eq!(ts.tv_nsec, 17);
    }
}
