//! What a network run found: per phase, the host's and the controller's counters, the
//! traffic beside the audio and the threads' waits. One end's run stores its end's
//! record alone ([`HostRecord`] for `net respond`, [`ControllerRecord`] for `net
//! emulate`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::records::record::Record;

/// A run of both ends' result as stored.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct NetResultRecord {
    /// A block's deadline, ns.
    pub deadline_ns: u64,
    /// A response shorter than this came of a burst of packets, ns.
    #[serde(default)]
    pub short_response_ns: Option<u64>,
    /// A packet sent later than this behind its schedule makes its block late, ns.
    #[serde(default)]
    pub late_send_ns: Option<u64>,
    /// The abusive stream's datagram, bytes.
    #[serde(default)]
    pub stream_datagram_bytes: Option<u64>,
    /// The reference phase (a host answering silence at once), if run.
    pub reference: Option<PhaseRecord>,
    /// The synth phase, if reached.
    pub synth: Option<PhaseRecord>,
    /// Why the blocks that missed their deadline were late on the host, from the
    /// kernel's trace (`--why`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<crate::records::why::WhyRecord>,
}

impl Record for NetResultRecord {}

impl NetResultRecord {
    /// The phase a run is shown by, with its measurements' suffix and name: the synth
    /// phase, else the reference.
    pub fn shown_phase(&self) -> Option<(&'static str, &'static str, &PhaseRecord)> {
        match (&self.synth, &self.reference) {
            (Some(p), _) => Some(("synth", "", p)),
            (None, Some(p)) => Some(("reference", "_reference", p)),
            (None, None) => None,
        }
    }
}

/// One phase: both ends' counters and what ran beside the audio.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PhaseRecord {
    /// A flood towards the host, if one ran.
    #[serde(default)]
    pub flood: Option<FloodRecord>,
    /// The abusive stream, if one ran.
    #[serde(default)]
    pub stream: Option<StreamRecord>,
    /// The user-level network service, if it carried the controller's packets.
    #[serde(default)]
    pub service: Option<ServiceRecord>,
    /// The HTB classes' counters on the controller's link by class id, if `tc` shaped it.
    #[serde(default)]
    pub tc_classes: Option<BTreeMap<String, TcClassRecord>>,
    /// The kernel's softirq threads over the phase.
    #[serde(default)]
    pub kernel_softirq: Option<SchedRecord>,
    /// The host's counters.
    pub host: HostRecord,
    /// The controller's counters.
    pub controller: ControllerRecord,
}

/// A flood of datagrams towards the host.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct FloodRecord {
    /// Datagrams sent.
    pub datagrams: u64,
    /// The rate they achieved, Mbit/s.
    #[serde(deserialize_with = "crate::records::keys::nan_if_null")]
    pub mbit_per_s: f64,
}

/// What the abusive stream did.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct StreamRecord {
    /// Datagrams handed over.
    pub sent: u64,
    /// Of those, refused at once.
    pub refused: u64,
    /// Offered, Mbit/s of payload.
    #[serde(deserialize_with = "crate::records::keys::nan_if_null")]
    pub offered_mbit_per_s: f64,
    /// Datagrams its sink received.
    pub received: u64,
    /// Received, Mbit/s of payload.
    #[serde(deserialize_with = "crate::records::keys::nan_if_null")]
    pub received_mbit_per_s: f64,
}

/// What the user-level network service did.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ServiceRecord {
    /// The discipline's name.
    pub discipline: String,
    /// The link's capacity, Mbit/s.
    #[serde(deserialize_with = "crate::records::keys::nan_if_null")]
    pub link_mbps: f64,
    /// Its thread's policy as granted (absent in an older run).
    #[serde(default)]
    pub thread: Option<String>,
    /// Its thread's time on a CPU, ns.
    #[serde(default)]
    pub on_cpu_ns: Option<u64>,
    /// Its thread's wait for a CPU, ns.
    #[serde(default)]
    pub run_queue_wait_ns: Option<u64>,
    /// Per flow: the audio's first, then the stream's.
    pub flows: Vec<FlowRecord>,
}

