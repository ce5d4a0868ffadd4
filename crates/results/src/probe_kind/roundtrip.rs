//! The round-trip probe: from the output to the input, through a loop.

use serde_json::Value;

use super::kind::ProbeKind;
use super::metric::{Kind, Named, Source, STEAL, WHY};
use crate::counts::Dropouts;
use crate::model::Measurement;
use crate::records::{Record, RoundtripResultRecord};

/// `audiolat roundtrip`.
pub static ROUNDTRIP: ProbeKind = ProbeKind {
    name: "roundtrip",
    about: "output to input through a loop",
    label: Some(|_| "round trip".into()),
    main_metric: |_| Some("roundtrip"),
    headline_metric: |_| Some("roundtrip"),
    gates: GATES,
    needs: &[super::kind::Need {
        metric: "why",
        setting: super::kind::Setting::Why,
        why: "a roundtrip run explains its late callbacks from the kernel's trace with --why only: add --why, or drop the gate",
    }],
    one_run: false,
    cyclictest: false,
    triggers: false,
    measures: true,
    dropouts,
};

fn dropouts(_config: &Value, result: &Value, _measurements: &[Measurement]) -> Dropouts {
    let result = RoundtripResultRecord::from_json(result).unwrap_or_default();
    Dropouts {
        underruns: result.xruns,
        skipped_cycles: result.skipped_cycles,
        ..Dropouts::default()
    }
}

const GATES: &[Named] = &[
    Named {
        name: "roundtrip",
        aliases: &[],
        kind: Kind::Time,
        about: "the round trip: median over the windows",
        source: Source::Stat("roundtrip", "p50"),
    },
    Named {
        name: "impulse",
        aliases: &[],
        kind: Kind::Time,
        about: "the round trip by impulse onset: median over the clicks",
        source: Source::Stat("roundtrip_impulse", "p50"),
    },
    Named {
        name: "xruns",
        aliases: &["underruns"],
        kind: Kind::Count,
        about: "server under-runs during the run",
        source: Source::Dropouts(|d| d.underruns),
    },
    Named {
        name: "skipped",
        aliases: &[],
        kind: Kind::Count,
        about: "cycles the stream skipped",
        source: Source::Dropouts(|d| d.skipped_cycles),
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
