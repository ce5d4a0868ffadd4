//! `audiolat net`'s subcommands: one end of a two-machine run (`respond`, `emulate`) and
//! the Tessellation study's experiments. Their flags (stage one), and each end's setup
//! and configuration from them (stage two; built and checked by `netaudio::ends`).

use std::time::Duration;

use clap::{Args, Subcommand};
use engine::rt::SchedClass;

use netaudio::controller::ControllerConfig;
use netaudio::ends::{ControllerSetup, EndConfigError, HostSetup};
use netaudio::host::HostConfig;

use super::net::{parse_workers, thread_policy, InputArgs};
use super::values::{cpu_list, parse_priority, parse_seconds};
use super::UsageError;

/// Which of the study's experiments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Experiment {
    /// Figure 7: the music application alone and with video players and EP beside it,
    /// without cells and with a dedicated cell.
    Isolation,
    /// Figure 8: an abusive stream on the link, with no reservation and with 240 and 150
    /// Mbit/s reserved, by tc and by mClock (root: two network namespaces).
    Bandwidth,
}

#[derive(Debug, Clone, Args)]
pub struct ExperimentArgs {
    /// isolation (Figure 7) or bandwidth (Figure 8).
    #[arg(value_enum)]
    pub which: Experiment,
    /// Measured time of each run, after its warm-up (the study's: 3 minutes; at most 1
    /// hour).
    #[arg(long, short = 'D', value_name = "DURATION", default_value = "10s", value_parser = parse_seconds)]
    pub duration: Duration,
    /// Warm-up of each run (at most 60 s).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_seconds)]
    pub warmup: Duration,
    /// CPU of the music application's dedicated cell (default: the last online CPU).
    #[arg(long, value_name = "CPU", allow_hyphen_values = true, value_parser = parse_count_or_zero)]
    pub cpu: Option<usize>,
    /// The link's capacity in the bandwidth experiment (Mbit/s, 1 to 100000; the study's
    /// 1G).
    #[arg(long, value_name = "RATE", default_value = "1000", value_parser = qos::parse_mbps)]
    pub link: f64,
    /// Who reserves in the bandwidth experiment: tc, mclock or both.
    #[arg(long, value_name = "HOW", default_value = "both", value_parser = ["tc", "mclock", "both"])]
    pub by: String,
    #[command(flatten)]
    pub scratch: super::values::ScratchArgs,
    #[command(flatten)]
    pub output: super::values::OutputArgs,
}

impl RespondArgs {
    /// Stage two: what the host is asked for, its threads' policy and CPUs checked (its
    /// own checks are [`HostSetup::config`]'s).
    pub fn host_setup(&self) -> Result<HostSetup, UsageError> {
        Ok(HostSetup {
            bind: self.bind,
            peer: self.peer,
            serve_for: self.duration,
            warmup: self.warmup,
            synth: !self.no_synth,
            workers: self.workers,
            poll: self.poll,
            policy: thread_policy(self.threads.policy, self.threads.priority)?,
            cpus: cpu_list("--cpus", &self.threads.cpus)?,
        })
    }

    /// Stage two: what the host is asked for (stored with the run) and its
    /// configuration, a host away from loopback told which controller to answer.
    pub fn host_config(&self) -> Result<(HostSetup, HostConfig), UsageError> {
        let setup = self.host_setup()?;
        let config = setup.config().map_err(end_usage)?;
        Ok((setup, config))
    }
}

impl EmulateArgs {
    /// Stage two: what the controller is asked for, its threads' policy and CPUs
    /// checked (its own checks are [`ControllerSetup::config`]'s).
    pub fn controller_setup(&self) -> Result<ControllerSetup, UsageError> {
        Ok(ControllerSetup {
            host: self.host,
            bind: self.bind,
            duration: self.duration,
            warmup: self.warmup,
            pads: self.input.pads,
            x: self.input.x,
            y: self.input.y,
            pressure: self.input.pressure,
            policy: thread_policy(self.threads.policy, self.threads.priority)?,
            cpus: cpu_list("--cpus", &self.threads.cpus)?,
        })
    }

    /// Stage two: what the controller is asked for (stored with the run) and its
    /// configuration, the host named by an address and a port.
    pub fn controller_config(&self) -> Result<(ControllerSetup, ControllerConfig), UsageError> {
        let setup = self.controller_setup()?;
        let config = setup.config().map_err(end_usage)?;
        Ok((setup, config))
    }
}

