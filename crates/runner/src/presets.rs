//! The studies' plans, shipped with the tool (`audiolat reproduce NAME [--quick]` runs
//! them; the net experiments read theirs through [`ExperimentDesign::from_preset`]).
//!
//! Each preset is one TOML plan (in `presets/`), the full design. Lines that end in
//! `# quick: VALUE` take that value in the few-minute variant, so both variants are one
//! file and `--print` shows exactly what runs.
//!
//! [`ExperimentDesign::from_preset`]: crate::experiment::ExperimentDesign::from_preset

/// (name, plan text).
const PRESETS: [(&str, &str); 5] = [
    ("bbb2014", include_str!("../../../presets/bbb2014.toml")),
    (
        "macmillan2001",
        include_str!("../../../presets/macmillan2001.toml"),
    ),
    (
        "tessellation2013",
        include_str!("../../../presets/tessellation2013.toml"),
    ),
    (
        "tessellation2013-bandwidth",
        include_str!("../../../presets/tessellation2013-bandwidth.toml"),
    ),
    (
        "latencytest1999",
        include_str!("../../../presets/latencytest1999.toml"),
    ),
];

/// The presets' names.
pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|(n, _)| *n).collect()
}

/// A preset's plan text, full or quick.
pub fn text(name: &str, quick: bool) -> Option<String> {
    let full = PRESETS.iter().find(|(n, _)| *n == name)?.1;
    if !quick {
        return Some(full.to_string());
    }
    let mut out = String::with_capacity(full.len());
    for line in full.lines() {
        match quick_line(line) {
            Some(l) => out.push_str(&l),
            None => out.push_str(line),
        }
        out.push('\n');
    }
    Some(out)
}

/// Where a preset's plan comes from, as its errors and its plan run name it:
/// `preset NAME`, `preset NAME --quick` ([`Plan::rerun_command`] reads it back).
///
/// [`Plan::rerun_command`]: crate::plan::Plan::rerun_command
pub fn source(name: &str, quick: bool) -> String {
    format!("preset {name}{}", if quick { " --quick" } else { "" })
}

/// `key = full   # quick: q` -> `key = q   # full: full`.
fn quick_line(line: &str) -> Option<String> {
    let (code, quick) = line.split_once("# quick:")?;
    let (key, full) = code.split_once('=')?;
    Some(format!(
        "{}= {}  # full: {}",
        key,
        quick.trim(),
        full.trim()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_lines_swap_their_values_and_keep_the_full_one_in_a_comment() {
        assert_eq!(
            quick_line("repeats = 5    # quick: 1").as_deref(),
            Some("repeats = 1  # full: 5")
        );
        assert_eq!(quick_line("repeats = 5"), None);
        let quick = text("bbb2014", true).unwrap();
        assert!(quick.contains("name = \"bbb2014-quick\""));
        assert!(quick
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .all(|l| !l.contains("# quick:")));
    }

    #[test]
    fn a_presets_source_names_its_variant() {
        assert_eq!(source("bbb2014", false), "preset bbb2014");
        assert_eq!(source("bbb2014", true), "preset bbb2014 --quick");
    }
}
