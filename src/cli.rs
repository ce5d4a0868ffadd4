//! The command line, in two stages: what the user typed ([`Cli`], parsed by clap), then
//! the validated objects built from it ([`jitter_config`]). Nothing here has side
//! effects, so bad input is refused before anything is started or written.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use dsp::WorkloadKind;
use engine::gpio::GpioSpec;
use engine::jack_server::ServerMode;
use engine::rt::Policy;
use load::LoadSpec;
use probes::event::{NotePolicy, TriggerSource};
use probes::jitter::{FragmentModel, JitterConfig, RunLength, WakeMode};

/// A usage error: refused before anything started. Exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

#[derive(Debug, Parser)]
#[command(
    name = "audiolat",
    version,
    about = "Real-time audio latency test bench for Linux",
    long_about = "audiolat measures how responsive a Linux machine is for real-time audio: \
                  wake-up jitter, event-to-audio and round-trip latency, network-audio deadlines. \
                  Every run is stored in SQLite (--db, default ./audiolat.db).",
    propagate_version = true
)]
pub struct Cli {
    /// Results database (SQLite); created when a probe first writes to it.
    #[arg(
        long,
        global = true,
        value_name = "PATH",
        default_value = "audiolat.db"
    )]
    pub db: PathBuf,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check this machine's set-up for real-time audio (verdict and fix per finding).
    Doctor(DoctorArgs),
    /// List what can be measured here: ALSA cards and PCM devices with the formats, rates,
    /// channels and period/buffer sizes each accepts (opened read-only, nothing played),
    /// the running audio servers and their ports, and the --backend/--device to pass.
    Devices(DevicesArgs),
    /// Periodic wake-up latency and audio-fragment deadlines (latencytest, cyclictest).
    Jitter(JitterArgs),
    /// Event-to-audio latency: a trigger starts a tone; time to its first sample at the DAC.
    Event(EventArgs),
    /// Full-duplex round trip: a signal out, through a loop, back in (impulse onset and
    /// multi-tone phase).
    Roundtrip(RoundtripArgs),
    /// Run a JACK client that loops its input to its output N frames later, until Ctrl-C
    /// (a software loop any tool can measure, e.g. jack_iodelay).
    Loop(LoopArgs),
    /// DSP capacity: ns per sample of every workload and how many voices fit in a period.
    Bench(BenchArgs),
    /// Network audio against a hard deadline: a controller streaming gesture data at
    /// audio rate and a host answering each block with the Migrator synth (Tessellation).
    Net(NetArgs),
    /// Run doctor and every probe with short defaults, stored as one group of runs.
    Suite(SuiteArgs),
    /// Run a plan file: one probe over a matrix of settings (TOML), each cell a run of
    /// one plan run, then print its tables and write its report.
    Run(RunPlanArgs),
    /// Run a published study's design, scaled to this machine: bbb2014, macmillan2001,
    /// tessellation2013 or latencytest1999 (--print shows the plan, to edit and `run`).
    Reproduce(ReproduceArgs),
    /// Write a self-contained HTML report of runs, a plan run or a group.
    Report(ReportArgs),
    /// Two runs or plan runs side by side: each statistic's change, and whether it
    /// exceeds the run-to-run noise the repeats show.
    Compare(CompareArgs),
    /// List stored runs, newest first.
    Runs(RunsArgs),
    /// Print one stored run.
    Show(ShowArgs),
    /// Export a stored run.
    Export(ExportArgs),
    /// Run a built-in load in this process (used by --load ep).
    #[command(name = "__load", hide = true)]
    Load(LoadWorkerArgs),
    /// Run a load under supervision (how every load is started).
    #[command(name = "__supervise", hide = true)]
    Supervise(SuperviseArgs),
}

#[derive(Debug, Clone, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct NetArgs {
    /// Run one end only (on two machines, or two namespaces): `respond` is the host,
    /// `emulate` the controller. Without one, both run here over loopback.
    #[command(subcommand)]
    pub role: Option<NetRole>,
    /// Measured time of the synth phase, after the warm-up.
    #[arg(long, short = 'D', value_name = "DURATION", default_value = "10s", value_parser = parse_seconds)]
    pub duration: Duration,
    /// Measured time of the reference phase first: a host that answers at once without
    /// synthesis, so the synth's share shows against the network path's.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_seconds)]
    pub reference: Duration,
    /// Skip the reference phase.
    #[arg(long, conflicts_with = "reference")]
    pub no_reference: bool,
    /// Warm-up of each phase, answered but not counted (the study's 1 s).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_seconds)]
    pub warmup: Duration,
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
    /// Synth worker threads on the host (0: the network thread runs the synth).
    #[arg(long, value_name = "N", default_value_t = 0, allow_hyphen_values = true, value_parser = parse_workers)]
    pub workers: usize,
    /// How the host's network thread waits: block (sleep in recvmmsg), spin (poll
    /// without blocking, as the study's runtime; takes a whole CPU) or periodic (poll,
    /// then sched_yield: a time-triggered cell's jobs). Default: periodic in a
    /// time-triggered cell, block otherwise (a spinning SCHED_FIFO thread is stopped 50 ms
    /// a second by the kernel's RT throttling, even on a dedicated CPU).
    #[arg(long, value_name = "MODE", value_parser = parse_poll)]
    pub poll: Option<netaudio::host::PollMode>,
    /// Scheduling policy of every thread of both ends.
    #[arg(long, value_name = "POLICY", default_value = "fifo", value_parser = parse_policy_name)]
    pub policy: PolicyName,
    /// Real-time priority for fifo/rr (1..99; default 70).
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = parse_i64)]
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
    /// Shape the controller-to-host direction to this capacity (Mbit/s; 1G is 1000).
    #[arg(long, value_name = "RATE", value_parser = parse_mbps)]
    pub link: Option<f64>,
    /// Guarantee the audio flow this much of the link (Mbit/s).
    #[arg(long, value_name = "RATE", value_parser = parse_mbps, requires = "link")]
    pub reserve: Option<f64>,
    /// Who shapes the link and keeps the reservation: tc (the kernel's HTB on the veth
    /// link; needs --netns) or mclock (audiolat's own user-level network service: FIFO
    /// without --reserve, mClock with).
    #[arg(long, value_name = "HOW", default_value = "tc", value_parser = parse_reserve_by)]
    pub reserve_by: probes::net::ReserveBy,
    /// Directory for the io load's files (default: the database's directory).
    #[arg(long, value_name = "DIR")]
    pub scratch_dir: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// No progress line.
    #[arg(long, short)]
    pub quiet: bool,
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