/// One flow through the service.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct FlowRecord {
    /// Datagrams put on the link.
    pub sent: u64,
    /// Their rate on the wire, Mbit/s.
    #[serde(deserialize_with = "crate::records::keys::nan_if_null")]
    pub mbit_per_s: f64,
    /// Served in mClock's reservation phase.
    pub by_reservation: u64,
    /// The kernel would not take them.
    pub kernel_refused: u64,
    /// Longest wait in the service, ns.
    pub max_wait_ns: u64,
}

/// One HTB class's counters (`null` where `tc` printed none).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct TcClassRecord {
    /// Bytes sent.
    pub bytes: Option<u64>,
    /// Packets sent.
    pub packets: Option<u64>,
    /// Packets dropped.
    pub drops: Option<u64>,
    /// Times over its limit.
    pub overlimits: Option<u64>,
}

/// A thread's time on a CPU and waiting for one, ns.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct SchedRecord {
    /// On a CPU.
    pub on_cpu_ns: u64,
    /// Waiting for one.
    pub run_queue_wait_ns: u64,
}

/// Datagrams dropped, by each documented reason (`netaudio::wire::DropReason`), in the
/// protocol's order.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DropCounts {
    /// Not a packet's size.
    pub wrong_size: u64,
    /// Not the protocol's magic.
    pub bad_magic: u64,
    /// A version this end does not speak.
    pub unknown_version: u64,
    /// A kind this end does not take.
    pub unknown_kind: u64,
    /// A packet index out of its block.
    pub bad_index: u64,
    /// A sample not finite.
    pub non_finite: u64,
    /// A packet already had.
    pub duplicate: u64,
    /// A packet of a block already gone.
    pub stale: u64,
    /// From an address it does not answer.
    pub foreign: u64,
    /// From a sender that never completed a block (absent in an older run).
    #[serde(default)]
    pub unconfirmed: Option<u64>,
}

impl DropCounts {
    /// Each counter by its stored name, in the protocol's order (`None`: not counted).
    pub fn by_reason(&self) -> [(&'static str, Option<u64>); 10] {
        [
            ("wrong_size", Some(self.wrong_size)),
            ("bad_magic", Some(self.bad_magic)),
            ("unknown_version", Some(self.unknown_version)),
            ("unknown_kind", Some(self.unknown_kind)),
            ("bad_index", Some(self.bad_index)),
            ("non_finite", Some(self.non_finite)),
            ("duplicate", Some(self.duplicate)),
            ("stale", Some(self.stale)),
            ("foreign", Some(self.foreign)),
            ("unconfirmed", self.unconfirmed),
        ]
    }

    /// Every drop, whatever the reason.
    pub fn total(&self) -> u64 {
        self.by_reason().iter().filter_map(|(_, n)| *n).sum()
    }
}

/// The host's counters (one phase of `net`, or `net respond`'s result).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct HostRecord {
    /// Counted blocks whose answer the kernel took.
    #[serde(default)]
    pub answers_sent: Option<u64>,
    /// Counted blocks whose answer the kernel would not take.
    #[serde(default)]
    pub answers_refused: Option<u64>,
    /// Blocks answered in the warm-up, not counted.
    #[serde(default)]
    pub answers_in_warmup: Option<u64>,
    /// The first counted block.
    #[serde(default)]
    pub counted_from_block: Option<u64>,
    /// The controller it answered (`null`: none latched).
    #[serde(default)]
    pub peer: Option<String>,
    /// Times it followed another controller after its peer fell silent.
    #[serde(default)]
    pub peer_changes: Option<u64>,
    /// Counted blocks whose response exceeded the deadline.
    #[serde(default)]
    pub responses_past_deadline: Option<u64>,
    /// Datagrams the kernel dropped on a full queue.
    #[serde(default)]
    pub kernel_dropped: Option<u64>,
    /// Packets accepted into blocks.
    #[serde(default)]
    pub packets_accepted: Option<u64>,
    /// Blocks complete.
    pub blocks_complete: u64,
    /// Blocks that reached it incomplete.
    pub blocks_incomplete: u64,
    /// Packets missing from incomplete blocks.
    pub packets_missing: u64,
    /// Packets out of order.
    pub reordered: u64,
    /// Datagrams dropped, by reason.
    pub drops: DropCounts,
    /// The network thread's policy as granted.
    pub net_thread: String,
    /// The network thread's time on a CPU and waiting for one (`null`: not measured).
    #[serde(default)]
    pub net_thread_sched: Option<SchedRecord>,
    /// The workers' policies as granted.
    pub workers: Vec<String>,
    /// Why it stopped early.
    pub error: Option<String>,
    /// An older run's blocks answered (sent or refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered: Option<u64>,
    /// An older run's blocks answered in the warm-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_in_warmup: Option<u64>,
    /// An older run's responses past the deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub misses: Option<u64>,
    /// An older run's answers refused by the kernel, the warm-up's too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_dropped: Option<u64>,
}

