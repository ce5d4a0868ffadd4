//! A database written by an earlier release opens and renders the same: every view of
//! `tests/fixtures/release-98e376a/audiolat.db` (runs, groups, `show` as text and JSON,
//! each export, compare, the reports with their HTML) printed by this build equals what
//! that release printed. The fixture was made by the release at commit 98e376a (a suite,
//! an interrupted jitter run, a net respond/emulate pair, an event run whose server was
//! killed, a four-cell plan); its README says how. The goldens are that release's output:
//! never re-made with a newer build (that would make the test assert nothing).

use std::path::{Path, PathBuf};

use crate::util::{bin, output};

/// The fixture's directory.
fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/release-98e376a")
}

/// What a command printed, in the form the goldens keep: its standard output, then its
/// standard error and exit code when either says something.
fn printed(out: &crate::util::Output) -> String {
    let mut text = out.stdout.clone();
    if !out.stderr.is_empty() {
        text.push_str("--- stderr\n");
        text.push_str(&out.stderr);
    }
    if out.code != 0 {
        text.push_str(&format!("--- exit {}\n", out.code));
    }
    text
}

/// What differs between two renderings of one database and is not the database's: the
/// output directory and the line saying when and by which build a report was made.
fn normalised(text: &str, out_dir: &Path) -> String {
    let text = text.replace(&out_dir.display().to_string(), "OUT");
    let mut kept = String::with_capacity(text.len());
    let mut rest = text.as_str();
    const MADE: &str = "report made ";
    while let Some(at) = rest.find(MADE) {
        kept.push_str(&rest[..at + MADE.len()]);
        rest = &rest[at + MADE.len()..];
        // "2026-11-29T08:36:06.659Z by audiolat 0.1.0 (98e376ab6e73)"
        let end = rest.find(')').map_or(rest.len(), |e| e + 1);
        kept.push_str("WHEN by BUILD");
        rest = &rest[end..];
    }
    kept.push_str(rest);
    kept
}

#[test]
fn a_database_written_by_the_previous_release_renders_the_same() {
    let dir = crate::util::tempdir();
    let db = dir.path().join("audiolat.db");
    std::fs::copy(fixture().join("audiolat.db"), &db).unwrap();
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    // `AUDIOLAT_BLESS_WITH=<the release's binary>` writes the goldens from that binary; only
    // the release that wrote the database may make them.
    let bless = std::env::var_os("AUDIOLAT_BLESS_WITH").map(PathBuf::from);
    let binary = bless.clone().unwrap_or_else(bin);
    // The build a report names ("report made WHEN by audiolat 0.1.0 (98e376ab6e73)").
    let mut made_by_the_release = false;
    let commands = std::fs::read_to_string(fixture().join("commands")).unwrap();
    let mut differ = Vec::new();
    let mut checked = 0;
    for line in commands.lines().filter(|l| !l.starts_with('#')) {
        let (golden, args) = line.split_once(' ').unwrap();
        let text = if let Some(file) = args.strip_prefix('@') {
            let path = file.replacen("OUT", &out_dir.display().to_string(), 1);
            std::fs::read_to_string(&path).unwrap_or_else(|e| format!("{path}: {e}"))
        } else {
            let out_arg = out_dir.display().to_string();
            let args: Vec<String> = args
                .split(' ')
                .map(|a| a.replacen("OUT", &out_arg, 1))
                .collect();
            let mut cmd = std::process::Command::new(&binary);
            cmd.arg("--db")
                .arg(&db)
                .args(&args)
                .env("TZ", "UTC")
                .stdin(std::process::Stdio::null());
            printed(&output(&mut cmd))
        };
        made_by_the_release |= text.contains("by audiolat 0.1.0 (98e376a");
        let text = normalised(&text, &out_dir);
        let golden_path = fixture().join("golden").join(golden);
        if bless.is_some() {
            std::fs::create_dir_all(golden_path.parent().unwrap()).unwrap();
            std::fs::write(&golden_path, &text).unwrap();
            continue;
        }
        checked += 1;
        let want = std::fs::read_to_string(&golden_path).unwrap();
        if text != want {
            let first = text
                .lines()
                .zip(want.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| text.lines().count().min(want.lines().count()));
            differ.push(format!(
                "{golden} (`audiolat {args}`), line {}:\n  now:  {}\n  then: {}",
                first + 1,
                text.lines().nth(first).unwrap_or("<end>"),
                want.lines().nth(first).unwrap_or("<end>")
            ));
        }
    }
    assert!(
        bless.is_none() || made_by_the_release,
        "only the release that wrote the database (98e376a) may make the goldens"
    );
    assert!(
        differ.is_empty(),
        "{} of {checked} views differ from the release's:\n{}",
        differ.len(),
        differ.join("\n")
    );
    assert!(bless.is_some() || checked > 150, "{checked} views checked");
}
