//! Plan files: one probe, the settings every cell shares, and the axes to sweep, expanded
//! into the cells of a matrix. Everything here is checked before anything runs: a
//! malformed plan is refused with its file, line and column and the fix.
//!
//! ```toml
//! name = "alsa-periods"        # names the plan run
//! probe = "event"              # jitter | event | roundtrip | net
//! repeats = 3                  # every cell this many times (default 1)
//!
//! [set]                        # flags every cell gets: --triggers 20 --server dummy
//! triggers = 20
//! server = "dummy"
//!
//! [sweep]                      # axes; every combination is a cell, outermost first
//! backend = ["alsa", "jack"]   # a flag's values
//! profile = ["opt1", "opt3"]   # the build profile: target/opt1/audiolat ...
//! buffer = [                   # several flags per value, with a label
//!   { label = "128/64", period = 64, periods = 2 },
//!   { label = "256/128", period = 128, periods = 2 },
//! ]
//!
//! [[exclude]]                  # combinations not to run, by label
//! backend = "jack"
//! buffer = "256/64"
//! reason = "a JACK server's buffer is two periods"
//! ```
//!
//! `[report]` and `[published]` describe the paper-shaped tables of the report and the
//! study's own figures; they are checked against the axes here and passed on as JSON.

use std::ops::Range;

use clap::{CommandFactory, Parser};
use serde_json::{json, Map, Value};

use crate::cli::Cli;

/// The probes a plan can sweep.
pub const PROBES: [&str; 4] = ["jitter", "event", "roundtrip", "net"];

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

/// Top-level keys of a plan file.
/// The most values one axis may have.
pub const MAX_AXIS_VALUES: usize = 1000;

/// The most cells a plan may have (every combination of its axes, times its repeats,
/// before exclusions). A cell is a run of seconds at least: this is days of measuring,
/// and the largest study preset has 675.
pub const MAX_CELLS: u64 = 10_000;

const TOP_KEYS: [&str; 10] = [
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
];

/// A refusal, with where it is in the file and what to do.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanError {
    /// The plan's file (or `preset NAME`).
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}; fix: {}",
            self.file, self.line, self.column, self.message, self.fix
        )
    }
}

impl std::error::Error for PlanError {}

/// A parsed TOML value with the byte range it came from.
#[derive(Debug, Clone)]
struct Node {
    span: Range<usize>,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    String(String),
    Integer(i64),
    Float(f64),
    Bool(bool),
    Other(&'static str),
    Array(Vec<Node>),
    Table(Vec<Entry>),
}

#[derive(Debug, Clone)]
struct Entry {
    key: String,
    key_span: Range<usize>,
    node: Node,
}

impl Node {
    fn type_name(&self) -> &'static str {
        match &self.kind {
            Kind::String(_) => "a string",
            Kind::Integer(_) => "an integer",
            Kind::Float(_) => "a number",
            Kind::Bool(_) => "true or false",
            Kind::Other(t) => t,
            Kind::Array(_) => "a list",
            Kind::Table(_) => "a table",
        }
    }

    fn to_json(&self) -> Value {
        match &self.kind {
            Kind::String(s) => json!(s),
            Kind::Integer(i) => json!(i),
            Kind::Float(f) => json!(f),
            Kind::Bool(b) => json!(b),
            Kind::Other(_) => Value::Null,
            Kind::Array(a) => Value::Array(a.iter().map(Node::to_json).collect()),
            Kind::Table(t) => Value::Object(
                t.iter()
                    .map(|e| (e.key.clone(), e.node.to_json()))
                    .collect::<Map<_, _>>(),
            ),
        }
    }

    /// A scalar as a flag's value on a cell's command line: a number as written, so the
    /// CLI's parser applies the same rules to a plan as to a typed command (`duration =
    /// 1e9` is refused like `--duration 1e9`, `period = 64.0` like `--period 64.0`).
    /// `text` is the plan's text the node was parsed from.
    fn as_cli_arg(&self, text: &str) -> Option<String> {
        match &self.kind {
            Kind::Integer(_) | Kind::Float(_) => text
                .get(self.span.clone())
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .or_else(|| self.as_arg()),
            _ => self.as_arg(),
        }
    }

    /// A scalar as a label (a number in its plain form).
    fn as_arg(&self) -> Option<String> {
        match &self.kind {
            Kind::String(s) => Some(s.clone()),
            Kind::Integer(i) => Some(i.to_string()),
            Kind::Float(f) => Some(f.to_string()),
            _ => None,
        }
    }
}

