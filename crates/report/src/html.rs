//! The HTML report: one self-contained file (inline CSS and SVG, no scripts, nothing
//! fetched), with the paper-shaped tables and the study's figures beside ours, the plots,
//! every run with its command and validity flags, and the machine with doctor's findings.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use results::model::Verdict;
use serde_json::Value;

use crate::data::{ReportData, RunData};
use crate::paper::{self, PaperTable};

/// Escapes text for HTML.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = r#"
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1200px; padding: 0 1rem; color: #222; }
h1 { font-size: 1.5rem; margin-bottom: .2rem; }
h2 { border-bottom: 1px solid #ccc; padding-bottom: .2rem; margin-top: 2.2rem; }
h3 { font-size: 1.05rem; margin-top: 1.6rem; }
.meta, .caption, .note { color: #555; font-size: .9rem; }
table { border-collapse: collapse; margin: .6rem 0; font-size: .88rem; }
th, td { border: 1px solid #ccc; padding: .25rem .45rem; text-align: right; vertical-align: top; }
th { background: #f3f3f3; text-align: center; }
td.label, th.label { text-align: left; white-space: nowrap; }
td .published { display: block; color: #8a5a00; font-size: .8rem; }
td.empty { color: #999; text-align: center; }
td.fail, span.fail { color: #b00020; font-weight: 600; }
td.warn, span.warn { color: #a05a00; }
td.ok, span.ok { color: #1b7f2a; }
.flags td { text-align: center; }
code, pre { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: .82rem; }
pre { background: #f7f7f7; padding: .6rem; overflow-x: auto; border: 1px solid #e3e3e3; }
figure { margin: 1rem 0; }
figure svg { max-width: 100%; height: auto; border: 1px solid #eee; }
nav ul { columns: 2; }
details summary { cursor: pointer; }
"#;

/// Writes the report of `data` to `path`, else beside the database `db` named for `what`
/// ([`default_path`](crate::gather::default_path)); returns where it went.
pub fn write(
    data: &ReportData,
    path: Option<&Path>,
    db: &Path,
    what: &str,
) -> Result<PathBuf, WriteError> {
    let path = path.map_or_else(|| crate::gather::default_path(db, what), Path::to_path_buf);
    match std::fs::write(&path, render(data)) {
        Ok(()) => Ok(path),
        Err(io) => Err(WriteError { path, io }),
    }
}

/// A report that could not be written: where, and the file system's reason.
#[derive(Debug)]
pub struct WriteError {
    /// Where the report was to go.
    pub path: PathBuf,
    /// Why it could not.
    pub io: std::io::Error,
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "writing the report {}", self.path.display())
    }
}

impl std::error::Error for WriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.io)
    }
}

/// The report as one HTML document.
pub fn render(data: &ReportData) -> String {
    let mut out = String::new();
    let title = data.title();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}{}</style>\n</head>\n<body>\n",
        escape(&title),
        crate::plots::CSS
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
    out.push_str("</header>\n<nav><ul>");
    let tables = paper::tables(data);
    if !tables.is_empty() {
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
    if !tables.is_empty() {
        out.push_str("<section id=\"tables\"><h2>Tables</h2>\n");
        out.push_str("<p class=\"note\">Each value is the plan's aggregate over the cell's repeats (hover for the spread and the number of runs); the study's published value, where it has one, is printed below it.</p>\n");
        for t in &tables {
            out.push_str(&table_html(t));
        }
        out.push_str("</section>\n");
    }
    out.push_str("<section id=\"plots\"><h2>Plots</h2>\n");
    let figures = crate::figures::figures(data);
    if figures.is_empty() {
        out.push_str("<p class=\"note\">No run with samples to plot.</p>\n");
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
    let _ = writeln!(out, "<script>{}</script>", crate::plots::SCRIPT);
    out.push_str("</body>\n</html>\n");
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
    out.push_str("<table class=\"paper\"><thead>\n");
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
    out.push_str("</tbody></table>\n");
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
                Some(f) if name.ends_with("_percent") => format!("{f:.2} %"),
                Some(f) if f.fract() != 0.0 => format!("{f:.2}"),
                _ => n.to_string(),
            },
            "",
        ),
        Value::Null => ("-".into(), ""),
        Value::String(s) => (s.clone(), ""),
        other => (other.to_string(), ""),
    }
}

fn runs_html(data: &ReportData) -> String {
    let mut out = String::from("<section id=\"runs\"><h2>Runs, commands and validity flags</h2>\n");
    // Every flag any run has, as a column.
    let mut flag_names: Vec<String> = Vec::new();
    for r in data.runs() {
        if let Some(m) = r.record.flags.as_object() {
            for (k, v) in m {
                if !v.is_object() && !v.is_array() && !flag_names.contains(k) {
                    flag_names.push(k.clone());
                }
            }
        }
    }
    out.push_str("<table class=\"flags\"><thead><tr><th class=\"label\">cell</th><th>run</th><th>status</th><th>profile</th><th>mean</th><th>p99</th><th>max</th>");
    for f in &flag_names {
        let _ = write!(out, "<th>{}</th>", escape(&f.replace('_', " ")));
    }
    out.push_str("</tr></thead><tbody>\n");
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
        let _ =
            write!(
            out,
            "<tr><td class=\"label\">{}</td><td>{}</td><td class=\"{class}\">{}</td><td>{}</td>",
            escape(&c.key),
            c.run.as_ref().map(|r| r.record.id.to_string()).unwrap_or_default(),
            escape(&status),
            escape(&c.profile)
        );
        let h = c.run.as_ref().and_then(RunData::headline);
        let s = h.and_then(|m| m.summary);
        for v in [s.map(|s| s.mean), s.map(|s| s.p99), s.map(|s| s.max)] {
            let text = match (v, h) {
                (Some(v), Some(m)) => crate::terminal::fmt_value(v, &m.unit),
                _ => "-".into(),
            };
            let _ = write!(out, "<td>{}</td>", escape(&text));
        }
        for f in &flag_names {
            let v = c
                .run
                .as_ref()
                .map(|r| r.record.flags[f.as_str()].clone())
                .unwrap_or(Value::Null);
            let (text, _) = flag_text(f, &v);
            let bad = matches!(
                (f.as_str(), &v),
                ("realtime" | "memory_locked", Value::Bool(false))
                    | ("interrupted" | "load_exited_early", Value::Bool(true))
            );
            let _ = write!(
                out,
                "<td{}>{}</td>",
                if bad { " class=\"fail\"" } else { "" },
                escape(&text)
            );
        }
        out.push_str("</tr>\n");
        if let Some(e) = c
            .error
            .as_ref()
            .or(c.run.as_ref().and_then(|r| r.record.error.as_ref()))
        {
            let _ = writeln!(
                out,
                "<tr><td></td><td colspan=\"{}\" class=\"label note\">{}</td></tr>",
                6 + flag_names.len(),
                escape(e)
            );
        }
    }
    out.push_str("</tbody></table>\n");
    out.push_str("<details><summary>The exact command of every run</summary><table><thead><tr><th>run</th><th class=\"label\">command line</th><th class=\"label\">build</th><th class=\"label\">load</th></tr></thead><tbody>\n");
    for r in data.runs() {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"label\"><code>{}</code></td><td class=\"label\">{} {}</td><td class=\"label\">{}</td></tr>",
            r.record.id,
            escape(&r.record.command_line),
            escape(&r.record.tool.build_profile),
            escape(&r.record.tool.git_commit),
            escape(r.record.load["spec"].as_str().unwrap_or("none"))
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
        .filter_map(|r| r.record.flags["host_steal_percent"].as_f64())
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
                    "<tr><td class=\"label\">{}</td><td class=\"{class}\">{word}</td><td class=\"label\">{}</td><td class=\"label\">{}{}</td></tr>",
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
        assert_eq!(text("histogram_overflows", json!(12345)), "12345");
        assert_eq!(text("realtime", json!(true)), "yes");
        assert_eq!(text("host_steal_ns", Value::Null), "-");
        assert_eq!(text("host_steal_ns", json!(0)), "none");
    }
}
