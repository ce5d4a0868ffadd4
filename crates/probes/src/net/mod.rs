//! The network-audio probe: a controller and a host in this process, over loopback or a
//! veth pair between two network namespaces, optionally with a shaped link, cells and
//! interference (the Tessellation study: Colmenares, Peters et al., "A Multicore
//! Operating System with QoS Guarantees for Network Audio Applications", J. Audio Eng.
//! Soc. 61(4), 2013, with the SLABS controller).
//!
//! The network-audio system itself (wire protocol, host, controller, user-level service
//! with mClock, UDP, netns/tc, interference) is the `netaudio` crate; this probe is its
//! configuration ([`NetConfig`], checked from a [`NetSetup`]), its phases (a reference
//! host answering silence, then the Migrator synth; [`run`]) and the outcome as
//! measurements ([`NetOutcome`], [`host_measurements`], [`controller_measurements`]).
//! Times on one block, as the study names them: `t0` the controller sends the block's first packet, `t1` the host receives
//! the block's first packet, `t2` the host sends its answer, `tf` the answer arrives;
//! `tf - t0` must stay under [`wire::DEADLINE_NS`], `t2 - t1` is the host's share.

mod ends;
mod outcome;
mod phase;
mod setup;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use engine::clock::monotonic_ns;
use engine::rt::Policy;
use netaudio::{blocks_in, controller, host, netns, service, wire, NetError};
use results::records::net::{LinkBy, LinkRecord, NetConfigRecord, PadRecord, StreamSettingRecord};
use results::LatencyHistogram;

use crate::steal::{StealSampler, StealTimeline};

pub use ends::{emulate_config, respond_config};
pub use outcome::{
    controller_measurements, controller_record, drop_counts, host_measurements, host_record,
    sched_record, service_record,
};
pub use setup::{
    check_ranges, NetConfigError, NetSetting, NetSetup, LINK_RANGE_MBPS, MAX_PHASE, MAX_WARMUP,
};

/// The probe's histogram: results' fixed-bound HDR histogram, which netaudio's loops
/// record into (without allocating). Dereferences to the [`LatencyHistogram`].
#[derive(Debug, Clone)]
pub struct Hist(pub LatencyHistogram);

impl netaudio::Histogram for Hist {
    fn with_bound(bound_ns: u64) -> Self {
        Hist(LatencyHistogram::new(bound_ns).expect("valid bound"))
    }

    fn record(&mut self, value_ns: u64) {
        self.0.record(value_ns);
    }
}

impl std::ops::Deref for Hist {
    type Target = LatencyHistogram;

    fn deref(&self) -> &LatencyHistogram {
        &self.0
    }
}

/// What the host measured, in the probe's histograms.
pub type HostOutcome = host::HostOutcome<Hist>;

/// What the controller measured, in the probe's histograms.
pub type ControllerOutcome = controller::ControllerOutcome<Hist>;

/// One `audiolat net` run: the controller and the host in this process, over loopback.
#[derive(Clone, Debug, PartialEq)]
pub struct NetConfig {
    /// Measured time of the synth phase (after the warm-up).
    pub duration: Duration,
    /// Measured time of the reference phase (a host that answers without synthesis),
    /// run first; zero skips it.
    pub reference_duration: Duration,
    /// Warm-up before each phase's counted blocks (the study's 1 s).
    pub warmup: Duration,
    /// The controlled input.
    pub input: controller::PadInput,
    /// Synth workers on the host (0: its network thread runs the synth).
    pub workers: usize,
    /// How the host's network thread waits.
    pub poll: host::PollMode,
    /// Policy of every thread (host and controller).
    pub policy: Policy,
    /// CPUs of the host's threads.
    pub host_cpus: Option<Vec<usize>>,
    /// CPUs of the controller's threads.
    pub controller_cpus: Option<Vec<usize>>,
    /// An abusive UDP stream at this many Mbit/s towards the host, from a third socket
    /// (the study's abusive streaming application); the host counts it as foreign.
    pub flood_mbps: Option<u32>,
    /// Put the two ends in two network namespaces joined by a veth pair (root), instead
    /// of loopback.
    pub netns: bool,
    /// The host's runtime in a cell: its threads join the cell's groups and take its
    /// policy and CPUs (instead of `policy` and `host_cpus`).
    pub host_cell: Option<qos::partition::PlacedCell>,
    /// The controller-to-host direction shaped to a capacity, with or without a
    /// reservation for the audio flow.
    pub link: Option<LinkShaping>,
    /// An abusive data stream from the controller's side to a sink application beside
    /// the host (the study's Figure 8), sharing the link with the audio flow.
    pub stream: Option<StreamConfig>,
    /// Causes asked for (`--why`): the kernel traced and each block that missed its
    /// deadline explained on the host's network thread.
    pub why: Option<crate::why::WhyConfig>,
}

