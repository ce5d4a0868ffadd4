//! The HTML report: one self-contained file (inline CSS, SVG and a small script that
//! toggles plot series and opens folded details for printing; nothing fetched): the
//! answer first ([`crate::summary`]), the paper-shaped tables and the study's figures
//! beside ours, the plots, every run with its command and validity flags, and the
//! machine with doctor's findings. Light and dark colours come from CSS variables.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use results::model::Verdict;
use results::output::OutputError;
use serde_json::Value;

use crate::data::{ReportData, RunData};
use crate::paper::{self, PaperTable};
pub use crate::words::escape;

const STYLE: &str = r#"
:root { color-scheme: light dark;
  --fg: #1d1d1f; --bg: #ffffff; --muted: #5a5a5f; --border: #c9c9cf; --grid: #e4e4e8;
  --th-bg: #f1f1f4; --code-bg: #f6f6f8; --published: #8a5a00;
  --ok: #1b7f2a; --warn: #9a5600; --fail: #b00020; --band: rgba(160, 120, 0, .16);
  --s0: #1f77b4; --s1: #d62728; --s2: #2ca02c; --s3: #e07b00; --s4: #9467bd; --s5: #8c564b; --s6: #d0459f; --s7: #17a2b8; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6e6ea; --bg: #16171a; --muted: #a4a4ad; --border: #44454c; --grid: #2d2e33;
    --th-bg: #23242a; --code-bg: #1f2025; --published: #e0b050;
    --ok: #5cc46d; --warn: #e0a040; --fail: #ff6b7d; --band: rgba(230, 190, 80, .18);
    --s0: #6aaee8; --s1: #ff7a7a; --s2: #6ccf6c; --s3: #ffae4a; --s4: #c3a2ec; --s5: #c99a8c; --s6: #f28ac9; --s7: #4fd2e6; }
}
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5rem auto; max-width: 1200px; padding: 0 1rem; color: var(--fg); background: var(--bg); line-height: 1.4; }
h1 { font-size: 1.5rem; margin-bottom: .2rem; }
h2 { border-bottom: 1px solid var(--border); padding-bottom: .2rem; margin-top: 2.2rem; }
h3 { font-size: 1.05rem; margin-top: 1.6rem; }
a { color: var(--s0); }
.meta, .caption, .note { color: var(--muted); font-size: .9rem; }
.table-wrap { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; margin: .6rem 0; font-size: .88rem; max-width: 100%; }
th, td { border: 1px solid var(--border); padding: .25rem .45rem; text-align: right; vertical-align: top; }
td.wrap { overflow-wrap: anywhere; }
th { background: var(--th-bg); text-align: center; }
td.label, th.label { text-align: left; }
.nowrap { white-space: nowrap; }
td .published { display: block; color: var(--published); font-size: .8rem; }
td.empty { color: var(--muted); text-align: center; }
td.fail, span.fail, .fail { color: var(--fail); font-weight: 600; }
td.warn, span.warn, .warn { color: var(--warn); }
td.ok, span.ok, .ok { color: var(--ok); }
table.runs td.validity { text-align: left; }
table.runs dl { display: grid; grid-template-columns: auto auto; gap: 0 .8rem; margin: .3rem 0; font-size: .82rem; }
table.runs dt { color: var(--muted); }
table.runs dd { margin: 0; }
code, pre { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: .82rem; }
code { overflow-wrap: anywhere; }
pre { background: var(--code-bg); padding: .6rem; overflow-x: auto; border: 1px solid var(--border); white-space: pre-wrap; }
figure { margin: 1rem 0; max-width: 860px; }
nav ul { columns: 2; margin: .4rem 0; }
details summary { cursor: pointer; }
section.summary { border: 1px solid var(--border); border-radius: 6px; padding: .2rem 1rem .8rem; margin-top: 1rem; }
section.summary h2 { margin-top: .8rem; }
section.summary h3 { margin-top: 1.1rem; }
section.summary ul { padding-left: 1.4rem; }
section.summary li { margin: .15rem 0; }
section.summary li.ok, section.summary li.warn, section.summary li.fail { color: var(--fg); font-weight: normal; list-style: none; }
section.summary li.ok::before, section.summary li.warn::before, section.summary li.fail::before { display: inline-block; width: 1.2rem; margin-left: -1.2rem; font-weight: 700; }
section.summary li.ok::before { content: "\2713"; color: var(--ok); }
section.summary li.warn::before { content: "!"; color: var(--warn); }
section.summary li.fail::before { content: "\2717"; color: var(--fail); }
section.summary span.run { color: var(--muted); }
@media (max-width: 900px) {
  body { margin: 1rem auto; padding: 0 .6rem; }
  nav ul { columns: 1; }
  th, td { padding: .2rem .3rem; }
  table.runs { font-size: .8rem; }
}
@media print {
  :root { --fg: #000; --bg: #fff; --muted: #444; --border: #999; --grid: #ddd; --th-bg: #eee; --code-bg: #fff;
    --published: #8a5a00; --ok: #1b7f2a; --warn: #9a5600; --fail: #b00020; --band: rgba(160, 120, 0, .16);
    --s0: #1f77b4; --s1: #d62728; --s2: #2ca02c; --s3: #e07b00; --s4: #9467bd; --s5: #8c564b; --s6: #d0459f; --s7: #17a2b8; }
  .table-wrap { overflow: visible; }
  table.paper, table.compare, table.runs { font-size: 7pt; }
  table.paper th, table.paper td { padding: .1rem .2rem; }
  body { max-width: none; margin: 0; padding: 0; font-size: 10pt; }
  nav { display: none; }
  section, figure, table.paper, table.summary-table { break-inside: avoid; }
  h2, h3 { break-after: avoid; }
  figure { max-width: 100%; }
  a { color: inherit; text-decoration: none; }
}
"#;

/// The page's own script, besides the plots': every folded detail opens for printing,
/// so a PDF has everything.
const PAGE_SCRIPT: &str = r#"
window.addEventListener('beforeprint', function () {
  document.querySelectorAll('details').forEach(function (d) { d.open = true; });
});
"#;

/// Writes the report of `data` to `path`, else beside the database `db` named for `what`
/// ([`default_path`](crate::gather::default_path)); returns where it went. Written
/// through `results::output` (never over the database or another SQLite file, whole or
/// not at all).
pub fn write(
    data: &ReportData,
    path: Option<&Path>,
    db: &Path,
    what: &str,
) -> Result<PathBuf, OutputError> {
    write_with(data, "", path, db, what)
}

/// [`write`] with `extra` sections after the summary (see [`render_with`]).
pub fn write_with(
    data: &ReportData,
    extra: &str,
    path: Option<&Path>,
    db: &Path,
    what: &str,
) -> Result<PathBuf, OutputError> {
    let path = path.map_or_else(|| crate::gather::default_path(db, what), Path::to_path_buf);
    results::output::write(&path, db, render_with(data, extra).as_bytes())?;
    Ok(path)
}

/// The report as one HTML document.
pub fn render(data: &ReportData) -> String {
    render_with(data, "")
}

/// The report with `extra` (whole `<section>`s, e.g. a comparison's table) right after
/// the summary.
pub fn render_with(data: &ReportData, extra: &str) -> String {
    let mut out = String::new();
    let title = data.title();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"color-scheme\" content=\"light dark\">\n<title>{}</title>\n<style>{STYLE}{}{}</style>\n</head>\n<body>\n",
        escape(&title),
        crate::plots::CSS,
        if has_bars(data) {
            crate::plots::BARS_CSS
        } else {
            ""
        }
    );
    let _ = writeln!(out, "<header><h1>{}</h1>", escape(&title));
    let _ = writeln!(
        out,
        "<p class=\"meta\">{} &middot; {} cells, {} runs &middot; report made {} by audiolat {}</p>",
        escape(&data.subject),
        data.cells.len(),
        data.runs().count(),
        escape(&data.generated_at),
        escape(&data.tool_version)
    );
    if let Some(d) = data.plan.as_ref().and_then(|p| p["description"].as_str()) {
        if !d.trim().is_empty() {
            let _ = writeln!(out, "<p>{}</p>", escape(d.trim()));
        }
    }
    out.push_str("</header>\n<main>\n");
    out.push_str(&crate::summary::html(data));
    out.push_str(extra);
    let tables = paper::tables(data);
    out.push_str(&nav_html(data, !tables.is_empty()));
    if !tables.is_empty() {
        out.push_str("<section id=\"tables\"><h2>Tables</h2>\n");
        out.push_str("<p class=\"note\">Each value is the plan's aggregate over the cell's repeats (hover for the spread and the number of runs); the study's published value, where it has one, is printed below it.</p>\n");
        for t in &tables {
            out.push_str(&table_html(t));
        }
        out.push_str("</section>\n");
    }
    out.push_str(&plots_html(data));
    out.push_str(&runs_html(data));
    out.push_str(&crate::view::gates::report_html(data));
    out.push_str(&machine_html(data));
    if let Some(text) = data.plan.as_ref().and_then(|p| p["text"].as_str()) {
        let _ = writeln!(
            out,
            "<section id=\"plan\"><h2>The plan</h2><p class=\"meta\">{}</p><pre>{}</pre></section>",
            escape(
                data.plan
                    .as_ref()
                    .and_then(|p| p["source"].as_str())
                    .unwrap_or("")
            ),
            escape(text)
        );
    }
    let _ = write!(
        out,
        "</main>\n<script>{PAGE_SCRIPT}{}</script>\n</body>\n</html>\n",
        crate::plots::SCRIPT
    );
    out
}

