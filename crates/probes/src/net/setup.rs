//! A checked [`NetConfig`] from what a run asks for ([`NetSetup`]): the defaults that
//! depend on other settings (how the host's network thread waits in a cell), the
//! consistency checks between settings (a reservation within its link, a host cell
//! that owns its threads, a flood in no cell) and what the machine must have for them
//! (root and `ip`/`tc` for network namespaces). Each problem is a [`NetConfigError`]
//! that names it; the threads' policy and CPUs are the caller's (they keep
//! [`NetConfig::new`]'s defaults here).

use std::time::Duration;

use netaudio::{controller, host};

use super::{LinkShaping, NetConfig, ReserveBy, StreamConfig};

/// What an `audiolat net` run asks for, before its checks.
#[derive(Clone, Debug)]
pub struct NetSetup<'a> {
    /// Measured time of the synth phase (after the warm-up).
    pub duration: Duration,
    /// Measured time of the reference phase; zero skips it.
    pub reference_duration: Duration,
    /// Warm-up before each phase's counted blocks.
    pub warmup: Duration,
    /// The controlled input.
    pub input: controller::PadInput,
    /// Synth workers on the host.
    pub workers: usize,
    /// How the host's network thread waits; `None`: periodic in a time-triggered cell,
    /// block otherwise (a spinning SCHED_FIFO thread is stopped 50 ms a second by the
    /// kernel's RT throttling, even on a dedicated CPU).
    pub poll: Option<host::PollMode>,
    /// The host's threads were given CPUs or a priority of their own.
    pub host_threads_placed: bool,
    /// The kind of the cell the host's runtime runs in, if any.
    pub host_cell: Option<qos::CellKind>,
    /// Two network namespaces joined by a veth pair instead of loopback.
    pub netns: bool,
    /// The controller-to-host direction shaped.
    pub link: Option<LinkShaping>,
    /// The background load (its flood and stream become the run's).
    pub load: &'a load::LoadSpec,
}

/// Longest measured phase (the synth's, the reference's): the host keeps every block's
/// response (16 bytes, one every 726 µs), about 80 MB an hour.
pub const MAX_PHASE: Duration = Duration::from_secs(3600);
/// Longest warm-up of a phase (an end's, as when the ends run apart).
pub const MAX_WARMUP: Duration = netaudio::ends::MAX_WARMUP;
/// The link capacities a run may shape to, Mbit/s: from 1 Mbit/s (the audio flow needs
/// a few hundred kbit/s) to 100 Gbit/s (beyond any link tc or the service paces here).
pub const LINK_RANGE_MBPS: std::ops::RangeInclusive<f64> = 1.0..=100_000.0;
/// The smallest reservation, Mbit/s: 1 kbit/s, the unit tc's rates are given in.
pub const MIN_RESERVE_MBPS: f64 = 0.001;

/// A setting [`NetSetup::config`] refuses by name when it is out of its range: a front
/// end words it with what sets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetSetting {
    /// The synth phase's measured time.
    Duration,
    /// The reference phase's measured time.
    Reference,
    /// Each phase's warm-up.
    Warmup,
    /// The link's capacity.
    Link,
    /// The audio flow's reservation.
    Reserve,
}

impl NetSetting {
    /// The setting's name in the library's own words.
    pub fn name(self) -> &'static str {
        match self {
            NetSetting::Duration => "the measured time",
            NetSetting::Reference => "the reference phase",
            NetSetting::Warmup => "the warm-up",
            NetSetting::Link => "the link's capacity",
            NetSetting::Reserve => "the reservation",
        }
    }

    /// What the setting takes.
    pub fn range(self) -> String {
        match self {
            NetSetting::Duration => "use at most 1 hour (every block's response is kept)".into(),
            NetSetting::Reference => {
                "use at most 1 hour (every block's response is kept), or none".into()
            }
            NetSetting::Warmup => "use at most 60 s".into(),
            NetSetting::Link => format!(
                "use {} to {} Mbit/s",
                LINK_RANGE_MBPS.start(),
                LINK_RANGE_MBPS.end()
            ),
            NetSetting::Reserve => {
                format!("use {MIN_RESERVE_MBPS} Mbit/s (1 kbit/s) to the link's capacity")
            }
        }
    }
}

