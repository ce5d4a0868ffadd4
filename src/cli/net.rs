//! `audiolat net` (both ends here): its flags and cells (stage one), and the
//! [`NetConfig`] built from them by `probes::net::NetSetup` (stage two), its errors in
//! the flags' words. The two-machine roles and the study's
//! experiments are in [`super::net_roles`].

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use engine::rt::{Policy, SchedClass};
use load::LoadSpec;
use probes::net::{NetConfig, NetConfigError, NetSetting};

use super::net_roles::NetRole;
use super::policy::policy;
use super::values::{cpu_list, parse_f64, parse_load, parse_priority, parse_seconds};
use super::UsageError;

#[derive(Debug, Clone, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct NetArgs {
    /// Run one end only (on two machines, or two namespaces): `respond` is the host,
    /// `emulate` the controller. Without one, both run here over loopback.
    #[command(subcommand)]
    pub role: Option<NetRole>,
    /// Measured time of the synth phase, after the warm-up (at most 1 hour).
    #[arg(long, short = 'D', value_name = "DURATION", default_value = "10s", value_parser = parse_seconds)]
    pub duration: Duration,
    /// Measured time of the reference phase first: a host that answers at once without
    /// synthesis, so the synth's share shows against the network path's (at most 1 hour).
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_seconds)]
    pub reference: Duration,
    /// Skip the reference phase.
    #[arg(long, conflicts_with = "reference")]
    pub no_reference: bool,
    /// Warm-up of each phase, answered but not counted (the study's 1 s; at most 60 s).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_seconds)]
    pub warmup: Duration,
    #[command(flatten)]
    pub input: InputArgs,
    /// Synth worker threads on the host: the synth split over the network thread and N
    /// workers (0: the network thread runs it all; at most the online CPUs minus one).
    #[arg(long, value_name = "N", default_value_t = 0, allow_hyphen_values = true, value_parser = parse_workers)]
    pub workers: usize,
    /// How the host's network thread waits: block (sleep in recvmmsg), spin (poll
    /// without blocking, as the study's runtime; takes a whole CPU) or periodic (poll,
    /// then sched_yield: a time-triggered cell's jobs). Default: periodic in a
    /// time-triggered cell, block otherwise (a spinning SCHED_FIFO thread is stopped 50 ms
    /// a second by the kernel's RT throttling, even on a dedicated CPU).
    #[arg(long, value_name = "MODE", value_parser = str::parse::<netaudio::host::PollMode>)]
    pub poll: Option<netaudio::host::PollMode>,
    /// Scheduling policy of every thread of both ends.
    #[arg(long, value_name = "POLICY", default_value = "fifo", value_parser = str::parse::<SchedClass>)]
    pub policy: SchedClass,
    /// Real-time priority for fifo/rr (1..99; default 70).
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = parse_priority)]
    pub priority: Option<i64>,
    /// CPUs of the host's threads: the network thread takes the first, workers the next.
    #[arg(long, value_name = "CPUS", allow_hyphen_values = true)]
    pub host_cpus: Option<String>,
    /// CPUs of the controller's sender and receiver.
    #[arg(long, value_name = "CPUS", allow_hyphen_values = true)]
    pub controller_cpus: Option<String>,
    /// Background load (see jitter), plus video, flood[:mbit/s] (junk at the host's own
    /// port) and stream[:mbit/s] (an abusive data stream to a sink beside the host,
    /// sharing the link). `ep@others` runs an item in a cell.
    #[arg(long, value_name = "SPEC", default_value = "none", value_parser = parse_load)]
    pub load: LoadSpec,
    /// Run the two ends in two network namespaces joined by a veth pair (needs root)
    /// instead of over loopback.
    #[arg(long)]
    pub netns: bool,
    #[command(flatten)]
    pub cells: CellArgs,
    /// Shape the controller-to-host direction to this capacity (Mbit/s, 1 to 100000; 1G
    /// is 1000).
    #[arg(long, value_name = "RATE", value_parser = qos::parse_mbps)]
    pub link: Option<f64>,
    /// Guarantee the audio flow this much of the link (Mbit/s, 0.001 to the link's).
    #[arg(long, value_name = "RATE", value_parser = qos::parse_mbps, requires = "link")]
    pub reserve: Option<f64>,
    /// Who shapes the link and keeps the reservation: tc (the kernel's HTB on the veth
    /// link; needs --netns) or mclock (audiolat's own user-level network service: FIFO
    /// without --reserve, mClock with).
    #[arg(long, value_name = "HOW", default_value = "tc", value_parser = str::parse::<probes::net::ReserveBy>)]
    pub reserve_by: probes::net::ReserveBy,
    #[command(flatten)]
    pub scratch: super::values::ScratchArgs,
    /// Explain every block that missed its deadline from the kernel's own trace: which
    /// IRQ, softirq or thread held the host's network thread off (needs root and tracefs;
    /// without them the run measures and says why).
    #[arg(long)]
    pub why: bool,
    #[command(flatten)]
    pub output: super::values::OutputArgs,
    #[command(flatten)]
    pub gates: super::values::GateArgs,
}