impl Record for HostRecord {}

/// Why the controller's late blocks were late, each under the largest part of its time.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct MissCauses {
    /// Sent late by the controller.
    pub sent_late: u64,
    /// Waited on the way to the host.
    pub to_host: u64,
    /// Answered late by the host.
    pub host: u64,
    /// Came back late.
    pub way_back: u64,
    /// Not split (the host's times were gone).
    pub unsplit: u64,
}

/// The controller's counters (one phase of `net`, or `net emulate`'s result).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct ControllerRecord {
    /// Counted blocks sent.
    pub blocks_sent: u64,
    /// Of those, sent late by the controller itself.
    #[serde(default)]
    pub blocks_sent_late: Option<u64>,
    /// The first counted block.
    #[serde(default)]
    pub counted_from_block: Option<u64>,
    /// Counted blocks answered within the deadline.
    #[serde(default)]
    pub answers_received_on_time: Option<u64>,
    /// Counted blocks answered past the deadline, before the run's end.
    #[serde(default)]
    pub answers_received_late: Option<u64>,
    /// Counted blocks answered after the run's end.
    #[serde(default)]
    pub answers_received_after_end: Option<u64>,
    /// Counted blocks sent for which no answer was received.
    #[serde(default)]
    pub answers_not_received: Option<u64>,
    /// The late blocks by cause (`null`: its host ran elsewhere).
    #[serde(default)]
    pub miss_causes: Option<MissCauses>,
    /// Packets sent.
    pub packets_sent: u64,
    /// Packets the kernel refused.
    pub packets_refused: u64,
    /// Answers to a block already answered.
    pub duplicate_answers: u64,
    /// Answers to no block it sent.
    pub unknown_answers: u64,
    /// Answers it could not use, by reason.
    #[serde(default)]
    pub dropped_answers: Option<DropCounts>,
    /// Answers the kernel dropped on a full queue.
    #[serde(default)]
    pub answers_dropped_by_kernel: Option<u64>,
    /// Blocks whose times it could not record.
    #[serde(default)]
    pub blocks_unrecorded: Option<u64>,
    /// The sender thread's policy as granted.
    pub sender_thread: String,
    /// The sender's time on a CPU and waiting for one.
    #[serde(default)]
    pub sender_sched: Option<SchedRecord>,
    /// The receiver's time on a CPU and waiting for one.
    #[serde(default)]
    pub receiver_sched: Option<SchedRecord>,
    /// Why it stopped early.
    pub error: Option<String>,
    /// An older run's blocks answered on time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_time: Option<u64>,
    /// An older run's blocks answered late.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late: Option<u64>,
    /// An older run's blocks without an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
    /// An older run's malformed answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub malformed_answers: Option<u64>,
}

impl Record for ControllerRecord {}