/// Checks a run's times and its link against their ranges: `duration` (more than 0, at
/// most [`MAX_PHASE`]), `reference` (at most [`MAX_PHASE`]), `warmup` (at most
/// [`MAX_WARMUP`]), the link's capacity ([`LINK_RANGE_MBPS`]) and a reservation (at
/// least [`MIN_RESERVE_MBPS`]; [`NetSetup::config`] holds it within the link).
/// [`NetSetup::config`] checks its own; the study's experiments check theirs with it.
pub fn check_ranges(
    duration: Duration,
    reference: Duration,
    warmup: Duration,
    link_mbps: Option<f64>,
    reserve_mbps: Option<f64>,
) -> Result<(), NetConfigError> {
    let out = |setting, value: String| Err(NetConfigError::OutOfRange { setting, value });
    if duration.is_zero() || duration > MAX_PHASE {
        return out(NetSetting::Duration, format!("{duration:?}"));
    }
    if reference > MAX_PHASE {
        return out(NetSetting::Reference, format!("{reference:?}"));
    }
    if warmup > MAX_WARMUP {
        return out(NetSetting::Warmup, format!("{warmup:?}"));
    }
    if let Some(link) = link_mbps {
        if !LINK_RANGE_MBPS.contains(&link) {
            return out(NetSetting::Link, format!("{link} Mbit/s"));
        }
    }
    if let Some(reserve) = reserve_mbps {
        if reserve < MIN_RESERVE_MBPS {
            return out(NetSetting::Reserve, format!("{reserve} Mbit/s"));
        }
    }
    Ok(())
}

/// Why a [`NetSetup`] makes no run.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum NetConfigError {
    /// A setting out of its range; `value` is what was asked, with its unit.
    #[error("{} {value} is out of range: {}", setting.name(), setting.range())]
    OutOfRange {
        /// The setting.
        setting: NetSetting,
        /// Its value, as asked.
        value: String,
    },
    /// A host cell gives the host's threads their CPUs and policy, yet they were given
    /// their own.
    #[error("the host's cell gives its threads their CPUs and policy: give them no CPUs or priority of their own")]
    HostCellOwnsThreads,
    /// The reservation is more than the link carries.
    #[error("a reservation of {reserve} Mbit/s exceeds the link's {link} Mbit/s by {} Mbit/s", reserve - link)]
    ReserveExceedsLink {
        /// Reserved, Mbit/s.
        reserve: f64,
        /// The link's capacity, Mbit/s.
        link: f64,
    },
    /// Network namespaces need root.
    #[error("network namespaces need root: run as root, or use loopback")]
    NetnsNeedsRoot,
    /// A tool network namespaces need is not installed.
    #[error("network namespaces need `{tool}`, which is not installed: install the iproute2 package (apt install iproute2)")]
    ToolMissing {
        /// `ip` or `tc`.
        tool: &'static str,
    },
    /// tc shapes the veth link between two namespaces, and there are none.
    #[error("tc shapes the veth link between two network namespaces: use namespaces (root), or reserve with mclock")]
    TcNeedsNetns,
    /// The flood was given a cell.
    #[error("flood runs on a thread of audiolat's own, in no cell: leave out its @cell")]
    FloodInCell,
}

