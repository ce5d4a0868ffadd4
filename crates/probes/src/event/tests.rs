//! Unit tests of the event probe.

use super::*;

#[test]
fn names_parse_and_print() {
    for s in ["timer", "key", "midi"] {
        assert_eq!(s.parse::<TriggerSource>().unwrap().to_string(), s);
    }
    for s in ["asap", "fixed"] {
        assert_eq!(s.parse::<NotePolicy>().unwrap().to_string(), s);
    }
    assert!("gpio"
        .parse::<TriggerSource>()
        .unwrap_err()
        .contains("timer, key or midi"));
    assert!("late"
        .parse::<NotePolicy>()
        .unwrap_err()
        .contains("asap or fixed"));
}

#[test]
fn configs_are_checked() {
    let mut c = EventConfig::new(TriggerSource::Timer, NotePolicy::Asap);
    assert!(c.validate().is_ok());
    c.triggers = 0;
    assert!(matches!(c.validate(), Err(EventError::NoTriggers)));
    c.triggers = 5;
    c.spacing_ms = 10.0;
    assert!(c.validate().unwrap_err().to_string().contains("silence"));
}

#[test]
fn stats_are_exact() {
    let s = Stats::of([1.0, 2.0, 3.0, 4.0]);
    assert_eq!(
        (s.count, s.mean, s.min, s.max, s.median),
        (4, 2.5, 1.0, 4.0, 3.0)
    );
    assert!((s.stdev - 1.2909944).abs() < 1e-6);
    assert_eq!(Stats::of([]).count, 0);
}

#[test]
fn trigger_times_are_spread_over_the_period() {
    // The fractional part added to each spacing is uniform: its deciles are filled.
    let mut rng = 7;
    let mut bins = [0u32; 10];
    for _ in 0..10_000 {
        let u = (splitmix(&mut rng) >> 11) as f64 / (1u64 << 53) as f64;
        bins[(u * 10.0) as usize] += 1;
    }
    assert!(bins.iter().all(|&b| (900..1100).contains(&b)), "{bins:?}");
}

/// The fixed policy reads a pending trigger's frame again on the rendering cycle's time
/// line: a trigger seen by a cycle whose checked start came from the callbacks (80 us
/// after the server's), rendered by one whose start is the server's again, starts one
/// period after its time on the latter, not on the former (4 frames later).
#[test]
fn a_fixed_note_is_placed_on_the_time_line_it_is_rendered_on() {
    use engine::audio::TimingSource;
    let config = EventConfig::new(TriggerSource::Timer, NotePolicy::Fixed);
    let (mut trigger_tx, triggers) = rtrb::RingBuffer::new(4);
    let (notes_tx, mut notes) = rtrb::RingBuffer::new(4);
    let (onsets_tx, _onsets) = rtrb::RingBuffer::new(4);
    let mut p = new_processor(&config, triggers, notes_tx, onsets_tx, Arc::default());
    let frames = 256u32;
    let server_ns = |k: u64| steady_cycle(k, frames, 0, 0, TimingSource::Backend).nominal_ns;
    // Every callback starts 1 ms after its cycle.
    let cycle =
        |k: u64, offset_ns: u64, source| steady_cycle(k, frames, 1_000_000, offset_ns, source);
    p.prepare(&stream_info(frames, None));
    let run = process_cycle;
    // A trigger 40 frames into cycle 11 by the server's clock, seen by cycle 11's
    // callback (1 ms late) on the callbacks' envelope (80 us after the server's start):
    // on that time line it is 36.2 frames in, so its note would go to offset 36 of
    // cycle 12; cycle 12's start is the server's, on which the note belongs at 40.
    let t_ns = server_ns(11) + (40.0 * 1e9 / 48_000.0) as u64;
    trigger_tx.push(Trigger { seq: 0, t_ns }).unwrap();
    run(&mut p, &cycle(11, 80_000, TimingSource::Callbacks));
    assert!(notes.pop().is_err(), "not due in cycle 11");
    run(&mut p, &cycle(12, 0, TimingSource::Backend));
    let note = notes.pop().expect("started in cycle 12");
    assert!(!note.late);
    assert_eq!((note.cycle.index, note.offset), (12, 40));
    // The move is recorded with the note: 80 us is 3.84 frames at 48 kHz.
    let shift = note.shift_frames.expect("a fixed note placed by its time");
    assert!((shift - 3.84).abs() < 0.01, "{shift}");
    // A trigger whose time line does not move has no shift.
    let t_ns = server_ns(13) + (100.0 * 1e9 / 48_000.0) as u64;
    trigger_tx.push(Trigger { seq: 1, t_ns }).unwrap();
    run(&mut p, &cycle(13, 0, TimingSource::Backend));
    run(&mut p, &cycle(14, 0, TimingSource::Backend));
    let note = notes.pop().expect("started in cycle 14");
    assert_eq!((note.cycle.index, note.offset), (14, 100));
    assert!(note.shift_frames.unwrap().abs() < 0.01);
}