/// Whether a run of the report kept misses the kernel's trace explained: its time plot
/// draws them as stacked bars.
fn has_bars(data: &ReportData) -> bool {
    use results::records::{why::WhyPart, Record};
    data.runs().any(|r| {
        WhyPart::from_json(&r.record.result)
            .and_then(|p| p.why)
            .is_some_and(|w| !w.misses.is_empty())
    })
}

/// The table of contents: the sections this report has.
fn nav_html(data: &ReportData, tables: bool) -> String {
    let mut out = String::from("<nav><ul>");
    if tables {
        out.push_str("<li><a href=\"#tables\">Tables</a></li>");
    }
    out.push_str("<li><a href=\"#plots\">Plots</a></li><li><a href=\"#runs\">Runs, commands and validity flags</a></li><li><a href=\"#machine\">Machine</a></li>");
    if data.runs().any(|r| !r.gates.is_empty()) {
        out.push_str("<li><a href=\"#gates\">Gates</a></li>");
    }
    if data.plan.is_some() {
        out.push_str("<li><a href=\"#plan\">The plan</a></li>");
    }
    out.push_str("</ul></nav>\n");
    out
}

/// The plots section: each figure with its caption.
fn plots_html(data: &ReportData) -> String {
    let mut out = String::from("<section id=\"plots\"><h2>Plots</h2>\n");
    let figures = crate::figures::figures(data);
    // A metric whose every sample is one value has no distribution: its value, said.
    let values_only = crate::figures::values_only(data);
    if figures.is_empty() && values_only.is_empty() {
        out.push_str("<p class=\"note\">No run with samples to plot.</p>\n");
    }
    for line in &values_only {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(line));
    }
    for f in figures {
        let _ = writeln!(
            out,
            "<figure class=\"plot\" id=\"{}\">{}<figcaption class=\"caption\">{}</figcaption></figure>",
            escape(&f.id),
            f.svg,
            escape(&f.caption)
        );
    }
    out.push_str("</section>\n");
    out
}