impl NetSetup<'_> {
    /// The configuration, checked in this order: the times and the link against their
    /// ranges ([`check_ranges`]), the host cell against the host's own
    /// threads, the reservation against the link, root and `ip` (and `tc` for a tc-shaped
    /// link) for namespaces, a tc-shaped link in namespaces, the flood in no cell.
    pub fn config(&self) -> Result<NetConfig, NetConfigError> {
        check_ranges(
            self.duration,
            self.reference_duration,
            self.warmup,
            self.link.map(|l| l.mbps),
            self.link.and_then(|l| l.reserve_mbps),
        )?;
        if self.host_cell.is_some() && self.host_threads_placed {
            return Err(NetConfigError::HostCellOwnsThreads);
        }
        let poll = self.poll.unwrap_or(match self.host_cell {
            Some(qos::CellKind::TimeTriggered) => host::PollMode::Periodic,
            _ => host::PollMode::Block,
        });
        if let Some(LinkShaping {
            mbps: link,
            reserve_mbps: Some(reserve),
            ..
        }) = self.link
        {
            if reserve > link {
                return Err(NetConfigError::ReserveExceedsLink { reserve, link });
            }
        }
        // SAFETY: geteuid has no preconditions.
        if self.netns && unsafe { libc::geteuid() } != 0 {
            return Err(NetConfigError::NetnsNeedsRoot);
        }
        let tc_shaped = self.link.is_some_and(|l| l.by == ReserveBy::Tc);
        for (tool, wanted) in [("ip", self.netns), ("tc", self.netns && tc_shaped)] {
            if wanted && load::find_in_path(tool).is_none() {
                return Err(NetConfigError::ToolMissing { tool });
            }
        }
        if tc_shaped && !self.netns {
            return Err(NetConfigError::TcNeedsNetns);
        }
        let flood = load::LoadItem::Flood { mbps: None };
        let has_flood = self
            .load
            .items
            .iter()
            .any(|i| matches!(i, load::LoadItem::Flood { .. }));
        if has_flood && self.load.cell_of(&flood).is_some() {
            return Err(NetConfigError::FloodInCell);
        }
        Ok(NetConfig {
            reference_duration: self.reference_duration,
            warmup: self.warmup,
            input: self.input,
            workers: self.workers,
            poll,
            flood_mbps: self.load.flood_mbps(),
            netns: self.netns,
            link: self.link,
            stream: self.load.stream().map(|mbps| StreamConfig {
                mbps,
                sink_groups: Vec::new(),
            }),
            ..NetConfig::new(self.duration)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(load: &load::LoadSpec) -> NetSetup<'_> {
        NetSetup {
            duration: Duration::from_secs(2),
            reference_duration: Duration::ZERO,
            warmup: Duration::from_secs(1),
            input: controller::fixed_input(8, 0.5, 0.5, 0.8),
            workers: 0,
            poll: None,
            host_threads_placed: false,
            host_cell: None,
            netns: false,
            link: None,
            load,
        }
    }

    #[test]
    fn the_poll_default_follows_the_host_cell() {
        let none = load::LoadSpec::default();
        assert_eq!(setup(&none).config().unwrap().poll, host::PollMode::Block);
        let tt = NetSetup {
            host_cell: Some(qos::CellKind::TimeTriggered),
            ..setup(&none)
        };
        assert_eq!(tt.config().unwrap().poll, host::PollMode::Periodic);
        let placed = NetSetup {
            host_threads_placed: true,
            ..tt
        };
        assert_eq!(
            placed.config().unwrap_err(),
            NetConfigError::HostCellOwnsThreads
        );
    }

    #[test]
    fn settings_that_do_not_fit_are_named() {
        let none = load::LoadSpec::default();
        let over = NetSetup {
            link: Some(LinkShaping {
                mbps: 100.0,
                reserve_mbps: Some(150.0),
                by: ReserveBy::Service,
            }),
            ..setup(&none)
        };
        let e = over.config().unwrap_err();
        assert_eq!(
            e.to_string(),
            "a reservation of 150 Mbit/s exceeds the link's 100 Mbit/s by 50 Mbit/s"
        );
        let tc = NetSetup {
            link: Some(LinkShaping {
                mbps: 100.0,
                reserve_mbps: None,
                by: ReserveBy::Tc,
            }),
            ..setup(&none)
        };
        assert_eq!(tc.config().unwrap_err(), NetConfigError::TcNeedsNetns);
        let flood: load::LoadSpec = "flood@music".parse().unwrap();
        assert_eq!(
            setup(&flood).config().unwrap_err(),
            NetConfigError::FloodInCell
        );
        let flood: load::LoadSpec = "flood:50+stream".parse().unwrap();
        let c = setup(&flood).config().unwrap();
        assert_eq!(c.flood_mbps, Some(50));
        assert_eq!(c.stream.map(|s| s.mbps), Some(None));
    }
}