fn parse_mbps(s: &str) -> Result<f64, String> {
    qos::parse_mbps(s)
}

fn parse_reserve_by(s: &str) -> Result<probes::net::ReserveBy, String> {
    match s {
        "tc" => Ok(probes::net::ReserveBy::Tc),
        "mclock" => Ok(probes::net::ReserveBy::Service),
        _ => Err("use tc or mclock".into()),
    }
}

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
    /// Measured time of each run, after its warm-up (the study's: 3 minutes).
    #[arg(long, short = 'D', value_name = "DURATION", default_value = "10s", value_parser = parse_seconds)]
    pub duration: Duration,
    /// Warm-up of each run.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_seconds)]
    pub warmup: Duration,
    /// CPU of the music application's dedicated cell (default: the last online CPU).
    #[arg(long, value_name = "CPU", allow_hyphen_values = true, value_parser = parse_count_or_zero)]
    pub cpu: Option<usize>,
    /// The link's capacity in the bandwidth experiment (Mbit/s; the study's 1G).
    #[arg(long, value_name = "RATE", default_value = "1000", value_parser = parse_mbps)]
    pub link: f64,
    /// Who reserves in the bandwidth experiment: tc, mclock or both.
    #[arg(long, value_name = "HOW", default_value = "both", value_parser = ["tc", "mclock", "both"])]
    pub by: String,
    /// Directory for the io load's files (default: the database's directory).
    #[arg(long, value_name = "DIR")]
    pub scratch_dir: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// No progress lines.
    #[arg(long, short)]
    pub quiet: bool,
}

fn parse_count_or_zero(s: &str) -> Result<usize, String> {
    s.trim()
        .parse::<usize>()
        .map_err(|_| format!("'{s}' is not a CPU number"))
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
    #[arg(long, value_name = "POLICY", default_value = "fifo", value_parser = parse_policy_name)]
    pub policy: PolicyName,
    /// Real-time priority for fifo/rr (1..99; default 70).
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = parse_i64)]
    pub priority: Option<i64>,
    /// CPUs of this end's threads (the first for the network or sender thread).
    #[arg(long, value_name = "CPUS", allow_hyphen_values = true)]
    pub cpus: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// No progress line.
    #[arg(long, short)]
    pub quiet: bool,
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
    /// Blocks in the first part of this are answered but not counted.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_seconds)]
    pub warmup: Duration,
    /// Answer silence at once, without the synth (the reference host).
    #[arg(long)]
    pub no_synth: bool,
    /// Synth worker threads (0: the network thread runs the synth).
    #[arg(long, value_name = "N", default_value_t = 0, allow_hyphen_values = true, value_parser = parse_workers)]
    pub workers: usize,
    /// How the network thread waits: block or spin.
    #[arg(long, value_name = "MODE", default_value = "block", value_parser = parse_poll)]
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
    /// Warm-up, sent but not counted.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_seconds)]
    pub warmup: Duration,
    /// Pads pressed (0..32).
    #[arg(long, value_name = "N", default_value_t = 8, allow_hyphen_values = true, value_parser = parse_pads)]
    pub pads: usize,
    /// The pressed pads' x (0..1).
    #[arg(long, value_name = "X", default_value_t = 0.5, allow_hyphen_values = true, value_parser = parse_unit)]
    pub x: f32,
    /// The pressed pads' y (0..1).
    #[arg(long, value_name = "Y", default_value_t = 0.5, allow_hyphen_values = true, value_parser = parse_unit)]
    pub y: f32,
    /// The pressed pads' pressure (0..1).
    #[arg(long, value_name = "P", default_value_t = 0.8, allow_hyphen_values = true, value_parser = parse_unit)]
    pub pressure: f32,
    #[command(flatten)]
    pub threads: NetThreadArgs,
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

fn parse_workers(s: &str) -> Result<usize, String> {
    let cpus = engine::rt::online_cpus().len().max(1);
    match s.trim().parse::<usize>() {
        Ok(n) if n <= cpus => Ok(n),
        Ok(n) => Err(format!(
            "{n} workers on {cpus} CPUs would spin against each other: use 0 to {cpus} (each worker spins on a CPU of its own while it waits)"
        )),
        Err(_) => Err("use a whole number of worker threads, 0 or more".into()),
    }
}

fn parse_poll(s: &str) -> Result<netaudio::host::PollMode, String> {
    match s {
        "block" => Ok(netaudio::host::PollMode::Block),
        "spin" => Ok(netaudio::host::PollMode::Spin),
        "periodic" => Ok(netaudio::host::PollMode::Periodic),
        _ => Err("use block, spin or periodic".into()),
    }
}

/// The scheduling policy of `audiolat net`'s threads.
pub fn net_policy(a: &NetArgs) -> Result<Policy, UsageError> {
    thread_policy(a.policy, a.priority)
}