fn table_html(t: &PaperTable) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "<h3>{}</h3>", escape(&t.title));
    if let Some(c) = &t.caption {
        let _ = writeln!(
            out,
            "<p class=\"caption\">Beside ours (below each value): {}</p>",
            escape(c)
        );
    }
    out.push_str("<div class=\"table-wrap\"><table class=\"paper\"><thead>\n");
    let levels = t.column_axes.len().max(1);
    // Header rows: one per column axis, labels spanning the axes inside them.
    let _ = write!(
        out,
        "<tr><th class=\"label\" rowspan=\"{levels}\">{}</th>",
        escape(&t.row_axes.join(" / "))
    );
    if t.column_axes.is_empty() {
        let _ = write!(out, "<th>{}</th>", escape(&t.unit));
    }
    for (level, (_, labels)) in t.column_axes.iter().enumerate() {
        if level > 0 {
            out.push_str("<tr>");
        }
        let repeat: usize = t.column_axes[..level]
            .iter()
            .map(|(_, l)| l.len())
            .product();
        let span: usize = t.column_axes[level + 1..]
            .iter()
            .map(|(_, l)| l.len())
            .product();
        for _ in 0..repeat {
            for l in labels {
                let _ = write!(out, "<th colspan=\"{span}\">{}</th>", escape(l));
            }
        }
        out.push_str("</tr>\n");
    }
    if t.column_axes.is_empty() {
        out.push_str("</tr>\n");
    }
    out.push_str("</thead><tbody>\n");
    for (labels, cells) in &t.rows {
        let _ = write!(
            out,
            "<tr><td class=\"label\">{}</td>",
            escape(&labels.join(" "))
        );
        for c in cells {
            let published = c
                .published
                .as_ref()
                .map(|p| {
                    let text = match p {
                        Value::Number(n) => t.fmt(n.as_f64().unwrap_or(f64::NAN)),
                        Value::String(s) => s.clone(),
                        _ => "-".into(),
                    };
                    format!(
                        "<span class=\"published\" title=\"the study's value\">{}</span>",
                        escape(&text)
                    )
                })
                .unwrap_or_default();
            match c.value {
                Some(v) => {
                    let tip = format!(
                        "{} of {} run{}{}",
                        t.aggregate,
                        c.runs,
                        if c.runs == 1 { "" } else { "s" },
                        c.spread
                            .map(|s| format!(", sd {}", t.fmt(s)))
                            .unwrap_or_default()
                    );
                    let _ = write!(
                        out,
                        "<td title=\"{}\">{}{published}</td>",
                        escape(&tip),
                        escape(&t.fmt(v))
                    );
                }
                None => {
                    let note = c.note.clone().unwrap_or_default();
                    let _ = write!(
                        out,
                        "<td class=\"empty\" title=\"{}\">&ndash;{published}</td>",
                        escape(&note)
                    );
                }
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
    let notes = t.notes();
    if !notes.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"note\">&ndash;: {}</p>",
            notes
                .iter()
                .map(|n| escape(n))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    if !t.unit.is_empty() {
        let _ = writeln!(out, "<p class=\"note\">unit: {}</p>", escape(&t.unit));
    }
    out
}

/// A validity flag's value for the runs table: a flag named `..._ns` is a time (`10.0
/// ms`, never the raw count of ns; `none` when it measured none), `..._percent` a
/// percentage.
fn flag_text(name: &str, v: &Value) -> (String, &'static str) {
    match v {
        Value::Bool(true) => ("yes".into(), ""),
        Value::Bool(false) => ("no".into(), ""),
        Value::Number(n) => (
            match n.as_f64() {
                // A time measured as none (no host steal) reads so, as the probes say it.
                Some(f) if name.ends_with("_ns") && f == 0.0 => "none".into(),
                Some(f) if name.ends_with("_ns") => crate::terminal::fmt_value(f, "ns"),
                Some(f) if name.ends_with("_percent") => crate::units::fmt_percent(f),
                Some(f) if f.fract() != 0.0 => format!("{f:.2}"),
                _ => n
                    .as_u64()
                    .map_or_else(|| n.to_string(), crate::units::fmt_count),
            },
            "",
        ),
        Value::Null => ("-".into(), ""),
        Value::String(s) => (s.clone(), ""),
        other => (other.to_string(), ""),
    }
}

/// How much doubt a validity flag's value casts on the run's figures: `Some("fail")` for
/// one that makes them untrustworthy (not real-time, interrupted, under-runs...),
/// `Some("warn")` for a caveat (host steal, a setting not as requested), `None` for a
/// flag that reads as it should or only informs.
fn flag_doubt(name: &str, v: &Value) -> Option<&'static str> {
    const FAIL_IF_FALSE: [&str; 2] = ["realtime", "memory_locked"];
    const WARN_IF_FALSE: [&str; 3] = [
        "affinity_as_requested",
        "policy_as_requested",
        "cpu_dma_latency_held",
    ];
    const FAIL_IF_TRUE: [&str; 4] = [
        "interrupted",
        "load_exited_early",
        "no_loop",
        "percentiles_clamped",
    ];
    const WARN_IF_TRUE: [&str; 1] = ["emulated_cpu"];
    const FAIL_IF_ANY: [&str; 13] = [
        "sender_late_blocks",
        "xruns",
        "skipped_cycles",
        "dsp_overload_cycles",
        "missed_triggers",
        "late_triggers",
        "dropped_triggers",
        "timing_unknown_triggers",
        "capture_blocks_dropped",
        "cycle_records_dropped",
        "clipped_samples",
        "histogram_overflows",
        "alloc_violations",
    ];
    const WARN_IF_ANY: [&str; 6] = [
        "host_steal_ns",
        "unmatched_captures",
        "windows_unreliable",
        "windows_no_signal",
        "delay_changes",
        "frame_count_restarts",
    ];
    match v {
        Value::Bool(false) if FAIL_IF_FALSE.contains(&name) => Some("fail"),
        Value::Bool(false) if WARN_IF_FALSE.contains(&name) => Some("warn"),
        Value::Bool(true) if FAIL_IF_TRUE.contains(&name) => Some("fail"),
        Value::Bool(true) if WARN_IF_TRUE.contains(&name) => Some("warn"),
        Value::Number(n) if n.as_f64().is_some_and(|f| f > 0.0) => {
            if FAIL_IF_ANY.contains(&name) {
                Some("fail")
            } else if WARN_IF_ANY.contains(&name) {
                Some("warn")
            } else {
                None
            }
        }
        _ => None,
    }
}

/// A flag's name for people: words, without the unit its value now carries
/// (`host_steal_ns` is "host steal", shown as `20.0 ms`).
fn flag_name(name: &str) -> String {
    let name = name
        .strip_suffix("_ns")
        .or_else(|| name.strip_suffix("_percent"))
        .unwrap_or(name);
    name.replace('_', " ")
}

/// A run's validity in a cell that fits the page: the flags that make its figures
/// doubtful in words, then every flag folded.
fn validity_cell(flags: &Value) -> String {
    let Some(map) = flags.as_object() else {
        return "<td class=\"validity\">-</td>".into();
    };
    // Host steal is one flag in two units: the time, with its share beside it.
    let steal_share = map.contains_key("host_steal_ns").then(|| {
        map.get("host_steal_percent")
            .and_then(Value::as_f64)
            .map(crate::units::fmt_percent)
    });
    let scalars: Vec<(&String, &Value)> = map
        .iter()
        .filter(|(_, v)| !v.is_object() && !v.is_array())
        .filter(|(k, _)| !(k.as_str() == "host_steal_percent" && steal_share.is_some()))
        .collect();
    let text = |k: &str, v: &Value| match (k, steal_share.clone().flatten()) {
        ("host_steal_ns", Some(share)) if v.as_f64().is_some_and(|f| f > 0.0) => {
            format!("{} ({share})", flag_text(k, v).0)
        }
        _ => flag_text(k, v).0,
    };
    let doubts: Vec<String> = scalars
        .iter()
        .filter_map(|(k, v)| {
            flag_doubt(k, v).map(|class| {
                format!(
                    "<span class=\"{class}\">{} {}</span>",
                    escape(&flag_name(k)),
                    escape(&text(k, v))
                )
            })
        })
        .collect();
    let mut out = String::from("<td class=\"validity\">");
    if doubts.is_empty() {
        out.push_str("<span class=\"ok\">every flag as it should be</span>");
    } else {
        out.push_str(&doubts.join("; "));
    }
    let _ = write!(
        out,
        "<details><summary>all {} flags</summary><dl>",
        scalars.len()
    );
    for (k, v) in scalars {
        let _ = write!(
            out,
            "<dt>{}</dt><dd>{}</dd>",
            escape(&flag_name(k)),
            escape(&text(k, v))
        );
    }
    out.push_str("</dl></details></td>");
    out
}

/// A build profile that wraps only before its parenthesis: `release` over `(opt-level 3)`,
/// never a word a line.
fn profile_html(profile: &str) -> String {
    match profile.split_once(" (") {
        Some((name, rest)) => format!(
            "{} <span class=\"nowrap\">({})</span>",
            escape(name),
            escape(rest)
        ),
        None => format!("<span class=\"nowrap\">{}</span>", escape(profile)),
    }
}

/// The measurement a run's row shows: its headline, as every list shows it.
fn table_metric(r: &RunData) -> Option<&results::Measurement> {
    r.headline()
}

fn runs_html(data: &ReportData) -> String {
    let mut out = String::from("<section id=\"runs\"><h2>Runs, commands and validity flags</h2>\n");
    out.push_str("<p class=\"note\">Each run's headline metric, and the validity flags that cast doubt on it (not real-time, memory not locked, host steal, interrupted...); every flag is folded under its run.</p>\n");
    out.push_str("<table class=\"runs\"><thead><tr><th class=\"label\">cell</th><th>run</th><th>profile</th><th>mean</th><th>p99</th><th>max</th><th title=\"xruns (and skipped cycles, said apart), fragment under-runs, or blocks past the deadline\">under-runs</th><th class=\"label\">validity</th></tr></thead><tbody>\n");
    for c in &data.cells {
        let status = c
            .status
            .map(|s| s.to_string())
            .unwrap_or_else(|| "pending".into());
        let class = match status.as_str() {
            "complete" => "ok",
            "pending" => "",
            "interrupted" => "warn",
            _ => "fail",
        };
        let h = c.run.as_ref().and_then(table_metric);
        let _ = write!(
            out,
            "<tr><td class=\"label\">{}{}</td><td>{}<br><span class=\"{class}\">{}</span></td><td class=\"label\">{}</td>",
            escape(&c.key),
            h.map(|m| format!("<br><span class=\"meta\">{}</span>", escape(&crate::words::metric_name(&m.metric))))
                .unwrap_or_default(),
            c.run.as_ref().map(|r| r.record.id.to_string()).unwrap_or_default(),
            escape(&status),
            profile_html(&c.profile)
        );
        let s = h.and_then(|m| m.summary.as_ref());
        // The mean and the maximum are exact (overflows included); only the percentile
        // can be above the histogram's bound.
        for stat in ["mean", "p99", "max"] {
            let text = match (h, s.and_then(|s| s.stat(stat))) {
                (Some(m), Some(v)) => crate::terminal::fmt_stat(v, &m.unit),
                _ => "-".into(),
            };
            let _ = write!(out, "<td class=\"nowrap\">{}</td>", escape(&text));
        }
        let _ = write!(
            out,
            "{}",
            match c.run.as_ref().map(RunData::dropouts) {
                Some(d) => match crate::units::fmt_dropouts(&d) {
                    None => "<td>-</td>".to_string(),
                    Some(text) => format!(
                        "<td class=\"{}\">{}</td>",
                        if d.any() { "fail" } else { "ok" },
                        escape(&text)
                    ),
                },
                None => "<td>-</td>".to_string(),
            }
        );
        match &c.run {
            Some(r) => out.push_str(&validity_cell(&r.record.flags)),
            None => out.push_str("<td class=\"validity\">-</td>"),
        }
        out.push_str("</tr>\n");
        if let Some(e) = c
            .error
            .as_ref()
            .or(c.run.as_ref().and_then(|r| r.record.error.as_ref()))
        {
            let _ = writeln!(
                out,
                "<tr><td></td><td colspan=\"7\" class=\"label note\">{}</td></tr>",
                escape(e)
            );
        }
    }
    out.push_str("</tbody></table>\n");
    out.push_str("<details><summary>The exact command of every run</summary><table><thead><tr><th>run</th><th class=\"label\">command line</th><th class=\"label\">build</th><th class=\"label\">load</th></tr></thead><tbody>\n");
    for r in data.runs() {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"label\"><code>{}</code></td><td class=\"label\">{} <code>{}</code></td><td class=\"label\">{}</td></tr>",
            r.record.id,
            escape(&r.record.command_line),
            escape(&r.record.tool.build_profile),
            escape(&r.record.tool.git_commit),
            escape(&r.record.load_record().map_or("none".into(), |l| l.spec))
        );
    }
    out.push_str("</tbody></table></details>\n");
    if let Some(g) = &data.group {
        let _ = writeln!(
            out,
            "<p class=\"meta\">group {} ({}), {}: <code>{}</code>, started {}{}</p>",
            g.id,
            escape(&g.kind),
            escape(g.status.as_str()),
            escape(&g.command_line),
            escape(&g.started_at),
            g.ended_at
                .as_ref()
                .map(|e| format!(", ended {}", escape(e)))
                .unwrap_or_default()
        );
    }
    out.push_str("</section>\n");
    out
}

