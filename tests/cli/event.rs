//! `audiolat event` on JACK: the timing model in both policies, setup errors, sweeps, key
//! presses and MIDI triggers.

use std::time::Duration;

use results::{RunFilter, RunStatus, Store};

use crate::util::{
    self, jackd_pids, machine_lock, parse_json, require_tool, run, run_json, temp_db,
    unique_server, wait_timeout, DummyJackd,
};

/// The acceptance test against JACK's timing model, on a private `jackd -d dummy`:
/// - fixed: every trigger's latency is one period plus the playback latency the ports
///   report, to within one frame (triggers that reached the audio thread after their
///   frame had passed are flagged `late` and counted; there must be few);
/// - asap: the mean latency is half a period plus the playback latency, within a quarter
///   of a period. The wait is uniform over the period, so 100 triggers put the mean
///   within about 3 % of a period of the model; the rest of the margin is for callbacks
///   that the host's steal makes late (they shorten the wait of the triggers that land
///   in them).
#[test]
fn event_latency_agrees_with_the_jack_timing_model_in_both_policies() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let (_dir, db) = temp_db("e.db");
    let name = unique_server("model");
    let v = run_json(
        &db,
        &[
            "event",
            "--server",
            "dummy",
            "--server-name",
            &name,
            "--rate",
            "48000",
            "--period",
            "256",
            "--policy",
            "fixed,asap",
            "--triggers",
            "100",
            "--spacing",
            "30ms",
            "--note",
            "15ms",
            "--json",
        ],
    );
    assert!(
        jackd_pids(&name).is_empty(),
        "the private jackd was stopped"
    );
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{v}");
    let frame_ns = 1e9 / 48_000.0;
    let period_ns = 256.0 * frame_ns;
    for r in runs {
        assert_eq!(r["status"], "complete", "{r}");
        let result = &r["result"];
        assert_eq!(result["period_frames"], 256);
        assert_eq!(result["rate_hz"], 48_000);
        assert_eq!(result["server"]["private"], true);
        assert!(result["server"]["command_line"]
            .as_str()
            .unwrap()
            .ends_with(&format!("-n {name} -d dummy -r 48000 -p 256")));
        let playback = result["playback_latency_frames"].as_f64().unwrap();
        assert!(
            playback >= 256.0,
            "dummy reports at least its buffer: {result}"
        );
        let triggers = r["triggers"].as_array().unwrap();
        assert_eq!(triggers.len(), 100);
        // Notes whose callback ran after their cycle's deadline (an under-run, here the
        // host's steal) are flagged `missed`, counted, and left out of the figures; how
        // many is the host's business, but the model needs notes to check.
        // So are the notes rendered just after an xrun, whose cycle's start is not known:
        // they have no timing figures.
        let missed = triggers.iter().filter(|t| t["missed"] == true).count();
        assert_eq!(result["missed_triggers"], missed as u64, "{result}");
        // (A note rendered by the callback that broke the phase is `missed`, its start
        // unknown too: counted as missed.)
        let unknown = triggers
            .iter()
            .filter(|t| t["timing"] == "unknown" && t["missed"] == false)
            .count();
        assert_eq!(
            result["timing_unknown_triggers"], unknown as u64,
            "{result}"
        );
        assert_eq!(
            result["latency_ms"]["count"],
            (100 - missed - unknown) as u64,
            "the figures are over the notes that sounded: {result}"
        );
        assert!(
            missed + unknown <= 50,
            "{missed} of 100 notes missed their deadline and {unknown} came just after an xrun: too few left to check the model"
        );
        let sounded = |t: &&serde_json::Value| t["missed"] == false && t["timing"] != "unknown";
        let latencies: Vec<f64> = triggers
            .iter()
            .filter(sounded)
            .map(|t| t["latency_ns"].as_f64().unwrap())
            .collect();
        let buffer_ns = playback * frame_ns;
        match r["config"]["policy"].as_str().unwrap() {
            "fixed" => {
                // A trigger that reached the audio thread after its frame had passed is
                // flagged `late` (started at the next cycle), counted, and not held to
                // the fixed latency.
                let late = triggers.iter().filter(|t| t["late"] == true).count();
                assert_eq!(result["late_triggers"], late as u64, "{result}");
                for t in triggers.iter().filter(|t| t["late"] == false && sounded(t)) {
                    let l = t["latency_ns"].as_f64().unwrap();
                    assert!(
                        (l - (period_ns + buffer_ns)).abs() <= frame_ns,
                        "fixed latency {l} ns vs one period + playback latency {} ns",
                        period_ns + buffer_ns
                    );
                }
            }
            "asap" => {
                let mean = latencies.iter().sum::<f64>() / latencies.len() as f64;
                let model = period_ns / 2.0 + buffer_ns;
                assert!(
                    (mean - model).abs() <= period_ns / 4.0,
                    "asap mean {mean} ns vs half a period + playback latency {model} ns"
                );
                // The quantisation is sampled: notes land across the whole period.
                let min = latencies.iter().cloned().fold(f64::MAX, f64::min);
                let max = latencies.iter().cloned().fold(f64::MIN, f64::max);
                assert!(max - min > period_ns / 2.0, "spread {} ns", max - min);
            }
            other => panic!("policy {other}"),
        }
        // Every trigger is stored with its decomposition: wait + buffer = latency.
        let store = Store::open_existing(&db).unwrap();
        let rows = store
            .triggers(results::RunId(r["run_id"].as_i64().unwrap()))
            .unwrap();
        assert_eq!(rows.len(), 100);
        for row in &rows {
            // A note rendered just after an xrun has no timing figures at all.
            assert_eq!(
                row.latency_ns,
                row.wait_ns.map(|w| w + row.buffer_ns),
                "{row:?}"
            );
            // (The callback that broke the phase renders its notes `missed`, its start
            // unknown too: missed, not counted as unknown, as above.)
            assert_eq!(
                row.timing_unknown(),
                row.timing == "unknown" && !row.missed,
                "{row:?}"
            );
            assert_eq!(row.source, "timer");
        }
    }
    // Every trigger exports: JSON with the run, CSV one line each.
    let json = run_json(&db, &["export", "last", "--format", "json"]);
    assert_eq!(json["triggers"].as_array().unwrap().len(), 100);
    let csv = run(&db, &["export", "last", "--format", "triggers"]);
    assert_eq!(csv.code, 0, "{}", csv.stderr);
    assert_eq!(csv.stdout.lines().count(), 101);
    let header = csv.stdout.lines().next().unwrap();
    assert!(header.starts_with("run_id,seq,source,trigger_ns"));
    for line in csv.stdout.lines() {
        assert_eq!(line.split(',').count(), header.split(',').count(), "{line}");
    }
}

