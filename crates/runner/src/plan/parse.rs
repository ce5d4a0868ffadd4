//! Parsing a plan file: the top-level keys, `[set]`, `[sweep]` and `[[exclude]]`, and
//! the size limits, all checked before any cell is made.

use serde_json::Value;

use super::axes::Flag;
use super::axes::{parse_axis, parse_exclude, setting};
use super::report_check::check_report;

use super::spanned::{convert_table, entries, string_of, unknown_fix, Ctx, Entry, Kind, Node};
use super::{Axis, CellChecker, Exclude, Plan, PlanError, Setting, MAX_CELLS, PROBES};

/// Top-level keys of a plan file.
const TOP_KEYS: [&str; 11] = [
    "name",
    "title",
    "description",
    "probe",
    "repeats",
    "set",
    "sweep",
    "exclude",
    "report",
    "published",
    "fail_if",
];

impl Plan {
    /// Parses and checks a plan's text, its keys against the probe's flags as `checker`
    /// lists them. `file` names it in errors.
    pub fn parse(text: &str, file: &str, checker: &dyn CellChecker) -> Result<Plan, PlanError> {
        let ctx = Ctx { file, text };
        let root = document(&ctx)?;
        let Kind::Table(top) = &root.kind else {
            unreachable!("the root is a table")
        };
        check_top_keys(&ctx, top)?;
        let get = |k: &str| top.iter().find(|e| e.key == k);
        let (name, probe) = name_and_probe(&ctx, get("name"), get("probe"))?;
        let title = match get("title") {
            Some(e) => string_of(&ctx, e)?,
            None => name.clone(),
        };
        let description = match get("description") {
            Some(e) => string_of(&ctx, e)?,
            None => String::new(),
        };
        let repeats = repeats_of(&ctx, get("repeats"))?;
        let flags = checker.flags(&probe);
        let mut set = parse_set(&ctx, &flags, &probe, get("set"))?;
        set.extend(parse_gates(&ctx, &probe, get("fail_if"))?);
        let mut axes: Vec<Axis> = Vec::new();
        if let Some(e) = get("sweep") {
            for a in entries(
                &ctx,
                &e.node,
                "[sweep]",
                "[sweep] with axis = [values] lines",
            )? {
                axes.push(parse_axis(&ctx, &flags, &probe, a, &set)?);
            }
        }
        check_size(&ctx, &axes, repeats, get("sweep"))?;
        check_axes_apart(&ctx, &axes)?;
        let excludes = parse_excludes(&ctx, &axes, get("exclude"))?;
        let report = get("report").map_or(Value::Null, |e| e.node.to_json());
        let published = get("published").map_or(Value::Null, |e| e.node.to_json());
        let plan = Plan {
            name,
            title,
            description,
            probe,
            repeats,
            set,
            axes,
            source: file.to_string(),
            text: text.to_string(),
            report,
            published,
            excludes,
        };
        if let Some(e) = get("report") {
            check_report(&ctx, &plan, &e.node, get("published"))?;
        }
        Ok(plan)
    }
}

/// The plan's text as TOML values with their places; refused when it is not TOML.
fn document(ctx: &Ctx<'_>) -> Result<Node, PlanError> {
    let text = ctx.text;
    let doc = toml_edit::ImDocument::parse(text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        let msg = e.message().trim().to_string();
        ctx.err(
            at,
            format!("not valid TOML: {msg}"),
            "see https://toml.io; a plan is key = value lines and [tables]",
        )
    })?;
    Ok(convert_table(doc.as_table(), 0..0))
}

/// Refuses a top-level key a plan does not have.
fn check_top_keys(ctx: &Ctx<'_>, top: &[Entry]) -> Result<(), PlanError> {
    for e in top {
        if !TOP_KEYS.contains(&e.key.as_str()) {
            return Err(ctx.err(
                e.key_span.start,
                format!("unknown key `{}`", e.key),
                unknown_fix(&e.key, &TOP_KEYS, "a plan's keys"),
            ));
        }
    }
    Ok(())
}

/// The plan's `name` and `probe`, both required, the probe one a plan can run.
fn name_and_probe(
    ctx: &Ctx<'_>,
    name: Option<&Entry>,
    probe: Option<&Entry>,
) -> Result<(String, String), PlanError> {
    let name =
        match name {
            Some(e) => string_of(ctx, e)?,
            None => return Err(ctx.err(
                0,
                "the plan has no `name`",
                "add `name = \"...\"` at the top (it names the plan run and finds it for --resume)",
            )),
        };
    let probe = match probe {
        Some(e) => {
            let p = string_of(ctx, e)?;
            if !PROBES.contains(&p.as_str()) {
                return Err(ctx.err(
                    e.node.span.start,
                    format!("`{p}` is not a probe a plan can run"),
                    unknown_fix(&p, &PROBES, "the probes"),
                ));
            }
            p
        }
        None => {
            return Err(ctx.err(
                0,
                "the plan has no `probe`",
                format!("add `probe = \"event\"` (one of {})", PROBES.join(", ")),
            ))
        }
    };
    Ok((name, probe))
}

/// `repeats`: a whole number from 1 to [`crate::sweep::MAX_REPEATS`], 1 when absent.
fn repeats_of(ctx: &Ctx<'_>, repeats: Option<&Entry>) -> Result<u32, PlanError> {
    Ok(match repeats {
        None => 1,
        Some(e) => match e.node.kind {
            Kind::Integer(n) if (1..=i64::from(crate::sweep::MAX_REPEATS)).contains(&n) => n as u32,
            _ => {
                return Err(ctx.err(
                    e.node.span.start,
                    format!(
                        "`repeats` must be a whole number from 1 to {}, not {}",
                        crate::sweep::MAX_REPEATS,
                        e.node.type_name()
                    ),
                    "write e.g. `repeats = 5`",
                ))
            }
        },
    })
}

