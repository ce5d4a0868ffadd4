//! The event probe's loopback against the virtual card, whose cable delay is exact: a
//! loop longer than the gap between notes brings the previous note back while the next
//! is awaited, and each onset must still be its own note's.

use assert_no_alloc::AllocDisabler;
use engine::audio::Backend;
use engine::virtual_card::{VirtualConfig, VirtualStream};
use probes::event::{self, EventConfig, EventEnd, NotePolicy, TriggerSource};
use std::sync::atomic::AtomicBool;

#[global_allocator]
static ALLOCATOR: AllocDisabler = AllocDisabler;

#[test]
fn a_loop_longer_than_the_spacing_between_notes_gives_each_note_its_own_onset() {
    // 30 ms notes every 60 ms (plus up to a period), through a 45 ms cable: the previous
    // note is still coming back when the next one starts.
    let cable = 2160.0;
    let mut attempt = 0;
    let outcome = loop {
        let mut stream = VirtualStream::open(VirtualConfig {
            period_frames: 256,
            periods: 2,
            loop_delay_frames: Some(cable),
            ..VirtualConfig::default()
        })
        .expect("the card opens");
        assert!(stream.info().capture_port.is_some());
        let mut config = EventConfig::new(TriggerSource::Timer, NotePolicy::Fixed);
        config.triggers = 12;
        config.warmup_ms = 100.0;
        let stop = AtomicBool::new(false);
        let o = event::run(&mut stream, &config, &stop, |_| Ok(())).expect("runs");
        attempt += 1;
        // A run the host's steal made under-run moves the loop: try again.
        if o.xruns.0 + o.xruns.1 + o.gaps.0 + o.gaps.1 == 0 || attempt == 3 {
            break o;
        }
    };
    assert_eq!(outcome.end, EventEnd::Complete);
    assert_eq!(outcome.alloc_violations, 0, "the audio thread allocated");
    assert_eq!(outcome.rows.len(), 12);
    let frame_ns = 1e9 / 48_000.0;
    for row in &outcome.rows {
        let measured = row.measured_ns.expect("each note's onset is found");
        // The capture hears the output after the playback latency (which the model
        // counts) and the cable (which it does not).
        let latency = row
            .latency_ns
            .expect("the virtual card's cycle starts are known");
        let extra_frames = (measured - latency) as f64 / frame_ns;
        assert!(
            (extra_frames - cable).abs() <= 1.0,
            "note {}: onset {extra_frames:.1} frames after the model, the cable is {cable}",
            row.seq
        );
    }
}
