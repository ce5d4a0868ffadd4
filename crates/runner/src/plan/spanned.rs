//! TOML values with the byte range they came from, so every refusal points at its line
//! and column; and the helpers that turn a place in the text into a [`PlanError`].

use std::ops::Range;

use serde_json::{json, Map, Value};

use super::PlanError;

/// A parsed TOML value with the byte range it came from.
#[derive(Debug, Clone)]
pub(super) struct Node {
    pub(super) span: Range<usize>,
    pub(super) kind: Kind,
}

#[derive(Debug, Clone)]
pub(super) enum Kind {
    String(String),
    Integer(i64),
    Float(f64),
    Bool(bool),
    Other(&'static str),
    Array(Vec<Node>),
    Table(Vec<Entry>),
}

#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) key: String,
    pub(super) key_span: Range<usize>,
    pub(super) node: Node,
}

impl Node {
    pub(super) fn type_name(&self) -> &'static str {
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

    pub(super) fn to_json(&self) -> Value {
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
    pub(super) fn as_cli_arg(&self, text: &str) -> Option<String> {
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
    pub(super) fn as_arg(&self) -> Option<String> {
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

pub(super) fn convert_table(t: &toml_edit::Table, outer: Range<usize>) -> Node {
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

pub(super) struct Ctx<'a> {
    pub(super) file: &'a str,
    pub(super) text: &'a str,
}

impl Ctx<'_> {
    pub(super) fn err(
        &self,
        at: usize,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> PlanError {
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

pub(super) fn unknown_fix(word: &str, choices: &[&str], what: &str) -> String {
    match closest(word, choices.iter().copied()) {
        Some(c) => format!("did you mean `{c}`? ({what}: {})", choices.join(", ")),
        None => format!("use one of {what}: {}", choices.join(", ")),
    }
}

pub(super) fn entries<'a>(
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

pub(super) fn string_of(ctx: &Ctx<'_>, e: &Entry) -> Result<String, PlanError> {
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
