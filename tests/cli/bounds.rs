//! Sizes the user types are bounded before anything is allocated or stored: the
//! commands issue 30 found allocating 16 GiB, running for ever or storing a `failed` run
//! for input that could never run are one line naming the flag and its range, exit 2,
//! nothing stored. (Every numeric flag at its extremes, walked from clap's definitions,
//! is the binary's unit test `cli::bounds_tests`.)

use std::os::unix::process::CommandExt;

use crate::util::{self, machine_lock, run, temp_db, DummyJackd, Output};

/// Runs audiolat with its address space limited, so a size that slipped through fails
/// this test (an allocation refused) instead of the machine.
fn run_limited(db: &std::path::Path, args: &[&str]) -> Output {
    let mut cmd = util::command(db, args);
    // SAFETY: setrlimit is async-signal-safe; the child only execs after it.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 8 << 30,
                rlim_max: 8 << 30,
            };
            libc::setrlimit(libc::RLIMIT_AS, &limit);
            Ok(())
        });
    }
    util::output(&mut cmd)
}

/// A refusal: exit 2, one line naming `flag` with `range`, nothing printed or stored.
fn assert_refused(args: &[&str], out: &Output, flag: &str, range: &str, db: &std::path::Path) {
    assert_eq!(out.code, 2, "{args:?}: {out:?}");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: not one line: {:?}", out.stderr);
    assert!(
        lines[0].starts_with("audiolat: error: "),
        "{args:?}: {}",
        lines[0]
    );
    assert!(lines[0].contains(flag), "{args:?}: no {flag}: {}", lines[0]);
    assert!(
        lines[0].contains(range),
        "{args:?}: no {range:?}: {}",
        lines[0]
    );
    assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
    assert!(!db.exists(), "{args:?} created the database");
}