/// What `audiolat net` runs, built once from its flags (stage two).
#[derive(Debug)]
pub struct NetRequest {
    /// The measurement, with the load's flood.
    pub config: NetConfig,
    /// The cells of `--cell` and `--cells`, and the host's.
    pub placement: qos::CellPlan,
    /// Directory for the io load's files: `--scratch-dir`, else the database's directory.
    pub scratch: PathBuf,
}

impl NetArgs {
    /// Stage two: the cells, the checked configuration, the load checked against the
    /// machine, and admission control of the cells, before anything is printed or
    /// stored. `default_scratch` is the database's directory.
    pub fn request(&self, default_scratch: &std::path::Path) -> anyhow::Result<NetRequest> {
        let cells = self.cells.cell_set()?;
        let config = self.config(&cells)?;
        let scratch = self.scratch.or(default_scratch);
        crate::run_errors::check_net_load(&self.load, &scratch)?;
        let placement = qos::CellPlan {
            cells,
            host_cell: self.cells.host_cell.clone(),
        };
        runner::admit_net(&placement, &config, &self.load)
            .map_err(crate::run_errors::cells_refusal)?;
        Ok(NetRequest {
            config,
            placement,
            scratch,
        })
    }

    /// The configuration from the flags, checked against `cells` (the
    /// [`CellArgs::cell_set`]) and the machine (root for `--netns`, `ip` and `tc`
    /// installed), with the load's flood.
    pub fn config(&self, cells: &qos::CellSet) -> Result<NetConfig, UsageError> {
        let host_cell = self
            .cells
            .host_cell
            .as_deref()
            .and_then(|h| cells.get(h))
            .map(|c| c.kind);
        let setup = probes::net::NetSetup {
            duration: self.duration,
            reference_duration: if self.no_reference {
                Duration::ZERO
            } else {
                self.reference
            },
            warmup: self.warmup,
            input: netaudio::controller::fixed_input(
                self.input.pads,
                self.input.x,
                self.input.y,
                self.input.pressure,
            ),
            workers: self.workers,
            poll: self.poll,
            host_threads_placed: self.host_cpus.is_some() || self.priority.is_some(),
            host_cell,
            netns: self.netns,
            link: self.link.map(|mbps| probes::net::LinkShaping {
                mbps,
                reserve_mbps: self.reserve,
                by: self.reserve_by,
            }),
            load: &self.load,
        };
        let config = setup.config().map_err(net_usage)?;
        Ok(NetConfig {
            why: self.why.then_some(probes::why::WhyConfig {
                above_ns: probes::why::DEFAULT_ABOVE_NS,
            }),
            policy: thread_policy(self.policy, self.priority)?,
            host_cpus: cpu_list("--host-cpus", &self.host_cpus)?,
            controller_cpus: cpu_list("--controller-cpus", &self.controller_cpus)?,
            ..config
        })
    }
}

/// A [`NetConfigError`] in the words of `audiolat net`'s flags.
pub fn net_usage(e: NetConfigError) -> UsageError {
    UsageError(match e {
        NetConfigError::OutOfRange { setting, value } => {
            let flag = match setting {
                NetSetting::Duration => "--duration",
                NetSetting::Reference => "--reference",
                NetSetting::Warmup => "--warmup",
                NetSetting::Link => "--link",
                NetSetting::Reserve => "--reserve",
            };
            format!("{flag} {value} is out of range: {}", setting.range())
        }
        NetConfigError::HostCellOwnsThreads => "--host-cell gives the host's threads their CPUs and policy: leave out --host-cpus and --priority".into(),
        NetConfigError::ReserveExceedsLink { reserve, link } => format!(
            "--reserve {} Mbit/s exceeds --link {link} Mbit/s by {} Mbit/s: reserve at most the link's {link} Mbit/s",
            super::values::number(reserve),
            super::values::number(reserve - link)
        ),
        NetConfigError::NetnsNeedsRoot => "--netns makes network namespaces, which needs root: run as root, or leave --netns out to use loopback".into(),
        NetConfigError::ToolMissing { tool } => format!(
            "--netns needs `{tool}`, which is not installed: install the iproute2 package (apt install iproute2)"
        ),
        NetConfigError::TcNeedsNetns => "--link with --reserve-by tc shapes the veth link between two namespaces: add --netns (root), or use --reserve-by mclock".into(),
        NetConfigError::FloodInCell => e.to_string(),
    })
}