impl NetConfig {
    /// The defaults: `duration` of synth after a 1 s warm-up, no reference phase, 8 pads
    /// pressed at (0.5, 0.5, 0.8), the network thread running the synth and blocking in
    /// `recvmmsg`, SCHED_FIFO 70, over loopback, no cells, no shaping, no interference.
    pub fn new(duration: Duration) -> NetConfig {
        NetConfig {
            duration,
            reference_duration: Duration::ZERO,
            warmup: Duration::from_secs(1),
            input: controller::fixed_input(8, 0.5, 0.5, 0.8),
            workers: 0,
            poll: host::PollMode::Block,
            policy: Policy::Fifo { priority: 70 },
            host_cpus: None,
            controller_cpus: None,
            flood_mbps: None,
            netns: false,
            host_cell: None,
            link: None,
            stream: None,
            why: None,
        }
    }
}

impl NetConfig {
    /// The configuration as stored with the run (before the lifecycle adds its load and
    /// cells): the transport in words, times in seconds, the pressed pads and the first
    /// one's position, the wire's constants.
    pub fn record(&self) -> NetConfigRecord {
        let pressed: Vec<usize> = (0..self.input.len())
            .filter(|&p| self.input[p].pressure > 0.0)
            .collect();
        let first = self.input.iter().find(|p| p.pressure > 0.0);
        NetConfigRecord {
            transport: if self.netns {
                format!(
                    "UDP over a veth pair between two network namespaces (host {}, controller {}), controller and host in this process",
                    netns::HOST_IP,
                    netns::CONTROLLER_IP
                )
            } else {
                "UDP over loopback (127.0.0.1), controller and host in this process".to_string()
            },
            duration_s: self.duration.as_secs_f64(),
            reference_duration_s: self.reference_duration.as_secs_f64(),
            warmup_s: self.warmup.as_secs_f64(),
            pads_pressed: pressed,
            pad: first.map(|p| PadRecord {
                x: p.x,
                y: p.y,
                pressure: p.pressure,
            }),
            workers: self.workers,
            poll: self.poll.to_string(),
            host_cpus: self.host_cpus.clone(),
            controller_cpus: self.controller_cpus.clone(),
            deadline_ns: wire::DEADLINE_NS,
            packet_interval_ns: wire::PACKET_INTERVAL_NS,
            block_period_ns: wire::BLOCK_PERIOD_NS,
            link: self.link.map(|l| LinkRecord {
                mbps: l.mbps,
                reserve_mbps: l.reserve_mbps,
                by: match l.by {
                    ReserveBy::Tc => LinkBy::Tc,
                    ReserveBy::Service => LinkBy::Service,
                },
            }),
            stream: self
                .stream
                .as_ref()
                .map(|s| StreamSettingRecord { mbps: s.mbps }),
            load: None,
            repeat: None,
            cells: None,
            host_cell: None,
        }
    }

    /// The CPUs its threads are pinned to outside any cell: the host's and the
    /// controller's, once each.
    pub fn pinned_cpus(&self) -> Vec<usize> {
        let mut cpus: Vec<usize> = self
            .host_cpus
            .iter()
            .chain(&self.controller_cpus)
            .flatten()
            .copied()
            .collect();
        cpus.sort_unstable();
        cpus.dedup();
        cpus
    }

    /// The host's threads for admission control: its network thread and workers, which
    /// spin when it polls without sleeping or has workers.
    pub fn host_threads(&self) -> qos::HostThreads {
        qos::HostThreads {
            threads: 1 + self.workers,
            spinning: self.poll == host::PollMode::Spin || self.workers > 0,
        }
    }
}

/// Who reserves bandwidth on the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReserveBy {
    /// The kernel: `tc` HTB on the controller's veth (needs `netns`).
    Tc,
    /// audiolat's user-level network service: FIFO without a reservation, mClock with.
    Service,
}

impl std::fmt::Display for ReserveBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ReserveBy::Tc => "tc",
            ReserveBy::Service => "mclock",
        })
    }
}

impl std::str::FromStr for ReserveBy {
    type Err = String;

    /// `tc` or `mclock` (the [`Display`](std::fmt::Display) spelling).
    fn from_str(s: &str) -> Result<ReserveBy, String> {
        match s {
            "tc" => Ok(ReserveBy::Tc),
            "mclock" => Ok(ReserveBy::Service),
            _ => Err("use tc or mclock".into()),
        }
    }
}

/// The controller-to-host direction, shaped.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkShaping {
    /// The link's capacity, Mbit/s (the study's 1 Gbit/s).
    pub mbps: f64,
    /// Guaranteed to the audio flow, Mbit/s; `None`: no guarantee.
    pub reserve_mbps: Option<f64>,
    /// Who shapes and reserves.
    pub by: ReserveBy,
}

/// The abusive stream.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamConfig {
    /// Offered rate, Mbit/s of payload; `None`: one and a half times the link's capacity
    /// (1000 without a shaped link): more than the link takes.
    pub mbps: Option<u32>,
    /// Cgroup `tasks` files the sink's thread joins (its cell).
    pub sink_groups: Vec<std::path::PathBuf>,
}

