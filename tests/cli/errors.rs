//! Bad input: every refusal of what the user typed is one line with the fix,
//! exit 2, and writes nothing.

use crate::util::{self, machine_lock, run, temp_db};

#[test]
fn bad_input_is_one_line_with_the_fix_exit_2_and_writes_nothing() {
    let (_dir, db) = temp_db("bad.db");
    // (arguments, what the message names, the fix it gives)
    let cases: &[(&[&str], &str, &str)] = &[
        (
            &["jitter", "--rate", "0"],
            "positive number of Hz",
            "e.g. --rate 2048",
        ),
        (
            &["jitter", "--rate", "-5"],
            "positive number of Hz",
            "e.g. --rate 2048",
        ),
        (
            &["jitter", "--rate", "fast"],
            "'fast' is not a number",
            "see 'audiolat jitter --help'",
        ),
        (
            &["jitter", "--priority", "0"],
            "out of range for SCHED_FIFO",
            "use 1..99",
        ),
        (
            &["jitter", "--priority", "100"],
            "out of range for SCHED_FIFO",
            "use 1..99",
        ),
        (
            &["jitter", "--priority", "-3"],
            "out of range for SCHED_FIFO",
            "use 1..99",
        ),
        (
            &["jitter", "--policy", "rr", "--priority", "0"],
            "--priority 0 is out of range for SCHED_RR: use 1..99",
            "use 1..99",
        ),
        (
            &["jitter", "--policy", "idle", "--priority", "5"],
            "--priority 5 has no meaning for SCHED_IDLE: use --policy fifo or rr to set a priority",
            "use --policy fifo or rr",
        ),
        (
            &["jitter", "--policy", "other", "--priority", "5"],
            "no meaning for SCHED_OTHER",
            "use --policy fifo or rr",
        ),
        (
            &["jitter", "--load", "gpu"],
            "unknown load 'gpu'",
            "loads are none, cpu[:percent]",
        ),
        (
            &["jitter", "--load", "cpu:150"],
            "must be 1..100",
            "loads are none, cpu[:percent]",
        ),
        (
            &["jitter", "--policy", "bogus"],
            "unknown policy 'bogus'",
            "use fifo, rr, other, batch, idle or deadline",
        ),
        (
            &["jitter", "--mode", "rtc"],
            "unknown wake-up mode 'rtc'",
            "use nanosleep, timerfd or signal",
        ),
        (&["jitter", "--busy", "100"], "--busy", "not including, 100"),
        (
            &["jitter", "--interval", "1us"],
            "out of range",
            "use a rate of 0.1..50000 Hz",
        ),
        (
            &["jitter", "--fragments", "1", "--frames", "32"],
            "no headroom",
            "use 2 to 1024",
        ),
        (
            &["jitter", "--fragments", "3"],
            "not provided: --frames",
            "see 'audiolat jitter --help'",
        ),
        (
            &["jitter", "--cpu", "4095"],
            "CPU 4095 is not online",
            "this machine has CPUs",
        ),
        (
            &["jitter", "--duration", "0"],
            "must be positive",
            "see 'audiolat jitter --help'",
        ),
        (
            &["jitter", "--loops", "0"],
            "--loops",
            "use a whole number of at least 1",
        ),
        (
            &["jitter", "--histfile", "/nonexistent-dir/h.txt"],
            "not a file in an existing directory",
            "give a writable file path",
        ),
        (
            &["jitter", "--frobnicate"],
            "unexpected argument '--frobnicate'",
            "see 'audiolat jitter --help'",
        ),
        (
            &["runs", "--group", "0"],
            "'0' is no group id",
            "give a whole number above 0",
        ),
        (
            &["frobnicate"],
            "unrecognized subcommand 'frobnicate'",
            "see 'audiolat --help'",
        ),
        (
            &["suite", "--scratch-dir", "/nonexistent-dir"],
            "not a directory",
            "give an existing directory",
        ),
    ];
    for (args, names, fix) in cases {
        let out = run(&db, args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: not one line: {:?}", out.stderr);
        assert!(
            lines[0].starts_with("audiolat: error: "),
            "{args:?}: {}",
            lines[0]
        );
        assert!(
            lines[0].contains(names),
            "{args:?}: {:?} does not name {names:?}",
            lines[0]
        );
        assert!(
            lines[0].contains(fix),
            "{args:?}: {:?} lacks the fix {fix:?}",
            lines[0]
        );
        assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
        assert!(!db.exists(), "{args:?} created the database");
    }
}

#[test]
fn a_missing_load_tool_is_refused_naming_its_package() {
    let (dir, db) = temp_db("m.db");
    // A PATH without the tools: stress-ng and hackbench live in /usr/bin, which is only
    // searched through PATH.
    for (load, package) in [
        ("cpu", "stress-ng"),
        ("hackbench", "rt-tests"),
        ("top", "procps"),
    ] {
        let out = util::output(
            util::command(&db, &["jitter", "--loops", "10", "--load", load])
                .env("PATH", dir.path()),
        );
        let stderr = out.stderr;
        assert_eq!(out.code, 2, "{load}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains(&format!(
                "install the {package} package (apt install {package})"
            )),
            "{load}: {stderr}"
        );
        assert!(!db.exists(), "{load}: a refused run wrote the database");
    }
}

