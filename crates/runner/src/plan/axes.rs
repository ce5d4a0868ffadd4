//! A plan's settings and axes: each key checked against the flags of the probe's
//! subcommand (as the [`CellChecker`](super::CellChecker) lists them), each axis value a
//! label with the flags it sets,
//! and the `[[exclude]]` combinations.

use std::ops::Range;

use super::spanned::{entries, string_of, unknown_fix, Ctx, Entry, Kind, Node};
use super::{Axis, AxisValue, Exclude, PlanError, Setting, MAX_AXIS_VALUES};

/// Flags a plan may not set: the plan runner sets them for every cell.
const RESERVED: [(&str, &str); 4] = [
    (
        "db",
        "every cell writes to the plan's database (audiolat --db FILE run ...)",
    ),
    (
        "json",
        "the plan runner reads each cell's result from the database",
    ),
    (
        "quiet",
        "the plan runner shows one progress line instead of each cell's",
    ),
    ("help", "it is not a setting"),
];

/// A flag of a probe's command line, as a plan may set it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flag {
    /// The long flag without dashes.
    pub name: String,
    /// It takes a value (`false`: a switch).
    pub takes_value: bool,
    /// Given once per value (`--cell a --cell b`): a list becomes several flags.
    pub repeated: bool,
}

pub(super) fn setting(
    ctx: &Ctx<'_>,
    flags: &[Flag],
    probe: &str,
    key: &str,
    key_span: &Range<usize>,
    node: &Node,
) -> Result<Vec<Setting>, PlanError> {
    if let Some((_, why)) = RESERVED.iter().find(|(r, _)| *r == key) {
        return Err(ctx.err(
            key_span.start,
            format!("`{key}` cannot be set in a plan: {why}"),
            format!("remove `{key}`"),
        ));
    }
    let names: Vec<&str> = flags.iter().map(|f| f.name.as_str()).collect();
    let Some(flag) = flags.iter().find(|f| f.name == key) else {
        return Err(ctx.err(
            key_span.start,
            format!("`{key}` is not a flag of `audiolat {probe}`"),
            unknown_fix(key, &names, &format!("the flags of {probe}")),
        ));
    };
    if !flag.takes_value {
        return match node.kind {
            Kind::Bool(true) => Ok(vec![Setting {
                flag: key.into(),
                value: None,
                at: node.span.start,
            }]),
            Kind::Bool(false) => Ok(Vec::new()),
            _ => Err(ctx.err(
                node.span.start,
                format!("`{key}` is a switch, but its value is {}", node.type_name()),
                format!("write `{key} = true` (or leave it out)"),
            )),
        };
    }
    let values = match &node.kind {
        Kind::Array(items) => {
            let mut parts = Vec::new();
            for i in items {
                match i.as_cli_arg(ctx.text) {
                    Some(v) => parts.push(v),
                    None => {
                        return Err(ctx.err(
                            i.span.start,
                            format!("`{key}`: a list item is {}", i.type_name()),
                            "use strings or numbers",
                        ))
                    }
                }
            }
            if parts.is_empty() {
                return Err(ctx.err(
                    node.span.start,
                    format!("`{key}` is an empty list"),
                    format!("give `{key}` a value, or remove it"),
                ));
            }
            if flag.repeated {
                parts
            } else {
                vec![parts.join(",")]
            }
        }
        _ => vec![node.as_cli_arg(ctx.text).ok_or_else(|| {
            ctx.err(
                node.span.start,
                format!("`{key}` takes a value, but it is {}", node.type_name()),
                format!("write e.g. `{key} = \"...\"` or a number, as on the command line"),
            )
        })?],
    };
    Ok(values
        .into_iter()
        .map(|v| Setting {
            flag: key.into(),
            value: Some(v),
            at: node.span.start,
        })
        .collect())
}

fn profile_of(ctx: &Ctx<'_>, node: &Node) -> Result<String, PlanError> {
    let p = match &node.kind {
        Kind::String(s) => s.clone(),
        _ => {
            return Err(ctx.err(
                node.span.start,
                format!(
                    "a build profile must be a string, but it is {}",
                    node.type_name()
                ),
                "use current, release, opt1, opt2 or opt3",
            ))
        }
    };
    let ok = !p.is_empty()
        && p.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !ok {
        return Err(ctx.err(
            node.span.start,
            format!("`{p}` is not a cargo profile name"),
            "use current (this binary), release, dev, opt1, opt2 or opt3",
        ));
    }
    Ok(p)
}

