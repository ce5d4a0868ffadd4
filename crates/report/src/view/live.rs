//! The live status line of a run in progress: its text, from the probe's
//! [`LiveStatus`] (the binary writes it over itself on a terminal).

use results::LiveStatus;

use crate::terminal::fmt_ns;

/// The status line of a run labelled `label`; `period_ns` turns the jitter probe's
/// cycles into seconds.
pub fn line(label: &str, period_ns: u64, status: &LiveStatus) -> String {
    match status {
        LiveStatus::Jitter(s) => {
            let secs = s.cycles as f64 * period_ns as f64 / 1e9;
            let total = s.planned as f64 * period_ns as f64 / 1e9;
            let culprit = culprit_words(s.culprit.as_ref());
            format!(
                "{label}  {secs:.1}/{total:.1} s  cycles {}  last {}  max {}  overflows {}  underruns {}{culprit}",
                s.cycles,
                fmt_ns(s.last_ns as f64),
                fmt_ns(s.max_ns as f64),
                s.overflows,
                s.underruns
            )
        }
        LiveStatus::Event {
            measured,
            wanted,
            cycles,
            underruns,
            culprit,
        } => format!(
            "{label}  triggers {measured}/{wanted}  cycles {cycles}  under-runs {underruns}{}",
            culprit_words(culprit.as_ref())
        ),
        LiveStatus::Roundtrip {
            windows,
            last_delay_frames,
            cycles,
            underruns,
            culprit,
        } => format!(
            "{label}  windows {windows}  last {}  cycles {cycles}  under-runs {underruns}{}",
            last_delay_frames.map_or("-".to_string(), |f| format!("{f:.3} frames")),
            culprit_words(culprit.as_ref())
        ),
        LiveStatus::Text(text) => format!("{label}  {text}"),
    }
}

/// `--why`'s largest culprit so far, at the end of a live line (nothing without one).
fn culprit_words(culprit: Option<&results::LiveCulprit>) -> String {
    culprit.map_or(String::new(), |c| {
        let name = if c.kind == "idle_exit" {
            "idle exit"
        } else {
            &c.name
        };
        format!(
            "  why: {name} {} in {} late",
            fmt_ns(c.ns_total as f64),
            c.misses
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_roundtrip_without_a_window_shows_a_dash_not_zero() {
        let s = LiveStatus::Roundtrip {
            windows: 0,
            last_delay_frames: None,
            cycles: 3,
            underruns: 0,
            culprit: None,
        };
        assert_eq!(
            line("roundtrip", 0, &s),
            "roundtrip  windows 0  last -  cycles 3  under-runs 0"
        );
    }

    #[test]
    fn jitter_cycles_are_shown_as_seconds_of_the_period() {
        let s = LiveStatus::Jitter(results::LiveSnapshot {
            cycles: 1000,
            planned: 2000,
            last_ns: 1500,
            max_ns: 20_000,
            ..Default::default()
        });
        assert_eq!(
            line("jitter", 1_000_000, &s),
            "jitter  1.0/2.0 s  cycles 1000  last 1.5 us  max 20.0 us  overflows 0  underruns 0"
        );
    }

    #[test]
    fn with_why_the_top_culprit_so_far_ends_the_jitter_line() {
        let s = LiveStatus::Jitter(results::LiveSnapshot {
            cycles: 1000,
            planned: 2000,
            culprit: Some(results::LiveCulprit {
                kind: "thread".into(),
                name: "kworker/1:2".into(),
                ns_total: 9_800_000,
                misses: 9,
            }),
            ..Default::default()
        });
        assert!(
            line("jitter", 1_000_000, &s)
                .ends_with("underruns 0  why: kworker/1:2 9.80 ms in 9 late"),
            "{}",
            line("jitter", 1_000_000, &s)
        );
    }
}
