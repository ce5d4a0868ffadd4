//! The code's shape, checked from its text: what `docs/architecture.md` promises about
//! how the crates' modules depend on each other and where a probe's identity lives.
//!
//! - The modules of `engine`, `report` and `results` import each other in no loop: the
//!   graph of each crate's modules, an arrow for every path one module names in another
//!   (`use`, `crate::`, `super::`, a child's name), has no cycle. A module declaring a
//!   child (`mod x;`) is no arrow; the crate root (`lib.rs`, the crate's facade of
//!   re-exports) is left out, and a path through its re-exports (`crate::RunView`) is an
//!   arrow to the module it re-exports (`view`). The loops still to untie would be listed,
//!   to shrink; a listed loop that is gone fails until it leaves the list.
//! - No probe's or backend's name is compared as a string literal (`== "x"`, `"x" =>`,
//!   `matches!`) outside the model's parse (`results::probe_kind`,
//!   `results::stored_backend`, `engine::backend::kind`, and `--server`'s modes in
//!   `engine::jack::server`). A text scan: it sees a literal beside the operator, not
//!   every form (`Some("x") =>` is not caught).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate's modules: module path (`jack::server`) -> its source, test code cut off.
fn modules(krate: &str) -> BTreeMap<String, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates")
        .join(krate)
        .join("src");
    let mut files = Vec::new();
    collect(&root, &mut files);
    let mut out = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&root).unwrap().with_extension("");
        let mut parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
            parts.pop();
        }
        let name = parts.join("::");
        if parts
            .iter()
            .any(|p| p == "tests" || p.ends_with("_tests") || p == "main")
        {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        out.insert(name, without_tests(&text));
    }
    out
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// A module's text without its `#[cfg(test)]` items and its comments.
fn without_tests(text: &str) -> String {
    let mut out = String::new();
    let mut skip_next_item = false;
    let mut depth = 0i32;
    let mut skipping = false;
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        if skipping {
            depth += code.matches('{').count() as i32 - code.matches('}').count() as i32;
            if depth <= 0 && (code.contains('}') || code.trim_end().ends_with(';')) {
                skipping = false;
            }
            continue;
        }
        if code.trim() == "#[cfg(test)]" {
            skip_next_item = true;
            continue;
        }
        if skip_next_item {
            skip_next_item = false;
            if code.trim_start().starts_with('#') {
                skip_next_item = true;
                continue;
            }
            depth = code.matches('{').count() as i32 - code.matches('}').count() as i32;
            skipping = depth > 0 || !code.trim_end().ends_with(';');
            continue;
        }
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// Every path the text names from `use` statements (braces expanded) and from code
/// (`crate::a::b`, `super::x`), as written.
fn paths(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = text;
    // `use` statements, braces expanded.
    while let Some(at) = find_use(rest) {
        let after = &rest[at..];
        let end = after.find(';').unwrap_or(after.len());
        let body = &after[after.find("use ").unwrap() + 4..end];
        expand(&without_renames(body), &[], &mut out);
        rest = &after[end..];
    }
    // Paths in code.
    let bytes = text.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b':';
    let mut i = 0;
    while i < bytes.len() {
        if !text.is_char_boundary(i) {
            i += 1;
            continue;
        }
        let rest = &text[i..];
        let at_start = i == 0 || !ident(bytes[i - 1]);
        if at_start
            && (rest.starts_with("crate::")
                || rest.starts_with("super::")
                || rest.starts_with("self::"))
        {
            let len = rest.bytes().position(|b| !ident(b)).unwrap_or(rest.len());
            out.push(
                rest[..len]
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect(),
            );
            i += len;
        } else {
            i += 1;
        }
    }
    out
}

/// The byte offset of the next `use` statement (`use` or `pub use` or `pub(crate) use`
/// at a line's start).
fn find_use(text: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        let t = t
            .strip_prefix("pub(crate) ")
            .or_else(|| t.strip_prefix("pub(super) "))
            .or_else(|| t.strip_prefix("pub "))
            .unwrap_or(t);
        if t.starts_with("use ") {
            return Some(offset + line.find("use ").unwrap());
        }
        offset += line.len();
    }
    None
}

/// A `use` body without its whitespace and its renames (`a::{b as c, d}` as
/// `a::{b,d}`).
fn without_renames(body: &str) -> String {
    let mut out = String::new();
    let mut tokens = body.split_whitespace();
    while let Some(t) = tokens.next() {
        if t == "as" {
            // The new name goes; what follows it (`,` `}`) stays.
            if let Some(renamed) = tokens.next() {
                out.push_str(renamed.trim_start_matches(|c: char| c.is_alphanumeric() || c == '_'));
            }
        } else {
            out.push_str(t);
        }
    }
    out
}

