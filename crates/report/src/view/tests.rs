use super::*;
use crate::net_fixtures as fx;
use results::records::net::{MissCauses, NetResultRecord};
use results::records::stream::AlsaGrantedRecord;
use results::records::Record;
use results::RunView;

fn stream(capture: Option<&str>, start: Value) -> StreamRecord {
    StreamRecord::from_json(
        &json!({"client": "hw:Loopback,0,0", "capture_port": capture, "duplex_start": start}),
    )
    .unwrap()
}

fn alsa_granted(v: Value) -> AlsaGrantedRecord {
    serde_json::from_value(v).unwrap()
}

#[test]
fn the_device_line_says_what_was_granted_and_how_the_duplex_started() {
    let granted = alsa_granted(json!({"rate_hz": 48000, "period_frames": 1024,
        "buffer_frames": 2048, "format": "S16_LE", "access": "RW_INTERLEAVED",
        "playback_channels": 1, "capture_channels": 1, "linked": true, "link_error": null}));
    let start = json!({"linked": true, "skew_frames": 0, "attempts": 2, "starts": 1,
        "steady_offset": false});
    let line = device_line(&stream(Some("hw:Loopback,1,0"), start), &granted);
    assert_eq!(
        line,
        "device `hw:Loopback,0,0` -> `hw:Loopback,1,0`: granted S16_LE, 1 channel(s) out, 1 in, 48000 Hz, period 1024 frames, buffer 2048 frames (2 periods), RW_INTERLEAVED; linked, started aligned (2 starts)"
    );
    // Not linked: why, and the skew measured instead; a value nobody read is "-".
    let granted = alsa_granted(json!({"rate_hz": 48000, "period_frames": 1024,
        "format": "FLOAT_LE", "access": "RW_INTERLEAVED", "playback_channels": 1,
        "capture_channels": 1, "linked": false, "link_error": "Function not implemented"}));
    let start = json!({"linked": false, "skew_frames": -64, "attempts": 2, "starts": 3,
        "steady_offset": true});
    let line = device_line(&stream(Some("jack"), start), &granted);
    assert!(line.contains("buffer - frames, RW_INTERLEAVED"), "{line}");
    assert!(
        line.ends_with("; not linked (Function not implemented): capture started first, with capture -64 frames from playback on every start (the device's own offset)"),
        "{line}"
    );
    // Playback only: nothing about a duplex.
    let line = device_line(&stream(None, Value::Null), &granted);
    assert!(!line.contains("linked"), "{line}");
}

#[test]
fn a_deadline_line_counts_lost_blocks_and_says_nothing_without_a_count() {
    // `show`'s deadline line counts a lost block against the blocks sent ...
    let mut m = Measurement::from_histogram(
        "net",
        "end_to_end",
        "test",
        results::LatencyHistogram::new(1_000_000_000).unwrap(),
    );
    m.deadline = Some(1_405_896.0);
    m.misses = Some(1379);
    // (stored as `blocks_sent`, or `sent` by an older audiolat)
    for detail in [json!({"blocks_sent": 1379}), json!({"sent": 1379})] {
        m.detail = detail;
        assert_eq!(
            deadline_line(&m).unwrap(),
            "end_to_end: 1379 of 1379 missed the deadline of 1.41 ms"
        );
    }
    // ... and says nothing when there is nothing to count.
    m.detail = json!({});
    m.misses = Some(0);
    assert_eq!(deadline_line(&m), None);
}

#[test]
fn stats_without_values_read_as_no_count() {
    let stats = |v| StatsRecord::from_json(&v).unwrap();
    assert_eq!(Figures::of(None).count, 0);
    let s = Figures::of(Some(&stats(json!({"count": 0, "mean": null}))));
    assert_eq!(s.count, 0);
    let s = Figures::of(Some(&stats(
        json!({"count": 3, "mean": 2.5, "min": 1.0, "max": 4.0, "stdev": 1.0}),
    )));
    assert_eq!((s.count, s.mean, s.max), (3, 2.5, 4.0));
}

