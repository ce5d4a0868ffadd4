//! `audiolat doctor`: every finding with a verdict, and no database written.

use crate::util::run_json;

#[test]
fn doctor_json_has_every_finding_with_verdicts() {
    let v = run_json(
        std::path::Path::new("unused.db"),
        &["doctor", "--json", "--steal-window", "100ms"],
    );
    let findings = v["findings"].as_array().unwrap();
    assert!(findings.len() >= 20);
    for f in findings {
        assert!(
            ["ok", "warn", "fail"].contains(&f["verdict"].as_str().unwrap()),
            "{f}"
        );
    }
    let n = |k: &str| v["counts"][k].as_u64().unwrap();
    assert_eq!((n("ok") + n("warn") + n("fail")) as usize, findings.len());
    assert!(v["machine"]["kernel_release"].is_string());
    assert!(
        !std::path::Path::new("unused.db").exists(),
        "doctor must not write a database"
    );
}