/// `a::{b, c::{d, e}}` as `a::b`, `a::c::d`, `a::c::e` (after `prefix`).
fn expand(body: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let body = body.trim_start_matches("::");
    match body.find('{') {
        None => {
            let mut path = prefix.to_vec();
            path.extend(
                body.split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
            );
            out.push(path);
        }
        Some(open) => {
            let mut path = prefix.to_vec();
            path.extend(
                body[..open]
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
            );
            let inner = &body[open + 1..body.rfind('}').unwrap_or(body.len())];
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        expand(&inner[start..i], &path, out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            if start < inner.len() {
                expand(&inner[start..], &path, out);
            }
        }
    }
}

/// The children a module declares (`mod x;`, `pub mod x;`).
fn children(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| {
            let t = l.trim();
            let t = t
                .strip_prefix("pub(crate) ")
                .or_else(|| t.strip_prefix("pub "))
                .unwrap_or(t);
            let name = t.strip_prefix("mod ")?.trim_end_matches(';').trim();
            t.ends_with(';').then(|| name.to_string())
        })
        .collect()
}

/// Each module's arrows to the other modules of its crate.
fn graph(krate: &str) -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules(krate);
    let known: BTreeSet<&String> = modules.keys().collect();
    // What the crate root re-exports (`pub use view::RunView;`): an arrow to
    // `crate::RunView` is an arrow to `view`.
    let reexports: BTreeMap<String, Vec<String>> = modules
        .get("")
        .map(|root| {
            paths(root)
                .into_iter()
                .filter(|p| p.len() > 1 && known.contains(&p[0]))
                .map(|p| (p.last().unwrap().clone(), p[..p.len() - 1].to_vec()))
                .collect()
        })
        .unwrap_or_default();
    let mut graph = BTreeMap::new();
    for (name, text) in &modules {
        let here: Vec<String> = if name.is_empty() {
            Vec::new()
        } else {
            name.split("::").map(str::to_string).collect()
        };
        let kids = children(text);
        let mut arrows = BTreeSet::new();
        for path in paths(text) {
            let mut abs: Vec<String> = match path.first().map(String::as_str) {
                Some("crate") => path[1..].to_vec(),
                Some("self") => here.iter().chain(&path[1..]).cloned().collect(),
                Some("super") => {
                    let mut base = here.clone();
                    let mut rest = &path[..];
                    while rest.first().is_some_and(|s| s == "super") {
                        base.pop();
                        rest = &rest[1..];
                    }
                    base.into_iter().chain(rest.iter().cloned()).collect()
                }
                Some(first) if kids.contains(first) => here.iter().chain(&path).cloned().collect(),
                _ => continue,
            };
            if let Some(module) = abs.first().and_then(|first| reexports.get(first)) {
                if !known.contains(&abs[0]) {
                    abs = module.clone();
                }
            }
            // The longest prefix that is a module of the crate.
            while !abs.is_empty() && !known.contains(&abs.join("::")) {
                abs.pop();
            }
            let target = abs.join("::");
            // The crate root is the crate's facade; a module's own children are its parts.
            if target.is_empty() || target == *name {
                continue;
            }
            arrows.insert(target);
        }
        graph.insert(name.clone(), arrows);
    }
    graph.remove("");
    graph
}

/// A cycle of the graph, if it has one (as the modules along it).
/// The graph's strongly connected components of more than one module: each is a set
/// of modules every one of which imports, directly or through others, every other.
fn loops(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    // Reachability by depth-first search from each module (the graphs are small).
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(n) = todo.pop() {
            for next in graph.get(&n).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|n| (n, reach(n))).collect();
    let mut out: Vec<BTreeSet<String>> = Vec::new();
    for n in graph.keys() {
        if out.iter().any(|c| c.contains(n)) || !reached[n].contains(n) {
            continue;
        }
        let component: BTreeSet<String> = reached[n]
            .iter()
            .filter(|m| reached.get(*m).is_some_and(|r| r.contains(n)))
            .cloned()
            .collect();
        out.push(component);
    }
    out
}