#[test]
fn the_devices_text_reads_the_survey_json() {
    let survey = json!({
        "alsa": {"cards": [{"index": 0, "id": "Dummy", "driver": "snd_dummy", "name": "Dummy",
            "long_name": "Dummy 1", "error": null, "pcm": [{"device": 0, "id": "Dummy PCM",
            "name": null, "capture": null, "playback": {"name": "hw:Dummy,0",
            "subdevices": 2, "subdevices_available": 1,
            "subdevice_list": [{"subdevice": 0, "name": "s0", "state": "RUNNING",
                "holder": {"pid": 42, "command": "jackd"}}],
            "status": "busy", "holders": [{"pid": 42, "command": "jackd"}], "error": null}}]}],
            "pcm_names": [], "pcm_names_error": null},
        "servers": {"jack": [], "jack_running": false, "jackd": null,
            "pipewire": {"running": false, "socket": null},
            "pulseaudio": {"running": true, "socket": "/run/pulse/native"}},
        "suggestions": [{"probes": ["event", "roundtrip"], "args": "--backend virtual",
            "what": "a virtual card"}],
    });
    let local = devices::Local {
        dev_snd: true,
        plain_names: vec!["null".into()],
        card_plugins: vec!["plughw".into()],
    };
    let survey = results::records::devices::DevicesSurvey::from_json(&survey).expect("a survey");
    let text = devices::text(&survey, &local);
    assert!(
        text.starts_with("card 0 [Dummy]: Dummy 1 (driver snd_dummy)\n"),
        "{text}"
    );
    assert!(text.contains("busy: held by jackd (pid 42)"), "{text}");
    assert!(
        text.contains("  hw:Dummy,0,0 playback: RUNNING, held by jackd (pid 42)"),
        "{text}"
    );
    assert!(
        text.contains("ALSA PCM names (aplay -L): null; for each card: plughw"),
        "{text}"
    );
    assert!(
        text.contains("JACK: no server answers and jackd is not installed"),
        "{text}"
    );
    assert!(
        text.contains("  PulseAudio: running, socket /run/pulse/native"),
        "{text}"
    );
    assert!(
        text.ends_with("  --backend virtual\n      event, roundtrip: a virtual card\n"),
        "{text}"
    );
}

#[test]
fn an_experiment_row_of_a_net_run_counts_its_lost_blocks_as_misses() {
    let mut m = Measurement::from_histogram(
        "net",
        "response_time",
        "t2 - t1",
        results::LatencyHistogram::new(10_000_000).unwrap(),
    );
    m.misses = Some(2);
    let run = RunView {
        id: results::RunId(7),
        probe: &results::probe_kind::NET,
        status: results::RunStatus::Complete,
        machine: results::Machine::default(),
        config: fx::config(json!({"link": {"mbps": 1000.0, "reserve_mbps": null, "by": "mclock"}})),
        load: Value::Null,
        qos_requested: Value::Null,
        qos_granted: Value::Null,
        flags: json!({}),
        result: fx::result(json!({"synth": fx::phase(
            fx::host(json!({})),
            fx::controller(json!({"blocks_sent": 100, "lost": 3})),
            json!({"stream": abusive_stream(400.0)}),
        )})),
        error: None,
        started_mono_ns: 0,
        measurements: vec![m],
        events: Vec::new(),
        triggers: Vec::new(),
    };
    let row = experiment::ExperimentRow::of_run("abusive", "response_time", "-", &run);
    assert_eq!((row.run_id, row.sent), (Some(results::RunId(7)), 100));
    assert_eq!(row.summary.map(|s| s.1), Some(5));
    assert!(
        row.note.contains("only 400 Mbit/s") && row.note.contains("the 1000 Mbit/s link"),
        "{}",
        row.note
    );
    // Under today's names: a block answered after the run's end missed all the same.
    let mut run = run;
    run.result = fx::result(json!({"synth": fx::phase(
        fx::host(json!({})),
        fx::controller(json!({"blocks_sent": 100,
            "answers_received_after_end": 1, "answers_not_received": 2})),
        json!({"stream": abusive_stream(400.0)}),
    )}));
    let row = experiment::ExperimentRow::of_run("abusive", "response_time", "-", &run);
    assert_eq!((row.sent, row.summary.map(|s| s.1)), (100, Some(5)));
}

#[test]
fn a_suites_notes_word_the_model_the_verdict_and_the_deadline() {
    use suite::{event_model_note, net_note, roundtrip_note};
    let model = event_model_note((256, None), 8_000_000.0, false);
    assert!(model.starts_with("model: half a period + 256 frames playback latency = "));
    assert!(!model.contains("no sound card"));
    assert!(event_model_note((256, None), 8e6, true).contains("(no sound card here: a private"));
    assert!(event_model_note((0, Some(1024)), 32e6, false).starts_with(
        "model: half a period + 0 frames playback latency + 1024 frames the PipeWire sink adds, which the ports do not report = "
    ));
    assert_eq!(roundtrip_note("ok".into(), None), "ok");
    assert_eq!(
        roundtrip_note("ok".into(), Some((300.5, 256))),
        "ok; 300.500 frames = 256 reported by the ports + 44.500 extra"
    );
    assert_eq!(
        net_note(None, Some(1.0)),
        "interrupted before the synth phase"
    );
    assert_eq!(
        net_note(Some((2, 100, 1)), None),
        "2 of 100 blocks missed the 1.41 ms deadline; 1 without an answer by the run's end"
    );
    assert!(net_note(Some((0, 1, 0)), Some(5e5)).contains("; the synth adds "));
}

