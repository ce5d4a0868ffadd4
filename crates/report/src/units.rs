//! Units chosen per value for people: a duration in the unit that keeps three significant
//! figures (never a raw count of ns), a count with its digits grouped, a size in KB/MB/GB,
//! a percentage. The HTML report and the summary print numbers only through these.

/// A duration in ns: `850 ns`, `12.3 us`, `2.90 ms`, `1.50 s`.
pub fn fmt_ns(ns: f64) -> String {
    crate::terminal::fmt_ns(ns)
}

/// A value in its unit: a duration for `ns`, a count grouped for a whole number of
/// anything else (`13 782 blocks`), else three decimals (`0.125 frame`).
pub fn fmt_value(v: f64, unit: &str) -> String {
    match unit {
        "ns" => fmt_ns(v),
        "%" | "percent" => fmt_percent(v),
        _ if v.fract() == 0.0 && v >= 0.0 && v < u64::MAX as f64 => {
            format!("{} {unit}", fmt_count(v as u64))
        }
        _ => format!("{v:.3} {unit}"),
    }
}

/// A count, with its digits grouped by a narrow no-break space (U+202F) from 10,000 on:
/// `9999`, `12 345`, `1 200 000`. A count this large is never mistaken for a raw time.
pub fn fmt_count(n: u64) -> String {
    let digits = n.to_string();
    if n < 10_000 {
        return digits;
    }
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 * 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('\u{202F}');
        }
        out.push(c);
    }
    out
}

/// A run's dropouts in one cell, as every table with an under-runs column shows them:
/// the under-runs with the skipped cycles said apart (`4, 1 skipped`), a network run's
/// blocks past the deadline (`3 missed`); `None` where the run counted none.
pub fn fmt_dropouts(d: &results::Dropouts) -> Option<String> {
    let skipped = d
        .skipped_cycles
        .filter(|s| *s > 0)
        .map_or(String::new(), |s| format!(", {} skipped", fmt_count(s)));
    match (d.underruns, d.deadline_misses) {
        (Some(u), _) => Some(format!("{}{skipped}", fmt_count(u))),
        (None, Some(m)) => Some(format!("{} missed", fmt_count(m))),
        (None, None) => None,
    }
}

/// A size in bytes: `512 B`, `4.0 KB`, `12.5 MB`, `1.20 GB` (powers of 1024).
pub fn fmt_bytes(bytes: f64) -> String {
    const K: f64 = 1024.0;
    let a = bytes.abs();
    if a < K {
        format!("{bytes:.0} B")
    } else if a < K * K {
        format!("{:.1} KB", bytes / K)
    } else if a < K * K * K {
        format!("{:.1} MB", bytes / (K * K))
    } else {
        format!("{:.2} GB", bytes / (K * K * K))
    }
}

/// A percentage, with two decimals below 10 % and one above: `0.45 %`, `12.5 %`.
pub fn fmt_percent(p: f64) -> String {
    if p.abs() < 10.0 {
        format!("{p:.2} %")
    } else {
        format!("{p:.1} %")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_group_from_ten_thousand_and_times_never_print_raw_ns() {
        assert_eq!(fmt_count(0), "0");
        assert_eq!(fmt_count(9_999), "9999");
        assert_eq!(fmt_count(12_345), "12\u{202F}345");
        assert_eq!(fmt_count(1_200_000), "1\u{202F}200\u{202F}000");
        assert_eq!(fmt_ns(1e9), "1.00 s");
        assert_eq!(fmt_ns(950_000.0), "950.0 us");
        assert_eq!(fmt_bytes(12.5 * 1024.0 * 1024.0), "12.5 MB");
        assert_eq!(fmt_percent(0.4505), "0.45 %");
        assert_eq!(fmt_percent(12.54), "12.5 %");
    }
}