/// The loops of `krate` not inside one of `known` (each a set of modules still to untie:
/// a loop may shrink, never grow or appear).
fn new_loops(krate: &str, known: &[&[&str]]) -> Vec<String> {
    let graph = graph(krate);
    let found = loops(&graph);
    // A listed loop that is gone leaves the list, so that it cannot come back unseen.
    let gone = known.iter().filter(|k| {
        !found
            .iter()
            .any(|c| c.iter().any(|m| k.contains(&m.as_str())))
    });
    let gone: Vec<String> = gone
        .map(|k| format!("{krate}: the loop {k:?} is gone: take it off the list"))
        .collect();
    found
        .into_iter()
        .filter(|c| {
            !known
                .iter()
                .any(|k| c.iter().all(|m| k.contains(&m.as_str())))
        })
        .map(|c| {
            let first = c.iter().next().unwrap().clone();
            let path = cycle_through(&graph, &first, &c).join(" -> ");
            format!(
                "{krate}: {{{}}}, e.g. {path}",
                c.into_iter().collect::<Vec<_>>().join(", ")
            )
        })
        .chain(gone)
        .collect()
}

/// A shortest cycle from `start` back to it inside `within`.
fn cycle_through(
    graph: &BTreeMap<String, BTreeSet<String>>,
    start: &str,
    within: &BTreeSet<String>,
) -> Vec<String> {
    let mut parent: BTreeMap<String, String> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start.to_string()]);
    while let Some(n) = queue.pop_front() {
        for next in graph
            .get(&n)
            .into_iter()
            .flatten()
            .filter(|m| within.contains(*m))
        {
            if next == start {
                let mut path = vec![start.to_string(), n.clone()];
                let mut at = n.clone();
                while let Some(p) = parent.get(&at) {
                    path.push(p.clone());
                    at = p.clone();
                }
                path.reverse();
                path.insert(0, start.to_string());
                path.pop();
                path.push(start.to_string());
                path.dedup();
                return path;
            }
            if !parent.contains_key(next) && next != start {
                parent.insert(next.clone(), n.clone());
                queue.push_back(next.clone());
            }
        }
    }
    vec![start.to_string()]
}

#[test]
fn the_modules_of_engine_report_and_results_import_each_other_in_no_loop() {
    let mut problems = Vec::new();
    for (krate, known) in [
        ("engine", ENGINE_LOOPS),
        ("report", REPORT_LOOPS),
        ("results", RESULTS_LOOPS),
    ] {
        problems.extend(new_loops(krate, known));
    }
    assert!(
        problems.is_empty(),
        "module loops:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_checker_finds_a_loop_and_reads_grouped_imports() {
    assert_eq!(
        without_renames("crate::{phase as p, a::{b as c, d}}"),
        "crate::{phase,a::{b,d}}"
    );
    let mut out = Vec::new();
    expand("crate::a::{b,c::{d,e}}", &[], &mut out);
    let joined: Vec<String> = out.iter().map(|p| p.join("::")).collect();
    assert_eq!(joined, ["crate::a::b", "crate::a::c::d", "crate::a::c::e"]);
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["c".to_string()]));
    g.insert("c".to_string(), BTreeSet::from(["a".to_string()]));
    g.insert("d".to_string(), BTreeSet::from(["a".to_string()]));
    let found = loops(&g);
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0],
        BTreeSet::from(["a".into(), "b".into(), "c".into()])
    );
    assert_eq!(cycle_through(&g, "a", &found[0]), ["a", "b", "c", "a"]);
    g.get_mut("c").unwrap().clear();
    assert!(loops(&g).is_empty());
    let text = "use super::x;\n#[cfg(test)]\nmod tests {\n    use crate::y;\n}\n";
    assert!(!without_tests(text).contains("crate::y"));
}

// The loops still to untie (issue 31), each a set of modules: a loop may shrink (drop its
// modules from here as they leave it), never grow or appear.

const ENGINE_LOOPS: &[&[&str]] = &[];

const REPORT_LOOPS: &[&[&str]] = &[];

const RESULTS_LOOPS: &[&[&str]] = &[];