#[test]
fn a_report_that_cannot_be_written_says_where_it_was_to_go() {
    let data = crate::data::ReportData::default();
    let dir = std::env::temp_dir().join("audiolat-no-such-dir-for-a-report");
    let db = dir.join("a.db");
    let e = crate::html::write(&data, None, &db, "suite-1").unwrap_err();
    assert!(
        matches!(e, results::output::OutputError::NoDirectory { .. }),
        "{e:?}"
    );
    assert_eq!(e.path(), dir.join("a-report-suite-1.html"));
}

/// Two databases in one directory have reports of their own by default: a report is
/// named for its database (the default `audiolat.db`'s as before), a PostgreSQL store's
/// for its server and database, without its password.
#[test]
fn default_report_names_are_the_databases_own() {
    use crate::gather::default_path;
    use std::path::{Path, PathBuf};
    assert_eq!(
        default_path(Path::new("audiolat.db"), "plan-3"),
        PathBuf::from("./audiolat-report-plan-3.html")
    );
    let a = default_path(Path::new("/lab/a.db"), "plan-3");
    let b = default_path(Path::new("/lab/b.db"), "plan-3");
    assert_eq!(a, PathBuf::from("/lab/a-report-plan-3.html"));
    assert_ne!(a, b);
    assert_eq!(
        default_path(Path::new("/lab/runs.sqlite"), "suite-1"),
        PathBuf::from("/lab/runs.sqlite-report-suite-1.html")
    );
    let pg = default_path(
        Path::new("postgres://bench:secret@db.lab:5433/runs?sslmode=disable"),
        "group-2",
    );
    assert_eq!(pg, PathBuf::from("./db.lab-5433-runs-report-group-2.html"));
    let other = default_path(Path::new("postgres://bench@db.lab/other"), "group-2");
    assert_ne!(pg, other);
}

/// An event run's text says when fixed-policy notes moved by more than half a frame on
/// being placed again, and when no loopback latency could be measured for want of the
/// capture latency; neither line without cause.
#[test]
fn event_notes_tell_moved_fixed_notes_and_an_unread_capture_latency() {
    let run = |result: Value| RunView {
        id: results::RunId(3),
        probe: &results::probe_kind::EVENT,
        status: results::RunStatus::Complete,
        machine: results::Machine::default(),
        config: json!({"policy": "fixed"}),
        load: Value::Null,
        qos_requested: Value::Null,
        qos_granted: json!({"audio_thread": "SCHED_FIFO 70"}),
        flags: json!({"realtime": true}),
        result,
        error: None,
        started_mono_ns: 0,
        measurements: Vec::new(),
        events: Vec::new(),
        triggers: Vec::new(),
    };
    let moved = json!({"fixed_replacement": {"notes": 20, "moved_over_half_frame": 2,
        "shift_median_frames": 0.0, "shift_abs_max_frames": 3.84},
        "capture_port": "audiolat-sink:monitor_FL", "capture_latency_frames": null});
    let text = event::text(&[run(moved)]);
    assert!(
        text.contains("run 3: 2 of 20 fixed-policy notes moved by more than half a frame")
            && text.contains("median shift 0.0 frames, largest 3.8"),
        "{text}"
    );
    assert!(
        text.contains("did not report the capture latency of audiolat-sink:monitor_FL"),
        "{text}"
    );
    let still = json!({"fixed_replacement": {"notes": 20, "moved_over_half_frame": 0,
        "shift_median_frames": 0.0, "shift_abs_max_frames": 0.2},
        "capture_port": "audiolat-sink:monitor_FL", "capture_latency_frames": 0});
    let text = event::text(&[run(still)]);
    assert!(
        !text.contains("fixed-policy notes moved") && !text.contains("capture latency of"),
        "{text}"
    );
}