#[test]
fn sizes_out_of_range_are_refused_before_anything_is_allocated_or_stored() {
    let (dir, db) = temp_db("b.db");
    let cases: &[(&[&str], &str, &str)] = &[
        (
            &["bench", "--period", "4294967295"],
            "--period",
            "16 to 8192 frames",
        ),
        (
            &["bench", "--rate", "4294967295"],
            "--rate",
            "8000 to 384000 Hz",
        ),
        (
            &["bench", "--repeat", "4294967295"],
            "--repeat",
            "1 to 1000",
        ),
        (&["bench", "--each", "1h"], "--each", "at most 60 s"),
        (
            &["jitter", "--fragments", "4294967295", "--frames", "32"],
            "--fragments",
            "use 2 to 1024",
        ),
        (
            &["jitter", "--loops", "18446744073709551615"],
            "--loops",
            "use 1 to",
        ),
        (
            &["jitter", "--hist-bound", "1h"],
            "--hist-bound",
            "1us..60s",
        ),
        (
            &["event", "--backend", "virtual", "--repeat", "4294967295"],
            "--repeat",
            "use 1 to 1000",
        ),
        (
            &[
                "event",
                "--backend",
                "virtual",
                "--triggers",
                "18446744073709551615",
            ],
            "--triggers",
            "use 1 to 1000000",
        ),
        (
            &["event", "--backend", "virtual", "--frequency", "100000"],
            "--frequency",
            "use 20 to 20000 Hz",
        ),
        (
            // Above the virtual card's Nyquist frequency (48 kHz: 24 kHz), inside 20 kHz
            // at 8 kHz.
            &[
                "event",
                "--backend",
                "virtual",
                "--rate",
                "8000",
                "--frequency",
                "5000",
            ],
            "--frequency",
            "use 20 to 3999 Hz",
        ),
        (
            &["event", "--backend", "virtual", "--spacing", "1h"],
            "--spacing",
            "at most 60000 ms",
        ),
        (
            &["event", "--backend", "alsa", "--periods", "4294967295"],
            "--periods",
            "2 to 1024",
        ),
        (
            &["event", "--backend", "alsa", "--period", "4294967295"],
            "--period",
            "16 to 65536",
        ),
        (
            &[
                "roundtrip",
                "--backend",
                "virtual",
                "--cable-delay",
                "1000000",
            ],
            "--cable-delay",
            "0 to 65536",
        ),
        (
            &[
                "roundtrip",
                "--backend",
                "virtual",
                "--max-delay",
                "1000000",
            ],
            "--max-delay",
            "1 to 65536",
        ),
        (
            &[
                "roundtrip",
                "--backend",
                "virtual",
                "--impulses",
                "4294967295",
            ],
            "--impulses",
            "0 to 1000",
        ),
        (&["net", "--link", "1e9"], "--link", "1 to 100000 Mbit/s"),
        (&["net", "--duration", "2h"], "--duration", "at most 1 hour"),
        (&["suite", "--each", "2h"], "--each", "1 s to 1 hour"),
        (
            &["runs", "--limit", "18446744073709551615"],
            "--limit",
            "1 to 1000000",
        ),
        (
            &["doctor", "--steal-window", "1ns"],
            "--steal-window",
            "to 600s",
        ),
    ];
    for (args, flag, range) in cases {
        let out = run_limited(&db, args);
        assert_refused(args, &out, flag, range, &db);
    }
    // A plan's keys are the flags: refused at the value, before any cell runs.
    let plan = dir.path().join("p.toml");
    std::fs::write(
        &plan,
        "name = \"b\"\nprobe = \"event\"\n[set]\nbackend = \"virtual\"\nspacing = \"1h\"\n",
    )
    .unwrap();
    let out = run(&db, &["run", plan.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("p.toml:5:"), "{}", out.stderr);
    assert!(
        out.stderr.contains("--spacing 3600000 ms is out of range"),
        "{}",
        out.stderr
    );
    assert!(!db.exists());
}

/// Input found impossible only once the stream is open (the latency it reports, the
/// rate a running server runs at) is refused before the store opens: exit 2, nothing
/// stored, not a `failed` run.
#[test]
fn input_the_stream_cannot_run_is_refused_before_the_store_opens() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("s.db");
    let args = ["roundtrip", "--backend", "virtual", "--max-delay", "1"];
    let out = run(&db, &args);
    assert_refused(
        &args,
        &out,
        "--max-delay 1 frames is shorter",
        "use at least",
        &db,
    );

    // The tone above half the rate of a running server, which only its stream tells.
    let jackd = DummyJackd::start("bounds", 22_050, 256);
    let args = [
        "event",
        "--server",
        "external",
        "--server-name",
        jackd.name(),
        "--frequency",
        "15000",
        "-n",
        "2",
    ];
    let out = run(&db, &args);
    assert_refused(&args, &out, "--frequency 15000", "22050 Hz", &db);
    drop(jackd);

    // A later period of a sweep is checked when its stream opens: the sweep stops there
    // with the refusal, the runs before it kept, no run begun for it.
    let args = [
        "roundtrip",
        "--backend",
        "virtual",
        "--period",
        "128,512",
        "--max-delay",
        "1000",
        "--duration",
        "1s",
        "--json",
    ];
    let out = run(&db, &args);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains("--max-delay 1000 frames is shorter"),
        "{}",
        out.stderr
    );
    let runs = util::run_json(&db, &["runs", "--json"]);
    let runs = runs.as_array().expect("a list of runs");
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "complete", "{runs:?}");
}

#[test]
fn net_input_tc_would_refuse_is_refused_before_the_store_opens() {
    if util::not_root("network namespaces need root") {
        return;
    }
    let (_dir, db) = temp_db("n.db");
    // 0.0001 Mbit/s is 0 kbit/s to tc, which refused it mid-run.
    let args = [
        "net",
        "--netns",
        "--link",
        "1",
        "--reserve",
        "0.0001",
        "-D",
        "1s",
    ];
    let out = run(&db, &args);
    assert_refused(&args, &out, "--reserve", "0.001 Mbit/s", &db);
}