/// A trigger stamped while a callback ran (after its start, before it read the ring: a
/// loaded machine stretches that to tens of microseconds) is rendered by the next
/// callback, the first that started after it: its wait is then never shorter than minus
/// that callback's lateness. One stamped before the callback started is taken at once.
#[test]
fn a_trigger_stamped_while_a_callback_runs_waits_for_the_next() {
    use engine::audio::TimingSource;
    let config = EventConfig::new(TriggerSource::Timer, NotePolicy::Asap);
    let (mut trigger_tx, triggers) = rtrb::RingBuffer::new(4);
    let (notes_tx, mut notes) = rtrb::RingBuffer::new(4);
    let (onsets_tx, _onsets) = rtrb::RingBuffer::new(4);
    let mut p = new_processor(&config, triggers, notes_tx, onsets_tx, Arc::default());
    let frames = 128u32;
    // Every callback starts 60 us after its cycle, whose start is the server's.
    let cycle = |k: u64| steady_cycle(k, frames, 60_000, 0, TimingSource::Backend);
    let start_ns = |k: u64| cycle(k).nominal_ns;
    p.prepare(&stream_info(frames, None));
    let run = process_cycle;
    // Stamped 100 us after cycle 5's start: 40 us after its callback started.
    let late = start_ns(5) + 100_000;
    trigger_tx.push(Trigger { seq: 0, t_ns: late }).unwrap();
    run(&mut p, &cycle(5));
    assert!(notes.pop().is_err(), "cycle 5's callback started before it");
    run(&mut p, &cycle(6));
    let note = notes.pop().expect("rendered by cycle 6");
    assert_eq!((note.cycle.index, note.offset), (6, 0));
    let wait = note.cycle.checked_frame_time_ns(0.0).unwrap() - late as f64;
    let lateness = note.cycle.checked_lateness_ns().unwrap() as f64;
    assert!(wait >= -lateness, "wait {wait} ns, lateness {lateness} ns");
    // Stamped 10 us before cycle 7's callback started (inside its lateness): taken there.
    let early = start_ns(7) + 50_000;
    trigger_tx
        .push(Trigger {
            seq: 1,
            t_ns: early,
        })
        .unwrap();
    run(&mut p, &cycle(7));
    let note = notes.pop().expect("rendered by cycle 7");
    assert_eq!((note.cycle.index, note.offset), (7, 0));
}

/// After a disruption (here: skipped frames ending at 2000) following the oldest
/// awaited note's start, an onset that fits a later awaited note at the loop's delay,
/// where the oldest's (lost) does not, is the later note's; the oldest is given up and
/// the move counted. One that fits the oldest (a loop longer than the spacing) stays the
/// oldest's.
#[test]
fn an_onset_goes_to_the_note_it_fits_at_the_loops_delay() {
    let config = EventConfig::new(TriggerSource::Timer, NotePolicy::Fixed);
    let (_trigger_tx, triggers) = rtrb::RingBuffer::new(4);
    let (notes_tx, _notes) = rtrb::RingBuffer::new(4);
    let (onsets_tx, mut onsets) = rtrb::RingBuffer::new(4);
    let counters = Arc::new(Counters::default());
    let mut p = new_processor(&config, triggers, notes_tx, onsets_tx, counters.clone());
    p.loop_frames = 128;
    p.disrupted_until = Some(2000);
    p.awaiting[0] = Some(Awaiting {
        seq: 7,
        from_frame: 1000,
    });
    p.awaiting[1] = Some(Awaiting {
        seq: 8,
        from_frame: 2440,
    });
    // Note 8's onset, 128 frames after its start: note 7's was lost.
    assert_eq!(p.onset_owner(0, 1000, 2568), 1);
    let lost = onsets.pop().unwrap();
    assert_eq!((lost.seq, lost.captured_frame), (7, None));
    assert!(p.awaiting[0].is_none());
    // A loop of 1500 frames, longer than the spacing: note 8's onset is its own.
    p.loop_frames = 1500;
    p.awaiting[0] = Some(Awaiting {
        seq: 9,
        from_frame: 3880,
    });
    assert_eq!(p.onset_owner(1, 2440, 3940), 1);
    assert!(onsets.pop().is_err());
    assert_eq!(counters.onsets_moved.load(Ordering::Relaxed), 1);
}