pub(super) fn parse_axis(
    ctx: &Ctx<'_>,
    flags: &[Flag],
    probe: &str,
    a: &Entry,
    set: &[Setting],
) -> Result<Axis, PlanError> {
    if a.key == "repeat" {
        return Err(ctx.err(
            a.key_span.start,
            "`repeat` is the plan's own axis (each cell's repeat number)",
            "set `repeats = N` at the top of the plan instead",
        ));
    }
    let items = match &a.node.kind {
        Kind::Array(items) => items,
        _ => {
            return Err(ctx.err(
                a.node.span.start,
                format!(
                    "axis `{}` must be a list of values, but it is {}",
                    a.key,
                    a.node.type_name()
                ),
                format!(
                    "write `{} = [..., ...]`, or move a single value to [set]",
                    a.key
                ),
            ))
        }
    };
    if items.is_empty() {
        return Err(ctx.err(
            a.node.span.start,
            format!("axis `{}` is empty", a.key),
            format!("give `{}` at least one value, or remove the axis", a.key),
        ));
    }
    if items.len() > MAX_AXIS_VALUES {
        return Err(ctx.err(
            a.node.span.start,
            format!(
                "axis `{}` has {} values, more than the {MAX_AXIS_VALUES} an axis may have",
                a.key,
                items.len()
            ),
            "sweep fewer values, or split the sweep into several plans",
        ));
    }
    let mut values: Vec<AxisValue> = Vec::new();
    let mut labels = std::collections::HashSet::new();
    for item in items {
        let value = axis_value(ctx, flags, probe, a, item)?;
        if let Some(s) = value
            .settings
            .iter()
            .find(|s| set.iter().any(|t| t.flag == s.flag))
        {
            return Err(ctx.err(
                s.at,
                format!("`{}` is in [set] and swept by axis `{}`", s.flag, a.key),
                format!("remove `{}` from [set]", s.flag),
            ));
        }
        if !labels.insert(value.label.clone()) {
            return Err(ctx.err(
                value.at,
                format!("axis `{}` has the value `{}` twice", a.key, value.label),
                "remove the duplicate, or give each a different `label`",
            ));
        }
        values.push(value);
    }
    Ok(Axis {
        name: a.key.clone(),
        values,
    })
}

/// One value of axis `a`: a table of flags (with an optional `label` and `profile`), a
/// build profile (the `profile` axis), or the value of the axis's own flag.
fn axis_value(
    ctx: &Ctx<'_>,
    flags: &[Flag],
    probe: &str,
    a: &Entry,
    item: &Node,
) -> Result<AxisValue, PlanError> {
    let value = match &item.kind {
        Kind::Table(fields) => {
            let mut label = None;
            let mut settings = Vec::new();
            let mut profile = None;
            for f in fields {
                match f.key.as_str() {
                    "label" => label = Some(string_of(ctx, f)?),
                    "profile" => profile = Some(profile_of(ctx, &f.node)?),
                    _ => {
                        settings.extend(setting(ctx, flags, probe, &f.key, &f.key_span, &f.node)?);
                    }
                }
            }
            let label = label.unwrap_or_else(|| {
                settings
                    .iter()
                    .map(|s| match &s.value {
                        Some(v) => format!("{}={v}", s.flag),
                        None => s.flag.clone(),
                    })
                    .chain(profile.clone())
                    .collect::<Vec<_>>()
                    .join(",")
            });
            AxisValue {
                label,
                settings,
                profile,
                at: item.span.start,
            }
        }
        Kind::Array(_) => {
            return Err(ctx.err(
                item.span.start,
                format!("axis `{}`: a value is a list", a.key),
                "give one value per item, or a table { label = \"...\", flag = value, ... } to set several flags",
            ))
        }
        _ if a.key == "profile" => {
            let p = profile_of(ctx, item)?;
            AxisValue {
                label: p.clone(),
                settings: Vec::new(),
                profile: Some(p),
                at: item.span.start,
            }
        }
        _ => {
            let s = setting(ctx, flags, probe, &a.key, &a.key_span, item)?;
            let label = match s.first() {
                Some(Setting { value: Some(v), .. }) => v.clone(),
                Some(Setting { value: None, .. }) => "on".into(),
                None => "off".into(),
            };
            AxisValue {
                label,
                settings: s,
                profile: None,
                at: item.span.start,
            }
        }
    };
    Ok(value)
}

pub(super) fn parse_exclude(
    ctx: &Ctx<'_>,
    axes: &[Axis],
    item: &Node,
) -> Result<Exclude, PlanError> {
    let fields = entries(
        ctx,
        item,
        "an [[exclude]]",
        "[[exclude]] with axis = \"label\" lines",
    )?;
    let names: Vec<&str> = axes.iter().map(|a| a.name.as_str()).collect();
    let mut matches = Vec::new();
    let mut reason = String::new();
    for f in fields {
        if f.key == "reason" {
            reason = string_of(ctx, f)?;
            continue;
        }
        let Some(ai) = axes.iter().position(|a| a.name == f.key) else {
            return Err(ctx.err(
                f.key_span.start,
                format!("`{}` is not an axis of this plan", f.key),
                unknown_fix(&f.key, &names, "the axes in [sweep]"),
            ));
        };
        let axis = &axes[ai];
        let labels: Vec<&Node> = match &f.node.kind {
            Kind::Array(items) if !items.is_empty() => items.iter().collect(),
            Kind::Array(_) => {
                return Err(ctx.err(
                    f.node.span.start,
                    format!("`{}` is an empty list", f.key),
                    "name at least one label",
                ))
            }
            _ => vec![&f.node],
        };
        let all: Vec<&str> = axis.values.iter().map(|v| v.label.as_str()).collect();
        let mut idx = Vec::new();
        for l in labels {
            let text = l.as_arg().unwrap_or_default();
            match axis.values.iter().position(|v| v.label == text) {
                Some(i) => idx.push(i),
                None => {
                    return Err(ctx.err(
                        l.span.start,
                        format!("axis `{}` has no value `{text}`", f.key),
                        unknown_fix(&text, &all, &format!("the labels of `{}`", f.key)),
                    ))
                }
            }
        }
        matches.push((ai, idx));
    }
    if matches.is_empty() {
        return Err(ctx.err(
            item.span.start,
            "an [[exclude]] names no axis",
            "name the axis values to leave out, e.g. backend = \"jack\"",
        ));
    }
    Ok(Exclude {
        matches,
        reason,
        at: item.span.start,
        used: std::cell::Cell::new(false),
    })
}