fn convert_value(v: &toml_edit::Value, outer: Range<usize>) -> Node {
    let span = v.span().unwrap_or(outer);
    let kind = match v {
        toml_edit::Value::String(s) => Kind::String(s.value().clone()),
        toml_edit::Value::Integer(i) => Kind::Integer(*i.value()),
        toml_edit::Value::Float(f) => Kind::Float(*f.value()),
        toml_edit::Value::Boolean(b) => Kind::Bool(*b.value()),
        toml_edit::Value::Datetime(_) => Kind::Other("a date"),
        toml_edit::Value::Array(a) => {
            Kind::Array(a.iter().map(|x| convert_value(x, span.clone())).collect())
        }
        toml_edit::Value::InlineTable(t) => Kind::Table(
            t.iter()
                .map(|(k, x)| {
                    let key_span = t
                        .key(k)
                        .and_then(|k| k.span())
                        .unwrap_or_else(|| span.clone());
                    Entry {
                        key: k.to_string(),
                        key_span: key_span.clone(),
                        node: convert_value(x, key_span),
                    }
                })
                .collect(),
        ),
    };
    Node { span, kind }
}

fn convert_table(t: &toml_edit::Table, outer: Range<usize>) -> Node {
    let span = t.span().unwrap_or(outer);
    Node {
        span: span.clone(),
        kind: Kind::Table(
            t.iter()
                .map(|(k, item)| {
                    let key_span = t
                        .key(k)
                        .and_then(|k| k.span())
                        .unwrap_or_else(|| span.clone());
                    Entry {
                        key: k.to_string(),
                        key_span: key_span.clone(),
                        node: convert_item(item, key_span),
                    }
                })
                .collect(),
        ),
    }
}

fn convert_item(item: &toml_edit::Item, outer: Range<usize>) -> Node {
    match item {
        toml_edit::Item::Value(v) => convert_value(v, outer),
        toml_edit::Item::Table(t) => convert_table(t, outer),
        toml_edit::Item::ArrayOfTables(a) => {
            let span = a.span().unwrap_or(outer.clone());
            Node {
                span: span.clone(),
                kind: Kind::Array(a.iter().map(|t| convert_table(t, span.clone())).collect()),
            }
        }
        toml_edit::Item::None => Node {
            span: outer,
            kind: Kind::Other("nothing"),
        },
    }
}

/// One flag of a cell: `--name value`, or `--name` for a switch.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// The long flag without dashes.
    pub flag: String,
    /// Its value (`None`: a switch).
    pub value: Option<String>,
    at: usize,
}

/// One value of an axis.
#[derive(Debug, Clone, PartialEq)]
pub struct AxisValue {
    /// How the value is named in keys, tables and exclusions.
    pub label: String,
    /// The flags it sets.
    pub settings: Vec<Setting>,
    /// The build profile it selects (the `profile` axis, or a `profile` key).
    pub profile: Option<String>,
    at: usize,
}

/// An axis to sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Its name.
    pub name: String,
    /// Its values, in order.
    pub values: Vec<AxisValue>,
}

#[derive(Debug, Clone)]
struct Exclude {
    /// (axis index, value indices) that must all match.
    matches: Vec<(usize, Vec<usize>)>,
    reason: String,
    at: usize,
    used: std::cell::Cell<bool>,
}

/// A plan, parsed and checked (not yet expanded).
#[derive(Debug, Clone)]
pub struct Plan {
    /// Names the plan run (and finds it again for --resume).
    pub name: String,
    /// A title for reports.
    pub title: String,
    /// What the plan reproduces, for reports.
    pub description: String,
    /// The probe every cell runs.
    pub probe: String,
    /// Runs per cell.
    pub repeats: u32,
    /// Flags every cell gets.
    pub set: Vec<Setting>,
    /// Axes, outermost first.
    pub axes: Vec<Axis>,
    /// Where the plan came from: a path, or `preset NAME`.
    pub source: String,
    /// The plan's text.
    pub text: String,
    /// `[report]` as JSON (tables to lay out).
    pub report: Value,
    /// `[published]` as JSON (the study's figures).
    pub published: Value,
    excludes: Vec<Exclude>,
}