/// The scheduling policy of one end's threads.
pub fn thread_policy(name: PolicyName, priority: Option<i64>) -> Result<Policy, UsageError> {
    let a = NetPolicyArgs {
        policy: name,
        priority,
    };
    if a.policy == PolicyName::Deadline {
        return Err(UsageError(
            "--policy deadline is not for net's threads (they poll or wait on packets, not on a period): use fifo, rr or other".into(),
        ));
    }
    policy(
        a.policy,
        a.priority.or(match a.policy {
            PolicyName::Fifo | PolicyName::Rr => Some(70),
            _ => None,
        }),
        1_000_000,
        0.0,
        None,
        None,
    )
}

struct NetPolicyArgs {
    policy: PolicyName,
    priority: Option<i64>,
}

#[derive(Debug, Args)]
pub struct SuperviseArgs {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

#[derive(Debug, Args)]
pub struct DevicesArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// How long to sample host steal time.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_seconds)]
    pub steal_window: Duration,
    /// First undo what an audiolat killed outright left changed (cpusets, load
    /// balancing, task affinities, network namespaces, qdiscs, state files); needs root.
    #[arg(long)]
    pub fix: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PolicyName {
    /// SCHED_FIFO (real-time, default)
    Fifo,
    /// SCHED_RR (real-time, round robin)
    Rr,
    /// SCHED_OTHER (not real-time)
    Other,
    /// SCHED_BATCH (not real-time)
    Batch,
    /// SCHED_IDLE (not real-time)
    Idle,
    /// SCHED_DEADLINE (EDF reservation)
    Deadline,
}

#[derive(Debug, Clone, Args)]
pub struct JitterArgs {
    /// Wake-up rate in Hz (default 2048, latencytest's RTC rate). With --frames it is the
    /// sample rate instead (default 44100).
    #[arg(long, value_name = "HZ", allow_hyphen_values = true, value_parser = parse_rate)]
    pub rate: Option<f64>,
    /// Wake-up interval instead of a rate (e.g. 1ms, 500us; a bare number is in us, as
    /// cyclictest -i).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = parse_micros,
          conflicts_with_all = ["rate", "frames"])]
    pub interval: Option<Duration>,
    /// How the thread is woken.
    #[arg(long, value_name = "MODE", default_value = "nanosleep", value_parser = parse_mode)]
    pub mode: WakeMode,
    /// Percent of each period spent computing, 0 to below 100 (latencytest's CPU load
    /// inside the audio thread, e.g. 80).
    #[arg(long, value_name = "PERCENT", default_value_t = 0.0, allow_hyphen_values = true,
          value_parser = parse_percent)]
    pub busy: f64,
    /// Audio fragment model: fragments in the buffer (latencytest used 3).
    #[arg(long, value_name = "N", requires = "frames", allow_hyphen_values = true,
          value_parser = parse_count_u32)]
    pub fragments: Option<u32>,
    /// Audio fragment model: frames per fragment (latencytest's "128" bytes were 32 frames).
    #[arg(long, value_name = "F", requires = "fragments", allow_hyphen_values = true,
          value_parser = parse_count_u32)]
    pub frames: Option<u32>,
    /// Scheduling policy of the measuring thread.
    #[arg(long, value_name = "POLICY", default_value = "fifo", value_parser = parse_policy_name)]
    pub policy: PolicyName,
    /// Real-time priority for fifo/rr (1..99).
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = parse_i64)]
    pub priority: Option<i64>,
    /// SCHED_DEADLINE runtime per period (default: busy share + 10% of the period).
    #[arg(long, value_name = "DURATION", value_parser = parse_micros)]
    pub dl_runtime: Option<Duration>,
    /// SCHED_DEADLINE relative deadline (default: the period).
    #[arg(long, value_name = "DURATION", value_parser = parse_micros)]
    pub dl_deadline: Option<Duration>,
    /// Pin the measuring thread to these CPUs (e.g. 1 or 0-3,6).
    #[arg(long, value_name = "CPUS", allow_hyphen_values = true)]
    pub cpu: Option<String>,
    /// How long to run (e.g. 10s, 2m).
    #[arg(long, short = 'D', value_name = "DURATION", value_parser = parse_seconds,
          conflicts_with = "loops")]
    pub duration: Option<Duration>,
    /// Run this many cycles instead of a duration.
    #[arg(long, short = 'l', value_name = "N", allow_hyphen_values = true, value_parser = parse_count_u64)]
    pub loops: Option<u64>,
    /// Histogram bound: wake-ups later than this are overflows, counted with their cycle
    /// numbers (e.g. 100ms).
    #[arg(long, value_name = "DURATION", default_value = "100ms", value_parser = parse_micros)]
    pub hist_bound: Duration,
    /// Also write the histogram in cyclictest's -h text format to this file.
    #[arg(long, value_name = "PATH")]
    pub histfile: Option<PathBuf>,
    /// Background load: none, cpu[:percent], io, top, mem, ep[:threads], hackbench, or
    /// combinations like cpu:80+io.
    #[arg(long, value_name = "SPEC", default_value = "none", value_parser = parse_load)]
    pub load: LoadSpec,
    /// Directory for the io load's files (default: the database's directory).
    #[arg(long, value_name = "DIR")]
    pub scratch_dir: Option<PathBuf>,
    /// Do not lock memory (mlockall).
    #[arg(long)]
    pub no_mlock: bool,
    /// Do not hold /dev/cpu_dma_latency at 0.
    #[arg(long)]
    pub no_dma_latency: bool,
    /// Print a JSON summary instead of text.
    #[arg(long)]
    pub json: bool,
    /// No live status line.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args)]
