//! The event probe on a real `jackd -d dummy`, in a debug build with `assert_no_alloc`'s
//! allocator installed: the JACK process callback (engine accounting + the event
//! processor: trigger scheduling, segment rendering, loopback onset search) runs under the
//! guard every cycle, and the audio thread's violation count must stay 0.
//! Skipped (with a message) when jackd is not installed.

use assert_no_alloc::AllocDisabler;
use engine::audio::Backend;
use engine::jack::client::{JackConfig, JackStream};
use engine::jack::server::{JackServer, ServerMode, ServerRequest};
use probes::event::{self, EventConfig, EventEnd, NotePolicy, TriggerSource};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

#[global_allocator]
static ALLOCATOR: AllocDisabler = AllocDisabler;

fn jackd() -> Option<std::path::PathBuf> {
    load::find_in_path("jackd")
}

#[test]
fn the_event_callback_never_allocates_and_the_loopback_onset_is_frame_exact() {
    let Some(jackd) = jackd() else {
        eprintln!("skipped: jackd is not installed (apt install jackd2)");
        return;
    };
    let server = JackServer::connect(&ServerRequest {
        mode: ServerMode::Dummy,
        name: Some("audiolat-probes-event".into()),
        rate_hz: Some(48_000),
        period_frames: Some(128),
        jackd: Some(jackd),
        start_timeout: Duration::from_secs(10),
    })
    .expect("private jackd starts");
    for policy in [NotePolicy::Fixed, NotePolicy::Asap] {
        for workload in ["sine", "poly", "bank:8"] {
            // The loopback is our own output: JACK feeds a client's output back to its
            // input one period later (a feedback connection), with no ADC in between.
            let mut stream = JackStream::open(
                server.info(),
                JackConfig {
                    capture: Some("audiolat:out".into()),
                    ..JackConfig::default()
                },
            )
            .expect("stream opens");
            assert_eq!(stream.info().client_name, "audiolat");
            let mut config = EventConfig::new(TriggerSource::Timer, policy);
            config.triggers = 15;
            config.spacing_ms = 25.0;
            config.note_ms = 8.0;
            config.warmup_ms = 200.0;
            config.workload = workload.parse().unwrap();
            let stop = AtomicBool::new(false);
            let outcome = event::run(&mut stream, &config, &stop, |_| Ok(())).expect("runs");
            assert_eq!(outcome.end, EventEnd::Complete);
            assert_eq!(
                outcome.alloc_violations, 0,
                "{policy} {workload}: the callback allocated"
            );
            assert_eq!(outcome.rows.len(), 15);
            let period_ns = outcome.info.period_ns();
            let frame_ns = 1e9 / 48_000.0;
            // A client's output fed back to its own input comes back a whole number of
            // periods later: JACK serves a feedback connection from the current or the
            // previous cycle's buffer, and when the dummy driver skips cycles (the host
            // stole the CPU) the frame count moves on by the skipped periods, as a sound
            // card's clock would. The onset must sit exactly on that grid: the note's
            // frame plus whole periods, to within one frame.
            let mut one_period = 0;
            // A note rendered just after an xrun (the host's steal) has no timing: its
            // cycle's start is not known, so neither is its wait nor its latency.
            for row in outcome.rows.iter().filter(|r| !r.timing_unknown()) {
                let measured = row.measured_ns.expect("onset found in the loopback");
                let wait = row.wait_ns.expect("known timing");
                let periods = (measured - wait) as f64 / period_ns;
                assert!(
                    periods > 0.99 && (periods - periods.round()).abs() * period_ns <= frame_ns,
                    "{policy} {workload}: onset {periods} periods after the note's frame: {row:?}"
                );
                if periods.round() == 1.0 {
                    one_period += 1;
                }
            }
            // Without skipped cycles the loop is exactly one period: most notes see that.
            assert!(
                one_period * 2 > outcome.rows.len(),
                "{policy} {workload}: only {one_period} of {} onsets one period after their frame",
                outcome.rows.len()
            );
        }
    }
    // The MIDI input path, under the same guard: note-ons from jackd2's own sequencer.
    let Some(midiseq) = load::find_in_path("jack_midiseq") else {
        eprintln!("MIDI part skipped: jack_midiseq is not installed (apt install jackd2)");
        return;
    };
    // Our client opens first and stays open; the sequencer starts after it and is connected
    // once its port exists. (A client that closes while another is still opening can leave
    // that one holding a stale wake-up handle for its slot in jackd2 1.9.21, and the next
    // client in that slot downstream of it is never woken: so nothing here opens and closes
    // a client of ours while the sequencer starts.)
    let mut stream = JackStream::open(
        server.info(),
        JackConfig {
            midi: Some(String::new()),
            ..JackConfig::default()
        },
    )
    .expect("stream opens");
    let midi_in = format!("{}:midi_in", stream.info().client_name);
    let mut config = EventConfig::new(TriggerSource::Midi, NotePolicy::Fixed);
    config.triggers = 8;
    config.note_ms = 5.0;
    let stop = AtomicBool::new(false);
    let finished = AtomicBool::new(false);
    let (outcome, mut seq, connected) = std::thread::scope(|s| {
        let feeder = s.spawn(|| {
            let seq = std::process::Command::new(midiseq)
                .env("JACK_DEFAULT_SERVER", server.name())
                .env("JACK_NO_START_SERVER", "1")
                .args([
                    "audiolat-seq",
                    "12000",
                    "0",
                    "60",
                    "1000",
                    "6000",
                    "64",
                    "1000",
                ])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("jack_midiseq starts");
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            let connected = loop {
                let ok = std::process::Command::new("jack_connect")
                    .env("JACK_DEFAULT_SERVER", server.name())
                    .env("JACK_NO_START_SERVER", "1")
                    .args(["audiolat-seq:out", &midi_in])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status()
                    .is_ok_and(|st| st.success());
                if ok || std::time::Instant::now() > deadline {
                    break ok;
                }
                std::thread::sleep(Duration::from_millis(100));
            };
            // Bound the wait for note-ons: a run that sees none fails the test, not hangs.
            let give_up = std::time::Instant::now() + Duration::from_secs(20);
            while connected
                && !finished.load(std::sync::atomic::Ordering::SeqCst)
                && std::time::Instant::now() < give_up
            {
                std::thread::sleep(Duration::from_millis(50));
            }
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            (seq, connected)
        });
        let outcome = event::run(&mut stream, &config, &stop, |_| Ok(())).expect("runs");
        finished.store(true, std::sync::atomic::Ordering::SeqCst);
        let (seq, connected) = feeder.join().expect("feeder thread");
        (outcome, seq, connected)
    });
    // SAFETY: a clean stop of the sequencer this test started.
    unsafe { libc::kill(seq.id() as i32, libc::SIGTERM) };
    let _ = seq.wait();
    assert!(
        connected,
        "jack_connect audiolat-seq:out {midi_in} kept failing"
    );
    assert_eq!(outcome.end, EventEnd::Complete);
    assert_eq!(outcome.alloc_violations, 0, "midi: the callback allocated");
    assert!(outcome.rows.len() >= 8);
    assert!(outcome.rows.iter().all(|r| r.source == "midi"));
    // The sequencer's note-ons are 6000 of its frames apart (not a multiple of the
    // period): each fixed note starts on its note-on's frame, so the notes are 6000 frames
    // apart, give or take whole periods: where the dummy driver skipped a cycle the
    // server's frame count moves on while the sequencer's own count does not (+128), and
    // a note-on the sequencer wrote one cycle late (it was scheduled out) makes its gap
    // one period longer and the next gap one period shorter (-128). The offset within the
    // period is what must be exact.
    let mut gaps: Vec<i64> = outcome
        .rows
        .windows(2)
        .map(|w| w[1].note_frame as i64 - w[0].note_frame as i64)
        .collect();
    for g in &gaps {
        assert!(
            *g > 0 && (g - 6000).rem_euclid(128) == 0,
            "a gap of {g} frames: not 6000 plus or minus whole periods"
        );
    }
    gaps.sort_unstable();
    assert_eq!(gaps[gaps.len() / 2], 6000);
}