#[test]
fn roundtrip_bad_input_is_one_line_with_the_fix() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("bad.db");
    for (args, needle) in [
        (
            &["roundtrip", "--backend", "virtual", "--periods", "1"][..],
            "at least two periods",
        ),
        (
            &["roundtrip", "--backend", "virtual", "--period", "16"][..],
            "32 to 8192",
        ),
        (
            &["roundtrip", "--backend", "virtual", "--capture", "x:y"][..],
            "name JACK ports: use them with --backend jack",
        ),
        (
            &["roundtrip", "--backend", "jack", "--cable-delay", "3"][..],
            "set the virtual card: use them with --backend virtual",
        ),
        (
            &["roundtrip", "--playback", "system:playback_1"][..],
            "--playback needs --capture",
        ),
        (&["roundtrip", "--level", "2"][..], "full scale"),
        (&["roundtrip", "--every", "0"][..], "at least 1"),
        (
            &["roundtrip", "--server", "dummy", "--capture", "nosuch:port"][..],
            "does not exist",
        ),
    ] {
        let out = run(&db, args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(needle), "{args:?}: {}", out.stderr);
        assert!(!db.exists(), "{args:?}: a refused run wrote the database");
    }
}

#[test]
fn alsa_and_backend_bad_input_is_one_line_with_the_fix() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("bad.db");
    for (args, needle) in [
        (
            &["event", "--backend", "alsa", "--device", "hw:97"][..],
            "does not exist",
        ),
        (
            &["roundtrip", "--backend", "alsa", "--device", "hw:97"][..],
            "does not exist",
        ),
        (
            &["event", "--backend", "alsa", "--periods", "1"][..],
            "at least two periods",
        ),
        (
            &["roundtrip", "--backend", "alsa", "--periods", "1"][..],
            "at least two periods",
        ),
        (
            &["event", "--backend", "alsa", "--format", "u8"][..],
            "float, s32, s24, s24_3 or s16",
        ),
        (
            &["event", "--device", "hw:0"][..],
            "use them with --backend alsa",
        ),
        (
            // With ALSA, --loopback names the capture device.
            &["event", "--backend", "alsa", "--loopback", "x:y"][..],
            "`x:y` does not exist",
        ),
        (
            &["event", "--backend", "virtual", "--loopback", "x:y"][..],
            "with --backend jack",
        ),
        (
            &["event", "--backend", "alsa", "--trigger", "midi"][..],
            "use --backend jack",
        ),
        (
            &["event", "--periods", "3"][..],
            "a JACK server's buffer is its own",
        ),
        (
            &["roundtrip", "--backend", "virtual", "--server", "dummy"][..],
            "needs none",
        ),
        (
            &["roundtrip", "--backend", "alsa", "--capture", "x:y"][..],
            "(with --backend alsa, name the device with --device)",
        ),
        (
            // clap's refusals point at the subcommand's own help, `loop`'s too.
            &["loop", "--bogus"][..],
            "see 'audiolat loop --help'",
        ),
    ] {
        let out = run(&db, args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(needle), "{args:?}: {}", out.stderr);
        assert!(!db.exists(), "{args:?}: a refused run wrote the database");
    }
}

