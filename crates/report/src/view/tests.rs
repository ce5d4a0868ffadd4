use super::*;

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
