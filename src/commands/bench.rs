//! `audiolat bench`: the DSP kernels' speed against a reference measured in the same run.

use crate::commands::output::print_json;
use crate::context::Context;
use crate::process::EXIT_INTERRUPTED;
use crate::stdio;
use anyhow::Result;
use results::records::Record;
use std::process::ExitCode;

pub(crate) fn bench(ctx: &Context, a: &crate::cli::BenchArgs) -> Result<ExitCode> {
    let config = a.config()?;
    // Bench stores nothing, but measures: on the machine as it should be.
    crate::context::undo_leftovers(false)?;
    let steal = probes::steal::StealSampler::start(std::time::Duration::from_millis(50), None);
    let report = dsp::bench::run(&config, &ctx.stop);
    let workers = (!a.workers.is_empty() && report.is_ok())
        .then(|| probes::bench_workers::run(&a.workers, &ctx.stop));
    let steal = steal.finish();
    let (Ok(report), None | Some(Ok(_))) = (report, &workers) else {
        stdio::say("audiolat: bench interrupted before it finished; nothing is reported");
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    };
    let cpus = engine::rt::online_cpus().len();
    let flags = probes::bench::BenchFlags {
        build_profile: ctx.tool.build_profile.clone(),
        policy: engine::rt::current_thread_policy().to_string(),
        host_steal_percent: steal.percent_of_span(steal.total_ns(None), cpus),
    };
    let mut bench = probes::bench::record(&report, &flags);
    if let Some(Ok(w)) = workers {
        bench.workers = Some(probes::bench_workers::record(&w));
    }
    if a.json {
        print_json(&bench.to_json())?;
    } else {
        stdio::print(report::view::bench::text(&bench))?;
    }
    Ok(ExitCode::SUCCESS)
}