#[test]
fn the_graph_line_names_the_followed_driver_else_the_busiest_not_the_lowest_id() {
    let node = |id: u64, name: &str, quantum: u64, cycles: u64| {
        json!({"id": id, "name": name, "role": "driver", "quantum_frames": quantum,
               "rate_hz": 48000, "cycles": cycles, "errors": 0, "xruns": id})
    };
    let window = |followed: Value| {
        json!({"window_ms": 1000, "events": 10, "followed_driver": followed,
               "nodes": [node(19, "Dummy-Driver", 1024, 500), node(31, "audiolat-sink", 128, 375)]})
    };
    let graph = |followed: Value| {
        results::records::graph::GraphRecord::from_json(&json!({"driver": "audiolat-sink",
               "force_quantum": {"before": 0, "after": 0}, "force_rate": {"before": 0, "after": 0},
               "profiler": {"before": window(followed.clone()), "after": window(followed)}}))
        .unwrap()
    };
    // Followed: audiolat-sink (id 31), though Dummy-Driver has the lower id and more cycles.
    let line = graph_line(&graph(json!(31)));
    assert!(
        line.contains("first window: quantum 128, xruns 31,"),
        "{line}"
    );
    // Not known: the driver with the most cycles.
    let line = graph_line(&graph(Value::Null));
    assert!(
        line.contains("first window: quantum 1024, xruns 19,"),
        "{line}"
    );
}

/// An event sweep's run table and study table count a run's notes alike: a note of
/// unknown timing (just after an under-run) is not a missed one in either, and each has
/// its own column or words; the under-runs are the same start/steady in the run table as
/// the model's [`results::Dropouts`].
#[test]
fn the_run_table_and_the_study_table_count_missed_and_unknown_notes_alike() {
    let row = |seq: u64, missed: bool, known: bool| results::model::TriggerRow {
        seq,
        missed,
        latency_ns: known.then_some(8_000_000),
        wait_ns: known.then_some(1_000_000),
        lateness_ns: known.then_some(10_000),
        timing: if known { "backend" } else { "unknown" }.into(),
        ..Default::default()
    };
    let run = |id: i64, period: u64, triggers: Vec<results::model::TriggerRow>| RunView {
        id: results::RunId(id),
        probe: &results::probe_kind::EVENT,
        status: results::RunStatus::Complete,
        machine: results::Machine::default(),
        config: json!({"policy": "asap", "workload": "sine", "load": "none"}),
        load: Value::Null,
        qos_requested: Value::Null,
        qos_granted: Value::Null,
        flags: json!({"realtime": true}),
        result: json!({"period_frames": period, "buffer_frames": 2 * period, "rate_hz": 48000,
            "underruns": {"start": 2, "steady": 1, "skipped_cycles_start": 0, "skipped_cycles_steady": 1}}),
        error: None,
        started_mono_ns: 0,
        measurements: Vec::new(),
        events: Vec::new(),
        triggers,
    };
    // Run 1: one note of unknown timing, none missed; run 2: one missed.
    let runs = [
        run(1, 128, vec![row(0, false, true), row(1, false, false)]),
        run(2, 256, vec![row(0, false, true), row(1, true, true)]),
    ];
    let text = event::text(&runs);
    // The last columns: missed, unknown, under-runs, rt, steal (the words of the
    // columns before them may hold spaces: "10.0 us").
    let cell = |id: &str, from_end: usize| {
        let row: Vec<&str> = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(id))
            .unwrap()
            .split_whitespace()
            .collect();
        row[row.len() - from_end].to_string()
    };
    let (missed, unknown, underruns) = (5, 4, 3);
    assert!(
        text.contains("missed  unknown  under-runs   rt  steal"),
        "{text}"
    );
    assert_eq!(
        (cell("1", missed), cell("1", unknown)),
        ("0".into(), "1".into()),
        "{text}"
    );
    assert_eq!(
        (cell("2", missed), cell("2", unknown)),
        ("1".into(), "0".into()),
        "{text}"
    );
    assert_eq!(cell("1", underruns), "2/1", "{text}");
    assert!(text.contains("8.0 (1/2 timing unknown)"), "{text}");
    assert!(text.contains("8.0 (1/2 missed)"), "{text}");
    // The suite's table and the report's runs table say the same dropouts.
    let d = runs[0].dropouts();
    assert_eq!(
        crate::units::fmt_dropouts(&d).as_deref(),
        Some("1, 1 skipped")
    );
    let suite = suite::text(
        results::GroupId(1),
        &[suite::SuiteRow {
            label: "event",
            run_id: Some(results::RunId(1)),
            status: "complete",
            headline: None,
            dropouts: d,
            flags: &json!({}),
            why: None,
            note: "",
        }],
        None,
        std::path::Path::new("x.db"),
        None,
    );
    assert!(suite.contains("1, 1 skipped"), "{suite}");
}