/// Cells: named sets of threads with guaranteed resources.
#[derive(Debug, Clone, Args, Default)]
pub struct CellArgs {
    /// A cell (repeat for more): NAME=KIND[:key=value,...]. KIND is dedicated (exclusive
    /// CPUs, SCHED_FIFO), time-triggered or event-triggered (SCHED_DEADLINE) or
    /// best-effort (other, batch or idle on the CPUs left over); keys cpus, priority,
    /// policy, nice, runtime, deadline, period, bandwidth. E.g.
    /// music=dedicated:cpus=1 others=best-effort:policy=batch.
    #[arg(long = "cell", value_name = "SPEC")]
    pub cell: Vec<String>,
    /// Cells from a TOML file: [cell.NAME] tables with the same keys.
    #[arg(long = "cells", value_name = "FILE")]
    pub cells_file: Option<PathBuf>,
    /// The cell the host's runtime (network thread and synth workers) runs in.
    #[arg(long, value_name = "NAME")]
    pub host_cell: Option<String>,
}

impl CellArgs {
    /// The cell set the flags and file describe.
    pub fn cell_set(&self) -> Result<qos::CellSet, UsageError> {
        let mut set = match &self.cells_file {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| UsageError(format!("--cells {}: {e}", path.display())))?;
                qos::CellSet::from_toml(&text)
                    .map_err(|e| UsageError(format!("--cells {}: {e}", path.display())))?
            }
            None => qos::CellSet::default(),
        };
        for flag in &self.cell {
            let cell =
                qos::CellSet::parse_flag(flag).map_err(|e| UsageError(format!("--cell: {e}")))?;
            set.push(cell)
                .map_err(|e| UsageError(format!("--cell: {e}")))?;
        }
        if let Some(h) = &self.host_cell {
            if set.get(h).is_none() {
                return Err(UsageError(format!(
                    "--host-cell {h}: no such cell; define it with --cell {h}=KIND:... or in --cells"
                )));
            }
        }
        Ok(set)
    }
}

/// The controlled input: the pads pressed and where (`net` and `net emulate`).
#[derive(Debug, Clone, Args)]
pub struct InputArgs {
    /// Pads pressed in the controlled input (0..32; each plays one synth object).
    #[arg(long, value_name = "N", default_value_t = 8, allow_hyphen_values = true, value_parser = parse_pads)]
    pub pads: usize,
    /// The pressed pads' x (0..1: the width of the pitch distribution).
    #[arg(long, value_name = "X", default_value_t = 0.5, allow_hyphen_values = true, value_parser = parse_unit)]
    pub x: f32,
    /// The pressed pads' y (0..1: which of the four pitch tables).
    #[arg(long, value_name = "Y", default_value_t = 0.5, allow_hyphen_values = true, value_parser = parse_unit)]
    pub y: f32,
    /// The pressed pads' pressure (0..1: the objects' amplitude).
    #[arg(long, value_name = "P", default_value_t = 0.8, allow_hyphen_values = true, value_parser = parse_unit)]
    pub pressure: f32,
}

fn parse_pads(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n <= 32 => Ok(n),
        _ => Err("use 0 to 32 pads (the controller has 32)".into()),
    }
}

fn parse_unit(s: &str) -> Result<f32, String> {
    let v = parse_f64(s)?;
    if !(0.0..=1.0).contains(&v) {
        return Err("use a value from 0 to 1".into());
    }
    Ok(v as f32)
}

pub(super) fn parse_workers(s: &str) -> Result<usize, String> {
    let cpus = engine::rt::online_cpus().len().max(1);
    match s.trim().parse::<usize>() {
        Ok(n) if n < cpus => Ok(n),
        Ok(n) => Err(format!(
            "{n} workers and the calling thread on {cpus} CPUs would spin against each other: use 0 to {} (the calling thread renders a part too, and each thread spins on a CPU of its own)",
            cpus - 1
        )),
        Err(_) => Err(format!(
            "use a whole number of worker threads from 0 to {}",
            cpus - 1
        )),
    }
}

/// The scheduling policy of one end's threads (fifo and rr at priority 70 unless told).
pub fn thread_policy(class: SchedClass, priority: Option<i64>) -> Result<Policy, UsageError> {
    if class == SchedClass::Deadline {
        return Err(UsageError(
            "--policy deadline is not for net's threads (they poll or wait on packets, not on a period): use fifo, rr or other".into(),
        ));
    }
    let priority = priority.or(match class {
        SchedClass::Fifo | SchedClass::RoundRobin => Some(70),
        _ => None,
    });
    policy(class, priority, 1_000_000, 0.0, None, None)
}