/// One configuration of the matrix: one run of one binary.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Identity in the plan: axis labels and the repeat.
    pub key: String,
    /// Axis name -> label, in axis order, then `repeat`.
    pub axes: Vec<(String, String)>,
    /// The arguments after the binary (`event --backend alsa ...`).
    pub argv: Vec<String>,
    /// The build profile (`current`: the running binary).
    pub profile: String,
    /// 1-based repeat.
    pub repeat: u32,
    at: usize,
}

impl Cell {
    /// The axes as a JSON object (with the repeat).
    pub fn axes_json(&self) -> Value {
        Value::Object(
            self.axes
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect(),
        )
    }
}

struct Ctx<'a> {
    file: &'a str,
    text: &'a str,
}

impl Ctx<'_> {
    fn err(&self, at: usize, message: impl Into<String>, fix: impl Into<String>) -> PlanError {
        let before = &self.text[..at.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before[before.rfind('\n').map_or(0, |i| i + 1)..]
            .chars()
            .count()
            + 1;
        PlanError {
            file: self.file.to_string(),
            line,
            column,
            message: message.into(),
            fix: fix.into(),
        }
    }
}

fn closest<'a>(word: &str, choices: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    fn distance(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut cur = vec![i + 1];
            for (j, cb) in b.iter().enumerate() {
                cur.push(
                    (prev[j] + usize::from(ca != *cb))
                        .min(prev[j + 1] + 1)
                        .min(cur[j] + 1),
                );
            }
            prev = cur;
        }
        prev[b.len()]
    }
    choices
        .into_iter()
        .map(|c| (distance(word, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn unknown_fix(word: &str, choices: &[&str], what: &str) -> String {
    match closest(word, choices.iter().copied()) {
        Some(c) => format!("did you mean `{c}`? ({what}: {})", choices.join(", ")),
        None => format!("use one of {what}: {}", choices.join(", ")),
    }
}

/// What a probe's subcommand accepts: long flag -> (takes a value, may be repeated).
fn probe_flags(probe: &str) -> Vec<Flag> {
    let cmd = Cli::command();
    let Some(sub) = cmd.find_subcommand(probe) else {
        return Vec::new();
    };
    sub.get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter_map(|a| {
            a.get_long().map(|l| Flag {
                name: l.to_string(),
                takes_value: a.get_action().takes_values(),
                repeated: matches!(a.get_action(), clap::ArgAction::Append),
            })
        })
        .collect()
}

/// A flag of a probe's command line.
struct Flag {
    name: String,
    takes_value: bool,
    /// Given once per value (`--cell a --cell b`): a list becomes several flags.
    repeated: bool,
}

fn setting(
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

fn entries<'a>(
    ctx: &Ctx<'_>,
    node: &'a Node,
    what: &str,
    example: &str,
) -> Result<&'a [Entry], PlanError> {
    match &node.kind {
        Kind::Table(t) => Ok(t),
        _ => Err(ctx.err(
            node.span.start,
            format!("{what} must be a table, but it is {}", node.type_name()),
            format!("write it as {example}"),
        )),
    }
}

fn string_of(ctx: &Ctx<'_>, e: &Entry) -> Result<String, PlanError> {
    match &e.node.kind {
        Kind::String(s) if !s.trim().is_empty() => Ok(s.clone()),
        Kind::String(_) => Err(ctx.err(
            e.node.span.start,
            format!("`{}` is empty", e.key),
            format!("give `{}` some text", e.key),
        )),
        _ => Err(ctx.err(
            e.node.span.start,
            format!(
                "`{}` must be a string, but it is {}",
                e.key,
                e.node.type_name()
            ),
            format!("write `{} = \"...\"`", e.key),
        )),
    }
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

impl Plan {
    /// Parses and checks a plan's text. `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Plan, PlanError> {
        let ctx = Ctx { file, text };
        let doc = toml_edit::ImDocument::parse(text).map_err(|e| {
            let at = e.span().map_or(0, |s| s.start);
            let msg = e.message().trim().to_string();
            ctx.err(
                at,
                format!("not valid TOML: {msg}"),
                "see https://toml.io; a plan is key = value lines and [tables]",
            )
        })?;
        let root = convert_table(doc.as_table(), 0..0);
        let Kind::Table(top) = &root.kind else {
            unreachable!("the root is a table")
        };
        for e in top {
            if !TOP_KEYS.contains(&e.key.as_str()) {
                return Err(ctx.err(
                    e.key_span.start,
                    format!("unknown key `{}`", e.key),
                    unknown_fix(&e.key, &TOP_KEYS, "a plan's keys"),
                ));
            }
        }
        let get = |k: &str| top.iter().find(|e| e.key == k);
        let name = match get("name") {
            Some(e) => string_of(&ctx, e)?,
            None => return Err(ctx.err(
                0,
                "the plan has no `name`",
                "add `name = \"...\"` at the top (it names the plan run and finds it for --resume)",
            )),
        };
        let probe = match get("probe") {
            Some(e) => {
                let p = string_of(&ctx, e)?;
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
        let title = match get("title") {
            Some(e) => string_of(&ctx, e)?,
            None => name.clone(),
        };
        let description = match get("description") {
            Some(e) => string_of(&ctx, e)?,
            None => String::new(),
        };
        let repeats = match get("repeats") {
            None => 1,
            Some(e) => match e.node.kind {
                Kind::Integer(n) if (1..=1000).contains(&n) => n as u32,
                _ => {
                    return Err(ctx.err(
                        e.node.span.start,
                        format!(
                            "`repeats` must be a whole number from 1 to 1000, not {}",
                            e.node.type_name()
                        ),
                        "write e.g. `repeats = 5`",
                    ))
                }
            },
        };
        let flags = probe_flags(&probe);
        let mut set = Vec::new();
        if let Some(e) = get("set") {
            for s in entries(&ctx, &e.node, "[set]", "[set] with key = value lines")? {
                if s.key == "profile" {
                    return Err(ctx.err(
                        s.key_span.start,
                        "`profile` chooses a binary, so it is an axis",
                        "move it to [sweep] as `profile = [\"opt2\"]`",
                    ));
                }
                set.extend(setting(&ctx, &flags, &probe, &s.key, &s.key_span, &s.node)?);
            }
        }
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
                get("sweep").map_or(0, |e| e.key_span.start),
                format!(
                    "the plan has {count} cells ({shape}), more than the {MAX_CELLS} a plan may have"
                ),
                "sweep fewer values or repeats, or split the sweep into several plans",
            ));
        }
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
        let mut excludes = Vec::new();
        if let Some(e) = get("exclude") {
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
                excludes.push(parse_exclude(&ctx, &axes, item)?);
            }
        }
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

    /// Every cell, in plan order (outermost axis first, repeats innermost), each checked
    /// by parsing it as a command line and by `check` (the probe's own checks, with no
    /// side effects), with what `check` made of the parsed command line. The first cell
    /// refused is the error.
    pub fn cells<T>(
        &self,
        check: &dyn Fn(&Cli) -> Result<T, String>,
    ) -> Result<Vec<(Cell, T)>, PlanError> {
        let ctx = Ctx {
            file: &self.source,
            text: &self.text,
        };
        let mut cells = Vec::new();
        let mut index = vec![0usize; self.axes.len()];
        let total: usize = self.axes.iter().map(|a| a.values.len()).product();
        for _ in 0..total {
            let excluded = self.excludes.iter().find(|x| {
                x.matches
                    .iter()
                    .all(|(axis, values)| values.contains(&index[*axis]))
            });
            if let Some(x) = excluded {
                x.used.set(true);
            } else {
                for repeat in 1..=self.repeats {
                    cells.push(self.cell(&ctx, &index, repeat, check)?);
                }
            }
            // The innermost (last) axis turns fastest.
            for i in (0..index.len()).rev() {
                index[i] += 1;
                if index[i] < self.axes[i].values.len() {
                    break;
                }
                index[i] = 0;
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some((dup, _)) = cells.iter().find(|(c, _)| !seen.insert(c.key.as_str())) {
            return Err(ctx.err(
                dup.at,
                format!("two cells have the key `{}`", dup.key),
                "give the axis values labels without spaces or `=`, so each cell's key is its own",
            ));
        }
        if let Some(x) = self.excludes.iter().find(|x| !x.used.get()) {
            return Err(ctx.err(
                x.at,
                "this exclusion matches no cell",
                "check its labels against the axes, or remove it",
            ));
        }
        if cells.is_empty() {
            return Err(ctx.err(
                0,
                "the plan has no cells: every combination is excluded",
                "remove an [[exclude]] or add axis values",
            ));
        }
        Ok(cells)
    }

    fn cell<T>(
        &self,
        ctx: &Ctx<'_>,
        index: &[usize],
        repeat: u32,
        check: &dyn Fn(&Cli) -> Result<T, String>,
    ) -> Result<(Cell, T), PlanError> {
        let mut argv = vec![self.probe.clone()];
        let mut axes = Vec::new();
        let mut profile = "current".to_string();
        let mut ats: Vec<(usize, Vec<String>)> = self
            .set
            .iter()
            .map(|s| (s.at, vec![s.flag.clone()]))
            .collect();
        let push = |argv: &mut Vec<String>, s: &Setting| {
            argv.push(format!("--{}", s.flag));
            if let Some(v) = &s.value {
                argv.push(v.clone());
            }
        };
        for s in &self.set {
            push(&mut argv, s);
        }
        let mut first_at = None;
        for (axis, &i) in self.axes.iter().zip(index) {
            let v = &axis.values[i];
            first_at.get_or_insert(v.at);
            axes.push((axis.name.clone(), v.label.clone()));
            for s in &v.settings {
                push(&mut argv, s);
            }
            if let Some(p) = &v.profile {
                profile = p.clone();
            }
            ats.push((v.at, v.settings.iter().map(|s| s.flag.clone()).collect()));
        }
        axes.push(("repeat".into(), repeat.to_string()));
        let key = axes
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        let at = first_at.unwrap_or(0);
        // Point at the value whose flag the message names, else the cell's first value.
        let locate = |msg: &str| {
            ats.iter()
                .rev()
                .find(|(_, flags)| flags.iter().any(|f| msg.contains(&format!("--{f}"))))
                .map_or(at, |(a, _)| *a)
        };
        let cli = Cli::try_parse_from(std::iter::once("audiolat".to_string()).chain(argv.iter().cloned()))
            .map_err(|e| {
                let msg = clap_message(&e);
                ctx.err(
                    locate(&msg),
                    format!("cell {key}: {msg}"),
                    format!(
                        "change the value, or leave this combination out with an [[exclude]] (`audiolat {} --help` lists the flags)",
                        self.probe
                    ),
                )
            })?;
        let checked = check(&cli).map_err(|msg| {
            ctx.err(
                locate(&msg),
                format!("cell {key} cannot run: {msg}"),
                "change the value, or leave this combination out with an [[exclude]]",
            )
        })?;
        Ok((
            Cell {
                key,
                axes,
                argv,
                profile,
                repeat,
                at,
            },
            checked,
        ))
    }

    /// Where a cell's first axis value is, as `file:line`.
    pub fn location(&self, cell: &Cell) -> String {
        let ctx = Ctx {
            file: &self.source,
            text: &self.text,
        };
        let e = ctx.err(cell.at, "", "");
        format!("{}:{}", e.file, e.line)
    }

    /// The plan as JSON, stored with its plan run (the report reads its tables here).
    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "probe": self.probe,
            "repeats": self.repeats,
            "source": self.source,
            "text": self.text,
            "axes": self.axes.iter().map(|a| json!({
                "name": a.name,
                "labels": a.values.iter().map(|v| v.label.clone()).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "exclude": self.excludes.iter().map(|x| json!({
                "axes": x.matches.iter().map(|(a, vs)| (
                    self.axes[*a].name.clone(),
                    json!(vs.iter().map(|v| self.axes[*a].values[*v].label.clone()).collect::<Vec<_>>()),
                )).collect::<Map<_, _>>(),
                "reason": x.reason,
            })).collect::<Vec<_>>(),
            "report": self.report,
            "published": self.published,
        })
    }
}

/// clap's error, as one line.
pub fn clap_message(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    rendered
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
        .trim_start_matches("error: ")
        .to_string()
}

fn parse_axis(
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

fn parse_exclude(ctx: &Ctx<'_>, axes: &[Axis], item: &Node) -> Result<Exclude, PlanError> {
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

/// Checks `[report]`: its tables' axes exist and their published figures fit them.
fn check_report(
    ctx: &Ctx<'_>,
    plan: &Plan,
    report: &Node,
    published: Option<&Entry>,
) -> Result<(), PlanError> {
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
            let tf = entries(
                ctx,
                t,
                "a [[report.table]]",
                "[[report.table]] with title, value, rows, columns",
            )?;
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
                                unknown_fix(&n, &names, "the axes"),
                            ));
                        }
                        list.push(n);
                    }
                }
                dims.push(list);
            }
            if let Some(e) = get("filter") {
                for ff in entries(ctx, &e.node, "`filter`", "filter = { axis = \"label\" }")? {
                    let Some(axis) = plan.axes.iter().find(|a| a.name == ff.key) else {
                        return Err(ctx.err(
                            ff.key_span.start,
                            format!("`{}` is not an axis of this plan", ff.key),
                            unknown_fix(&ff.key, &names, "the axes"),
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
            }
            if let Some(e) = get("published") {
                let key = string_of(ctx, e)?;
                let figure = published.and_then(|p| match &p.node.kind {
                    Kind::Table(t) => t.iter().find(|x| x.key == key),
                    _ => None,
                });
                let Some(figure) = figure else {
                    return Err(ctx.err(
                        e.node.span.start,
                        format!("there is no [published.{key}]"),
                        format!("add a [published.{key}] table with the study's figures, or remove `published`"),
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
                    for r in entries(ctx, &rows.node, "`rows`", "rows = { \"label\" = [values] }")?
                    {
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
                                    if n == usize::MAX { "no list of".to_string() } else { n.to_string() }
                                ),
                                "give one value per column (a string such as \"-\" where the study has none)",
                            ));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(_: &Cli) -> Result<(), String> {
        Ok(())
    }

    const PLAN: &str = r#"
name = "t"
probe = "event"
repeats = 2

[set]
triggers = 10
no-mlock = true

[sweep]
backend = ["alsa", "virtual"]
buffer = [
  { label = "128/64", period = 64, periods = 2 },
  { label = "256/64", period = 64, periods = 4 },
]
profile = ["current", "opt2"]

[[exclude]]
backend = "virtual"
buffer = ["256/64"]
reason = "example"
"#;

    #[test]
    fn a_plan_expands_outermost_axis_first_without_the_excluded_cells() {
        let plan = Plan::parse(PLAN, "t.toml").unwrap();
        let cells: Vec<Cell> = plan.cells(&ok).unwrap().into_iter().map(|c| c.0).collect();
        // 2 x 2 x 2 = 8 combinations, 2 excluded, 2 repeats each.
        assert_eq!(cells.len(), 12);
        assert_eq!(
            cells[0].key,
            "backend=alsa buffer=128/64 profile=current repeat=1"
        );
        assert_eq!(
            cells[0].argv,
            [
                "event",
                "--triggers",
                "10",
                "--no-mlock",
                "--backend",
                "alsa",
                "--period",
                "64",
                "--periods",
                "2"
            ]
        );
        assert_eq!(cells[1].repeat, 2);
        assert_eq!(cells[2].profile, "opt2");
        assert!(cells
            .iter()
            .all(|c| !(c.key.contains("virtual") && c.key.contains("256/64"))));
        let keys: std::collections::HashSet<_> = cells.iter().map(|c| &c.key).collect();
        assert_eq!(keys.len(), cells.len());
    }

    fn refusal(text: &str) -> PlanError {
        match Plan::parse(text, "p.toml").and_then(|p| p.cells(&ok)) {
            Ok(_) => panic!("accepted:\n{text}"),
            Err(e) => e,
        }
    }

    #[test]
    fn malformed_plans_are_refused_with_their_line_and_a_fix() {
        let e = refusal("name = \"x\"\nprobe = \"event\"\n[sweep]\nbakend = [\"alsa\"]\n");
        assert_eq!((e.line, e.column), (4, 1), "{e}");
        assert!(e.message.contains("`bakend` is not a flag"), "{e}");
        assert!(e.fix.contains("did you mean `backend`"), "{e}");

        let e = refusal("name = \"x\"\nprobe = \"event\"\nrepets = 3\n");
        assert_eq!(e.line, 3);
        assert!(e.fix.contains("`repeats`"), "{e}");

        let e = refusal("name = \"x\"\nprobe = \"event\"\n[set]\ntriggers = [\n]\n");
        assert_eq!(e.line, 4, "{e}");
        assert!(e.message.contains("empty list"), "{e}");

        let e = refusal("name = \"x\"\nprobe = \"event\"\n[sweep]\nperiod = []\n");
        assert_eq!(e.line, 4, "{e}");
        assert!(e.message.contains("axis `period` is empty"), "{e}");

        let e = refusal("name = \"x\"\nprobe = \"event\"\nrepeats = \"five\"\n");
        assert_eq!(e.line, 3, "{e}");
        assert!(e.message.contains("whole number"), "{e}");

        let e = refusal("name = \"x\"\nprobe = \"event\"\n[set]\nno-mlock = \"yes\"\n");
        assert!(e.message.contains("is a switch"), "{e}");

        let e = refusal("name = \"x\"\nprobe = \"event\"\n[set]\ndb = \"a.db\"\n");
        assert!(e.message.contains("cannot be set in a plan"), "{e}");

        let e = refusal("name = \"x\"\nprobe = \"evnt\"\n");
        assert!(e.fix.contains("did you mean `event`"), "{e}");

        let e = refusal(
            "name = \"x\"\nprobe = \"event\"\n[set]\nload = \"top\"\n[sweep]\nload = [\"none\"]\n",
        );
        assert_eq!(e.line, 6, "{e}");

        let e = refusal("name = \"x\"\nprobe = \"event\"\n[sweep]\nbackend = [\"alsa\"]\n[[exclude]]\nbackend = \"jack\"\n");
        assert_eq!(e.line, 6, "{e}");
        assert!(e.message.contains("no value `jack`"), "{e}");

        let e = refusal("name = \"x\"\nprobe = [1\n");
        assert!(e.message.contains("not valid TOML"), "{e}");
        assert!(e.line >= 2, "{e}");
    }

    #[test]
    fn a_cell_clap_refuses_points_at_its_value() {
        let text = "name = \"x\"\nprobe = \"event\"\n[sweep]\nbackend = [\"alsa\"]\nperiod = [64, \"lots\"]\n";
        let e = refusal(text);
        assert_eq!(e.line, 5, "{e}");
        assert!(e.message.contains("cell backend=alsa period=lots"), "{e}");
        assert!(e.message.contains("--period"), "{e}");
    }

    #[test]
    fn the_probe_check_refuses_an_impossible_combination_at_its_line() {
        let text = "name = \"x\"\nprobe = \"event\"\n[sweep]\nbackend = [\"alsa\", \"jack\"]\nbuffer = [{ label = \"a\", periods = 2 }, { label = \"b\", periods = 4 }]\n";
        let plan = Plan::parse(text, "p.toml").unwrap();
        let check = |cli: &Cli| match &cli.command {
            crate::cli::Command::Event(a)
                if a.audio.backend == crate::cli::BackendName::Jack && a.audio.periods != 2 =>
            {
                Err("--periods sets an ALSA buffer".to_string())
            }
            _ => Ok(()),
        };
        let e = plan.cells(&check).unwrap_err();
        assert_eq!(e.line, 5, "{e}");
        assert!(
            e.message
                .contains("cell backend=jack buffer=b repeat=1 cannot run"),
            "{e}"
        );
        assert!(e.fix.contains("[[exclude]]"), "{e}");
    }

    #[test]
    fn report_tables_must_name_axes_and_fit_their_published_figures() {
        let base = "name = \"x\"\nprobe = \"event\"\n[sweep]\nbackend = [\"alsa\", \"jack\"]\nworkload = [\"sine\"]\n";
        let good = format!("{base}[[report.table]]\nvalue = \"event_latency.mean\"\nrows = [\"workload\"]\ncolumns = [\"backend\"]\npublished = \"f\"\n[published.f]\nrows = {{ sine = [1.0, 2.0] }}\n");
        Plan::parse(&good, "p.toml").unwrap();
        let e = refusal(&good.replace("[1.0, 2.0]", "[1.0]"));
        assert!(
            e.message
                .contains("has 1 values, but the table has 2 columns"),
            "{e}"
        );
        let e = refusal(&good.replace("rows = [\"workload\"]", "rows = [\"buffer\"]"));
        assert!(e.message.contains("`buffer` is not an axis"), "{e}");
        let e = refusal(&good.replace("published = \"f\"", "published = \"g\""));
        assert!(e.message.contains("no [published.g]"), "{e}");
        let e = refusal(&good.replace("rows = { sine", "rows = { sin"));
        assert!(
            e.message.contains("published row `sin` is not a label"),
            "{e}"
        );
        assert!(e.fix.contains("`sine`"), "{e}");
        let e = refusal(&good.replace("value = \"event", "scale = \"1e-6\"\nvalue = \"event"));
        assert!(e.message.contains("`scale` must be a number"), "{e}");
    }

    #[test]
    fn repeat_is_the_plans_own_axis_and_keys_are_unique() {
        let e = refusal("name = \"x\"\nprobe = \"event\"\n[sweep]\nrepeat = [1, 2]\n");
        assert!(e.fix.contains("repeats = N"), "{e}");
        let e = refusal(
            "name = \"x\"\nprobe = \"event\"\n[sweep]\nperiod = [{ label = \"a workload=b\", period = 64 }, { label = \"a\", period = 128 }]\nworkload = [{ label = \"c\", workload = \"sine\" }, { label = \"b workload=c\", workload = \"poly\" }]\n",
        );
        assert!(e.message.contains("two cells have the key"), "{e}");
        // Columns count characters, not bytes.
        let e = refusal("name = \"é\"\nprobe = \"event\"\n[sweep]\nbackend = [\"é\", 1]\n");
        assert_eq!(e.line, 4, "{e}");
    }

    /// A plan's value reaches the CLI's parser as the plan writes it, so the command
    /// line's rules hold for plans too.
    #[test]
    fn plan_numbers_are_judged_as_written_by_the_clis_parser() {
        let plan = |probe: &str, body: &str| format!("name = \"x\"\nprobe = \"{probe}\"\n{body}\n");
        for (probe, body, needle) in [
            ("jitter", "[set]\nduration = 1e9", "'1e9' for '--duration"),
            (
                "jitter",
                "[sweep]\nduration = [1, 1e9]",
                "'1e9' for '--duration",
            ),
            ("event", "[set]\nperiod = 64.0", "'64.0' for '--period"),
            (
                "event",
                "[sweep]\nperiod = [64, 128.0]",
                "'128.0' for '--period",
            ),
            (
                "event",
                "[set]\ntriggers = 1_000",
                "'1_000' for '--triggers",
            ),
            ("event", "[set]\ntriggers = 0", "'0' for '--triggers"),
            (
                "event",
                "[sweep]\nb = [{ label = \"a\", period = 6.4e1 }]",
                "'6.4e1' for '--period",
            ),
        ] {
            let text = plan(probe, body);
            let e = refusal(&text);
            assert!(e.message.contains(needle), "{text}: {e}");
            // The same value on a command line is refused by the same parser.
            let value = needle.split('\'').nth(1).unwrap();
            let flag = needle.split('\'').nth(3).unwrap();
            assert!(
                Cli::try_parse_from(["audiolat", probe, flag, value]).is_err(),
                "{probe} {flag} {value}"
            );
        }
        // Numbers the command line takes are taken as they are written.
        let p = Plan::parse(
            &plan("jitter", "[set]\nduration = 2.5\nrate = 1000"),
            "p.toml",
        )
        .unwrap();
        let cells = p.cells(&ok).unwrap();
        assert_eq!(
            cells[0].0.argv,
            ["jitter", "--duration", "2.5", "--rate", "1000"]
        );
    }

    /// Size limits are checked on the axes' lengths, before any cell is made.
    #[test]
    fn plans_over_the_size_limits_are_refused_with_their_count() {
        let values = |n: usize| {
            (0..n)
                .map(|i| (1000 + i).to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let text = format!(
            "name = \"x\"\nprobe = \"jitter\"\n[sweep]\nrate = [{}]\n",
            values(MAX_AXIS_VALUES + 1)
        );
        let e = refusal(&text);
        assert!(
            e.message.contains(&format!(
                "has {} values, more than the {MAX_AXIS_VALUES}",
                MAX_AXIS_VALUES + 1
            )),
            "{e}"
        );
        // 100 x 99 x 30 = 297,000 cells: refused at once, with the count and the limit.
        let text = format!(
            "name = \"x\"\nprobe = \"jitter\"\n[sweep]\nrate = [{}]\npriority = [{}]\nfragments = [{}]\n",
            values(100),
            (1..=99).map(|i| i.to_string()).collect::<Vec<_>>().join(","),
            (1..=30).map(|i| i.to_string()).collect::<Vec<_>>().join(","),
        );
        let e = Plan::parse(&text, "p.toml").unwrap_err();
        assert!(
            e.message.contains(&format!("has 297000 cells (100 rate x 99 priority x 30 fragments x 1 repeats), more than the {MAX_CELLS}")),
            "{e}"
        );
        // Repeats count too.
        let text = format!(
            "name = \"x\"\nprobe = \"jitter\"\nrepeats = 1000\n[sweep]\nrate = [{}]\n",
            values(11)
        );
        let e = Plan::parse(&text, "p.toml").unwrap_err();
        assert!(e.message.contains("has 11000 cells"), "{e}");
    }
}