pub struct EventArgs {
    /// What triggers a note: timer (random instants), key (a key press on this terminal;
    /// q ends), midi (note-ons on audiolat's JACK MIDI input).
    #[arg(long, value_name = "SOURCE", default_value = "timer", value_parser = parse_trigger)]
    pub trigger: TriggerSource,
    /// When a note starts: asap (next cycle, offset 0) or fixed (trigger time + one
    /// period: constant latency). A comma list runs each.
    #[arg(long, value_name = "POLICY[,POLICY]", default_value = "asap", value_parser = parse_note_policies)]
    pub policy: ListOf<NotePolicy>,
    /// Triggers per run.
    #[arg(long, short = 'n', value_name = "N", default_value_t = 100, allow_hyphen_values = true,
          value_parser = parse_count_u64)]
    pub triggers: u64,
    /// Synth workload: sine, poly (three harmonics) or bank:N (N oscillators). A comma list
    /// sweeps them.
    #[arg(long, value_name = "W[,W]", default_value = "sine", value_parser = parse_workloads)]
    pub workload: ListOf<WorkloadKind>,
    /// Background load (as for jitter; e.g. top is the study's "Mon+bgdproc."). A comma
    /// list sweeps them.
    #[arg(long, value_name = "SPEC[,SPEC]", default_value = "none", value_parser = parse_loads)]
    pub load: ListOf<LoadSpec>,
    /// Repeat every configuration this many times.
    #[arg(long, value_name = "N", default_value_t = 1, allow_hyphen_values = true,
          value_parser = parse_count_u32)]
    pub repeat: u32,
    #[command(flatten)]
    pub audio: AudioArgs,
    /// Playback ports to connect to (default: the first two physical playback ports).
    #[arg(long, value_name = "PORT[,PORT]", value_delimiter = ',')]
    pub playback: Vec<String>,
    /// Capture that carries the output back (a cable on real hardware): a JACK port, or
    /// with --backend alsa a capture device (e.g. hw:Loopback,1,0). The onset is also
    /// found in it and the measured latency shown beside the model's.
    #[arg(long, value_name = "PORT|DEVICE")]
    pub loopback: Option<String>,
    /// With --trigger midi: connect audiolat's MIDI input to this port.
    #[arg(long, value_name = "PORT")]
    pub midi_port: Option<String>,
    /// Also raise this GPIO line at every trigger, for an oscilloscope (CHIP:LINE, e.g.
    /// gpiochip0:17).
    #[arg(long, value_name = "CHIP:LINE", value_parser = parse_gpio)]
    pub gpio: Option<GpioSpec>,
    /// Length of each note.
    #[arg(long, value_name = "DURATION", default_value = "30ms", value_parser = parse_millis)]
    pub note: Duration,
    /// Least time between timer triggers (a random fraction of a period is added).
    #[arg(long, value_name = "DURATION", default_value = "60ms", value_parser = parse_millis)]
    pub spacing: Duration,
    /// Tone frequency in Hz.
    #[arg(long, value_name = "HZ", default_value_t = 440.0, value_parser = parse_rate)]
    pub frequency: f64,
    /// Background-load scratch directory for io (default: the database's directory).
    #[arg(long, value_name = "DIR")]
    pub scratch_dir: Option<PathBuf>,
    /// Do not lock memory (mlockall).
    #[arg(long)]
    pub no_mlock: bool,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// No live status line.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Audio backends a probe can run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendName {
    /// JACK (pull model): a running server, or a private `jackd -d dummy`
    Jack,
    /// ALSA (push model): a device (hw:X, plughw:X, default, the jack PCM)
    Alsa,
    /// The virtual sound card: a software card with a loopback cable (ground truth)
    Virtual,
}

impl std::fmt::Display for BackendName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BackendName::Jack => "jack",
            BackendName::Alsa => "alsa",
            BackendName::Virtual => "virtual",
        })
    }
}

/// Where the audio goes: the backend and its settings, shared by the audio probes.
#[derive(Debug, Clone, Args)]
pub struct AudioArgs {
    /// Audio backend: jack (a running server, or a private `jackd -d dummy`), alsa (a
    /// device; without a sound card, the jack PCM on a private dummy server) or virtual
    /// (the software card with a loopback cable).
    #[arg(long, value_enum, default_value = "jack")]
    pub backend: BackendName,
    /// JACK server: auto (a running one, else a private `jackd -d dummy`), external (a
    /// running one or an error), dummy (always a private one). Also the server behind
    /// ALSA's jack PCM.
    #[arg(long, value_name = "MODE", default_value = "auto", value_parser = parse_server_mode)]
    pub server: ServerMode,
    /// JACK server name: the one to use (external/auto), or the private one's (dummy).
    #[arg(long, value_name = "NAME")]
    pub server_name: Option<String>,
    /// Frames per period. JACK: a private server's (a power of two, 16-8192) or the one a
    /// running server must have (default: the server's, or 128); ALSA: what the device
    /// must grant (default 256); virtual: 32-8192 (default 256). A comma list sweeps them.
    #[arg(long, value_name = "FRAMES[,FRAMES]", value_parser = parse_periods)]
    pub period: Option<ListOf<u32>>,
    /// Periods in the buffer (ALSA and virtual; at least 2).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = parse_count_u32)]
    pub periods: u32,
    /// Sample rate (default: a running JACK server's, 44100 for a private one, 48000 for
    /// ALSA and the virtual card).
    #[arg(long, value_name = "HZ", allow_hyphen_values = true, value_parser = parse_count_u32)]
    pub rate: Option<u32>,
    /// ALSA device: hw:X, plughw:X, default, jack (alsa-lib's jack PCM on a JACK server),
    /// or (roundtrip) loop: the jack PCM through audiolat's software loop. Default: default
    /// when there is a sound card, else jack (event) or loop (roundtrip).
    #[arg(long, value_name = "DEVICE")]
    pub device: Option<String>,
    /// ALSA sample format: float, s32, s24 (S24_LE), s24_3 (S24_3LE) or s16 (default: the
    /// first of these the device takes).
    #[arg(long, value_name = "FORMAT", value_parser = parse_sample_format)]
    pub format: Option<engine::alsa_backend::SampleFormat>,
}