#[test]
fn net_bad_input_is_one_line_with_the_fix() {
    let _m = machine_lock();
    let (_dir, db) = temp_db("bad.db");
    let held = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port().to_string();
    let in_use = format!("127.0.0.1:{port}");
    for (args, needle) in [
        (
            vec!["net", "respond", "--bind", in_use.as_str()],
            "the port is in use",
        ),
        (
            vec!["net", "respond", "--bind", "0.0.0.0:19710"],
            "give --peer",
        ),
        (
            vec!["net", "respond", "--bind", "10.0.0.1:9700"],
            "error: --bind 10.0.0.1:9700: away from loopback",
        ),
        (
            vec!["net", "--workers", "1000"],
            "would spin against each other",
        ),
        (
            vec!["net", "--host-cpus", "999"],
            "is not online; this machine has CPUs",
        ),
        (vec!["net", "--controller-cpus", ""], "is empty"),
        (vec!["net", "--pads", "33"], "0 to 32 pads"),
        (vec!["net", "--pressure", "2"], "from 0 to 1"),
        (vec!["net", "--policy", "deadline"], "use fifo, rr or other"),
        (vec!["net", "--priority", "0"], "1..99"),
        (
            vec!["net", "emulate", "--host", "0.0.0.0:0"],
            "name the host's address",
        ),
        (
            vec!["net", "emulate", "--host", "0.0.0.0:9700"],
            "--host 0.0.0.0:9700: name the host's address and port",
        ),
    ] {
        let out = run(&db, &args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(needle), "{args:?}: {}", out.stderr);
        assert!(!db.exists(), "{args:?}: a refused run wrote the database");
    }
}

/// Every CPU list (`--cpu`, `--host-cpus`, `--controller-cpus`, `--cpus` of net's ends, a
/// cell's `cpus=` in a flag or a file, a plan's `cpu` under `--dry-run`) is checked
/// against the online CPUs without expanding its range: `0-99999999999` is refused at
/// once with one line, exit 2, and nothing stored.
#[test]
fn a_huge_cpu_range_is_refused_in_every_cpu_list_without_expanding_it() {
    let (dir, db) = temp_db("cpus.db");
    let huge = "0-99999999999";
    let online = engine::rt::format_cpu_list(&engine::rt::online_cpus());
    let says = format!("CPU 99999999999 is not online; this machine has CPUs {online}");
    let cells = dir.path().join("cells.toml");
    std::fs::write(
        &cells,
        format!("[cell.music]\nkind = \"dedicated\"\ncpus = \"{huge}\"\n"),
    )
    .unwrap();
    let jitter_plan = dir.path().join("jitter.toml");
    std::fs::write(
        &jitter_plan,
        format!("name = \"j\"\nprobe = \"jitter\"\n[set]\ncpu = \"{huge}\"\n"),
    )
    .unwrap();
    let net_plan = dir.path().join("net.toml");
    std::fs::write(
        &net_plan,
        format!("name = \"n\"\nprobe = \"net\"\n[set]\nhost-cpus = \"{huge}\"\n"),
    )
    .unwrap();
    let cell_flag = format!("music=dedicated:cpus={huge}");
    let cases: Vec<Vec<&str>> = vec![
        vec!["jitter", "--cpu", huge],
        vec!["net", "--host-cpus", huge],
        vec!["net", "--controller-cpus", huge],
        vec!["net", "--cell", &cell_flag],
        vec!["net", "--cells", cells.to_str().unwrap()],
        vec!["net", "respond", "--cpus", huge],
        vec!["net", "emulate", "--host", "127.0.0.1:9", "--cpus", huge],
        vec!["run", jitter_plan.to_str().unwrap(), "--dry-run"],
        vec!["run", net_plan.to_str().unwrap(), "--dry-run"],
    ];
    for args in &cases {
        let out = run(&db, args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(&says), "{args:?}: {}", out.stderr);
    }
    assert!(!db.exists(), "a refusal stored something");
}
