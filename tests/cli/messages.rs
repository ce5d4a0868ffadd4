//! The words of audiolat's messages, checked over its sources: no article put before a
//! word it cannot know ("a event run", "a 80 Mbit/s link"), and the texts the report
//! crate prints (under a probe's run, and again by `show` and a plan's summary, which
//! have none of the probe's flags) name a flag only with the command it belongs to.

use std::path::{Path, PathBuf};

/// Every `.rs` file of the binary and the library crates (tests aside).
fn sources() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![root.join("src")];
    for c in std::fs::read_dir(root.join("crates")).unwrap() {
        dirs.push(c.unwrap().path().join("src"));
    }
    let mut out = Vec::new();
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if p.is_dir() {
                if name != "tests" {
                    dirs.push(p);
                }
            } else if name.ends_with(".rs") && name != "tests.rs" && !name.ends_with("_tests.rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The string literals on a line of code (not a comment), roughly: what lies between
/// quotes.
fn literals(line: &str) -> Vec<&str> {
    let code = line.trim_start();
    if code.starts_with("//") || code.starts_with("#[cfg(test)]") {
        return Vec::new();
    }
    line.split('"').skip(1).step_by(2).collect()
}

/// "a {kind}" or "an {x}" in a message: the article depends on a word the code only
/// knows at run time (`a event-triggered cell`, `a 80 Mbit/s link`).
#[test]
fn no_message_puts_an_article_before_a_word_it_does_not_know() {
    let mut found = Vec::new();
    for file in sources() {
        let text = std::fs::read_to_string(&file).unwrap();
        // Stop at the file's unit tests: their assertion messages are not audiolat's.
        let code = text.split("\n#[cfg(test)]").next().unwrap();
        for (n, line) in code.lines().enumerate() {
            for lit in literals(line) {
                for article in ["a {", "an {"] {
                    let mut rest = lit;
                    while let Some(at) = rest.find(article) {
                        let before = rest[..at].chars().last();
                        let arg: String = rest[at + article.len()..]
                            .chars()
                            .take_while(|c| *c != '}')
                            .collect();
                        let placeholder = !arg.contains(' ');
                        if placeholder && before.is_none_or(|c| !c.is_alphanumeric()) {
                            found.push(format!("{}:{}: {lit}", file.display(), n + 1));
                        }
                        rest = &rest[at + article.len()..];
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "articles before words the code does not know:\n{}",
        found.join("\n")
    );
}

/// The report crate's texts are printed under a probe's run and again by `show` and a
/// plan's summary, which have none of the probe's flags: a flag they name is in a
/// backquoted `audiolat PROBE --flag`, so it is clear whose it is, except in the few
/// texts only the command that has the flag prints (listed here with it).
#[test]
fn the_reports_texts_name_a_flag_with_its_command() {
    // (file, flag): printed only by a command that has the flag.
    let own = [
        ("min_buffer.rs", "--period"), // roundtrip --find-min-buffer
        ("plan.rs", "--dry-run"),      // run, reproduce
        ("experiment.rs", "--link"),   // net experiment
        ("plan.rs", "--resume"),       // run, reproduce: `audiolat --db FILE run PLAN --resume N`
        ("plan.rs", "--db"),           // every command
        ("gates.rs", "--fail-if"),     // the report's Gates section: where its gates came from
    ];
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/report/src");
    let mut found = Vec::new();
    for file in sources().into_iter().filter(|f| f.starts_with(&root)) {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("\n#[cfg(test)]").next().unwrap();
        for (n, line) in code.lines().enumerate() {
            // CSS custom properties (`var(--fg)`, `--ok: #1b7f2a`) are no flags.
            if line.contains("var(--") || line.contains(": #") || line.contains("<style") {
                continue;
            }
            for lit in literals(line) {
                for (i, part) in lit.split('`').enumerate() {
                    if i % 2 == 1 && part.starts_with("audiolat ") {
                        continue;
                    }
                    let mut rest = part;
                    while let Some(at) = rest.find("--") {
                        let flag: String = rest[at + 2..]
                            .chars()
                            .take_while(|c| c.is_ascii_lowercase() || *c == '-')
                            .collect();
                        let before = rest[..at].chars().last();
                        rest = &rest[at + 2 + flag.len()..];
                        if flag.is_empty() || before.is_some_and(|c| c.is_alphanumeric()) {
                            continue;
                        }
                        let flag = format!("--{flag}");
                        if own.contains(&(name.as_str(), flag.as_str())) {
                            continue;
                        }
                        found.push(format!("{}:{}: {flag} in {lit}", file.display(), n + 1));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "flags named without their command:\n{}",
        found.join("\n")
    );
}

/// A float in a message is written through one function: no float noise
/// (`0.0000010000000000000002 ms` for a nanosecond's spacing).
#[test]
fn a_number_in_a_message_has_no_float_noise() {
    let (_dir, db) = crate::util::temp_db("noise.db");
    let out = crate::util::run(&db, &["event", "--backend", "virtual", "--spacing", "1ns"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(
        out.stderr,
        "audiolat: error: --spacing 0.000001 ms is too short for --note 30 ms: notes need silence between them, use at least 45 ms\n"
    );
    assert!(!db.exists(), "nothing stored");
}