/// A loop longer than the trigger spacing (1500 frames, notes 1440 apart) whose delay
/// steps by more than half a spacing (+800 frames) with no under-run: the onset is the
/// oldest note's, measured as a step; no note is given up, no onset moved.
#[test]
fn a_latency_step_without_an_underrun_is_measured_as_a_step() {
    let config = EventConfig::new(TriggerSource::Timer, NotePolicy::Fixed);
    let (_trigger_tx, triggers) = rtrb::RingBuffer::new(4);
    let (notes_tx, _notes) = rtrb::RingBuffer::new(4);
    let (onsets_tx, mut onsets) = rtrb::RingBuffer::new(4);
    let counters = Arc::new(Counters::default());
    let mut p = new_processor(&config, triggers, notes_tx, onsets_tx, counters.clone());
    p.loop_frames = 1500;
    p.awaiting[0] = Some(Awaiting {
        seq: 3,
        from_frame: 1000,
    });
    p.awaiting[1] = Some(Awaiting {
        seq: 4,
        from_frame: 2440,
    });
    // Note 3's onset 2300 frames after its start: it fits note 4 better (860 vs 1500),
    // but nothing was lost: it is note 3's.
    assert_eq!(p.onset_owner(0, 1000, 3300), 0);
    assert!(onsets.pop().is_err(), "no note given up");
    assert!(p.awaiting[1].is_some());
    assert_eq!(counters.onsets_moved.load(Ordering::Relaxed), 0);
    // A disruption before note 3 started is no evidence either.
    p.disrupted_until = Some(900);
    assert_eq!(p.onset_owner(0, 1000, 3300), 0);
    assert!(onsets.pop().is_err());
}

/// Cycle `k` of a steady 48 kHz stream of `frames`-frame periods starting at 1 s: its
/// callback `callback_after_ns` after its start, its checked start `checked_after_ns`
/// after it, from `source`.
fn steady_cycle(
    k: u64,
    frames: u32,
    callback_after_ns: u64,
    checked_after_ns: u64,
    source: engine::audio::TimingSource,
) -> Cycle {
    let period_ns = f64::from(frames) * 1e9 / 48_000.0;
    let start_ns = 1_000_000_000 + (k as f64 * period_ns) as u64;
    Cycle {
        index: k,
        frames,
        first_frame: k * u64::from(frames),
        nominal_ns: start_ns,
        period_ns,
        callback_ns: start_ns + callback_after_ns,
        checked: Some(engine::audio::CheckedStart {
            ns: start_ns + checked_after_ns,
            period_ns,
            source,
        }),
        overran: false,
    }
}

/// Runs one playback-only cycle with no MIDI through the processor.
fn process_cycle(p: &mut EventProcessor, c: &Cycle) {
    let mut out = vec![0.0f32; c.frames as usize];
    let mut io = Io {
        output: &mut out,
        input: None,
        note_ons: &[],
        midi_dropped: 0,
    };
    p.process(c, &mut io);
}

/// A 48 kHz test stream of `frames`-frame periods, with `capture` latency.
fn stream_info(frames: u32, capture: Option<u32>) -> StreamInfo {
    StreamInfo {
        backend: engine::backend::BackendKind::Jack,
        model: engine::audio::Model::Pull,
        sample_rate_hz: 48_000,
        period_frames: frames,
        playback_latency_frames: 0,
        capture_latency_frames: capture,
        client_name: "t".into(),
        playback_ports: vec![],
        capture_port: None,
        midi_port: None,
        server: engine::audio::ServerInfo {
            name: "t".into(),
            private: true,
            command_line: None,
            version: None,
            quantum_asked_frames: None,
            quantum_granted_frames: None,
            rate_asked_hz: None,
            rate_granted_hz: None,
        },
        clock_offset_ns: 0,
    }
}