fn parse_sample_format(s: &str) -> Result<engine::alsa_backend::SampleFormat, String> {
    s.parse()
}

#[derive(Debug, Clone, Args)]
pub struct RoundtripArgs {
    #[command(flatten)]
    pub audio: AudioArgs,
    /// ALSA capture device (full duplex; default: the playback device).
    #[arg(long, value_name = "DEVICE")]
    pub capture_device: Option<String>,
    /// JACK ports audiolat's output goes to (the start of a cable).
    #[arg(long, value_name = "PORT[,PORT]", value_delimiter = ',')]
    pub playback: Vec<String>,
    /// JACK port audiolat's input listens to (the end of the cable). Without it, audiolat
    /// closes the loop itself with a software loop client in the server.
    #[arg(long, value_name = "PORT")]
    pub capture: Option<String>,
    /// Virtual card: the cable's delay in frames (fractional allowed).
    #[arg(long, value_name = "FRAMES", default_value_t = 0.0, allow_hyphen_values = true,
          value_parser = parse_frames_f64)]
    pub cable_delay: f64,
    /// Virtual card: the cable's gain (negative inverts polarity).
    #[arg(long, value_name = "GAIN", default_value_t = 1.0, allow_hyphen_values = true,
          value_parser = parse_gain)]
    pub cable_gain: f32,
    /// Virtual card: no cable (the input hears silence).
    #[arg(long)]
    pub no_cable: bool,
    /// Delay audiolat's own output by N frames: a delay element in the loop, so the
    /// method can prove itself (the result must grow by exactly N).
    #[arg(long, value_name = "FRAMES", default_value_t = 0, allow_hyphen_values = true,
          value_parser = parse_u32_any)]
    pub insert_delay: u32,
    /// Time to measure with the multi-tone (after the clicks).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_seconds)]
    pub duration: Duration,
    /// Periods between two multi-tone estimates (default: one per tone period).
    #[arg(long, value_name = "PERIODS", value_parser = parse_count_u32)]
    pub every: Option<u32>,
    /// Clicks sent first (the study's impulse onset count).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = parse_u32_any)]
    pub impulses: u32,
    /// Peak level of the test signals (full scale is 1.0).
    #[arg(long, value_name = "LEVEL", default_value_t = 0.5, value_parser = parse_level)]
    pub level: f32,
    /// The longest loop expected, in frames (default: the stream's latencies plus 2048).
    #[arg(long, value_name = "FRAMES", allow_hyphen_values = true, value_parser = parse_frames_f64)]
    pub max_delay: Option<f64>,
    /// Background load; a comma list sweeps them.
    #[arg(long, value_name = "SPEC[,SPEC]", default_value = "none", value_parser = parse_loads)]
    pub load: ListOf<LoadSpec>,
    /// Repeat every configuration this many times.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = parse_count_u32)]
    pub repeat: u32,
    /// Step down through periods (--period's list, or 2048 down to the backend's
    /// smallest), each for --duration under --load, and report the smallest buffer with
    /// no under-run and its round trip (the study's trial of buffer settings, automated).
    #[arg(long)]
    pub find_min_buffer: bool,
    /// Background-load scratch directory for io (default: the database's directory).
    #[arg(long, value_name = "DIR")]
    pub scratch_dir: Option<PathBuf>,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// No live status line.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args)]
pub struct LoopArgs {
    /// Frames the loop adds.
    #[arg(long, value_name = "FRAMES", default_value_t = 0, value_parser = parse_u32_any)]
    pub delay: u32,
    /// JACK server name (default: $JACK_DEFAULT_SERVER or "default").
    #[arg(long, value_name = "NAME")]
    pub server_name: Option<String>,
    /// The loop client's name.
    #[arg(long, value_name = "NAME", default_value = "audiolat-loop")]
    pub name: String,
    /// Connect the loop's input from this port.
    #[arg(long, value_name = "PORT")]
    pub from: Option<String>,
    /// Connect the loop's output to this port.
    #[arg(long, value_name = "PORT")]
    pub to: Option<String>,
}

fn parse_frames_f64(s: &str) -> Result<f64, String> {
    let v = parse_f64(s)?;
    if !(0.0..=1_000_000.0).contains(&v) {
        return Err("use a number of frames from 0 to 1000000".into());
    }
    Ok(v)
}

fn parse_gain(s: &str) -> Result<f32, String> {
    let v = parse_f64(s)?;
    if v.abs() > 100.0 {
        return Err("use a gain from -100 to 100 (1 is unity, negative inverts)".into());
    }
    Ok(v as f32)
}

fn parse_level(s: &str) -> Result<f32, String> {
    let v = parse_f64(s)?;
    if !(v > 0.0 && v <= 1.0) {
        return Err("use a peak level above 0 and at most 1.0 (full scale), e.g. 0.5".into());
    }
    Ok(v as f32)
}

fn parse_u32_any(s: &str) -> Result<u32, String> {
    match s.trim().parse::<i128>() {
        Ok(v) if (0..=u32::MAX as i128).contains(&v) => Ok(v as u32),
        Ok(_) => Err("use a whole number of 0 or more".into()),
        Err(_) => Err(format!("'{s}' is not a whole number")),
    }
}

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Sample rate the period is timed at.
    #[arg(long, value_name = "HZ", default_value_t = 44_100, value_parser = parse_count_u32)]
    pub rate: u32,
    /// Frames per period.
    #[arg(long, value_name = "FRAMES", default_value_t = 128, value_parser = parse_count_u32)]
    pub period: u32,
    /// Share of the period the DSP may use when counting voices (e.g. 50%).
    #[arg(long, value_name = "PERCENT", default_value = "50", value_parser = parse_load_target)]
    pub target: f64,
    /// Time spent on each kernel.
    #[arg(long, value_name = "DURATION", default_value = "200ms", value_parser = parse_millis)]
    pub each: Duration,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// A comma-separated list of values.
