//! Checking a plan's `[report]` tables against its axes and its `[published]` figures.

use super::spanned::{entries, string_of, unknown_fix, Ctx, Entry, Kind, Node};
use super::{Plan, PlanError};

/// The keys a `[[report.table]]` may have.
const TABLE_KEYS: [&str; 11] = [
    "valid_if_zero",
    "title",
    "value",
    "scale",
    "unit",
    "digits",
    "rows",
    "columns",
    "filter",
    "published",
    "aggregate",
];

/// Checks `[report]`: its tables' axes exist and their published figures fit them.
pub(super) fn check_report(
    ctx: &Ctx<'_>,
    plan: &Plan,
    report: &Node,
    published: Option<&Entry>,
) -> Result<(), PlanError> {
    let fields = entries(ctx, report, "[report]", "[[report.table]] tables")?;
    let names: Vec<&str> = plan
        .axes
        .iter()
        .map(|a| a.name.as_str())
        .chain(["repeat"])
        .collect();
    for f in fields {
        if f.key != "table" {
            return Err(ctx.err(
                f.key_span.start,
                format!("unknown key `{}` in [report]", f.key),
                "[report] has `table` entries: [[report.table]]",
            ));
        }
        let Kind::Array(tables) = &f.node.kind else {
            return Err(ctx.err(
                f.node.span.start,
                "`report.table` must be a list of tables",
                "write each as a [[report.table]]",
            ));
        };
        for t in tables {
            check_table(ctx, plan, &names, t, published)?;
        }
    }
    Ok(())
}

/// Checks one `[[report.table]]`.
fn check_table(
    ctx: &Ctx<'_>,
    plan: &Plan,
    names: &[&str],
    t: &Node,
    published: Option<&Entry>,
) -> Result<(), PlanError> {
    let tf = entries(
        ctx,
        t,
        "a [[report.table]]",
        "[[report.table]] with title, value, rows, columns",
    )?;
    let get = |k: &str| tf.iter().find(|e| e.key == k);
    check_table_keys(ctx, t, tf)?;
    let dims = table_dims(ctx, names, tf)?;
    if let Some(e) = get("filter") {
        check_filter(ctx, plan, names, e)?;
    }
    if let Some(e) = get("published") {
        check_published(ctx, plan, &dims, e, published)?;
    }
    Ok(())
}

/// A table's own keys: known, and `aggregate`, `valid_if_zero`, `scale`, `digits` and
/// the required `value` of the right kind.
fn check_table_keys(ctx: &Ctx<'_>, t: &Node, tf: &[Entry]) -> Result<(), PlanError> {
    let get = |k: &str| tf.iter().find(|e| e.key == k);
    for e in tf {
        if !TABLE_KEYS.contains(&e.key.as_str()) {
            return Err(ctx.err(
                e.key_span.start,
                format!("unknown key `{}` in a [[report.table]]", e.key),
                unknown_fix(&e.key, &TABLE_KEYS, "a table's keys"),
            ));
        }
    }
    if let Some(e) = get("aggregate") {
        let a = string_of(ctx, e)?;
        if !["mean", "sum", "max", "min"].contains(&a.as_str()) {
            return Err(ctx.err(
                e.node.span.start,
                format!("`aggregate = \"{a}\"`: repeats combine by mean, sum, max or min"),
                "use aggregate = \"mean\" (the default), \"sum\", \"max\" or \"min\"",
            ));
        }
    }
    if let Some(e) = get("valid_if_zero") {
        string_of(ctx, e)?;
    }
    for (k, integer) in [("scale", false), ("digits", true)] {
        if let Some(e) = get(k) {
            let ok = match e.node.kind {
                Kind::Integer(i) => i >= 0,
                Kind::Float(f) => !integer && f.is_finite(),
                _ => false,
            };
            if !ok {
                return Err(ctx.err(
                    e.node.span.start,
                    format!(
                        "`{k}` must be {}, not {}",
                        if integer {
                            "a whole number"
                        } else {
                            "a number"
                        },
                        e.node.type_name()
                    ),
                    if integer {
                        "write e.g. digits = 1"
                    } else {
                        "write e.g. scale = 1e-6 (ns to ms)"
                    },
                ));
            }
        }
    }
    match get("value") {
        Some(v) => {
            string_of(ctx, v)?;
        }
        None => {
            return Err(ctx.err(
                t.span.start,
                "a [[report.table]] has no `value`",
                "add e.g. value = \"event_latency.mean\" (a metric and a statistic) or \"result.underruns.steady\"",
            ))
        }
    }
    Ok(())
}

