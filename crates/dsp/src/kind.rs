//! Workload names as typed on the command line.

use std::fmt;
use std::str::FromStr;

/// The largest `N` accepted in `bank:N` on the command line.
///
/// [`Workload::new`](crate::Workload::new) itself takes any `Bank(n)` with `n >= 1`; the
/// capacity search in [`bench`](mod@crate::bench) stops here, so every capacity it reports
/// can be run.
pub const MAX_BANK_VOICES: usize = 65_536;

/// A workload as named on the command line: `sine`, `poly`, `bank:N` (1 <= N <= [`MAX_BANK_VOICES`]).
///
/// [`FromStr`] and [`Display`](fmt::Display) round-trip: `"bank:64"` parses to
/// `Bank(64)`, which displays as `"bank:64"`. Parsing is exact (lower case, no spaces,
/// `N` in plain decimal digits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadKind {
    /// One oscillator at the note's frequency: the plain test tone.
    Sine,
    /// Three harmonics (f, 2f, 3f at amplitudes 1, 1/2, 1/3): the BeagleBone study's
    /// polyphonic tone.
    Poly,
    /// `N` oscillators at distinct, inharmonic frequencies: a CPU load that scales with `N`.
    Bank(usize),
}

impl WorkloadKind {
    /// Oscillators computed per output sample: 1, 3 or `N`.
    pub fn voices(&self) -> usize {
        match *self {
            WorkloadKind::Sine => 1,
            WorkloadKind::Poly => 3,
            WorkloadKind::Bank(voices) => voices,
        }
    }
}

fn accepted_forms() -> String {
    format!("use sine, poly or bank:N (N voices, 1-{MAX_BANK_VOICES})")
}

impl FromStr for WorkloadKind {
    type Err = String;

    /// Parses `sine`, `poly` or `bank:N`. The error names the text that was rejected and
    /// lists the accepted forms.
    fn from_str(text: &str) -> Result<WorkloadKind, String> {
        match text {
            "sine" => return Ok(WorkloadKind::Sine),
            "poly" => return Ok(WorkloadKind::Poly),
            "" => return Err(format!("empty workload name: {}", accepted_forms())),
            "bank" => {
                return Err(format!(
                    "workload `bank` needs a voice count: use bank:N (N voices, 1-{MAX_BANK_VOICES}), e.g. bank:64"
                ))
            }
            _ => {}
        }
        let Some(digits) = text.strip_prefix("bank:") else {
            return Err(format!("unknown workload `{text}`: {}", accepted_forms()));
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "bad voice count `{digits}` in workload `{text}`: N in bank:N must be a whole number from 1 to {MAX_BANK_VOICES}"
            ));
        }
        match digits.parse::<usize>() {
            Ok(voices) if (1..=MAX_BANK_VOICES).contains(&voices) => Ok(WorkloadKind::Bank(voices)),
            _ => Err(format!(
                "voice count {digits} in workload `{text}` is out of range: N in bank:N must be from 1 to {MAX_BANK_VOICES}"
            )),
        }
    }
}

impl fmt::Display for WorkloadKind {
    /// `sine`, `poly` or `bank:N`, the form [`FromStr`] accepts.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkloadKind::Sine => f.write_str("sine"),
            WorkloadKind::Poly => f.write_str("poly"),
            WorkloadKind::Bank(voices) => write!(f, "bank:{voices}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_and_from_str_round_trip() {
        for kind in [
            WorkloadKind::Sine,
            WorkloadKind::Poly,
            WorkloadKind::Bank(1),
            WorkloadKind::Bank(64),
            WorkloadKind::Bank(MAX_BANK_VOICES),
        ] {
            let text = kind.to_string();
            assert_eq!(text.parse::<WorkloadKind>(), Ok(kind), "{text}");
        }
        assert_eq!(WorkloadKind::Bank(64).to_string(), "bank:64");
        assert_eq!("sine".parse(), Ok(WorkloadKind::Sine));
        assert_eq!("poly".parse(), Ok(WorkloadKind::Poly));
    }

    #[test]
    fn voices_per_kind() {
        assert_eq!(WorkloadKind::Sine.voices(), 1);
        assert_eq!(WorkloadKind::Poly.voices(), 3);
        assert_eq!(WorkloadKind::Bank(17).voices(), 17);
    }

    #[test]
    fn errors_name_the_text_and_the_accepted_forms() {
        let cases = [
            ("", "empty workload name"),
            ("saw", "unknown workload `saw`"),
            ("bank", "workload `bank` needs a voice count"),
            ("bank:", "bad voice count `` in workload `bank:`"),
            ("bank:x", "bad voice count `x` in workload `bank:x`"),
            ("bank:+5", "bad voice count `+5`"),
            (
                "bank:0",
                "voice count 0 in workload `bank:0` is out of range",
            ),
            (
                "bank:70000",
                "voice count 70000 in workload `bank:70000` is out of range",
            ),
            (
                "bank:99999999999999999999999",
                "voice count 99999999999999999999999 in workload",
            ),
            ("Sine", "unknown workload `Sine`"),
            (" sine", "unknown workload ` sine`"),
        ];
        for (text, expected) in cases {
            let error = text.parse::<WorkloadKind>().unwrap_err();
            assert!(error.contains(expected), "{text:?}: {error}");
            assert!(
                error.contains("bank:N") && error.contains("65536"),
                "{text:?}: {error}"
            );
        }
        let error = "saw".parse::<WorkloadKind>().unwrap_err();
        assert_eq!(
            error,
            "unknown workload `saw`: use sine, poly or bank:N (N voices, 1-65536)"
        );
    }
}