/// An abusive stream that reached its sink at `received` Mbit/s.
fn abusive_stream(received_mbit_per_s: f64) -> Value {
    json!({"sent": 1000, "refused": 0, "offered_mbit_per_s": 1500.0, "received": 900,
        "received_mbit_per_s": received_mbit_per_s})
}

fn net_view(config: Value, flags: Value, result: Value) -> RunView {
    RunView {
        id: results::RunId(9),
        probe: &results::probe_kind::NET,
        status: results::RunStatus::Complete,
        machine: results::Machine::default(),
        config,
        load: Value::Null,
        qos_requested: Value::Null,
        qos_granted: Value::Null,
        flags,
        result,
        error: None,
        started_mono_ns: 0,
        measurements: Vec::new(),
        events: Vec::new(),
        triggers: Vec::new(),
    }
}

/// A reserved run that missed says why, from what it measured: the controller's own
/// lateness, the audio's wait in the service and its policy, the softirq threads' wait.
#[test]
fn an_experiment_row_of_a_reserved_run_that_missed_says_why() {
    let mut m = Measurement::from_histogram(
        "net",
        "end_to_end",
        "tf - t0",
        results::LatencyHistogram::new(10_000_000).unwrap(),
    );
    m.misses = Some(40);
    let mut run = net_view(
        fx::config(
            json!({"link": {"mbps": 1000.0, "reserve_mbps": 240.0, "by": "mclock"},
            "duration_s": 3.0, "warmup_s": 1.0}),
        ),
        json!({"host_steal_ns": 0}),
        fx::result(json!({"synth": fx::phase(
            fx::host(json!({"misses": 0,
                "net_thread_sched": {"on_cpu_ns": 1, "run_queue_wait_ns": 10}})),
            fx::controller(json!({"blocks_sent": 4135, "blocks_sent_late": 3, "lost": 0,
                "sender_thread": "SCHED_FIFO 70",
                "sender_sched": {"on_cpu_ns": 1, "run_queue_wait_ns": 2_000_000}})),
            json!({
                "service": {"discipline": "mclock", "link_mbps": 1000.0,
                    "thread": "SCHED_OTHER", "on_cpu_ns": 1, "run_queue_wait_ns": 1_612_000_000,
                    "flows": [{"sent": 10, "mbit_per_s": 148.5, "by_reservation": 10,
                        "kernel_refused": 0, "max_wait_ns": 8_100_000}]},
                "kernel_softirq": {"on_cpu_ns": 5, "run_queue_wait_ns": 300_000_000},
                "stream": abusive_stream(800.0)}),
        )})),
    );
    run.measurements.push(m);
    let row = experiment::ExperimentRow::of_run("240 reserved", "end_to_end", "-", &run);
    assert_eq!(
        row.note,
        "why it missed: the controller itself sent 3 blocks late (its own pacing); the audio's datagrams waited up to 8.10 ms in the network service's queue; the network service's thread ran at SCHED_OTHER: on a busy machine it waits behind every other task; the kernel's softirq threads (tc's queue, the veth) waited 300.00 ms for a CPU (8% of the run)"
    );
    // Without a reservation, misses are the experiment's point: no why.
    run.config =
        fx::config(json!({"link": {"mbps": 1000.0, "reserve_mbps": null, "by": "mclock"}}));
    let row = experiment::ExperimentRow::of_run("none", "end_to_end", "-", &run);
    assert!(row.note.is_empty(), "{}", row.note);
}