/// Lines of the workspace's non-test code (`file:line: text`) that compare one of
/// `names` as a string literal (`== "x"`, `"x" =>`, `matches!(.., "x" ..)`), outside the
/// files of `parse` (the model's parse of the names).
fn compared_names(names: &[&str], parse: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    collect(&root.join("src"), &mut files);
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        collect(&entry.unwrap().path().join("src"), &mut files);
    }
    let mut out = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let name = file.file_name().unwrap().to_string_lossy();
        if parse.iter().any(|p| rel.starts_with(p))
            || name.ends_with("tests.rs")
            || rel.contains("/tests/")
        {
            continue;
        }
        let text = without_tests(&std::fs::read_to_string(&file).unwrap());
        for (n, line) in text.lines().enumerate() {
            for name in names {
                let lit = format!("\"{name}\"");
                let Some(at) = line.find(&lit) else { continue };
                let before = line[..at].trim_end();
                let after = line[at + lit.len()..].trim_start();
                if before.ends_with("==")
                    || before.ends_with("!=")
                    || after.starts_with("==")
                    || after.starts_with("!=")
                    || after.starts_with("=>")
                    || after.starts_with('|')
                    || before.ends_with('|')
                    || (line.contains("matches!(") && before.contains("matches!("))
                {
                    out.push(format!("{rel}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    out
}

#[test]
fn no_probe_name_is_compared_outside_the_models_parse() {
    let found = compared_names(
        &["jitter", "event", "roundtrip", "net", "doctor"],
        &["crates/results/src/probe_kind/"],
    );
    assert!(
        found.is_empty(),
        "probe names compared as strings:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_backend_name_is_compared_outside_the_models_parse() {
    let found = compared_names(
        &["jack", "alsa", "pipewire", "virtual"],
        &[
            "crates/engine/src/backend/kind.rs",
            "crates/results/src/stored_backend.rs",
            // `--server`'s modes (`dummy`, `pipewire`): the parse of that flag's values.
            "crates/engine/src/jack/server.rs",
        ],
    );
    assert!(
        found.is_empty(),
        "backend names compared as strings:\n{}",
        found.join("\n")
    );
}

/// Engine writes a backend's name; the model reads it back with the same answers.
#[test]
fn the_stored_backend_reads_back_what_engine_writes() {
    use engine::backend::BackendKind;
    use results::stored_backend::StoredBackend;
    for kind in [
        BackendKind::Jack,
        BackendKind::Alsa,
        BackendKind::Virtual,
        BackendKind::Pipewire,
    ] {
        let stored = StoredBackend::parse(kind.name());
        assert_ne!(stored, StoredBackend::Other(kind.name().into()), "{kind}");
        assert_eq!(stored.name(), kind.name());
        assert_eq!(stored.is_server_client(), kind.is_server_client(), "{kind}");
        assert_eq!(stored.has_device_grant(), kind.has_device_grant(), "{kind}");
    }
}

/// How many JSON keys a module reads (or writes) by string: `x["key"]`, `.get("key")`,
/// `.contains_key("key")`.
fn key_strings(text: &str) -> usize {
    ["[\"", ".get(\"", "contains_key(\""]
        .iter()
        .map(|open| keys_after(text, open))
        .sum()
}

fn keys_after(text: &str, open: &str) -> usize {
    let close = if open == "[\"" { "\"]" } else { "\")" };
    let mut n = 0;
    let mut rest = text;
    while let Some(at) = rest.find(open) {
        rest = &rest[at + open.len()..];
        let end = rest.find('"').unwrap_or(rest.len());
        let key = &rest[..end];
        if !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            && rest[end..].starts_with(close)
        {
            n += 1;
        }
    }
    n
}

/// The report reads what a run stored as records (`results::records`), not by key: no
/// probe's configuration, result, flags, real-time settings, load, devices or bench are
/// read by a key string anywhere in `report` outside its tests. What is still read by key
/// is listed here, each module with its count, and the list may only shrink (a module
/// whose count falls must lower it): the plan file's JSON (`paper`, `data`, `html`), the
/// cell plan `qos` grants (`view::net`), events' and measurements' `detail`
/// (`figures::marks`, `view::jitter`, `view::net`, `view::fresh`), a group's detail
/// (`view::stored`, `gather`), JSON documents the report writes (`view::gates`,
/// `view::stored`), and the validity flags the HTML runs table goes through by name so
/// that a flag it does not know still shows (`html`: `flag_doubt`, `validity_cell`).
#[test]
fn the_report_reads_records_not_json_keys() {
    const STILL_BY_KEY: &[(&str, usize)] = &[
        ("data", 8),
        ("figures::marks", 4),
        ("gather", 1),
        ("html", 6),
        ("paper", 16),
        ("view::fresh", 2),
        ("view::gates", 2),
        ("view::jitter", 2),
        ("view::net", 18),
        ("view::stored", 3),
    ];
    let found: BTreeMap<String, usize> = modules("report")
        .into_iter()
        .filter(|(name, _)| name != "net_fixtures")
        .map(|(name, text)| (name, key_strings(&text)))
        .filter(|(_, n)| *n > 0)
        .collect();
    let listed: BTreeMap<String, usize> = STILL_BY_KEY
        .iter()
        .map(|(m, n)| (m.to_string(), *n))
        .collect();
    assert_eq!(
        found, listed,
        "JSON keys read by string in report's modules (left) against the list (right): read a \
         record's fields instead, and lower a count that fell"
    );
    assert_eq!(key_strings(r#"a["x_1"] b["Y"] c["k"]["j"] d[" e"]"#), 3);
    assert_eq!(
        key_strings(r#"m.get("k") m.contains_key("j") m.get(&k) v.get("A")"#),
        2
    );
}
