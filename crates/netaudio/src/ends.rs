//! One end of a two-machine run, as it is asked for: a host answering a controller
//! ([`HostSetup`]) or a controller streaming to a host ([`ControllerSetup`]). Each is
//! what its run stores (as `probes::net`'s record of it) and builds its end's checked
//! configuration ([`host::HostConfig`], [`controller::ControllerConfig`]); a setting that
//! makes no run is an [`EndConfigError`] naming the problem.

use std::net::SocketAddr;
use std::time::Duration;

use engine::rt::Policy;

use crate::{blocks_in, controller, host};

/// Longest warm-up of an end (and of a run of both ends).
pub const MAX_WARMUP: Duration = Duration::from_secs(60);

/// Why an end's settings make no run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EndConfigError {
    /// The warm-up is longer than [`MAX_WARMUP`].
    #[error("a warm-up of {0:?} is out of range: use at most 60 s")]
    Warmup(Duration),
    /// A host away from loopback without the controller it answers.
    #[error("a host bound to {bind}, away from loopback, answers only its configured controller: name that controller")]
    NoPeer {
        /// The host's address.
        bind: SocketAddr,
    },
    /// A controller given no host address or port to stream to.
    #[error("host {host}: name the host's address and port, e.g. 127.0.0.1:9700")]
    NoHost {
        /// The address given.
        host: SocketAddr,
    },
}

/// A host answering a controller's blocks.
#[derive(Clone, Debug, PartialEq)]
pub struct HostSetup {
    /// Address it listens on.
    pub bind: SocketAddr,
    /// The controller it answers (others are counted and dropped); `None`: the first
    /// sender that completes a block ([`host::Latch`]), which only a host on loopback
    /// may do.
    pub peer: Option<SocketAddr>,
    /// How long it serves; `None`: until stopped.
    pub serve_for: Option<Duration>,
    /// Blocks in this first part of the run are answered but not counted.
    pub warmup: Duration,
    /// Answer with the Migrator synth (else silence at once: the reference host).
    pub synth: bool,
    /// Synth worker threads beside the network thread, which renders a part too (0: the
    /// network thread runs the whole synth).
    pub workers: usize,
    /// How the network thread waits.
    pub poll: host::PollMode,
    /// Policy of its threads.
    pub policy: Policy,
    /// CPUs of its threads (the network thread takes the first).
    pub cpus: Option<Vec<usize>>,
}

impl HostSetup {
    /// The host's configuration, counting from the first block after the warm-up; a host
    /// away from loopback must name its peer.
    pub fn config(&self) -> Result<host::HostConfig, EndConfigError> {
        if self.warmup > MAX_WARMUP {
            return Err(EndConfigError::Warmup(self.warmup));
        }
        if !self.bind.ip().is_loopback() && self.peer.is_none() {
            return Err(EndConfigError::NoPeer { bind: self.bind });
        }
        Ok(host::HostConfig {
            peer: self.peer,
            synth: self.synth,
            workers: self.workers,
            policy: self.policy,
            cpus: self.cpus.clone(),
            groups: Vec::new(),
            poll: self.poll,
            warmup: host::Warmup::FirstBlocks(blocks_in(self.warmup)),
        })
    }

    /// One line of what the host does: where it listens, whom it answers and with what.
    pub fn summary(&self) -> String {
        let answering = match self.peer {
            Some(p) => format!("answering {p} only"),
            None => "answering the first sender to complete a block".into(),
        };
        let with = match self.synth {
            true => format!(
                "Migrator synth on the network thread and {} workers",
                self.workers
            ),
            false => "answering silence (no synth)".into(),
        };
        format!("listening on {}, {answering}, {with}", self.bind)
    }
}

/// A controller streaming the study's controlled input to a host.
#[derive(Clone, Debug, PartialEq)]
pub struct ControllerSetup {
    /// The host's address and port.
    pub host: SocketAddr,
    /// Local address it sends from.
    pub bind: SocketAddr,
    /// Measured time, after the warm-up.
    pub duration: Duration,
    /// Warm-up, sent but not counted.
    pub warmup: Duration,
    /// Pads pressed (see [`controller::fixed_input`]).
    pub pads: usize,
    /// The pressed pads' x.
    pub x: f32,
    /// The pressed pads' y.
    pub y: f32,
    /// The pressed pads' pressure.
    pub pressure: f32,
    /// Policy of its threads.
    pub policy: Policy,
    /// CPUs of its threads (the sender takes the first).
    pub cpus: Option<Vec<usize>>,
}

impl ControllerSetup {
    /// The controller's configuration, draining answers for 100 ms after the last block;
    /// the host must have an address and a port.
    pub fn config(&self) -> Result<controller::ControllerConfig, EndConfigError> {
        if self.warmup > MAX_WARMUP {
            return Err(EndConfigError::Warmup(self.warmup));
        }
        if self.host.ip().is_unspecified() || self.host.port() == 0 {
            return Err(EndConfigError::NoHost { host: self.host });
        }
        Ok(controller::ControllerConfig {
            host: self.host,
            input: controller::fixed_input(self.pads, self.x, self.y, self.pressure),
            blocks: blocks_in(self.duration),
            warmup_blocks: blocks_in(self.warmup),
            drain_ns: 100_000_000,
            policy: self.policy,
            cpus: self.cpus.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host_setup(bind: &str) -> HostSetup {
        HostSetup {
            bind: bind.parse().unwrap(),
            peer: None,
            serve_for: None,
            warmup: Duration::from_secs(1),
            synth: false,
            workers: 0,
            poll: host::PollMode::Block,
            policy: Policy::Other { nice: 0 },
            cpus: None,
        }
    }

    #[test]
    fn a_host_away_from_loopback_names_its_peer() {
        let far = host_setup("10.0.0.1:9700");
        assert!(matches!(far.config(), Err(EndConfigError::NoPeer { .. })));
        let near = host_setup("127.0.0.1:9700").config().unwrap();
        assert_eq!(
            near.warmup,
            host::Warmup::FirstBlocks(blocks_in(Duration::from_secs(1)))
        );
        assert!(!near.synth);
        assert_eq!(
            far.summary(),
            "listening on 10.0.0.1:9700, answering the first sender to complete a block, answering silence (no synth)"
        );
    }

    #[test]
    fn a_controller_needs_a_host_address_and_port() {
        let mut c = ControllerSetup {
            host: "0.0.0.0:9700".parse().unwrap(),
            bind: "127.0.0.1:9701".parse().unwrap(),
            duration: Duration::from_secs(2),
            warmup: Duration::from_secs(1),
            pads: 8,
            x: 0.5,
            y: 0.5,
            pressure: 0.8,
            policy: Policy::Other { nice: 0 },
            cpus: None,
        };
        assert!(matches!(c.config(), Err(EndConfigError::NoHost { .. })));
        c.host = "127.0.0.1:9700".parse().unwrap();
        assert_eq!(
            c.config().unwrap().blocks,
            blocks_in(Duration::from_secs(2))
        );
    }
}
