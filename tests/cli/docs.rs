//! `audiolat completions` and `audiolat man`, and `scripts/install-docs`, which the
//! README's set-up runs: the scripts are made from the commands' own definitions.

use std::process::Command;

use crate::util::*;

/// The visible commands, as `audiolat --help` lists them.
fn commands() -> Vec<String> {
    let (_dir, db) = temp_db("a.db");
    let help = run(&db, &["--help"]);
    assert_eq!(help.code, 0, "{}", help.stderr);
    let list = help
        .stdout
        .split("Commands:")
        .nth(1)
        .expect("a command list");
    let list = list.split("Options:").next().unwrap_or(list);
    let names: Vec<String> = list
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(str::to_string)
        .collect();
    assert!(names.len() >= 15, "{names:?}");
    names
}

/// The set-up's script installs a bash completion that completes the commands and a
/// command's flags in a real bash, the zsh and fish scripts, and a manual page per
/// command that names its flags.
#[test]
fn install_docs_puts_working_completions_and_a_page_per_command_in_place() {
    let home = tempdir();
    let out = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/install-docs"))
        .arg(bin())
        .env("HOME", home.path())
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .expect("running scripts/install-docs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let data = home.path().join(".local/share");
    let bash = data.join("bash-completion/completions/audiolat");
    // Complete `audiolat ji` and `audiolat jitter --dur` as bash would at the prompt.
    let complete = |words: &str| {
        let script = format!(
            "source '{}'; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             _audiolat audiolat \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            bash.display()
        );
        let out = Command::new("bash")
            .arg("-c")
            .arg(script)
            .output()
            .expect("bash");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(complete("audiolat ji").trim(), "jitter");
    assert!(complete("audiolat jitter --dur")
        .lines()
        .any(|l| l == "--duration"));
    let zsh = std::fs::read_to_string(data.join("zsh/site-functions/_audiolat")).unwrap();
    assert!(
        zsh.starts_with("#compdef audiolat"),
        "{}",
        &zsh[..80.min(zsh.len())]
    );
    let fish = home.path().join(".config/fish/completions/audiolat.fish");
    let fish = std::fs::read_to_string(fish).unwrap();
    assert!(fish.contains("__fish_audiolat_using_subcommand jitter\" -s D -l duration"));

    let man = data.join("man/man1");
    for name in commands() {
        let page = man.join(format!("audiolat-{name}.1"));
        let text =
            std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
        assert!(text.contains(&format!(".TH audiolat-{name} 1")), "{name}");
    }
    let jitter = std::fs::read_to_string(man.join("audiolat-jitter.1")).unwrap();
    assert!(
        jitter.contains("\\-\\-duration"),
        "the page names the flags"
    );
}

/// `audiolat man` prints the main page, which lists every command; a shell audiolat
/// does not know is refused in one line (exit 2).
#[test]
fn man_prints_the_main_page_and_an_unknown_shell_is_refused() {
    let (_dir, db) = temp_db("a.db");
    let out = run(&db, &["man"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains(".TH audiolat 1"), "{}", out.stdout);
    for name in commands() {
        assert!(
            out.stdout.contains(&format!("audiolat\\-{name}(1)")),
            "{name}"
        );
    }
    let refused = run(&db, &["completions", "tcsh"]);
    assert_eq!(refused.code, 2);
    assert!(
        refused.stderr.contains("possible values: bash"),
        "{}",
        refused.stderr
    );
    assert_eq!(
        refused.stderr.trim().lines().count(),
        1,
        "{}",
        refused.stderr
    );
    assert!(!db.exists(), "nothing was stored");
}