#[derive(Debug, Clone, PartialEq)]
pub struct ListOf<T>(pub Vec<T>);

fn parse_list<T>(
    s: &str,
    what: &str,
    f: impl Fn(&str) -> Result<T, String>,
) -> Result<ListOf<T>, String> {
    let items: Vec<&str> = s.split(',').map(str::trim).collect();
    if items.iter().any(|i| i.is_empty()) {
        return Err(format!("'{s}': an empty item in the {what} list"));
    }
    items
        .into_iter()
        .map(f)
        .collect::<Result<Vec<_>, _>>()
        .map(ListOf)
}

fn parse_trigger(s: &str) -> Result<TriggerSource, String> {
    s.parse()
}

fn parse_note_policies(s: &str) -> Result<ListOf<NotePolicy>, String> {
    parse_list(s, "policy", |i| i.parse())
}

fn parse_workloads(s: &str) -> Result<ListOf<WorkloadKind>, String> {
    parse_list(s, "workload", |i| i.parse())
}

fn parse_loads(s: &str) -> Result<ListOf<LoadSpec>, String> {
    parse_list(s, "load", parse_load)
}

fn parse_periods(s: &str) -> Result<ListOf<u32>, String> {
    parse_list(s, "period", parse_count_u32)
}

fn parse_server_mode(s: &str) -> Result<ServerMode, String> {
    s.parse()
}

fn parse_gpio(s: &str) -> Result<GpioSpec, String> {
    s.parse::<GpioSpec>().map_err(|e| e.to_string())
}

fn parse_millis(s: &str) -> Result<Duration, String> {
    parse_duration(s, "ms")
}

fn parse_load_target(s: &str) -> Result<f64, String> {
    let v = parse_f64(s.trim_end_matches('%'))?;
    if !(v > 0.0 && v <= 100.0) {
        return Err(
            "use a percentage of the period above 0 and at most 100 (e.g. --target 50)".into(),
        );
    }
    Ok(v)
}

#[derive(Debug, Args)]
pub struct SuiteArgs {
    /// Seconds per probe run.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_seconds)]
    pub each: Duration,
    /// Directory for the io load's files (default: the database's directory).
    #[arg(long, value_name = "DIR")]
    pub scratch_dir: Option<PathBuf>,
    /// Print a JSON summary instead of text.
    #[arg(long)]
    pub json: bool,
    /// No live status lines.
    #[arg(long, short)]
    pub quiet: bool,
}

/// How a plan runs (shared by `run` and `reproduce`).
#[derive(Debug, Clone, Args)]
pub struct PlanRunArgs {
    /// Continue an interrupted plan run: the latest unfinished one of this plan, or the
    /// plan run (group) given. Cells already stored complete are skipped.
    #[arg(long, value_name = "GROUP", num_args = 0..=1, default_missing_value = "latest",
          value_parser = parse_resume)]
    pub resume: Option<Resume>,
    /// Check the plan and list its cells in run order; run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Write the report here (default: audiolat-report-plan-GROUP.html beside the
    /// database).
    #[arg(long, value_name = "PATH", conflicts_with = "no_report")]
    pub report: Option<PathBuf>,
    /// Write no HTML report (the terminal tables are still printed).
    #[arg(long)]
    pub no_report: bool,
    /// Print a JSON summary instead of text.
    #[arg(long)]
    pub json: bool,
    /// No progress line.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Which plan run to resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// The latest unfinished plan run of the same plan.
    Latest,
    /// This group.
    Group(i64),
}

fn parse_resume(s: &str) -> Result<Resume, String> {
    if s == "latest" {
        return Ok(Resume::Latest);
    }
    s.parse::<i64>()
        .ok()
        .filter(|g| *g > 0)
        .map(Resume::Group)
        .ok_or_else(|| format!("'{s}': give a plan run's group id (`audiolat runs` shows it), or no value for the latest"))
}

#[derive(Debug, Args)]
pub struct RunPlanArgs {
    /// The plan file (TOML; `audiolat reproduce bbb2014 --print` shows one).
    #[arg(value_name = "PLAN")]
    pub plan: PathBuf,
    #[command(flatten)]
    pub run: PlanRunArgs,
}

#[derive(Debug, Args)]
pub struct ReproduceArgs {
    /// The study: bbb2014, macmillan2001, tessellation2013 or latencytest1999.
    #[arg(value_name = "STUDY", value_parser = parse_study)]
    pub study: String,
    /// The few-minute variant (fewer repeats and triggers, shorter runs).
    #[arg(long)]
    pub quick: bool,
    /// Print the preset's plan (TOML) and exit: save it, edit it, `audiolat run` it.
    #[arg(long)]
    pub print: bool,
    #[command(flatten)]
    pub run: PlanRunArgs,
}

fn parse_study(s: &str) -> Result<String, String> {
    if crate::presets::names().contains(&s) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "'{s}' is not a study audiolat reproduces: use {}",
            crate::presets::names().join(", ")
        ))
    }
}

/// What a report or comparison is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// One run.
    Run(RunRef),
    /// A group of runs (a plan run, a suite, a sweep).
    Group(i64),
}