#[test]
fn event_setup_errors_are_one_line_with_the_fix() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    let (dir, db) = temp_db("x.db");
    let one_line = |out: &util::Output, needle: &str| {
        assert_eq!(out.code, 2, "{needle}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains(needle), "{needle}: {}", out.stderr);
        assert!(!db.exists(), "a refused run wrote the database");
    };
    // A period JACK does not run.
    let out = run(&db, &["event", "--period", "100"]);
    one_line(&out, "powers of two");
    // A busy server name: a private server is already running under it.
    let jackd = DummyJackd::start("busy", 44100, 128);
    let name = jackd.name().to_string();
    let out = run(
        &db,
        &[
            "event",
            "--server",
            "dummy",
            "--server-name",
            &name,
            "--triggers",
            "1",
        ],
    );
    one_line(&out, "already running");
    assert!(out.stderr.contains("--server external"));
    // The same server as an external one, with the wrong period.
    let out = run(
        &db,
        &[
            "event",
            "--server",
            "external",
            "--server-name",
            &name,
            "--period",
            "256",
        ],
    );
    one_line(&out, "--period 256");
    // Ports that do not exist or cannot be connected as asked: refused before anything
    // is stored.
    for (args, needle) in [
        (&["--playback", "nosuch:port"][..], "does not exist"),
        (
            &["--playback", "system:capture_1"][..],
            "needs an audio input",
        ),
        (
            &["--loopback", "system:playback_1"][..],
            "needs an audio output",
        ),
        (
            &["--trigger", "midi", "--midi-port", "system:capture_1"][..],
            "needs a MIDI output",
        ),
    ] {
        let mut all = vec!["event", "--server", "external", "--server-name", &name];
        all.extend_from_slice(args);
        let out = run(&db, &all);
        one_line(&out, needle);
    }
    jackd.stop();
    // No server to use.
    let out = run(
        &db,
        &[
            "event",
            "--server",
            "external",
            "--server-name",
            &unique_server("none"),
        ],
    );
    one_line(&out, "no JACK server named");
    // No jackd installed: a PATH without it.
    let out = util::output(
        util::command(&db, &["event", "--server", "dummy", "--triggers", "1"])
            .env("PATH", dir.path()),
    );
    one_line(&out, "install the jackd2 package");
    // No GPIO chip on this machine.
    let out = run(&db, &["event", "--gpio", "gpiochip9:3"]);
    one_line(&out, "gpiochip9");
    // Workload and trigger typos.
    one_line(
        &run(&db, &["event", "--workload", "saw"]),
        "sine, poly or bank:N",
    );
    one_line(
        &run(&db, &["event", "--trigger", "pedal"]),
        "timer, key or midi",
    );
}

