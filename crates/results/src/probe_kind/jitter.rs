//! The jitter probe: periodic wake-up latency, and with fragments their deadlines.

use serde_json::Value;

use super::kind::{find, ProbeKind};
use super::metric::{Kind, Named, Source, STEAL, WHY};
use crate::counts::Dropouts;
use crate::model::Measurement;
use crate::records::{JitterConfigRecord, JitterResultRecord, Record};

/// `audiolat jitter`.
pub static JITTER: ProbeKind = ProbeKind {
    name: "jitter",
    about: "periodic wake-up latency (and fragment deadlines)",
    label: Some(|config| {
        if fragments(config) {
            "fragments".into()
        } else {
            match JitterConfigRecord::from_json(config).and_then(|c| c.rate_hz) {
                Some(hz) => format!("wake-ups at {hz:.0} Hz"),
                None => "wake-ups".into(),
            }
        }
    }),
    main_metric: |_| Some("wakeup_latency"),
    // A run with fragments is run for its fragments' completion.
    headline_metric: |config| {
        Some(if fragments(config) {
            "fragment_completion"
        } else {
            "wakeup_latency"
        })
    },
    gates: GATES,
    needs: &[
        super::kind::Need {
            metric: "underruns",
            setting: super::kind::Setting::Fragments,
            why: "a jitter run counts under-runs with --fragments only (the fragment model): add --fragments N, or drop the gate",
        },
        super::kind::Need {
            metric: "why",
            setting: super::kind::Setting::Why,
            why: "a jitter run explains its misses from the kernel's trace with --why only: add --why, or drop the gate",
        },
    ],
    one_run: true,
    cyclictest: true,
    triggers: false,
    measures: true,
    dropouts,
};

/// The run was made with the fragment model.
fn fragments(config: &Value) -> bool {
    JitterConfigRecord::from_json(config).is_some_and(|c| c.has_fragments())
}

/// Only the fragment model counts under-runs; wake-ups alone have none.
fn dropouts(config: &Value, result: &Value, measurements: &[Measurement]) -> Dropouts {
    if !fragments(config) {
        return Dropouts::default();
    }
    Dropouts {
        underruns: find(measurements, "fragment_completion")
            .and_then(|m| m.misses)
            .or_else(|| JitterResultRecord::from_json(result).and_then(|r| r.underruns)),
        ..Dropouts::default()
    }
}

const GATES: &[Named] = &[
    Named {
        name: "underruns",
        aliases: &["xruns", "misses"],
        kind: Kind::Count,
        about: "fragment deadlines missed (would-be under-runs; measured with --fragments only)",
        source: Source::Dropouts(|d| d.underruns),
    },
    Named {
        name: "overflows",
        aliases: &[],
        kind: Kind::Count,
        about: "wake-ups above the histogram's bound",
        source: Source::Result(|result| JitterResultRecord::from_json(result)?.overflows),
    },
    Named {
        name: "skipped",
        aliases: &[],
        kind: Kind::Count,
        about: "deadlines skipped because a wake-up came after them",
        source: Source::Result(|result| JitterResultRecord::from_json(result)?.skipped_deadlines),
    },
    STEAL,
    WHY[0],
    WHY[1],
    WHY[2],
    WHY[3],
    WHY[4],
    WHY[5],
    WHY[6],
    WHY[7],
    WHY[8],
    WHY[9],
];