/// The loopback latency is measured from the capture latency the stream reported; where
/// it was not read, none is (absent, not computed as if it were 0).
#[test]
fn no_loopback_latency_without_the_capture_latency() {
    let config = EventConfig::new(TriggerSource::Timer, NotePolicy::Fixed);
    let row = TriggerRow {
        note_frame: 48_000,
        wait_ns: Some(5_000_000),
        ..TriggerRow::default()
    };
    // Onset 480 frames after the note, 96 of them the capture latency: 8 ms + the wait.
    let c = new_collector(&config, &stream_info(256, Some(96)), 0);
    assert_eq!(c.loopback_ns(&row, Some(48_480)), Some(13_000_000));
    assert_eq!(c.loopback_ns(&row, None), None);
    let c = new_collector(&config, &stream_info(256, None), 0);
    assert_eq!(c.loopback_ns(&row, Some(48_480)), None);
}

/// The processor learns of a disruption from its cycles: frames skipped before a cycle,
/// or a cycle whose start is not known (after an xrun), marks the stream disrupted up to
/// that cycle's end; cycles that follow on are no disruption.
#[test]
fn skipped_frames_and_unknown_starts_are_disruptions() {
    use engine::audio::{CheckedStart, TimingSource};
    let config = EventConfig::new(TriggerSource::Timer, NotePolicy::Asap);
    let (_trigger_tx, triggers) = rtrb::RingBuffer::new(4);
    let (notes_tx, _notes) = rtrb::RingBuffer::new(4);
    let (onsets_tx, _onsets) = rtrb::RingBuffer::new(4);
    let mut p = new_processor(&config, triggers, notes_tx, onsets_tx, Arc::default());
    let frames = 256u32;
    p.prepare(&stream_info(frames, None));
    let period_ns = f64::from(frames) * 1e9 / 48_000.0;
    let cycle = |k: u64, known: bool| Cycle {
        index: k,
        frames,
        first_frame: k * u64::from(frames),
        nominal_ns: (k as f64 * period_ns) as u64,
        period_ns,
        callback_ns: (k as f64 * period_ns) as u64,
        checked: known.then_some(CheckedStart {
            ns: (k as f64 * period_ns) as u64,
            period_ns,
            source: TimingSource::Backend,
        }),
        overran: false,
    };
    let mut out = vec![0.0f32; frames as usize];
    let mut run = |p: &mut EventProcessor, c: &Cycle| {
        let mut io = Io {
            output: &mut out,
            input: None,
            note_ons: &[],
            midi_dropped: 0,
        };
        p.process(c, &mut io);
    };
    run(&mut p, &cycle(0, true));
    run(&mut p, &cycle(1, true));
    assert_eq!(p.disrupted_until, None);
    // Cycle 2 skipped.
    run(&mut p, &cycle(3, true));
    assert_eq!(p.disrupted_until, Some(4 * 256));
    run(&mut p, &cycle(4, true));
    assert_eq!(p.disrupted_until, Some(4 * 256));
    run(&mut p, &cycle(5, false));
    assert_eq!(p.disrupted_until, Some(6 * 256));
}

