//! `audiolat doctor`: every finding with a verdict, and no database written.

use crate::util::{machine_lock, not_root, run, run_json, tempdir};

#[test]
fn doctor_json_has_every_finding_with_verdicts() {
    // Its trace check mounts tracefs for a moment (when it is not): not beside a run's
    // trace session.
    let _m = machine_lock();
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

/// `trace.available`: a trace instance tried for real. As root it is made (the optional
/// tracepoints this kernel lacks named); as nobody the finding says why not and the fix.
#[test]
fn doctor_says_whether_the_kernel_can_be_traced_and_how_to_make_it_so() {
    if not_root("the trace check as root and as nobody needs root") {
        return;
    }
    let _m = machine_lock();
    let db = std::path::Path::new("unused.db");
    let v = run_json(db, &["doctor", "--json", "--steal-window", "100ms"]);
    let findings = v["findings"].as_array().unwrap();
    let trace = findings
        .iter()
        .find(|f| f["check"] == "trace.available")
        .unwrap_or_else(|| panic!("no trace.available: {v}"));
    assert_eq!(trace["verdict"], "ok", "{trace}");
    assert!(
        trace["value"]
            .as_str()
            .unwrap()
            .starts_with("the kernel can be traced"),
        "{trace}"
    );
    let text = run(db, &["doctor", "--steal-window", "100ms"]);
    assert!(
        text.stdout
            .lines()
            .any(|l| l.starts_with("  ok  trace.available")),
        "{}",
        text.stdout
    );

    let dir = tempdir();
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(crate::util::bin())
        .args(["doctor", "--steal-window", "100ms"])
        .current_dir(dir.path())
        .output()
        .expect("setpriv (util-linux)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let at = stdout
        .find("WARN  trace.available")
        .unwrap_or_else(|| panic!("{stdout}"));
    let lines: Vec<&str> = stdout[at..].lines().take(3).collect();
    assert!(lines[0].contains("needs root"), "{stdout}");
    assert!(
        lines[1]
            .trim_start()
            .starts_with("why: `audiolat jitter --why`"),
        "{stdout}"
    );
    assert!(
        lines[2]
            .trim_start()
            .starts_with("fix: run audiolat as root"),
        "{stdout}"
    );
}
