//! `audiolat net experiment`: the Tessellation study's Figures 7 and 8 as a group of net
//! runs.

use crate::cli::UsageError;
use crate::commands::output::print_json;
use crate::process::{EXIT_FAILED, EXIT_INTERRUPTED};
use crate::runner::Context;
use anyhow::Result;
use serde_json::json;
use std::process::ExitCode;

/// One run of an experiment: what it changes from the base, and the study's figure.
pub(crate) struct ExperimentRun {
    label: String,
    load: &'static str,
    cells: Vec<String>,
    host_cell: Option<&'static str>,
    link: Option<probes::net::LinkShaping>,
    paper: &'static str,
}

pub(crate) fn net_experiment(ctx: &Context, a: &crate::cli::ExperimentArgs) -> Result<ExitCode> {
    use probes::net::{LinkShaping, ReserveBy};
    let online = engine::rt::online_cpus();
    let cpu = a.cpu.unwrap_or_else(|| online.last().copied().unwrap_or(0));
    if !online.contains(&cpu) {
        return Err(UsageError(format!("--cpu {cpu} is not online here")).into());
    }
    let root = unsafe { libc::geteuid() } == 0;
    let music = format!("music=dedicated:cpus={cpu}");
    let others = "others=best-effort:policy=batch".to_string();
    let (runs, metric, netns) = match a.which {
        crate::cli::Experiment::Isolation => {
            if !root || online.len() < 2 {
                return Err(UsageError(
                    "the isolation experiment moves tasks between cpusets: it needs root and at least 2 CPUs".into(),
                )
                .into());
            }
            let run =
                |label: &str, load: &'static str, cells: bool, paper: &'static str| ExperimentRun {
                    label: label.into(),
                    load,
                    cells: if cells {
                        vec![music.clone(), others.clone()]
                    } else {
                        Vec::new()
                    },
                    host_cell: cells.then_some("music"),
                    link: None,
                    paper,
                };
            (
                vec![
                    run("alone, no cells", "none", false, "-"),
                    run("video + EP, no cells", "video+ep", false, "-"),
                    run(
                        "alone, dedicated cell",
                        "none",
                        true,
                        report::view::experiment::PAPER_FIG7A,
                    ),
                    run(
                        "video + EP in a best-effort cell, dedicated cell",
                        "video@others+ep@others",
                        true,
                        report::view::experiment::PAPER_FIG7B,
                    ),
                ],
                "response_time",
                false,
            )
        }
        crate::cli::Experiment::Bandwidth => {
            if !root {
                return Err(UsageError(
                    "the bandwidth experiment shapes a veth link between two network namespaces: it needs root".into(),
                )
                .into());
            }
            let mut runs = Vec::new();
            for (by, name) in [(ReserveBy::Tc, "tc"), (ReserveBy::Service, "mclock")] {
                if a.by != "both" && a.by != name {
                    continue;
                }
                for (reserve, paper) in [
                    (None, report::view::experiment::PAPER_FIG8A),
                    (Some(240.0), report::view::experiment::PAPER_FIG8B),
                    (Some(150.0), report::view::experiment::PAPER_FIG8_150),
                ] {
                    let label = match (reserve, by) {
                        (None, ReserveBy::Tc) => "no reservation (tc, one FIFO class)".to_string(),
                        (None, ReserveBy::Service) => "no reservation (service, FIFO)".to_string(),
                        (Some(r), _) => format!("{r:.0} Mbit/s reserved by {name}"),
                    };
                    runs.push(ExperimentRun {
                        label,
                        load: "stream",
                        cells: Vec::new(),
                        host_cell: None,
                        link: Some(LinkShaping {
                            mbps: a.link,
                            reserve_mbps: reserve,
                            by,
                        }),
                        paper,
                    });
                }
            }
            (runs, "end_to_end", true)
        }
    };
    let scratch = a
        .scratch_dir
        .clone()
        .unwrap_or_else(|| ctx.default_scratch());
    let store = ctx.open_store()?;
    let which = match a.which {
        crate::cli::Experiment::Isolation => "isolation",
        crate::cli::Experiment::Bandwidth => "bandwidth",
    };
    let group = store.create_group(
        &format!("net experiment {which}"),
        &ctx.command_line,
        &json!({"duration_s": a.duration.as_secs_f64(), "runs": runs.iter().map(|r| r.label.clone()).collect::<Vec<_>>()}),
    )?;
    let mut rows = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        if ctx.stopped() {
            break;
        }
        if !(a.quiet || a.json) {
            eprintln!(
                "audiolat net experiment {which}: run {} of {}: {} ({} + {} warm-up)",
                i + 1,
                runs.len(),
                r.label,
                report::terminal::fmt_duration(a.duration),
                report::terminal::fmt_duration(a.warmup)
            );
        }
        let mut cells = qos::CellSet::default();
        for c in &r.cells {
            cells
                .push(qos::CellSet::parse_flag(c).map_err(UsageError)?)
                .map_err(UsageError)?;
        }
        let load: load::LoadSpec = r
            .load
            .parse()
            .map_err(|e: load::SpecError| UsageError(e.to_string()))?;
        let config = probes::net::NetConfig {
            warmup: a.warmup,
            netns,
            link: r.link,
            stream: load.stream().map(|mbps| probes::net::StreamConfig {
                mbps,
                sink_groups: Vec::new(),
            }),
            ..probes::net::NetConfig::new(a.duration)
        };
        let plan = crate::runner::CellPlan {
            cells,
            host_cell: r.host_cell.map(str::to_string),
        };
        match crate::runner::net_run(ctx, &store, Some(group), &config, &load, &plan, &scratch) {
            Ok(run) => rows.push(report::view::experiment::ExperimentRow::of_run(
                &r.label,
                metric,
                r.paper,
                &run.view(),
            )),
            Err(e) => rows.push(report::view::experiment::ExperimentRow::failed(
                &r.label,
                r.paper,
                format!("{e:#}"),
            )),
        }
    }
    if a.json {
        print_json(&json!({
            "group": group,
            "experiment": which,
            "metric": metric,
            "rows": rows.iter().map(report::view::experiment::ExperimentRow::to_json).collect::<Vec<_>>(),
        }))?;
    } else {
        print!(
            "{}",
            report::view::experiment::stored_text(
                which,
                metric,
                group,
                netaudio::wire::DEADLINE_NS as f64,
                &rows,
                &ctx.db_path,
            )
        );
    }
    Ok(if ctx.stopped() {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if rows.iter().any(|r| r.status != "complete") {
        ExitCode::from(EXIT_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}