/// A reserved run whose late blocks the controller split says, block by block, which
/// part of their time made them late (with the threads' waits for a CPU), and the blocks
/// never answered: not the controller's late sends or the host's own `t2 - t1` misses
/// over the whole run, which need not be the late blocks (a sender late against its
/// schedule keeps a block's time if its first packet was late too).
#[test]
fn an_experiment_row_names_the_part_that_made_each_late_block_late() {
    let mut m = Measurement::from_histogram(
        "net",
        "end_to_end",
        "tf - t0",
        results::LatencyHistogram::new(10_000_000).unwrap(),
    );
    m.misses = Some(23);
    let mut run = net_view(
        fx::config(
            json!({"link": {"mbps": 1000.0, "reserve_mbps": 240.0, "by": "tc"},
            "duration_s": 3.0, "warmup_s": 1.0}),
        ),
        json!({"host_steal_ns": 20_000_000}),
        fx::result(json!({"synth": fx::phase(
            fx::host(json!({"responses_past_deadline": 22,
                "net_thread_sched": {"on_cpu_ns": 1, "run_queue_wait_ns": 137_400_000}})),
            fx::controller(json!({"blocks_sent": 4135, "blocks_sent_late": 1727,
                "answers_received_late": 22, "answers_received_after_end": 0, "answers_not_received": 1,
                "miss_causes": {"sent_late": 2, "to_host": 0, "host": 20, "way_back": 0, "unsplit": 0},
                "sender_sched": {"on_cpu_ns": 1, "run_queue_wait_ns": 44_300_000}})),
            json!({"kernel_softirq": {"on_cpu_ns": 5, "run_queue_wait_ns": 1_000_000},
                "stream": abusive_stream(840.0)}),
        )})),
    );
    run.measurements.push(m);
    let row = experiment::ExperimentRow::of_run("240 reserved", "end_to_end", "-", &run);
    assert_eq!(
        row.note,
        "why it missed: of the 22 blocks answered late, by the largest part of each one's time: 2 the controller sent late (their packets spread beyond a block's 0.68 ms; its sender waited 44.30 ms for a CPU over the run), 0 waited on the way to the host (the link's queue and the kernel's path), 20 the host answered late after their last packet arrived (its synth, or its thread held off; its network thread waited 137.40 ms for a CPU over the run), 0 came back late; 1 block not answered by the run's end; host steal 20.00 ms"
    );
    // The run's own view says the same.
    let text = net::text(&run);
    assert!(
        text.contains("  of the 22 blocks answered late, by the largest part of each one's time: 2 the controller sent late"),
        "{text}"
    );
    // One block: said so.
    let mut synth = run.result_as::<NetResultRecord>().unwrap().synth.unwrap();
    synth.controller.answers_received_late = Some(1);
    synth.controller.miss_causes = Some(MissCauses {
        sent_late: 0,
        to_host: 0,
        host: 1,
        way_back: 0,
        unsplit: 0,
    });
    assert!(net::late_causes_text(&synth)
        .unwrap()
        .starts_with("of the 1 block answered late,"));
    // A host in another process: nothing split, nothing said of it.
    synth.controller.miss_causes = None;
    assert_eq!(net::late_causes_text(&synth), None);
}

/// One end's run is told in words, not as its raw record: each documented drop counter
/// apart, the controller's own lateness, the blocks counted from where.
#[test]
fn a_net_ends_text_words_its_counters_and_keeps_the_drop_counters_apart() {
    let host = |counts: Value| {
        let mut r = fx::host(json!({"counted_from_block": 275, "peer": "127.0.0.1:19701",
            "peer_changes": 0, "kernel_dropped": 0, "blocks_incomplete": 1,
            "drops": fx::drops(json!({"wrong_size": 2, "bad_magic": 0, "non_finite": 3,
                "foreign": 5, "unconfirmed": 1}))}));
        r.as_object_mut()
            .unwrap()
            .extend(counts.as_object().unwrap().clone());
        net::end_text(&net_view(json!({}), json!({"role": "respond"}), r))
    };
    // A run stored under today's names, and one an older audiolat stored: read alike.
    for text in [
        host(
            json!({"answers_sent": 2734, "answers_refused": 0, "answers_in_warmup": 275,
                "responses_past_deadline": 21}),
        ),
        host(json!({"answered": 2734, "answered_in_warmup": 275, "misses": 21, "send_dropped": 0})),
    ] {
        assert!(!text.contains('{'), "{text}");
        assert!(
            text.contains("host: 2734 answers sent for the blocks after the warm-up (blocks from 275 on, answering 127.0.0.1:19701), 0 more the kernel would not take, 275 blocks answered in the warm-up; 1 incomplete blocks; packets dropped: 2 wrong size, 3 non finite, 5 foreign, 1 unconfirmed;"),
            "{text}"
        );
    }
    let controller = |counts: Value| {
        let mut r = fx::controller(json!({"blocks_sent": 2757, "blocks_sent_late": 12,
            "duplicate_answers": 0, "unknown_answers": 0,
            "dropped_answers": fx::drops(json!({"foreign": 100, "bad_magic": 0})),
            "answers_dropped_by_kernel": 3, "packets_sent": 44112, "packets_refused": 0}));
        r.as_object_mut()
            .unwrap()
            .extend(counts.as_object().unwrap().clone());
        let flags = json!({"role": "emulate", "sender_late_blocks": 12});
        net::end_text(&net_view(json!({}), flags, r))
    };
    // What an older run did not count (answers after the end) is `-`, not 0.
    for (text, after_end) in [
        (
            controller(
                json!({"answers_received_on_time": 2750, "answers_received_late": 5,
                    "answers_received_after_end": 0, "answers_not_received": 2}),
            ),
            "0",
        ),
        (
            controller(json!({"on_time": 2750, "late": 5, "lost": 2})),
            "-",
        ),
    ] {
        assert!(!text.contains('{'), "{text}");
        assert!(
            text.contains(&format!("controller: 2757 blocks sent (12 late by the controller itself); answers received: 2750 on time, 5 late, {after_end} after the run's end; 2 blocks with no answer received; 0 duplicate and 0 unknown answers; answers dropped: 100 foreign; 3 more by the kernel on a full queue;")),
            "{text}"
        );
        assert!(
            text.contains("note: SENDER LATE: the run's own controller sent 12 blocks late"),
            "{text}"
        );
    }
}