/// The table's `rows` and `columns`: lists of the plan's axes (or `repeat`).
fn table_dims(ctx: &Ctx<'_>, names: &[&str], tf: &[Entry]) -> Result<Vec<Vec<String>>, PlanError> {
    let get = |k: &str| tf.iter().find(|e| e.key == k);
    let mut dims = Vec::new();
    for k in ["rows", "columns"] {
        let mut list = Vec::new();
        if let Some(e) = get(k) {
            let Kind::Array(items) = &e.node.kind else {
                return Err(ctx.err(
                    e.node.span.start,
                    format!("`{k}` must be a list of axis names"),
                    format!("write `{k} = [\"buffer\"]`"),
                ));
            };
            for i in items {
                let n = i.as_arg().unwrap_or_default();
                if !names.contains(&n.as_str()) {
                    return Err(ctx.err(
                        i.span.start,
                        format!("`{n}` is not an axis of this plan"),
                        unknown_fix(&n, names, "the axes"),
                    ));
                }
                list.push(n);
            }
        }
        dims.push(list);
    }
    Ok(dims)
}

/// `filter = { axis = "label" }`: each an axis of the plan and one of its labels.
fn check_filter(ctx: &Ctx<'_>, plan: &Plan, names: &[&str], e: &Entry) -> Result<(), PlanError> {
    for ff in entries(ctx, &e.node, "`filter`", "filter = { axis = \"label\" }")? {
        let Some(axis) = plan.axes.iter().find(|a| a.name == ff.key) else {
            return Err(ctx.err(
                ff.key_span.start,
                format!("`{}` is not an axis of this plan", ff.key),
                unknown_fix(&ff.key, names, "the axes"),
            ));
        };
        let l = ff.node.as_arg().unwrap_or_default();
        if !axis.values.iter().any(|v| v.label == l) {
            let all: Vec<&str> = axis.values.iter().map(|v| v.label.as_str()).collect();
            return Err(ctx.err(
                ff.node.span.start,
                format!("axis `{}` has no value `{l}`", ff.key),
                unknown_fix(&l, &all, &format!("the labels of `{}`", ff.key)),
            ));
        }
    }
    Ok(())
}

/// `published = "NAME"`: a `[published.NAME]` figure whose rows are labels of the
/// table's row axis, each with one value per column.
fn check_published(
    ctx: &Ctx<'_>,
    plan: &Plan,
    dims: &[Vec<String>],
    e: &Entry,
    published: Option<&Entry>,
) -> Result<(), PlanError> {
    let key = string_of(ctx, e)?;
    let figure = published.and_then(|p| match &p.node.kind {
        Kind::Table(t) => t.iter().find(|x| x.key == key),
        _ => None,
    });
    let Some(figure) = figure else {
        return Err(ctx.err(
            e.node.span.start,
            format!("there is no [published.{key}]"),
            format!(
                "add a [published.{key}] table with the study's figures, or remove `published`"
            ),
        ));
    };
    let columns: usize = dims[1]
        .iter()
        .map(|a| {
            plan.axes
                .iter()
                .find(|x| &x.name == a)
                .map_or(1, |x| x.values.len())
        })
        .product();
    let ff = entries(
        ctx,
        &figure.node,
        "a published figure",
        "[published.NAME] with caption and rows",
    )?;
    let row_labels: Option<Vec<&str>> = match dims[0].as_slice() {
        [one] => plan
            .axes
            .iter()
            .find(|a| &a.name == one)
            .map(|a| a.values.iter().map(|v| v.label.as_str()).collect()),
        _ => None,
    };
    if let Some(rows) = ff.iter().find(|x| x.key == "rows") {
        for r in entries(ctx, &rows.node, "`rows`", "rows = { \"label\" = [values] }")? {
            if let Some(labels) = &row_labels {
                if !labels.contains(&r.key.as_str()) {
                    return Err(ctx.err(
                        r.key_span.start,
                        format!(
                            "published row `{}` is not a label of the table's row axis",
                            r.key
                        ),
                        unknown_fix(&r.key, labels, "its labels"),
                    ));
                }
            }
            let n = match &r.node.kind {
                Kind::Array(v) => v.len(),
                _ => usize::MAX,
            };
            if n != columns {
                return Err(ctx.err(
                    r.node.span.start,
                    format!(
                        "published row `{}` has {} values, but the table has {columns} columns",
                        r.key,
                        if n == usize::MAX {
                            "no list of".to_string()
                        } else {
                            n.to_string()
                        }
                    ),
                    "give one value per column (a string such as \"-\" where the study has none)",
                ));
            }
        }
    }
    Ok(())
}
