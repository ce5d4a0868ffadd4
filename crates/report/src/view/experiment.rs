//! The Tessellation study's network experiments: our runs beside the study's figures.

use std::fmt::Write as _;

use results::records::net::{NetConfigRecord, NetResultRecord};
use results::{GroupId, RunView};
use serde_json::{json, Value};

use crate::terminal::fmt_ns;

/// The study's Figure 7(a): the music application's cells alone.
pub const PAPER_FIG7A: &str = "0 misses, mean 997.54 us, stdev 35.11 us, max 1336 us (Fig. 7a)";
/// Figure 7(b): with the interfering cells.
pub const PAPER_FIG7B: &str = "0 misses, mean 1024.61 us, stdev 36.88 us, max 1405 us (Fig. 7b)";
/// Figure 8(a): the abusive stream, no bandwidth guarantee.
pub const PAPER_FIG8A: &str =
    "243903 misses (99.91%), mean 461133.61 us, stdev 113320.00 us, max 562898 us (Fig. 8a)";
/// Figure 8(b): 240 Mbit/s guaranteed.
pub const PAPER_FIG8B: &str = "0 misses, mean 983.20 us, stdev 48.37 us, max 1389 us (Fig. 8b)";
/// Section 4.2: 150 Mbit/s guaranteed.
pub const PAPER_FIG8_150: &str = "8 misses (section 4.2; no figure)";

/// The study's numbers for a case: Figure 8 by its link's reservation (`link`: the
/// bandwidth experiment's case, `None` inside without one), else Figure 7 by whether
/// the case has cells and a load (a case without cells has no figure).
pub fn paper(link: Option<Option<f64>>, cells: bool, load: bool) -> &'static str {
    match (link, cells) {
        (Some(None), _) => PAPER_FIG8A,
        (Some(Some(r)), _) if r >= 240.0 => PAPER_FIG8B,
        (Some(Some(_)), _) => PAPER_FIG8_150,
        (None, false) => "-",
        (None, true) if !load => PAPER_FIG7A,
        (None, true) => PAPER_FIG7B,
    }
}

/// An experiment's rows as JSON (`which`: isolation or bandwidth).
pub fn json(which: &str, metric: &str, group: GroupId, rows: &[ExperimentRow]) -> Value {
    json!({
        "group": group,
        "experiment": which,
        "metric": metric,
        "rows": rows.iter().map(ExperimentRow::to_json).collect::<Vec<_>>(),
    })
}

/// One row of an experiment's table.
pub struct ExperimentRow {
    /// What the run changed.
    pub label: String,
    /// Run id, if it was stored.
    pub run_id: Option<results::RunId>,
    /// complete, interrupted, failed.
    pub status: String,
    /// The metric's summary (`None` inside when it has no samples) and misses, if the
    /// run has the metric.
    pub summary: Option<(Option<results::Summary>, u64)>,
    /// The study's numbers for this case.
    pub paper: &'static str,
    /// Why it failed, or what to know about it.
    pub note: String,
    /// Blocks sent (the misses' denominator: lost blocks have no time).
    pub sent: u64,
}

impl ExperimentRow {
    /// The row of a run that could not be made, and why.
    pub fn failed(label: &str, paper: &'static str, why: String) -> ExperimentRow {
        ExperimentRow {
            label: label.into(),
            run_id: None,
            status: "failed".into(),
            summary: None,
            paper,
            note: why,
            sent: 0,
        }
    }

    /// The row of a finished net run `run` (its view): `metric`'s summary and misses (a
    /// block never answered missed all the same), and why a run proves nothing when it
    /// does not.
    pub fn of_run(label: &str, metric: &str, paper: &'static str, run: &RunView) -> ExperimentRow {
        let m = run.measurement(metric);
        let result = run.result_as::<NetResultRecord>();
        let synth = result.as_ref().and_then(|r| r.synth.as_ref());
        let link = run.config_as::<NetConfigRecord>().and_then(|c| c.link);
        let blocks = synth
            .map(results::counts::NetBlocks::of)
            .unwrap_or_default();
        let sent = blocks.controller.blocks_sent.unwrap_or(0);
        // An abusive stream that could not fill the link proves nothing about it.
        let received = synth.and_then(|p| p.stream).map(|s| s.received_mbit_per_s);
        let mut notes = Vec::new();
        if let (Some(received), Some(link)) = (received, link.map(|l| l.mbps)) {
            if received + 148.5 < 0.9 * link {
                notes.push(format!(
                    "the stream reached only {received:.0} Mbit/s beside the audio's 148.5: this machine cannot fill the {link} Mbit/s link; use a lower --link"
                ));
            }
        }
        let summary = m.map(|m| {
            // The host's misses are of the blocks it answered; a block without an
            // answer by the run's end missed all the same (end_to_end counts it already).
            let unanswered = match metric {
                "response_time" if synth.is_some() => {
                    blocks.controller.unanswered_in_run().unwrap_or(0)
                }
                _ => 0,
            };
            let misses = m.misses.unwrap_or(0) + unanswered;
            (m.summary, if sent > 0 { misses.min(sent) } else { misses })
        });
        let reserved = link.is_some_and(|l| l.reserve_mbps.is_some());
        if reserved && summary.is_some_and(|(_, misses)| misses > 0) {
            let causes = miss_causes(run);
            notes.push(if causes.is_empty() {
                "why it missed: nothing measured stands out (the threads, the service, the kernel's softirq threads and the hypervisor all had their CPU)".into()
            } else {
                format!("why it missed: {}", causes.join("; "))
            });
        }
        ExperimentRow {
            label: label.into(),
            run_id: Some(run.id),
            status: run.status.to_string(),
            summary,
            paper,
            note: notes.join("; "),
            sent,
        }
    }

