use super::*;
use results::RunView;

fn stream(capture: Option<&str>, start: Value) -> Value {
    json!({"client": "hw:Loopback,0,0", "capture_port": capture, "duplex_start": start})
}

#[test]
fn the_device_line_says_what_was_granted_and_how_the_duplex_started() {
    let granted = json!({"rate_hz": 48000, "period_frames": 1024, "buffer_frames": 2048,
        "format": "S16_LE", "access": "RW_INTERLEAVED", "playback_channels": 1,
        "capture_channels": 1, "linked": true, "link_error": null});
    let start = json!({"linked": true, "skew_frames": 0, "attempts": 2, "starts": 1,
        "steady_offset": false});
    let line = device_line(&stream(Some("hw:Loopback,1,0"), start), &granted);
    assert_eq!(
        line,
        "device `hw:Loopback,0,0` -> `hw:Loopback,1,0`: granted S16_LE, 1 channel(s) out, 1 in, 48000 Hz, period 1024 frames, buffer 2048 frames (2 periods), RW_INTERLEAVED; linked, started aligned (2 starts)"
    );
    // Not linked: why, and the skew measured instead; a value nobody read is "-".
    let granted = json!({"rate_hz": 48000, "period_frames": 1024, "format": "FLOAT_LE",
        "access": "RW_INTERLEAVED", "playback_channels": 1, "capture_channels": 1,
        "linked": false, "link_error": "Function not implemented"});
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
    m.detail = json!({"sent": 1379});
    assert_eq!(
        deadline_line(&m).unwrap(),
        "end_to_end: 1379 of 1379 missed the deadline of 1.41 ms"
    );
    // ... and says nothing when there is nothing to count.
    m.detail = json!({});
    m.misses = Some(0);
    assert_eq!(deadline_line(&m), None);
}

#[test]
fn stats_without_values_read_as_no_count() {
    let s = JsonStats::of(&json!({"count": 0, "mean": null}));
    assert_eq!(s.count, 0);
    let s = JsonStats::of(&json!({"count": 3, "mean": 2.5, "min": 1.0, "max": 4.0, "stdev": 1.0}));
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
        probe: "net".into(),
        status: results::RunStatus::Complete,
        machine: results::Machine::default(),
        config: json!({"link": {"mbps": 1000.0}}),
        load: Value::Null,
        qos_requested: Value::Null,
        qos_granted: Value::Null,
        flags: json!({}),
        result: json!({"synth": {"controller": {"blocks_sent": 100, "lost": 3},
            "stream": {"received_mbit_per_s": 400.0}}}),
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
        row.note.contains("only 400 Mbit/s") && row.note.contains("a 1000 Mbit/s link"),
        "{}",
        row.note
    );
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
        "2 of 100 blocks missed the 1.41 ms deadline; 1 lost"
    );
    assert!(net_note(Some((0, 1, 0)), Some(5e5)).contains("; the synth adds "));
}

#[test]
fn a_report_that_cannot_be_written_says_where_it_was_to_go() {
    let data = crate::data::ReportData::default();
    let dir = std::env::temp_dir().join("audiolat-no-such-dir-for-a-report");
    let db = dir.join("a.db");
    let e = crate::html::write(&data, None, &db, "suite-1").unwrap_err();
    assert_eq!(e.path, dir.join("audiolat-report-suite-1.html"));
    assert!(e.to_string().starts_with("writing the report "), "{e}");
    assert!(std::error::Error::source(&e).is_some());
}

/// An event run's text says when fixed-policy notes moved by more than half a frame on
/// being placed again, and when no loopback latency could be measured for want of the
/// capture latency; neither line without cause.
#[test]
fn event_notes_tell_moved_fixed_notes_and_an_unread_capture_latency() {
    let run = |result: Value| RunView {
        id: results::RunId(3),
        probe: "event".into(),
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
        json!({"driver": "audiolat-sink",
               "force_quantum": {"before": 0, "after": 0}, "force_rate": {"before": 0, "after": 0},
               "profiler": {"before": window(followed.clone()), "after": window(followed)}})
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
