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

/// A shipped preset, named on the command line (`FromStr`: its name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    name: &'static str,
    text: &'static str,
}

/// A name that is no shipped preset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a study audiolat reproduces: use {names}", names = names().join(", "))]
pub struct UnknownPreset(pub String);

impl std::str::FromStr for Preset {
    type Err = UnknownPreset;

    fn from_str(s: &str) -> Result<Preset, UnknownPreset> {
        Preset::all()
            .find(|p| p.name == s)
            .ok_or_else(|| UnknownPreset(s.to_string()))
    }
}

impl Preset {
    /// Every shipped preset.
    pub fn all() -> impl Iterator<Item = Preset> {
        PRESETS.iter().map(|&(name, text)| Preset { name, text })
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        self.name
    }

    /// Its plan text, full or quick.
    pub fn text(self, quick: bool) -> String {
        if !quick {
            return self.text.to_string();
        }
        let mut out = String::with_capacity(self.text.len());
        for line in self.text.lines() {
            match quick_line(line) {
                Some(l) => out.push_str(&l),
                None => out.push_str(line),
            }
            out.push('\n');
        }
        out
    }

    /// Where its plan comes from, as its errors and its plan run name it:
    /// `preset NAME`, `preset NAME --quick` ([`Plan::rerun_command`] reads it back).
    ///
    /// [`Plan::rerun_command`]: crate::plan::Plan::rerun_command
    pub fn source(self, quick: bool) -> String {
        format!(
            "preset {}{}",
            self.name,
            if quick { " --quick" } else { "" }
        )
    }
}

/// The presets' names.
fn names() -> Vec<&'static str> {
    Preset::all().map(Preset::name).collect()
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
        let quick = "bbb2014".parse::<Preset>().unwrap().text(true);
        assert!(quick.contains("name = \"bbb2014-quick\""));
        assert!(quick
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .all(|l| !l.contains("# quick:")));
    }

    #[test]
    fn a_preset_is_parsed_from_its_name_and_its_source_names_its_variant() {
        let bbb: Preset = "bbb2014".parse().unwrap();
        assert_eq!(bbb.name(), "bbb2014");
        assert_eq!(bbb.source(false), "preset bbb2014");
        assert_eq!(bbb.source(true), "preset bbb2014 --quick");
        assert_eq!(Preset::all().count(), 5);
        let e = "bbb2015".parse::<Preset>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "'bbb2015' is not a study audiolat reproduces: use bbb2014, macmillan2001, tessellation2013, tessellation2013-bandwidth, latencytest1999"
        );
    }
}