    /// The row as JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "label": self.label,
            "run_id": self.run_id,
            "status": self.status,
            "blocks": self.sent,
            "misses": self.summary.as_ref().map(|s| s.1),
            "mean_ns": self.summary.and_then(|s| s.0).map(|s| s.mean),
            "stdev_ns": self.summary.and_then(|s| s.0).map(|s| s.stdev),
            "p999_ns": self.summary.and_then(|s| s.0).map(|s| s.p999),
            "max_ns": self.summary.and_then(|s| s.0).map(|s| s.max),
            "paper": self.paper,
            "note": self.note,
        })
    }
}

/// The kernel's softirq threads' wait for a CPU is worth naming when it is this share of
/// the run or more: they run only when the kernel defers network work to them, and then
/// the packets wait with them.
const SOFTIRQ_WAIT_WORTH_NAMING: f64 = 0.05;

/// What the synth phase of a network run measured that makes blocks miss though the
/// link reserved bandwidth for them: first the late blocks one by one, each under the
/// largest part of its time (the controller's sending, the way to the host, the host,
/// the way back: [`super::net::late_causes_text`]) and the blocks never answered; then
/// what stands behind those parts: the audio's longest wait in the network service's
/// queue and a service that ran at an ordinary policy, the kernel's softirq threads
/// (which run tc's queue and the veth) waiting for a CPU a good share of the run,
/// packets dropped before or on the link, and host steal. A run stored before the late
/// blocks were split names the controller's late sends and the host's own misses
/// instead.
pub fn miss_causes(run: &RunView) -> Vec<String> {
    let result = run.result_as::<NetResultRecord>();
    let p = result.as_ref().and_then(|r| r.synth.as_ref());
    let (ctl, svc) = (p.map(|p| &p.controller), p.and_then(|p| p.service.as_ref()));
    let blocks = p.map(results::counts::NetBlocks::of).unwrap_or_default();
    let mut causes = Vec::new();
    let split = ctl.is_some_and(|c| c.miss_causes.is_some());
    if let Some(late) = p.and_then(super::net::late_causes_text) {
        causes.push(late);
    }
    if let Some(late) = blocks
        .controller
        .blocks_sent_late
        .filter(|&n| !split && n > 0)
    {
        causes.push(format!(
            "the controller itself sent {late} blocks late (its own pacing)"
        ));
    }
    if let Some(lost) = blocks.controller.unanswered_in_run().filter(|&n| n > 0) {
        causes.push(format!(
            "{lost} block{} not answered by the run's end",
            if lost == 1 { "" } else { "s" }
        ));
    }
    let audio_wait = svc
        .and_then(|s| s.flows.first())
        .map_or(0.0, |f| f.max_wait_ns as f64);
    if audio_wait >= 1e6 {
        causes.push(format!(
            "the audio's datagrams waited up to {} in the network service's queue",
            fmt_ns(audio_wait)
        ));
    }
    if let Some(policy) = svc.and_then(|s| s.thread.as_deref()).filter(|p| {
        !p.starts_with("SCHED_FIFO")
            && !p.starts_with("SCHED_RR")
            && !p.starts_with("SCHED_DEADLINE")
    }) {
        causes.push(format!(
            "the network service's thread ran at {policy}: on a busy machine it waits behind every other task"
        ));
    }
    let run_ns = run
        .config_as::<NetConfigRecord>()
        .map_or(0.0, |c| c.run_ns());
    if let Some(w) = p
        .and_then(|p| p.kernel_softirq)
        .map(|s| s.run_queue_wait_ns as f64)
        .filter(|&w| run_ns > 0.0 && w >= SOFTIRQ_WAIT_WORTH_NAMING * run_ns)
    {
        causes.push(format!(
            "the kernel's softirq threads (tc's queue, the veth) waited {} for a CPU ({:.0}% of the run)",
            fmt_ns(w),
            100.0 * w / run_ns
        ));
    }
    let refused = ctl.map_or(0, |c| c.packets_refused);
    if refused > 0 {
        causes.push(format!(
            "{refused} audio packets refused before the link (a full queue)"
        ));
    }
    let reserved_drops = p
        .and_then(|p| p.tc_classes.as_ref())
        .and_then(|classes| classes.get("1:10"))
        .and_then(|class| class.drops)
        .unwrap_or(0);
    if reserved_drops > 0 {
        causes.push(format!(
            "tc dropped {reserved_drops} packets of the reserved class"
        ));
    }
    if let Some(past) = blocks
        .host
        .responses_past_deadline
        .filter(|&n| !split && n > 0)
    {
        causes.push(format!(
            "the host answered {past} blocks past the deadline itself (t2 - t1)"
        ));
    }
    if let Some(steal) = run.flags_record().host_steal_ns.filter(|&s| s > 0) {
        causes.push(format!("host steal {}", fmt_ns(steal as f64)));
    }
    causes
}