/// `[set]`: the flags every cell gets (a build profile is an axis, not a setting).
fn parse_set(
    ctx: &Ctx<'_>,
    flags: &[Flag],
    probe: &str,
    set_table: Option<&Entry>,
) -> Result<Vec<Setting>, PlanError> {
    let mut set = Vec::new();
    if let Some(e) = set_table {
        for s in entries(ctx, &e.node, "[set]", "[set] with key = value lines")? {
            if s.key == "profile" {
                return Err(ctx.err(
                    s.key_span.start,
                    "`profile` chooses a binary, so it is an axis",
                    "move it to [sweep] as `profile = [\"opt2\"]`",
                ));
            }
            set.extend(setting(ctx, flags, probe, &s.key, &s.key_span, &s.node)?);
        }
    }
    Ok(set)
}

/// `fail_if = ["p99 > 5ms", ...]` (or one string): each a gate on the probe's runs,
/// checked here, given to every cell as `--fail-if`.
fn parse_gates(ctx: &Ctx<'_>, probe: &str, e: Option<&Entry>) -> Result<Vec<Setting>, PlanError> {
    let Some(e) = e else {
        return Ok(Vec::new());
    };
    let items = match &e.node.kind {
        Kind::Array(items) => items.iter().collect(),
        _ => vec![&e.node],
    };
    let fix = "write fail_if = [\"p99 > 5ms\", \"xruns > 0\"] (METRIC OP VALUE[UNIT])";
    items
        .into_iter()
        .map(|n| {
            let Kind::String(text) = &n.kind else {
                return Err(ctx.err(
                    n.span.start,
                    format!("a gate must be a string, but it is {}", n.type_name()),
                    fix,
                ));
            };
            let gate = results::gate::Gate::parse(text)
                .and_then(|g| g.check_probe(results::ProbeKind::stored(probe)));
            match gate {
                Ok(g) => Ok(Setting {
                    flag: "fail-if".into(),
                    value: Some(g.expr),
                    at: n.span.start,
                }),
                Err(e) => Err(ctx.err(n.span.start, format!("fail_if {e}"), fix)),
            }
        })
        .collect()
}

/// Refuses a plan with more cells than [`MAX_CELLS`] (before exclusions), saying its
/// shape; checked on the axes' lengths, before any cell is made.
fn check_size(
    ctx: &Ctx<'_>,
    axes: &[Axis],
    repeats: u32,
    sweep: Option<&Entry>,
) -> Result<(), PlanError> {
    let cells = axes.iter().try_fold(u64::from(repeats), |n, a| {
        n.checked_mul(a.values.len() as u64)
    });
    if cells.is_none_or(|n| n > MAX_CELLS) {
        let count = cells.map_or_else(|| "too many".to_string(), |n| n.to_string());
        let shape = axes
            .iter()
            .map(|a| format!("{} {}", a.values.len(), a.name))
            .chain(std::iter::once(format!("{repeats} repeats")))
            .collect::<Vec<_>>()
            .join(" x ");
        return Err(ctx.err(
            sweep.map_or(0, |e| e.key_span.start),
            format!(
                "the plan has {count} cells ({shape}), more than the {MAX_CELLS} a plan may have"
            ),
            "sweep fewer values or repeats, or split the sweep into several plans",
        ));
    }
    Ok(())
}

/// Refuses two axes that set the same flag (it would be given twice) or that both
/// choose a build profile.
fn check_axes_apart(ctx: &Ctx<'_>, axes: &[Axis]) -> Result<(), PlanError> {
    // A flag set by two axes would be given twice.
    for (i, a) in axes.iter().enumerate() {
        for b in &axes[i + 1..] {
            let fa: Vec<&str> = a
                .values
                .iter()
                .flat_map(|v| v.settings.iter().map(|s| s.flag.as_str()))
                .collect();
            if let Some(f) = b
                .values
                .iter()
                .flat_map(|v| v.settings.iter())
                .find(|s| fa.contains(&s.flag.as_str()))
            {
                return Err(ctx.err(
                    f.at,
                    format!(
                        "`{}` is set by both axes `{}` and `{}`",
                        f.flag, a.name, b.name
                    ),
                    "set each flag in one axis",
                ));
            }
            if a.values.iter().any(|v| v.profile.is_some())
                && b.values.iter().any(|v| v.profile.is_some())
            {
                return Err(ctx.err(
                    b.values[0].at,
                    format!(
                        "both axes `{}` and `{}` choose a build profile",
                        a.name, b.name
                    ),
                    "choose the profile in one axis",
                ));
            }
        }
    }
    Ok(())
}

/// `[[exclude]]`: the combinations not to run.
fn parse_excludes(
    ctx: &Ctx<'_>,
    axes: &[Axis],
    exclude: Option<&Entry>,
) -> Result<Vec<Exclude>, PlanError> {
    let mut excludes = Vec::new();
    if let Some(e) = exclude {
        let items: Vec<&Node> = match &e.node.kind {
            Kind::Array(items) => items.iter().collect(),
            _ => {
                return Err(ctx.err(
                    e.node.span.start,
                    "`exclude` must be a list of tables",
                    "write each exclusion as an [[exclude]] table of axis = label",
                ))
            }
        };
        for item in items {
            excludes.push(parse_exclude(ctx, axes, item)?);
        }
    }
    Ok(excludes)
}
