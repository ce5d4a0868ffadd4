//! `--dry-run`: the cells in run order, as a table.

use runner::plan::{Plan, Planned};

pub(super) fn dry_run_text(plan: &Plan, planned: &[Planned]) -> String {
    let mut out = format!(
        "plan `{}` ({}): {} cells of `audiolat {}`, in run order\n\n",
        plan.name,
        plan.source,
        planned.len(),
        plan.probe
    );
    let mut t = report::terminal::Table::new(&["#", "cell", "profile", "server", "command"])
        .left_align(&[1, 2, 3, 4]);
    for (i, p) in planned.iter().enumerate() {
        t.row(vec![
            (i + 1).to_string(),
            p.cell.key.clone(),
            p.cell.profile.clone(),
            p.server
                .map(|(r, per)| format!("dummy {r} Hz / {per}"))
                .unwrap_or_else(|| "-".into()),
            format!(
                "audiolat {}",
                p.cell
                    .command
                    .argv()
                    .iter()
                    .map(|a| load::shell_quote(a))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        ]);
    }
    out.push_str(&t.render());
    out.push_str("\nnothing was run (--dry-run)\n");
    out
}