/// Triggers that pile up while the audio thread is held off (more than it has note
/// slots) are none of them dropped: those without a slot wait in the ring and start,
/// late, in the next cycles.
#[test]
fn triggers_beyond_the_note_slots_wait_for_a_later_cycle_and_none_is_dropped() {
    let config = EventConfig::new(TriggerSource::Timer, NotePolicy::Asap);
    let many = super::processor::MAX_SCHEDULED + 8;
    let (mut trigger_tx, triggers) = rtrb::RingBuffer::new(2 * many);
    let (notes_tx, mut notes) = rtrb::RingBuffer::new(2 * many);
    let (onsets_tx, _onsets) = rtrb::RingBuffer::new(4);
    let counters: Arc<super::processor::Counters> = Arc::default();
    let mut p = new_processor(&config, triggers, notes_tx, onsets_tx, counters.clone());
    let frames = 256u32;
    let period_ns = f64::from(frames) * 1e9 / 48_000.0;
    let info = stream_info(frames, None);
    p.prepare(&info);
    for seq in 0..many as u64 {
        trigger_tx
            .push(Trigger {
                seq,
                t_ns: 1_000_000_000,
            })
            .unwrap();
    }
    let mut out = vec![0.0f32; frames as usize];
    for k in 0..4u64 {
        let ns = 1_000_000_000 + (k as f64 * period_ns) as u64;
        let c = Cycle {
            index: k,
            frames,
            first_frame: k * u64::from(frames),
            nominal_ns: ns,
            period_ns,
            callback_ns: ns,
            checked: None,
            overran: false,
        };
        let mut io = Io {
            output: &mut out,
            input: None,
            note_ons: &[],
            midi_dropped: 0,
        };
        p.process(&c, &mut io);
    }
    let mut started = 0;
    while notes.pop().is_ok() {
        started += 1;
    }
    assert_eq!(
        counters
            .notes_dropped
            .load(std::sync::atomic::Ordering::Relaxed)
            + counters
                .triggers_dropped
                .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
    assert_eq!(started, many);
}

/// The configuration and the stream's parts as stored before they were records
/// (`json!`, key by key): the records write the same JSON.
#[test]
fn the_records_write_the_json_stored_before() {
    use results::records::stream::{AlsaGrantedRecord, StreamConfigRecord, StreamRecord};
    use results::records::Record;
    let mut c = EventConfig::new(TriggerSource::Timer, NotePolicy::Fixed);
    c.loopback_threshold = 0.3;
    c.frequency_hz = 997.5;
    let before = json!({
        "trigger": c.source.to_string(),
        "policy": c.policy.to_string(),
        "triggers": c.triggers,
        "workload": c.workload.to_string(),
        "voices": c.workload.voices(),
        "frequency_hz": c.frequency_hz,
        "note_ms": c.note_ms,
        "spacing_ms": c.spacing_ms,
        "warmup_ms": c.warmup_ms,
        "seed": c.seed,
        "trigger_policy": c.trigger_policy.to_string(),
        "gpio": c.gpio.as_ref().map(|g| g.to_string()),
        "loopback_threshold": c.loopback_threshold,
        "lock_memory": c.lock_memory,
    });
    let mut info = stream_info(128, Some(64));
    info.playback_ports = vec!["system:playback_1".into()];
    info.capture_port = Some("system:capture_1".into());
    info.server.quantum_granted_frames = Some(128);
    let granted = json!({"rate_hz": 48000, "period_frames": 128, "buffer_frames": 256,
        "format": "S16_LE", "access": "mmap", "playback_channels": 2,
        "capture_channels": null, "linked": true, "link_error": null});
    let mut config = before.clone();
    for (k, v) in [
        ("backend", json!(info.backend.name())),
        ("device", json!(info.client_name)),
        ("period_frames", json!(info.period_frames)),
        ("rate_hz", json!(info.sample_rate_hz)),
        (
            "playback_latency_frames",
            json!(info.playback_latency_frames),
        ),
        ("granted", granted.clone()),
        (
            "server",
            json!({"name": info.server.name, "private": info.server.private,
                "command_line": info.server.command_line, "version": info.server.version,
                "quantum_asked_frames": info.server.quantum_asked_frames,
                "quantum_granted_frames": info.server.quantum_granted_frames,
                "rate_asked_hz": info.server.rate_asked_hz,
                "rate_granted_hz": info.server.rate_granted_hz}),
        ),
    ] {
        config[k] = v;
    }
    let granted: AlsaGrantedRecord = serde_json::from_value(granted).unwrap();
    let record = EventConfigRecord {
        stream: stream_config_record(&info, Some(granted)),
        device: Some(info.client_name.clone()),
        ..c.record()
    };
    assert_eq!(record.to_json(), config);
    assert_eq!(EventConfigRecord::from_json(&config), Some(record));
    assert!(StreamConfigRecord::from_json(&config).is_some());

    let start = DuplexStart {
        linked: false,
        skew_frames: Some(-2),
        attempts: 2,
        starts: 3,
        steady_offset: true,
    };
    let stream_before = json!({
        "duplex_start": {"linked": start.linked, "skew_frames": start.skew_frames,
            "attempts": start.attempts, "starts": start.starts,
            "steady_offset": start.steady_offset},
        "backend": info.backend.name(),
        "client": info.client_name,
        "model": info.model.to_string(),
        "server": {"name": info.server.name, "private": info.server.private,
                   "command_line": info.server.command_line,
                   "version": info.server.version},
        "rate_hz": info.sample_rate_hz,
        "period_frames": info.period_frames,
        "playback_latency_frames": info.playback_latency_frames,
        "capture_latency_frames": info.capture_latency_frames,
        "playback_ports": info.playback_ports,
        "capture_port": info.capture_port,
    });
    let stream = stream_record(&info, Some(start));
    assert_eq!(stream.to_json(), stream_before);
    assert_eq!(StreamRecord::from_json(&stream_before), Some(stream));
}