#[test]
fn event_sweeps_workloads_and_loads_like_the_study_and_key_presses_trigger() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    require_tool("top", "procps");
    let (_dir, db) = temp_db("s.db");
    let out = run(
        &db,
        &[
            "event",
            "--server",
            "dummy",
            "--server-name",
            &unique_server("sweep"),
            "--period",
            "64,128",
            "--workload",
            "sine,poly",
            "--load",
            "none,top",
            "--triggers",
            "8",
            "--spacing",
            "30ms",
            "--note",
            "10ms",
            "-q",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("average latency (ms), as in the BeagleBone study"),
        "{}",
        out.stdout
    );
    for column in ["sine", "sine+top", "poly", "poly+top"] {
        assert!(out.stdout.contains(column), "{column}: {}", out.stdout);
    }
    let store = Store::open_existing(&db).unwrap();
    let runs = store
        .list_runs(&RunFilter {
            probe: Some("event".into()),
            ..RunFilter::default()
        })
        .unwrap();
    assert_eq!(runs.len(), 8);
    assert!(runs.iter().all(|r| r.status == RunStatus::Complete));
    assert!(runs.iter().all(|r| r.tool.build_profile.starts_with("dev")));

    // Key presses: every byte on stdin is a key press, `q` ends.
    let mut child = util::command(
        &db,
        &[
            "event",
            "--trigger",
            "key",
            "--server",
            "dummy",
            "--triggers",
            "5",
            "--json",
        ],
    )
    .stdin(std::process::Stdio::piped())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    for _ in 0..5 {
        use std::io::Write;
        stdin.write_all(b" ").unwrap();
        stdin.flush().unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = wait_timeout(&mut child, Duration::from_secs(30));
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = parse_json(&out.stdout);
    let triggers = v["runs"][0]["triggers"].as_array().unwrap();
    assert_eq!(triggers.len(), 5);
    assert!(triggers.iter().all(|t| t["source"] == "key"));
}

/// MIDI triggers from jackd2's own sequencer client (`jack_midiseq`) on an external
/// server: `fixed` places each note at its event's frame one period later, so every
/// latency is one period plus the playback latency; `asap` starts it at the next cycle's
/// first frame, so the latency lies between the playback latency and one period more.
#[test]
fn midi_note_ons_trigger_notes_at_their_frame() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    require_tool("jack_midiseq", "jackd2");
    let (_dir, db) = temp_db("midi.db");
    let jackd = DummyJackd::start("midi", 48000, 256);
    let name = jackd.name().to_string();
    // Two notes per half-second loop.
    let mut seq = std::process::Command::new("jack_midiseq")
        .env("JACK_DEFAULT_SERVER", &name)
        .args([
            "audiolat-seq",
            "24000",
            "0",
            "60",
            "2000",
            "12000",
            "64",
            "2000",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let out = run(
        &db,
        &[
            "event",
            "--server",
            "external",
            "--server-name",
            &name,
            "--trigger",
            "midi",
            "--midi-port",
            "audiolat-seq:out",
            "--policy",
            "fixed,asap",
            "--triggers",
            "6",
            "--note",
            "10ms",
            "--json",
        ],
    );
    // SAFETY: a clean stop (SIGTERM) of the sequencer this test started.
    unsafe { libc::kill(seq.id() as i32, libc::SIGTERM) };
    let _ = seq.wait();
    jackd.stop();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = parse_json(&out.stdout);
    let frame_ns = 1e9 / 48_000.0;
    for r in v["runs"].as_array().unwrap() {
        assert_eq!(r["result"]["server"]["private"], false);
        let playback_ns = r["result"]["playback_latency_frames"].as_f64().unwrap() * frame_ns;
        let period_ns = 256.0 * frame_ns;
        let triggers = r["triggers"].as_array().unwrap();
        assert_eq!(triggers.len(), 6, "{r}");
        // A note an under-run hit (a busy machine's) is said so, missed or of unknown
        // timing, and left out of the figures; the others are the model's.
        let mut sounded = 0;
        for t in triggers {
            assert_eq!(t["source"], "midi");
            let Some(l) = t["latency_ns"].as_f64().filter(|_| t["missed"] == false) else {
                assert!(t["missed"] == true || t["timing"] == "unknown", "{t}");
                continue;
            };
            sounded += 1;
            match r["config"]["policy"].as_str().unwrap() {
                "fixed" => assert!(
                    (l - (period_ns + playback_ns)).abs() <= frame_ns,
                    "fixed midi latency {l} ns"
                ),
                _ => assert!(
                    l > playback_ns - frame_ns && l <= period_ns + playback_ns + frame_ns,
                    "asap midi latency {l} ns"
                ),
            }
        }
        assert!(sounded * 2 > triggers.len(), "{sounded} notes sounded: {r}");
        // jack_midiseq counts its own frames: its note-ons are 12000 frames apart. In fixed
        // mode each note starts at its note-on's frame (a period later), so the notes are
        // 12000 frames apart too, plus whole periods where the dummy driver skipped cycles
        // (its frame count jumps, the sequencer's does not). 12000 is not a multiple of
        // the period, so a note off its frame shows.
        if r["config"]["policy"] == "fixed" {
            let frames: Vec<i64> = triggers
                .iter()
                .map(|t| t["note_frame"].as_i64().unwrap())
                .collect();
            let mut gaps: Vec<i64> = frames.windows(2).map(|w| w[1] - w[0]).collect();
            for g in &gaps {
                assert!(
                    *g >= 12000 && (g - 12000) % 256 == 0,
                    "note frames {frames:?}: a gap of {g} frames"
                );
            }
            gaps.sort_unstable();
            assert_eq!(gaps[gaps.len() / 2], 12000, "note frames {frames:?}");
        }
    }
}

/// Under a real load (stress-ng on every CPU, CPU and I/O, as `--load cpu+io` runs it)
/// the private `jackd -d dummy` xruns every few hundred milliseconds, and after each one
/// JACK's own estimate of the cycle start is off by tens of milliseconds for seconds
/// (jackd2's frame timer keeps its stale prediction through an xrun). Every figure
/// stored must still be a measurement, so the physical laws hold over the notes that
/// sounded: a callback never starts before its cycle (lateness >= 0, to within JACK's
/// microsecond clock and the offset measured to it); a note's frame precedes its trigger
/// only by the time its callback was late, less than a period (wait >= -lateness, the
/// trigger came before the callback that rendered it); and the median latency is the
/// model's, half a period plus the playback latency, within a quarter of a period, as on
/// an idle machine. Notes whose cycle's start was not known are counted, and have no
/// figures at all.
#[test]
fn event_figures_stay_physical_under_a_real_load() {
    let _m = machine_lock();
    require_tool("jackd", "jackd2");
    require_tool("stress-ng", "stress-ng");
    let (_dir, db) = temp_db("load.db");
    let v = run_json(
        &db,
        &[
            "event",
            "--server",
            "dummy",
            "--server-name",
            &unique_server("load"),
            "--rate",
            "48000",
            "--period",
            "128",
            "--triggers",
            "80",
            "--spacing",
            "30ms",
            "--note",
            "15ms",
            "--load",
            "cpu+io",
            "--json",
        ],
    );
    let r = &v["runs"][0];
    assert_eq!(r["status"], "complete", "{r}");
    let result = &r["result"];
    let frame_ns = 1e9 / 48_000.0;
    let period_ns = 128.0 * frame_ns;
    let buffer_ns = result["playback_latency_frames"].as_f64().unwrap() * frame_ns;
    let triggers = r["triggers"].as_array().unwrap();
    assert_eq!(triggers.len(), 80);
    let unknown: Vec<&serde_json::Value> = triggers
        .iter()
        .filter(|t| t["timing"] == "unknown")
        .collect();
    // Counted apart from the missed ones (the under-run's own notes are missed).
    let unknown_not_missed = unknown.iter().filter(|t| t["missed"] == false).count();
    assert_eq!(result["timing_unknown_triggers"], unknown_not_missed as u64);
    for t in &unknown {
        for figure in ["dac_ns", "latency_ns", "wait_ns", "lateness_ns"] {
            assert!(
                t[figure].is_null(),
                "{figure} of a note with no timing: {t}"
            );
        }
    }
    let sounded: Vec<&serde_json::Value> = triggers
        .iter()
        .filter(|t| t["missed"] == false && t["timing"] != "unknown")
        .collect();
    assert_eq!(result["latency_ms"]["count"], sounded.len() as u64);
    assert!(
        sounded.len() >= 20,
        "only {} of 80 notes sounded with known timing: {result}",
        sounded.len()
    );
    let clock_tolerance_ns = 10_000.0;
    let mut latencies = Vec::new();
    for t in &sounded {
        let figure = |name: &str| t[name].as_f64().unwrap_or_else(|| panic!("{name}: {t}"));
        let (wait, lateness, latency) = (
            figure("wait_ns"),
            figure("lateness_ns"),
            figure("latency_ns"),
        );
        assert!(
            ["backend", "callbacks"].contains(&t["timing"].as_str().unwrap()),
            "{t}"
        );
        assert!(
            lateness >= -clock_tolerance_ns,
            "a callback started {} us before its cycle: {t}",
            -lateness / 1e3
        );
        assert!(
            lateness <= period_ns,
            "a note that sounded was rendered after its cycle's deadline: {t}"
        );
        assert!(
            wait >= -lateness - frame_ns,
            "the note's frame is {} us before its trigger, its callback only {} us late: {t}",
            -wait / 1e3,
            lateness / 1e3
        );
        assert!((latency - (wait + buffer_ns)).abs() <= 1.0, "{t}");
        latencies.push(latency);
    }
    latencies.sort_by(f64::total_cmp);
    let median = latencies[latencies.len() / 2];
    let model = period_ns / 2.0 + buffer_ns;
    assert!(
        (median - model).abs() <= period_ns / 4.0,
        "median latency {median} ns vs half a period + playback latency {model} ns"
    );
}