/// A net run's blocks the controller got no answer for are not all "lost on the way":
/// those the host answered are said apart, and a controller that sent late says so.
#[test]
fn a_net_runs_text_does_not_blame_the_network_for_blocks_the_host_answered() {
    let run = |controller: Value, host: Value| {
        let mut phase = fx::phase(fx::host(host), fx::controller(controller), json!({}));
        phase["controller"]["blocks_sent"] = json!(4255);
        phase["controller"]["blocks_sent_late"] = json!(4255);
        phase["controller"]["counted_from_block"] = json!(1379);
        phase["host"]["counted_from_block"] = json!(1379);
        phase["host"]["blocks_incomplete"] = json!(0);
        net::text(&net_view(
            fx::config(json!({"pads_pressed": [0], "poll": "block"})),
            json!({"sender_late_blocks": 4255}),
            fx::result(json!({"late_send_ns": 725_624, "synth": phase})),
        ))
    };
    // Today's names, and an older run's: read alike.
    for text in [
        run(
            json!({"answers_received_on_time": 0, "answers_received_late": 0,
                "answers_received_after_end": 0, "answers_not_received": 4255}),
            json!({"answers_sent": 4255, "answers_refused": 0, "responses_past_deadline": 0}),
        ),
        run(
            json!({"on_time": 0, "late": 0, "lost": 4255}),
            json!({"answered": 4255, "misses": 0, "send_dropped": 0}),
        ),
    ] {
        assert!(!text.contains("lost on the way ("), "{text}");
        assert!(
            text.contains("0 missed deadlines of 4255 blocks (deadline 1.41 ms"),
            "{text}"
        );
        assert!(
            text.contains("and 4255 of the 4255 blocks sent got no answer by the run's end: 4255 answered by the host whose answer the controller never received"),
            "{text}"
        );
        assert!(
            text.contains("the controller itself sent 4255 of the 4255 blocks late (a packet more than 725.6 us behind its schedule"),
            "{text}"
        );
        assert!(text.contains("note: SENDER LATE"), "{text}");
    }
    // Blocks answered after the run's end are said apart from those never received.
    let text = run(
        json!({"answers_received_on_time": 4000, "answers_received_late": 5,
            "answers_received_after_end": 200, "answers_not_received": 50}),
        json!({"answers_sent": 4220, "answers_refused": 0, "responses_past_deadline": 3}),
    );
    assert!(
        text.contains("and 250 of the 4255 blocks sent got no answer by the run's end: 200 answered after it (the drain after the last packet), 15 answered by the host whose answer the controller never received (refused by the host's kernel, lost on the way back, or after it stopped listening), 35 the host never answered (0 blocks reached it incomplete: packets lost on the way there); 255 of 4255 missed in all"),
        "{text}"
    );
}

/// A run a dead process left, as recovery closes it: its configuration, its last
/// checkpoint, and nothing of what only its end stores (flags, counters, grants).
fn killed(probe: &str, config: Value, result: Value) -> RunView {
    RunView {
        id: results::RunId(1),
        probe: results::probe_kind::ProbeKind::stored(probe),
        status: results::RunStatus::Interrupted,
        machine: results::Machine::default(),
        config,
        load: json!({"spec": "none"}),
        qos_requested: json!({}),
        qos_granted: json!({}),
        flags: json!({}),
        result,
        error: Some("process 1 ended without closing the run".into()),
        started_mono_ns: 0,
        measurements: Vec::new(),
        events: Vec::new(),
        triggers: Vec::new(),
    }
}