fn machine_html(data: &ReportData) -> String {
    let mut out = String::from("<section id=\"machine\"><h2>Machine</h2>\n");
    let mut machines: Vec<&results::Machine> = Vec::new();
    for r in data.runs() {
        if !machines.contains(&&r.record.machine) {
            machines.push(&r.record.machine);
        }
    }
    for m in machines {
        let _ = writeln!(
            out,
            "<table><tbody><tr><th class=\"label\">host</th><td class=\"label\">{}</td></tr><tr><th class=\"label\">kernel</th><td class=\"label\">{} ({})</td></tr><tr><th class=\"label\">preemption</th><td class=\"label\">{}</td></tr><tr><th class=\"label\">CPU</th><td class=\"label\">{} x {}</td></tr><tr><th class=\"label\">virtualised</th><td class=\"label\">{}</td></tr><tr><th class=\"label\">clocksource</th><td class=\"label\">{}</td></tr></tbody></table>",
            escape(&m.hostname),
            escape(&m.kernel_release),
            escape(&m.kernel_version),
            escape(&m.preemption),
            m.cpus_online,
            escape(&m.cpu_model),
            escape(m.virtualization.as_deref().unwrap_or("no")),
            escape(&m.clocksource)
        );
    }
    let steal: Vec<f64> = data
        .runs()
        .filter_map(|r| r.record.flags_record().steal_percent())
        .collect();
    if !steal.is_empty() {
        let max = steal.iter().cloned().fold(0.0, f64::max);
        let mean = steal.iter().sum::<f64>() / steal.len() as f64;
        let _ = writeln!(
            out,
            "<p>Host steal during the runs: mean {mean:.2} %, worst run {max:.2} % (CPU time the hypervisor took; a run with steal measured the host as well as this machine).</p>"
        );
    }
    match &data.doctor {
        Some(findings) => {
            out.push_str("<h3>Doctor's findings</h3><table><thead><tr><th class=\"label\">check</th><th>verdict</th><th class=\"label\">value</th><th class=\"label\">why / fix</th></tr></thead><tbody>\n");
            for f in findings {
                let (class, word) = match f.verdict {
                    Verdict::Ok => ("ok", "ok"),
                    Verdict::Warn => ("warn", "warn"),
                    Verdict::Fail => ("fail", "FAIL"),
                };
                let _ = writeln!(
                    out,
                    "<tr><td class=\"label nowrap\">{}</td><td class=\"{class} nowrap\">{word}</td><td class=\"label wrap\">{}</td><td class=\"label\">{}{}</td></tr>",
                    escape(&f.check),
                    escape(&f.value),
                    escape(&f.detail),
                    if f.fix.is_empty() {
                        String::new()
                    } else {
                        format!(" <b>Fix:</b> {}", escape(&f.fix))
                    }
                );
            }
            out.push_str("</tbody></table>\n");
        }
        None => out.push_str("<p class=\"note\">No doctor run in this selection (`audiolat doctor` checks the set-up).</p>\n"),
    }
    out.push_str("</section>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_an_empty_report_is_still_a_page() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        let html = render(&ReportData {
            subject: "nothing <here>".into(),
            ..Default::default()
        });
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("nothing &lt;here&gt;"));
        assert!(html.trim_end().ends_with("</html>"));
        assert!(!html.contains("http://") && !html.contains("https://"));
    }

    #[test]
    fn a_flag_in_ns_is_a_time_and_a_percent_a_percentage() {
        use serde_json::json;
        let text = |name: &str, v: Value| flag_text(name, &v).0;
        assert_eq!(
            text("host_steal_ns", json!(10_000_000)),
            crate::terminal::fmt_ns(1e7)
        );
        assert!(!text("host_steal_ns", json!(10_000_000)).contains("10000000"));
        assert_eq!(text("host_steal_percent", json!(0.4505)), "0.45 %");
        assert_eq!(text("histogram_overflows", json!(12345)), "12\u{202F}345");
        assert_eq!(text("realtime", json!(true)), "yes");
        assert_eq!(text("host_steal_ns", Value::Null), "-");
        assert_eq!(text("host_steal_ns", json!(0)), "none");
    }

    #[test]
    fn the_bars_rules_come_with_bars_only() {
        use serde_json::json;
        let page = |result: Value| {
            render(&ReportData {
                cells: vec![crate::data::CellData {
                    key: "run 1".into(),
                    axes: Default::default(),
                    profile: "current".into(),
                    status: Some(results::RunStatus::Complete),
                    error: None,
                    source: None,
                    run: Some(crate::data::test_run("jitter", result, Vec::new())),
                }],
                ..Default::default()
            })
        };
        let traced = page(json!({"why": crate::view::why::test_why()}));
        assert!(traced.contains(crate::plots::BARS_CSS));
        assert!(!traced.contains("<script>x"), "the kernel's names escaped");
        let plain = page(json!({}));
        assert!(!plain.contains(crate::plots::BARS_CSS));
        assert!(plain.contains(crate::plots::CSS));
    }
}