/// An [`EndConfigError`] in the words of the roles' flags.
fn end_usage(e: EndConfigError) -> UsageError {
    UsageError(match e {
        EndConfigError::Warmup(w) => format!("--warmup {w:?} is out of range: use at most 60 s"),
        EndConfigError::NoPeer { bind } => format!(
            "--bind {bind}: away from loopback the host answers only its configured controller: give --peer ADDR:PORT (the address `audiolat net emulate --bind` sends from)"
        ),
        EndConfigError::NoHost { host } => format!(
            "--host {host}: name the host's address and port, e.g. 127.0.0.1:9700"
        ),
    })
}

fn parse_count_or_zero(s: &str) -> Result<usize, String> {
    s.trim().parse::<usize>().map_err(|_| {
        let online = engine::rt::format_cpu_list(&engine::rt::online_cpus());
        format!("'{s}' is not a CPU number: use one of the online CPUs ({online})")
    })
}

#[derive(Debug, Clone, Subcommand)]
pub enum NetRole {
    /// Run one of the study's experiments end to end, every run stored, and print its
    /// figure's statistics beside the study's.
    Experiment(ExperimentArgs),
    /// The host: answer a controller's blocks with the Migrator synth, timing t2 - t1.
    Respond(RespondArgs),
    /// The controller: stream the controlled input at the real rate to a host and time
    /// its answers (tf - t0) and the sender's own pacing.
    Emulate(EmulateArgs),
}

/// Options shared by both ends: threads.
#[derive(Debug, Clone, Args)]
pub struct NetThreadArgs {
    /// Scheduling policy of this end's threads.
    #[arg(long, value_name = "POLICY", default_value = "fifo", value_parser = str::parse::<SchedClass>)]
    pub policy: SchedClass,
    /// Real-time priority for fifo/rr (1..99; default 70).
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = parse_priority)]
    pub priority: Option<i64>,
    /// CPUs of this end's threads (the first for the network or sender thread).
    #[arg(long, value_name = "CPUS", allow_hyphen_values = true)]
    pub cpus: Option<String>,
    #[command(flatten)]
    pub output: super::values::OutputArgs,
}

#[derive(Debug, Clone, Args)]
pub struct RespondArgs {
    /// Address to listen on (loopback unless told otherwise).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:9700")]
    pub bind: std::net::SocketAddr,
    /// The controller to answer; others are counted and dropped. Required when --bind is
    /// not a loopback address.
    #[arg(long, value_name = "ADDR:PORT")]
    pub peer: Option<std::net::SocketAddr>,
    /// Serve for this long (default: until Ctrl-C).
    #[arg(long, short = 'D', value_name = "DURATION", value_parser = parse_seconds)]
    pub duration: Option<Duration>,
    /// Blocks in the first part of this are answered but not counted (at most 60 s).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_seconds)]
    pub warmup: Duration,
    /// Answer silence at once, without the synth (the reference host).
    #[arg(long)]
    pub no_synth: bool,
    /// Synth worker threads beside the network thread, which renders a part too (0: it
    /// runs the whole synth; at most the online CPUs minus one).
    #[arg(long, value_name = "N", default_value_t = 0, allow_hyphen_values = true, value_parser = parse_workers)]
    pub workers: usize,
    /// How the network thread waits: block or spin.
    #[arg(long, value_name = "MODE", default_value = "block", value_parser = str::parse::<netaudio::host::PollMode>)]
    pub poll: netaudio::host::PollMode,
    #[command(flatten)]
    pub threads: NetThreadArgs,
}

#[derive(Debug, Clone, Args)]
pub struct EmulateArgs {
    /// The host's address (where `audiolat net respond` listens).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:9700")]
    pub host: std::net::SocketAddr,
    /// Local address to send from (its port is what the host's --peer names).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:9701")]
    pub bind: std::net::SocketAddr,
    /// Measured time, after the warm-up.
    #[arg(long, short = 'D', value_name = "DURATION", default_value = "10s", value_parser = parse_seconds)]
    pub duration: Duration,
    /// Warm-up, sent but not counted (at most 60 s).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_seconds)]
    pub warmup: Duration,
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub threads: NetThreadArgs,
}