/// What no view of a killed run may print: a 0, `null`, `?` or `NO` nobody measured.
fn invents(text: &str) -> Vec<&'static str> {
    [
        "null",
        "?",
        "0+-",
        "0/0",
        "after 0 cycles",
        "in 0.0 s",
        " NO ",
        "no cycle ran",
        "(external)",
        "period 0",
    ]
    .into_iter()
    .filter(|s| text.contains(s))
    .collect()
}

#[test]
fn a_killed_run_shows_what_it_stored_and_dashes_for_the_rest() {
    // Nothing but its configuration (killed before any checkpoint, or recovered by an
    // older audiolat).
    for (probe, config) in [
        (
            "jitter",
            json!({"period_ns": 488281, "mode": "nanosleep", "load": "none"}),
        ),
        (
            "roundtrip",
            json!({"loop": "software loop", "load": "none"}),
        ),
        (
            "event",
            json!({"trigger": "timer", "workload": "sine", "load": "none", "policy": "asap"}),
        ),
    ] {
        let run = killed(probe, config, json!({}));
        let text = match probe {
            "jitter" => jitter::text(&run),
            "roundtrip" => roundtrip::text(std::slice::from_ref(&run)),
            _ => event::text(std::slice::from_ref(&run)),
        };
        assert!(
            invents(&text).is_empty(),
            "{probe}: {:?} in\n{text}",
            invents(&text)
        );
    }
    // An event run killed before its first trigger counted no note: its missed notes,
    // under-runs, real-time and steal cells are `-`, not 0.
    let run = killed(
        "event",
        json!({"trigger": "timer", "workload": "sine", "load": "none", "policy": "asap"}),
        json!({}),
    );
    let text = event::text(std::slice::from_ref(&run));
    let row: Vec<&str> = text
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .unwrap_or_else(|| panic!("{text}"))
        .split_whitespace()
        .collect();
    assert_eq!(row[row.len() - 4..], ["-", "-/-", "-", "-"], "{text}");
    // Recovered from its configuration and its checkpoint: those figures are shown.
    let run = killed(
        "roundtrip",
        json!({"loop": "software loop", "load": "none"}),
        json!({"backend": "jack", "rate_hz": 44100, "period_frames": 128,
               "playback_latency_frames": 0, "capture_latency_frames": 0,
               "server": {"name": "s", "private": true, "command_line": "jackd -n s -d dummy"},
               "windows": 20, "roundtrip_frames": {"count": 18, "mean": 128.0, "min": 128.0,
               "max": 128.0, "stdev": 0.0}}),
    );
    let run = RunView {
        flags: json!({"windows_ok": 18}),
        ..run
    };
    let text = roundtrip::text(std::slice::from_ref(&run));
    assert!(invents(&text).is_empty(), "{:?} in\n{text}", invents(&text));
    assert!(text.contains("jack backend (- model), 44100 Hz"), "{text}");
    assert!(text.contains("(private: jackd -n s -d dummy)"), "{text}");
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .unwrap_or_else(|| panic!("{text}"));
    for cell in ["128", "0+0", "18/20", "128.000", "2.902", "-/-"] {
        assert!(row.contains(cell), "{cell} in {row}");
    }
    // An event run's checkpoint, read as its record: the stream and model figures shown.
    let run = killed(
        "event",
        json!({"trigger": "timer", "workload": "sine", "load": "none", "policy": "asap",
               "backend": "jack", "rate_hz": 48000, "period_frames": 128,
               "server": {"name": "s", "private": true, "command_line": "jackd -d dummy",
                          "quantum_granted_frames": null}}),
        json!({"backend": "jack", "rate_hz": 48000, "period_frames": 128,
               "playback_latency_frames": 256,
               "server": {"name": "s", "private": true, "command_line": "jackd -d dummy",
                          "quantum_granted_frames": null},
               "late_triggers": 0, "model_latency_ms": 4.0, "buffer_frames": 256}),
    );
    let text = event::text(std::slice::from_ref(&run));
    assert!(invents(&text).is_empty(), "{:?} in\n{text}", invents(&text));
    assert!(text.contains("timer trigger"), "{text}");
    assert!(text.contains("jack backend (- model), 48000 Hz"), "{text}");
    assert!(text.contains("(private: jackd -d dummy)"), "{text}");
    let row: Vec<&str> = text
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .unwrap_or_else(|| panic!("{text}"))
        .split_whitespace()
        .collect();
    assert_eq!(row[1..4], ["128", "256", "sine"], "{text}");
    assert!(row.contains(&"4.00"), "{text}");
}