fn parse_subject(s: &str) -> Result<Subject, String> {
    if let Some(g) = s.strip_prefix("group:").or_else(|| s.strip_prefix("plan:")) {
        return g
            .parse::<i64>()
            .ok()
            .filter(|g| *g > 0)
            .map(Subject::Group)
            .ok_or_else(|| format!("'{s}': give a group id, e.g. group:3"));
    }
    parse_run_ref(s)
        .map(Subject::Run)
        .map_err(|_| format!("'{s}': give a run id, `last`, or group:ID for a plan run or suite"))
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// What to report: run ids, `last`, or group:ID (a plan run, suite or sweep).
    /// Default: the latest group.
    #[arg(value_name = "WHAT", value_parser = parse_subject)]
    pub subjects: Vec<Subject>,
    /// Where to write the HTML (default: audiolat-report-....html beside the database).
    #[arg(long, short, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Also print the terminal tables.
    #[arg(long)]
    pub print: bool,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline: a run id, `last`, or group:ID.
    #[arg(value_parser = parse_subject)]
    pub a: Subject,
    /// The other: a run id, `last`, or group:ID.
    #[arg(value_parser = parse_subject)]
    pub b: Subject,
    /// Compare this metric (repeatable; default: each probe's main one, e.g.
    /// event_latency, wakeup_latency, roundtrip, response_time).
    #[arg(long, value_name = "METRIC", conflicts_with = "all_metrics")]
    pub metric: Vec<String>,
    /// Compare every metric the runs have.
    #[arg(long)]
    pub all_metrics: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Only runs of this probe.
    #[arg(long)]
    pub probe: Option<String>,
    /// Only runs with this status (running, complete, interrupted, failed).
    #[arg(long, value_parser = parse_status)]
    pub status: Option<results::RunStatus>,
    /// Only runs of this group (e.g. one suite).
    #[arg(long)]
    pub group: Option<i64>,
    /// At most this many.
    #[arg(long, short = 'n', default_value_t = 20)]
    pub limit: usize,
    /// List groups (suites, sweeps, plan runs) instead of runs: the ids `report group:N`
    /// and `compare group:A group:B` take.
    #[arg(long, conflicts_with_all = ["probe", "status", "group"])]
    pub groups: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// A run id, or `last`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunRef {
    Id(i64),
    Last,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Run id, or `last`.
    #[arg(value_parser = parse_run_ref)]
    pub run: RunRef,
    /// Events to list.
    #[arg(long, default_value_t = 10)]
    pub events: usize,
    /// Print JSON (the same document as `export --format json`).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// The whole run: metadata, measurements with histogram buckets, events, series.
    Json,
    /// One row per measurement with its summary.
    Csv,
    /// HdrHistogram interval log (one tagged histogram per measurement).
    Hdr,
    /// cyclictest's -h histogram text of a jitter run's wake-up latency, up to its last
    /// used µs bucket.
    Cyclictest,
    /// One CSV row per trigger of an event run, with its latency decomposition.
    Triggers,
    /// The run's series (e.g. a round trip's every window and click) as CSV blocks.
    Series,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Run id, or `last`.
    #[arg(value_parser = parse_run_ref)]
    pub run: RunRef,
    /// Output format.
    #[arg(long, short, value_enum, default_value = "json")]
    pub format: ExportFormat,
    /// Write here instead of standard output.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct LoadWorkerArgs {
    /// The load to run: `ep` or `video`.
    pub kind: String,
    /// Threads.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// SCHED_DEADLINE for each thread, `RUNTIME,DEADLINE,PERIOD` in ns (`,tt`:
    /// time-triggered), taken by each thread once it runs (a deadline cell).
    #[arg(long, value_parser = load::DeadlineShare::from_arg)]
    pub deadline: Option<load::DeadlineShare>,
}

fn parse_f64(s: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("'{s}' is not a number"))
}

fn parse_rate(s: &str) -> Result<f64, String> {
    let v = parse_f64(s)?;
    if v <= 0.0 {
        return Err("the rate must be a positive number of Hz (e.g. --rate 2048)".into());
    }
    Ok(v)
}

fn parse_percent(s: &str) -> Result<f64, String> {
    let v = parse_f64(s)?;
    if !(0.0..100.0).contains(&v) {
        return Err("use a percentage from 0 up to, not including, 100 (e.g. --busy 80)".into());
    }
    Ok(v)
}

fn parse_i64(s: &str) -> Result<i64, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a whole number"))
}

fn parse_count_u64(s: &str) -> Result<u64, String> {
    match s.trim().parse::<i128>() {
        Ok(v) if v >= 1 && v <= u64::MAX as i128 => Ok(v as u64),
        Ok(_) => Err("use a whole number of at least 1".into()),
        Err(_) => Err(format!("'{s}' is not a whole number")),
    }
}

fn parse_count_u32(s: &str) -> Result<u32, String> {
    let v = parse_count_u64(s)?;
    u32::try_from(v).map_err(|_| "too large".into())
}

pub use engine::clock::parse_duration;

fn parse_seconds(s: &str) -> Result<Duration, String> {
    parse_duration(s, "s")
}

fn parse_micros(s: &str) -> Result<Duration, String> {
    parse_duration(s, "us")
}

fn parse_mode(s: &str) -> Result<WakeMode, String> {
    s.parse()
}

fn parse_policy_name(s: &str) -> Result<PolicyName, String> {
    PolicyName::from_str(s, true)
        .map_err(|_| format!("unknown policy '{s}': use fifo, rr, other, batch, idle or deadline"))
}

fn parse_load(s: &str) -> Result<LoadSpec, String> {
    s.parse::<LoadSpec>().map_err(|e| e.to_string())
}

fn parse_status(s: &str) -> Result<results::RunStatus, String> {
    results::RunStatus::parse(s).ok_or_else(|| {
        format!("unknown status '{s}': use running, complete, interrupted or failed")
    })
}

fn parse_run_ref(s: &str) -> Result<RunRef, String> {
    if s == "last" {
        return Ok(RunRef::Last);
    }
    s.parse::<i64>()
        .ok()
        .filter(|v| *v > 0)
        .map(RunRef::Id)
        .ok_or_else(|| format!("'{s}' is not a run id: use a number from `audiolat runs`, or last"))
}

