//! The network probe: blocks of network audio against their deadline.

use serde_json::Value;

use super::kind::{find, ProbeKind};
use super::metric::{Kind, Named, Source, STEAL, WHY};
use crate::counts::Dropouts;
use crate::model::Measurement;
use crate::records::net::NetEndConfig;
use crate::records::Record;

/// `audiolat net` (and its two ends, `net respond` and `net emulate`).
pub static NET: ProbeKind = ProbeKind {
    name: "net",
    about: "network audio blocks against their deadline",
    label: None,
    main_metric,
    headline_metric: main_metric,
    gates: GATES,
    needs: &[super::kind::Need {
        metric: "why",
        setting: super::kind::Setting::Why,
        why: "a net run explains the blocks that missed their deadline from the kernel's trace with --why only: add --why, or drop the gate",
    }],
    one_run: true,
    cyclictest: false,
    triggers: false,
    measures: true,
    dropouts,
};

/// The controller's end (role `emulate`) times blocks end to end; the host's, and a run
/// of both, by the host's response time.
fn main_metric(config: &Value) -> Option<&'static str> {
    Some(
        if let Some(NetEndConfig::Emulate(_)) = NetEndConfig::from_json(config) {
            "end_to_end"
        } else {
            "response_time"
        },
    )
}

/// Blocks past the deadline: the main metric's misses.
fn dropouts(config: &Value, _result: &Value, measurements: &[Measurement]) -> Dropouts {
    Dropouts {
        deadline_misses: main_metric(config)
            .and_then(|m| find(measurements, m))
            .and_then(|m| m.misses),
        ..Dropouts::default()
    }
}

const GATES: &[Named] = &[
    Named {
        name: "misses",
        aliases: &[],
        kind: Kind::Count,
        about: "blocks past the deadline (the host's answers; the controller's late and lost blocks with `net emulate`)",
        source: Source::Dropouts(|d| d.deadline_misses),
    },
    Named {
        name: "sender_late",
        aliases: &[],
        kind: Kind::Count,
        about: "blocks the run's own controller sent late (a packet more than a block period behind its schedule): a validity flag, not the host's or the network's doing",
        source: Source::Flag(|f| f.sender_late_blocks.map(|n| n as f64)),
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