/// An experiment's table: our runs beside the study's figures, for `metric` against a
/// deadline of `deadline_ns`.
pub fn text(
    which: &str,
    metric: &str,
    group: GroupId,
    deadline_ns: f64,
    rows: &[ExperimentRow],
) -> String {
    let mut out = String::new();
    let what = if metric == "end_to_end" {
        "end to end tf - t0 at the controller (it includes the shaped link's queue; the study stamped t1 in the host's driver, before its network service's queue)"
    } else {
        "response time t2 - t1 at the host"
    };
    let _ = writeln!(
        out,
        "
net experiment {which} (group {group}): {what}; deadline {}
",
        fmt_ns(deadline_ns)
    );
    let width = rows
        .iter()
        .map(|r| r.label.len())
        .max()
        .unwrap_or(10)
        .max(10);
    let _ = writeln!(
        out,
        "{:<width$}  {:>5}  {:>8}  {:>15}  {:>10}  {:>10}  {:>10}  {:>10}  the study",
        "run", "id", "sent", "missed", "mean", "stdev", "p99.9", "max"
    );
    for r in rows {
        row_lines(r, width, &mut out);
    }
    out
}

/// One row (and its note) of the table, `width` wide in its label.
fn row_lines(r: &ExperimentRow, width: usize, out: &mut String) {
    let id = r.run_id.map_or("-".into(), |i| i.to_string());
    let Some((s, misses)) = &r.summary else {
        let _ = writeln!(
            out,
            "{:<width$}  {:>5}  {}: {}  | {}",
            r.label, id, r.status, r.note, r.paper
        );
        return;
    };
    // Blocks sent: a block lost on the way has no time but missed all the same.
    let blocks = if r.sent > 0 {
        r.sent
    } else {
        s.map_or(0, |s| s.count)
    };
    // No block answered: no times to summarise.
    let time =
        |f: fn(&results::Summary) -> f64| s.as_ref().map_or_else(|| "-".into(), |s| fmt_ns(f(s)));
    // No block sent: no share of them.
    let missed = if blocks > 0 {
        format!("{misses} ({:.2}%)", 100.0 * *misses as f64 / blocks as f64)
    } else {
        misses.to_string()
    };
    let _ = writeln!(
        out,
        "{:<width$}  {:>5}  {:>8}  {:>15}  {:>10}  {:>10}  {:>10}  {:>10}  {}",
        r.label,
        id,
        blocks,
        missed,
        time(|s| s.mean),
        time(|s| s.stdev),
        time(|s| s.p999),
        time(|s| s.max),
        r.paper
    );
    if !r.note.is_empty() {
        let _ = writeln!(out, "{:<width$}  note: {}", "", r.note);
    }
}

/// An experiment's table as `audiolat net experiment` prints it: [`text`], then where
/// its runs are stored (`db`) and how to read a virtual machine's maxima.
pub fn stored_text(
    which: &str,
    metric: &str,
    group: GroupId,
    deadline_ns: f64,
    rows: &[ExperimentRow],
    db: &std::path::Path,
) -> String {
    let mut out = text(which, metric, group, deadline_ns, rows);
    let _ = writeln!(
        out,
        "
maxima on a virtual machine are the hypervisor's as much as ours: read the counts and the means. Every run is stored in {}; `audiolat show ID` shows one.",
        db.display()
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_net_row_without_answers_shows_no_figure_and_no_share_of_nothing() {
        let row = |summary, sent| ExperimentRow {
            label: "lost".into(),
            run_id: Some(results::RunId(3)),
            status: "complete".into(),
            summary,
            paper: "-",
            note: String::new(),
            sent,
        };
        let text = text(
            "isolation",
            "response_time",
            GroupId(1),
            1_405_896.0,
            &[row(Some((None, 1379)), 1379), row(Some((None, 0)), 0)],
        );
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("lost")).collect();
        let cells = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        // Every block sent was lost: all missed, no times.
        assert_eq!(
            cells(lines[0])[1..],
            ["3", "1379", "1379", "(100.00%)", "-", "-", "-", "-", "-"],
            "{text}"
        );
        // Nothing sent: no share of nothing.
        assert_eq!(
            cells(lines[1])[1..],
            ["3", "0", "0", "-", "-", "-", "-", "-"],
            "{text}"
        );
        let json = row(Some((None, 1379)), 1379).to_json();
        assert!(
            json["mean_ns"].is_null() && json["max_ns"].is_null(),
            "{json}"
        );
    }
}