/// Builds the scheduling policy from the flags.
pub fn policy(
    name: PolicyName,
    priority: Option<i64>,
    period_ns: u64,
    busy_percent: f64,
    dl_runtime: Option<Duration>,
    dl_deadline: Option<Duration>,
) -> Result<Policy, UsageError> {
    let prio = |default: i64| -> Result<u32, UsageError> {
        let p = priority.unwrap_or(default);
        if !(1..=99).contains(&p) {
            return Err(UsageError(format!(
                "--priority {p} is out of range for {}: use 1..99",
                if name == PolicyName::Rr {
                    "SCHED_RR"
                } else {
                    "SCHED_FIFO"
                }
            )));
        }
        Ok(p as u32)
    };
    let no_prio = |what: &str| -> Result<(), UsageError> {
        match priority {
            Some(p) => Err(UsageError(format!(
                "--priority {p} has no meaning for {what}: use --policy fifo or rr to set a priority"
            ))),
            None => Ok(()),
        }
    };
    if name != PolicyName::Deadline && (dl_runtime.is_some() || dl_deadline.is_some()) {
        return Err(UsageError(
            "--dl-runtime and --dl-deadline need --policy deadline".into(),
        ));
    }
    let policy = match name {
        PolicyName::Fifo => Policy::Fifo {
            priority: prio(80)?,
        },
        PolicyName::Rr => Policy::RoundRobin {
            priority: prio(80)?,
        },
        PolicyName::Other => {
            no_prio("SCHED_OTHER")?;
            Policy::Other { nice: 0 }
        }
        PolicyName::Batch => {
            no_prio("SCHED_BATCH")?;
            Policy::Batch { nice: 0 }
        }
        PolicyName::Idle => {
            no_prio("SCHED_IDLE")?;
            Policy::Idle
        }
        PolicyName::Deadline => {
            no_prio("SCHED_DEADLINE")?;
            let default_runtime = ((period_ns as f64 * (busy_percent / 100.0 + 0.1))
                .min(period_ns as f64 * 0.95)) as u64;
            let runtime_ns =
                dl_runtime.map_or(default_runtime.max(20_000), |d| d.as_nanos() as u64);
            let deadline_ns = dl_deadline.map_or(period_ns, |d| d.as_nanos() as u64);
            Policy::Deadline {
                runtime_ns,
                deadline_ns,
                period_ns,
            }
        }
    };
    policy.validate().map_err(|e| UsageError(e.to_string()))?;
    Ok(policy)
}

/// Builds and validates the jitter configuration from the flags.
pub fn jitter_config(a: &JitterArgs) -> Result<JitterConfig, UsageError> {
    let (period_ns, fragments) = match (a.fragments, a.frames) {
        (Some(fragments), Some(frames)) => {
            let rate = a.rate.unwrap_or(44_100.0);
            if rate.fract() != 0.0 || !(1_000.0..=768_000.0).contains(&rate) {
                return Err(UsageError(format!(
                    "--rate {rate} is not a sample rate: with --frames, --rate is the sample rate in Hz (1000..768000, e.g. 44100)"
                )));
            }
            let f = FragmentModel {
                fragments,
                frames,
                sample_rate: rate as u32,
            };
            (f.period_ns(), Some(f))
        }
        _ => {
            let period_ns = match (a.interval, a.rate) {
                (Some(i), _) => i.as_nanos() as u64,
                (None, rate) => (1e9 / rate.unwrap_or(2048.0)).round() as u64,
            };
            (period_ns, None)
        }
    };
    let cpus = match &a.cpu {
        None => None,
        Some(list) => Some(
            engine::rt::parse_online_cpu_list(list)
                .map_err(|e| UsageError(format!("--cpu {list}: {e}")))?,
        ),
    };
    let length = match (a.loops, a.duration) {
        (Some(n), _) => RunLength::Loops(n),
        (None, d) => RunLength::Duration(d.unwrap_or(Duration::from_secs(10))),
    };
    let config = JitterConfig {
        mode: a.mode,
        period_ns,
        fragments,
        busy_percent: a.busy,
        policy: policy(
            a.policy,
            a.priority,
            period_ns,
            a.busy,
            a.dl_runtime,
            a.dl_deadline,
        )?,
        cpus,
        length,
        hist_bound_ns: a.hist_bound.as_nanos().min(u64::MAX as u128) as u64,
        lock_memory: !a.no_mlock,
        dma_latency: !a.no_dma_latency,
        ..JitterConfig::new(period_ns, length)
    };
    config.validate().map_err(|e| UsageError(e.to_string()))?;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s", "s").unwrap(), Duration::from_secs(10));
        assert_eq!(
            parse_duration("500ms", "s").unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(
            parse_duration("488", "us").unwrap(),
            Duration::from_micros(488)
        );
        assert_eq!(
            parse_duration("1.5m", "s").unwrap(),
            Duration::from_secs(90)
        );
        assert!(parse_duration("-1s", "s").is_err());
        assert!(parse_duration("0", "s").is_err());
        assert!(parse_duration("10 parsecs", "s").is_err());
        assert!(parse_duration("abc", "s").is_err());
    }

    #[test]
    fn rate_and_priority_validation() {
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("-5").is_err());
        assert_eq!(parse_rate("2048").unwrap(), 2048.0);
        assert!(policy(PolicyName::Fifo, Some(0), 1_000_000, 0.0, None, None).is_err());
        assert!(policy(PolicyName::Fifo, Some(100), 1_000_000, 0.0, None, None).is_err());
        assert!(policy(PolicyName::Other, Some(10), 1_000_000, 0.0, None, None).is_err());
        assert_eq!(
            policy(PolicyName::Deadline, None, 1_000_000, 50.0, None, None).unwrap(),
            Policy::Deadline {
                runtime_ns: 600_000,
                deadline_ns: 1_000_000,
                period_ns: 1_000_000
            }
        );
    }
}
