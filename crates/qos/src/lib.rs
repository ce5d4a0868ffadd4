//! # qos: cells, admission control and load placement
//!
//! Cells: named sets of threads with guaranteed resources, Tessellation's space-time
//! partitions on stock Linux (Colmenares, Peters et al., J. Audio Eng. Soc. 61(4), 2013,
//! section 2).
//!
//! | kind | Tessellation | Linux |
//! |---|---|---|
//! | `dedicated` | no multiplexing: the cell owns its hardware threads | an exclusive cpuset, every other task moved off its CPUs for the run, threads pinned at SCHED_FIFO |
//! | `time-triggered` | active in periodic windows | SCHED_DEADLINE (runtime / deadline / period); jobs start on period boundaries |
//! | `event-triggered` | woken by events, never above its share | SCHED_DEADLINE woken by its input; the kernel's CBS caps it at runtime / period |
//! | `best-effort` | no guarantee | SCHED_OTHER, BATCH or IDLE on the CPUs left over |
//!
//! A [`CellSet`] is checked by [`CellSet::admit`] before anything starts (admission
//! control: exclusive CPUs, SCHED_DEADLINE bandwidth per CPU set, link bandwidth), then
//! made real by [`partition::Partition::create`], which undoes everything when dropped.
//!
//! A cell set comes from a TOML file:
//!
//! ```toml
//! [cell.music]
//! kind = "dedicated"
//! cpus = "1"
//! priority = 80
//!
//! [cell.others]
//! kind = "best-effort"
//! policy = "batch"
//!
//! [cell.video]
//! kind = "time-triggered"
//! runtime = "2ms"
//! period = "33ms"
//! ```
//!
//! or from flags, one per cell: `music=dedicated:cpus=1,priority=80`,
//! `others=best-effort:policy=batch`, `video=time-triggered:runtime=2ms,period=33ms`.
//!
//! A run's cells and the host's place among them are a [`CellPlan`]: its
//! [`CellPlan::admit`] checks the loads' placement and the whole set before anything
//! starts, and [`load_placement`] tells a load process how to enter a made cell.
//!
//! This crate changes the machine (cgroups, affinities, scheduling) and undoes it; it
//! measures nothing. Its errors name the problem: a [`PlanError`] names the load and the
//! cell; the texts of the other refusals say what is over and by how much.
//!
//! ```no_run
//! use qos::{Capacity, CellSet};
//! let mut cells = CellSet::default();
//! cells.push(CellSet::parse_flag("music=dedicated:cpus=1,priority=80").unwrap()).unwrap();
//! let admission = cells.admit(&Capacity::here(None), &Default::default(), &[]).unwrap();
//! let partition = qos::partition::Partition::create(&cells, &admission).unwrap();
//! // ... run the cell's threads (PlacedCell::enter), then:
//! let problems = partition.finish();
//! # let _ = problems;
//! ```
#![deny(missing_docs)]
// A library says nothing on the standard streams (the binary does): `print!` and
// `eprint!` panic when the stream fails.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod admission;
mod cell;
pub mod partition;
mod plan;

pub use admission::{fmt_ns, Admission, Capacity};
pub use cell::{join_groups, parse_mbps, Cell, CellKind, CellSet};
pub use plan::{load_placement, CellPlan, HostThreads, PlanError};

#[cfg(test)]
mod tests;