/// What the abusive stream did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamOutcome {
    /// Datagrams the sender handed over (to the kernel or the service).
    pub sent: u64,
    /// Of those, refused at once (a full queue).
    pub refused: u64,
    /// Offered Mbit/s (payload).
    pub offered_mbps: f64,
    /// Datagrams the sink received.
    pub received: u64,
    /// Mbit/s of payload the sink received: what the link let through.
    pub received_mbps: f64,
}

/// One phase: what both ends measured.
#[derive(Debug)]
pub struct Phase {
    /// The host's side (`t2 - t1`).
    pub host: HostOutcome,
    /// The controller's side (`tf - t0`, pacing).
    pub controller: ControllerOutcome,
    /// Flood datagrams sent and the rate they achieved (Mbit/s), if a flood ran.
    pub flood: Option<(u64, f64)>,
    /// The abusive stream, if one ran.
    pub stream: Option<StreamOutcome>,
    /// The user-level service, if it carried the controller's packets.
    pub service: Option<service::ServiceOutcome>,
    /// The HTB classes' counters on the controller's link by class id, if `tc` shaped it
    /// (and could be asked).
    pub tc_classes: Option<std::collections::BTreeMap<String, netns::ClassStats>>,
    /// The kernel's softirq threads (`ksoftirqd/N`) over the phase, summed: network work
    /// deferred to them waits there for a CPU.
    pub kernel_softirq: Option<engine::rt::SchedStat>,
}

/// Both phases and the host steal over the run.
#[derive(Debug)]
pub struct NetOutcome {
    /// The reference phase (no synthesis), if run.
    pub reference: Option<Phase>,
    /// The synth phase, if it was reached.
    pub synth: Option<Phase>,
    /// Stopped by the caller before the end.
    pub interrupted: bool,
    /// Host steal during the run.
    pub steal: StealTimeline,
    /// Run start and end, monotonic ns.
    pub start_ns: u64,
    /// Run end.
    pub end_ns: u64,
    /// What the kernel's trace said of the blocks that missed their deadline (`--why`),
    /// or why it could not.
    pub why: Option<crate::why::WhyOutcome>,
}

/// Runs the reference phase (if any), then the synth phase. Raising `stop` ends the
/// phase running and skips the next; what was measured is kept.
pub fn run(config: &NetConfig, stop: &AtomicBool) -> Result<NetOutcome, NetError> {
    if config.workers > 64 {
        return Err(NetError::Config(format!(
            "{} synth workers: use 0 (the network thread runs the synth) to 64",
            config.workers
        )));
    }
    if config.link.is_some_and(|l| l.by == ReserveBy::Tc) && !config.netns {
        return Err(NetError::Config(
            "tc shaping needs network namespaces: it shapes the veth link between the two namespaces".into(),
        ));
    }
    let link = if config.netns {
        let pair = netns::NetnsPair::create()?;
        if let Some(
            shape @ LinkShaping {
                by: ReserveBy::Tc, ..
            },
        ) = config.link
        {
            pair.shape(netns::End::Controller, shape.mbps, shape.reserve_mbps)?;
        }
        Some(pair)
    } else {
        None
    };
    engine::phase::reached(engine::phase::Phase::Netns);
    let steal = StealSampler::start(Duration::from_millis(50), None);
    let session = config.why.map(|_| crate::why::start(None));
    let traced = session.as_ref().and_then(|s| s.as_ref().ok());
    let start_ns = monotonic_ns();
    let reference = if config.reference_duration.is_zero() {
        None
    } else {
        Some(phase::run_phase(
            config,
            link.as_ref(),
            false,
            config.reference_duration,
            stop,
            traced,
        )?)
    };
    if reference.is_some() {
        engine::phase::reached(engine::phase::Phase::NetSynth);
    }
    let synth = if stop.load(Ordering::Relaxed) {
        None
    } else {
        Some(phase::run_phase(
            config,
            link.as_ref(),
            true,
            config.duration,
            stop,
            traced,
        )?)
    };
    drop(link);
    Ok(NetOutcome {
        reference,
        synth,
        interrupted: stop.load(Ordering::Relaxed),
        steal: steal.finish(),
        start_ns,
        end_ns: monotonic_ns(),
        why: session.map(crate::why::WhyOutcome::of),
    })
}

#[cfg(test)]
mod tests {
    use super::ReserveBy;

    #[test]
    fn reserve_by_parses_its_own_spelling() {
        assert_eq!("tc".parse::<ReserveBy>(), Ok(ReserveBy::Tc));
        assert_eq!("mclock".parse::<ReserveBy>(), Ok(ReserveBy::Service));
        assert_eq!("htb".parse::<ReserveBy>(), Err("use tc or mclock".into()));
    }
}
