//! The event probe: from a trigger to its note's first sample at the DAC.

use serde_json::Value;

use super::kind::ProbeKind;
use super::metric::{Kind, Named, Source, STEAL, WHY};
use crate::counts::Dropouts;
use crate::model::Measurement;
use crate::records::{EventResultRecord, Record};

/// `audiolat event`.
pub static EVENT: ProbeKind = ProbeKind {
    name: "event",
    about: "trigger to the first sample at the DAC",
    label: None,
    main_metric: |_| Some("event_latency"),
    headline_metric: |_| Some("event_latency"),
    gates: GATES,
    needs: &[super::kind::Need {
        metric: "loopback",
        setting: super::kind::Setting::Loopback,
        why: "the loopback latency is measured with --loopback only: add --loopback PORT (or DEVICE), or drop the gate",
    }, super::kind::Need {
        metric: "why",
        setting: super::kind::Setting::Why,
        why: "an event run explains its late callbacks from the kernel's trace with --why only: add --why, or drop the gate",
    }],
    one_run: false,
    cyclictest: false,
    triggers: true,
    measures: true,
    dropouts,
};

/// Under-runs after the first trigger, the warm-up's apart.
fn dropouts(_config: &Value, result: &Value, _measurements: &[Measurement]) -> Dropouts {
    let underruns = EventResultRecord::from_json(result)
        .and_then(|r| r.underruns)
        .unwrap_or_default();
    Dropouts {
        underruns: underruns.steady,
        underruns_at_start: underruns.start,
        skipped_cycles: underruns.skipped_cycles_steady,
        deadline_misses: None,
    }
}

const GATES: &[Named] = &[
    Named {
        name: "xruns",
        aliases: &["underruns"],
        kind: Kind::Count,
        about: "server under-runs after the first trigger (the warm-up's before it are said apart)",
        source: Source::Dropouts(|d| d.underruns),
    },
    Named {
        name: "misses",
        aliases: &[],
        kind: Kind::Count,
        about: "triggers whose note could not sound at its time (an under-run hit it)",
        source: Source::Notes(|n| n.missed),
    },
    Named {
        name: "late",
        aliases: &[],
        kind: Kind::Count,
        about: "triggers that reached the audio thread after their frame had passed",
        source: Source::Result(|result| EventResultRecord::from_json(result)?.late_triggers),
    },
    Named {
        name: "loopback",
        aliases: &[],
        kind: Kind::Time,
        about: "median latency measured on the loopback capture (with a loopback only)",
        source: Source::Stat("event_latency_loopback", "p50"),
    },
    Named {
        name: "dsp_overloads",
        aliases: &[],
        kind: Kind::Count,
        about: "cycles whose processing took longer than the period",
        source: Source::Misses("dsp_time"),
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
