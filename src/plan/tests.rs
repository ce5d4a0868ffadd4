//! The plan checked by the real CLI: clap's flags (what a plan's refusals look like is
//! the CLI tests' `plan_checks`).

use super::*;

#[test]
fn every_preset_parses_and_expands_in_both_variants() {
    for preset in runner::presets::Preset::all() {
        for quick in [false, true] {
            let text = preset.text(quick);
            let name = preset.name();
            let plan = parse(&text, &format!("preset {name}")).unwrap_or_else(|e| panic!("{e}"));
            // The probes' own checks need the machine (tools, servers): only clap's here.
            let cells = plan
                .cells(&|c| CliCells::parse(c).map(|_| ()))
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(!cells.is_empty());
        }
    }
}

#[test]
fn only_probes_with_a_status_line_take_quiet() {
    use runner::plan::CellChecker;
    assert!(CliCells::default().takes_quiet("event"));
    assert!(!CliCells::default().takes_quiet("no-such-probe"));
}
